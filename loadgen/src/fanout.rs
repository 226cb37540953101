//! Fan-out only: any Action Cable endpoint plus an HTTP broadcast trigger (or AnyCable's
//! `POST /_broadcast` with `--anycable-stream` and `--anycable-key`: the body below is then the
//! broadcast's `data`, e.g. to a stream that an app's channels over AnyCable's RPC follow).
//!
//! For comparing Hearth's cable with a plain Rails Action Cable server (the reference peer's
//! `POST /broadcast?stream=X` runs `ActionCable.server.broadcast(X, JSON body)`) without the
//! Campfire application around it. Every client connects with the given `Cookie` and `Origin`
//! and subscribes to the given identifiers; posters `POST` `{"body":"<padding>","id":"<token>"}`
//! to the trigger, and a broadcast arrives as
//! `{"identifier":"...","message":{"body":"...","id":"<token>"}}`, matched by the token like a
//! Campfire message.
//!
//! Before the run one connection is opened and closed: Rails 6.1 starts its 3-second heartbeat
//! timer lazily on the first request and without a lock, so a burst of first connections can
//! start several timers (anchors §5).

use crate::cable::{self, CableConfig, ClientProfile};
use crate::cell::{run_cell, AnyCableBroadcast, CellOptions, CellTarget, PostTarget};
use crate::endpoint::Endpoint;
use crate::report::CellResult;
use crate::sweep::{cell_line, discover_pid, progress_bar, say, Output};
use anyhow::{anyhow, Result};
use std::path::PathBuf;
use std::rc::Rc;

/// Fan-out-only settings.
#[derive(Debug, Clone)]
pub struct FanoutOptions {
    /// Name in the results.
    pub name: String,
    /// The `ws://` Action Cable URL.
    pub cable_url: Endpoint,
    /// `Origin` header value.
    pub origin: String,
    /// `Cookie` header value for every client.
    pub cookie: Option<String>,
    /// Identifiers every client subscribes to.
    pub identifiers: Vec<String>,
    /// The broadcast trigger URL.
    pub trigger: Endpoint,
    /// `Cookie` header for the trigger, if it needs one.
    pub trigger_cookie: Option<String>,
    /// The trigger is AnyCable's `POST /_broadcast` to this stream, with this key.
    pub anycable: Option<AnyCableBroadcast>,
    /// Client counts.
    pub ns: Vec<usize>,
    /// Repetitions.
    pub repeat: usize,
    /// Server pid; discovered from the cable port when `None`.
    pub server_pid: Option<u32>,
    /// Cell settings (`n` replaced per cell; `body_bytes` is the padding).
    pub cell: CellOptions,
    /// Receive buffer per connection, bytes.
    pub read_buffer: usize,
    /// Offer permessage-deflate (`--deflate`).
    pub deflate: bool,
    /// Require the server to select `actioncable-v1-json`.
    pub require_protocol: bool,
    /// Output directory.
    pub out: PathBuf,
}

/// Runs every (rep, n) cell against the endpoint; returns the cells.
///
/// Errors: the preflight connection fails, or the output cannot be written.
pub async fn run_fanout(opts: &FanoutOptions) -> Result<Vec<CellResult>> {
    let cable = CableConfig {
        endpoint: opts.cable_url.clone(),
        origin: opts.origin.clone(),
        read_buffer: opts.read_buffer,
        required_protocol: opts
            .require_protocol
            .then(|| "actioncable-v1-json".to_owned()),
        deflate: opts.deflate,
        spread: Vec::new(),
        next: Default::default(),
    };
    let (stream, _, _) = cable::open(&cable, opts.cookie.as_deref())
        .await
        .map_err(|e| anyhow!("preflight connection to {}: {e}", opts.cable_url))?;
    drop(stream);
    let server_pid = opts.server_pid.or_else(|| discover_pid(&opts.cable_url));
    let target = CellTarget {
        name: opts.name.clone(),
        url: opts.cable_url.to_string(),
        kind: "fanout-only".into(),
        cable,
        profiles: vec![Rc::new(ClientProfile {
            cookie: opts.cookie.clone(),
            identifiers: opts.identifiers.clone(),
        })],
        users: 1,
        post: PostTarget::Trigger {
            url: opts.trigger.clone(),
            cookie: opts.trigger_cookie.clone(),
            anycable: opts.anycable.clone(),
        },
        server_pid,
    };
    let mut out = Output::create(&opts.out)?;
    let pb = progress_bar((opts.repeat * opts.ns.len()) as u64);
    let mut cells = Vec::new();
    for rep in 0..opts.repeat {
        for &n in &opts.ns {
            let label = format!("rep {}/{} N={n} {}", rep + 1, opts.repeat, opts.name);
            let phase = |p: &str| pb.set_message(format!("{label}: {p}"));
            let cell_opts = CellOptions {
                n,
                ..opts.cell.clone()
            };
            let result = run_cell(&target, &cell_opts, rep, &phase).await;
            out.write_cell(&result)?;
            say(&pb, &cell_line(&result));
            cells.push(result);
            pb.inc(1);
        }
    }
    pb.finish_with_message("done");
    let (table, notes) = out.finish(&cells, &crate::report::FloorFps::default())?;
    println!("{table}");
    for n in notes {
        eprintln!("{n}");
    }
    Ok(cells)
}
