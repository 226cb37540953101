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
use crate::procfs::{self, CpuSample, Proc};
use crate::tracker::TokenScheme;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Highest sequence number a listen-only process keeps (posts beyond it count as extra).
pub const LISTEN_MAX_SEQ: u32 = 1_000_000;

/// How long a listen-only process waits for the posts file after its start gate, beyond the
/// poster's `--duration` and `--drain`.
pub const POSTS_FILE_SLACK: Duration = Duration::from_secs(60);

/// How processes of one run find each other (see the module docs). The default is a lone
/// process: a random run tag, no files.
#[derive(Debug, Clone)]
pub struct Coordination {
    /// The run tag of every token (`--run-tag`); `None`: a random one.
    pub run_tag: Option<String>,
    /// Where to write the [`ReadyRecord`].
    pub ready_file: Option<PathBuf>,
    /// Wait for this file to exist before posting (or, listen-only, before waiting for posts).
    pub start_file: Option<PathBuf>,
    /// Longest wait for the start file.
    pub start_timeout: Duration,
    /// Where the poster writes (and listeners read) the [`PostsRecord`].
    pub posts_file: Option<PathBuf>,
}

impl Default for Coordination {
    fn default() -> Self {
        Self {
            run_tag: None,
            ready_file: None,
            start_file: None,
            start_timeout: Duration::from_secs(300),
            posts_file: None,
        }
    }
}

impl Coordination {
    /// The token scheme: the given run tag, or a random one.
    pub fn tokens(&self) -> TokenScheme {
        match &self.run_tag {
            Some(tag) => TokenScheme::new(tag),
            None => TokenScheme::random(),
        }
    }
}

/// Checks a `--run-tag`: 1 to 16 lowercase ASCII letters and digits.
///
/// Errors: anything else.
pub fn parse_run_tag(s: &str) -> Result<String, String> {
    if (1..=16).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?}: a run tag is 1 to 16 lowercase letters and digits"
        ))
    }
}

/// An [`Instant`] paired with the wall clock at the same moment, to express later instants
/// as Unix time.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    instant: Instant,
    unix_us: u64,
}

impl WallClock {
    /// Now.
    pub fn now() -> Self {
        Self {
            instant: Instant::now(),
            unix_us: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as u64),
        }
    }

    /// `at` in microseconds since the Unix epoch.
    pub fn unix_us(&self, at: Instant) -> u64 {
        match at.checked_duration_since(self.instant) {
            Some(d) => self.unix_us + d.as_micros() as u64,
            None => self
                .unix_us
                .saturating_sub(self.instant.duration_since(at).as_micros() as u64),
        }
    }
}

/// What a process writes to its ready file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadyRecord {
    /// Clients requested.
    pub n: usize,
    /// Clients ready.
    pub ready: usize,
    /// Clients that failed or were aborted at the connect timeout.
    pub failed: usize,
    /// First connect → last ready, s.
    pub connect_secs: f64,
    /// When the connect phase began, Unix µs.
    pub connect_start_unix_us: u64,
    /// When the last client became ready, Unix µs.
    pub last_ready_unix_us: Option<u64>,
}

/// One post in the posts file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostRecord {
    /// Sequence number (the token's digits).
    pub seq: u32,
    /// Whether the post was answered with a valid response (only these must reach everyone).
    pub ok: bool,
    /// When it was sent, Unix µs.
    pub sent_unix_us: u64,
    /// The poster's own clients that received it.
    pub receipts: u32,
    /// Its last receipt by the poster's own clients, Unix µs.
    pub last_receipt_unix_us: Option<u64>,
}

/// The posts file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostsRecord {
    /// The run tag of the tokens.
    pub run_tag: String,
    /// Every post, in sequence order.
    pub posts: Vec<PostRecord>,
}

impl PostsRecord {
    /// Sequence numbers of the answered posts.
    pub fn answered(&self) -> Vec<u32> {
        self.posts.iter().filter(|p| p.ok).map(|p| p.seq).collect()
    }
}

/// Writes `contents` to `path` through a temporary file in the same directory and a rename,
/// so a reader sees the whole file or none.
///
/// Errors: the file cannot be written or renamed.
pub fn write_atomically(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

/// Waits until `path` exists, checking every 50 ms; false when `timeout` passed first.
pub async fn wait_for_file(path: &Path, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if path.exists() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes `value` as one JSON line to `path` (atomically).
///
/// Errors: serialization or the write.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let line = serde_json::to_string(value)? + "\n";
    write_atomically(path, &line).with_context(|| format!("writing {}", path.display()))
}

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
    /// Data frames received by ready clients from the start gate to the end.
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
    let frames0 = shared.frames.get();

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_tags_are_short_lowercase_alphanumerics() {
        assert_eq!(parse_run_tag("hk20k7").unwrap(), "hk20k7");
        assert!(parse_run_tag("").is_err());
        assert!(parse_run_tag("Upper").is_err());
        assert!(parse_run_tag("a-b").is_err());
        assert!(parse_run_tag(&"a".repeat(17)).is_err());
        let c = Coordination {
            run_tag: Some("ab12".into()),
            ..Default::default()
        };
        assert_eq!(c.tokens().token(3), "lgab12x00000003");
    }

    #[test]
    fn the_wall_clock_maps_instants_both_ways() {
        let c = WallClock::now();
        let later = c.instant + Duration::from_millis(1500);
        assert_eq!(c.unix_us(later), c.unix_us + 1_500_000);
        if let Some(earlier) = c.instant.checked_sub(Duration::from_micros(250)) {
            assert_eq!(c.unix_us(earlier), c.unix_us - 250);
        }
    }

    #[test]
    fn files_are_replaced_whole_and_posts_round_trip() {
        let dir = std::env::temp_dir().join(format!("loadgen-multi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("posts.json");
        let rec = PostsRecord {
            run_tag: "ab12".into(),
            posts: vec![
                PostRecord {
                    seq: 0,
                    ok: true,
                    sent_unix_us: 10,
                    receipts: 3,
                    last_receipt_unix_us: Some(20),
                },
                PostRecord {
                    seq: 1,
                    ok: false,
                    sent_unix_us: 11,
                    receipts: 0,
                    last_receipt_unix_us: None,
                },
            ],
        };
        write_json(&path, &rec).unwrap();
        let back: PostsRecord =
            serde_json::from_str(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
        assert_eq!(back, rec);
        assert_eq!(back.answered(), vec![0]);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            vec![std::ffi::OsString::from("posts.json")],
            "no temporary left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn waiting_for_a_file_is_bounded() {
        let path = std::env::temp_dir().join(format!("loadgen-never-{}", std::process::id()));
        assert!(!wait_for_file(&path, Duration::from_millis(120)).await);
        let here = std::env::temp_dir();
        assert!(wait_for_file(&here, Duration::from_millis(10)).await);
    }
}
