//! The storage seam: one Active Storage service (Rails' `ActiveStorage::Service`), where the
//! bytes of the blobs of one `active_storage_blobs.service_name` live.
//!
//! Two implementations stand beside it: the disk service ([`super::disk::DiskService`],
//! `local`) and the S3 service ([`super::s3::S3Service`], `amazon`). [`super::Storage`] holds
//! the ones configured, chosen once at start (`--storage`), and picks one per blob by its
//! `service_name`, as Rails' `ActiveStorage::Blob#service` does; new blobs go to the current
//! one. Nothing above the storage module asks which service a blob is in.
//!
//! Every method is keyed by the blob's `key`; each is a boxed future so the services can sit
//! behind one `dyn Service`.

use std::path::Path;

use futures_util::future::BoxFuture;

use super::{LocalCopy, Opened};
use crate::db::blobs::Blob;

/// Why an upload was refused; nothing is kept after any of them.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// More bytes than `--max-upload-bytes` (413).
    #[error("the file is larger than the upload limit of {0} bytes")]
    TooLarge(u64),
    /// A byte count other than the declared one (422).
    #[error("the upload's size does not match the declared byte size")]
    LengthMismatch,
    /// An MD5 other than the declared `Content-MD5`/checksum (422).
    #[error("the upload's checksum does not match")]
    ChecksumMismatch,
    /// The key is not one Hearth makes (422).
    #[error("invalid key")]
    InvalidKey,
    /// The request body failed while being read (400).
    #[error("the upload was interrupted")]
    Body,
    /// Writing failed (500).
    #[error("storage failure: {0}")]
    Io(#[from] std::io::Error),
}

/// How a browser's direct upload (Rails' `DirectUploadsController`) reaches a service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DirectUpload {
    /// Through this server's own `PUT /rails/active_storage/disk/:token` (the disk service's
    /// `url_for_direct_upload`).
    ThroughServer,
    /// Straight to the service at `url` (a presigned `PUT`, Rails' `S3Service`), with the
    /// extra request headers the client must send (`Content-MD5`).
    Presigned {
        /// The presigned URL.
        url: String,
        /// Header name and value pairs besides `Content-Type`.
        headers: Vec<(&'static str, String)>,
    },
}

/// One Active Storage service: the bytes of its blobs by key.
pub trait Service: Send + Sync + std::fmt::Debug {
    /// `active_storage_blobs.service_name` of its blobs (`local`, `amazon`).
    fn name(&self) -> &'static str;

    /// Takes the local file `staged` as the bytes of `key` (an upload the disk service streamed
    /// to disk and checked there): the disk service keeps it where it is, another service
    /// copies it and the staged file is removed either way.
    ///
    /// # Errors
    /// Copying failed (nothing is kept).
    fn adopt<'a>(
        &'a self,
        key: &'a str,
        staged: &'a Path,
    ) -> BoxFuture<'a, Result<(), UploadError>>;

    /// Writes `bytes` as `key` (a variant or picture the server made: small).
    ///
    /// # Errors
    /// Writing failed.
    fn write<'a>(&'a self, key: &'a str, bytes: &'a [u8])
        -> BoxFuture<'a, Result<(), UploadError>>;

    /// The whole file of `key` (small files: variants); None when missing or the service failed.
    fn read<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<Vec<u8>>>;

    /// Whether the file of `key` is there.
    fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool>;

    /// Removes the file of `key`; a missing one is no error.
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, ()>;

    /// The file of `key` opened for serving, its length and entity tag read before any byte
    /// (None when missing or the service failed).
    fn open<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<Opened>>;

    /// A file on the local disk with `key`'s bytes, for decoding: the file itself, or a
    /// temporary copy made in `tmp_dir` (removed when dropped).
    fn local_copy<'a>(
        &'a self,
        key: &'a str,
        tmp_dir: &'a Path,
    ) -> BoxFuture<'a, Option<LocalCopy>>;

    /// Checks a finished direct upload against `blob`'s record and returns its first
    /// [`super::disk::HEAD_BYTES`] bytes (to identify its type); None, with the file deleted,
    /// when it does not match or is missing.
    fn verify_upload<'a>(&'a self, blob: &'a Blob) -> BoxFuture<'a, Option<Vec<u8>>>;

    /// Where a browser sends the bytes of `blob` (Rails' `url_for_direct_upload`).
    ///
    /// # Errors
    /// Signing the URL failed.
    fn direct_upload<'a>(&'a self, blob: &'a Blob) -> BoxFuture<'a, std::io::Result<DirectUpload>>;
}
