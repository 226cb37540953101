//! The reference engine ([`EngineKind::TokioBroadcast`]): the design a Rust server usually
//! starts with, kept so the default engine can be measured against it.
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
use std::sync::Arc;

use bytes::Bytes;
use fastwebsockets::{OpCode, Payload, Role, WebSocketWrite};
use parking_lot::Mutex;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, mpsc, oneshot, watch, Notify};
use tokio::task::AbortHandle;

use super::engine::next_connection_id;
use super::frame::{self, Frame};
use super::queue::State;
use super::stats::{Enqueued, Stats};
use super::{QueueLimits, Variant, CLOSE_FLUSH_TIMEOUT, SLOW_CLOSE_TIMEOUT, TOO_SLOW_MESSAGE};

/// The library sink shared by a connection's tasks; `None` once the socket was let go.
type Sink = Arc<tokio::sync::Mutex<Option<WebSocketWrite<OwnedWriteHalf>>>>;

/// The reference engine's shared state.
pub(crate) struct RefEngine {
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

enum SubHandle {
    /// A forwarding task. Dropping `_stop` asks it to stop after its current write.
    Task {
        _stop: oneshot::Sender<()>,
        task: AbortHandle,
    },
    /// Bench support: the receiver is drained by `drain_detached` instead of a task.
    Detached(broadcast::Receiver<Bytes>),
}

/// Receivers of a detached (bench) connection.
struct DetachedRx {
    direct: mpsc::UnboundedReceiver<Command>,
    pings: broadcast::Receiver<Bytes>,
}

/// One connection of the reference engine.
pub(crate) struct RefConn {
    id: u64,
    engine: Arc<RefEngine>,
    state: AtomicU8,
    direct: mpsc::UnboundedSender<Command>,
    sink: Mutex<Option<Sink>>,
    stop: watch::Sender<bool>,
    subs: Mutex<RefSubs>,
    tasks: Mutex<Vec<AbortHandle>>,
    detached: Option<Mutex<DetachedRx>>,
    done: AtomicBool,
    done_notify: Notify,
}

#[derive(Default)]
struct RefSubs {
    closed: bool,
    list: Vec<Sub>,
}

impl RefEngine {
    pub(crate) fn new(limits: QueueLimits) -> RefEngine {
        let capacity = limits.max_frames.max(1);
        RefEngine {
            capacity,
            streams: Mutex::default(),
            pings: broadcast::channel(capacity).0,
            stats: Stats::default(),
        }
    }

    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }

    fn new_conn(
        engine: &Arc<RefEngine>,
        sink: Option<Sink>,
        detached: Option<DetachedRx>,
        direct: mpsc::UnboundedSender<Command>,
    ) -> Arc<RefConn> {
        engine.stats.connection_opened();
        Arc::new(RefConn {
            id: next_connection_id(),
            engine: engine.clone(),
            state: AtomicU8::new(State::Open as u8),
            direct,
            sink: Mutex::new(sink),
            stop: watch::channel(false).0,
            subs: Mutex::default(),
            tasks: Mutex::default(),
            detached: detached.map(Mutex::new),
            done: AtomicBool::new(false),
            done_notify: Notify::new(),
        })
    }

    /// Wraps `write` in the library sink and spawns the direct-send and ping tasks.
    pub(crate) fn attach(engine: &Arc<RefEngine>, write: OwnedWriteHalf) -> Arc<RefConn> {
        let (_, ws) =
            fastwebsockets::after_handshake_split(tokio::io::empty(), write, Role::Server);
        let sink: Sink = Arc::new(tokio::sync::Mutex::new(Some(ws)));
        let (tx, rx) = mpsc::unbounded_channel();
        let pings = engine.pings.subscribe();
        let conn = Self::new_conn(engine, Some(sink.clone()), None, tx);
        let direct = tokio::spawn(direct_task(conn.clone(), sink.clone(), rx));
        let ping = tokio::spawn(ping_task(conn.clone(), sink, pings));
        conn.tasks
            .lock()
            .extend([direct.abort_handle(), ping.abort_handle()]);
        conn
    }

    /// Bench support: a connection whose receivers are kept for `drain_detached`.
    pub(crate) fn attach_detached(engine: &Arc<RefEngine>) -> Arc<RefConn> {
        let (tx, rx) = mpsc::unbounded_channel();
        let detached = DetachedRx {
            direct: rx,
            pings: engine.pings.subscribe(),
        };
        Self::new_conn(engine, None, Some(detached), tx)
    }

    pub(crate) fn broadcast(&self, stream: &str, message: &[u8]) -> usize {
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

    pub(crate) fn send_all(&self, frame: &Frame) -> usize {
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

impl fmt::Debug for RefEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RefEngine")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl RefConn {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    fn state(&self) -> State {
        match self.state.load(Ordering::Acquire) {
            0 => State::Open,
            1 => State::Closing,
            2 => State::TooSlow,
            3 => State::Aborted,
            _ => State::Ended,
        }
    }

    fn transition(&self, from: State, to: State) -> bool {
        self.state
            .compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state() != State::Open || self.done.load(Ordering::Acquire)
    }

    pub(crate) fn done_signal(&self) -> (&AtomicBool, &Notify) {
        (&self.done, &self.done_notify)
    }

    pub(crate) fn send(&self, frame: Bytes) -> bool {
        if self.state() != State::Open {
            return false;
        }
        let len = frame.len();
        if self.direct.send(Command::Frame(frame)).is_err() {
            return false;
        }
        let mut totals = Enqueued::default();
        totals.add(len, 0);
        self.engine.stats.enqueued(&totals);
        true
    }

    pub(crate) fn subscribe(conn: &Arc<RefConn>, stream: &str, variant: &Variant) {
        let mut subs = conn.subs.lock();
        if subs.closed || conn.state() != State::Open {
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
        let rx = conn.engine.receiver(&stream);
        let handle = if conn.detached.is_some() {
            SubHandle::Detached(rx)
        } else {
            let Some(sink) = conn.sink.lock().clone() else {
                return;
            };
            let (stop_tx, stop_rx) = oneshot::channel();
            let task = tokio::spawn(forward_task(
                conn.clone(),
                sink,
                rx,
                variant.clone(),
                stop_rx,
            ));
            SubHandle::Task {
                _stop: stop_tx,
                task: task.abort_handle(),
            }
        };
        subs.list.push(Sub {
            stream,
            key: variant.key.clone(),
            handle,
        });
        conn.engine.stats.subscription_added(false);
    }

    pub(crate) fn unsubscribe(&self, stream: &str, variant_key: &str) {
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

    pub(crate) fn close(&self, frames: &[Frame]) {
        if !self.transition(State::Open, State::Closing) {
            return;
        }
        self.detach_all(false);
        let frames = frames.iter().map(|f| f.0.clone()).collect();
        if self.direct.send(Command::Close(frames)).is_err() || self.detached.is_some() {
            self.end();
        }
    }

    pub(crate) fn abort(&self) {
        let current = self.state();
        if current == State::Ended || current == State::Aborted {
            return;
        }
        self.state.store(State::Aborted as u8, Ordering::Release);
        self.end();
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
        if self.done.swap(true, Ordering::AcqRel) {
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
        self.done_notify.notify_waiters();
    }

    pub(crate) fn drain_detached(&self) -> usize {
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
fn drain_receiver(rx: &mut broadcast::Receiver<Bytes>) -> usize {
    let mut n = 0;
    loop {
        match rx.try_recv() {
            Ok(_) => n += 1,
            Err(TryRecvError::Lagged(_)) => continue,
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
