//! One write to the database: [`Write::begin`] takes this process's write lock
//! (`super::write_lock`), arms the access count ([`super::generation`]) when the write may
//! change access, and begins the transaction (`super::begin_write`, `BEGIN IMMEDIATE`);
//! [`Write::commit`] commits, advances the count and hands back the lock. A write dropped
//! before its commit rolls back (sqlx's `Transaction`), still advances an armed count (a commit
//! may have happened when the future was dropped mid-way) and releases the lock, in that order.

use std::ops::{Deref, DerefMut};

use sqlx::query::Query;
use sqlx::sqlite::SqliteArguments;
use sqlx::{Sqlite, SqliteConnection, SqlitePool, Transaction};
use tokio::sync::MutexGuard;

use super::generation::{self, AdvanceOnDrop};

/// Whether a write may change who a session is or which rooms a user may read (see
/// [`super::generation`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Posts, presence, involvement, blobs, session activity: cached lookups stay valid.
    Kept,
    /// Sessions ended, users deactivated, banned, renamed or given another role, memberships
    /// granted or revoked, rooms converted or destroyed: cached lookups go stale at the commit.
    Changed,
}

/// A write transaction holding this process's write lock; derefs to the transaction's
/// connection (`&mut *write` is an executor).
///
/// Fields drop in this order: the transaction (a rollback when not committed), the access
/// count, the lock.
#[derive(Debug)]
#[must_use = "a write rolls back unless committed"]
pub struct Write {
    tx: Transaction<'static, Sqlite>,
    changed: Option<AdvanceOnDrop>,
    lock: MutexGuard<'static, ()>,
}

/// This process's write lock, still held after a [`Write::commit`]: work that must stay in
/// commit order (telling observers, reading back) runs before it drops.
#[derive(Debug)]
pub struct Held(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Write {
    /// Takes the write lock, arms the access count for [`Access::Changed`], and begins the
    /// transaction.
    ///
    /// Errors: [`super::busy`] when the lock is not free within [`super::LOCK_WAIT`]; SQLite's
    /// `SQLITE_BUSY` when another process holds the database past [`super::BUSY_TIMEOUT`];
    /// any other database failure.
    pub async fn begin(pool: &SqlitePool, access: Access) -> sqlx::Result<Self> {
        let lock = super::write_lock().await?;
        let changed = (access == Access::Changed).then(generation::advance_on_drop);
        let tx = super::begin_write(pool).await?;
        Ok(Self { tx, changed, lock })
    }

    /// Commits, then advances an armed access count (whether or not the commit succeeded);
    /// returns the lock, which the caller may drop at once.
    ///
    /// Errors: the commit's.
    pub async fn commit(self) -> sqlx::Result<Held> {
        let Self { lock, changed, tx } = self;
        let committed = tx.commit().await;
        drop(changed);
        committed.map(|()| Held(lock))
    }
}

/// A write of one statement: this process's write lock, and an armed access count, without a
/// transaction. SQLite runs a lone statement as a transaction of its own (autocommit), so
/// `BEGIN IMMEDIATE` and `COMMIT` around it would only add two round trips through the
/// connection's worker thread (presence runs one on every connect). `&*one` is the executor
/// (the pool); [`One::done`] ends it.
#[derive(Debug)]
#[must_use = "the statement runs while this is held"]
pub struct One<'p> {
    pool: &'p SqlitePool,
    changed: Option<AdvanceOnDrop>,
    lock: MutexGuard<'static, ()>,
}

impl<'p> One<'p> {
    /// Takes the write lock and arms the access count for [`Access::Changed`].
    ///
    /// Errors: [`super::busy`] when the lock is not free within [`super::LOCK_WAIT`].
    pub async fn begin(pool: &'p SqlitePool, access: Access) -> sqlx::Result<Self> {
        let lock = super::write_lock().await?;
        let changed = (access == Access::Changed).then(generation::advance_on_drop);
        Ok(Self {
            pool,
            changed,
            lock,
        })
    }

    /// The whole of a one-statement write: takes the lock ([`One::begin`]), runs the
    /// statement `statement` builds from the time (milliseconds since the Unix epoch, taken
    /// under the lock, so writes are stamped in the order they commit) and ends the write
    /// ([`One::done`]). Returns the rows the statement changed.
    ///
    /// Errors: those of [`One::begin`]; the statement's.
    pub async fn execute<'q>(
        pool: &'p SqlitePool,
        access: Access,
        statement: impl FnOnce(i64) -> Query<'q, Sqlite, SqliteArguments>,
    ) -> sqlx::Result<u64> {
        let one = Self::begin(pool, access).await?;
        let query = statement(super::now_ms());
        let changed = query.execute(&*one).await?.rows_affected();
        one.done();
        Ok(changed)
    }

    /// Advances an armed access count; returns the lock, which the caller may drop at once.
    pub fn done(self) -> Held {
        let Self { lock, changed, .. } = self;
        drop(changed);
        Held(lock)
    }
}

impl Deref for One<'_> {
    type Target = SqlitePool;

    fn deref(&self) -> &SqlitePool {
        self.pool
    }
}

impl Deref for Write {
    type Target = SqliteConnection;

    fn deref(&self) -> &SqliteConnection {
        &self.tx
    }
}

impl DerefMut for Write {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_write_dropped_uncommitted_rolls_back_and_releases_the_lock() {
        let (pool, dir, _serial) = super::super::test_pool().await;
        let before = generation::current();
        let mut write = Write::begin(&pool, Access::Changed).await.expect("begin");
        sqlx::query("INSERT INTO accounts (name, join_code, created_at, updated_at) VALUES ('a', 'j', 1, 1)")
            .execute(&mut *write)
            .await
            .expect("insert");
        drop(write);
        assert!(generation::current() > before);
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM accounts")
            .fetch_one(&pool)
            .await
            .expect("count");
        assert_eq!(count, 0);
        let write = Write::begin(&pool, Access::Kept)
            .await
            .expect("lock is free");
        drop(write.commit().await.expect("commit"));
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }
}
