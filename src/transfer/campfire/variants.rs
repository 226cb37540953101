//! The image variants Hearth draws that a Campfire database may lack: Hearth shows an avatar
//! as its square variant (`resize_to_fill`-like square of at most 512 px, `web::avatars`), the
//! account logo as two exact PNG squares (512 and 192 px) and a message's image as its
//! thumbnail (`resize_to_limit: [1200, 800]`). Campfire's own variants have other
//! transformations for avatars and logos (`resize_to_limit … format: :webp` / `:png`), so their
//! `variation_digest`s are not Hearth's; a thumbnail Campfire made is Hearth's and is kept.
//! The missing ones are made here with Hearth's image code, before the transaction, staged as
//! files and written as blobs, variant records and `image` attachments inside it, as
//! `web::files::store_variant` writes them.

use base64::Engine as _;
use md5::Digest as _;
use rusqlite::{params, Connection};

use super::files::{BlobFile, Staged};
use super::interrupt::Interrupt;
use super::source::SCHEMA;
use crate::storage::process::{self, Fit};
use crate::transfer::Progress;

/// One variant to make: of which blob, under which digest, how.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// The original's file.
    pub blob: BlobFile,
    /// Its `variation_digest`.
    pub digest: String,
    /// The resize.
    pub fit: Fit,
    /// Always PNG (icons).
    pub png: bool,
    /// A message's thumbnail: none is made for an animated GIF (it is its own).
    pub thumbnail: bool,
}

/// A variant made and staged, to be written by [`insert`].
#[derive(Debug, Clone)]
pub struct Made {
    /// The original's blob id.
    pub source_blob_id: i64,
    /// The variant's `variation_digest`.
    pub digest: String,
    /// Its file, as a blob (key, filename, size, checksum).
    pub file: BlobFile,
    /// Its content type.
    pub content_type: &'static str,
    /// Its metadata (`identified`, `analyzed`, `width`, `height`).
    pub metadata: String,
}

/// The image types Hearth decodes.
const IMAGES: &str = "('image/png', 'image/jpeg', 'image/gif', 'image/webp')";

/// The variants Hearth draws of one kind of attachment.
struct Rule {
    /// `active_storage_attachments.record_type`.
    record_type: &'static str,
    /// `active_storage_attachments.name`.
    name: &'static str,
    /// Each variant: its digest, its resize, always PNG.
    sizes: Vec<(String, Fit, bool)>,
    /// Message thumbnails (none for an animated GIF).
    thumbnail: bool,
}

/// Avatars: a square of at most 512 px (`web::avatars`); the logo: exact PNG squares of 512
/// and 192 px; a message's image: the thumbnail (`db::blobs::THUMB_LIMIT`).
fn rules() -> Vec<Rule> {
    use crate::db::blobs::{record, thumb_digest, THUMB_LIMIT};
    let square = crate::web::avatars::square_digest;
    vec![
        Rule {
            record_type: record::USER,
            name: "avatar",
            sizes: vec![(square(512), Fit::Square(512), false)],
            thumbnail: false,
        },
        Rule {
            record_type: record::ACCOUNT,
            name: "logo",
            sizes: vec![
                (square(512), Fit::Fill(512, 512), true),
                (square(192), Fit::Fill(192, 192), true),
            ],
            thumbnail: false,
        },
        Rule {
            record_type: record::MESSAGE,
            name: "attachment",
            sizes: vec![(
                thumb_digest().to_owned(),
                Fit::Limit(THUMB_LIMIT.0, THUMB_LIMIT.1),
                false,
            )],
            thumbnail: true,
        },
    ]
}

/// The variants to make: one per kept attachment of an image (an avatar, the logo, a
/// message's file) and size whose digest Campfire has no variant record for.
///
/// # Errors
/// An SQL error.
pub fn wanted(conn: &Connection, files: &[BlobFile]) -> anyhow::Result<Vec<Wanted>> {
    let mut statement = conn.prepare(&format!(
        "SELECT DISTINCT a.blob_id FROM {SCHEMA}.active_storage_attachments AS a \
           JOIN {SCHEMA}.active_storage_blobs AS b ON b.id = a.blob_id \
          WHERE a.record_type = ?1 AND a.name = ?2 AND b.content_type IN {IMAGES} \
            AND a.id IN (SELECT MIN(id) FROM {SCHEMA}.active_storage_attachments GROUP BY blob_id) \
            AND NOT EXISTS (SELECT 1 FROM {SCHEMA}.active_storage_variant_records AS v \
                             WHERE v.blob_id = a.blob_id AND v.variation_digest = ?3) \
          ORDER BY a.blob_id"
    ))?;
    let by_id: std::collections::HashMap<i64, &BlobFile> =
        files.iter().map(|f| (f.id, f)).collect();
    let mut wanted = Vec::new();
    for rule in rules() {
        for (digest, fit, png) in rule.sizes {
            let ids: Vec<i64> = statement
                .query_map(params![rule.record_type, rule.name, digest], |row| {
                    row.get(0)
                })?
                .collect::<Result<_, _>>()?;
            for &blob in ids.iter().filter_map(|id| by_id.get(id)) {
                wanted.push(Wanted {
                    blob: blob.clone(),
                    digest: digest.clone(),
                    fit,
                    png,
                    thumbnail: rule.thumbnail,
                });
            }
        }
    }
    Ok(wanted)
}

/// Makes each variant from the original where Campfire keeps it and stages its file. An
/// image Hearth cannot read gets none (a warning names it): it shows as a file, as it would
/// had it been uploaded to Hearth.
///
/// # Errors
/// A staged file that cannot be written, or an interrupt.
pub fn make(
    wanted: &[Wanted],
    staged: &mut Staged,
    progress: &mut Progress,
    interrupt: &Interrupt,
) -> anyhow::Result<Vec<Made>> {
    let mut made = Vec::new();
    for want in wanted {
        interrupt.check()?;
        progress.inc(1);
        let encoded = match encode(want) {
            Ok(Some(encoded)) => encoded,
            Ok(None) => continue,
            Err(e) => {
                eprintln!(
                    "blob {} ({}): no variant made, Hearth cannot read it as an image: {e}",
                    want.blob.id, want.blob.filename
                );
                continue;
            }
        };
        let key = crate::storage::new_key();
        staged.stage_bytes(&key, &encoded.bytes)?;
        let stem = want
            .blob
            .filename
            .rsplit_once('.')
            .map_or(want.blob.filename.as_str(), |(stem, _)| stem);
        made.push(Made {
            source_blob_id: want.blob.id,
            digest: want.digest.clone(),
            file: BlobFile {
                id: 0,
                key,
                filename: format!("{stem}.{}", encoded.extension),
                byte_size: encoded.bytes.len() as u64,
                checksum: Some(
                    base64::engine::general_purpose::STANDARD
                        .encode(md5::Md5::digest(&encoded.bytes)),
                ),
                source: std::path::PathBuf::new(),
            },
            content_type: encoded.content_type,
            metadata: serde_json::json!({
                "identified": true, "analyzed": true,
                "width": encoded.width, "height": encoded.height
            })
            .to_string(),
        });
    }
    Ok(made)
}

/// The variant's bytes; None for an animated GIF's thumbnail.
fn encode(want: &Wanted) -> Result<Option<process::Encoded>, process::ProcessError> {
    if want.thumbnail && process::analyze(&want.blob.source)?.animated {
        return Ok(None);
    }
    process::variant_as(&want.blob.source, want.fit, want.png).map(Some)
}

/// Writes each made variant: its blob, its variant record and the record's `image`
/// attachment (inside the import's transaction, after the copied rows).
///
/// # Errors
/// An SQL error.
pub fn insert(conn: &Connection, made: &[Made]) -> rusqlite::Result<()> {
    let now = crate::db::blobs::rails_datetime(crate::db::now_ms());
    for variant in made {
        conn.execute(
            "INSERT INTO main.active_storage_blobs \
               (key, filename, content_type, metadata, service_name, byte_size, checksum, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                variant.file.key,
                variant.file.filename,
                variant.content_type,
                variant.metadata,
                crate::storage::DISK_SERVICE,
                i64::try_from(variant.file.byte_size).unwrap_or(i64::MAX),
                variant.file.checksum,
                now
            ],
        )?;
        let blob_id = conn.last_insert_rowid();
        conn.execute(
            "INSERT INTO main.active_storage_variant_records (blob_id, variation_digest) VALUES (?1, ?2)",
            params![variant.source_blob_id, variant.digest],
        )?;
        let record_id = conn.last_insert_rowid();
        conn.execute(
            "INSERT INTO main.active_storage_attachments (name, record_type, record_id, blob_id, created_at) \
             VALUES ('image', ?1, ?2, ?3, ?4)",
            params![crate::db::blobs::record::VARIANT, record_id, blob_id, now],
        )?;
    }
    Ok(())
}
