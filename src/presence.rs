//! Presence per connection, written to the database only on transitions and at a bounded rate.
//!
//! Campfire counts a member's open tabs in `memberships.connections`: every `present` adds one,
//! every `absent` and every unsubscribe takes one away. A tab that goes hidden (`absent`) and is
//! then closed (unsubscribe) is so counted twice, and one tab's close can mark the member gone
//! while another tab is still open and visible. Every action is also a database write, so a
//! client that churns presence writes as fast as it can send.
//!
//! Here the server keeps, per membership (room, user), a record of the live connections
//! subscribed to its `PresenceChannel` and whether each one's tab is visible. The membership is
//! *connected* while at least one of them is. Only a change of that (first visible tab, last
//! one gone or hidden) is written ([`crate::db::rooms::set_presence`]): `connections` = the
//! visible tabs, `connected_at` now and `unread_at` cleared, or `connections` 0 and
//! `connected_at` cleared. One connection's actions can never undo another's, and an action
//! repeated counts once.
//!
//! Writes are coalesced per membership: at most [`WRITE_BURST`] at once, then one a second
//! ([`WRITES_PER_SECOND`]); a transition past that is written when the next write is due, with
//! the state of that moment (so a flicker in between costs nothing). `refresh` (the client's
//! keep-alive, every 50 s in Campfire) re-stamps `connected_at` at most every
//! [`REFRESH_EVERY`] per membership, however many tabs send it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sqlx::SqlitePool;

use crate::rate_limit::TokenBucket;

/// Presence writes one membership may make at once, before [`WRITES_PER_SECOND`] applies.
pub const WRITE_BURST: u32 = 3;

/// Presence writes per second per membership past the burst.
pub const WRITES_PER_SECOND: f64 = 1.0;

/// Shortest time between two `refresh` writes of one membership.
pub const REFRESH_EVERY: Duration = Duration::from_secs(10);

/// A membership: `(room id, user id)`.
type Key = (i64, i64);

/// One connection's part in a membership's presence.
#[derive(Clone, Copy, Debug)]
struct Tab {
    /// Its `PresenceChannel` subscriptions to the room (usually 1).
    subscriptions: u32,
    /// Whether its tab is visible (`present`) rather than hidden (`absent`).
    visible: bool,
}

#[derive(Debug)]
struct State {
    tabs: HashMap<u64, Tab>,
    /// Whether the membership is connected as last sent to the database (None: not yet, or
    /// the write failed).
    written: Option<bool>,
    writes: TokenBucket,
    flush_scheduled: bool,
    /// A later look at whether the record can go is scheduled.
    forget_scheduled: bool,
    last_refresh: Instant,
}

impl State {
    fn visible_tabs(&self) -> i64 {
        self.tabs.values().filter(|t| t.visible).count() as i64
    }

    /// No live tab and nothing to write.
    fn idle(&self) -> bool {
        self.tabs.is_empty() && self.written != Some(true) && !self.flush_scheduled
    }
}

#[derive(Debug)]
struct Membership {
    state: Mutex<State>,
    /// Held across a database write, so the writes of one membership happen one at a time and
    /// each writes the state of its moment.
    write: tokio::sync::Mutex<()>,
}

#[derive(Debug)]
struct Inner {
    pool: SqlitePool,
    memberships: Mutex<HashMap<Key, Arc<Membership>>>,
    writes: AtomicU64,
}

/// The per-connection presence record (see the module docs). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Presence {
    inner: Arc<Inner>,
}

impl Presence {
    /// An empty record writing through `pool`.
    pub fn new(pool: SqlitePool) -> Self {
        Self {
            inner: Arc::new(Inner {
                pool,
                memberships: Mutex::new(HashMap::new()),
                writes: AtomicU64::new(0),
            }),
        }
    }

    /// Presence writes made so far (for `/metrics` and tests).
    pub fn writes(&self) -> u64 {
        self.inner.writes.load(Ordering::Relaxed)
    }

    /// Memberships currently tracked (those with a live connection or a write pending).
    pub fn tracked(&self) -> usize {
        self.inner.memberships.lock().len()
    }

    /// Applies `change` to connection `connection`'s tab of the membership (creating the
    /// record when `create`), then writes the membership if it changed between connected and
    /// not, as the write budget allows.
    async fn update(
        &self,
        key: Key,
        connection: u64,
        create: bool,
        change: impl FnOnce(&mut HashMap<u64, Tab>),
    ) -> sqlx::Result<()> {
        let membership = {
            let mut map = self.inner.memberships.lock();
            let membership = if create {
                map.entry(key)
                    .or_insert_with(|| {
                        Arc::new(Membership {
                            state: Mutex::new(State {
                                tabs: HashMap::new(),
                                written: None,
                                writes: TokenBucket::new(
                                    WRITE_BURST,
                                    WRITES_PER_SECOND,
                                    Instant::now(),
                                ),
                                flush_scheduled: false,
                                forget_scheduled: false,
                                last_refresh: Instant::now(),
                            }),
                            write: tokio::sync::Mutex::new(()),
                        })
                    })
                    .clone()
            } else {
                match map.get(&key) {
                    Some(m) => m.clone(),
                    None => return Ok(()),
                }
            };
            let mut state = membership.state.lock();
            if create || state.tabs.contains_key(&connection) {
                change(&mut state.tabs);
            }
            drop(state);
            membership
        };
        self.sync(key, &membership).await?;
        self.forget_if_idle(key, &membership);
        Ok(())
    }

    /// Writes the membership now when it changed and the budget has a write, else schedules
    /// one write for when the budget allows (unless one is scheduled already).
    async fn sync(&self, key: Key, membership: &Arc<Membership>) -> sqlx::Result<()> {
        let wait = {
            let mut state = membership.state.lock();
            let connected = state.visible_tabs() > 0;
            if state.written == Some(connected) || state.flush_scheduled {
                return Ok(());
            }
            let now = Instant::now();
            if state.writes.try_take(now) {
                None
            } else {
                state.flush_scheduled = true;
                Some(state.writes.wait(now))
            }
        };
        match wait {
            None => self.flush(key, membership).await,
            Some(delay) => {
                let this = self.clone();
                let membership = membership.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    {
                        let mut state = membership.state.lock();
                        state.flush_scheduled = false;
                        let _ = state.writes.try_take(Instant::now());
                    }
                    if let Err(e) = this.flush(key, &membership).await {
                        tracing::warn!(error = %e, room_id = key.0, user_id = key.1, "presence write failed");
                    }
                    this.forget_if_idle(key, &membership);
                });
                Ok(())
            }
        }
    }

    /// Writes the membership's state of this moment, when it differs from the last written.
    async fn flush(&self, key: Key, membership: &Arc<Membership>) -> sqlx::Result<()> {
        let _one_at_a_time = membership.write.lock().await;
        let tabs = {
            let mut state = membership.state.lock();
            let tabs = state.visible_tabs();
            if state.written == Some(tabs > 0) {
                return Ok(());
            }
            state.written = Some(tabs > 0);
            if tabs > 0 {
                state.last_refresh = Instant::now();
            }
            tabs
        };
        let (room_id, user_id) = key;
        let result = crate::db::rooms::set_presence(&self.inner.pool, room_id, user_id, tabs).await;
        self.inner.writes.fetch_add(1, Ordering::Relaxed);
        // Unwritten: a failure, or no membership row yet (a thread is open to its parent
        // room's members before they follow it). Unknown, so the next change or refresh writes
        // again: a row made meanwhile (a mention, a follow) is then marked present and read.
        if !matches!(result, Ok(true)) {
            membership.state.lock().written = None;
        }
        result.map(|_| ())
    }

    /// Drops the record of a membership with no live connection and nothing left to write,
    /// once its write budget is whole again (a new record starts with a whole budget, so
    /// dropping it earlier would let subscribe/unsubscribe churn write past the rate); until
    /// then a later look is scheduled.
    fn forget_if_idle(&self, key: Key, membership: &Arc<Membership>) {
        let mut map = self.inner.memberships.lock();
        let Some(current) = map.get(&key) else {
            return;
        };
        // A write in flight (`write` held) keeps the record, so that a new record's write can
        // never overtake it.
        if !Arc::ptr_eq(current, membership) || membership.write.try_lock().is_err() {
            return;
        }
        let mut state = membership.state.lock();
        if !state.idle() {
            return;
        }
        let refill = state.writes.until_full(Instant::now());
        if refill.is_zero() {
            drop(state);
            map.remove(&key);
        } else if !state.forget_scheduled {
            state.forget_scheduled = true;
            let this = self.clone();
            let membership = membership.clone();
            tokio::spawn(async move {
                tokio::time::sleep(refill).await;
                membership.state.lock().forget_scheduled = false;
                this.forget_if_idle(key, &membership);
            });
        }
    }

    /// `PresenceChannel#subscribed` on connection `connection`: its tab is in the room and
    /// visible (Campfire's `present`).
    ///
    /// # Errors
    /// The database write failed.
    pub async fn subscribed(
        &self,
        room_id: i64,
        user_id: i64,
        connection: u64,
    ) -> sqlx::Result<()> {
        self.update((room_id, user_id), connection, true, |tabs| {
            let tab = tabs.entry(connection).or_insert(Tab {
                subscriptions: 0,
                visible: true,
            });
            tab.subscriptions += 1;
            tab.visible = true;
        })
        .await
    }

    /// The `present` action: connection `connection`'s tab is visible again. Ignored for a
    /// connection not subscribed to the room's presence.
    ///
    /// # Errors
    /// The database write failed.
    pub async fn present(&self, room_id: i64, user_id: i64, connection: u64) -> sqlx::Result<()> {
        self.update((room_id, user_id), connection, false, |tabs| {
            if let Some(tab) = tabs.get_mut(&connection) {
                tab.visible = true;
            }
        })
        .await
    }

    /// The `absent` action: connection `connection`'s tab is hidden; the membership stays
    /// connected while another tab is visible.
    ///
    /// # Errors
    /// The database write failed.
    pub async fn absent(&self, room_id: i64, user_id: i64, connection: u64) -> sqlx::Result<()> {
        self.update((room_id, user_id), connection, false, |tabs| {
            if let Some(tab) = tabs.get_mut(&connection) {
                tab.visible = false;
            }
        })
        .await
    }

    /// `PresenceChannel#unsubscribed` (also when the connection closes): the connection's tab
    /// leaves the room, counted once whatever it said before.
    ///
    /// # Errors
    /// The database write failed.
    pub async fn unsubscribed(
        &self,
        room_id: i64,
        user_id: i64,
        connection: u64,
    ) -> sqlx::Result<()> {
        self.update((room_id, user_id), connection, false, |tabs| {
            if let Some(tab) = tabs.get_mut(&connection) {
                tab.subscriptions = tab.subscriptions.saturating_sub(1);
                if tab.subscriptions == 0 {
                    tabs.remove(&connection);
                }
            }
        })
        .await
    }

    /// The `refresh` action (Campfire's `refresh_connection`): re-stamps `connected_at` of a
    /// connected membership (or one whose presence could not be written yet), at most every
    /// [`REFRESH_EVERY`]; ignored otherwise.
    ///
    /// # Errors
    /// The database write failed.
    pub async fn refresh(&self, room_id: i64, user_id: i64, connection: u64) -> sqlx::Result<()> {
        let key = (room_id, user_id);
        let Some(membership) = self.inner.memberships.lock().get(&key).cloned() else {
            return Ok(());
        };
        let _one_at_a_time = membership.write.lock().await;
        let tabs = {
            let mut state = membership.state.lock();
            let tabs = state.visible_tabs();
            let due = state.last_refresh.elapsed() >= REFRESH_EVERY;
            if !state.tabs.contains_key(&connection)
                || tabs == 0
                || state.written == Some(false)
                || !due
            {
                return Ok(());
            }
            state.last_refresh = Instant::now();
            tabs
        };
        self.inner.writes.fetch_add(1, Ordering::Relaxed);
        let written =
            crate::db::rooms::set_presence(&self.inner.pool, room_id, user_id, tabs).await?;
        // A membership unwritten so far (see `flush`) is present from here on.
        if written {
            membership.state.lock().written = Some(true);
        }
        Ok(())
    }
}
