//! The blobs' files, copied into the export's disk service (`files/<key[0,2]>/<key[2,4]>/<key>`,
//! Active Storage's `DiskService#path_for`, Campfire's `local` service) from wherever Hearth
//! keeps them: its own disk service, or the S3 bucket of a server run with `--storage s3`.
//! Each copied file is checked against its blob row: its size against `byte_size`, the base64
//! MD5 of what was written against `checksum`.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use anyhow::Context as _;
use rusqlite::Connection;

use super::rows::check;
use crate::storage::disk::DiskService;
use crate::storage::s3::{S3Service, S3_SERVICE};
use crate::transfer::{checksum, Progress};

/// A blob whose file is copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFile {
    /// `active_storage_blobs.id`.
    pub id: i64,
    /// The service key (the file's name).
    pub key: String,
    /// Where Hearth keeps it (`local`, or `amazon` for S3).
    pub service: String,
    /// Its size in bytes, as the row says.
    pub byte_size: u64,
    /// Base64 MD5, as the row says (Active Storage allows none).
    pub checksum: Option<String>,
    /// Whether a record holds it (a message, an avatar, the logo, a variant).
    pub attached: bool,
}

/// Every blob of Hearth's `source`, by id.
///
/// # Errors
/// A query SQLite refuses.
pub fn blobs(source: &Connection) -> rusqlite::Result<Vec<BlobFile>> {
    let mut select = source.prepare(
        "SELECT b.id, b.key, b.service_name, b.byte_size, b.checksum, \
         EXISTS (SELECT 1 FROM active_storage_attachments a WHERE a.blob_id = b.id) \
         FROM active_storage_blobs b ORDER BY b.id",
    )?;
    let rows = select.query_map([], |r| {
        Ok(BlobFile {
            id: r.get(0)?,
            key: r.get(1)?,
            service: r.get(2)?,
            byte_size: u64::try_from(r.get::<_, i64>(3)?).unwrap_or(0),
            checksum: r.get(4)?,
            attached: r.get(5)?,
        })
    })?;
    rows.collect()
}

/// Where the files come from.
#[derive(Debug)]
pub struct Sources<'a> {
    /// Hearth's disk service (`--storage-root`).
    pub disk: DiskService,
    /// Hearth's S3 bucket, when the server stores files there (`--s3-*`).
    pub s3: Option<&'a S3Service>,
}

/// What copying the files did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Copied {
    /// Files copied and verified.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Of them, files whose checksum matched their row's (the others' rows have none; their
    /// size was checked).
    pub checksums: u64,
    /// Of them, files read from S3.
    pub from_s3: u64,
    /// Blobs that no record holds and that have no file (a direct upload never finished):
    /// their rows are exported as they are, as Campfire keeps such rows too.
    pub unattached_without_file: Vec<i64>,
}

/// Copies the file of every blob of `blobs` into the disk service at `root` and verifies it.
///
/// # Errors
/// An attached blob whose file is missing, a blob in S3 while no bucket is given, a key the
/// disk service cannot store, a size or checksum other than the row's (each named with the
/// blob's id and key), a failed write, or an interruption.
pub async fn copy_all(
    blobs: &[BlobFile],
    sources: &Sources<'_>,
    root: &Path,
    progress: &mut Progress,
    interrupted: &AtomicBool,
) -> anyhow::Result<Copied> {
    let target = DiskService::new(root.to_path_buf());
    let mut copied = Copied::default();
    for blob in blobs {
        check(interrupted)?;
        let to = target.path_for(&blob.key).with_context(|| {
            format!(
                "blob {}: the key {:?} is not one a disk service can store",
                blob.id, blob.key
            )
        })?;
        if let Some(parent) = to.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        if !fetch(blob, sources, &to).await? {
            let _ = tokio::fs::remove_file(&to).await;
            anyhow::ensure!(
                !blob.attached,
                "blob {} ({}): its file is missing from {}",
                blob.id,
                blob.key,
                describe(blob, sources)
            );
            copied.unattached_without_file.push(blob.id);
            continue;
        }
        let checked = verify(blob.clone(), to).await?;
        copied.files += 1;
        copied.bytes += blob.byte_size;
        copied.checksums += u64::from(checked);
        copied.from_s3 += u64::from(blob.service == S3_SERVICE);
        progress.inc(blob.byte_size);
    }
    Ok(copied)
}

/// Copies `blob`'s file to `to`; false when the source has no such file.
async fn fetch(blob: &BlobFile, sources: &Sources<'_>, to: &Path) -> anyhow::Result<bool> {
    if blob.service == S3_SERVICE {
        let s3 = sources.s3.with_context(|| {
            format!(
                "blob {} ({}) is in S3 (service {S3_SERVICE}): give the bucket as `hearth serve` \
                 has it (--s3-endpoint, --s3-bucket, --s3-region and the keys)",
                blob.id, blob.key
            )
        })?;
        return Ok(s3.download_to(&blob.key, to).await);
    }
    let from = sources.disk.path_for(&blob.key).with_context(|| {
        format!(
            "blob {}: the key {:?} is not one a disk service stores",
            blob.id, blob.key
        )
    })?;
    match tokio::fs::copy(&from, to).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(anyhow::anyhow!("copying {}: {e}", from.display())),
    }
}

/// Where `blob`'s file was looked for, for the message of a missing one.
fn describe(blob: &BlobFile, sources: &Sources<'_>) -> String {
    if blob.service == S3_SERVICE {
        "the S3 bucket".to_owned()
    } else {
        sources.disk.path_for(&blob.key).map_or_else(
            || "the disk service".to_owned(),
            |p| p.display().to_string(),
        )
    }
}

/// Checks the copied file at `to` against `blob`'s row (size, then checksum when the row has
/// one) and flushes it to disk; returns whether a checksum was compared.
async fn verify(blob: BlobFile, to: PathBuf) -> anyhow::Result<bool> {
    tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&to)?;
        let size = file.metadata()?.len();
        anyhow::ensure!(
            size == blob.byte_size,
            "blob {} ({}): the file has {size} bytes, the row says {}",
            blob.id,
            blob.key,
            blob.byte_size
        );
        file.sync_all()?;
        let Some(expected) = blob.checksum.as_deref() else {
            return Ok(false);
        };
        let found = checksum(&to)?;
        anyhow::ensure!(
            found == expected,
            "blob {} ({}): the file's checksum is {found}, the row says {expected}",
            blob.id,
            blob.key
        );
        Ok(true)
    })
    .await?
}
