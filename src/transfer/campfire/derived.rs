//! What Hearth keeps beside the rows it copied, filled inside the import's transaction:
//! each message's plain text and the search index over it (`message_search_index`,
//! `message_search_progress`, migrations 0006, 0009, 0012), the id sequences (migration 0010:
//! an id Campfire handed out is never handed out again), the account's stylesheet as Hearth
//! stores it, and the triggers set aside while the rows are copied.

use rusqlite::{params, Connection};

use super::interrupt::Interrupt;
use super::source::SCHEMA;
use crate::transfer::Progress;

/// The tables whose triggers are set aside during the copy: a copied message is no new post
/// (no unread mark, no room touch, no catch-up log entry), and a copied boost no change.
const TRIGGERED: &[&str] = &["messages", "boosts"];

/// Drops the triggers on the copied tables; returns the SQL that creates them again
/// ([`restore_triggers`]). Both run inside the import's transaction.
///
/// # Errors
/// An SQL error.
pub fn suspend_triggers(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut found: Vec<(String, String)> = Vec::new();
    for table in TRIGGERED {
        let mut statement = conn.prepare(
            "SELECT name, sql FROM main.sqlite_master WHERE type = 'trigger' AND tbl_name = ?1",
        )?;
        let rows = statement.query_map([table], |row| Ok((row.get(0)?, row.get(1)?)))?;
        for row in rows {
            found.push(row?);
        }
    }
    for (name, _) in &found {
        conn.execute(&format!("DROP TRIGGER main.\"{name}\""), [])?;
    }
    Ok(found.into_iter().map(|(_, sql)| sql).collect())
}

/// Creates again the triggers [`suspend_triggers`] dropped.
///
/// # Errors
/// An SQL error.
pub fn restore_triggers(conn: &Connection, sql: &[String]) -> rusqlite::Result<()> {
    for statement in sql {
        conn.execute_batch(statement)?;
    }
    Ok(())
}

/// Writes each message's plain text (`messages.plain_text`: block ends as line breaks,
/// mentions as `@Name`; what search reads) from its body, with Hearth's own codec; a message
/// without a body keeps none. Returns how many were written.
///
/// # Errors
/// An SQL error, or an interrupt.
pub fn plain_texts(
    conn: &Connection,
    progress: &mut Progress,
    interrupt: &Interrupt,
) -> anyhow::Result<u64> {
    let mut read = conn.prepare(
        "SELECT id, body FROM main.messages WHERE id > ?1 AND body <> '' ORDER BY id LIMIT 2000",
    )?;
    let mut write = conn.prepare("UPDATE main.messages SET plain_text = ?1 WHERE id = ?2")?;
    let (mut after, mut written) = (i64::MIN, 0u64);
    loop {
        let batch: Vec<(i64, String)> = read
            .query_map([after], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let Some(&(last, _)) = batch.last() else {
            return Ok(written);
        };
        interrupt.check()?;
        for (id, body) in &batch {
            write.execute(params![crate::rich_text::plain_text(body), id])?;
        }
        written += batch.len() as u64;
        progress.inc(batch.len() as u64);
        after = last;
    }
}

/// Fills the search index with every message (the text migration 0012's view gives) and
/// marks it complete through the newest message, as `db::upkeep` would leave it.
///
/// # Errors
/// An SQL error.
pub fn search_index(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "INSERT INTO main.message_search_index (rowid, body) \
           SELECT id, body FROM main.message_search_texts ORDER BY id;
         INSERT OR REPLACE INTO main.message_search_progress (id, indexed_through) \
           SELECT 1, COALESCE(MAX(id), 0) FROM main.messages;",
    )
}

/// Hearth's tables whose ids are never handed out twice (SQLite's AUTOINCREMENT).
const SEQUENCED: &[&str] = &[
    "users",
    "rooms",
    "messages",
    "active_storage_blobs",
    "active_storage_attachments",
    "active_storage_variant_records",
];

/// Sets each AUTOINCREMENT table's sequence past every id Campfire ever handed out (its own
/// `sqlite_sequence`, which remembers deleted rows), every id now in the table and the
/// sequence already there, so a new row never takes a deleted Campfire row's id.
///
/// # Errors
/// An SQL error.
pub fn sequences(conn: &Connection) -> rusqlite::Result<()> {
    let campfire_has: bool = conn.query_row(
        &format!(
            "SELECT EXISTS (SELECT 1 FROM {SCHEMA}.sqlite_master WHERE name = 'sqlite_sequence')"
        ),
        [],
        |row| row.get(0),
    )?;
    for table in SEQUENCED {
        let theirs: i64 = if campfire_has {
            conn.query_row(
                &format!(
                    "SELECT COALESCE(MAX(seq), 0) FROM {SCHEMA}.sqlite_sequence WHERE name = ?1"
                ),
                [table],
                |row| row.get(0),
            )?
        } else {
            0
        };
        let ours: i64 = conn.query_row(
            &format!(
                "SELECT MAX(COALESCE((SELECT MAX(id) FROM main.{table}), 0), \
                            COALESCE((SELECT MAX(seq) FROM main.sqlite_sequence WHERE name = ?1), 0))"
            ),
            [table],
            |row| row.get(0),
        )?;
        let seq = theirs.max(ours);
        let changed = conn.execute(
            "UPDATE main.sqlite_sequence SET seq = ?1 WHERE name = ?2",
            params![seq, table],
        )?;
        if changed == 0 && seq > 0 {
            conn.execute(
                "INSERT INTO main.sqlite_sequence (name, seq) VALUES (?1, ?2)",
                params![table, seq],
            )?;
        }
    }
    Ok(())
}

/// The account's custom stylesheet as Hearth stores one (`web::page::sanitize_css`: nothing
/// in it can end the `<style>` element it is drawn in).
///
/// # Errors
/// An SQL error.
pub fn custom_styles(conn: &Connection) -> rusqlite::Result<()> {
    let styles: Vec<(i64, String)> = conn
        .prepare("SELECT id, custom_styles FROM main.accounts WHERE custom_styles IS NOT NULL")?
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (id, css) in styles {
        conn.execute(
            "UPDATE main.accounts SET custom_styles = ?1 WHERE id = ?2",
            params![crate::web::page::sanitize_css(&css), id],
        )?;
    }
    Ok(())
}
