//! Fan-out benchmarks, in process (no sockets): what a broadcast costs per subscriber.
//!
//! - `enqueue_per_subscriber/N`: the default engine's `broadcast` into N subscribers' outboxes
//!   (one stream, one identifier variant, a 1.5 KB message). Only the broadcast calls are
//!   timed, in runs of up to 8 broadcasts (the outbox ring's slots: a writer that keeps up
//!   never lets more queue, so every push takes the lock-free ring, not the overflow of a
//!   backed-up connection); the outboxes are drained outside the timed part.
//!   Throughput is per subscriber, so time / N is the enqueue cost of one subscriber.
//! - `broadcast_1000/{queue,tokio-broadcast}`: one broadcast to 1,000 subscribers plus every
//!   subscriber taking it, for both engines in one run. For the reference engine that is the
//!   channel `send` plus each receiver's `recv`, the way a tokio-broadcast hub is usually
//!   measured; for the default engine it is the broadcast plus each outbox being drained.
//! - `unreads_1000/{no-history,history,history-by-name}`: one post's unread notice
//!   (`{"roomId":1}`) to each of 1,000 members' own `user_<id>_unreads` stream through the
//!   in-process bus (`Bus::publish_each`), each member one subscribed connection, plus every
//!   outbox being drained: without a stream history, with the server's (which gives each of
//!   those streams its next position in a table by user id), and with those streams in the
//!   history's map by name as any other stream. The differences are what the positions cost
//!   per member.
//!
//! Run: `cargo bench --bench fanout --features test-support,reference-engine -- --warm-up-time 1
//! --measurement-time 3` (`test-support` is required; without `reference-engine` the
//! `tokio-broadcast` case is left out).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hearth::fanout::{Connection, EngineKind, Fanout, QueueLimits, Variant};
use hearth::history::MemoryHistory;
use hearth::pubsub::{Bus, LocalBus};
use hearth::rails::json::JsonEscaping;

const STREAM: &str = "Z2lkOi8vY2FtcGZpcmUvUm9vbS8x:messages";

/// Broadcasts timed per run (the ring's 8 slots); the outboxes are drained between runs.
const RUN: u64 = 8;

fn message() -> Vec<u8> {
    let mut m = br#""<turbo-stream action=\"append\" target=\"messages\"><template>"#.to_vec();
    m.resize(1500 - 30, b'x');
    m.extend_from_slice(br#"</template></turbo-stream>""#);
    m
}

fn setup(kind: EngineKind, subscribers: usize) -> (Fanout, Vec<Connection>) {
    let fanout = Fanout::new(kind, QueueLimits::default());
    let variant = Variant::new(
        r#"{"channel":"Turbo::StreamsChannel","signed_stream_name":"abc--123"}"#,
        r#"{"identifier":"{\"channel\":\"Turbo::StreamsChannel\",\"signed_stream_name\":\"abc--123\"}","message":"#,
        "}",
    );
    let conns: Vec<Connection> = (0..subscribers).map(|_| fanout.attach_detached()).collect();
    for conn in &conns {
        conn.subscribe(STREAM, &variant);
    }
    (fanout, conns)
}

fn drain(fanout: &Fanout, conns: &[Connection]) -> usize {
    conns.iter().map(|c| fanout.drain_detached(c)).sum()
}

fn enqueue_per_subscriber(c: &mut Criterion) {
    let message = message();
    let mut group = c.benchmark_group("enqueue_per_subscriber");
    for n in [1usize, 100, 1_000, 10_000] {
        let (fanout, conns) = setup(EngineKind::Queue, n);
        // Warm up: allocate every outbox ring.
        fanout.broadcast(STREAM, &message);
        drain(&fanout, &conns);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    let run = left.min(RUN);
                    let start = Instant::now();
                    for _ in 0..run {
                        black_box(fanout.broadcast(STREAM, black_box(&message)));
                    }
                    timed += start.elapsed();
                    assert_eq!(drain(&fanout, &conns), n * run as usize);
                    left -= run;
                }
                timed
            })
        });
    }
    group.finish();
}

fn broadcast_1000(c: &mut Criterion) {
    const N: usize = 1_000;
    let message = message();
    let mut group = c.benchmark_group("broadcast_1000");
    group.throughput(Throughput::Elements(N as u64));
    for (name, kind) in [
        ("queue", EngineKind::Queue),
        #[cfg(feature = "reference-engine")]
        ("tokio-broadcast", EngineKind::TokioBroadcast),
    ] {
        let (fanout, conns) = setup(kind, N);
        fanout.broadcast(STREAM, &message);
        drain(&fanout, &conns);
        group.bench_function(name, |b| {
            b.iter(|| {
                black_box(fanout.broadcast(STREAM, black_box(&message)));
                drain(&fanout, &conns)
            })
        });
    }
    group.finish();
}

fn unreads_1000(c: &mut Criterion) {
    const N: i64 = 1_000;
    let notice = br#"{"roomId":1}"#;
    let mut group = c.benchmark_group("unreads_1000");
    group.throughput(Throughput::Elements(N as u64));
    for name in ["no-history", "history", "history-by-name"] {
        let fanout = Fanout::new(EngineKind::Queue, QueueLimits::default());
        let history = || {
            MemoryHistory::new(
                hearth::history::DEFAULT_LIMIT,
                Duration::from_secs(hearth::history::DEFAULT_TTL_SECONDS),
            )
        };
        let bus = match name {
            "history" => LocalBus::with_history(
                fanout.clone(),
                std::sync::Arc::new(history().with_numbered(&hearth::streams::MARKS)),
                JsonEscaping::default(),
            ),
            "history-by-name" => LocalBus::with_history(
                fanout.clone(),
                std::sync::Arc::new(history()),
                JsonEscaping::default(),
            ),
            _ => LocalBus::new(fanout.clone()),
        };
        let conns: Vec<Connection> = (1..=N)
            .map(|id| {
                let conn = fanout.attach_detached();
                let identifier = r#"{"channel":"UnreadRoomsChannel"}"#;
                let variant = Variant::new(
                    identifier,
                    r#"{"identifier":"{\"channel\":\"UnreadRoomsChannel\"}","message":"#,
                    "}",
                );
                conn.subscribe(&hearth::streams::unreads(id), &variant);
                conn
            })
            .collect();
        let post = || {
            let mut members = 1..=N;
            bus.publish_each(
                &mut |stream| match members.next() {
                    Some(id) => {
                        hearth::streams::write_unreads(stream, id);
                        true
                    }
                    None => false,
                },
                black_box(notice),
            )
        };
        post();
        drain(&fanout, &conns);
        group.bench_function(name, |b| {
            b.iter(|| {
                black_box(post());
                drain(&fanout, &conns)
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    enqueue_per_subscriber,
    broadcast_1000,
    unreads_1000
);
criterion_main!(benches);
