//! The fan-out engines over real loopback TCP sockets.
//!
//! Each test binds 127.0.0.1:0, connects a client, attaches the server side's write half to a
//! [`Fanout`] and reads raw WebSocket frames on the client side with the small parser below
//! (RFC 6455 §5.2, server frames: FIN set, never masked). Every behaviour that both engines
//! promise is checked for both (the reference engine when the `reference-engine` feature is
//! on). Needs the `test-support` feature (`Fanout::new_inline_writers`).

use std::time::Duration;

use bytes::Bytes;
use hearth::fanout::frame::{Frame, OPCODE_CLOSE, OPCODE_TEXT};
use hearth::fanout::{
    Connection, EngineKind, Fanout, QueueLimits, Stamp, Variant, TOO_SLOW_MESSAGE,
};
use hearth::history::Numbered;

/// Bounds roomy enough for the bursts these tests queue faster than any writer drains them
/// (the default bound is sized for chat traffic, not for 300 broadcasts in a tight loop).
fn roomy() -> QueueLimits {
    QueueLimits {
        max_frames: 1024,
        ..QueueLimits::default()
    }
}
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};

/// The engines every shared behaviour is checked for.
#[cfg(feature = "reference-engine")]
const ENGINES: [EngineKind; 2] = [EngineKind::Queue, EngineKind::TokioBroadcast];
/// The engines every shared behaviour is checked for.
#[cfg(not(feature = "reference-engine"))]
const ENGINES: [EngineKind; 1] = [EngineKind::Queue];

/// One attached connection and its peer.
struct Pair {
    conn: Connection,
    client: TcpStream,
    /// The server's read half, kept open for as long as the test runs.
    _server_read: OwnedReadHalf,
}

async fn connect(fanout: &Fanout) -> Pair {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
    let (server, _) = accepted.unwrap();
    let (read, write) = server.into_split();
    Pair {
        conn: fanout.attach(write),
        client: client.unwrap(),
        _server_read: read,
    }
}

/// Reads one server frame: `(opcode, payload)`, or `None` on a clean EOF between frames.
async fn read_frame(stream: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut first = [0u8; 1];
    if stream.read(&mut first).await.expect("read") == 0 {
        return None;
    }
    assert_eq!(first[0] & 0xF0, 0x80, "FIN set, no RSV bits");
    let second = stream.read_u8().await.expect("header");
    assert_eq!(second & 0x80, 0, "server frames are never masked");
    let len = match second & 0x7F {
        126 => u64::from(stream.read_u16().await.expect("16-bit length")),
        127 => stream.read_u64().await.expect("64-bit length"),
        n => u64::from(n),
    };
    let mut payload = vec![0u8; len as usize];
    stream.read_exact(&mut payload).await.expect("payload");
    Some((first[0] & 0x0F, payload))
}

async fn read_text(stream: &mut TcpStream) -> Vec<u8> {
    let (opcode, payload) = read_frame(stream).await.expect("a frame, not EOF");
    assert_eq!(opcode, OPCODE_TEXT);
    payload
}

fn variant(key: &str) -> Variant {
    Variant::new(key, format!("{{\"identifier\":\"{key}\",\"message\":"), "}")
}

fn wrapped(v: &Variant, message: &[u8]) -> Vec<u8> {
    [&v.prefix[..], message, &v.suffix[..]].concat()
}

/// Polls `done` until it holds, yielding between tries (bounded, no timing assertion).
async fn eventually(mut done: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("condition never became true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subscriber_gets_every_broadcast_once_and_in_order() {
    for kind in ENGINES {
        let fanout = Fanout::new(kind, roomy());
        let v = variant("room");
        let mut pairs = Vec::new();
        for _ in 0..3 {
            let pair = connect(&fanout).await;
            pair.conn.subscribe("room:1", &v);
            pairs.push(pair);
        }
        let messages: Vec<Vec<u8>> = (0..300).map(|i| format!("\"m{i}\"").into_bytes()).collect();
        for m in &messages {
            assert_eq!(fanout.broadcast("room:1", m), 3, "{kind:?}");
        }
        for pair in &mut pairs {
            for m in &messages {
                assert_eq!(
                    read_text(&mut pair.client).await,
                    wrapped(&v, m),
                    "{kind:?}"
                );
            }
            pair.conn.close(&[]);
            assert_eq!(
                read_frame(&mut pair.client).await,
                None,
                "{kind:?}: nothing extra"
            );
        }
        let stats = fanout.stats();
        assert_eq!(stats.broadcasts, 300);
        assert_eq!(stats.frames_written, 900, "{kind:?}");
    }
}

/// Several writer threads (`--writer-threads`): each connection is drained by one of them, so
/// each still gets every frame once and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_writer_threads_deliver_every_frame_in_order() {
    let fanout = Fanout::with_writer_threads(EngineKind::Queue, roomy(), 3);
    let v = variant("room");
    let mut pairs = Vec::new();
    for _ in 0..7 {
        let pair = connect(&fanout).await;
        pair.conn.subscribe("room:1", &v);
        pairs.push(pair);
    }
    let messages: Vec<Vec<u8>> = (0..200).map(|i| format!("\"m{i}\"").into_bytes()).collect();
    for m in &messages {
        assert_eq!(fanout.broadcast("room:1", m), 7);
    }
    for pair in &mut pairs {
        for m in &messages {
            assert_eq!(read_text(&mut pair.client).await, wrapped(&v, m));
        }
        pair.conn.close(&[]);
        assert_eq!(read_frame(&mut pair.client).await, None);
    }
    assert_eq!(fanout.stats().frames_written, 1400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_variant_gets_its_own_prefix_and_suffix() {
    for kind in ENGINES {
        let fanout = Fanout::new(kind, roomy());
        let (x, y) = (variant("x"), Variant::new("y", "[", "]"));
        let mut a = connect(&fanout).await;
        let mut b = connect(&fanout).await;
        a.conn.subscribe("s", &x);
        b.conn.subscribe("s", &y);
        b.conn.subscribe("s", &y); // idempotent
        assert_eq!(fanout.stats().subscriptions, 2, "{kind:?}");
        for i in 0..5 {
            let m = format!("{i}").into_bytes();
            assert_eq!(fanout.broadcast("s", &m), 2, "{kind:?}");
            assert_eq!(read_text(&mut a.client).await, wrapped(&x, &m));
            assert_eq!(read_text(&mut b.client).await, wrapped(&y, &m));
        }
        assert_eq!(fanout.broadcast("other", b"1"), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsubscribe_stops_delivery() {
    for kind in ENGINES {
        let fanout = Fanout::new(kind, roomy());
        let v = variant("v");
        let mut p = connect(&fanout).await;
        p.conn.subscribe("s", &v);
        fanout.broadcast("s", b"1");
        assert_eq!(read_text(&mut p.client).await, wrapped(&v, b"1"));
        p.conn.unsubscribe("s", "v");
        p.conn.unsubscribe("s", "v"); // no-op
        fanout.broadcast("s", b"2");
        assert!(p.conn.send(Frame::text(b"marker")));
        assert_eq!(read_text(&mut p.client).await, b"marker", "{kind:?}");
        p.conn.close(&[]);
        assert_eq!(
            read_frame(&mut p.client).await,
            None,
            "{kind:?}: no late frame"
        );
        assert_eq!(fanout.stats().subscriptions, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_after_subscribe_is_ordered_after_earlier_broadcasts() {
    // One FIFO per connection: the queue engine's guarantee (see `Connection::send`).
    let fanout = Fanout::new(EngineKind::Queue, roomy());
    let (va, vb) = (variant("a"), variant("b"));
    let mut p = connect(&fanout).await;
    assert!(p.conn.send(Frame::text(b"welcome")));
    p.conn.subscribe("a", &va);
    for i in 0..50 {
        fanout.broadcast("a", format!("{i}").as_bytes());
    }
    p.conn.subscribe("b", &vb);
    assert!(p.conn.send(Frame::text(b"confirm b")));
    fanout.broadcast("b", b"first on b");
    assert_eq!(read_text(&mut p.client).await, b"welcome");
    for i in 0..50 {
        assert_eq!(
            read_text(&mut p.client).await,
            wrapped(&va, format!("{i}").as_bytes())
        );
    }
    assert_eq!(read_text(&mut p.client).await, b"confirm b");
    assert_eq!(read_text(&mut p.client).await, wrapped(&vb, b"first on b"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_frames_to_a_slow_reader_arrive_intact() {
    for kind in ENGINES {
        let fanout = Fanout::new(kind, roomy());
        let v = Variant::new("big", "", "");
        let mut p = connect(&fanout).await;
        p.conn.subscribe("big", &v);
        let messages: Vec<Vec<u8>> = (0..8u8)
            .map(|i| {
                (0..1 << 20)
                    .map(|j: u32| (j as u8) ^ i.wrapping_mul(37))
                    .collect()
            })
            .collect();
        for m in &messages {
            assert_eq!(fanout.broadcast("big", m), 1);
        }
        // Read slowly: small reads, yielding between them, so the writer keeps hitting a full
        // socket and resuming frames at an offset.
        let mut raw = Vec::new();
        let total: usize = messages.iter().map(|m| 10 + m.len()).sum();
        let mut chunk = [0u8; 4096];
        while raw.len() < total {
            let n = p.client.read(&mut chunk).await.unwrap();
            assert!(n > 0, "{kind:?}: EOF after {} bytes", raw.len());
            raw.extend_from_slice(&chunk[..n]);
            tokio::task::yield_now().await;
        }
        let mut expected = Vec::new();
        for m in &messages {
            expected.extend_from_slice(&Frame::text(m).0);
        }
        assert_eq!(raw.len(), expected.len(), "{kind:?}");
        assert!(raw == expected, "{kind:?}: bytes differ");
        let stats = fanout.stats();
        assert_eq!(stats.frames_written, 8, "{kind:?}");
        assert_eq!(stats.bytes_written, total as u64, "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_cut_off_alone() {
    let limits = QueueLimits {
        max_frames: 64,
        max_bytes: 1 << 20,
    };
    let fanout = Fanout::new(EngineKind::Queue, limits);
    let v = Variant::new("k", "", "");
    let mut slow = connect(&fanout).await;
    let mut good = connect(&fanout).await;
    slow.conn.subscribe("s", &v);
    good.conn.subscribe("s", &v);
    let message = |i: u32| -> Vec<u8> {
        let mut m = vec![b'.'; 64 * 1024];
        m[..4].copy_from_slice(&i.to_be_bytes());
        m
    };
    // Paced by the good client: broadcast one, wait until the good client has it.
    let mut sent = 0u32;
    while fanout.stats().slow_disconnects == 0 {
        assert!(sent < 10_000, "the slow client was never cut off");
        fanout.broadcast("s", &message(sent));
        assert_eq!(read_text(&mut good.client).await, message(sent));
        sent += 1;
    }
    assert!(slow.conn.is_closed());
    assert!(!good.conn.is_closed());

    // The slow client now reads: whole broadcast frames in order, then the notice and a
    // close frame, then EOF.
    let mut frames = Vec::new();
    while let Some(frame) = read_frame(&mut slow.client).await {
        frames.push(frame);
    }
    slow.conn.closed().await;
    let n = frames.len();
    assert!(n >= 2, "got {n} frames");
    assert_eq!(frames[n - 2], (OPCODE_TEXT, TOO_SLOW_MESSAGE.to_vec()));
    assert_eq!(
        frames[n - 1],
        (OPCODE_CLOSE, 1000u16.to_be_bytes().to_vec())
    );
    for (i, (opcode, payload)) in frames[..n - 2].iter().enumerate() {
        assert_eq!(*opcode, OPCODE_TEXT);
        assert_eq!(*payload, message(i as u32), "frame {i} of the slow client");
    }
    assert!((n - 2) < sent as usize);

    // The good client carries on.
    for i in sent..sent + 5 {
        assert_eq!(fanout.broadcast("s", &message(i)), 1);
        assert_eq!(read_text(&mut good.client).await, message(i));
    }
    let stats = fanout.stats();
    assert_eq!(stats.slow_disconnects, 1);
    assert_eq!(stats.connections, 1);
    assert_eq!(stats.subscriptions, 1);
    assert!(stats.queue_bytes_high_water <= (1 << 20));
    assert!(stats.queue_depth_high_water <= 64);
}

/// Current-thread runtime: nothing else runs while the broadcasts below are queued, so the
/// connection is certainly past its bound before its writer first runs.
#[tokio::test(flavor = "current_thread")]
async fn overflow_before_the_first_drain_sends_only_the_notice() {
    for kind in ENGINES {
        let limits = QueueLimits {
            max_frames: 8,
            max_bytes: 1 << 20,
        };
        let fanout = Fanout::new_inline_writers(kind, limits);
        let v = Variant::new("k", "", "");
        let mut p = connect(&fanout).await;
        p.conn.subscribe("s", &v);
        for i in 0..20 {
            fanout.broadcast("s", format!("{i}").as_bytes());
        }
        assert_eq!(read_text(&mut p.client).await, TOO_SLOW_MESSAGE, "{kind:?}");
        let (opcode, payload) = read_frame(&mut p.client).await.unwrap();
        assert_eq!((opcode, &payload[..]), (OPCODE_CLOSE, &[0x03, 0xE8][..]));
        assert_eq!(read_frame(&mut p.client).await, None, "{kind:?}");
        p.conn.closed().await;
        assert!(p.conn.is_closed());
        assert!(!p.conn.send(Frame::text(b"late")));
        let stats = fanout.stats();
        assert_eq!(stats.slow_disconnects, 1, "{kind:?}");
        assert_eq!(stats.connections, 0, "{kind:?}");
        assert_eq!(stats.subscriptions, 0, "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_sends_queued_then_given_frames_then_eof() {
    for kind in ENGINES {
        let fanout = Fanout::new(kind, roomy());
        let mut p = connect(&fanout).await;
        p.conn.subscribe("s", &variant("v"));
        assert!(p.conn.send(Frame::text(b"{\"type\":\"welcome\"}")));
        let notice = br#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#;
        p.conn.close(&[Frame::text(notice), Frame::close(1000, "")]);
        assert!(p.conn.is_closed());
        assert!(!p.conn.send(Frame::text(b"after close")), "{kind:?}");
        if kind == EngineKind::Queue {
            // The reference engine's receivers live until their tasks notice the close.
            assert_eq!(fanout.broadcast("s", b"1"), 0, "detached at once");
        }
        assert_eq!(read_text(&mut p.client).await, b"{\"type\":\"welcome\"}");
        assert_eq!(read_text(&mut p.client).await, notice);
        assert_eq!(
            read_frame(&mut p.client).await,
            Some((OPCODE_CLOSE, vec![0x03, 0xE8]))
        );
        assert_eq!(read_frame(&mut p.client).await, None, "{kind:?}");
        p.conn.closed().await;
        assert_eq!(fanout.stats().connections, 0, "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_all_reaches_every_connection() {
    for kind in ENGINES {
        let fanout = Fanout::new(kind, roomy());
        let mut pairs = Vec::new();
        for _ in 0..4 {
            pairs.push(connect(&fanout).await);
        }
        let ping = Frame::text(br#"{"type":"ping","message":1712345678}"#);
        assert_eq!(fanout.send_all(&ping), 4, "{kind:?}");
        for p in &mut pairs {
            let (opcode, payload) = read_frame(&mut p.client).await.unwrap();
            assert_eq!(opcode, OPCODE_TEXT);
            assert_eq!(Bytes::from(payload), ping.payload().unwrap());
        }
        pairs[0].conn.abort();
        pairs[0].conn.closed().await;
        eventually(|| fanout.send_all(&ping) == 3).await;
        assert_eq!(fanout.stats().connections, 3);
    }
}

/// `closed()` resolves only once the connection is counted out: the writer's thread ends it
/// (the socket's EOF reaches the peer first), and a waiter that found it ended while that
/// thread was still counting it out read it as still connected (seen once in CI).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_resolves_after_the_connection_is_counted_out() {
    for kind in ENGINES {
        let fanout = Fanout::new(kind, roomy());
        for round in 0..1000 {
            let mut p = connect(&fanout).await;
            p.conn.subscribe("s", &variant("v"));
            p.conn.close(&[Frame::close(1000, "")]);
            assert!(read_frame(&mut p.client).await.is_some());
            assert_eq!(read_frame(&mut p.client).await, None, "{kind:?}");
            p.conn.closed().await;
            let stats = fanout.stats();
            assert_eq!(
                (stats.connections, stats.subscriptions),
                (0, 0),
                "{kind:?}, round {round}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_stops_the_writer_and_detaches() {
    for kind in ENGINES {
        let fanout = Fanout::new(kind, roomy());
        let mut p = connect(&fanout).await;
        p.conn.subscribe("s", &variant("v"));
        p.conn.abort();
        p.conn.closed().await;
        assert!(p.conn.is_closed());
        eventually(|| fanout.broadcast("s", b"1") == 0).await;
        p.conn.subscribe("s", &variant("v"));
        assert_eq!(fanout.stats().subscriptions, 0, "{kind:?}");
        assert_eq!(read_frame(&mut p.client).await, None, "{kind:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_broadcasters_keep_each_streams_order() {
    let fanout = Fanout::new(EngineKind::Queue, roomy());
    let (va, vb) = (Variant::new("a", "a", ""), Variant::new("b", "b", ""));
    let mut p = connect(&fanout).await;
    p.conn.subscribe("a", &va);
    p.conn.subscribe("b", &vb);
    let spawn = |stream: &'static str| {
        let fanout = fanout.clone();
        tokio::spawn(async move {
            for i in 0..500u32 {
                fanout.broadcast(stream, &i.to_be_bytes());
                if i % 50 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let (ta, tb) = (spawn("a"), spawn("b"));
    let (mut next_a, mut next_b) = (0u32, 0u32);
    while next_a < 500 || next_b < 500 {
        let m = read_text(&mut p.client).await;
        let n = u32::from_be_bytes(m[1..5].try_into().unwrap());
        match m[0] {
            b'a' => {
                assert_eq!(n, next_a);
                next_a += 1;
            }
            b'b' => {
                assert_eq!(n, next_b);
                next_b += 1;
            }
            other => panic!("unexpected prefix {other}"),
        }
    }
    ta.await.unwrap();
    tb.await.unwrap();
    // The writer thread counts a write after its call returns, so the client can read the
    // last frame before the count moves: wait for it rather than read it once.
    eventually(|| fanout.stats().frames_written == 1000).await;
    let stats = fanout.stats();
    assert!(stats.write_syscalls <= stats.frames_written);
    eventually(|| fanout.stats().bytes_written == fanout.stats().bytes_queued).await;
}

/// Current-thread runtime: all 500 frames are queued before the writer first runs, so the
/// queue engine must coalesce them into vectored writes of up to `MAX_WRITE_SLICES` frames,
/// where the reference engine makes one library write per frame.
#[tokio::test(flavor = "current_thread")]
async fn queued_frames_are_coalesced_into_vectored_writes() {
    for kind in ENGINES {
        let fanout = Fanout::new_inline_writers(kind, roomy());
        let v = Variant::new("k", "", "");
        let mut p = connect(&fanout).await;
        p.conn.subscribe("s", &v);
        for i in 0..500u32 {
            fanout.broadcast("s", &i.to_be_bytes());
        }
        for i in 0..500u32 {
            assert_eq!(read_text(&mut p.client).await, i.to_be_bytes());
        }
        let stats = fanout.stats();
        assert_eq!(stats.frames_written, 500);
        match kind {
            // 500 / 64 → 8 writev calls when the socket takes everything; allow a couple of
            // short writes.
            EngineKind::Queue => assert!(
                stats.write_syscalls <= 10,
                "{} syscalls",
                stats.write_syscalls
            ),
            #[cfg(feature = "reference-engine")]
            EngineKind::TokioBroadcast => assert_eq!(stats.write_syscalls, 500),
        }
    }
}

/// The writer threads' sweeper: one delivery pass that queues two frames for each of 200
/// connections (a message and its unread notice) is written with one `writev` per connection,
/// every connection getting both frames in order; a second pass the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_costs_one_writev_per_connection_on_the_writer_threads() {
    const N: usize = 200;
    let fanout = Fanout::with_writer_threads(EngineKind::Queue, roomy(), 2);
    let v = variant("k");
    let mut pairs = Vec::with_capacity(N);
    for i in 0..N {
        let p = connect(&fanout).await;
        p.conn.subscribe("room", &v);
        p.conn.subscribe(&format!("user_{i}"), &v);
        pairs.push(p);
    }
    for round in 0..2u8 {
        let before = fanout.stats().write_syscalls;
        hearth::fanout::one_pass(|| {
            fanout.broadcast("room", &[b'm', round]);
            let mut i = 0;
            fanout.broadcast_each(
                &mut |stream: &mut String| {
                    if i == N {
                        return false;
                    }
                    stream.clear();
                    stream.push_str(&format!("user_{i}"));
                    i += 1;
                    true
                },
                &[b'u', round],
            );
        });
        for p in &mut pairs {
            assert_eq!(read_text(&mut p.client).await, wrapped(&v, &[b'm', round]));
            assert_eq!(read_text(&mut p.client).await, wrapped(&v, &[b'u', round]));
        }
        let writes = fanout.stats().write_syscalls - before;
        assert_eq!(writes, N as u64, "round {round}: one writev per connection");
    }
}

/// A broadcast to a numbered family's stream of each member (a post's unread notices): every
/// subscribed member gets it once, a positioned one with its own stream's stamp; members who
/// left (or never came) get nothing; `next` is asked for every id and the stamp only for the
/// positioned subscriber's stream. The same with the engine's bits by id
/// (`Fanout::with_numbered`) and without, where every stream is looked up by name (the queue
/// engine's: the reference engine names every stream and ignores positions).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_numbered_broadcast_reaches_each_subscribed_member_once() {
    const FAMILY: Numbered = hearth::streams::UNREADS;
    for with_bits in [true, false] {
        let fanout = Fanout::with_writer_threads(EngineKind::Queue, roomy(), 1);
        let fanout = if with_bits {
            fanout.with_numbered(&[FAMILY])
        } else {
            fanout
        };
        let plain = variant("u");
        let mut positioned = variant("p");
        positioned.positioned = true;
        // Members 3 (positioned), 7 (left and came back), 12 (left), 65,536 (another chunk
        // of bits), 2^20 (past the table) and -1 (negative: looked up by name).
        let subscribed = [3i64, 7, 12, 65_536, 1 << 20, -1];
        let mut pairs = Vec::new();
        for id in subscribed {
            let p = connect(&fanout).await;
            let v = if id == 3 { &positioned } else { &plain };
            p.conn.subscribe(&hearth::streams::unreads(id), v);
            p.conn.subscribe("end", &plain);
            pairs.push((id, p));
        }
        for (id, p) in &pairs {
            if *id == 7 || *id == 12 {
                p.conn.unsubscribe(&hearth::streams::unreads(*id), "u");
            }
        }
        pairs[1]
            .1
            .conn
            .subscribe(&hearth::streams::unreads(7), &plain);
        let ids: Vec<i64> = (-1..=20).chain([65_536, 1 << 20]).collect();
        let mut asked = 0;
        let mut stamped = Vec::new();
        let mut remaining = ids.iter();
        let reached = fanout.broadcast_numbered_at(
            &FAMILY,
            &mut || {
                asked += 1;
                remaining.next().copied()
            },
            b"n",
            &mut |stream| {
                stamped.push(stream.to_owned());
                Some(Stamp {
                    suffix: Bytes::from(format!(",\"stream_id\":\"{stream}\"}}")),
                    epoch: "e".into(),
                    offset: 1,
                })
            },
        );
        fanout.broadcast("end", b"end");
        let case = format!("bits {with_bits}");
        assert_eq!(asked, ids.len() + 1, "{case}: every id asked, then the end");
        assert_eq!(reached, 5, "{case}");
        assert_eq!(stamped, ["user_3_unreads"], "{case}");
        for (id, p) in &mut pairs {
            let first = read_text(&mut p.client).await;
            if *id == 12 {
                assert_eq!(first, wrapped(&plain, b"end"), "{case}: 12 left");
                continue;
            }
            let expected = match *id {
                3 => [
                    &positioned.prefix[..],
                    b"n",
                    b",\"stream_id\":\"user_3_unreads\"}",
                ]
                .concat(),
                _ => wrapped(&plain, b"n"),
            };
            assert_eq!(first, expected, "{case}: member {id}");
            assert_eq!(
                read_text(&mut p.client).await,
                wrapped(&plain, b"end"),
                "{case}: member {id} once"
            );
        }
    }
}
