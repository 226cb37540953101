//! A per-IP sliding-window rate limit for login attempts (Campfire's `SessionsController`:
//! `rate_limit to: 10, within: 3.minutes, only: :create`), and [`TokenBucket`], the limit of
//! a cable connection's client actions (typing, presence) and of presence writes.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The window of the login limit (Campfire: 3 minutes).
pub const WINDOW: Duration = Duration::from_secs(180);

/// Counts attempts per IP address within [`WINDOW`].
#[derive(Debug)]
pub struct RateLimiter {
    limit: u32,
    window: Duration,
    attempts: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

impl RateLimiter {
    /// A limiter allowing `limit` attempts per `window`; `limit == 0` disables it.
    pub fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit,
            window,
            attempts: Mutex::new(HashMap::new()),
        }
    }

    /// Records an attempt from `ip` at `now`; false when the attempt is over the limit (and
    /// then it is not counted).
    pub fn allow(&self, ip: IpAddr, now: Instant) -> bool {
        if self.limit == 0 {
            return true;
        }
        let mut attempts = self.attempts.lock();
        if attempts.len() > 10_000 {
            let window = self.window;
            attempts.retain(|_, q| q.back().is_some_and(|t| now.duration_since(*t) < window));
        }
        let q = attempts.entry(ip).or_default();
        while q
            .front()
            .is_some_and(|t| now.duration_since(*t) >= self.window)
        {
            q.pop_front();
        }
        if q.len() >= self.limit as usize {
            return false;
        }
        q.push_back(now);
        true
    }
}

/// A token bucket: up to `burst` events at once, then `per_second` on average. Not shared:
/// its owner (one connection, one membership) keeps it.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    burst: f64,
    per_second: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket of `burst` tokens refilled at `per_second` tokens a second.
    pub fn new(burst: u32, per_second: f64, now: Instant) -> Self {
        Self {
            burst: f64::from(burst),
            per_second,
            tokens: f64::from(burst),
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = elapsed
            .mul_add(self.per_second, self.tokens)
            .min(self.burst);
        self.last = now;
    }

    /// Takes a token at `now`; false (and nothing taken) when the bucket is empty.
    pub fn try_take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// How long from `now` until the bucket is full again (zero when it is): until then, a new
    /// bucket in its place would allow more than this one.
    pub fn until_full(&mut self, now: Instant) -> Duration {
        self.refill(now);
        if self.tokens >= self.burst || self.per_second <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((self.burst - self.tokens) / self.per_second)
        }
    }

    /// How long from `now` until a token is there (zero when one is).
    pub fn wait(&mut self, now: Instant) -> Duration {
        self.refill(now);
        if self.tokens >= 1.0 || self.per_second <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((1.0 - self.tokens) / self.per_second)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(3, 2.0, t0);
        assert!((0..3).all(|_| b.try_take(t0)));
        assert!(!b.try_take(t0));
        assert_eq!(b.wait(t0), Duration::from_millis(500));
        assert!(b.try_take(t0 + Duration::from_millis(500)));
        assert!(!b.try_take(t0 + Duration::from_millis(600)));
        assert!((0..3).all(|_| b.try_take(t0 + Duration::from_secs(60))));
    }

    #[test]
    fn eleventh_attempt_in_the_window_is_refused_and_the_window_slides() {
        let limiter = RateLimiter::new(10, WINDOW);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..10 {
            assert!(limiter.allow(ip, t0));
        }
        assert!(!limiter.allow(ip, t0 + Duration::from_secs(1)));
        assert!(limiter.allow(other, t0));
        assert!(limiter.allow(ip, t0 + WINDOW));
    }

    #[test]
    fn zero_disables() {
        let limiter = RateLimiter::new(0, WINDOW);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert!((0..100).all(|_| limiter.allow(ip, Instant::now())));
    }
}
