//! [`Fanout`] and [`Connection`]: the API the cable layer calls, the seam behind it, and the
//! default engine.
//!
//! `Fanout` is a cheap handle on one engine chosen at start ([`EngineKind`]), held as an
//! `Arc<dyn Engine>`; a [`Connection`] holds that engine's connection object as an
//! `Arc<dyn Conn>`. [`Engine`] and [`Conn`] are the seam: every public method makes one
//! dynamic call (per broadcast or per send, never per subscriber) and the engine does the
//! rest in plain code. [`Fanout::new`] is the only place that names the engines.
//!
//! The default engine ([`QueueEngine`], [`QueueConn`], below) ties the parts together: the
//! [`Index`] finds a stream's subscribers, each connection's [`Outbox`] receives a refcount
//! clone of one shared frame per variant, and the writer thread's sweeper (or, for a full
//! socket, the connection's own writer task, [`writer::drive`]) drains it. A registry of
//! every attached connection serves [`Fanout::send_all`] (the Action Cable ping every 3 s).
//! The reference engine (feature `reference-engine`) lives in `reference.rs`.
//!
//! A connection's subscriptions are also listed on the connection itself, so that close, abort,
//! a write error or a too-slow cut-off can detach all of them without scanning the index.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::Notify;

use super::budget::{Ledger, QueueBudgets, NO_OWNER};
use super::frame::Frame;
use super::gate::{Gates, Mark, Pass};
use super::index::{Index, StreamEntry, Subscribed};
use super::queue::{defer_wakes, Outbox, Push, State};
use super::runtime::WriterRuntime;
use super::seam::{Conn, Engine};
use super::stats::{Enqueued, Stats, StatsSnapshot};
use super::{
    next_connection_id, writer, EngineKind, QueueLimits, Stamp, Variant, SOCKET_UNSENT_BYTES,
};
use crate::history::Numbered;

/// The fan-out engine: cheap to clone (an `Arc` inside), `Send + Sync`.
///
/// Created once at start with [`Fanout::new`]; every clone talks to the same engine.
#[derive(Clone)]
pub struct Fanout {
    engine: Arc<dyn Engine>,
}

/// One attached connection. A cloneable handle (an `Arc` inside); dropping every handle does
/// not close the connection — call [`Connection::close`] or [`Connection::abort`].
#[derive(Clone)]
pub struct Connection {
    conn: Arc<dyn Conn>,
}

impl Fanout {
    /// A new engine of `kind` whose connections are bounded by `limits`
    /// (`max_frames` is raised to at least 1).
    pub fn new(kind: EngineKind, limits: QueueLimits) -> Self {
        Self::with_writer_threads(kind, limits, 0)
    }

    /// [`Fanout::new`] with the queue engine's writers spread over `threads` writer threads
    /// (connections assigned round-robin as they attach); 0 means one per core this process
    /// may run on (`std::thread::available_parallelism`, which follows the CPU affinity mask,
    /// so a server pinned to one core gets one). The reference engine ignores it.
    pub fn with_writer_threads(kind: EngineKind, limits: QueueLimits, threads: usize) -> Self {
        Self::with_budgets(kind, limits, threads, QueueBudgets::default())
    }

    /// [`Fanout::with_writer_threads`] with the user and server byte budgets of queued frames
    /// (`budget.rs`; the queue engine only: the reference engine ignores them).
    pub fn with_budgets(
        kind: EngineKind,
        limits: QueueLimits,
        threads: usize,
        budgets: QueueBudgets,
    ) -> Self {
        let engine: Arc<dyn Engine> = match kind {
            EngineKind::Queue => Arc::new(QueueEngine::new(limits, threads, budgets)),
            #[cfg(feature = "reference-engine")]
            EngineKind::TokioBroadcast => Arc::new(super::reference::RefEngine::new(limits)),
        };
        Self { engine }
    }

    /// Which engine this is.
    pub fn kind(&self) -> EngineKind {
        self.engine.kind()
    }

    /// Takes over the write half of an upgraded WebSocket connection and spawns its writer
    /// task (queue engine: one drain task; reference engine: a direct-send task and a ping
    /// forwarding task). Must be called inside a tokio runtime. From now on only the engine
    /// writes this socket; the caller keeps the read half and should drop it once
    /// [`Connection::closed`] resolves, so the socket is released even if the peer never
    /// closes its side.
    pub fn attach(&self, write: OwnedWriteHalf) -> Connection {
        Connection {
            conn: self.engine.clone().attach(write, None),
        }
    }

    /// [`Fanout::attach`] for a connection of user `owner`: its queued frames count against
    /// that user's byte budget ([`QueueBudgets::user_bytes`]) with all the user's other
    /// connections.
    pub fn attach_owned(&self, write: OwnedWriteHalf, owner: u64) -> Connection {
        Connection {
            conn: self.engine.clone().attach(write, Some(owner)),
        }
    }

    /// Starts the engine's own threads now rather than on the first connection (the queue
    /// engine's writer thread), so that a server's thread count is the same before and after
    /// connections arrive. Idempotent; a no-op for the reference engine.
    pub fn start(&self) {
        self.engine.start();
    }

    /// Delivers `message` (already-encoded JSON value bytes) to every subscriber of `stream`:
    /// one frame per identifier variant, payload `prefix + message + suffix`. Returns the number
    /// of subscriptions (connection, variant) it was queued to — the number of connections
    /// when each connection holds one variant of the stream. Never blocks on a socket; a
    /// subscriber whose outbox overflows is cut off as too slow and not counted. (Reference
    /// engine: the channel's receiver count, which still includes subscriptions whose
    /// forwarding task has been told to stop but has not ended yet.)
    pub fn broadcast(&self, stream: &str, message: &[u8]) -> usize {
        self.engine.broadcast(stream, message)
    }

    /// Delivers the same `message` to each stream that `next` names, in turn: `next` writes the
    /// next stream name into the buffer it is given (clearing it first) and returns false when
    /// there is none left. The same as one [`Fanout::broadcast`] per stream, except that the
    /// queue engine builds each distinct frame once for the whole call, not once per stream:
    /// a post's unread notice to each of a room's members (one stream per member, the same
    /// identifier for all) costs one frame, not one per member. Returns the subscriptions it
    /// was queued to, in all.
    pub fn broadcast_each(
        &self,
        next: &mut dyn FnMut(&mut String) -> bool,
        message: &[u8],
    ) -> usize {
        self.engine.broadcast_each(next, message)
    }

    /// [`Fanout::broadcast`] for a broadcast with a position: subscribers of a
    /// [`Variant::positioned`] variant get `prefix + message + positioned(stream)` instead of
    /// their own suffix (when `positioned` answers `Some`). `positioned` is called at most
    /// once, and only when the stream has a positioned group, so a broadcast to subscribers
    /// that asked for no positions costs what [`Fanout::broadcast`] costs. The reference
    /// engine ignores positions.
    pub fn broadcast_at(
        &self,
        stream: &str,
        message: &[u8],
        positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        self.engine.broadcast_at(stream, message, positioned)
    }

    /// [`Fanout::broadcast_each`] with positions: `positioned` is asked (at most once per
    /// stream, only for streams with a positioned group) for each stream's suffix.
    pub fn broadcast_each_at(
        &self,
        next: &mut dyn FnMut(&mut String) -> bool,
        message: &[u8],
        positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        self.engine.broadcast_each_at(next, message, positioned)
    }

    /// [`Fanout::broadcast_each_at`] to the stream of `family` for each id `next` gives, in
    /// turn (None: no more): a post's unread notice to `user_<id>_unreads` of each member of
    /// its room. An engine built [`Fanout::with_numbered`] for `family` names and looks up
    /// only the streams it holds (one bit per id), so members with no subscriber here cost a
    /// load each; otherwise each stream is written ([`Numbered::write`]) and looked up.
    /// `next` is called for every id all the same (the caller gives each stream its
    /// position there), and `positioned` right after the `next` of its stream.
    pub fn broadcast_numbered_at(
        &self,
        family: &Numbered,
        next: &mut dyn FnMut() -> Option<i64>,
        message: &[u8],
        positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        self.engine
            .broadcast_numbered_at(family, next, message, positioned)
    }

    /// This engine, keeping for each of `families` which of their streams its index holds, by
    /// id ([`Fanout::broadcast_numbered_at`]). Call it on a new engine, before it is cloned
    /// or any connection attaches.
    ///
    /// # Panics
    /// The engine is shared already (a clone of this `Fanout` or a connection holds it).
    #[must_use]
    pub fn with_numbered(mut self, families: &[Numbered]) -> Self {
        Arc::get_mut(&mut self.engine)
            .expect("Fanout::with_numbered on a new engine, before it is shared")
            .numbered(families);
        self
    }

    /// Sends one pre-encoded frame to every attached connection (Action Cable's ping every
    /// 3 s, `ActionCable::Server::Connections#setup_heartbeat_timer`). Returns how many
    /// connections it was queued to. Never blocks.
    pub fn send_all(&self, frame: &Frame) -> usize {
        self.engine.send_all(frame)
    }

    /// The engine's counters (see [`StatsSnapshot`] for each field's meaning).
    pub fn stats(&self) -> StatsSnapshot {
        self.engine.stats()
    }
}

/// Test and bench support (feature `test-support`), not part of the production API.
#[cfg(feature = "test-support")]
impl Fanout {
    /// Like [`Fanout::new`], but the queue engine's writers run on the runtime that calls
    /// [`Fanout::attach`] instead of their own thread, so a single-threaded test sees every
    /// allocation and counter update of the drain on its own thread.
    pub fn new_inline_writers(kind: EngineKind, limits: QueueLimits) -> Self {
        let fanout = Self::new(kind, limits);
        fanout.engine.run_writers_inline();
        fanout
    }

    /// A connection with no socket and no writer task. Frames queued to it stay queued until
    /// [`Fanout::drain_detached`] takes them (for the reference engine: subscriptions hold
    /// their broadcast receivers instead of spawning forwarding tasks). Needs no runtime.
    pub fn attach_detached(&self) -> Connection {
        Connection {
            conn: self.engine.clone().attach_detached(),
        }
    }

    /// Takes every frame queued to a connection made by [`Fanout::attach_detached`]
    /// (reference engine: receives every pending message of each of its receivers) and
    /// returns how many there were; the connection's own engine does the work. Returns 0 for
    /// a connection with a socket.
    pub fn drain_detached(&self, conn: &Connection) -> usize {
        conn.conn.drain_detached()
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
        self.conn.id()
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
        self.conn.send(frame)
    }

    /// [`Connection::send`] that does not wake the writer yet: the frame is queued in order
    /// with everything else, and the wake-up it may owe is kept until
    /// [`Connection::wake_deferred`]. Returns whether it was queued. Until that call the writer
    /// sees neither this frame nor what is queued after it (broadcasts included), so the
    /// caller — the connection's own task — calls `wake_deferred` as soon as it has nothing
    /// more to answer at once (the cable reader: before it waits for the client's next frame).
    /// A task that answers several commands read together (a page's subscribe
    /// commands) thus has its replies written in one vectored write instead of one each.
    /// (Reference engine: the same as `send`.)
    pub fn send_deferred(&self, frame: Frame) -> bool {
        self.conn.send_deferred(frame)
    }

    /// Wakes the writer for what [`Connection::send_deferred`] queued; a no-op when nothing is
    /// deferred (one relaxed atomic load).
    pub fn wake_deferred(&self) {
        self.conn.wake_deferred();
    }

    /// Attaches this connection to `stream` under `variant`. Idempotent per
    /// (stream, `variant.key`). When it returns, every later broadcast to `stream` reaches this
    /// connection. A no-op once the connection is closing or closed.
    pub fn subscribe(&self, stream: &str, variant: &Variant) {
        self.conn.subscribe(stream, variant);
    }

    /// Detaches from `stream` for `variant_key` (no-op when not attached); drops its gate.
    pub fn unsubscribe(&self, stream: &str, variant_key: &str) {
        self.conn.unsubscribe(stream, variant_key);
    }

    /// Holds the frames broadcast to `stream` for this connection's positioned subscription
    /// `variant_key` ([`Variant::positioned`]) instead of queuing them, until
    /// [`Connection::release`]: call it before [`Connection::subscribe`], then send the
    /// subscription's history, then release. Holding past the connection's frame bound cuts
    /// it off as too slow. (Queue engine; the reference engine ignores positions and holds.)
    /// Returns the last position the subscription was sent (live, or by an earlier release):
    /// a history answer sends only what comes after it.
    pub fn hold(&self, stream: &str, variant_key: &str) -> Option<(Arc<str>, u64)> {
        self.conn.hold(stream, variant_key)
    }

    /// Notes, from now on, the last position broadcast to `stream` for this connection's
    /// positioned subscription `variant_key` (what [`Connection::hold`] returns later), and
    /// drops a broadcast at or before it. Call it before [`Connection::subscribe`] for a
    /// positioned subscription that is not held. (Queue engine; the reference engine ignores
    /// it.)
    pub fn track(&self, stream: &str, variant_key: &str) {
        self.conn.track(stream, variant_key);
    }

    /// Ends [`Connection::hold`]: queues the held frames after `last` (the position the
    /// subscription has: the last history entry sent, or the client's own; `(epoch, offset)`)
    /// in order, then lets broadcasts through again, except those at or before the last
    /// position sent (in its epoch), dropped until one after it arrives. A broadcast racing
    /// the release is queued after the held frames.
    pub fn release(&self, stream: &str, variant_key: &str, last: Option<(Arc<str>, u64)>) {
        self.conn.release(stream, variant_key, last);
    }

    /// Queues `frames` (e.g. a `disconnect` text frame and a close frame) after everything
    /// already queued, accepts nothing after them, flushes and shuts the socket's write side
    /// down (within [`super::CLOSE_FLUSH_TIMEOUT`]). Detaches every subscription at once. A
    /// no-op if the connection is already closing, closed or cut off.
    pub fn close(&self, frames: &[Frame]) {
        self.conn.close(frames);
    }

    /// Resolves when the writer has ended: after a close was flushed, a write error, an
    /// abort, or a too-slow cut-off.
    pub async fn closed(&self) {
        let (done, notify) = self.conn.done_signal();
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
        self.conn.abort();
    }

    /// True once the connection no longer accepts frames: closing, closed, aborted, cut off
    /// as too slow, or its writer ended on a write error.
    pub fn is_closed(&self) -> bool {
        self.conn.is_closed()
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
struct QueueEngine {
    limits: QueueLimits,
    index: Index,
    registry: Registry,
    stats: Arc<Stats>,
    /// How many writer threads to start (0: one per available core).
    writer_threads: usize,
    /// The writers' threads, started on the first `attach` (see `runtime.rs`); empty when
    /// none could be started, and writers share the caller's runtime.
    writers: OnceLock<Vec<WriterRuntime>>,
    /// Round-robin cursor over `writers`.
    next_writer: AtomicUsize,
    /// The user and server budgets of queued frames; None when both are off.
    ledger: Option<Arc<Ledger>>,
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
    fn new() -> Self {
        Self {
            shards: (0..REGISTRY_SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    fn shard(&self, id: u64) -> &RegistryShard {
        &self.shards[(id as usize) % REGISTRY_SHARDS]
    }
}

/// One connection of the default engine.
struct QueueConn {
    engine: Arc<QueueEngine>,
    outbox: Arc<Outbox>,
    subs: Mutex<Subscriptions>,
    /// Set by the first `finish()`: the rest of it runs once.
    finishing: AtomicBool,
    /// Set when `finish()` is over (counted out and detached): what `closed()` waits for.
    done: AtomicBool,
    done_notify: Notify,
    /// No socket and no writer task (`attach_detached`): close and abort finish at once.
    detached: bool,
    /// A [`Conn::send_deferred`] armed the writer and did not wake it yet.
    wake_owed: AtomicBool,
}

/// The (stream, variant key) pairs a connection is attached to.
#[derive(Debug, Default)]
struct Subscriptions {
    /// Set once the connection has been detached for good; later subscribes are no-ops.
    closed: bool,
    list: Vec<(Arc<str>, Arc<str>)>,
}

impl QueueEngine {
    fn new(limits: QueueLimits, writer_threads: usize, budgets: QueueBudgets) -> Self {
        let stats: Arc<Stats> = Arc::default();
        let ledger = Arc::new(Ledger::new(budgets, stats.clone()));
        Self {
            limits,
            index: Index::with_numbered(&[]),
            registry: Registry::new(),
            stats,
            writer_threads,
            writers: OnceLock::new(),
            next_writer: AtomicUsize::new(0),
            ledger: ledger.is_on().then_some(ledger),
        }
    }

    /// The writers' threads, started on first use.
    fn writers(&self) -> &[WriterRuntime] {
        self.writers.get_or_init(|| {
            let wanted = match self.writer_threads {
                0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
                n => n,
            };
            let mut started = Vec::with_capacity(wanted);
            for i in 0..wanted {
                match WriterRuntime::start(i) {
                    Ok(runtime) => started.push(runtime),
                    Err(e) => {
                        tracing::warn!(error = %e, started = i, "cannot start another writer thread");
                        break;
                    }
                }
            }
            if started.is_empty() {
                tracing::warn!("no writer thread; writers share the caller's runtime");
            }
            started
        })
    }

    /// The writer thread for the next connection (round-robin); None when there is none.
    fn next_writer(&self) -> Option<&WriterRuntime> {
        let writers = self.writers();
        if writers.is_empty() {
            return None;
        }
        let i = self.next_writer.fetch_add(1, Ordering::Relaxed) % writers.len();
        Some(&writers[i])
    }

    /// Creates a connection and registers it for `send_all`.
    fn register(self: &Arc<Self>, detached: bool, owner: Option<u64>) -> Arc<QueueConn> {
        let conn = Arc::new(QueueConn {
            engine: self.clone(),
            outbox: Arc::new(Outbox::new(next_connection_id(), self.limits)),
            subs: Mutex::default(),
            finishing: AtomicBool::new(false),
            done: AtomicBool::new(false),
            done_notify: Notify::new(),
            detached,
            wake_owed: AtomicBool::new(false),
        });
        self.registry
            .shard(conn.outbox.id())
            .lock()
            .insert(conn.outbox.id(), conn.outbox.clone());
        if let Some(ledger) = &self.ledger {
            ledger.enter(&conn.outbox, owner.unwrap_or(NO_OWNER));
        }
        self.stats.connection_opened();
        conn
    }

    /// The frame of a broadcast to `v` whose payload is `parts` concatenated: plain, built as
    /// it always was, or for a permessage-deflate variant ([`Variant::deflate`]) compressed
    /// (`deflate.rs`). Called once per variant group of a broadcast, never per subscriber; the
    /// plain path adds one check of `v.deflate` to it.
    #[inline(always)]
    fn encode(&self, v: &Variant, parts: &[&[u8]]) -> Bytes {
        match v.deflate {
            None => Frame::text_parts(parts).0,
            Some(params) => self.encode_deflated(params, parts),
        }
    }

    /// [`QueueEngine::encode`] for a permessage-deflate group: compressed when long enough,
    /// counted in the stats.
    #[inline(never)]
    fn encode_deflated(&self, params: super::deflate::Deflate, parts: &[&[u8]]) -> Bytes {
        let (frame, sizes) = params.text(parts);
        if let Some((before, after)) = sizes {
            self.stats.compressed(before, after);
        }
        frame.0
    }

    /// Pushes `frame` into `outbox` and records it in `totals`; returns whether it was queued.
    /// A push that overflows the outbox cuts that connection off. The one push of every path
    /// (broadcast, `send_all`, `send`); the caller adds `totals` to the stats once. Always
    /// inlined: it runs once per subscriber, and a call per push was 20 instructions more
    /// per subscriber (`enqueue_1000` in `benches/instructions.rs`).
    #[inline(always)]
    fn push_counted(
        &self,
        outbox: &Arc<Outbox>,
        frame: &Bytes,
        share: usize,
        totals: &mut Enqueued,
    ) -> bool {
        match outbox.push_shared_by(frame, share) {
            Push::Queued { bytes } => {
                totals.add(frame.len(), bytes);
                true
            }
            Push::CutOff => {
                self.cut_off(outbox);
                false
            }
            Push::Refused => false,
        }
    }

    /// Pushes one frame per variant group of `entry` (from `frame_for`, called once per group,
    /// with the stamp of a positioned one) to every member of the group, under the stream's
    /// read lock. A positioned group's members with a gate (`gate.rs`) go through it.
    #[inline]
    fn push_to_groups(
        &self,
        stream: &str,
        entry: &StreamEntry,
        mut frame_for: impl FnMut(&Variant) -> (Bytes, Option<Stamp>),
        totals: &mut Enqueued,
    ) {
        let groups = entry.read();
        for group in groups.groups() {
            let variant = group.variant();
            let (frame, stamp) = frame_for(variant);
            let members = group.members();
            if variant.positioned {
                for member in members {
                    if let Some(gates) = member.gated() {
                        if !self.through_gate(
                            gates,
                            member,
                            stream,
                            variant,
                            &frame,
                            stamp.as_ref(),
                        ) {
                            continue;
                        }
                    }
                    self.push_counted(member, &frame, members.len(), totals);
                }
            } else {
                for member in members {
                    self.push_counted(member, &frame, members.len(), totals);
                }
            }
        }
    }

    /// The loop of a broadcast to several streams with positions
    /// ([`Engine::broadcast_each_at`], [`Engine::broadcast_numbered_at`]): `next` writes the
    /// next stream's name into the buffer and answers `Some(true)`, answers `Some(false)` for
    /// a stream the index surely does not hold (counted, not looked up), and None when there
    /// is none left. Returns the subscriptions it was queued to.
    fn each_stream_at(
        &self,
        mut next: impl FnMut(&mut String) -> Option<bool>,
        message: &[u8],
        positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        let mut stream = String::with_capacity(32);
        let mut built: Vec<(Variant, Bytes)> = Vec::new();
        let mut streams = 0;
        let mut totals = Enqueued::default();
        while let Some(named) = next(&mut stream) {
            streams += 1;
            if !named {
                continue;
            }
            let Some(entry) = self.index.get(&stream) else {
                continue;
            };
            self.push_each_at(
                &stream,
                &entry,
                message,
                positioned,
                &mut built,
                &mut totals,
            );
        }
        self.stats.broadcasts(streams);
        self.stats.enqueued(&totals);
        totals.frames as usize
    }

    /// One stream's share of a broadcast to several streams with positions
    /// ([`Engine::broadcast_each_at`]): a positioned group's frame is the stream's own (its
    /// position differs from stream to stream, asked of `positioned` at most once); any other
    /// group's frame is shared, through `built`, with every stream's group of the same
    /// variant (the unread notices of a room's members: one frame for all of them).
    fn push_each_at(
        &self,
        stream: &str,
        entry: &StreamEntry,
        message: &[u8],
        positioned: super::PositionedSuffix<'_>,
        built: &mut Vec<(Variant, Bytes)>,
        totals: &mut Enqueued,
    ) {
        let mut stamp: Option<Option<Stamp>> = None;
        let frame_for = |v: &Variant| {
            if v.positioned {
                if let Some(stamp) = stamp.get_or_insert_with(|| positioned(stream)) {
                    let frame = self.encode(v, &[&v.prefix, message, &stamp.suffix]);
                    return (frame, Some(stamp.clone()));
                }
            }
            let same = |b: &Variant| b.key == v.key && b.prefix == v.prefix && b.suffix == v.suffix;
            if let Some((_, frame)) = built.iter().find(|(b, _)| same(b)) {
                return (frame.clone(), None);
            }
            let frame = self.encode(v, &[&v.prefix, message, &v.suffix]);
            built.push((v.clone(), frame.clone()));
            (frame, None)
        };
        self.push_to_groups(stream, entry, frame_for, totals);
    }

    /// Whether `member`'s gate lets `frame` be queued now (false: kept aside, dropped as sent
    /// already, or the gate was full and cut the connection off).
    #[cold]
    fn through_gate(
        &self,
        gates: &Gates,
        member: &Outbox,
        stream: &str,
        variant: &Variant,
        frame: &Bytes,
        stamp: Option<&Stamp>,
    ) -> bool {
        match gates.check(stream, &variant.key, frame, stamp, member.max_frames()) {
            Pass::Through => true,
            Pass::Skip | Pass::Held => false,
            Pass::Full => {
                if member.cut_off_now() {
                    self.cut_off(member);
                }
                false
            }
        }
    }

    /// A push overflowed `outbox` and cut it off (rare: the slow path of a push).
    #[cold]
    fn cut_off(&self, outbox: &Outbox) {
        self.stats.slow_disconnect();
        self.stats.depth_seen(outbox.queued_frames());
    }
}

impl Engine for QueueEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::Queue
    }

    fn start(&self) {
        self.writers();
    }

    fn attach(self: Arc<Self>, write: OwnedWriteHalf, owner: Option<u64>) -> Arc<dyn Conn> {
        bound_unsent(&write);
        let conn = self.register(false, owner);
        let task_conn = conn.clone();
        let runtime = self.next_writer();
        if let Some(runtime) = runtime {
            conn.outbox.set_wake_list(runtime.wakes().clone());
        }
        let task = async move {
            let outbox = task_conn.outbox.clone();
            writer::drive(outbox, task_conn.engine.stats.clone(), write).await;
            task_conn.finish();
        };
        match runtime {
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
        self.push_to_groups(
            stream,
            &entry,
            |v| (self.encode(v, &[&v.prefix, message, &v.suffix]), None),
            &mut totals,
        );
        self.stats.enqueued(&totals);
        totals.frames as usize
    }

    fn broadcast_each(&self, next: &mut dyn FnMut(&mut String) -> bool, message: &[u8]) -> usize {
        let mut stream = String::with_capacity(32);
        // The frames built so far, by variant: streams whose subscribers share an identifier
        // (the unread notices of a room's members) share one frame.
        let mut built: Vec<(Variant, Bytes)> = Vec::new();
        let mut streams = 0;
        let mut totals = Enqueued::default();
        while next(&mut stream) {
            streams += 1;
            let Some(entry) = self.index.get(&stream) else {
                continue;
            };
            let frame_for = |v: &Variant| {
                let same =
                    |b: &Variant| b.key == v.key && b.prefix == v.prefix && b.suffix == v.suffix;
                if let Some((_, frame)) = built.iter().find(|(b, _)| same(b)) {
                    return (frame.clone(), None);
                }
                let frame = self.encode(v, &[&v.prefix, message, &v.suffix]);
                built.push((v.clone(), frame.clone()));
                (frame, None)
            };
            self.push_to_groups(&stream, &entry, frame_for, &mut totals);
        }
        self.stats.broadcasts(streams);
        self.stats.enqueued(&totals);
        totals.frames as usize
    }

    fn broadcast_at(
        &self,
        stream: &str,
        message: &[u8],
        positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        self.stats.broadcast();
        let Some(entry) = self.index.get(stream) else {
            return 0;
        };
        let mut totals = Enqueued::default();
        let mut stamp: Option<Option<Stamp>> = None;
        self.push_to_groups(
            stream,
            &entry,
            |v| match v.positioned {
                true => match stamp.get_or_insert_with(|| positioned(stream)) {
                    Some(stamp) => (
                        self.encode(v, &[&v.prefix, message, &stamp.suffix]),
                        Some(stamp.clone()),
                    ),
                    None => (self.encode(v, &[&v.prefix, message, &v.suffix]), None),
                },
                false => (self.encode(v, &[&v.prefix, message, &v.suffix]), None),
            },
            &mut totals,
        );
        self.stats.enqueued(&totals);
        totals.frames as usize
    }

    fn broadcast_each_at(
        &self,
        next: &mut dyn FnMut(&mut String) -> bool,
        message: &[u8],
        positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        self.each_stream_at(|stream| next(stream).then_some(true), message, positioned)
    }

    fn broadcast_numbered_at(
        &self,
        family: &Numbered,
        next: &mut dyn FnMut() -> Option<i64>,
        message: &[u8],
        positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        // A stream the index surely does not hold (its id's bit unset) is neither named nor
        // looked up.
        let held = self.index.numbered(family);
        let next_stream = |stream: &mut String| {
            let id = next()?;
            if held.is_some_and(|held| !held.may_hold(id)) {
                return Some(false);
            }
            family.write(stream, id);
            Some(true)
        };
        self.each_stream_at(next_stream, message, positioned)
    }

    fn numbered(&mut self, families: &[Numbered]) {
        self.index = Index::with_numbered(families);
    }

    fn send_all(&self, frame: &Frame) -> usize {
        let mut totals = Enqueued::default();
        // One pass: each writer thread gets its wake-ups in one hand-over.
        defer_wakes(|| {
            for shard in self.registry.shards.iter() {
                let shard = shard.lock();
                let share = shard.len() * REGISTRY_SHARDS;
                for outbox in shard.values() {
                    self.push_counted(outbox, &frame.0, share, &mut totals);
                }
            }
        });
        self.stats.enqueued(&totals);
        totals.frames as usize
    }

    fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    #[cfg(feature = "test-support")]
    fn attach_detached(self: Arc<Self>) -> Arc<dyn Conn> {
        self.register(true, None)
    }

    #[cfg(feature = "test-support")]
    fn run_writers_inline(&self) {
        let _ = self.writers.set(Vec::new());
    }
}

/// Bounds the bytes the kernel keeps unsent for `write`'s socket ([`SOCKET_UNSENT_BYTES`]);
/// a socket that refuses the option (not TCP, another system) keeps the kernel's default.
fn bound_unsent(write: &OwnedWriteHalf) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Err(e) =
        socket2::SockRef::from(write.as_ref()).set_tcp_notsent_lowat(SOCKET_UNSENT_BYTES)
    {
        tracing::debug!(error = %e, "cannot bound a cable socket's unsent bytes");
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = write;
}

impl QueueConn {
    /// Detaches every subscription for good.
    fn detach_all(&self) {
        let list = {
            let mut subs = self.subs.lock();
            subs.closed = true;
            std::mem::take(&mut subs.list)
        };
        let engine = &self.engine;
        for (stream, key) in list {
            if let Some(removed) = engine.index.unsubscribe(&stream, &key, self.outbox.id()) {
                engine.stats.subscription_removed(removed);
            }
        }
    }

    /// The connection's writer has ended: detach it everywhere and wake `closed()` waiters.
    fn finish(&self) {
        if self.finishing.swap(true, Ordering::AcqRel) {
            return;
        }
        self.outbox.mark_ended();
        self.detach_all();
        self.engine
            .registry
            .shard(self.outbox.id())
            .lock()
            .remove(&self.outbox.id());
        self.outbox.discard();
        if let Some(ledger) = &self.engine.ledger {
            ledger.leave(&*self.outbox);
        }
        self.engine.stats.connection_closed();
        // Only now: whoever `closed()` wakes, or finds ended, sees the connection counted out.
        self.done.store(true, Ordering::Release);
        self.done_notify.notify_waiters();
    }
}

impl Conn for QueueConn {
    fn id(&self) -> u64 {
        self.outbox.id()
    }

    fn send(&self, frame: Frame) -> bool {
        let mut totals = Enqueued::default();
        let queued = self
            .engine
            .push_counted(&self.outbox, &frame.0, 1, &mut totals);
        if queued {
            self.engine.stats.enqueued(&totals);
        }
        queued
    }

    fn send_deferred(&self, frame: Frame) -> bool {
        let (push, wake) = self.outbox.push_unwoken(&frame.0);
        if wake {
            self.wake_owed.store(true, Ordering::Relaxed);
        }
        match push {
            Push::Queued { bytes } => {
                let mut totals = Enqueued::default();
                totals.add(frame.0.len(), bytes);
                self.engine.stats.enqueued(&totals);
                true
            }
            Push::CutOff => {
                self.engine.cut_off(&self.outbox);
                false
            }
            Push::Refused => false,
        }
    }

    fn wake_deferred(&self) {
        if self.wake_owed.load(Ordering::Relaxed) && self.wake_owed.swap(false, Ordering::Relaxed) {
            self.outbox.wake();
        }
    }

    fn subscribe(&self, stream: &str, variant: &Variant) {
        let mut subs = self.subs.lock();
        if subs.closed || self.outbox.state() != State::Open {
            return;
        }
        if let Subscribed::Added {
            stream,
            key,
            new_stream,
        } = self.engine.index.subscribe(stream, variant, &self.outbox)
        {
            subs.list.push((stream, key));
            self.engine.stats.subscription_added(new_stream);
        }
    }

    fn unsubscribe(&self, stream: &str, variant_key: &str) {
        let mut subs = self.subs.lock();
        if let Some(gates) = self.outbox.gated() {
            gates.forget(stream, variant_key);
        }
        let Some(pos) = subs
            .list
            .iter()
            .position(|(s, k)| &**s == stream && &**k == variant_key)
        else {
            return;
        };
        subs.list.swap_remove(pos);
        if let Some(removed) = self
            .engine
            .index
            .unsubscribe(stream, variant_key, self.outbox.id())
        {
            self.engine.stats.subscription_removed(removed);
        }
    }

    fn hold(&self, stream: &str, variant_key: &str) -> Option<Mark> {
        self.outbox.gates().hold(stream, variant_key)
    }

    fn track(&self, stream: &str, variant_key: &str) {
        self.outbox.gates().track(stream, variant_key);
    }

    fn release(&self, stream: &str, variant_key: &str, last: Option<Mark>) {
        let Some(gates) = self.outbox.gated() else {
            return;
        };
        let mut totals = Enqueued::default();
        gates.release(stream, variant_key, last, |frame| {
            self.engine
                .push_counted(&self.outbox, frame, 1, &mut totals);
        });
        self.engine.stats.enqueued(&totals);
    }

    fn close(&self, frames: &[Frame]) {
        let frames: Vec<Bytes> = frames.iter().map(|f| f.0.clone()).collect();
        self.outbox.request_close(&frames);
        self.detach_all();
        if self.detached {
            self.finish();
        }
    }

    fn abort(&self) {
        self.outbox.request_abort();
        self.detach_all();
        if self.detached {
            self.finish();
        }
    }

    fn is_closed(&self) -> bool {
        self.outbox.state() != State::Open || self.finishing.load(Ordering::Acquire)
    }

    fn done_signal(&self) -> (&AtomicBool, &Notify) {
        (&self.done, &self.done_notify)
    }

    #[cfg(feature = "test-support")]
    fn drain_detached(&self) -> usize {
        if !self.detached {
            return 0;
        }
        if self.outbox.state() != State::Open {
            self.finish();
            return 0;
        }
        self.outbox.disarm();
        let drained = self.outbox.discard();
        self.engine.stats.depth_seen(drained);
        drained
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_threads_start_as_asked_and_take_connections_in_turn() {
        let engine = QueueEngine::new(QueueLimits::default(), 3, QueueBudgets::default());
        assert_eq!(engine.writers().len(), 3);
        let picks: Vec<*const WriterRuntime> = (0..6)
            .map(|_| std::ptr::from_ref(engine.next_writer().expect("a writer")))
            .collect();
        assert_ne!(picks[0], picks[1]);
        assert_ne!(picks[1], picks[2]);
        assert_ne!(picks[0], picks[2]);
        assert_eq!(picks[0..3], picks[3..6]);

        let per_core = QueueEngine::new(QueueLimits::default(), 0, QueueBudgets::default());
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        assert_eq!(per_core.writers().len(), cores);
    }
}
