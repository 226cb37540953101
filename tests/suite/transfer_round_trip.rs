//! `hearth export` then `hearth import campfire`, with the built binary: a team that leaves for
//! Campfire and comes back has lost nothing. A seeded server gets posts, a boost, files from a
//! bot (an image and a PDF-like chip) and a direct upload; its export is imported into an empty
//! directory, and then
//!
//! - every row of every table Campfire has is the same in the new database as in the old one, in
//!   every column the two schemas share (ids, times, digests and bodies as they were);
//! - every blob's file has the same bytes;
//! - the new database, exported again, gives the same Campfire database row for row (so nothing
//!   the export writes depends on what the import could not keep);
//! - a server on the imported database signs David in with his password and shows his post.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use sqlx::sqlite::SqlitePoolOptions;
use sqlx::SqlitePool;

use crate::common::{temp_dir, TestServer};
use crate::files::{md5_base64, multipart, png, raw, Session};

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const BOT_KEY: &str = "5-bNd3rB0tK3y7";

/// Campfire's tables that Hearth keeps too: each is compared row by row.
const TABLES: &[&str] = &[
    "accounts",
    "users",
    "sessions",
    "rooms",
    "memberships",
    "messages",
    "boosts",
    "action_text_rich_texts",
    "active_storage_blobs",
    "active_storage_attachments",
    "active_storage_variant_records",
    "bans",
    "searches",
    "webhooks",
    "push_subscriptions",
];

fn hearth(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("hearth runs");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "hearth {args:?} failed:\n{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

async fn open(path: &Path) -> SqlitePool {
    SqlitePoolOptions::new()
        .max_connections(1)
        .connect(&format!("sqlite://{}?mode=ro", path.display()))
        .await
        .unwrap()
}

async fn columns(pool: &SqlitePool, table: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT name FROM pragma_table_info(?)")
        .bind(table)
        .fetch_all(pool)
        .await
        .unwrap()
}

/// `table`'s rows as text (`quote()` of each of `cols`, joined), sorted (some tables have no
/// id and some no rowid).
async fn rows(pool: &SqlitePool, table: &str, cols: &[String]) -> Vec<String> {
    let quoted: Vec<String> = cols.iter().map(|c| format!("quote(\"{c}\")")).collect();
    // The names come from the databases' own schemas, never from input.
    let mut rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT {} FROM \"{table}\"",
        quoted.join(" || '|' || ")
    )))
    .fetch_all(pool)
    .await
    .unwrap();
    rows.sort();
    rows
}

/// Every table of `campfire` (an exported `production.sqlite3`): its rows over all its columns.
async fn whole(campfire: &SqlitePool) -> BTreeMap<String, Vec<String>> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         AND name != 'ar_internal_metadata' ORDER BY name",
    )
    .fetch_all(campfire)
    .await
    .unwrap();
    let mut all = BTreeMap::new();
    for table in tables {
        let cols = columns(campfire, &table).await;
        all.insert(table.clone(), rows(campfire, &table, &cols).await);
    }
    all
}

/// A seeded server's directory with posts, a boost and files, stopped.
async fn team() -> std::path::PathBuf {
    let server = TestServer::start().await;
    let david = Session::new(&server, DAVID, SECRET).await;
    let mut client = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = client.room(1).await;
    let posted = client
        .post_message(
            1,
            "Back from Campfire with <b>everything</b>",
            "rt-1",
            &csrf,
        )
        .await;
    assert!(posted.status < 400, "{}", posted.status);
    for (name, bytes) in [
        ("chart.png", png(120, 90)),
        (
            "notes.pdf",
            b"%PDF-1.4\n% a small document\n%%EOF\n".to_vec(),
        ),
    ] {
        let (ct, body) = multipart(&[("body", name)], "attachment", name, &bytes);
        let (status, _, _) = raw(
            &david.addr,
            "POST",
            &format!("/rooms/1/{BOT_KEY}/messages"),
            &[("Content-Type", &ct)],
            &body,
        )
        .await;
        assert_eq!(status, 201, "the bot posts {name}");
    }
    let picture = png(64, 64);
    let (signed, put) = david
        .direct_upload("picture.png", "image/png", &picture, &md5_base64(&picture))
        .await;
    assert_eq!(put, 204);
    assert_eq!(david.post_signed(1, &signed).await, 200);
    // Images get their variants processed after the post: wait for the variant records.
    let pool = server.state.db.pool.clone();
    for _ in 0..100 {
        let variants: i64 =
            sqlx::query_scalar("SELECT count(*) FROM active_storage_variant_records")
                .fetch_one(&pool)
                .await
                .unwrap();
        if variants >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    server.stop_keeping_dir().await
}

#[tokio::test]
async fn an_export_imported_again_is_the_same_team() {
    let a = team().await;
    let a_db = a.join("hearth.sqlite3");
    let export_a = a.join("export");
    let arg = |p: &Path| p.display().to_string();
    hearth(&[
        "export",
        "--to",
        &arg(&export_a),
        "--database",
        &arg(&a_db),
        "--data-dir",
        &arg(&a),
        "--quiet",
    ]);
    let b = temp_dir("round-trip-b");
    let b_db = b.join("hearth.sqlite3");
    hearth(&[
        "import",
        "campfire",
        "--from",
        &arg(&export_a),
        "--database",
        &arg(&b_db),
        "--data-dir",
        &arg(&b),
        "--quiet",
    ]);

    // Row by row, in every column Hearth and Campfire share.
    let (old, new, campfire) = (
        open(&a_db).await,
        open(&b_db).await,
        open(&export_a.join("db/production.sqlite3")).await,
    );
    for table in TABLES {
        let theirs = columns(&campfire, table).await;
        let shared: Vec<String> = columns(&old, table)
            .await
            .into_iter()
            .filter(|c| theirs.contains(c))
            .collect();
        assert!(!shared.is_empty(), "{table}: no column in common");
        let (before, after) = (
            rows(&old, table, &shared).await,
            rows(&new, table, &shared).await,
        );
        assert_eq!(before.len(), after.len(), "{table}: row count");
        for (x, y) in before.iter().zip(&after) {
            assert_eq!(x, y, "{table} ({})", shared.join(", "));
        }
    }
    let messages: i64 = sqlx::query_scalar("SELECT count(*) FROM messages")
        .fetch_one(&new)
        .await
        .unwrap();
    assert!(messages > 3, "{messages} messages");

    // Every file, byte for byte.
    let keys: Vec<String> = sqlx::query_scalar("SELECT key FROM active_storage_blobs")
        .fetch_all(&old)
        .await
        .unwrap();
    assert!(keys.len() >= 3, "{} blobs", keys.len());
    for key in &keys {
        let at = |root: &Path| root.join(&key[0..2]).join(&key[2..4]).join(key);
        let before = std::fs::read(at(&a)).unwrap();
        assert_eq!(
            std::fs::read(at(&b)).unwrap(),
            before,
            "{key} in the import"
        );
        assert_eq!(
            std::fs::read(at(&export_a.join("files"))).unwrap(),
            before,
            "{key} in the export"
        );
    }

    // Exported again: the same Campfire database.
    let export_b = b.join("export");
    hearth(&[
        "export",
        "--to",
        &arg(&export_b),
        "--database",
        &arg(&b_db),
        "--data-dir",
        &arg(&b),
        "--quiet",
    ]);
    let again = open(&export_b.join("db/production.sqlite3")).await;
    let (first, second) = (whole(&campfire).await, whole(&again).await);
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        second.keys().collect::<Vec<_>>()
    );
    for (table, rows) in &first {
        assert_eq!(rows, &second[table], "{table} exported twice");
    }
    for pool in [old, new, campfire, again] {
        pool.close().await;
    }

    // The imported team works: David signs in with his password and sees his post.
    let server = TestServer::start_in(b, |_| {}).await;
    let mut client = server.signed_in(DAVID, SECRET).await;
    let page = client.get("/rooms/1").await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("Back from Campfire with"),
        "the post is on the page"
    );
    server.stop().await;
    let _ = std::fs::remove_dir_all(&a);
}
