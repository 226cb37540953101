//! The reference engine ([`EngineKind::TokioBroadcast`], feature `reference-engine`): the
//! design a Rust server usually starts with, kept so the default engine can be measured
//! against it. It implements the same seam as the default engine (`engine.rs`: [`Engine`]
//! for [`RefEngine`], [`Conn`] for [`RefConn`]).
//!
//! - One `tokio::sync::broadcast` channel per stream, holding the raw message (`Bytes`).
//! - One forwarding task per subscription: `recv()` the message, wrap it in the
//!   subscription's variant (`prefix + message + suffix`, built into a buffer the task keeps),
//!   lock the connection's sink and `write_frame` it. The sink is the WebSocket library's
//!   writer, `fastwebsockets::WebSocketWrite<OwnedWriteHalf>`, behind a `tokio::sync::Mutex`,
//!   as in axum's chat example. So each subscriber frames every message itself and every
//!   frame costs at least one write syscall.
//! - One unbounded `mpsc` channel per connection and a task draining it for direct sends
//!   (welcome, confirmations, pongs, close frames).
//! - One global broadcast channel for [`Fanout::send_all`] (pings), with a forwarding task
//!   per connection.
//! - A receiver that falls more than the channel capacity (`QueueLimits::max_frames`) behind
//!   gets `RecvError::Lagged`; the connection is then cut off as too slow exactly like the
//!   default engine does it (notice, close frame, shutdown). A peer that stops reading
//!   entirely blocks its forwarding task inside a write, so the lag is only noticed when that
//!   write completes — one of the weaknesses this engine is kept to show.
//!
//! The bytes on the wire are the same as the default engine's: the library encodes the same
//! minimal unmasked headers.
//!
//! [`EngineKind::TokioBroadcast`]: super::EngineKind::TokioBroadcast
//! [`Fanout::send_all`]: super::Fanout::send_all

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Weak};

use bytes::Bytes;
use fastwebsockets::{OpCode, Payload, Role, WebSocketWrite};
use parking_lot::Mutex;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::broadcast::error::RecvError;
#[cfg(feature = "test-support")]
use tokio::sync::broadcast::error::TryRecvError;
use tokio::sync::{broadcast, mpsc, oneshot, watch, Notify};
use tokio::task::AbortHandle;

use super::frame::{self, Frame};
use super::queue::State;
use super::seam::{Conn, Engine};
use super::stats::{Enqueued, Stats, StatsSnapshot};
use super::{
    next_connection_id, EngineKind, QueueLimits, Variant, CLOSE_FLUSH_TIMEOUT, SLOW_CLOSE_TIMEOUT,
    TOO_SLOW_MESSAGE,
};

/// The library sink shared by a connection's tasks; `None` once the socket was let go.
type Sink = Arc<tokio::sync::Mutex<Option<WebSocketWrite<OwnedWriteHalf>>>>;

/// The reference engine's shared state.
pub(super) struct RefEngine {
    capacity: usize,
    streams: Mutex<HashMap<Arc<str>, broadcast::Sender<Bytes>>>,
    pings: broadcast::Sender<Bytes>,
    stats: Stats,
}

/// What a connection's direct-send task receives.
enum Command {
    Frame(Bytes),
    Close(Vec<Bytes>),
}

/// One subscription of a reference connection.
struct Sub {
    stream: Arc<str>,
    key: Arc<str>,
    handle: SubHandle,
}

/// What carries one subscription's messages.
enum SubHandle {
    /// A forwarding task. Dropping `_stop` asks it to stop after its current write.
    Task {
        _stop: oneshot::Sender<()>,
        task: AbortHandle,
    },
    /// Bench support: the receiver is drained by `drain_detached` instead of a task.
    #[cfg(feature = "test-support")]
    Detached(broadcast::Receiver<Bytes>),
}

/// Receivers of a detached (bench) connection.
#[cfg(feature = "test-support")]
struct DetachedRx {
    direct: mpsc::UnboundedReceiver<Command>,
    pings: broadcast::Receiver<Bytes>,
}

/// One connection of the reference engine.
pub(super) struct RefConn {
    /// This connection itself, for the forwarding tasks `subscribe` spawns.
    me: Weak<Self>,
    id: u64,
    engine: Arc<RefEngine>,
    state: AtomicU8,
    direct: mpsc::UnboundedSender<Command>,
    sink: Mutex<Option<Sink>>,
    stop: watch::Sender<bool>,
    subs: Mutex<RefSubs>,
    tasks: Mutex<Vec<AbortHandle>>,
    /// Set for a connection made by `attach_detached`: no socket and no tasks.
    #[cfg(feature = "test-support")]
    detached: Option<Mutex<DetachedRx>>,
    /// Set by the first `end()`: the rest of it runs once.
    ending: AtomicBool,
    /// Set when `end()` has finished (the gauges included): what `closed()` waits for.
    done: AtomicBool,
    done_notify: Notify,
}

#[derive(Default)]
struct RefSubs {
    closed: bool,
    list: Vec<Sub>,
}

impl RefEngine {
    pub(super) fn new(limits: QueueLimits) -> Self {
        let capacity = limits.max_frames.max(1);
        Self {
            capacity,
            streams: Mutex::default(),
            pings: broadcast::channel(capacity).0,
            stats: Stats::default(),
        }
    }

    /// A new open connection (counted as opened) writing to `sink`.
    fn new_conn(
        engine: &Arc<Self>,
        me: &Weak<RefConn>,
        sink: Option<Sink>,
        direct: mpsc::UnboundedSender<Command>,
    ) -> RefConn {
        engine.stats.connection_opened();
        RefConn {
            me: me.clone(),
            id: next_connection_id(),
            engine: engine.clone(),
            state: AtomicU8::new(State::Open as u8),
            direct,
            sink: Mutex::new(sink),
            stop: watch::channel(false).0,
            subs: Mutex::default(),
            tasks: Mutex::default(),
            #[cfg(feature = "test-support")]
            detached: None,
            ending: AtomicBool::new(false),
            done: AtomicBool::new(false),
            done_notify: Notify::new(),
        }
    }

    /// A receiver on `stream`'s channel, creating the channel if needed.
    fn receiver(&self, stream: &Arc<str>) -> broadcast::Receiver<Bytes> {
        let mut streams = self.streams.lock();
        if let Some(tx) = streams.get(stream) {
            return tx.subscribe();
        }
        let (tx, rx) = broadcast::channel(self.capacity);
        streams.insert(stream.clone(), tx);
        self.stats.streams_changed(1, 0);
        rx
    }
}

impl Engine for RefEngine {
    fn kind(&self) -> EngineKind {
        EngineKind::TokioBroadcast
    }

    /// The reference engine has no threads of its own.
    fn start(&self) {}

    /// Wraps `write` in the library sink and spawns the direct-send and ping tasks.
    fn attach(self: Arc<Self>, write: OwnedWriteHalf, _owner: Option<u64>) -> Arc<dyn Conn> {
        let engine = &self;
        let (_, ws) =
            fastwebsockets::after_handshake_split(tokio::io::empty(), write, Role::Server);
        let sink: Sink = Arc::new(tokio::sync::Mutex::new(Some(ws)));
        let (tx, rx) = mpsc::unbounded_channel();
        let pings = engine.pings.subscribe();
        let conn = Arc::new_cyclic(|me| Self::new_conn(engine, me, Some(sink.clone()), tx));
        let direct = tokio::spawn(direct_task(conn.clone(), sink.clone(), rx));
        let ping = tokio::spawn(ping_task(conn.clone(), sink, pings));
        conn.tasks
            .lock()
            .extend([direct.abort_handle(), ping.abort_handle()]);
        conn
    }

    /// A connection whose receivers are kept for `drain_detached`.
    #[cfg(feature = "test-support")]
    fn attach_detached(self: Arc<Self>) -> Arc<dyn Conn> {
        let engine = &self;
        let (tx, rx) = mpsc::unbounded_channel();
        let detached = DetachedRx {
            direct: rx,
            pings: engine.pings.subscribe(),
        };
        Arc::new_cyclic(|me| RefConn {
            detached: Some(Mutex::new(detached)),
            ..Self::new_conn(engine, me, None, tx)
        })
    }

    fn broadcast(&self, stream: &str, message: &[u8]) -> usize {
        self.stats.broadcast();
        let mut streams = self.streams.lock();
        let Some(tx) = streams.get(stream) else {
            return 0;
        };
        match tx.send(Bytes::copy_from_slice(message)) {
            Ok(receivers) => {
                let depth = tx.len() as u64;
                self.stats.enqueued(&Enqueued {
                    frames: receivers as u64,
                    bytes: (receivers * message.len()) as u64,
                    max_depth: depth,
                    max_bytes: 0,
                });
                receivers
            }
            Err(_) => {
                // Every receiver is gone: forget the channel.
                streams.remove(stream);
                self.stats.streams_changed(0, 1);
                0
            }
        }
    }

    fn send_all(&self, frame: &Frame) -> usize {
        match self.pings.send(frame.0.clone()) {
            Ok(receivers) => {
                self.stats.enqueued(&Enqueued {
                    frames: receivers as u64,
                    bytes: (receivers * frame.len()) as u64,
                    max_depth: self.pings.len() as u64,
                    max_bytes: 0,
                });
                receivers
            }
            Err(_) => 0,
        }
    }

    fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// Its tasks always run on the attaching runtime.
    #[cfg(feature = "test-support")]
    fn run_writers_inline(&self) {}
}

impl fmt::Debug for RefEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RefEngine")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl RefConn {
    fn state(&self) -> State {
        State::from_u8(self.state.load(Ordering::Acquire))
    }

    fn transition(&self, from: State, to: State) -> bool {
        self.state
            .compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// True for a connection made by `attach_detached` (no socket, no tasks).
    #[cfg(feature = "test-support")]
    fn is_detached(&self) -> bool {
        self.detached.is_some()
    }

    /// True for a connection made by `attach_detached` (never, without `test-support`).
    #[cfg(not(feature = "test-support"))]
    fn is_detached(&self) -> bool {
        false
    }

    /// What carries a new subscription's messages from `rx`: a forwarding task writing with
    /// `variant` (or, for a detached connection, `rx` itself). `None` once the socket was let
    /// go.
    fn sub_handle(&self, rx: broadcast::Receiver<Bytes>, variant: &Variant) -> Option<SubHandle> {
        #[cfg(feature = "test-support")]
        if self.is_detached() {
            return Some(SubHandle::Detached(rx));
        }
        let sink = self.sink.lock().clone()?;
        let conn = self.me.upgrade()?;
        let (stop_tx, stop_rx) = oneshot::channel();
        let task = tokio::spawn(forward_task(conn, sink, rx, variant.clone(), stop_rx));
        Some(SubHandle::Task {
            _stop: stop_tx,
            task: task.abort_handle(),
        })
    }

    /// Detaches every subscription for good. With `hard`, forwarding tasks are aborted at
    /// once instead of finishing their current write.
    fn detach_all(&self, hard: bool) {
        let list = {
            let mut subs = self.subs.lock();
            subs.closed = true;
            std::mem::take(&mut subs.list)
        };
        for sub in list {
            if let (true, SubHandle::Task { task, .. }) = (hard, &sub.handle) {
                task.abort();
            }
            self.engine.stats.subscription_removed(false);
        }
    }

    /// Too-slow cut-off, run by the task that saw `Lagged`: stop the others, wait for any
    /// write in progress (the sink lock), send the notice and a close frame, let the socket go.
    async fn cut_off(self: &Arc<Self>, sink: &Sink) {
        if !self.transition(State::Open, State::TooSlow) {
            return;
        }
        self.engine.stats.slow_disconnect();
        self.detach_all(false);
        self.stop.send_replace(true);
        let notice = Frame::text(TOO_SLOW_MESSAGE);
        let close = Frame::close(1000, "");
        let _ = tokio::time::timeout(SLOW_CLOSE_TIMEOUT, async {
            let mut guard = sink.lock().await;
            if let Some(ws) = guard.as_mut() {
                if write_encoded(&self.engine.stats, ws, &notice.0)
                    .await
                    .is_ok()
                {
                    let _ = write_encoded(&self.engine.stats, ws, &close.0).await;
                }
            }
            guard.take();
        })
        .await;
        self.end();
    }

    /// The connection is over: stop and abort every task, drop our hold on the sink (the
    /// socket's write side closes when the last task lets go of it), wake `closed()`.
    fn end(&self) {
        if self.ending.swap(true, Ordering::AcqRel) {
            return;
        }
        self.state.store(State::Ended as u8, Ordering::Release);
        self.stop.send_replace(true);
        self.detach_all(true);
        self.sink.lock().take();
        for task in self.tasks.lock().drain(..) {
            task.abort();
        }
        self.engine.stats.connection_closed();
        // Only now: whoever `closed()` wakes sees the connection counted out.
        self.done.store(true, Ordering::Release);
        self.done_notify.notify_waiters();
    }
}

impl Conn for RefConn {
    fn id(&self) -> u64 {
        self.id
    }

    fn send(&self, frame: Frame) -> bool {
        if self.state() != State::Open {
            return false;
        }
        let len = frame.len();
        if self.direct.send(Command::Frame(frame.0)).is_err() {
            return false;
        }
        let mut totals = Enqueued::default();
        totals.add(len, 0);
        self.engine.stats.enqueued(&totals);
        true
    }

    fn subscribe(&self, stream: &str, variant: &Variant) {
        let mut subs = self.subs.lock();
        if subs.closed || self.state() != State::Open {
            return;
        }
        if subs
            .list
            .iter()
            .any(|s| &*s.stream == stream && s.key == variant.key)
        {
            return;
        }
        let stream: Arc<str> = Arc::from(stream);
        let rx = self.engine.receiver(&stream);
        let Some(handle) = self.sub_handle(rx, variant) else {
            return;
        };
        subs.list.push(Sub {
            stream,
            key: variant.key.clone(),
            handle,
        });
        self.engine.stats.subscription_added(false);
    }

    fn unsubscribe(&self, stream: &str, variant_key: &str) {
        let removed = {
            let mut subs = self.subs.lock();
            let Some(pos) = subs
                .list
                .iter()
                .position(|s| &*s.stream == stream && &*s.key == variant_key)
            else {
                return;
            };
            subs.list.swap_remove(pos)
        };
        // Dropping the handle's stop sender ends the task after its current write.
        drop(removed);
        self.engine.stats.subscription_removed(false);
    }

    fn close(&self, frames: &[Frame]) {
        if !self.transition(State::Open, State::Closing) {
            return;
        }
        self.detach_all(false);
        let frames = frames.iter().map(|f| f.0.clone()).collect();
        if self.direct.send(Command::Close(frames)).is_err() || self.is_detached() {
            self.end();
        }
    }

    fn abort(&self) {
        let current = self.state();
        if current == State::Ended || current == State::Aborted {
            return;
        }
        self.state.store(State::Aborted as u8, Ordering::Release);
        self.end();
    }

    fn is_closed(&self) -> bool {
        self.state() != State::Open || self.done.load(Ordering::Acquire)
    }

    fn done_signal(&self) -> (&AtomicBool, &Notify) {
        (&self.done, &self.done_notify)
    }

    #[cfg(feature = "test-support")]
    fn drain_detached(&self) -> usize {
        let mut n = 0;
        if let Some(detached) = &self.detached {
            let mut rx = detached.lock();
            while rx.direct.try_recv().is_ok() {
                n += 1;
            }
            n += drain_receiver(&mut rx.pings);
        }
        let mut subs = self.subs.lock();
        for sub in subs.list.iter_mut() {
            if let SubHandle::Detached(rx) = &mut sub.handle {
                n += drain_receiver(rx);
            }
        }
        n
    }
}

impl fmt::Debug for RefConn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RefConn")
            .field("id", &self.id)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// Receives every pending message of `rx`, skipping over a lag. Returns how many.
#[cfg(feature = "test-support")]
fn drain_receiver(rx: &mut broadcast::Receiver<Bytes>) -> usize {
    let mut n = 0;
    loop {
        match rx.try_recv() {
            Ok(_) => n += 1,
            Err(TryRecvError::Lagged(_)) => {}
            Err(_) => return n,
        }
    }
}

/// Writes one pre-encoded frame through the library: decodes opcode and payload and lets
/// `write_frame` encode the header again (the same bytes).
async fn write_encoded(
    stats: &Stats,
    ws: &mut WebSocketWrite<OwnedWriteHalf>,
    encoded: &Bytes,
) -> Result<(), fastwebsockets::WebSocketError> {
    let frame = Frame(encoded.clone());
    let opcode = OpCode::try_from(frame.opcode().unwrap_or(frame::OPCODE_TEXT))?;
    let payload = frame.payload().unwrap_or_default();
    ws.write_frame(fastwebsockets::Frame::new(
        true,
        opcode,
        None,
        Payload::Borrowed(payload),
    ))
    .await?;
    stats.written(1, encoded.len() as u64);
    Ok(())
}

/// Locks the sink and writes one frame; `Err` when the socket is gone or the write failed.
async fn write_locked(stats: &Stats, sink: &Sink, encoded: &Bytes) -> Result<(), ()> {
    let mut guard = sink.lock().await;
    let ws = guard.as_mut().ok_or(())?;
    write_encoded(stats, ws, encoded).await.map_err(|_| ())
}

/// The connection's direct-send task: writes `send`s in order, and a close's frames last.
async fn direct_task(conn: Arc<RefConn>, sink: Sink, mut rx: mpsc::UnboundedReceiver<Command>) {
    let mut stop = conn.stop.subscribe();
    loop {
        let command = tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            command = rx.recv() => command,
        };
        match command {
            None => break,
            Some(Command::Frame(frame)) => {
                if write_locked(&conn.engine.stats, &sink, &frame)
                    .await
                    .is_err()
                {
                    conn.end();
                    break;
                }
            }
            Some(Command::Close(frames)) => {
                let _ = tokio::time::timeout(CLOSE_FLUSH_TIMEOUT, async {
                    let mut guard = sink.lock().await;
                    if let Some(ws) = guard.as_mut() {
                        for frame in &frames {
                            if write_encoded(&conn.engine.stats, ws, frame).await.is_err() {
                                break;
                            }
                        }
                    }
                    // Dropping the library writer drops the write half: FIN.
                    guard.take();
                })
                .await;
                conn.end();
                break;
            }
        }
    }
}

/// The connection's ping task: forwards every `send_all` frame.
async fn ping_task(conn: Arc<RefConn>, sink: Sink, mut rx: broadcast::Receiver<Bytes>) {
    let mut stop = conn.stop.subscribe();
    loop {
        let received = tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            received = rx.recv() => received,
        };
        match received {
            Ok(frame) => {
                if conn.state() != State::Open {
                    break;
                }
                if write_locked(&conn.engine.stats, &sink, &frame)
                    .await
                    .is_err()
                {
                    conn.end();
                    break;
                }
            }
            Err(RecvError::Lagged(_)) => {
                conn.cut_off(&sink).await;
                break;
            }
            Err(RecvError::Closed) => break,
        }
    }
}

/// One subscription's forwarding task: frames each message with the variant and writes it.
async fn forward_task(
    conn: Arc<RefConn>,
    sink: Sink,
    mut rx: broadcast::Receiver<Bytes>,
    variant: Variant,
    mut unsubscribed: oneshot::Receiver<()>,
) {
    let mut stop = conn.stop.subscribe();
    let mut payload = Vec::new();
    loop {
        let received = tokio::select! {
            biased;
            _ = &mut unsubscribed => break,
            _ = stop.wait_for(|s| *s) => break,
            received = rx.recv() => received,
        };
        match received {
            Ok(message) => {
                if conn.state() != State::Open {
                    break;
                }
                payload.clear();
                payload.extend_from_slice(&variant.prefix);
                payload.extend_from_slice(&message);
                payload.extend_from_slice(&variant.suffix);
                let written = {
                    let mut guard = sink.lock().await;
                    match guard.as_mut() {
                        Some(ws) => ws
                            .write_frame(fastwebsockets::Frame::text(Payload::Borrowed(&payload)))
                            .await
                            .is_ok(),
                        None => false,
                    }
                };
                if !written {
                    conn.end();
                    break;
                }
                let len = frame::header_len(payload.len()) + payload.len();
                conn.engine.stats.written(1, len as u64);
            }
            Err(RecvError::Lagged(_)) => {
                conn.cut_off(&sink).await;
                break;
            }
            Err(RecvError::Closed) => break,
        }
    }
}
