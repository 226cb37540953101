//! Active Storage's disk service (`lib/active_storage/service/disk_service.rb`): a blob's bytes
//! at `<root>/<key[0..2]>/<key[2..4]>/<key>`.
//!
//! Uploads are written to `<root>/tmp/` while their size and MD5 are counted, and renamed into
//! place only when both match what was declared: a refused upload leaves nothing behind.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::{Stream, StreamExt};
use md5::Digest as _;
use tokio::io::AsyncWriteExt;

/// Bytes of an upload kept in memory for identification and analysis (its first 8 KiB).
pub const HEAD_BYTES: usize = 8 * 1024;

pub use super::service::UploadError;

/// What an upload wrote.
#[derive(Clone, Debug)]
pub struct Written {
    /// Bytes written.
    pub byte_size: u64,
    /// Base64 of their MD5 (Active Storage's `checksum`).
    pub checksum: String,
    /// The first [`HEAD_BYTES`] bytes.
    pub head: Vec<u8>,
}

/// The disk service at a root directory.
#[derive(Clone, Debug)]
pub struct DiskService {
    root: PathBuf,
}

/// Whether `key` is safe as a file name: 4 to 64 ASCII letters, digits, `-` or `_`.
pub fn valid_key(key: &str) -> bool {
    (4..=64).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl DiskService {
    /// The service at `root` (created on first write).
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// `path_for(key)`: `<root>/ab/cd/<key>`; `None` for a key that is not [`valid_key`].
    pub fn path_for(&self, key: &str) -> Option<PathBuf> {
        valid_key(key).then(|| self.root.join(&key[0..2]).join(&key[2..4]).join(key))
    }

    /// Where uploads are written before they are checked (`<root>/tmp`).
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// Whether the file of `key` exists.
    pub async fn exists(&self, key: &str) -> bool {
        match self.path_for(key) {
            Some(path) => tokio::fs::metadata(path).await.is_ok(),
            None => false,
        }
    }

    /// Streams `body` into the file of `key`. Refuses (keeping nothing) past `max` bytes,
    /// a total other than `expected_len`, or an MD5 other than `expected_checksum` (base64).
    pub async fn upload<S, E>(
        &self,
        key: &str,
        mut body: S,
        max: u64,
        expected_len: Option<u64>,
        expected_checksum: Option<&str>,
    ) -> Result<Written, UploadError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
    {
        let path = self.path_for(key).ok_or(UploadError::InvalidKey)?;
        let tmp_dir = self.root.join("tmp");
        tokio::fs::create_dir_all(&tmp_dir).await?;
        let tmp = tmp_dir.join(format!("{key}.{}", uuid::Uuid::new_v4().simple()));
        let result = async {
            let mut file = tokio::fs::File::create(&tmp).await?;
            let mut md5 = md5::Md5::new();
            let mut size: u64 = 0;
            let mut head = Vec::new();
            let limit = expected_len.map_or(max, |n| n.min(max));
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|_| UploadError::Body)?;
                size += chunk.len() as u64;
                if size > limit {
                    return Err(if size > max {
                        UploadError::TooLarge(max)
                    } else {
                        UploadError::LengthMismatch
                    });
                }
                if head.len() < HEAD_BYTES {
                    let take = (HEAD_BYTES - head.len()).min(chunk.len());
                    head.extend_from_slice(&chunk[..take]);
                }
                md5.update(&chunk);
                file.write_all(&chunk).await?;
            }
            if expected_len.is_some_and(|n| n != size) {
                return Err(UploadError::LengthMismatch);
            }
            let checksum = STANDARD.encode(md5.finalize());
            if expected_checksum.is_some_and(|c| c != checksum) {
                return Err(UploadError::ChecksumMismatch);
            }
            file.flush().await?;
            file.sync_all().await?;
            Ok(Written {
                byte_size: size,
                checksum,
                head,
            })
        }
        .await;
        match result {
            Ok(written) => {
                if let Some(dir) = path.parent() {
                    tokio::fs::create_dir_all(dir).await?;
                }
                tokio::fs::rename(&tmp, &path).await?;
                Ok(written)
            }
            Err(e) => {
                let _ = tokio::fs::remove_file(&tmp).await;
                Err(e)
            }
        }
    }

    /// Writes `bytes` as the file of `key` (a variant the server made).
    pub async fn write(&self, key: &str, bytes: &[u8]) -> Result<(), UploadError> {
        let path = self.path_for(key).ok_or(UploadError::InvalidKey)?;
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir).await?;
        }
        let tmp = path.with_extension("tmp");
        tokio::fs::write(&tmp, bytes).await?;
        tokio::fs::rename(&tmp, &path).await?;
        Ok(())
    }

    /// The whole file of `key` (a variant the server made: small); None when missing.
    pub async fn read(&self, key: &str) -> Option<Vec<u8>> {
        tokio::fs::read(self.path_for(key)?).await.ok()
    }

    /// Removes the file of `key` (and its emptied folders); a missing file is no error.
    pub async fn delete(&self, key: &str) {
        if let Some(path) = self.path_for(key) {
            remove_with_empty_folders(&path).await;
        }
    }
}

/// Removes the file at `path` of a key and the two key folders above it when that emptied
/// them (`ab/cd/`); a missing file is no error.
pub async fn remove_with_empty_folders(path: &Path) {
    let _ = tokio::fs::remove_file(path).await;
    let mut dir: Option<&Path> = path.parent();
    for _ in 0..2 {
        match dir {
            Some(d) if tokio::fs::remove_dir(d).await.is_ok() => dir = d.parent(),
            _ => break,
        }
    }
}

impl super::service::Service for DiskService {
    fn name(&self) -> &'static str {
        super::DISK_SERVICE
    }

    fn adopt<'a>(
        &'a self,
        key: &'a str,
        staged: &'a Path,
    ) -> BoxFuture<'a, Result<(), UploadError>> {
        Box::pin(async move {
            let path = self.path_for(key).ok_or(UploadError::InvalidKey)?;
            if path != staged {
                if let Some(dir) = path.parent() {
                    tokio::fs::create_dir_all(dir).await?;
                }
                tokio::fs::rename(staged, &path).await?;
            }
            Ok(())
        })
    }

    fn write<'a>(
        &'a self,
        key: &'a str,
        bytes: &'a [u8],
    ) -> BoxFuture<'a, Result<(), UploadError>> {
        Box::pin(Self::write(self, key, bytes))
    }

    fn read<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<Vec<u8>>> {
        Box::pin(Self::read(self, key))
    }

    fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(Self::exists(self, key))
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(Self::delete(self, key))
    }

    fn open<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<super::Opened>> {
        Box::pin(async move {
            let file = tokio::fs::File::open(self.path_for(key)?).await.ok()?;
            let len = file.metadata().await.ok()?.len();
            // A disk file never changes under its key (an upload to a taken key is refused).
            Some(super::Opened {
                len,
                etag: format!("\"{key}\""),
                source: super::Source::Disk(file),
            })
        })
    }

    fn local_copy<'a>(
        &'a self,
        key: &'a str,
        _tmp_dir: &'a Path,
    ) -> BoxFuture<'a, Option<super::LocalCopy>> {
        Box::pin(async move {
            Some(super::LocalCopy {
                path: self.path_for(key)?,
                temporary: false,
            })
        })
    }

    fn verify_upload<'a>(
        &'a self,
        blob: &'a crate::db::blobs::Blob,
    ) -> BoxFuture<'a, Option<Vec<u8>>> {
        // Checked as it was written ([`DiskService::upload`]): read as it is.
        Box::pin(async move {
            use tokio::io::AsyncReadExt as _;
            let mut head = Vec::new();
            tokio::fs::File::open(self.path_for(&blob.key)?)
                .await
                .ok()?
                .take(HEAD_BYTES as u64)
                .read_to_end(&mut head)
                .await
                .ok()?;
            Some(head)
        })
    }

    fn direct_upload<'a>(
        &'a self,
        _blob: &'a crate::db::blobs::Blob,
    ) -> BoxFuture<'a, std::io::Result<super::service::DirectUpload>> {
        Box::pin(async { Ok(super::service::DirectUpload::ThroughServer) })
    }
}
