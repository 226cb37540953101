//! Test support: a seeded Hearth on an ephemeral port in a temp dir, a small cookie-keeping
//! HTTP/1.1 client and a small WebSocket client, both over plain TCP.
#![allow(dead_code, unreachable_pub, missing_debug_implementations)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub mod browser;
pub mod child;
pub mod forms;
pub mod oidc;
pub mod smtp;
pub mod webhooks;

/// A running test server and its temp dir (removed on drop).
pub struct TestServer {
    pub addr: SocketAddr,
    pub dir: PathBuf,
    pub state: hearth::state::SharedState,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let n: u64 = rand::random();
    let dir = std::env::temp_dir().join(format!("hearth-test-{tag}-{}-{n:x}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(tweak: impl FnOnce(&mut hearth::config::Config)) -> Self {
        Self::start_in(temp_dir("srv"), tweak).await
    }

    /// A server on the database in `dir` (seeded when empty).
    pub async fn start_in(dir: PathBuf, tweak: impl FnOnce(&mut hearth::config::Config)) -> Self {
        let mut config = hearth::config::Config::for_tests(&dir);
        config.ping_interval = 1;
        tweak(&mut config);
        let server = hearth::app::Server::bind(config)
            .await
            .expect("server binds");
        let addr = server.local_addr().unwrap();
        let state = server.state.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            server
                .run(async {
                    let _ = rx.await;
                })
                .await
                .expect("server runs");
        });
        Self {
            addr,
            dir,
            state,
            stop: Some(tx),
            task: Some(task),
        }
    }

    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn client(&self) -> Client {
        Client {
            addr: self.addr,
            cookies: Vec::new(),
        }
    }

    /// A client signed in as `email`.
    pub async fn signed_in(&self, email: &str, password: &str) -> Client {
        let mut c = self.client();
        let r = c.login(email, password).await;
        assert_eq!(r.status, 302, "login of {email} failed: {}", r.body);
        c
    }

    /// Stops the server (sends server_restart to cable clients) and waits for it to end.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = tokio::time::timeout(Duration::from_secs(15), task).await;
        }
    }
}

impl TestServer {
    /// Stops the server like [`TestServer::stop`] but keeps its directory (database and
    /// secret), for a restart with [`TestServer::start_in`]; returns the directory.
    pub async fn stop_keeping_dir(mut self) -> PathBuf {
        let dir = std::mem::take(&mut self.dir);
        self.stop().await;
        dir
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// The `Retry-After` header's seconds; panics when it is missing or not a number.
    pub fn retry_after(&self) -> u64 {
        self.header("retry-after")
            .expect("a Retry-After header")
            .parse()
            .expect("Retry-After in seconds")
    }
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// A form body from pairs (`application/x-www-form-urlencoded`).
pub fn form(pairs: &[(&str, &str)]) -> String {
    loadgen::http::form_urlencode(pairs)
}

/// The value of `<meta name="csrf-token" content="…">`.
pub fn csrf_meta(html: &str) -> String {
    attr_after(html, "name=\"csrf-token\" content=\"").expect("csrf meta")
}

/// The text between `marker` and the next `"`.
pub fn attr_after(html: &str, marker: &str) -> Option<String> {
    let start = html.find(marker)? + marker.len();
    let end = html[start..].find('"')? + start;
    Some(html[start..end].to_owned())
}

/// A minimal cookie-keeping HTTP/1.1 client (one connection per request).
#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    pub cookies: Vec<(String, String)>,
}

impl Client {
    pub fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let mut stream = TcpStream::connect(self.addr).await.unwrap();
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.addr
        );
        if !self.cookies.is_empty() {
            req.push_str(&format!("Cookie: {}\r\n", self.cookie_header()));
        }
        for (k, v) in extra {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || method != "GET" {
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        stream.write_all(req.as_bytes()).await.unwrap();
        stream.write_all(body).await.unwrap();
        let mut raw = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut raw))
            .await
            .expect("response in time")
            .unwrap();
        let response = parse_response(&raw);
        for set in response.headers_named("set-cookie") {
            let pair = set.split(';').next().unwrap_or("");
            if let Some((k, v)) = pair.split_once('=') {
                self.cookies.retain(|(n, _)| n != k);
                if !v.is_empty() && !set.contains("max-age=0") {
                    self.cookies.push((k.to_owned(), v.to_owned()));
                }
            }
        }
        response
    }

    pub async fn get(&mut self, path: &str) -> Response {
        self.request("GET", path, &[], b"").await
    }

    pub async fn post_form(&mut self, path: &str, body: &str, extra: &[(&str, &str)]) -> Response {
        let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
        headers.extend_from_slice(extra);
        self.request("POST", path, &headers, body.as_bytes()).await
    }

    pub async fn login(&mut self, email: &str, password: &str) -> Response {
        let page = self.get("/session/new").await;
        let token = csrf_meta(&page.body);
        let body = form(&[
            ("email_address", email),
            ("password", password),
            ("authenticity_token", &token),
        ]);
        self.post_form("/session", &body, &[]).await
    }

    /// GETs the room page and returns (csrf token, body).
    pub async fn room(&mut self, id: i64) -> (String, String) {
        let page = self.get(&format!("/rooms/{id}")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        (csrf_meta(&page.body), page.body)
    }

    /// Posts a message as a Turbo client would.
    pub async fn post_message(&mut self, room: i64, body: &str, cid: &str, csrf: &str) -> Response {
        let b = form(&[
            ("message[body]", body),
            ("message[client_message_id]", cid),
            ("authenticity_token", csrf),
        ]);
        self.post_form(
            &format!("/rooms/{room}/messages"),
            &b,
            &[("Accept", "text/vnd.turbo-stream.html, text/html")],
        )
        .await
    }
}

fn parse_response(raw: &[u8]) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut rest = &body[..];
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap().trim(), 16)
                .unwrap_or(0);
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[eol + 2..eol + 2 + size]);
            rest = &rest[eol + 2 + size + 2..];
        }
        body = out;
    }
    Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    }
}

/// A WebSocket client frame or event seen by [`Ws`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WsEvent {
    Text(String),
    Close(u16),
    Eof,
}

/// A small WebSocket client: handshake, masked text frames out, frames in.
pub struct Ws {
    pub stream: TcpStream,
    pub status: u16,
    pub response_head: String,
    buf: Vec<u8>,
}

impl Ws {
    /// Opens `/cable` with the given cookie, origin and subprotocol header.
    pub async fn connect(
        addr: SocketAddr,
        cookie: Option<&str>,
        origin: Option<&str>,
        protocols: Option<&str>,
    ) -> Self {
        let stream = TcpStream::connect(addr).await.unwrap();
        Self::handshake(stream, addr, cookie, origin, protocols).await
    }

    /// Opens `path` (`/cable?sid=…`) with the given cookie, origin and subprotocol header.
    pub async fn connect_to(
        addr: SocketAddr,
        path: &str,
        cookie: Option<&str>,
        origin: Option<&str>,
        protocols: Option<&str>,
    ) -> Self {
        let stream = TcpStream::connect(addr).await.unwrap();
        Self::handshake_path(stream, addr, path, cookie, origin, protocols).await
    }

    /// Opens `/cable` over a socket whose receive buffer is as small as the kernel allows, so
    /// that little is buffered for a client that stops reading.
    pub async fn connect_small_window(addr: SocketAddr, cookie: &str, origin: &str) -> Self {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let stream = socket.connect(addr).await.unwrap();
        Self::handshake(
            stream,
            addr,
            Some(cookie),
            Some(origin),
            Some("actioncable-v1-json"),
        )
        .await
    }

    async fn handshake(
        stream: TcpStream,
        addr: SocketAddr,
        cookie: Option<&str>,
        origin: Option<&str>,
        protocols: Option<&str>,
    ) -> Self {
        Self::handshake_path(stream, addr, "/cable", cookie, origin, protocols).await
    }

    /// Opens `/cable` like [`Ws::connect`], offering `extensions` in
    /// `Sec-WebSocket-Extensions` (e.g. `permessage-deflate; client_max_window_bits`, what
    /// browsers offer).
    pub async fn connect_offering(
        addr: SocketAddr,
        cookie: Option<&str>,
        origin: Option<&str>,
        protocols: Option<&str>,
        extensions: &str,
    ) -> Self {
        let stream = TcpStream::connect(addr).await.unwrap();
        Self::handshake_with(
            stream,
            addr,
            "/cable",
            cookie,
            origin,
            protocols,
            &[("Sec-WebSocket-Extensions", extensions)],
        )
        .await
    }

    async fn handshake_path(
        stream: TcpStream,
        addr: SocketAddr,
        path: &str,
        cookie: Option<&str>,
        origin: Option<&str>,
        protocols: Option<&str>,
    ) -> Self {
        Self::handshake_with(stream, addr, path, cookie, origin, protocols, &[]).await
    }

    async fn handshake_with(
        mut stream: TcpStream,
        addr: SocketAddr,
        path: &str,
        cookie: Option<&str>,
        origin: Option<&str>,
        protocols: Option<&str>,
        extra: &[(&str, &str)],
    ) -> Self {
        let mut req = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        );
        if let Some(c) = cookie {
            req.push_str(&format!("Cookie: {c}\r\n"));
        }
        if let Some(o) = origin {
            req.push_str(&format!("Origin: {o}\r\n"));
        }
        if let Some(p) = protocols {
            req.push_str(&format!("Sec-WebSocket-Protocol: {p}\r\n"));
        }
        for (name, value) in extra {
            req.push_str(&format!("{name}: {value}\r\n"));
        }
        req.push_str("\r\n");
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let split = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
                .await
                .unwrap()
                .unwrap();
            assert!(n > 0, "EOF during handshake");
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..split]).to_string();
        let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
        let rest = buf[split + 4..].to_vec();
        Self {
            stream,
            status,
            response_head: head,
            buf: rest,
        }
    }

    /// The socket and the bytes already read past the handshake.
    pub fn into_parts(self) -> (TcpStream, Vec<u8>) {
        (self.stream, self.buf)
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.response_head.split("\r\n").skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }

    /// Sends a masked frame with `opcode`.
    pub async fn send_frame(&mut self, opcode: u8, fin: bool, payload: &[u8]) {
        let mut f = Vec::new();
        loadgen::ws::encode_client_frame(fin, opcode, payload, [0x12, 0x34, 0x56, 0x78], &mut f);
        let _ = self.stream.write_all(&f).await;
    }

    pub async fn send_text(&mut self, text: &str) {
        self.send_frame(0x1, true, text.as_bytes()).await;
    }

    /// Reads the next text or close frame (answers nothing; pings from the server are JSON).
    pub async fn next(&mut self, timeout: Duration) -> Option<WsEvent> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some((event, used)) = parse_frame(&self.buf) {
                self.buf.drain(..used);
                match event {
                    Some(e) => return Some(e),
                    None => continue,
                }
            }
            let mut chunk = vec![0u8; 64 * 1024];
            let n = match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Err(_) => return None,
                Ok(Ok(n)) => n,
                Ok(Err(_)) => 0,
            };
            if n == 0 {
                return Some(WsEvent::Eof);
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// The next frame of any kind as it came, its header's first byte kept (FIN, RSV1–3,
    /// opcode): None on timeout or EOF.
    pub async fn next_raw(&mut self, timeout: Duration) -> Option<RawFrame> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some((frame, used)) = parse_raw(&self.buf) {
                self.buf.drain(..used);
                return Some(frame);
            }
            let mut chunk = vec![0u8; 64 * 1024];
            match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => self.buf.extend_from_slice(&chunk[..n]),
                _ => return None,
            }
        }
    }

    /// The next text frame that is not a ping.
    /// `timeout` bounds the whole wait, pings included.
    pub async fn next_non_ping(&mut self, timeout: Duration) -> Option<WsEvent> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next(left).await? {
                WsEvent::Text(t) if t.starts_with("{\"type\":\"ping\"") => {}
                other => return Some(other),
            }
        }
    }
}

/// One server frame as it came off the socket ([`Ws::next_raw`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    /// The header's first byte: FIN `0x80`, RSV1 `0x40` (permessage-deflate's "compressed"),
    /// RSV2/3, the opcode in the low four bits.
    pub first: u8,
    /// The payload, as sent (compressed when RSV1 is set).
    pub payload: Vec<u8>,
}

impl RawFrame {
    /// Whether RSV1 is set: a compressed message under permessage-deflate (RFC 7692 §6).
    pub fn rsv1(&self) -> bool {
        self.first & 0x40 != 0
    }

    /// The opcode (RFC 6455 §5.2).
    pub fn opcode(&self) -> u8 {
        self.first & 0x0f
    }

    /// The message's text: the payload inflated first when RSV1 is set (RFC 7692 §7.2.2:
    /// `00 00 ff ff` appended, raw DEFLATE), as a client that negotiated the extension reads
    /// it. Panics when it does not inflate or is not UTF-8.
    pub fn text(&self) -> String {
        let bytes = if self.rsv1() {
            inflate(&self.payload)
        } else {
            self.payload.clone()
        };
        String::from_utf8(bytes).expect("utf-8 text frame")
    }
}

/// `payload` inflated as RFC 7692 §7.2.2 says (raw DEFLATE with `00 00 ff ff` appended).
pub fn inflate(payload: &[u8]) -> Vec<u8> {
    let mut input = payload.to_vec();
    input.extend_from_slice(&[0, 0, 0xff, 0xff]);
    // No final block (a sync flush's empty stored block ends it): inflated with a sync flush,
    // not read to a stream end.
    let mut inflater = flate2::Decompress::new(false);
    let mut out = Vec::with_capacity(input.len() * 8 + 1024);
    let mut rest = &input[..];
    loop {
        let before = inflater.total_in();
        inflater
            .decompress_vec(rest, &mut out, flate2::FlushDecompress::Sync)
            .expect("the payload inflates");
        rest = &rest[(inflater.total_in() - before) as usize..];
        if rest.is_empty() && out.len() < out.capacity() {
            return out;
        }
        out.reserve(out.capacity());
    }
}

/// `text` compressed as a permessage-deflate client sends a message (RFC 7692 §7.2.1): raw
/// DEFLATE with a `2^window_bits`-byte window, sync flush, the trailing `00 00 ff ff` cut.
pub fn deflate(text: &[u8], window_bits: u8) -> Vec<u8> {
    let mut c =
        flate2::Compress::new_with_window_bits(flate2::Compression::default(), false, window_bits);
    deflate_with(&mut c, text)
}

/// [`deflate`] with a compressor kept by the caller: a second message compressed with it
/// refers back into the first (what context takeover means).
pub fn deflate_with(c: &mut flate2::Compress, text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 64);
    c.compress_vec(text, &mut out, flate2::FlushCompress::Sync)
        .unwrap();
    assert!(out.ends_with(&[0, 0, 0xff, 0xff]));
    out.truncate(out.len() - 4);
    out
}

/// Parses one server frame from `buf` as it came: Some((frame, bytes used)); None when
/// incomplete.
fn parse_raw(buf: &[u8]) -> Option<(RawFrame, usize)> {
    if buf.len() < 2 {
        return None;
    }
    assert_eq!(buf[1] & 0x80, 0, "server frames must not be masked");
    let (len, header) = match buf[1] & 0x7f {
        126 => (
            u16::from_be_bytes(buf.get(2..4)?.try_into().unwrap()) as usize,
            4,
        ),
        127 => (
            u64::from_be_bytes(buf.get(2..10)?.try_into().unwrap()) as usize,
            10,
        ),
        n => (n as usize, 2),
    };
    let payload = buf.get(header..header + len)?.to_vec();
    Some((
        RawFrame {
            first: buf[0],
            payload,
        },
        header + len,
    ))
}

/// Parses one server frame from `buf`: Some((event, bytes used)); event None for frames the
/// tests ignore (pong). None when incomplete.
fn parse_frame(buf: &[u8]) -> Option<(Option<WsEvent>, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let opcode = buf[0] & 0x0f;
    assert_eq!(buf[1] & 0x80, 0, "server frames must not be masked");
    let (len, header) = match buf[1] & 0x7f {
        126 => {
            if buf.len() < 4 {
                return None;
            }
            (u16::from_be_bytes([buf[2], buf[3]]) as usize, 4)
        }
        127 => {
            if buf.len() < 10 {
                return None;
            }
            (
                u64::from_be_bytes(buf[2..10].try_into().unwrap()) as usize,
                10,
            )
        }
        n => (n as usize, 2),
    };
    if buf.len() < header + len {
        return None;
    }
    let payload = &buf[header..header + len];
    let event = match opcode {
        // RSV1: compressed (permessage-deflate, RFC 7692 §6), read as a client that agreed.
        0x1 if buf[0] & 0x40 != 0 => Some(WsEvent::Text(
            String::from_utf8(inflate(payload)).expect("utf-8 text frame"),
        )),
        0x1 => Some(WsEvent::Text(
            String::from_utf8(payload.to_vec()).expect("utf-8 text frame"),
        )),
        0x8 => Some(WsEvent::Close(if len >= 2 {
            u16::from_be_bytes([payload[0], payload[1]])
        } else {
            1005
        })),
        _ => None,
    };
    Some((event, header + len))
}

/// The subprotocols `@rails/actioncable` offers.
pub const PROTOCOLS: &str = "actioncable-v1-json, actioncable-unsupported";

/// A text-frame event, for comparing with [`Ws::next`].
pub fn text(s: &str) -> Option<WsEvent> {
    Some(WsEvent::Text(s.to_owned()))
}

/// `{"command":"subscribe","identifier":"…"}`.
pub fn subscribe_cmd(identifier: &str) -> String {
    serde_json::json!({"command": "subscribe", "identifier": identifier}).to_string()
}

/// The masked client text frames of a subscribe command for each of `identifiers`, one after
/// the other in one buffer: what a page's consumer sends in one write when its socket opens.
pub fn subscribe_frames<S: AsRef<str>>(identifiers: &[S]) -> Vec<u8> {
    let mut frames = Vec::new();
    for id in identifiers {
        loadgen::ws::encode_client_frame(
            true,
            0x1,
            subscribe_cmd(id.as_ref()).as_bytes(),
            [0x12, 0x34, 0x56, 0x78],
            &mut frames,
        );
    }
    frames
}

/// Rails' confirm frame for an identifier (the identifier written as a JSON string).
pub fn confirm(identifier: &str) -> String {
    format!(
        r#"{{"identifier":{},"type":"confirm_subscription"}}"#,
        serde_json::to_string(identifier).unwrap()
    )
}

/// Rails' reject frame for an identifier.
pub fn reject(identifier: &str) -> String {
    format!(
        r#"{{"identifier":{},"type":"reject_subscription"}}"#,
        serde_json::to_string(identifier).unwrap()
    )
}

/// Opens `/cable` as a signed-in client, with the same Origin as the Host, and reads the
/// welcome.
pub async fn connect_with(server: &TestServer, c: &Client) -> Ws {
    let mut ws = Ws::connect(
        server.addr,
        Some(&c.cookie_header()),
        Some(&server.origin()),
        Some(PROTOCOLS),
    )
    .await;
    assert_eq!(ws.status, 101, "{}", ws.response_head);
    assert_eq!(
        ws.next(Duration::from_secs(10)).await,
        text(r#"{"type":"welcome"}"#)
    );
    ws
}

/// Signs `email` in and opens `/cable` with its cookies (see [`connect_with`]).
pub async fn connect_as(server: &TestServer, email: &str, password: &str) -> (Client, Ws) {
    let c = server.signed_in(email, password).await;
    let ws = connect_with(server, &c).await;
    (c, ws)
}

/// Everything logged at `hearth=trace` on this thread while the guard lives: the captured bytes
/// and the guard (a thread-local subscriber; the test server's tasks run on the `current_thread`
/// test's thread).
pub fn captured_log() -> (
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    tracing::subscriber::DefaultGuard,
) {
    use std::sync::{Arc, Mutex};
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("hearth=trace")
        .with_ansi(false)
        .with_writer(move || Sink(sink.clone()))
        .finish();
    (log, tracing::subscriber::set_default(subscriber))
}
