//! A keep-alive HTTP/1.1 connection for logins, page scrapes and posts.
//!
//! Built on hyper's connection-level client (`hyper::client::conn::http1`): one TCP connection,
//! one request at a time, no pooling, no redirects followed (a login must *see* its 302), no
//! automatic headers except what the caller sets, so every request is exactly what a browser
//! form would send. When the server closes a kept-alive connection, the next request opens a
//! new one; a `GET` that fails on a reused connection is retried once, a `POST` never is (it may
//! already have created a message).

use crate::cookies::CookieJar;
use crate::endpoint::Endpoint;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderValue, CONTENT_TYPE, COOKIE, HOST, SET_COOKIE};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use std::cell::Cell;
use std::fmt;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A response with its body read completely.
#[derive(Debug, Clone)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Every `Set-Cookie` value, in order.
    pub set_cookies: Vec<String>,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `Location`, if any.
    pub location: Option<String>,
    /// The body.
    pub body: Bytes,
    /// When the request's last write to the socket returned.
    pub wrote: Option<Instant>,
    /// When the first bytes of the answer were read (after that write).
    pub first_byte: Option<Instant>,
}

impl Response {
    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Stores every `Set-Cookie` into `jar`; malformed values are ignored.
    pub fn store_cookies(&self, jar: &mut CookieJar) {
        for c in &self.set_cookies {
            let _ = jar.store(c);
        }
    }
}

/// A transport failure (connect, write, read or a malformed response).
#[derive(Debug)]
pub struct HttpError {
    /// What was being requested, `METHOD url`.
    pub request: String,
    /// The underlying error text.
    pub message: String,
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.request, self.message)
    }
}

impl std::error::Error for HttpError {}

/// One keep-alive connection to an endpoint's host and port.
pub struct HttpConnection {
    endpoint: Endpoint,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// Connections opened so far (1 when keep-alive held throughout).
    pub connects: u64,
    stamps: Rc<Stamps>,
}

impl fmt::Debug for HttpConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConnection")
            .field("endpoint", &self.endpoint.to_string())
            .field("open", &self.sender.is_some())
            .field("connects", &self.connects)
            .finish()
    }
}

impl HttpConnection {
    /// A connection to `endpoint`'s host and port; nothing is opened until the first request.
    pub fn new(endpoint: &Endpoint) -> Self {
        Self {
            endpoint: endpoint.clone(),
            sender: None,
            connects: 0,
            stamps: Rc::default(),
        }
    }

    async fn open(&mut self) -> Result<(), String> {
        let stream = TcpStream::connect(self.endpoint.authority())
            .await
            .map_err(|e| format!("connect {}: {e}", self.endpoint.authority()))?;
        let _ = stream.set_nodelay(true);
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(Stamped {
            stream,
            stamps: self.stamps.clone(),
        }))
        .await
        .map_err(|e| e.to_string())?;
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        self.sender = Some(sender);
        self.connects += 1;
        Ok(())
    }

    /// Sends `GET path` with the jar's cookies and stores the response's cookies into the jar.
    ///
    /// Errors: [`HttpError`] on a transport failure (after one retry on a fresh connection).
    pub async fn get(
        &mut self,
        path: &str,
        jar: &mut CookieJar,
        accept: &str,
    ) -> Result<Response, HttpError> {
        let mut last = String::new();
        for _attempt in 0..2 {
            let req = self.request(Method::GET, path, jar, accept, None);
            match self.send(req).await {
                Ok(resp) => {
                    resp.store_cookies(jar);
                    return Ok(resp);
                }
                Err(e) => last = e,
            }
        }
        Err(HttpError {
            request: format!("GET {}", self.endpoint.join(path)),
            message: last,
        })
    }

    /// Sends `POST path` with a form-urlencoded body (built with [`form_urlencode`]) and the
    /// jar's cookies; stores response cookies. Never retried.
    ///
    /// Errors: [`HttpError`] on a transport failure.
    pub async fn post_form(
        &mut self,
        path: &str,
        jar: &mut CookieJar,
        accept: &str,
        form: String,
    ) -> Result<Response, HttpError> {
        let req = self.request(
            Method::POST,
            path,
            jar,
            accept,
            Some(("application/x-www-form-urlencoded", Bytes::from(form))),
        );
        let resp = self.send(req).await.map_err(|message| HttpError {
            request: format!("POST {}", self.endpoint.join(path)),
            message,
        })?;
        resp.store_cookies(jar);
        Ok(resp)
    }

    /// Sends `POST path` with a raw body and content type, and an optional cookie header
    /// (the broadcast trigger of `fanout-only`). Never retried.
    ///
    /// Errors: [`HttpError`] on a transport failure.
    pub async fn post_raw(
        &mut self,
        path: &str,
        cookie: Option<&str>,
        content_type: &str,
        body: Bytes,
    ) -> Result<Response, HttpError> {
        let jar = cookie.map(CookieJar::from_header).unwrap_or_default();
        let req = self.request(Method::POST, path, &jar, "*/*", Some((content_type, body)));
        self.send(req).await.map_err(|message| HttpError {
            request: format!("POST {}", self.endpoint.join(path)),
            message,
        })
    }

    /// `POST`s `body` (JSON) with `Authorization: Bearer <key>` (AnyCable's `/_broadcast`).
    ///
    /// Errors: the request fails or times out.
    pub async fn post_bearer(
        &mut self,
        path: &str,
        key: &str,
        body: Bytes,
    ) -> Result<Response, HttpError> {
        let jar = CookieJar::default();
        let mut req = self.request(
            Method::POST,
            path,
            &jar,
            "*/*",
            Some(("application/json", body)),
        );
        if let Ok(v) = HeaderValue::from_str(&format!("Bearer {key}")) {
            req.headers_mut().insert(hyper::header::AUTHORIZATION, v);
        }
        self.send(req).await.map_err(|message| HttpError {
            request: format!("POST {}", self.endpoint.join(path)),
            message,
        })
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        jar: &CookieJar,
        accept: &str,
        body: Option<(&str, Bytes)>,
    ) -> Request<Full<Bytes>> {
        let target = self.endpoint.join(path).path;
        let mut builder = Request::builder()
            .method(method)
            .uri(target)
            .header(HOST, self.endpoint.authority())
            .header("accept", accept)
            .header("origin", self.endpoint.origin())
            .header("sec-fetch-site", "same-origin")
            .header("user-agent", "campfire-loadgen");
        if let Some(c) = jar.header() {
            if let Ok(v) = HeaderValue::from_str(&c) {
                builder = builder.header(COOKIE, v);
            }
        }
        let body = match body {
            Some((ct, bytes)) => {
                builder = builder.header(CONTENT_TYPE, ct);
                bytes
            }
            None => Bytes::new(),
        };
        builder
            .body(Full::new(body))
            .unwrap_or_else(|_| Request::new(Full::new(Bytes::new())))
    }

    async fn send(&mut self, req: Request<Full<Bytes>>) -> Result<Response, String> {
        let reusable = matches!(&self.sender, Some(s) if !s.is_closed());
        if !reusable {
            self.sender = None;
            self.open().await?;
        }
        self.stamps.wrote.set(None);
        self.stamps.first_byte.set(None);
        let sender = self.sender.as_mut().ok_or("no connection")?;
        if let Err(e) = sender.ready().await {
            self.sender = None;
            return Err(e.to_string());
        }
        let resp = match sender.send_request(req).await {
            Ok(r) => r,
            Err(e) => {
                self.sender = None;
                return Err(e.to_string());
            }
        };
        let status = resp.status().as_u16();
        let headers = resp.headers();
        let set_cookies = headers
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        let content_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let location = headers
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = match resp.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                self.sender = None;
                return Err(e.to_string());
            }
        };
        Ok(Response {
            status,
            set_cookies,
            content_type,
            location,
            body,
            wrote: self.stamps.wrote.get(),
            first_byte: self.stamps.first_byte.get(),
        })
    }
}

/// When a connection last wrote and first read after that write (see [`Response::wrote`]).
#[derive(Debug, Default)]
struct Stamps {
    wrote: Cell<Option<Instant>>,
    first_byte: Cell<Option<Instant>>,
}

/// The connection's socket, stamping [`Stamps`] as hyper writes and reads it.
struct Stamped {
    stream: TcpStream,
    stamps: Rc<Stamps>,
}

impl Stamped {
    fn wrote<T>(&self, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Ok(_)) = &r {
            self.stamps.wrote.set(Some(Instant::now()));
            self.stamps.first_byte.set(None);
        }
        r
    }
}

impl AsyncRead for Stamped {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before && self.stamps.first_byte.get().is_none() {
            self.stamps.first_byte.set(Some(Instant::now()));
        }
        r
    }
}

impl AsyncWrite for Stamped {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.wrote(r)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.wrote(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// `application/x-www-form-urlencoded` serialization of `pairs` (WHATWG URL §5.2): bytes other
/// than `A–Z a–z 0–9 * - . _` are percent-encoded, space becomes `+`.
pub fn form_urlencode(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_component(k, &mut out);
        out.push('=');
        encode_component(v, &mut out);
    }
    out
}

fn encode_component(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 15) as usize] as char);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding_matches_browsers() {
        assert_eq!(
            form_urlencode(&[
                ("message[body]", "hi there & <b>"),
                ("authenticity_token", "a+b/c=="),
            ]),
            "message%5Bbody%5D=hi+there+%26+%3Cb%3E&authenticity_token=a%2Bb%2Fc%3D%3D"
        );
        assert_eq!(form_urlencode(&[("k", "é")]), "k=%C3%A9");
    }

    /// A server that reads a request, waits, then answers: the answer's first byte is read
    /// at least the wait after the request was written, and each request of a kept-alive
    /// connection gets stamps of its own.
    #[tokio::test(flavor = "current_thread")]
    async fn a_response_carries_when_its_request_left_and_its_answer_came_back() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let wait = std::time::Duration::from_millis(30);
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            for _ in 0..2 {
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = s.read(&mut buf).await.unwrap();
                    assert!(n > 0);
                    got.extend_from_slice(&buf[..n]);
                }
                tokio::time::sleep(wait).await;
                s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                    .await
                    .unwrap();
            }
        });
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async move {
                let endpoint = Endpoint::parse(&format!("http://{addr}")).unwrap();
                let mut conn = HttpConnection::new(&endpoint);
                let mut jar = CookieJar::default();
                let mut last_first_byte = None;
                for _ in 0..2 {
                    let before = Instant::now();
                    let resp = conn.get("/", &mut jar, "*/*").await.unwrap();
                    let after = Instant::now();
                    assert_eq!(&resp.body[..], b"ok");
                    let (wrote, first) = (resp.wrote.unwrap(), resp.first_byte.unwrap());
                    assert!(
                        before <= wrote && first <= after,
                        "{before:?} {wrote:?} {first:?}"
                    );
                    assert!(first.duration_since(wrote) >= wait);
                    assert!(last_first_byte < Some(wrote));
                    last_first_byte = Some(first);
                }
                assert_eq!(conn.connects, 1);
            })
            .await;
    }
}
