//! The HTTP client of single sign-on: openidconnect's [`AsyncHttpClient`] over Hearth's own
//! hyper and rustls (the webpki roots), so discovery, the JWKS and the token exchange need no
//! other HTTP stack.
//!
//! Each request gets [`TIMEOUT`] in all and at most [`MAX_BODY_BYTES`] of answer; redirects
//! are not followed (the token endpoint must answer itself, RFC 6749 §3.2), and no connection
//! is kept idle between requests. Plain `http` is
//! refused unless the host is a loopback address or `localhost` ([`is_allowed_url`]).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use openidconnect::{AsyncHttpClient, HttpRequest, HttpResponse};

/// How long one request may take, connection and answer included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes of an answer read (a discovery document or a JWKS is a few KiB).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Why a request to the provider failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Plain `http` to a host that is not loopback.
    #[error("refusing plain http to {0}: only loopback issuers may use http")]
    PlainHttp(String),
    /// No answer within [`TIMEOUT`].
    #[error("no answer within {} s", TIMEOUT.as_secs())]
    Timeout,
    /// The connection or the request failed.
    #[error("request failed: {0}")]
    Request(String),
    /// The answer was longer than [`MAX_BODY_BYTES`] or broke off.
    #[error("answer unreadable: {0}")]
    Body(String),
}

/// Whether `url` may be fetched: `https`, or `http` to a loopback host (`127.0.0.0/8`, `::1`,
/// `localhost`).
pub fn is_allowed_url(url: &url::Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        },
        _ => false,
    }
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The client (cheap to clone: the connection pool is shared).
#[derive(Clone, Debug)]
pub struct HttpClient {
    client: HttpsClient,
}

impl Default for HttpClient {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpClient {
    /// A client trusting the webpki roots.
    pub fn new() -> Self {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .build();
        // No idle connections kept: sign-ins are far apart, and a connection the provider
        // closed while idle (Node's keep-alive is 5 s) would fail the next request on it.
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(https);
        Self { client }
    }

    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let target = url::Url::parse(&request.uri().to_string())
            .map_err(|e| HttpError::Request(e.to_string()))?;
        if !is_allowed_url(&target) {
            return Err(HttpError::PlainHttp(
                target.host_str().unwrap_or("").to_owned(),
            ));
        }
        let (parts, body) = request.into_parts();
        let request = http::Request::from_parts(parts, Full::new(Bytes::from(body)));
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| HttpError::Request(e.to_string()))?;
            let (parts, body) = response.into_parts();
            let bytes = Limited::new(body, MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(|e| HttpError::Body(e.to_string()))?
                .to_bytes();
            Ok(http::Response::from_parts(parts, bytes.to_vec()))
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| HttpError::Timeout)?
    }
}

impl<'c> AsyncHttpClient<'c> for HttpClient {
    type Error = HttpError;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'c>>;

    fn call(&'c self, request: HttpRequest) -> Self::Future {
        Box::pin(self.send(request))
    }
}

#[cfg(test)]
mod tests {
    use super::is_allowed_url;

    #[test]
    fn plain_http_only_to_loopback() {
        let ok = |s: &str| is_allowed_url(&url::Url::parse(s).unwrap());
        assert!(ok("https://id.example.com/"));
        assert!(ok("http://127.0.0.1:8080/"));
        assert!(ok("http://127.8.0.1/"));
        assert!(ok("http://[::1]:9/"));
        assert!(ok("http://localhost:9/"));
        assert!(!ok("http://id.example.com/"));
        assert!(!ok("http://10.0.0.1/"));
        assert!(!ok("http://localhost.example.com/"));
        assert!(!ok("ftp://127.0.0.1/"));
    }
}
