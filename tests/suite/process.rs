//! The real `hearth` binary as a child process: crash durability (SIGKILL during a posting
//! run), graceful restarts (SIGTERM), and what it writes to its logs.

use crate::common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::child::{Hearth, DAVID, PASSWORD, SECRET_KEY_BASE};
use common::{form, Ws, WsEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const T: Duration = Duration::from_secs(10);

/// Posts like a browser, but never panics: None when the server is unreachable or the
/// connection dies before a whole status line arrives.
async fn try_post(addr: SocketAddr, cookies: &str, path: &str, body: &str) -> Option<u16> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nCookie: {cookies}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.ok()?;
    stream.write_all(body.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut raw))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&raw);
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

fn body_for(cid: &str) -> String {
    // Long enough to span several pages of the WAL when many are in flight.
    format!("{cid}:{}", ["durable"; 250].join(" "))
}

fn sidecar(dir: &Path, suffix: &str) -> PathBuf {
    dir.join(format!("hearth.sqlite3{suffix}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_post_survives_sigkill_and_nothing_is_half_written() {
    let dir = common::temp_dir("kill");
    let mut hearth = Hearth::start(&dir, &[]).await;
    let mut c = hearth.client();
    assert_eq!(c.login(DAVID, PASSWORD).await.status, 302);
    let (csrf, _) = c.room(1).await;
    let cookies = c.cookie_header();

    const WRITERS: usize = 8;
    const KILL_AFTER: usize = 150;
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (acked, count, cookies, csrf) =
            (acked.clone(), count.clone(), cookies.clone(), csrf.clone());
        let addr = hearth.addr;
        writers.push(tokio::spawn(async move {
            // Bounded: each writer stops at its first failure (the server is gone) or after
            // 1,000 posts.
            for i in 0..1000 {
                let cid = format!("kill-{w}-{i}");
                let body = form(&[
                    ("message[body]", &body_for(&cid)),
                    ("message[client_message_id]", &cid),
                    ("authenticity_token", &csrf),
                ]);
                match try_post(addr, &cookies, "/rooms/1/messages", &body).await {
                    Some(302 | 200) => {
                        acked.lock().unwrap().push(cid);
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                    Some(other) => panic!("post answered {other}"),
                    None => return,
                }
            }
        }));
    }
    while count.load(Ordering::SeqCst) < KILL_AFTER {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    hearth.signal("KILL");
    assert_eq!(hearth.wait(T).await, None, "killed by the signal");
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= KILL_AFTER);
    // The crash left the write-ahead log and its index behind.
    assert!(sidecar(&dir, "-wal").exists(), "no -wal file after SIGKILL");
    assert!(sidecar(&dir, "-shm").exists(), "no -shm file after SIGKILL");

    // Restart on the same files: SQLite replays the WAL.
    let mut hearth = Hearth::start(&dir, &[]).await;
    let pool = hearth::db::open(&dir.join("hearth.sqlite3")).await.unwrap();
    let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(integrity, "ok");
    let broken_keys: Vec<(String,)> = sqlx::query_as("PRAGMA foreign_key_check")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert!(broken_keys.is_empty());
    let stored: Vec<(String, String)> = sqlx::query_as(
        "SELECT client_message_id, body FROM messages WHERE client_message_id LIKE 'kill-%'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let stored_map: std::collections::HashMap<&str, &str> = stored
        .iter()
        .map(|(cid, body)| (cid.as_str(), body.as_str()))
        .collect();
    assert_eq!(stored_map.len(), stored.len(), "a post was stored twice");
    for cid in &acked {
        assert!(
            stored_map.contains_key(cid.as_str()),
            "acknowledged post {cid} lost"
        );
    }
    // Nothing half-written: every stored post is whole, and its room was touched in the same
    // transaction.
    for (cid, body) in &stored {
        assert!(
            body.contains(&format!("{}<", body_for(cid))),
            "post {cid} is not whole: {body}"
        );
    }
    let untouched: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM messages m JOIN rooms r ON r.id = m.room_id \
         WHERE m.client_message_id LIKE 'kill-%' AND r.updated_at < m.created_at",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(untouched, 0);
    // The restarted server takes posts again.
    let mut c = hearth.client();
    assert_eq!(c.login(DAVID, PASSWORD).await.status, 302);
    let (csrf, _) = c.room(1).await;
    assert_eq!(
        c.post_message(1, "after the crash", "after-crash", &csrf)
            .await
            .status,
        200
    );
    pool.close().await;
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_sends_server_restart_stops_accepting_drains_and_exits_0() {
    let dir = common::temp_dir("term");
    let mut hearth = Hearth::start(&dir, &["--drain-timeout", "20"]).await;
    let mut c = hearth.client();
    assert_eq!(c.login(DAVID, PASSWORD).await.status, 302);
    let (csrf, _) = c.room(1).await;
    let origin = format!("http://{}", hearth.addr);
    let mut ws = Ws::connect(
        hearth.addr,
        Some(&c.cookie_header()),
        Some(&origin),
        Some("actioncable-v1-json"),
    )
    .await;
    assert_eq!(ws.status, 101);
    assert_eq!(
        ws.next(T).await,
        Some(WsEvent::Text(r#"{"type":"welcome"}"#.into()))
    );
    // A post whose body is still on its way when the signal comes.
    let body = form(&[
        ("message[body]", "in flight"),
        ("message[client_message_id]", "in-flight"),
        ("authenticity_token", &csrf),
    ]);
    let mut in_flight = tokio::net::TcpStream::connect(hearth.addr).await.unwrap();
    let head = format!(
        "POST /rooms/1/messages HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nCookie: {}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        hearth.addr,
        c.cookie_header(),
        body.len()
    );
    in_flight.write_all(head.as_bytes()).await.unwrap();
    in_flight.write_all(&body.as_bytes()[..5]).await.unwrap();

    hearth.signal("TERM");
    assert_eq!(
        ws.next_non_ping(T).await,
        Some(WsEvent::Text(
            r#"{"type":"disconnect","reason":"server_restart","reconnect":true}"#.into()
        ))
    );
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1000)));
    // No new connections while it drains…
    assert!(tokio::net::TcpStream::connect(hearth.addr).await.is_err());
    assert!(hearth.child.try_wait().unwrap().is_none(), "still draining");
    // …but the request in flight completes.
    in_flight.write_all(&body.as_bytes()[5..]).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(T, in_flight.read_to_end(&mut response))
        .await
        .unwrap()
        .unwrap();
    let response = String::from_utf8_lossy(&response);
    assert!(response.starts_with("HTTP/1.1 302"), "{response}");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));
    let pool = hearth::db::open(&dir.join("hearth.sqlite3")).await.unwrap();
    let n: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE client_message_id = 'in-flight'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(n, 1);
    pool.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_client_cannot_hold_the_shutdown_past_the_drain_timeout() {
    let dir = common::temp_dir("stuck");
    let mut hearth = Hearth::start(&dir, &["--drain-timeout", "1"]).await;
    // Headers of a POST whose body never comes.
    let mut stuck = tokio::net::TcpStream::connect(hearth.addr).await.unwrap();
    stuck
        .write_all(
            b"POST /session HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n\
              Content-Length: 1000\r\n\r\nemail",
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(20)).await, Some(0));
    assert!(hearth.log().contains("drain timeout reached"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_the_logs_even_at_trace_level() {
    let dir = common::temp_dir("logs");
    let mut hearth = Hearth::start(&dir, &["--log-level", "trace"]).await;
    let mut c = hearth.client();
    assert_eq!(c.login(DAVID, "wrong password 1").await.status, 401);
    assert_eq!(c.login(DAVID, PASSWORD).await.status, 302);
    let (csrf, _) = c.room(1).await;
    assert_eq!(
        c.post_message(1, "hello logs", "logs-1", &csrf)
            .await
            .status,
        200
    );
    let origin = format!("http://{}", hearth.addr);
    let mut ws = Ws::connect(
        hearth.addr,
        Some(&c.cookie_header()),
        Some(&origin),
        Some("actioncable-v1-json"),
    )
    .await;
    assert_eq!(ws.status, 101);
    let _ = ws.next(T).await;
    let bot = try_post(hearth.addr, "", "/rooms/1/5-bNd3rB0tK3y7/messages", "beep").await;
    assert_eq!(bot, Some(201));
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));
    let pool = hearth::db::open(&dir.join("hearth.sqlite3")).await.unwrap();
    let token: String = sqlx::query_scalar("SELECT token FROM sessions LIMIT 1")
        .fetch_one(&pool)
        .await
        .unwrap();
    let digest: String = sqlx::query_scalar("SELECT password_digest FROM users WHERE id = 1")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    let log = hearth.log();
    assert!(log.contains("Hearth is listening"), "the log was captured");
    let session_cookie = c.cookie("session_token").unwrap().to_owned();
    let csrf_cookie = c.cookie("_hearth_session").unwrap().to_owned();
    for (what, secret) in [
        ("secret_key_base", SECRET_KEY_BASE),
        ("password", PASSWORD),
        ("wrong password", "wrong password 1"),
        ("session token", token.as_str()),
        ("password digest", digest.as_str()),
        ("session cookie", session_cookie.as_str()),
        ("CSRF cookie", csrf_cookie.as_str()),
        ("CSRF token", csrf.as_str()),
        ("bot token", "bNd3rB0tK3y7"),
    ] {
        assert!(!log.contains(secret), "the {what} is in the log");
    }
    // `--help` does not print the environment's secret either.
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["serve", "--help"])
        .env("SECRET_KEY_BASE", SECRET_KEY_BASE)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains(SECRET_KEY_BASE));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Posts like [`try_post`] and returns the status, the `Retry-After` header and how long the
/// answer took.
async fn timed_post(
    addr: SocketAddr,
    cookies: &str,
    body: &str,
) -> (u16, Option<String>, Duration) {
    let started = std::time::Instant::now();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /rooms/1/messages HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nCookie: {cookies}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut raw))
        .await
        .expect("an answer within a minute")
        .unwrap();
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&raw);
    let status = text[9..12].parse().unwrap();
    let retry_after = text
        .split("\r\n\r\n")
        .next()
        .unwrap()
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("retry-after")
                .then(|| v.trim().to_owned())
        });
    (status, retry_after, elapsed)
}

/// A connection of this test process to the server's database file, as another program
/// (`sqlite3`, a backup) would open it.
async fn outside_connection(dir: &Path) -> sqlx::SqliteConnection {
    use sqlx::Connection as _;
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("hearth.sqlite3"))
        .busy_timeout(Duration::from_secs(10));
    sqlx::SqliteConnection::connect_with(&options)
        .await
        .unwrap()
}

async fn signed_in_poster(hearth: &Hearth) -> (String, String) {
    let mut c = hearth.client();
    assert_eq!(c.login(DAVID, PASSWORD).await.status, 302);
    let (csrf, _) = c.room(1).await;
    (c.cookie_header(), csrf)
}

fn post_body(cid: &str, csrf: &str) -> String {
    form(&[
        ("message[body]", cid),
        ("message[client_message_id]", cid),
        ("authenticity_token", csrf),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_posts_wait_one_bounded_time_for_a_database_locked_from_outside() {
    let dir = common::temp_dir("locked");
    let hearth = Hearth::start(&dir, &[]).await;
    let (cookies, csrf) = signed_in_poster(&hearth).await;
    let mut outside = outside_connection(&dir).await;

    // A lock held past the bound: every post fails within it, with 503 and Retry-After, also
    // when there are more posts than one group takes (150: three groups, which used to wait
    // one bound each in turn, up to 14 s).
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut outside)
        .await
        .unwrap();
    let posts: Vec<_> = (0..150)
        .map(|i| {
            let (cookies, body) = (cookies.clone(), post_body(&format!("locked-{i}"), &csrf));
            tokio::spawn(async move { timed_post(hearth.addr, &cookies, &body).await })
        })
        .collect();
    let mut answers = Vec::new();
    for p in posts {
        answers.push(p.await.unwrap());
    }
    sqlx::query("ROLLBACK").execute(&mut outside).await.unwrap();
    let times: Vec<_> = answers.iter().map(|a| a.2).collect();
    eprintln!("150 posts against a held lock: {times:?}");
    for (status, retry_after, elapsed) in &answers {
        assert_eq!(*status, 503, "{answers:?}");
        assert!(retry_after.is_some(), "no Retry-After: {answers:?}");
        assert!(
            *elapsed < Duration::from_secs(7),
            "answered after {times:?}"
        );
    }

    // A lock released within the bound: every queued post succeeds.
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut outside)
        .await
        .unwrap();
    let posts: Vec<_> = (0..6)
        .map(|i| {
            let (cookies, body) = (cookies.clone(), post_body(&format!("later-{i}"), &csrf));
            tokio::spawn(async move { timed_post(hearth.addr, &cookies, &body).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    sqlx::query("ROLLBACK").execute(&mut outside).await.unwrap();
    for p in posts {
        let (status, _, elapsed) = p.await.unwrap();
        assert_eq!(status, 302, "after {elapsed:?}");
    }
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

/// Another program's bulk import: `mib` MiB of text (each 512 KiB of random bytes as hex) into
/// the existing `searches` table, in one transaction, so that the WAL grows by about that much
/// without a schema change under the server.
async fn bulk_import(dir: &Path, mib: usize) {
    let mut writer = outside_connection(dir).await;
    sqlx::query("BEGIN").execute(&mut writer).await.unwrap();
    for _ in 0..mib {
        sqlx::query(
            "INSERT INTO searches (user_id, query, created_at, updated_at) \
             VALUES (1, hex(randomblob(524288)), 0, 0)",
        )
        .execute(&mut writer)
        .await
        .unwrap();
    }
    sqlx::query("COMMIT").execute(&mut writer).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_pinning_a_growing_wal_never_stalls_posts() {
    let dir = common::temp_dir("pinned");
    let hearth = Hearth::start(&dir, &[]).await;
    let (cookies, csrf) = signed_in_poster(&hearth).await;

    // A long reader: an open read transaction on an old snapshot.
    let mut reader = outside_connection(&dir).await;
    sqlx::query("BEGIN").execute(&mut reader).await.unwrap();
    let _: i64 = sqlx::query_scalar("SELECT count(*) FROM messages")
        .fetch_one(&mut reader)
        .await
        .unwrap();
    // Meanwhile the WAL grows past 64 MiB, the truncation threshold (a bulk import by another
    // program; into an existing table, so that the schema does not change under the server).
    bulk_import(&dir, 80).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // Posts for a few checkpoint intervals: none waits for the checkpointer.
    let mut slowest = Duration::ZERO;
    let started = std::time::Instant::now();
    let mut i = 0;
    while started.elapsed() < Duration::from_secs(4) {
        let (status, _, elapsed) = timed_post(
            hearth.addr,
            &cookies,
            &post_body(&format!("pinned-{i}"), &csrf),
        )
        .await;
        assert_eq!(status, 302, "{}", hearth.log());
        slowest = slowest.max(elapsed);
        i += 1;
    }
    eprintln!("{i} posts with a pinned WAL, slowest {slowest:?}");
    assert!(
        slowest < Duration::from_millis(1000),
        "a post took {slowest:?}"
    );

    // The growth and the lag are visible.
    let mut c = hearth.client();
    let m = c.get("/metrics").await.body;
    assert!(
        metric(&m, "hearth_sqlite_wal_bytes") > 72.0 * 1024.0 * 1024.0,
        "{m}"
    );
    assert!(metric(&m, "hearth_sqlite_checkpoint_lag_frames") > 0.0);
    assert!(metric(&m, "hearth_sqlite_checkpoint_age_seconds") > 0.0);

    // Once the reader ends, the WAL is copied back and truncated.
    sqlx::query("COMMIT").execute(&mut reader).await.unwrap();
    let mut truncated = false;
    for _ in 0..100 {
        let m = c.get("/metrics").await.body;
        if metric(&m, "hearth_sqlite_wal_bytes") < 4.0 * 1024.0 * 1024.0
            && metric(&m, "hearth_sqlite_checkpoint_lag_frames") == 0.0
        {
            truncated = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        truncated,
        "the WAL was not truncated after the reader ended"
    );
}

/// Regression: under a steady stream of posts the passive checkpoint never found the WAL wholly
/// copied (posts append while it copies), so SQLite never wrote it from its start again: the
/// file grew by every frame, each on a new page, until the checkpointer truncated it. Now a
/// blocking checkpoint follows a complete passive one: the file stays as long as the frames of
/// about one interval, written over, and is never truncated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_steady_posts_the_wal_is_written_over_from_its_start() {
    let dir = common::temp_dir("steady-wal");
    let hearth = Hearth::start(&dir, &[]).await;
    let (cookies, csrf) = signed_in_poster(&hearth).await;
    // Posts, one after another, for eight checkpoint intervals.
    let started = std::time::Instant::now();
    let mut posts = 0u64;
    while started.elapsed() < Duration::from_secs(8) {
        let (status, _, _) = timed_post(
            hearth.addr,
            &cookies,
            &post_body(&format!("steady-{posts}"), &csrf),
        )
        .await;
        assert_eq!(status, 302, "{}", hearth.log());
        posts += 1;
    }
    let m = hearth.client().get("/metrics").await.body;
    // Each post's commit writes eight or nine frames of 4,120 bytes (the message's row and its
    // four index entries, the change log, the room, the id sequence): a WAL that kept them all
    // would hold about that much; one written over each second holds an eighth of it, or a
    // few eighths when the checkpointer's turn came late.
    let wal = metric(&m, "hearth_sqlite_wal_bytes");
    assert!(
        wal < posts as f64 * 4.0 * 4120.0,
        "{posts} posts, a WAL of {wal} bytes: it kept every frame\n{m}"
    );
    assert_eq!(
        metric(&m, "hearth_sqlite_wal_truncations_total"),
        0.0,
        "{m}"
    );
    assert!(metric(&m, "hearth_sqlite_wal_restarts_total") >= 1.0, "{m}");
}

/// Regression: the checkpointer truncated every WAL past 4 MiB, which a second of posts at
/// 400/s exceeds, so that every later frame was written to a new page of the file (half of a
/// post's insert). A WAL of a busy second's size stays for the next commits to write over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wal_of_a_busy_second_is_written_over_not_truncated() {
    let dir = common::temp_dir("busy-wal");
    let hearth = Hearth::start(&dir, &[]).await;
    // 16 MiB of frames in one transaction (another program's, into an existing table).
    bulk_import(&dir, 16).await;

    // A checkpoint copies every frame back; the file keeps its length, and nothing is truncated.
    let mut c = hearth.client();
    let mut copied = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let m = c.get("/metrics").await.body;
        if metric(&m, "hearth_sqlite_checkpoint_lag_frames") == 0.0
            && metric(&m, "hearth_sqlite_checkpoint_age_seconds") > 0.0
        {
            copied = Some(m);
            break;
        }
    }
    let m = copied.expect("no checkpoint copied the WAL back");
    // One more interval, in which a truncating checkpointer would have acted.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let m2 = c.get("/metrics").await.body;
    assert_eq!(
        metric(&m2, "hearth_sqlite_wal_truncations_total"),
        0.0,
        "{m}\n{m2}"
    );
    assert!(
        metric(&m2, "hearth_sqlite_wal_bytes") > 16.0 * 1024.0 * 1024.0,
        "{m2}"
    );
}

/// Creates one more table through `outside`: a schema change made by another process.
async fn change_schema(outside: &mut sqlx::SqliteConnection) {
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM sqlite_schema")
        .fetch_one(&mut *outside)
        .await
        .unwrap();
    // The name is built from a number only.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE ballast_{n} (b BLOB)"
    )))
    .execute(&mut *outside)
    .await
    .unwrap();
}

async fn id_of(outside: &mut sqlx::SqliteConnection, cid: &str) -> i64 {
    sqlx::query_scalar("SELECT id FROM messages WHERE client_message_id = ?")
        .bind(cid)
        .fetch_one(&mut *outside)
        .await
        .unwrap()
}

/// A table created by another process (the `sqlite3` shell, a backup tool, a migration from a
/// console) while the server runs changes the schema under the server's pooled connections:
/// every write after it, the first one of each kind included, still succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_created_by_another_process_does_not_break_writes() {
    let dir = common::temp_dir("schema");
    let hearth = Hearth::start(&dir, &[]).await;
    let mut c = hearth.client();
    assert_eq!(c.login(DAVID, PASSWORD).await.status, 302);
    let (csrf, _) = c.room(1).await;
    let mut outside = outside_connection(&dir).await;
    let turbo = [("Accept", "text/vnd.turbo-stream.html")];

    change_schema(&mut outside).await;
    for i in 0..4 {
        let cid = format!("after-ballast-{i}");
        let r = c.post_message(1, &cid, &cid, &csrf).await;
        assert_eq!(r.status, 200, "post {i}: {}\n{}", r.body, hearth.log());
    }

    change_schema(&mut outside).await;
    let edited = id_of(&mut outside, "after-ballast-0").await;
    let r = c
        .post_form(
            &format!("/rooms/1/messages/{edited}"),
            &form(&[
                ("_method", "patch"),
                ("message[body]", "edited after the schema changed"),
                ("authenticity_token", &csrf),
            ]),
            &turbo,
        )
        .await;
    assert_eq!(r.status, 200, "edit: {}\n{}", r.body, hearth.log());

    change_schema(&mut outside).await;
    let boosted = id_of(&mut outside, "after-ballast-1").await;
    let r = c
        .post_form(
            &format!("/messages/{boosted}/boosts"),
            &form(&[("boost[content]", "ok"), ("authenticity_token", &csrf)]),
            &turbo,
        )
        .await;
    assert_eq!(r.status, 200, "boost: {}\n{}", r.body, hearth.log());

    change_schema(&mut outside).await;
    let deleted = id_of(&mut outside, "after-ballast-2").await;
    let r = c
        .post_form(
            &format!("/rooms/1/messages/{deleted}"),
            &form(&[("_method", "delete"), ("authenticity_token", &csrf)]),
            &turbo,
        )
        .await;
    assert_eq!(r.status, 200, "delete: {}\n{}", r.body, hearth.log());

    change_schema(&mut outside).await;
    let r = c
        .post_form(
            "/searches",
            &form(&[("q", "schema changed"), ("authenticity_token", &csrf)]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302, "search: {}\n{}", r.body, hearth.log());
    let page = c.get("/searches?q=schema%20changed").await;
    assert_eq!(page.status, 200, "{}", hearth.log());
    assert!(
        page.body.contains("message_after-ballast-0"),
        "the edited message is found: {}",
        page.body
    );

    change_schema(&mut outside).await;
    let r = c
        .post_form(
            "/rooms/opens",
            &form(&[
                ("room[name]", "After the schema changed"),
                ("authenticity_token", &csrf),
            ]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302, "room: {}\n{}", r.body, hearth.log());

    change_schema(&mut outside).await;
    let r = c
        .post_form(
            "/rooms/1/involvement",
            &form(&[
                ("_method", "put"),
                ("involvement", "everything"),
                ("authenticity_token", &csrf),
            ]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302, "involvement: {}\n{}", r.body, hearth.log());

    change_schema(&mut outside).await;
    for i in 4..8 {
        let cid = format!("after-ballast-{i}");
        let r = c.post_message(1, &cid, &cid, &csrf).await;
        assert_eq!(r.status, 200, "post {i}: {}\n{}", r.body, hearth.log());
    }
}

/// The same at the data layer, without timing: each write of `messages` is the first statement
/// its connection compiles after another process changed the schema.
#[tokio::test]
async fn writes_of_messages_survive_a_schema_change_on_a_connection_that_never_wrote() {
    let dir = common::temp_dir("schema-db");
    let path = dir.join("hearth.sqlite3");
    let pool = hearth::db::open(&path).await.unwrap();
    sqlx::query("INSERT INTO users (name, created_at, updated_at) VALUES ('Ada', 0, 0)")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO rooms (name, kind, created_at, updated_at) VALUES ('R', 'open', 0, 0)",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let mut outside = outside_connection(&dir).await;
    use hearth::db::messages;

    // A pool opened now has read the schema; the change comes after.
    let fresh = || async { hearth::db::open(&path).await.unwrap() };
    let pool = fresh().await;
    change_schema(&mut outside).await;
    let first = messages::create(&pool, 1, 1, "Ada", "first", "<div>one</div>").await;
    assert_eq!(first.unwrap_or_else(|e| panic!("post: {e}")).id, 1);
    pool.close().await;

    let pool = fresh().await;
    change_schema(&mut outside).await;
    let edited = messages::update_body(&pool, 1, 1, "<div>edited</div>", "edited").await;
    let edited = edited.unwrap_or_else(|e| panic!("edit: {e}"));
    assert_eq!(edited.map(|m| m.body).as_deref(), Some("<div>edited</div>"));
    pool.close().await;

    let pool = fresh().await;
    change_schema(&mut outside).await;
    let found = hearth::db::searches::messages(&pool, 1, "edited", 10).await;
    let found = found.unwrap_or_else(|e| panic!("search: {e}"));
    assert!(found.is_empty(), "Ada is no member of room 1");
    pool.close().await;

    let pool = fresh().await;
    change_schema(&mut outside).await;
    let deleted = messages::delete(&pool, 1, 1).await;
    let deleted = deleted.unwrap_or_else(|e| panic!("delete: {e}"));
    assert_eq!(deleted.map(|m| m.id), Some(1));
    pool.close().await;
}

/// Searches while another process changes the schema every 2 ms: each search connects the
/// full-text table on a pooled connection, and one whose schema changed between the
/// statement's compile and the table's connect failed with `SQLITE_SCHEMA` ("vtable
/// constructor failed: message_search_index", a 500; seen in CI in the test below).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_go_on_while_another_process_changes_the_schema() {
    const SEARCHERS: usize = 4;
    // The searches go on until the other process has made this many changes.
    const CHANGES: u32 = 60;
    let dir = common::temp_dir("schema-search");
    let path = dir.join("hearth.sqlite3");
    let pool = hearth::db::open(&path).await.unwrap();
    for sql in [
        "INSERT INTO users (name, created_at, updated_at) VALUES ('Ada', 0, 0)",
        "INSERT INTO rooms (name, kind, created_at, updated_at) VALUES ('R', 'open', 0, 0)",
        "INSERT INTO memberships (room_id, user_id, created_at, updated_at) VALUES (1, 1, 0, 0)",
    ] {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    hearth::db::messages::create(&pool, 1, 1, "Ada", "c1", "<div>needle</div>")
        .await
        .unwrap();
    let changes = Arc::new(std::sync::atomic::AtomicU32::new(0));
    // Every searcher and the changer start together.
    let start = Arc::new(tokio::sync::Barrier::new(SEARCHERS + 1));
    let changer = {
        let (changes, start) = (changes.clone(), start.clone());
        let mut outside = outside_connection(&dir).await;
        tokio::spawn(async move {
            start.wait().await;
            while changes.load(Ordering::Relaxed) < CHANGES {
                change_schema(&mut outside).await;
                changes.fetch_add(1, Ordering::Relaxed);
                // Paced as a tool would be: without a pause, once thousands of tables are made,
                // any statement can meet a change on each of SQLite's 50 recompiles.
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let searches = (0..SEARCHERS).map(|task| {
        let (pool, changes, start) = (pool.clone(), changes.clone(), start.clone());
        tokio::spawn(async move {
            start.wait().await;
            let mut i = 0;
            while changes.load(Ordering::Relaxed) < CHANGES {
                let found = hearth::db::searches::messages(&pool, 1, "needle", 10).await;
                let found = found.unwrap_or_else(|e| panic!("search {task}/{i}: {e}"));
                assert_eq!(found.iter().map(|m| m.id).collect::<Vec<_>>(), [1]);
                i += 1;
            }
        })
    });
    for search in futures_util::future::join_all(searches.collect::<Vec<_>>()).await {
        search.unwrap();
    }
    changer.await.unwrap();
    pool.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bulk import of the first rounds, back: another process creates tables and fills them
/// (`CREATE TABLE ballast_<n>`, a mebibyte each) while people post, search and boost; every
/// one of those requests succeeds (none fails with `no such table: messages`) and every post
/// is stored once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_go_on_while_another_process_creates_and_fills_tables() {
    let dir = common::temp_dir("bulk-import");
    let hearth = Hearth::start(&dir, &[]).await;
    let mut c = hearth.client();
    assert_eq!(c.login(DAVID, PASSWORD).await.status, 302);
    let (csrf, _) = c.room(1).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let importer = {
        let stop = stop.clone();
        let mut outside = outside_connection(&dir).await;
        tokio::spawn(async move {
            let mut tables = 0;
            while !stop.load(Ordering::Relaxed) {
                change_schema(&mut outside).await;
                // Fill the newest table: a bulk import, not only a schema change.
                let name: String = sqlx::query_scalar(
                    "SELECT name FROM sqlite_schema WHERE name LIKE 'ballast_%' \
                     ORDER BY rowid DESC LIMIT 1",
                )
                .fetch_one(&mut outside)
                .await
                .unwrap();
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO {name} VALUES (zeroblob(1048576))"
                )))
                .execute(&mut outside)
                .await
                .unwrap();
                tables += 1;
                tokio::time::sleep(Duration::from_millis(15)).await;
            }
            tables
        })
    };
    const POSTS: usize = 60;
    for i in 0..POSTS {
        let cid = format!("bulk-{i}");
        let r = c.post_message(1, &cid, &cid, &csrf).await;
        assert_eq!(r.status, 200, "post {i}: {}\n{}", r.body, hearth.log());
        if i % 10 == 9 {
            let s = c.get("/searches?q=bulk").await;
            assert_eq!(
                s.status,
                200,
                "search after post {i}: {}\n{}",
                s.body,
                hearth.log()
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let tables = importer.await.unwrap();
    assert!(
        tables >= 5,
        "only {tables} tables were created during the posts"
    );
    let mut outside = outside_connection(&dir).await;
    let stored: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT client_message_id) FROM messages WHERE client_message_id LIKE 'bulk-%'")
            .fetch_one(&mut outside)
            .await
            .unwrap();
    assert_eq!(stored, POSTS as i64);
    assert!(!hearth.log().contains("no such table"), "{}", hearth.log());
    let _ = std::fs::remove_dir_all(&dir);
}
