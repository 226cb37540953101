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
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::signer::Signer;
use object_store::{GetOptions, GetRange, ObjectStore, PutPayload, WriteMultipart};
use tokio::io::AsyncReadExt;

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
