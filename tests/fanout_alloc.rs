//! Allocation discipline of the broadcast path, counted with a wrapping global allocator.
//!
//! A steady-state broadcast must allocate per identifier variant (the one shared frame), never
//! per subscriber: the count must be the same at 10 and at 1,000 subscribers. Subscribers are
//! in-process connections without sockets (`attach_detached`), warmed up (their outboxes
//! allocated) and drained between broadcasts, and only allocations made on the measuring
//! thread while a broadcast runs are counted. Needs the `test-support` feature; the reference
//! engine's cases also `reference-engine`.
//!
//! An app's channels over AnyCable's RPC (`--rpc-url`) attach the streams the app answers
//! with under the same per-identifier variants, and are held to the same: one frame per
//! identifier, whatever the subscribers.
//!
//! Compressed broadcasts (permessage-deflate, `src/fanout/deflate.rs`) are held to the same: one
//! compression per broadcast and compressed variant (counted by the engine's
//! `frames_compressed`), never per subscriber, and no more allocations than a plain frame once
//! the broadcasting thread's compressor exists.

// The one use of unsafe in the workspace, and the measured need for it: `GlobalAlloc` is an
// unsafe trait, so a counting allocator needs `unsafe impl` and unsafe calls into `System`.
// The workspace lint is `deny` (not `forbid`) so that this file alone can allow it.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use hearth::fanout::deflate::{Deflate, MIN_COMPRESSED_PAYLOAD};
use hearth::fanout::frame::Frame;
use hearth::fanout::{Connection, EngineKind, Fanout, QueueLimits, Variant};

/// Forwards to the system allocator and counts allocation calls made on a thread that has
/// counting switched on.
struct Counting;

thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: never panic inside the allocator, even during thread teardown.
    let _ = ENABLED.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the counting touches only const-initialised thread-locals, which
// never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations made on this thread while `f` runs.
fn count_allocations<R>(f: impl FnOnce() -> R) -> (u64, R) {
    COUNT.with(|n| n.set(0));
    ENABLED.with(|on| on.set(true));
    let result = f();
    ENABLED.with(|on| on.set(false));
    (COUNT.with(Cell::get), result)
}

const MESSAGE: &[u8] = br#""<turbo-stream action=\"append\" target=\"messages\"><template>hello</template></turbo-stream>""#;

/// `subscribers` detached connections on one stream, split evenly over `variants` variants.
fn setup(kind: EngineKind, subscribers: usize, variants: usize) -> (Fanout, Vec<Connection>) {
    let fanout = Fanout::new(kind, QueueLimits::default());
    let variants: Vec<Variant> = (0..variants)
        .map(|v| {
            Variant::new(
                format!("id{v}"),
                format!(r#"{{"identifier":"{{\"channel\":\"C{v}\"}}","message":"#),
                "}",
            )
        })
        .collect();
    let conns: Vec<Connection> = (0..subscribers).map(|_| fanout.attach_detached()).collect();
    for (i, conn) in conns.iter().enumerate() {
        conn.subscribe("room:1", &variants[i % variants.len()]);
    }
    (fanout, conns)
}

fn drain(fanout: &Fanout, conns: &[Connection]) -> usize {
    conns.iter().map(|c| fanout.drain_detached(c)).sum()
}

/// The most allocations any of several steady-state broadcasts made (after warm-up, with
/// every queue drained between broadcasts).
fn broadcast_allocations(kind: EngineKind, subscribers: usize, variants: usize) -> u64 {
    let (fanout, conns) = setup(kind, subscribers, variants);
    for _ in 0..3 {
        assert_eq!(fanout.broadcast("room:1", MESSAGE), subscribers);
        assert_eq!(drain(&fanout, &conns), subscribers);
    }
    let mut worst = 0;
    for _ in 0..5 {
        let (allocations, queued) = count_allocations(|| fanout.broadcast("room:1", MESSAGE));
        assert_eq!(queued, subscribers);
        assert_eq!(drain(&fanout, &conns), subscribers);
        worst = worst.max(allocations);
    }
    worst
}

fn send_all_allocations(kind: EngineKind, connections: usize) -> u64 {
    let (fanout, conns) = setup(kind, connections, 1);
    let ping = Frame::text(br#"{"type":"ping","message":1712345678}"#);
    for _ in 0..3 {
        assert_eq!(fanout.send_all(&ping), connections);
        drain(&fanout, &conns);
    }
    let (allocations, queued) = count_allocations(|| fanout.send_all(&ping));
    assert_eq!(queued, connections);
    allocations
}

#[test]
fn the_counter_sees_allocations() {
    let (n, v) = count_allocations(|| vec![1u8; 100]);
    assert_eq!(n, 1);
    drop(v);
}

#[test]
fn queue_engine_broadcast_allocates_per_variant_not_per_subscriber() {
    for variants in [1, 3] {
        let at_10 = broadcast_allocations(EngineKind::Queue, 10 * variants, variants);
        let at_1000 = broadcast_allocations(EngineKind::Queue, 1000 * variants, variants);
        assert_eq!(
            at_10, at_1000,
            "{variants} variant(s): allocations must not grow with subscribers"
        );
        // One frame buffer per variant, plus `Bytes`' shared header made on the frame's first
        // clone: at most two allocations per variant.
        assert!(
            at_1000 <= 2 * variants as u64,
            "{at_1000} allocations for {variants} variant(s)"
        );
        assert!(at_1000 >= variants as u64, "each variant builds one frame");
    }
}

#[cfg(feature = "reference-engine")]
#[test]
fn reference_engine_broadcast_allocates_once_whatever_the_receivers() {
    let at_10 = broadcast_allocations(EngineKind::TokioBroadcast, 10, 1);
    let at_1000 = broadcast_allocations(EngineKind::TokioBroadcast, 1000, 1);
    assert_eq!(at_10, at_1000);
}

#[test]
fn send_all_does_not_allocate_per_connection() {
    for kind in [
        EngineKind::Queue,
        #[cfg(feature = "reference-engine")]
        EngineKind::TokioBroadcast,
    ] {
        assert_eq!(
            send_all_allocations(kind, 10),
            send_all_allocations(kind, 1000),
            "{kind:?}"
        );
    }
    assert_eq!(send_all_allocations(EngineKind::Queue, 1000), 0);
}

/// The writer's drain over a real socket: after warm-up, a broadcast plus the writer writing
/// it plus the client reading it allocates only what the broadcast itself does (the shared
/// frame): the writer's batch and slices are retained, not allocated per drain.
#[test]
fn steady_state_drains_do_not_allocate() {
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // Writers on this thread, so the thread-local counter sees the drain's allocations.
        let fanout = Fanout::new_inline_writers(EngineKind::Queue, QueueLimits::default());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let mut client = client.unwrap();
        let (_server_read, server_write) = accepted.unwrap().0.into_split();
        let conn = fanout.attach(server_write);
        let variant = Variant::new("k", "[", "]");
        conn.subscribe("s", &variant);
        let frame_len = Frame::text_parts(&[b"[", MESSAGE, b"]"]).len();
        let mut buf = vec![0u8; frame_len];

        for _ in 0..50 {
            assert_eq!(fanout.broadcast("s", MESSAGE), 1);
            client.read_exact(&mut buf).await.unwrap();
        }
        let per_broadcast = broadcast_allocations(EngineKind::Queue, 1, 1);
        const ROUNDS: u64 = 200;
        COUNT.with(|n| n.set(0));
        ENABLED.with(|on| on.set(true));
        for _ in 0..ROUNDS {
            assert_eq!(fanout.broadcast("s", MESSAGE), 1);
            client.read_exact(&mut buf).await.unwrap();
        }
        ENABLED.with(|on| on.set(false));
        let total = COUNT.with(Cell::get);
        assert_eq!(
            &buf[buf.len() - MESSAGE.len() - 1..],
            &[MESSAGE, b"]"].concat()[..]
        );
        assert_eq!(fanout.stats().frames_written, 50 + ROUNDS);
        assert_eq!(
            total,
            ROUNDS * per_broadcast,
            "allocations beyond the broadcasts' own frames"
        );
    });
}

/// Bursts longer than the outbox's small ring spill into its overflow. Growing the overflow
/// (and the writer's batch) allocates; once grown, a steady stream of such bursts allocates
/// nothing beyond the broadcasts' own frames.
#[test]
fn steady_state_bursts_past_the_ring_do_not_allocate_once_grown() {
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    const BURST: usize = 40;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let fanout = Fanout::new_inline_writers(EngineKind::Queue, QueueLimits::default());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let mut client = client.unwrap();
        let (_server_read, server_write) = accepted.unwrap().0.into_split();
        let conn = fanout.attach(server_write);
        conn.subscribe("s", &Variant::new("k", "[", "]"));
        let frame_len = Frame::text_parts(&[b"[", MESSAGE, b"]"]).len();
        let mut buf = vec![0u8; frame_len * BURST];
        async fn round(fanout: &Fanout, client: &mut TcpStream, buf: &mut [u8]) {
            for _ in 0..BURST {
                assert_eq!(fanout.broadcast("s", MESSAGE), 1);
            }
            client.read_exact(buf).await.unwrap();
        }
        for _ in 0..10 {
            round(&fanout, &mut client, &mut buf).await;
        }
        let per_broadcast = broadcast_allocations(EngineKind::Queue, 1, 1);
        const ROUNDS: u64 = 50;
        COUNT.with(|n| n.set(0));
        ENABLED.with(|on| on.set(true));
        for _ in 0..ROUNDS {
            round(&fanout, &mut client, &mut buf).await;
        }
        ENABLED.with(|on| on.set(false));
        let total = COUNT.with(Cell::get);
        assert_eq!(fanout.stats().frames_written, (10 + ROUNDS) * BURST as u64);
        assert_eq!(
            total,
            ROUNDS * BURST as u64 * per_broadcast,
            "allocations beyond the broadcasts' own frames"
        );
    });
}

/// Allocations of one `broadcast_each` over `streams` streams, one subscriber each, all with the
/// same identifier (a post's unread notices: one stream per member), after warm-up.
fn broadcast_each_allocations(streams: usize) -> u64 {
    let fanout = Fanout::new(EngineKind::Queue, QueueLimits::default());
    let variant = Variant::new(
        "unreads",
        r#"{"identifier":"{\"channel\":\"UnreadRoomsChannel\"}","message":"#,
        "}",
    );
    let conns: Vec<Connection> = (0..streams).map(|_| fanout.attach_detached()).collect();
    for (i, conn) in conns.iter().enumerate() {
        conn.subscribe(&format!("user_{i}_unreads"), &variant);
    }
    let each = |fanout: &Fanout| {
        use std::fmt::Write as _;
        let mut i = 0;
        fanout.broadcast_each(
            &mut |name| {
                if i == streams {
                    return false;
                }
                name.clear();
                // Within the buffer's capacity: no allocation.
                let _ = write!(name, "user_{i}_unreads");
                i += 1;
                true
            },
            br#"{"roomId":1}"#,
        )
    };
    for _ in 0..3 {
        assert_eq!(each(&fanout), streams);
        assert_eq!(drain(&fanout, &conns), streams);
    }
    let (allocations, queued) = count_allocations(|| each(&fanout));
    assert_eq!(queued, streams);
    assert_eq!(drain(&fanout, &conns), streams);
    allocations
}

#[test]
fn broadcast_each_builds_one_frame_for_streams_that_share_an_identifier() {
    let at_10 = broadcast_each_allocations(10);
    let at_1000 = broadcast_each_allocations(1000);
    assert_eq!(at_10, at_1000, "allocations must not grow with the streams");
    // The name buffer, the list of frames built, and the one frame.
    assert!(at_1000 <= 4, "{at_1000} allocations");
}

/// The most allocations any of several steady-state broadcasts to a stream that `subscribers`
/// subscriptions of an app's channel follow (`--rpc-url`): each attached as the connection
/// attaches the `streams` of the app's `subscribe` answer, with the variant of its identifier
/// (`cable::protocol::variant`), spread over the identifiers in `identifiers` (the params
/// that tell subscriptions apart), beside as many Campfire subscriptions of a signed Turbo
/// stream on the same stream.
fn rpc_stream_broadcast_allocations(subscribers: usize, identifiers: &[&str]) -> u64 {
    let fanout = Fanout::new(EngineKind::Queue, QueueLimits::default());
    let json = hearth::rails::json::JsonEscaping::default();
    let variant = |identifier: &str| hearth::cable::protocol::variant(&identifier.into(), json);
    let app: Vec<Variant> = identifiers.iter().map(|id| variant(id)).collect();
    let turbo =
        variant(r#"{"channel":"Turbo::StreamsChannel","signed_stream_name":"ImJlbmNoIg==--0f"}"#);
    let conns: Vec<Connection> = (0..2 * subscribers)
        .map(|_| fanout.attach_detached())
        .collect();
    for (i, conn) in conns.iter().enumerate() {
        match i.checked_sub(subscribers) {
            None => conn.subscribe("bench", &app[i % app.len()]),
            Some(_) => conn.subscribe("bench", &turbo),
        }
    }
    let mut worst = 0;
    for round in 0..8 {
        let (allocations, queued) = count_allocations(|| fanout.broadcast("bench", MESSAGE));
        assert_eq!(queued, 2 * subscribers);
        assert_eq!(drain(&fanout, &conns), 2 * subscribers);
        if round >= 3 {
            worst = worst.max(allocations);
        }
    }
    worst
}

#[test]
fn a_broadcast_to_an_apps_stream_builds_one_frame_per_identifier_never_per_subscriber() {
    for identifiers in [
        &[r#"{"channel":"StreamChannel","name":"bench"}"#][..],
        &[
            r#"{"channel":"StreamChannel","name":"bench"}"#,
            r#"{"channel":"StreamChannel","name":"bench","mine":true}"#,
            r#"{"channel":"ChatChannel","room":"bench"}"#,
        ][..],
    ] {
        let at_10 = rpc_stream_broadcast_allocations(10 * identifiers.len(), identifiers);
        let at_1000 = rpc_stream_broadcast_allocations(1000 * identifiers.len(), identifiers);
        assert_eq!(
            at_10, at_1000,
            "{identifiers:?}: allocations must not grow with subscribers"
        );
        // The app's identifiers and Turbo's: one frame each, and its shared header.
        let variants = identifiers.len() as u64 + 1;
        assert!(
            (variants..=2 * variants).contains(&at_1000),
            "{at_1000} allocations for {variants} variants"
        );
    }
}

/// The most allocations any of several steady-state positioned broadcasts made to
/// `subscribers` extended-protocol subscriptions, each with the gate that notes the last
/// position sent (`Connection::track`).
fn tracked_broadcast_allocations(subscribers: usize) -> u64 {
    let fanout = Fanout::new(EngineKind::Queue, QueueLimits::default());
    let mut variant = Variant::new(
        "ext",
        r#"{"identifier":"{\"channel\":\"C\"}","message":"#,
        "}",
    );
    variant.positioned = true;
    let conns: Vec<Connection> = (0..subscribers).map(|_| fanout.attach_detached()).collect();
    for conn in &conns {
        conn.track("room:1", &variant.key);
        conn.subscribe("room:1", &variant);
    }
    let epoch: std::sync::Arc<str> = std::sync::Arc::from("epoch123");
    let mut worst = 0;
    for offset in 1..=8u64 {
        let mut stamp = |_: &str| {
            Some(hearth::fanout::Stamp {
                suffix: bytes::Bytes::from_static(b",\"offset\":1}"),
                epoch: epoch.clone(),
                offset,
            })
        };
        let (allocations, queued) =
            count_allocations(|| fanout.broadcast_at("room:1", MESSAGE, &mut stamp));
        assert_eq!(queued, subscribers);
        assert_eq!(drain(&fanout, &conns), subscribers);
        if offset > 3 {
            worst = worst.max(allocations);
        }
    }
    worst
}

#[test]
fn a_tracked_positioned_broadcast_does_not_allocate_per_subscriber() {
    assert_eq!(
        tracked_broadcast_allocations(10),
        tracked_broadcast_allocations(1000)
    );
}

/// A post's turbo-stream as long as a short message's (1.5 KB), above the compression
/// threshold.
fn long_message() -> Vec<u8> {
    let mut m = br#""<turbo-stream action=\"append\" target=\"messages\"><template>"#.to_vec();
    while m.len() < 1500 {
        m.extend_from_slice(br#"<div class=\"message__body\">hello, room</div>"#);
    }
    m.extend_from_slice(br#"</template></turbo-stream>""#);
    assert!(m.len() > MIN_COMPRESSED_PAYLOAD);
    m
}

/// `subscribers` detached connections on one stream over `plain` plain and `compressed`
/// permessage-deflate variants (15-bit window; each compressed one a plain one's identifier
/// too when there are as many), subscribers dealt round-robin over all of them. Returns the
/// most allocations and the most compressions any of several steady-state broadcasts of
/// `message` made.
fn compressed_broadcast_counts(
    subscribers: usize,
    plain: usize,
    compressed: usize,
    message: &[u8],
) -> (u64, u64) {
    let fanout = Fanout::new(EngineKind::Queue, QueueLimits::default());
    let deflate = Deflate::new(15);
    let variant = |v: usize| {
        Variant::new(
            format!("id{v}"),
            format!(r#"{{"identifier":"{{\"channel\":\"C{v}\"}}","message":"#),
            "}",
        )
    };
    let variants: Vec<Variant> = (0..plain)
        .map(variant)
        .chain((0..compressed).map(|v| variant(v).deflated(deflate)))
        .collect();
    let conns: Vec<Connection> = (0..subscribers).map(|_| fanout.attach_detached()).collect();
    for (i, conn) in conns.iter().enumerate() {
        conn.subscribe("room:1", &variants[i % variants.len()]);
    }
    for _ in 0..3 {
        assert_eq!(fanout.broadcast("room:1", message), subscribers);
        assert_eq!(drain(&fanout, &conns), subscribers);
    }
    let (mut worst_allocations, mut worst_compressions) = (0, 0);
    for _ in 0..5 {
        let before = fanout.stats().frames_compressed;
        let (allocations, queued) = count_allocations(|| fanout.broadcast("room:1", message));
        assert_eq!(queued, subscribers);
        assert_eq!(drain(&fanout, &conns), subscribers);
        worst_allocations = worst_allocations.max(allocations);
        worst_compressions = worst_compressions.max(fanout.stats().frames_compressed - before);
    }
    (worst_allocations, worst_compressions)
}

#[test]
fn a_compressed_broadcast_compresses_once_per_variant_never_per_subscriber() {
    let message = long_message();
    for (plain, compressed) in [(0, 1), (0, 3), (1, 1), (2, 3)] {
        let variants = plain + compressed;
        let (alloc_10, compressions_10) =
            compressed_broadcast_counts(10 * variants, plain, compressed, &message);
        let (alloc_1000, compressions_1000) =
            compressed_broadcast_counts(1000 * variants, plain, compressed, &message);
        let case = format!("{plain} plain and {compressed} compressed variant(s)");
        // One compression per compressed variant, whether 10 or 1,000 subscribers share it.
        assert_eq!(compressions_10, compressed as u64, "{case}");
        assert_eq!(compressions_1000, compressed as u64, "{case}");
        // And the allocations of a plain broadcast: the frame buffer (compressed or not) and
        // `Bytes`' shared header per variant, the same at 10 and at 1,000 subscribers.
        assert_eq!(
            alloc_10, alloc_1000,
            "{case}: allocations grow with subscribers"
        );
        assert!(
            alloc_1000 <= 2 * variants as u64,
            "{case}: {alloc_1000} allocations"
        );
    }
}

#[test]
fn short_broadcasts_to_compressed_variants_are_not_compressed() {
    let (allocations, compressions) = compressed_broadcast_counts(1000, 1, 1, MESSAGE);
    assert!(MESSAGE.len() < MIN_COMPRESSED_PAYLOAD);
    assert_eq!(compressions, 0);
    assert!(allocations <= 4, "{allocations} allocations");
}

/// A compressed subscriber's drain over a real socket: the frame on the wire is the shared
/// compressed one (RSV1 set), and a steady stream of them allocates nothing beyond the
/// broadcasts' own frames.
#[test]
fn steady_state_compressed_drains_do_not_allocate() {
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    let message = long_message();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let fanout = Fanout::new_inline_writers(EngineKind::Queue, QueueLimits::default());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        let mut client = client.unwrap();
        let (_server_read, server_write) = accepted.unwrap().0.into_split();
        let conn = fanout.attach(server_write);
        let deflate = Deflate::new(15).unwrap();
        conn.subscribe("s", &Variant::new("k", "[", "]").deflated(Some(deflate)));
        let expected = deflate.text(&[b"[", &message, b"]"]).0;
        assert_eq!(expected.0[0], 0x80 | 0x40 | 0x1, "final text, RSV1");
        let mut buf = vec![0u8; expected.len()];
        for _ in 0..50 {
            assert_eq!(fanout.broadcast("s", &message), 1);
            client.read_exact(&mut buf).await.unwrap();
        }
        assert_eq!(buf, expected.0.as_ref());
        const ROUNDS: u64 = 100;
        COUNT.with(|n| n.set(0));
        ENABLED.with(|on| on.set(true));
        for _ in 0..ROUNDS {
            assert_eq!(fanout.broadcast("s", &message), 1);
            client.read_exact(&mut buf).await.unwrap();
        }
        ENABLED.with(|on| on.set(false));
        let total = COUNT.with(Cell::get);
        assert!(
            total <= 2 * ROUNDS,
            "{total} allocations for {ROUNDS} compressed broadcasts"
        );
        assert_eq!(fanout.stats().frames_compressed, 50 + ROUNDS);
    });
}
