//! `hearth backup` and `hearth restore`, the built binary beside a running `hearth serve`: a
//! backup taken while posts flow restores to a server holding every post acknowledged before
//! it began, in one consistent state, with its files; and a backup cut short, corrupted, naming
//! paths outside the target, with a wrong checksum or of another format version is refused with
//! a message naming the problem, the target left byte for byte as it was.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::Connection as _;

use crate::common::child::{hearth_command, Hearth, DAVID, PASSWORD};
use crate::common::{self, Client};
use crate::files::{md5_base64, png, Session};

/// What a run of the `hearth` binary printed, and how long it took.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `hearth <args>` to its end.
async fn hearth(args: &[&str]) -> Run {
    let started = Instant::now();
    let out = hearth_command()
        .args(args)
        .env_remove("HEARTH_DATABASE")
        .env_remove("HEARTH_DATA_DIR")
        .env_remove("HEARTH_STORAGE_ROOT")
        .kill_on_drop(true)
        .output()
        .await
        .expect("hearth runs");
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: started.elapsed(),
    }
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temp path")
}

/// `hearth backup` of the server in `dir` into `to`.
async fn backup(dir: &Path, to: &Path, extra: &[&str]) -> Run {
    let db = dir.join("hearth.sqlite3");
    let mut args = vec!["backup", "--to", text(to), "--database", text(&db)];
    args.extend(["--data-dir", text(dir), "--quiet"]);
    args.extend(extra);
    hearth(&args).await
}

/// `hearth restore` of `from` into the data directory `dir`.
async fn restore(from: &Path, dir: &Path, extra: &[&str]) -> Run {
    let db = dir.join("hearth.sqlite3");
    let mut args = vec!["restore", "--from", text(from), "--database", text(&db)];
    args.extend(["--data-dir", text(dir), "--quiet"]);
    args.extend(extra);
    hearth(&args).await
}

/// The `name  count` lines a command printed.
fn printed_counts(stdout: &str) -> BTreeMap<String, u64> {
    stdout
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (name, n) = (words.next()?, words.next()?);
            if words.next().is_some() {
                return None;
            }
            Some((name.to_owned(), n.parse().ok()?))
        })
        .collect()
}

async fn open(db: &Path) -> sqlx::SqliteConnection {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db)
        .busy_timeout(Duration::from_secs(10));
    sqlx::SqliteConnection::connect_with(&options)
        .await
        .expect("the database opens")
}

/// Rows per table, counted here: every table but SQLite's own and the full-text index's.
async fn table_counts(conn: &mut sqlx::SqliteConnection) -> BTreeMap<String, u64> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         AND name NOT LIKE 'message_search_index%'",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    let mut counts = BTreeMap::new();
    for table in tables {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM \"{table}\""
        )))
        .fetch_one(&mut *conn)
        .await
        .unwrap();
        counts.insert(table, n as u64);
    }
    counts
}

/// Every file and folder under `dir` with its bytes (None: a folder), to compare a target
/// before and after a refused restore; an empty map when `dir` does not exist.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                found.insert(path.clone(), None);
                todo.push(path);
            } else {
                found.insert(path.clone(), Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    found
}

/// A signed-in session of the child server (the `files` module's helpers).
async fn session(server: &Hearth) -> Session {
    let mut client = server.client();
    assert_eq!(client.login(DAVID, PASSWORD).await.status, 302);
    let (csrf, _) = client.room(1).await;
    Session {
        client,
        csrf,
        addr: server.addr.to_string(),
    }
}

/// One post of the stream: its id and client id, when it was sent and acknowledged.
#[derive(Debug, Clone)]
struct Post {
    cid: String,
    id: Option<i64>,
    sent: Instant,
    acked: Instant,
    status: u16,
}

/// Posts to room 1 every 50 ms (20 posts/s), each from its own task, until `stop`.
async fn post_stream(client: Client, csrf: String, stop: Arc<AtomicBool>) -> Vec<Post> {
    let mut ticker = tokio::time::interval(Duration::from_millis(50));
    let mut posts = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        ticker.tick().await;
        let (mut client, csrf) = (client.clone(), csrf.clone());
        let cid = format!("flow-{i}");
        i += 1;
        posts.push(tokio::spawn(async move {
            let sent = Instant::now();
            let answer = client.post_message(1, &cid, &cid, &csrf).await;
            let id = common::attr_after(&answer.body, "data-message-id=\"")
                .and_then(|id| id.parse().ok());
            Post {
                cid,
                id,
                sent,
                acked: Instant::now(),
                status: answer.status,
            }
        }));
    }
    let mut done = Vec::new();
    for post in posts {
        done.push(post.await.unwrap());
    }
    done
}

/// Another program's bulk write: `mib` MiB of text into `searches`, so that the snapshot takes
/// long enough for posts to arrive while it runs.
async fn grow(db: &Path, mib: usize) {
    let mut conn = open(db).await;
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut conn)
        .await
        .unwrap();
    for _ in 0..mib {
        sqlx::query(
            "INSERT INTO searches (user_id, query, created_at, updated_at) \
             VALUES (1, hex(randomblob(524288)), 0, 0)",
        )
        .execute(&mut conn)
        .await
        .unwrap();
    }
    sqlx::query("COMMIT").execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
}

async fn ids(conn: &mut sqlx::SqliteConnection, sql: &str) -> BTreeSet<i64> {
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_all(&mut *conn)
        .await
        .unwrap()
        .into_iter()
        .collect()
}

/// The manifest of a backup file.
fn manifest_of(backup: &Path) -> serde_json::Value {
    let entries = entries(&std::fs::read(backup).unwrap());
    let (_, json) = entries
        .iter()
        .find(|(name, _)| name == "manifest.json")
        .expect("a manifest");
    serde_json::from_slice(json).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_posts_flow_restores_every_post_acknowledged_before_it() {
    let dir = common::temp_dir("backup-live");
    let server = Hearth::start(&dir, &[]).await;
    let db = dir.join("hearth.sqlite3");
    let david = session(&server).await;
    let picture = png(300, 200);
    let (signed_id, put) = david
        .direct_upload("field.png", "image/png", &picture, &md5_base64(&picture))
        .await;
    assert_eq!(put, 204);
    assert_eq!(david.post_signed(1, &signed_id).await, 200);
    // A direct upload whose bytes never come: its blob row has no file.
    let pending = b"never sent".to_vec();
    let (_, _) = david
        .direct_upload("pending.txt", "text/plain", &pending, &md5_base64(&pending))
        .await;
    std::fs::remove_file(blob_file(&db, &dir, "pending.txt").await).unwrap();
    grow(&db, 24).await;

    let stop = Arc::new(AtomicBool::new(false));
    let stream = tokio::spawn(post_stream(
        david.client.clone(),
        david.csrf.clone(),
        stop.clone(),
    ));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let out = common::temp_dir("backup-file");
    let file = out.join("team.tar");
    let began = Instant::now();
    let taken = backup(&dir, &file, &[]).await;
    let ended = Instant::now();
    assert!(taken.ok, "backup failed: {}", taken.stderr);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.store(true, Ordering::Relaxed);
    let posts = stream.await.unwrap();
    let mut server = server;
    server.signal("TERM");
    server.wait(Duration::from_secs(30)).await;
    eprintln!("backup: {}{}", taken.stdout, taken.stderr);
    report_latency(&posts, began, ended, taken.took);

    // The backup's own account: the unattached blob without a file is noted, not fatal.
    let manifest = manifest_of(&file);
    assert_eq!(manifest["format_version"], 1);
    assert_eq!(
        manifest["missing"].as_array().unwrap().len(),
        1,
        "{manifest}"
    );
    assert_eq!(manifest["missing"][0]["attached"], false);
    assert!(
        taken.stderr.contains("direct uploads under way"),
        "{}",
        taken.stderr
    );

    let fresh = common::temp_dir("backup-restored");
    let restored = restore(&file, &fresh, &[]).await;
    assert!(restored.ok, "restore failed: {}", restored.stderr);
    eprintln!("restore: {} in {:?}", restored.stdout, restored.took);
    check_restored(&fresh, &db, &posts, (began, ended), &taken, &restored).await;
    assert_eq!(
        std::fs::read(fresh.join("vapid_private_key")).unwrap(),
        std::fs::read(dir.join("vapid_private_key")).unwrap(),
        "the generated VAPID key comes back"
    );

    // A server on the restored directory serves the last post acknowledged before the backup
    // and the uploaded file's bytes.
    let last_before = posts
        .iter()
        .filter(|p| p.acked < began)
        .max_by_key(|p| p.id)
        .unwrap();
    let again = Hearth::start(&fresh, &[]).await;
    let mut reader = session(&again).await;
    let page = reader.client.get("/rooms/1").await;
    let shown = format!("id=\"message_{}\"", last_before.cid);
    assert!(
        page.body.contains(&shown),
        "{shown} not on the restored room page"
    );
    let path = format!(
        "/rails/active_storage/blobs/redirect/{}/field.png",
        hearth::storage::segment(&signed_id)
    );
    let (redirect, status, _, bytes) = reader.fetch(&path).await;
    assert_eq!((redirect, status), (302, 200));
    assert_eq!(bytes, picture, "the uploaded file's bytes come back");
    drop(again);
    for d in [dir, out, fresh] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The file of the blob named `filename` in the database at `db` (the disk service at `root`).
async fn blob_file(db: &Path, root: &Path, filename: &str) -> PathBuf {
    let mut conn = open(db).await;
    let key: String = sqlx::query_scalar("SELECT key FROM active_storage_blobs WHERE filename = ?")
        .bind(filename)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    root.join(&key[0..2]).join(&key[2..4]).join(&key)
}

/// Prints how long posts waited while the backup ran and checks none was refused.
fn report_latency(posts: &[Post], began: Instant, ended: Instant, took: Duration) {
    let during: Vec<Duration> = posts
        .iter()
        .filter(|p| p.sent < ended && p.acked > began)
        .map(|p| p.acked - p.sent)
        .collect();
    let outside = posts
        .iter()
        .filter(|p| !(p.sent < ended && p.acked > began))
        .map(|p| p.acked - p.sent)
        .max();
    eprintln!(
        "{} posts; the backup ran {took:?}; {} posts overlapped it, the slowest answered in {:?} \
         (outside it: {outside:?})",
        posts.len(),
        during.len(),
        during.iter().max()
    );
    assert!(!during.is_empty(), "no post overlapped the backup");
    for post in posts {
        assert_eq!(post.status, 200, "post {} was refused", post.cid);
        assert!(
            post.id.is_some(),
            "post {} answered without its id",
            post.cid
        );
    }
}

/// The restored database against the live one and the posts: every post acknowledged before the
/// backup began is there, none sent after it ended is; it holds exactly the live database's
/// messages and changes up to its newest (one commit's state, nothing half there); SQLite's
/// integrity check passes; its counts are the backup's and the restore's.
async fn check_restored(
    fresh: &Path,
    live_db: &Path,
    posts: &[Post],
    (began, ended): (Instant, Instant),
    taken: &Run,
    restored: &Run,
) {
    let mut conn = open(&fresh.join("hearth.sqlite3")).await;
    let integrity: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(integrity, ["ok"]);
    let broken: Vec<(String, i64, String, i64)> = sqlx::query_as("PRAGMA foreign_key_check")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert!(broken.is_empty(), "{broken:?}");
    let counts = table_counts(&mut conn).await;
    let printed = printed_counts(&taken.stdout);
    for (table, n) in &counts {
        assert_eq!(
            printed.get(table),
            Some(n),
            "{table}: the backup printed {printed:?}"
        );
    }
    assert_eq!(
        printed_counts(&restored.stdout),
        printed,
        "restore and backup counts"
    );
    let messages = ids(&mut conn, "SELECT id FROM messages").await;
    let changes = ids(&mut conn, "SELECT id FROM message_changes").await;
    let half = ids(
        &mut conn,
        "SELECT m.id FROM messages m JOIN rooms r ON r.id = m.room_id
          WHERE m.client_message_id LIKE 'flow-%'
            AND (r.updated_at < m.created_at
             OR NOT EXISTS (SELECT 1 FROM message_changes c
                             WHERE c.message_id = m.id AND c.action = 'append'))",
    )
    .await;
    assert!(
        half.is_empty(),
        "messages without their side effects: {half:?}"
    );
    conn.close().await.unwrap();

    let mut live = open(live_db).await;
    let newest = *messages.last().unwrap();
    let live_messages = ids(
        &mut live,
        &format!("SELECT id FROM messages WHERE id <= {newest}"),
    )
    .await;
    let newest_change = *changes.last().unwrap();
    let live_changes = ids(
        &mut live,
        &format!("SELECT id FROM message_changes WHERE id <= {newest_change}"),
    )
    .await;
    live.close().await.unwrap();
    assert_eq!(
        messages, live_messages,
        "the snapshot is one commit's state"
    );
    assert_eq!(changes, live_changes, "the change log up to the snapshot");

    let before: Vec<&Post> = posts.iter().filter(|p| p.acked < began).collect();
    let after: Vec<&Post> = posts.iter().filter(|p| p.sent > ended).collect();
    assert!(
        !before.is_empty() && !after.is_empty(),
        "posts before and after the backup"
    );
    for post in &before {
        assert!(
            messages.contains(&post.id.unwrap()),
            "{} acknowledged before the backup is lost",
            post.cid
        );
    }
    for post in &after {
        assert!(
            !messages.contains(&post.id.unwrap()),
            "{} sent after the backup is in it",
            post.cid
        );
    }
    eprintln!(
        "{} posts acknowledged before the backup, all restored; {} sent after it, none restored",
        before.len(),
        after.len()
    );
}

/// The entries of a tar archive: name and bytes.
fn entries(tar_bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut archive = tar::Archive::new(tar_bytes);
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
        out.push((name, bytes));
    }
    out
}

/// A tar archive of `entries`, their names written as given (`../x` and `/x` too).
fn archive(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in entries {
        let mut header = tar::Header::new_gnu();
        header.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        header.set_size(bytes.len() as u64);
        header.set_mode(0o600);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        builder.append(&header, &bytes[..]).unwrap();
    }
    builder.into_inner().unwrap()
}

/// `entries` with the manifest changed by `change`.
fn with_manifest(
    entries: &[(String, Vec<u8>)],
    change: impl Fn(&mut serde_json::Value),
) -> Vec<u8> {
    let mut changed = entries.to_vec();
    for (name, bytes) in &mut changed {
        if name == "manifest.json" {
            let mut manifest: serde_json::Value = serde_json::from_slice(bytes).unwrap();
            change(&mut manifest);
            *bytes = serde_json::to_vec(&manifest).unwrap();
        }
    }
    archive(&changed)
}

/// The hostile backups: (what, bytes, a part of the message that names the problem).
fn hostile_backups(good: &[u8]) -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let parts = entries(good);
    let file_at = parts
        .iter()
        .position(|(n, _)| n.starts_with("files/"))
        .unwrap();
    let mut flipped_file = parts.clone();
    flipped_file[file_at].1[10] ^= 0x01;
    let mut flipped_db = good.to_vec();
    flipped_db[512 + 4096 + 100] ^= 0x01;
    let mut flipped_header = good.to_vec();
    flipped_header[20] ^= 0x01;
    let mut outside = parts.clone();
    outside.insert(1, ("../escaped".to_owned(), b"x".to_vec()));
    let mut absolute = parts.clone();
    absolute.insert(1, ("/tmp/absolute".to_owned(), b"x".to_vec()));
    let no_manifest: Vec<_> = parts
        .iter()
        .filter(|(n, _)| n != "manifest.json")
        .cloned()
        .collect();
    vec![
        (
            "cut at a third",
            good[..good.len() / 3].to_vec(),
            "cut short",
        ),
        (
            "cut at 100 bytes",
            good[..100].to_vec(),
            "not a whole tar archive",
        ),
        (
            "cut before its manifest",
            archive(&no_manifest),
            "no manifest.json",
        ),
        (
            "a byte of the database flipped",
            flipped_db,
            "database.sqlite3: checksum",
        ),
        (
            "a byte of a file flipped",
            archive(&flipped_file),
            "checksum",
        ),
        ("a header byte flipped", flipped_header, "header checksum"),
        (
            "an entry ../escaped",
            archive(&outside),
            "\"../escaped\" is not one",
        ),
        (
            "an entry /tmp/absolute",
            archive(&absolute),
            "\"/tmp/absolute\" is not one",
        ),
        (
            "a manifest naming ../../etc/passwd",
            with_manifest(&parts, |m| m["files"][0]["key"] = "../../etc/passwd".into()),
            "names the file \"../../etc/passwd\"",
        ),
        (
            "a manifest naming /etc/passwd",
            with_manifest(&parts, |m| m["files"][0]["key"] = "/etc/passwd".into()),
            "names the file \"/etc/passwd\"",
        ),
        (
            "a manifest naming the database ../hearth.sqlite3",
            with_manifest(&parts, |m| {
                m["database"]["name"] = "../hearth.sqlite3".into()
            }),
            "names the database \"../hearth.sqlite3\"",
        ),
        (
            "a file's checksum other than the manifest's",
            with_manifest(&parts, |m| {
                m["files"][0]["checksum"] = md5_base64(b"other bytes").into();
            }),
            "the manifest says",
        ),
        (
            "the database's checksum other than the manifest's",
            with_manifest(&parts, |m| m["database"]["sha256"] = "00".repeat(32).into()),
            "database.sqlite3: checksum",
        ),
        (
            "format version 2",
            with_manifest(&parts, |m| m["format_version"] = 2.into()),
            "format version is 2",
        ),
        (
            "not a Hearth backup's manifest",
            with_manifest(&parts, |m| m["format"] = "something-else".into()),
            "not a Hearth backup",
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_backups_are_refused_naming_the_problem_and_the_target_is_untouched() {
    // A team with a file, backed up.
    let source = common::temp_dir("backup-source");
    let mut server = Hearth::start(&source, &[]).await;
    let david = session(&server).await;
    let notes = b"minutes of the meeting".to_vec();
    let (signed_id, put) = david
        .direct_upload("notes.txt", "text/plain", &notes, &md5_base64(&notes))
        .await;
    assert_eq!(put, 204);
    assert_eq!(david.post_signed(1, &signed_id).await, 200);
    let out = common::temp_dir("backup-hostile");
    let good_file = out.join("good.tar");
    assert!(backup(&source, &good_file, &[]).await.ok);
    server.signal("TERM");
    server.wait(Duration::from_secs(30)).await;

    // A dry run writes nothing.
    let dry = backup(&source, &out.join("dry.tar"), &["--dry-run"]).await;
    assert!(dry.ok, "{}", dry.stderr);
    assert!(!out.join("dry.tar").exists());
    assert_eq!(
        printed_counts(&dry.stdout).get("files"),
        Some(&1),
        "{}",
        dry.stdout
    );

    // The target: another team's server, running, then stopped.
    let target = common::temp_dir("backup-target");
    let mut other = Hearth::start(&target, &[]).await;
    let running = restore(&good_file, &target, &["--replace"]).await;
    assert!(!running.ok);
    assert!(
        running.stderr.contains("stop hearth serve"),
        "{}",
        running.stderr
    );
    other.signal("TERM");
    other.wait(Duration::from_secs(30)).await;
    let before = tree(&target);
    let missing = out.join("no-such-target");

    let good = std::fs::read(&good_file).unwrap();
    for (what, bytes, named) in hostile_backups(&good) {
        let bad = out.join("bad.tar");
        std::fs::write(&bad, &bytes).unwrap();
        for (into, extra) in [(&target, &["--replace"][..]), (&missing, &[][..])] {
            let run = restore(&bad, into, extra).await;
            assert!(!run.ok, "{what}: restored");
            assert!(run.stderr.contains(named), "{what}: {}", run.stderr);
            eprintln!("{what}: {}", run.stderr.lines().next().unwrap_or(""));
        }
        assert!(tree(&target) == before, "{what}: the target changed");
        assert!(!missing.exists(), "{what}: the missing target was made");
    }

    // A good backup into a team without --replace, or as a dry run: refused, or nothing written.
    let refused = restore(&good_file, &target, &[]).await;
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains("already holds a team"),
        "{}",
        refused.stderr
    );
    let dry = restore(&good_file, &target, &["--replace", "--dry-run"]).await;
    assert!(dry.ok, "{}", dry.stderr);
    assert!(
        tree(&target) == before,
        "a refused or dry restore changed the target"
    );

    // With --replace it is restored.
    let replaced = restore(&good_file, &target, &["--replace"]).await;
    assert!(replaced.ok, "{}", replaced.stderr);
    let mut conn = open(&target.join("hearth.sqlite3")).await;
    let restored = table_counts(&mut conn).await;
    conn.close().await.unwrap();
    let printed = printed_counts(&dry.stdout);
    for (table, n) in &restored {
        assert_eq!(printed.get(table), Some(n), "{table}");
    }
    let key = manifest_of(&good_file)["files"][0]["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let placed = target.join(&key[0..2]).join(&key[2..4]).join(&key);
    assert_eq!(std::fs::read(placed).unwrap(), notes);
    for d in [source, out, target] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// `--data-dir` alone names the database too (`<data-dir>/hearth.sqlite3`): a backup and a
/// restore given only the data directory read and write the database in it, never the one
/// of the working directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_dir_alone_names_the_database() {
    let dir = common::temp_dir("backup-data-dir");
    let server = Hearth::start(&dir, &[]).await;
    let out = common::temp_dir("backup-data-dir-file");
    let file = out.join("team.tar");
    let taken = hearth(&[
        "backup",
        "--to",
        text(&file),
        "--data-dir",
        text(&dir),
        "--quiet",
    ])
    .await;
    assert!(taken.ok, "{}", taken.stderr);
    drop(server);
    let fresh = common::temp_dir("backup-data-dir-restored");
    let args = [
        "restore",
        "--from",
        text(&file),
        "--data-dir",
        text(&fresh),
        "--quiet",
    ];
    let restored = hearth(&args).await;
    assert!(restored.ok, "{}", restored.stderr);
    let mut before = open(&dir.join("hearth.sqlite3")).await;
    let mut after = open(&fresh.join("hearth.sqlite3")).await;
    assert_eq!(
        table_counts(&mut after).await.get("users"),
        table_counts(&mut before).await.get("users")
    );
}
