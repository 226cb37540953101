//! Several loadgen processes, one run: one process posts, the others only listen, and every
//! post is checked on every client of every process.
//!
//! A process holds at most as many connections as its descriptor limit allows, so a run of
//! more clients than that takes several processes. They share one run tag (`--run-tag`), so
//! every process's clients recognise the same tokens, and three files, written by renaming a
//! complete temporary file so a reader never sees half of one:
//!
//! - **ready file** (`--ready-file`, one per process): written once the process's clients are
//!   ready or failed ([`ReadyRecord`]: how many, when the connect phase began and ended, in
//!   Unix microseconds, so connect times of several processes can be combined);
//! - **start file** (`--start-file`): the process waits for it to exist before its posting
//!   phase, so the driver can start the posts only when every process is ready;
//! - **posts file** (`--posts-file`): written by the posting process after its drain
//!   ([`PostsRecord`]: every post's sequence number, whether it was answered, when it was
//!   sent, and its last receipt by the poster's own clients).
//!
//! A listen-only process (`--listen-only`, [`run_listen`]) posts nothing: it waits for the posts
//! file, then until each of its clients holds each answered post, or `--drain` passes, and
//! counts per client and per post what it holds once, is missing or holds more than once
//! ([`ListenResult`]). The first and last receipt of each post, in Unix microseconds, let the
//! driver compute post → all over every process (the clock is the machine's one wall clock).

use crate::cable::{ClientSet, Shared};
use crate::cell::{CellOptions, CellTarget};
use crate::coordination::{
    wait_for_file, write_json, Coordination, PostsRecord, ReadyRecord, WallClock,
};
use crate::procfs::{self, CpuSample, Proc};
use crate::tracker::TokenScheme;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Highest sequence number a listen-only process keeps (posts beyond it count as extra).
pub const LISTEN_MAX_SEQ: u32 = 1_000_000;

/// How long a listen-only process waits for the posts file after its start gate, beyond the
/// poster's `--duration` and `--drain`.
pub const POSTS_FILE_SLACK: Duration = Duration::from_secs(60);

/// The result of a listen-only process, one JSON line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListenResult {
    /// Name in the results (`--name`).
    pub target: String,
    /// Always `listen`.
    pub mode: String,
    /// Clients requested.
    pub n: usize,
    /// Clients ready.
    pub ready: usize,
    /// Clients that never became ready.
    pub failed: usize,
    /// Clients that were ready and then lost their connection.
    pub disconnected: usize,
    /// Subscriptions per client.
    pub subscriptions_per_client: usize,
    /// First connect → last ready, s.
    pub connect_secs: f64,
    /// When the connect phase began, Unix µs.
    pub connect_start_unix_us: u64,
    /// When the last client became ready, Unix µs.
    pub last_ready_unix_us: Option<u64>,
    /// The run tag.
    pub run_tag: String,
    /// Answered posts of the posts file (each must reach every client).
    pub posts: u64,
    /// Posts the poster made that were not answered (not required; receipts count as extra).
    pub failed_posts: u64,
    /// posts × n: every client slot, connected or not.
    pub expected: u64,
    /// Client × post pairs held.
    pub delivered: u64,
    /// expected − delivered.
    pub missing: u64,
    /// Receipts of a post by a client that already had it.
    pub duplicated: u64,
    /// Clients holding every post exactly once.
    pub clients_complete: u64,
    /// Receipts of run tokens that are not answered posts.
    pub extra: u64,
    /// Sequence numbers of the posts, in file order.
    pub seqs: Vec<u32>,
    /// Per post (same order): when it was sent, Unix µs (from the posts file).
    pub sent_unix_us: Vec<u64>,
    /// Per post: its first receipt by a client of this process, Unix µs.
    pub first_receipt_unix_us: Vec<Option<u64>>,
    /// Per post: its last receipt by a client of this process, Unix µs.
    pub last_receipt_unix_us: Vec<Option<u64>>,
    /// Data frames received by ready clients from the ready record to the end: a post can reach
    /// them before this process sees the start file, and its receipts count either way.
    pub frames: u64,
    /// This process's CPU % of one core from the start gate to the end.
    pub loadgen_cpu_percent: f64,
    /// This process's RSS at the end, MiB.
    pub loadgen_rss_mb: f64,
    /// missing == 0 and duplicated == 0 and every client ready.
    pub ok: bool,
    /// First distinct errors.
    pub errors: Vec<String>,
}

/// Runs a listen-only process: connects `opts.n` clients of `target`, writes the ready file,
/// waits for the start file, then for the posts file (at most `duration + drain +`
/// [`POSTS_FILE_SLACK`]), then until every client holds every answered post or `drain`
/// passes, and counts.
///
/// Errors: no run tag or posts file in `coord`, a ready file that cannot be written, or a
/// posts file that cannot be read or carries another run tag. A start or posts file that never
/// appears is a result with `ok == false`, not an error.
pub async fn run_listen(
    target: &CellTarget,
    opts: &CellOptions,
    coord: &Coordination,
    phase: &dyn Fn(&str),
) -> Result<ListenResult> {
    let Some(tag) = coord.run_tag.clone() else {
        bail!("--listen-only needs --run-tag (the poster's)");
    };
    let Some(posts_file) = coord.posts_file.clone() else {
        bail!("--listen-only needs --posts-file (the poster writes it)");
    };
    let n = opts.n;
    let tokens = TokenScheme::new(&tag);
    let shared = Rc::new(Shared::listening(n, &tokens, LISTEN_MAX_SEQ));
    let mut result = ListenResult {
        target: target.name.clone(),
        mode: "listen".into(),
        n,
        run_tag: tag.clone(),
        subscriptions_per_client: target
            .profiles
            .iter()
            .map(|p| p.identifiers.len())
            .max()
            .unwrap_or(0),
        ..Default::default()
    };

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
    result.failed = n - conns.ready.min(n);
    result.connect_secs = conns
        .last_ready
        .map(|t| t.duration_since(connect_start).as_secs_f64())
        .unwrap_or(0.0);
    result.connect_start_unix_us = clock.unix_us(connect_start);
    result.last_ready_unix_us = conns.last_ready.map(|t| clock.unix_us(t));
    if let Some(path) = &coord.ready_file {
        write_json(path, &ready_record(&result))?;
    }
    let frames0 = shared.frames.get();
    let mut errors = Vec::new();
    if let Some(start) = &coord.start_file {
        phase("waiting for the start file");
        if !wait_for_file(start, coord.start_timeout).await {
            errors.push(format!(
                "{} did not appear within {:?}",
                start.display(),
                coord.start_timeout
            ));
        }
    }
    let cpu0 = CpuSample::take(Proc::SelfProc);

    phase("listening");
    let posts_wait = opts.duration + opts.drain + opts.settle + POSTS_FILE_SLACK;
    let record = if errors.is_empty() && wait_for_file(&posts_file, posts_wait).await {
        let text = std::fs::read_to_string(&posts_file)
            .with_context(|| format!("reading {}", posts_file.display()))?;
        let record: PostsRecord = serde_json::from_str(text.trim())
            .with_context(|| format!("parsing {}", posts_file.display()))?;
        if record.run_tag != tag {
            bail!(
                "{} is for run {:?}, not {tag:?}",
                posts_file.display(),
                record.run_tag
            );
        }
        Some(record)
    } else {
        if errors.is_empty() {
            errors.push(format!(
                "{} did not appear within {posts_wait:?}",
                posts_file.display()
            ));
        }
        None
    };
    let answered = record
        .as_ref()
        .map(PostsRecord::answered)
        .unwrap_or_default();
    if record.is_some() {
        phase("draining");
        let listen = shared.listen.as_ref().expect("a listening Shared");
        let deadline = Instant::now() + opts.drain;
        while listen.borrow().missing(&answered) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let cpu1 = CpuSample::take(Proc::SelfProc);
    let conns = shared.conns.borrow().clone();
    clients.abort_all();

    let check = shared
        .listen
        .as_ref()
        .expect("a listening Shared")
        .borrow()
        .check(&answered);
    result.disconnected = conns.disconnected;
    result.posts = check.posts;
    result.failed_posts = record
        .as_ref()
        .map_or(0, |r| r.posts.iter().filter(|p| !p.ok).count() as u64);
    result.expected = check.expected;
    result.delivered = check.delivered;
    result.missing = check.missing;
    result.duplicated = check.duplicated;
    result.clients_complete = check.clients_complete;
    result.extra = check.extra;
    result.seqs = answered.clone();
    if let Some(r) = &record {
        result.sent_unix_us = r
            .posts
            .iter()
            .filter(|p| p.ok)
            .map(|p| p.sent_unix_us)
            .collect();
    }
    result.first_receipt_unix_us = check
        .times
        .iter()
        .map(|(f, _)| f.map(|t| clock.unix_us(t)))
        .collect();
    result.last_receipt_unix_us = check
        .times
        .iter()
        .map(|(_, l)| l.map(|t| clock.unix_us(t)))
        .collect();
    result.frames = shared.frames.get() - frames0;
    result.loadgen_cpu_percent = match (cpu0, cpu1) {
        (Some(a), Some(b)) => a.percent_until(&b),
        _ => 0.0,
    };
    result.loadgen_rss_mb =
        procfs::status(Proc::SelfProc).map_or(0.0, |s| s.rss_kb as f64 / 1024.0);
    errors.extend(conns.errors);
    result.errors = errors;
    result.ok = record.is_some()
        && result.errors.is_empty()
        && result.ready == n
        && result.missing == 0
        && result.duplicated == 0;
    Ok(result)
}

/// The ready record of a listen result's connect phase.
fn ready_record(r: &ListenResult) -> ReadyRecord {
    ReadyRecord {
        n: r.n,
        ready: r.ready,
        failed: r.failed,
        connect_secs: r.connect_secs,
        connect_start_unix_us: r.connect_start_unix_us,
        last_ready_unix_us: r.last_ready_unix_us,
    }
}

/// A human summary of a [`ListenResult`].
pub fn describe(r: &ListenResult) -> String {
    format!(
        "listen: {}/{} clients ready in {:.2} s; {} posts × {} clients = {} expected, {} held, \
         {} missing, {} duplicated, {} clients complete, {} extra{}",
        r.ready,
        r.n,
        r.connect_secs,
        r.posts,
        r.n,
        r.expected,
        r.delivered,
        r.missing,
        r.duplicated,
        r.clients_complete,
        r.extra,
        if r.ok { "" } else { " (FAILED)" }
    )
}
