//! [`Fanout`] and [`Connection`]: the API the cable layer calls, and the default engine.
//!
//! `Fanout` is a cheap handle (an `Arc`) on one of two engines chosen at start
//! ([`EngineKind`]). [`Fanout::attach`] takes over the write half of an upgraded WebSocket and
//! returns a [`Connection`]; from then on the cable layer sends through the connection, attaches
//! it to streams, and broadcasts through the `Fanout`.
//!
//! The default engine here ties the parts together: the [`Index`] finds a stream's
//! subscribers, each connection's [`Outbox`] receives a refcount clone of one shared frame per
//! variant, and a writer task per connection ([`writer::drive`]) drains it. A registry of every
//! attached connection serves [`Fanout::send_all`] (the Action Cable ping every 3 s).
//!
//! A connection's subscriptions are also listed on the connection itself, so that close, abort,
//! a write error or a too-slow cut-off can detach all of them without scanning the index.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::Notify;

use super::frame::Frame;
use super::index::{Index, Subscribed};
use super::queue::{Outbox, Push, State};
use super::reference::{RefConn, RefEngine};
use super::stats::{Enqueued, Stats, StatsSnapshot};
use super::{writer, EngineKind, QueueLimits, Variant};

/// Connection ids are unique across every engine in the process.
static NEXT_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh connection id.
pub(crate) fn next_connection_id() -> u64 {
    NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed)
}

/// The fan-out engine: cheap to clone (an `Arc` inside), `Send + Sync`.
///
/// Created once at start with [`Fanout::new`]; every clone talks to the same engine.
#[derive(Clone)]
pub struct Fanout {
    engine: EngineRef,
}

#[derive(Clone)]
enum EngineRef {
    Queue(Arc<QueueEngine>),
    Reference(Arc<RefEngine>),
}

/// One attached connection. A cloneable handle (an `Arc` inside); dropping every handle does
/// not close the connection — call [`Connection::close`] or [`Connection::abort`].
#[derive(Clone)]
pub struct Connection {
    inner: ConnRef,
}

#[derive(Clone)]
enum ConnRef {
    Queue {
        engine: Arc<QueueEngine>,
        conn: Arc<QueueConn>,
    },
    Reference(Arc<RefConn>),
}

impl Fanout {
    /// A new engine of `kind` whose connections are bounded by `limits`
    /// (`max_frames` is raised to at least 1).
    pub fn new(kind: EngineKind, limits: QueueLimits) -> Fanout {
        let engine = match kind {
            EngineKind::Queue => EngineRef::Queue(Arc::new(QueueEngine::new(limits))),
            EngineKind::TokioBroadcast => EngineRef::Reference(Arc::new(RefEngine::new(limits))),
        };
        Fanout { engine }
    }

    /// Which engine this is.
    pub fn kind(&self) -> EngineKind {
        match self.engine {
            EngineRef::Queue(_) => EngineKind::Queue,
            EngineRef::Reference(_) => EngineKind::TokioBroadcast,
        }
    }

    /// Takes over the write half of an upgraded WebSocket connection and spawns its writer
    /// task (queue engine: one drain task; reference engine: a direct-send task and a ping
    /// forwarding task). Must be called inside a tokio runtime. From now on only the engine
    /// writes this socket; the caller keeps the read half and should drop it once
    /// [`Connection::closed`] resolves, so the socket is released even if the peer never
    /// closes its side.
    pub fn attach(&self, write: OwnedWriteHalf) -> Connection {
        let inner = match &self.engine {
            EngineRef::Queue(engine) => ConnRef::Queue {
                conn: engine.attach(write),
                engine: engine.clone(),
            },
            EngineRef::Reference(engine) => ConnRef::Reference(RefEngine::attach(engine, write)),
        };
        Connection { inner }
    }

    /// Test support: like [`Fanout::new`], but the queue engine's writers run on the runtime
    /// that calls [`Fanout::attach`] instead of their own thread, so a single-threaded test
    /// sees every allocation and counter update of the drain on its own thread.
    #[doc(hidden)]
    pub fn new_inline_writers(kind: EngineKind, limits: QueueLimits) -> Fanout {
        let fanout = Fanout::new(kind, limits);
        if let EngineRef::Queue(engine) = &fanout.engine {
            let _ = engine.writers.set(None);
        }
        fanout
    }

    /// Starts the engine's own threads now rather than on the first connection (the queue
    /// engine's writer thread), so that a server's thread count is the same before and after
    /// connections arrive. Idempotent; a no-op for the reference engine.
    pub fn start(&self) {
        if let EngineRef::Queue(engine) = &self.engine {
            engine.writers();
        }
    }

    /// Delivers `message` (already-encoded JSON value bytes) to every subscriber of `stream`:
    /// one frame per identifier variant, payload `prefix + message + suffix`. Returns the number
    /// of subscriptions (connection, variant) it was queued to — the number of connections
    /// when each connection holds one variant of the stream. Never blocks on a socket; a
    /// subscriber whose outbox overflows is cut off as too slow and not counted. (Reference
    /// engine: the channel's receiver count, which still includes subscriptions whose
    /// forwarding task has been told to stop but has not ended yet.)
    pub fn broadcast(&self, stream: &str, message: &[u8]) -> usize {
        match &self.engine {
            EngineRef::Queue(engine) => engine.broadcast(stream, message),
            EngineRef::Reference(engine) => engine.broadcast(stream, message),
        }
    }

    /// Sends one pre-encoded frame to every attached connection (Action Cable's ping every
    /// 3 s, `ActionCable::Server::Connections#setup_heartbeat_timer`). Returns how many
    /// connections it was queued to. Never blocks.
    pub fn send_all(&self, frame: &Frame) -> usize {
        match &self.engine {
            EngineRef::Queue(engine) => engine.send_all(frame),
            EngineRef::Reference(engine) => engine.send_all(frame),
        }
    }

    /// The engine's counters (see [`StatsSnapshot`] for each field's meaning).
    pub fn stats(&self) -> StatsSnapshot {
        match &self.engine {
            EngineRef::Queue(engine) => engine.stats.snapshot(),
            EngineRef::Reference(engine) => engine.stats().snapshot(),
        }
    }

    /// Bench and test support, not for production use: a connection with no socket and no
    /// writer task. Frames queued to it stay queued until [`Fanout::drain_detached`] takes
    /// them (for the reference engine: subscriptions hold their broadcast receivers instead of
    /// spawning forwarding tasks). Needs no runtime.
    #[doc(hidden)]
    pub fn attach_detached(&self) -> Connection {
        let inner = match &self.engine {
            EngineRef::Queue(engine) => ConnRef::Queue {
                conn: engine.register(true),
                engine: engine.clone(),
            },
            EngineRef::Reference(engine) => ConnRef::Reference(RefEngine::attach_detached(engine)),
        };
        Connection { inner }
    }

    /// Bench and test support: takes every frame queued to a connection made by
    /// [`Fanout::attach_detached`] (reference engine: receives every pending message of each
    /// of its receivers) and returns how many there were. Returns 0 for a connection with a
    /// socket, or from another engine.
    #[doc(hidden)]
    pub fn drain_detached(&self, conn: &Connection) -> usize {
        match (&self.engine, &conn.inner) {
            (EngineRef::Queue(engine), ConnRef::Queue { conn, .. }) if conn.detached => {
                engine.drain_detached(conn)
            }
            (EngineRef::Reference(_), ConnRef::Reference(conn)) => conn.drain_detached(),
            _ => 0,
        }
    }
}

impl fmt::Debug for Fanout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fanout")
            .field("kind", &self.kind())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// The connection's id, unique in the process.
    pub fn id(&self) -> u64 {
        match &self.inner {
            ConnRef::Queue { conn, .. } => conn.outbox.id(),
            ConnRef::Reference(conn) => conn.id(),
        }
    }

    /// Queues one frame for this connection only (welcome, confirm, transmit, pong). Returns
    /// false if the connection is closing or closed or was cut off as too slow (including by
    /// this very frame overflowing its outbox).
    ///
    /// Ordering (queue engine): frames sent from one task keep their order, and a send after
    /// [`Connection::subscribe`] returned is ordered after any broadcast queued to this
    /// connection before it — one FIFO carries everything. The reference engine writes direct
    /// sends and each subscription from separate tasks, so it keeps only the first guarantee.
    pub fn send(&self, frame: Frame) -> bool {
        match &self.inner {
            ConnRef::Queue { engine, conn } => engine.send(conn, &frame.0),
            ConnRef::Reference(conn) => conn.send(frame.0),
        }
    }

    /// Attaches this connection to `stream` under `variant`. Idempotent per
    /// (stream, `variant.key`). When it returns, every later broadcast to `stream` reaches this
    /// connection. A no-op once the connection is closing or closed.
    pub fn subscribe(&self, stream: &str, variant: &Variant) {
        match &self.inner {
            ConnRef::Queue { engine, conn } => engine.subscribe(conn, stream, variant),
            ConnRef::Reference(conn) => RefConn::subscribe(conn, stream, variant),
        }
    }

    /// Detaches from `stream` for `variant_key` (no-op when not attached).
    pub fn unsubscribe(&self, stream: &str, variant_key: &str) {
        match &self.inner {
            ConnRef::Queue { engine, conn } => engine.unsubscribe(conn, stream, variant_key),
            ConnRef::Reference(conn) => conn.unsubscribe(stream, variant_key),
        }
    }

    /// Queues `frames` (e.g. a `disconnect` text frame and a close frame) after everything
    /// already queued, accepts nothing after them, flushes and shuts the socket's write side
    /// down (within [`super::CLOSE_FLUSH_TIMEOUT`]). Detaches every subscription at once. A
    /// no-op if the connection is already closing, closed or cut off.
    pub fn close(&self, frames: &[Frame]) {
        match &self.inner {
            ConnRef::Queue { engine, conn } => engine.close(conn, frames),
            ConnRef::Reference(conn) => conn.close(frames),
        }
    }

    /// Resolves when the writer has ended: after a close was flushed, a write error, an
    /// abort, or a too-slow cut-off.
    pub async fn closed(&self) {
        let (done, notify) = match &self.inner {
            ConnRef::Queue { conn, .. } => (&conn.done, &conn.done_notify),
            ConnRef::Reference(conn) => conn.done_signal(),
        };
        loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// Detaches every subscription and stops the writer without flushing (the reader saw EOF
    /// or an error, so nobody is listening).
    pub fn abort(&self) {
        match &self.inner {
            ConnRef::Queue { engine, conn } => engine.abort(conn),
            ConnRef::Reference(conn) => conn.abort(),
        }
    }

    /// True once the connection no longer accepts frames: closing, closed, aborted, cut off
    /// as too slow, or its writer ended on a write error.
    pub fn is_closed(&self) -> bool {
        match &self.inner {
            ConnRef::Queue { conn, .. } => {
                conn.outbox.state() != State::Open || conn.done.load(Ordering::Acquire)
            }
            ConnRef::Reference(conn) => conn.is_closed(),
        }
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

// ------------------------------------------------------------------------------------------
// The default engine.

/// The default engine's shared state.
#[derive(Debug)]
pub(crate) struct QueueEngine {
    limits: QueueLimits,
    index: Index,
    registry: Registry,
    stats: Stats,
    /// The writers' thread, started on the first `attach` (see `runtime.rs`).
    writers: std::sync::OnceLock<Option<super::runtime::WriterRuntime>>,
}

/// One registry shard: connection id → outbox.
type RegistryShard = Mutex<HashMap<u64, Arc<Outbox>>>;

/// Every attached connection's outbox, sharded by id, for `send_all`.
#[derive(Debug)]
struct Registry {
    shards: Box<[RegistryShard]>,
}

const REGISTRY_SHARDS: usize = 16;

impl Registry {
    fn new() -> Registry {
        Registry {
            shards: (0..REGISTRY_SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    fn shard(&self, id: u64) -> &RegistryShard {
        &self.shards[(id as usize) % REGISTRY_SHARDS]
    }
}

/// One connection of the default engine.
#[derive(Debug)]
pub(crate) struct QueueConn {
    outbox: Arc<Outbox>,
    subs: Mutex<Subscriptions>,
    done: AtomicBool,
    done_notify: Notify,
    detached: bool,
}

/// The (stream, variant key) pairs a connection is attached to.
#[derive(Debug, Default)]
struct Subscriptions {
    /// Set once the connection has been detached for good; later subscribes are no-ops.
    closed: bool,
    list: Vec<(Arc<str>, Arc<str>)>,
}

impl QueueEngine {
    fn new(limits: QueueLimits) -> QueueEngine {
        QueueEngine {
            limits,
            index: Index::new(),
            registry: Registry::new(),
            stats: Stats::default(),
            writers: std::sync::OnceLock::new(),
        }
    }

    /// The writers' thread, started on first use.
    fn writers(&self) -> Option<&super::runtime::WriterRuntime> {
        self.writers
            .get_or_init(|| match super::runtime::WriterRuntime::start() {
                Ok(runtime) => Some(runtime),
                Err(e) => {
                    tracing::warn!(error = %e, "no writer thread; writers share the caller's runtime");
                    None
                }
            })
            .as_ref()
    }

    /// Creates a connection and registers it for `send_all`.
    fn register(&self, detached: bool) -> Arc<QueueConn> {
        let conn = Arc::new(QueueConn {
            outbox: Arc::new(Outbox::new(next_connection_id(), self.limits)),
            subs: Mutex::default(),
            done: AtomicBool::new(false),
            done_notify: Notify::new(),
            detached,
        });
        self.registry
            .shard(conn.outbox.id())
            .lock()
            .insert(conn.outbox.id(), conn.outbox.clone());
        self.stats.connection_opened();
        conn
    }

    fn attach(self: &Arc<Self>, write: OwnedWriteHalf) -> Arc<QueueConn> {
        let conn = self.register(false);
        let engine = self.clone();
        let task_conn = conn.clone();
        let task = async move {
            writer::drive(&task_conn.outbox, &engine.stats, write).await;
            engine.finish(&task_conn);
        };
        match self.writers() {
            Some(runtime) => runtime.spawn(task),
            None => {
                tokio::spawn(task);
            }
        }
        conn
    }

    fn broadcast(&self, stream: &str, message: &[u8]) -> usize {
        self.stats.broadcast();
        let Some(entry) = self.index.get(stream) else {
            return 0;
        };
        let mut totals = Enqueued::default();
        {
            let groups = entry.read();
            for group in groups.groups() {
                let v = group.variant();
                let frame = Frame::text_parts(&[&v.prefix, message, &v.suffix]);
                for member in group.members() {
                    match member.push(&frame.0) {
                        Push::Queued { bytes } => totals.add(frame.len(), bytes),
                        Push::CutOff => self.cut_off(member),
                        Push::Refused => {}
                    }
                }
            }
        }
        self.stats.enqueued(&totals);
        totals.frames as usize
    }

    /// A push overflowed `outbox` and cut it off (rare: the slow path of a push).
    #[cold]
    fn cut_off(&self, outbox: &Outbox) {
        self.stats.slow_disconnect();
        self.stats.depth_seen(outbox.queued_frames());
    }

    fn send_all(&self, frame: &Frame) -> usize {
        let mut totals = Enqueued::default();
        for shard in self.registry.shards.iter() {
            let shard = shard.lock();
            for outbox in shard.values() {
                match outbox.push(&frame.0) {
                    Push::Queued { bytes } => totals.add(frame.len(), bytes),
                    Push::CutOff => self.cut_off(outbox),
                    Push::Refused => {}
                }
            }
        }
        self.stats.enqueued(&totals);
        totals.frames as usize
    }

    fn send(&self, conn: &QueueConn, frame: &Bytes) -> bool {
        match conn.outbox.push(frame) {
            Push::Queued { bytes } => {
                let mut totals = Enqueued::default();
                totals.add(frame.len(), bytes);
                self.stats.enqueued(&totals);
                true
            }
            Push::CutOff => {
                self.cut_off(&conn.outbox);
                false
            }
            Push::Refused => false,
        }
    }

    fn subscribe(&self, conn: &QueueConn, stream: &str, variant: &Variant) {
        let mut subs = conn.subs.lock();
        if subs.closed || conn.outbox.state() != State::Open {
            return;
        }
        if let Subscribed::Added { stream, new_stream } =
            self.index.subscribe(stream, variant, &conn.outbox)
        {
            subs.list.push((stream, variant.key.clone()));
            self.stats.subscription_added(new_stream);
        }
    }

    fn unsubscribe(&self, conn: &QueueConn, stream: &str, variant_key: &str) {
        let mut subs = conn.subs.lock();
        let Some(pos) = subs
            .list
            .iter()
            .position(|(s, k)| &**s == stream && &**k == variant_key)
        else {
            return;
        };
        subs.list.swap_remove(pos);
        if let Some(removed) = self
            .index
            .unsubscribe(stream, variant_key, conn.outbox.id())
        {
            self.stats.subscription_removed(removed);
        }
    }

    /// Detaches every subscription for good.
    fn detach_all(&self, conn: &QueueConn) {
        let list = {
            let mut subs = conn.subs.lock();
            subs.closed = true;
            std::mem::take(&mut subs.list)
        };
        for (stream, key) in list {
            if let Some(removed) = self.index.unsubscribe(&stream, &key, conn.outbox.id()) {
                self.stats.subscription_removed(removed);
            }
        }
    }

    fn close(&self, conn: &QueueConn, frames: &[Frame]) {
        let frames: Vec<Bytes> = frames.iter().map(|f| f.0.clone()).collect();
        conn.outbox.request_close(&frames);
        self.detach_all(conn);
        if conn.detached {
            self.finish(conn);
        }
    }

    fn abort(&self, conn: &QueueConn) {
        conn.outbox.request_abort();
        self.detach_all(conn);
        if conn.detached {
            self.finish(conn);
        }
    }

    /// The connection's writer has ended: detach it everywhere and wake `closed()` waiters.
    fn finish(&self, conn: &QueueConn) {
        if conn.done.swap(true, Ordering::AcqRel) {
            return;
        }
        conn.outbox.mark_ended();
        self.detach_all(conn);
        self.registry
            .shard(conn.outbox.id())
            .lock()
            .remove(&conn.outbox.id());
        conn.outbox.discard();
        self.stats.connection_closed();
        conn.done_notify.notify_waiters();
    }

    fn drain_detached(&self, conn: &QueueConn) -> usize {
        if conn.outbox.state() != State::Open {
            self.finish(conn);
            return 0;
        }
        conn.outbox.disarm();
        let drained = conn.outbox.discard();
        self.stats.depth_seen(drained);
        drained
    }
}
