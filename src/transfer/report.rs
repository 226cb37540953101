//! What a transfer command prints: rows per table ([`Counts`]) and a progress line with rate and
//! ETA ([`Progress`]).

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::time::{Duration, Instant};

/// Rows per table (and `files` / `bytes` for what the disk service holds), printed one per line
/// in the table's name order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(pub BTreeMap<String, u64>);

impl Counts {
    /// Adds `n` to `table`'s count.
    pub fn add(&mut self, table: &str, n: u64) {
        *self.0.entry(table.to_owned()).or_default() += n;
    }

    /// `table`'s count, 0 when it has none.
    pub fn get(&self, table: &str) -> u64 {
        self.0.get(table).copied().unwrap_or(0)
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.0.keys().map(String::len).max().unwrap_or(0);
        for (table, n) in &self.0 {
            writeln!(f, "  {table:<width$}  {n:>12}")?;
        }
        Ok(())
    }
}

/// A progress line on standard error: `label  done/total  rate/s  ETA`, redrawn at most every
/// 200 ms, and only when asked for (`Options::progress`).
#[derive(Debug)]
pub struct Progress {
    label: String,
    total: u64,
    done: u64,
    started: Instant,
    drawn: Option<Instant>,
    enabled: bool,
}

impl Progress {
    /// A progress of `total` units (rows or bytes) labelled `label`; silent when `enabled` is false.
    pub fn new(label: &str, total: u64, enabled: bool) -> Self {
        Self {
            label: label.to_owned(),
            total,
            done: 0,
            started: Instant::now(),
            drawn: None,
            enabled,
        }
    }

    /// Counts `n` more units done.
    pub fn inc(&mut self, n: u64) {
        self.done += n;
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self
            .drawn
            .is_some_and(|at| now.duration_since(at) < Duration::from_millis(200))
        {
            return;
        }
        self.drawn = Some(now);
        self.draw(now);
    }

    /// Ends the line with the final count and rate.
    pub fn finish(&mut self) {
        if self.enabled {
            self.draw(Instant::now());
            eprintln!();
        }
    }

    fn draw(&self, now: Instant) {
        let secs = now.duration_since(self.started).as_secs_f64().max(1e-3);
        let rate = self.done as f64 / secs;
        // A total counted before the work (a file that grew since) never shows as over 100 %.
        let total = self.total.max(self.done);
        let eta = if rate > 0.0 && total > self.done {
            format!("{:.0}s", (total - self.done) as f64 / rate)
        } else {
            "-".to_owned()
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r{}  {}/{}  {:.0}/s  ETA {eta}   ",
            self.label, self.done, total, rate
        );
        let _ = err.flush();
    }
}
