//! A bounded stress run against the real binary, on loopback only: 1,000 cable connections
//! subscribed to one room, one of which stops reading, and 2,000 posts. Every reading client
//! gets every post once and in order; the stalled one is cut off by its queue bound
//! (`too_slow`); the server's peak resident memory stays under [`PEAK_RSS_BOUND_MIB`].

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::child::{Hearth, DAVID, PASSWORD};
use common::{Ws, WsEvent};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

const CONNECTIONS: usize = 1_000;
const POSTS: usize = 2_000;
/// The poster stays at most this many posts ahead of the slowest reading client, as a chat
/// of people who read along would; the stalled client is not waited for.
const WINDOW: usize = 256;
/// The bound on the server's peak resident set (VmHWM) over the whole run, in MiB. The
/// debug-built server peaked at 79 MiB with these numbers; the bound leaves room for
/// allocator noise, while a leak of one copy of each frame per connection (2,000 × 1,000 ×
/// ~3 KiB ≈ 6 GiB) or an unbounded queue for the stalled client would far exceed it.
const PEAK_RSS_BOUND_MIB: u64 = 192;
/// The whole run must end within this (it normally takes well under a minute).
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// Where a reader has got to: the count of posts received in order.
type Progress = Arc<Vec<AtomicUsize>>;

/// A server frame: (opcode, payload range) when `buf` holds a whole one.
fn frame_at(buf: &[u8]) -> Option<(u8, usize, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let (len, header) = match buf[1] & 0x7f {
        126 if buf.len() >= 4 => (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4),
        127 if buf.len() >= 10 => (
            u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize,
            10,
        ),
        126 | 127 => return None,
        n => (n as usize, 2),
    };
    (buf.len() >= header + len).then_some((buf[0] & 0x0f, header, header + len))
}

/// The post number in a data frame: the body `stress-NNNNN` is the message's
/// `client_message_id`, found at the same offset in every append of the room.
fn post_number(payload: &[u8], offset: &mut Option<usize>) -> Option<usize> {
    const MARK: &[u8] = b"stress-";
    let at = match *offset {
        Some(at) if payload.get(at..at + MARK.len()) == Some(MARK) => at,
        _ => {
            let at = payload.windows(MARK.len()).position(|w| w == MARK)?;
            *offset = Some(at);
            at
        }
    };
    std::str::from_utf8(payload.get(at + MARK.len()..at + MARK.len() + 5)?)
        .ok()?
        .parse()
        .ok()
}

/// Reads until every post has arrived, checking each arrives once and in order.
async fn read_all(mut stream: TcpStream, mut buf: Vec<u8>, me: usize, progress: Progress) {
    let mut start = 0;
    let mut offset = None;
    let mut next = 0usize;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        while let Some((opcode, from, to)) = frame_at(&buf[start..]) {
            let payload = &buf[start + from..start + to];
            match opcode {
                0x1 if payload.starts_with(br#"{"type":"ping""#) => {}
                0x1 => {
                    let n = post_number(payload, &mut offset).unwrap_or_else(|| {
                        panic!(
                            "reader {me}: unexpected frame {}",
                            String::from_utf8_lossy(payload)
                        )
                    });
                    assert_eq!(n, next, "reader {me}: post {n} arrived when {next} was due");
                    next += 1;
                    progress[me].store(next, Ordering::Release);
                    if next == POSTS {
                        return;
                    }
                }
                other => panic!("reader {me}: frame with opcode {other} after {next} posts"),
            }
            start += to;
        }
        if start > 0 {
            buf.drain(..start);
            start = 0;
        }
        let n = stream.read(&mut chunk).await.expect("reader socket");
        assert!(n > 0, "reader {me}: EOF after {next} posts");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_two_thousand_posts_one_stalled_reader() {
    tokio::time::timeout(RUN_LIMIT, run())
        .await
        .expect("stress run within its limit");
}

async fn run() {
    // Two sockets per connection across this process and the server (which inherits the
    // limit): raise the soft descriptor limit towards the hard one where it is lower.
    let wanted = (CONNECTIONS as u64) * 2 + 512;
    let got = rlimit::increase_nofile_limit(wanted).expect("RLIMIT_NOFILE");
    assert!(
        got >= wanted,
        "open-file limit {got} < {wanted}: raise `ulimit -n`"
    );
    let started = std::time::Instant::now();
    let dir = common::temp_dir("stress");
    // Every connection is David's: no per-user cap (the default, 100, is for people).
    let mut hearth = Hearth::start(
        &dir,
        &["--ping-interval", "3", "--max-connections-per-user", "0"],
    )
    .await;
    let mut c = hearth.client();
    assert_eq!(c.login(DAVID, PASSWORD).await.status, 302);
    // The room's signed stream name as its page gives it (no database access: the test may
    // run against another build through HEARTH_TEST_BIN, whose schema may differ).
    let (csrf, page) = c.room(1).await;
    let cookie = c.cookie_header();
    let origin = format!("http://{}", hearth.addr);
    let signed = common::attr_after(
        &page,
        r#"channel="RoomMessagesChannel" signed-stream-name=""#,
    )
    .expect("the room page's message stream");
    let identifier =
        serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed})
            .to_string();
    let subscribe =
        serde_json::json!({"command": "subscribe", "identifier": identifier}).to_string();
    let confirm = format!(
        r#"{{"identifier":{},"type":"confirm_subscription"}}"#,
        serde_json::to_string(&identifier).unwrap()
    );

    let open = |stalled: bool| {
        let (cookie, origin, subscribe, confirm) = (
            cookie.clone(),
            origin.clone(),
            subscribe.clone(),
            confirm.clone(),
        );
        let addr = hearth.addr;
        async move {
            let mut ws = if stalled {
                // A small receive window, so that the kernel buffers little for it.
                Ws::connect_small_window(addr, &cookie, &origin).await
            } else {
                Ws::connect(
                    addr,
                    Some(&cookie),
                    Some(&origin),
                    Some("actioncable-v1-json"),
                )
                .await
            };
            assert_eq!(ws.status, 101);
            let t = Duration::from_secs(30);
            assert_eq!(
                ws.next(t).await,
                Some(WsEvent::Text(r#"{"type":"welcome"}"#.into()))
            );
            ws.send_text(&subscribe).await;
            assert_eq!(ws.next_non_ping(t).await, Some(WsEvent::Text(confirm)));
            ws
        }
    };
    let stalled = open(true).await;
    let progress: Progress = Arc::new((0..CONNECTIONS - 1).map(|_| AtomicUsize::new(0)).collect());
    let mut readers = Vec::with_capacity(CONNECTIONS - 1);
    for me in 0..CONNECTIONS - 1 {
        let ws = open(false).await;
        let (stream, buf) = ws.into_parts();
        readers.push(tokio::spawn(read_all(stream, buf, me, progress.clone())));
    }
    let rss_connected = hearth.peak_rss_kib();
    let connected = started.elapsed();

    for i in 0..POSTS {
        while i >= WINDOW
            && progress
                .iter()
                .any(|p| p.load(Ordering::Acquire) + WINDOW <= i)
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let cid = format!("stress-{i:05}");
        let r = c.post_message(1, &cid, &cid, &csrf).await;
        assert_eq!(r.status, 200, "post {i}");
    }
    for r in readers {
        r.await.unwrap();
    }
    let rss_peak = hearth.peak_rss_kib();

    // The stalled client now reads what reached it: posts in order from the first, then the
    // too_slow notice and a close frame.
    let (mut stream, mut buf) = stalled.into_parts();
    let mut next = 0;
    let mut offset = None;
    let mut tail = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        while let Some((opcode, from, to)) = frame_at(&buf) {
            let payload = buf[from..to].to_vec();
            buf.drain(..to);
            match opcode {
                0x1 if payload.starts_with(br#"{"type":"ping""#) => {}
                0x1 if tail.is_empty() && post_number(&payload, &mut offset).is_some() => {
                    assert_eq!(post_number(&payload, &mut offset), Some(next));
                    next += 1;
                }
                _ => tail.push((opcode, payload)),
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut chunk))
            .await
            .expect("the stalled client's socket is closed by the server")
            .unwrap_or(0);
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    assert!(next < POSTS, "the stalled client was never cut off");
    // The notice and close frame are sent when they fit; a peer that reads nothing may not
    // have room for them, and then the socket is dropped after a short grace period.
    let notice = [
        (0x1, hearth::fanout::TOO_SLOW_MESSAGE.to_vec()),
        (0x8, 1000u16.to_be_bytes().to_vec()),
    ];
    assert!(notice.starts_with(&tail), "after the posts: {tail:?}");
    let elapsed = started.elapsed();
    eprintln!(
        "stress: {CONNECTIONS} connections in {connected:.1?}, {POSTS} posts delivered by \
         {elapsed:.1?}; stalled client cut off after {next} posts (notice seen: {}); server \
         VmHWM {} MiB once connected, {} MiB at the end (bound {PEAK_RSS_BOUND_MIB} MiB)",
        !tail.is_empty(),
        rss_connected / 1024,
        rss_peak / 1024
    );
    assert!(
        rss_peak / 1024 < PEAK_RSS_BOUND_MIB,
        "server peak RSS {} MiB",
        rss_peak / 1024
    );
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
