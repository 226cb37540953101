//! # Hearth
//!
//! A Campfire-style chat server whose `/cable` endpoint speaks Rails' Action Cable protocol byte
//! for byte, and whose fan-out engine delivers each post to every subscribed WebSocket.
//!
//! ## Layout
//!
//! - [`config`]: every setting, as a flag with an environment variable and a default.
//! - [`rails`]: what Rails defines and Hearth must match: PBKDF2 key generation, the
//!   `MessageVerifier` token format (signed stream names, signed cookies), GlobalID params and
//!   ActiveSupport's JSON escaping.
//! - [`db`]: the SQLite pool, migrations, the seed and one file of queries per table.
//! - [`web`]: the axum routes: sessions, CSRF, rooms, messages, bots, the sidebar.
//! - [`cable`]: the Action Cable server: upgrade, protocol frames, one task per connection
//!   reading commands in order, and Campfire's channels.
//! - [`fanout`]: the delivery core, with no HTTP, SQL or Action Cable in it: a stream index,
//!   pre-encoded shared frames, bounded per-connection queues drained by their owner with
//!   vectored writes, and the `tokio::sync::broadcast` reference engine.
//! - [`metrics`]: Prometheus metrics at `/metrics`.
//! - [`app`]: wiring: shared state, the router and `serve`.

pub mod app;
pub mod broadcasts;
pub mod cable;
pub mod config;
pub mod db;
pub mod fanout;
pub mod metrics;
pub mod rails;
pub mod web;
