//! `hearth backup --to FILE` and `hearth restore --from FILE`: a consistent snapshot of the
//! database and the files, taken while the server runs, and its restore into a stopped one.
//!
//! **Backup.** The database is copied by `VACUUM INTO` in one read transaction of the live
//! database ([`snapshot`] says why that and not the online backup API): posts keep committing
//! meanwhile, and the copy is the state of one commit. The files are then copied by the
//! snapshot's list (`active_storage_blobs` of the disk service): a file uploaded after the
//! snapshot is not needed, and one the snapshot lists but the disk has not is recorded as
//! missing, not a failure. A direct upload makes its blob row before its bytes arrive (`POST
//! /rails/active_storage/direct_uploads`, then the `PUT`; a blob cannot be attached before its
//! file is there), so an unattached blob without a file is an upload under way; an attached one
//! without a file was purged after the snapshot (a purge deletes the row, then the file) or is
//! lost on the server, and is printed as a warning. Everything goes into one tar file
//! ([`manifest`] gives its layout) written under a temporary name beside `--to`, read through
//! and checked, synced, and renamed to `--to` at the end: an interrupted backup leaves no
//! `--to` (or the previous one whole).
//!
//! **Restore** (the server stopped). The backup is read through and every entry checked against
//! the manifest before anything is written ([`verify`]); a target database that holds a team is
//! refused unless `--replace`; then every entry is staged beside its place and checked again,
//! the staged database passes SQLite's check, holds only migrations this Hearth knows and the
//! manifest's counts, and only then are the files, the secrets and last the database moved into
//! place ([`unpack`]). At the end the restored database's counts and every restored file's
//! checksum are compared with the manifest and printed.

pub mod hashing;
pub mod manifest;
pub mod pack;
pub mod snapshot;
pub mod sqlite;
pub mod unpack;
pub mod verify;

use std::path::{Path, PathBuf};

use sqlx::Connection as _;

use super::{Counts, Options, Target};
use manifest::Manifest;

/// Writes a backup of `source` (and the secrets of `data_dir`) to the file `to`, while the
/// server may run; returns the rows per table of the snapshot, with `files` and `bytes` of the
/// files copied, `files_missing` and `files_elsewhere` (another service's) when there are any.
/// With `options.dry_run`, counts the live database in one read transaction and checks which
/// files are on disk, writing nothing.
///
/// # Errors
/// No database at `source.database`, `to`'s directory missing or not writable, a file of the
/// disk service that cannot be read, or a written backup that does not read back whole.
pub async fn backup(
    source: &Target,
    data_dir: &Path,
    to: &Path,
    options: Options,
) -> anyhow::Result<Counts> {
    if options.dry_run {
        return backup_dry_run(source).await;
    }
    let snapshot = snapshot::take(&source.database, &beside(to, "sqlite3")?).await?;
    let partial = Partial(beside(to, "partial")?);
    let (packed, snapshot) = {
        let (out, root, data_dir) = (
            partial.0.clone(),
            source.storage_root.clone(),
            data_dir.to_path_buf(),
        );
        tokio::task::spawn_blocking(move || {
            let packed = pack::pack(&out, &snapshot, &root, &data_dir, options.progress);
            (packed, snapshot)
        })
        .await?
    };
    let packed = packed?;
    let out = partial.0.clone();
    let read_back =
        tokio::task::spawn_blocking(move || verify::verify(&out, options.progress)).await??;
    anyhow::ensure!(
        read_back == packed.manifest,
        "the backup written does not read back as it was written"
    );
    std::fs::rename(&partial.0, to)
        .map_err(|e| anyhow::anyhow!("renaming the backup to {}: {e}", to.display()))?;
    sync_parent(to)?;
    warn_about(&packed);
    let size = std::fs::metadata(to)?.len();
    println!(
        "backup {}: {size} bytes; the database as of {}, read in one transaction of {} ms",
        to.display(),
        packed.manifest.created_at,
        snapshot.took.as_millis()
    );
    Ok(manifest_counts(&packed.manifest))
}

/// `hearth backup --dry-run`: the counts a backup would hold now, from one read transaction.
async fn backup_dry_run(source: &Target) -> anyhow::Result<Counts> {
    let mut live = sqlite::connect(&source.database, false).await?;
    let mut tx = live.begin().await?;
    let mut counts = sqlite::table_counts(&mut tx).await?;
    let blobs = sqlite::blobs(&mut tx).await?;
    tx.commit().await?;
    live.close().await?;
    let disk = crate::storage::disk::DiskService::new(source.storage_root.clone());
    let mut files = Counts::default();
    for blob in &blobs {
        if blob.service_name != crate::storage::DISK_SERVICE {
            files.add("files_elsewhere", 1);
            continue;
        }
        match disk.path_for(&blob.key).map(std::fs::metadata) {
            Some(Ok(meta)) => {
                files.add("files", 1);
                files.add("bytes", meta.len());
            }
            _ => files.add("files_missing", 1),
        }
    }
    counts.0.extend(files.0);
    println!("dry run: a backup would hold");
    Ok(counts)
}

/// Restores the backup `from` into `target` (and its secrets into `data_dir`); the server must
/// be stopped. Returns the restored database's rows per table with `files` and `bytes` (and
/// `files_missing`, `files_elsewhere`: the blobs whose files the backup did not hold). With
/// `options.dry_run`, verifies the backup and the target and returns the backup's counts,
/// writing nothing.
///
/// # Errors
/// Anything [`verify::verify`] refuses (a cut-short or corrupted file, a manifest naming a path
/// outside the target, a checksum other than the manifest's, another format version), a target
/// database that holds a team without `options.replace`, a target database still open (the
/// server runs), a staged database that fails SQLite's check or holds a migration this Hearth
/// does not know; in all of these the target is left as it was.
pub async fn restore(
    from: &Path,
    target: &Target,
    data_dir: &Path,
    options: Options,
) -> anyhow::Result<Counts> {
    let path = from.to_path_buf();
    let manifest =
        tokio::task::spawn_blocking(move || verify::verify(&path, options.progress)).await??;
    check_target(&target.database, options.replace).await?;
    if options.dry_run {
        println!(
            "dry run: the backup of {} (Hearth {}) is whole; a restore would write",
            manifest.created_at, manifest.hearth_version
        );
        return Ok(manifest_counts(&manifest));
    }
    let staged = {
        let (from, manifest, target, data_dir) = (
            from.to_path_buf(),
            manifest.clone(),
            target.clone(),
            data_dir.to_path_buf(),
        );
        tokio::task::spawn_blocking(move || {
            let places = unpack::Places {
                database: &target.database,
                storage_root: &target.storage_root,
                data_dir: &data_dir,
            };
            unpack::stage(&from, &manifest, places, options.progress)
        })
        .await??
    };
    check_database(staged.database(), &manifest).await?;
    check_target(&target.database, options.replace).await?;
    tokio::task::spawn_blocking(move || staged.commit()).await??;
    let counts = check_restored(target, &manifest).await?;
    println!(
        "restored the backup of {} into {}: counts and every file's checksum match the backup",
        manifest.created_at,
        target.database.display()
    );
    Ok(counts)
}

/// Refuses a target database that holds a team (unless `replace`) or that another process has
/// open. Opens it read-write and closes it: as the last connection, SQLite folds its WAL into
/// it and removes the `-wal` and `-shm` files; a `-wal` left after that belongs to another
/// connection. A missing database is a fresh target.
async fn check_target(database: &Path, replace: bool) -> anyhow::Result<()> {
    if !database.exists() {
        return Ok(());
    }
    let mut conn = sqlite::connect(database, false).await?;
    let (accounts, users) = sqlite::team_size(&mut conn).await?;
    conn.close().await?;
    anyhow::ensure!(
        replace || (accounts == 0 && users == 0),
        "{} already holds a team ({accounts} account, {users} users): restore with --replace \
         to overwrite it",
        database.display()
    );
    let mut wal = database.as_os_str().to_owned();
    wal.push("-wal");
    anyhow::ensure!(
        !PathBuf::from(wal).exists(),
        "{} is open in another process: stop hearth serve before restoring",
        database.display()
    );
    Ok(())
}

/// The staged database before it goes into place: SQLite's check, only migrations this Hearth
/// knows, and the manifest's counts.
async fn check_database(path: &Path, manifest: &Manifest) -> anyhow::Result<()> {
    let mut conn = sqlite::connect(path, false).await?;
    sqlite::quick_check(&mut conn).await?;
    sqlite::known_migrations(&sqlite::migrations(&mut conn).await?)?;
    let counts = sqlite::table_counts(&mut conn).await?;
    conn.close().await?;
    anyhow::ensure!(
        counts.0 == manifest.counts,
        "the backup's database holds other counts than its manifest:\n{counts}"
    );
    Ok(())
}

/// The restored database's counts and files, compared with the manifest once more.
async fn check_restored(target: &Target, manifest: &Manifest) -> anyhow::Result<Counts> {
    let mut conn = sqlite::connect(&target.database, false).await?;
    let mut counts = sqlite::table_counts(&mut conn).await?;
    conn.close().await?;
    anyhow::ensure!(
        counts.0 == manifest.counts,
        "the restored database holds other counts than the backup:\n{counts}"
    );
    let (root, files) = (target.storage_root.clone(), manifest.files.clone());
    let bytes = tokio::task::spawn_blocking(move || -> anyhow::Result<u64> {
        let disk = crate::storage::disk::DiskService::new(root);
        let mut bytes = 0;
        for file in &files {
            let path = disk
                .path_for(&file.key)
                .ok_or_else(|| anyhow::anyhow!("blob key {:?}", file.key))?;
            let found = super::checksum(&path)?;
            anyhow::ensure!(
                found == file.checksum,
                "{}: checksum {found} after the restore, the backup says {}",
                path.display(),
                file.checksum
            );
            bytes += file.size;
        }
        Ok(bytes)
    })
    .await??;
    counts.add("files", manifest.files.len() as u64);
    counts.add("bytes", bytes);
    add_absent(&mut counts, manifest);
    Ok(counts)
}

/// The manifest's counts with its files': `files`, `bytes`, and `files_missing`,
/// `files_elsewhere` when not 0.
fn manifest_counts(manifest: &Manifest) -> Counts {
    let mut counts = Counts(manifest.counts.clone());
    counts.add("files", manifest.files.len() as u64);
    counts.add("bytes", manifest.files.iter().map(|f| f.size).sum());
    add_absent(&mut counts, manifest);
    counts
}

/// `files_missing` and `files_elsewhere`, the blobs whose files the backup does not hold, when
/// there are any.
fn add_absent(counts: &mut Counts, manifest: &Manifest) {
    if !manifest.missing.is_empty() {
        counts.add("files_missing", manifest.missing.len() as u64);
    }
    if manifest.elsewhere > 0 {
        counts.add("files_elsewhere", manifest.elsewhere);
    }
}

/// Prints on standard error the files listed but missing and the files unlike their rows.
fn warn_about(packed: &pack::Packed) {
    let m = &packed.manifest;
    let (attached, uploading): (Vec<_>, Vec<_>) = m.missing.iter().partition(|f| f.attached);
    if !uploading.is_empty() {
        eprintln!(
            "note: {} unattached blob(s) had no file yet (direct uploads under way); not in the backup",
            uploading.len()
        );
    }
    for file in attached {
        eprintln!(
            "warning: blob {} is attached but its file was not on disk (purged after the \
             snapshot, or lost on the server); the backup has its row without the file",
            file.key
        );
    }
    for key in &packed.damaged {
        eprintln!(
            "warning: the file of blob {key} differs from its row's size or checksum; copied as \
             it is on disk"
        );
    }
    if m.elsewhere > 0 {
        eprintln!(
            "note: {} blob(s) of another service (S3) stay in their bucket; not in the backup",
            m.elsewhere
        );
    }
}

/// A temporary name of this process beside `to`: `.<name>.<pid>.<suffix>`.
fn beside(to: &Path, suffix: &str) -> anyhow::Result<PathBuf> {
    let name = to
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("--to {} names no file", to.display()))?;
    let dir = to.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        anyhow::ensure!(dir.is_dir(), "no directory {}", dir.display());
    }
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".{}.{suffix}", std::process::id()));
    Ok(to.with_file_name(temp))
}

/// Syncs the directory of `path`, so that a rename into it survives a crash.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::File::open(dir)?.sync_all(),
        None => std::fs::File::open(".")?.sync_all(),
    }
}

/// The backup being written, removed when dropped before its rename.
#[derive(Debug)]
struct Partial(PathBuf);

impl Drop for Partial {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
