//! The open, identified cable connections by user and session, for server-side disconnects:
//! sign-out and deactivation (Rails' `remote_connections.where(current_user:).disconnect`) and
//! the `server_restart` sent to everyone on SIGTERM.
//!
//! The registry knows connections and ids only; the caller gives the frames that end a
//! connection (the Action Cable `disconnect` notice and a close frame, see
//! [`crate::cable::protocol::disconnect_frames`]).
//!
//! It is also how revocations reach open sockets: each connection registers with a
//! [`Signal`] that its task selects on beside its reader. Every node applies the
//! bus' `AccessRevoked` command here ([`Registry::signal_access_revoked`]): it signals the
//! connections of the users concerned only, and each of those tasks re-checks its room
//! subscriptions and drops the ones no longer allowed. [`Registry::rechecks`] counts the
//! signals, so a test can hold that a grant costs none.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::db::memberships::MembershipObserver;

use crate::fanout::frame::Frame;
use crate::fanout::Connection;

#[derive(Debug)]
struct Entry {
    /// The Campfire user; None for a connection only an app identified (`--rpc-url`).
    user_id: Option<i64>,
    session_token: Option<String>,
    /// The app's identifiers of the connection (`--rpc-url`), matched by AnyCable's remote
    /// disconnect.
    identifiers: Option<Arc<str>>,
    connection: Connection,
    revoked: Signal,
}

/// A connection task's "access revoked" signal. Signals sent while the task is busy are
/// kept (at most one is pending), so none is lost.
#[derive(Clone, Debug, Default)]
pub struct Signal(Arc<Notify>);

impl Signal {
    /// Waits for the next signal (cancel-safe: a signal is not consumed by a dropped wait).
    pub async fn access_revoked(&self) {
        self.0.notified().await;
    }

    fn signal(&self) {
        self.0.notify_one();
    }
}

/// SHA-256 of a session token as lowercase hex: how a sign-out names a session to other
/// nodes without putting the token itself on the pub/sub link.
pub fn session_digest(token: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

/// The sockets handle: the open connections, the sessions they may resume, their presence and
/// the permits of open sockets, cloned into the cable face and the handlers that close or
/// count connections.
#[derive(Clone, Debug)]
pub struct Sockets {
    /// Open cable connections by user and session.
    pub registry: Arc<Registry>,
    /// The `actioncable-v1-ext-json` sessions that may be restored (`--sessions-ttl`).
    pub sessions: Arc<crate::resumable::SessionStore>,
    /// Presence per connection, written to memberships on transitions only.
    pub presence: crate::presence::Presence,
    /// One permit per open (upgraded) cable socket, identified or not: `max` in all.
    pub permits: Arc<tokio::sync::Semaphore>,
    /// The number of permits (`--max-connections`, at most the semaphore's maximum).
    pub max: usize,
}

impl Sockets {
    /// Open (upgraded) cable sockets right now, identified or not.
    pub fn open(&self) -> usize {
        self.max.saturating_sub(self.permits.available_permits())
    }
}

/// Open connections keyed by connection id.
#[derive(Debug, Default)]
pub struct Registry {
    entries: Mutex<HashMap<u64, Entry>>,
    per_user: Arc<Mutex<HashMap<i64, usize>>>,
    rechecks: AtomicU64,
}

/// One of a user's places under the per-user connection cap, held from the upgrade to the
/// connection's end; dropping it frees the place.
#[derive(Debug)]
pub struct UserSlot {
    user_id: i64,
    counts: Arc<Mutex<HashMap<i64, usize>>>,
}

impl Drop for UserSlot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock();
        if let Some(n) = counts.get_mut(&self.user_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.user_id);
            }
        }
    }
}

impl Registry {
    /// Takes one of `user_id`'s `cap` connection places (`--max-connections-per-user`; 0: no
    /// cap); None when the user holds them all already.
    pub fn reserve_user_slot(&self, user_id: i64, cap: usize) -> Option<UserSlot> {
        let mut counts = self.per_user.lock();
        let n = counts.entry(user_id).or_insert(0);
        if cap != 0 && *n >= cap {
            return None;
        }
        *n += 1;
        Some(UserSlot {
            user_id,
            counts: self.per_user.clone(),
        })
    }

    /// Records an identified connection: by a Campfire user (and the session token it was
    /// found by), by an app's identifiers, or both. Returns its [`Signal`], which fires when
    /// the user loses access to a room.
    pub fn register(
        &self,
        user_id: Option<i64>,
        session_token: Option<String>,
        identifiers: Option<Arc<str>>,
        connection: Connection,
    ) -> Signal {
        let revoked = Signal::default();
        self.entries.lock().insert(
            connection.id(),
            Entry {
                user_id,
                session_token,
                identifiers,
                connection,
                revoked: revoked.clone(),
            },
        );
        revoked
    }

    /// Signals "access revoked" to every connection of the users in `user_ids` (each then
    /// re-checks its room subscriptions). Returns how many connections were signalled.
    pub fn signal_access_revoked(&self, user_ids: &[i64]) -> usize {
        let mut ids = user_ids.to_vec();
        ids.sort_unstable();
        let entries = self.entries.lock();
        let mut signalled = 0;
        for entry in entries
            .values()
            .filter(|e| e.user_id.is_some_and(|id| ids.binary_search(&id).is_ok()))
        {
            entry.revoked.signal();
            signalled += 1;
        }
        self.rechecks.fetch_add(signalled as u64, Ordering::Relaxed);
        signalled
    }

    /// How many connection re-checks were signalled since start, in all.
    pub fn rechecks(&self) -> u64 {
        self.rechecks.load(Ordering::Relaxed)
    }

    /// Forgets a connection (it closed).
    pub fn deregister(&self, connection_id: u64) {
        self.entries.lock().remove(&connection_id);
    }

    /// Number of registered connections.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether no connection is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn close_matching(&self, frames: &[Frame], pred: impl Fn(&Entry) -> bool) -> usize {
        let matching: Vec<Connection> = self
            .entries
            .lock()
            .values()
            .filter(|e| pred(e))
            .map(|e| e.connection.clone())
            .collect();
        for c in &matching {
            c.close(frames);
        }
        matching.len()
    }

    /// Queues `frames` as the last frames of each of the user's connections and closes them.
    /// Returns how many were closed.
    pub fn close_user(&self, user_id: i64, frames: &[Frame]) -> usize {
        self.close_matching(frames, |e| e.user_id == Some(user_id))
    }

    /// Queues `frames` as the last frames of each connection an app identified with exactly
    /// `identifiers` (AnyCable's remote disconnect) and closes them. Returns how many.
    pub fn close_identifiers(&self, identifiers: &str, frames: &[Frame]) -> usize {
        self.close_matching(frames, |e| e.identifiers.as_deref() == Some(identifiers))
    }

    /// Queues `frames` as the last frames of each connection opened with this session token
    /// (sign-out) and closes them. Returns how many were closed.
    pub fn close_session(&self, token: &str, frames: &[Frame]) -> usize {
        self.close_matching(frames, |e| e.session_token.as_deref() == Some(token))
    }

    /// Queues `frames` as the last frames of each of the user's connections opened with a
    /// session whose token's SHA-256 is `token_sha256` (lowercase hex; a sign-out announced
    /// to other nodes) and closes them. Returns how many were closed.
    pub fn close_session_digest(
        &self,
        user_id: i64,
        token_sha256: &str,
        frames: &[Frame],
    ) -> usize {
        self.close_matching(frames, |e| {
            e.user_id == Some(user_id)
                && e.session_token
                    .as_deref()
                    .is_some_and(|t| session_digest(t) == token_sha256)
        })
    }

    /// Queues `frames` on every connection and closes them all (shutdown). Returns how many.
    pub fn close_all(&self, frames: &[Frame]) -> usize {
        self.close_matching(frames, |_| true)
    }

    /// Every registered connection, in no particular order (a spread shutdown closes them
    /// one after another).
    pub fn connections(&self) -> Vec<Connection> {
        self.entries
            .lock()
            .values()
            .map(|e| e.connection.clone())
            .collect()
    }
}

/// This node's connections only (a tool's or a test's observer; the server reports
/// revocations to its bus, which reaches every node).
impl MembershipObserver for Registry {
    fn access_revoked(&self, user_ids: &[i64]) {
        let signalled = self.signal_access_revoked(user_ids);
        tracing::debug!(
            users = user_ids.len(),
            connections = signalled,
            "access revoked"
        );
    }
}
