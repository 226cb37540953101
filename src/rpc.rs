//! AnyCable's HTTP RPC, the client side: how a Rails app's own channels (or any app speaking
//! the protocol, such as `@anycable/serverless-js`) are asked what to do with a connection.
//!
//! Three JSON calls, `POST <rpc-url>/connect`, `/command` and `/disconnect` (anycable-go's
//! `rpc/http.go`; the bodies are `etc/rpc.proto`'s messages as Go's `encoding/json` writes
//! them: snake_case names, empty fields left out, `status` an integer: 0 `ERROR`, 1 `SUCCESS`,
//! 2 `FAILURE`). Each carries `Content-Type: application/json`, `Authorization: Bearer <key>`
//! (the key given, or [`rpc_key`] of `secret_key_base`, as AnyCable derives it from its secret)
//! and the session id as `x-anycable-meta-sid`.
//!
//! The client behaves as anycable-go's: a call waits at most [`CALL_TIMEOUT`] (the wait for a
//! place under the concurrency cap included), at most `--rpc-concurrency` calls are in flight,
//! and a circuit breaker ([`Breaker`]) stops calling an app that does not answer: past
//! [`TRIP_MIN_CALLS`] calls of which [`TRIP_FAILURE_RATIO`] failed (no answer, a refused
//! connection, a timeout) within [`WINDOW`], calls fail at once for [`OPEN_FOR`]; then
//! [`HALF_OPEN_CALLS`] calls are let through, and the breaker closes again when they all
//! succeed. An answer of any HTTP status counts as the app being up; 401 is reported as a
//! wrong key, other statuses than 200 as errors. An answer larger than [`MAX_ANSWER_BYTES`] or
//! not JSON of the expected shape is an error.
//!
//! Disconnects go through a bounded queue ([`DisconnectQueue`]): at most
//! [`DISCONNECT_BACKLOG`] waiting, sent at most [`DISCONNECTS_PER_SECOND`] per second, so a
//! mass disconnect (a restart of many clients) cannot flood the app; past the backlog they
//! are dropped and counted. When the server stops, the disconnects of the connections it
//! closed are sent without that pause, for at most `--drain-timeout` seconds
//! ([`DisconnectQueue::flush`]), as anycable-go drains its queue at shutdown, so the app's
//! `disconnect` callbacks run for every client. A call whose caller gives up on it (the client went away while it
//! was pending, `cable::connection::peer`) is abandoned and counted as canceled, as
//! anycable-go's `rpc_canceled`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use metrics::{Counter, Gauge, Histogram};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// How long one call may take, from asking for a place under the cap to the whole answer.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// The default cap on calls in flight (anycable-go's `--rpc_concurrency`).
pub const DEFAULT_CONCURRENCY: usize = 28;
/// Largest answer accepted, in bytes.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// Calls the breaker must have seen in its window before it may open.
pub const TRIP_MIN_CALLS: u32 = 10;
/// Share of failed calls in the window that opens the breaker.
pub const TRIP_FAILURE_RATIO: f64 = 0.8;
/// The breaker's counting window while closed.
pub const WINDOW: Duration = Duration::from_secs(10);
/// How long an open breaker refuses calls before it lets a few through.
pub const OPEN_FOR: Duration = Duration::from_secs(5);
/// Calls a half-open breaker lets through; all must succeed for it to close.
pub const HALF_OPEN_CALLS: u32 = 5;
/// Disconnect calls waiting at most; past it, new ones are dropped.
pub const DISCONNECT_BACKLOG: usize = 4096;
/// Disconnect calls sent per second at most.
pub const DISCONNECTS_PER_SECOND: u32 = 100;
/// Streams one app subscription may have at most; an answer that would take it past this
/// is refused (as a malformed answer: the connection closes).
pub const MAX_STREAMS: usize = 4096;
/// Bytes (keys and values) a connection's state, or one subscription's, may hold at most;
/// an answer that would take it past this is refused (as a malformed answer).
pub const MAX_STATE_BYTES: usize = 64 * 1024;
/// Bytes of a connection's identifiers at most (kept for the connection's life and sent with
/// every call); a `connect` answering more is refused (the connection closes, 1011).
pub const MAX_IDENTIFIERS_BYTES: usize = 16 * 1024;

/// The phrase AnyCable signs with its secret to derive the RPC key.
const KEY_PHRASE: &[u8] = b"rpc-cable";

/// AnyCable's RPC key derived from a secret: HMAC-SHA256 of `"rpc-cable"` keyed with `secret`,
/// as lowercase hex (anycable-go's `MessageVerifier#Sign` of `secretKeyPhrase`).
pub fn rpc_key(secret: &str) -> String {
    // HMAC takes keys of any length: the `else` is never taken.
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(KEY_PHRASE);
    hex::encode(mac.finalize().into_bytes())
}

/// A string map of the protocol (`headers`, `cstate`, `istate`).
pub type StringMap = BTreeMap<String, String>;

/// `Env` of `rpc.proto`: the connection's request and its state.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Env {
    /// The WebSocket request's URL.
    pub url: String,
    /// The proxied request headers (lowercase names) and `REMOTE_ADDR`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: StringMap,
    /// The connection's state.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub cstate: StringMap,
    /// A subscription's state (command), or each subscription's state as JSON by identifier
    /// (disconnect).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub istate: StringMap,
}

/// `ConnectionRequest`.
#[derive(Debug, Serialize)]
pub struct ConnectRequest<'a> {
    /// The request.
    pub env: &'a Env,
}

/// `CommandMessage`: `subscribe`, `unsubscribe` or `message`.
#[derive(Debug, Serialize)]
pub struct CommandMessage<'a> {
    /// The command.
    pub command: &'a str,
    /// The subscription's identifier.
    pub identifier: &'a str,
    /// The connection's identifiers (what `connect` answered).
    pub connection_identifiers: &'a str,
    /// The `message` command's data (JSON text).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub data: &'a str,
    /// The request and the states.
    pub env: &'a Env,
}

/// `DisconnectRequest`.
#[derive(Debug, Serialize)]
pub struct DisconnectRequest {
    /// The connection's identifiers.
    pub identifiers: String,
    /// Its subscriptions' identifiers when it closed.
    pub subscriptions: Vec<String>,
    /// The request and the states.
    pub env: Env,
}

/// The `status` of an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The app failed (an exception).
    Error,
    /// Done.
    Success,
    /// Refused (a rejected connection or subscription).
    Failure,
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Go writes the enum as its number; protobuf's own JSON mapping as its name.
        Ok(match serde_json::Value::deserialize(d)? {
            serde_json::Value::Number(n) if n.as_u64() == Some(1) => Self::Success,
            serde_json::Value::Number(n) if n.as_u64() == Some(2) => Self::Failure,
            serde_json::Value::String(s) if s == "SUCCESS" => Self::Success,
            serde_json::Value::String(s) if s == "FAILURE" => Self::Failure,
            _ => Self::Error,
        })
    }
}

fn status_error() -> Status {
    Status::Error
}

/// `EnvResponse`: state changes (a key with an empty value is deleted, [`merge_state`]).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct EnvResponse {
    /// Connection state changes.
    #[serde(default, deserialize_with = "lenient_map")]
    pub cstate: StringMap,
    /// Subscription state changes.
    #[serde(default, deserialize_with = "lenient_map")]
    pub istate: StringMap,
}

/// `ConnectionResponse`.
#[derive(Clone, Debug, Deserialize)]
pub struct ConnectResponse {
    /// The outcome.
    #[serde(default = "status_error")]
    pub status: Status,
    /// The connection's identifiers, opaque (anycable-rails: JSON of GlobalIDs).
    #[serde(default, deserialize_with = "lenient_string")]
    pub identifiers: String,
    /// Frames to send as they are (the welcome, or the `disconnect` of a refusal).
    #[serde(default, deserialize_with = "strings")]
    pub transmissions: Vec<String>,
    /// Why it failed.
    #[serde(default, deserialize_with = "lenient_string")]
    pub error_msg: String,
    /// State changes.
    #[serde(default, deserialize_with = "lenient_env")]
    pub env: EnvResponse,
}

/// `CommandResponse`.
#[derive(Clone, Debug, Deserialize)]
pub struct CommandResponse {
    /// The outcome.
    #[serde(default = "status_error")]
    pub status: Status,
    /// Close the connection after the transmissions.
    #[serde(default, deserialize_with = "lenient_bool")]
    pub disconnect: bool,
    /// Stop all of the subscription's streams (`stop_all_streams`).
    #[serde(default, deserialize_with = "lenient_bool")]
    pub stop_streams: bool,
    /// Streams to start (`stream_from`).
    #[serde(default, deserialize_with = "strings")]
    pub streams: Vec<String>,
    /// Streams to stop (`stop_stream_from`).
    #[serde(default, deserialize_with = "strings")]
    pub stopped_streams: Vec<String>,
    /// Frames to send as they are, in order.
    #[serde(default, deserialize_with = "strings")]
    pub transmissions: Vec<String>,
    /// Why it failed.
    #[serde(default, deserialize_with = "lenient_string")]
    pub error_msg: String,
    /// State changes.
    #[serde(default, deserialize_with = "lenient_env")]
    pub env: EnvResponse,
}

/// `DisconnectResponse`.
#[derive(Clone, Debug, Deserialize)]
pub struct DisconnectResponse {
    /// The outcome.
    #[serde(default = "status_error")]
    pub status: Status,
    /// Why it failed.
    #[serde(default, deserialize_with = "lenient_string")]
    pub error_msg: String,
}

/// A list of strings where `null` is empty and an entry that is not a string is skipped.
fn strings<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Option::<Vec<serde_json::Value>>::deserialize(d)? {
        Some(values) => values
            .into_iter()
            .filter_map(|v| match v {
                serde_json::Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        None => Vec::new(),
    })
}

/// A string where `null` is empty.
fn lenient_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

/// A boolean where `null` is false.
fn lenient_bool<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(d)?.unwrap_or_default())
}

/// A string map where `null` is empty and an entry whose value is not a string is skipped.
fn lenient_map<'de, D: serde::Deserializer<'de>>(d: D) -> Result<StringMap, D::Error> {
    Ok(
        match Option::<BTreeMap<String, serde_json::Value>>::deserialize(d)? {
            Some(map) => map
                .into_iter()
                .filter_map(|(k, v)| match v {
                    serde_json::Value::String(s) => Some((k, s)),
                    serde_json::Value::Null => Some((k, String::new())),
                    _ => None,
                })
                .collect(),
            None => StringMap::new(),
        },
    )
}

/// An `env` where `null` is no change.
fn lenient_env<'de, D: serde::Deserializer<'de>>(d: D) -> Result<EnvResponse, D::Error> {
    Ok(Option::<EnvResponse>::deserialize(d)?.unwrap_or_default())
}

/// Merges state `changes` into `state` as AnyCable does (`common.go`'s `MergeConnectionState`):
/// a key with an empty value is deleted, the others are set.
pub fn merge_state(state: &mut StringMap, changes: StringMap) {
    for (key, value) in changes {
        if value.is_empty() {
            state.remove(&key);
        } else {
            state.insert(key, value);
        }
    }
}

/// The size in bytes (keys and values) of `state` once `changes` are merged into it
/// ([`merge_state`]), without merging them.
pub fn merged_size(state: &StringMap, changes: &StringMap) -> usize {
    let size = |map: &StringMap| map.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>();
    let replaced: usize = changes
        .keys()
        .filter_map(|k| state.get(k).map(|v| k.len() + v.len()))
        .sum();
    let added: usize = changes
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| k.len() + v.len())
        .sum();
    size(state) - replaced + added
}

/// Checks the RPC settings at start, so that a bad one is said once, naming its flag, rather
/// than failing every call: the URL (`--rpc-url`) is `http://host[:port]/…` (the client
/// speaks plain HTTP), the key (`--rpc-secret`) is a valid header value (no line break nor
/// control character), and each of `headers` (`--rpc-headers`) is a header name.
///
/// # Errors
/// The first bad setting, by its flag (never quoting the key).
pub fn check_settings(url: &str, key: &str, headers: &[String]) -> anyhow::Result<()> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|e| anyhow::anyhow!("--rpc-url {url:?} is not a URL: {e}"))?;
    if uri.scheme_str() != Some("http") || uri.host().is_none() {
        anyhow::bail!("--rpc-url {url:?} must be an http://host[:port]/path URL");
    }
    if hyper::header::HeaderValue::from_str(&format!("Bearer {key}")).is_err() {
        anyhow::bail!("--rpc-secret holds a character a header value may not (a line break?)");
    }
    for name in headers {
        let name = name.trim();
        if !name.is_empty() && hyper::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
            anyhow::bail!("--rpc-headers: {name:?} is not a header name");
        }
    }
    Ok(())
}

/// The breaker's state, as `hearth_rpc_breaker_state` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls go through (gauge 0).
    Closed,
    /// A few calls go through to see whether the app is back (gauge 1).
    HalfOpen,
    /// Calls fail at once (gauge 2).
    Open,
}

/// The circuit breaker (see the module docs).
#[derive(Debug)]
pub struct Breaker {
    inner: Mutex<BreakerInner>,
}

#[derive(Debug)]
struct BreakerInner {
    state: BreakerState,
    /// When the state (or the closed window) started.
    since: Instant,
    calls: u32,
    failures: u32,
    /// Half-open: calls let through, and successes among them.
    trial_calls: u32,
    trial_successes: u32,
}

impl Default for Breaker {
    fn default() -> Self {
        Self {
            inner: Mutex::new(BreakerInner {
                state: BreakerState::Closed,
                since: Instant::now(),
                calls: 0,
                failures: 0,
                trial_calls: 0,
                trial_successes: 0,
            }),
        }
    }
}

impl Breaker {
    /// The state at `now` (an open breaker past [`OPEN_FOR`] is half-open).
    pub fn state(&self, now: Instant) -> BreakerState {
        let mut inner = self.inner.lock();
        inner.tick(now);
        inner.state
    }

    /// Whether a call may be made at `now`; when true, [`Breaker::record`] must follow.
    pub fn allow(&self, now: Instant) -> bool {
        let mut inner = self.inner.lock();
        inner.tick(now);
        match inner.state {
            BreakerState::Closed => true,
            BreakerState::HalfOpen if inner.trial_calls < HALF_OPEN_CALLS => {
                inner.trial_calls += 1;
                true
            }
            BreakerState::Open | BreakerState::HalfOpen => false,
        }
    }

    /// Records an allowed call's outcome (`ok`: the app answered) at `now`.
    pub fn record(&self, ok: bool, now: Instant) {
        let mut inner = self.inner.lock();
        inner.tick(now);
        match inner.state {
            BreakerState::Closed => {
                inner.calls += 1;
                inner.failures += u32::from(!ok);
                if inner.calls >= TRIP_MIN_CALLS
                    && f64::from(inner.failures) / f64::from(inner.calls) >= TRIP_FAILURE_RATIO
                {
                    inner.enter(BreakerState::Open, now);
                }
            }
            BreakerState::HalfOpen if !ok => inner.enter(BreakerState::Open, now),
            BreakerState::HalfOpen => {
                inner.trial_successes += 1;
                if inner.trial_successes >= HALF_OPEN_CALLS {
                    inner.enter(BreakerState::Closed, now);
                }
            }
            BreakerState::Open => {}
        }
    }

    /// Forgets an allowed call that was abandoned before its outcome was known (the client
    /// went away): a half-open breaker may let another trial through in its place.
    pub fn forget(&self, now: Instant) {
        let mut inner = self.inner.lock();
        inner.tick(now);
        if inner.state == BreakerState::HalfOpen {
            inner.trial_calls = inner.trial_calls.saturating_sub(1);
        }
    }
}

impl BreakerInner {
    fn tick(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.since);
        match self.state {
            BreakerState::Open if elapsed >= OPEN_FOR => self.enter(BreakerState::HalfOpen, now),
            BreakerState::Closed if elapsed >= WINDOW => self.enter(BreakerState::Closed, now),
            _ => {}
        }
    }

    fn enter(&mut self, state: BreakerState, now: Instant) {
        if state != self.state {
            match state {
                BreakerState::Open => tracing::warn!("RPC circuit breaker is open"),
                BreakerState::Closed => tracing::info!("RPC circuit breaker is closed"),
                BreakerState::HalfOpen => {}
            }
        }
        self.state = state;
        self.since = now;
        self.calls = 0;
        self.failures = 0;
        self.trial_calls = 0;
        self.trial_successes = 0;
    }
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The breaker is open: the call was not made.
    #[error("the RPC app is unavailable (circuit breaker open)")]
    BreakerOpen,
    /// No answer within [`CALL_TIMEOUT`] (a place under the cap included).
    #[error("the RPC app did not answer within {0:?}")]
    Timeout(Duration),
    /// The app could not be reached.
    #[error("the RPC app could not be reached: {0}")]
    Unreachable(String),
    /// 401: the app refuses the key.
    #[error("the RPC app refuses the key (401): check --rpc-secret")]
    Unauthenticated,
    /// Another status than 200.
    #[error("the RPC app answered {0}")]
    Status(u16),
    /// An answer too large, or not of the expected shape.
    #[error("malformed RPC answer: {0}")]
    Malformed(String),
}

/// The handles the client records with.
#[derive(Clone, Debug)]
struct RpcMetrics {
    ok: Counter,
    failed: Counter,
    refused: Counter,
    canceled: Counter,
    duration: Histogram,
    breaker: Gauge,
    disconnects_dropped: Counter,
}

impl RpcMetrics {
    fn new(metrics: &crate::metrics::Metrics) -> Self {
        const CALLS: &str = "hearth_rpc_calls_total";
        const HELP: &str = "RPC calls by result: ok (answered 200), error (no answer, a timeout, \
                            another status, a malformed answer), refused (not made: the breaker \
                            is open), canceled (abandoned: the client went away)";
        Self {
            ok: metrics.labelled_counter(CALLS, ("result", "ok"), HELP),
            failed: metrics.labelled_counter(CALLS, ("result", "error"), HELP),
            refused: metrics.labelled_counter(CALLS, ("result", "refused"), HELP),
            canceled: metrics.labelled_counter(CALLS, ("result", "canceled"), HELP),
            duration: metrics.rpc_duration(),
            breaker: metrics.plain_gauge(
                "hearth_rpc_breaker_state",
                "The RPC circuit breaker: 0 closed, 1 half-open, 2 open",
            ),
            disconnects_dropped: metrics.plain_counter(
                "hearth_rpc_disconnects_dropped_total",
                "Disconnect calls dropped: the queue was full",
            ),
        }
    }
}

/// The RPC client (see the module docs).
pub struct RpcClient {
    base: String,
    key: String,
    client: Client<HttpConnector, axum::body::Body>,
    permits: Arc<tokio::sync::Semaphore>,
    breaker: Breaker,
    metrics: RpcMetrics,
}

impl std::fmt::Debug for RpcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl RpcClient {
    /// A client of the app at `base` (`http://host:port/_anycable`), calling with `key` (no
    /// `Authorization` header when empty), at most `concurrency` calls in flight.
    pub fn new(
        base: &str,
        key: String,
        concurrency: usize,
        metrics: &crate::metrics::Metrics,
    ) -> Self {
        let client = Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
        let metrics = RpcMetrics::new(metrics);
        metrics.breaker.set(0.0);
        Self {
            base: base.trim_end_matches('/').to_owned(),
            key,
            client,
            permits: Arc::new(tokio::sync::Semaphore::new(concurrency.max(1))),
            breaker: Breaker::default(),
            metrics,
        }
    }

    /// The breaker's state now.
    pub fn breaker_state(&self) -> BreakerState {
        self.breaker.state(Instant::now())
    }

    /// `connect`.
    ///
    /// # Errors
    /// [`CallError`].
    pub async fn connect(&self, sid: &str, env: &Env) -> Result<ConnectResponse, CallError> {
        self.call("connect", sid, &ConnectRequest { env }).await
    }

    /// `command`.
    ///
    /// # Errors
    /// [`CallError`].
    pub async fn command(
        &self,
        sid: &str,
        message: &CommandMessage<'_>,
    ) -> Result<CommandResponse, CallError> {
        self.call("command", sid, message).await
    }

    /// `disconnect` (called by the [`DisconnectQueue`]).
    ///
    /// # Errors
    /// [`CallError`].
    pub async fn disconnect(
        &self,
        sid: &str,
        request: &DisconnectRequest,
    ) -> Result<DisconnectResponse, CallError> {
        self.call("disconnect", sid, request).await
    }

    async fn call<Req: Serialize, Resp: serde::de::DeserializeOwned>(
        &self,
        op: &str,
        sid: &str,
        request: &Req,
    ) -> Result<Resp, CallError> {
        let started = Instant::now();
        if !self.breaker.allow(started) {
            self.metrics.refused.increment(1);
            self.show_breaker();
            return Err(CallError::BreakerOpen);
        }
        // Counts the call as canceled if this future is dropped before the answer is in.
        let mut pending = Abandoned {
            client: self,
            settled: false,
        };
        let answer = tokio::time::timeout(CALL_TIMEOUT, self.post(op, sid, request)).await;
        pending.settled = true;
        let answered = matches!(
            answer,
            Ok(Ok(_) | Err(CallError::Status(_) | CallError::Unauthenticated))
        );
        self.breaker.record(answered, Instant::now());
        self.show_breaker();
        self.metrics
            .duration
            .record(started.elapsed().as_secs_f64());
        let result = match answer {
            Ok(Ok(bytes)) => decode(&bytes),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(CallError::Timeout(CALL_TIMEOUT)),
        };
        match &result {
            Ok(_) => self.metrics.ok.increment(1),
            Err(_) => self.metrics.failed.increment(1),
        }
        result
    }

    fn show_breaker(&self) {
        let value = match self.breaker.state(Instant::now()) {
            BreakerState::Closed => 0.0,
            BreakerState::HalfOpen => 1.0,
            BreakerState::Open => 2.0,
        };
        self.metrics.breaker.set(value);
    }

    async fn post<Req: Serialize>(
        &self,
        op: &str,
        sid: &str,
        request: &Req,
    ) -> Result<axum::body::Bytes, CallError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| CallError::Unreachable(e.to_string()))?;
        let body = serde_json::to_vec(request).map_err(|e| CallError::Malformed(e.to_string()))?;
        let mut builder = hyper::Request::post(format!("{}/{op}", self.base))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header("x-anycable-meta-sid", sid)
            .header("x-anycable-meta-protov", "v1");
        if !self.key.is_empty() {
            builder = builder.header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.key));
        }
        let http_request = builder
            .body(axum::body::Body::from(body))
            .map_err(|e| CallError::Unreachable(e.to_string()))?;
        let response = self
            .client
            .request(http_request)
            .await
            .map_err(|e| CallError::Unreachable(e.to_string()))?;
        match response.status().as_u16() {
            200 => {}
            401 => return Err(CallError::Unauthenticated),
            other => return Err(CallError::Status(other)),
        }
        axum::body::to_bytes(
            axum::body::Body::new(response.into_body()),
            MAX_ANSWER_BYTES,
        )
        .await
        .map_err(|e| CallError::Malformed(format!("answer unreadable or too large: {e}")))
    }
}

/// A call in flight; dropped unsettled (its caller gave up on it, see
/// `cable::connection::peer`), it is counted as canceled and the breaker forgets it.
struct Abandoned<'a> {
    client: &'a RpcClient,
    settled: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.client.metrics.canceled.increment(1);
            self.client.breaker.forget(Instant::now());
        }
    }
}

/// One queued disconnect: the connection's session id and what to send.
#[derive(Debug)]
pub struct Disconnect {
    /// The session id (`x-anycable-meta-sid`).
    pub sid: String,
    /// The call's body.
    pub request: DisconnectRequest,
}

/// The bounded, rate-limited disconnect queue (see the module docs).
#[derive(Clone, Debug)]
pub struct DisconnectQueue {
    sender: tokio::sync::mpsc::Sender<Disconnect>,
    dropped: Counter,
    /// Queued or being sent.
    pending: Arc<std::sync::atomic::AtomicUsize>,
    /// Set at shutdown: no pause between calls.
    hurry: Arc<std::sync::atomic::AtomicBool>,
    /// Told whenever `pending` falls to 0.
    idle: Arc<tokio::sync::Notify>,
}

impl DisconnectQueue {
    /// Starts the queue's sender task over `client`.
    pub fn start(client: Arc<RpcClient>) -> Self {
        use std::sync::atomic::Ordering::SeqCst;
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<Disconnect>(DISCONNECT_BACKLOG);
        let queue = Self {
            sender,
            dropped: client.metrics.disconnects_dropped.clone(),
            pending: Arc::default(),
            hurry: Arc::default(),
            idle: Arc::default(),
        };
        let (pending, hurry, idle) = (
            queue.pending.clone(),
            queue.hurry.clone(),
            queue.idle.clone(),
        );
        tokio::spawn(async move {
            let pause = Duration::from_secs(1) / DISCONNECTS_PER_SECOND;
            while let Some(d) = receiver.recv().await {
                let started = tokio::time::Instant::now();
                match client.disconnect(&d.sid, &d.request).await {
                    Ok(answer) if answer.status != Status::Success => tracing::warn!(
                        error = %crate::loggable::loggable(&answer.error_msg),
                        "RPC disconnect failed"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "RPC disconnect failed"),
                }
                if pending.fetch_sub(1, SeqCst) == 1 {
                    idle.notify_waiters();
                }
                if !hurry.load(SeqCst) {
                    tokio::time::sleep_until(started + pause).await;
                }
            }
        });
        queue
    }

    /// Queues a disconnect; dropped (and counted) when the queue is full.
    pub fn push(&self, disconnect: Disconnect) {
        use std::sync::atomic::Ordering::SeqCst;
        self.pending.fetch_add(1, SeqCst);
        if self.sender.try_send(disconnect).is_err() {
            self.pending.fetch_sub(1, SeqCst);
            self.dropped.increment(1);
        }
    }

    /// At shutdown: sends what is queued without the pause between calls, and waits until
    /// nothing is left or `within` has passed. Returns how many were left unsent.
    pub async fn flush(&self, within: Duration) -> usize {
        use std::sync::atomic::Ordering::SeqCst;
        self.hurry.store(true, SeqCst);
        let drained = async {
            loop {
                let notified = self.idle.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if self.pending.load(SeqCst) == 0 {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(within, drained).await;
        self.pending.load(SeqCst)
    }
}

/// The app's RPC: the client, the disconnect queue and the headers its `connect` is given.
#[derive(Debug)]
pub struct RpcApp {
    /// The client.
    pub client: Arc<RpcClient>,
    /// Where disconnects wait.
    pub disconnects: DisconnectQueue,
    /// The request headers passed to `connect` (lowercase).
    pub headers: Vec<String>,
}

impl RpcApp {
    /// The app at `url`, called with `key`, at most `concurrency` calls in flight, passing
    /// `headers` to `connect`. Starts the disconnect queue's task.
    pub fn start(
        url: &str,
        key: String,
        concurrency: usize,
        headers: Vec<String>,
        metrics: &crate::metrics::Metrics,
    ) -> Arc<Self> {
        let client = Arc::new(RpcClient::new(url, key, concurrency, metrics));
        let disconnects = DisconnectQueue::start(client.clone());
        Arc::new(Self {
            client,
            disconnects,
            headers: headers
                .into_iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
        })
    }
}

/// What a connection tells the app about itself: the RPC client and the request's env,
/// built at the upgrade.
#[derive(Clone, Debug)]
pub struct ConnectContext {
    /// The session id sent as `x-anycable-meta-sid`.
    pub sid: String,
    /// The request's URL and proxied headers.
    pub env: Env,
}

/// Builds the connect `env`: the request's `url`, the headers named in `proxied` (lowercase;
/// AnyCable's default is `cookie` alone) and `REMOTE_ADDR`.
pub fn request_env(
    url: String,
    headers: &axum::http::HeaderMap,
    proxied: &[String],
    remote_addr: std::net::IpAddr,
) -> Env {
    let mut map = StringMap::new();
    for name in proxied {
        let values: Vec<&str> = headers
            .get_all(name.as_str())
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        if !values.is_empty() {
            let joined = if name == "cookie" {
                values.join("; ")
            } else {
                values.join(", ")
            };
            map.insert(name.clone(), joined);
        }
    }
    map.insert("REMOTE_ADDR".to_owned(), remote_addr.to_string());
    Env {
        url,
        headers: map,
        ..Env::default()
    }
}

/// Decodes an answer: a JSON object of `T`'s shape (an array, which serde would take field
/// by field, is refused too).
///
/// # Errors
/// [`CallError::Malformed`].
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, CallError> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| CallError::Malformed(e.to_string()))?;
    if !value.is_object() {
        return Err(CallError::Malformed("not a JSON object".to_owned()));
    }
    serde_json::from_value(value).map_err(|e| CallError::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_derived_as_anycable_derives_it() {
        let key = rpc_key("s3cr3t");
        assert_eq!(key.len(), 64);
        assert_ne!(key, crate::anycable::broadcast_key("s3cr3t"));
    }

    #[test]
    fn answers_are_read_leniently() {
        let answer: CommandResponse = decode(
            br#"{"status":1,"transmissions":["a",2,null,"b"],"streams":null,"env":{"istate":{"k":"v","gone":""}}}"#,
        )
        .unwrap();
        assert_eq!(answer.status, Status::Success);
        assert_eq!(answer.transmissions, ["a", "b"]);
        assert!(answer.streams.is_empty());
        let mut state = StringMap::from([("gone".to_owned(), "x".to_owned())]);
        merge_state(&mut state, answer.env.istate);
        assert_eq!(state, StringMap::from([("k".to_owned(), "v".to_owned())]));
        let failed: ConnectResponse = decode(br#"{"status":"FAILURE"}"#).unwrap();
        assert_eq!(failed.status, Status::Failure);
        assert!(decode::<ConnectResponse>(b"[1]").is_err());
    }

    #[test]
    fn an_abandoned_trial_call_lets_another_through() {
        let breaker = Breaker::default();
        let t0 = Instant::now();
        for _ in 0..TRIP_MIN_CALLS {
            assert!(breaker.allow(t0));
            breaker.record(false, t0);
        }
        let later = t0 + OPEN_FOR;
        for _ in 0..HALF_OPEN_CALLS {
            assert!(breaker.allow(later));
        }
        assert!(!breaker.allow(later));
        // One trial's client went away: its place is given to another call, and the breaker
        // can still close.
        breaker.forget(later);
        assert!(breaker.allow(later));
        for _ in 0..HALF_OPEN_CALLS {
            breaker.record(true, later);
        }
        assert_eq!(breaker.state(later), BreakerState::Closed);
    }

    #[test]
    fn the_breaker_opens_on_failures_and_closes_after_trials() {
        let breaker = Breaker::default();
        let t0 = Instant::now();
        for _ in 0..9 {
            assert!(breaker.allow(t0));
            breaker.record(false, t0);
        }
        assert_eq!(breaker.state(t0), BreakerState::Closed);
        assert!(breaker.allow(t0));
        breaker.record(false, t0);
        assert_eq!(breaker.state(t0), BreakerState::Open);
        assert!(!breaker.allow(t0 + Duration::from_secs(1)));
        let later = t0 + OPEN_FOR;
        assert_eq!(breaker.state(later), BreakerState::HalfOpen);
        for _ in 0..HALF_OPEN_CALLS {
            assert!(breaker.allow(later));
        }
        assert!(!breaker.allow(later));
        for _ in 0..HALF_OPEN_CALLS {
            breaker.record(true, later);
        }
        assert_eq!(breaker.state(later), BreakerState::Closed);
    }
}
