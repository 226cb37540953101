//! The request line's limit (`--max-request-line-bytes`): a request whose line (method, target
//! and version) is longer is answered `414 URI Too Long` at once, as nginx's
//! `large_client_header_buffers` does, instead of waiting for the end of a header block that
//! may never come.
//!
//! Two places hold it: [`first_line`] looks at a new connection's first bytes before hyper
//! reads them (so a line that is still arriving, or one whose header block never ends, is
//! answered as soon as it passes the limit), and [`too_long`] checks every request hyper
//! parsed, the later ones of a kept-alive connection too.

use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How a connection's first request line compares with the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstLine {
    /// It ended (a line feed arrived) within the limit: hyper may read the request.
    Fits,
    /// More than the limit arrived without a line feed: answer with [`refuse`].
    TooLong,
    /// The peer closed, or sent nothing whole within the header timeout: drop it.
    Gone,
}

/// Longest pause between two looks at a request line that is still arriving.
const MAX_PAUSE: Duration = Duration::from_millis(50);

/// Looks (without reading: hyper reads the same bytes next) at the first bytes of `stream`
/// until its first line ends, passes `max` bytes, or `timeout` (the header timeout) passes.
/// A line that arrives whole costs one `recv(MSG_PEEK)`; one that arrives in pieces is looked
/// at again after 1, 2, 4 … at most 50 ms.
pub async fn first_line(stream: &TcpStream, max: usize, timeout: Duration) -> FirstLine {
    let mut buf = vec![0; max.saturating_add(1)];
    let look = async {
        let mut pause = Duration::from_millis(1);
        loop {
            let n = stream.peek(&mut buf).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(FirstLine::Gone);
            }
            if buf[..n].contains(&b'\n') {
                return Ok(FirstLine::Fits);
            }
            if n > max {
                return Ok(FirstLine::TooLong);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    };
    match tokio::time::timeout(timeout, look).await {
        Ok(Ok(line)) => line,
        _ => FirstLine::Gone,
    }
}

/// The body of a 414.
const BODY: &str = "The request line is over the limit.\n";

/// Answers `414 URI Too Long` (with `Connection: close` and the default security headers)
/// on a connection hyper never saw, then closes it after reading (and discarding) what the
/// client sends for at most a second, so that the answer is not lost to a reset.
pub async fn refuse(mut stream: TcpStream) {
    let head = format!(
        "HTTP/1.1 414 URI Too Long\r\ncontent-type: text/plain; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\nx-frame-options: SAMEORIGIN\r\n\
         x-content-type-options: nosniff\r\nreferrer-policy: strict-origin-when-cross-origin\r\n\
         \r\n{BODY}",
        BODY.len()
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let _ = stream.shutdown().await;
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// Whether a parsed request's target (path and query) is longer than `max` bytes.
pub fn too_long(uri: &Uri, max: usize) -> bool {
    uri.path_and_query().map_or(0, |p| p.as_str().len()) > max
}

/// The 414 answer of a request [`too_long`] refused (closing the connection), with the
/// default security headers every answer has.
pub fn response() -> Response {
    let close = HeaderValue::from_static("close");
    (
        StatusCode::URI_TOO_LONG,
        [
            (header::CONNECTION, close),
            (
                header::X_FRAME_OPTIONS,
                HeaderValue::from_static("SAMEORIGIN"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("strict-origin-when-cross-origin"),
            ),
        ],
        BODY,
    )
        .into_response()
}
