//! Limits on how a request arrives, over raw TCP: the request line's length
//! (`--max-request-line-bytes`).

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
