//! A load generator for Campfire-compatible chat servers (Hearth, the Rails Campfire, other
//! ports) and for plain Action Cable endpoints.
//!
//! It does what a room full of browsers does — log in through `/session`, scrape the room page
//! and the sidebar, open `/cable`, subscribe to the room's message stream plus presence,
//! heartbeat and unread channels, and post messages — and measures what the server delivers:
//! messages that reached every client per second, client receipts per second, post round trip,
//! post → first and post → all latency, order and duplicates, and the CPU, memory and threads
//! of both the server and itself.
//!
//! Layout:
//! - wire: [`endpoint`], [`cookies`], [`http`] (hyper, one keep-alive connection), [`ws`] (a lean
//!   RFC 6455 client codec), [`deflate`] (RFC 7692 on the client side), [`html`] (tag
//!   scanning for tokens and stream sources);
//! - protocol: [`campfire`] (login, scrape, post), [`cable`] (N clients on one thread);
//! - measurement: [`tracker`] (per message and per client accounting), [`stats`]
//!   (histograms), [`procfs`] (CPU, RSS, threads, pinning, port owners);
//! - runs: [`cell`] (one N), [`server`] (managed servers), [`sweep`], [`idle`], [`fanout`],
//!   [`selftest`] (the client's own receive capacity), [`multi`] (one run over several
//!   processes: one posts, the others listen);
//! - output: [`report`] (JSON lines, medians, markdown), [`plot`] (SVG and PNG);
//! - [`cli`]: the command line.
//!
//! Everything runs on one current-thread tokio runtime inside a `LocalSet`, so the loadgen's
//! CPU is one core that it measures and reports.

#![forbid(unsafe_code)]

pub mod cable;
pub mod campfire;
pub mod cell;
pub mod cli;
pub mod cookies;
pub mod coordination;
pub mod deflate;
pub mod endpoint;
pub mod fanout;
pub mod html;
pub mod http;
pub mod idle;
pub mod multi;
pub mod plot;
pub mod procfs;
pub mod report;
pub mod selftest;
pub mod server;
pub mod stats;
pub mod sweep;
pub mod tracker;
pub mod ws;
