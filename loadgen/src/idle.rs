//! Idle cost: what N connected, subscribed, silent clients cost the server.
//!
//! Measures the server's RSS and thread count (`/proc/<pid>/status`) before connecting,
//! after N clients are ready with their subscriptions (4 each by default) and a settle pause,
//! and after they disconnect. RSS per connection = (after − before) ÷ ready clients. A server
//! whose thread count grows with connections (thread-per-connection) shows it here; the
//! budget from the anchors is a flat thread count and tens of KB per idle connection.

use crate::cable::{CableConfig, ClientSet, Shared};
use crate::campfire::{self, PrepareOptions};
use crate::endpoint::Endpoint;
use crate::procfs::{self, Proc};
use crate::sweep::{campfire_profiles, discover_pid};
use crate::tracker::TokenScheme;
use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Idle-mode settings.
#[derive(Debug, Clone)]
pub struct IdleOptions {
    /// Base URL.
    pub base: Endpoint,
    /// Connections to hold.
    pub n: usize,
    /// Login and subscription settings.
    pub prepare: PrepareOptions,
    /// Server pid; discovered from the port when `None`.
    pub server_pid: Option<u32>,
    /// Pause after all are ready before measuring.
    pub settle: Duration,
    /// Extra time to hold the connections after measuring.
    pub hold: Duration,
    /// Longest wait for all clients to be ready.
    pub connect_timeout: Duration,
    /// Concurrent handshakes.
    pub connect_concurrency: usize,
    /// Receive buffer per connection, bytes.
    pub read_buffer: usize,
    /// Offer permessage-deflate (`--deflate`).
    pub deflate: bool,
}

/// The idle-cost measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleReport {
    /// Connections requested.
    pub n: usize,
    /// Connections ready.
    pub ready: usize,
    /// Connections that failed.
    pub failed: usize,
    /// Subscriptions per connection.
    pub subscriptions_per_client: usize,
    /// Connect-and-subscribe time, s.
    pub connect_secs: f64,
    /// Server pid.
    pub server_pid: u32,
    /// Server `Cpus_allowed_list`.
    pub server_cpus_allowed: String,
    /// RSS before connecting, KiB.
    pub rss_before_kb: u64,
    /// RSS with N connections, KiB.
    pub rss_after_kb: u64,
    /// RSS after the clients disconnected, KiB.
    pub rss_after_close_kb: u64,
    /// (after − before) ÷ ready, KiB.
    pub rss_per_connection_kb: f64,
    /// Threads before connecting.
    pub threads_before: u64,
    /// Threads with N connections.
    pub threads_after: u64,
    /// Threads after the clients disconnected.
    pub threads_after_close: u64,
    /// `threads_after == threads_before`.
    pub threads_flat: bool,
    /// First distinct connection errors.
    pub errors: Vec<String>,
}

/// Runs the idle measurement.
///
/// Errors: login/scrape failures, or the server process cannot be found.
pub async fn run_idle(opts: &IdleOptions) -> Result<IdleReport> {
    let pid = opts
        .server_pid
        .or_else(|| discover_pid(&opts.base))
        .ok_or_else(|| {
            anyhow!(
                "cannot tell which process serves {} (pass --server-pid)",
                opts.base
            )
        })?;
    let prepared = campfire::prepare(&opts.base, &opts.prepare).await?;
    let profiles = campfire_profiles(&prepared);
    let before = procfs::status(Proc::Pid(pid)).ok_or_else(|| anyhow!("pid {pid} is gone"))?;
    let shared = Rc::new(Shared::new(opts.n, 1, &TokenScheme::random()));
    let cfg = Rc::new(CableConfig {
        endpoint: opts.base.cable(),
        origin: opts.base.origin(),
        read_buffer: opts.read_buffer,
        required_protocol: Some("actioncable-v1-json".into()),
        deflate: opts.deflate,
        spread: Vec::new(),
        next: Default::default(),
    });
    let started = Instant::now();
    let clients = ClientSet::spawn(opts.n, &profiles, &cfg, &shared, opts.connect_concurrency);
    let (conns, _settled) = clients.wait_settled(&shared, opts.connect_timeout).await;
    clients.abort_unready(&shared);
    let connect_secs = conns
        .last_ready
        .map(|t| t.duration_since(started).as_secs_f64())
        .unwrap_or(0.0);
    tokio::time::sleep(opts.settle).await;
    let after = procfs::status(Proc::Pid(pid)).ok_or_else(|| anyhow!("pid {pid} is gone"))?;
    if !opts.hold.is_zero() {
        tokio::time::sleep(opts.hold).await;
    }
    let conns = shared.conns.borrow().clone();
    clients.abort_all();
    drop(clients);
    tokio::time::sleep(opts.settle).await;
    let closed = procfs::status(Proc::Pid(pid)).unwrap_or_default();
    let ready = conns.ready;
    Ok(IdleReport {
        n: opts.n,
        ready,
        failed: opts.n - ready.min(opts.n),
        subscriptions_per_client: prepared.subscriptions_per_client,
        connect_secs,
        server_pid: pid,
        server_cpus_allowed: after.cpus_allowed.clone(),
        rss_before_kb: before.rss_kb,
        rss_after_kb: after.rss_kb,
        rss_after_close_kb: closed.rss_kb,
        rss_per_connection_kb: if ready > 0 {
            (after.rss_kb as f64 - before.rss_kb as f64) / ready as f64
        } else {
            0.0
        },
        threads_before: before.threads,
        threads_after: after.threads,
        threads_after_close: closed.threads,
        threads_flat: before.threads == after.threads,
        errors: conns.errors,
    })
}

/// A human summary of an [`IdleReport`].
pub fn describe(r: &IdleReport) -> String {
    format!(
        "idle: {}/{} connections ready ({} subscriptions each) in {:.2} s; server pid {} (CPUs {})\n\
         RSS {:.1} MiB → {:.1} MiB with connections ({:.1} KiB per connection) → {:.1} MiB after close\n\
         threads {} → {} → {} ({})",
        r.ready,
        r.n,
        r.subscriptions_per_client,
        r.connect_secs,
        r.server_pid,
        r.server_cpus_allowed,
        r.rss_before_kb as f64 / 1024.0,
        r.rss_after_kb as f64 / 1024.0,
        r.rss_per_connection_kb,
        r.rss_after_close_kb as f64 / 1024.0,
        r.threads_before,
        r.threads_after,
        r.threads_after_close,
        if r.threads_flat {
            "flat"
        } else {
            "GREW with connections"
        }
    )
}
