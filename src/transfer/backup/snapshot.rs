//! The database's snapshot: `VACUUM INTO` a file beside the backup, from a read-only connection
//! to the live database, and what the snapshot says.
//!
//! Why `VACUUM INTO` rather than SQLite's online backup API (`sqlite3_backup_step`): both copy
//! one transactionally consistent state, but the backup API copies it that way only when it
//! copies every page in one step (a step that ends lets another process's commit restart the
//! copy from the first page, so a stepped copy of a busy database may never finish), and it is
//! reached only through the C handle (`unsafe` here). `VACUUM INTO` is one statement in one
//! read transaction: on a WAL database a reader takes no lock a writer waits for, so posts keep
//! committing while it runs (the WAL grows meanwhile: the checkpointer cannot copy frames past
//! the snapshot's until it ends, see `db::spawn_checkpointer_with`), and its output is compact
//! (no free pages) and already checked by SQLite as it is built. The copy is not synced by
//! SQLite; the backup file it goes into is.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sqlx::Connection as _;

use super::sqlite::{self, BlobRow};
use crate::transfer::Counts;

/// A snapshot of the database in a file of its own (removed when this is dropped), with what
/// it holds.
#[derive(Debug)]
pub struct Snapshot {
    /// The snapshot's file.
    pub path: PathBuf,
    /// Rows per table.
    pub counts: Counts,
    /// Its newest migration.
    pub schema_version: i64,
    /// Its blobs.
    pub blobs: Vec<BlobRow>,
    /// When it was taken, milliseconds since the Unix epoch.
    pub taken_at_ms: i64,
    /// How long the `VACUUM INTO` ran (the read transaction on the live database).
    pub took: Duration,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        remove_with_journals(&self.path);
    }
}

/// Removes the database file at `path` and any `-wal`, `-shm` or `-journal` beside it.
pub fn remove_with_journals(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut other = path.as_os_str().to_owned();
        other.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(other));
    }
}

/// Takes a snapshot of the database at `source` into `into` (a temporary name of this
/// process: whatever is there is removed first), then checks it (`PRAGMA quick_check`) and
/// reads its counts, schema version and blobs.
///
/// # Errors
/// No database at `source`, `into` cannot be written, the snapshot fails its check.
pub async fn take(source: &Path, into: &Path) -> anyhow::Result<Snapshot> {
    remove_with_journals(into);
    let mut live = sqlite::connect(source, false).await?;
    let started = Instant::now();
    let taken_at_ms = crate::db::now_ms();
    let into_text = into
        .to_str()
        .ok_or_else(|| anyhow::anyhow!("{} is not UTF-8", into.display()))?;
    let vacuum = sqlx::query("VACUUM INTO ?")
        .bind(into_text)
        .execute(&mut live)
        .await;
    let took = started.elapsed();
    live.close().await?;
    // From here the file is ours: removed with the snapshot on any error.
    let mut snapshot = Snapshot {
        path: into.to_path_buf(),
        counts: Counts::default(),
        schema_version: 0,
        blobs: Vec::new(),
        taken_at_ms,
        took,
    };
    vacuum.map_err(|e| anyhow::anyhow!("VACUUM INTO {}: {e}", into.display()))?;
    let mut copy = sqlite::connect(into, false).await?;
    sqlite::quick_check(&mut copy).await?;
    snapshot.counts = sqlite::table_counts(&mut copy).await?;
    snapshot.schema_version = sqlite::migrations(&mut copy)
        .await?
        .last()
        .copied()
        .unwrap_or(0);
    snapshot.blobs = sqlite::blobs(&mut copy).await?;
    copy.close().await?;
    Ok(snapshot)
}
