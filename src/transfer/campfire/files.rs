//! The blobs' files: Campfire's disk service keeps each at `files/<key[0,2]>/<key[2,4]>/<key>`,
//! as Hearth's does under its storage root. Each is found and sized before anything is written,
//! copied beside its place with its checksum (base64 MD5, the blob row's `checksum`) checked
//! ([`crate::transfer::Staging`]), moved after the database commit, and checked once more
//! where it landed.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use rusqlite::Connection;

use super::interrupt::Interrupt;
use super::source::{Storage, SCHEMA};
use crate::storage::disk::{valid_key, DiskService};
use crate::transfer::{checksum, Progress, Staging};

/// One blob's file.
#[derive(Debug, Clone)]
pub struct BlobFile {
    /// `active_storage_blobs.id`.
    pub id: i64,
    /// The blob's key (its file name).
    pub key: String,
    /// The blob's file name, for messages.
    pub filename: String,
    /// `byte_size`, in bytes.
    pub byte_size: u64,
    /// `checksum`: base64 of the MD5 of the bytes (Rails allows none).
    pub checksum: Option<String>,
    /// Where Campfire keeps it.
    pub source: PathBuf,
}

/// Every blob of the Campfire database, in id order.
///
/// # Errors
/// An SQL error, or a key that is not one Active Storage writes (named).
pub fn list(conn: &Connection, storage: &Storage) -> anyhow::Result<Vec<BlobFile>> {
    let disk = DiskService::new(storage.files.clone());
    let mut statement = conn.prepare(&format!(
        "SELECT id, key, filename, byte_size, checksum FROM {SCHEMA}.active_storage_blobs ORDER BY id"
    ))?;
    let rows = statement.query_map([], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, i64>(3)?,
            row.get::<_, Option<String>>(4)?,
        ))
    })?;
    let mut files = Vec::new();
    for row in rows {
        let (id, key, filename, byte_size, checksum) = row?;
        if !valid_key(&key) {
            bail!("blob {id} ({filename}): its key {key:?} is not one Active Storage writes");
        }
        let Some(source) = disk.path_for(&key) else {
            bail!("blob {id} ({filename}): its key {key:?} names no file");
        };
        files.push(BlobFile {
            id,
            key,
            filename,
            byte_size: u64::try_from(byte_size).unwrap_or(0),
            checksum,
            source,
        });
    }
    Ok(files)
}

/// Checks that each file is there, a regular file inside `root` (the disk service's root,
/// `files/`, itself possibly a link to another disk), with the size its blob gives. Active
/// Storage never writes a link, a FIFO or a device there: a link leading out of `root` (at the
/// file or at a folder on its way, e.g. `files/se/cr` → Hearth's data directory and a blob keyed
/// `secret_key_base` without a checksum) would copy any file the importer can read into the
/// team's storage, and a FIFO would block the import.
///
/// # Errors
/// The first file missing, leading out of `root`, not a regular file, or of another size,
/// named with its blob.
pub fn check_present(files: &[BlobFile], root: &Path) -> anyhow::Result<()> {
    let root = root.canonicalize().ok();
    for file in files {
        let Ok(meta) = std::fs::symlink_metadata(&file.source) else {
            bail!(
                "blob {} ({}): its file {} is missing",
                file.id,
                file.filename,
                file.source.display()
            );
        };
        let real = file.source.canonicalize().ok();
        let inside = matches!((&real, &root), (Some(real), Some(root)) if real.starts_with(root));
        if !meta.file_type().is_file() || !inside {
            bail!(
                "blob {} ({}, key {}): {} is not a regular file of the storage directory \
                 (a link, a FIFO or a device): refusing to read it",
                file.id,
                file.filename,
                file.key,
                file.source.display()
            );
        }
        if meta.len() != file.byte_size {
            bail!(
                "blob {} ({}): its file {} has {} bytes, the blob says {}",
                file.id,
                file.filename,
                file.source.display(),
                meta.len(),
                file.byte_size
            );
        }
    }
    Ok(())
}

/// Checks each file's checksum where Campfire keeps it (for `--dry-run`, which copies nothing).
///
/// # Errors
/// A file that cannot be read, or a checksum other than its blob's, named.
pub fn check_sums(
    files: &[BlobFile],
    progress: &mut Progress,
    interrupt: &Interrupt,
) -> anyhow::Result<()> {
    for file in files {
        interrupt.check()?;
        if let Some(expected) = &file.checksum {
            let found = checksum(&file.source)
                .with_context(|| format!("reading {}", file.source.display()))?;
            if &found != expected {
                bail!(
                    "blob {} ({}): {}: checksum {found}, the blob says {expected}",
                    file.id,
                    file.filename,
                    file.source.display()
                );
            }
        }
        progress.inc(file.byte_size);
    }
    Ok(())
}

/// Files copied beside their place in Hearth's storage, and the directories made for them:
/// dropped before [`Staged::commit`], the copies and those directories are removed, and the
/// storage root is as it was.
#[derive(Debug)]
pub struct Staged {
    // Fields drop in order: the staged copies first, then the directories they were in.
    staging: Staging,
    made: MadeDirs,
}

/// Copies every file into a staging area under `root`, checking each checksum on the copy.
///
/// # Errors
/// A directory that cannot be made, a copy that fails, a checksum other than the blob's
/// (named), or an interrupt; what was staged is removed.
pub fn stage(
    files: &[BlobFile],
    root: &Path,
    progress: &mut Progress,
    interrupt: &Interrupt,
) -> anyhow::Result<Staged> {
    let made = MadeDirs::around(&root.join("tmp"));
    let staging = Staging::new(root)
        .with_context(|| format!("making a staging directory under {}", root.display()))?;
    let mut staged = Staged { staging, made };
    for file in files {
        interrupt.check()?;
        staged
            .staging
            .stage(&file.key, &file.source, file.checksum.as_deref())
            .with_context(|| format!("blob {} ({})", file.id, file.filename))?;
        progress.inc(file.byte_size);
    }
    Ok(staged)
}

impl Staged {
    /// Stages `bytes` as the file of a new blob `key` (a variant made by the import).
    ///
    /// # Errors
    /// An invalid key or a write that fails.
    pub fn stage_bytes(&mut self, key: &str, bytes: &[u8]) -> anyhow::Result<()> {
        self.staging.stage_bytes(key, bytes)
    }

    /// Moves every staged file to its place (call after the database commit).
    ///
    /// # Errors
    /// A move that fails.
    pub fn commit(self) -> anyhow::Result<()> {
        let Self { staging, made } = self;
        staging.commit()?;
        made.keep();
        Ok(())
    }
}

/// Checks each file where it landed in Hearth's storage: there, with its blob's checksum.
///
/// # Errors
/// The first file missing or with another checksum, named.
pub fn verify_placed(files: &[BlobFile], root: &Path) -> anyhow::Result<()> {
    let disk = DiskService::new(root.to_path_buf());
    for file in files {
        let Some(path) = disk.path_for(&file.key) else {
            bail!("blob {}: key {:?}", file.id, file.key);
        };
        let found = checksum(&path)
            .with_context(|| format!("blob {} ({}): {}", file.id, file.filename, path.display()))?;
        if let Some(expected) = &file.checksum {
            if &found != expected {
                bail!(
                    "blob {} ({}): {} has checksum {found}, the blob says {expected}",
                    file.id,
                    file.filename,
                    path.display()
                );
            }
        }
    }
    Ok(())
}

/// Removes the files of blobs a replaced team had and the imported one has not (after the
/// commit, when nothing names them any more). Returns how many were removed.
pub fn remove_replaced(old_keys: &[String], files: &[BlobFile], root: &Path) -> u64 {
    let kept: std::collections::HashSet<&str> = files.iter().map(|f| f.key.as_str()).collect();
    let disk = DiskService::new(root.to_path_buf());
    let mut removed = 0;
    for key in old_keys.iter().filter(|k| !kept.contains(k.as_str())) {
        if let Some(path) = disk.path_for(key) {
            if std::fs::remove_file(path).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// A directory and those of its parents that did not exist before the import: removed again
/// (each if empty, the deepest first) unless [`MadeDirs::keep`] is called.
#[derive(Debug)]
pub struct MadeDirs {
    dirs: Vec<PathBuf>,
}

impl MadeDirs {
    /// Notes which of `dir` and its parents are missing now.
    pub fn around(dir: &Path) -> Self {
        let mut dirs = Vec::new();
        let mut at = Some(dir.to_path_buf());
        while let Some(dir) = at {
            if dir.exists() || dir.as_os_str().is_empty() {
                break;
            }
            at = dir.parent().map(Path::to_path_buf);
            dirs.push(dir);
        }
        Self { dirs }
    }

    /// Keeps them (the import succeeded).
    pub fn keep(mut self) {
        self.dirs.clear();
    }
}

impl Drop for MadeDirs {
    fn drop(&mut self) {
        for dir in &self.dirs {
            let _ = std::fs::remove_dir(dir);
        }
    }
}
