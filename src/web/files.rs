//! Active Storage's routes (the engine's `config/routes.rb`) and the file side of posting:
//!
//! | route | answer |
//! |---|---|
//! | `POST /rails/active_storage/direct_uploads` | JSON blob with `signed_id` and `direct_upload: {url, headers}` (signed in; 413 past `--max-upload-bytes` or past the uploader's storage quota by the declared `byte_size`, 429 past the upload rate) |
//! | `PUT /rails/active_storage/disk/{encoded_token}` | stores the upload: 204; 422 for a size, type or checksum other than declared, 404 for a bad token |
//! | `GET /rails/active_storage/disk/{encoded_key}/{*filename}` | the bytes, for 5 minutes after the URL was made; a single `Range` gets 206 (416 past the end), see [`super::byte_ranges`] |
//! | `GET /rails/active_storage/blobs/redirect/{signed_id}/{*filename}` (and `/blobs/{signed_id}/…`) | 302 to a disk URL, for those who may read the blob (404 otherwise) |
//! | `GET /rails/active_storage/representations/redirect/{signed_blob_id}/{variation_key}/{*filename}` | 302 to the variant's disk URL (the original until it is made) |
//!
//! Who may read a blob: the members of the room of the message it is attached to; any signed-in
//! user for avatars; anyone for the account logo; its uploader while it is attached to nothing.
//! Every answer with bytes carries `X-Content-Type-Options: nosniff` and a sandboxing
//! `Content-Security-Policy`, and anything a browser could run is a download.
//!
//! A blob is attached at most once (the unique index of migration 0016), and a purge never
//! deletes a blob an attachment still names.

use crate::config::Config;
use crate::db::Db;
use crate::pubsub::Delivery;
use crate::storage::Storage;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures_util::TryStreamExt;
use serde::Deserialize;

use super::context::Ctx;
use super::error::AppError;
use super::quota;
use crate::broadcasts;
use crate::db::blobs::{self, record, Blob};
use crate::db::rooms::Room;
use crate::db::users::User;
use crate::db::{messages, rooms};
use crate::rails::marshal::Value;
use crate::storage::disk::UploadError;
use crate::storage::{self, identify, process, DirectUpload};

/// The metadata key naming the user who uploaded a blob (Hearth's; Rails ignores it).
pub use crate::db::blobs::UPLOADER_KEY;

/// The 422 of a direct upload that is attached already (to a message, as an avatar or as the
/// logo): a blob is attached at most once.
pub const ALREADY_ATTACHED: &str = "this upload is attached already";

/// `--max-upload-bytes` plus room for a multipart form's other fields and boundaries.
const MULTIPART_OVERHEAD: u64 = 64 * 1024;

impl From<UploadError> for AppError {
    fn from(e: UploadError) -> Self {
        match e {
            UploadError::TooLarge(_) => Self::PayloadTooLarge,
            UploadError::Body => Self::BadRequest(e.to_string()),
            UploadError::Io(io) => Self::Internal(io.into()),
            UploadError::LengthMismatch
            | UploadError::ChecksumMismatch
            | UploadError::InvalidKey => Self::Unprocessable(e.to_string()),
        }
    }
}

fn now_ms() -> i64 {
    crate::db::now_ms()
}

/// The headers every answer with a blob's bytes carries.
pub fn guard_headers(headers: &mut HeaderMap) {
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; sandbox"),
    );
}

/// The JSON of a direct upload's request (`{"blob": {...}}`, as `@rails/activestorage`'s
/// `BlobRecord` sends it).
#[derive(Debug, Deserialize)]
pub struct DirectUploadRequest {
    /// The blob's attributes.
    pub blob: DirectUploadBlob,
}

/// `blob` of a [`DirectUploadRequest`].
#[derive(Debug, Deserialize)]
pub struct DirectUploadBlob {
    /// File name.
    pub filename: String,
    /// Declared size in bytes.
    pub byte_size: u64,
    /// Base64 MD5 of the file.
    pub checksum: String,
    /// The browser's idea of the type (a hint; the stored type comes from the bytes).
    #[serde(default)]
    pub content_type: Option<String>,
}

fn blob_json(verifier: &crate::rails::ActiveStorageVerifier, blob: &Blob) -> serde_json::Value {
    let metadata: serde_json::Value = serde_json::Value::Object(blob.metadata_json());
    serde_json::json!({
        "id": blob.id,
        "key": blob.key,
        "filename": blob.filename,
        "content_type": blob.content_type,
        "metadata": metadata,
        "service_name": blob.service_name,
        "byte_size": blob.byte_size,
        "checksum": blob.checksum,
        "created_at": blob.created_at,
        "signed_id": verifier.signed_blob_id(blob.id),
    })
}

fn allow_upload(storage: &Storage, user: &User) -> Result<(), AppError> {
    if storage.allow_upload(user.id, Instant::now()) {
        Ok(())
    } else {
        Err(AppError::TooManyRequests)
    }
}

/// `POST /rails/active_storage/direct_uploads` (Rails' `DirectUploadsController#create`): makes
/// the blob record a direct upload will fill. Signed-in users only.
pub async fn create_direct_upload(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let request: DirectUploadRequest = serde_json::from_slice(&ctx.body)
        .map_err(|e| AppError::Unprocessable(format!("blob: {e}")))?;
    let b = request.blob;
    if b.byte_size > storage.max_upload_bytes {
        return Err(AppError::PayloadTooLarge);
    }
    let checksum_ok =
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &b.checksum)
            .is_ok_and(|d| d.len() == 16);
    if !checksum_ok {
        return Err(AppError::Unprocessable(
            "blob[checksum] must be a base64 MD5".into(),
        ));
    }
    allow_upload(&storage, user)?;
    let filename = storage::sanitize_filename(&b.filename);
    let content_type = b
        .content_type
        .filter(|t| !t.is_empty() && t.len() <= 255 && t.bytes().all(|c| c.is_ascii_graphic()));
    let metadata = serde_json::json!({ UPLOADER_KEY: user.id }).to_string();
    let key = storage::new_key();
    let blob = quota::Quota {
        pool: &db.pool,
        bytes: config.max_storage_bytes_per_user,
    }
    .insert_blob(
        user.id,
        &blobs::NewBlob {
            key: &key,
            filename: &filename,
            content_type: content_type.as_deref(),
            metadata: &metadata,
            service_name: storage.service_name(),
            byte_size: i64::try_from(b.byte_size).unwrap_or(i64::MAX),
            checksum: Some(&b.checksum),
        },
    )
    .await?;
    let mut json = blob_json(&storage.verifier, &blob);
    let mut headers = serde_json::Map::new();
    if let Some(t) = &blob.content_type {
        headers.insert("Content-Type".into(), t.clone().into());
    }
    let direct = storage.current().direct_upload(&blob).await;
    let url = match direct.map_err(|e| AppError::Internal(e.into()))? {
        DirectUpload::Presigned {
            url,
            headers: extra,
        } => {
            for (name, value) in extra {
                headers.insert(name.into(), value.into());
            }
            url
        }
        DirectUpload::ThroughServer => storage.direct_upload_url(&blob, now_ms()),
    };
    json["direct_upload"] = serde_json::json!({
        "url": url,
        "headers": headers,
    });
    Ok(axum::Json(json).into_response())
}

/// `PUT /rails/active_storage/disk/{encoded_token}` (Rails' `DiskController#update`): the bytes
/// of a direct upload. The token names the key, type, length and checksum; anything else is
/// refused (422) and nothing is kept. Identifies the type from the bytes.
pub async fn upload_to_disk(
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    Path(token): Path<String>,
    request: Request,
) -> Result<Response, AppError> {
    let Some(claims) = storage.verifier.verified(&token, "blob_token", now_ms()) else {
        return Ok(StatusCode::NOT_FOUND.into_response());
    };
    let key = claims.get("key").and_then(Value::as_str).unwrap_or("");
    let Some(blob) = blobs::find_by_key(&db.pool, key)
        .await?
        .filter(|b| b.service_name == storage::DISK_SERVICE)
    else {
        return Ok(StatusCode::NOT_FOUND.into_response());
    };
    let length = claims.get("content_length").and_then(Value::as_int);
    let checksum = claims.get("checksum").and_then(Value::as_str);
    let headers = request.headers();
    let declared_length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok());
    if declared_length.is_some() && declared_length != length {
        return Err(AppError::Unprocessable(
            "Content-Length differs from the blob's byte size".into(),
        ));
    }
    let want_type = claims.get("content_type").and_then(Value::as_str);
    let got_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim());
    if let (Some(want), Some(got)) = (want_type, got_type) {
        if !want.eq_ignore_ascii_case(got) {
            return Err(AppError::Unprocessable(
                "Content-Type differs from the blob's".into(),
            ));
        }
    }
    if let Some(md5) = headers.get("content-md5").and_then(|v| v.to_str().ok()) {
        if Some(md5) != checksum {
            return Err(AppError::Unprocessable(
                "Content-MD5 differs from the blob's checksum".into(),
            ));
        }
    }
    if storage.disk.exists(&blob.key).await {
        return Err(AppError::Unprocessable(
            "this blob was already uploaded".into(),
        ));
    }
    let max = storage.max_upload_bytes;
    let stream = request.into_body().into_data_stream();
    let written = storage
        .disk
        .upload(
            &blob.key,
            stream,
            max,
            length.and_then(|n| u64::try_from(n).ok()),
            checksum,
        )
        .await?;
    identify_blob(&db, &blob, &written.head).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Sets a blob's content type from its first bytes and marks it identified.
async fn identify_blob(db: &Db, blob: &Blob, head: &[u8]) -> Result<(), AppError> {
    let content_type = identify::content_type(head, &blob.filename);
    let mut metadata = blob.metadata_json();
    metadata.insert("identified".into(), true.into());
    blobs::update_identity(
        &db.pool,
        blob.id,
        Some(content_type),
        &serde_json::Value::Object(metadata).to_string(),
    )
    .await?;
    Ok(())
}

/// Stores a file streamed in a multipart field as a new blob uploaded by `user`.
async fn store_field(
    config: &Config,
    db: &Db,
    storage: &Storage,
    user: &User,
    field: multer::Field<'static>,
) -> Result<Blob, AppError> {
    let filename = storage::sanitize_filename(field.file_name().unwrap_or("file"));
    // multer's own size limits end the field's stream with an error: that is a 413 too.
    let too_large = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = too_large.clone();
    let stream = field.map_err(move |e| {
        if matches!(
            e,
            multer::Error::FieldSizeExceeded { .. } | multer::Error::StreamSizeExceeded { .. }
        ) {
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
    store_stream(config, db, storage, user, filename, Box::pin(stream))
        .await
        .map_err(|e| {
            if too_large.load(std::sync::atomic::Ordering::Relaxed) {
                AppError::PayloadTooLarge
            } else {
                e
            }
        })
}

/// Stores `bytes` as a new blob named `filename` uploaded by `user` (a bot's file answer to a
/// webhook), with the upload rate limit, `--max-upload-bytes` and the storage quota of any
/// upload; its content type is identified from the bytes and the name, as for any upload.
///
/// # Errors
/// 429 past the upload rate limit, 413 past the size limit or the uploader's storage quota,
/// a storage or database failure.
pub async fn store_bytes(
    config: &Config,
    db: &Db,
    storage: &Storage,
    user: &User,
    filename: &str,
    bytes: bytes::Bytes,
) -> Result<Blob, AppError> {
    let filename = storage::sanitize_filename(filename);
    let stream = futures_util::stream::once(async move { Ok::<_, ()>(bytes) });
    store_stream(config, db, storage, user, filename, Box::pin(stream)).await
}

async fn store_stream<S>(
    config: &Config,
    db: &Db,
    storage: &Storage,
    user: &User,
    filename: String,
    stream: S,
) -> Result<Blob, AppError>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, ()>> + Unpin + Send,
{
    allow_upload(storage, user)?;
    // Within the storage quota: cut at the bytes left, then inserted only if it still fits.
    let max = storage.max_upload_bytes;
    let quota = quota::Quota {
        pool: &db.pool,
        bytes: config.max_storage_bytes_per_user,
    };
    let limit = match quota.room_left(user.id).await? {
        Some(0) => return Err(quota.refusal(user.id).await),
        Some(left) => left.min(max),
        None => max,
    };
    let key = storage::new_key();
    let written = match storage.disk.upload(&key, stream, limit, None, None).await {
        Err(UploadError::TooLarge(_)) if limit < max => return Err(quota.refusal(user.id).await),
        written => written?,
    };
    let service_name = storage.promote(&key).await?;
    let content_type = identify::content_type(&written.head, &filename);
    let metadata = serde_json::json!({ UPLOADER_KEY: user.id, "identified": true }).to_string();
    let inserted = quota
        .insert_blob(
            user.id,
            &blobs::NewBlob {
                key: &key,
                filename: &filename,
                content_type: Some(content_type),
                metadata: &metadata,
                service_name,
                byte_size: i64::try_from(written.byte_size).unwrap_or(i64::MAX),
                checksum: Some(&written.checksum),
            },
        )
        .await;
    match inserted {
        Ok(blob) => Ok(blob),
        Err(e) => {
            storage.delete(service_name, &key).await;
            Err(e)
        }
    }
}

/// A multipart form: its text fields and the blob stored from its file field `file_field`.
#[derive(Debug, Default)]
pub struct UploadForm {
    /// Text fields, in order.
    pub fields: Vec<(String, String)>,
    /// The stored file.
    pub blob: Option<Blob>,
}

impl UploadForm {
    /// The first text field `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn multipart_error(e: multer::Error) -> AppError {
    match e {
        multer::Error::StreamSizeExceeded { .. } | multer::Error::FieldSizeExceeded { .. } => {
            AppError::PayloadTooLarge
        }
        e => AppError::BadRequest(format!("multipart form: {e}")),
    }
}

/// Whether the request carries a multipart form.
pub fn is_multipart(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("multipart/form-data"))
}

/// Reads a multipart form whose file is field `file_field` (one file; another file field is
/// refused with 422), storing the file as a blob. 413 past `--max-upload-bytes` (by the
/// declared length before reading anything) or past the uploader's storage quota
/// ([`quota`]); nothing is kept when the form fails.
pub async fn read_upload_form(
    config: &Config,
    db: &Db,
    storage: &Storage,
    user: &User,
    request: Request,
    file_field: &str,
) -> Result<UploadForm, AppError> {
    read_upload_form_any(config, db, storage, user, request, &[file_field]).await
}

/// [`read_upload_form`] whose file may come in any of `file_fields`.
pub async fn read_upload_form_any(
    config: &Config,
    db: &Db,
    storage: &Storage,
    user: &User,
    request: Request,
    file_fields: &[&str],
) -> Result<UploadForm, AppError> {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > storage.max_upload_bytes + MULTIPART_OVERHEAD) {
        return Err(AppError::PayloadTooLarge);
    }
    let boundary = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| multer::parse_boundary(v).ok())
        .ok_or_else(|| AppError::BadRequest("multipart form without a boundary".into()))?;
    let mut limits =
        multer::SizeLimit::new().whole_stream(storage.max_upload_bytes + MULTIPART_OVERHEAD);
    for field in file_fields {
        limits = limits.for_field(*field, storage.max_upload_bytes + 1);
    }
    let constraints = multer::Constraints::new().size_limit(limits);
    let mut multipart = multer::Multipart::with_constraints(
        request.into_body().into_data_stream(),
        boundary,
        constraints,
    );
    let mut form = UploadForm::default();
    let result: Result<(), AppError> = async {
        while let Some(field) = multipart.next_field().await.map_err(multipart_error)? {
            let name = field.name().unwrap_or("").to_owned();
            if file_fields.contains(&name.as_str()) && field.file_name().is_some() {
                if form.blob.is_some() {
                    return Err(AppError::Unprocessable("one file per message".into()));
                }
                form.blob = Some(store_field(config, db, storage, user, field).await?);
            } else {
                let text = field.text().await.map_err(multipart_error)?;
                if text.len() > 64 * 1024 || form.fields.len() > 32 {
                    return Err(AppError::PayloadTooLarge);
                }
                form.fields.push((name, text));
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        if let Some(blob) = form.blob.take() {
            purge_blob(db, storage, blob.id).await;
        }
        return Err(e);
    }
    Ok(form)
}

/// The blob a direct upload's signed id names, for `user` to attach: it must be theirs, fully
/// uploaded and attached to nothing yet (422 otherwise; [`ALREADY_ATTACHED`] for the last).
/// Two requests may both pass this check: the attachment's unique index lets one of them
/// attach it ([`blobs::is_already_attached`] tells the others).
pub async fn blob_for_attaching(
    db: &Db,
    storage: &Storage,
    user: &User,
    signed_id: &str,
) -> Result<Blob, AppError> {
    let refuse = || AppError::Unprocessable("message[attachment] is not an upload of yours".into());
    let id = storage.verifier.blob_id(signed_id).ok_or_else(refuse)?;
    let blob = blobs::find(&db.pool, id).await?.ok_or_else(refuse)?;
    if blob
        .metadata_json()
        .get(UPLOADER_KEY)
        .and_then(serde_json::Value::as_i64)
        != Some(user.id)
    {
        return Err(refuse());
    }
    // Checked again, atomically, by the attachment's unique index (migration 0016).
    if !blobs::records_of(&db.pool, blob.id).await?.is_empty() {
        return Err(AppError::Unprocessable(ALREADY_ATTACHED.into()));
    }
    if !storage.exists(&blob).await {
        return Err(AppError::Unprocessable(
            "the upload has not finished".into(),
        ));
    }
    if blob.service_name == storage::DISK_SERVICE {
        return Ok(blob);
    }
    // Straight to the bucket: checked against its record now, then identified.
    let head = storage.verify_upload(&blob).await.ok_or_else(|| {
        AppError::Unprocessable("the upload does not match its size or checksum".into())
    })?;
    identify_blob(db, &blob, &head).await?;
    blobs::find(&db.pool, blob.id).await?.ok_or_else(refuse)
}

/// Deletes a blob, its variants and their files, unless it is attached to something (then
/// nothing is deleted: see [`blobs::delete`]).
pub async fn purge_blob(db: &Db, storage: &Storage, blob_id: i64) {
    match blobs::delete(&db.pool, blob_id).await {
        Ok(gone) => {
            for (service, key) in gone {
                storage.delete(&service, &key).await;
            }
        }
        Err(e) => tracing::warn!(blob_id, error = %e, "purging a blob failed"),
    }
}

/// Purges the blobs of deleted messages, users and accounts, and direct uploads left unattached
/// for a day (Rails' `ActiveStorage::PurgeJob` and `Blob.unattached` cleanup).
pub async fn purge_orphans(db: &Db, storage: &Storage) {
    let before = now_ms() - storage::UNATTACHED_TTL.as_millis() as i64;
    match blobs::orphans(&db.pool, before).await {
        Ok(ids) => {
            for id in ids {
                purge_blob(db, storage, id).await;
            }
        }
        Err(e) => tracing::warn!(error = %e, "finding orphaned blobs failed"),
    }
}

/// Runs [`purge_orphans`] every hour.
pub fn spawn_purger(db: Db, storage: Arc<Storage>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            tick.tick().await;
            purge_orphans(&db, &storage).await;
        }
    })
}

/// Analyses a message's new file and makes its thumbnail (a poster for a video, with
/// `ffmpeg`), then broadcasts the message's `replace`. Runs on its own task, one file at a
/// time, decoding on the blocking pool: the post has long been answered.
///
/// Processing always ends: a file that cannot be processed (not an image the decoders read,
/// beyond the decode limits, truncated, missing) is marked analyzed all the same, as Rails'
/// `ActiveStorage::Blob::Analyzable#analyze` does when its analyzer fails, so the message shows
/// it as a plain file chip, and the `replace` is broadcast either way (Rails' image analyzer
/// logs and returns no metadata for an image it cannot read, rails/rails#36072).
pub fn spawn_processing(
    (db, delivery, storage): (Db, Delivery, Arc<Storage>),
    room: Room,
    message_id: i64,
    blob: Blob,
) {
    if !(blob.is_image() || blob.is_video()) {
        return;
    }
    tokio::spawn(async move {
        process_and_broadcast(&db, &delivery, &storage, &room, message_id, &blob, true).await
    });
}

/// [`spawn_processing`]'s work, once the one processing slot is free: processes `blob` (when
/// `decode`; otherwise, or when processing fails, only marks it analyzed), then broadcasts
/// the message's `replace`.
async fn process_and_broadcast(
    db: &Db,
    delivery: &Delivery,
    storage: &Storage,
    room: &Room,
    message_id: i64,
    blob: &Blob,
    decode: bool,
) {
    let Ok(_permit) = storage.processing.acquire().await else {
        return;
    };
    let processed = if decode {
        process_message_file(db, storage, blob).await
    } else {
        Err(anyhow::anyhow!("its processing was cut off twice"))
    };
    if let Err(e) = processed {
        tracing::info!(blob_id = blob.id, error = %e, "file not processed: shown as a file");
        if let Err(e) = mark_analyzed(&db.pool, blob.id).await {
            tracing::warn!(blob_id = blob.id, error = %e, "marking a file analyzed failed");
            return;
        }
    }
    match messages::find(&db.pool, room.id, message_id).await {
        Ok(Some(message)) => {
            if let Err(e) = broadcasts::message_updated(
                &delivery.broadcaster,
                &storage.verifier,
                room,
                &message,
            ) {
                tracing::warn!(error = %e, "broadcasting a processed file failed");
            }
        }
        Ok(None) => purge_orphans(db, storage).await,
        Err(e) => tracing::warn!(error = %e, "reading a processed message failed"),
    }
}

/// The metadata key set on a file whose processing is resumed after a restart: a file found
/// unprocessed again at the next start (its processing was cut off twice, perhaps by the file
/// itself) is marked analyzed without decoding it, so no file can stop every start.
const RESUMED_KEY: &str = "hearth_processing_resumed";

/// How many unprocessed files [`resume_processing`] reads at once.
const RESUME_BATCH: i64 = 64;

/// Finishes the processing a restart cut off (a server stopped or killed while a message's
/// image was being processed leaves it unanalyzed, shown as "processing…"): every image and
/// video attached to a message and not analyzed is processed again, one at a time through the
/// same slot as new files, and its message replaced live; one found a second time is marked
/// analyzed and shown as a file chip. Runs on its own task from the start of an app node,
/// never delaying the listener (Rails' `ActiveStorage::AnalyzeJob` is likewise retried from
/// its queue after a crash).
pub fn spawn_resume_processing(
    db: Db,
    delivery: Delivery,
    storage: Arc<Storage>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move { resume_processing(&db, &delivery, &storage).await })
}

/// [`spawn_resume_processing`]'s work, to its end.
pub async fn resume_processing(db: &Db, delivery: &Delivery, storage: &Storage) {
    // Files posted from now on are processed by their own posts.
    let upto = match blobs::max_id(&db.pool).await {
        Ok(id) => id,
        Err(e) => {
            tracing::warn!(error = %e, "finding unprocessed files failed");
            return;
        }
    };
    let mut after = 0;
    let mut resumed = 0u64;
    loop {
        let found = blobs::unprocessed_message_files(&db.pool, after, upto, RESUME_BATCH).await;
        let files = match found {
            Ok(files) => files,
            Err(e) => {
                tracing::warn!(error = %e, "finding unprocessed files failed");
                return;
            }
        };
        let Some((_, _, last)) = files.last() else {
            break;
        };
        after = last.id;
        for (room_id, message_id, blob) in files {
            let room = match rooms::find(&db.pool, room_id).await {
                Ok(Some(room)) => room,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "reading an unprocessed file's room failed");
                    return;
                }
            };
            let decode = !blob.metadata_json().contains_key(RESUMED_KEY);
            if decode {
                match blobs::mark_unanalyzed(&db.pool, blob.id, RESUMED_KEY).await {
                    Ok(true) => {}
                    // Analyzed meanwhile.
                    Ok(false) => continue,
                    Err(e) => {
                        tracing::warn!(blob_id = blob.id, error = %e, "resuming a file failed");
                        continue;
                    }
                }
            }
            process_and_broadcast(db, delivery, storage, &room, message_id, &blob, decode).await;
            resumed += 1;
        }
    }
    if resumed > 0 {
        tracing::info!(files = resumed, "resumed the processing a restart cut off");
    }
}

/// Marks blob `blob_id` analyzed, keeping what its metadata already holds: what a failed
/// analysis leaves (Rails merges `analyzed: true` into the metadata whatever the analyzer found).
async fn mark_analyzed(pool: &sqlx::SqlitePool, blob_id: i64) -> anyhow::Result<()> {
    let Some(blob) = blobs::find(pool, blob_id).await? else {
        return Ok(());
    };
    let mut metadata = blob.metadata_json();
    metadata.insert("analyzed".into(), true.into());
    blobs::update_identity(
        pool,
        blob.id,
        blob.content_type.as_deref(),
        &serde_json::Value::Object(metadata).to_string(),
    )
    .await?;
    Ok(())
}

/// Analysis and the thumb variant of `blob`.
async fn process_message_file(db: &Db, storage: &Storage, blob: &Blob) -> anyhow::Result<()> {
    let copy = storage
        .local_copy(blob)
        .await
        .ok_or_else(|| anyhow::anyhow!("the file is missing"))?;
    let (w, h) = blobs::THUMB_LIMIT;
    let video = blob.is_video();
    let job_path = copy.path.clone();
    let (info, encoded) = tokio::task::spawn_blocking(move || {
        if video {
            return Ok::<_, process::ProcessError>((None, process::video_poster(&job_path, w, h)));
        }
        let info = process::analyze(&job_path)?;
        let encoded = if info.animated {
            None
        } else {
            Some(process::variant(&job_path, process::Fit::Limit(w, h))?)
        };
        Ok((Some(info), encoded))
    })
    .await??;
    let mut metadata = blob.metadata_json();
    metadata.insert("analyzed".into(), true.into());
    if let Some(info) = info {
        metadata.insert("width".into(), info.width.into());
        metadata.insert("height".into(), info.height.into());
    }
    if let Some(e) = &encoded {
        if video {
            metadata.insert("width".into(), e.width.into());
            metadata.insert("height".into(), e.height.into());
        }
    }
    blobs::update_identity(
        &db.pool,
        blob.id,
        blob.content_type.as_deref(),
        &serde_json::Value::Object(metadata).to_string(),
    )
    .await?;
    if let Some(e) = encoded {
        store_variant(db, storage, blob, blobs::thumb_digest(), &e).await?;
    }
    Ok(())
}

/// Stores an encoded variant of `source` as a blob and records it under `digest`.
pub async fn store_variant(
    db: &Db,
    storage: &Storage,
    source: &Blob,
    digest: &str,
    encoded: &process::Encoded,
) -> anyhow::Result<Blob> {
    let key = storage::new_key();
    let service_name = storage.write(&key, &encoded.bytes).await?;
    let stem = source
        .filename
        .rsplit_once('.')
        .map_or(source.filename.as_str(), |(s, _)| s);
    let filename = format!("{stem}.{}", encoded.extension);
    let metadata = serde_json::json!({
        "identified": true, "analyzed": true, "width": encoded.width, "height": encoded.height
    })
    .to_string();
    let checksum = {
        use md5::Digest as _;
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            md5::Md5::digest(&encoded.bytes),
        )
    };
    let variant = blobs::insert(
        &db.pool,
        &blobs::NewBlob {
            key: &key,
            filename: &filename,
            content_type: Some(encoded.content_type),
            metadata: &metadata,
            service_name,
            byte_size: encoded.bytes.len() as i64,
            checksum: Some(&checksum),
        },
    )
    .await?;
    if !blobs::add_variant(&db.pool, source.id, digest, variant.id).await? {
        purge_blob(db, storage, variant.id).await;
        anyhow::bail!("the source blob is gone");
    }
    Ok(variant)
}

/// Whether `user` (None: signed out) may read `blob` (see the module docs).
pub async fn can_read(db: &Db, user: Option<&User>, blob: &Blob) -> Result<bool, AppError> {
    let mut blob_id = blob.id;
    let mut uploader = blob
        .metadata_json()
        .get(UPLOADER_KEY)
        .and_then(serde_json::Value::as_i64);
    for _ in 0..2 {
        let records = blobs::records_of(&db.pool, blob_id).await?;
        if records.is_empty() {
            return Ok(user.is_some_and(|u| Some(u.id) == uploader));
        }
        let mut next = None;
        for (record_type, record_id, _) in records {
            match record_type.as_str() {
                record::ACCOUNT => return Ok(true),
                record::USER if user.is_some() => return Ok(true),
                record::MESSAGE => {
                    let (Some(user), Some(message)) =
                        (user, messages::find_any(&db.pool, record_id).await?)
                    else {
                        continue;
                    };
                    if rooms::find_for_member(&db.pool, message.room_id, user.id)
                        .await?
                        .is_some()
                    {
                        return Ok(true);
                    }
                }
                record::VARIANT => next = blobs::variant_source(&db.pool, record_id).await?,
                _ => {}
            }
        }
        match next {
            Some(source) => {
                blob_id = source;
                uploader = None;
            }
            None => return Ok(false),
        }
    }
    Ok(false)
}

/// The query of the redirect routes.
#[derive(Debug, Deserialize)]
pub struct DispositionQuery {
    /// `attachment` for a download.
    pub disposition: Option<String>,
}

fn redirect(to: &str) -> Response {
    let mut response = (StatusCode::FOUND, [(header::LOCATION, to.to_owned())]).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=300, private"),
    );
    response
}

async fn readable_blob(
    db: &Db,
    storage: &Storage,
    ctx: &Ctx,
    signed_id: &str,
) -> Result<Blob, AppError> {
    let id = storage
        .verifier
        .blob_id(signed_id)
        .ok_or(AppError::NotFound)?;
    let blob = blobs::find(&db.pool, id).await?.ok_or(AppError::NotFound)?;
    if !can_read(db, ctx.user.as_ref(), &blob).await? {
        return Err(AppError::NotFound);
    }
    Ok(blob)
}

/// `GET /rails/active_storage/blobs/redirect/{signed_id}/{*filename}` (Rails'
/// `Blobs::RedirectController#show`): 302 to an expiring disk URL, for readers only (404).
pub async fn blob_redirect(
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
    Path((signed_id, _filename)): Path<(String, String)>,
    Query(query): Query<DispositionQuery>,
) -> Result<Response, AppError> {
    let blob = readable_blob(&db, &storage, &ctx, &signed_id).await?;
    let download = query.disposition.as_deref() == Some("attachment");
    Ok(redirect(&storage.disk_url(&blob, download, now_ms())))
}

/// `GET /rails/active_storage/representations/redirect/{signed_blob_id}/{variation_key}/{*filename}`
/// (Rails' `Representations::RedirectController#show`): 302 to the variant's disk URL, or to
/// the original's while the variant is not made (and for animated GIFs).
pub async fn representation_redirect(
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
    Path((signed_id, variation_key, _filename)): Path<(String, String, String)>,
) -> Result<Response, AppError> {
    let blob = readable_blob(&db, &storage, &ctx, &signed_id).await?;
    let transformations = storage
        .verifier
        .verified(&variation_key, "variation", 0)
        .ok_or(AppError::NotFound)?;
    let digest = crate::rails::active_storage::variation_digest(&transformations);
    let target = blobs::variant(&db.pool, blob.id, &digest)
        .await?
        .unwrap_or(blob);
    Ok(redirect(&storage.disk_url(&target, false, now_ms())))
}

/// `GET /rails/active_storage/disk/{encoded_key}/{*filename}` (Rails' `DiskController#show`):
/// the bytes of a file while its URL has not expired (404 after), with the type and
/// disposition the URL was signed with, `nosniff` and a sandboxing CSP. Single byte ranges
/// are served for the disk and the S3 services alike ([`super::byte_ranges`], RFC 9110 §14):
/// 206 with `Content-Range`, 416 with `Content-Range: bytes */<length>` past the end, the
/// whole file (200, `Accept-Ranges: bytes`, a strong `ETag` for `If-Range`) otherwise.
pub async fn serve_from_disk(
    State(storage): State<Arc<Storage>>,
    Path((token, _filename)): Path<(String, String)>,
    request_headers: HeaderMap,
) -> Result<Response, AppError> {
    use super::byte_ranges::{self, Selected};
    let claims = storage
        .verifier
        .verified(&token, "blob_key", now_ms())
        .ok_or(AppError::NotFound)?;
    let key = claims.get("key").and_then(Value::as_str).unwrap_or("");
    let service = claims
        .get("service_name")
        .and_then(Value::as_str)
        .unwrap_or(storage::DISK_SERVICE);
    let opened = storage.open(service, key).await.ok_or(AppError::NotFound)?;
    let (len, etag) = (opened.len, opened.etag.clone());
    let selected = byte_ranges::select(&request_headers, &etag, len);
    let content_type =
        identify::served_content_type(claims.get("content_type").and_then(Value::as_str));
    // The type was chosen when the URL was signed; a type that could run is never served.
    let content_type = if identify::AS_BINARY
        .iter()
        .any(|t| content_type.starts_with(t))
    {
        "application/octet-stream"
    } else {
        content_type
    };
    let disposition = claims
        .get("disposition")
        .and_then(Value::as_str)
        .unwrap_or("attachment");
    let disposition =
        if disposition.starts_with("inline") && !identify::inline_allowed(Some(content_type)) {
            disposition.replacen("inline", "attachment", 1)
        } else {
            disposition.to_owned()
        };
    let (status, body, length, content_range) = match selected {
        Selected::Full => {
            let stream = opened.stream(None).await.map_err(|_| AppError::NotFound)?;
            (StatusCode::OK, Body::from_stream(stream), len, None)
        }
        Selected::Partial(range) => {
            let content_range = byte_ranges::content_range(&range, len);
            let length = range.end() - range.start() + 1;
            let stream = opened
                .stream(Some(range))
                .await
                .map_err(|_| AppError::NotFound)?;
            (
                StatusCode::PARTIAL_CONTENT,
                Body::from_stream(stream),
                length,
                Some(content_range),
            )
        }
        Selected::Unsatisfiable => (
            StatusCode::RANGE_NOT_SATISFIABLE,
            Body::empty(),
            0,
            Some(byte_ranges::unsatisfied_range(len)),
        ),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    guard_headers(headers);
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    if let Some(v) = content_range.and_then(|v| HeaderValue::from_str(&v).ok()) {
        headers.insert(header::CONTENT_RANGE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    if status == StatusCode::RANGE_NOT_SATISFIABLE {
        return Ok(response);
    }
    if let Ok(v) = HeaderValue::from_str(content_type) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=300, private"),
    );
    Ok(response)
}
