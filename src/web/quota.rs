//! The per-user storage quota (`--max-storage-bytes-per-user`): the files a user uploaded
//! (their blobs' metadata names the uploader, `db::blobs::UPLOADER_KEY`), attached or not yet,
//! take at most this many bytes together. Every upload route keeps it: a direct upload's blob
//! record is refused at creation from its declared `byte_size`; a streamed file (the
//! composer's multipart form, a bot's `-F` file, a webhook's file answer, an avatar or logo
//! form) is cut at the bytes left, and its blob is inserted only if it still fits (one
//! statement under the write lock). A refusal is 413 ([`AppError::OverQuota`]) saying the
//! quota and how much is used, and nothing of the file is kept. Deleting a file (with its
//! message, avatar or logo) makes room at once; a direct upload never attached counts until
//! the purger removes it a day later.

use super::error::AppError;
use crate::db::blobs::{self, Blob, NewBlob};
use sqlx::SqlitePool;

/// The storage quota of the uploaders of one database: the handle the upload routes take.
#[derive(Debug, Clone, Copy)]
pub struct Quota<'a> {
    /// Where the blobs (and their uploaders, in their metadata) are.
    pub pool: &'a SqlitePool,
    /// `--max-storage-bytes-per-user` in bytes; 0: no quota.
    pub bytes: u64,
}

impl Quota<'_> {
    /// The quota in bytes, None when there is none (`--max-storage-bytes-per-user 0`).
    fn limit(self) -> Option<u64> {
        Some(self.bytes).filter(|q| *q > 0)
    }

    /// How many more bytes `user_id` may upload: None without a quota.
    ///
    /// # Errors
    /// A database failure.
    pub async fn room_left(self, user_id: i64) -> Result<Option<u64>, AppError> {
        let Some(quota) = self.limit() else {
            return Ok(None);
        };
        let used = blobs::uploaded_bytes(self.pool, user_id).await?;
        Ok(Some(quota.saturating_sub(used)))
    }

    /// The 413 of a streamed file of `user_id` cut at the bytes left (no size is known).
    pub async fn refusal(self, user_id: i64) -> AppError {
        let quota = self.limit().unwrap_or(0);
        match blobs::uploaded_bytes(self.pool, user_id).await {
            Ok(used) => {
                tracing::info!(
                    user_id,
                    used,
                    quota,
                    "upload over the storage quota refused"
                );
                AppError::OverQuota {
                    quota,
                    used,
                    size: None,
                }
            }
            Err(e) => e.into(),
        }
    }

    /// Inserts `new`, a blob `user_id` uploaded, within their quota (a plain insert without
    /// one).
    ///
    /// # Errors
    /// 413 ([`AppError::OverQuota`], nothing inserted) when the blob does not fit; a database
    /// failure.
    pub async fn insert_blob(self, user_id: i64, new: &NewBlob<'_>) -> Result<Blob, AppError> {
        let Some(quota) = self.limit() else {
            return Ok(blobs::insert(self.pool, new).await?);
        };
        match blobs::insert_within_quota(self.pool, new, user_id, quota).await? {
            Ok(blob) => Ok(blob),
            Err(used) => {
                let size = u64::try_from(new.byte_size).unwrap_or(0);
                tracing::info!(
                    user_id,
                    used,
                    quota,
                    size,
                    "upload over the storage quota refused"
                );
                Err(AppError::OverQuota {
                    quota,
                    used,
                    size: Some(size),
                })
            }
        }
    }
}
