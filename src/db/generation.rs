//! A process-wide count of access changes: every committed write that changes who a session
//! is or which rooms a user may read (sessions ended, users deactivated, banned, renamed or
//! given another role, memberships granted or revoked, rooms converted or destroyed) advances
//! it. [`super::auth_cache::AuthCache`] drops whatever it cached under an older count, so such
//! a change takes effect for the next lookup in this process.
//!
//! The count is coarse on purpose: one number for every table and every database this process
//! opens (tests run several servers in one process). Such writes are rare next to lookups, so
//! an occasional needless refill costs little, and no write path has to say what it changed.
//! Writes that do not change access (posts, presence, involvement, session activity) leave
//! it alone.

use std::sync::atomic::{AtomicU64, Ordering};

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The current count; a lookup reads it before querying and caches its answer only if the
/// count has not moved meanwhile.
pub fn current() -> u64 {
    GENERATION.load(Ordering::SeqCst)
}

/// Advances the count: everything cached before is stale.
pub fn advance() {
    GENERATION.fetch_add(1, Ordering::SeqCst);
}

/// Advances the count when dropped, however the write ends (committed, failed, or its future
/// dropped mid-way, when a commit may still have happened). Take it after the write lock and
/// before the transaction, so it drops after the commit.
#[derive(Debug)]
#[must_use = "the count advances when this guard drops"]
pub struct AdvanceOnDrop(());

impl Drop for AdvanceOnDrop {
    fn drop(&mut self) {
        advance();
    }
}

/// A guard that advances the count when dropped (see [`AdvanceOnDrop`]).
pub fn advance_on_drop() -> AdvanceOnDrop {
    AdvanceOnDrop(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_advances_the_count_when_it_drops() {
        let before = current();
        let guard = advance_on_drop();
        // Other tests may advance it too, never back.
        drop(guard);
        assert!(current() > before);
    }
}
