//! Campfire's schema in the exported database: the tables of `campfire_schema.sql`, the
//! versions Rails finds in `schema_migrations` and the rows of `ar_internal_metadata`.
//!
//! Rails decides what `bin/rails db:migrate` (and `db:prepare`, which Campfire runs at boot)
//! still has to do from `schema_migrations`: a migration of `db/migrate/` whose version is not
//! there is pending. Loading `db/schema.rb` inserts every version of `db/migrate/` up to the
//! schema's (`assume_migrated_upto_version`) and records the environment and the SHA-1 of
//! the schema file in `ar_internal_metadata`; the export writes the same rows.

use rusqlite::Connection;

/// The DDL of Campfire's tables, indexes and full-text index as Rails' SQLite adapter
/// creates them (`src/transfer/campfire_schema.sql`).
pub const DDL: &str = include_str!("../campfire_schema.sql");

/// The versions of every migration in Campfire's `db/migrate/` at schema version
/// [`CAMPFIRE_SCHEMA_VERSION`](crate::transfer::CAMPFIRE_SCHEMA_VERSION) (the file names' leading timestamps, the three Active Storage
/// ones included), oldest first.
pub const MIGRATION_VERSIONS: &[&str] = &[
    "20231215043540",
    "20231220143106",
    "20240110071740",
    "20240115124901",
    "20240130003150",
    "20240130213001",
    "20240131105830",
    "20240209110503",
    "20250825100957",
    "20250825100958",
    "20250825100959",
    "20251126092013",
    "20251126115722",
    "20251126130131",
    "20251212154340",
];

/// Hex SHA-1 of Campfire's `db/schema.rb` at schema version 2025_12_12_154340, which
/// `db:schema:load` keeps as `ar_internal_metadata`'s `schema_sha1` (Rails compares it with
/// the file to tell whether a test database must be loaded again).
pub const SCHEMA_SHA1: &str = "f75da8dad38bfb179ffd757bd7a7c2b3f818bc29";

/// The Rails environment the export is for: Campfire's `storage/db/production.sqlite3`.
pub const ENVIRONMENT: &str = "production";

/// Creates Campfire's tables in `conn` and fills `schema_migrations` and
/// `ar_internal_metadata` (stamped `now`, Rails' datetime text).
///
/// # Errors
/// A statement SQLite refuses.
pub fn create(conn: &Connection, now: &str) -> rusqlite::Result<()> {
    conn.execute_batch(DDL)?;
    let mut version = conn.prepare("INSERT INTO schema_migrations (version) VALUES (?)")?;
    for v in MIGRATION_VERSIONS {
        version.execute([v])?;
    }
    let mut metadata = conn.prepare(
        "INSERT INTO ar_internal_metadata (key, value, created_at, updated_at) \
         VALUES (?, ?, ?, ?)",
    )?;
    metadata.execute([&"environment", &ENVIRONMENT, &now, &now])?;
    metadata.execute([&"schema_sha1", &SCHEMA_SHA1, &now, &now])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::CAMPFIRE_SCHEMA_VERSION;

    #[test]
    fn the_newest_migration_is_the_schema_version() {
        assert_eq!(MIGRATION_VERSIONS.last(), Some(&CAMPFIRE_SCHEMA_VERSION));
        assert!(MIGRATION_VERSIONS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_schema_creates_every_table_once() {
        let conn = Connection::open_in_memory().expect("memory");
        create(&conn, "2026-01-02 03:04:05.000000").expect("schema");
        let versions: i64 = conn
            .query_row("SELECT COUNT(*) FROM schema_migrations", [], |r| r.get(0))
            .expect("count");
        assert_eq!(versions, 15);
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'message_search_index_%'",
                [],
                |r| r.get(0),
            )
            .expect("count");
        // 16 of db/schema.rb (with the full-text index), schema_migrations, ar_internal_metadata.
        assert_eq!(tables, 18);
    }
}
