//! A connection to the database run on the calling thread, for the one write on the post path
//! (the group insert of [`super::messages::create_then`]).
//!
//! sqlx runs each SQLite connection on a worker thread of its own: every statement through the
//! pool is a message to that thread and a wake-up back, two context switches per statement on
//! a server whose threads share one core. [`Inline`] keeps one more connection to the same file
//! (rusqlite over the same `libsqlite3-sys`), opened on first use with the pool's settings
//! (WAL, `synchronous=NORMAL`, foreign keys, no automatic checkpoint), and runs the statement
//! where the caller runs, with its prepared statements cached (one per statement text).
//!
//! It is used under this process's write lock (`super::write_lock`), so it never competes
//! with the pool's writers; another process holding SQLite's lock (a backup, the `sqlite3`
//! shell) makes SQLite answer `SQLITE_BUSY` at once (no busy handler: it would sleep on the
//! runtime's thread), and [`Inline::run`] retries after asynchronous sleeps until the
//! caller's deadline, then fails with [`super::busy`], as the pool's busy handler does after
//! [`super::BUSY_TIMEOUT`].

use std::path::PathBuf;
use std::time::{Duration, Instant};

use sqlx::SqlitePool;

/// The post path's own connection, opened on first use (see the module docs).
#[derive(Default)]
pub struct Inline {
    conn: parking_lot::Mutex<Option<rusqlite::Connection>>,
}

impl std::fmt::Debug for Inline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inline")
            .field("open", &self.conn.lock().is_some())
            .finish()
    }
}

/// How many statement texts the connection keeps prepared: one per group size of the post
/// insert (its largest group is checked to be smaller where it is defined) and a few more.
pub const CACHED_STATEMENTS: usize = 72;

/// The first wait after `SQLITE_BUSY`, in [`Inline::run`]; each next one doubles, up to
/// [`MAX_BUSY_PAUSE`].
const FIRST_BUSY_PAUSE: Duration = Duration::from_millis(1);

/// The longest single wait after `SQLITE_BUSY`.
const MAX_BUSY_PAUSE: Duration = Duration::from_millis(50);

impl Inline {
    /// Runs `statement` on this connection, on the calling thread (opening the connection to
    /// `pool`'s file first if needed). `statement` may run again after `SQLITE_BUSY`, until
    /// `deadline` (it runs at least once), so it must be one atomic statement or transaction
    /// of its own.
    ///
    /// Errors: [`super::busy`] when SQLite stayed locked by another process until `deadline`;
    /// the connection could not be opened; the statement's own failure, as a
    /// [`super::Failure`] with SQLite's extended result code.
    pub async fn run<T>(
        &self,
        pool: &SqlitePool,
        deadline: Instant,
        mut statement: impl FnMut(&rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> sqlx::Result<T> {
        let started = Instant::now();
        let mut pause = FIRST_BUSY_PAUSE;
        loop {
            let result = {
                let mut kept = self.conn.lock();
                let conn = match kept.take() {
                    Some(conn) => conn,
                    None => open(pool).map_err(to_sqlx)?,
                };
                let result = statement(&conn);
                *kept = Some(conn);
                result
            };
            match result {
                Err(e) if is_busy(&e) => {
                    let now = Instant::now();
                    if now >= deadline {
                        let waited = now.duration_since(started);
                        return Err(super::busy(waited));
                    }
                    tokio::time::sleep(pause.min(deadline - now)).await;
                    pause = (pause * 2).min(MAX_BUSY_PAUSE);
                }
                other => return other.map_err(to_sqlx),
            }
        }
    }
}

/// Opens `pool`'s file with the pool's settings and no busy handler.
fn open(pool: &SqlitePool) -> rusqlite::Result<rusqlite::Connection> {
    let path: PathBuf = pool.connect_options().get_filename().to_owned();
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::ZERO)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
         PRAGMA wal_autocheckpoint = 0;",
    )?;
    conn.set_prepared_statement_cache_capacity(CACHED_STATEMENTS);
    Ok(conn)
}

/// Whether SQLite answered `SQLITE_BUSY` or `SQLITE_LOCKED` (any extended code).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// `e` as the pool's errors read: SQLite's failures as [`super::Failure`], anything else (a
/// column of an unexpected type) as a protocol error.
fn to_sqlx(e: rusqlite::Error) -> sqlx::Error {
    match e {
        rusqlite::Error::SqliteFailure(code, message) => {
            sqlx::Error::Database(Box::new(super::Failure::new(
                code.extended_code,
                message.unwrap_or_else(|| code.to_string()),
            )))
        }
        other => sqlx::Error::Protocol(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh database and its directory (removed on drop).
    struct Dir(PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A deadline as far off as the pool's busy handler waits.
    fn soon() -> Instant {
        Instant::now() + super::super::BUSY_TIMEOUT
    }

    async fn pool() -> (Dir, SqlitePool) {
        let (pool, dir, _serial) = super::super::test_pool().await;
        (Dir(dir), pool)
    }

    #[tokio::test]
    async fn a_write_on_the_inline_connection_is_read_by_the_pool() {
        let (_dir, pool) = pool().await;
        let inline = Inline::default();
        let n = inline
            .run(&pool, soon(), |c| {
                c.execute(
                    "INSERT INTO accounts (name, join_code, created_at, updated_at) VALUES ('Inline', 'abc', 1, 1)",
                    [],
                )
            })
            .await
            .unwrap();
        assert_eq!(n, 1);
        let name: String = sqlx::query_scalar("SELECT name FROM accounts WHERE join_code = 'abc'")
            .fetch_one(&pool)
            .await
            .unwrap();
        assert_eq!(name, "Inline");
        let fk: i64 = inline
            .run(&pool, soon(), |c| {
                c.query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            })
            .await
            .unwrap();
        assert_eq!(fk, 1, "foreign keys are on, as on the pool's connections");
    }

    #[tokio::test]
    async fn a_unique_violation_reads_as_one_and_other_failures_keep_their_code() {
        let (_dir, pool) = pool().await;
        let inline = Inline::default();
        let e = inline
            .run(&pool, soon(), |c| {
                c.execute("INSERT INTO nowhere VALUES (1)", [])
            })
            .await
            .unwrap_err();
        let db = e.as_database_error().expect("a database error");
        assert!(!db.is_unique_violation());
        assert_eq!(db.code().as_deref(), Some("1"), "SQLITE_ERROR");
        inline
            .run(&pool, soon(), |c| {
                c.execute("CREATE TABLE u (k TEXT UNIQUE)", [])
            })
            .await
            .unwrap();
        let twice = |c: &rusqlite::Connection| c.execute("INSERT INTO u VALUES ('k')", []);
        inline.run(&pool, soon(), twice).await.unwrap();
        let e = inline.run(&pool, soon(), twice).await.unwrap_err();
        assert!(e.as_database_error().unwrap().is_unique_violation(), "{e}");
        assert!(!super::super::is_busy(&e));
    }

    #[tokio::test]
    async fn a_database_locked_from_outside_is_waited_for_then_busy() {
        let (dir, pool) = pool().await;
        let other = rusqlite::Connection::open(dir.0.join("hearth.sqlite3")).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let inline = Inline::default();
        let started = Instant::now();
        let e = inline
            .run(&pool, soon(), |c| c.execute("CREATE TABLE t (x)", []))
            .await
            .unwrap_err();
        let waited = started.elapsed();
        assert!(super::super::is_busy(&e), "{e}");
        assert!(waited >= super::super::BUSY_TIMEOUT, "{waited:?}");
        assert!(waited < super::super::BUSY_TIMEOUT * 2, "{waited:?}");
        // Released while the write waits: the write goes through once it is.
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            other.execute_batch("COMMIT").unwrap();
        });
        let started = Instant::now();
        inline
            .run(&pool, soon(), |c| c.execute("CREATE TABLE t (x)", []))
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(100));
        release.await.unwrap();
    }
}
