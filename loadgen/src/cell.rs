//! One cell of a sweep: N clients, P posters, a fixed posting duration, then a drain.
//!
//! Phases:
//! 1. **Connect**: spawn N clients ([`crate::cable`]), wait until all are ready or failed
//!    (`--connect-timeout`), abort the rest. Connect-and-subscribe time is first connect →
//!    last ready.
//! 2. **Post** for `--duration`:
//!    - *closed loop* (default): each of P posters sends its next post as soon as its previous
//!      response came back;
//!    - *paced* (`--rate R`): posters share R posts/s, each ticking at R/P with staggered
//!      phases; a poster whose response is late delays its next tick (achieved rate reported).
//!
//!    In both modes a **window** caps undelivered messages: a poster waits while `--window W`
//!    posted messages have not yet reached every client. Why: a post's HTTP response returns
//!    once the server has *queued* the broadcast, not once it reached N sockets, so closed-loop
//!    posters alone can post faster than the server fans out. The backlog then grows for the
//!    whole cell inside the server's bounded per-connection queues: post→all latency measures
//!    queue depth (and grows with the duration), and a server that sheds or disconnects
//!    laggards, as bounded queues must, fails the cell. With the window the cell settles where
//!    the post rate equals the fan-out rate, so delivered/s is the server's fan-out capacity
//!    and latencies are those of a loaded but stable server (`--window 0` disables it).
//! 3. **Drain**: wait until every posted message is complete, or `--drain` passes.
//!
//! CPU of the server and of the load generator is measured from the first post to the end of
//! the drain; server memory and threads at the end.

use crate::cable::{CableConfig, ClientProfile, ClientSet, Shared};
use crate::campfire::{self, Prepared};
use crate::coordination::{
    timeline_text, wait_for_file, write_json, Coordination, MonoClock, PostRecord, PostsRecord,
    ReadyRecord, WallClock,
};
use crate::endpoint::Endpoint;
use crate::http::HttpConnection;
use crate::procfs::{self, CpuSample, Proc};
use crate::report::{CellResult, ServerStats};
use crate::stats::rate;
use crate::tracker::{TokenScheme, Wire};
use bytes::Bytes;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Per-cell knobs (see the README for defaults).
#[derive(Debug, Clone)]
pub struct CellOptions {
    /// Clients.
    pub n: usize,
    /// Posting phase.
    pub duration: Duration,
    /// Posters (concurrent HTTP connections posting).
    pub posters: usize,
    /// Maximum undelivered messages (0 = unbounded).
    pub window: usize,
    /// Paced posts per second across all posters; `None` = closed loop.
    pub rate: Option<f64>,
    /// Longest wait for undelivered messages after posting.
    pub drain: Duration,
    /// Longest wait for all clients to be ready.
    pub connect_timeout: Duration,
    /// Concurrent handshakes.
    pub connect_concurrency: usize,
    /// Pause between all-ready and the first post (lets subscribe-time work settle).
    pub settle: Duration,
    /// Message body size (Campfire) or broadcast padding (fanout-only), bytes.
    pub body_bytes: usize,
}

/// What posters post.
#[derive(Debug, Clone)]
pub enum PostTarget {
    /// Campfire messages to `prepared.post_path`, poster p posting as user p mod U.
    Campfire {
        /// Base URL.
        base: Endpoint,
        /// Logins and scrape results.
        prepared: Rc<Prepared>,
    },
    /// A broadcast trigger: `POST` a JSON body `{"body":"<padding>","id":"<token>"}`.
    Trigger {
        /// The trigger URL.
        url: Endpoint,
        /// Optional `Cookie` header.
        cookie: Option<String>,
        /// AnyCable's broadcast endpoint instead (`POST /_broadcast`, a bearer key): the
        /// body above goes as the `data` of a broadcast to this stream.
        anycable: Option<AnyCableBroadcast>,
    },
}

/// A broadcast through AnyCable's `POST /_broadcast`: `{"stream":…,"data":"<JSON>"}`.
#[derive(Debug, Clone)]
pub struct AnyCableBroadcast {
    /// The stream broadcast to.
    pub stream: String,
    /// The bearer key.
    pub key: String,
}

/// Everything about the target of one cell.
#[derive(Debug, Clone)]
pub struct CellTarget {
    /// Name in the results.
    pub name: String,
    /// URL shown in the results.
    pub url: String,
    /// `campfire` or `fanout-only`.
    pub kind: String,
    /// Cable settings.
    pub cable: CableConfig,
    /// Client profiles, assigned round-robin.
    pub profiles: Vec<Rc<ClientProfile>>,
    /// Users behind the profiles.
    pub users: usize,
    /// What to post.
    pub post: PostTarget,
    /// The server process, when known (for CPU, RSS, threads and pinning).
    pub server_pid: Option<u32>,
}

struct PosterCtx {
    shared: Rc<Shared>,
    tokens: TokenScheme,
    target: PostTarget,
    opts: CellOptions,
    deadline: Instant,
    errors: RefCell<Vec<String>>,
}

impl PosterCtx {
    fn note_error(&self, e: String) {
        let mut errs = self.errors.borrow_mut();
        if errs.len() < 10 && !errs.contains(&e) {
            errs.push(e);
        }
    }

    /// Waits while the window is full; false when the deadline passed first.
    async fn window_open(&self) -> bool {
        if self.opts.window == 0 {
            return Instant::now() < self.deadline;
        }
        loop {
            let notified = self.shared.progress.notified();
            if Instant::now() >= self.deadline {
                return false;
            }
            if self.shared.tracker.borrow().undelivered() < self.opts.window {
                return true;
            }
            let deadline = tokio::time::Instant::from_std(self.deadline);
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }
}

/// When a post's request left and its answer came back, for the timeline.
fn wire_of(resp: &crate::http::Response) -> Wire {
    Wire {
        wrote: resp.wrote,
        first_byte: resp.first_byte,
    }
}

async fn poster(p: usize, ctx: Rc<PosterCtx>) {
    let (endpoint, mut jar, csrf) = match &ctx.target {
        PostTarget::Campfire { base, prepared } => {
            let user = &prepared.users[p % prepared.users.len()];
            (base.clone(), user.jar.clone(), user.csrf_token.clone())
        }
        // The connection is to the trigger's host; the request target is the trigger's path.
        PostTarget::Trigger { url, .. } => (
            Endpoint {
                path: "/".into(),
                ..url.clone()
            },
            Default::default(),
            String::new(),
        ),
    };
    let mut conn = HttpConnection::new(&endpoint);
    let mut ticker = ctx.opts.rate.map(|r| {
        let period = Duration::from_secs_f64(ctx.opts.posters as f64 / r.max(0.001));
        let offset = period.mul_f64(p as f64 / ctx.opts.posters.max(1) as f64);
        let mut iv = tokio::time::interval_at(tokio::time::Instant::now() + offset, period);
        iv.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        iv
    });
    let deadline = tokio::time::Instant::from_std(ctx.deadline);
    let mut consecutive_errors = 0u32;
    loop {
        if let Some(t) = ticker.as_mut() {
            if tokio::time::timeout_at(deadline, t.tick()).await.is_err() {
                return;
            }
        }
        if !ctx.window_open().await {
            return;
        }
        let sent = Instant::now();
        let seq = ctx.shared.tracker.borrow_mut().register(p, sent);
        let token = ctx.tokens.token(seq);
        let mut wire = Wire::default();
        let outcome: Result<(), String> = match &ctx.target {
            PostTarget::Campfire { prepared, .. } => {
                let body = campfire::message_body(&token, ctx.opts.body_bytes);
                let form = campfire::post_form(&body, &token, &csrf);
                match conn
                    .post_form(
                        &prepared.post_path,
                        &mut jar,
                        campfire::TURBO_STREAM_ACCEPT,
                        form,
                    )
                    .await
                {
                    Ok(resp) => {
                        wire = wire_of(&resp);
                        campfire::validate_post_response(
                            resp.status,
                            resp.content_type.as_deref(),
                            &resp.body,
                            &prepared.messages_target,
                            &token,
                        )
                    }
                    Err(e) => Err(e.to_string()),
                }
            }
            PostTarget::Trigger {
                url,
                cookie,
                anycable,
            } => {
                let body = trigger_body(&token, ctx.opts.body_bytes);
                let sent = match anycable {
                    Some(a) => {
                        let body = anycable_body(&a.stream, &body);
                        conn.post_bearer(&url.path, &a.key, body).await
                    }
                    None => {
                        conn.post_raw(&url.path, cookie.as_deref(), "application/json", body)
                            .await
                    }
                };
                match sent {
                    Ok(resp) if (200..300).contains(&resp.status) => {
                        wire = wire_of(&resp);
                        Ok(())
                    }
                    Ok(resp) => Err(format!(
                        "trigger answered {}: {}",
                        resp.status,
                        String::from_utf8_lossy(&resp.body[..resp.body.len().min(160)])
                    )),
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        let rtt = sent.elapsed();
        match outcome {
            Ok(()) => {
                consecutive_errors = 0;
                ctx.shared
                    .tracker
                    .borrow_mut()
                    .post_result_on_wire(seq, Ok(rtt), wire);
            }
            Err(e) => {
                ctx.shared.tracker.borrow_mut().post_result(seq, Err(()));
                ctx.shared.progress.notify_waiters();
                ctx.note_error(format!("post: {e}"));
                consecutive_errors += 1;
                if consecutive_errors >= 50 {
                    ctx.note_error("poster stopped after 50 consecutive failures".into());
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// The JSON body of a broadcast trigger: `{"body":"<size × x>","id":"<token>"}`.
pub fn trigger_body(token: &str, size: usize) -> Bytes {
    Bytes::from(format!(
        "{{\"body\":\"{}\",\"id\":\"{token}\"}}",
        "x".repeat(size)
    ))
}

/// AnyCable's broadcast of `data` (JSON text) to `stream`.
pub fn anycable_body(stream: &str, data: &[u8]) -> Bytes {
    let data = String::from_utf8_lossy(data);
    Bytes::from(serde_json::json!({ "stream": stream, "data": data }).to_string())
}

fn server_stats(pid: u32, start: Option<CpuSample>, end: Option<CpuSample>) -> Option<ServerStats> {
    let status = procfs::status(Proc::Pid(pid))?;
    Some(ServerStats {
        pid,
        cpu_percent: match (start, end) {
            (Some(a), Some(b)) => a.percent_until(&b),
            _ => 0.0,
        },
        rss_mb: status.rss_kb as f64 / 1024.0,
        peak_rss_mb: status.hwm_kb as f64 / 1024.0,
        threads: status.threads,
        cpus_allowed: status.cpus_allowed,
    })
}

/// `release` or `debug`.
pub fn build_kind() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// Runs one cell and returns its result (a failed cell is a result with `ok == false` and its
/// errors, not an `Err`). `phase` is told the current phase for a progress display.
pub async fn run_cell(
    target: &CellTarget,
    opts: &CellOptions,
    rep: usize,
    phase: &dyn Fn(&str),
) -> CellResult {
    run_cell_with(target, opts, rep, phase, &Coordination::default()).await
}

/// [`run_cell`] as the posting process of a run over several processes ([`crate::multi`]):
/// tokens with `coord`'s run tag, the ready file written once the clients settled, the
/// posting phase held until the start file exists, the posts file written after the drain.
/// With `Coordination::default()` it is exactly [`run_cell`]. A start file that does not
/// appear in time, or a file that cannot be written, is an error of the result.
pub async fn run_cell_with(
    target: &CellTarget,
    opts: &CellOptions,
    rep: usize,
    phase: &dyn Fn(&str),
    coord: &Coordination,
) -> CellResult {
    let n = opts.n;
    let posters = opts.posters.max(1);
    let tokens = coord.tokens();
    let run_tag = tokens.run_tag().to_owned();
    let shared = Rc::new(Shared::new(n, posters, &tokens));
    let mut result = CellResult {
        target: target.name.clone(),
        url: target.url.clone(),
        kind: target.kind.clone(),
        n,
        rep,
        mode: if opts.rate.is_some() {
            "paced"
        } else {
            "closed-loop"
        }
        .to_owned(),
        posters,
        window: opts.window,
        rate: opts.rate,
        duration_secs: opts.duration.as_secs_f64(),
        users: target.users,
        subscriptions_per_client: target
            .profiles
            .iter()
            .map(|p| p.identifiers.len())
            .max()
            .unwrap_or(0),
        ..Default::default()
    };
    result.loadgen.build = build_kind().to_owned();
    result.loadgen.read_buffer = target.cable.read_buffer;
    if result.loadgen.build == "debug" {
        result
            .notes
            .push("the load generator is a debug build: its numbers mean little".into());
    }

    phase("connecting");
    let clock = WallClock::now();
    let connect_start = Instant::now();
    let clients = ClientSet::spawn(
        n,
        &target.profiles,
        &Rc::new(target.cable.clone()),
        &shared,
        opts.connect_concurrency,
    );
    let (_, settled) = clients.wait_settled(&shared, opts.connect_timeout).await;
    if !settled {
        let aborted = clients.abort_unready(&shared);
        shared.conns.borrow_mut().errors.push(format!(
            "{aborted} clients not ready after {:?}",
            opts.connect_timeout
        ));
    }
    let conns = shared.conns.borrow().clone();
    result.ready = conns.ready;
    result.connect_secs = conns
        .last_ready
        .map(|t| t.duration_since(connect_start).as_secs_f64())
        .unwrap_or(0.0);
    if let Some(path) = &coord.ready_file {
        let ready = ReadyRecord {
            n,
            ready: conns.ready,
            failed: n - conns.ready.min(n),
            connect_secs: result.connect_secs,
            connect_start_unix_us: clock.unix_us(connect_start),
            last_ready_unix_us: conns.last_ready.map(|t| clock.unix_us(t)),
        };
        if let Err(e) = write_json(path, &ready) {
            result.errors.push(format!("{e:#}"));
        }
    }
    if conns.ready == 0 {
        result.failed_connections = n;
        result.errors = conns.errors;
        result
            .errors
            .push("no client became ready; nothing posted".into());
        result.judge();
        return result;
    }
    if let Some(start) = &coord.start_file {
        phase("waiting for the start file");
        if !wait_for_file(start, coord.start_timeout).await {
            result.ready = conns.ready;
            result.errors.extend(conns.errors);
            result.errors.push(format!(
                "{} did not appear within {:?}; nothing posted",
                start.display(),
                coord.start_timeout
            ));
            result.judge();
            return result;
        }
    }
    // Messages must reach every client that is ready and still connected when posting starts.
    let conns = shared.conns.borrow().clone();
    let expected = conns.ready.saturating_sub(conns.disconnected);
    shared.tracker.borrow_mut().set_expected(expected as u32);
    if !opts.settle.is_zero() {
        tokio::time::sleep(opts.settle).await;
    }

    phase("posting");
    let server_cpu0 = target
        .server_pid
        .and_then(|p| CpuSample::take(Proc::Pid(p)));
    let self_cpu0 = CpuSample::take(Proc::SelfProc);
    let bytes0 = shared.bytes_received.get();
    let frames0 = shared.frames.get();
    let other0 = shared.other_frames.get();
    let post_start = Instant::now();
    let ctx = Rc::new(PosterCtx {
        shared: shared.clone(),
        tokens,
        target: target.post.clone(),
        opts: CellOptions {
            posters,
            ..opts.clone()
        },
        deadline: post_start + opts.duration,
        errors: RefCell::new(Vec::new()),
    });
    let handles: Vec<_> = (0..posters)
        .map(|p| tokio::task::spawn_local(poster(p, ctx.clone())))
        .collect();
    for h in handles {
        let _ = h.await;
    }
    let post_end = Instant::now();

    phase("draining");
    let drain_deadline = tokio::time::Instant::now() + opts.drain;
    loop {
        let notified = shared.progress.notified();
        if shared.tracker.borrow().undelivered() == 0 {
            break;
        }
        if tokio::time::timeout_at(drain_deadline, notified)
            .await
            .is_err()
        {
            break;
        }
    }
    let end = Instant::now();
    let server_cpu1 = target
        .server_pid
        .and_then(|p| CpuSample::take(Proc::Pid(p)));
    let self_cpu1 = CpuSample::take(Proc::SelfProc);
    let conns = shared.conns.borrow().clone();
    clients.abort_all();
    let mut file_errors = Vec::new();
    if let Some(path) = &coord.posts_file {
        let record = PostsRecord {
            run_tag,
            posts: shared
                .tracker
                .borrow()
                .messages()
                .map(|m| PostRecord {
                    seq: m.seq,
                    ok: m.posted,
                    sent_unix_us: clock.unix_us(m.sent),
                    receipts: m.receipts,
                    last_receipt_unix_us: m.last_receipt.map(|t| clock.unix_us(t)),
                })
                .collect(),
        };
        if let Err(e) = write_json(path, &record) {
            file_errors.push(format!("{e:#}"));
        }
    }
    if let Some(path) = &coord.timeline_file {
        match MonoClock::now() {
            Some(mono) => {
                let text = timeline_text(&mono, shared.tracker.borrow().messages());
                if let Err(e) = std::fs::write(path, text) {
                    file_errors.push(format!("timeline {}: {e}", path.display()));
                }
            }
            None => file_errors.push("timeline: CLOCK_MONOTONIC cannot be read".into()),
        }
    }

    let s = shared.tracker.borrow().summary();
    // Everything that never became ready: failed handshakes or subscriptions, and clients
    // aborted at the connect timeout.
    result.failed_connections = n - conns.ready.min(n);
    result.disconnected = conns.disconnected;
    result.posted = s.posted;
    result.post_errors = s.post_errors;
    result.complete = s.complete;
    result.complete_eq_posted = s.complete == s.posted;
    result.receipts = s.receipts;
    result.expected_receipts = s.posted * s.expected_clients as u64;
    result.posts_per_sec = rate(s.posted, opts.duration.as_secs_f64());
    let span = match (s.first_sent, s.last_receipt) {
        (Some(a), Some(b)) if b > a => b.duration_since(a),
        _ => post_end.duration_since(post_start),
    }
    .as_secs_f64();
    result.span_secs = span;
    result.drain_secs = end.duration_since(post_end).as_secs_f64();
    result.deliveries_per_sec = rate(s.receipts, span);
    result.delivered_msgs_per_sec = rate(s.complete, span);
    result.post = s.post;
    result.post_to_first = s.to_first;
    result.post_to_all = s.to_all;
    result.post_to_each = s.to_each;
    result.duplicates = s.duplicates;
    result.out_of_order = s.out_of_order;
    result.order_divergent_clients = s.divergent_clients;
    result.unknown_tokens = s.unknown;
    result.frames = shared.frames.get() - frames0;
    result.other_frames = shared.other_frames.get() - other0;
    result.mean_frame_bytes = if s.receipts > 0 {
        s.matched_bytes as f64 / s.receipts as f64
    } else {
        0.0
    };
    let wire_bytes = (shared.bytes_received.get() - bytes0) as f64;
    result.wire_mb_per_sec = wire_bytes / 1e6 / end.duration_since(post_start).as_secs_f64();
    result.wire_bytes_per_receipt = if s.receipts > 0 {
        wire_bytes / s.receipts as f64
    } else {
        0.0
    };
    result.server = target
        .server_pid
        .and_then(|pid| server_stats(pid, server_cpu0, server_cpu1));
    let me = procfs::status(Proc::SelfProc).unwrap_or_default();
    result.loadgen.cpus_allowed = me.cpus_allowed;
    result.loadgen.cpu_percent = match (self_cpu0, self_cpu1) {
        (Some(a), Some(b)) => a.percent_until(&b),
        _ => 0.0,
    };
    result.loadgen.saturated = result.loadgen.cpu_percent > 90.0;
    if result.loadgen.saturated {
        result.notes.push(format!(
            "the load generator used {:.0} % of its core: this cell may measure the load \
             generator, not the server",
            result.loadgen.cpu_percent
        ));
    }
    if let Some(srv) = &result.server {
        if !me_and_server_disjoint(&result.loadgen.cpus_allowed, &srv.cpus_allowed) {
            result.notes.push(format!(
                "server (CPUs {}) and load generator (CPUs {}) may share cores",
                srv.cpus_allowed, result.loadgen.cpus_allowed
            ));
        }
    } else if target.server_pid.is_none() {
        result
            .notes
            .push("server process unknown: no server CPU/RSS figures".into());
    }
    if s.posted > 0 && !result.complete_eq_posted {
        result.notes.push(format!(
            "{} of {} posted messages did not reach every client within the drain ({:?})",
            s.posted - s.complete,
            s.posted,
            opts.drain
        ));
    }
    let mut errors = std::mem::take(&mut result.errors);
    errors.extend(conns.errors);
    errors.extend(ctx.errors.borrow().iter().cloned());
    errors.extend(file_errors);
    result.errors = errors;
    result.judge();
    result
}

/// Parses a `Cpus_allowed_list` such as `0-1,4` into CPU numbers.
pub fn parse_cpu_list(list: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(a) = part.parse() {
                    out.push(a);
                }
            }
        }
    }
    out
}

fn me_and_server_disjoint(a: &str, b: &str) -> bool {
    let a = parse_cpu_list(a);
    let b = parse_cpu_list(b);
    !a.is_empty() && !b.is_empty() && a.iter().all(|c| !b.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anycable_broadcast_carries_the_trigger_body_as_its_data() {
        let body = anycable_body("bench", &trigger_body("lgabx00000007", 2));
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["stream"], "bench");
        let data: serde_json::Value = serde_json::from_str(v["data"].as_str().unwrap()).unwrap();
        assert_eq!(data["id"], "lgabx00000007");
        assert_eq!(data["body"], "xx");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0"), vec![0]);
        assert_eq!(parse_cpu_list("0-2,5"), vec![0, 1, 2, 5]);
        assert!(me_and_server_disjoint("1", "0"));
        assert!(!me_and_server_disjoint("0-1", "0"));
        assert!(!me_and_server_disjoint("", "0"));
    }

    #[test]
    fn trigger_bodies_are_json_with_the_token() {
        let b = trigger_body("lgabx00000007", 5);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["id"], "lgabx00000007");
        assert_eq!(v["body"], "xxxxx");
    }
}
