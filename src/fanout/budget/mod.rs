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
//! one frame's worth, while distinct identifiers (one frame each) are charged in full. What
//! no budget counts is a fixed part per connection: its ring (at most 8 short frames), the
//! frames its writer has in hand once a cut-off gave their charge back (at most
//! [`super::MAX_BATCH_BYTES`] and one frame, until the writer next runs) and what the kernel
//! keeps unsent in its socket (at most [`super::SOCKET_UNSENT_BYTES`] and one segment: a
//! frame written there has left the budgets).
//!
//! Costs: nothing on the push of a short frame into the ring (the keeping-up case); one
//! relaxed load when a frame is written; two atomic adds on the spill path (already the cold,
//! locked path) and on the push of a long frame; the cut-off itself scans the holders, only
//! when a budget is passed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

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

/// What the ledger needs of a budgeted connection's outbox (`queue::Outbox` is the one; the
/// ledger names only this, so the queue may name the ledger's [`Charge`]).
pub(crate) trait Holder: Send + Sync + std::fmt::Debug {
    /// The connection's id.
    fn id(&self) -> u64;
    /// Bytes it holds charged against the budgets now.
    fn charged(&self) -> usize;
    /// Where its charges go from now on (set once, at attach).
    fn set_charge(&self, charge: Charge);
    /// Where its charges go, once set.
    fn charge_of(&self) -> Option<&Charge>;
    /// Gives back everything it holds charged.
    fn settle(&self);
    /// Cuts the connection off as too slow; `false` when it was already closing.
    fn cut_off_now(&self) -> bool;
    /// Drops its queued frames now; the number dropped.
    fn discard(&self) -> usize;
}

/// Owner id of connections attached without one (they share no user budget).
pub(crate) const NO_OWNER: u64 = u64::MAX;

/// One user's (or the owner-less connections') share of the ledger.
#[derive(Debug)]
pub(crate) struct Account {
    owner: u64,
    used: AtomicUsize,
    members: Mutex<Vec<Arc<dyn Holder>>>,
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
    pub(crate) fn enter<H: Holder + 'static>(self: &Arc<Self>, outbox: &Arc<H>, owner: u64) {
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
        let member: Arc<dyn Holder> = outbox.clone();
        account.members.lock().push(member);
        outbox.set_charge(Charge {
            ledger: self.clone(),
            account,
        });
    }

    /// Takes `outbox` out (its writer has ended) and gives back whatever it still held.
    pub(crate) fn leave(&self, outbox: &dyn Holder) {
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
                let mut best: Option<Arc<dyn Holder>> = None;
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
fn heaviest(members: &[Arc<dyn Holder>]) -> Option<Arc<dyn Holder>> {
    members.iter().max_by_key(|o| o.charged()).cloned()
}

impl Charge {
    /// Adds `len` bytes to the account and the server; cuts off the heaviest holders when a
    /// budget is passed.
    #[cfg(test)]
    pub(crate) fn add(&self, len: usize) {
        if self.count(len) {
            self.shed();
        }
    }

    /// Cuts off the heaviest holders until both budgets hold (nothing when they do).
    pub(crate) fn shed(&self) {
        self.ledger.shed(&self.account);
    }

    /// Adds `len` bytes to the account and the server; true when a budget is now passed (the
    /// caller then calls [`Charge::shed`], outside any lock an outbox's discard takes).
    pub(crate) fn count(&self, len: usize) -> bool {
        // A writer's give-back may reach the sums just before the charge it gives back (the
        // outbox counts a charge before it gets here): for that instant a sum reads below
        // zero, wrapped. Wrapping arithmetic, and a wrapped sum is over no budget.
        let user = self
            .account
            .used
            .fetch_add(len, Ordering::Relaxed)
            .wrapping_add(len);
        let server = self
            .ledger
            .used
            .fetch_add(len, Ordering::Relaxed)
            .wrapping_add(len);
        let past =
            |sum: usize, budget: usize| budget > 0 && sum > budget && sum <= isize::MAX as usize;
        let budgets = &self.ledger.budgets;
        (self.account.owner != NO_OWNER && past(user, budgets.user_bytes))
            || past(server, budgets.server_bytes)
    }

    /// Gives `len` bytes back.
    pub(crate) fn sub(&self, len: usize) {
        self.account.used.fetch_sub(len, Ordering::Relaxed);
        self.ledger.used.fetch_sub(len, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
