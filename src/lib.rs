//! # Hearth
//!
//! A Campfire-style chat server whose `/cable` endpoint speaks Rails' Action Cable protocol byte
//! for byte, and whose fan-out engine delivers each post to every subscribed WebSocket.
//!
//! ## Layout
//!
//! Bottom-up; a module imports only from the floors below it (`tests/suite/layers.rs` holds
//! this).
//!
//! 1. Foundations, importing nothing of Hearth's above them:
//!    - [`rails`]: what Rails defines and Hearth must match: PBKDF2 key generation, the
//!      `MessageVerifier` token format (signed stream names, signed cookies), GlobalID params
//!      and ActiveSupport's JSON escaping.
//!    - [`db`]: the SQLite pool, migrations, the seed and one file of queries per table.
//!    - [`rich_text`]: the message-body codec: Action Text HTML sanitized to its allowlist,
//!      mentions as signed attachments, plain text, autolinks, the rendered body.
//!    - [`fanout`]: the delivery core, with no HTTP, SQL or Action Cable in it: a stream index,
//!      pre-encoded shared frames, bounded per-connection queues drained by their owner with
//!      vectored writes.
//!    - [`history`]: stream positions (AnyCable's epoch and offset) and the bounded history
//!      of each stream's broadcasts, read back after a reconnect.
//!    - [`loggable`]: untrusted text (a client's command, a broadcast body's identifier) cut
//!      and escaped before a log line quotes it.
//!    - [`sounds`]: the names `/play` knows, each with its line of text or its picture.
//! 2. Settings and leaf services: [`config`] (every setting, as a flag with an environment
//!    variable and a default), [`net`] (IP ranges for trusted proxies), [`peer_connections`] (open HTTP connections per client address), [`metrics`] (Prometheus
//!    metrics at `/metrics`), [`rate_limit`] (the sign-in limit, token buckets), [`registry`]
//!    (open connections by user and session), [`resumable`] (resumable cable sessions, by `sid`), [`presence`] (presence per connection, coalesced
//!    into membership writes), [`assets`] (the room page's scripts, vendored and built into the
//!    binary), [`anycable`] (AnyCable's publication format and broadcast key), [`rpc`] (AnyCable's
//!    HTTP RPC client: an app's own channels asked over three JSON calls, with a timeout, a
//!    cap on calls in flight, a circuit breaker and a bounded disconnect queue), [`storage`]
//!    (Active Storage's disk service, content identification, signed blob URLs, image
//!    processing), [`link_previews`] (a pasted URL's Open Graph card, fetched behind an SSRF
//!    guard), [`webhooks`] (the bounded queue and HTTP client of bot webhooks), [`push`]
//!    (web push: VAPID keys, the push queue and its sender), [`oidc`] (single sign-on's
//!    relying party: discovery, the JWKS and its rotation, the code exchange and the ID
//!    token's checks, over its own HTTP client), [`mail`] (outgoing mail: the SMTP transport
//!    behind a bounded queue with retries), [`outbox`] (the handle over what leaves the server
//!    off the request path: pushes, webhooks, mail, link-preview fetches).
//! 3. What the app says: [`render`] (askama pages and partials, the `<turbo-stream>` wrapper),
//!    [`letters`] (the mails' text and HTML parts),
//!    [`streams`] (stream names), [`pubsub`] (the [`pubsub::Bus`] seam every broadcast,
//!    node-to-node command and stream attach goes through, and the [`pubsub::Broadcaster`]
//!    handle over it), [`redis_pubsub`] (the Redis bus behind that seam, in Rails' redis
//!    adapter format, with remote disconnects), [`app_link`] (a cable node's calls to its app
//!    node) and [`state`] (the shared state built at
//!    start).
//! 4. [`broadcasts`]: what each event broadcasts, to which stream, in one call per event;
//!    [`digests`]: what each period mails each person who missed something.
//! 5. The faces: [`web`] (the axum routes: sessions, CSRF, rooms, messages, bots, the
//!    sidebar, the first run, sign-up, profiles, administration, bans, search), [`cable`]
//!    (the Action Cable server: upgrade, protocol frames, one task per connection reading
//!    commands in order, Campfire's channels) and [`transfer`] (the commands that move a team
//!    in and out: Campfire and Slack imports, the export, backup and restore).
//! 6. [`app`]: wiring: the service (routes, `/cable`, `/metrics`), the accept loop and the
//!    graceful drain.

pub mod anycable;
pub mod app;
pub mod app_link;
pub mod assets;
pub mod broadcasts;
pub mod cable;
pub mod config;
pub mod db;
pub mod digests;
pub mod fanout;
pub mod history;
pub mod letters;
pub mod link_previews;
pub mod loggable;
pub mod mail;
pub mod metrics;
pub mod net;
pub mod oidc;
pub mod outbox;
pub mod peer_connections;
pub mod presence;
pub mod pubsub;
pub mod push;
pub mod rails;
pub mod rate_limit;
pub mod redis_pubsub;
pub mod registry;
pub mod render;
pub mod resumable;
pub mod rich_text;
pub mod rpc;
pub mod sounds;
pub mod state;
pub mod storage;
pub mod streams;
pub mod transfer;
pub mod web;
pub mod webhooks;
