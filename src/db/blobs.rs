//! Queries on Active Storage's tables (migration 0013): `active_storage_blobs`,
//! `active_storage_attachments` and `active_storage_variant_records`, in the rows Rails writes
//! (`ActiveStorage::Blob`, `ActiveStorage::Attachment`, `ActiveStorage::VariantRecord`).
//!
//! The bytes themselves live in a storage service (`crate::storage`); these functions only
//! keep the records. Deleting returns the keys whose files the caller removes.

use sqlx::SqlitePool;

/// The record types Hearth attaches files to, as Rails names them.
pub mod record {
    /// A message's file (`Message has_one_attached :attachment`).
    pub const MESSAGE: &str = "Message";
    /// A user's avatar (`User has_one_attached :avatar`).
    pub const USER: &str = "User";
    /// The account's logo (`Account has_one_attached :logo`).
    pub const ACCOUNT: &str = "Account";
    /// A variant's image (`ActiveStorage::VariantRecord has_one_attached :image`).
    pub const VARIANT: &str = "ActiveStorage::VariantRecord";
}

/// Campfire's `thumb` variant of a message's image: `resize_to_limit: [1200, 800]`
/// (`Message::Attachment::THUMBNAIL_MAX_WIDTH`/`_HEIGHT`).
pub const THUMB_LIMIT: (u32, u32) = (1200, 800);

/// The transformations of a variant that fits within `width`×`height`
/// (`{resize_to_limit: [width, height]}`), as its variation key and digest carry them.
pub fn resize_to_limit(width: u32, height: u32) -> crate::rails::marshal::Value {
    use crate::rails::marshal::Value;
    Value::Hash(vec![(
        Value::Sym("resize_to_limit".into()),
        Value::Array(vec![Value::Int(width.into()), Value::Int(height.into())]),
    )])
}

/// The `variation_digest` of the thumbnail variant ([`THUMB_LIMIT`]).
pub fn thumb_digest() -> &'static str {
    static DIGEST: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        crate::rails::active_storage::variation_digest(&resize_to_limit(
            THUMB_LIMIT.0,
            THUMB_LIMIT.1,
        ))
    });
    &DIGEST
}

/// A row of `active_storage_blobs`.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Blob {
    /// Primary key.
    pub id: i64,
    /// The service key (28 lowercase base-36 characters for blobs Hearth makes).
    pub key: String,
    /// The file name as given (sanitized).
    pub filename: String,
    /// The MIME type, identified from the content.
    pub content_type: Option<String>,
    /// The metadata JSON (`{"identified":true,"width":…,"height":…,"analyzed":true}`).
    pub metadata: Option<String>,
    /// The service the bytes are in (`local`, `s3`).
    pub service_name: String,
    /// Size in bytes.
    pub byte_size: i64,
    /// Base64 of the MD5 of the bytes.
    pub checksum: Option<String>,
    /// Rails' `datetime(6)` text.
    pub created_at: String,
}

impl Blob {
    /// The parsed metadata (an empty object when absent or malformed).
    pub fn metadata_json(&self) -> serde_json::Map<String, serde_json::Value> {
        self.metadata
            .as_deref()
            .and_then(|m| serde_json::from_str::<serde_json::Value>(m).ok())
            .and_then(|v| match v {
                serde_json::Value::Object(map) => Some(map),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// An integer field of the metadata (`width`, `height`).
    pub fn metadata_int(&self, name: &str) -> Option<i64> {
        self.metadata_json()
            .get(name)
            .and_then(serde_json::Value::as_i64)
    }

    /// Whether the content type is an image type.
    pub fn is_image(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("image/"))
    }

    /// Whether the content type is a video type.
    pub fn is_video(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|t| t.starts_with("video/"))
    }
}

/// A blob to insert.
#[derive(Clone, Copy, Debug)]
pub struct NewBlob<'a> {
    /// Service key.
    pub key: &'a str,
    /// File name.
    pub filename: &'a str,
    /// MIME type.
    pub content_type: Option<&'a str>,
    /// Metadata JSON.
    pub metadata: &'a str,
    /// Service name.
    pub service_name: &'a str,
    /// Size in bytes.
    pub byte_size: i64,
    /// Base64 MD5.
    pub checksum: Option<&'a str>,
}

/// A file attached to a message, with the image of its thumbnail variant once processed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attached {
    /// The file.
    pub blob: Blob,
    /// The thumbnail (or a video's poster), when made.
    pub thumb: Option<Blob>,
}

/// Rails' `Time.current` in a `datetime(6)` column on SQLite: `YYYY-MM-DD HH:MM:SS.ffffff`.
pub fn rails_datetime(ms: i64) -> String {
    let iso = crate::rails::time::format_iso8601_millis(i128::from(ms) * 1_000_000);
    format!("{}000", iso.replacen('T', " ", 1).trim_end_matches('Z'))
}

const BLOB_COLUMNS: &str =
    "id, key, filename, content_type, metadata, service_name, byte_size, checksum, created_at";

/// The metadata key naming the user who uploaded a blob (Hearth's; Rails ignores it).
pub const UPLOADER_KEY: &str = "hearth_uploader_id";

/// The uploader of a blob's row in SQL: its metadata's [`UPLOADER_KEY`], NULL when the
/// metadata is not JSON. Spelled as migration 0017's index spells it, so that the quota's
/// sum reads the index instead of every blob.
fn uploader_sql() -> String {
    format!("(CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.{UPLOADER_KEY}') END)")
}

/// The bytes of the blobs `user_id` uploaded (their metadata's [`UPLOADER_KEY`]), attached or
/// not yet; variants (thumbnails, avatar squares) name no uploader and are not counted.
///
/// # Errors
/// A database failure.
pub async fn uploaded_bytes(pool: &SqlitePool, user_id: i64) -> sqlx::Result<u64> {
    let sum: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT COALESCE(SUM(byte_size), 0) FROM active_storage_blobs WHERE {} = ?",
        uploader_sql()
    )))
    .bind(user_id)
    .fetch_one(pool)
    .await?;
    Ok(u64::try_from(sum).unwrap_or(0))
}

/// Inserts `new`, a blob uploaded by `uploader` (its metadata names them), unless the bytes
/// `uploader` has uploaded ([`uploaded_bytes`]) and its `byte_size` together exceed `quota`
/// bytes: `Ok(blob)`, or `Err(bytes already uploaded)` with nothing inserted. The sum and the
/// insert are one statement under the write lock, so uploads finishing at once cannot pass
/// the quota together.
///
/// # Errors
/// A database failure, or a duplicate key.
pub async fn insert_within_quota(
    pool: &SqlitePool,
    new: &NewBlob<'_>,
    uploader: i64,
    quota: u64,
) -> sqlx::Result<Result<Blob, u64>> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    let row: Option<Blob> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO active_storage_blobs (key, filename, content_type, metadata, service_name, \
         byte_size, checksum, created_at) SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE \
         (SELECT COALESCE(SUM(byte_size), 0) FROM active_storage_blobs WHERE {} = ?) + ? <= ? \
         RETURNING {BLOB_COLUMNS}",
        uploader_sql()
    )))
    .bind(new.key)
    .bind(new.filename)
    .bind(new.content_type)
    .bind(new.metadata)
    .bind(new.service_name)
    .bind(new.byte_size)
    .bind(new.checksum)
    .bind(rails_datetime(super::now_ms()))
    .bind(uploader)
    .bind(new.byte_size)
    .bind(i64::try_from(quota).unwrap_or(i64::MAX))
    .fetch_optional(&*one)
    .await?;
    let answer = match row {
        Some(blob) => Ok(blob),
        None => Err(uploaded_bytes(&one, uploader).await?),
    };
    one.done();
    Ok(answer)
}

/// Inserts a blob; returns it.
///
/// # Errors
/// A database failure, or a duplicate key.
pub async fn insert(pool: &SqlitePool, new: &NewBlob<'_>) -> sqlx::Result<Blob> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    let row = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "INSERT INTO active_storage_blobs (key, filename, content_type, metadata, service_name, \
         byte_size, checksum, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING {BLOB_COLUMNS}"
    )))
    .bind(new.key)
    .bind(new.filename)
    .bind(new.content_type)
    .bind(new.metadata)
    .bind(new.service_name)
    .bind(new.byte_size)
    .bind(new.checksum)
    .bind(rails_datetime(super::now_ms()))
    .fetch_one(&*one)
    .await?;
    one.done();
    Ok(row)
}

/// The blob `id`.
pub async fn find(pool: &SqlitePool, id: i64) -> sqlx::Result<Option<Blob>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {BLOB_COLUMNS} FROM active_storage_blobs WHERE id = ?"
    )))
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// The blob with service key `key`.
pub async fn find_by_key(pool: &SqlitePool, key: &str) -> sqlx::Result<Option<Blob>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {BLOB_COLUMNS} FROM active_storage_blobs WHERE key = ?"
    )))
    .bind(key)
    .fetch_optional(pool)
    .await
}

/// Replaces a blob's content type and metadata JSON.
pub async fn update_identity(
    pool: &SqlitePool,
    id: i64,
    content_type: Option<&str>,
    metadata: &str,
) -> sqlx::Result<()> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    sqlx::query("UPDATE active_storage_blobs SET content_type = ?, metadata = ? WHERE id = ?")
        .bind(content_type)
        .bind(metadata)
        .bind(id)
        .execute(&*one)
        .await?;
    one.done();
    Ok(())
}

/// Whether `e` is the unique index of migration 0016 refusing a second attachment of one
/// blob (a blob is attached at most once: a message's file, an avatar, the logo or a variant's
/// image).
pub fn is_already_attached(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|d| {
        d.is_unique_violation() && d.message().contains("active_storage_attachments.blob_id")
    })
}

/// Attaches blob `blob_id` as `name` of the record, in an open transaction (or on a pool).
///
/// # Errors
/// A database failure; [`is_already_attached`] when the blob is attached to anything already
/// (the unique index of migration 0016: checked and attached in one statement).
pub async fn attach<'e, E>(
    executor: E,
    name: &str,
    record_type: &str,
    record_id: i64,
    blob_id: i64,
) -> sqlx::Result<()>
where
    E: sqlx::Executor<'e, Database = sqlx::Sqlite>,
{
    sqlx::query(
        "INSERT INTO active_storage_attachments (name, record_type, record_id, blob_id, created_at) \
         VALUES (?, ?, ?, ?, ?)",
    )
    .bind(name)
    .bind(record_type)
    .bind(record_id)
    .bind(blob_id)
    .bind(rails_datetime(super::now_ms()))
    .execute(executor)
    .await?;
    Ok(())
}

/// Attaches `blob_id` as the one `name` of a record, replacing (and returning the blob ids of)
/// what was attached before (`has_one_attached`'s replace), in one transaction.
///
/// # Errors
/// A database failure; [`is_already_attached`] when the blob is attached elsewhere (nothing
/// is changed: the old attachment stays).
pub async fn attach_one(
    pool: &SqlitePool,
    name: &str,
    record_type: &str,
    record_id: i64,
    blob_id: i64,
) -> sqlx::Result<Vec<i64>> {
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    let old = detach_in(&mut *tx, name, record_type, record_id).await?;
    attach(&mut *tx, name, record_type, record_id, blob_id).await?;
    tx.commit().await?;
    Ok(old)
}

/// Detaches `name` of a record; returns the blob ids that were attached.
pub async fn detach(
    pool: &SqlitePool,
    name: &str,
    record_type: &str,
    record_id: i64,
) -> sqlx::Result<Vec<i64>> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    let old = detach_in(&*one, name, record_type, record_id).await?;
    one.done();
    Ok(old)
}

/// Deletes the attachments `name` of a record, in an open transaction (or on a pool); returns
/// the blob ids that were attached.
async fn detach_in<'e, E>(
    executor: E,
    name: &str,
    record_type: &str,
    record_id: i64,
) -> sqlx::Result<Vec<i64>>
where
    E: sqlx::Executor<'e, Database = sqlx::Sqlite>,
{
    sqlx::query_scalar(
        "DELETE FROM active_storage_attachments WHERE record_type = ? AND record_id = ? AND name = ? \
         RETURNING blob_id",
    )
    .bind(record_type)
    .bind(record_id)
    .bind(name)
    .fetch_all(executor)
    .await
}

/// The blob attached as `name` of a record.
pub async fn attached(
    pool: &SqlitePool,
    name: &str,
    record_type: &str,
    record_id: i64,
) -> sqlx::Result<Option<Blob>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM active_storage_blobs b JOIN active_storage_attachments a ON a.blob_id = b.id \
         WHERE a.record_type = ? AND a.record_id = ? AND a.name = ? ORDER BY a.id DESC LIMIT 1",
        prefixed("b")
    )))
    .bind(record_type)
    .bind(record_id)
    .bind(name)
    .fetch_optional(pool)
    .await
}

/// The avatars of users `ids`: `(user id, blob id)` of each who has one.
pub async fn avatars_of(pool: &SqlitePool, ids: &[i64]) -> sqlx::Result<Vec<(i64, i64)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids_json = serde_json::to_string(ids).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT record_id, MAX(blob_id) FROM active_storage_attachments WHERE record_type = '{}' \
         AND name = 'avatar' AND record_id IN (SELECT value FROM json_each(?)) GROUP BY record_id",
        record::USER
    )))
    .bind(ids_json)
    .fetch_all(pool)
    .await
}

fn prefixed(alias: &str) -> String {
    BLOB_COLUMNS
        .split(", ")
        .map(|c| format!("{alias}.{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The records a blob is attached to: `(record_type, record_id, name)`.
pub async fn records_of(
    pool: &SqlitePool,
    blob_id: i64,
) -> sqlx::Result<Vec<(String, i64, String)>> {
    sqlx::query_as(
        "SELECT record_type, record_id, name FROM active_storage_attachments WHERE blob_id = ?",
    )
    .bind(blob_id)
    .fetch_all(pool)
    .await
}

/// The blob a variant record belongs to (its source).
pub async fn variant_source(
    pool: &SqlitePool,
    variant_record_id: i64,
) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT blob_id FROM active_storage_variant_records WHERE id = ?")
        .bind(variant_record_id)
        .fetch_optional(pool)
        .await
}

/// The image of blob `blob_id`'s variant with `digest`, once processed.
pub async fn variant(pool: &SqlitePool, blob_id: i64, digest: &str) -> sqlx::Result<Option<Blob>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM active_storage_variant_records v \
         JOIN active_storage_attachments a ON a.record_type = '{}' AND a.record_id = v.id AND a.name = 'image' \
         JOIN active_storage_blobs b ON b.id = a.blob_id \
         WHERE v.blob_id = ? AND v.variation_digest = ?",
        prefixed("b"),
        record::VARIANT
    )))
    .bind(blob_id)
    .bind(digest)
    .fetch_optional(pool)
    .await
}

/// Records the variant `digest` of `blob_id` with `image_blob_id` as its image (Rails'
/// `variant_records.create_or_find_by!` + `image.attach`). Returns false, storing nothing,
/// when the source blob is gone.
pub async fn add_variant(
    pool: &SqlitePool,
    blob_id: i64,
    digest: &str,
    image_blob_id: i64,
) -> sqlx::Result<bool> {
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    let exists: Option<i64> =
        sqlx::query_scalar("SELECT id FROM active_storage_blobs WHERE id = ?")
            .bind(blob_id)
            .fetch_optional(&mut *tx)
            .await?;
    if exists.is_none() {
        return Ok(false);
    }
    let record_id: i64 = sqlx::query_scalar(
        "INSERT INTO active_storage_variant_records (blob_id, variation_digest) VALUES (?, ?) \
         ON CONFLICT (blob_id, variation_digest) DO UPDATE SET variation_digest = excluded.variation_digest \
         RETURNING id",
    )
    .bind(blob_id)
    .bind(digest)
    .fetch_one(&mut *tx)
    .await?;
    attach(&mut *tx, "image", record::VARIANT, record_id, image_blob_id).await?;
    tx.commit().await?;
    Ok(true)
}

#[derive(sqlx::FromRow)]
struct AttachedRow {
    record_id: i64,
    #[sqlx(flatten)]
    blob: Blob,
}

/// The files of messages `ids` (at most one each), with their thumbnails (variant `thumb_digest`).
pub async fn for_messages(
    pool: &SqlitePool,
    ids: &[i64],
    thumb_digest: &str,
) -> sqlx::Result<Vec<(i64, Attached)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids_json = serde_json::to_string(ids).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let rows: Vec<AttachedRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT a.record_id, {} FROM active_storage_attachments a JOIN active_storage_blobs b ON b.id = a.blob_id \
         WHERE a.record_type = '{}' AND a.name = 'attachment' AND a.record_id IN (SELECT value FROM json_each(?)) \
         ORDER BY a.id",
        prefixed("b"),
        record::MESSAGE
    )))
    .bind(ids_json)
    .fetch_all(pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let thumb = variant(pool, row.blob.id, thumb_digest).await?;
        out.push((
            row.record_id,
            Attached {
                blob: row.blob,
                thumb,
            },
        ));
    }
    Ok(out)
}

#[derive(sqlx::FromRow)]
struct UnprocessedRow {
    room_id: i64,
    record_id: i64,
    #[sqlx(flatten)]
    blob: Blob,
}

/// A message's file whose processing never ended: `(room id, message id, blob)`.
pub type Unprocessed = (i64, i64, Blob);

/// The SQL condition (on blob alias `b`) of a blob that is not analyzed: its metadata has no
/// `analyzed` key, as the page tells "processing…" (metadata that is no JSON object has none).
const NOT_ANALYZED: &str =
    "json_type(CASE WHEN json_valid(b.metadata) THEN b.metadata END, '$.analyzed') IS NULL";

/// The largest blob id (0 without blobs).
pub async fn max_id(pool: &SqlitePool) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) FROM active_storage_blobs")
        .fetch_one(pool)
        .await
}

/// Up to `limit` images and videos attached to messages that are not analyzed, with ids
/// above `after_blob_id` and at most `upto_blob_id`, in blob id order: the files whose
/// processing a restart cut off.
pub async fn unprocessed_message_files(
    pool: &SqlitePool,
    after_blob_id: i64,
    upto_blob_id: i64,
    limit: i64,
) -> sqlx::Result<Vec<Unprocessed>> {
    let rows: Vec<UnprocessedRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT m.room_id, a.record_id, {} FROM active_storage_attachments a \
         JOIN active_storage_blobs b ON b.id = a.blob_id JOIN messages m ON m.id = a.record_id \
         WHERE a.record_type = '{}' AND a.name = 'attachment' AND b.id > ? AND b.id <= ? \
         AND (b.content_type LIKE 'image/%' OR b.content_type LIKE 'video/%') \
         AND {NOT_ANALYZED} ORDER BY b.id LIMIT ?",
        prefixed("b"),
        record::MESSAGE
    )))
    .bind(after_blob_id)
    .bind(upto_blob_id)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.room_id, r.record_id, r.blob))
        .collect())
}

/// Sets `key: true` in blob `id`'s metadata (metadata that is no JSON object starts over as
/// `{}`) if it is still not analyzed, in one statement, so a processing that ended meanwhile is
/// never overwritten. Whether it was set.
pub async fn mark_unanalyzed(pool: &SqlitePool, id: i64, key: &str) -> sqlx::Result<bool> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE active_storage_blobs AS b SET metadata = json_set(CASE WHEN json_valid(b.metadata) \
         AND json_type(b.metadata) = 'object' THEN b.metadata ELSE '{{}}' END, ?, json('true')) \
         WHERE b.id = ? AND {NOT_ANALYZED}"
    )))
    .bind(format!("$.{key}"))
    .bind(id)
    .execute(&*one)
    .await?;
    one.done();
    Ok(done.rows_affected() == 1)
}

/// Deletes blob `id` with its variants and their images, unless something still holds it
/// (an attachment row names it: then nothing is deleted). Returns the `(service_name, key)` of
/// every deleted blob, whose files the caller removes. The check and the deletes are one
/// transaction, so an attachment made meanwhile either commits first (and keeps the blob) or
/// finds the blob gone (its foreign key fails).
pub async fn delete(pool: &SqlitePool, id: i64) -> sqlx::Result<Vec<(String, String)>> {
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    let mut gone = Vec::new();
    let mut pending = vec![id];
    while let Some(blob_id) = pending.pop() {
        // A variant's image was detached from its variant record just before (below).
        let held: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM active_storage_attachments WHERE blob_id = ? LIMIT 1",
        )
        .bind(blob_id)
        .fetch_optional(&mut *tx)
        .await?;
        if held.is_some() {
            tracing::debug!(blob_id, "a blob still attached is kept");
            continue;
        }
        let images: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT a.blob_id FROM active_storage_variant_records v JOIN active_storage_attachments a \
             ON a.record_type = '{}' AND a.record_id = v.id WHERE v.blob_id = ?",
            record::VARIANT
        )))
        .bind(blob_id)
        .fetch_all(&mut *tx)
        .await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM active_storage_attachments WHERE record_type = '{}' AND \
             record_id IN (SELECT id FROM active_storage_variant_records WHERE blob_id = ?)",
            record::VARIANT
        )))
        .bind(blob_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM active_storage_variant_records WHERE blob_id = ?")
            .bind(blob_id)
            .execute(&mut *tx)
            .await?;
        let row: Option<(String, String)> = sqlx::query_as(
            "DELETE FROM active_storage_blobs WHERE id = ? RETURNING service_name, key",
        )
        .bind(blob_id)
        .fetch_optional(&mut *tx)
        .await?;
        gone.extend(row);
        pending.extend(images);
    }
    tx.commit().await?;
    Ok(gone)
}

/// Blobs no longer wanted: those attached to a message, user or account that is gone (their
/// attachment rows are removed here), and those attached to nothing and created before
/// `unattached_before_ms` (direct uploads never used; Rails' `ActiveStorage::Blob.unattached`).
/// Variant images are not counted: they go with their source blob.
pub async fn orphans(pool: &SqlitePool, unattached_before_ms: i64) -> sqlx::Result<Vec<i64>> {
    let mut ids: Vec<i64> = {
        let one = super::One::begin(pool, super::Access::Kept).await?;
        let ids = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "DELETE FROM active_storage_attachments WHERE \
             (record_type = '{m}' AND record_id NOT IN (SELECT id FROM messages)) OR \
             (record_type = '{u}' AND record_id NOT IN (SELECT id FROM users)) OR \
             (record_type = '{a}' AND record_id NOT IN (SELECT id FROM accounts)) RETURNING blob_id",
            m = record::MESSAGE,
            u = record::USER,
            a = record::ACCOUNT
        )))
        .fetch_all(&*one)
        .await?;
        one.done();
        ids
    };
    let old: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM active_storage_blobs b WHERE created_at < ? AND \
         NOT EXISTS (SELECT 1 FROM active_storage_attachments a WHERE a.blob_id = b.id)",
    )
    .bind(rails_datetime(unattached_before_ms))
    .fetch_all(pool)
    .await?;
    ids.extend(old);
    let mut unattached = Vec::with_capacity(ids.len());
    for id in ids {
        let still: Option<i64> = sqlx::query_scalar(
            "SELECT 1 FROM active_storage_attachments WHERE blob_id = ? LIMIT 1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await?;
        if still.is_none() && !unattached.contains(&id) {
            unattached.push(id);
        }
    }
    Ok(unattached)
}

/// How many blobs exist (for tests and metrics).
pub async fn count(pool: &SqlitePool) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM active_storage_blobs")
        .fetch_one(pool)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inserts a blob of `byte_size` bytes uploaded by `uploader` under `quota`.
    async fn insert_as(
        pool: &SqlitePool,
        key: &str,
        uploader: i64,
        byte_size: i64,
        quota: u64,
    ) -> Result<Blob, u64> {
        let metadata = serde_json::json!({ UPLOADER_KEY: uploader }).to_string();
        let new = NewBlob {
            key,
            filename: "f.bin",
            content_type: None,
            metadata: &metadata,
            service_name: "local",
            byte_size,
            checksum: None,
        };
        insert_within_quota(pool, &new, uploader, quota)
            .await
            .expect("insert")
    }

    #[tokio::test]
    async fn the_quota_counts_each_uploaders_blobs_and_reads_the_index() {
        let (pool, dir, _serial) = crate::db::test_pool().await;
        assert!(insert_as(&pool, "a1", 1, 600, 1000).await.is_ok());
        assert!(insert_as(&pool, "b1", 2, 900, 1000).await.is_ok());
        // A blob whose metadata is no JSON (another writer's) names no uploader.
        sqlx::query(
            "INSERT INTO active_storage_blobs (key, filename, metadata, service_name, byte_size, \
             created_at) VALUES ('x', 'x', 'not json', 'local', 5000, '')",
        )
        .execute(&pool)
        .await
        .unwrap();
        assert_eq!(
            insert_as(&pool, "a2", 1, 401, 1000).await,
            Err(600),
            "past the quota: nothing inserted"
        );
        assert!(insert_as(&pool, "a3", 1, 400, 1000).await.is_ok());
        assert_eq!(uploaded_bytes(&pool, 1).await.unwrap(), 1000);
        assert_eq!(uploaded_bytes(&pool, 2).await.unwrap(), 900);
        assert!(find_by_key(&pool, "a2").await.unwrap().is_none());
        let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "EXPLAIN QUERY PLAN SELECT COALESCE(SUM(byte_size), 0) FROM active_storage_blobs \
             WHERE {} = 1",
            uploader_sql()
        )))
        .fetch_all(&pool)
        .await
        .unwrap();
        assert!(
            plan.iter()
                .any(|(_, _, _, d)| d.contains("index_active_storage_blobs_on_uploader")),
            "{plan:?}"
        );
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn a_blob_is_attached_once_and_a_held_blob_is_never_deleted() {
        let (pool, dir, _serial) = super::super::test_pool().await;
        let blob = insert(
            &pool,
            &NewBlob {
                key: "abcd1234",
                filename: "a.txt",
                content_type: None,
                metadata: "{}",
                service_name: "local",
                byte_size: 1,
                checksum: None,
            },
        )
        .await
        .expect("insert");
        attach(&pool, "attachment", record::MESSAGE, 1, blob.id)
            .await
            .expect("the first attachment");
        let again = attach(&pool, "attachment", record::MESSAGE, 2, blob.id)
            .await
            .expect_err("a second attachment");
        assert!(is_already_attached(&again), "{again}");
        let replaced = attach_one(&pool, "avatar", record::USER, 1, blob.id).await;
        assert!(replaced.is_err_and(|e| is_already_attached(&e)));
        assert!(
            delete(&pool, blob.id).await.expect("delete").is_empty(),
            "a held blob is kept"
        );
        assert!(find(&pool, blob.id).await.expect("find").is_some());
        detach(&pool, "attachment", record::MESSAGE, 1)
            .await
            .expect("detach");
        assert_eq!(
            delete(&pool, blob.id).await.expect("delete"),
            vec![("local".to_owned(), "abcd1234".to_owned())]
        );
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }

    #[tokio::test]
    async fn a_resumed_mark_is_set_only_on_a_blob_still_not_analyzed() {
        let (pool, dir, _serial) = super::super::test_pool().await;
        assert_eq!(max_id(&pool).await.expect("max id"), 0);
        let mut ids = Vec::new();
        for (key, metadata) in [
            ("k1", r#"{"identified":true}"#),
            ("k2", r#"{"identified":true,"analyzed":true}"#),
            ("k3", "not json"),
        ] {
            let new = NewBlob {
                key,
                filename: "a.png",
                content_type: Some("image/png"),
                metadata,
                service_name: "local",
                byte_size: 1,
                checksum: None,
            };
            ids.push(insert(&pool, &new).await.expect("insert").id);
        }
        assert_eq!(max_id(&pool).await.expect("max id"), ids[2]);
        let marked = |id| mark_unanalyzed(&pool, id, "resumed");
        assert!(marked(ids[0]).await.expect("mark"));
        assert!(!marked(ids[1]).await.expect("mark"), "an analyzed blob");
        assert!(
            marked(ids[2]).await.expect("mark"),
            "metadata that is no JSON"
        );
        let first = find(&pool, ids[0]).await.expect("find").expect("blob");
        assert_eq!(
            first.metadata_json().get("resumed"),
            Some(&serde_json::Value::Bool(true))
        );
        assert_eq!(
            first.metadata_json().get("identified"),
            Some(&serde_json::Value::Bool(true))
        );
        let analyzed = find(&pool, ids[1]).await.expect("find").expect("blob");
        assert!(!analyzed.metadata_json().contains_key("resumed"));
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }
}
