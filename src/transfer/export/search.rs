//! Campfire's full-text index (`message_search_index`, FTS5 with the porter tokenizer),
//! written as `Message::Searchable` writes it: one row per message, its rowid the message's
//! id, its text `Message#plain_text_body` (the body's plain text, or, when that is blank, the
//! attachment's file name, or nothing).

use std::sync::atomic::AtomicBool;

use anyhow::Context as _;
use rusqlite::Connection;

use super::rows::check;
use crate::transfer::Progress;

/// Each message's id, its stored plain text (NULL for rows written before Hearth kept it), its
/// body and its attachment's file name.
const MESSAGES: &str = "SELECT m.id, m.plain_text, m.body, \
    (SELECT b.filename FROM active_storage_attachments a \
       JOIN active_storage_blobs b ON b.id = a.blob_id \
      WHERE a.record_type = 'Message' AND a.record_id = m.id AND a.name = 'attachment' \
      ORDER BY a.id LIMIT 1) \
    FROM messages m ORDER BY m.id";

/// `Message#plain_text_body`: the body's plain text when it is not blank, else the
/// attachment's file name, else the empty string.
pub fn plain_text_body(plain_text: Option<&str>, body: &str, filename: Option<&str>) -> String {
    let text = match plain_text {
        Some(text) => text.to_owned(),
        None => crate::rich_text::plain_text(body),
    };
    if !text.trim().is_empty() {
        return text;
    }
    filename.unwrap_or_default().to_owned()
}

/// Writes the index of every message of Hearth's `source` into `target`; returns the rows.
///
/// # Errors
/// A query SQLite refuses, or an interruption.
pub fn write(
    source: &Connection,
    target: &Connection,
    progress: &mut Progress,
    interrupted: &AtomicBool,
) -> anyhow::Result<u64> {
    let mut select = source.prepare(MESSAGES)?;
    let mut insert =
        target.prepare("INSERT INTO message_search_index (rowid, body) VALUES (?, ?)")?;
    let mut rows = select.query([])?;
    let mut written = 0u64;
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let plain: Option<String> = row.get(1)?;
        let body: String = row.get(2)?;
        let filename: Option<String> = row.get(3)?;
        let text = plain_text_body(plain.as_deref(), &body, filename.as_deref());
        insert
            .execute(rusqlite::params![id, text])
            .with_context(|| format!("indexing message {id}"))?;
        written += 1;
        progress.inc(1);
        if written.is_multiple_of(super::rows::CHECK_EVERY) {
            check(interrupted)?;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::plain_text_body;

    #[test]
    fn a_blank_body_is_indexed_by_its_attachments_file_name() {
        assert_eq!(plain_text_body(Some("hi"), "<div>hi</div>", None), "hi");
        assert_eq!(
            plain_text_body(None, "<div>Good <b>morning</b></div>", None),
            "Good morning"
        );
        assert_eq!(
            plain_text_body(Some(""), "", Some("report.pdf")),
            "report.pdf"
        );
        assert_eq!(plain_text_body(None, "<div> </div>", None), "");
    }
}
