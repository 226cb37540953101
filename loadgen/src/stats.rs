//! Latency histograms and summary statistics.
//!
//! Latencies are recorded in microseconds into HdrHistograms with 3 significant digits (at most
//! 0.1 % quantization error), from 1 µs to 1 hour; larger values are clamped to the top.
//! A quantile is the smallest recorded value v such that the fraction q of samples is ≤ v
//! (HdrHistogram's `value_at_quantile`), reported in milliseconds.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Highest trackable latency: one hour, in microseconds.
pub const MAX_MICROS: u64 = 3_600_000_000;

/// A latency histogram in microseconds.
#[derive(Debug, Clone)]
pub struct Latency {
    hist: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// An empty histogram (1 µs .. 1 h, 3 significant digits).
    pub fn new() -> Self {
        Self {
            hist: Histogram::new_with_bounds(1, MAX_MICROS, 3)
                .expect("1 µs .. 1 h with 3 significant digits is a valid histogram"),
        }
    }

    /// Records one duration (clamped to 1 µs .. 1 h).
    #[inline]
    pub fn record(&mut self, d: Duration) {
        let us = (d.as_micros() as u64).clamp(1, MAX_MICROS);
        let _ = self.hist.record(us);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The summary in milliseconds; all zero when empty.
    pub fn summary(&self) -> LatencySummary {
        if self.hist.is_empty() {
            return LatencySummary::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            count: self.hist.len(),
            p50_ms: ms(self.hist.value_at_quantile(0.50)),
            p90_ms: ms(self.hist.value_at_quantile(0.90)),
            p99_ms: ms(self.hist.value_at_quantile(0.99)),
            max_ms: ms(self.hist.max()),
            mean_ms: self.hist.mean() / 1000.0,
        }
    }
}

/// Quantiles of one latency distribution, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest sample.
    pub max_ms: f64,
    /// Arithmetic mean.
    pub mean_ms: f64,
}

/// The median of `values` (mean of the two middle values for an even count); `None` if empty.
/// NaNs sort last.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Greater));
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// A rate: `count / secs`, or 0 when `secs` is not positive.
pub fn rate(count: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        count as f64 / secs
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut l = Latency::new();
        // 1..=1000 ms, one sample each.
        for ms in 1..=1000u64 {
            l.record(Duration::from_millis(ms));
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        let close = |a: f64, b: f64| (a - b).abs() <= b.mul_add(0.001, 0.001);
        assert!(close(s.p50_ms, 500.0), "p50 {}", s.p50_ms);
        assert!(close(s.p90_ms, 900.0), "p90 {}", s.p90_ms);
        assert!(close(s.p99_ms, 990.0), "p99 {}", s.p99_ms);
        assert!(close(s.max_ms, 1000.0), "max {}", s.max_ms);
        assert!(close(s.mean_ms, 500.5), "mean {}", s.mean_ms);
    }

    #[test]
    fn skewed_tail_shows_in_p99_not_p50() {
        let mut l = Latency::new();
        for _ in 0..98 {
            l.record(Duration::from_micros(200));
        }
        for _ in 0..2 {
            l.record(Duration::from_millis(50));
        }
        let s = l.summary();
        assert!((s.p50_ms - 0.2).abs() < 0.001);
        assert!((s.p99_ms - 50.0).abs() < 0.05);
    }

    #[test]
    fn empty_and_clamped() {
        assert_eq!(Latency::new().summary(), LatencySummary::default());
        let mut l = Latency::new();
        l.record(Duration::ZERO);
        l.record(Duration::from_secs(100_000));
        let s = l.summary();
        assert_eq!(s.count, 2);
        assert!((s.max_ms - MAX_MICROS as f64 / 1000.0).abs() / s.max_ms < 0.001);
    }

    #[test]
    fn median_and_rate() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(rate(10, 2.0), 5.0);
        assert_eq!(rate(10, 0.0), 0.0);
    }
}
