//! End-to-end tests of the load generator against a small in-process Campfire stand-in.
//!
//! The mock speaks the contract the load generator is built for: `GET /session/new` with a
//! CSRF token bound to a session cookie, `POST /session` → 302 + `session_token`, a room page
//! and sidebar with `<turbo-cable-stream-source>` elements, `POST /rooms/1/messages` answering
//! a turbo-stream append, and `/cable` with welcome, confirmations and a broadcast of every
//! post to every subscribed client (plus an unread notice). Switches make it misbehave so the
//! checks can be seen to fail.

use base64::Engine;
use loadgen::campfire::{self, ExtraChannel, PrepareOptions};
use loadgen::cell::{run_cell, run_cell_with, CellOptions};
use loadgen::coordination::{self, Coordination, PostsRecord};
use loadgen::endpoint::Endpoint;
use loadgen::multi::{self, ListenResult};
use loadgen::sweep::campfire_target;
use loadgen::ws;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;

#[derive(Debug, Clone, Copy, Default)]
struct MockConfig {
    /// Leave the room's message stream off the room page and sidebar.
    omit_room_stream: bool,
    /// Answer every login with 429.
    rate_limited: bool,
    /// Send every broadcast twice to every client.
    duplicate: bool,
    /// Skip the broadcast for every 5th post.
    drop_some: bool,
}

struct Mock {
    cfg: MockConfig,
    tx: broadcast::Sender<String>,
    posts: AtomicU64,
}

fn signed(name: &str) -> String {
    let json = serde_json::to_string(name).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(json);
    // Entity-encode like Rails' tag helper may.
    format!(
        "{}--9f8e7d",
        b64.replace('=', "&#x3D;").replace('+', "&#43;")
    )
}

fn form_decode(s: &str) -> HashMap<String, String> {
    let dec = |x: &str| {
        let b = x.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < b.len() => {
                    out.push(u8::from_str_radix(&x[i + 1..i + 3], 16).unwrap());
                    i += 2;
                }
                c => out.push(c),
            }
            i += 1;
        }
        String::from_utf8(out).unwrap()
    };
    s.split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (dec(k), dec(v)))
        .collect()
}

fn cookie(headers: &HashMap<String, String>, name: &str) -> Option<String> {
    headers.get("cookie").and_then(|c| {
        c.split(';')
            .filter_map(|p| p.trim().split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
    })
}

fn response(status: &str, ctype: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{extra}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// An unmasked, final text frame.
fn server_frame(payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    ws::encode_server_frame(true, ws::OP_TEXT, payload, &mut v);
    v
}

/// Reads masked client frames from `buf`; returns text payloads and consumed bytes.
fn client_frames(buf: &[u8]) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let b = &buf[pos..];
        if b.len() < 2 {
            break;
        }
        assert_eq!(b[1] & 0x80, 0x80, "client frames must be masked");
        let (hl, len) = match b[1] & 0x7F {
            126 if b.len() >= 4 => (4, u16::from_be_bytes([b[2], b[3]]) as usize),
            127 if b.len() >= 10 => (
                10,
                u64::from_be_bytes(b[2..10].try_into().unwrap()) as usize,
            ),
            126 | 127 => break,
            n => (2, n as usize),
        };
        if b.len() < hl + 4 + len {
            break;
        }
        let mask = &b[hl..hl + 4];
        let payload: Vec<u8> = b[hl + 4..hl + 4 + len]
            .iter()
            .enumerate()
            .map(|(i, x)| x ^ mask[i % 4])
            .collect();
        if b[0] & 0x0F == 1 {
            out.push(String::from_utf8(payload).unwrap());
        }
        pos += hl + 4 + len;
    }
    (out, pos)
}

async fn cable(mock: Arc<Mock>, mut s: TcpStream, headers: HashMap<String, String>) {
    let key = headers["sec-websocket-key"].clone();
    if cookie(&headers, "session_token").is_none() {
        let _ = s
            .write_all(&response(
                "404 Not Found",
                "text/plain",
                "",
                "Page not found",
            ))
            .await;
        return;
    }
    let accept = loadgen::ws::accept_key(&key);
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: actioncable-v1-json\r\n\r\n"
    );
    let mut first = head.into_bytes();
    first.extend(server_frame(br#"{"type":"welcome"}"#));
    if s.write_all(&first).await.is_err() {
        return;
    }
    let mut rx = mock.tx.subscribe();
    let (mut room_id, mut unread_id, mut stream_id) =
        (None::<String>, None::<String>, None::<String>);
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 8192];
    loop {
        tokio::select! {
            r = s.read(&mut chunk) => {
                let Ok(n) = r else { return };
                if n == 0 { return; }
                buf.extend_from_slice(&chunk[..n]);
                let (texts, used) = client_frames(&buf);
                buf.drain(..used);
                let mut out = Vec::new();
                for t in texts {
                    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                    assert_eq!(v["command"], "subscribe");
                    let id = v["identifier"].as_str().unwrap().to_owned();
                    if id.contains("RoomMessagesChannel") { room_id = Some(id.clone()); }
                    if id.contains("UnreadRoomsChannel") { unread_id = Some(id.clone()); }
                    if id.contains("StreamChannel") { stream_id = Some(id.clone()); }
                    let confirm = serde_json::json!({"identifier": id, "type": "confirm_subscription"});
                    out.extend(server_frame(confirm.to_string().as_bytes()));
                }
                if !out.is_empty() && s.write_all(&out).await.is_err() { return; }
            }
            m = rx.recv() => {
                let Ok(m) = m else { return };
                let mut out = Vec::new();
                if let Some(json) = m.strip_prefix("S:") {
                    if let Some(id) = &stream_id {
                        let payload = format!(r#"{{"identifier":{},"message":{json}}}"#,
                            serde_json::to_string(id).unwrap());
                        out.extend(server_frame(payload.as_bytes()));
                        if s.write_all(&out).await.is_err() { return; }
                    }
                    continue;
                }
                let html = m;
                if let Some(id) = &room_id {
                    let payload = format!(r#"{{"identifier":{},"message":{}}}"#,
                        serde_json::to_string(id).unwrap(),
                        serde_json::to_string(&html).unwrap().replace('<', "\\u003c").replace('>', "\\u003e"));
                    let f = server_frame(payload.as_bytes());
                    out.extend_from_slice(&f);
                    if mock.cfg.duplicate { out.extend_from_slice(&f); }
                }
                if let Some(id) = &unread_id {
                    let payload = format!(r#"{{"identifier":{},"message":{{"roomId":1}}}}"#,
                        serde_json::to_string(id).unwrap());
                    out.extend(server_frame(payload.as_bytes()));
                }
                if s.write_all(&out).await.is_err() { return; }
            }
        }
    }
}

async fn handle(mock: Arc<Mock>, mut s: TcpStream) {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 16384];
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut rl = lines.next().unwrap().split(' ');
        let (method, path) = (rl.next().unwrap().to_owned(), rl.next().unwrap().to_owned());
        let headers: HashMap<String, String> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len: usize = headers
            .get("content-length")
            .map(|v| v.parse().unwrap())
            .unwrap_or(0);
        while buf.len() < head_end + 4 + len {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = String::from_utf8_lossy(&buf[head_end + 4..head_end + 4 + len]).into_owned();
        buf.drain(..head_end + 4 + len);
        if path == "/cable" {
            return cable(mock, s, headers).await;
        }
        let resp = route(&mock, &method, &path, &headers, &body);
        if s.write_all(&resp).await.is_err() {
            return;
        }
    }
}

fn route(
    mock: &Mock,
    method: &str,
    path: &str,
    h: &HashMap<String, String>,
    body: &str,
) -> Vec<u8> {
    let html = "text/html; charset=utf-8";
    let authed = cookie(h, "session_token");
    match (method, path) {
        ("GET", "/up") => response("200 OK", "text/plain", "", "ok"),
        ("POST", "/broadcast?stream=bench") => {
            let v: serde_json::Value = serde_json::from_str(body).unwrap();
            let _ = mock.tx.send(format!("S:{v}"));
            response(
                "202 Accepted",
                "application/json",
                "",
                r#"{"broadcast":"bench"}"#,
            )
        }
        ("GET", "/session/new") => {
            let sess = format!("s{}", rand::random::<u32>());
            let token = format!("csrf-{sess}+/=");
            let page = format!(
                r#"<html><head><meta name="csrf-token" content="{t}"></head><body><form action="/session" method="post"><input type="hidden" name="authenticity_token" value="{t}" autocomplete="off"><input name="email_address"></form></body></html>"#,
                t = token.replace('+', "&#43;").replace('=', "&#x3D;")
            );
            response(
                "200 OK",
                html,
                &format!("Set-Cookie: _hearth_session={sess}; path=/; HttpOnly\r\n"),
                &page,
            )
        }
        ("POST", "/session") => {
            if mock.cfg.rate_limited {
                return response("429 Too Many Requests", html, "", "slow down");
            }
            let f = form_decode(body);
            let sess = cookie(h, "_hearth_session").unwrap_or_default();
            if f.get("authenticity_token") != Some(&format!("csrf-{sess}+/=")) {
                return response("422 Unprocessable Entity", html, "", "csrf");
            }
            let email = f.get("email_address").cloned().unwrap_or_default();
            if f.get("password").map(String::as_str) != Some("password")
                || !email.starts_with("user")
            {
                return response("401 Unauthorized", html, "", "bad");
            }
            let uid = email
                .trim_start_matches("user")
                .split('@')
                .next()
                .unwrap()
                .to_owned();
            response("302 Found", html, &format!("Location: /\r\nSet-Cookie: session_token=tok{uid}; path=/; HttpOnly; SameSite=Lax\r\n"), "")
        }
        ("GET", "/rooms/1") if authed.is_some() => {
            let uid = authed.unwrap().trim_start_matches("tok").to_owned();
            let src = if mock.cfg.omit_room_stream {
                String::new()
            } else {
                format!(
                    r#"<turbo-cable-stream-source signed-stream-name="{}" channel="RoomMessagesChannel"></turbo-cable-stream-source>"#,
                    signed("Z2lkOi8vaGVhcnRoL1Jvb21zOjpPcGVuLzE:messages")
                )
            };
            let page = format!(
                r#"<html><head><meta name="csrf-token" content="room-csrf"><meta name="current-user-id" content="{uid}"></head><body><div id="messages_rooms_open_1" data-controller="maintain-scroll">{src}</div></body></html>"#
            );
            response("200 OK", html, "", &page)
        }
        ("GET", "/users/me/sidebar") if authed.is_some() => {
            let page = format!(
                r#"<turbo-cable-stream-source channel="Turbo::StreamsChannel" signed-stream-name="{}"></turbo-cable-stream-source><turbo-cable-stream-source channel="Turbo::StreamsChannel" signed-stream-name="{}"></turbo-cable-stream-source>"#,
                signed("rooms"),
                signed("Z2lkOi8vaGVhcnRoL1VzZXIvMQ:rooms")
            );
            response("200 OK", html, "", &page)
        }
        ("POST", "/rooms/1/messages") if authed.is_some() => {
            let f = form_decode(body);
            assert_eq!(
                f.get("authenticity_token").map(String::as_str),
                Some("room-csrf")
            );
            let cmid = f["message[client_message_id]"].clone();
            let text = f["message[body]"].clone();
            let stream = format!(
                r#"<turbo-stream action="append" target="messages_rooms_open_1"><template><div id="message_{cmid}" class="message" data-message-id="1"><div class="body">{text}</div>{pad}</div></template></turbo-stream>"#,
                pad = "p".repeat(8000)
            );
            let n = mock.posts.fetch_add(1, Ordering::SeqCst);
            if !(mock.cfg.drop_some && n % 5 == 4) {
                let _ = mock.tx.send(stream.clone());
            }
            response(
                "200 OK",
                "text/vnd.turbo-stream.html; charset=utf-8",
                "",
                &stream,
            )
        }
        (_, p) if p.starts_with("/rooms") || p.starts_with("/users") => {
            response("302 Found", html, "Location: /session/new\r\n", "")
        }
        _ => response("404 Not Found", "text/plain", "", "not found"),
    }
}

/// Starts the mock on its own thread; returns its base URL.
fn start_mock(cfg: MockConfig) -> String {
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            port_tx.send(listener.local_addr().unwrap().port()).unwrap();
            let (tx, _) = broadcast::channel(16_384);
            let mock = Arc::new(Mock {
                cfg,
                tx,
                posts: AtomicU64::new(0),
            });
            loop {
                let (s, _) = listener.accept().await.unwrap();
                tokio::spawn(handle(mock.clone(), s));
            }
        });
    });
    format!("http://127.0.0.1:{}", port_rx.recv().unwrap())
}

fn prepare_opts(users: usize) -> PrepareOptions {
    PrepareOptions {
        users,
        email_template: "user{i}@example.com".into(),
        password: "password".into(),
        room: 1,
        channels: ExtraChannel::parse_list("presence,heartbeat,unread").unwrap(),
        login_concurrency: 3,
    }
}

fn cell_opts(n: usize) -> CellOptions {
    CellOptions {
        n,
        duration: Duration::from_millis(700),
        posters: 2,
        window: 8,
        rate: None,
        drain: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(20),
        connect_concurrency: 16,
        settle: Duration::ZERO,
        body_bytes: 64,
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

fn run_against(cfg: MockConfig, n: usize, rate: Option<f64>) -> loadgen::report::CellResult {
    let url = start_mock(cfg);
    block_on(async move {
        let base = Endpoint::parse(&url).unwrap();
        let prepared = Rc::new(campfire::prepare(&base, &prepare_opts(5)).await.unwrap());
        assert_eq!(prepared.subscriptions_per_client, 4);
        assert_eq!(prepared.messages_target, "messages_rooms_open_1");
        let target = campfire_target("mock", &base, prepared, 16 * 1024, None);
        let mut opts = cell_opts(n);
        opts.rate = rate;
        run_cell(&target, &opts, 0, &|_| {}).await
    })
}

#[test]
fn a_clean_server_passes_every_check() {
    let r = run_against(MockConfig::default(), 25, None);
    assert!(r.ok, "{r:#?}");
    assert_eq!((r.ready, r.failed_connections, r.disconnected), (25, 0, 0));
    assert_eq!(r.subscriptions_per_client, 4);
    assert!(r.posted > 0);
    assert_eq!(r.complete, r.posted);
    assert_eq!(r.receipts, r.posted * 25);
    assert_eq!(r.expected_receipts, r.receipts);
    assert_eq!(
        (r.duplicates, r.out_of_order, r.order_divergent_clients),
        (0, 0, 0)
    );
    assert_eq!(r.post_errors, 0);
    // Every post also sends each client one unread notice.
    assert!(r.other_frames >= r.posted * 25);
    assert!(r.mean_frame_bytes > 8000.0);
    assert_eq!(r.post_to_all.count, r.posted);
    assert!(r.post_to_all.p50_ms >= r.post_to_first.p50_ms);
    assert!(r.deliveries_per_sec > 0.0 && r.delivered_msgs_per_sec > 0.0);
    assert_eq!(r.mode, "closed-loop");
}

/// `--deflate` against a server that agrees to no extension: the offer is declined, the plain
/// frames are read as usual, nothing fails.
#[test]
fn a_deflate_offer_the_server_declines_leaves_plain_frames() {
    let url = start_mock(MockConfig::default());
    let r = block_on(async move {
        let base = Endpoint::parse(&url).unwrap();
        let prepared = Rc::new(campfire::prepare(&base, &prepare_opts(3)).await.unwrap());
        let mut target = campfire_target("mock", &base, prepared, 16 * 1024, None);
        target.cable.deflate = true;
        run_cell(&target, &cell_opts(6), 0, &|_| {}).await
    });
    assert!(r.ok, "{r:#?}");
    assert_eq!(r.receipts, r.posted * 6);
    // Plain frames: more wire bytes per delivery than the post's own frame.
    assert!(r.wire_bytes_per_receipt > r.mean_frame_bytes, "{r:#?}");
}

#[test]
fn paced_mode_never_exceeds_the_rate() {
    let r = run_against(MockConfig::default(), 5, Some(40.0));
    assert!(r.ok, "{r:#?}");
    assert_eq!(r.mode, "paced");
    // 0.7 s at 40/s over 2 posters: each ticks every 50 ms (offsets 0 and 25 ms), so at most
    // 14 + 14 posts; a closed loop against this mock posts hundreds.
    assert!(r.posted >= 1 && r.posted <= 28, "posted {}", r.posted);
}

#[test]
fn a_paced_cell_writes_each_posts_steps_in_order_on_the_monotonic_clock() {
    let url = start_mock(MockConfig::default());
    let path = std::env::temp_dir().join(format!("loadgen-timeline-{}.txt", std::process::id()));
    let t0 = std::time::Instant::now();
    let r = block_on(async {
        let base = Endpoint::parse(&url).unwrap();
        let prepared = Rc::new(campfire::prepare(&base, &prepare_opts(5)).await.unwrap());
        let target = campfire_target("mock", &base, prepared, 16 * 1024, None);
        let mut opts = cell_opts(5);
        opts.rate = Some(40.0);
        let coord = Coordination {
            timeline_file: Some(path.clone()),
            ..Default::default()
        };
        run_cell_with(&target, &opts, 0, &|_| {}, &coord).await
    });
    let t1 = std::time::Instant::now();
    assert!(r.ok, "{r:#?}");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut lines = text.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("# seq sent wrote first_byte answered"));
    let rows: Vec<Vec<i128>> = lines
        .map(|l| l.split(' ').map(|f| f.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len() as u64, r.posted);
    // The file's instants were paired with the clock once, ours again: 1 ms of slack.
    let clock = coordination::MonoClock::now().unwrap();
    let (lo, hi) = (clock.ns(t0) - 1_000_000, clock.ns(t1) + 1_000_000);
    for (i, row) in rows.iter().enumerate() {
        let [seq, sent, wrote, first_byte, answered, first, last] = row[..] else {
            panic!("line {i}: {row:?}");
        };
        assert_eq!(seq, i as i128);
        // Every step happened, in this order, within this test's run.
        assert!(lo < sent && sent <= wrote && wrote <= first_byte && first_byte <= answered);
        assert!(sent <= first && first <= last && last < hi, "{row:?}");
    }
}

#[test]
fn duplicates_are_caught() {
    let r = run_against(
        MockConfig {
            duplicate: true,
            ..Default::default()
        },
        4,
        None,
    );
    assert!(!r.ok);
    assert!(r.duplicates >= r.posted * 4, "duplicates {}", r.duplicates);
    assert_eq!(r.complete, r.posted, "the first copies still complete");
}

#[test]
fn lost_broadcasts_make_the_cell_incomplete() {
    let url = start_mock(MockConfig {
        drop_some: true,
        ..Default::default()
    });
    let r = block_on(async move {
        let base = Endpoint::parse(&url).unwrap();
        let prepared = Rc::new(campfire::prepare(&base, &prepare_opts(2)).await.unwrap());
        let target = campfire_target("mock", &base, prepared, 16 * 1024, None);
        let mut opts = cell_opts(3);
        opts.drain = Duration::from_millis(300);
        opts.window = 0;
        run_cell(&target, &opts, 0, &|_| {}).await
    });
    assert!(!r.ok);
    assert!(!r.complete_eq_posted);
    assert!(r.complete < r.posted);
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("did not reach every client")));
}

#[test]
fn a_page_without_the_room_stream_refuses_to_run() {
    let url = start_mock(MockConfig {
        omit_room_stream: true,
        ..Default::default()
    });
    let err = block_on(async move {
        let base = Endpoint::parse(&url).unwrap();
        campfire::prepare(&base, &prepare_opts(1))
            .await
            .unwrap_err()
    });
    let text = format!("{err:#}");
    assert!(text.contains("refusing to run"), "{text}");
    assert!(text.contains("Turbo::StreamsChannel → rooms"), "{text}");
}

#[test]
fn rate_limited_logins_explain_the_fix() {
    let url = start_mock(MockConfig {
        rate_limited: true,
        ..Default::default()
    });
    let err = block_on(async move {
        let base = Endpoint::parse(&url).unwrap();
        campfire::prepare(&base, &prepare_opts(1))
            .await
            .unwrap_err()
    });
    let text = format!("{err:#}");
    assert!(text.contains("429"), "{text}");
    assert!(text.contains("--login-rate-limit 0"), "{text}");
    assert!(text.contains("10 logins per 3 minutes"), "{text}");
}

#[test]
fn wrong_passwords_are_reported_as_credentials() {
    let url = start_mock(MockConfig::default());
    let err = block_on(async move {
        let base = Endpoint::parse(&url).unwrap();
        let mut o = prepare_opts(1);
        o.password = "nope".into();
        campfire::prepare(&base, &o).await.unwrap_err()
    });
    assert!(format!("{err:#}").contains("401"), "{err:#}");
}

#[test]
fn sidebar_streams_add_subscriptions() {
    let url = start_mock(MockConfig::default());
    let prepared = block_on(async move {
        let base = Endpoint::parse(&url).unwrap();
        let mut o = prepare_opts(2);
        o.channels = ExtraChannel::parse_list("presence,heartbeat,unread,sidebar").unwrap();
        campfire::prepare(&base, &o).await.unwrap()
    });
    assert_eq!(prepared.subscriptions_per_client, 6);
    assert_eq!(prepared.room_stream.channel, "RoomMessagesChannel");
    let u = &prepared.users[1];
    assert!(u.cookie_header.contains("session_token=tok2"));
    assert!(u.cookie_header.contains("_hearth_session="));
    assert_eq!(u.user_id.as_deref(), Some("2"));
}

#[test]
fn fanout_only_uses_the_trigger_url() {
    use loadgen::cable::{CableConfig, ClientProfile};
    use loadgen::cell::{CellTarget, PostTarget};
    let url = start_mock(MockConfig::default());
    let r = block_on(async move {
        let base = Endpoint::parse(&url).unwrap();
        let target = CellTarget {
            name: "fanout".into(),
            url: base.cable().to_string(),
            kind: "fanout-only".into(),
            cable: CableConfig {
                endpoint: base.cable(),
                origin: base.origin(),
                read_buffer: 8192,
                required_protocol: Some("actioncable-v1-json".into()),
                deflate: false,
                spread: Vec::new(),
                next: Default::default(),
            },
            profiles: vec![Rc::new(ClientProfile {
                cookie: Some("session_token=tok1".into()),
                identifiers: vec![r#"{"channel":"StreamChannel","stream":"bench"}"#.into()],
            })],
            users: 1,
            post: PostTarget::Trigger {
                url: Endpoint::parse(&format!("{url}/broadcast?stream=bench")).unwrap(),
                cookie: None,
                anycable: None,
            },
            server_pid: None,
        };
        run_cell(&target, &cell_opts(10), 0, &|_| {}).await
    });
    assert!(r.ok, "{r:#?}");
    assert_eq!(r.subscriptions_per_client, 1);
    assert!(r.posted > 0);
    assert_eq!(r.receipts, r.posted * 10);
    assert!(r.mean_frame_bytes > 64.0);
}

/// A poster process (`run_cell_with`) and a listen-only one (`multi::run_listen`) against the
/// same mock, coordinated through the ready, start and posts files as separate processes are:
/// returns the poster's result, the listener's and the posts file. The listener's start file
/// appears `listener_late` after the poster's, as when a separate process polls for it after
/// the first posts went out.
fn poster_and_listener(
    cfg: MockConfig,
    listeners: usize,
    listener_late: Duration,
) -> (loadgen::report::CellResult, ListenResult, PostsRecord) {
    let url = start_mock(cfg);
    let dir = std::env::temp_dir().join(format!(
        "loadgen-listen-{}-{}",
        std::process::id(),
        listeners
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let coord = |ready: &str, go: &str| Coordination {
        run_tag: Some("mock1".into()),
        ready_file: Some(dir.join(ready)),
        start_file: Some(dir.join(go)),
        start_timeout: Duration::from_secs(20),
        posts_file: Some(dir.join("posts.json")),
        timeline_file: None,
    };
    let (poster_coord, listen_coord) = (
        coord("ready-1.json", "go"),
        coord("ready-2.json", "go-listen"),
    );
    let (r, l) = block_on(async {
        let base = Endpoint::parse(&url).unwrap();
        let prepared = Rc::new(campfire::prepare(&base, &prepare_opts(3)).await.unwrap());
        let target = campfire_target("mock", &base, prepared, 16 * 1024, None);
        let mut opts = cell_opts(4);
        opts.rate = Some(20.0);
        opts.drain = Duration::from_millis(500);
        let mut listen_opts = cell_opts(listeners);
        listen_opts.drain = Duration::from_millis(500);
        let starter = async {
            while !(dir.join("ready-1.json").exists() && dir.join("ready-2.json").exists()) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            std::fs::write(dir.join("go"), "").unwrap();
            tokio::time::sleep(listener_late).await;
            std::fs::write(dir.join("go-listen"), "").unwrap();
        };
        let (r, l, ()) = tokio::join!(
            run_cell_with(&target, &opts, 0, &|_| {}, &poster_coord),
            multi::run_listen(&target, &listen_opts, &listen_coord, &|_| {}),
            starter
        );
        (r, l.unwrap())
    });
    let posts: PostsRecord = serde_json::from_str(
        std::fs::read_to_string(dir.join("posts.json"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    let ready: coordination::ReadyRecord = serde_json::from_str(
        std::fs::read_to_string(dir.join("ready-2.json"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!((ready.n, ready.ready), (listeners, l.ready));
    std::fs::remove_dir_all(&dir).unwrap();
    (r, l, posts)
}

#[test]
fn a_listener_process_checks_every_post_on_every_client() {
    // The listener sees its start file after the poster's first posts (20/s) reached its clients.
    let (r, l, posts) = poster_and_listener(MockConfig::default(), 6, Duration::from_millis(250));
    assert!(r.ok, "{r:#?}");
    assert!(l.ok, "{l:#?}");
    assert_eq!(posts.run_tag, "mock1");
    assert_eq!(posts.posts.len() as u64, r.posted);
    assert!(posts.posts.iter().all(|p| p.ok && p.receipts == 4));
    assert!(r.posted > 0);
    assert_eq!((l.n, l.ready, l.failed), (6, 6, 0));
    assert_eq!(l.posts, r.posted);
    assert_eq!(l.seqs, posts.answered());
    assert_eq!(
        (l.expected, l.delivered, l.missing),
        (r.posted * 6, r.posted * 6, 0)
    );
    assert_eq!((l.duplicated, l.clients_complete, l.extra), (0, 6, 0));
    assert_eq!(l.sent_unix_us.len(), l.seqs.len());
    for ((s, f), last) in l
        .sent_unix_us
        .iter()
        .zip(&l.first_receipt_unix_us)
        .zip(&l.last_receipt_unix_us)
    {
        let (f, last) = (f.unwrap(), last.unwrap());
        assert!(*s <= f && f <= last, "sent {s} ≤ first {f} ≤ last {last}");
    }
    // The listener's clients' frames carry the unread notices too, those of the posts that
    // arrived before it saw its start file among them.
    assert!(l.frames >= 2 * l.delivered);
}

#[test]
fn a_listener_process_counts_duplicates_and_missing_posts() {
    let (r, l, _) = poster_and_listener(
        MockConfig {
            duplicate: true,
            ..Default::default()
        },
        3,
        Duration::ZERO,
    );
    assert!(!r.ok);
    assert!(!l.ok);
    assert_eq!(l.missing, 0);
    assert_eq!(
        l.duplicated,
        l.posts * 3,
        "every post twice to every client"
    );
    assert_eq!(l.clients_complete, 0);

    let (r, l, posts) = poster_and_listener(
        MockConfig {
            drop_some: true,
            ..Default::default()
        },
        5,
        Duration::ZERO,
    );
    assert!(!r.ok);
    assert!(!l.ok);
    let dropped = posts.posts.iter().filter(|p| p.receipts == 0).count() as u64;
    assert!(dropped > 0, "every 5th post is never broadcast: {posts:?}");
    assert_eq!(l.missing, dropped * 5);
    assert_eq!(l.delivered, (l.posts - dropped) * 5);
    assert_eq!(l.clients_complete, 0);
}
