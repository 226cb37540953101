//! Instruction counts (Callgrind, through gungraun): what one operation costs, counted in
//! instructions, which repeat for the same binary where wall-clock figures on a shared machine
//! drift by a quarter from run to run.
//!
//! - `post::one_post`: one `POST /rooms/1/messages` through the whole HTTP stack (a fresh TCP
//!   connection, hyper, the request preamble, the route's member check, sanitizing, the insert
//!   and its commit, the partial's render, the broadcast of the append and the room's unread
//!   notices) until a subscribed cable client has read the append. Every thread counts: the
//!   request's, sqlx's SQLite worker, the fan-out writer.
//! - `connect::connect_4`: one cable connection (TCP connect, the WebSocket upgrade, the
//!   welcome) and its 4 subscriptions of a room page, until the 4 confirmations are read.
//! - `fanout::broadcast_1000`: one broadcast of a 1.5 KB message to 1,000 in-process
//!   subscribers, plus each subscriber's outbox drained.
//! - `fanout::enqueue_1` / `fanout::enqueue_1000`: the broadcast alone into 1 and 1,000
//!   outboxes; (enqueue_1000 − enqueue_1) ÷ 999 is the enqueue cost per subscriber.
//! - `unread::unreads_1007_by_id`: one post's unread notices in the sweep's room, 1,007
//!   members of whom 50 have a subscribed connection (the N = 50 cell), through the in-process
//!   bus with the server's history, as the server sends them (positions by user id), plus the
//!   50 outboxes drained; `unread::unreads_1007_by_name`: the same notices by stream name
//!   (each name parsed back for its retention and its id), as the server sent them before.
//!
//! Only the operation is counted: the benchmark runs Callgrind with instrumentation off
//! (`--instr-atstart=no`) and turns it on for the operation alone with Callgrind's client
//! requests, in every thread at once (the server's setup, a seeded database and a few warm-up
//! posts, runs uninstrumented and is not counted).
//!
//! Run: `cargo bench --bench instructions --features test-support` (needs valgrind and
//! `gungraun-runner` of the same version as the `gungraun` crate on `PATH`:
//! `cargo install gungraun-runner --version 0.20.0`). `scripts/bench-instructions` runs it and
//! compares the counts with `benches/instructions.baseline`.
#![allow(
    missing_docs,
    unreachable_pub,
    dead_code,
    missing_debug_implementations
)]
// Two Callgrind client requests (below) are a few instructions of inline assembly.
#![allow(unsafe_code)]
// gungraun's `main!` ends the process with its runner's exit code.
#![allow(clippy::exit)]

#[path = "../tests/suite/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Duration;

use gungraun::{
    library_benchmark, library_benchmark_group, main, Callgrind, EntryPoint, LibraryBenchmarkConfig,
};
use hearth::fanout::{Connection, EngineKind, Fanout, QueueLimits, Variant};
use hearth::history::MemoryHistory;
use hearth::pubsub::{Broadcaster, Bus, LocalBus};
use hearth::rails::json::JsonEscaping;

use common::{Ws, WsEvent, PROTOCOLS};

const T: Duration = Duration::from_secs(120);
const EMAIL: &str = "david@example.com";
const PASSWORD: &str = "secret123456";
const ROOM: i64 = 1;

/// Callgrind's client requests, as `valgrind/callgrind.h` defines them: a no-op outside
/// Valgrind. (gungraun's own need libclang at build time, for bindgen.)
mod callgrind {
    /// `VG_USERREQ_TOOL_BASE('C','T')`: Callgrind's first request (`DUMP_STATS`).
    const BASE: u64 = ((b'C' as u64) << 24) | ((b'T' as u64) << 16);
    /// `VG_USERREQ__START_INSTRUMENTATION`.
    const START_INSTRUMENTATION: u64 = BASE + 4;
    /// `VG_USERREQ__STOP_INSTRUMENTATION`.
    const STOP_INSTRUMENTATION: u64 = BASE + 5;

    /// `VALGRIND_DO_CLIENT_REQUEST_EXPR` for amd64: the special no-op sequence that Valgrind
    /// recognizes, with `%rax` pointing at the request and its five arguments.
    #[cfg(target_arch = "x86_64")]
    fn request(code: u64) {
        let args: [u64; 6] = [code, 0, 0, 0, 0, 0];
        let mut result: u64 = 0;
        // SAFETY: the sequence only rotates %rdi by 128 bits in all (a no-op) and exchanges
        // %rbx with itself; it reads `args`, which outlives the call, and writes %rdx only.
        unsafe {
            std::arch::asm!(
                "rol rdi, 3", "rol rdi, 13", "rol rdi, 61", "rol rdi, 51",
                "xchg rbx, rbx",
                in("rax") args.as_ptr(),
                inout("rdx") result,
                out("rdi") _,
                options(nostack),
            );
        }
        std::hint::black_box(result);
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn request(_code: u64) {
        panic!("the instruction benchmarks need x86-64");
    }

    pub fn start_instrumentation() {
        request(START_INSTRUMENTATION);
    }

    pub fn stop_instrumentation() {
        request(STOP_INSTRUMENTATION);
    }
}

/// Counts the instructions of `f` alone, in every thread.
fn counted<R>(f: impl FnOnce() -> R) -> R {
    callgrind::start_instrumentation();
    let out = f();
    callgrind::stop_instrumentation();
    out
}

/// A seeded server on a current-thread runtime, a signed-in client with the room's CSRF token,
/// and the room page's 4 subscription identifiers.
struct Served {
    server: Server,
    client: common::Client,
    csrf: String,
    identifiers: Vec<String>,
}

/// A seeded server without its periodic tasks, the access cache kept for the whole run, one
/// writer thread, and outgoing mail configured (its SMTP server is never reached: nothing on
/// the counted paths sends mail, and the counts show it).
async fn start_server() -> Server {
    let dir = common::temp_dir("bench");
    let mut config = hearth::config::Config::for_tests(&dir);
    config.ping_interval = 3600;
    config.writer_threads = 1;
    config.auth_cache_seconds = 3600;
    config.smtp_url = Some(String::from("smtp://mail.invalid:587").into());
    let server = hearth::app::Server::bind(config)
        .await
        .expect("server binds")
        .without_background_tasks();
    let addr = server.local_addr().expect("address");
    tokio::spawn(async move {
        server
            .run(std::future::pending())
            .await
            .expect("server runs");
    });
    Server { addr, dir }
}

/// The benchmark's server: its address and directory (removed on drop).
struct Server {
    addr: std::net::SocketAddr,
    dir: std::path::PathBuf,
}

impl Server {
    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    async fn signed_in(&self, email: &str, password: &str) -> common::Client {
        let mut c = common::Client {
            addr: self.addr,
            cookies: Vec::new(),
        };
        let r = c.login(email, password).await;
        assert_eq!(r.status, 302, "login failed: {}", r.body);
        c
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn serve() -> (tokio::runtime::Runtime, Served) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (server, client, csrf, identifiers) = rt.block_on(async {
        let server = start_server().await;
        let mut client = server.signed_in(EMAIL, PASSWORD).await;
        let (csrf, page) = client.room(ROOM).await;
        let room = loadgen::html::parse_room_page(&page).expect("room page");
        let stream = loadgen::html::room_message_stream(&room.sources)
            .expect("room stream")
            .identifier();
        let identifiers = vec![
            stream,
            format!("{{\"channel\":\"PresenceChannel\",\"room_id\":{ROOM}}}"),
            "{\"channel\":\"HeartbeatChannel\"}".to_owned(),
            "{\"channel\":\"UnreadRoomsChannel\"}".to_owned(),
        ];
        (server, client, csrf, identifiers)
    });
    (
        rt,
        Served {
            server,
            client,
            csrf,
            identifiers,
        },
    )
}

async fn connect(s: &Served) -> Ws {
    let mut ws = Ws::connect(
        s.server.addr,
        Some(&s.client.cookie_header()),
        Some(&s.server.origin()),
        Some(PROTOCOLS),
    )
    .await;
    assert_eq!(ws.status, 101, "{}", ws.response_head);
    let welcome = ws.next(T).await;
    assert_eq!(welcome, common::text(r#"{"type":"welcome"}"#));
    ws
}

/// Sends the 4 subscribe commands in one write (as a page's consumer does when it connects:
/// its subscriptions are created before the socket opens), then reads the 4 confirmations.
async fn subscribe_all(s: &Served, ws: &mut Ws) {
    use tokio::io::AsyncWriteExt;
    let frames = common::subscribe_frames(&s.identifiers);
    ws.stream.write_all(&frames).await.expect("subscribe");
    let mut confirmed = 0;
    while confirmed < s.identifiers.len() {
        match ws.next_non_ping(T).await {
            Some(WsEvent::Text(t)) if t.contains("confirm_subscription") => confirmed += 1,
            other => panic!("expected a confirmation, got {other:?}"),
        }
    }
}

/// Posts `body` and reads frames on `ws` until its append arrives.
async fn post_and_receive(s: &mut Served, ws: &mut Ws, cid: &str) {
    let r = s
        .client
        .post_message(ROOM, &format!("bench {cid}"), cid, &s.csrf.clone())
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    loop {
        match ws.next_non_ping(T).await {
            Some(WsEvent::Text(t)) if t.contains(cid) => return,
            Some(WsEvent::Text(_)) => {}
            other => panic!("expected the append, got {other:?}"),
        }
    }
}

struct Posting {
    rt: tokio::runtime::Runtime,
    served: Served,
    ws: Ws,
}

fn setup_post() -> Posting {
    let (rt, mut served) = serve();
    let ws = rt.block_on(async {
        let mut ws = connect(&served).await;
        subscribe_all(&served, &mut ws).await;
        // Warm-up: statements prepared, caches filled, first-use allocations done.
        for i in 0..8 {
            post_and_receive(&mut served, &mut ws, &format!("warmup-{i}")).await;
        }
        ws
    });
    Posting { rt, served, ws }
}

#[library_benchmark]
#[bench::one_post(setup = setup_post)]
fn one_post(mut p: Posting) -> Posting {
    counted(|| {
        p.rt.block_on(post_and_receive(&mut p.served, &mut p.ws, "counted-post"))
    });
    p
}

fn setup_connect() -> (tokio::runtime::Runtime, Served) {
    let (rt, served) = serve();
    rt.block_on(async {
        // Warm-up: one connection through every step first.
        let mut ws = connect(&served).await;
        subscribe_all(&served, &mut ws).await;
        let mut ws2 = connect(&served).await;
        subscribe_all(&served, &mut ws2).await;
    });
    (rt, served)
}

#[library_benchmark]
#[bench::connect_4(setup = setup_connect)]
fn connect_4((rt, s): (tokio::runtime::Runtime, Served)) -> (tokio::runtime::Runtime, Served, Ws) {
    let ws = counted(|| {
        rt.block_on(async {
            let mut ws = connect(&s).await;
            subscribe_all(&s, &mut ws).await;
            ws
        })
    });
    (rt, s, ws)
}

const STREAM: &str = "Z2lkOi8vY2FtcGZpcmUvUm9vbS8x:messages";

fn message() -> Vec<u8> {
    let mut m = br#""<turbo-stream action=\"append\" target=\"messages\"><template>"#.to_vec();
    m.resize(1500 - 30, b'x');
    m.extend_from_slice(br#"</template></turbo-stream>""#);
    m
}

struct Subscribers {
    fanout: Fanout,
    conns: Vec<Connection>,
    message: Vec<u8>,
}

fn subscribers(n: usize) -> Subscribers {
    let fanout = Fanout::new(EngineKind::Queue, QueueLimits::default());
    let variant = Variant::new(
        r#"{"channel":"Turbo::StreamsChannel","signed_stream_name":"abc--123"}"#,
        r#"{"identifier":"{\"channel\":\"Turbo::StreamsChannel\",\"signed_stream_name\":\"abc--123\"}","message":"#,
        "}",
    );
    let conns: Vec<Connection> = (0..n).map(|_| fanout.attach_detached()).collect();
    for conn in &conns {
        conn.subscribe(STREAM, &variant);
    }
    let message = message();
    // Warm-up: every outbox's ring allocated.
    for _ in 0..2 {
        fanout.broadcast(STREAM, &message);
        let drained: usize = conns.iter().map(|c| fanout.drain_detached(c)).sum();
        assert_eq!(drained, n);
    }
    Subscribers {
        fanout,
        conns,
        message,
    }
}

fn subscribers_1() -> Subscribers {
    subscribers(1)
}

fn subscribers_1000() -> Subscribers {
    subscribers(1_000)
}

#[library_benchmark]
#[bench::broadcast_1000(setup = subscribers_1000)]
fn broadcast(s: Subscribers) -> Subscribers {
    counted(|| {
        black_box(s.fanout.broadcast(STREAM, black_box(&s.message)));
        let drained: usize = s.conns.iter().map(|c| s.fanout.drain_detached(c)).sum();
        black_box(drained);
    });
    s
}

#[library_benchmark]
#[bench::enqueue_1(setup = subscribers_1)]
#[bench::enqueue_1000(setup = subscribers_1000)]
fn enqueue(s: Subscribers) -> Subscribers {
    counted(|| black_box(s.fanout.broadcast(STREAM, black_box(&s.message))));
    s
}

/// The sweep's room: 1,007 members, of whom the N = 50 cell's 50 are connected.
const MEMBERS: i64 = 1_007;
/// Every `MEMBERS / SUBSCRIBED`-th member has a connection subscribed to its unread stream.
const SUBSCRIBED: i64 = 50;

struct Unreads {
    bus: std::sync::Arc<LocalBus>,
    broadcaster: Broadcaster,
    fanout: Fanout,
    conns: Vec<Connection>,
    members: Vec<i64>,
}

/// An in-process bus with the server's history (the marks' positions in tables by id) and
/// engine (which of the marks' streams it holds, by id), the room's members, and a subscribed
/// `UnreadRoomsChannel` connection for 50 of them, warmed up (every outbox's ring allocated,
/// every table chunk in place).
fn unreads() -> Unreads {
    let fanout = Fanout::new(EngineKind::Queue, QueueLimits::default())
        .with_numbered(&hearth::streams::MARKS);
    let history = MemoryHistory::new(
        hearth::history::DEFAULT_LIMIT,
        Duration::from_secs(hearth::history::DEFAULT_TTL_SECONDS),
    )
    .with_numbered(&hearth::streams::MARKS);
    let json = JsonEscaping::default();
    let bus = std::sync::Arc::new(LocalBus::with_history(
        fanout.clone(),
        std::sync::Arc::new(history),
        json,
    ));
    let broadcaster = Broadcaster::with_sink(
        bus.clone(),
        json,
        "campfire",
        std::sync::Arc::new(hearth::metrics::Metrics::new()),
    );
    let variant = Variant::new(
        r#"{"channel":"UnreadRoomsChannel"}"#,
        r#"{"identifier":"{\"channel\":\"UnreadRoomsChannel\"}","message":"#,
        "}",
    );
    let members: Vec<i64> = (1..=MEMBERS).collect();
    let conns: Vec<Connection> = members
        .iter()
        .filter(|id| *id % (MEMBERS / SUBSCRIBED) == 0)
        .take(SUBSCRIBED as usize)
        .map(|&id| {
            let conn = fanout.attach_detached();
            conn.subscribe(&hearth::streams::unreads(id), &variant);
            conn
        })
        .collect();
    let u = Unreads {
        bus,
        broadcaster,
        fanout,
        conns,
        members,
    };
    for _ in 0..2 {
        assert_eq!(unreads_by_id(&u), SUBSCRIBED as usize);
        assert_eq!(unreads_by_name(&u), SUBSCRIBED as usize);
    }
    u
}

fn drain_unreads(u: &Unreads) -> usize {
    u.conns.iter().map(|c| u.fanout.drain_detached(c)).sum()
}

/// A post's notices as the server sends them ([`hearth::broadcasts::message_unreads`]:
/// positions by id), drained.
fn unreads_by_id(u: &Unreads) -> usize {
    u.broadcaster.broadcast_numbered(
        &hearth::streams::UNREADS,
        black_box(&u.members),
        black_box(br#"{"roomId":1}"#),
    );
    drain_unreads(u)
}

/// The same notices by name (`Bus::publish_each`: each name parsed back for its retention and
/// its id), drained: what the server did before positions by id.
fn unreads_by_name(u: &Unreads) -> usize {
    let mut members = black_box(&u.members).iter();
    u.bus.publish_each(
        &mut |stream| match members.next() {
            Some(&id) => {
                hearth::streams::write_unreads(stream, id);
                true
            }
            None => false,
        },
        black_box(br#"{"roomId":1}"#),
    );
    drain_unreads(u)
}

#[library_benchmark]
#[bench::unreads_1007_by_id(setup = unreads)]
fn unreads_by_id_counted(u: Unreads) -> Unreads {
    counted(|| black_box(unreads_by_id(&u)));
    u
}

#[library_benchmark]
#[bench::unreads_1007_by_name(setup = unreads)]
fn unreads_by_name_counted(u: Unreads) -> Unreads {
    counted(|| black_box(unreads_by_name(&u)));
    u
}

library_benchmark_group!(name = post; benchmarks = one_post);
library_benchmark_group!(name = unread; benchmarks = unreads_by_id_counted, unreads_by_name_counted);
library_benchmark_group!(name = connect; benchmarks = connect_4);
library_benchmark_group!(name = fanout; benchmarks = broadcast, enqueue);

main!(
    config = LibraryBenchmarkConfig::default()
        .tool(Callgrind::with_args(["--instr-atstart=no"]).entry_point(EntryPoint::None));
    library_benchmark_groups = post, connect, fanout, unread
);
