//! Hostile and careless clients: message, subscription, connection and request limits with
//! their documented answers, and the security rules (CSRF everywhere, cookie flags, escaping,
//! deactivation and bans).

use crate::common;

use std::time::Duration;

use common::{
    confirm, connect_as, connect_with, form, reject, subscribe_cmd, text, TestServer, Ws, WsEvent,
    PROTOCOLS,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const T: Duration = Duration::from_secs(10);
const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";

/// Polls `done` until it holds (the server reacts asynchronously), failing after a while.
async fn eventually(mut done: impl FnMut() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("condition not reached");
}

#[tokio::test]
async fn a_message_of_exactly_the_limit_is_read_and_one_byte_more_closes_with_1009() {
    let server = TestServer::start_with(|c| c.max_message_bytes = 64 * 1024).await;
    let (_c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    let id = r#"{"channel":"HeartbeatChannel"}"#;
    let mut cmd = subscribe_cmd(id);
    cmd.push_str(&" ".repeat(64 * 1024 - cmd.len()));
    ws.send_text(&cmd).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(id)));
    cmd.push(' ');
    ws.send_text(&cmd).await;
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1009)));
}

#[tokio::test]
async fn the_default_limit_is_one_mebibyte_in_one_frame() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    ws.send_frame(0x1, true, &vec![b' '; 1024 * 1024 + 1]).await;
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1009)));
}

#[tokio::test]
async fn a_message_split_into_small_fragments_is_bounded_as_a_whole() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    // 17 fragments of 64 KiB: each far below the limit, together past 1 MiB.
    let chunk = vec![b' '; 64 * 1024];
    ws.send_frame(0x1, false, &chunk).await;
    for _ in 0..16 {
        ws.send_frame(0x0, false, &chunk).await;
    }
    ws.send_frame(0x0, true, b"{}").await;
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1009)));
}

#[tokio::test]
async fn invalid_utf8_closes_with_1007_in_one_frame_or_across_fragments() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    ws.send_frame(0x1, true, b"{\"command\":\"\xff\"}").await;
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1007)));

    let (_c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    ws.send_frame(0x1, false, b"{\"command\":\"caf\xc3").await;
    ws.send_frame(0x0, true, b"(\"}").await;
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1007)));
}

#[tokio::test]
async fn the_subscription_past_the_limit_is_rejected() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    let identifier = |n: usize| format!(r#"{{"channel":"HeartbeatChannel","n":{n}}}"#);
    for n in 0..64 {
        ws.send_text(&subscribe_cmd(&identifier(n))).await;
        assert_eq!(ws.next_non_ping(T).await, text(&confirm(&identifier(n))));
    }
    ws.send_text(&subscribe_cmd(&identifier(64))).await;
    assert_eq!(ws.next_non_ping(T).await, text(&reject(&identifier(64))));
    // Unsubscribing frees a place.
    ws.send_text(
        &serde_json::json!({"command": "unsubscribe", "identifier": identifier(0)}).to_string(),
    )
    .await;
    ws.send_text(&subscribe_cmd(&identifier(64))).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(&identifier(64))));
}

#[tokio::test]
async fn the_subscription_limit_is_configurable() {
    let server = TestServer::start_with(|c| c.max_subscriptions = 2).await;
    let (_c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    let ids = [
        r#"{"channel":"HeartbeatChannel"}"#,
        r#"{"channel":"ReadRoomsChannel"}"#,
        r#"{"channel":"UnreadRoomsChannel"}"#,
    ];
    for id in &ids[..2] {
        ws.send_text(&subscribe_cmd(id)).await;
        assert_eq!(ws.next_non_ping(T).await, text(&confirm(id)));
    }
    ws.send_text(&subscribe_cmd(ids[2])).await;
    assert_eq!(ws.next_non_ping(T).await, text(&reject(ids[2])));
}

#[tokio::test]
async fn upgrades_past_the_connection_limit_get_503() {
    let server = TestServer::start_with(|c| c.max_connections = 2).await;
    let c = server.signed_in(DAVID, SECRET).await;
    let first = connect_with(&server, &c).await;
    let _second = connect_with(&server, &c).await;
    let third = Ws::connect(
        server.addr,
        Some(&c.cookie_header()),
        Some(&server.origin()),
        Some(PROTOCOLS),
    )
    .await;
    assert_eq!(third.status, 503);
    assert_eq!(third.header("retry-after").as_deref(), Some("5"));
    // Plain HTTP is not affected.
    assert_eq!(server.client().get("/up").await.status, 200);
    // A closed connection frees its place.
    drop(first);
    let state = server.state.clone();
    eventually(|| state.sockets.open() < 2).await;
    let _again = connect_with(&server, &c).await;
}

#[tokio::test]
async fn a_request_whose_headers_drip_is_dropped_at_the_header_timeout() {
    let server = TestServer::start_with(|c| c.header_timeout = 1).await;
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(b"GET /up HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // One header byte every 100 ms: each arrives well within any per-read timeout, the whole
    // block never completes. The server must give up on its own.
    let drip = async {
        for _ in 0..200 {
            if stream.write_all(b"X").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(10), drip).await;
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
    assert!(
        read.is_ok(),
        "the server still holds a connection that never finished its headers"
    );
    let head = String::from_utf8_lossy(&rest);
    assert!(!head.contains("200 OK"), "{head}");
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_dropped_at_the_header_timeout() {
    let server = TestServer::start_with(|c| c.header_timeout = 1).await;
    let mut idle = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), idle.read_to_end(&mut rest)).await;
    assert!(read.is_ok(), "the server still holds an idle connection");
}

#[tokio::test]
async fn a_request_whose_body_drips_gets_408() {
    let server = TestServer::start_with(|c| c.body_timeout = 1).await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    let before: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    let body = form(&[("message[body]", "slow"), ("authenticity_token", &csrf)]);
    let mut stream = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /rooms/1/messages HTTP/1.1\r\nHost: x\r\nCookie: {}\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n",
        c.cookie_header(),
        body.len() + 100
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(15), async {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stream.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            response.extend_from_slice(&chunk[..n]);
            if response.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
    })
    .await;
    let response = String::from_utf8_lossy(&response);
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    let after: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(after, before);
}

#[tokio::test]
async fn every_state_changing_route_needs_the_csrf_token() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let count = |sql: &'static str| {
        let pool = server.state.db.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let messages = count("SELECT COUNT(*) FROM messages").await;
    let boosts = count("SELECT COUNT(*) FROM boosts").await;
    let sessions = count("SELECT COUNT(*) FROM sessions").await;
    let active = count("SELECT COUNT(*) FROM users WHERE status = 'active'").await;
    let message_id: i64 =
        sqlx::query_scalar("SELECT id FROM messages WHERE room_id = 1 AND creator_id = 1 LIMIT 1")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    let routes = [
        ("POST", "/session".to_owned(), "email_address=x&password=y"),
        ("DELETE", "/session".to_owned(), ""),
        (
            "POST",
            "/rooms/1/messages".to_owned(),
            "message%5Bbody%5D=x",
        ),
        (
            "PATCH",
            format!("/rooms/1/messages/{message_id}"),
            "message%5Bbody%5D=x",
        ),
        (
            "PUT",
            format!("/rooms/1/messages/{message_id}"),
            "message%5Bbody%5D=x",
        ),
        ("DELETE", format!("/rooms/1/messages/{message_id}"), ""),
        (
            "POST",
            format!("/messages/{message_id}/boosts"),
            "boost%5Bcontent%5D=x",
        ),
        ("PATCH", "/users/2".to_owned(), "user%5Bstatus%5D=banned"),
    ];
    for (method, path, body) in &routes {
        for token in [None, Some("forged")] {
            let mut body = body.to_string();
            if let Some(t) = token {
                body.push_str(&format!("&authenticity_token={t}"));
            }
            let r = c
                .request(
                    method,
                    path,
                    &[("Content-Type", "application/x-www-form-urlencoded")],
                    body.as_bytes(),
                )
                .await;
            assert_eq!(r.status, 422, "{method} {path} without a valid token");
        }
        // The `_method` override goes through the same check.
        if *method != "POST" {
            let body = format!("_method={}&{body}", method.to_lowercase());
            let r = c.post_form(path, &body, &[]).await;
            assert_eq!(r.status, 422, "POST _method={method} {path}");
        }
    }
    assert_eq!(count("SELECT COUNT(*) FROM messages").await, messages);
    assert_eq!(count("SELECT COUNT(*) FROM boosts").await, boosts);
    assert_eq!(count("SELECT COUNT(*) FROM sessions").await, sessions);
    assert_eq!(
        count("SELECT COUNT(*) FROM users WHERE status = 'active'").await,
        active
    );
}

#[tokio::test]
async fn production_cookies_are_secure_and_http_only() {
    // A production server starts empty: its first page is the first-run form.
    let server = TestServer::start_with(|c| c.production = true).await;
    let mut c = server.client();
    let page = c.get("/first_run").await;
    let csrf_cookie = page
        .headers_named("set-cookie")
        .into_iter()
        .find(|s| s.starts_with("_hearth_session="))
        .expect("the CSRF cookie")
        .to_owned();
    assert!(
        csrf_cookie.contains("; Secure") && csrf_cookie.contains("HttpOnly"),
        "{csrf_cookie}"
    );
    let token = common::csrf_meta(&page.body);
    let r = c
        .post_form(
            "/first_run",
            &form(&[
                ("user[name]", "Ada"),
                ("user[email_address]", "ada@example.org"),
                ("user[password]", "a long new password"),
                ("authenticity_token", &token),
            ]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let session = r
        .headers_named("set-cookie")
        .into_iter()
        .find(|s| s.starts_with("session_token="))
        .unwrap()
        .to_owned();
    assert!(
        session.contains("; Secure")
            && session.contains("HttpOnly")
            && session.contains("SameSite=Lax"),
        "{session}"
    );
}

#[tokio::test]
async fn production_mode_has_no_built_in_secret_key_base() {
    let dir = common::temp_dir("prod");
    let mut config = hearth::config::Config::for_tests(&dir);
    config.production = true;
    config.secret_key_base = None;
    let err = hearth::state::secret_key_base(&config).unwrap_err();
    assert!(err.to_string().contains("SECRET_KEY_BASE"), "{err}");
    assert!(hearth::app::Server::bind(config.clone()).await.is_err());
    assert!(!dir.join("secret_key_base").exists());
    // An empty value counts as missing.
    config.secret_key_base = Some(String::new().into());
    assert!(hearth::state::secret_key_base(&config).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn hostile_user_names_and_bodies_are_escaped_in_pages_and_frames() {
    let server = TestServer::start().await;
    let name = r#"<script>alert("name")</script>"#;
    sqlx::query("UPDATE users SET name = ? WHERE id = 1")
        .bind(name)
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    let (mut c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    let (_, html) = c.room(1).await;
    assert!(
        !html.contains("<script>alert"),
        "raw user name in the room page"
    );
    let room = hearth::db::rooms::find(&server.state.db.pool, 1)
        .await
        .unwrap()
        .unwrap();
    let signed = server
        .state
        .keys
        .signer
        .sign(&hearth::streams::room_messages("campfire", &room));
    let id = serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed})
        .to_string();
    ws.send_text(&subscribe_cmd(&id)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(&id)));
    let body = r#"<img src=x onerror="alert('body')"> & </turbo-stream>"#;
    let (csrf, _) = c.room(1).await;
    let r = c.post_message(1, body, "cid-hostile", &csrf).await;
    assert!(r.status == 200 || r.status == 302, "{}", r.status);
    let (_, html) = c.room(1).await;
    for raw in ["<script>alert", "<img src=x", "& </turbo-stream>"] {
        assert!(!html.contains(raw), "raw {raw:?} in the room page");
    }
    assert!(html.contains("&lt;script&gt;") || html.contains("&#60;script&#62;"));
    let frame = loop {
        match ws.next_non_ping(T).await {
            Some(WsEvent::Text(t)) if t.contains("cid-hostile") || t.contains("onerror") => {
                break t
            }
            Some(WsEvent::Text(_)) => {}
            other => panic!("no broadcast: {other:?}"),
        }
    };
    // The frame is JSON whose HTML payload has the body and the name escaped once.
    let value: serde_json::Value = serde_json::from_str(&frame).unwrap();
    let html = value["message"].as_str().unwrap_or_default().to_owned();
    assert!(!html.contains("<img src=x"), "{html}");
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(!html.contains("& </turbo-stream>"), "{html}");
    assert!(
        html.contains("&lt;img src=x") || html.contains("&#60;img src=x"),
        "{html}"
    );
    assert!(
        html.contains("&lt;script&gt;alert") || html.contains("&#60;script&#62;alert"),
        "{html}"
    );
}

#[tokio::test]
async fn deactivated_and_banned_users_lose_their_sessions_and_connections() {
    let server = TestServer::start().await;
    let mut admin = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = admin.room(1).await;
    for (email, status) in [
        ("jason@example.com", "deactivated"),
        ("jz@example.com", "banned"),
    ] {
        let (victim, mut ws) = connect_as(&server, email, SECRET).await;
        let user_id: i64 = sqlx::query_scalar("SELECT id FROM users WHERE email_address = ?")
            .bind(email)
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
        let r = admin
            .post_form(
                &format!("/users/{user_id}"),
                &form(&[
                    ("_method", "patch"),
                    ("user[status]", status),
                    ("authenticity_token", &csrf),
                ]),
                &[],
            )
            .await;
        assert_eq!(r.status, 204, "{}", r.body);
        assert_eq!(
            ws.next_non_ping(T).await,
            text(r#"{"type":"disconnect","reason":"remote","reconnect":false}"#)
        );
        assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1000)));
        // The old cookie opens neither a page nor a cable connection…
        let mut old = server.client();
        old.cookies = victim.cookies.clone();
        let page = old.get("/rooms/1").await;
        assert_eq!(page.status, 302);
        let mut again = Ws::connect(
            server.addr,
            Some(&victim.cookie_header()),
            Some(&server.origin()),
            Some(PROTOCOLS),
        )
        .await;
        assert_eq!(
            again.next(T).await,
            text(r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#)
        );
        // …and the password no longer signs in.
        assert_eq!(server.client().login(email, SECRET).await.status, 401);
    }
}

#[tokio::test]
async fn only_administrators_change_a_users_status() {
    let server = TestServer::start().await;
    let mut member = server.signed_in("jason@example.com", SECRET).await;
    let (csrf, _) = member.room(1).await;
    let r = member
        .post_form(
            "/users/1",
            &form(&[
                ("_method", "patch"),
                ("user[status]", "banned"),
                ("authenticity_token", &csrf),
            ]),
            &[],
        )
        .await;
    assert_eq!(r.status, 403);
    let status: String = sqlx::query_scalar("SELECT status FROM users WHERE id = 1")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(status, "active");
}

#[tokio::test]
async fn a_posts_room_touch_never_moves_back() {
    // Concurrent posts commit in any order; the room's updated_at must stay at least the
    // newest message's time (found by the SIGKILL run in tests/suite/process.rs).
    let server = TestServer::start().await;
    let later = hearth::db::now_ms() + 60_000;
    sqlx::query("UPDATE rooms SET updated_at = ? WHERE id = 1")
        .bind(later)
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    hearth::db::messages::create(
        &server.state.db.pool,
        1,
        1,
        "David",
        "touch-1",
        "<div>x</div>",
    )
    .await
    .unwrap();
    let touched: i64 = sqlx::query_scalar("SELECT updated_at FROM rooms WHERE id = 1")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(touched, later);
}

/// Sends `request` as is on a new connection and returns the response head (status line and
/// headers), read until the blank line or the end of the stream.
async fn raw_head(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout(T, stream.read(&mut chunk)).await {
            Ok(Ok(0) | Err(_)) | Err(_) => break,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn cable_request(
    server: &TestServer,
    http: &str,
    version: Option<&str>,
    key: Option<&str>,
    origin: &str,
) -> Vec<u8> {
    let mut req = format!(
        "GET /cable {http}\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Origin: {origin}\r\nSec-WebSocket-Protocol: {PROTOCOLS}\r\n",
        server.addr
    );
    if let Some(v) = version {
        req.push_str(&format!("Sec-WebSocket-Version: {v}\r\n"));
    }
    if let Some(k) = key {
        req.push_str(&format!("Sec-WebSocket-Key: {k}\r\n"));
    }
    req.push_str("\r\n");
    req.into_bytes()
}

fn status_of(head: &str) -> u16 {
    head.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?}"))
}

#[tokio::test]
async fn broken_websocket_handshakes_are_refused_before_any_101() {
    let server = TestServer::start().await;
    let origin = server.origin();
    let key = Some("dGhlIHNhbXBsZSBub25jZQ==");
    // RFC 6455 §4.1: the handshake is HTTP/1.1 or higher.
    let head = raw_head(
        server.addr,
        &cable_request(&server, "HTTP/1.0", Some("13"), key, &origin),
    )
    .await;
    assert_eq!(status_of(&head), 400, "{head}");
    // §4.2.2: another version gets 426 and the version the server speaks.
    for version in ["8", "14", "13, 8"] {
        let head = raw_head(
            server.addr,
            &cable_request(&server, "HTTP/1.1", Some(version), key, &origin),
        )
        .await;
        assert_eq!(status_of(&head), 426, "version {version}: {head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("\r\nsec-websocket-version: 13\r\n"),
            "{head}"
        );
    }
    // §4.2.1: the key is base64 of 16 bytes.
    for bad_key in [
        None,
        Some("short"),
        Some("dGhlIHNhbXBsZSBub25jZQ"),
        Some("not base64 at all!!!!!=="),
    ] {
        let head = raw_head(
            server.addr,
            &cable_request(&server, "HTTP/1.1", Some("13"), bad_key, &origin),
        )
        .await;
        assert_eq!(status_of(&head), 400, "key {bad_key:?}: {head}");
    }
    // Rails' 404 stays for a plain GET and for a bad Origin.
    let plain = server.client().get("/cable").await;
    assert_eq!((plain.status, plain.body.as_str()), (404, "Page not found"));
    let head = raw_head(
        server.addr,
        &cable_request(&server, "HTTP/1.1", Some("13"), key, "http://evil.example"),
    )
    .await;
    assert_eq!(status_of(&head), 404, "{head}");
    // And a valid handshake still upgrades.
    let c = server.signed_in(DAVID, SECRET).await;
    connect_with(&server, &c).await;
}

#[tokio::test]
async fn a_foreign_non_ascii_cookie_does_not_sign_anyone_out() {
    let server = TestServer::start().await;
    let mut c = server.client();
    // Set by another app on the same host, before Hearth's own cookies: UTF-8 bytes, a
    // duplicate name, a quoted value, stray separators.
    c.cookies.insert(0, ("pref".into(), "café".into()));
    c.cookies
        .insert(1, ("theme".into(), "\"dark\";; ;x".into()));
    // Signing in works (the CSRF cookie is read back).
    let r = c.login(DAVID, SECRET).await;
    assert_eq!(r.status, 302, "{}", r.body);
    // The session is read: the room page, not the sign-in redirect.
    let page = c.get("/rooms/1").await;
    assert_eq!(page.status, 200, "{:?}", page.header("location"));
    // A second copy of the session cookie after the first does not replace it.
    c.cookies.push(("session_token".into(), "forged".into()));
    assert_eq!(c.get("/rooms/1").await.status, 200);
    // The cable identifies the user through the same parser.
    let ws = connect_with(&server, &c).await;
    drop(ws);
}

#[tokio::test]
async fn the_sign_in_limit_counts_the_forwarded_client_behind_a_trusted_proxy_only() {
    async fn attempt(server: &TestServer, header: (&str, &str)) -> u16 {
        let mut c = server.client();
        let page = c.get("/session/new").await;
        let body = form(&[
            ("email_address", DAVID),
            ("password", "wrong-password"),
            ("authenticity_token", &common::csrf_meta(&page.body)),
        ]);
        c.post_form("/session", &body, &[header]).await.status
    }
    let behind_proxy = TestServer::start_with(|c| {
        c.login_rate_limit = 2;
        c.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    })
    .await;
    let a = ("X-Forwarded-For", "198.51.100.1, 203.0.113.1");
    assert_eq!(attempt(&behind_proxy, a).await, 401);
    assert_eq!(attempt(&behind_proxy, a).await, 401);
    assert_eq!(attempt(&behind_proxy, a).await, 429);
    // Another client behind the same proxy has its own budget, also when the client forges
    // the left part of the chain.
    let b = ("X-Forwarded-For", "203.0.113.1, 203.0.113.2");
    assert_eq!(attempt(&behind_proxy, b).await, 401);
    let c = ("Forwarded", "for=203.0.113.3;proto=https");
    assert_eq!(attempt(&behind_proxy, c).await, 401);

    // Without trusted proxies the headers are the client's word and count for nothing.
    let direct = TestServer::start_with(|c| c.login_rate_limit = 2).await;
    for (n, ip) in ["203.0.113.7", "203.0.113.8", "203.0.113.9"]
        .iter()
        .enumerate()
    {
        let expected = if n < 2 { 401 } else { 429 };
        assert_eq!(attempt(&direct, ("X-Forwarded-For", ip)).await, expected);
    }
}

#[tokio::test]
async fn an_unknown_email_takes_as_long_as_a_wrong_password() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let page = c.get("/session/new").await;
    let token = common::csrf_meta(&page.body);
    let timed = |email: &'static str| {
        let body = form(&[
            ("email_address", email),
            ("password", "wrong-password"),
            ("authenticity_token", &token),
        ]);
        let mut c = c.clone();
        async move {
            let started = std::time::Instant::now();
            let r = c.post_form("/session", &body, &[]).await;
            assert_eq!(r.status, 401);
            started.elapsed()
        }
    };
    // Warm both paths once, then take medians of alternating attempts.
    timed("nobody@example.com").await;
    timed(DAVID).await;
    let (mut unknown, mut known) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        unknown.push(timed("nobody@example.com").await);
        known.push(timed(DAVID).await);
    }
    unknown.sort();
    known.sort();
    let (unknown, known) = (unknown[2], known[2]);
    eprintln!("sign-in medians: unknown e-mail {unknown:?}, wrong password {known:?}");
    assert!(
        unknown.as_secs_f64() >= 0.5 * known.as_secs_f64(),
        "unknown e-mail answered in {unknown:?}, a wrong password in {known:?}"
    );
}

/// Posts a form with a fresh CSRF token (from the new-room page), `_method` for other verbs.
async fn send_form(
    c: &mut common::Client,
    method: &str,
    path: &str,
    pairs: &[(&str, &str)],
) -> common::Response {
    let page = c.get("/rooms/opens/new").await;
    let token = common::csrf_meta(&page.body);
    let mut all: Vec<(&str, &str)> = vec![("authenticity_token", &token)];
    if method != "POST" {
        all.push(("_method", method));
    }
    all.extend_from_slice(pairs);
    c.post_form(path, &form(&all), &[]).await
}

/// A direct room of Jason (2) and JZ (3) holding one message; returns (room id, message id).
async fn a_direct_message_of_others(server: &TestServer) -> (i64, i64) {
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let r = send_form(&mut jason, "POST", "/rooms/directs", &[("user_ids[]", "3")]).await;
    assert_eq!(r.status, 302, "{}", r.body);
    let room: i64 = r
        .header("location")
        .and_then(|l| l.strip_prefix("/rooms/"))
        .and_then(|id| id.parse().ok())
        .expect("a room location");
    let (csrf, _) = jason.room(room).await;
    let posted = jason
        .post_message(room, "just between us", "private-dm-1", &csrf)
        .await;
    assert_eq!(posted.status, 200, "{}", posted.body);
    let id: i64 =
        sqlx::query_scalar("SELECT id FROM messages WHERE client_message_id = 'private-dm-1'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    (room, id)
}

#[tokio::test]
async fn a_paging_cursor_from_another_room_or_none_answers_404() {
    let server = TestServer::start().await;
    let (direct, foreign) = a_direct_message_of_others(&server).await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    // David is not in the direct room: its message is no cursor of room 1.
    for query in ["before", "after"] {
        let r = david
            .get(&format!("/rooms/1/messages?{query}={foreign}"))
            .await;
        assert_eq!(r.status, 404, "{query}={foreign}: {}", r.body);
        // An id that names no message at all: 404 as well (Campfire's `find`).
        let r = david
            .get(&format!("/rooms/1/messages?{query}=999999"))
            .await;
        assert_eq!(r.status, 404, "{query}=999999");
    }
    // The room itself stays hidden, and its message's own room pages it for its members.
    assert_eq!(
        david
            .get(&format!("/rooms/{direct}/messages?before={foreign}"))
            .await
            .status,
        404
    );
    let first_of_room_1: i64 = sqlx::query_scalar("SELECT MIN(id) FROM messages WHERE room_id = 1")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(
        david
            .get(&format!("/rooms/1/messages?before={first_of_room_1}"))
            .await
            .status,
        204
    );
    assert_eq!(
        david
            .get(&format!("/rooms/1/messages?after={first_of_room_1}"))
            .await
            .status,
        200
    );
    // The bot API scopes its cursor the same way.
    let r = david
        .get(&format!(
            "/rooms/1/5-bNd3rB0tK3y7/messages?before={foreign}"
        ))
        .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn a_client_message_id_of_another_message_is_refused() {
    let server = TestServer::start().await;
    let pool = &server.state.db.pool;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    assert_eq!(
        david
            .post_message(1, "mine", "davids-own-id", &csrf)
            .await
            .status,
        200
    );
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM messages")
            .fetch_one(pool)
            .await
            .unwrap()
    };
    let before = count().await;
    // Another member posts with David's id: refused, nothing stored, David's element stays his.
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let (csrf, _) = jason.room(1).await;
    let r = jason
        .post_message(1, "hijack", "davids-own-id", &csrf)
        .await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(count().await, before);
    let owners: Vec<i64> = sqlx::query_scalar(
        "SELECT creator_id FROM messages WHERE client_message_id = 'davids-own-id'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(owners, vec![1]);
    // A seeded message's id is refused the same way, and a fresh id still posts.
    let seeded: String = sqlx::query_scalar(
        "SELECT client_message_id FROM messages WHERE creator_id = 1 AND room_id = 1 LIMIT 1",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(
        jason.post_message(1, "again", &seeded, &csrf).await.status,
        422
    );
    assert_eq!(
        jason
            .post_message(1, "fine", "jasons-id", &csrf)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn pages_carry_rails_default_security_headers() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let mut david = server.signed_in(DAVID, SECRET).await;
    for r in [
        c.get("/session/new").await,
        david.get("/rooms/1").await,
        c.get("/nowhere").await,
    ] {
        assert_eq!(r.header("x-frame-options"), Some("SAMEORIGIN"), "{r:?}");
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(
            r.header("referrer-policy"),
            Some("strict-origin-when-cross-origin")
        );
    }
}

#[tokio::test]
async fn the_csrf_secret_rotates_at_sign_in_and_sign_out() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let page = c.get("/session/new").await;
    let before_token = common::csrf_meta(&page.body);
    let before_cookie = c.cookie("_hearth_session").map(str::to_owned);
    assert!(before_cookie.is_some());
    let body = form(&[
        ("email_address", DAVID),
        ("password", SECRET),
        ("authenticity_token", &before_token),
    ]);
    assert_eq!(c.post_form("/session", &body, &[]).await.status, 302);
    assert_ne!(
        c.cookie("_hearth_session").map(str::to_owned),
        before_cookie
    );
    // A token from before the sign-in no longer works; one from a page after it does.
    let r = c
        .post_message(1, "with an old token", "old-token-1", &before_token)
        .await;
    assert_eq!(r.status, 422, "{}", r.body);
    let (token, _) = c.room(1).await;
    assert_eq!(
        c.post_message(1, "with a new token", "new-token-1", &token)
            .await
            .status,
        200
    );
    // Sign-out rotates it again.
    let signed_in_cookie = c.cookie("_hearth_session").map(str::to_owned);
    let out = form(&[("_method", "delete"), ("authenticity_token", &token)]);
    assert_eq!(c.post_form("/session", &out, &[]).await.status, 302);
    assert_ne!(
        c.cookie("_hearth_session").map(str::to_owned),
        signed_in_cookie
    );
    let body = form(&[
        ("email_address", DAVID),
        ("password", SECRET),
        ("authenticity_token", &token),
    ]);
    assert_eq!(c.post_form("/session", &body, &[]).await.status, 422);
}

#[tokio::test]
async fn metrics_can_require_a_bearer_token() {
    let server =
        TestServer::start_with(|c| c.metrics_token = Some("m3trics-t0ken".to_owned().into())).await;
    let mut c = server.client();
    let r = c.get("/metrics").await;
    assert_eq!(r.status, 401);
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let wrong = c
        .request("GET", "/metrics", &[("Authorization", "Bearer nope")], b"")
        .await;
    assert_eq!(wrong.status, 401);
    let right = c
        .request(
            "GET",
            "/metrics",
            &[("Authorization", "Bearer m3trics-t0ken")],
            b"",
        )
        .await;
    assert_eq!(right.status, 200);
    assert!(right.body.contains("hearth_"), "{}", right.body);
    // Without the setting it stays open (the default).
    let open = TestServer::start().await;
    assert_eq!(open.client().get("/metrics").await.status, 200);
}

#[tokio::test]
async fn a_bot_key_never_reaches_the_log_even_on_a_malformed_route() {
    let (log, _capturing) = common::captured_log();
    let server = TestServer::start().await;
    let key = "5-bNd3rB0tK3y7";
    let mut c = server.client();
    // Tests running beside this one set and drop their own per-thread subscribers, and tracing
    // caches each call site's interest: one first reached while no interested subscriber was
    // registered stays off until the cache is rebuilt. Rebuild it, and go again if the capture
    // still caught nothing (the check below needs a log that was really captured).
    let mut text = String::new();
    for _attempt in 0..3 {
        tracing::callsite::rebuild_interest_cache();
        for path in [
            format!("/rooms/1/{key}/messages"),
            format!("/rooms/1/{key}/messages/x"),
            format!("/rooms/1/{key}/messages/1/edit"),
            format!("/rooms/x/{key}/messages"),
            format!("/rooms/1/{key}"),
        ] {
            for method in ["POST", "PATCH", "DELETE", "GET"] {
                c.request(method, &path, &[], b"hi").await;
            }
        }
        text = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
        if text.contains("CSRF token missing") {
            break;
        }
    }
    assert!(text.contains("CSRF token missing"), "the log was captured");
    assert!(!text.contains(key), "the bot key is in the log:\n{text}");
    assert!(!text.contains("bNd3rB0tK3y7"));
}

#[tokio::test]
async fn one_user_cannot_take_every_connection() {
    let server = TestServer::start_with(|c| {
        c.max_connections = 10;
        c.max_connections_per_user = 3;
    })
    .await;
    let david = server.signed_in(DAVID, SECRET).await;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(connect_with(&server, &david).await);
    }
    // A second session of the same user counts against the same cap.
    let other_session = server.signed_in(DAVID, SECRET).await;
    for c in [&david, &other_session] {
        let refused = Ws::connect(
            server.addr,
            Some(&c.cookie_header()),
            Some(&server.origin()),
            Some(PROTOCOLS),
        )
        .await;
        assert_eq!(refused.status, 429, "{}", refused.response_head);
        assert_eq!(refused.header("retry-after").as_deref(), Some("5"));
    }
    // Everyone else still gets in.
    let (_jason, _ws) = connect_as(&server, "jason@example.com", SECRET).await;
    // A closed connection gives its place back.
    drop(open.pop());
    let state = server.state.clone();
    eventually(|| state.sockets.open() < 4).await;
    let _again = connect_with(&server, &other_session).await;
}

#[tokio::test]
async fn a_subscription_with_an_oversized_identifier_is_rejected() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    let long = format!(
        r#"{{"channel":"HeartbeatChannel","pad":"{}"}}"#,
        "x".repeat(64 * 1024)
    );
    ws.send_text(&subscribe_cmd(&long)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&reject(&long)));
    // Just within the bound (1,024 bytes) is fine.
    let head = r#"{"channel":"HeartbeatChannel","pad":""#;
    let fits = format!("{head}{}\"}}", "y".repeat(1024 - head.len() - 2));
    assert_eq!(fits.len(), 1024);
    ws.send_text(&subscribe_cmd(&fits)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(&fits)));
}

#[tokio::test]
async fn a_flood_of_typing_notices_is_cut_to_the_rate() {
    let server = TestServer::start().await;
    let typing = r#"{"channel":"TypingNotificationsChannel","room_id":1}"#;
    let (_c1, mut david) = connect_as(&server, DAVID, SECRET).await;
    let (_c2, mut jason) = connect_as(&server, "jason@example.com", SECRET).await;
    for ws in [&mut david, &mut jason] {
        ws.send_text(&subscribe_cmd(typing)).await;
        assert_eq!(ws.next_non_ping(T).await, text(&confirm(typing)));
    }
    let start = serde_json::json!({"command": "message", "identifier": typing, "data": r#"{"action":"start"}"#}).to_string();
    let began = std::time::Instant::now();
    for _ in 0..500 {
        david.send_text(&start).await;
    }
    let mut received = 0;
    while let Some(WsEvent::Text(t)) = jason.next_non_ping(Duration::from_millis(800)).await {
        if t.contains(r#""action":"start""#) {
            received += 1;
        }
    }
    let allowed = 2.0f64.mul_add(began.elapsed().as_secs_f64(), 5.0) + 1.0;
    assert!(received >= 1, "the first notices pass");
    assert!(
        f64::from(received) <= allowed,
        "{received} notices reached the other member (at most {allowed:.0} allowed)"
    );
}

/// Counts updates of memberships from now on (a trigger into a side table).
async fn count_membership_writes(pool: &sqlx::SqlitePool) {
    for sql in [
        "CREATE TABLE IF NOT EXISTS test_membership_writes (n INTEGER NOT NULL)",
        "INSERT INTO test_membership_writes VALUES (0)",
        "CREATE TRIGGER IF NOT EXISTS test_count_membership_writes AFTER UPDATE ON memberships \
         BEGIN UPDATE test_membership_writes SET n = n + 1; END",
    ] {
        sqlx::query(sql).execute(pool).await.unwrap();
    }
}

async fn membership_writes(pool: &sqlx::SqlitePool) -> i64 {
    sqlx::query_scalar("SELECT n FROM test_membership_writes")
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn presence_churn_is_coalesced_per_membership() {
    let server = TestServer::start().await;
    let pool = &server.state.db.pool;
    count_membership_writes(pool).await;
    let (_c, mut ws) = connect_as(&server, DAVID, SECRET).await;
    let presence = r#"{"channel":"PresenceChannel","room_id":1}"#;
    let unsubscribe =
        serde_json::json!({"command": "unsubscribe", "identifier": presence}).to_string();
    let action = |a: &str| {
        serde_json::json!({"command": "message", "identifier": presence, "data": format!(r#"{{"action":"{a}"}}"#)}).to_string()
    };
    let began = std::time::Instant::now();
    // Subscribe/unsubscribe churn, and absent/present/refresh churn on one subscription.
    for _ in 0..100 {
        ws.send_text(&subscribe_cmd(presence)).await;
        ws.send_text(&unsubscribe).await;
    }
    ws.send_text(&subscribe_cmd(presence)).await;
    for _ in 0..300 {
        ws.send_text(&action("absent")).await;
        ws.send_text(&action("present")).await;
        ws.send_text(&action("refresh")).await;
    }
    // Every command was applied once the heartbeat is confirmed (commands run in order).
    let heartbeat = r#"{"channel":"HeartbeatChannel"}"#;
    ws.send_text(&subscribe_cmd(heartbeat)).await;
    loop {
        match ws.next_non_ping(T).await {
            Some(WsEvent::Text(t)) if t == confirm(heartbeat) => break,
            Some(WsEvent::Text(_)) => {}
            other => panic!("{other:?}"),
        }
    }
    let elapsed = began.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let writes = membership_writes(pool).await;
    // A burst of 3, then one a second, plus the write still due when the churn stopped.
    let allowed = 3.0 + (elapsed + 1.5) + 1.0;
    assert!(
        (writes as f64) <= allowed,
        "{writes} membership writes for one membership in {elapsed:.2} s"
    );
    // And it ends in the state the churn left: subscribed and visible.
    let state = hearth::db::rooms::membership_state(pool, 1, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.0, 1);
    assert!(state.1.is_some());
}

#[tokio::test]
async fn one_tab_hidden_and_closed_never_overrides_another_open_tab() {
    let server = TestServer::start().await;
    let pool = &server.state.db.pool;
    let presence = r#"{"channel":"PresenceChannel","room_id":1}"#;
    let david = server.signed_in(DAVID, SECRET).await;
    let mut tab_a = connect_with(&server, &david).await;
    let mut tab_b = connect_with(&server, &david).await;
    for ws in [&mut tab_a, &mut tab_b] {
        ws.send_text(&subscribe_cmd(presence)).await;
        loop {
            match ws.next_non_ping(T).await {
                Some(WsEvent::Text(t)) if t == confirm(presence) => break,
                Some(WsEvent::Text(_)) => {}
                other => panic!("{other:?}"),
            }
        }
    }
    // Tab A goes hidden, then is closed (its unsubscribe runs as the socket ends).
    let absent = serde_json::json!({"command": "message", "identifier": presence, "data": r#"{"action":"absent"}"#}).to_string();
    tab_a.send_text(&absent).await;
    tab_a
        .send_text(
            &serde_json::json!({"command": "unsubscribe", "identifier": presence}).to_string(),
        )
        .await;
    drop(tab_a);
    let state = server.state.clone();
    eventually(|| state.sockets.open() == 1).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let (connections, connected_at, _) = hearth::db::rooms::membership_state(pool, 1, 1)
        .await
        .unwrap()
        .unwrap();
    assert!(connections >= 1, "tab B still counts");
    assert!(connected_at.is_some(), "David is still connected");
    // A post by someone else does not mark the room unread for David.
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let (csrf, _) = jason.room(1).await;
    assert_eq!(
        jason
            .post_message(1, "are you there?", "two-tabs-1", &csrf)
            .await
            .status,
        200
    );
    let unread = hearth::db::rooms::membership_state(pool, 1, 1)
        .await
        .unwrap()
        .unwrap()
        .2;
    assert_eq!(unread, None, "the room is not unread while tab B is open");
    // Closing tab B too: David is gone.
    drop(tab_b);
    eventually(|| state.sockets.open() == 0).await;
    let mut gone = false;
    for _ in 0..100 {
        let s = hearth::db::rooms::membership_state(pool, 1, 1)
            .await
            .unwrap()
            .unwrap();
        if s.0 == 0 && s.1.is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the last tab's close marks David gone");
}

/// A connect storm (every client of a restarted node at once) fits the listen queue: the
/// listener asks for a backlog of `hearth::app::LISTEN_BACKLOG` (the kernel caps it at
/// `net.core.somaxconn`), not the 128 a plain bind gets, which overflowed under 20,000
/// reconnecting clients.
#[tokio::test]
async fn the_listener_takes_a_backlog_for_connect_storms() {
    let server = TestServer::start().await;
    let somaxconn: u32 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .expect("somaxconn")
        .trim()
        .parse()
        .unwrap();
    let out = std::process::Command::new("ss")
        .args(["-ltnH", &format!("sport = :{}", server.addr.port())])
        .output()
        .expect("ss (iproute2) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    // LISTEN  <Recv-Q>  <Send-Q = the backlog>  <local address> ...
    let backlog: u32 = text
        .split_whitespace()
        .nth(2)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no listener in {text:?}"));
    assert_eq!(
        backlog,
        hearth::app::LISTEN_BACKLOG.min(somaxconn),
        "{text}"
    );
}
