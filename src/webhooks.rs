//! The transport of bot webhooks (Campfire's `Webhook#deliver`, run by `Bot::WebhookJob`): a
//! bounded queue between the post path and the deliveries, and the HTTP client that posts one
//! payload.
//!
//! - The post path only [`WebhookQueue::enqueue`]s (a `try_send`): a full queue drops the
//!   delivery and counts it (`outcome="dropped"`); a post never waits for a webhook.
//! - A delivery is one `POST` of the JSON payload with `Content-Type: application/json`. Each
//!   attempt may take [`ENDPOINT_TIMEOUT`] (Campfire's 7 s) to answer, headers and body.
//! - A connection failure or a 5xx answer is retried after [`RETRY_DELAYS`]; a timeout is not
//!   (Campfire answers it with a message instead, see `crate::web::webhooks`), nor is any other
//!   answer.
//! - Redirects are never followed: a 3xx is an answer like any other non-2xx (no reply).
//! - At most [`MAX_REPLY_BYTES`] of an answer are read; a longer one is a failure.
//! - `https://` goes through rustls (the same stack as web push, `hyper-rustls` with ring),
//!   verifying the endpoint's certificate against the public web's roots (`webpki-roots`) plus
//!   any certificate authorities of `--webhook-ca-file` (a private CA of internal bots). There
//!   is no way to turn verification off.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use metrics::Counter;
use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::metrics::Metrics;

/// How long an endpoint has to answer one attempt (Campfire's `Webhook::ENDPOINT_TIMEOUT`).
pub const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(7);
/// The waits before the second and third attempts.
pub const RETRY_DELAYS: [Duration; 2] = [Duration::from_millis(500), Duration::from_secs(2)];
/// Deliveries waiting at most; more are dropped (and counted).
pub const QUEUE_CAPACITY: usize = 1024;
/// Deliveries in flight at once.
pub const CONCURRENCY: usize = 16;
/// The largest answer read, in bytes (an answer is posted back as a message or a file).
pub const MAX_REPLY_BYTES: usize = 1024 * 1024;
/// The deliveries' counter in `/metrics` (label `outcome`).
pub const DELIVERIES: &str = "hearth_webhook_deliveries_total";
/// The retries' counter in `/metrics`.
pub const RETRIES: &str = "hearth_webhook_retries_total";

/// One payload for one bot's webhook.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The bot's user id.
    pub bot_id: i64,
    /// The room the message was posted in (where an answer goes).
    pub room_id: i64,
    /// The webhook URL.
    pub url: String,
    /// The JSON payload.
    pub payload: Vec<u8>,
}

/// An endpoint's answer.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type`, without parameters, lower-cased (empty when none).
    pub content_type: String,
    /// The `Content-Type`'s `charset` parameter, unquoted (`None` when it has none).
    pub charset: Option<String>,
    /// The body.
    pub body: Bytes,
}

/// Why a delivery ended without a usable answer.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// No answer within [`ENDPOINT_TIMEOUT`].
    #[error("the endpoint did not answer within {ENDPOINT_TIMEOUT:?}")]
    TimedOut,
    /// The URL is not one this client delivers to.
    #[error("unsupported webhook URL: {0}")]
    Url(String),
    /// Connecting, sending or reading failed (after the retries).
    #[error("webhook delivery failed: {0}")]
    Failed(String),
}

/// The counters of `/metrics` (see the table in [`crate::metrics`]).
#[derive(Debug)]
struct Counters {
    delivered: Counter,
    failed: Counter,
    timed_out: Counter,
    dropped: Counter,
    retries: Counter,
}

/// The bounded queue of deliveries and the client that makes them. One per server.
pub struct WebhookQueue {
    tx: mpsc::Sender<Delivery>,
    rx: Mutex<Option<mpsc::Receiver<Delivery>>>,
    client: Client<HttpsConnector<HttpConnector>, axum::body::Body>,
    counters: Counters,
    present: crate::db::any_rows::AnyRows,
}

/// Why the webhook client could not be built (`--webhook-ca-file`).
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// The file could not be read or holds no PEM certificate.
    #[error("--webhook-ca-file {path}: {reason}")]
    CaFile {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// rustls refused the configuration.
    #[error("webhook TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The roots a webhook endpoint's certificate may chain to: the webpki roots, plus every
/// certificate of the PEM file `extra_ca_file`.
///
/// # Errors
/// [`TlsSetupError::CaFile`] when the file cannot be read, holds a certificate that does not
/// parse, or holds none.
pub fn root_store(
    extra_ca_file: Option<&std::path::Path>,
) -> Result<rustls::RootCertStore, TlsSetupError> {
    use rustls_pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = extra_ca_file {
        let fail = |reason: String| TlsSetupError::CaFile {
            path: path.display().to_string(),
            reason,
        };
        let pem = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
        let mut added = 0;
        for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| fail(e.to_string()))?;
            roots.add(cert).map_err(|e| fail(e.to_string()))?;
            added += 1;
        }
        if added == 0 {
            return Err(fail("no PEM certificate in the file".into()));
        }
    }
    Ok(roots)
}

impl std::fmt::Debug for WebhookQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookQueue")
            .field("waiting", &(QUEUE_CAPACITY - self.tx.capacity()))
            .finish_non_exhaustive()
    }
}

impl WebhookQueue {
    /// An empty queue counting into `metrics`, whose client trusts `roots` for `https://`
    /// endpoints (see [`root_store`]).
    ///
    /// # Errors
    /// [`TlsSetupError::Rustls`] when rustls refuses the configuration.
    pub fn new(metrics: &Metrics, roots: rustls::RootCertStore) -> Result<Self, TlsSetupError> {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let outcome = |value| metrics.series_counter(DELIVERIES, Some(("outcome", value)));
        let counters = Counters {
            delivered: outcome("delivered"),
            failed: outcome("failed"),
            timed_out: outcome("timed_out"),
            dropped: outcome("dropped"),
            retries: metrics.series_counter(RETRIES, None),
        };
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(ENDPOINT_TIMEOUT));
        connector.set_nodelay(true);
        connector.enforce_http(false);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let client = Client::builder(hyper_util::rt::TokioExecutor::new()).build(https);
        Ok(Self {
            tx,
            rx: Mutex::new(Some(rx)),
            client,
            counters,
            present: crate::db::any_rows::AnyRows::new(),
        })
    }

    /// Whether any webhook exists, as this server remembers it: pass it to
    /// [`crate::db::webhooks::set`] and [`crate::db::webhooks::any`].
    pub fn present(&self) -> &crate::db::any_rows::AnyRows {
        &self.present
    }

    /// Queues a delivery without waiting; false (and counted as dropped) when the queue is
    /// full or closed.
    pub fn enqueue(&self, delivery: Delivery) -> bool {
        let queued = self.tx.try_send(delivery).is_ok();
        if !queued {
            self.counters.dropped.increment(1);
            tracing::warn!("webhook queue full: delivery dropped");
        }
        queued
    }

    /// The receiving end, once: whoever takes it runs the deliveries.
    pub fn take_receiver(&self) -> Option<mpsc::Receiver<Delivery>> {
        self.rx.lock().take()
    }

    /// Posts `delivery`'s payload, retrying as the [module docs](self) say, and counts the
    /// outcome. `Ok` holds the final answer, whatever its status (a 2xx counts as delivered).
    ///
    /// # Errors
    /// [`DeliveryError`]: a timeout, an unsupported URL, or a failure after the retries.
    pub async fn deliver(&self, delivery: &Delivery) -> Result<Reply, DeliveryError> {
        let result = self.deliver_inner(delivery).await;
        match &result {
            Ok(reply) if (200..300).contains(&reply.status) => self.counters.delivered.increment(1),
            Ok(_) | Err(DeliveryError::Failed(_) | DeliveryError::Url(_)) => {
                self.counters.failed.increment(1);
            }
            Err(DeliveryError::TimedOut) => self.counters.timed_out.increment(1),
        }
        result
    }

    async fn deliver_inner(&self, delivery: &Delivery) -> Result<Reply, DeliveryError> {
        let uri: hyper::Uri = delivery
            .url
            .parse()
            .map_err(|_| DeliveryError::Url(delivery.url.clone()))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(DeliveryError::Url(delivery.url.clone()));
        }
        let mut attempt = 0;
        loop {
            let outcome = self.attempt(&uri, &delivery.payload).await;
            let retry = match &outcome {
                Ok(reply) => reply.status >= 500,
                Err(DeliveryError::Failed(_)) => true,
                Err(_) => false,
            };
            if !retry || attempt >= RETRY_DELAYS.len() {
                return outcome;
            }
            self.counters.retries.increment(1);
            tokio::time::sleep(RETRY_DELAYS[attempt]).await;
            attempt += 1;
        }
    }

    async fn attempt(&self, uri: &hyper::Uri, payload: &[u8]) -> Result<Reply, DeliveryError> {
        let request = hyper::Request::post(uri.clone())
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(
                hyper::header::USER_AGENT,
                concat!("Hearth/", env!("CARGO_PKG_VERSION")),
            )
            .body(axum::body::Body::from(payload.to_vec()))
            .map_err(|e| DeliveryError::Failed(e.to_string()))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| DeliveryError::Failed(e.to_string()))?;
            let status = response.status().as_u16();
            let header = response
                .headers()
                .get(hyper::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let content_type = header
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            let charset = charset_of(header);
            let body =
                axum::body::to_bytes(axum::body::Body::new(response.into_body()), MAX_REPLY_BYTES)
                    .await
                    .map_err(|e| DeliveryError::Failed(e.to_string()))?;
            Ok(Reply {
                status,
                content_type,
                charset,
                body,
            })
        };
        tokio::time::timeout(ENDPOINT_TIMEOUT, exchange)
            .await
            .map_err(|_| DeliveryError::TimedOut)?
    }
}

/// The `charset` parameter of a `Content-Type` value (RFC 9110 §8.3.1; parameter names are
/// case-insensitive, the value may be a quoted string): `text/plain; Charset="ISO-8859-1"` →
/// `ISO-8859-1`. `None` when there is none.
pub fn charset_of(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_owned())
            .filter(|v| !v.is_empty())
    })
}

/// Whether `url` may be stored as a webhook URL: an absolute `http://` or `https://` URL with
/// a host, at most 2,048 bytes (Campfire stores any URL an administrator gives; internal
/// addresses are allowed, since only administrators set them).
pub fn valid_url(url: &str) -> bool {
    if url.len() > 2048 || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    url.parse::<hyper::Uri>().is_ok_and(|u| {
        matches!(u.scheme_str(), Some("http" | "https")) && u.host().is_some_and(|h| !h.is_empty())
    })
}

/// A shared queue (the state holds one).
pub type SharedWebhookQueue = Arc<WebhookQueue>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_and_https_urls_are_valid() {
        assert!(valid_url("http://127.0.0.1:9000/hook"));
        assert!(valid_url("https://bots.example.com/x?y=1"));
        for bad in [
            "",
            "ftp://example.com/",
            "javascript:alert(1)",
            "/relative",
            "http://",
            "http://exa mple.com/",
            "file:///etc/passwd",
        ] {
            assert!(!valid_url(bad), "{bad}");
        }
        assert!(!valid_url(&format!("http://e.com/{}", "a".repeat(3000))));
    }

    #[test]
    fn the_charset_parameter_is_read_in_any_case_and_quoting() {
        assert_eq!(
            charset_of("text/plain; charset=iso-8859-1").as_deref(),
            Some("iso-8859-1")
        );
        assert_eq!(
            charset_of("text/html;Charset=\"Shift_JIS\"; x=y").as_deref(),
            Some("Shift_JIS")
        );
        assert_eq!(charset_of("text/plain"), None);
        assert_eq!(charset_of("text/plain; format=flowed"), None);
    }
}
