//! Webhook receivers on loopback for the bot tests: each request's head and body go to a
//! channel, and every request gets one fixed answer, over plain HTTP or TLS.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// An answer: status, content type, body.
pub type Answer = (u16, &'static str, Vec<u8>);

/// What a receiver saw: each request's head (request line and headers) and body.
pub type Requests = UnboundedReceiver<(String, Vec<u8>)>;

/// Reads one request from `socket`, sends its head and body to `tx`, waits `delay`, then
/// answers `answer` and closes.
pub async fn serve_one<S: AsyncRead + AsyncWrite + Unpin>(
    mut socket: S,
    answer: Answer,
    delay: Duration,
    tx: UnboundedSender<(String, Vec<u8>)>,
) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let (head, body) = loop {
        let n = socket.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..at]).to_string();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            while buf.len() < at + 4 + len {
                let n = socket.read(&mut chunk).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            break (head, buf[at + 4..].to_vec());
        }
    };
    let _ = tx.send((head, body));
    tokio::time::sleep(delay).await;
    let (status, content_type, bytes) = answer;
    let mut reply = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        bytes.len()
    )
    .into_bytes();
    reply.extend_from_slice(&bytes);
    let _ = socket.write_all(&reply).await;
    let _ = socket.shutdown().await;
}

/// A receiver at `http://127.0.0.1:<port>/hook`, or `https://` with `tls`: its URL and what it
/// receives. Each answer waits `delay`.
pub async fn receiver(
    answer: Answer,
    delay: Duration,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> (String, Requests) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = unbounded_channel();
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (acceptor, tx, answer) = (acceptor.clone(), tx.clone(), answer.clone());
            tokio::spawn(async move {
                match acceptor {
                    // A client that refuses the certificate ends the handshake: nothing to serve.
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(socket).await {
                            serve_one(stream, answer, delay, tx).await;
                        }
                    }
                    None => serve_one(socket, answer, delay, tx).await,
                }
            });
        }
    });
    (url, rx)
}
