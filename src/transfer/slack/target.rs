//! The database an import writes: looked at read-only first (does it hold a team?), then
//! opened and migrated as `hearth serve` opens it ([`crate::db::open`]).
//!
//! A refused import leaves the database's file as it was, byte for byte: the check opens it
//! read-only, and nothing opens it for writing before the export has been read through. A
//! database file the import created and then could not fill is removed again.

use std::path::{Path, PathBuf};
use std::str::FromStr as _;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions as _, Connection as _};

/// What the target database holds before the import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// No file yet.
    Missing,
    /// A database without a team: no account and no user.
    Empty,
    /// A team: an account or a user.
    Team,
}

/// What `path` holds, read without writing it.
///
/// # Errors
/// The file exists but is not a SQLite database that can be read.
pub async fn look(path: &Path) -> anyhow::Result<Found> {
    if !path.exists() {
        return Ok(Found::Missing);
    }
    // Without a `-wal` file every committed page is in the database file: read it as
    // immutable, which creates no `-wal` or `-shm` beside it. With one (a server running, or
    // one that stopped uncleanly) read through it; its files exist already.
    let settled = !sibling(path, "-wal").exists();
    let options = SqliteConnectOptions::from_str("sqlite:")?
        .filename(path)
        .read_only(true)
        .immutable(settled)
        .create_if_missing(false);
    let mut conn = options
        .connect()
        .await
        .map_err(|e| anyhow::anyhow!("{} cannot be read as a database: {e}", path.display()))?;
    let tables: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('users', 'accounts')",
    )
    .fetch_one(&mut conn)
    .await
    .map_err(|e| anyhow::anyhow!("{} cannot be read as a database: {e}", path.display()))?;
    let team = if tables == 2 {
        sqlx::query_scalar::<_, bool>(
            "SELECT EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM accounts)",
        )
        .fetch_one(&mut conn)
        .await?
    } else {
        false
    };
    conn.close().await?;
    Ok(if team { Found::Team } else { Found::Empty })
}

/// `path` with `suffix` appended (`hearth.sqlite3-wal`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// The error of an import into a database that holds a team, without `--replace`.
pub fn refuse_team(path: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{} already holds a team: refusing to import into it (nothing was changed). Import into \
         a new database, or pass --replace to replace the team it holds",
        path.display()
    )
}

/// Removes a database file this import created (and its `-wal` and `-shm`), when dropped
/// before [`Created::keep`].
#[derive(Debug)]
pub struct Created(Option<PathBuf>);

impl Created {
    /// Watches `path` when `found` says the import is creating it.
    pub fn new(path: &Path, found: Found) -> Self {
        Self((found == Found::Missing).then(|| path.to_path_buf()))
    }

    /// The import is done: the file stays.
    pub fn keep(mut self) {
        self.0 = None;
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(sibling(&path, suffix));
            }
        }
    }
}
