//! Copying one [`Table`]: every row of its query over Hearth's database inserted into
//! Campfire's table, times turned into Rails' `datetime(6)` text on the way; and the id
//! sequences carried over.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context as _;
use rusqlite::types::Value;
use rusqlite::Connection;

use super::tables::Table;
use crate::db::blobs::rails_datetime;
use crate::transfer::Progress;

/// Rows copied between two looks at the interruption flag.
pub const CHECK_EVERY: u64 = 1024;

/// The error of an export stopped by Ctrl-C.
pub fn interrupted_error() -> anyhow::Error {
    anyhow::anyhow!("interrupted: nothing was written to the target directory")
}

/// Fails with [`interrupted_error`] once `interrupted` is set.
pub fn check(interrupted: &AtomicBool) -> anyhow::Result<()> {
    if interrupted.load(Ordering::Relaxed) {
        return Err(interrupted_error());
    }
    Ok(())
}

/// Copies `table` from Hearth's `source` into Campfire's `target`; returns the rows written.
///
/// # Errors
/// A query or insert SQLite refuses (named with the table and the row's id), a time column
/// that holds no integer, or an interruption.
pub fn copy(
    source: &Connection,
    target: &Connection,
    table: &Table,
    progress: &mut Progress,
    interrupted: &AtomicBool,
) -> anyhow::Result<u64> {
    let mut select = source
        .prepare(table.select)
        .with_context(|| format!("reading Hearth's {}", table.hearth))?;
    let columns: Vec<String> = select
        .column_names()
        .into_iter()
        .map(String::from)
        .collect();
    let is_time: Vec<bool> = columns
        .iter()
        .map(|c| table.times.contains(&c.as_str()))
        .collect();
    let mut insert = target.prepare(&insert_sql(table.campfire, &columns))?;
    let mut rows = select.query([])?;
    let mut written = 0u64;
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(columns.len());
        for (i, time) in is_time.iter().enumerate() {
            let value: Value = row.get(i)?;
            values.push(if *time {
                as_datetime(value).with_context(|| {
                    format!("{}.{} of row {}", table.campfire, columns[i], id_of(row))
                })?
            } else {
                value
            });
        }
        insert
            .execute(rusqlite::params_from_iter(values))
            .with_context(|| format!("writing {} row {}", table.campfire, id_of(row)))?;
        written += 1;
        progress.inc(1);
        if written.is_multiple_of(CHECK_EVERY) {
            check(interrupted)?;
        }
    }
    Ok(written)
}

/// `INSERT INTO "table" ("a", "b") VALUES (?, ?)`.
fn insert_sql(table: &str, columns: &[String]) -> String {
    let names: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
    let marks = vec!["?"; columns.len()].join(", ");
    format!(
        "INSERT INTO \"{table}\" ({}) VALUES ({marks})",
        names.join(", ")
    )
}

/// The first column of `row` (every query starts with the id), for messages.
fn id_of(row: &rusqlite::Row<'_>) -> String {
    match row.get::<_, Value>(0) {
        Ok(Value::Integer(id)) => format!("id {id}"),
        _ => "(no id)".to_owned(),
    }
}

/// Hearth's milliseconds as Rails' `datetime(6)` text; NULL stays NULL.
fn as_datetime(value: Value) -> anyhow::Result<Value> {
    match value {
        Value::Null => Ok(Value::Null),
        Value::Integer(ms) => Ok(Value::Text(rails_datetime(ms))),
        other => anyhow::bail!("not a time in milliseconds: {other:?}"),
    }
}

/// Carries Hearth's `sqlite_sequence` (the largest id each AUTOINCREMENT table ever handed
/// out) over to Campfire's tables that continue it, so that Campfire never gives a deleted
/// message's, room's or user's id to a new one (a permalink or bookmark of the old one would
/// land on it).
///
/// # Errors
/// A query SQLite refuses.
pub fn continue_sequences(
    source: &Connection,
    target: &Connection,
    tables: &[Table],
) -> rusqlite::Result<()> {
    let mut read = source.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?")?;
    for table in tables {
        let Some(name) = table.sequence else { continue };
        let seq: Option<i64> =
            read.query_row([name], |r| r.get(0))
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(e),
                })?;
        let Some(seq) = seq else { continue };
        target.execute(
            "UPDATE sqlite_sequence SET seq = MAX(seq, ?1) WHERE name = ?2",
            rusqlite::params![seq, table.campfire],
        )?;
        target.execute(
            "INSERT INTO sqlite_sequence (name, seq) SELECT ?2, ?1 \
             WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = ?2)",
            rusqlite::params![seq, table.campfire],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_become_rails_datetime_text() {
        assert_eq!(
            as_datetime(Value::Integer(1_793_523_600_123)).unwrap(),
            Value::Text("2026-11-01 09:00:00.123000".into())
        );
        assert_eq!(as_datetime(Value::Null).unwrap(), Value::Null);
        assert!(as_datetime(Value::Text("yesterday".into())).is_err());
    }

    #[test]
    fn the_insert_names_every_column() {
        assert_eq!(
            insert_sql("bans", &["id".into(), "user_id".into()]),
            "INSERT INTO \"bans\" (\"id\", \"user_id\") VALUES (?, ?)"
        );
    }
}
