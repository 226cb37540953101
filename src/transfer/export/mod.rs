//! `hearth export --to DIR`: Hearth's team as the `storage/` directory Campfire reads, so a
//! team can go back.
//!
//! `DIR/db/production.sqlite3` is Campfire's database at schema version
//! [`CAMPFIRE_SCHEMA_VERSION`](crate::transfer::CAMPFIRE_SCHEMA_VERSION) (Campfire's
//! `config/database.yml`), with nothing for `rails db:migrate` to do; `DIR/files/` is Active
//! Storage's disk service (Campfire's `local` service in `config/storage.yml`), every blob's
//! file at `files/<key[0,2]>/<key[2,4]>/<key>`. Ids are kept, so permalinks still land.
//!
//! How it goes:
//!
//! 1. `DIR` must be missing or empty ([`destination::check`]);
//! 2. Hearth's database is read in one read transaction ([`snapshot`]), a consistent copy even
//!    while `hearth serve` runs;
//! 3. Campfire's database is written in a hidden sibling of `DIR` in one transaction: the
//!    schema ([`schema`]), every table ([`tables`], [`rows`]), the search index ([`search`]),
//!    then its foreign keys are checked ([`database`]);
//! 4. every blob's file is copied from Hearth's disk service or S3 bucket and checked against
//!    its row, size and checksum ([`files`]);
//! 5. the rows of every table are counted against Hearth's; the comparison is printed
//!    ([`summary`]) and the sibling is renamed to `DIR` ([`destination::Staged`]).
//!
//! Any error, or Ctrl-C, removes the sibling: `DIR` is either missing (or empty) or whole.
//! `--dry-run` reads the snapshot, prints the rows and files it would write, and writes
//! nothing.

pub mod database;
pub mod destination;
pub mod files;
pub mod rows;
pub mod schema;
pub mod search;
pub mod snapshot;
pub mod summary;
pub mod tables;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{Counts, Options, Progress, Target};
use crate::storage::disk::DiskService;
use crate::storage::s3::{S3Config, S3Service};

/// Exports `source` (its database and its disk service) into the directory `to`; prints the
/// comparison of every table's rows and the files verified, and returns the export's rows per
/// Campfire table with `files` and `bytes`.
///
/// # Errors
/// See [`Export::run`].
pub async fn export(source: &Target, to: &Path, options: Options) -> anyhow::Result<Counts> {
    Export::new(source, to).run(options).await
}

/// An export, with the S3 bucket Hearth's files may be in and a flag that stops it.
#[derive(Debug)]
pub struct Export<'a> {
    source: &'a Target,
    to: PathBuf,
    s3: Option<S3Config>,
    interrupted: Arc<AtomicBool>,
}

/// What the snapshot gave: Hearth's counts per Campfire table and its blobs.
type Read = (Vec<(&'static str, u64)>, Vec<files::BlobFile>);

impl<'a> Export<'a> {
    /// An export of `source` into `to`, reading files from the disk service only.
    pub fn new(source: &'a Target, to: &Path) -> Self {
        Self {
            source,
            to: to.to_path_buf(),
            s3: None,
            interrupted: Arc::default(),
        }
    }

    /// Reads the blobs whose service is S3 (`amazon`) from this bucket (`hearth serve`'s
    /// `--s3-*`).
    #[must_use]
    pub fn with_s3(mut self, config: S3Config) -> Self {
        self.s3 = Some(config);
        self
    }

    /// Stops (cleanly, writing nothing) once `flag` is set, e.g. by [`interrupt_on_ctrl_c`].
    #[must_use]
    pub fn interrupted_by(mut self, flag: Arc<AtomicBool>) -> Self {
        self.interrupted = flag;
        self
    }

    /// Runs the export (see the module's documentation).
    ///
    /// # Errors
    /// A target that is not missing or empty; a Hearth database that is missing or at another
    /// schema; a row Campfire's schema refuses; a file missing, of another size or checksum
    /// than its blob row; a count that differs; a write that fails; an interruption. The
    /// target is then as it was.
    pub async fn run(&self, options: Options) -> anyhow::Result<Counts> {
        destination::check(&self.to)?;
        let s3 = match &self.s3 {
            Some(config) => Some(S3Service::new(config)?),
            None => None,
        };
        if options.dry_run {
            return self.dry_run().await;
        }
        let staged = destination::Staged::new(&self.to)?;
        let database = staged.path().join("db").join("production.sqlite3");
        let files_root = staged.path().join("files");
        std::fs::create_dir_all(database.parent().unwrap_or(staged.path()))?;
        std::fs::create_dir_all(&files_root)?;
        let (hearth, blobs) = self.write_database(&database, options.progress).await?;
        let sources = files::Sources {
            disk: DiskService::new(self.source.storage_root.clone()),
            s3: s3.as_ref(),
        };
        let bytes = blobs.iter().map(|b| b.byte_size).sum();
        let mut progress = Progress::new("export files (bytes)", bytes, options.progress);
        let copied = files::copy_all(
            &blobs,
            &sources,
            &files_root,
            &mut progress,
            &self.interrupted,
        )
        .await?;
        progress.finish();
        let compared = database::compare(&database, &hearth)?;
        let report = summary::render(&compared, &blobs, &copied);
        if let Some(problem) = summary::mismatch(&compared) {
            anyhow::bail!("the export does not match Hearth's database: {problem}\n{report}");
        }
        rows::check(&self.interrupted)?;
        staged.finish()?;
        println!(
            "Exported to {} (Campfire's storage/, schema {}):\n{report}",
            self.to.display(),
            super::CAMPFIRE_SCHEMA_VERSION
        );
        let mut counts = Counts::default();
        for line in &compared {
            counts.add(line.table, line.campfire);
        }
        counts.add("files", copied.files);
        counts.add("bytes", copied.bytes);
        Ok(counts)
    }

    /// Reads the snapshot and writes the database at `path`, off the async threads.
    async fn write_database(&self, path: &Path, progress: bool) -> anyhow::Result<Read> {
        let db = self.source.database.clone();
        let path = path.to_path_buf();
        let interrupted = Arc::clone(&self.interrupted);
        tokio::task::spawn_blocking(move || {
            let snapshot = snapshot::Snapshot::open(&db)?;
            let hearth = database::source_counts(&snapshot)?;
            let blobs = files::blobs(snapshot.conn())?;
            let total = database::total_rows(&hearth);
            let mut bar = Progress::new("export rows", total, progress);
            let now = crate::db::blobs::rails_datetime(crate::db::now_ms());
            database::write(&snapshot, &path, &now, &mut bar, &interrupted)?;
            bar.finish();
            Ok((hearth, blobs))
        })
        .await?
    }

    /// `--dry-run`: the rows and files the export would write, printed and returned.
    async fn dry_run(&self) -> anyhow::Result<Counts> {
        let db = self.source.database.clone();
        let (hearth, blobs): Read = tokio::task::spawn_blocking(move || {
            let snapshot = snapshot::Snapshot::open(&db)?;
            Ok::<_, anyhow::Error>((
                database::source_counts(&snapshot)?,
                files::blobs(snapshot.conn())?,
            ))
        })
        .await??;
        let mut counts = Counts::default();
        for (table, n) in &hearth {
            counts.add(table, *n);
        }
        counts.add("files", blobs.len() as u64);
        counts.add("bytes", blobs.iter().map(|b| b.byte_size).sum());
        println!(
            "Dry run: would export to {} (Campfire's storage/, schema {}); nothing written:\n{counts}",
            self.to.display(),
            super::CAMPFIRE_SCHEMA_VERSION
        );
        Ok(counts)
    }
}

/// A flag set by Ctrl-C (SIGINT), for [`Export::interrupted_by`]: the export stops at its
/// next row batch or file and removes what it wrote. Needs a Tokio runtime.
pub fn interrupt_on_ctrl_c() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let set = Arc::clone(&flag);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            set.store(true, Ordering::Relaxed);
            eprintln!("\ninterrupted: stopping the export and removing what it wrote");
        }
    });
    flag
}
