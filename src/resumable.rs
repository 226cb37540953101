//! Resumable cable sessions (AnyCable's `--sessions_ttl`): what an `actioncable-v1-ext-json`
//! connection was (its user, its session token, its subscriptions) kept for a while after its
//! socket closed, under the `sid` its welcome gave, so that a client reconnecting with
//! `?sid=<that sid>` gets it back without being identified again and without subscribing
//! again.
//!
//! A stored session is taken once (a restore gives a new `sid`), only by a request whose own
//! session cookie holds the same session token (a `sid` alone restores nothing), and only
//! within its time to live. A restore is an identification all the same: the cable layer
//! looks the session up again, uncached, and re-checks every room subscription before giving
//! anything back (`crate::cable::verify_restore`), so a restore never brings back what a fresh
//! connection and subscribe would be refused. Every node forgets the stored sessions of a
//! user whose sessions ended (sign-out, deactivation, a ban, a password change:
//! [`SessionStore::forget_user`], on the bus' `SessionsEnded`, which every node hears, holding
//! a socket of the user or not) or who lost a room ([`SessionStore::forget_users`]).
//!
//! The subscriptions are kept as the cable layer serialized them (identifier, JSON of what the
//! channel resolved): this module does not know channels.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sha2::Digest as _;

use crate::db::users::User;

/// Most sessions kept at once; past it the oldest-expiring half is dropped.
pub const MAX_STORED: usize = 100_000;

/// What a closed connection was.
#[derive(Clone, Debug)]
pub struct StoredSession {
    /// The connection's user.
    pub user: User,
    /// The session token it was opened with.
    pub session_token: Option<String>,
    /// Its subscriptions: (identifier as the client sent it, the cable layer's JSON of it).
    pub subscriptions: Vec<(String, String)>,
}

#[derive(Debug)]
struct Kept {
    session: StoredSession,
    expires: Instant,
}

/// The sessions that may be restored (see the module docs).
#[derive(Debug)]
pub struct SessionStore {
    ttl: Duration,
    kept: Mutex<HashMap<String, Kept>>,
}

/// A fresh session id: 128 random bits as 32 lowercase hex digits.
pub fn new_sid() -> String {
    format!("{:032x}", rand::random::<u128>())
}

fn digest(token: &str) -> String {
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

impl SessionStore {
    /// A store keeping sessions for `ttl` (zero: restores are off and nothing is kept).
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            kept: Mutex::default(),
        }
    }

    /// Whether restores are on.
    pub fn enabled(&self) -> bool {
        !self.ttl.is_zero()
    }

    /// Keeps `session` under `sid` for the time to live.
    pub fn keep(&self, sid: &str, session: StoredSession) {
        if !self.enabled() {
            return;
        }
        let now = Instant::now();
        let mut kept = self.kept.lock();
        if kept.len() >= MAX_STORED {
            kept.retain(|_, k| k.expires > now);
            if kept.len() >= MAX_STORED {
                let mut expiries: Vec<Instant> = kept.values().map(|k| k.expires).collect();
                expiries.sort_unstable();
                let cut = expiries[expiries.len() / 2];
                kept.retain(|_, k| k.expires > cut);
            }
        }
        kept.insert(
            sid.to_owned(),
            Kept {
                session,
                expires: now + self.ttl,
            },
        );
    }

    /// Whether [`SessionStore::take`] would give a session for `sid` and `session_token` now
    /// (stored, unexpired, opened with that token), without taking it: a restore is identified
    /// before the upgrade's own checks (its Origin, the connection limits) and taken only once
    /// they passed, so a restore turned away there leaves the session for the client's retry.
    pub fn holds(&self, sid: &str, session_token: Option<&str>) -> bool {
        let Some(token) = session_token else {
            return false;
        };
        self.kept.lock().get(sid).is_some_and(|k| {
            k.expires > Instant::now()
                && k.session.session_token.as_deref().map(digest) == Some(digest(token))
        })
    }

    /// Takes the session stored under `sid` when it has not expired and was opened with
    /// `session_token` (the request's own, verified, session cookie); None otherwise. A
    /// session is taken at most once, whether or not the token matched.
    pub fn take(&self, sid: &str, session_token: Option<&str>) -> Option<StoredSession> {
        let kept = self.kept.lock().remove(sid)?;
        if kept.expires <= Instant::now() {
            return None;
        }
        let stored = kept.session.session_token.as_deref().map(digest);
        match (stored, session_token.map(digest)) {
            (Some(a), Some(b)) if a == b => Some(kept.session),
            _ => None,
        }
    }

    /// Forgets every stored session of `user_id` (all of them, or those opened with the
    /// session whose token has SHA-256 `session_sha256`, lowercase hex).
    pub fn forget_user(&self, user_id: i64, session_sha256: Option<&str>) {
        self.kept.lock().retain(|_, k| {
            if k.session.user.id != user_id {
                return true;
            }
            match (session_sha256, k.session.session_token.as_deref()) {
                (Some(wanted), Some(token)) => digest(token) != wanted,
                _ => false,
            }
        });
    }

    /// Forgets every stored session of `user_ids`.
    pub fn forget_users(&self, user_ids: &[i64]) {
        self.kept
            .lock()
            .retain(|_, k| !user_ids.contains(&k.session.user.id));
    }

    /// How many sessions are kept (expired ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.kept.lock().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
