//! Every setting of `hearth serve`, as a clap flag with an environment variable and a default.
//!
//! `docs/configuration.md` lists the same settings; `hearth serve --help` prints them.

use std::fmt;
use std::net::SocketAddr;
use std::ops::Deref;
use std::path::PathBuf;

use crate::fanout::{EngineKind, QueueBudgets, QueueLimits};

/// The default of `--redis-log-limit`: about how many broadcasts the Redis broadcast log keeps.
pub const DEFAULT_REDIS_LOG_LIMIT: usize = 10_000;

/// Default largest accepted client message, in bytes (`--max-message-bytes`); a larger one,
/// in one frame or in fragments, closes with 1009 (RFC 6455 §7.4.1).
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// Default most subscriptions one connection may hold (`--max-subscriptions`); a subscribe
/// past it is answered with `reject_subscription`.
pub const MAX_SUBSCRIPTIONS: usize = 64;

/// Default most open cable connections of one user (`--max-connections-per-user`): far more
/// than anyone's tabs and devices, far fewer than `--max-connections`, so no one user can take
/// every place.
pub const MAX_CONNECTIONS_PER_USER: usize = 100;

/// Default most bytes one user's uploaded files may take together
/// (`--max-storage-bytes-per-user`): 10 GiB, a hundred files of the largest size
/// (`--max-upload-bytes`); a member who posts a few photos a day takes years to reach it. It
/// bounds what one account (a hostile member, a bot gone wrong) can put on the server's disk:
/// a full disk stops the database for everyone, a quota stops one uploader with a message
/// saying why.
pub const MAX_STORAGE_BYTES_PER_USER: u64 = 10 * 1024 * 1024 * 1024;

/// Default largest subscription identifier, in bytes (`--max-identifier-bytes`). Campfire's
/// identifiers, a signed stream name included, are a few hundred bytes.
pub const MAX_IDENTIFIER_BYTES: usize = 1024;
use crate::rails::KdfDigest;

mod anycable_names;
pub use anycable_names::AnyCableNames;

/// Settings of a running server.
///
/// `Debug` prints every field; the secrets are [`Redacted`], so logging a configuration never
/// writes one.
#[derive(Clone, Debug, clap::Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "HEARTH_BIND", default_value = "127.0.0.1:3000")]
    pub bind: SocketAddr,

    /// SQLite database file (created and migrated when missing; seeded when empty, unless
    /// `--no-seed` or `--production`). With `--data-dir` given and this not: `<data-dir>/hearth.sqlite3`.
    #[arg(
        long,
        env = "HEARTH_DATABASE",
        default_value = "storage/hearth.sqlite3"
    )]
    pub database: PathBuf,

    /// Directory for Hearth's state: the secret_key_base file when SECRET_KEY_BASE is unset,
    /// the files of the disk service (unless --storage-root), and the database (unless
    /// --database).
    #[arg(long, env = "HEARTH_DATA_DIR", default_value = "storage")]
    pub data_dir: PathBuf,

    /// Log filter, in tracing's EnvFilter syntax (e.g. `info`, `hearth=debug`).
    #[arg(long, env = "HEARTH_LOG_LEVEL", default_value = "info")]
    pub log_level: String,

    /// Write logs as JSON lines instead of text.
    #[arg(long, env = "HEARTH_LOG_JSON", default_value_t = false)]
    pub log_json: bool,

    /// Rails' secret_key_base: the root of every signed cookie and signed stream name. When
    /// unset, one is generated once and kept in `<data-dir>/secret_key_base`.
    #[arg(long, env = "SECRET_KEY_BASE", hide_env_values = true)]
    pub secret_key_base: Option<Redacted<String>>,

    /// Production mode: refuse to start without an explicit SECRET_KEY_BASE, mark cookies
    /// Secure, send `Strict-Transport-Security`, never seed an empty database (the first
    /// visitor gets the first-run form, `/first_run`) and refuse to start on a database that
    /// still holds the demo seed's published credentials (its join code, bot key, passwords).
    #[arg(long, env = "HEARTH_PRODUCTION", default_value_t = false)]
    pub production: bool,

    /// Digest of the PBKDF2 key generator (Rails 7.0+ defaults: sha256; older apps: sha1).
    #[arg(long, env = "HEARTH_KEY_GENERATOR_DIGEST", default_value = "sha256")]
    pub key_generator_digest: KdfDigest,

    /// HMAC digest of signed cookies (`config.action_dispatch.signed_cookie_digest` of the
    /// Rails app sharing the secret; unset there means sha1). Cookies Hearth signed with sha256
    /// before are read either way.
    #[arg(long, env = "HEARTH_SIGNED_COOKIE_DIGEST", default_value = "sha1")]
    pub signed_cookie_digest: crate::rails::MacDigest,

    /// Turbo's signed stream verifier key as hex, instead of deriving it from
    /// secret_key_base (`Turbo.signed_stream_verifier_key` of the Rails app).
    #[arg(long, env = "HEARTH_TURBO_VERIFIER_KEY", hide_env_values = true)]
    pub turbo_verifier_key: Option<Redacted<String>>,

    /// The GlobalID app name used in stream names (`gid://<app>/Room/1`).
    #[arg(long, env = "HEARTH_GID_APP", default_value = "campfire")]
    pub gid_app: String,

    /// Fan-out engine: `queue` (owner-drained bounded queues) or `tokio-broadcast` (reference;
    /// only in builds with the cargo feature `reference-engine`).
    #[arg(long, env = "HEARTH_FANOUT", value_enum, default_value = "queue")]
    pub fanout: EngineKind,

    /// Per-connection outbound queue bound, in frames.
    #[arg(long, env = "HEARTH_QUEUE_FRAMES", default_value_t = QueueLimits::default().max_frames)]
    pub queue_frames: usize,

    /// Per-connection outbound queue bound, in bytes.
    #[arg(long, env = "HEARTH_QUEUE_BYTES", default_value_t = QueueLimits::default().max_bytes)]
    pub queue_bytes: usize,

    /// Byte budget of the frames queued to all cable connections of one user together
    /// (frames past a connection's first few, and long frames); past it the user's heaviest
    /// connection is cut off as too slow. 0: none.
    #[arg(long, env = "HEARTH_QUEUE_USER_BYTES", default_value_t = QueueBudgets::default().user_bytes)]
    pub queue_user_bytes: usize,

    /// Byte budget of the frames queued to all cable connections of the server together; past
    /// it the heaviest connection anywhere is cut off as too slow. 0: none.
    #[arg(long, env = "HEARTH_QUEUE_SERVER_BYTES", default_value_t = QueueBudgets::default().server_bytes)]
    pub queue_server_bytes: usize,

    /// Writer threads of the queue engine (each drains its share of the connections); 0 = one
    /// per core this process may run on (its CPU affinity: `taskset -c 0` gives one).
    #[arg(long, env = "HEARTH_WRITER_THREADS", default_value_t = 0)]
    pub writer_threads: usize,

    /// Login attempts allowed per IP address per 3 minutes (Campfire: 10), counting attempts at
    /// the current password of an e-mail or password change too; 0 disables the limit.
    #[arg(long, env = "HEARTH_LOGIN_RATE_LIMIT", default_value_t = 10)]
    pub login_rate_limit: u32,

    /// Messages one user (or one bot key's address) may post per minute, in bursts of up to as
    /// many; past it 429 with `Retry-After`. 0 disables the limit (load tests).
    #[arg(long, env = "HEARTH_POST_RATE_LIMIT", default_value_t = 300)]
    pub post_rate_limit: u32,

    /// Rooms (open, closed, direct) one user may create per minute; 0 disables the limit.
    #[arg(long, env = "HEARTH_ROOM_RATE_LIMIT", default_value_t = 30)]
    pub room_rate_limit: u32,

    /// Searches one user may run per minute; 0 disables the limit.
    #[arg(long, env = "HEARTH_SEARCH_RATE_LIMIT", default_value_t = 120)]
    pub search_rate_limit: u32,

    /// Boosts one user may give per minute; 0 disables the limit.
    #[arg(long, env = "HEARTH_BOOST_RATE_LIMIT", default_value_t = 120)]
    pub boost_rate_limit: u32,

    /// Typing notices (`start`/`stop`) one user may send per minute over all of their cable
    /// connections (each connection also has its own bucket); the excess is dropped. 0
    /// disables the limit.
    #[arg(long, env = "HEARTH_TYPING_RATE_LIMIT", default_value_t = 120)]
    pub typing_rate_limit: u32,

    /// Presence actions (`present`/`absent`/`refresh`) one user may send per minute over all
    /// of their cable connections; the excess still updates the tab's state but sends no
    /// read notice. 0 disables the limit.
    #[arg(long, env = "HEARTH_PRESENCE_RATE_LIMIT", default_value_t = 240)]
    pub presence_rate_limit: u32,

    /// Sign-ups through the join link allowed per IP address per hour; 0 disables the limit.
    #[arg(long, env = "HEARTH_JOIN_RATE_LIMIT", default_value_t = 30)]
    pub join_rate_limit: u32,

    /// Message edits one user (or one bot key's address) may make per minute, in bursts of up
    /// to as many; past it 429 with `Retry-After`. 0 disables the limit.
    #[arg(long, env = "HEARTH_EDIT_RATE_LIMIT", default_value_t = 120)]
    pub edit_rate_limit: u32,

    /// Web push subscriptions one user may create (or refresh) per hour; past it 429 with
    /// `Retry-After`. 0 disables the limit.
    #[arg(
        long,
        env = "HEARTH_PUSH_SUBSCRIPTION_RATE_LIMIT",
        default_value_t = 20
    )]
    pub push_subscription_rate_limit: u32,

    /// Test notifications one user may send per hour; past it 429 with `Retry-After`. 0
    /// disables the limit.
    #[arg(
        long,
        env = "HEARTH_TEST_NOTIFICATION_RATE_LIMIT",
        default_value_t = 20
    )]
    pub test_notification_rate_limit: u32,

    /// Link previews (`POST /unfurl_link`) one user may ask for per minute, in bursts of up to
    /// as many; past it 429 with `Retry-After`. 0 disables the limit.
    #[arg(long, env = "HEARTH_LINK_PREVIEW_RATE_LIMIT", default_value_t = 30)]
    pub link_preview_rate_limit: u32,

    /// Origins allowed to open /cable besides the same origin as the Host header
    /// (comma-separated, exact match).
    #[arg(long, env = "HEARTH_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// Reverse proxies whose `X-Forwarded-For` / `Forwarded` headers name the client
    /// (comma-separated addresses or CIDR networks, e.g. `127.0.0.1,10.0.0.0/8`); none by
    /// default, so the TCP peer is the client (see `web::client_ip`).
    #[arg(long, env = "HEARTH_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<crate::net::IpRange>,

    /// Disable the /cable Origin check (Rails' `disable_request_forgery_protection`).
    #[arg(long, env = "HEARTH_DISABLE_ORIGIN_CHECK", default_value_t = false)]
    pub disable_origin_check: bool,

    /// Escape U+2028/U+2029 in JSON frames (ActiveSupport's `escape_js_separators_in_json`;
    /// Rails 8.1 defaults turn it off).
    #[arg(long, env = "HEARTH_ESCAPE_JS_SEPARATORS", default_value_t = true, action = clap::ArgAction::Set)]
    pub escape_js_separators: bool,

    /// Largest accepted HTTP request body, in bytes.
    #[arg(long, env = "HEARTH_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Largest accepted Action Cable message, in bytes, whether sent in one frame or in
    /// fragments, and for a compressed message what it inflates to; a larger one closes the
    /// connection with 1009.
    #[arg(long, env = "HEARTH_MAX_MESSAGE_BYTES", default_value_t = MAX_MESSAGE_BYTES)]
    pub max_message_bytes: usize,

    /// WebSocket compression on `/cable` (permessage-deflate, RFC 7692) with clients that
    /// offer it: `on` agrees to it (each broadcast compressed once for all such subscribers,
    /// no compression state per connection), `off` never does.
    #[arg(
        long,
        env = "HEARTH_WEBSOCKET_COMPRESSION",
        value_enum,
        default_value_t = Switch::On
    )]
    pub websocket_compression: Switch,

    /// Most subscriptions one cable connection may hold; the next subscribe is rejected.
    #[arg(long, env = "HEARTH_MAX_SUBSCRIPTIONS", default_value_t = MAX_SUBSCRIPTIONS)]
    pub max_subscriptions: usize,

    /// Most broadcasts kept per stream for clients that reconnect (`history`, the room page's
    /// catch-up); 0 turns the history and stream positions off (AnyCable's `--history_limit`).
    #[arg(long, env = "HEARTH_HISTORY_LIMIT", default_value_t = crate::history::DEFAULT_LIMIT)]
    pub history_limit: usize,

    /// Longest time a broadcast is kept in the history, in seconds (AnyCable's
    /// `--history_ttl`).
    #[arg(long, env = "HEARTH_HISTORY_TTL", default_value_t = crate::history::DEFAULT_TTL_SECONDS)]
    pub history_ttl: u64,

    /// How long an `actioncable-v1-ext-json` session can be restored after its socket closed,
    /// in seconds (`?sid=`: no re-subscription; the session is identified again and its rooms
    /// re-checked); 0 turns restores off (AnyCable's `--sessions_ttl`).
    #[arg(long, env = "HEARTH_SESSIONS_TTL", default_value_t = 300)]
    pub sessions_ttl: u64,

    /// Most open cable connections; past it, new /cable upgrades get 503.
    #[arg(long, env = "HEARTH_MAX_CONNECTIONS", default_value_t = 10_000)]
    pub max_connections: usize,

    /// Most open cable connections of one user (all their sessions together); past it, that
    /// user's new /cable upgrades get 429. 0: no per-user cap (load tests).
    #[arg(long, env = "HEARTH_MAX_CONNECTIONS_PER_USER", default_value_t = MAX_CONNECTIONS_PER_USER)]
    pub max_connections_per_user: usize,

    /// Largest subscription identifier, in bytes; a subscribe with a longer one is rejected
    /// (`reject_subscription`) and nothing of it is kept.
    #[arg(long, env = "HEARTH_MAX_IDENTIFIER_BYTES", default_value_t = MAX_IDENTIFIER_BYTES)]
    pub max_identifier_bytes: usize,

    /// Seconds a client has to send a request's whole header block; a slower one is dropped.
    #[arg(long, env = "HEARTH_HEADER_TIMEOUT", default_value_t = 30)]
    pub header_timeout: u64,

    /// Longest request line (method, target and version), in bytes; a longer one is answered
    /// 414 at once, whether or not its header block ever ends.
    #[arg(long, env = "HEARTH_MAX_REQUEST_LINE_BYTES", default_value_t = 8192)]
    pub max_request_line_bytes: usize,

    /// Most open HTTP connections of one client address (an IPv6 client: its /64 network),
    /// counted from the accept until the connection closes or becomes a `/cable` socket (those
    /// are bounded by `--max-connections` and `--max-connections-per-user`); past it, a new
    /// connection from that address is closed at once, before a byte is read. 0: no cap.
    /// Behind a reverse proxy every client shares the proxy's address: raise it there.
    #[arg(
        long,
        env = "HEARTH_MAX_CONNECTIONS_PER_ADDRESS",
        default_value_t = 256
    )]
    pub max_connections_per_address: usize,

    /// Seconds a client has to send a request's whole body; a slower one gets 408.
    #[arg(long, env = "HEARTH_BODY_TIMEOUT", default_value_t = 30)]
    pub body_timeout: u64,

    /// Seconds a client has to send a streamed body (a file upload) whole; a slower one, or
    /// one with a gap longer than `--body-timeout`, gets 408 and nothing of it is kept.
    #[arg(long, env = "HEARTH_UPLOAD_TIMEOUT", default_value_t = 600)]
    pub upload_timeout: u64,

    /// Seconds a stopping server waits for open requests and cable connections to finish.
    #[arg(long, env = "HEARTH_DRAIN_TIMEOUT", default_value_t = 10)]
    pub drain_timeout: u64,

    /// Seconds over which a stopping server sends `server_restart` to its cable connections,
    /// one after another in random order, so its clients do not all reconnect in the same
    /// second; 0 closes them all at once. The drain timeout starts after it.
    #[arg(long, env = "HEARTH_DRAIN_SPREAD", default_value_t = 5)]
    pub drain_spread: u64,

    /// Generated users to create when an empty database is seeded on first start (never in
    /// production).
    #[arg(long, env = "HEARTH_SEED_USERS", default_value_t = 1000)]
    pub seed_users: usize,

    /// Leave an empty database empty: the first visitor gets Campfire's first-run form
    /// (`/first_run`), which creates the administrator and the first open room. Always so
    /// with `--production`.
    #[arg(long, env = "HEARTH_NO_SEED", default_value_t = false)]
    pub no_seed: bool,

    /// Largest accepted file upload (direct upload, composer or bot), in bytes; a larger one
    /// is refused with 413 before anything is stored.
    #[arg(long, env = "HEARTH_MAX_UPLOAD_BYTES", default_value_t = 100 * 1024 * 1024)]
    pub max_upload_bytes: u64,

    /// Bytes the files one user uploaded may take together (attached or not yet; thumbnails
    /// and other variants not counted); an upload that does not fit is refused with 413
    /// saying the quota and how much is used, and nothing of it is kept. Deleting files (a
    /// message's file goes with the message) makes room. 0: no quota.
    #[arg(
        long,
        env = "HEARTH_MAX_STORAGE_BYTES_PER_USER",
        default_value_t = MAX_STORAGE_BYTES_PER_USER
    )]
    pub max_storage_bytes_per_user: u64,

    /// Root directory of Active Storage's disk service (files at `<root>/ab/cd/<key>`, as
    /// Rails' `Disk` service lays them out); default: the data directory.
    #[arg(long, env = "HEARTH_STORAGE_ROOT")]
    pub storage_root: Option<PathBuf>,

    /// Where new files go: `disk` (the disk service under `--storage-root`) or `s3` (an
    /// S3-compatible bucket, `--s3-*`).
    #[arg(long, env = "HEARTH_STORAGE", value_enum, default_value_t = StorageKind::Disk)]
    pub storage: StorageKind,

    /// The S3-compatible server's URL (`--storage s3`), e.g. `https://s3.eu-west-1.amazonaws.com`.
    #[arg(long, env = "HEARTH_S3_ENDPOINT", default_value = "")]
    pub s3_endpoint: String,

    /// The bucket (`--storage s3`).
    #[arg(long, env = "HEARTH_S3_BUCKET", default_value = "")]
    pub s3_bucket: String,

    /// The region requests are signed for (`--storage s3`).
    #[arg(long, env = "HEARTH_S3_REGION", default_value = "us-east-1")]
    pub s3_region: String,

    /// The access key id (`--storage s3`).
    #[arg(long, env = "HEARTH_S3_ACCESS_KEY_ID", default_value = "")]
    pub s3_access_key_id: String,

    /// The secret access key (`--storage s3`).
    #[arg(long, env = "HEARTH_S3_SECRET_ACCESS_KEY", default_value = "")]
    pub s3_secret_access_key: Redacted<String>,

    /// File uploads allowed per user per 10 minutes; 0 disables the limit.
    #[arg(long, env = "HEARTH_UPLOAD_RATE_LIMIT", default_value_t = 60)]
    pub upload_rate_limit: u32,

    /// Seconds between Action Cable pings (Rails: 3).
    #[arg(long, env = "HEARTH_PING_INTERVAL", default_value_t = 3)]
    pub ping_interval: u64,

    /// Serve the room page's own scripts from `<dir>/js` (a copy of the repository's
    /// `assets/`, e.g. to edit them without rebuilding) instead of the copies built into the
    /// binary. Turbo, turbo-rails and @rails/actioncable are always the built-in pinned files
    /// (`vendor/javascript/`); no npm is needed to serve them.
    #[arg(long, env = "HEARTH_ASSETS_DIR")]
    pub assets_dir: Option<PathBuf>,

    /// Serve Prometheus metrics (text format) at /metrics on the same address.
    #[arg(long, env = "HEARTH_METRICS", default_value_t = true, action = clap::ArgAction::Set)]
    pub metrics: bool,

    /// Pub/sub adapter: `inprocess` (one process holds every connection) or `redis` (nodes,
    /// Rails processes and a Rails console share broadcasts through Redis, in the format of
    /// Rails' redis adapter).
    #[arg(long, env = "HEARTH_PUBSUB", value_enum, default_value = "inprocess")]
    pub pubsub: PubSubKind,

    /// Redis server of the `redis` adapter (`redis://[:password@]host:port[/db]`).
    #[arg(
        long,
        env = "REDIS_URL",
        default_value = "redis://127.0.0.1:6379",
        hide_env_values = true
    )]
    pub redis_url: Redacted<String>,

    /// Rails' `channel_prefix` of `config/cable.yml`: Redis channels are
    /// `<prefix>:<broadcasting>` (none when empty).
    #[arg(long, env = "HEARTH_REDIS_CHANNEL_PREFIX", default_value = "")]
    pub redis_channel_prefix: String,

    /// About how many broadcasts the Redis broadcast log keeps (`--pubsub redis`): how long a
    /// node cut off from Redis can replay what it missed. A node cut off for longer tells its
    /// clients to reconnect and catch up. A post to a room of N members writes N + 1 entries
    /// (the room's and each member's unread mark).
    #[arg(long, env = "HEARTH_REDIS_LOG_LIMIT", default_value_t = DEFAULT_REDIS_LOG_LIMIT)]
    pub redis_log_limit: usize,

    /// AnyCable's `redis_channel`: the Redis channel whose publications (and remote
    /// disconnect commands) this node takes, as anycable-rails' broadcaster publishes them.
    /// Unset: `__anycable__` under the channel prefix (`<prefix>:__anycable__`, or
    /// `__anycable__` without a prefix), so deployments that share a Redis with different
    /// prefixes never take each other's broadcasts; point anycable-rails' `redis_channel` at
    /// the same name.
    #[arg(long, env = "HEARTH_ANYCABLE_REDIS_CHANNEL")]
    pub anycable_redis_channel: Option<String>,

    /// Bearer key of AnyCable's broadcast endpoint `POST /_broadcast`. When unset it is
    /// HMAC-SHA256-hex(secret_key_base, "broadcast-cable"), as AnyCable derives it from its
    /// secret; `hearth broadcast-key` prints it.
    #[arg(long, env = "HEARTH_BROADCAST_KEY", hide_env_values = true)]
    pub broadcast_key: Option<Redacted<String>>,

    /// What this node serves: `all` (the web app and /cable), `app` (the web app and the
    /// database; publishes; no /cable) or `cable` (/cable only; no database file; asks the
    /// app node at --app-url who a connection is and whether it may subscribe).
    #[arg(long, env = "HEARTH_ROLE", value_enum, default_value = "all")]
    pub role: Role,

    /// Base URL of the app node, for `--role cable` (e.g. `http://10.0.0.5:3000`).
    #[arg(long, env = "HEARTH_APP_URL")]
    pub app_url: Option<String>,

    /// Base URL of an app's AnyCable HTTP RPC (anycable-rails mounts it at `/_anycable`,
    /// e.g. `http://127.0.0.1:3001/_anycable`; AnyCable's `rpc_host`). Set, channels that
    /// Campfire does not own are the app's: a connection is identified by the app's
    /// `connect`, and its subscriptions and actions are the app's `command`s (see
    /// `docs/rails-app.md`).
    #[arg(long, env = "HEARTH_RPC_URL")]
    pub rpc_url: Option<String>,

    /// Bearer key of the RPC calls (AnyCable's `http_rpc_secret`). Unset: derived from
    /// secret_key_base as AnyCable derives it from its secret,
    /// HMAC-SHA256-hex(secret, "rpc-cable").
    #[arg(long, env = "HEARTH_RPC_SECRET", hide_env_values = true)]
    pub rpc_secret: Option<Redacted<String>>,

    /// The request headers passed to the app's `connect` (AnyCable's `headers`), lowercase,
    /// comma-separated; `REMOTE_ADDR` is always added.
    #[arg(
        long,
        env = "HEARTH_RPC_HEADERS",
        value_delimiter = ',',
        default_value = "cookie"
    )]
    pub rpc_headers: Vec<String>,

    /// Which channels `/cable` runs: `campfire` (Campfire's, and an app's beside them with
    /// --rpc-url) or `rpc` (the cable server alone: the app's channels at --rpc-url and
    /// Turbo's signed streams, with no chat app and no database).
    #[arg(long, env = "HEARTH_CHANNELS", value_enum, default_value = "campfire")]
    pub channels: ChannelSet,

    /// RPC calls in flight at most (AnyCable's `rpc_concurrency`); more wait for a place
    /// within the 3 s call timeout.
    #[arg(long, env = "HEARTH_RPC_CONCURRENCY", default_value_t = crate::rpc::DEFAULT_CONCURRENCY)]
    pub rpc_concurrency: usize,

    /// Seconds a cable node waits for its app node's answer (who a connection is, a
    /// subscribe, an action) before it gives up: a subscribe then gets `reject_subscription`,
    /// a connection 503.
    #[arg(long, env = "HEARTH_APP_TIMEOUT_SECONDS", default_value_t = 3)]
    pub app_timeout_seconds: u64,

    /// Seconds a cable node keeps the app node's answers (who a session is, whether a user
    /// may subscribe to a room's streams): how late a revoked session or a removed
    /// membership takes effect on new connections and subscriptions of a cable node. Also how
    /// long any node keeps its own session and membership lookups
    /// (`db::auth_cache`): changes made through the node take effect at once,
    /// changes made by another process (a console, another node) within this time; 0: no
    /// caching.
    #[arg(long, env = "HEARTH_AUTH_CACHE_SECONDS", default_value_t = 5)]
    pub auth_cache_seconds: u64,

    /// A bearer token that `/metrics` requires (`Authorization: Bearer <token>`; 401
    /// otherwise). Unset: `/metrics` is open to whoever reaches the address.
    #[arg(long, env = "HEARTH_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<Redacted<String>>,

    /// The VAPID public key of web push (RFC 8292), base64url of the uncompressed P-256 point,
    /// as Campfire's `VAPID_PUBLIC_KEY`. With the private key unset, a key pair is generated
    /// once and kept in `<data-dir>/vapid_private_key` beside `secret_key_base`.
    #[arg(long, env = "VAPID_PUBLIC_KEY")]
    pub vapid_public_key: Option<String>,

    /// The VAPID private key, base64url of the 32-byte P-256 scalar (Campfire's
    /// `VAPID_PRIVATE_KEY`).
    #[arg(long, env = "VAPID_PRIVATE_KEY", hide_env_values = true)]
    pub vapid_private_key: Option<Redacted<String>>,

    /// The contact in the VAPID token's `sub` claim (RFC 8292 §2.1): a `mailto:` address or an
    /// `https:` URL at a public domain name (Apple's push service refuses others, such as
    /// `@localhost`; such a value stops the start). Unset: `mailto:` the e-mail address of the
    /// account's first active administrator whose address is at a public domain; with none,
    /// pushes are not sent and the log asks for this flag (`push::contact`).
    #[arg(long, env = "VAPID_SUBJECT")]
    pub vapid_subject: Option<String>,

    /// Accept push subscriptions whose endpoint is plain HTTP on a loopback address (tests
    /// run their own push service); otherwise an endpoint must be `https`.
    #[arg(long, env = "HEARTH_PUSH_ALLOW_LOOPBACK", default_value_t = false)]
    pub push_allow_loopback: bool,

    /// How long one web push request may take (connect, send, answer), in seconds.
    #[arg(long, env = "HEARTH_PUSH_TIMEOUT_SECONDS", default_value_t = 10)]
    pub push_timeout_seconds: u64,

    /// PEM file of extra certificate authorities that bot webhooks over `https` may chain to,
    /// besides the public web's (the webpki roots): for bots on internal hosts with a private
    /// CA. Read at start; a file that does not parse stops the start.
    #[arg(long, env = "HEARTH_WEBHOOK_CA_FILE")]
    pub webhook_ca_file: Option<PathBuf>,

    /// Single sign-on with OpenID Connect: `--oidc-issuer`, `--oidc-client-id`,
    /// `--oidc-client-secret` (docs/sso.md).
    #[command(flatten)]
    pub oidc: OidcFlags,

    /// anycable-go's environment variables and flags (`ANYCABLE_RPC_HOST`, `--rpc_host`, ...),
    /// read as aliases of Hearth's own when those are unset ([`AnyCableNames`]).
    #[command(flatten)]
    pub anycable: AnyCableNames,

    /// Outgoing mail's SMTP server (`crate::mail`): `smtp://[user:password@]host[:port]`
    /// speaks STARTTLS before anything else (port 587 when none is given) and refuses a server
    /// without it; `smtps://…` speaks TLS from the first byte (port 465). User and password are
    /// percent-decoded and sent with AUTH PLAIN or LOGIN. Unset: no mail, and every page part
    /// that needs mail (sign-in codes, password reset, digests, the test e-mail) is hidden.
    #[arg(long, env = "HEARTH_SMTP_URL", hide_env_values = true)]
    pub smtp_url: Option<Redacted<String>>,

    /// The `From` of outgoing mail: an address, or `Name <address>`. Unset: `Hearth
    /// <hearth@` the SMTP server's host `>`.
    #[arg(long, env = "HEARTH_MAIL_FROM")]
    pub mail_from: Option<String>,

    /// PEM file of extra certificate authorities the SMTP server's certificate may chain to,
    /// besides the public web's (a relay with a private CA). Read at start.
    #[arg(long, env = "HEARTH_SMTP_CA_FILE")]
    pub smtp_ca_file: Option<PathBuf>,

    /// Link previews (`POST /unfurl_link`): a URL pasted into the composer is fetched by the
    /// server for its Open Graph title, description and image, shown as a card under the
    /// message. `off` turns the route off (it answers 404) and the composer inserts no card.
    #[arg(long, env = "HEARTH_LINK_PREVIEWS", default_value = "on", value_parser = clap::builder::BoolishValueParser::new(), action = clap::ArgAction::Set)]
    pub link_previews: bool,

    /// Networks that link previews may fetch from besides the public internet (an intranet's
    /// `10.1.0.0/16`, say), comma-separated addresses or CIDR networks. Without it only public
    /// addresses are fetched: loopback, private, link-local, shared (CGNAT), multicast and
    /// reserved addresses are refused.
    #[arg(long, env = "HEARTH_LINK_PREVIEW_ALLOW_NETWORK", value_delimiter = ',')]
    pub link_preview_allow_network: Vec<crate::net::IpRange>,
}

/// A setting that is `on` or `off` (`--websocket-compression`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    /// Enabled.
    #[default]
    On,
    /// Disabled.
    Off,
}

/// What a node serves (`--role`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// The web app and /cable in one process.
    #[default]
    All,
    /// The web app, the database and the internal endpoint cable nodes ask; no /cable.
    App,
    /// /cable only, without a database: identification and authorization by the app node.
    Cable,
}

/// Which channels `/cable` runs (`--channels`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ChannelSet {
    /// Campfire's channels, and an app's beside them with `--rpc-url`.
    #[default]
    Campfire,
    /// Only the cable server: the app's channels at `--rpc-url` and Turbo's signed streams;
    /// no chat app, no database.
    Rpc,
}

/// Where new files are stored (`--storage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageKind {
    /// Active Storage's disk service under `--storage-root`.
    #[default]
    Disk,
    /// An S3-compatible bucket (`--s3-endpoint`, `--s3-bucket`, keys).
    S3,
}

/// Where broadcasts go between processes (`--pubsub`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PubSubKind {
    /// Straight into this process' fan-out engine (Rails' `async` adapter).
    #[default]
    Inprocess,
    /// Through Redis pub/sub in Rails' redis adapter format.
    Redis,
}

/// The single sign-on settings that are given at start (the secret among them); the others
/// (the provider's name, allowed domains, passwords) are the account's (`db::sso`); read by [`crate::oidc::Sso::from_flags`].
#[derive(clap::Args, Clone, Debug, Default)]
pub struct OidcFlags {
    /// The OpenID Connect provider's issuer URL (`https://…`; plain `http` only for a loopback
    /// issuer). Single sign-on is on when this and `--oidc-client-id` are set.
    #[arg(long, env = "HEARTH_OIDC_ISSUER")]
    pub oidc_issuer: Option<String>,

    /// The client id Hearth is registered with at the provider.
    #[arg(long, env = "HEARTH_OIDC_CLIENT_ID")]
    pub oidc_client_id: Option<String>,

    /// The client secret (sent with HTTP Basic authentication to the token endpoint); without
    /// it Hearth is a public client and PKCE alone binds the code.
    #[arg(long, env = "HEARTH_OIDC_CLIENT_SECRET", hide_env_values = true)]
    pub oidc_client_secret: Option<Redacted<String>>,
}

/// A secret setting: `Debug` prints `[REDACTED]` instead of the value, and there is no
/// `Display`. The value is `.0`, or reached through `Deref` (`key.trim()`). Clap parses it as
/// it would parse `T` (through `From<T>`).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Redacted<T>(pub T);

impl<T> fmt::Debug for Redacted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

impl<T> Deref for Redacted<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> From<T> for Redacted<T> {
    fn from(value: T) -> Self {
        Self(value)
    }
}

/// A URL with any password replaced by `[REDACTED]` (`redis://:pw@host` → `redis://:[REDACTED]@host`).
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{user}:[REDACTED]{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

impl Config {
    /// The queue bounds given by the flags.
    pub fn queue_limits(&self) -> QueueLimits {
        QueueLimits {
            max_frames: self.queue_frames,
            max_bytes: self.queue_bytes,
        }
    }

    /// The request limits given by the flags ([`crate::rate_limit::RequestLimits`]).
    pub fn request_limits(&self) -> crate::rate_limit::RequestLimits {
        use crate::rate_limit::Action;
        use std::time::Duration;
        let minute = Duration::from_secs(60);
        crate::rate_limit::RequestLimits::new([
            (Action::Post, self.post_rate_limit, minute),
            (Action::CreateRoom, self.room_rate_limit, minute),
            (Action::Search, self.search_rate_limit, minute),
            (Action::Boost, self.boost_rate_limit, minute),
            (Action::Typing, self.typing_rate_limit, minute),
            (Action::Presence, self.presence_rate_limit, minute),
            (
                Action::Join,
                self.join_rate_limit,
                Duration::from_secs(3600),
            ),
            (Action::Edit, self.edit_rate_limit, minute),
            (
                Action::PushSubscription,
                self.push_subscription_rate_limit,
                Duration::from_secs(3600),
            ),
            (
                Action::TestNotification,
                self.test_notification_rate_limit,
                Duration::from_secs(3600),
            ),
            (Action::LinkPreview, self.link_preview_rate_limit, minute),
        ])
    }

    /// Whether this node opens a database: not a cable node (`--role cable`, which asks its
    /// app node) nor the cable server alone (`--channels rpc`).
    pub fn has_database(&self) -> bool {
        self.role != Role::Cable && self.channels != ChannelSet::Rpc
    }

    /// The queued-frame budgets given by the flags.
    pub fn queue_budgets(&self) -> QueueBudgets {
        QueueBudgets {
            user_bytes: self.queue_user_bytes,
            server_bytes: self.queue_server_bytes,
        }
    }

    /// A configuration for tests: an ephemeral port, the given database and data directory,
    /// no login or request rate limits, the same-origin check on.
    pub fn for_tests(dir: &std::path::Path) -> Self {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            config: Config,
        }
        let mut config = Wrap::parse_from(["hearth"]).config;
        config.bind = "127.0.0.1:0".parse().expect("literal address");
        config.database = dir.join("hearth.sqlite3");
        config.data_dir = dir.to_path_buf();
        config.secret_key_base = Some("0123456789abcdef".repeat(8).into());
        config.login_rate_limit = 0;
        config.post_rate_limit = 0;
        config.room_rate_limit = 0;
        config.search_rate_limit = 0;
        config.boost_rate_limit = 0;
        config.join_rate_limit = 0;
        config.edit_rate_limit = 0;
        config.push_subscription_rate_limit = 0;
        config.test_notification_rate_limit = 0;
        config.link_preview_rate_limit = 0;
        config.seed_users = 20;
        config.assets_dir = None;
        config.drain_spread = 0;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_every_field_and_no_secret() {
        let mut config = Config::for_tests(std::path::Path::new("/nonexistent"));
        config.turbo_verifier_key = Some("abcdef0123456789".to_owned().into());
        let shown = format!("{config:?}");
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
        assert!(!shown.contains("abcdef0123456789"), "{shown}");
        assert!(
            shown.contains("secret_key_base: Some([REDACTED])"),
            "{shown}"
        );
        assert!(
            shown.contains("turbo_verifier_key: Some([REDACTED])"),
            "{shown}"
        );
        // A Redis URL may carry a password.
        config.redis_url = "redis://:hunter2@cache:6379/1".to_owned().into();
        config.broadcast_key = Some("b-key-123456".to_owned().into());
        let shown = format!("{config:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(!shown.contains("b-key-123456"), "{shown}");

        // Every field clap knows (one per flag), by its field name.
        use clap::CommandFactory;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            config: Config,
        }
        let command = Wrap::command();
        let ids: Vec<&str> = command
            .get_arguments()
            .map(|arg| arg.get_id().as_str())
            .filter(|id| *id != "help")
            .collect();
        assert!(
            ids.contains(&"assets_dir") && ids.contains(&"metrics"),
            "{ids:?}"
        );
        for id in ids {
            assert!(
                shown.contains(&format!("{id}: ")),
                "{id} missing from {shown}"
            );
        }
    }

    #[test]
    fn redacted_parses_and_derefs_like_its_value() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            config: Config,
        }
        let config = Wrap::parse_from([
            "hearth",
            "--secret-key-base",
            "s3cret",
            "--turbo-verifier-key",
            " 00ff ",
        ])
        .config;
        assert_eq!(
            config.secret_key_base.as_deref().map(String::as_str),
            Some("s3cret")
        );
        assert_eq!(
            config.turbo_verifier_key.as_ref().map(|k| k.trim()),
            Some("00ff")
        );
        assert_eq!(format!("{:?}", Redacted(42)), "[REDACTED]");
    }
}
