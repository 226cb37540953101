//! Self-test of the receive path: how many WebSocket frames per second one load generator core
//! can read, parse and match.
//!
//! A writer thread in this process plays an idealised server: it accepts N WebSocket
//! connections on loopback, answers the handshake, `welcome` and every `subscribe`, then
//! writes M pre-built Campfire-sized frames (`{"identifier":...,"message":"\u003cturbo-stream
//! ... id=\"message_<token>\" ..."}`, default 9,400 bytes) to every connection, a batch of
//! frames per `write()`. The clients are the same [`crate::cable`] tasks a cell uses, on the
//! current thread; the report gives frames/s and the CPU of the client thread alone
//! (`/proc/thread-self/stat`), so `frames/s ÷ CPU share` is the client's capacity on one core.
//! If that capacity is far above what a cell measures, the cell measured the server.
//!
//! Pin the two sides apart for a clean number (`--writer-cpu 0 --reader-cpu 1`).

use crate::cable::{CableConfig, ClientProfile, ClientSet, Shared};
use crate::endpoint::Endpoint;
use crate::procfs::{CpuSample, Proc};
use crate::tracker::TokenScheme;
use crate::ws;
use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Self-test settings.
#[derive(Debug, Clone)]
pub struct SelftestOptions {
    /// Connections.
    pub n: usize,
    /// Messages written to every connection.
    pub messages: usize,
    /// Frame size, bytes.
    pub frame_bytes: usize,
    /// Frames per writer `write()`.
    pub batch: usize,
    /// Subscriptions per client.
    pub subscriptions: usize,
    /// Receive buffer per connection, bytes.
    pub read_buffer: usize,
    /// CPU for the writer thread.
    pub writer_cpu: Option<usize>,
    /// CPU for the client (current) thread.
    pub reader_cpu: Option<usize>,
}

/// The self-test result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelftestReport {
    /// Connections ready.
    pub n: usize,
    /// Messages per connection.
    pub messages: usize,
    /// Bytes per frame.
    pub frame_bytes: usize,
    /// Frames received and matched (n × messages when complete).
    pub frames_matched: u64,
    /// Seconds from the first write to the last receipt.
    pub secs: f64,
    /// `frames_matched / secs`.
    pub frames_per_sec: f64,
    /// CPU % of the client thread over that time.
    pub reader_cpu_percent: f64,
    /// `frames_per_sec × 100 / reader_cpu_percent`: frames/s one fully busy core could match.
    pub frames_per_cpu_sec: f64,
    /// MB/s (10^6) received.
    pub mb_per_sec: f64,
    /// Every frame reached every client once.
    pub complete: bool,
}

/// One server frame carrying `token`, padded to `size` bytes of payload.
pub fn campfire_like_frame(token: &str, size: usize) -> Vec<u8> {
    let head = format!(
        "{{\"identifier\":\"{{\\\"channel\\\":\\\"RoomMessagesChannel\\\",\\\"signed_stream_name\\\":\\\"InJvb20i--00\\\"}}\",\"message\":\"\\u003cturbo-stream action=\\\"append\\\" target=\\\"messages_rooms_open_1\\\"\\u003e\\u003ctemplate\\u003e\\u003cdiv id=\\\"message_{token}\\\" class=\\\"message\\\"\\u003e"
    );
    let tail = "\\u003c/div\\u003e\\u003c/template\\u003e\\u003c/turbo-stream\\u003e\"}";
    let mut payload = head.into_bytes();
    while payload.len() + tail.len() < size {
        payload.push(b'a' + (payload.len() % 26) as u8);
    }
    payload.extend_from_slice(tail.as_bytes());
    let mut frame = Vec::with_capacity(payload.len() + 10);
    crate::ws::encode_server_frame(true, crate::ws::OP_TEXT, &payload, &mut frame);
    frame
}

fn pin(cpu: Option<usize>) {
    if let Some(c) = cpu {
        let mut set = nix::sched::CpuSet::new();
        if set.set(c).is_ok() {
            let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
        }
    }
}

/// Reads masked client frames until `want` text frames arrived; returns their count.
fn read_client_frames(s: &mut TcpStream, want: usize) -> std::io::Result<usize> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut got = 0;
    while got < want {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        loop {
            if buf.len() < 2 {
                break;
            }
            let (hl, len) = match buf[1] & 0x7F {
                126 if buf.len() >= 4 => (4, u16::from_be_bytes([buf[2], buf[3]]) as usize),
                126 | 127 => break,
                l => (2, l as usize),
            };
            let total = hl + 4 + len;
            if buf.len() < total {
                break;
            }
            buf.drain(..total);
            got += 1;
        }
    }
    Ok(got)
}

fn accept_one(listener: &TcpListener, subs: usize) -> std::io::Result<TcpStream> {
    let (mut s, _) = listener.accept()?;
    s.set_nodelay(true)?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1024];
    while memchr::memmem::find(&head, b"\r\n\r\n").is_none() {
        let n = s.read(&mut byte)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.extend_from_slice(&byte[..n]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let key = text
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("sec-websocket-key")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_default();
    let mut resp = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\nSec-WebSocket-Protocol: actioncable-v1-json\r\n\r\n",
        ws::accept_key(&key)
    )
    .into_bytes();
    resp.extend_from_slice(b"\x81\x12{\"type\":\"welcome\"}");
    s.write_all(&resp)?;
    read_client_frames(&mut s, subs)?;
    let confirm = br#"{"identifier":"{}","type":"confirm_subscription"}"#;
    let mut out = Vec::new();
    for _ in 0..subs {
        out.push(0x81);
        out.push(confirm.len() as u8);
        out.extend_from_slice(confirm);
    }
    s.write_all(&out)?;
    Ok(s)
}

/// Runs the self-test (see the module docs).
///
/// Errors: the listener cannot be opened, or clients do not become ready.
pub async fn run_selftest(opts: &SelftestOptions) -> Result<SelftestReport> {
    if opts.n == 0 || opts.messages == 0 {
        bail!("--n and --messages must be positive");
    }
    pin(opts.reader_cpu);
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let tokens = TokenScheme::random();
    let batch = opts.batch.max(1);
    let batches: Vec<Vec<u8>> = (0..opts.messages)
        .collect::<Vec<_>>()
        .chunks(batch)
        .map(|c| {
            c.iter()
                .flat_map(|&m| campfire_like_frame(&tokens.token(m as u32), opts.frame_bytes))
                .collect()
        })
        .collect();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (n, subs, writer_cpu) = (opts.n, opts.subscriptions, opts.writer_cpu);
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        pin(writer_cpu);
        let mut conns = Vec::with_capacity(n);
        for _ in 0..n {
            conns.push(accept_one(&listener, subs)?);
        }
        if go_rx.recv().is_err() {
            return Ok(());
        }
        for b in &batches {
            for c in conns.iter_mut() {
                c.write_all(b)?;
            }
        }
        // Keep the sockets open until the reader is done.
        let _ = go_rx.recv();
        Ok(())
    });

    let shared = Rc::new(Shared::new(opts.n, 1, &tokens));
    let identifiers = (0..opts.subscriptions)
        .map(|i| format!("{{\"channel\":\"C{i}\"}}"))
        .collect();
    let profile = Rc::new(ClientProfile {
        cookie: None,
        identifiers,
    });
    let cfg = Rc::new(CableConfig {
        endpoint: Endpoint::parse(&format!("ws://127.0.0.1:{port}/cable"))?,
        origin: format!("http://127.0.0.1:{port}"),
        read_buffer: opts.read_buffer,
        required_protocol: Some("actioncable-v1-json".into()),
        deflate: false,
        spread: Vec::new(),
        next: Default::default(),
    });
    let clients = ClientSet::spawn(opts.n, &[profile], &cfg, &shared, 64);
    let (conns, settled) = clients.wait_settled(&shared, Duration::from_secs(60)).await;
    if !settled || conns.ready != opts.n {
        bail!(
            "only {}/{} self-test clients became ready: {:?}",
            conns.ready,
            opts.n,
            conns.errors
        );
    }
    {
        let mut t = shared.tracker.borrow_mut();
        t.set_expected(opts.n as u32);
        let now = Instant::now();
        for _ in 0..opts.messages {
            t.register(0, now);
        }
    }
    let bytes0 = shared.bytes_received.get();
    let cpu0 = CpuSample::take(Proc::ThisThread);
    let start = Instant::now();
    go_tx
        .send(())
        .map_err(|_| anyhow!("the writer thread stopped"))?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let notified = shared.progress.notified();
        if shared.tracker.borrow().undelivered() == 0 {
            break;
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            break;
        }
    }
    let s = shared.tracker.borrow().summary();
    let end = s.last_receipt.unwrap_or_else(Instant::now);
    let cpu1 = CpuSample::take(Proc::ThisThread);
    let _ = go_tx.send(());
    clients.abort_all();
    drop(clients);
    let _ = tokio::task::spawn_blocking(move || writer.join()).await;
    let secs = end.duration_since(start).as_secs_f64().max(1e-9);
    let cpu = match (cpu0, cpu1) {
        (Some(a), Some(b)) => a.percent_until(&b),
        _ => 0.0,
    };
    let fps = s.receipts as f64 / secs;
    Ok(SelftestReport {
        n: opts.n,
        messages: opts.messages,
        frame_bytes: opts.frame_bytes,
        frames_matched: s.receipts,
        secs,
        frames_per_sec: fps,
        reader_cpu_percent: cpu,
        frames_per_cpu_sec: if cpu > 0.0 { fps * 100.0 / cpu } else { 0.0 },
        mb_per_sec: (shared.bytes_received.get() - bytes0) as f64 / 1e6 / secs,
        complete: s.receipts == (opts.n * opts.messages) as u64 && s.duplicates == 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_requested_size_and_token() {
        let f = campfire_like_frame("lgabcx00000007", 9_400);
        let Ok(ws::Parse::Frame(h)) = ws::parse_frame(&f) else {
            panic!("not a frame")
        };
        assert_eq!(h.payload_len, 9_400);
        let payload = &f[h.header_len..];
        assert!(memchr::memmem::find(payload, b"message_lgabcx00000007").is_some());
        let v: serde_json::Value = serde_json::from_slice(payload).unwrap();
        assert!(v["message"].as_str().unwrap().starts_with("<turbo-stream"));
    }

    #[test]
    fn a_small_selftest_matches_every_frame() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let report = tokio::task::LocalSet::new()
            .block_on(
                &rt,
                run_selftest(&SelftestOptions {
                    n: 20,
                    messages: 30,
                    frame_bytes: 9_400,
                    batch: 8,
                    subscriptions: 4,
                    read_buffer: 16 * 1024,
                    writer_cpu: None,
                    reader_cpu: None,
                }),
            )
            .unwrap();
        assert!(report.complete, "{report:?}");
        assert_eq!(report.frames_matched, 600);
    }
}
