//! Writing a backup's archive: the snapshot, the secrets, each blob's file by the snapshot's
//! list, then the manifest of what was written (see [`super::manifest`] for the layout).

use std::fs::File as FsFile;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use super::hashing::Hashing;
use super::manifest::{self, Entry, File, Manifest, Missing, Sealed};
use super::snapshot::Snapshot;
use crate::storage::disk::DiskService;
use crate::storage::DISK_SERVICE;
use crate::transfer::Progress;

/// What [`pack`] wrote, and what it found wrong on the disk service.
#[derive(Debug)]
pub struct Packed {
    /// The manifest written last.
    pub manifest: Manifest,
    /// Keys of files whose size or checksum differs from their blob's row (copied as they are).
    pub damaged: Vec<String>,
}

type Tar = tar::Builder<BufWriter<FsFile>>;

/// Writes the archive of `snapshot` into `out` (a new file), reading the blobs' files from
/// the disk service at `storage_root` and the secrets from `data_dir`; syncs it to disk.
///
/// # Errors
/// `out` exists or cannot be written, a file cannot be read, or a file changed size while it
/// was copied.
pub fn pack(
    out: &Path,
    snapshot: &Snapshot,
    storage_root: &Path,
    data_dir: &Path,
    show_progress: bool,
) -> anyhow::Result<Packed> {
    let file = create_private(out)?;
    let mut tar = tar::Builder::new(BufWriter::with_capacity(1 << 20, file));
    let mtime = u64::try_from(snapshot.taken_at_ms / 1000).unwrap_or(0);
    let local: u64 = snapshot
        .blobs
        .iter()
        .filter(|b| b.service_name == DISK_SERVICE)
        .map(|b| u64::try_from(b.byte_size).unwrap_or(0))
        .sum();
    let db_size = std::fs::metadata(&snapshot.path)?.len();
    let mut progress = Progress::new("backup", db_size + local, show_progress);
    let database = append_sealed(
        &mut tar,
        &Entry::Database,
        &snapshot.path,
        mtime,
        &mut progress,
    )?
    .ok_or_else(|| anyhow::anyhow!("the snapshot {} is gone", snapshot.path.display()))?;
    let mut manifest = Manifest {
        format: manifest::FORMAT.to_owned(),
        format_version: manifest::FORMAT_VERSION,
        hearth_version: env!("CARGO_PKG_VERSION").to_owned(),
        created_at: crate::rails::time::format_iso8601_millis(
            i128::from(snapshot.taken_at_ms) * 1_000_000,
        ),
        schema_version: snapshot.schema_version,
        database,
        counts: snapshot.counts.0.clone(),
        state: Vec::new(),
        files: Vec::new(),
        missing: Vec::new(),
        elsewhere: 0,
    };
    for name in manifest::STATE_FILES {
        let (entry, path) = (Entry::State(name.to_owned()), data_dir.join(name));
        if let Some(sealed) = append_sealed(&mut tar, &entry, &path, mtime, &mut progress)? {
            let name = name.to_owned();
            manifest.state.push(Sealed { name, ..sealed });
        }
    }
    let damaged = append_files(
        &mut tar,
        snapshot,
        storage_root,
        mtime,
        &mut manifest,
        &mut progress,
    )?;
    progress.finish();
    let json = serde_json::to_vec_pretty(&manifest)?;
    let mut head = header(json.len() as u64, mtime);
    tar.append_data(&mut head, manifest::MANIFEST, &json[..])?;
    let mut writer = tar.into_inner()?;
    writer.flush()?;
    writer
        .into_inner()
        .map_err(|e| anyhow::anyhow!("writing {}: {}", out.display(), e.error()))?
        .sync_all()?;
    Ok(Packed { manifest, damaged })
}

/// Creates the new file `out`, readable by its owner only: it holds everyone's messages and the
/// secrets.
fn create_private(out: &Path) -> anyhow::Result<FsFile> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(out)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", out.display()))
}

/// Appends each blob of the disk service listed in the snapshot: its file as it is on disk,
/// or a [`Missing`] when there is none; counts the other services' blobs. Returns the keys
/// whose file differs from its row.
fn append_files(
    tar: &mut Tar,
    snapshot: &Snapshot,
    storage_root: &Path,
    mtime: u64,
    manifest: &mut Manifest,
    progress: &mut Progress,
) -> anyhow::Result<Vec<String>> {
    let disk = DiskService::new(storage_root.to_path_buf());
    let mut damaged = Vec::new();
    for blob in &snapshot.blobs {
        if blob.service_name != DISK_SERVICE {
            manifest.elsewhere += 1;
            continue;
        }
        let opened = disk.path_for(&blob.key).map(FsFile::open);
        let file = match opened {
            Some(Ok(file)) => file,
            Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                manifest.missing.push(Missing {
                    key: blob.key.clone(),
                    attached: blob.attached,
                });
                continue;
            }
            Some(Err(e)) => anyhow::bail!("reading the file of blob {}: {e}", blob.key),
            None => anyhow::bail!("blob key {:?} is not one Active Storage writes", blob.key),
        };
        let size = file.metadata()?.len();
        let mut reader = Hashing::<_, md5::Md5>::new(file.take(size), Some(&mut *progress));
        let entry = Entry::File(blob.key.clone());
        tar.append_data(&mut header(size, mtime), entry.name(), &mut reader)?;
        anyhow::ensure!(
            reader.read_so_far() == size,
            "the file of blob {} shrank while it was read",
            blob.key
        );
        let (size, checksum) = reader.base64();
        let row_size = u64::try_from(blob.byte_size).ok();
        if row_size != Some(size) || blob.checksum.as_deref().is_some_and(|c| c != checksum) {
            damaged.push(blob.key.clone());
        }
        manifest.files.push(File {
            key: blob.key.clone(),
            size,
            checksum,
        });
    }
    Ok(damaged)
}

/// Appends the file at `path` as `entry`, sealed by its SHA-256; None when there is no file.
fn append_sealed(
    tar: &mut Tar,
    entry: &Entry,
    path: &Path,
    mtime: u64,
    progress: &mut Progress,
) -> anyhow::Result<Option<Sealed>> {
    let file = match FsFile::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => anyhow::bail!("reading {}: {e}", path.display()),
    };
    let size = file.metadata()?.len();
    let mut reader = Hashing::<_, sha2::Sha256>::new(file.take(size), Some(progress));
    tar.append_data(&mut header(size, mtime), entry.name(), &mut reader)?;
    anyhow::ensure!(
        reader.read_so_far() == size,
        "{} shrank while it was read",
        path.display()
    );
    let (size, sha256) = reader.hex();
    Ok(Some(Sealed {
        name: entry.name(),
        size,
        sha256,
    }))
}

/// The header of a regular file of `size` bytes, readable by its owner only (the archive holds
/// secrets and everyone's messages).
fn header(size: u64, mtime: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(0o600);
    header.set_mtime(mtime);
    header
}
