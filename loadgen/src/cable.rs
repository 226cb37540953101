//! Action Cable clients: N connections on one thread, each a task that owns its socket.
//!
//! A client (Action Cable protocol, `@rails/actioncable` `connection.js` and
//! `subscriptions.js`):
//! 1. opens a TCP connection and performs the WebSocket upgrade with the user's `Cookie`,
//!    `Origin` and `Sec-WebSocket-Protocol: actioncable-v1-json, actioncable-unsupported`
//!    ([`crate::ws`]);
//! 2. waits for `{"type":"welcome"}`, then sends one `subscribe` command per identifier, all in
//!    one write;
//! 3. is *ready* when it has one `confirm_subscription` per identifier; a
//!    `reject_subscription`, a `disconnect` message, a close frame or EOF before that makes it
//!    *failed*, after that *disconnected*;
//! 4. then reads frames until the cell ends, answering WebSocket pings with pongs and matching
//!    each text frame to a posted message by searching the payload for the cell's token prefix
//!    with a prebuilt `memchr::memmem::Finder` ([`crate::tracker`]).
//!
//! The receive path is built for throughput: one large buffer per connection (default 64 KiB),
//! frames parsed in place with [`crate::ws::parse_frame`], no allocation per frame, one
//! timestamp per `read()` shared by every frame it returned, and partial frames moved to the
//! buffer's start only when the free tail gets short. All tasks run on one current-thread tokio
//! runtime, so the shared state below is `Rc` + `RefCell`/`Cell` without locks.

use crate::deflate::{self, Inflater, Negotiated};
use crate::endpoint::Endpoint;
use crate::tracker::{ListenTracker, Receipt, TokenScheme, Tracker};
use crate::ws::{self, Parse, OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT};
use memchr::memmem::Finder;
use std::cell::{Cell, RefCell};
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{Notify, Semaphore};

/// What one client connects as: its `Cookie` header and the identifiers it subscribes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientProfile {
    /// `Cookie` header value, if any.
    pub cookie: Option<String>,
    /// Subscription identifier JSON strings.
    pub identifiers: Vec<String>,
}

/// Settings shared by every client of a cell.
#[derive(Debug, Clone)]
pub struct CableConfig {
    /// The `ws://` Action Cable URL.
    pub endpoint: Endpoint,
    /// `Origin` header value.
    pub origin: String,
    /// Receive buffer per connection, bytes.
    pub read_buffer: usize,
    /// Subprotocol the server must select (`actioncable-v1-json`), or `None` to accept any.
    pub required_protocol: Option<String>,
    /// Offer permessage-deflate (RFC 7692) as Chromium does and inflate what comes compressed
    /// (`--deflate`); a server that declines it gets plain frames read as usual.
    pub deflate: bool,
    /// Cable nodes to spread connections over, round-robin (each `ws://` URL with its own
    /// `Origin`); empty: every connection goes to `endpoint`.
    pub spread: Vec<(Endpoint, String)>,
    /// The next node of `spread` to use.
    pub next: std::rc::Rc<std::cell::Cell<usize>>,
}

impl CableConfig {
    /// The endpoint and Origin for the next connection: `endpoint`, or the next of `spread`.
    pub fn pick(&self) -> (&Endpoint, &str) {
        if self.spread.is_empty() {
            return (&self.endpoint, &self.origin);
        }
        let i = self.next.get();
        self.next.set(i.wrapping_add(1));
        let (endpoint, origin) = &self.spread[i % self.spread.len()];
        (endpoint, origin)
    }
}

/// Connection outcome counters of a cell.
#[derive(Debug, Default, Clone)]
pub struct ConnCounters {
    /// Clients with every subscription confirmed.
    pub ready: usize,
    /// Clients that failed before becoming ready.
    pub failed: usize,
    /// Clients that were ready and then lost their connection.
    pub disconnected: usize,
    /// When the last client became ready.
    pub last_ready: Option<Instant>,
    /// The first distinct error texts (at most 10).
    pub errors: Vec<String>,
}

impl ConnCounters {
    fn note_error(&mut self, e: String) {
        if self.errors.len() < 10 && !self.errors.contains(&e) {
            self.errors.push(e);
        }
    }
}

/// State shared by a cell's clients and posters (single-threaded).
#[derive(Debug)]
pub struct Shared {
    /// Message accounting.
    pub tracker: RefCell<Tracker>,
    /// Connection outcomes.
    pub conns: RefCell<ConnCounters>,
    /// Signalled whenever a client becomes ready, fails or disconnects.
    pub conn_changed: Notify,
    /// Signalled whenever a message completes or a post fails (the window may have opened).
    pub progress: Notify,
    /// Bytes read from all WebSockets (handshake responses excluded).
    pub bytes_received: Cell<u64>,
    /// Data frames received by ready clients.
    pub frames: Cell<u64>,
    /// Data frames that carried no token of this cell (pings, unread notices...).
    pub other_frames: Cell<u64>,
    /// WebSocket pings answered.
    pub pongs: Cell<u64>,
    /// Listen-only accounting ([`Shared::listening`]): receipts go here instead of `tracker`.
    pub listen: Option<RefCell<ListenTracker>>,
    ready_flags: RefCell<Vec<bool>>,
    finder: Finder<'static>,
    prefix_len: usize,
}

impl Shared {
    /// Shared state for `clients` client slots and `posters` posters, matching `tokens`.
    pub fn new(clients: usize, posters: usize, tokens: &TokenScheme) -> Self {
        let prefix = tokens.prefix().as_bytes().to_vec();
        Self {
            tracker: RefCell::new(Tracker::new(clients, clients as u32, posters)),
            conns: RefCell::new(ConnCounters::default()),
            conn_changed: Notify::new(),
            progress: Notify::new(),
            bytes_received: Cell::new(0),
            frames: Cell::new(0),
            other_frames: Cell::new(0),
            pongs: Cell::new(0),
            listen: None,
            ready_flags: RefCell::new(vec![false; clients]),
            prefix_len: prefix.len(),
            finder: Finder::new(&prefix).into_owned(),
        }
    }

    /// Shared state for `clients` listen-only client slots matching `tokens`: their receipts
    /// are counted by a [`ListenTracker`] (sequence numbers below `max_seq`), since the posts
    /// are made by another process.
    pub fn listening(clients: usize, tokens: &TokenScheme, max_seq: u32) -> Self {
        Self {
            listen: Some(RefCell::new(ListenTracker::new(clients, max_seq))),
            ..Self::new(clients, 1, tokens)
        }
    }

    /// Matches one text payload received by ready client `idx` at `now`.
    #[inline]
    pub fn on_data(&self, idx: usize, payload: &[u8], now: Instant) {
        self.frames.set(self.frames.get() + 1);
        let Some(pos) = self.finder.find(payload) else {
            self.other_frames.set(self.other_frames.get() + 1);
            return;
        };
        let Some(seq) = TokenScheme::parse_seq(&payload[pos + self.prefix_len..]) else {
            self.other_frames.set(self.other_frames.get() + 1);
            return;
        };
        if let Some(listen) = &self.listen {
            listen.borrow_mut().receipt(idx, seq, now);
            return;
        }
        let outcome = self
            .tracker
            .borrow_mut()
            .receipt(idx, seq, now, payload.len());
        if outcome == Receipt::Completed {
            self.progress.notify_waiters();
        }
    }

    /// Whether client `idx` is ready (all subscriptions confirmed, connection still open).
    pub fn is_ready(&self, idx: usize) -> bool {
        self.ready_flags.borrow().get(idx).copied().unwrap_or(false)
    }

    fn client_ready(&self, idx: usize, now: Instant) {
        if let Some(f) = self.ready_flags.borrow_mut().get_mut(idx) {
            *f = true;
        }
        let mut c = self.conns.borrow_mut();
        c.ready += 1;
        c.last_ready = Some(now);
        drop(c);
        self.conn_changed.notify_waiters();
    }

    fn client_ended(&self, idx: usize, was_ready: bool, error: String) {
        if let Some(f) = self.ready_flags.borrow_mut().get_mut(idx) {
            *f = false;
        }
        let mut c = self.conns.borrow_mut();
        if was_ready {
            c.disconnected += 1;
        } else {
            c.failed += 1;
        }
        c.note_error(error);
        drop(c);
        self.conn_changed.notify_waiters();
        // A lost client means some messages can never complete: wake window waiters so they
        // re-check the deadline.
        self.progress.notify_waiters();
    }
}

/// Local addresses the clients' TCP connections are bound to, round-robin (empty: the
/// kernel's choice). Set once at start from `--source-addrs`. Spreading clients over several
/// loopback addresses (127.0.0.2, 127.0.0.3, …) gives each address its own ephemeral port
/// range, so a run can hold more connections to one server port than one range allows.
static SOURCE_ADDRS: OnceLock<Vec<IpAddr>> = OnceLock::new();

/// Which source address the next connection takes. `Relaxed`: only a rotating index, no data
/// is published through it.
static NEXT_SOURCE: AtomicUsize = AtomicUsize::new(0);

/// Sets the source addresses of every later client connection (see `SOURCE_ADDRS`); only the
/// first call has an effect. Returns false when they were already set.
pub fn set_source_addrs(addrs: Vec<IpAddr>) -> bool {
    SOURCE_ADDRS.set(addrs).is_ok()
}

/// Parses a comma-separated list of IP addresses (`--source-addrs`).
///
/// Errors: an element that is not an IP address.
pub fn parse_source_addrs(s: &str) -> Result<Vec<IpAddr>, String> {
    s.split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| a.parse().map_err(|e| format!("{a:?}: {e}")))
        .collect()
}

/// A TCP connection to `authority`, bound first to the next source address if any are set.
async fn connect(authority: &str) -> std::io::Result<TcpStream> {
    let sources = SOURCE_ADDRS.get().map(Vec::as_slice).unwrap_or(&[]);
    if sources.is_empty() {
        return TcpStream::connect(authority).await;
    }
    let source = sources[NEXT_SOURCE.fetch_add(1, Ordering::Relaxed) % sources.len()];
    let mut last = None;
    for remote in tokio::net::lookup_host(authority).await? {
        if remote.is_ipv4() != source.is_ipv4() {
            continue;
        }
        let socket = if remote.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.bind(SocketAddr::new(source, 0))?;
        match socket.connect(remote).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            format!("no address of {authority} matches source {source}"),
        )
    }))
}

/// An open WebSocket: the stream, the bytes read past the response head (the start of the
/// first frames), and permessage-deflate's parameters when the server agreed to it.
pub type Opened = (TcpStream, Vec<u8>, Option<Negotiated>);

/// Opens a WebSocket: TCP connect, upgrade request (with the permessage-deflate offer when
/// `cfg.deflate`), response check.
///
/// Errors: a text naming the step that failed (a permessage-deflate answer RFC 7692 §5.1 tells
/// a client to refuse included).
pub async fn open(cfg: &CableConfig, cookie: Option<&str>) -> Result<Opened, String> {
    let (endpoint, origin) = cfg.pick();
    let authority = endpoint.authority();
    let mut stream = connect(&authority)
        .await
        .map_err(|e| format!("connect {authority}: {e}"))?;
    let _ = stream.set_nodelay(true);
    let key = ws::new_key();
    let req = ws::UpgradeRequest {
        host: &authority,
        path: &endpoint.path,
        origin,
        cookie,
        protocols: ws::ACTION_CABLE_PROTOCOLS,
        key: &key,
        extensions: cfg.deflate.then_some(deflate::OFFER),
    }
    .to_bytes();
    stream
        .write_all(&req)
        .await
        .map_err(|e| format!("sending upgrade request: {e}"))?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| format!("reading upgrade response: {e}"))?;
        if n == 0 {
            return Err("connection closed during the WebSocket handshake".to_owned());
        }
        buf.extend_from_slice(&chunk[..n]);
        match ws::parse_upgrade_response(&buf, &key, cfg.required_protocol.as_deref()) {
            Ok(Some(head)) => {
                let answer = ws::response_header(&buf[..head], "sec-websocket-extensions");
                let agreed = match answer {
                    Some(_) if !cfg.deflate => {
                        return Err(format!(
                            "server agreed to an extension not offered: {answer:?}"
                        ))
                    }
                    a => Negotiated::from_response(a.as_deref())?,
                };
                return Ok((stream, buf.split_off(head), agreed));
            }
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    AwaitWelcome,
    Subscribing,
    Ready,
}

/// Bounded text of a payload for error messages.
fn shown(payload: &[u8]) -> String {
    String::from_utf8_lossy(&payload[..payload.len().min(200)]).into_owned()
}

struct Session<'a> {
    idx: usize,
    phase: Phase,
    confirmed: usize,
    profile: &'a ClientProfile,
    shared: &'a Shared,
    gate: Option<tokio::sync::SemaphorePermit<'a>>,
}

impl Session<'_> {
    #[inline]
    fn on_message(
        &mut self,
        payload: &[u8],
        now: Instant,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        match self.phase {
            Phase::Ready => {
                self.shared.on_data(self.idx, payload, now);
                if payload.len() < 512 && memchr::memmem::find(payload, b"\"disconnect\"").is_some()
                {
                    return Err(format!("server sent {}", shown(payload)));
                }
            }
            Phase::AwaitWelcome => {
                if memchr::memmem::find(payload, b"\"welcome\"").is_some() {
                    for id in &self.profile.identifiers {
                        let cmd = crate::campfire::subscribe_command(id);
                        ws::encode_text(cmd.as_bytes(), out);
                    }
                    self.phase = Phase::Subscribing;
                    if self.profile.identifiers.is_empty() {
                        self.become_ready(now);
                    }
                } else if memchr::memmem::find(payload, b"\"disconnect\"").is_some() {
                    return Err(format!("server sent {} instead of welcome", shown(payload)));
                }
            }
            Phase::Subscribing => {
                if memchr::memmem::find(payload, b"\"confirm_subscription\"").is_some() {
                    self.confirmed += 1;
                    if self.confirmed == self.profile.identifiers.len() {
                        self.become_ready(now);
                    }
                } else if memchr::memmem::find(payload, b"\"reject_subscription\"").is_some() {
                    return Err(format!("subscription rejected: {}", shown(payload)));
                } else if memchr::memmem::find(payload, b"\"disconnect\"").is_some() {
                    return Err(format!("server sent {} while subscribing", shown(payload)));
                }
            }
        }
        Ok(())
    }

    fn become_ready(&mut self, now: Instant) {
        self.phase = Phase::Ready;
        self.gate = None;
        self.shared.client_ready(self.idx, now);
    }
}

/// Runs client `idx` until its connection ends or the task is aborted: connect (holding a
/// permit of `gate`, which bounds concurrent handshakes, until ready), subscribe, then receive.
/// Outcomes are counted in `shared.conns`.
pub async fn run_client(
    idx: usize,
    profile: Rc<ClientProfile>,
    cfg: Rc<CableConfig>,
    shared: Rc<Shared>,
    gate: Rc<Semaphore>,
) {
    let permit = gate.acquire().await.ok();
    let mut session = Session {
        idx,
        phase: Phase::AwaitWelcome,
        confirmed: 0,
        profile: &profile,
        shared: &shared,
        gate: permit,
    };
    let result = drive(&mut session, &cfg).await;
    let was_ready = session.phase == Phase::Ready;
    let when = match session.phase {
        Phase::AwaitWelcome => "before welcome".to_owned(),
        Phase::Subscribing => format!(
            "while subscribing ({} of {} confirmed)",
            session.confirmed,
            session.profile.identifiers.len()
        ),
        Phase::Ready => "after ready".to_owned(),
    };
    drop(session);
    let error = result
        .err()
        .unwrap_or_else(|| "connection closed".to_owned());
    shared.client_ended(idx, was_ready, format!("{when}: {error}"));
}

async fn drive(session: &mut Session<'_>, cfg: &CableConfig) -> Result<(), String> {
    let (mut stream, leftover, agreed) = open(cfg, session.profile.cookie.as_deref()).await?;
    let mut inflater = agreed.map(Inflater::new);
    let mut plain: Vec<u8> = Vec::new();
    let mut frag_compressed = false;
    let mut buf = vec![0u8; cfg.read_buffer.max(leftover.len()).max(4096)];
    buf[..leftover.len()].copy_from_slice(&leftover);
    let (mut start, mut end) = (0usize, leftover.len());
    let mut frag: Vec<u8> = Vec::new();
    let mut frag_active = false;
    let mut out: Vec<u8> = Vec::new();
    let mut now = Instant::now();
    let shared = session.shared;
    loop {
        let mut close_code: Option<u16> = None;
        let mut needed = 0usize;
        loop {
            let parsed = ws::parse_frame_with(&buf[start..end], inflater.is_some());
            match parsed.map_err(|e| e.to_string())? {
                Parse::Frame(h) => {
                    let p0 = start + h.header_len;
                    let p1 = start + h.total_len();
                    start = p1;
                    let payload = &buf[p0..p1];
                    match h.opcode {
                        OP_TEXT | OP_BINARY if !frag_active => {
                            if h.fin {
                                let m = decoded(payload, h.compressed, &mut inflater, &mut plain)?;
                                session.on_message(m, now, &mut out)?;
                            } else {
                                frag_active = true;
                                frag_compressed = h.compressed;
                                frag.clear();
                                frag.extend_from_slice(payload);
                            }
                        }
                        OP_CONTINUATION if h.compressed => {
                            return Err("RSV1 on a continuation frame (RFC 7692 §6.1)".to_owned())
                        }
                        OP_CONTINUATION if frag_active => {
                            frag.extend_from_slice(payload);
                            if h.fin {
                                frag_active = false;
                                let m = decoded(&frag, frag_compressed, &mut inflater, &mut plain)?;
                                session.on_message(m, now, &mut out)?;
                            }
                        }
                        OP_TEXT | OP_BINARY | OP_CONTINUATION => {
                            return Err("bad fragmentation sequence (RFC 6455 §5.4)".to_owned())
                        }
                        OP_PING => {
                            ws::encode_client_frame(
                                true,
                                OP_PONG,
                                payload,
                                rand::random(),
                                &mut out,
                            );
                            shared.pongs.set(shared.pongs.get() + 1);
                        }
                        OP_CLOSE => {
                            let code = if payload.len() >= 2 {
                                u16::from_be_bytes([payload[0], payload[1]])
                            } else {
                                1005
                            };
                            let echo = if payload.len() >= 2 {
                                &payload[..2]
                            } else {
                                &[][..]
                            };
                            ws::encode_client_frame(true, OP_CLOSE, echo, rand::random(), &mut out);
                            close_code = Some(code);
                            break;
                        }
                        // Pongs and reserved opcodes are ignored.
                        _ => {}
                    }
                }
                Parse::Incomplete { needed: n } => {
                    needed = n;
                    break;
                }
            }
        }
        if !out.is_empty() {
            let r = stream.write_all(&out).await;
            out.clear();
            if close_code.is_none() {
                r.map_err(|e| format!("write: {e}"))?;
            }
        }
        if let Some(code) = close_code {
            return Err(format!("server closed the WebSocket with code {code}"));
        }
        if start == end {
            start = 0;
            end = 0;
        } else if needed > buf.len() - start || buf.len() - end < 4096 {
            // Move the partial frame to the front; grow if one frame exceeds the buffer.
            buf.copy_within(start..end, 0);
            end -= start;
            start = 0;
            if needed > buf.len() {
                buf.resize(needed.next_power_of_two(), 0);
            }
        }
        let n = stream
            .read(&mut buf[end..])
            .await
            .map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err("server closed the TCP connection".to_owned());
        }
        end += n;
        shared
            .bytes_received
            .set(shared.bytes_received.get() + n as u64);
        now = Instant::now();
    }
}

/// A whole message's payload as the client reads it: `payload` itself, or inflated into
/// `plain` when its first frame had RSV1 set (RFC 7692 §6.2).
///
/// Errors: the inflater's (bad DEFLATE data, a message past the payload limit).
#[inline]
fn decoded<'a>(
    payload: &'a [u8],
    compressed: bool,
    inflater: &mut Option<Inflater>,
    plain: &'a mut Vec<u8>,
) -> Result<&'a [u8], String> {
    match inflater {
        Some(z) if compressed => {
            z.inflate(payload, plain)?;
            Ok(plain)
        }
        _ => Ok(payload),
    }
}

/// The clients of a cell: tasks on the current `LocalSet`, aborted on drop.
#[derive(Debug)]
pub struct ClientSet {
    handles: Vec<tokio::task::JoinHandle<()>>,
}

impl ClientSet {
    /// Spawns `n` clients; client `i` uses `profiles[i % profiles.len()]`. At most
    /// `concurrency` handshakes-plus-subscriptions run at once.
    pub fn spawn(
        n: usize,
        profiles: &[Rc<ClientProfile>],
        cfg: &Rc<CableConfig>,
        shared: &Rc<Shared>,
        concurrency: usize,
    ) -> Self {
        let gate = Rc::new(Semaphore::new(concurrency.max(1)));
        let handles = (0..n)
            .map(|i| {
                let profile = profiles[i % profiles.len()].clone();
                tokio::task::spawn_local(run_client(
                    i,
                    profile,
                    cfg.clone(),
                    shared.clone(),
                    gate.clone(),
                ))
            })
            .collect();
        Self { handles }
    }

    /// Waits until every client is ready or failed, or `timeout` passes. Returns the counters
    /// and whether everything settled in time.
    pub async fn wait_settled(&self, shared: &Shared, timeout: Duration) -> (ConnCounters, bool) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = shared.conn_changed.notified();
            let c = shared.conns.borrow().clone();
            if c.ready + c.failed >= self.handles.len() {
                return (c, true);
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return (shared.conns.borrow().clone(), false);
            }
        }
    }

    /// Number of clients spawned.
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// Whether no client was spawned.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Aborts the clients that are not ready (after a connect timeout); returns how many.
    pub fn abort_unready(&self, shared: &Shared) -> usize {
        let mut aborted = 0;
        for (i, h) in self.handles.iter().enumerate() {
            if !shared.is_ready(i) && !h.is_finished() {
                h.abort();
                aborted += 1;
            }
        }
        aborted
    }

    /// Aborts every client task (closing its socket).
    pub fn abort_all(&self) {
        for h in &self.handles {
            h.abort();
        }
    }
}

impl Drop for ClientSet {
    fn drop(&mut self) {
        self.abort_all();
    }
}
