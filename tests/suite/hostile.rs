//! A hostile client's requests over real HTTP and `/cable`, the 2026-12-02 pass of
//! `docs/hardening.md`: open connections per address, request heads without `Host`, `TRACE`
//! and `CONNECT`, client text in cable log lines.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use common::TestServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const DAVID: &str = "david@example.com";
const JASON: &str = "jason@example.com";
const SECRET: &str = "secret123456";

/// Sends `raw` on a new connection and returns what the server answered (its head and
/// whatever body came with it) before it closed or `within` passed.
async fn exchange(addr: SocketAddr, raw: &str, within: Duration) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(within, async {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// The header `name` of a raw answer, if present (case-insensitive name).
/// The whole answer to a well-formed `GET /up` on a connection of its own (empty when the
/// server closed it unanswered).
async fn up(addr: SocketAddr) -> String {
    exchange(
        addr,
        "GET /up HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    )
    .await
}

fn header<'a>(answer: &'a str, name: &str) -> Option<&'a str> {
    answer
        .split("\r\n\r\n")
        .next()?
        .lines()
        .skip(1)
        .find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
}

#[tokio::test]
async fn one_address_holds_at_most_its_cap_of_open_connections() {
    let server = TestServer::start_with(|c| c.max_connections_per_address = 3).await;
    // Three idle connections (nothing sent: each would wait out the 30 s header timeout).
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(server.addr).await.unwrap());
    }
    // The fourth from the same address is closed at once, before anything is read.
    let mut fourth = TcpStream::connect(server.addr).await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), fourth.read_to_end(&mut rest)).await;
    assert!(
        closed.is_ok(),
        "a fourth connection of one address was held open past a cap of 3"
    );
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    // A closed one frees its place: the next connection is served.
    drop(idle.pop());
    let mut answer = String::new();
    for _ in 0..50 {
        answer = up(server.addr).await;
        if !answer.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
}

#[tokio::test]
async fn an_upgraded_cable_socket_gives_its_place_back() {
    let server = TestServer::start_with(|c| c.max_connections_per_address = 2).await;
    // Two cable sockets from one address: each leaves the HTTP count once upgraded (they
    // are bounded by --max-connections and --max-connections-per-user).
    let (_a, _ws_a) = common::connect_as(&server, DAVID, SECRET).await;
    let (_b, _ws_b) = common::connect_as(&server, JASON, SECRET).await;
    let (_c, _ws_c) = common::connect_as(&server, DAVID, SECRET).await;
    let answer = up(server.addr).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
}

#[tokio::test]
async fn an_http_1_1_request_without_exactly_one_host_is_400() {
    let server = TestServer::start().await;
    let within = Duration::from_secs(5);
    let none = exchange(server.addr, "GET /up HTTP/1.1\r\n\r\n", within).await;
    assert!(none.starts_with("HTTP/1.1 400"), "{none:?}");
    assert_eq!(header(&none, "x-content-type-options"), Some("nosniff"));
    let two = exchange(
        server.addr,
        "GET /up HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        within,
    )
    .await;
    assert!(two.starts_with("HTTP/1.1 400"), "{two:?}");
    // A sign-in form without Host is refused before any route runs.
    let post = exchange(
        server.addr,
        "POST /session HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
        within,
    )
    .await;
    assert!(post.starts_with("HTTP/1.1 400"), "{post:?}");
    // HTTP/1.0 has no Host requirement; HTTP/1.1 with one is served.
    let old = exchange(server.addr, "GET /up HTTP/1.0\r\n\r\n", within).await;
    assert!(
        old.starts_with("HTTP/1.") && old.split(' ').nth(1) == Some("200"),
        "{old:?}"
    );
    let ok = up(server.addr).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok:?}");
}

#[tokio::test]
async fn trace_and_connect_are_405_with_allow() {
    let server = TestServer::start().await;
    for head in [
        "TRACE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "TRACE /up HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "TRACE /rooms/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "CONNECT 127.0.0.1:6379 HTTP/1.1\r\nHost: 127.0.0.1:6379\r\nConnection: close\r\n\r\n",
        "CONNECT / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ] {
        let answer = exchange(server.addr, head, Duration::from_secs(5)).await;
        assert!(answer.starts_with("HTTP/1.1 405"), "{head:?}: {answer:?}");
        assert_eq!(
            header(&answer, "allow"),
            Some("GET, HEAD, POST, PUT, PATCH, DELETE"),
            "{head:?}: {answer:?}"
        );
    }
}

#[tokio::test]
async fn a_revoked_subscriptions_identifier_cannot_forge_a_log_line() {
    let (log, _capturing) = common::captured_log();
    let server = TestServer::start().await;
    let (_c, mut ws) = common::connect_as(&server, JASON, SECRET).await;
    // A line feed is JSON whitespace: the identifier parses, and a key after it starts the
    // next line of the log unless the identifier is escaped.
    let identifier = "{\"channel\":\"PresenceChannel\",\"room_id\":4,\n\
                      \"2026-01-01T00:00:00Z  INFO hearth: FORGED admin signed in\":1}";
    ws.send_text(&common::subscribe_cmd(identifier)).await;
    let confirmed = common::text(&common::confirm(identifier));
    loop {
        let next = ws.next_non_ping(Duration::from_secs(10)).await;
        assert!(next.is_some(), "no confirmation");
        if next == confirmed {
            break;
        }
    }
    hearth::db::memberships::revise(
        &server.state.db.pool,
        &*server.state.sockets.registry,
        4,
        &[],
        &[2],
    )
    .await
    .unwrap()
    .unwrap();
    loop {
        let next = ws.next_non_ping(Duration::from_secs(10)).await;
        assert!(next.is_some(), "no rejection");
        if format!("{next:?}").contains("reject_subscription") {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let text = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    assert!(text.contains("subscription revoked"), "nothing logged");
    for line in text.lines().filter(|line| line.contains("FORGED")) {
        assert!(
            line.contains("subscription revoked"),
            "a client forged a log line: {line:?}"
        );
    }
}

#[tokio::test]
async fn a_name_of_invisible_characters_only_is_blank() {
    // The Hangul filler, zero-width space and joiner, the byte-order mark, a soft hyphen, a
    // tag character: each shows nothing, so a name of them alone is a name nobody sees. Beside
    // visible text they stay (an emoji sequence's joiner).
    crate::security::names_are_422_and_nothing_changes(
        &[
            "\u{3164}",
            "\u{200B}\u{200D}",
            "\u{FEFF}",
            " \u{00AD} ",
            "\u{E0041}",
        ],
        "David \u{1F469}\u{200D}\u{1F4BB}",
    )
    .await;
}

#[tokio::test]
async fn a_trusted_proxy_is_not_capped() {
    let server = TestServer::start_with(|c| {
        c.max_connections_per_address = 1;
        c.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    })
    .await;
    let _idle: Vec<TcpStream> = idle_connections(server.addr, 3).await;
    let answer = up(server.addr).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
}

/// `n` connections to `addr` that send nothing.
async fn idle_connections(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut idle = Vec::new();
    for _ in 0..n {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    idle
}
