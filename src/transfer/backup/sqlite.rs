//! The database questions of a backup and a restore, each on a connection of its own (never
//! Hearth's pool: a backup must not migrate or checkpoint the live database, and a restore reads
//! files that are not in place yet).

use std::path::Path;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Connection as _, SqliteConnection};

use crate::transfer::Counts;

/// Opens the existing database at `path`, read-only when `read_only` (the live database a
/// backup reads), with Hearth's busy timeout; never creates it and never changes its journal
/// mode.
///
/// # Errors
/// No file at `path`, or not a database SQLite opens.
pub async fn connect(path: &Path, read_only: bool) -> anyhow::Result<SqliteConnection> {
    anyhow::ensure!(path.is_file(), "no database at {}", path.display());
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(false)
        .read_only(read_only)
        .busy_timeout(crate::db::BUSY_TIMEOUT);
    Ok(SqliteConnection::connect_with(&options).await?)
}

/// Rows per table: every table of `sqlite_schema` but SQLite's own, the full-text index and
/// the FTS5 tables behind it (rebuilt from `messages`, and read only through the module).
///
/// # Errors
/// A query that fails.
pub async fn table_counts(conn: &mut SqliteConnection) -> anyhow::Result<Counts> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT t.name FROM sqlite_schema AS t
          WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
            AND t.sql NOT LIKE 'CREATE VIRTUAL TABLE%'
            AND NOT EXISTS (SELECT 1 FROM sqlite_schema AS v
                             WHERE v.type = 'table' AND v.sql LIKE 'CREATE VIRTUAL TABLE%'
                               AND t.name LIKE v.name || '\\_%' ESCAPE '\\')
          ORDER BY t.name",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut counts = Counts::default();
    for table in tables {
        let sql = format!("SELECT COUNT(*) FROM \"{}\"", table.replace('"', "\"\""));
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&mut *conn)
            .await?;
        counts.add(&table, u64::try_from(n).unwrap_or(0));
    }
    Ok(counts)
}

/// The migrations applied to the database (`_sqlx_migrations`, successful ones), ascending.
///
/// # Errors
/// No such table: not a Hearth database.
pub async fn migrations(conn: &mut SqliteConnection) -> anyhow::Result<Vec<i64>> {
    sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| anyhow::anyhow!("not a Hearth database (no migrations table): {e}"))
}

/// Checks that every migration applied to the database is one this Hearth has, so that
/// `hearth serve` starts on it (it applies the missing newer ones itself).
///
/// # Errors
/// A migration this Hearth does not know, named with the newest it knows.
pub fn known_migrations(applied: &[i64]) -> anyhow::Result<()> {
    let ours = sqlx::migrate!("./migrations");
    let known: Vec<i64> = ours.iter().map(|m| m.version).collect();
    let newest = known.iter().max().copied().unwrap_or(0);
    if let Some(unknown) = applied.iter().find(|v| !known.contains(v)) {
        anyhow::bail!(
            "the backup's database has migration {unknown}, which this Hearth does not know \
             (its newest is {newest}): restore it with the Hearth that took it, or a newer one"
        );
    }
    Ok(())
}

/// SQLite's `PRAGMA quick_check`: the b-trees and their pages are whole.
///
/// # Errors
/// Anything but `ok`, with SQLite's first complaints.
pub async fn quick_check(conn: &mut SqliteConnection) -> anyhow::Result<()> {
    let rows: Vec<String> = sqlx::query_scalar("PRAGMA quick_check(10)")
        .fetch_all(&mut *conn)
        .await?;
    anyhow::ensure!(
        rows == ["ok"],
        "the database fails SQLite's check: {}",
        rows.join("; ")
    );
    Ok(())
}

/// How many accounts and users the database holds (a team is there when either is not 0); a
/// database without those tables (an empty file) holds none.
///
/// # Errors
/// A query that fails.
pub async fn team_size(conn: &mut SqliteConnection) -> anyhow::Result<(i64, i64)> {
    let tables: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('accounts', 'users')",
    )
    .fetch_one(&mut *conn)
    .await?;
    if tables < 2 {
        return Ok((0, 0));
    }
    Ok(
        sqlx::query_as("SELECT (SELECT COUNT(*) FROM accounts), (SELECT COUNT(*) FROM users)")
            .fetch_one(&mut *conn)
            .await?,
    )
}

/// A blob of the snapshot: what its file must be.
#[derive(Debug, Clone)]
pub struct BlobRow {
    /// Active Storage's `key`.
    pub key: String,
    /// `service_name` (`local` for the disk service).
    pub service_name: String,
    /// `byte_size`.
    pub byte_size: i64,
    /// `checksum`, base64 MD5 (NULL for some of Rails' own rows).
    pub checksum: Option<String>,
    /// Whether an `active_storage_attachments` row uses it.
    pub attached: bool,
}

/// Every blob of the database, by id.
///
/// # Errors
/// A query that fails.
pub async fn blobs(conn: &mut SqliteConnection) -> anyhow::Result<Vec<BlobRow>> {
    let rows: Vec<(String, String, i64, Option<String>, bool)> = sqlx::query_as(
        "SELECT b.key, b.service_name, b.byte_size, b.checksum,
                EXISTS (SELECT 1 FROM active_storage_attachments AS a WHERE a.blob_id = b.id)
           FROM active_storage_blobs AS b ORDER BY b.id",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(key, service_name, byte_size, checksum, attached)| BlobRow {
                key,
                service_name,
                byte_size,
                checksum,
                attached,
            },
        )
        .collect())
}
