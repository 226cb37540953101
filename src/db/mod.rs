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
        .busy_timeout(BUSY_TIMEOUT);
    let pool = SqlitePoolOptions::new()
        .max_connections(8)
        .min_connections(1)
        .connect_with(options)
        .await?;
    sqlx::migrate!("./migrations").run(&pool).await?;
    Ok(pool)
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}
