//! Security rules over real HTTP and `/cable`: production starts empty and refuses the demo's
//! published credentials, the internal endpoint answers nobody without its key and reads
//! bodies under the request limits, forwarded headers are believed only from trusted proxies,
//! production sends HSTS (see `docs/hardening.md`).

use crate::common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{temp_dir, TestServer};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";

/// Whether the seed's administrator signs in (the CSRF token from the first-run form).
async fn demo_admin_signs_in(c: &mut common::Client) -> bool {
    let page = c.get("/first_run").await;
    let token = common::csrf_meta(&page.body);
    let body = common::form(&[
        ("email_address", DAVID),
        ("password", SECRET),
        ("authenticity_token", &token),
    ]);
    let r = c.post_form("/session", &body, &[]).await;
    r.status == 302 && r.header("location") == Some("/")
}

/// Where `GET /` leads a visitor, following redirects (as Campfire: `/` → `/session/new` →
/// `/first_run` before the first run).
async fn landing(c: &mut common::Client) -> String {
    let mut path = "/".to_owned();
    for _ in 0..4 {
        let r = c.get(&path).await;
        match r.header("location") {
            Some(next) if r.status == 302 => path = next.to_owned(),
            _ => {
                assert_eq!(r.status, 200, "{path}: {}", r.body);
                return path;
            }
        }
    }
    panic!("too many redirects from /");
}

#[tokio::test]
async fn a_production_server_on_an_empty_database_begins_at_the_first_run_form() {
    let server = TestServer::start_with(|c| c.production = true).await;
    let mut c = server.client();
    assert_eq!(landing(&mut c).await, "/first_run");
    let form = c.get("/first_run").await;
    assert_eq!(form.status, 200);
    assert!(form.body.contains("user[email_address]"), "{}", form.body);
    // Nothing of the demo seed exists: its administrator cannot sign in, its join code is
    // unknown and its bot key posts nothing.
    assert!(!demo_admin_signs_in(&mut server.client()).await);
    let join = server.client().get("/join/hRt7-Q2mK-9wXe").await;
    assert_eq!(join.status, 404, "{}", join.body);
    let bot = server
        .client()
        .request(
            "POST",
            "/rooms/1/5-bNd3rB0tK3y7/messages",
            &[("Content-Type", "text/plain")],
            b"hello",
        )
        .await;
    assert!(
        !(200..300).contains(&bot.status),
        "the demo bot posted: {}",
        bot.status
    );
    let users: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(users, 0);
}

#[tokio::test]
async fn outside_production_an_empty_database_is_still_seeded() {
    let server = TestServer::start().await;
    let mut c = server.client();
    assert_eq!(c.login(DAVID, SECRET).await.status, 302);
}

#[tokio::test]
async fn a_production_server_refuses_a_database_holding_the_demo_credentials_and_says_which() {
    let seeded = TestServer::start().await;
    let dir = seeded.stop_keeping_dir().await;
    let mut config = hearth::config::Config::for_tests(&dir);
    config.production = true;
    let err = hearth::app::Server::bind(config)
        .await
        .expect_err("a production server must not serve the demo credentials");
    let text = format!("{err:#}");
    for needle in [
        "production",
        "hRt7-Q2mK-9wXe",
        "5-bNd3rB0tK3y7",
        "david@example.com",
        "\"password\" of user",
    ] {
        assert!(text.contains(needle), "{needle} missing from: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_production_server_starts_once_every_demo_credential_was_changed() {
    let seeded = TestServer::start_with(|c| c.seed_users = 0).await;
    let pool = seeded.state.db.pool.clone();
    let digest = bcrypt::hash("another long password", 4).unwrap();
    sqlx::query("UPDATE users SET password_digest = ? WHERE password_digest IS NOT NULL")
        .bind(&digest)
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE users SET bot_token = 'freshTOKEN12' WHERE bot_token IS NOT NULL")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE accounts SET join_code = 'abcd-efgh-ijkl'")
        .execute(&pool)
        .await
        .unwrap();
    let dir = seeded.stop_keeping_dir().await;
    let server = TestServer::start_in(dir, |c| c.production = true).await;
    let mut c = server.client();
    assert_eq!(c.login(DAVID, "another long password").await.status, 302);
}

/// The `HEARTH_*` settings a deployment file gives: `Environment=K=V` lines of a systemd
/// unit, or the `ENV K=V \` block of a Dockerfile.
fn deployment_env(text: &str) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut in_env = false;
    for line in text.lines() {
        let line = line.trim();
        let body = if let Some(rest) = line.strip_prefix("Environment=") {
            rest
        } else if let Some(rest) = line.strip_prefix("ENV ") {
            in_env = true;
            rest
        } else if in_env {
            line
        } else {
            continue;
        };
        in_env = in_env && body.ends_with('\\');
        for pair in body.trim_end_matches('\\').split_whitespace() {
            if let Some((k, v)) = pair.split_once('=') {
                pairs.push((k.to_owned(), v.to_owned()));
            }
        }
    }
    pairs
}

/// Starts the real binary with a deployment file's settings (its paths moved into `dir`, its
/// address to an ephemeral port) and returns its address.
async fn start_as_deployed(file: &str, dir: &Path) -> (tokio::process::Child, SocketAddr) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    let env = deployment_env(&text);
    assert!(
        env.iter()
            .any(|(k, v)| k == "HEARTH_PRODUCTION" && v == "true"),
        "{file} starts production: {env:?}"
    );
    let mut command = crate::common::child::hearth_command();
    command
        .arg("serve")
        .env_clear()
        .env("PATH", "/usr/bin:/bin");
    for (k, v) in &env {
        command.env(k, v);
    }
    command
        .env("HEARTH_BIND", "127.0.0.1:0")
        .env("HEARTH_DATABASE", dir.join("hearth.sqlite3"))
        .env("HEARTH_DATA_DIR", dir)
        .env("HEARTH_LOG_JSON", "true")
        .env("SECRET_KEY_BASE", "ab".repeat(64))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("Hearth is listening") {
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                return v["fields"]["address"].as_str().unwrap().parse().unwrap();
            }
        }
        panic!("{file}: the server ended before listening");
    })
    .await
    .expect("listening in time");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, addr)
}

#[tokio::test]
async fn the_deployed_production_starts_lead_to_the_first_run_form() {
    for file in ["deploy/hearth.service", "deploy/Dockerfile"] {
        let dir = temp_dir("deployed");
        let (mut child, addr) = start_as_deployed(file, &dir).await;
        let mut c = common::Client {
            addr,
            cookies: Vec::new(),
        };
        assert_eq!(landing(&mut c).await, "/first_run", "{file}");
        assert_eq!(c.get("/first_run").await.status, 200, "{file}");
        assert!(!demo_admin_signs_in(&mut c).await, "{file}");
        let _ = child.kill().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}

// ---------------------------------------------------------------------------------------------
// The internal endpoint of the app node.

/// Sends `head` (and no body) and returns the status line's code, or None when the server
/// closed the connection without an answer within `within`.
async fn status_of(addr: SocketAddr, head: &str, body: &[u8], within: Duration) -> Option<u16> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    let read = tokio::time::timeout(within, async {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    raw.extend_from_slice(&buf[..n]);
                    if raw.windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    read.ok()?;
    let line = String::from_utf8_lossy(&raw);
    line.split(' ').nth(1).and_then(|s| s.parse().ok())
}

fn internal_key(server: &TestServer) -> String {
    hearth::app_link::internal_key(
        server
            .state
            .config
            .secret_key_base
            .as_deref()
            .map(String::as_str)
            .unwrap(),
    )
}

#[tokio::test]
async fn an_unkeyed_internal_call_is_answered_404_before_its_body_is_read() {
    let server = TestServer::start_with(|c| c.body_timeout = 1).await;
    // A body announced and never sent: the answer must not wait for it.
    let head = format!(
        "POST /_internal/cable/identify HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n",
        server.addr
    );
    let started = Instant::now();
    let status = status_of(server.addr, &head, b"{", Duration::from_secs(5)).await;
    assert_eq!(status, Some(404));
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_keyed_internal_call_reads_its_body_under_the_body_timeout_and_size_limit() {
    let server = TestServer::start_with(|c| {
        c.body_timeout = 1;
        c.max_body_bytes = 4096;
    })
    .await;
    let key = internal_key(&server);
    let slow = format!(
        "POST /_internal/cable/identify HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
        server.addr
    );
    let started = Instant::now();
    let status = status_of(server.addr, &slow, b"{", Duration::from_secs(5)).await;
    assert_eq!(status, Some(408));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let large = format!(
        "POST /_internal/cable/identify HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n",
        server.addr
    );
    let status = status_of(server.addr, &large, &[b' '; 5000], Duration::from_secs(5)).await;
    assert_eq!(status, Some(413));
    // A well-formed keyed call still works.
    let body = br#"{"session_token":"nope"}"#;
    let ok = format!(
        "POST /_internal/cable/identify HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr,
        body.len()
    );
    assert_eq!(
        status_of(server.addr, &ok, body, Duration::from_secs(5)).await,
        Some(200)
    );
}

#[tokio::test]
async fn get_on_the_internal_endpoint_is_404_with_or_without_the_key() {
    let server = TestServer::start().await;
    let key = internal_key(&server);
    let mut c = server.client();
    for op in ["identify", "subscribe", "nothing"] {
        let path = format!("/_internal/cable/{op}");
        assert_eq!(c.get(&path).await.status, 404, "{path}");
        let auth = format!("Bearer {key}");
        let keyed = c
            .request("GET", &path, &[("Authorization", &auth)], b"")
            .await;
        assert_eq!(keyed.status, 404, "{path}");
    }
}

#[tokio::test]
async fn a_broadcast_body_is_read_under_the_body_timeout() {
    let server = TestServer::start_with(|c| c.body_timeout = 1).await;
    let key = server.state.keys.broadcast_key.clone();
    let head = format!(
        "POST /_broadcast HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
        server.addr
    );
    let status = status_of(server.addr, &head, b"{", Duration::from_secs(5)).await;
    assert_eq!(status, Some(408));
}

#[tokio::test]
async fn a_remote_disconnect_for_an_unknown_identifier_cannot_forge_or_flood_log_lines() {
    let (log, _capturing) = common::captured_log();
    let server = TestServer::start().await;
    let key = server.state.keys.broadcast_key.clone();
    let forged = "x\n2026-01-01T00:00:00Z  INFO hearth: FORGED admin signed in \u{1b}[31m";
    let long = "Q".repeat(200_000);
    for identifier in [forged.to_owned(), long] {
        let body = serde_json::json!({
            "command": "disconnect",
            "payload": {"identifier": identifier, "reconnect": false}
        })
        .to_string();
        let r = server
            .client()
            .request(
                "POST",
                "/_broadcast",
                &[
                    ("Authorization", &format!("Bearer {key}")),
                    ("Content-Type", "application/json"),
                ],
                body.as_bytes(),
            )
            .await;
        assert_eq!(r.status, 422);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let text = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    assert!(
        text.contains("remote disconnect for an unknown identifier"),
        "nothing logged: {text}"
    );
    for line in text.lines() {
        assert!(
            !line.starts_with("2026-01-01") && !line.contains('\u{1b}'),
            "a broadcast body forged a log line: {line:?}"
        );
        assert!(line.len() < 2_000, "a {} byte log line", line.len());
    }
}

// ---------------------------------------------------------------------------------------------
// Forwarded headers and transport security.

#[tokio::test]
async fn x_forwarded_proto_from_an_untrusted_client_does_not_make_cookies_secure() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let page = c
        .request(
            "GET",
            "/session/new",
            &[("X-Forwarded-Proto", "https")],
            b"",
        )
        .await;
    let cookie = page.headers_named("set-cookie").join("\n");
    assert!(!cookie.is_empty());
    assert!(!cookie.to_ascii_lowercase().contains("secure"), "{cookie}");

    // Behind a trusted proxy the same header is believed.
    let proxied = TestServer::start_with(|c| {
        c.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    })
    .await;
    let mut c = proxied.client();
    let page = c
        .request(
            "GET",
            "/session/new",
            &[("X-Forwarded-Proto", "https")],
            b"",
        )
        .await;
    let cookie = page.headers_named("set-cookie").join("\n");
    assert!(cookie.to_ascii_lowercase().contains("secure"), "{cookie}");
}

#[tokio::test]
async fn production_sends_hsts_and_development_does_not() {
    let production = TestServer::start_with(|c| c.production = true).await;
    let r = production.client().get("/up").await;
    assert_eq!(
        r.header("strict-transport-security"),
        Some(hearth::app::HSTS)
    );
    let r = production.client().get("/first_run").await;
    assert_eq!(
        r.header("strict-transport-security"),
        Some(hearth::app::HSTS)
    );
    let development = TestServer::start().await;
    let r = development.client().get("/up").await;
    assert_eq!(r.header("strict-transport-security"), None);
}

// ---------------------------------------------------------------------------------------------
// Queued-frame budgets.

/// The server's resident memory now (`VmRSS`), in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc status")
}

/// Sockets of one account, identifiers per socket, posts and their body length of the
/// measurement; the per-user budget it runs with, and the fixed overhead allowed on top
/// (the connections' rings, the frames their writers hold, allocator slack).
const BUDGET_SOCKETS: usize = 100;
const BUDGET_IDENTIFIERS: usize = 64;
const BUDGET_POSTS: usize = 12;
const BUDGET_BODY_CHARS: usize = 2000;
const USER_BUDGET_MIB: u64 = 8;
const FIXED_OVERHEAD_MIB: u64 = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_reading_sockets_of_one_account_pin_at_most_the_user_budget() {
    let dir = temp_dir("budget");
    let budget = (USER_BUDGET_MIB << 20).to_string();
    let mut flags = vec!["--queue-user-bytes".to_owned(), budget];
    // For the comparison in docs/hardening.md: HEARTH_TEST_QUEUE_FLAGS="--queue-user-bytes 0
    // --queue-server-bytes 0" measures the same load without budgets (and then fails).
    if let Ok(extra) = std::env::var("HEARTH_TEST_QUEUE_FLAGS") {
        flags.extend(extra.split_whitespace().map(str::to_owned));
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let hearth = common::child::Hearth::start(&dir, &flags).await;
    let pid = hearth.child.id().unwrap();
    let mut c = hearth.client();
    assert_eq!(c.login(DAVID, SECRET).await.status, 302);
    let (csrf, page) = c.room(1).await;
    let signed = common::attr_after(
        &page,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .expect("the room's stream name");
    let cookie = c.cookie_header();
    let origin = format!("http://{}", hearth.addr);

    let mut stalled = Vec::with_capacity(BUDGET_SOCKETS);
    for s in 0..BUDGET_SOCKETS {
        let mut ws = common::Ws::connect_small_window(hearth.addr, &cookie, &origin).await;
        assert_eq!(ws.status, 101, "socket {s}: {}", ws.response_head);
        for i in 0..BUDGET_IDENTIFIERS {
            let id = serde_json::json!({
                "channel": "RoomMessagesChannel",
                "signed_stream_name": signed,
                "n": format!("{s}-{i}"),
            })
            .to_string();
            ws.send_text(&common::subscribe_cmd(&id)).await;
        }
        let mut confirmed = 0;
        while confirmed < BUDGET_IDENTIFIERS {
            match ws.next_non_ping(Duration::from_secs(60)).await {
                Some(common::WsEvent::Text(t)) if t.contains("confirm_subscription") => {
                    confirmed += 1;
                }
                Some(common::WsEvent::Text(t)) if t.contains("welcome") => {}
                other => panic!("socket {s}: {other:?}"),
            }
        }
        stalled.push(ws);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib(pid);
    let peak_before = hearth.peak_rss_kib();
    let body = "x".repeat(BUDGET_BODY_CHARS);
    for p in 0..BUDGET_POSTS {
        let r = c
            .post_message(1, &body, &format!("budget-{p}"), &csrf)
            .await;
        assert_eq!(r.status, 200, "post {p}");
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = rss_kib(pid);
    let peak = hearth.peak_rss_kib();
    let rise_mib = after.saturating_sub(before) as f64 / 1024.0;
    let peak_rise_mib = peak.saturating_sub(peak_before.max(before)) as f64 / 1024.0;
    let metrics = hearth.client().get("/metrics").await.body;
    let cut = metrics
        .lines()
        .find(|l| l.starts_with("hearth_fanout_slow_consumer_disconnects_total"))
        .unwrap_or("")
        .to_owned();
    eprintln!("budget: {cut}");
    eprintln!(
        "budget: {BUDGET_SOCKETS} non-reading sockets x {BUDGET_IDENTIFIERS} identifiers, \
         {BUDGET_POSTS} posts of {BUDGET_BODY_CHARS} chars: VmRSS {} -> {} MiB (+{rise_mib:.1} MiB), \
         VmHWM +{peak_rise_mib:.1} MiB; user budget {USER_BUDGET_MIB} MiB + {FIXED_OVERHEAD_MIB} MiB allowed",
        before / 1024,
        after / 1024
    );
    assert!(
        peak_rise_mib <= (USER_BUDGET_MIB + FIXED_OVERHEAD_MIB) as f64,
        "RSS rose {peak_rise_mib:.1} MiB"
    );
    // The server still serves: a fresh client signs in and posts.
    let mut other = hearth.client();
    assert_eq!(other.login("jason@example.com", SECRET).await.status, 302);
    let (csrf, _) = other.room(1).await;
    assert_eq!(
        other
            .post_message(1, "still here", "after", &csrf)
            .await
            .status,
        200
    );
    drop(stalled);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Request limits and field checks.

#[tokio::test]
async fn posting_past_the_limit_is_429_with_retry_after_and_stores_nothing() {
    let server = TestServer::start_with(|c| c.post_rate_limit = 3).await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    for i in 0..3 {
        let r = c
            .post_message(1, "flood", &format!("flood-{i}"), &csrf)
            .await;
        assert_eq!(r.status, 200, "post {i}");
    }
    let r = c.post_message(1, "flood", "flood-3", &csrf).await;
    assert_eq!(r.status, 429);
    let retry = r.retry_after();
    assert!((1..=20).contains(&retry), "{retry}");
    let stored: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE client_message_id LIKE 'flood-%'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    assert_eq!(stored, 3);
    // Another user is not held back by David's flood.
    let mut j = server.signed_in("jason@example.com", SECRET).await;
    let (csrf, _) = j.room(1).await;
    assert_eq!(j.post_message(1, "hi", "jason-1", &csrf).await.status, 200);
}

#[tokio::test]
async fn room_creation_searches_boosts_and_sign_ups_have_limits_too() {
    let server = TestServer::start_with(|c| {
        c.room_rate_limit = 1;
        c.search_rate_limit = 1;
        c.boost_rate_limit = 1;
        c.join_rate_limit = 1;
    })
    .await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    let room = |name: &str| common::form(&[("room[name]", name), ("authenticity_token", &csrf)]);
    assert_eq!(
        c.post_form("/rooms/opens", &room("One"), &[]).await.status,
        302
    );
    let r = c.post_form("/rooms/opens", &room("Two"), &[]).await;
    assert_eq!(r.status, 429);
    assert!(r.header("retry-after").is_some());
    let rooms: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM rooms WHERE name = 'Two'")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(rooms, 0);

    assert_ne!(c.get("/searches?q=hello").await.status, 429);
    assert_eq!(c.get("/searches?q=again").await.status, 429);

    let boost = common::form(&[("boost[content]", "👍"), ("authenticity_token", &csrf)]);
    let first = c.post_form("/messages/1/boosts", &boost, &[]).await;
    assert_ne!(first.status, 429);
    assert_eq!(
        c.post_form("/messages/1/boosts", &boost, &[]).await.status,
        429
    );

    let server = &server;
    let join = |n: u32| async move {
        sign_up_with_the_join_code(server, "Joiner", &format!("joiner{n}@example.org"))
            .await
            .status
    };
    assert_eq!(join(1).await, 302);
    assert_eq!(join(2).await, 429);
}

#[tokio::test]
async fn names_with_nul_or_bidi_overrides_are_422_and_nothing_changes() {
    // Right-to-left text itself is fine.
    names_are_422_and_nothing_changes(
        &[
            "Dav\u{0}id",
            "\u{202E}divaD",
            "Da\u{2066}vid\u{2069}",
            "a\u{7}b",
        ],
        "דוד",
    )
    .await;
}

/// Each of `refused` as David's name and as a new room's name is 422 and changes nothing;
/// then `accepted` as his name is taken (302).
pub(crate) async fn names_are_422_and_nothing_changes(refused: &[&str], accepted: &str) {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let page = c.get("/users/me/profile").await;
    let csrf = common::csrf_meta(&page.body);
    let profile = |name: &str| {
        common::form(&[
            ("_method", "patch"),
            ("user[name]", name),
            ("authenticity_token", &csrf),
        ])
    };
    for bad in refused {
        let r = c.post_form("/users/me/profile", &profile(bad), &[]).await;
        assert_eq!(r.status, 422, "{bad:?}");
        let room = common::form(&[("room[name]", bad), ("authenticity_token", &csrf)]);
        let r = c.post_form("/rooms/opens", &room, &[]).await;
        assert_eq!(r.status, 422, "room {bad:?}");
    }
    let name: String = sqlx::query_scalar("SELECT name FROM users WHERE id = 1")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(name, "David");
    let r = c
        .post_form("/users/me/profile", &profile(accepted), &[])
        .await;
    assert_eq!(r.status, 302, "{}", r.body);
}

#[tokio::test]
async fn an_unknown_role_or_status_is_422() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let page = c.get("/account/users").await;
    let csrf = common::csrf_meta(&page.body);
    let role = common::form(&[
        ("_method", "patch"),
        ("user[role]", "emperor"),
        ("authenticity_token", &csrf),
    ]);
    assert_eq!(
        c.post_form("/account/users/2", &role, &[]).await.status,
        422
    );
    let status = common::form(&[
        ("_method", "patch"),
        ("user[status]", "emperor"),
        ("authenticity_token", &csrf),
    ]);
    assert_eq!(c.post_form("/users/2", &status, &[]).await.status, 422);
}

#[tokio::test]
async fn a_flood_of_bad_cable_commands_logs_a_few_warnings_and_a_count() {
    let (log, _capturing) = common::captured_log();
    let server = TestServer::start().await;
    let (_c, mut ws) = common::connect_as(&server, DAVID, SECRET).await;
    for _ in 0..500 {
        ws.send_text("{bad").await;
    }
    // The connection still works: its next subscribe is confirmed.
    let id = r#"{"channel":"HeartbeatChannel"}"#;
    ws.send_text(&common::subscribe_cmd(id)).await;
    assert_eq!(
        ws.next_non_ping(Duration::from_secs(10)).await,
        common::text(&common::confirm(id))
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    ws.send_text("{bad").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let text = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    let warnings = text.matches("Could not execute command").count();
    assert!((10..=13).contains(&warnings), "{warnings} warnings logged");
    assert!(
        text.contains("were not logged"),
        "no count of the dropped warnings"
    );
}

#[tokio::test]
async fn the_old_since_catch_up_reads_at_most_its_bound_then_asks_for_a_reload() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let since = hearth::db::now_ms();
    let max = usize::try_from(hearth::web::rooms::REFRESH_MAX).unwrap();
    for i in 0..=max {
        sqlx::query(
            "INSERT INTO messages (room_id, creator_id, client_message_id, body, created_at, updated_at) \
             VALUES (1, 2, ?, '<div>flood</div>', ?, ?)",
        )
        .bind(format!("since-flood-{i}"))
        .bind(since + 1)
        .bind(since + 1)
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    }
    // `?since=0` (the whole room) and `?since=<before the flood>`: one row past the bound
    // is read, and the answer is a reload, never the whole history.
    for from in [0, since] {
        let r = c.get(&format!("/rooms/1/refresh?since={from}")).await;
        assert_eq!(r.status, 200);
        assert_eq!(
            r.body, "<turbo-stream action=\"refresh\"></turbo-stream>",
            "since={from}"
        );
    }
    // A negative or absurd value is no number of messages: the same bounded answer or 400.
    for bad in ["-1", "99999999999999999999", "1e9", "abc"] {
        let r = c.get(&format!("/rooms/1/refresh?since={bad}")).await;
        assert!(
            r.status == 400 || r.body == "<turbo-stream action=\"refresh\"></turbo-stream>",
            "since={bad}: {} {}",
            r.status,
            &r.body[..r.body.len().min(200)]
        );
    }
}

#[tokio::test]
async fn boosts_with_nul_or_bidi_overrides_are_422_and_nothing_is_stored() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    let message: i64 = sqlx::query_scalar("SELECT max(id) FROM messages WHERE room_id = 1")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM boosts")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap()
    };
    let before = count().await;
    let mut bot = server.client();
    for bad in ["\u{202E}ab", "a\u{0}b", "\u{2067}x\u{2069}", "a\u{1b}[2Jb"] {
        let body = common::form(&[("boost[content]", bad), ("authenticity_token", &csrf)]);
        let r = c
            .post_form(&format!("/messages/{message}/boosts"), &body, &[])
            .await;
        assert_eq!(r.status, 422, "{bad:?}");
        let r = bot
            .request(
                "POST",
                &format!("/rooms/1/5-bNd3rB0tK3y7/messages/{message}/boosts"),
                &[("Content-Type", "text/plain")],
                bad.as_bytes(),
            )
            .await;
        assert_eq!(r.status, 422, "bot {bad:?}");
    }
    assert_eq!(count().await, before, "a hostile boost was stored");
    // Right-to-left text itself is fine.
    let body = common::form(&[("boost[content]", "שלום"), ("authenticity_token", &csrf)]);
    let r = c
        .post_form(&format!("/messages/{message}/boosts"), &body, &[])
        .await;
    assert_eq!(r.status, 302, "{}", r.body);
}

#[tokio::test]
async fn cable_input_quoted_in_warnings_cannot_forge_log_lines_or_flood_them() {
    let (log, _capturing) = common::captured_log();
    let server = TestServer::start().await;
    let (_c, mut ws) = common::connect_as(&server, DAVID, SECRET).await;
    let forged = "x\n2026-01-01T00:00:00Z  INFO hearth: FORGED admin signed in \u{1b}[31m";
    let long = "Q".repeat(200_000);
    for frame in [
        serde_json::json!({"command": forged, "identifier": 5}).to_string(),
        serde_json::json!({"command": "subscribe", "identifier": forged}).to_string(),
        serde_json::json!({"command": long, "identifier": 5}).to_string(),
        serde_json::json!({"command": "subscribe", "identifier": long}).to_string(),
    ] {
        ws.send_text(&frame).await;
    }
    // The connection still answers (after the oversized identifier's rejection).
    let id = r#"{"channel":"HeartbeatChannel"}"#;
    ws.send_text(&common::subscribe_cmd(id)).await;
    let confirmed = common::text(&common::confirm(id));
    loop {
        let next = ws.next_non_ping(Duration::from_secs(10)).await;
        assert!(next.is_some(), "no confirmation");
        if next == confirmed {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let text = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    assert!(
        text.contains("Could not execute command"),
        "nothing logged: {text}"
    );
    for line in text.lines() {
        assert!(
            !line.starts_with("2026-01-01") && !line.contains('\u{1b}'),
            "a client forged a log line: {line:?}"
        );
        assert!(line.len() < 2_000, "a {} byte log line", line.len());
    }
}

#[tokio::test]
async fn a_user_id_is_never_handed_out_twice() {
    let server = &TestServer::start().await;
    let pool = &server.state.db.pool;
    let sign_up = |n: u32| async move {
        let email = format!("reuse{n}@example.org");
        assert_eq!(
            sign_up_with_the_join_code(server, "Reuse", &email)
                .await
                .status,
            302
        );
        sqlx::query_scalar::<_, i64>("SELECT id FROM users WHERE email_address = ?")
            .bind(email)
            .fetch_one(pool)
            .await
            .unwrap()
    };
    let first = sign_up(1).await;
    // The newest user gone from the table (an operator's cleanup, a restore): its id stays
    // spent, so a session, GlobalID or cable identifier naming it never names someone new.
    for statement in [
        "DELETE FROM sessions WHERE user_id = ?",
        "DELETE FROM memberships WHERE user_id = ?",
        "DELETE FROM push_subscriptions WHERE user_id = ?",
    ] {
        sqlx::query(statement)
            .bind(first)
            .execute(pool)
            .await
            .unwrap();
    }
    sqlx::query("DELETE FROM users WHERE id = ?")
        .bind(first)
        .execute(pool)
        .await
        .unwrap();
    let second = sign_up(2).await;
    assert!(second > first, "user id {first} was handed out again");
}

/// Signs a new person up through the seed's join link (`/join/<join code>`) with a fresh
/// client: the form's page for its CSRF token, then the form with `name`, `email` and a valid
/// password. The answer of the post (302 when the account was created).
async fn sign_up_with_the_join_code(
    server: &TestServer,
    name: &str,
    email: &str,
) -> common::Response {
    let mut v = server.client();
    let page = v.get("/join/hRt7-Q2mK-9wXe").await;
    let token = common::csrf_meta(&page.body);
    let body = common::form(&[
        ("user[name]", name),
        ("user[email_address]", email),
        ("user[password]", "a long enough password"),
        ("authenticity_token", &token),
    ]);
    v.post_form("/join/hRt7-Q2mK-9wXe", &body, &[]).await
}
