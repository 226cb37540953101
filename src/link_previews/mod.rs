//! Link previews (Campfire's `UnfurlLinksController` and `Opengraph::*`): the page behind a
//! URL pasted into the composer, fetched by the server for its Open Graph title, description
//! and image, which the composer inserts into the message as a card (an Action Text
//! attachment of [`crate::rich_text::OPENGRAPH_EMBED_CONTENT_TYPE`], stored in the body).
//!
//! The fetch is what any signed-in person can make the server do, so it is guarded:
//! - only `http` and `https` URLs, to the default or any port;
//! - the host is resolved once ([`tokio::net::lookup_host`]) and every address it answers
//!   must be public ([`guard::is_public`]) or in `--link-preview-allow-network`; the
//!   connection is then made to that checked address (the client's resolver is pinned to it,
//!   so there is no second lookup a rebinding DNS server could answer differently);
//! - at most [`MAX_REDIRECTS`] redirects, each hop's URL checked and resolved the same way;
//! - only a `200` with `Content-Type: text/html` (the image: JPEG, PNG, GIF or WebP), and at
//!   most [`MAX_HTML_BYTES`] of HTML ([`MAX_IMAGE_BYTES`] of image) read: a longer body (by
//!   its `Content-Length` or as it streams) gives no preview;
//! - everything, image included, within [`DEADLINE`] from the request, so a server that
//!   answers one byte a second is cut off; and at most [`AT_ONCE`] previews fetched at once,
//!   at most [`AT_ONCE_PER_USER`] of them for one person.
//!
//! Campfire keeps the page's own image URL in the card, so every reader's browser would load
//! it from that site (telling it who reads the room, and when). Here the image is fetched by
//! the server under the same guard, decoded within the decode limits of
//! [`crate::storage::process`] (a pixel bomb is refused before any pixel is decoded), scaled
//! down to [`IMAGE_BOX`] and re-encoded (no metadata of the original is kept), and stored under
//! its SHA-256 in the file storage; the card points at [`IMAGE_PATH`], served to signed-in
//! people only. A page whose image cannot be fetched or decoded still gets a card, without
//! an image.

pub mod guard;
pub mod opengraph;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ammonia::Url;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use tokio::sync::Semaphore;

use crate::net::IpRange;

/// The most redirects followed for one fetch (Campfire follows 10).
pub const MAX_REDIRECTS: usize = 3;
/// The most bytes of a page's HTML read.
pub const MAX_HTML_BYTES: usize = 1024 * 1024;
/// The most bytes of an image read.
pub const MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;
/// How long one preview may take in all: lookups, connections, redirects, bodies and image.
pub const DEADLINE: Duration = Duration::from_secs(5);
/// Previews fetched at once by the whole server; more wait (within their [`DEADLINE`]).
pub const AT_ONCE: usize = 8;
/// Previews one person may have being fetched at once (the composer asks for one at a time);
/// more are refused at once, so that one person's slow pages never hold every one of the
/// [`AT_ONCE`] fetches.
pub const AT_ONCE_PER_USER: usize = 2;
/// The box a preview's image is scaled down to fit (never up).
pub const IMAGE_BOX: (u32, u32) = (640, 360);
pub use crate::rich_text::card::{image_key, IMAGE_PATH, MAX_DESCRIPTION_CHARS, MAX_TITLE_CHARS};

/// The image types a preview's image may have.
const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// A preview, as `POST /unfurl_link` answers it (Campfire's `Opengraph::Metadata` as JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Preview {
    /// The page's title.
    pub title: String,
    /// The page's URL: its `og:url` when that is an `http(s)` URL, else the pasted one.
    pub url: String,
    /// The page's description.
    pub description: String,
    /// The path of the re-encoded image ([`IMAGE_PATH`]), if the page has one that could be
    /// fetched and decoded.
    pub image: Option<String>,
}

/// Why a fetch gave nothing.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// Not an `http(s)` URL with a host.
    #[error("not an http(s) URL")]
    Url,
    /// The host resolves to an address that is not public (or to none).
    #[error("{0} is not a public address")]
    NotPublic(String),
    /// More than [`MAX_REDIRECTS`] redirects, or one without a usable `Location`.
    #[error("too many redirects")]
    Redirects,
    /// Not a `200` of the expected content type, or larger than the limit.
    #[error("unacceptable answer: {0}")]
    Answer(String),
    /// Connecting or reading failed.
    #[error("fetch failed: {0}")]
    Failed(String),
}

/// What a fetch is for: the page or its image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Html,
    Image,
}

impl Kind {
    fn limit(self) -> usize {
        match self {
            Self::Html => MAX_HTML_BYTES,
            Self::Image => MAX_IMAGE_BYTES,
        }
    }

    fn accepts(self, content_type: &str) -> bool {
        match self {
            Self::Html => content_type == "text/html",
            Self::Image => IMAGE_TYPES.contains(&content_type),
        }
    }
}

/// A fetched body.
struct Fetched {
    bytes: Vec<u8>,
    charset: Option<String>,
    url: Url,
}

/// The link previews of one server: whether they are on, the allow-list, the TLS settings and
/// the bound on fetches at once.
pub struct LinkPreviews {
    enabled: bool,
    allow: Vec<IpRange>,
    tls: rustls::ClientConfig,
    at_once: Semaphore,
    /// How many previews each person has being fetched, by user id (none: absent).
    in_flight: std::sync::Mutex<std::collections::HashMap<i64, usize>>,
}

/// One person's place among the previews being fetched ([`LinkPreviews::reserve`]), given
/// back when dropped.
#[derive(Debug)]
pub struct Reservation<'a> {
    previews: &'a LinkPreviews,
    user_id: i64,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut in_flight = self
            .previews
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = in_flight.get_mut(&self.user_id) {
            *n -= 1;
            if *n == 0 {
                in_flight.remove(&self.user_id);
            }
        }
    }
}

impl std::fmt::Debug for LinkPreviews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkPreviews")
            .field("enabled", &self.enabled)
            .field("allow", &self.allow)
            .finish_non_exhaustive()
    }
}

/// A resolver that answers every name with one address: the one already resolved and checked.
#[derive(Clone, Copy, Debug)]
struct Pinned(SocketAddr);

impl tower::Service<Name> for Pinned {
    type Response = std::iter::Once<SocketAddr>;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _name: Name) -> Self::Future {
        std::future::ready(Ok(std::iter::once(self.0)))
    }
}

impl LinkPreviews {
    /// Link previews on or off (`--link-previews`), fetching from public addresses and those
    /// in `allow` (`--link-preview-allow-network`), verifying certificates against the public
    /// web's roots.
    ///
    /// # Errors
    /// rustls refused its default configuration.
    pub fn new(enabled: bool, allow: Vec<IpRange>) -> Result<Self, rustls::Error> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Self {
            enabled,
            allow,
            tls,
            at_once: Semaphore::new(AT_ONCE),
            in_flight: std::sync::Mutex::default(),
        })
    }

    /// A place for one more preview of `user_id`, held until the reservation is dropped: None
    /// when they already have [`AT_ONCE_PER_USER`] being fetched.
    pub fn reserve(&self, user_id: i64) -> Option<Reservation<'_>> {
        let mut in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = in_flight.entry(user_id).or_insert(0);
        if *n >= AT_ONCE_PER_USER {
            return None;
        }
        *n += 1;
        Some(Reservation {
            previews: self,
            user_id,
        })
    }

    /// Whether link previews are on.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether a connection to `ip` is allowed: a public address, or one of the allow-list.
    pub fn allows(&self, ip: IpAddr) -> bool {
        guard::is_public(ip) || self.allow.iter().any(|r| r.contains(ip))
    }

    /// The preview of the page at `url`, its image stored in `storage`: None when the page
    /// cannot be fetched under the guard or lacks a title or a description (Campfire's
    /// `validates_presence_of :title, :url, :description`).
    pub async fn preview(&self, url: &str, storage: &crate::storage::Storage) -> Option<Preview> {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        let work = async {
            let _permit = self.at_once.acquire().await.ok()?;
            self.preview_now(url, storage).await
        };
        if let Ok(found) = tokio::time::timeout_at(deadline, work).await {
            found
        } else {
            tracing::info!(url, "link preview timed out");
            None
        }
    }

    async fn preview_now(&self, url: &str, storage: &crate::storage::Storage) -> Option<Preview> {
        let page = match self.fetch(url, Kind::Html).await {
            Ok(page) => page,
            Err(e) => {
                tracing::info!(url, error = %e, "no link preview");
                return None;
            }
        };
        let html = decode(&page.bytes, page.charset.as_deref());
        let found = opengraph::parse(&html);
        let title = opengraph::one_line(found.title.as_deref()?, MAX_TITLE_CHARS);
        let description = opengraph::one_line(found.description.as_deref()?, MAX_DESCRIPTION_CHARS);
        if title.is_empty() || description.is_empty() {
            return None;
        }
        let canonical = found
            .url
            .as_deref()
            .and_then(|u| page.url.join(u.trim()).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .map_or_else(|| url.trim().to_owned(), String::from);
        let image = match found
            .image
            .as_deref()
            .and_then(|i| page.url.join(i.trim()).ok())
        {
            Some(image_url) => self.image(image_url.as_str(), storage).await,
            None => None,
        };
        Some(Preview {
            title,
            url: canonical,
            description,
            image,
        })
    }

    /// The image at `url`, fetched under the guard, re-encoded and stored: its path.
    async fn image(&self, url: &str, storage: &crate::storage::Storage) -> Option<String> {
        let fetched = match self.fetch(url, Kind::Image).await {
            Ok(f) => f,
            Err(e) => {
                tracing::info!(url, error = %e, "link preview without its image");
                return None;
            }
        };
        let dir = std::env::temp_dir();
        let path = dir.join(format!("hearth-link-preview-{}", uuid::Uuid::new_v4()));
        let encoded = tokio::task::spawn_blocking(move || {
            let result = std::fs::write(&path, &fetched.bytes)
                .map_err(crate::storage::process::ProcessError::from)
                .and_then(|()| {
                    crate::storage::process::variant_as(
                        &path,
                        crate::storage::process::Fit::Limit(IMAGE_BOX.0, IMAGE_BOX.1),
                        false,
                    )
                });
            let _ = std::fs::remove_file(&path);
            result
        })
        .await
        .ok()?;
        let encoded = match encoded {
            Ok(e) => e,
            Err(e) => {
                tracing::info!(url, error = %e, "link preview image refused");
                return None;
            }
        };
        let key = hex::encode(Sha256::digest(&encoded.bytes));
        if storage.write(&key, &encoded.bytes).await.is_err()
            && storage.read(storage.service_name(), &key).await.is_none()
        {
            tracing::warn!(url, "link preview image not stored");
            return None;
        }
        Some(format!("{IMAGE_PATH}{key}.{}", encoded.extension))
    }

    /// The address to connect to for `url`'s host: every address it resolves to allowed,
    /// the first of them.
    async fn resolve(&self, url: &Url) -> Result<SocketAddr, Refused> {
        let port = url.port_or_known_default().ok_or(Refused::Url)?;
        let found: Vec<SocketAddr> = match url.host().ok_or(Refused::Url)? {
            url::Host::Ipv4(ip) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
            url::Host::Ipv6(ip) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
            url::Host::Domain(name) => tokio::net::lookup_host((name, port))
                .await
                .map_err(|e| Refused::Failed(e.to_string()))?
                .collect(),
        };
        let first = *found
            .first()
            .ok_or_else(|| Refused::NotPublic(url.host_str().unwrap_or("").to_owned()))?;
        if let Some(refused) = found.iter().find(|a| !self.allows(a.ip())) {
            return Err(Refused::NotPublic(refused.ip().to_string()));
        }
        Ok(first)
    }

    /// One fetch of `url`, redirects followed: the body, if it is acceptable for `kind`.
    async fn fetch(&self, url: &str, kind: Kind) -> Result<Fetched, Refused> {
        let mut url = Url::parse(url.trim()).map_err(|_| Refused::Url)?;
        for _ in 0..=MAX_REDIRECTS {
            if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                return Err(Refused::Url);
            }
            let addr = self.resolve(&url).await?;
            let mut connector = HttpConnector::new_with_resolver(Pinned(addr));
            connector.enforce_http(false);
            connector.set_nodelay(true);
            let https = hyper_rustls::HttpsConnectorBuilder::new()
                .with_tls_config(self.tls.clone())
                .https_or_http()
                .enable_http1()
                .wrap_connector(connector);
            let client: Client<_, Empty<Bytes>> =
                Client::builder(hyper_util::rt::TokioExecutor::new())
                    .pool_max_idle_per_host(0)
                    .build(https);
            let mut target = url.clone();
            target.set_fragment(None);
            let request = http::Request::get(target.as_str())
                .header(http::header::USER_AGENT, "Hearth link preview")
                .header(
                    http::header::ACCEPT,
                    match kind {
                        Kind::Html => "text/html",
                        Kind::Image => "image/*",
                    },
                )
                .body(Empty::new())
                .map_err(|_| Refused::Url)?;
            let response = client
                .request(request)
                .await
                .map_err(|e| Refused::Failed(e.to_string()))?;
            let status = response.status();
            if status.is_redirection() {
                let location = response
                    .headers()
                    .get(http::header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .ok_or(Refused::Redirects)?;
                url = url.join(location).map_err(|_| Refused::Redirects)?;
                continue;
            }
            if status != http::StatusCode::OK {
                return Err(Refused::Answer(format!("status {status}")));
            }
            let content_type = response
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let mut parts = content_type.split(';');
            let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            if !kind.accepts(&essence) {
                return Err(Refused::Answer(format!("content type {essence:?}")));
            }
            let charset = parts.find_map(|p| {
                let (k, v) = p.split_once('=')?;
                k.trim()
                    .eq_ignore_ascii_case("charset")
                    .then(|| v.trim().trim_matches('"').to_owned())
            });
            let declared = response
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if declared.is_some_and(|n| n > kind.limit() as u64) {
                return Err(Refused::Answer("too large".into()));
            }
            let mut body = response.into_body();
            let mut bytes = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| Refused::Failed(e.to_string()))?;
                if let Ok(data) = frame.into_data() {
                    if bytes.len() + data.len() > kind.limit() {
                        return Err(Refused::Answer("too large".into()));
                    }
                    bytes.extend_from_slice(&data);
                }
            }
            return Ok(Fetched {
                bytes,
                charset,
                url,
            });
        }
        Err(Refused::Redirects)
    }
}

/// `bytes` as text in `charset` (the `Content-Type`'s; UTF-8 when none or unknown), malformed
/// sequences replaced.
fn decode(bytes: &[u8], charset: Option<&str>) -> String {
    let encoding = charset
        .and_then(|c| encoding_rs::Encoding::for_label(c.as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    encoding.decode(bytes).0.into_owned()
}
