//! The files several loadgen processes of one run share (see [`crate::multi`] for the run):
//! the run tag, the ready, start and posts files and their records, written by renaming a
//! complete temporary file so a reader never sees half of one.

use crate::tracker::TokenScheme;
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
