//! Campfire's `db/production.sqlite3`, written from the snapshot of Hearth's database in one
//! transaction: the schema, every table's rows, the search index and the id sequences; then
//! checked (foreign keys, and each table's rows counted against Hearth's).

use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::Context as _;
use rusqlite::Connection;

use super::snapshot::Snapshot;
use super::tables::{SEARCH_INDEX, TABLES};
use super::{rows, schema, search};
use crate::transfer::Progress;

/// One table's rows in Hearth and in the export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compared {
    /// Campfire's table.
    pub table: &'static str,
    /// Rows Hearth holds for it.
    pub hearth: u64,
    /// Rows the export holds.
    pub campfire: u64,
}

/// Rows Hearth holds for each table of the export, in the snapshot.
///
/// # Errors
/// A query SQLite refuses.
pub fn source_counts(snapshot: &Snapshot) -> anyhow::Result<Vec<(&'static str, u64)>> {
    let mut counts = Vec::with_capacity(TABLES.len() + 1);
    for table in TABLES {
        counts.push((table.campfire, snapshot.count(table.hearth)?));
    }
    counts.push((SEARCH_INDEX, snapshot.count("messages")?));
    Ok(counts)
}

/// Writes the database at `path` from `snapshot`, `now` being the metadata's stamp.
///
/// # Errors
/// SQLite refusing a statement (named with the table and row), a foreign key of the export
/// that names no row, or an interruption.
pub fn write(
    snapshot: &Snapshot,
    path: &Path,
    now: &str,
    progress: &mut Progress,
    interrupted: &AtomicBool,
) -> anyhow::Result<()> {
    let mut target =
        Connection::open(path).with_context(|| format!("creating {}", path.display()))?;
    let tx = target.transaction()?;
    schema::create(&tx, now).context("creating Campfire's schema")?;
    for table in TABLES {
        rows::copy(snapshot.conn(), &tx, table, progress, interrupted)?;
    }
    search::write(snapshot.conn(), &tx, progress, interrupted)?;
    rows::continue_sequences(snapshot.conn(), &tx, TABLES)?;
    check_foreign_keys(&tx)?;
    rows::check(interrupted)?;
    tx.commit()?;
    target
        .close()
        .map_err(|(_, e)| e)
        .context("closing the export's database")?;
    Ok(())
}

/// Fails on the first row of the export whose foreign key names no row.
fn check_foreign_keys(conn: &Connection) -> anyhow::Result<()> {
    let mut check = conn.prepare("PRAGMA foreign_key_check")?;
    let mut rows = check.query([])?;
    if let Some(row) = rows.next()? {
        let table: String = row.get(0)?;
        let id: Option<i64> = row.get(1)?;
        let parent: String = row.get(2)?;
        anyhow::bail!(
            "Hearth's {table} row {} names a {parent} row that does not exist",
            id.map_or_else(|| "?".to_owned(), |id| id.to_string())
        );
    }
    Ok(())
}

/// Counts each table of the written database at `path` against `hearth`'s counts.
///
/// # Errors
/// The database cannot be read.
pub fn compare(path: &Path, hearth: &[(&'static str, u64)]) -> anyhow::Result<Vec<Compared>> {
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut out = Vec::with_capacity(hearth.len());
    for &(table, n) in hearth {
        let campfire: i64 =
            conn.query_row(&format!("SELECT COUNT(*) FROM \"{table}\""), [], |r| {
                r.get(0)
            })?;
        out.push(Compared {
            table,
            hearth: n,
            campfire: u64::try_from(campfire).unwrap_or(0),
        });
    }
    Ok(out)
}

/// The rows the export writes: every table's, and the search index's.
pub fn total_rows(counts: &[(&'static str, u64)]) -> u64 {
    counts.iter().map(|(_, n)| n).sum()
}
