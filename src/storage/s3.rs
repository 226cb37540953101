//! Active Storage's S3 service (`lib/active_storage/service/s3_service.rb`) for any
//! S3-compatible server, through the `object_store` crate: objects named by the blob's key in
//! one bucket; direct uploads go straight to the bucket by a presigned `PUT` URL (SigV4, as
//! Rails' `url_for_direct_upload` hands out), everything else through the server.
//!
//! Reads are proxied (Rails' `rails_storage_proxy` mode): the disk-service URL a redirect hands
//! out streams the object through the server with Hearth's own `Content-Type`,
//! `Content-Disposition` and sandboxing headers, so a bucket never serves a runnable file to a
//! browser inline.
//!
//! A presigned URL does not bind the body, so a direct upload is checked when it is attached:
//! the object's size must be the declared `byte_size` and its `ETag` (the MD5 of a single
//! `PUT`) the declared checksum; anything else is deleted and refused.

use std::path::Path as FsPath;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::signer::Signer;
use object_store::{GetOptions, GetRange, ObjectStore, PutPayload, WriteMultipart};
use tokio::io::AsyncReadExt;

use super::disk::{UploadError, HEAD_BYTES};
use super::service::DirectUpload;
use crate::db::blobs::Blob;

/// The service name of S3 blobs in `active_storage_blobs.service_name` (Rails' `amazon`).
pub const S3_SERVICE: &str = "amazon";

/// Where the bucket is and how to sign in to it (`--s3-*`).
#[derive(Clone, Debug, Default)]
pub struct S3Config {
    /// The server's URL, e.g. `https://s3.eu-west-1.amazonaws.com` or `http://127.0.0.1:9000`.
    pub endpoint: String,
    /// The bucket.
    pub bucket: String,
    /// The region the requests are signed for.
    pub region: String,
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key.
    pub secret_access_key: String,
}

/// The S3 service of one bucket.
#[derive(Clone, Debug)]
pub struct S3Service {
    store: Arc<AmazonS3>,
}

/// What a head request found: the size in bytes and the `ETag` without its quotes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// Bytes.
    pub size: u64,
    /// The `ETag` (a single `PUT`'s is the hex MD5).
    pub e_tag: Option<String>,
}

impl S3Service {
    /// The service of `config`'s bucket (path-style requests; plain HTTP allowed for an
    /// endpoint that names it).
    ///
    /// # Errors
    /// A configuration `object_store` refuses.
    pub fn new(config: &S3Config) -> Result<Self, object_store::Error> {
        let store = AmazonS3Builder::new()
            .with_endpoint(&config.endpoint)
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_access_key_id(&config.access_key_id)
            .with_secret_access_key(&config.secret_access_key)
            .with_allow_http(config.endpoint.starts_with("http://"))
            .with_virtual_hosted_style_request(false)
            .build()?;
        Ok(Self {
            store: Arc::new(store),
        })
    }

    /// A presigned `PUT` URL of `key`, valid for `expires_in`.
    ///
    /// # Errors
    /// Signing failed (no credentials).
    pub async fn presigned_put(
        &self,
        key: &str,
        expires_in: Duration,
    ) -> Result<String, object_store::Error> {
        let url = self
            .store
            .signed_url(http::Method::PUT, &Path::from(key), expires_in)
            .await?;
        Ok(url.to_string())
    }

    /// Stores `bytes` as `key`.
    ///
    /// # Errors
    /// The request failed.
    pub async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), object_store::Error> {
        self.store
            .put(&Path::from(key), PutPayload::from(bytes))
            .await?;
        Ok(())
    }

    /// Streams the file at `path` into `key` (a multipart upload in 8 MiB parts, so a large
    /// file is never held in memory).
    ///
    /// # Errors
    /// Reading the file or a request failed (the multipart upload is aborted).
    pub async fn put_file(&self, key: &str, path: &FsPath) -> Result<(), std::io::Error> {
        let upload = self
            .store
            .put_multipart(&Path::from(key))
            .await
            .map_err(std::io::Error::other)?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, 8 * 1024 * 1024);
        let mut file = tokio::fs::File::open(path).await?;
        let mut buf = vec![0u8; 1024 * 1024];
        loop {
            let n = match file.read(&mut buf).await {
                Ok(n) => n,
                Err(e) => {
                    let _ = writer.abort().await;
                    return Err(e);
                }
            };
            if n == 0 {
                break;
            }
            if let Err(e) = writer.wait_for_capacity(4).await {
                let _ = writer.abort().await;
                return Err(std::io::Error::other(e));
            }
            writer.write(&buf[..n]);
        }
        writer.finish().await.map_err(std::io::Error::other)?;
        Ok(())
    }

    /// The whole object `key`; None when it is missing or the request failed.
    pub async fn get(&self, key: &str) -> Option<Vec<u8>> {
        let result = self.store.get(&Path::from(key)).await.ok()?;
        result.bytes().await.ok().map(|b| b.to_vec())
    }

    /// The first `n` bytes of `key`.
    pub async fn get_head(&self, key: &str, n: u64) -> Option<Vec<u8>> {
        let head = self.head(key).await?;
        if head.size == 0 {
            return Some(Vec::new());
        }
        let end = n.min(head.size);
        self.store
            .get_range(&Path::from(key), 0..end)
            .await
            .ok()
            .map(|b| b.to_vec())
    }

    /// The object `key` as a stream of chunks, with its size.
    pub async fn stream(
        &self,
        key: &str,
    ) -> Option<(u64, BoxStream<'static, std::io::Result<Bytes>>)> {
        let result = self.store.get(&Path::from(key)).await.ok()?;
        let size = result.meta.size;
        let stream = result
            .into_stream()
            .map(|chunk| chunk.map_err(std::io::Error::other))
            .boxed();
        Some((size, stream))
    }

    /// Bytes `range` of `key` (all when None) as a stream of chunks, only while its `ETag` is
    /// `e_tag` (when given; `If-Match`).
    ///
    /// # Errors
    /// The request failed, the object is missing or its `ETag` is another.
    pub async fn stream_range(
        &self,
        key: &str,
        range: Option<std::ops::Range<u64>>,
        e_tag: Option<String>,
    ) -> std::io::Result<BoxStream<'static, std::io::Result<Bytes>>> {
        let options = GetOptions {
            range: range.map(GetRange::Bounded),
            if_match: e_tag,
            ..GetOptions::default()
        };
        let result = self
            .store
            .get_opts(&Path::from(key), options)
            .await
            .map_err(std::io::Error::other)?;
        Ok(result
            .into_stream()
            .map(|chunk| chunk.map_err(std::io::Error::other))
            .boxed())
    }

    /// Size and `ETag` of `key`; None when it is missing.
    pub async fn head(&self, key: &str) -> Option<Head> {
        let meta = self.store.head(&Path::from(key)).await.ok()?;
        Some(Head {
            size: meta.size,
            e_tag: meta.e_tag.map(|t| t.trim_matches('"').to_owned()),
        })
    }

    /// Copies `key` into the file at `to`; false when it could not.
    pub async fn download_to(&self, key: &str, to: &FsPath) -> bool {
        use tokio::io::AsyncWriteExt as _;
        let Some((_, mut stream)) = self.stream(key).await else {
            return false;
        };
        let Ok(mut file) = tokio::fs::File::create(to).await else {
            return false;
        };
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) if file.write_all(&chunk).await.is_ok() => {}
                _ => return false,
            }
        }
        file.flush().await.is_ok()
    }

    /// Deletes `key`; a missing object is no error.
    pub async fn delete(&self, key: &str) {
        if let Err(e) = self.store.delete(&Path::from(key)).await {
            if !matches!(e, object_store::Error::NotFound { .. }) {
                tracing::warn!(key, error = %e, "deleting an object failed");
            }
        }
    }
}

impl super::service::Service for S3Service {
    fn name(&self) -> &'static str {
        S3_SERVICE
    }

    fn adopt<'a>(
        &'a self,
        key: &'a str,
        staged: &'a FsPath,
    ) -> BoxFuture<'a, Result<(), UploadError>> {
        Box::pin(async move {
            let result = self.put_file(key, staged).await;
            super::disk::remove_with_empty_folders(staged).await;
            Ok(result?)
        })
    }

    fn write<'a>(
        &'a self,
        key: &'a str,
        bytes: &'a [u8],
    ) -> BoxFuture<'a, Result<(), UploadError>> {
        Box::pin(async move {
            self.put(key, bytes.to_vec())
                .await
                .map_err(std::io::Error::other)?;
            Ok(())
        })
    }

    fn read<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<Vec<u8>>> {
        Box::pin(self.get(key))
    }

    fn exists<'a>(&'a self, key: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move { self.head(key).await.is_some() })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(Self::delete(self, key))
    }

    fn open<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<super::Opened>> {
        Box::pin(async move {
            let head = self.head(key).await?;
            let e_tag = head.e_tag.map(|t| format!("\"{t}\""));
            Some(super::Opened {
                len: head.size,
                etag: e_tag.clone().unwrap_or_else(|| format!("\"{key}\"")),
                source: super::Source::S3 {
                    s3: self.clone(),
                    key: key.to_owned(),
                    e_tag,
                },
            })
        })
    }

    fn local_copy<'a>(
        &'a self,
        key: &'a str,
        tmp_dir: &'a FsPath,
    ) -> BoxFuture<'a, Option<super::LocalCopy>> {
        Box::pin(async move {
            tokio::fs::create_dir_all(tmp_dir).await.ok()?;
            let copy = super::LocalCopy {
                path: tmp_dir.join(format!("{key}.{}", uuid::Uuid::new_v4().simple())),
                temporary: true,
            };
            self.download_to(key, &copy.path).await.then_some(copy)
        })
    }

    fn verify_upload<'a>(&'a self, blob: &'a Blob) -> BoxFuture<'a, Option<Vec<u8>>> {
        // The browser sent the bytes to the bucket: its size must be the blob's `byte_size`
        // and its `ETag` (a single `PUT`'s MD5, in hex) the blob's `checksum`.
        Box::pin(async move {
            let head = self.head(&blob.key).await?;
            let md5_hex = blob.checksum.as_deref().and_then(|c| {
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, c)
                    .ok()
                    .map(hex::encode)
            });
            let size_ok = i64::try_from(head.size).ok() == Some(blob.byte_size);
            let md5_ok = md5_hex.is_some() && head.e_tag.as_deref() == md5_hex.as_deref();
            if !(size_ok && md5_ok) {
                tracing::info!(
                    blob_id = blob.id,
                    "a direct upload does not match its record: deleted"
                );
                Self::delete(self, &blob.key).await;
                return None;
            }
            self.get_head(&blob.key, HEAD_BYTES as u64).await
        })
    }

    fn direct_upload<'a>(&'a self, blob: &'a Blob) -> BoxFuture<'a, std::io::Result<DirectUpload>> {
        // Rails' `S3Service#url_for_direct_upload`: a presigned PUT straight to the bucket,
        // with the checksum the bucket checks the body against.
        Box::pin(async move {
            let url = self
                .presigned_put(&blob.key, super::URL_EXPIRES_IN)
                .await
                .map_err(std::io::Error::other)?;
            let headers = blob
                .checksum
                .iter()
                .map(|c| ("Content-MD5", c.clone()))
                .collect();
            Ok(DirectUpload::Presigned { url, headers })
        })
    }
}
