//! Reading a Campfire `storage/` directory without changing it: where its database and files
//! are, opening the database read-only, and the checks made before anything is written (the
//! file is a whole SQLite database, its schema is the one this Hearth reads, every value is one
//! Rails writes).
//!
//! Campfire's paths are its `config/database.yml` (`storage/db/production.sqlite3`) and
//! `config/storage.yml` (the disk service `local` at `storage/files`, a blob at
//! `files/<key[0,2]>/<key[2,4]>/<key>`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use rusqlite::{Connection, OpenFlags};

use crate::transfer::CAMPFIRE_SCHEMA_VERSION;

/// The schema versions of Campfire this importer reads (`version:` of `db/schema.rb`, the
/// largest row of `schema_migrations`).
pub const KNOWN_SCHEMA_VERSIONS: &[&str] = &[CAMPFIRE_SCHEMA_VERSION];

/// The schema name the Campfire database is attached under, in every query of this importer.
pub const SCHEMA: &str = "campfire";

/// A Campfire `storage/` directory.
#[derive(Debug, Clone)]
pub struct Storage {
    /// `<dir>/db/production.sqlite3`.
    pub database: PathBuf,
    /// `<dir>/files`, the root of the disk service `local`.
    pub files: PathBuf,
}

impl Storage {
    /// The directory `dir`, which must hold `db/production.sqlite3`.
    ///
    /// # Errors
    /// No such directory or database file.
    pub fn at(dir: &Path) -> anyhow::Result<Self> {
        let dir = dir
            .canonicalize()
            .with_context(|| format!("{}: no such Campfire storage directory", dir.display()))?;
        let database = dir.join("db").join("production.sqlite3");
        if !database.is_file() {
            bail!(
                "{}: no Campfire database here (a Campfire storage/ directory holds db/production.sqlite3)",
                database.display()
            );
        }
        Ok(Self {
            database,
            files: dir.join("files"),
        })
    }

    /// The SQLite URI that opens the database read-only: `immutable=1` (no lock, no `-shm` or
    /// `-wal` file made beside it) when Campfire left no write-ahead log, as a stopped server
    /// does; `mode=ro` when a log is there, so that what it holds is read too.
    pub fn uri(&self) -> String {
        let wal = PathBuf::from(format!("{}-wal", self.database.display()));
        let has_log = std::fs::metadata(wal).is_ok_and(|m| m.len() > 0);
        let mode = if has_log { "mode=ro" } else { "immutable=1" };
        format!("{}?{mode}", file_uri(&self.database))
    }
}

/// `path` as an SQLite `file:` URI (percent-encoded but for unreserved characters and `/`).
pub fn file_uri(path: &Path) -> String {
    const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'/')
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~');
    let bytes = path.as_os_str().as_encoded_bytes();
    format!("file:{}", percent_encoding::percent_encode(bytes, KEEP))
}

/// An in-memory connection with the Campfire database attached read-only as [`SCHEMA`], for
/// the checks and counts that need no target.
///
/// # Errors
/// SQLite cannot open or attach the file.
pub fn attached(storage: &Storage) -> anyhow::Result<Connection> {
    let conn = Connection::open_in_memory_with_flags(
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_URI,
    )?;
    attach(&conn, storage)?;
    Ok(conn)
}

/// Attaches the Campfire database to `conn` as [`SCHEMA`], read-only.
///
/// # Errors
/// SQLite cannot open the file.
pub fn attach(conn: &Connection, storage: &Storage) -> anyhow::Result<()> {
    conn.execute(&format!("ATTACH DATABASE ?1 AS {SCHEMA}"), [storage.uri()])
        .with_context(|| format!("opening {}", storage.database.display()))?;
    Ok(())
}

/// The temporary table of the ids of Campfire's push subscriptions that Hearth's own form
/// refuses ([`crate::push::validate`], loopback not allowed): plain HTTP, an endpoint on this
/// machine or a private network (e.g. the cloud's metadata address), keys that do not decode.
/// Campfire stores any endpoint a browser sends; the server would POST notifications there.
pub const PUSH_REFUSED: &str = "temp.campfire_push_refused";

/// Fills [`PUSH_REFUSED`] from the attached database (after its schema was checked; before
/// the rows are counted or copied).
///
/// # Errors
/// An SQL error.
pub fn note_refused_pushes(conn: &Connection) -> anyhow::Result<()> {
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {PUSH_REFUSED} (id INTEGER PRIMARY KEY); DELETE FROM {PUSH_REFUSED};"
    ))?;
    let mut read = conn.prepare(&format!(
        "SELECT id, endpoint, p256dh_key, auth_key FROM {SCHEMA}.push_subscriptions \
         WHERE endpoint IS NOT NULL AND p256dh_key IS NOT NULL AND auth_key IS NOT NULL"
    ))?;
    let mut write = conn.prepare(&format!("INSERT INTO {PUSH_REFUSED} (id) VALUES (?1)"))?;
    let mut rows = read.query([])?;
    while let Some(row) = rows.next()? {
        let endpoint = String::from_utf8_lossy(row.get_ref(1)?.as_bytes().unwrap_or_default());
        let p256dh = String::from_utf8_lossy(row.get_ref(2)?.as_bytes().unwrap_or_default());
        let auth = String::from_utf8_lossy(row.get_ref(3)?.as_bytes().unwrap_or_default());
        if crate::push::validate(&endpoint, &p256dh, &auth, false).is_err() {
            write.execute([row.get::<_, i64>(0)?])?;
        }
    }
    Ok(())
}

/// Checks that the file is a whole SQLite database: its header, the size the header gives
/// against the file's, and SQLite's `quick_check` of every page.
///
/// # Errors
/// Not an SQLite database, a truncated file, or a damaged one, each named with what was found.
pub fn check_whole(storage: &Storage, conn: &Connection) -> anyhow::Result<()> {
    let path = &storage.database;
    let len = std::fs::metadata(path)?.len();
    let mut header = [0u8; 100];
    {
        use std::io::Read as _;
        let mut file = std::fs::File::open(path)?;
        let read = file.read(&mut header)?;
        if read < header.len() || &header[..16] != b"SQLite format 3\0" {
            bail!(
                "{}: not an SQLite database ({len} bytes, no SQLite header)",
                path.display()
            );
        }
    }
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let word = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let (changes, pages, valid_for) = (word(24), u64::from(word(28)), word(92));
    if pages > 0 && valid_for == changes && len < pages * page_size {
        bail!(
            "{}: the database is truncated: its header says {} bytes ({pages} pages of {page_size}), the file has {len}",
            path.display(),
            pages * page_size
        );
    }
    if page_size == 0 || len % page_size != 0 {
        bail!(
            "{}: the database is truncated or damaged: {len} bytes is not a whole number of {page_size}-byte pages",
            path.display()
        );
    }
    let found: Vec<String> = conn
        .prepare(&format!("PRAGMA {SCHEMA}.quick_check(5)"))?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("{}: the database is damaged", path.display()))?;
    if found != ["ok"] {
        bail!(
            "{}: the database is damaged (SQLite's quick_check: {})",
            path.display(),
            found.join("; ")
        );
    }
    Ok(())
}

/// The schema version Campfire's database was migrated to: the largest version in
/// `schema_migrations`, as Rails keeps it (`20251212154340`).
///
/// # Errors
/// No `schema_migrations` table (not a Rails database), or a version this Hearth does not
/// read, named with the versions it does.
pub fn check_version(storage: &Storage, conn: &Connection) -> anyhow::Result<String> {
    let has_table: bool = conn.query_row(
        &format!(
            "SELECT EXISTS (SELECT 1 FROM {SCHEMA}.sqlite_master WHERE type = 'table' AND name = 'schema_migrations')"
        ),
        [],
        |row| row.get(0),
    )?;
    if !has_table {
        bail!(
            "{}: not a Campfire database (no schema_migrations table)",
            storage.database.display()
        );
    }
    let version: Option<String> = conn.query_row(
        &format!(
            "SELECT version FROM {SCHEMA}.schema_migrations ORDER BY CAST(version AS INTEGER) DESC LIMIT 1"
        ),
        [],
        |row| row.get(0),
    )?;
    let Some(version) = version else {
        bail!(
            "{}: Campfire's schema_migrations is empty (the database was never migrated)",
            storage.database.display()
        );
    };
    if KNOWN_SCHEMA_VERSIONS.contains(&version.as_str()) {
        return Ok(version);
    }
    let newest = KNOWN_SCHEMA_VERSIONS
        .iter()
        .max()
        .copied()
        .unwrap_or_default();
    let which = if version.as_str() > newest {
        "newer than this Hearth reads: upgrade Hearth"
    } else {
        "older than this Hearth reads: upgrade Campfire first"
    };
    bail!(
        "{}: Campfire schema version {version} is {which} (it reads {})",
        storage.database.display(),
        KNOWN_SCHEMA_VERSIONS.join(", ")
    )
}

/// Checks that every table and column the import reads is there.
///
/// # Errors
/// The first table or column missing, named.
pub fn check_columns(conn: &Connection, wanted: &[(&str, &[&str])]) -> anyhow::Result<()> {
    for (table, columns) in wanted {
        let found: Vec<String> = conn
            .prepare(&format!(
                "SELECT name FROM pragma_table_info(?1, '{SCHEMA}')"
            ))?
            .query_map([table], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        if found.is_empty() {
            bail!("Campfire's database has no table {table}");
        }
        if let Some(missing) = columns.iter().find(|c| !found.iter().any(|f| f == *c)) {
            bail!("Campfire's table {table} has no column {missing}");
        }
    }
    Ok(())
}

/// Rows of `table` (in [`SCHEMA`]) where `condition` (over `s`) holds, at most `limit`,
/// each as `id` and the quoted value of `column`.
///
/// # Errors
/// An SQL error.
pub fn offenders(
    conn: &Connection,
    table: &str,
    column: &str,
    condition: &str,
    limit: usize,
) -> anyhow::Result<Vec<(i64, String)>> {
    let sql = format!(
        "SELECT s.id, quote(s.{column}) FROM {SCHEMA}.{table} AS s WHERE {condition} ORDER BY s.id LIMIT {limit}"
    );
    let rows = conn
        .prepare(&sql)?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// `SELECT COUNT(*)` of `from_where` (a `FROM … WHERE …` over the attached schema).
///
/// # Errors
/// An SQL error.
pub fn count(conn: &Connection, from_where: &str) -> anyhow::Result<u64> {
    let n: i64 = conn.query_row(&format!("SELECT COUNT(*) {from_where}"), [], |row| {
        row.get(0)
    })?;
    Ok(u64::try_from(n).unwrap_or(0))
}
