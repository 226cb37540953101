//! The files several loadgen processes of one run share (see [`crate::multi`] for the run):
//! the run tag, the ready, start and posts files and their records, written by renaming a
//! complete temporary file so a reader never sees half of one; and one process's own timeline
//! of its posts ([`timeline_text`]).

use crate::tracker::{MessageRecord, TokenScheme};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
    /// Where to write the posts' timeline ([`timeline_text`]) after the drain.
    pub timeline_file: Option<PathBuf>,
}

impl Default for Coordination {
    fn default() -> Self {
        Self {
            run_tag: None,
            ready_file: None,
            start_file: None,
            start_timeout: Duration::from_secs(300),
            posts_file: None,
            timeline_file: None,
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

/// An [`Instant`] paired with `CLOCK_MONOTONIC` at the same moment, to express instants in the
/// clock `perf record -k CLOCK_MONOTONIC` stamps its events with (nanoseconds since boot, less
/// time suspended), so a post's steps on the loadgen line up with the scheduler's events.
#[derive(Debug, Clone, Copy)]
pub struct MonoClock {
    instant: Instant,
    mono_ns: i128,
}

impl MonoClock {
    /// Now; `None` if `clock_gettime(CLOCK_MONOTONIC)` fails.
    pub fn now() -> Option<Self> {
        let instant = Instant::now();
        let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).ok()?;
        Some(Self {
            instant,
            mono_ns: i128::from(ts.tv_sec()) * 1_000_000_000 + i128::from(ts.tv_nsec()),
        })
    }

    /// `at` in nanoseconds of `CLOCK_MONOTONIC`.
    pub fn ns(&self, at: Instant) -> i128 {
        match at.checked_duration_since(self.instant) {
            Some(d) => self.mono_ns + d.as_nanos() as i128,
            None => self.mono_ns - self.instant.duration_since(at).as_nanos() as i128,
        }
    }
}

/// The posts' timeline, `--timeline`: a `#` header line, then one line per post in sequence
/// order, `seq sent wrote first_byte answered first_receipt last_receipt`, each time in
/// nanoseconds of `CLOCK_MONOTONIC` ([`MonoClock`]), `-` for a step that did not happen and
/// for the wire steps and the answer of a post that failed (refused or not answered). `sent` is
/// the poster's start (where the latency columns start), `wrote` the last write of the
/// request to the socket, `first_byte` the first read of its answer, `answered` the answer
/// read and checked (where `post` ends), `first_receipt` / `last_receipt` the first and the
/// latest client to read the message (`→first`, `→all` when every client has it).
pub fn timeline_text(clock: &MonoClock, posts: impl Iterator<Item = MessageRecord>) -> String {
    use std::fmt::Write;
    let mut out = String::from(
        "# seq sent wrote first_byte answered first_receipt last_receipt (CLOCK_MONOTONIC ns)\n",
    );
    let t = |at: Option<Instant>| at.map_or_else(|| "-".to_owned(), |at| clock.ns(at).to_string());
    for m in posts {
        let _ = writeln!(
            out,
            "{} {} {} {} {} {} {}",
            m.seq,
            clock.ns(m.sent),
            t(m.wrote),
            t(m.first_byte),
            t(m.answered),
            t(m.first_receipt),
            t(m.last_receipt)
        );
    }
    out
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
    fn the_monotonic_clock_maps_instants_both_ways_and_is_the_kernels() {
        let c = MonoClock::now().unwrap();
        let later = c.instant + Duration::from_micros(1500);
        assert_eq!(c.ns(later), c.mono_ns + 1_500_000);
        if let Some(earlier) = c.instant.checked_sub(Duration::from_nanos(250)) {
            assert_eq!(c.ns(earlier), c.mono_ns - 250);
        }
        // `Instant` and CLOCK_MONOTONIC run together: 20 ms later, an instant read between two
        // reads of the kernel's clock maps between them (1 ms of slack for the pairing).
        std::thread::sleep(Duration::from_millis(20));
        let mono = || {
            let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
            i128::from(t.tv_sec()) * 1_000_000_000 + i128::from(t.tv_nsec())
        };
        let (before, at, after) = (mono(), Instant::now(), mono());
        assert!(before - c.mono_ns >= 20_000_000);
        let mapped = c.ns(at);
        assert!(
            before - 1_000_000 <= mapped && mapped <= after + 1_000_000,
            "{before} ≤ {mapped} ≤ {after}"
        );
    }

    #[test]
    fn a_timeline_line_holds_each_step_of_a_post_and_dashes_for_what_did_not_happen() {
        use crate::tracker::{Tracker, Wire};
        let c = MonoClock::now().unwrap();
        let t0 = c.instant;
        let at = |us: u64| t0 + Duration::from_micros(us);
        let mut tracker = Tracker::new(2, 2, 1);
        let posted = tracker.register(0, at(0));
        let failed = tracker.register(0, at(10));
        tracker.post_result_on_wire(
            posted,
            Ok(Duration::from_micros(900)),
            Wire {
                wrote: Some(at(120)),
                first_byte: Some(at(860)),
            },
        );
        tracker.post_result(failed, Err(()));
        tracker.receipt(1, posted, at(950), 10);
        tracker.receipt(0, posted, at(1400), 10);
        let text = timeline_text(&c, tracker.messages());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("# seq sent wrote first_byte answered"));
        let ns = |us: i128| (c.mono_ns + us * 1000).to_string();
        assert_eq!(
            lines[1],
            format!(
                "0 {} {} {} {} {} {}",
                ns(0),
                ns(120),
                ns(860),
                ns(900),
                ns(950),
                ns(1400)
            )
        );
        assert_eq!(lines[2], format!("1 {} - - - - -", ns(10)));
        assert_eq!(lines.len(), 3);
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
