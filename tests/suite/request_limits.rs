//! Limits on how a request arrives, over raw TCP: the request line's length
//! (`--max-request-line-bytes`) and a streamed upload's time (`--body-timeout` between two
//! pieces, `--upload-timeout` for the whole); and the per-user budgets of cable actions
//! (`--typing-rate-limit`, `--presence-rate-limit`).

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Writes `bytes` on a new connection to `server` and reads what comes back within `wait`
/// (until the server closes or `wait` passes), with the time the first byte took.
async fn exchange(server: &TestServer, bytes: &[u8], wait: Duration) -> (String, Duration) {
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(bytes).await.unwrap();
    let start = Instant::now();
    let mut got = Vec::new();
    let mut first = None;
    let mut buf = [0u8; 8192];
    let _ = tokio::time::timeout(wait, async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    first.get_or_insert_with(|| start.elapsed());
                    got.extend_from_slice(&buf[..n]);
                    if got.windows(4).any(|w| w == b"\r\n\r\n") && got.ends_with(b"\n") {
                        break;
                    }
                }
            }
        }
    })
    .await;
    (
        String::from_utf8_lossy(&got).into_owned(),
        first.unwrap_or(wait),
    )
}

/// The request head of `GET target` with `cookie`, ending its header block when `end`.
fn head(target: &str, cookie: &str, end: bool) -> Vec<u8> {
    let mut h = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookie}\r\n");
    if end {
        h.push_str("\r\n");
    }
    h.into_bytes()
}

#[tokio::test]
async fn a_request_line_over_the_limit_is_414_at_once_even_when_its_headers_never_end() {
    let server = TestServer::start().await;
    let david = server.signed_in("david@example.com", "secret123456").await;
    let cookie = david.cookie_header();
    let long = format!("/qr_code/{}", "A".repeat(9000));
    // What curl sends when its cookies do not fit beside such a URL: the header block never
    // ends. The answer must not wait for the header timeout (30 s).
    let (answer, took) = exchange(&server, &head(&long, &cookie, false), T).await;
    assert!(answer.starts_with("HTTP/1.1 414 "), "{answer:?}");
    assert!(took < Duration::from_secs(3), "414 after {took:?}");
    assert!(answer
        .to_ascii_lowercase()
        .contains("x-frame-options: sameorigin"));
    // A whole request with such a line: 414 as well.
    let (answer, _) = exchange(&server, &head(&long, &cookie, true), T).await;
    assert!(answer.starts_with("HTTP/1.1 414 "), "{answer:?}");
    // The second request of a kept-alive connection is held to it too.
    let mut both = head("/up", &cookie, true);
    both.extend(head(&long, &cookie, true));
    let (answer, _) = exchange(&server, &both, T).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
    assert!(answer.contains("HTTP/1.1 414 "), "{answer:?}");
    // Within the limit the route answers as before (a QR code of no URL: 404).
    let fits = format!("/qr_code/{}", "A".repeat(8000));
    let (answer, took) = exchange(&server, &head(&fits, &cookie, true), T).await;
    assert!(answer.starts_with("HTTP/1.1 404 "), "{answer:?}");
    assert!(took < Duration::from_secs(3));
}

#[tokio::test]
async fn a_request_line_arriving_in_pieces_is_read_whole() {
    let server = TestServer::start().await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    for piece in [
        &b"GET /u"[..],
        b"p HTTP/1.1\r\nHost: 127.0.0.1\r\n",
        b"\r\n",
    ] {
        s.write_all(piece).await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(T, s.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200 "), "{:?}", &buf[..n]);
}

#[tokio::test]
async fn the_request_line_limit_is_a_flag() {
    let server = TestServer::start_with(|c| c.max_request_line_bytes = 100).await;
    let (answer, _) = exchange(&server, &head(&"/x".repeat(60), "", true), T).await;
    assert!(answer.starts_with("HTTP/1.1 414 "), "{answer:?}");
    let (answer, _) = exchange(&server, &head("/up", "", true), T).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
}

const T: Duration = Duration::from_secs(10);

/// Opens a post with a file (`multipart/form-data`, `Content-Length` of 1 MiB) as David,
/// sends its first `sent` body bytes, and gives the connection back.
async fn start_upload(server: &TestServer) -> TcpStream {
    let mut david = server.signed_in("david@example.com", "secret123456").await;
    let (csrf, _) = david.room(1).await;
    let boundary = "hearthslowupload";
    let head = format!(
        "POST /rooms/1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {}\r\n\
         X-CSRF-Token: {csrf}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\n\
         Content-Length: 1048576\r\n\r\n--{boundary}\r\nContent-Disposition: form-data; \
         name=\"message[attachment]\"; filename=\"slow.bin\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n",
        david.cookie_header()
    );
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(&[b'x'; 4096]).await.unwrap();
    s
}

/// What the server answers on `s` within `wait`, and after how long.
async fn answer(s: &mut TcpStream, wait: Duration) -> (String, Duration) {
    let start = Instant::now();
    let mut buf = [0u8; 256];
    let n = tokio::time::timeout(wait, s.read(&mut buf))
        .await
        .map_or(0, |r| r.unwrap_or(0));
    (
        String::from_utf8_lossy(&buf[..n]).into_owned(),
        start.elapsed(),
    )
}

/// Blobs stored, and files of the disk service (`tmp/` included).
async fn stored(server: &TestServer) -> (i64, usize) {
    let blobs =
        common::forms::scalar_i64(server, "SELECT COUNT(*) FROM active_storage_blobs").await;
    // The disk service's files: `<root>/ab/cd/<key>` and `<root>/tmp/` (the root is the
    // data dir).
    let files = std::fs::read_dir(&server.dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            e.path().is_dir() && (name.len() == 2 || name == "tmp")
        })
        .map(|e| walkdir(&e.path()))
        .sum();
    (blobs, files)
}

fn walkdir(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| {
                if e.path().is_dir() {
                    walkdir(&e.path())
                } else {
                    1
                }
            })
            .sum()
    })
}

#[tokio::test]
async fn an_upload_that_stops_sending_is_cut_at_the_body_timeout_and_nothing_is_kept() {
    let server = TestServer::start_with(|c| {
        c.body_timeout = 1;
        c.upload_timeout = 60;
    })
    .await;
    let before = stored(&server).await;
    let mut s = start_upload(&server).await;
    let (got, took) = answer(&mut s, T).await;
    assert!(got.starts_with("HTTP/1.1 408 "), "{got:?} after {took:?}");
    assert!(took < Duration::from_secs(5), "408 after {took:?}");
    assert_eq!(stored(&server).await, before);
}

#[tokio::test]
async fn an_upload_that_drips_is_cut_at_the_upload_timeout_and_nothing_is_kept() {
    let server = TestServer::start_with(|c| {
        c.body_timeout = 2;
        c.upload_timeout = 3;
    })
    .await;
    let before = stored(&server).await;
    let mut s = start_upload(&server).await;
    // One byte every 200 ms: never a gap past the body timeout.
    let start = Instant::now();
    let mut got = String::new();
    while start.elapsed() < T {
        if s.write_all(b"x").await.is_err() {
            break;
        }
        let (answer, _) = answer(&mut s, Duration::from_millis(200)).await;
        if !answer.is_empty() {
            got = answer;
            break;
        }
    }
    assert!(got.starts_with("HTTP/1.1 408 "), "{got:?}");
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(6),
        "{took:?}"
    );
    assert_eq!(stored(&server).await, before);
}

/// Opens `n` cable connections of `email`, each subscribed to `identifier`.
async fn subscribed(
    server: &TestServer,
    email: &str,
    identifier: &str,
    n: usize,
) -> Vec<common::Ws> {
    let mut all = Vec::new();
    for _ in 0..n {
        let (_, mut ws) = common::connect_as(server, email, "secret123456").await;
        ws.send_text(&common::subscribe_cmd(identifier)).await;
        assert_eq!(
            ws.next_non_ping(T).await,
            common::text(&common::confirm(identifier))
        );
        all.push(ws);
    }
    all
}

#[tokio::test]
async fn typing_notices_are_limited_per_user_over_all_their_connections() {
    let server = TestServer::start_with(|c| c.typing_rate_limit = 6).await;
    let typing = r#"{"channel":"TypingNotificationsChannel","room_id":1}"#;
    let mut david = subscribed(&server, "david@example.com", typing, 4).await;
    let mut jason = subscribed(&server, "jason@example.com", typing, 1)
        .await
        .remove(0);
    let start = serde_json::json!({"command": "message", "identifier": typing, "data": r#"{"action":"start"}"#}).to_string();
    // 3 from each connection: within every connection's own burst (5), 12 in all.
    for ws in &mut david {
        for _ in 0..3 {
            ws.send_text(&start).await;
        }
    }
    let mut received = 0;
    while let Some(common::WsEvent::Text(t)) = jason.next_non_ping(Duration::from_millis(800)).await
    {
        if t.contains(r#""action":"start""#) {
            received += 1;
        }
    }
    // 6 at once, and at most one more refilled while they were sent (6 a minute).
    assert!(
        (6..=7).contains(&received),
        "{received} notices reached the other member"
    );
}

#[tokio::test]
async fn presence_actions_past_the_users_budget_send_no_read_notice() {
    let server = TestServer::start_with(|c| c.presence_rate_limit = 3).await;
    let presence = r#"{"channel":"PresenceChannel","room_id":1}"#;
    let reads = r#"{"channel":"ReadRoomsChannel"}"#;
    let mut tabs = subscribed(&server, "jason@example.com", presence, 5).await;
    let mut notices = subscribed(&server, "jason@example.com", reads, 1)
        .await
        .remove(0);
    let present = serde_json::json!({"command": "message", "identifier": presence, "data": r#"{"action":"present"}"#}).to_string();
    // One `present` from each tab: within every connection's own burst (10), 5 in all.
    for ws in &mut tabs {
        ws.send_text(&present).await;
    }
    let mut received = 0;
    while let Some(common::WsEvent::Text(t)) =
        notices.next_non_ping(Duration::from_millis(800)).await
    {
        if t.contains(r#""room_id":1"#) {
            received += 1;
        }
    }
    assert_eq!(received, 3, "read notices past the user's budget of 3");
}

#[tokio::test]
async fn a_drip_fed_request_line_is_dropped_within_one_header_timeout() {
    let server = TestServer::start_with(|c| c.header_timeout = 2).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    let opened = Instant::now();
    // The request line a byte every 100 ms, its line feed just before the header timeout,
    // then header bytes at the same pace: the head never ends. Before, the line's wait and
    // hyper's header timeout were counted one after the other (4 s held, not 2).
    let line = b"GET /up HTTP/1.1\r\n";
    let drip = async {
        for &b in line.iter().chain(b"Host: 127.0.0.1\r\nX-Slow: ".iter()) {
            if s.write_all(&[b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        loop {
            if s.write_all(b"x").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(8), drip).await;
    let held = opened.elapsed();
    assert!(
        held < Duration::from_millis(3200),
        "a drip-fed head held its connection for {held:?} under a 2 s header timeout"
    );
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(1), s.read_to_end(&mut rest)).await;
    assert!(
        !String::from_utf8_lossy(&rest).contains("200 OK"),
        "{rest:?}"
    );
}
