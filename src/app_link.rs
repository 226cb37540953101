//! A cable node's line to its app node (`--role cable --app-url …`): JSON calls to the app
//! node's internal endpoint `POST /_internal/cable/<op>`, authenticated with a key derived
//! from `secret_key_base` (so no one without it can call), with answers kept for a short
//! time (`--auth-cache-seconds`).
//!
//! The operations and their bodies are the cable layer's (`crate::cable::channels::remote`);
//! this module only carries and caches JSON.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Path prefix of the app node's internal endpoint; the operation name follows.
pub const INTERNAL_PATH: &str = "/_internal/cable/";

/// Salt of the internal endpoint's key (derived from `secret_key_base` with Rails'
/// `KeyGenerator`, PBKDF2-HMAC-SHA256, 1000 iterations, 32 bytes).
pub const INTERNAL_KEY_SALT: &str = "hearth internal cable";

/// Largest answer accepted from the app node, in bytes.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Cached answers past this many are pruned of expired ones.
const CACHE_PRUNE_AT: usize = 10_000;

/// The internal endpoint's key for `secret_key_base`, as lowercase hex (64 characters).
pub fn internal_key(secret_key_base: &str) -> String {
    hex::encode(crate::rails::generate_key(
        secret_key_base.as_bytes(),
        INTERNAL_KEY_SALT,
        crate::rails::ITERATIONS,
        32,
        crate::rails::KdfDigest::Sha256,
    ))
}

/// The client side of the internal endpoint, with its answer cache.
pub struct AppLink {
    node_tag: u64,
    base: String,
    key: String,
    ttl: Duration,
    client: Client<HttpConnector, axum::body::Body>,
    cache: Mutex<HashMap<String, (Instant, serde_json::Value)>>,
}

impl std::fmt::Debug for AppLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppLink")
            .field("base", &self.base)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl AppLink {
    /// A link to the app node at `base` (`http://host:port`), calling with `key` and keeping
    /// cacheable answers for `ttl`.
    pub fn new(base: &str, key: String, ttl: Duration) -> Self {
        let client = Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
        Self {
            node_tag: u64::from(rand::random::<u32>() & 0x00ff_ffff),
            base: base.trim_end_matches('/').to_owned(),
            key,
            ttl,
            client,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// A connection id unique across the cable nodes that share the app node: this node's
    /// random 24-bit tag above the low 40 bits of the local id (presence is kept per
    /// connection on the app node).
    pub fn connection_key(&self, local_id: u64) -> u64 {
        (self.node_tag << 40) | (local_id & ((1 << 40) - 1))
    }

    /// How long cacheable answers are kept.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Calls operation `op` with `request` as JSON and decodes the JSON answer. With a
    /// `cache_key`, an answer younger than the TTL is reused without a call.
    ///
    /// # Errors
    /// The app node is unreachable, slow (5 s), answered with a status other than 200, or with
    /// a body that does not decode as `Resp`.
    pub async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        op: &str,
        cache_key: Option<&str>,
        request: &Req,
    ) -> anyhow::Result<Resp> {
        if let Some(key) = cache_key {
            let hit = self
                .cache
                .lock()
                .get(key)
                .filter(|(at, _)| at.elapsed() < self.ttl)
                .map(|(_, v)| v.clone());
            if let Some(value) = hit {
                return Ok(serde_json::from_value(value)?);
            }
        }
        let body = serde_json::to_vec(request)?;
        let http_request = hyper::Request::post(format!("{}{INTERNAL_PATH}{op}", self.base))
            .header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.key))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(axum::body::Body::from(body))?;
        let response = tokio::time::timeout(CALL_TIMEOUT, self.client.request(http_request))
            .await
            .context("the app node did not answer in time")?
            .context("calling the app node")?;
        anyhow::ensure!(
            response.status() == hyper::StatusCode::OK,
            "the app node answered {op} with {}",
            response.status()
        );
        let bytes = axum::body::to_bytes(
            axum::body::Body::new(response.into_body()),
            MAX_ANSWER_BYTES,
        )
        .await
        .context("reading the app node's answer")?;
        let value: serde_json::Value = serde_json::from_slice(&bytes)?;
        if let Some(key) = cache_key {
            let mut cache = self.cache.lock();
            if cache.len() >= CACHE_PRUNE_AT {
                let ttl = self.ttl;
                cache.retain(|_, (at, _)| at.elapsed() < ttl);
            }
            cache.insert(key.to_owned(), (Instant::now(), value.clone()));
        }
        Ok(serde_json::from_value(value)?)
    }
}
