//! Byte budgets for queued frames across connections: one per user (all of a user's
//! connections together) and one for the whole server, beside each outbox's own
//! [`super::QueueLimits`].
//!
//! A connection's own bound stops one socket from pinning more than its share; it does not stop
//! one account from opening a hundred non-reading sockets, each with 64 identifiers, and
//! pinning a hundred shares. The [`Ledger`] adds up what the outboxes hold past their keeping-up
//! state and, once a budget is passed, cuts the heaviest holder off first (the user's heaviest
//! connection for the user budget, the heaviest connection anywhere for the server's), with the
//! usual `too_slow` notice, until the budget holds again.
//!
//! What counts (see `queue.rs`): every frame that spills into a connection's overflow (a
//! connection that keeps up never spills: its frames fit the 8-slot ring) and every frame
//! longer than the outbox's short-frame size, from the push until the frame is completely
//! written or dropped. A broadcast frame that a group of `n` subscribers shares (one
//! identifier, one encoded frame) charges each of them `len / n`: the budgets follow the memory
//! the frames take, so a thousand readers of one room that fall behind together in a burst hold
//! one frame's worth, while distinct identifiers (one frame each) are charged in full. A
//! connection's ring (at most 8 frames) and the frames its writer has in hand (at most 64)
//! are the fixed part that no budget counts.
//!
//! Costs: nothing on the push of a short frame into the ring (the keeping-up case); one
//! relaxed load when a frame is written; two atomic adds on the spill path (already the cold,
//! locked path) and on the push of a long frame; the cut-off itself scans the holders, only
//! when a budget is passed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::queue::Outbox;
use super::stats::Stats;

/// The byte budgets of queued frames (`--queue-user-bytes`, `--queue-server-bytes`); 0 turns a
/// budget off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueBudgets {
    /// Most bytes queued to all connections of one user together.
    pub user_bytes: usize,
    /// Most bytes queued to all connections of the server together.
    pub server_bytes: usize,
}

impl Default for QueueBudgets {
    /// 32 MiB per user and 256 MiB for the server: a quarter of a 1 GiB machine for the
    /// backlog of slow readers, and room for two fully backed-up connections of one user at
    /// the default per-connection bound (16 MiB).
    fn default() -> Self {
        Self {
            user_bytes: 32 << 20,
            server_bytes: 256 << 20,
        }
    }
}

/// Owner id of connections attached without one (they share no user budget).
pub(crate) const NO_OWNER: u64 = u64::MAX;

/// One user's (or the owner-less connections') share of the ledger.
#[derive(Debug)]
pub(crate) struct Account {
    owner: u64,
    used: AtomicUsize,
    members: Mutex<Vec<Arc<Outbox>>>,
}

/// Where a budgeted outbox charges its bytes (set once, at attach).
#[derive(Debug)]
pub(crate) struct Charge {
    ledger: Arc<Ledger>,
    account: Arc<Account>,
}

/// The server's budgets and what every account holds against them.
#[derive(Debug)]
pub(crate) struct Ledger {
    budgets: QueueBudgets,
    used: AtomicUsize,
    accounts: Mutex<HashMap<u64, Arc<Account>>>,
    stats: Arc<Stats>,
}

impl Ledger {
    /// A ledger for `budgets`, counting its cut-offs in `stats` as slow disconnects.
    pub(crate) fn new(budgets: QueueBudgets, stats: Arc<Stats>) -> Self {
        Self {
            budgets,
            used: AtomicUsize::new(0),
            accounts: Mutex::default(),
            stats,
        }
    }

    /// Whether any budget is on.
    pub(crate) fn is_on(&self) -> bool {
        self.budgets.user_bytes > 0 || self.budgets.server_bytes > 0
    }

    /// Enters `outbox` under `owner` (or [`NO_OWNER`]); its charges go here from now on.
    pub(crate) fn enter(self: &Arc<Self>, outbox: &Arc<Outbox>, owner: u64) {
        let account = self
            .accounts
            .lock()
            .entry(owner)
            .or_insert_with(|| {
                Arc::new(Account {
                    owner,
                    used: AtomicUsize::new(0),
                    members: Mutex::default(),
                })
            })
            .clone();
        account.members.lock().push(outbox.clone());
        outbox.set_charge(Charge {
            ledger: self.clone(),
            account,
        });
    }

    /// Takes `outbox` out (its writer has ended) and gives back whatever it still held.
    pub(crate) fn leave(&self, outbox: &Outbox) {
        let Some(charge) = outbox.charge_of() else {
            return;
        };
        outbox.settle();
        let account = &charge.account;
        let empty = {
            let mut members = account.members.lock();
            members.retain(|o| o.id() != outbox.id());
            members.is_empty()
        };
        if empty {
            let mut accounts = self.accounts.lock();
            if accounts
                .get(&account.owner)
                .is_some_and(|a| Arc::ptr_eq(a, account) && a.members.lock().is_empty())
            {
                accounts.remove(&account.owner);
            }
        }
    }

    /// Bytes held against the server budget now.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn user_over(&self, account: &Account) -> bool {
        self.budgets.user_bytes > 0
            && account.owner != NO_OWNER
            && account.used.load(Ordering::Relaxed) > self.budgets.user_bytes
    }

    fn server_over(&self) -> bool {
        self.budgets.server_bytes > 0
            && self.used.load(Ordering::Relaxed) > self.budgets.server_bytes
    }

    /// Cuts off the heaviest holders until both budgets hold (see the module docs).
    #[cold]
    fn shed(&self, account: &Account) {
        loop {
            let victim = if self.user_over(account) {
                heaviest(&account.members.lock())
            } else if self.server_over() {
                let accounts: Vec<Arc<Account>> = self.accounts.lock().values().cloned().collect();
                let mut best: Option<Arc<Outbox>> = None;
                for a in &accounts {
                    if let Some(o) = heaviest(&a.members.lock()) {
                        if best.as_ref().is_none_or(|b| o.charged() > b.charged()) {
                            best = Some(o);
                        }
                    }
                }
                best
            } else {
                return;
            };
            let Some(victim) = victim else { return };
            if victim.charged() == 0 {
                return;
            }
            if victim.cut_off_now() {
                self.stats.slow_disconnect();
                tracing::info!(
                    connection = victim.id(),
                    owner = account.owner,
                    "a connection was cut off as too slow: queued-frame budget passed"
                );
            }
            victim.settle();
            // Free its frames now rather than when its writer next runs (a busy server may
            // take a while to get there): the frames are not wanted any more, and the pops are
            // safe beside the writer's (the ring is multi-consumer, the overflow locked).
            victim.discard();
        }
    }
}

/// The member holding the most charged bytes.
fn heaviest(members: &[Arc<Outbox>]) -> Option<Arc<Outbox>> {
    members.iter().max_by_key(|o| o.charged()).cloned()
}

impl Charge {
    /// Adds `len` bytes to the account and the server; cuts off the heaviest holders when a
    /// budget is passed.
    pub(crate) fn add(&self, len: usize) {
        let user = self.account.used.fetch_add(len, Ordering::Relaxed) + len;
        let server = self.ledger.used.fetch_add(len, Ordering::Relaxed) + len;
        let budgets = &self.ledger.budgets;
        let over =
            (budgets.user_bytes > 0 && self.account.owner != NO_OWNER && user > budgets.user_bytes)
                || (budgets.server_bytes > 0 && server > budgets.server_bytes);
        if over {
            self.ledger.shed(&self.account);
        }
    }

    /// Gives `len` bytes back.
    pub(crate) fn sub(&self, len: usize) {
        self.account.used.fetch_sub(len, Ordering::Relaxed);
        self.ledger.used.fetch_sub(len, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fanout::queue::{Push, State, RING_SLOTS};
    use crate::fanout::QueueLimits;
    use bytes::Bytes;

    fn outbox(id: u64) -> Arc<Outbox> {
        Arc::new(Outbox::new(
            id,
            QueueLimits {
                max_frames: 1000,
                max_bytes: 1 << 30,
            },
        ))
    }

    #[test]
    fn a_frame_shared_by_a_group_charges_each_member_its_share() {
        let ledger = ledger(6000, 6000);
        let members: Vec<Arc<Outbox>> = (1..=10).map(outbox).collect();
        for m in &members {
            ledger.enter(m, 7);
        }
        let frame = Bytes::from(vec![b'x'; 100]);
        for _ in 0..RING_SLOTS + 50 {
            for m in &members {
                assert!(matches!(m.push_shared_by(&frame, 10), Push::Queued { .. }));
            }
        }
        // 50 spilled frames, each a tenth charged to each of ten: 50 frames' worth.
        assert_eq!(ledger.used(), 5000);
        assert!(members.iter().all(|m| m.state() == State::Open));
    }

    fn ledger(user_bytes: usize, server_bytes: usize) -> Arc<Ledger> {
        Arc::new(Ledger::new(
            QueueBudgets {
                user_bytes,
                server_bytes,
            },
            Arc::default(),
        ))
    }

    #[test]
    fn only_spilled_frames_count_and_the_users_heaviest_connection_is_cut_first() {
        let ledger = ledger(1000, 0);
        let (a, b) = (outbox(1), outbox(2));
        ledger.enter(&a, 7);
        ledger.enter(&b, 7);
        let frame = Bytes::from(vec![b'x'; 100]);
        for _ in 0..RING_SLOTS {
            assert!(matches!(a.push(&frame), Push::Queued { .. }));
            assert!(matches!(b.push(&frame), Push::Queued { .. }));
        }
        assert_eq!(
            ledger.used(),
            0,
            "a connection that keeps up holds no budget"
        );
        for _ in 0..6 {
            a.push(&frame);
        }
        for _ in 0..3 {
            b.push(&frame);
        }
        assert_eq!((a.charged(), b.charged(), ledger.used()), (600, 300, 900));
        // Past the user's budget: the heaviest (a) goes, b stays.
        a.push(&frame);
        assert_eq!(b.push(&frame), Push::Queued { bytes: 0 });
        assert_eq!(a.state(), State::TooSlow);
        assert_eq!(b.state(), State::Open);
        assert_eq!(ledger.used(), 400);
        // What b's writer writes gives its share back.
        while let Some(f) = b.pop() {
            b.release(f.len());
        }
        assert_eq!(ledger.used(), 0);
        ledger.leave(&a);
        ledger.leave(&b);
        assert!(ledger.accounts.lock().is_empty());
    }

    #[test]
    fn the_server_budget_cuts_the_heaviest_connection_of_any_user() {
        let ledger = ledger(0, 1000);
        let (a, b, c) = (outbox(1), outbox(2), outbox(3));
        ledger.enter(&a, 1);
        ledger.enter(&b, 2);
        ledger.enter(&c, NO_OWNER);
        let frame = Bytes::from(vec![b'x'; 100]);
        for _ in 0..RING_SLOTS {
            for o in [&a, &b, &c] {
                o.push(&frame);
            }
        }
        for _ in 0..2 {
            a.push(&frame);
        }
        for _ in 0..5 {
            b.push(&frame);
        }
        for _ in 0..3 {
            c.push(&frame);
        }
        assert_eq!(ledger.used(), 1000);
        c.push(&frame);
        assert_eq!(b.state(), State::TooSlow);
        assert_eq!((a.state(), c.state()), (State::Open, State::Open));
        assert_eq!(ledger.used(), 600);
    }

    #[test]
    fn long_frames_count_from_the_push_until_written() {
        let ledger = ledger(1 << 20, 0);
        let a = Arc::new(Outbox::new(
            1,
            QueueLimits {
                max_frames: 4,
                max_bytes: 4000,
            },
        ));
        ledger.enter(&a, 1);
        let long = Bytes::from(vec![b'x'; 1500]);
        a.push(&long);
        assert_eq!(ledger.used(), 1500);
        let f = a.pop().unwrap();
        assert_eq!(ledger.used(), 1500, "popped but not written yet");
        a.release(f.len());
        assert_eq!(ledger.used(), 0);
    }
}
