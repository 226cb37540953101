//! A per-IP sliding-window rate limit for login attempts (Campfire's `SessionsController`:
//! `rate_limit to: 10, within: 3.minutes, only: :create`), [`TokenBucket`], the limit of
//! a cable connection's client actions (typing, presence) and of presence writes, and
//! [`RequestLimits`], the per-user limits of posting, editing, room creation, searches, boosts,
//! push subscriptions, test notifications and sign-ups.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// A wait as a `Retry-After` value (RFC 9110 §10.2.3, delay-seconds): whole seconds, rounded
/// up, at least 1 (a client told 0 would retry at once and be refused again).
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_secs_f64().ceil().max(1.0) as u64
}

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
        self.attempt(ip, now).is_ok()
    }

    /// Records an attempt from `ip` at `now`, as [`Self::allow`]; when it is over the limit,
    /// `Err` with how long until the oldest counted attempt leaves the window (at most the
    /// window: what a `Retry-After` should say).
    pub fn attempt(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        if self.limit == 0 {
            return Ok(());
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
            let oldest = q.front().copied().unwrap_or(now);
            return Err(self.window.saturating_sub(now.duration_since(oldest)));
        }
        q.push_back(now);
        Ok(())
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

/// What a request limit counts: one bucket per action and client ([`RequestLimits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Posting a message (`POST /rooms/{id}/messages`, a bot's `POST …/{bot_key}/messages`).
    Post,
    /// Creating a room: open, closed or direct (`POST /rooms/opens|closeds|directs`).
    CreateRoom,
    /// Running a search (`POST /searches`, `GET /searches?q=…`).
    Search,
    /// Boosting a message (`POST /messages/{id}/boosts`, a bot's boost).
    Boost,
    /// Signing up through the join link (`POST /join/{code}`), counted per address.
    Join,
    /// Editing a message (`PATCH`/`PUT /rooms/{id}/messages/{id}`, a bot's
    /// `PATCH`/`PUT /rooms/{id}/{bot_key}/messages/{id}`): each edit broadcasts a `replace`.
    Edit,
    /// Creating (or refreshing) a web push subscription (`POST /users/me/push_subscriptions`).
    PushSubscription,
    /// Sending a test notification
    /// (`POST /users/me/push_subscriptions/{id}/test_notifications`): each one is a request
    /// to a push service.
    TestNotification,
    /// Asking for a link preview (`POST /unfurl_link`): each one makes the server fetch a page
    /// and its image, and keep the image.
    LinkPreview,
    /// A typing notice (`TypingNotificationsChannel`'s `start`/`stop`), counted per user over
    /// all of the user's cable connections on this node.
    Typing,
    /// A presence action (`PresenceChannel`'s `present`/`absent`/`refresh`), counted per user
    /// over all of the user's cable connections on this node.
    Presence,
}

/// Who a request limit counts: the signed-in user, or else the client's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    /// A signed-in user, by id.
    User(i64),
    /// Anyone else (a bot by its key, a visitor), by address.
    Ip(IpAddr),
}

/// The limits handle: the sign-in limit and the per-client request limits, cloned into the
/// handlers they guard.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The login rate limit, per client address: sign-ins, password challenges (an e-mail or
    /// password change), sign-in codes and reset links together.
    pub login: Arc<RateLimiter>,
    /// Per-user limits of posting, editing, room creation, searches, boosts, push
    /// subscriptions, test notifications and sign-ups.
    pub requests: Arc<RequestLimits>,
}

/// Per-client limits of the actions a flood would repeat ([`Action`]): a token bucket of
/// `count` per `window` (bursts of up to `count`) for each action and client. Defaults no
/// person reaches (`--post-rate-limit` and the flags beside it); past one, 429 with
/// `Retry-After`, and nothing is done.
#[derive(Debug)]
pub struct RequestLimits {
    limits: HashMap<Action, (u32, Duration)>,
    buckets: Mutex<HashMap<(Action, Client), TokenBucket>>,
}

/// Buckets kept before full ones (clients gone quiet) are dropped.
const MAX_BUCKETS: usize = 50_000;

impl RequestLimits {
    /// Limits of `count` actions per `window` for each action listed; a count of 0, or an
    /// action not listed, has no limit.
    pub fn new(limits: impl IntoIterator<Item = (Action, u32, Duration)>) -> Self {
        Self {
            limits: limits
                .into_iter()
                .filter(|(_, count, _)| *count > 0)
                .map(|(a, count, window)| (a, (count, window)))
                .collect(),
            buckets: Mutex::default(),
        }
    }

    /// Counts one `action` of `client` at `now`: `Ok`, or `Err(retry after)` when it is over
    /// the limit (and then it is not counted).
    pub fn check(&self, action: Action, client: Client, now: Instant) -> Result<(), Duration> {
        let Some(&(count, window)) = self.limits.get(&action) else {
            return Ok(());
        };
        let mut buckets = self.buckets.lock();
        if buckets.len() >= MAX_BUCKETS {
            buckets.retain(|_, b| !b.until_full(now).is_zero());
        }
        let per_second = f64::from(count) / window.as_secs_f64().max(1.0);
        let bucket = buckets
            .entry((action, client))
            .or_insert_with(|| TokenBucket::new(count, per_second, now));
        if bucket.try_take(now) {
            Ok(())
        } else {
            Err(bucket.wait(now))
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
    fn retry_after_is_whole_seconds_rounded_up_and_never_zero() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1200)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
    }

    #[test]
    fn a_refused_attempt_says_when_the_oldest_leaves_the_window() {
        let limiter = RateLimiter::new(2, WINDOW);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let t0 = Instant::now();
        assert_eq!(limiter.attempt(ip, t0), Ok(()));
        assert_eq!(limiter.attempt(ip, t0 + Duration::from_secs(30)), Ok(()));
        assert_eq!(
            limiter.attempt(ip, t0 + Duration::from_secs(50)),
            Err(WINDOW - Duration::from_secs(50))
        );
        // The refused attempt was not counted: the first slot frees at t0 + WINDOW.
        assert_eq!(limiter.attempt(ip, t0 + WINDOW), Ok(()));
        assert_eq!(
            limiter.attempt(ip, t0 + WINDOW),
            Err(Duration::from_secs(30))
        );
    }

    #[test]
    fn request_limits_count_per_action_and_client_and_say_when_to_retry() {
        let limits = RequestLimits::new([
            (Action::Post, 2, Duration::from_secs(60)),
            (Action::Search, 0, Duration::from_secs(60)),
        ]);
        let (a, b) = (Client::User(1), Client::User(2));
        let t0 = Instant::now();
        assert!(limits.check(Action::Post, a, t0).is_ok());
        assert!(limits.check(Action::Post, a, t0).is_ok());
        assert_eq!(
            limits.check(Action::Post, a, t0),
            Err(Duration::from_secs(30))
        );
        assert!(limits.check(Action::Post, b, t0).is_ok());
        assert!(limits.check(Action::Boost, a, t0).is_ok(), "not limited");
        assert!((0..100).all(|_| limits.check(Action::Search, a, t0).is_ok()));
        assert!(limits
            .check(Action::Post, a, t0 + Duration::from_secs(30))
            .is_ok());
    }

    #[test]
    fn zero_disables() {
        let limiter = RateLimiter::new(0, WINDOW);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert!((0..100).all(|_| limiter.allow(ip, Instant::now())));
    }
}
