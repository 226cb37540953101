//! A per-IP sliding-window rate limit for login attempts (Campfire's `SessionsController`:
//! `rate_limit to: 10, within: 3.minutes, only: :create`).

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
        RateLimiter {
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

#[cfg(test)]
mod tests {
    use super::*;

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
