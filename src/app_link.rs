//! A cable node's line to its app node (`--role cable --app-url …`): JSON calls to the app
//! node's internal endpoint `POST /_internal/cable/<op>`, authenticated with a key derived
//! from `secret_key_base` (so no one without it can call), with answers kept for a short
//! time (`--auth-cache-seconds`).
//!
//! The operations and their bodies are the cable layer's (`crate::cable::channels::remote`,
//! whose `Call` trait names each request's operation and answer); this module only carries
//! and caches JSON, and checks at start that the app node takes this node's key.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// An operation of the app node's internal endpoint (`POST /_internal/cable/<path>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Checks the key (nothing else).
    Hello,
    /// Who holds a session.
    Identify,
    /// A channel's `subscribed`.
    Subscribe,
    /// A channel action.
    Perform,
    /// A channel's `unsubscribed`.
    Unsubscribed,
    /// Whether a confirmed subscription is still allowed.
    StillAllowed,
}

impl Op {
    /// Every operation.
    pub const ALL: [Self; 6] = [
        Self::Hello,
        Self::Identify,
        Self::Subscribe,
        Self::Perform,
        Self::Unsubscribed,
        Self::StillAllowed,
    ];

    /// The operation's path segment.
    pub fn path(self) -> &'static str {
        match self {
            Self::Hello => "hello",
            Self::Identify => "identify",
            Self::Subscribe => "subscribe",
            Self::Perform => "perform",
            Self::Unsubscribed => "unsubscribed",
            Self::StillAllowed => "still_allowed",
        }
    }

    /// The operation of a path segment; None for an unknown one.
    pub fn from_path(path: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.path() == path)
    }
}

/// A request body of the internal endpoint: which operation it is and what it answers.
pub trait Call: Serialize {
    /// The operation.
    const OP: Op;
    /// The answer's type.
    type Answer: DeserializeOwned + Serialize;
}

/// The key check.
#[derive(Debug, Default, Serialize, serde::Deserialize)]
pub struct HelloRequest {}

impl Call for HelloRequest {
    const OP: Op = Op::Hello;
    type Answer = bool;
}

/// What the app node said to this node's key ([`AppLink::check_key`]).
#[derive(Debug)]
pub enum KeyCheck {
    /// The app node took it.
    Accepted,
    /// The app node refused it; the text says why (for the operator).
    Refused(String),
    /// The app node could not be asked (not up, unreachable, slow).
    Unreachable(anyhow::Error),
}

/// Path prefix of the app node's internal endpoint; the operation name follows.
pub const INTERNAL_PATH: &str = "/_internal/cable/";

/// Salt of the internal endpoint's key (derived from `secret_key_base` with Rails'
/// `KeyGenerator`, PBKDF2-HMAC-SHA256, 1000 iterations, 32 bytes).
pub const INTERNAL_KEY_SALT: &str = "hearth internal cable";

/// Largest answer accepted from the app node, in bytes.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

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

/// The apps this node asks: its app node (a cable node's link, `--role cable`) and a Rails
/// app's channels over AnyCable's HTTP RPC (`--rpc-url`); each absent when not configured.
#[derive(Clone, Debug, Default)]
pub struct Apps {
    /// A cable node's line to its app node.
    pub app_link: Option<Arc<AppLink>>,
    /// An app's AnyCable HTTP RPC, whose channels run beside Campfire's.
    pub rpc: Option<Arc<crate::rpc::RpcApp>>,
}

/// The client side of the internal endpoint, with its answer cache.
pub struct AppLink {
    node_tag: u64,
    base: String,
    key: String,
    ttl: Duration,
    timeout: Duration,
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
    /// A link to the app node at `base` (`http://host:port`), calling with `key`, keeping
    /// cacheable answers for `ttl` and waiting at most `timeout` for an answer
    /// (`--app-timeout-seconds`).
    pub fn new(base: &str, key: String, ttl: Duration, timeout: Duration) -> Self {
        let client = Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
        Self {
            node_tag: u64::from(rand::random::<u32>() & 0x00ff_ffff),
            base: base.trim_end_matches('/').to_owned(),
            key,
            ttl,
            timeout,
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

    /// Asks the app node whether it takes this node's key (the `hello` operation): a node
    /// started with another `SECRET_KEY_BASE` than its app node's is told so here.
    pub async fn check_key(&self) -> KeyCheck {
        match self
            .raw_call(Op::Hello.path(), &HelloRequest::default())
            .await
        {
            Ok((hyper::StatusCode::OK, _)) => KeyCheck::Accepted,
            Ok((status, _)) if status == hyper::StatusCode::NOT_FOUND => {
                KeyCheck::Refused(format!(
                    "the app node at {} refuses this cable node's internal key (it answered \
                     404): SECRET_KEY_BASE differs from the app node's (or --app-url is not a \
                     Hearth app node); give both nodes the same secret",
                    self.base
                ))
            }
            Ok((status, _)) => KeyCheck::Unreachable(anyhow::anyhow!(
                "the app node answered the key check with {status}"
            )),
            Err(e) => KeyCheck::Unreachable(e),
        }
    }

    /// Drops every cached answer about `user_id` (the user lost access: the next subscribe
    /// and identify ask the app node again).
    pub fn forget_user(&self, user_id: i64) {
        let subscribe = format!("subscribe:{user_id}:");
        self.cache.lock().retain(|key, (_, value)| {
            !(key.starts_with(&subscribe)
                || (key.starts_with("identify:")
                    && value
                        .pointer("/user/id")
                        .and_then(serde_json::Value::as_i64)
                        == Some(user_id)))
        });
    }

    /// Calls `request`'s operation ([`Call`]) and decodes
    /// the JSON answer. With a `cache_key`, an answer younger than the TTL is reused without a
    /// call.
    ///
    /// # Errors
    /// The app node is unreachable, slow (`--app-timeout-seconds`), answered with a status
    /// other than 200, or with a body that does not decode as the answer.
    pub async fn call<R: Call>(
        &self,
        cache_key: Option<&str>,
        request: &R,
    ) -> anyhow::Result<R::Answer> {
        self.call_op(R::OP.path(), cache_key, request).await
    }

    async fn raw_call<Req: Serialize>(
        &self,
        op: &str,
        request: &Req,
    ) -> anyhow::Result<(hyper::StatusCode, axum::body::Bytes)> {
        let body = serde_json::to_vec(request)?;
        let http_request = hyper::Request::post(format!("{}{INTERNAL_PATH}{op}", self.base))
            .header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.key))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(axum::body::Body::from(body))?;
        let response = tokio::time::timeout(self.timeout, self.client.request(http_request))
            .await
            .context("the app node did not answer in time")?
            .context("calling the app node")?;
        let status = response.status();
        let bytes = tokio::time::timeout(
            self.timeout,
            axum::body::to_bytes(
                axum::body::Body::new(response.into_body()),
                MAX_ANSWER_BYTES,
            ),
        )
        .await
        .context("the app node did not answer in time")?
        .context("reading the app node's answer")?;
        Ok((status, bytes))
    }

    async fn call_op<Req: Serialize, Resp: DeserializeOwned>(
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
        let (status, bytes) = self.raw_call(op, request).await?;
        anyhow::ensure!(
            status == hyper::StatusCode::OK,
            "the app node answered {op} with {status}"
        );
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
