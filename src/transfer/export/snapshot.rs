//! Hearth's database as the export reads it: one read transaction, so every table is read as
//! of the same instant even while `hearth serve` keeps writing (SQLite's WAL gives a reader
//! the database as it was when its transaction began), and nothing is written to it.

use std::path::Path;

use anyhow::Context as _;
use rusqlite::{Connection, OpenFlags};

/// An open read transaction on Hearth's database.
#[derive(Debug)]
pub struct Snapshot {
    conn: Connection,
}

impl Snapshot {
    /// Opens the database at `path` (never creating it), checks that its schema is this
    /// Hearth's (every migration applied, none unknown) and begins the read transaction.
    ///
    /// # Errors
    /// No database there, not a Hearth database, a schema older or newer than this Hearth's,
    /// or SQLite failing.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        anyhow::ensure!(
            path.is_file(),
            "no Hearth database at {} (give --database as `hearth serve` has it)",
            path.display()
        );
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .with_context(|| format!("opening {}", path.display()))?;
        conn.busy_timeout(crate::db::WRITE_WAIT)?;
        conn.pragma_update(None, "query_only", true)?;
        check_migrations(&conn, path)?;
        conn.execute_batch("BEGIN DEFERRED")?;
        // The first read starts the snapshot; every later query sees the database as it is now.
        conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |r| {
            r.get::<_, i64>(0)
        })?;
        Ok(Self { conn })
    }

    /// The connection, inside the read transaction.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// `SELECT COUNT(*) FROM <from>`.
    ///
    /// # Errors
    /// A query SQLite refuses.
    pub fn count(&self, from: &str) -> anyhow::Result<u64> {
        let n: i64 = self
            .conn
            .query_row(&format!("SELECT COUNT(*) FROM {from}"), [], |r| r.get(0))
            .with_context(|| format!("counting Hearth's {from}"))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

/// Fails unless `conn`'s database has exactly the migrations of this Hearth applied.
fn check_migrations(conn: &Connection, path: &Path) -> anyhow::Result<()> {
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = '_sqlx_migrations')",
        [],
        |r| r.get(0),
    )?;
    anyhow::ensure!(
        has_table,
        "{} is not a Hearth database (it has no _sqlx_migrations table)",
        path.display()
    );
    let mut select = conn.prepare("SELECT version FROM _sqlx_migrations WHERE success")?;
    let applied: Vec<i64> = select
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let known: Vec<i64> = sqlx::migrate!("./migrations")
        .iter()
        .map(|m| m.version)
        .collect();
    if let Some(missing) = known.iter().find(|v| !applied.contains(v)) {
        anyhow::bail!(
            "{} is at an older Hearth schema (migration {missing} is not applied): \
             start this Hearth's `hearth serve` on it once, then export",
            path.display()
        );
    }
    if let Some(unknown) = applied.iter().find(|v| !known.contains(v)) {
        anyhow::bail!(
            "{} was written by a newer Hearth (migration {unknown} is unknown to this one): \
             export it with that Hearth",
            path.display()
        );
    }
    Ok(())
}
