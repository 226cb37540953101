//! The data layer: one SQLite database through sqlx, after Campfire's schema.
//!
//! [`open`] creates the file when missing, turns on WAL, foreign keys and a busy timeout, and
//! applies the migrations in `migrations/`. Each table's queries live in a file of their own.
//! Times are `i64` milliseconds since the Unix epoch, UTC ([`now_ms`]).

pub mod messages;
pub mod rooms;
pub mod seed;
pub mod sessions;
pub mod users;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::SqlitePool;

/// How long a writer waits for SQLite's lock before `SQLITE_BUSY` (Rails' default: 5 s).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens (creating when missing) the database at `path`, with WAL, `synchronous=NORMAL`,
/// foreign keys and [`BUSY_TIMEOUT`], and applies every pending migration.
///
/// Errors: the file cannot be created or opened, or a migration fails.
/// A pool that opens no file and no connection until used: the stand-in of a cable node
/// (`--role cable`), which asks its app node instead of querying.
///
/// # Errors
/// Never in practice (the in-memory URL is a literal).
pub fn unused_pool() -> anyhow::Result<SqlitePool> {
    Ok(SqlitePool::connect_lazy("sqlite::memory:")?)
}

pub async fn open(path: &Path) -> anyhow::Result<SqlitePool> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)?;
        }
    }
    let options = SqliteConnectOptions::from_str("sqlite:")?
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT)
        // Commits never checkpoint; [`spawn_checkpointer`] does it off the request path.
        .pragma("wal_autocheckpoint", "0");
    let pool = SqlitePoolOptions::new()
        .max_connections(8)
        .min_connections(1)
        .connect_with(options)
        .await?;
    sqlx::migrate!("./migrations").run(&pool).await?;
    Ok(pool)
}

/// How often the background checkpointer copies the WAL back into the database file.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

/// Runs `PRAGMA wal_checkpoint(PASSIVE)` every [`CHECKPOINT_INTERVAL`] on its own task.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses the threshold, so one
/// unlucky post pays for copying and syncing a thousand pages. With automatic checkpoints off
/// (see [`open`]) this task does the same work between requests. A passive checkpoint never
/// waits for readers or writers; when the WAL has grown past 64 MiB anyway, a `TRUNCATE`
/// checkpoint resets it.
pub fn spawn_checkpointer(pool: SqlitePool) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(CHECKPOINT_INTERVAL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            if pool.is_closed() {
                return;
            }
            let result: sqlx::Result<(i64, i64, i64)> =
                sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
                    .fetch_one(&pool)
                    .await;
            match result {
                // (busy, frames in the WAL, frames checkpointed); 4 KiB pages.
                Ok((_, log_frames, _)) if log_frames > 16_384 => {
                    let _write = write_lock().await;
                    let _ = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                        .execute(&pool)
                        .await;
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "checkpoint failed"),
            }
        }
    })
}

/// Serializes this process's write transactions.
///
/// SQLite allows one writer at a time. When two connections of the pool try to write at once,
/// the loser waits in SQLite's busy handler, which sleeps in steps of up to 100 ms: a visible
/// stall in post latency. Taking this lock before each write makes writers queue in-process
/// instead, in order and without sleeping. Reads never take it (WAL readers do not block).
static WRITE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Takes the process-wide write lock (see [`WRITE_LOCK`]); hold the guard for the whole write
/// transaction.
pub(crate) async fn write_lock() -> tokio::sync::MutexGuard<'static, ()> {
    WRITE_LOCK.lock().await
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}
