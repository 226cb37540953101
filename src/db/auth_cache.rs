//! A short-lived cache of the two lookups every request and every subscription repeats: which
//! active user a session token belongs to ([`super::sessions::resume`]) and whether a user is
//! a member of a room ([`super::rooms::find_for_member`]); and of the one every post repeats:
//! who the room's members are ([`super::rooms::member_ids`], for the unread notices).
//!
//! A connect storm (thousands of clients reconnecting, each subscribing to a few rooms) would
//! otherwise run one SQLite query per handshake and per room subscription, most of them for
//! the same few sessions and memberships.
//!
//! Correctness:
//! - Changes made through this process take effect for the next lookup: every write that
//!   changes access advances [`super::generation`], and an answer cached under an older count
//!   is never used (the whole map is dropped at the first access after the change). A lookup
//!   that raced with such a write (read before the commit, finished after) is not cached.
//! - Changes made by another process (a console, another node, the `sqlite3` shell) take
//!   effect within the time to live (`--auth-cache-seconds`, 5 s by default; 0 turns the cache
//!   off).
//! - A session's `last_active_at` is still refreshed at most once per
//!   [`super::sessions::ACTIVITY_REFRESH_MS`], and no later than the first lookup after it is
//!   due: a cached session whose refresh is due is looked up again.
//! - Only sessions that resolve to an active user are kept (an unknown token costs a query
//!   each time, as before); membership answers are kept either way.
//! - Each map holds at most [`CAPACITY`] answers; a full map is emptied before the next insert.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sqlx::SqlitePool;

use super::generation;
use super::rooms::Room;
use super::sessions::ACTIVITY_REFRESH_MS;
use super::users::User;

/// The most answers each map (sessions, memberships) holds.
pub const CAPACITY: usize = 16_384;

/// The cache; one per server, shared by its requests and connections. Its `Debug` shows the
/// time to live and the sizes, never a session token.
pub struct AuthCache {
    ttl: Duration,
    /// Session token → (user, `last_active_at` in ms since the epoch).
    sessions: Mutex<Shelf<String, (User, i64)>>,
    /// (room id, user id) → the room when the user is a member of it.
    memberships: Mutex<Shelf<(i64, i64), Option<Room>>>,
    /// Room id → its members' user ids, ascending.
    members: Mutex<Shelf<i64, Arc<[i64]>>>,
}

impl AuthCache {
    /// A cache keeping answers for `ttl` (zero: nothing is kept, every lookup queries).
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            sessions: Mutex::new(Shelf::default()),
            memberships: Mutex::new(Shelf::default()),
            members: Mutex::new(Shelf::default()),
        }
    }

    /// How long answers are kept.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// [`super::sessions::resume`] through the cache: the active user of session `token`,
    /// `None` for an unknown or ended session or an inactive user.
    ///
    /// # Errors
    /// Database failures of the lookup or of the activity refresh (as `resume`).
    pub async fn resume(&self, pool: &SqlitePool, token: &str) -> sqlx::Result<Option<User>> {
        if self.ttl.is_zero() {
            return super::sessions::resume(pool, token).await;
        }
        let hit = self.sessions.lock().get(token, self.ttl);
        if let Some((user, last_active_at)) = hit {
            if super::now_ms() - last_active_at <= ACTIVITY_REFRESH_MS {
                return Ok(Some(user));
            }
        }
        let seen = generation::current();
        let found = super::sessions::resume_with_activity(pool, token).await?;
        Ok(found.map(|(user, last_active_at)| {
            self.sessions
                .lock()
                .put(token.to_owned(), (user.clone(), last_active_at), seen);
            user
        }))
    }

    /// [`super::rooms::find_for_member`] through the cache: room `room_id` when `user_id` is a
    /// member of it.
    ///
    /// The room's `updated_at` is as of the lookup (up to the time to live old): callers that
    /// need it fresh use `find_for_member` itself.
    ///
    /// # Errors
    /// Database failures.
    pub async fn find_for_member(
        &self,
        pool: &SqlitePool,
        room_id: i64,
        user_id: i64,
    ) -> sqlx::Result<Option<Room>> {
        if self.ttl.is_zero() {
            return super::rooms::find_for_member(pool, room_id, user_id).await;
        }
        let key = (room_id, user_id);
        if let Some(answer) = self.memberships.lock().get(&key, self.ttl) {
            return Ok(answer);
        }
        let seen = generation::current();
        let answer = super::rooms::find_for_member(pool, room_id, user_id).await?;
        self.memberships.lock().put(key, answer.clone(), seen);
        Ok(answer)
    }

    /// [`super::rooms::member_ids`] through the cache: the user ids of room `room_id`'s
    /// members, ascending. A room of a thousand members costs a thousand-element JSON array
    /// built, stringified and parsed per query; a post asks for it every time.
    ///
    /// # Errors
    /// Database failures.
    pub async fn member_ids(&self, pool: &SqlitePool, room_id: i64) -> sqlx::Result<Arc<[i64]>> {
        if self.ttl.is_zero() {
            return Ok(super::rooms::member_ids(pool, room_id).await?.into());
        }
        if let Some(members) = self.members.lock().get(&room_id, self.ttl) {
            return Ok(members);
        }
        let seen = generation::current();
        let members: Arc<[i64]> = super::rooms::member_ids(pool, room_id).await?.into();
        self.members.lock().put(room_id, members.clone(), seen);
        Ok(members)
    }
}

impl std::fmt::Debug for AuthCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthCache")
            .field("ttl", &self.ttl)
            .field("sessions", &self.sessions.lock().entries.len())
            .field("memberships", &self.memberships.lock().entries.len())
            .field("members", &self.members.lock().entries.len())
            .finish()
    }
}

/// One map of answers, each with the time it was stored, all from one generation.
#[derive(Debug)]
struct Shelf<K, V> {
    generation: u64,
    entries: HashMap<K, (Instant, V)>,
}

impl<K, V> Default for Shelf<K, V> {
    fn default() -> Self {
        Self {
            generation: generation::current(),
            entries: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq, V: Clone> Shelf<K, V> {
    /// Empties the shelf when access changed since its answers were stored.
    fn sync(&mut self) {
        let now = generation::current();
        if self.generation != now {
            self.entries.clear();
            self.generation = now;
        }
    }

    /// The answer for `key` when stored less than `ttl` ago in the current generation.
    fn get<Q>(&mut self, key: &Q, ttl: Duration) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.sync();
        match self.entries.get(key) {
            Some((at, value)) if at.elapsed() < ttl => Some(value.clone()),
            Some(_) => {
                self.entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Stores an answer read in generation `seen`; dropped when access changed since.
    fn put(&mut self, key: K, value: V, seen: u64) {
        self.sync();
        if self.generation != seen {
            return;
        }
        if self.entries.len() >= CAPACITY {
            self.entries.clear();
        }
        self.entries.insert(key, (Instant::now(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_names_no_session_token() {
        let cache = AuthCache::new(Duration::from_secs(5));
        let user = User {
            id: 1,
            name: "David".into(),
            email_address: None,
            role: crate::db::Role::Member,
            status: crate::db::Status::Active,
        };
        let seen = cache.sessions.lock().generation;
        cache
            .sessions
            .lock()
            .put("Tok3nTok3nTok3n".into(), (user, 0), seen);
        let shown = format!("{cache:?}");
        assert!(!shown.contains("Tok3n"), "{shown}");
    }

    #[test]
    fn an_answer_read_before_an_access_change_is_not_kept() {
        let mut shelf: Shelf<i64, i64> = Shelf::default();
        let seen = generation::current();
        generation::advance();
        shelf.put(1, 10, seen);
        assert_eq!(shelf.get(&1, Duration::from_secs(5)), None);
        shelf.put(1, 10, generation::current());
        // Other tests may advance the count in between; when they do not, the answer is kept.
        let kept = shelf.get(&1, Duration::from_secs(5));
        assert!(kept.is_none() || kept == Some(10));
    }

    #[test]
    fn an_access_change_empties_the_shelf() {
        let mut shelf: Shelf<i64, i64> = Shelf::default();
        shelf.entries.insert(1, (Instant::now(), 10));
        generation::advance();
        assert_eq!(shelf.get(&1, Duration::from_secs(5)), None);
        assert!(shelf.entries.is_empty());
    }

    #[test]
    fn answers_expire_and_the_shelf_stays_bounded() {
        let mut shelf: Shelf<usize, usize> = Shelf::default();
        shelf
            .entries
            .insert(1, (Instant::now() - Duration::from_secs(6), 10));
        assert_eq!(shelf.get(&1, Duration::from_secs(5)), None);
        for i in 0..CAPACITY + 10 {
            let seen = shelf.generation;
            shelf.put(i, i, seen);
            assert!(shelf.entries.len() <= CAPACITY);
        }
    }

    #[tokio::test]
    async fn member_lists_follow_membership_changes_at_once() {
        let (pool, dir, _serial) = super::super::test_pool().await;
        let observer = super::super::memberships::NoObserver;
        let ann = super::super::users::create_member(&pool, "Ann", "ann@example.com", "x")
            .await
            .expect("ann")
            .expect("new");
        let bob = super::super::users::create_member(&pool, "Bob", "bob@example.com", "x")
            .await
            .expect("bob")
            .expect("new");
        let (room, _) = super::super::memberships::create_room(
            &pool,
            &observer,
            crate::db::RoomKind::Closed,
            "r",
            ann,
            &[],
        )
        .await
        .expect("room");
        let cache = AuthCache::new(Duration::from_secs(60));
        assert_eq!(
            &*cache.member_ids(&pool, room.id).await.expect("ids"),
            &[ann]
        );
        // Cached: the same list, without a query.
        let again = cache.member_ids(&pool, room.id).await.expect("ids");
        assert_eq!(&*again, &[ann]);
        super::super::memberships::revise(&pool, &observer, room.id, &[bob], &[])
            .await
            .expect("revise");
        let mut expected = [ann, bob];
        expected.sort_unstable();
        assert_eq!(
            &*cache.member_ids(&pool, room.id).await.expect("ids"),
            &expected
        );
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }
}
