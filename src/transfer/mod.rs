//! Moving a team in and out of Hearth, and keeping it safe: `hearth import campfire` (a Campfire
//! `storage/` directory), `hearth import slack` (Slack's workspace export), `hearth export` (the
//! `storage/` layout Campfire reads), `hearth backup` and `hearth restore` (a consistent snapshot
//! of the database and the files while the server runs).
//!
//! Every command works the same way: it reads its source without changing it, prints what it
//! would do with `--dry-run` ([`Counts`] per table), shows a [`Progress`] line on long runs,
//! writes the target in one transaction with files staged first and moved into place only after
//! the commit (an interrupted run leaves the target as it was), and ends by verifying and
//! printing the counts per table and every file's checksum.
//!
//! This module is a face of its own, beside [`crate::web`] and [`crate::cable`]: it uses the
//! database, the storage service and the rich-text codec, and nothing imports it but `main`.

pub mod backup;
pub mod campfire;
pub mod export;
pub mod files;
pub mod report;
pub mod slack;

pub use files::{checksum, Staging};
pub use report::{Counts, Progress};

use std::path::PathBuf;

/// Where a command writes (imports, restore) or what it reads (export, backup): Hearth's own
/// database file and the root of its disk service, as `hearth serve` finds them
/// (`--database`, `--storage-root`, default the data directory).
#[derive(Debug, Clone)]
pub struct Target {
    /// Hearth's SQLite database file (`--database`).
    pub database: PathBuf,
    /// Root of Active Storage's disk service: files at `<root>/ab/cd/<key>`.
    pub storage_root: PathBuf,
}

/// What every command is asked besides its source and target.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Print what would be done (counts per table, files and bytes) and change nothing.
    pub dry_run: bool,
    /// Write into a database that already holds a team (its rows are replaced).
    pub replace: bool,
    /// Print a progress line (rate and ETA) on standard error.
    pub progress: bool,
}

/// The schema version of Campfire this Hearth reads and writes: the `version:` of Campfire's
/// `db/schema.rb` (`ActiveRecord::Schema[8.2].define(version: 2025_12_12_154340)`), as Rails
/// keeps it in `schema_migrations`.
pub const CAMPFIRE_SCHEMA_VERSION: &str = "20251212154340";

/// Refuses a database that another process (a running `hearth serve`) has open, before an
/// import or a restore writes into it. Hearth runs SQLite in WAL mode, where the write-ahead log
/// `<database>-wal` exists while any connection is open and is removed when the last one closes
/// cleanly; the check looks for it without opening the database, so the target is not touched.
///
/// # Errors
/// The `-wal` file exists: the message names the database and says to stop the server (or, when
/// none runs, to start and stop it once, which closes the database cleanly).
pub fn refuse_open_database(database: &std::path::Path) -> anyhow::Result<()> {
    let mut wal = database.as_os_str().to_owned();
    wal.push("-wal");
    anyhow::ensure!(
        !std::path::Path::new(&wal).exists(),
        "{} is open in another process (its write-ahead log is there): stop hearth serve \
         first (if no server runs, start and stop it once so it closes the database cleanly)",
        database.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::refuse_open_database;

    #[test]
    fn a_database_with_its_write_ahead_log_is_open_elsewhere() {
        let dir = std::env::temp_dir().join(format!("hearth-open-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let database = dir.join("hearth.sqlite3");
        std::fs::write(&database, b"").unwrap();
        assert!(refuse_open_database(&database).is_ok());
        std::fs::write(dir.join("hearth.sqlite3-wal"), b"").unwrap();
        let refused = refuse_open_database(&database).unwrap_err().to_string();
        assert!(refused.contains("open in another process"), "{refused}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
