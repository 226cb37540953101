//! The shared server state: what every request and connection needs, built once at start.
//!
//! It sits below the web and cable layers (which receive it) and above the parts it holds:
//! the database pool, the fan-out engine behind its [`Broadcaster`], Rails' cookie jar and
//! stream signer, the registry of open connections, the sign-in rate limit and the metrics.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use sqlx::SqlitePool;
use tokio::sync::Semaphore;

use crate::app_link::AppLink;
use crate::config::Config;
use crate::config::{PubSubKind, Role};
use crate::db::auth_cache::AuthCache;
use crate::fanout::Fanout;
use crate::metrics::Metrics;
use crate::pubsub::{Broadcaster, Bus, LocalBus};
use crate::rails::json::JsonEscaping;
use crate::rails::{SignedCookieJar, SignedGlobalIds, StreamNameSigner};
use crate::rate_limit::{RateLimiter, WINDOW};
use crate::redis_pubsub::RedisPubSub;
use crate::registry::Registry;

/// Everything a request or a connection needs, shared behind an `Arc`.
#[derive(Debug)]
pub struct AppState {
    /// The settings the server started with.
    pub config: Config,
    /// The SQLite pool.
    pub pool: SqlitePool,
    /// Session and membership answers kept for `--auth-cache-seconds` (or until an access
    /// change in this process).
    pub auth_cache: std::sync::Arc<AuthCache>,
    /// The posts waiting for the next group commit ([`crate::db::messages::create_then`]).
    pub commits: crate::db::messages::GroupCommit,
    /// The fan-out engine (cable connections attach to it).
    pub fanout: Fanout,
    /// Where events are broadcast (onto [`Self::bus`]).
    pub broadcaster: Broadcaster,
    /// The bus, chosen once here: in process, or the Redis adapter with `--pubsub redis`
    /// (broadcasts, node-to-node commands, the local interest count).
    pub bus: Arc<dyn Bus>,
    /// Every stream's recent broadcasts and their positions (`--history-limit`,
    /// `--history-ttl`): read by the `history` command and the room page's catch-up.
    pub history: Arc<dyn crate::history::History>,
    /// The `actioncable-v1-ext-json` sessions that may be restored (`--sessions-ttl`).
    pub sessions: crate::resumable::SessionStore,
    /// The key of the app node's internal endpoint (derived from secret_key_base).
    pub internal_key: String,
    /// A cable node's line to its app node (`--role cable`).
    pub app_link: Option<Arc<AppLink>>,
    /// An app's AnyCable HTTP RPC (`--rpc-url`), whose channels run beside Campfire's.
    pub rpc: Option<Arc<crate::rpc::RpcApp>>,
    /// The bearer key of `POST /_broadcast` (`--broadcast-key`, or derived from
    /// secret_key_base as AnyCable derives it from its secret).
    pub broadcast_key: String,
    /// Rails' signed cookie jar (`cookies.signed`).
    pub cookies: SignedCookieJar,
    /// Turbo's signed stream name signer and verifier.
    pub signer: StreamNameSigner,
    /// Signed GlobalIDs (`sgid`) of mentioned users, as Rails' `signed_global_ids` verifier
    /// makes them for `--gid-app`.
    pub sgids: SignedGlobalIds,
    /// ActiveSupport's JSON escaping settings for frames.
    pub json: JsonEscaping,
    /// The login rate limit, per client address: sign-ins and password challenges (an
    /// e-mail or password change) together.
    pub login_limiter: RateLimiter,
    /// Per-user limits of posting, editing, room creation, searches, boosts, push
    /// subscriptions, test notifications and sign-ups.
    pub request_limits: crate::rate_limit::RequestLimits,
    /// Open cable connections by user and session.
    pub cable: Registry,
    /// Presence per connection, written to memberships on transitions only.
    pub presence: crate::presence::Presence,
    /// The room page's scripts under `/assets` (built in, or `--assets-dir`).
    pub assets: crate::assets::BrowserAssets,
    /// Counters, gauges and histograms for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Web push: the VAPID public key and the queue of notifications to send.
    pub pusher: crate::push::Pusher,
    /// One permit per open (upgraded) cable socket, identified or not:
    /// `config.max_connections` in all.
    pub cable_sockets: Arc<Semaphore>,
    /// Whether any IP address is banned (`bans` has a row): while false, state-changing
    /// requests skip the ban lookup. Set at start and after every ban or unban.
    pub bans_present: std::sync::atomic::AtomicBool,
    /// Active Storage: the disk service, `ActiveStorage.verifier`, the upload limits.
    pub storage: crate::storage::Storage,
    /// Active Record's signed ids (the transfer links), keyed from secret_key_base.
    pub signed_ids: crate::rails::SignedIdVerifier,
    /// The account's settings, cached for the layout and the room-creation check.
    pub account_settings: crate::db::accounts::SettingsCache,
    /// The bounded queue and client of bot webhooks.
    pub webhooks: crate::webhooks::WebhookQueue,
    /// Link previews: on or off, the allow-list and the bound on fetches at once.
    pub link_previews: crate::link_previews::LinkPreviews,
    /// Single sign-on with OpenID Connect: off, or the provider (`--oidc-issuer`).
    pub sso: crate::oidc::Sso,
    /// Outgoing mail (`--smtp-url`): off, or the queue in front of the SMTP server.
    pub mailer: crate::mail::Mailer,
}

/// The state as handlers receive it.
pub type SharedState = Arc<AppState>;

/// Reads `SECRET_KEY_BASE` from the config, else from `<data_dir>/secret_key_base`, creating
/// that file with 64 random bytes in hex (128 characters, as `rails secret`) on first use.
/// In production mode a missing `SECRET_KEY_BASE` is an error.
pub fn secret_key_base(config: &Config) -> anyhow::Result<String> {
    find_secret_key_base(
        config.secret_key_base.as_deref().map(String::as_str),
        config.production,
        &config.data_dir,
    )
}

/// [`secret_key_base`] from its three settings: `explicit` (`SECRET_KEY_BASE`; empty counts as
/// unset), `production` and `data_dir`.
pub fn find_secret_key_base(
    explicit: Option<&str>,
    production: bool,
    data_dir: &Path,
) -> anyhow::Result<String> {
    if let Some(s) = explicit.filter(|s| !s.is_empty()) {
        return Ok(s.to_owned());
    }
    if production {
        anyhow::bail!("SECRET_KEY_BASE must be set in production mode");
    }
    let path = data_dir.join("secret_key_base");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim().to_owned();
        if !existing.is_empty() {
            return Ok(existing);
        }
    }
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let mut bytes = [0u8; 64];
    rand::fill(&mut bytes);
    let secret = hex::encode(bytes);
    crate::push::write_private(&path, &secret)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(secret)
}

/// A production server's check of its database: an error naming every published demo
/// credential still in it ([`crate::db::seed::demo_credentials`]), so that a seeded demo
/// database is never served in production by mistake.
async fn refuse_demo_credentials(pool: &sqlx::SqlitePool) -> anyhow::Result<()> {
    let found = crate::db::seed::demo_credentials(pool).await?;
    if found.is_empty() {
        if crate::db::seed::is_empty(pool).await? {
            tracing::info!(
                "production: the database is empty; open / to create the administrator (first run)"
            );
        }
        return Ok(());
    }
    anyhow::bail!(
        "refusing to start in production mode: the database holds the demo seed's published \
         credentials ({}). Start without --production to change them, or start production on a \
         new, empty database (it begins at the first-run form)",
        found.join("; ")
    )
}

impl AppState {
    /// Opens (and on first start, unless `--no-seed` or `--production`, seeds) the database and
    /// builds the state. In production an empty database stays empty (the first visitor gets
    /// `/first_run`), and a database holding the seed's published credentials is refused.
    pub async fn build(config: Config) -> anyhow::Result<SharedState> {
        let secret = secret_key_base(&config)?;
        if config.role != Role::All && config.pubsub != PubSubKind::Redis {
            anyhow::bail!("--role app and --role cable need --pubsub redis");
        }
        let internal_key = crate::app_link::internal_key(&secret);
        let app_link = match (config.role, &config.app_url) {
            (Role::Cable, Some(url)) => Some(Arc::new(AppLink::new(
                url,
                internal_key.clone(),
                std::time::Duration::from_secs(config.auth_cache_seconds),
                std::time::Duration::from_secs(config.app_timeout_seconds.max(1)),
            ))),
            (Role::Cable, None) => anyhow::bail!("--role cable needs --app-url"),
            _ => None,
        };
        if let Some(link) = &app_link {
            // A cable node whose secret differs from its app node's could identify no one:
            // refuse to start and say why (an app node not up yet is only a warning).
            match link.check_key().await {
                crate::app_link::KeyCheck::Accepted => {}
                crate::app_link::KeyCheck::Unreachable(e) => tracing::warn!(
                    error = %e,
                    "the app node does not answer yet; /up fails until it does"
                ),
                crate::app_link::KeyCheck::Refused(why) => anyhow::bail!("{why}"),
            }
        }
        if config.channels == crate::config::ChannelSet::Rpc && config.rpc_url.is_none() {
            anyhow::bail!("--channels rpc needs --rpc-url");
        }
        let pool = if !config.has_database() {
            crate::db::unused_pool()?
        } else {
            crate::db::open(&config.database).await?
        };
        if config.has_database() && config.production {
            refuse_demo_credentials(&pool).await?;
        } else if config.has_database()
            && !config.no_seed
            && crate::db::seed::is_empty(&pool).await?
        {
            let options = crate::db::seed::SeedOptions {
                users: config.seed_users,
                ..Default::default()
            };
            let report = crate::db::seed::seed(&pool, &options).await?;
            tracing::info!(?report, "seeded an empty database");
        }
        let signer = match &config.turbo_verifier_key {
            Some(hex_key) => StreamNameSigner::from_raw_key(
                &hex::decode(hex_key.trim()).context("HEARTH_TURBO_VERIFIER_KEY must be hex")?,
            ),
            None => StreamNameSigner::from_secret_key_base(
                secret.as_bytes(),
                config.key_generator_digest,
            ),
        };
        let fanout = Fanout::with_budgets(
            config.fanout,
            config.queue_limits(),
            config.writer_threads,
            config.queue_budgets(),
        )
        .with_numbered(&crate::streams::MARKS);
        fanout.start();
        let json = JsonEscaping {
            escape_html_entities: true,
            escape_js_separators: config.escape_js_separators,
        };
        let metrics = Arc::new(Metrics::new());
        let memory_history = Arc::new(
            crate::history::MemoryHistory::new(
                config.history_limit,
                std::time::Duration::from_secs(config.history_ttl),
            )
            .with_numbered(&crate::streams::MARKS),
        );
        let mut history: Arc<dyn crate::history::History> = memory_history.clone();
        let swept = Arc::downgrade(&memory_history);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(30));
            loop {
                every.tick().await;
                match swept.upgrade() {
                    Some(history) => history.sweep(),
                    None => break,
                }
            }
        });
        let bus: Arc<dyn Bus> = match config.pubsub {
            PubSubKind::Inprocess => Arc::new(LocalBus::with_history(
                fanout.clone(),
                history.clone(),
                json,
            )),
            PubSubKind::Redis => {
                let redis = RedisPubSub::start(
                    &config.redis_url,
                    &config.redis_channel_prefix,
                    &crate::anycable::redis_channel(
                        config.anycable_redis_channel.as_deref(),
                        &config.redis_channel_prefix,
                    ),
                    &config.gid_app,
                    fanout.clone(),
                    metrics.clone(),
                    crate::redis_pubsub::HistorySettings {
                        limit: config.history_limit,
                        ttl: std::time::Duration::from_secs(config.history_ttl),
                        json,
                        log_limit: config.redis_log_limit,
                    },
                )?;
                // Several nodes: positions are assigned and kept in Redis.
                history = redis.history();
                redis
            }
        };
        let broadcaster =
            Broadcaster::with_sink(bus.clone(), json, &config.gid_app, metrics.clone());
        let broadcast_key = match config.broadcast_key.as_deref().filter(|k| !k.is_empty()) {
            Some(key) => key.to_owned(),
            None => crate::anycable::broadcast_key(&secret),
        };
        let rpc = match config.rpc_url.as_deref().filter(|u| !u.is_empty()) {
            Some(url) => {
                let key = match config.rpc_secret.as_deref().filter(|k| !k.is_empty()) {
                    Some(key) => key.to_owned(),
                    None => crate::rpc::rpc_key(&secret),
                };
                crate::rpc::check_settings(url, &key, &config.rpc_headers)?;
                Some(crate::rpc::RpcApp::start(
                    url,
                    key,
                    config.rpc_concurrency,
                    config.rpc_headers.clone(),
                    &metrics,
                ))
            }
            None => None,
        };
        let bans_present = config.has_database() && crate::db::bans::any(&pool).await?;
        let presence = crate::presence::Presence::new(pool.clone());
        let pool_for_push = pool.clone();
        let webhooks = crate::webhooks::WebhookQueue::new(
            &metrics,
            crate::webhooks::root_store(config.webhook_ca_file.as_deref())?,
        )?;
        let link_previews = crate::link_previews::LinkPreviews::new(
            config.link_previews,
            config.link_preview_allow_network.clone(),
        )?;
        let sso = crate::oidc::Sso::from_flags(&config.oidc)?;
        let mailer = crate::mail::Mailer::start(
            config.smtp_url.as_deref().map(String::as_str),
            config.mail_from.as_deref(),
            config.smtp_ca_file.as_deref(),
            &metrics,
            || {
                crate::mail::keys::MailKeys::from_secret_key_base(
                    secret.as_bytes(),
                    config.key_generator_digest,
                )
            },
        )?;
        let state = Self {
            mailer,
            link_previews,
            sso,
            pool,
            auth_cache: std::sync::Arc::new(AuthCache::new(std::time::Duration::from_secs(
                config.auth_cache_seconds,
            ))),
            commits: crate::db::messages::GroupCommit::default(),
            broadcaster,
            bus,
            history,
            sessions: crate::resumable::SessionStore::new(std::time::Duration::from_secs(
                config.sessions_ttl,
            )),
            broadcast_key,
            internal_key,
            app_link,
            rpc,
            fanout,
            cookies: SignedCookieJar::for_server(
                secret.as_bytes(),
                config.key_generator_digest,
                config.signed_cookie_digest,
            ),
            sgids: SignedGlobalIds::from_secret_key_base(
                secret.as_bytes(),
                config.key_generator_digest,
                &config.gid_app,
            ),
            signer,
            json,
            login_limiter: RateLimiter::new(config.login_rate_limit, WINDOW),
            request_limits: config.request_limits(),
            cable: Registry::default(),
            presence,
            assets: crate::assets::BrowserAssets::new(config.assets_dir.clone())?,
            pusher: crate::push::Pusher::start(
                pool_for_push,
                crate::push::VapidKeys::load(&config)?,
                &config,
                &metrics,
            )?,
            metrics,
            cable_sockets: Arc::new(Semaphore::new(
                config.max_connections.min(Semaphore::MAX_PERMITS),
            )),
            bans_present: std::sync::atomic::AtomicBool::new(bans_present),
            storage: crate::storage::Storage::new(
                crate::rails::ActiveStorageVerifier::from_secret_key_base(
                    secret.as_bytes(),
                    config.key_generator_digest,
                ),
                config
                    .storage_root
                    .clone()
                    .unwrap_or_else(|| config.data_dir.clone()),
                config.max_upload_bytes,
                config.upload_rate_limit,
            )
            .with_s3_from(&config)?,
            signed_ids: crate::rails::SignedIdVerifier::from_secret_key_base(
                secret.as_bytes(),
                config.key_generator_digest,
            ),
            account_settings: crate::db::accounts::SettingsCache::default(),
            webhooks,
            config,
        };
        if let Some(dir) = state.assets.dir() {
            tracing::info!(assets_dir = %dir.display(), "the page's own scripts are read from disk");
        }
        Ok(Arc::new(state))
    }
}

impl AppState {
    /// Open (upgraded) cable sockets right now, identified or not.
    pub fn open_cable_sockets(&self) -> usize {
        self.config
            .max_connections
            .saturating_sub(self.cable_sockets.available_permits())
    }
}
