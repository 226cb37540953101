//! The request line's limit (`--max-request-line-bytes`): a request whose line (method, target
//! and version) is longer is answered `414 URI Too Long` at once, as nginx's
//! `large_client_header_buffers` does, instead of waiting for the end of a header block that
//! may never come.
//!
//! Two places hold it: [`first_line`] looks at a new connection's first bytes before hyper
//! reads them (so a line that is still arriving, or one whose header block never ends, is
//! answered as soon as it passes the limit), and [`too_long`] checks every request hyper
//! parsed, the later ones of a kept-alive connection too.
//!
//! [`refused_head`] answers what no route should see: an HTTP/1.1 request without exactly
//! one `Host` header (400, RFC 9112 §3.2) and the methods `TRACE` and `CONNECT` (405 with
//! `Allow`, RFC 9110 §15.5.6), which Hearth never serves.

use std::time::Duration;

use axum::http::{header, HeaderValue, Method, StatusCode, Uri, Version};
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
    with_security_headers(
        StatusCode::URI_TOO_LONG,
        (header::CONNECTION, HeaderValue::from_static("close")),
        BODY,
    )
}

/// The methods Hearth's routes answer, as a 405's `Allow` names them.
pub const ALLOWED_METHODS: &str = "GET, HEAD, POST, PUT, PATCH, DELETE";

/// The answer to a request head no route may see, if `request`'s is one: 400 for an HTTP/1.1
/// request without a `Host` header or with more than one (RFC 9112 §3.2: "A server MUST
/// respond with a 400 (Bad Request) status code to any HTTP/1.1 request message that lacks a
/// Host header field and to any request message that contains more than one Host header
/// field"), closing the connection; 405 with [`ALLOWED_METHODS`] in `Allow` for `TRACE` and
/// `CONNECT`. Both carry the default security headers.
pub fn refused_head<B>(request: &axum::http::Request<B>) -> Option<Response> {
    let hosts = request.headers().get_all(header::HOST).iter().count();
    let (status, extra, body) =
        if hosts > 1 || (hosts == 0 && request.version() == Version::HTTP_11) {
            (
                StatusCode::BAD_REQUEST,
                (header::CONNECTION, HeaderValue::from_static("close")),
                "A request needs exactly one Host header.\n",
            )
        } else if request.method() == Method::TRACE || request.method() == Method::CONNECT {
            (
                StatusCode::METHOD_NOT_ALLOWED,
                (header::ALLOW, HeaderValue::from_static(ALLOWED_METHODS)),
                "Method not allowed.\n",
            )
        } else {
            return None;
        };
    Some(with_security_headers(status, extra, body))
}

/// An answer made outside the router, with the default security headers every answer has.
fn with_security_headers(
    status: StatusCode,
    extra: (header::HeaderName, HeaderValue),
    body: &'static str,
) -> Response {
    (
        status,
        [
            extra,
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
        body,
    )
        .into_response()
}
