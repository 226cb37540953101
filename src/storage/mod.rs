//! Active Storage's server side: the disk service, identification of uploaded content, the
//! URLs of blobs, representations and the disk service, and image processing.
//!
//! - [`disk`]: `ActiveStorage::Service::DiskService`: files at `<root>/ab/cd/<key>`, written
//!   through a temporary file with their size and MD5 checked before they appear.
//! - [`identify`]: the content type from the bytes (Marcel's job in Rails), never the client's
//!   claim, and what may be shown inline.
//! - [`service`]: the seam, one [`Service`] per `service_name`: the disk service and the S3
//!   service ([`s3`]) beside it; [`Storage`] picks one per blob.
//! - [`process`]: width and height, the `thumb` variant (`resize_to_limit: [1200, 800]`),
//!   square variants for avatars and icons; decode limits against decompression bombs.
//!
//! URLs are those of Rails' `active_storage` routes (`config/routes.rb` of the engine), signed
//! by [`ActiveStorageVerifier`], so a Rails app sharing `secret_key_base` resolves them.

pub mod disk;
pub mod identify;
pub mod process;
pub mod s3;
pub mod service;

pub use service::{DirectUpload, Service};

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::db::blobs::Blob;
use crate::rails::marshal::Value;
use crate::rails::ActiveStorageVerifier;

/// The service name of the disk service in `active_storage_blobs.service_name` (Rails'
/// `config/storage.yml` default, `local`).
pub const DISK_SERVICE: &str = "local";

/// How long a disk service URL (download or upload) stays valid (Rails'
/// `ActiveStorage.service_urls_expire_in`, 5 minutes).
pub const URL_EXPIRES_IN: Duration = Duration::from_secs(5 * 60);

/// How long a direct upload may stay unattached before it is purged (a day).
pub const UNATTACHED_TTL: Duration = Duration::from_secs(24 * 3600);

/// The window of the per-user upload limit.
pub const UPLOAD_WINDOW: Duration = Duration::from_secs(600);

/// What every request and job of the file side needs.
#[derive(Debug)]
pub struct Storage {
    /// `ActiveStorage.verifier`.
    pub verifier: Arc<ActiveStorageVerifier>,
    /// The disk service: where uploads are staged and checked before any service takes them,
    /// and the service of `local` blobs.
    pub disk: disk::DiskService,
    /// `--max-upload-bytes`.
    pub max_upload_bytes: u64,
    uploads: Mutex<HashMap<i64, VecDeque<Instant>>>,
    upload_limit: u32,
    /// One image is processed at a time (processing is CPU work, kept off the post path).
    pub processing: tokio::sync::Semaphore,
    /// Who has an avatar, for the message partial of a new post.
    pub avatars: AvatarVersions,
    /// The services by name; the first is the one new blobs go to (`--storage`).
    services: Vec<Arc<dyn Service>>,
}

/// A file of a blob on the local disk, for decoding: the disk service's own file, or a
/// temporary copy of an S3 object (removed when this is dropped).
#[derive(Debug)]
pub struct LocalCopy {
    /// Where it is.
    pub path: std::path::PathBuf,
    temporary: bool,
}

impl Drop for LocalCopy {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Storage {
    /// A storage with the disk service at `root`, the one new blobs go to.
    pub fn new(
        verifier: ActiveStorageVerifier,
        root: std::path::PathBuf,
        max_upload_bytes: u64,
        upload_limit: u32,
    ) -> Self {
        let verifier = Arc::new(verifier);
        let disk = disk::DiskService::new(root);
        Self {
            verifier,
            services: vec![Arc::new(disk.clone())],
            disk,
            max_upload_bytes,
            uploads: Mutex::new(HashMap::new()),
            upload_limit,
            processing: tokio::sync::Semaphore::new(1),
            avatars: AvatarVersions::default(),
        }
    }

    /// This storage with new blobs going to S3 when `config` says `--storage s3`.
    ///
    /// # Errors
    /// `--storage s3` without an endpoint or bucket, or a configuration the client refuses.
    pub fn with_s3_from(self, config: &crate::config::Config) -> anyhow::Result<Self> {
        if config.storage != crate::config::StorageKind::S3 {
            return Ok(self);
        }
        anyhow::ensure!(
            !config.s3_endpoint.is_empty() && !config.s3_bucket.is_empty(),
            "--storage s3 needs --s3-endpoint and --s3-bucket"
        );
        let s3 = s3::S3Service::new(&s3::S3Config {
            endpoint: config.s3_endpoint.clone(),
            bucket: config.s3_bucket.clone(),
            region: config.s3_region.clone(),
            access_key_id: config.s3_access_key_id.clone(),
            secret_access_key: config.s3_secret_access_key.0.clone(),
        })?;
        Ok(self.with_current(Arc::new(s3)))
    }

    /// This storage with new blobs going to `service` (the disk service's blobs stay read
    /// from the disk).
    #[must_use]
    pub fn with_current(mut self, service: Arc<dyn Service>) -> Self {
        self.services.retain(|s| s.name() != service.name());
        self.services.insert(0, service);
        self
    }

    /// The service new blobs go to.
    pub fn current(&self) -> &dyn Service {
        &*self.services[0]
    }

    /// The service of blobs whose `service_name` is `name`. A name no configured service has
    /// (a row another app wrote, an `amazon` blob on a server without `--storage s3`) is
    /// looked for on the disk: there it is found, or served as missing.
    pub fn service(&self, name: &str) -> &dyn Service {
        match self.services.iter().find(|s| s.name() == name) {
            Some(s) => &**s,
            None => &self.disk,
        }
    }

    /// The service new blobs go to: [`s3::S3_SERVICE`] or [`DISK_SERVICE`].
    pub fn service_name(&self) -> &'static str {
        self.current().name()
    }

    /// After [`disk::DiskService::upload`] staged `key` on the disk: the current service
    /// takes it ([`Service::adopt`], the disk service where it is). Returns the blob's service name.
    ///
    /// # Errors
    /// The current service could not take it (nothing is kept).
    pub async fn promote(&self, key: &str) -> Result<&'static str, disk::UploadError> {
        let staged = self
            .disk
            .path_for(key)
            .ok_or(disk::UploadError::InvalidKey)?;
        let current = self.current();
        current.adopt(key, &staged).await?;
        Ok(current.name())
    }

    /// Writes `bytes` as `key` in the current service; returns its name.
    ///
    /// # Errors
    /// Writing failed.
    pub async fn write(&self, key: &str, bytes: &[u8]) -> Result<&'static str, disk::UploadError> {
        let current = self.current();
        current.write(key, bytes).await?;
        Ok(current.name())
    }

    /// The whole file of `key` in `service` (small files: variants).
    pub async fn read(&self, service: &str, key: &str) -> Option<Vec<u8>> {
        self.service(service).read(key).await
    }

    /// Whether `blob`'s bytes are there.
    pub async fn exists(&self, blob: &Blob) -> bool {
        self.service(&blob.service_name).exists(&blob.key).await
    }

    /// Removes the file of `key` in `service`.
    pub async fn delete(&self, service: &str, key: &str) {
        self.service(service).delete(key).await
    }

    /// The file of `key` in `service`, opened for serving: its length and entity tag, read
    /// before any byte (None when it is missing or the service failed).
    pub async fn open(&self, service: &str, key: &str) -> Option<Opened> {
        self.service(service).open(key).await
    }

    /// A local file with `blob`'s bytes, for decoding.
    pub async fn local_copy(&self, blob: &Blob) -> Option<LocalCopy> {
        let tmp_dir = self.disk.tmp_dir();
        self.service(&blob.service_name)
            .local_copy(&blob.key, &tmp_dir)
            .await
    }

    /// Checks a direct upload against its record ([`Service::verify_upload`]): its first
    /// [`disk::HEAD_BYTES`] bytes, or None (the file deleted) when it does not match.
    pub async fn verify_upload(&self, blob: &Blob) -> Option<Vec<u8>> {
        self.service(&blob.service_name).verify_upload(blob).await
    }

    /// Counts an upload by `user_id`; false (not counted) past `--upload-rate-limit` uploads
    /// in [`UPLOAD_WINDOW`].
    pub fn allow_upload(&self, user_id: i64, now: Instant) -> bool {
        if self.upload_limit == 0 {
            return true;
        }
        let mut uploads = self.uploads.lock();
        if uploads.len() > 10_000 {
            uploads.retain(|_, q| {
                q.back()
                    .is_some_and(|t| now.duration_since(*t) < UPLOAD_WINDOW)
            });
        }
        let q = uploads.entry(user_id).or_default();
        while q
            .front()
            .is_some_and(|t| now.duration_since(*t) >= UPLOAD_WINDOW)
        {
            q.pop_front();
        }
        if q.len() >= self.upload_limit as usize {
            return false;
        }
        q.push_back(now);
        true
    }

    /// A disk service download URL of `blob` (Rails' `DiskService#url`): a path with a
    /// `blob_key` token that expires in [`URL_EXPIRES_IN`], carrying the key, the content type
    /// to serve and the `Content-Disposition`.
    pub fn disk_url(&self, blob: &Blob, download: bool, now_ms: i64) -> String {
        let content_type = identify::served_content_type(blob.content_type.as_deref());
        let inline = !download && identify::inline_allowed(blob.content_type.as_deref());
        // Sanitized again on the way out, as Rails' `Filename#to_s` is: rows another app wrote.
        let disposition = content_disposition(inline, &sanitize_filename(&blob.filename));
        let token = self.verifier.generate(
            &Value::Hash(vec![
                (Value::Sym("key".into()), Value::Str(blob.key.clone())),
                (Value::Sym("disposition".into()), Value::Str(disposition)),
                (
                    Value::Sym("content_type".into()),
                    Value::Str(content_type.to_owned()),
                ),
                (
                    Value::Sym("service_name".into()),
                    Value::Str(blob.service_name.clone()),
                ),
            ]),
            "blob_key",
            Some(now_ms + URL_EXPIRES_IN.as_millis() as i64),
        );
        format!(
            "/rails/active_storage/disk/{}/{}",
            segment(&token),
            segment(&blob.filename)
        )
    }

    /// The upload URL of a direct upload (Rails' `DiskService#url_for_direct_upload`): a path
    /// with a `blob_token` token that expires in [`URL_EXPIRES_IN`], carrying the key, content
    /// type, length and checksum the upload must match.
    pub fn direct_upload_url(&self, blob: &Blob, now_ms: i64) -> String {
        let token = self.verifier.generate(
            &Value::Hash(vec![
                (Value::Sym("key".into()), Value::Str(blob.key.clone())),
                (
                    Value::Sym("content_type".into()),
                    blob.content_type.clone().map_or(Value::Nil, Value::Str),
                ),
                (
                    Value::Sym("content_length".into()),
                    Value::Int(blob.byte_size),
                ),
                (
                    Value::Sym("checksum".into()),
                    blob.checksum.clone().map_or(Value::Nil, Value::Str),
                ),
                (
                    Value::Sym("service_name".into()),
                    Value::Str(blob.service_name.clone()),
                ),
            ]),
            "blob_token",
            Some(now_ms + URL_EXPIRES_IN.as_millis() as i64),
        );
        format!("/rails/active_storage/disk/{}", segment(&token))
    }
}

/// A stored file opened for serving ([`Storage::open`]).
#[derive(Debug)]
pub struct Opened {
    /// Its length in bytes.
    pub len: u64,
    /// Its strong entity tag, quoted (`"<key>"` on the disk, the object's `ETag` on S3).
    pub etag: String,
    source: Source,
}

#[derive(Debug)]
enum Source {
    Disk(tokio::fs::File),
    S3 {
        s3: s3::S3Service,
        key: String,
        e_tag: Option<String>,
    },
}

impl Opened {
    /// Bytes `range` of the file (offsets from 0, within [`Opened::len`]; None: all of it) as a
    /// stream of chunks. On S3 a ranged `GET` (`object_store`'s `GetOptions::range`) with
    /// `If-Match` of the tag read at opening, so the bytes are of the same object.
    ///
    /// # Errors
    /// Seeking the file or the request failed (the object changed since it was opened).
    pub async fn stream(
        self,
        range: Option<std::ops::RangeInclusive<u64>>,
    ) -> std::io::Result<futures_util::stream::BoxStream<'static, std::io::Result<bytes::Bytes>>>
    {
        use futures_util::StreamExt as _;
        use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _};
        match self.source {
            Source::Disk(mut file) => match range {
                None => Ok(file_stream(file).boxed()),
                Some(range) => {
                    file.seek(std::io::SeekFrom::Start(*range.start())).await?;
                    let n = range.end() - range.start() + 1;
                    Ok(file_stream(file.take(n)).boxed())
                }
            },
            Source::S3 { s3, key, e_tag } => {
                let range = range.map(|r| *r.start()..r.end() + 1);
                s3.stream_range(&key, range, e_tag).await
            }
        }
    }
}

/// A server's copy of who has an avatar (user id → the avatar's blob id), read from the
/// database on first use and updated by every change made through this server: a post needs
/// its author's avatar version without a query.
#[derive(Debug, Default)]
pub struct AvatarVersions {
    known: RwLock<HashMap<i64, Option<i64>>>,
}

impl AvatarVersions {
    /// The blob id of `user_id`'s avatar (its URL's version), or None for the initials.
    ///
    /// # Errors
    /// Database failures.
    pub async fn get(&self, pool: &sqlx::SqlitePool, user_id: i64) -> sqlx::Result<Option<i64>> {
        if let Some(v) = self.known.read().get(&user_id) {
            return Ok(*v);
        }
        let v = crate::db::blobs::attached(pool, "avatar", crate::db::blobs::record::USER, user_id)
            .await?
            .map(|b| b.id);
        let mut known = self.known.write();
        if known.len() > 100_000 {
            known.clear();
        }
        known.insert(user_id, v);
        Ok(v)
    }

    /// Records `user_id`'s avatar version after a change.
    pub fn set(&self, user_id: i64, version: Option<i64>) {
        self.known.write().insert(user_id, version);
    }
}

/// The path of `user_id`'s avatar at `version` (None: no avatar, the initials).
pub fn avatar_path(user_id: i64, version: Option<i64>) -> String {
    format!("/users/{user_id}/avatar?v={}", version.unwrap_or(0))
}

/// The path of the logo at `version` (None: the stock icon), `small` for 192 px.
pub fn logo_path(version: Option<i64>, small: bool) -> String {
    format!(
        "/account/logo?{}v={}",
        if small { "size=small&" } else { "" },
        version.unwrap_or(0)
    )
}

/// A file (or any reader) as a stream of 64 KiB chunks.
pub fn file_stream<R>(
    file: R,
) -> impl futures_util::Stream<Item = std::io::Result<bytes::Bytes>> + Send + 'static
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    futures_util::stream::unfold(file, |mut file| async move {
        use tokio::io::AsyncReadExt as _;
        let mut buf = vec![0u8; 64 * 1024];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(bytes::Bytes::from(buf)), file))
            }
            Err(e) => Some((Err(e), file)),
        }
    })
}

/// The characters a path segment keeps unescaped: RFC 3986's unreserved ones. Everything
/// else, `/`, `+` and `=` of base64 tokens included, is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `text` escaped as one URL path segment.
pub fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// `rails_blob_path(blob)`: `/rails/active_storage/blobs/redirect/<signed_id>/<filename>`,
/// with `?disposition=attachment` for a download link.
pub fn blob_path(verifier: &ActiveStorageVerifier, blob: &Blob, download: bool) -> String {
    let mut path = format!(
        "/rails/active_storage/blobs/redirect/{}/{}",
        segment(&verifier.signed_blob_id(blob.id)),
        segment(&blob.filename)
    );
    if download {
        path.push_str("?disposition=attachment");
    }
    path
}

/// `url_for(blob.variant(transformations))`:
/// `/rails/active_storage/representations/redirect/<signed_id>/<variation_key>/<filename>`.
pub fn representation_path(
    verifier: &ActiveStorageVerifier,
    blob: &Blob,
    transformations: &Value,
) -> String {
    format!(
        "/rails/active_storage/representations/redirect/{}/{}/{}",
        segment(&verifier.signed_blob_id(blob.id)),
        segment(&verifier.variation_key(transformations)),
        segment(&blob.filename)
    )
}

/// `ActionDispatch::Http::ContentDisposition.format`: `inline` or `attachment`, then
/// `filename="<ASCII, others as ?>"; filename*=UTF-8''<percent-encoded>`.
pub fn content_disposition(inline: bool, filename: &str) -> String {
    let ascii: String = filename
        .chars()
        .map(|c| match c {
            '"' | '\\' => '_',
            c if c.is_ascii() && !c.is_ascii_control() => c,
            _ => '?',
        })
        .collect();
    format!(
        "{}; filename=\"{ascii}\"; filename*=UTF-8''{}",
        if inline { "inline" } else { "attachment" },
        segment(filename)
    )
}

/// `ActiveStorage::Filename#sanitized` (`activestorage/app/models/active_storage/filename.rb`),
/// made stricter: path separators, `"`, control characters (general category Cc) and line or
/// paragraph separators (Zl, Zp) become `-`; Unicode format characters (Cf: the bidirectional
/// controls U+200E, U+200F, U+202A–U+202E, U+2066–U+2069, U+061C, and the soft hyphen, U+FEFF,
/// tag characters and the like) are removed, so a name shows in its stored order
/// (`invoice\u{202E}fdp.exe` is `invoicefdp.exe`, not `invoiceexe.pdf`). The zero-width joiner
/// and non-joiner (U+200D, U+200C) stay: words of Persian and Indic scripts and emoji sequences
/// need them, and neither reorders text. At most 255 bytes; an empty name becomes `file`.
pub fn sanitize_filename(name: &str) -> String {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory as _};
    let cleaned: String = name
        .chars()
        .filter_map(|c| match c {
            '/' | '\\' | '"' => Some('-'),
            '\u{200C}' | '\u{200D}' => Some(c),
            c => match c.general_category() {
                GeneralCategory::Format => None,
                GeneralCategory::Control
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator => Some('-'),
                _ => Some(c),
            },
        })
        .collect();
    let mut cleaned = cleaned.trim().to_owned();
    while cleaned.len() > 255 {
        cleaned.pop();
    }
    if cleaned.is_empty() || cleaned == "." || cleaned == ".." {
        "file".to_owned()
    } else {
        cleaned
    }
}

/// A new service key: 28 lowercase base-36 characters (`ActiveStorage::Blob.generate_unique_secure_token`).
pub fn new_key() -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut bytes = [0u8; 28];
    rand::fill(&mut bytes);
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % 36]))
        .collect()
}

/// A byte count for people: `512 Bytes`, `1.5 KB`, `12 MB` (Rails' `number_to_human_size`).
pub fn human_size(bytes: i64) -> String {
    const UNITS: [&str; 5] = ["KB", "MB", "GB", "TB", "PB"];
    if bytes < 1024 {
        return format!("{bytes} Bytes");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    let text = if size < 10.0 {
        format!("{size:.1}")
    } else {
        format!("{size:.0}")
    };
    format!("{} {}", text.trim_end_matches(".0"), UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames_and_dispositions() {
        assert_eq!(sanitize_filename("../../etc/passwd"), "..-..-etc-passwd");
        assert_eq!(sanitize_filename(" \u{0} "), "-");
        assert_eq!(sanitize_filename(""), "file");
        assert_eq!(
            sanitize_filename("invoice\u{202E}fdp.exe"),
            "invoicefdp.exe"
        );
        assert_eq!(
            sanitize_filename("\u{2066}a\u{200E}b\u{200F}c\u{061C}\u{FEFF}\u{AD}\u{2069}.txt"),
            "abc.txt"
        );
        assert_eq!(sanitize_filename("a\u{2028}b\tc.txt"), "a-b-c.txt");
        assert_eq!(sanitize_filename("\u{202E}"), "file");
        assert_eq!(
            sanitize_filename("\u{1F468}\u{200D}\u{1F469}.png"),
            "\u{1F468}\u{200D}\u{1F469}.png"
        );
        assert_eq!(
            content_disposition(false, "café \"x\".png"),
            "attachment; filename=\"caf? _x_.png\"; filename*=UTF-8''caf%C3%A9%20%22x%22.png"
        );
        assert_eq!(human_size(512), "512 Bytes");
        assert_eq!(human_size(1536), "1.5 KB");
        assert_eq!(human_size(5 * 1024 * 1024), "5 MB");
        let key = new_key();
        assert_eq!(key.len(), 28);
        assert!(key
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()));
    }
}
