//! Hearth's integration tests, in one binary: one module per area, sharing the test server,
//! the HTTP and WebSocket clients of [`common`] and one build of the whole server (each
//! integration-test binary links every dependency again, which is most of the suite's build
//! time on a small machine).
//!
//! The modules' tests share this process, so none of them may change what the others rely
//! on: no environment variables are set (the servers read `HEARTH_*` through clap, and
//! `REDIS_URL` is only read), the one rlimit raised (`stress`: `RLIMIT_NOFILE`) only grows,
//! every listener binds port 0, and a log is captured per test (a thread-local subscriber),
//! never by a global one. Process-wide state of the server itself (the database write lock
//! and the access generation of `hearth::db`) is shared by every test server here, as it was
//! between the tests of one file: a write holds the lock only for its own transaction, and a
//! generation advanced by another server only makes a cache refill.
//!
//! Apart from this binary: `tests/fanout_alloc.rs`, which installs a counting
//! `#[global_allocator]` for its whole process.
//!
//! Filter by module path: `cargo test --test suite -- web::` runs `web.rs`' tests only.

mod common;

mod account_settings;
mod accounts;
mod avatars;
mod backup;
mod boosts_inline;
mod bot_answers;
mod browser;
mod browser_avatars;
mod browser_boosts;
mod browser_composer;
mod browser_deflate;
mod browser_files;
mod browser_import_campfire;
mod browser_link_previews;
mod browser_look;
mod browser_mail;
mod browser_room;
mod browser_rooms_admin;
mod browser_small_ones;
mod browser_sounds;
mod browser_sso;
mod browser_threads;
mod cable;
mod campfire_signed;
mod children;
mod cli;
mod deflate;
mod digests;
mod drain_spread;
mod export_campfire;
// The fan-out hooks (`Fanout::new_inline_writers`) exist with the `test-support` feature.
#[cfg(feature = "test-support")]
mod fanout_socket;
mod files;
mod group_commit;
mod hardening;
mod hardening_blobs;
mod hardening_budget;
mod hardening_history;
mod hardening_hostile;
mod hardening_images;
mod hardening_images2;
mod hardening_last_mile;
mod hardening_limits;
mod hardening_push;
mod hardening_rpc;
mod hardening_sessions;
mod hardening_signin;
mod hostile;
mod import_campfire;
mod import_slack;
mod inbox;
mod layers;
mod link_previews;
mod mail;
mod mail_sign_in;
mod metrics;
mod node_client;
mod page_assets;
mod process;
mod properties;
mod push;
mod rails_interop;
mod rails_vectors;
mod redis;
mod redis_links;
mod redis_rails;
mod reliable;
mod request_limits;
mod rich_text;
mod room_page;
mod rooms;
mod rooms_last_mile;
mod rpc_channels;
mod s3;
mod security;
mod seed;
mod small_ones;
mod sounds;
mod sso;
mod stress;
mod threads;
mod transfer_round_trip;
mod web;
