//! The data layer: one SQLite database through sqlx, after Campfire's schema.
//!
//! [`open`] creates the file when missing, turns on WAL, foreign keys and a busy timeout, and
//! applies the migrations in `migrations/`. Each table's queries live in a file of their own.
//! Times are `i64` milliseconds since the Unix epoch, UTC ([`now_ms`]).

pub mod accounts;
pub mod any_rows;
pub mod auth_cache;
pub mod bans;
pub mod blobs;
pub mod bookmarks;
pub mod boosts;
pub mod digests;
pub mod generation;
pub mod inbox;
pub mod inline;
pub mod kinds;
pub mod mail_settings;
pub mod memberships;
pub mod messages;
pub mod push_subscriptions;
pub mod rooms;
pub mod searches;
pub mod seed;
pub mod sessions;
pub mod sign_in_codes;
pub mod sso;
pub mod threads;
pub mod upkeep;
pub mod users;
pub mod webhooks;
pub mod write;

pub use kinds::{Involvement, Role, RoomKind, Status};
pub use write::{Access, One, Write};

/// The database handle: the SQLite pool and what a server keeps beside it, cloned into every
/// handler that reads or writes (an `Arc` clone per field).
#[derive(Clone, Debug)]
pub struct Db {
    /// The SQLite pool ([`open`]).
    pub pool: SqlitePool,
    /// Session and membership answers kept for `--auth-cache-seconds` (or until an access
    /// change in this process).
    pub auth_cache: Arc<auth_cache::AuthCache>,
    /// The posts waiting for the next group commit ([`messages::create_then`]).
    pub commits: messages::GroupCommit,
    /// The account's settings, cached for the layout and the room-creation check.
    pub account_settings: Arc<accounts::SettingsCache>,
    /// Whether any IP address is banned (`bans` has a row): while false, state-changing
    /// requests skip the ban lookup. Set at start and after every ban or unban.
    pub bans_present: Arc<std::sync::atomic::AtomicBool>,
}

impl Db {
    /// The handle over `pool`: an empty auth cache keeping answers for `auth_cache_ttl`, no
    /// posts waiting, the settings not read yet, and `bans_present` as given.
    pub fn new(pool: SqlitePool, auth_cache_ttl: Duration, bans_present: bool) -> Self {
        Self {
            pool,
            auth_cache: Arc::new(auth_cache::AuthCache::new(auth_cache_ttl)),
            commits: messages::GroupCommit::default(),
            account_settings: Arc::default(),
            bans_present: Arc::new(std::sync::atomic::AtomicBool::new(bans_present)),
        }
    }
}

use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection as _, SqliteConnection, SqlitePool};

/// The longest a write waits for the database, in total: first for this process's write
/// lock (`write_lock`, at most [`LOCK_WAIT`]), then for SQLite's lock held by another
/// process (the busy handler, at most [`BUSY_TIMEOUT`]). However many writes are queued, each
/// succeeds or fails with [`busy`] within this bound (Rails' default busy timeout is also 5 s).
pub const WRITE_WAIT: Duration = Duration::from_secs(5);

/// How long SQLite's busy handler waits for a lock held by another connection or process
/// before `SQLITE_BUSY`; the part of [`WRITE_WAIT`] left after [`LOCK_WAIT`].
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a write waits in this process's queue (`write_lock`) before [`busy`].
pub const LOCK_WAIT: Duration = Duration::from_secs(3);

/// `SQLITE_BUSY`, the primary result code of every "database is locked" error.
pub const SQLITE_BUSY: i32 = 5;

/// The error of a write that found the database locked for the whole of its wait (`waited`,
/// at most [`WRITE_WAIT`]): another process (a backup, the `sqlite3` shell, a migration) holds
/// SQLite's write lock. A [`Failure`] with SQLite's code `5` (`SQLITE_BUSY`) and the message
/// "database is locked (waited N ms for the write lock)", so callers returning `sqlx::Result`
/// pass it on unchanged; [`is_busy`] recognizes it and SQLite's own.
pub fn busy(waited: Duration) -> sqlx::Error {
    let waited_ms = u64::try_from(waited.as_millis()).unwrap_or(u64::MAX);
    sqlx::Error::Database(Box::new(Failure {
        extended_code: SQLITE_BUSY,
        message: format!("database is locked (waited {waited_ms} ms for the write lock)"),
    }))
}

/// A failure SQLite reported, or [`busy`]: SQLite's extended result code
/// (<https://sqlite.org/rescode.html>) and its message. A unique index's
/// `SQLITE_CONSTRAINT_UNIQUE` reads as [`sqlx::error::DatabaseError::is_unique_violation`], a
/// foreign key's as `is_foreign_key_violation`, as sqlx's own SQLite errors do.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    extended_code: i32,
    message: String,
}

impl Failure {
    /// A failure with SQLite's extended result code `extended_code` and `message`.
    pub fn new(extended_code: i32, message: String) -> Self {
        Self {
            extended_code,
            message,
        }
    }
}

/// `SQLITE_CONSTRAINT_UNIQUE` and `SQLITE_CONSTRAINT_PRIMARYKEY`.
const UNIQUE: [i32; 2] = [2067, 1555];
/// `SQLITE_CONSTRAINT_FOREIGNKEY`.
const FOREIGN_KEY: i32 = 787;
/// `SQLITE_CONSTRAINT_NOTNULL`.
const NOT_NULL: i32 = 1299;
/// `SQLITE_CONSTRAINT_CHECK`.
const CHECK: i32 = 275;

impl sqlx::error::DatabaseError for Failure {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(std::borrow::Cow::Owned(self.extended_code.to_string()))
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> sqlx::error::ErrorKind {
        match self.extended_code {
            c if UNIQUE.contains(&c) => sqlx::error::ErrorKind::UniqueViolation,
            FOREIGN_KEY => sqlx::error::ErrorKind::ForeignKeyViolation,
            NOT_NULL => sqlx::error::ErrorKind::NotNullViolation,
            CHECK => sqlx::error::ErrorKind::CheckViolation,
            _ => sqlx::error::ErrorKind::Other,
        }
    }
}

/// Whether `error` means the database was locked past the wait: [`busy`], or SQLite's
/// `SQLITE_BUSY` and its extended codes (`SQLITE_BUSY_SNAPSHOT` = 517, …; the primary code is
/// the low byte), or `SQLITE_LOCKED` (6).
pub fn is_busy(error: &sqlx::Error) -> bool {
    primary_code(error).is_some_and(|code| matches!(code, SQLITE_BUSY | 6))
}

/// Whether `error` is SQLite's `SQLITE_SCHEMA` (17): another process changed the schema while
/// a statement was compiled, more often than SQLite compiles it again on its own (once while
/// compiling, 50 times while running).
pub(crate) fn is_schema_changed(error: &sqlx::Error) -> bool {
    primary_code(error) == Some(SQLITE_SCHEMA)
}

/// `SQLITE_SCHEMA`, the result code of "database schema has changed".
const SQLITE_SCHEMA: i32 = 17;

/// The primary SQLite result code of a database error (the low byte of an extended code), or
/// None for any other error.
fn primary_code(error: &sqlx::Error) -> Option<i32> {
    let sqlx::Error::Database(db) = error else {
        return None;
    };
    db.code()?.parse::<i32>().ok().map(|code| code & 0xff)
}

/// A pool that opens no file and no connection until used: the stand-in of a cable node
/// (`--role cable`), which asks its app node instead of querying.
///
/// # Errors
/// Never in practice (the in-memory URL is a literal).
pub fn unused_pool() -> anyhow::Result<SqlitePool> {
    Ok(SqlitePool::connect_lazy("sqlite::memory:")?)
}

/// Opens (creating when missing) the database at `path`, with WAL, `synchronous=NORMAL`,
/// foreign keys and [`BUSY_TIMEOUT`], and applies every pending migration.
///
/// Errors: the file cannot be created or opened, or a migration fails.
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

/// Past this size, and only once a passive checkpoint has copied every frame, the checkpointer
/// truncates the WAL file (`wal_checkpoint(TRUNCATE)`), in bytes: 64 MiB. Below it, the file
/// is kept and written over from its start (`wal_checkpoint(RESTART)`, see
/// [`spawn_checkpointer_with`]).
///
/// A truncated WAL has no pages in the kernel's cache: every frame written until the file is
/// as long again allocates a page of the cache and a block of the file system, which was half
/// of a post's insert when the file was truncated at 4 MiB (at 400 posts/s a second's frames
/// are about 14 MB, so it was truncated every second). Only a WAL that a second of posts cannot
/// explain, one a long reader let grow, is truncated.
pub const WAL_TRUNCATE_BYTES: u64 = 64 * 1024 * 1024;

/// Frames in the WAL (4 KiB each) past which the checkpointer makes sure the next commit writes
/// the WAL from its start (`wal_checkpoint(RESTART)`, see [`spawn_checkpointer_with`]): 4 MiB,
/// about 120 posts in a second. Below it, a passive checkpoint usually finds no commit under
/// way and SQLite starts over by itself, and the blocking checkpoint's few milliseconds with
/// the write lock held are not worth a post's wait.
pub const RESTART_FRAMES: i64 = 1000;

/// How long a blocking (`RESTART` or `TRUNCATE`) checkpoint may wait for this process's write
/// lock, and then for a reader or writer, before giving up. It holds the lock meanwhile, so a
/// post waits at most this plus the checkpoint's own work: copying the frames written since the
/// passive checkpoint (a few milliseconds under load), and for `TRUNCATE` emptying the file
/// (170 ms measured for a 245 MB WAL).
pub const BLOCKING_CHECKPOINT_WAIT: Duration = Duration::from_millis(100);

/// What the checkpointer last saw, for `/metrics`: shared between [`spawn_checkpointer_with`]
/// and [`crate::metrics::Metrics`]. Plain atomics, updated once per [`CHECKPOINT_INTERVAL`].
#[derive(Debug, Default)]
pub struct WalStats {
    wal_bytes: AtomicU64,
    lag_frames: AtomicU64,
    last_complete_ms: AtomicI64,
    truncations: AtomicU64,
    restarts: AtomicU64,
}

impl WalStats {
    /// Size of the `-wal` file at the last check, in bytes.
    pub fn wal_bytes(&self) -> u64 {
        self.wal_bytes.load(Ordering::Relaxed)
    }

    /// WAL frames not yet copied into the database file after the last passive checkpoint
    /// (frames a reader's snapshot still pins, or written since).
    pub fn lag_frames(&self) -> u64 {
        self.lag_frames.load(Ordering::Relaxed)
    }

    /// Seconds since a checkpoint last copied every frame; 0 before the first check.
    pub fn seconds_since_complete(&self) -> f64 {
        let last = self.last_complete_ms.load(Ordering::Relaxed);
        if last == 0 {
            return 0.0;
        }
        (now_ms() - last).max(0) as f64 / 1000.0
    }

    /// `TRUNCATE` checkpoints done.
    pub fn truncations(&self) -> u64 {
        self.truncations.load(Ordering::Relaxed)
    }

    /// `RESTART` checkpoints done: each left the WAL for the next commit to write over from
    /// its start.
    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }
}

/// [`spawn_checkpointer_with`], with statistics nobody reads.
pub fn spawn_checkpointer(pool: SqlitePool) -> tokio::task::JoinHandle<()> {
    spawn_checkpointer_with(pool, Arc::new(WalStats::default()))
}

/// Runs `PRAGMA wal_checkpoint(PASSIVE)` every [`CHECKPOINT_INTERVAL`] on its own task and
/// records what it saw in `stats`.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses the threshold, so one
/// unlucky post pays for copying and syncing a thousand pages. With automatic checkpoints off
/// (see [`open`]) this task does the same work between requests. A passive checkpoint never
/// waits for readers or writers, but under a steady stream of posts it never leaves the WAL
/// wholly copied either (frames are appended while it copies), and SQLite writes the WAL from
/// its start again only when it is: without more, the file grows by every frame, each on a new
/// page. So when the passive checkpoint copied every frame it saw (no reader's snapshot pins
/// the WAL), a blocking one follows that can finish at once: `RESTART` (the frames written
/// since are copied, and the next commit writes from the file's start) when more than
/// [`RESTART_FRAMES`] were written since the last, or `TRUNCATE` (the same, the file emptied)
/// when the file has grown past [`WAL_TRUNCATE_BYTES`]. It waits its turn for this process's
/// write lock for at most [`BLOCKING_CHECKPOINT_WAIT`], and runs on its own connection whose
/// busy handler gives up after as long. So a long reader (an open read transaction, a backup)
/// lets the WAL grow (watch `hearth_sqlite_wal_bytes`) but never stalls posts.
pub fn spawn_checkpointer_with(
    pool: SqlitePool,
    stats: Arc<WalStats>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let options = pool.connect_options();
        let wal_path = {
            let mut p = options.get_filename().as_os_str().to_owned();
            p.push("-wal");
            std::path::PathBuf::from(p)
        };
        let blocking_options = (*options).clone().busy_timeout(BLOCKING_CHECKPOINT_WAIT);
        let mut blocking: Option<SqliteConnection> = None;
        // The WAL's length in frames when a blocking checkpoint last left it to be written
        // over: until a commit does, the passive checkpoint sees the same wholly copied WAL.
        let mut restarted_at: Option<i64> = None;
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
            let wal_bytes = std::fs::metadata(&wal_path).map(|m| m.len()).unwrap_or(0);
            stats.wal_bytes.store(wal_bytes, Ordering::Relaxed);
            // (busy, frames in the WAL, frames checkpointed).
            let (log_frames, done_frames) = match result {
                Ok((_, log, done)) => (log, done),
                Err(e) => {
                    tracing::warn!(error = %e, "checkpoint failed");
                    continue;
                }
            };
            let lag = u64::try_from(log_frames.saturating_sub(done_frames)).unwrap_or(0);
            stats.lag_frames.store(lag, Ordering::Relaxed);
            if lag > 0 {
                continue;
            }
            stats.last_complete_ms.store(now_ms(), Ordering::Relaxed);
            let truncate = wal_bytes > WAL_TRUNCATE_BYTES;
            if !truncate && (log_frames < RESTART_FRAMES || restarted_at == Some(log_frames)) {
                // Few frames (SQLite starts over by itself between commits), or none written
                // since the last restart.
                continue;
            }
            // Posts hold the lock often, so wait for it (in their queue) rather than try once.
            let Ok(_write) =
                write_lock_until(std::time::Instant::now() + BLOCKING_CHECKPOINT_WAIT).await
            else {
                continue;
            };
            if blocking.is_none() {
                match SqliteConnection::connect_with(&blocking_options).await {
                    Ok(conn) => blocking = Some(conn),
                    Err(e) => {
                        tracing::warn!(error = %e, "checkpoint connection failed");
                        continue;
                    }
                }
            }
            let Some(conn) = blocking.as_mut() else {
                continue;
            };
            let pragma = if truncate {
                "PRAGMA wal_checkpoint(TRUNCATE)"
            } else {
                "PRAGMA wal_checkpoint(RESTART)"
            };
            let restarted: sqlx::Result<(i64, i64, i64)> =
                sqlx::query_as(pragma).fetch_one(&mut *conn).await;
            match restarted {
                Ok((0, _, _)) if truncate => {
                    restarted_at = None;
                    stats.truncations.fetch_add(1, Ordering::Relaxed);
                    stats.wal_bytes.store(
                        std::fs::metadata(&wal_path).map(|m| m.len()).unwrap_or(0),
                        Ordering::Relaxed,
                    );
                }
                Ok((0, log, _)) => {
                    restarted_at = Some(log);
                    stats.restarts.fetch_add(1, Ordering::Relaxed);
                }
                Ok(_) => tracing::debug!(pragma, "blocking checkpoint skipped: database busy"),
                Err(e) => tracing::debug!(pragma, error = %e, "blocking checkpoint failed"),
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
///
/// Errors: [`busy`] (as a `sqlx::Error`, see [`is_busy`]) when the lock is not free within
/// [`LOCK_WAIT`]: the writes ahead are themselves stuck on a database locked from outside, and
/// waiting behind each of them in turn would add their waits up.
pub(crate) async fn write_lock() -> sqlx::Result<tokio::sync::MutexGuard<'static, ()>> {
    write_lock_until(std::time::Instant::now() + LOCK_WAIT).await
}

/// [`write_lock`] with its own bound: [`busy`] when the lock is not free by `deadline`.
pub(crate) async fn write_lock_until(
    deadline: std::time::Instant,
) -> sqlx::Result<tokio::sync::MutexGuard<'static, ()>> {
    let started = std::time::Instant::now();
    match tokio::time::timeout_at(deadline.into(), WRITE_LOCK.lock()).await {
        Ok(guard) => Ok(guard),
        Err(_) => Err(busy(started.elapsed())),
    }
}

/// Begins a write transaction (`BEGIN IMMEDIATE`) on a connection whose schema is current, for
/// writes whose statements reach the full-text index (migration 0006) through triggers: hold
/// [`write_lock`] first, then commit.
///
/// A connection keeps the schema it last read and learns of another process's schema change
/// (a `CREATE TABLE` from the `sqlite3` shell, a backup tool) only when a statement runs.
/// Compiling a statement against such a stale schema is normally harmless: the statement fails
/// with `SQLITE_SCHEMA` when it starts, and SQLite reads the schema again and recompiles it.
/// But compiling a write on `messages` also compiles its triggers (since migration 0009 an
/// edit's and a delete's reach the full-text index, a post's no longer do), and one that
/// writes to the FTS5 table connects that virtual table if this connection has not yet done so since it
/// last read the schema. FTS5 reads its configuration with a statement of its own, which meets
/// the schema change and fails with `SQLITE_SCHEMA`; SQLite postpones resetting the schema
/// until the connect returns, but the next trigger's table lookup marks the stale schema as
/// checked. When the compile then fails and SQLite retries it once after the postponed reset,
/// that mark makes it skip reading the schema again, so it finds no tables at all and fails
/// with `no such table: messages` (SQLite 3.51.3 and 3.40.1 alike; no retry follows).
///
/// Here the `SELECT` on `sqlite_schema` runs inside the transaction, before any such statement
/// is compiled: it checks the schema cookie, and a stale schema is read again at that point.
/// `BEGIN IMMEDIATE` holds the database's write lock, so no other process can change the
/// schema again before the commit.
///
/// Errors: [`busy`]-class `SQLITE_BUSY` when another process holds the write lock past
/// [`BUSY_TIMEOUT`], or any other database failure.
pub(crate) async fn begin_write(
    pool: &SqlitePool,
) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
    // One round trip: SQLite runs both statements, the second compiled after the first ran.
    pool.begin_with("BEGIN IMMEDIATE; SELECT 1 FROM sqlite_schema LIMIT 1")
        .await
}

/// Begins a read transaction on a connection whose schema is current, for reads of the
/// full-text index (`message_search_index`, migration 0006).
///
/// A statement that reads an FTS5 table connects it on the connection's schema, and FTS5 then
/// reads its own configuration with a statement of its own. When another process changes the
/// schema between the two (a `CREATE TABLE` from the `sqlite3` shell, a bulk import), the
/// connect fails with `SQLITE_SCHEMA` ("vtable constructor failed") and SQLite does not retry
/// it. Here the `SELECT` on `sqlite_schema` starts the read (its snapshot) and reads the schema
/// again if it is stale; every statement of the transaction then sees that one schema.
///
/// Errors: any database failure.
pub(crate) async fn begin_read(
    pool: &SqlitePool,
) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Sqlite>> {
    // One round trip, as in `begin_write`; a deferred `BEGIN` takes no lock until the `SELECT`.
    pool.begin_with("BEGIN; SELECT 1 FROM sqlite_schema LIMIT 1")
        .await
}

/// A freshly migrated database in a directory of its own, for the data layer's unit tests,
/// with a guard that runs those tests one at a time (they share the process's [`WRITE_LOCK`],
/// which one of them holds past [`LOCK_WAIT`]); remove the directory when done.
#[cfg(test)]
pub(crate) async fn test_pool() -> (
    SqlitePool,
    std::path::PathBuf,
    tokio::sync::MutexGuard<'static, ()>,
) {
    static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let serial = SERIAL.lock().await;
    // One directory per test, removed by the test.
    let dir = std::env::temp_dir().join(format!(
        "hearth-db-{}-{}",
        std::process::id(),
        rand::random::<u64>()
    ));
    let pool = open(&dir.join("hearth.sqlite3")).await.expect("open");
    (pool, dir, serial)
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod ids_are_never_reused {
    /// Inserts a row with `sql` and returns its id.
    async fn insert(pool: &sqlx::SqlitePool, sql: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(pool)
            .await
            .expect("insert")
    }

    #[tokio::test]
    async fn a_deleted_last_user_room_or_message_leaves_its_id_unused() {
        let (pool, dir, _serial) = super::test_pool().await;
        let user =
            "INSERT INTO users (name, created_at, updated_at) VALUES ('u', 1, 1) RETURNING id";
        let room = "INSERT INTO rooms (name, kind, created_at, updated_at) \
                    VALUES ('r', 'closed', 1, 1) RETURNING id";
        let u1 = insert(&pool, user).await;
        let r1 = insert(&pool, room).await;
        let message = format!(
            "INSERT INTO messages (room_id, creator_id, client_message_id, body, created_at, \
             updated_at) VALUES ({r1}, {u1}, hex(randomblob(8)), 'hi', 1, 1) RETURNING id"
        );
        let m1 = insert(&pool, &message).await;
        // The triggers kept through the table rebuild still run.
        let changes: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM message_changes WHERE message_id = ?")
                .bind(m1)
                .fetch_one(&pool)
                .await
                .expect("count");
        assert_eq!(changes, 1);
        for (table, id) in [("messages", m1), ("rooms", r1), ("users", u1)] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE id = ?"
            )))
            .bind(id)
            .execute(&pool)
            .await
            .expect("delete");
        }
        let u2 = insert(&pool, user).await;
        let r2 = insert(&pool, room).await;
        let m2 = insert(
            &pool,
            &message.replace(
                &format!("VALUES ({r1}, {u1},"),
                &format!("VALUES ({r2}, {u2},"),
            ),
        )
        .await;
        assert!(
            u2 > u1 && r2 > r1 && m2 > m1,
            "{u1}->{u2} {r1}->{r2} {m1}->{m2}"
        );
        let broken: Vec<(String, i64, String, i64)> = sqlx::query_as("PRAGMA foreign_key_check")
            .fetch_all(&pool)
            .await
            .expect("check");
        assert!(broken.is_empty(), "{broken:?}");
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }
}
