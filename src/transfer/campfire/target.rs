//! Hearth's side of an import: whether its database already holds a team (looked at without
//! changing the file), opening it for the import's one transaction, emptying it for
//! `--replace`, and removing a database file the import made when it fails.

use std::path::{Path, PathBuf};

use anyhow::bail;
use rusqlite::{Connection, OpenFlags};

use super::source::file_uri;

/// What the target database holds before the import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Before {
    /// Whether the file exists.
    pub exists: bool,
    /// Users in it.
    pub users: u64,
    /// Rows of its team (users and accounts): an import refuses such a database unless
    /// `--replace`.
    pub team_rows: u64,
    /// Keys of its blobs on the disk service (their files are removed after a `--replace`).
    pub blob_keys: Vec<String>,
}

/// Looks at the target database without changing it: read-only and, when no write-ahead log
/// is beside it, as an immutable file (no lock or `-shm` file made).
///
/// # Errors
/// A file SQLite cannot read, or one that holds tables but is not Hearth's (no
/// `_sqlx_migrations`).
pub fn look(path: &Path) -> anyhow::Result<Before> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(Before::default());
    };
    if meta.len() == 0 {
        return Ok(Before {
            exists: true,
            ..Before::default()
        });
    }
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    let mode = if std::fs::metadata(wal).is_ok_and(|m| m.len() > 0) {
        "mode=ro"
    } else {
        "immutable=1"
    };
    let conn = Connection::open_with_flags(
        format!("{}?{mode}", file_uri(&path.canonicalize()?)),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )?;
    let has = |table: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [table],
            |row| row.get(0),
        )
    };
    let tables: i64 = conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |row| row.get(0))?;
    if tables > 0 && !has("_sqlx_migrations")? {
        bail!(
            "{}: not a Hearth database (it holds tables, none of Hearth's migrations)",
            path.display()
        );
    }
    let mut before = Before {
        exists: true,
        ..Before::default()
    };
    if has("users")? {
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM users", [], |row| row.get(0))?;
        before.users = u64::try_from(n).unwrap_or(0);
        before.team_rows += before.users;
    }
    if has("accounts")? {
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM accounts", [], |row| row.get(0))?;
        before.team_rows += u64::try_from(n).unwrap_or(0);
    }
    if has("active_storage_blobs")? {
        before.blob_keys = conn
            .prepare("SELECT key FROM active_storage_blobs WHERE service_name = 'local'")?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
    }
    Ok(before)
}

/// Opens the (migrated) target database for the import: foreign keys on, and a busy timeout
/// for a server that was just stopped.
///
/// # Errors
/// SQLite cannot open the file.
pub fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_URI,
    )?;
    conn.busy_timeout(crate::db::WRITE_WAIT)?;
    conn.execute_batch("PRAGMA foreign_keys = ON;")?;
    Ok(conn)
}

/// Hearth's tables a team's rows are in, children first (for `--replace`).
const TEAM_TABLES: &[&str] = &[
    "message_search_index",
    "message_changes",
    "boosts",
    "messages",
    "memberships",
    "rooms",
    "sessions",
    "bans",
    "searches",
    "webhooks",
    "push_subscriptions",
    "active_storage_variant_records",
    "active_storage_attachments",
    "active_storage_blobs",
    "users",
    "accounts",
];

/// Deletes every row of the team already there (inside the import's transaction, with the
/// triggers on messages and boosts set aside), and resets the search index's mark.
///
/// # Errors
/// An SQL error.
pub fn clear(conn: &Connection) -> rusqlite::Result<()> {
    for table in TEAM_TABLES {
        conn.execute(&format!("DELETE FROM main.{table}"), [])?;
    }
    conn.execute(
        "UPDATE main.message_search_progress SET indexed_through = 0",
        [],
    )?;
    Ok(())
}

/// Removes a database file the import made (and its `-wal` and `-shm`), when it failed.
pub fn remove_made(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
