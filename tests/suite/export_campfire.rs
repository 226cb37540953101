//! `hearth export --to DIR` against Rails' own ActiveRecord (Debian's `ruby-activerecord`,
//! `ruby-sqlite3`, `ruby-bcrypt`, `ruby-activestorage`): a seeded team with posts, a mention, boosts, a file
//! posted through the direct-upload API (with its thumbnail), an avatar, a closed room, direct
//! rooms, a bot with a webhook, a ban, a search, a push subscription and sessions is exported
//! while the server runs, and `tests/ruby/export_campfire.rb` opens the export with models
//! declared as Campfire's and checks it against what Hearth holds. Then the refusals: a
//! non-empty target, a missing database; `--dry-run` writes nothing; files in an S3 bucket
//! land on the export's disk service.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::common::forms::{csrf, scalar_i64, send};
use crate::common::{self, form, TestServer};
use crate::files::{md5_base64, multipart, png, Session};

const DAVID: &str = "david@example.com";
const JASON: &str = "jason@example.com";
const SECRET: &str = "secret123456";
/// Designers: closed.
const CLOSED_ROOM: i64 = 4;
const KEVIN: i64 = 4;
const BOT_HOOK: &str = "https://bots.example.com/hooks/exporter";

/// Campfire's tables and the table or view of Hearth's whose rows they hold.
const TABLES: &[(&str, &str)] = &[
    ("accounts", "accounts"),
    ("users", "users"),
    ("rooms", "rooms"),
    ("memberships", "memberships"),
    ("messages", "messages"),
    ("action_text_rich_texts", "messages"),
    ("boosts", "boosts"),
    ("sessions", "sessions"),
    ("bans", "bans"),
    ("searches", "searches"),
    ("webhooks", "webhooks"),
    ("push_subscriptions", "push_subscriptions"),
    ("active_storage_blobs", "active_storage_blobs"),
    ("active_storage_attachments", "active_storage_attachments"),
    (
        "active_storage_variant_records",
        "active_storage_variant_records",
    ),
    ("message_search_index", "messages"),
];

/// `hearth export` on `server`'s database and files into `to`, with `extra` flags:
/// (success, stdout, stderr). Run as a child while the server keeps serving.
async fn export(server: &TestServer, to: &Path, extra: &[&str]) -> (bool, String, String) {
    let config = &server.state.config;
    let root = config
        .storage_root
        .clone()
        .unwrap_or_else(|| config.data_dir.clone());
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("export")
        .arg("--database")
        .arg(&config.database)
        .arg("--storage-root")
        .arg(&root)
        .arg("--to")
        .arg(to)
        .arg("--quiet")
        .args(extra)
        .env_remove("HEARTH_S3_ENDPOINT")
        .env_remove("HEARTH_S3_BUCKET")
        .output()
        .await
        .expect("hearth runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

async fn text(server: &TestServer, sql: &str) -> String {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

async fn texts(server: &TestServer, sql: &str) -> Vec<String> {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_all(&server.state.db.pool)
        .await
        .unwrap()
}

/// Waits until `sql` counts at least `n`.
async fn until_count(server: &TestServer, sql: &str, n: i64) {
    for _ in 0..150 {
        if scalar_i64(server, sql).await >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{sql} never reached {n}");
}

/// A file posted to the closed room through the direct-upload API, with its thumbnail made;
/// returns the message's id.
async fn post_file(server: &TestServer, david: &Session, bytes: &[u8]) -> i64 {
    let (signed_id, put) = david
        .direct_upload("harbour.png", "image/png", bytes, &md5_base64(bytes))
        .await;
    assert_eq!(put, 204);
    assert_eq!(david.post_signed(CLOSED_ROOM, &signed_id).await, 200);
    until_count(
        server,
        "SELECT COUNT(*) FROM active_storage_variant_records",
        1,
    )
    .await;
    scalar_i64(
        server,
        "SELECT record_id FROM active_storage_attachments \
         WHERE record_type = 'Message' AND name = 'attachment'",
    )
    .await
}

/// David's avatar, uploaded as the profile page does.
async fn upload_avatar(david: &Session) {
    let (content_type, body) = multipart(&[], "user[avatar]", "me.png", &png(64, 64));
    let (status, _, _) = david
        .send(
            "POST",
            "/users/me/avatar",
            &[("Content-Type", content_type.as_str())],
            &body,
        )
        .await;
    assert_eq!(status, 302);
}

/// Jason mentions David in All Talk; returns the message's id.
async fn post_mention(server: &TestServer) -> i64 {
    let mut jason = server.signed_in(JASON, SECRET).await;
    let (token, _) = jason.room(1).await;
    let sgid = server
        .state
        .keys
        .sgids
        .sign("User", 1, hearth::rails::ATTACHABLE_PURPOSE);
    let html = format!(
        "<div>Ask <action-text-attachment sgid=\"{sgid}\" \
         content-type=\"application/vnd.campfire.mention\"></action-text-attachment> \
         about the lighthouse</div>"
    );
    let r = jason
        .post_form(
            "/rooms/1/messages",
            &form(&[
                ("message[body]", &html),
                ("message[body_format]", "html"),
                ("message[client_message_id]", "cid-export-mention"),
                ("authenticity_token", &token),
            ]),
            &[],
        )
        .await;
    assert!(r.status < 400, "{}", r.body);
    scalar_i64(
        server,
        "SELECT id FROM messages WHERE client_message_id = 'cid-export-mention'",
    )
    .await
}

/// A bot with a webhook, Kevin banned from a public address, a recent search and a push
/// subscription of David's.
async fn administer(server: &TestServer) -> i64 {
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/bots").await;
    let r = send(
        &mut david,
        "POST",
        "/account/bots",
        &[("user[name]", "Exporter"), ("user[webhook_url]", BOT_HOOK)],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    sqlx::query(
        "INSERT INTO sessions (user_id, token, ip_address, last_active_at, created_at, \
         updated_at) VALUES (?, 'kevin-phone', '8.8.8.8', 1, 1, 1)",
    )
    .bind(KEVIN)
    .execute(&server.state.db.pool)
    .await
    .unwrap();
    let token = csrf(&mut david, &format!("/users/{KEVIN}")).await;
    let r = send(
        &mut david,
        "POST",
        &format!("/users/{KEVIN}/ban"),
        &[],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let r = send(
        &mut david,
        "POST",
        "/searches",
        &[("q", "lighthouse")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    sqlx::query(
        "INSERT INTO push_subscriptions (user_id, endpoint, p256dh_key, auth_key, user_agent, \
         created_at, updated_at) VALUES (1, 'https://push.example.com/send/abc', 'BPk', 'au', \
         'Firefox', 1793523600001, 1793523600002)",
    )
    .execute(&server.state.db.pool)
    .await
    .unwrap();
    scalar_i64(server, "SELECT id FROM users WHERE name = 'Exporter'").await
}

/// What the Ruby script must find, read from Hearth's database.
async fn expectations(server: &TestServer, mention: i64, file: i64, bot: i64) -> serde_json::Value {
    let mut counts = serde_json::Map::new();
    for (campfire, hearth) in TABLES {
        let n = scalar_i64(server, &format!("SELECT COUNT(*) FROM {hearth}")).await;
        counts.insert((*campfire).into(), n.into());
    }
    let mut involvements = serde_json::Map::new();
    for word in texts(server, "SELECT DISTINCT involvement FROM memberships").await {
        let n = scalar_i64(
            server,
            &format!("SELECT COUNT(*) FROM memberships WHERE involvement = '{word}'"),
        )
        .await;
        involvements.insert(word, n.into());
    }
    let blob = format!(
        "FROM active_storage_blobs b JOIN active_storage_attachments a ON a.blob_id = b.id \
         WHERE a.record_type = 'Message' AND a.record_id = {file}"
    );
    let unread_membership = scalar_i64(
        server,
        "SELECT MIN(id) FROM memberships WHERE unread_at IS NOT NULL",
    )
    .await;
    let mut times = Vec::new();
    for (table, id, column) in [
        ("messages", mention, "created_at"),
        ("memberships", unread_membership, "unread_at"),
        ("users", 1, "updated_at"),
        ("push_subscriptions", 1, "updated_at"),
        ("rooms", CLOSED_ROOM, "updated_at"),
    ] {
        let ms = scalar_i64(
            server,
            &format!("SELECT {column} FROM {table} WHERE id = {id}"),
        )
        .await;
        times.push(json!({"table": table, "id": id, "column": column, "ms": ms}));
    }
    json!({
        "counts": counts,
        "settings": serde_json::from_str::<serde_json::Value>(
            &text(server, "SELECT settings FROM accounts").await
        ).unwrap(),
        "person": {
            "email": DAVID, "password": SECRET, "role": "administrator",
            "avatar_filename": "me.png",
        },
        "bot": {"id": bot, "webhook_url": BOT_HOOK},
        "ban": {"user_id": KEVIN, "ip_address": "8.8.8.8"},
        "push_endpoints": ["https://push.example.com/send/abc"],
        "searches": texts(server, "SELECT query FROM searches ORDER BY id").await,
        "session_tokens": texts(server, "SELECT token FROM sessions ORDER BY id").await,
        "rooms": {"1": "Rooms::Open", "4": "Rooms::Closed", "5": "Rooms::Direct", "6": "Rooms::Direct"},
        "open_rooms": scalar_i64(server, "SELECT COUNT(*) FROM rooms WHERE kind = 'open'").await,
        "involvements": involvements,
        "unread": scalar_i64(server, "SELECT COUNT(*) FROM memberships WHERE unread_at IS NOT NULL").await,
        "mention": {
            "message_id": mention,
            "user_id": 1,
            "html": text(server, &format!("SELECT body FROM messages WHERE id = {mention}")).await,
            "search_word": "lighthouse",
        },
        "file": {
            "message_id": file,
            "key": text(server, &format!("SELECT b.key {blob}")).await,
            "checksum": text(server, &format!("SELECT b.checksum {blob}")).await,
            "filename": "harbour.png",
            "width": 600,
        },
        "times": times,
    })
}

/// Runs `tests/ruby/export_campfire.rb` on the export at `storage`: its standard output.
fn rails_reads(storage: &Path, expected: &serde_json::Value) -> String {
    let file = storage.with_extension("expected.json");
    std::fs::write(&file, expected.to_string()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ruby/export_campfire.rb");
    let output = std::process::Command::new("ruby")
        .arg(script)
        .arg(storage)
        .arg(&file)
        .output()
        .expect(
            "ruby runs (apt-get install -y --no-install-recommends ruby ruby-activerecord \
             ruby-sqlite3 ruby-bcrypt ruby-activestorage)",
        );
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

#[tokio::test]
async fn a_team_exported_while_the_server_runs_reads_in_activerecord_as_campfires() {
    let server = TestServer::start().await;
    let david = Session::new(&server, DAVID, SECRET).await;
    let file = post_file(&server, &david, &png(600, 400)).await;
    upload_avatar(&david).await;
    let mention = post_mention(&server).await;
    let bot = administer(&server).await;
    assert!(scalar_i64(&server, "SELECT COUNT(*) FROM boosts").await > 0);
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM webhooks").await,
        1
    );
    assert!(scalar_i64(&server, "SELECT COUNT(*) FROM bans").await >= 1);

    let out = common::temp_dir("export");
    let storage = out.join("storage");
    let (ok, stdout, stderr) = export(&server, &storage, &[]).await;
    assert!(ok, "{stdout}\n{stderr}");
    for line in ["message_search_index", "files", "checksums verified"] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    assert_eq!(listing(&storage), ["db", "files"]);
    assert_eq!(listing(&out), ["storage"], "no sibling left behind");

    let expected = expectations(&server, mention, file, bot).await;
    let checked = rails_reads(&storage, &expected);
    assert!(checked.contains("CHECKED no migration of Campfire's pending"));
    assert!(checked.contains("CHECKED room 4's class"));
    assert!(checked.contains("CHECKED the mention's body"));
    assert!(checked.contains("CHECKED the posted file's bytes"));
    assert!(checked.ends_with("ALL CHECKED\n"), "{checked}");
    std::fs::remove_dir_all(&out).unwrap();
    server.stop().await;
}

#[tokio::test]
async fn a_target_that_is_not_empty_is_refused_and_left_as_it_was() {
    let server = TestServer::start().await;
    let out = common::temp_dir("export-full");
    let storage = out.join("storage");
    std::fs::create_dir(&storage).unwrap();
    std::fs::write(storage.join("notes.txt"), b"keep me").unwrap();
    let (ok, stdout, stderr) = export(&server, &storage, &[]).await;
    assert!(!ok, "{stdout}");
    assert!(stderr.contains("is not empty"), "{stderr}");
    assert_eq!(listing(&storage), ["notes.txt"]);
    assert_eq!(
        std::fs::read(storage.join("notes.txt")).unwrap(),
        b"keep me"
    );
    assert_eq!(listing(&out), ["storage"], "no sibling left behind");

    // A file where the directory should be, and a database that is not there.
    let (ok, _, stderr) = export(&server, &storage.join("notes.txt"), &[]).await;
    assert!(!ok && stderr.contains("not a directory"), "{stderr}");
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["export", "--quiet", "--database"])
        .arg(out.join("missing.sqlite3"))
        .arg("--to")
        .arg(out.join("elsewhere"))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("no Hearth database at"), "{stderr}");
    assert_eq!(listing(&out), ["storage"], "nothing created");
    std::fs::remove_dir_all(&out).unwrap();
    server.stop().await;
}

#[tokio::test]
async fn a_dry_run_prints_the_counts_and_writes_nothing() {
    let server = TestServer::start().await;
    let out = common::temp_dir("export-dry");
    let storage = out.join("storage");
    let (ok, stdout, stderr) = export(&server, &storage, &["--dry-run"]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("Dry run"), "{stdout}");
    let messages = scalar_i64(&server, "SELECT COUNT(*) FROM messages").await;
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some("messages"))
        .unwrap_or_else(|| panic!("no messages line: {stdout}"));
    assert_eq!(
        line.split_whitespace().nth(1),
        Some(messages.to_string().as_str())
    );
    assert!(!storage.exists(), "nothing written");
    assert!(listing(&out).is_empty(), "no sibling either");
    std::fs::remove_dir_all(&out).unwrap();
    server.stop().await;
}

/// Campfire has no threads: a thread's replies are exported as messages of the parent's room
/// and the thread's own room and memberships are left out, so every exported room has its STI
/// `type` and every membership its room (a thread room exported as it is would have no type,
/// and ActiveRecord could not load it).
#[tokio::test]
async fn a_threads_replies_are_exported_into_its_parents_room() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/rooms/1").await;
    let body = [("message[body]", "Where do we meet?")];
    let r = send(&mut david, "POST", "/rooms/1/messages", &body, &token).await;
    assert_eq!(r.status, 302);
    let parent = scalar_i64(&server, "SELECT MAX(id) FROM messages WHERE room_id = 1").await;
    let r = send(
        &mut david,
        "POST",
        &format!("/messages/{parent}/thread"),
        &[],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let thread = scalar_i64(
        &server,
        &format!("SELECT id FROM rooms WHERE parent_message_id = {parent}"),
    )
    .await;
    let body = [("message[body]", "At the harbour")];
    let r = send(
        &mut david,
        "POST",
        &format!("/rooms/{thread}/messages"),
        &body,
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let reply = scalar_i64(
        &server,
        &format!("SELECT MAX(id) FROM messages WHERE room_id = {thread}"),
    )
    .await;

    let out = common::temp_dir("export-threads");
    let storage = out.join("storage");
    let (ok, stdout, stderr) = export(&server, &storage, &[]).await;
    assert!(ok, "{stdout}\n{stderr}");
    let db = exported(&storage);
    let one = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(one("SELECT COUNT(*) FROM rooms WHERE type IS NULL"), 0);
    assert_eq!(
        one(&format!("SELECT COUNT(*) FROM rooms WHERE id = {thread}")),
        0
    );
    assert_eq!(
        one("SELECT COUNT(*) FROM memberships WHERE room_id NOT IN (SELECT id FROM rooms)"),
        0
    );
    assert_eq!(
        one(&format!("SELECT room_id FROM messages WHERE id = {reply}")),
        1
    );
    let non_thread = scalar_i64(&server, "SELECT COUNT(*) FROM rooms WHERE kind <> 'thread'").await;
    assert_eq!(one("SELECT COUNT(*) FROM rooms"), non_thread);
    std::fs::remove_dir_all(&out).unwrap();
    server.stop().await;
}

/// The export's database, for a query.
fn exported(storage: &Path) -> rusqlite::Connection {
    let path: PathBuf = storage.join("db").join("production.sqlite3");
    rusqlite::Connection::open(path).unwrap()
}

#[tokio::test]
async fn files_in_an_s3_bucket_are_exported_onto_the_disk_service() {
    let Some(moto) = crate::s3::start_moto().await else {
        return;
    };
    let server = crate::s3::hearth_on(&moto).await;
    // Bender (the seed's bot) posts an image: to the bucket, and its thumbnail too.
    let bytes = png(300, 200);
    let (content_type, body) = multipart(&[], "attachment", "harbour.png", &bytes);
    let addr = server.origin().trim_start_matches("http://").to_owned();
    let (status, _, _) = crate::files::raw(
        &addr,
        "POST",
        "/rooms/1/5-bNd3rB0tK3y7/messages",
        &[("Content-Type", content_type.as_str())],
        &body,
    )
    .await;
    assert_eq!(status, 201);
    until_count(
        &server,
        "SELECT COUNT(*) FROM active_storage_variant_records",
        1,
    )
    .await;
    let file = scalar_i64(
        &server,
        "SELECT record_id FROM active_storage_attachments \
         WHERE record_type = 'Message' AND name = 'attachment'",
    )
    .await;
    assert_eq!(
        text(
            &server,
            "SELECT DISTINCT service_name FROM active_storage_blobs"
        )
        .await,
        "amazon"
    );
    let out = common::temp_dir("export-s3");
    let storage = out.join("storage");

    // Without the bucket, the export says where the files are and writes nothing.
    let (ok, _, stderr) = export(&server, &storage, &[]).await;
    assert!(!ok && stderr.contains("is in S3"), "{stderr}");
    assert!(listing(&out).is_empty());

    let config = &server.state.config;
    let flags = [
        "--s3-endpoint",
        config.s3_endpoint.as_str(),
        "--s3-bucket",
        config.s3_bucket.as_str(),
        "--s3-access-key-id",
        config.s3_access_key_id.as_str(),
        "--s3-secret-access-key",
        config.s3_secret_access_key.0.as_str(),
    ];
    let (ok, stdout, stderr) = export(&server, &storage, &flags).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("read from the S3 bucket"), "{stdout}");
    let db = exported(&storage);
    let (key, checksum, service): (String, String, String) = db
        .query_row(
            "SELECT b.key, b.checksum, b.service_name FROM active_storage_blobs b \
             JOIN active_storage_attachments a ON a.blob_id = b.id \
             WHERE a.record_type = 'Message' AND a.record_id = ?",
            [file],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(service, "local");
    assert_eq!(checksum, md5_base64(&bytes));
    let path = storage
        .join("files")
        .join(&key[0..2])
        .join(&key[2..4])
        .join(&key);
    assert_eq!(std::fs::read(path).unwrap(), bytes);
    let services: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM active_storage_blobs WHERE service_name <> 'local'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(services, 0, "the thumbnail too");
    std::fs::remove_dir_all(&out).unwrap();
    server.stop().await;
}
