//! The Redis pub/sub adapter (`--pubsub redis`): broadcasts shared between Hearth nodes, Rails
//! processes and a Rails console through one Redis, in the format of Rails' redis adapter
//! (`actioncable/lib/action_cable/subscription_adapter/redis.rb` and `channel_prefix.rb`).
//!
//! - **Publish**: every broadcast is one `PUBLISH [<prefix>:]<broadcasting> <payload>`, the
//!   payload being the JSON text the event encoded (what `ActiveSupport::JSON.encode` gives
//!   Rails' adapter). Publishes go out in order, pipelined in batches, on one connection
//!   (redis-rs' `ConnectionManager`, which reconnects).
//! - **Subscribe**: one subscriber connection per node. A broadcasting is `SUBSCRIBE`d when
//!   its first local subscriber arrives and `UNSUBSCRIBE`d after the last leaves
//!   ([`crate::fanout::interest::Interest`], which this adapter owns: [`Bus::interest`]);
//!   changes that arrive together go out as one command. The node also listens to AnyCable's
//!   channel ([`crate::anycable::redis_channel`], scoped by the prefix) and to Hearth's
//!   control channel ([`CONTROL_CHANNEL`]).
//! - **Receive**: a message's payload is handed as received to [`Fanout::broadcast`], which
//!   splices it once per identifier variant. A payload that is not one JSON value is logged
//!   and dropped. `action_cable/<connection identifier>` carries remote disconnects
//!   (`{"type":"disconnect","reconnect":…}`, Rails' `RemoteConnections` and
//!   `Connection::InternalChannel`); the control channel carries revocations
//!   (`{"type":"access_revoked","user_ids":[…]}`) and ended sessions
//!   (`{"type":"sessions_ended",…}`, sent with every remote disconnect, so that the nodes
//!   holding no socket of the user forget what they kept of its sessions too). Both become a [`Control`] handed to the
//!   handler set with [`Bus::on_control`]: [`Bus::control`] publishes, and every node applies
//!   what it receives, the sender included.
//! - **Local delivery** comes back through the node's own subscription, as in Rails. While the
//!   subscriber link is down, and whenever a `PUBLISH` fails or reaches no subscriber, the
//!   node delivers the broadcast to its own clients directly instead, so the publishing node
//!   keeps working and nothing is delivered twice. The outage is logged, shown by
//!   `hearth_redis_link_up` and by `/up`; on reconnect every live subscription is restored.
//! - **Nothing lost across faults** ([`log`]): each broadcast is also appended to a log every
//!   node can read (a capped Redis Stream), with a marker in front of it on a channel every
//!   node hears. A broadcast Redis cannot take is kept (at most [`PENDING_LIMIT`], counted in
//!   `/metrics`) and published, in order, once it can. A heartbeat goes from each node's
//!   publishing connection through Redis to its own subscriber every [`HEARTBEAT_INTERVAL`];
//!   a subscriber link silent for [`HEARTBEAT_SILENCE`] (open but passing nothing, as after a
//!   failover or a NAT timeout) counts as lost. On every reconnect the node reads the log
//!   after the last entry it had settled and replays to its clients what they missed, in
//!   order and once, before anything newer.

pub mod history;
pub mod log;

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

use crate::anycable;
use crate::fanout::interest::{Interest, InterestChange};
use crate::fanout::Fanout;
use crate::history::Position;
use crate::metrics::Metrics;
use crate::pubsub::{Bus, Control, ControlHandler, ControlSlot, Health, LinkReport};

pub use log::LOG_LIMIT;

/// What the Redis bus needs to give broadcasts their stream positions
/// ([`history::RedisHistory`]).
#[derive(Clone, Copy, Debug)]
pub struct HistorySettings {
    /// Entries kept per stream (`--history-limit`; 0: no history, no positions).
    pub limit: usize,
    /// How long an entry is kept (`--history-ttl`).
    pub ttl: Duration,
    /// The escaping of stream names in positioned frames.
    pub json: crate::rails::json::JsonEscaping,
    /// Entries the broadcast log keeps, about (`--redis-log-limit`, [`LOG_LIMIT`] by default):
    /// how far a node cut off from Redis can replay; past it the node's clients reconnect
    /// ([`Control::Resync`]).
    pub log_limit: usize,
}

/// Hearth's node-to-node control channel (under the channel prefix), which every node
/// listens to: revocations, as `{"type":"access_revoked","user_ids":[…]}`, and ended sessions,
/// as `{"type":"sessions_ended","user_id":<id>,"session_sha256":"<hex>"|null}`.
pub const CONTROL_CHANNEL: &str = "hearth/control";

/// Prefix of a connection's internal channel (`action_cable/<connection identifier>`, Rails'
/// `Connection::InternalChannel#internal_channel`).
pub const INTERNAL_CHANNEL_PREFIX: &str = "action_cable/";

/// Campfire's connection identifier (`identified_by :current_user`): the user's GlobalID
/// param, as Rails' `Connection::Identification#connection_identifier` builds it from
/// `current_user.to_gid_param`.
pub fn connection_identifier(gid_app: &str, user_id: i64) -> String {
    crate::rails::global_id::to_gid_param(gid_app, "User", user_id)
}

/// The internal channel name of a connection identifier (`action_cable/<identifier>`).
pub fn internal_channel(identifier: &str) -> String {
    format!("{INTERNAL_CHANNEL_PREFIX}{identifier}")
}

/// How long a subscribe waits for its streams' Redis `SUBSCRIBE` before confirming anyway.
pub const SUBSCRIBE_WAIT: Duration = Duration::from_secs(2);

/// Most publishes sent in one pipeline.
const PUBLISH_BATCH: usize = 256;

/// Most channels in one `SUBSCRIBE` or `UNSUBSCRIBE` command.
const SUBSCRIBE_BATCH: usize = 1024;

/// Waits between reconnect attempts of the subscriber link: from the first to the last,
/// doubling.
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(2);

/// How long one connection attempt or one command may take before the link counts as down.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// How often a node's publishing connection sends its heartbeat to its own subscriber.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(500);

/// A subscriber link that passed no heartbeat for this long is taken as lost and reconnected
/// (so a silent link is found within `HEARTBEAT_SILENCE + HEARTBEAT_INTERVAL`, 2.5 s).
pub const HEARTBEAT_SILENCE: Duration = Duration::from_secs(2);

/// Most broadcasts kept while Redis cannot take them; past it the oldest are dropped (and
/// counted).
pub const PENDING_LIMIT: usize = 10_000;

/// The longest wait between two attempts to publish kept broadcasts.
const RETRY_MAX: Duration = Duration::from_secs(1);

/// How long a replay from the log may take before the link counts as lost again.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(10);

/// A remote disconnect received on `action_cable/<identifier>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteDisconnect {
    /// The connection identifier (for Campfire's `identified_by :current_user`, the user's
    /// GlobalID param).
    pub identifier: String,
    /// Whether the client may reconnect (Rails: `message.fetch("reconnect", true)`).
    pub reconnect: bool,
    /// Hearth's sign-out: only connections opened with the session whose token has this
    /// SHA-256 (hex) are closed. Absent in Rails' messages (every connection of the
    /// identifier is closed).
    pub session_sha256: Option<String>,
}

impl RemoteDisconnect {
    /// Parses the payload of an internal channel message; None for anything but a
    /// `disconnect` (Rails ignores other types too).
    pub fn parse(identifier: &str, payload: &[u8]) -> Option<Self> {
        let value: serde_json::Value = serde_json::from_slice(payload).ok()?;
        if value.get("type")?.as_str()? != "disconnect" {
            return None;
        }
        Some(Self {
            identifier: identifier.to_owned(),
            reconnect: value
                .get("reconnect")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(true),
            session_sha256: value
                .get("hearth_session_sha256")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
        })
    }

    /// The payload Rails' `RemoteConnection#disconnect` publishes
    /// (`{"type":"disconnect","reconnect":<bool>}`), plus Hearth's session digest when set.
    pub fn payload(&self) -> String {
        match &self.session_sha256 {
            Some(digest) => format!(
                r#"{{"type":"disconnect","reconnect":{},"hearth_session_sha256":"{digest}"}}"#,
                self.reconnect
            ),
            None => format!(r#"{{"type":"disconnect","reconnect":{}}}"#, self.reconnect),
        }
    }
}

/// The adapter: the node's [`Bus`], plus its two Redis tasks.
pub struct RedisPubSub {
    fanout: Fanout,
    interest: Interest,
    /// `"<channel_prefix>:"`, or empty.
    prefix: String,
    /// AnyCable's channel, as listened to (already scoped).
    anycable_channel: String,
    /// The GlobalID app name of connection identifiers.
    gid_app: String,
    up: AtomicBool,
    outbox: mpsc::UnboundedSender<(Box<str>, Bytes)>,
    /// Channels (prefixed) the subscriber connection has confirmed, and a counter bumped on
    /// every change, for [`Self::wait_subscribed`].
    confirmed: Mutex<HashSet<String>>,
    generation: watch::Sender<u64>,
    on_control: ControlSlot,
    metrics: Arc<Metrics>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// This node's id in markers and log entries (random, per start).
    node: String,
    /// The log's key, the marker channel and this node's heartbeat channel (all prefixed).
    log_key: String,
    marks_channel: String,
    heartbeat_channel: String,
    /// Log entries this node delivered itself (their `PUBLISH` reached no subscriber).
    delivered_here: Mutex<log::DeliveredHere>,
    link: LinkStats,
    history: history::RedisHistory,
    history_settings: HistorySettings,
}

/// The link's figures: for `/up` (the atomics) and `/metrics` (the handles).
#[derive(Debug)]
struct LinkStats {
    lag_ms: AtomicU64,
    pending: AtomicUsize,
    replayed: AtomicU64,
    lag_gauge: metrics::Gauge,
    pending_gauge: metrics::Gauge,
    dropped: metrics::Counter,
    retries: metrics::Counter,
    reconnects: metrics::Counter,
    replayed_total: metrics::Counter,
    gaps: metrics::Counter,
}

impl LinkStats {
    fn new(m: &Metrics) -> Self {
        Self {
            lag_ms: AtomicU64::new(0),
            pending: AtomicUsize::new(0),
            replayed: AtomicU64::new(0),
            lag_gauge: m.plain_gauge(
                "hearth_redis_link_lag_seconds",
                "The last heartbeat's trip from this node's publishing connection through Redis to its subscriber.",
            ),
            pending_gauge: m.plain_gauge(
                "hearth_redis_publish_pending",
                "Broadcasts kept while Redis cannot take them.",
            ),
            dropped: m.plain_counter(
                "hearth_redis_publish_dropped_total",
                "Kept broadcasts dropped past the bound, the oldest first.",
            ),
            retries: m.plain_counter(
                "hearth_redis_publish_retries_total",
                "Publish attempts that failed and were tried again.",
            ),
            reconnects: m.plain_counter(
                "hearth_redis_reconnects_total",
                "Subscriber links lost (closed, failed, or silent past the heartbeat's limit).",
            ),
            replayed_total: m.plain_counter(
                "hearth_redis_replayed_total",
                "Broadcasts read back from the log after the link was down and delivered here.",
            ),
            gaps: m.plain_counter(
                "hearth_redis_replay_gaps_total",
                "Replays that found entries after this node's position trimmed from the log.",
            ),
        }
    }

    fn set_pending(&self, n: usize) {
        self.pending.store(n, Ordering::Relaxed);
        self.pending_gauge.set(n as f64);
    }
}

impl std::fmt::Debug for RedisPubSub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPubSub")
            .field("prefix", &self.prefix)
            .field("up", &self.is_up())
            .finish_non_exhaustive()
    }
}

impl RedisPubSub {
    /// Starts the adapter on `url` (`redis://…`) with Rails' `channel_prefix` (empty for
    /// none), AnyCable's channel `anycable_channel` (as [`crate::anycable::redis_channel`]
    /// gives it) and the GlobalID app name `gid_app` of connection identifiers: a publisher
    /// and a subscriber task on the current Tokio runtime. The links come up in the
    /// background; until then broadcasts are delivered locally.
    ///
    /// # Errors
    /// `url` is not a Redis URL.
    pub fn start(
        url: &str,
        channel_prefix: &str,
        anycable_channel: &str,
        gid_app: &str,
        fanout: Fanout,
        metrics: Arc<Metrics>,
        history_settings: HistorySettings,
    ) -> anyhow::Result<Arc<Self>> {
        let (interest, changes) = Interest::with_listener();
        let client = redis::Client::open(url)
            .map_err(|e| anyhow::anyhow!("--redis-url is not a Redis URL: {e}"))?;
        let (outbox, outbox_rx) = mpsc::unbounded_channel();
        let prefix = if channel_prefix.is_empty() {
            String::new()
        } else {
            format!("{channel_prefix}:")
        };
        metrics.set_redis_link_up(false);
        let node = format!("{:016x}", rand::random::<u64>());
        let link = LinkStats::new(&metrics);
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(COMMAND_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(RECONNECT_MAX);
        let manager = redis::aio::ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| anyhow::anyhow!("Redis connection manager: {e}"))?;
        let history = history::RedisHistory::new(
            manager.clone(),
            &prefix,
            history_settings.ttl,
            Arc::default(),
        );
        let adapter = Arc::new(Self {
            history,
            history_settings,
            log_key: format!("{prefix}hearth/log"),
            marks_channel: format!("{prefix}hearth/marks"),
            heartbeat_channel: format!("{prefix}hearth/heartbeat/{node}"),
            node,
            delivered_here: Mutex::new(log::DeliveredHere::default()),
            link,
            fanout,
            interest,
            prefix,
            anycable_channel: anycable_channel.to_owned(),
            gid_app: gid_app.to_owned(),
            up: AtomicBool::new(false),
            outbox,
            confirmed: Mutex::new(HashSet::new()),
            generation: watch::channel(0).0,
            on_control: ControlSlot::default(),
            metrics,
            tasks: Mutex::new(Vec::new()),
        });
        let publisher = tokio::spawn(publisher(Arc::downgrade(&adapter), manager, outbox_rx));
        let subscriber = tokio::spawn(subscriber(Arc::downgrade(&adapter), client, changes));
        adapter.tasks.lock().extend([publisher, subscriber]);
        Ok(adapter)
    }

    /// The stream history every node shares (positions assigned in Redis): the node's
    /// [`crate::history::History`].
    pub fn history(&self) -> Arc<dyn crate::history::History> {
        Arc::new(self.history.clone())
    }

    /// The name a broadcast's position is counted under and whether its entry is kept
    /// ([`crate::streams::retention`]), or None for one without a position (node commands,
    /// remote disconnects, typing).
    fn history_stream<'a>(&self, stream: &'a str) -> Option<(&'a str, bool)> {
        let commands = stream == CONTROL_CHANNEL || stream.starts_with(INTERNAL_CHANNEL_PREFIX);
        if self.history_settings.limit == 0 || commands {
            return None;
        }
        match crate::streams::retention(stream) {
            crate::streams::Retention::Transient => None,
            crate::streams::Retention::Position => Some((stream, false)),
            crate::streams::Retention::Kept => Some((stream, true)),
        }
    }

    /// The user's internal channel name (`action_cable/<user's GlobalID param>`).
    fn user_channel(&self, user_id: i64) -> String {
        internal_channel(&connection_identifier(&self.gid_app, user_id))
    }

    /// The user a Rails connection identifier names, when it is a user of this app.
    fn user_of(&self, identifier: &str) -> Option<i64> {
        let (app, model, user_id) = crate::rails::global_id::parse_gid_param(identifier)?;
        (app == self.gid_app && model == "User").then_some(user_id)
    }

    /// Applies a remote disconnect for a connection identifier to this node's sockets.
    fn apply_disconnect(&self, identifier: &str, reconnect: bool, session_sha256: Option<String>) {
        let Some(user_id) = self.user_of(identifier) else {
            tracing::warn!(identifier, "remote disconnect for an unknown identifier");
            return;
        };
        tracing::info!(identifier, "Removing connection (remote disconnect)");
        self.on_control.apply(&Control::Disconnect {
            user_id,
            session_sha256,
            reconnect,
        });
    }

    /// Whether the subscriber link is up (its subscriptions are in place).
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// Whether `channel` is one the node listens to for the link's whole life, whatever its
    /// streams: AnyCable's broadcasts, and Hearth's own (`hearth/…`: control, marks,
    /// heartbeats).
    fn is_own_channel(&self, channel: &str) -> bool {
        channel == self.anycable_channel
            || channel
                .strip_prefix(self.prefix.as_str())
                .is_some_and(|name| name.starts_with("hearth/"))
    }

    /// The Redis channel of a broadcasting: `[<prefix>:]<broadcasting>`.
    pub fn channel(&self, broadcasting: &str) -> String {
        format!("{}{broadcasting}", self.prefix)
    }

    /// Waits until every one of `broadcastings` is subscribed on Redis, at most `within`;
    /// returns at once while the link is down (local delivery covers the node then). A
    /// subscription is confirmed to the client after this, as Rails confirms after the
    /// adapter's subscribe callback, so no broadcast after the confirm is missed.
    pub async fn wait_subscribed(&self, broadcastings: &[String], within: Duration) {
        let channels: Vec<String> = broadcastings.iter().map(|b| self.channel(b)).collect();
        let mut generation = self.generation.subscribe();
        let _ = tokio::time::timeout(within, async {
            loop {
                generation.borrow_and_update();
                if !self.is_up() {
                    return;
                }
                {
                    let confirmed = self.confirmed.lock();
                    if channels.iter().all(|c| confirmed.contains(c)) {
                        return;
                    }
                }
                if generation.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }

    fn set_up(&self, up: bool) {
        let was = self.up.swap(up, Ordering::AcqRel);
        self.metrics.set_redis_link_up(up);
        if was != up {
            if up {
                tracing::info!("Redis link up: subscriptions in place");
            } else {
                tracing::warn!("Redis link down: broadcasts are delivered on this node only");
            }
        }
        self.generation.send_modify(|g| *g += 1);
    }

    /// Delivers a message received on Redis channel `channel` to this node's clients.
    fn receive(&self, channel: &str, payload: &[u8], position: Option<&Position>) {
        if channel == self.anycable_channel {
            match anycable::parse_message(payload) {
                Ok(anycable::Message::Publications(publications)) => {
                    for p in publications {
                        self.fanout.broadcast(&p.stream, p.data.as_bytes());
                    }
                }
                Ok(anycable::Message::Disconnect {
                    identifier,
                    identifiers,
                    reconnect,
                }) => match self.user_of(&identifier) {
                    Some(_) => self.apply_disconnect(&identifier, reconnect, None),
                    // Not a Campfire user: an app's connection (`--rpc-url`).
                    None => self.on_control.apply(&Control::DisconnectIdentifiers {
                        identifiers,
                        reconnect,
                    }),
                },
                Err(e) => tracing::warn!(error = %e, "dropped a malformed AnyCable publication"),
            }
            return;
        }
        match channel.strip_prefix(self.prefix.as_str()) {
            Some(name) => self.deliver_local(name, payload, position),
            None => tracing::debug!(channel, "message on a channel without our prefix"),
        }
    }

    /// Delivers a broadcast (or a remote disconnect) to this node's clients only.
    fn deliver_local(&self, name: &str, payload: &[u8], position: Option<&Position>) {
        if let Some(identifier) = name.strip_prefix(INTERNAL_CHANNEL_PREFIX) {
            let Some(disconnect) = RemoteDisconnect::parse(identifier, payload) else {
                tracing::warn!(
                    channel = name,
                    "dropped a malformed internal channel message"
                );
                return;
            };
            self.apply_disconnect(
                &disconnect.identifier,
                disconnect.reconnect,
                disconnect.session_sha256,
            );
            return;
        }
        if name == CONTROL_CHANNEL {
            match parse_control(payload) {
                Some(command) => self.on_control.apply(&command),
                None => tracing::warn!("dropped a malformed control message"),
            }
            return;
        }
        if !anycable::is_json(payload) {
            tracing::warn!(
                broadcasting = name,
                bytes = payload.len(),
                "dropped a broadcast whose payload is not JSON"
            );
            return;
        }
        match position {
            Some(position) => {
                self.history
                    .heads
                    .saw(&position.epoch, name, position.offset);
                crate::pubsub::deliver_at(
                    &self.fanout,
                    self.history_settings.json,
                    name,
                    payload,
                    position,
                );
            }
            None => {
                self.fanout.broadcast(name, payload);
            }
        }
    }
}

/// The control channel's payload of an [`Control::AccessRevoked`].
fn access_revoked_payload(user_ids: &[i64]) -> String {
    serde_json::json!({"type": "access_revoked", "user_ids": user_ids}).to_string()
}

/// The control channel's payload of a [`Control::SessionsEnded`].
fn sessions_ended_payload(user_id: i64, session_sha256: Option<&str>) -> String {
    serde_json::json!({
        "type": "sessions_ended",
        "user_id": user_id,
        "session_sha256": session_sha256,
    })
    .to_string()
}

/// Parses a control channel message; None for anything else.
fn parse_control(payload: &[u8]) -> Option<Control> {
    let value: serde_json::Value = serde_json::from_slice(payload).ok()?;
    match value.get("type")?.as_str()? {
        "access_revoked" => {}
        "disconnect_identifiers" => {
            return Some(Control::DisconnectIdentifiers {
                identifiers: value.get("identifiers")?.as_str()?.to_owned(),
                reconnect: value.get("reconnect")?.as_bool()?,
            });
        }
        "sessions_ended" => {
            let session_sha256 = match value.get("session_sha256") {
                None | Some(serde_json::Value::Null) => None,
                Some(digest) => Some(digest.as_str()?.to_owned()),
            };
            return Some(Control::SessionsEnded {
                user_id: value.get("user_id")?.as_i64()?,
                session_sha256,
            });
        }
        _ => return None,
    }
    let user_ids = value
        .get("user_ids")?
        .as_array()?
        .iter()
        .map(serde_json::Value::as_i64)
        .collect::<Option<Vec<i64>>>()?;
    Some(Control::AccessRevoked { user_ids })
}

/// `publish` queues one `PUBLISH` and returns 0: delivery happens after the Redis round trip
/// (or directly on this node while the link is down), not within this call. Commands are
/// published too and applied by every node when they come back.
impl Bus for RedisPubSub {
    fn publish(&self, stream: &str, payload: &[u8]) -> usize {
        if let Err(mpsc::error::SendError((stream, payload))) = self
            .outbox
            .send((stream.into(), Bytes::copy_from_slice(payload)))
        {
            // The publisher task is gone (the server is stopping): deliver here.
            self.deliver_local(&stream, &payload, None);
        }
        0
    }

    fn control(&self, command: Control) {
        match command {
            Control::Disconnect {
                user_id,
                session_sha256,
                reconnect,
            } => {
                // Rails' `remote_connections.where(current_user:).disconnect`, on the user's
                // internal channel, so Rails' own nodes understand it too.
                // Only the nodes holding the user's sockets listen there: every node hears
                // that the sessions ended on the control channel.
                self.publish(
                    CONTROL_CHANNEL,
                    sessions_ended_payload(user_id, session_sha256.as_deref()).as_bytes(),
                );
                let disconnect = RemoteDisconnect {
                    identifier: connection_identifier(&self.gid_app, user_id),
                    reconnect,
                    session_sha256,
                };
                let name = internal_channel(&disconnect.identifier);
                self.publish(&name, disconnect.payload().as_bytes());
            }
            Control::SessionsEnded {
                user_id,
                session_sha256,
            } => {
                self.publish(
                    CONTROL_CHANNEL,
                    sessions_ended_payload(user_id, session_sha256.as_deref()).as_bytes(),
                );
            }
            Control::AccessRevoked { user_ids } => {
                self.publish(
                    CONTROL_CHANNEL,
                    access_revoked_payload(&user_ids).as_bytes(),
                );
            }
            Control::DisconnectIdentifiers {
                identifiers,
                reconnect,
            } => {
                let payload = serde_json::json!({
                    "type": "disconnect_identifiers",
                    "identifiers": identifiers,
                    "reconnect": reconnect,
                });
                self.publish(CONTROL_CHANNEL, payload.to_string().as_bytes());
            }
            // Another node's gap is its own to resync.
            Control::Resync => self.on_control.apply(&Control::Resync),
        }
    }

    fn on_control(&self, handler: ControlHandler) {
        self.on_control.set(handler);
    }

    fn interest(&self) -> &Interest {
        &self.interest
    }

    fn ready<'a>(&'a self, streams: &'a [String]) -> futures_util::future::BoxFuture<'a, ()> {
        Box::pin(self.wait_subscribed(streams, SUBSCRIBE_WAIT))
    }

    fn user_connected(&self, user_id: i64) {
        self.interest.add(&self.user_channel(user_id));
    }

    fn user_disconnected(&self, user_id: i64) {
        self.interest.remove(&self.user_channel(user_id));
    }

    fn health(&self) -> Health {
        if self.is_up() {
            Health::Linked
        } else {
            Health::LinkDown
        }
    }

    fn link_report(&self) -> Option<LinkReport> {
        Some(LinkReport {
            up: self.is_up(),
            lag_ms: self.link.lag_ms.load(Ordering::Relaxed),
            pending: self.link.pending.load(Ordering::Relaxed),
            replayed: self.link.replayed.load(Ordering::Relaxed),
        })
    }

    fn stop(&self) {
        for task in self.tasks.lock().drain(..) {
            task.abort();
        }
        self.set_up(false);
    }
}

/// One broadcast on its way to Redis.
struct Outgoing {
    stream: Box<str>,
    payload: Bytes,
    /// Already delivered to this node's own clients (published while its link was down, or
    /// after a failed attempt): the log entry names this node, which skips it.
    delivered_here: bool,
}

impl RedisPubSub {
    /// Keeps `o` for publishing, dropping the oldest kept broadcast past [`PENDING_LIMIT`].
    fn keep(&self, pending: &mut VecDeque<Outgoing>, o: Outgoing) {
        pending.push_back(o);
        if pending.len() > PENDING_LIMIT {
            pending.pop_front();
            self.link.dropped.increment(1);
            tracing::warn!(
                limit = PENDING_LIMIT,
                "Redis cannot take broadcasts: dropped the oldest kept one"
            );
        }
    }

    /// Delivers to this node's clients every kept broadcast not delivered here yet.
    fn deliver_kept_here(&self, pending: &mut VecDeque<Outgoing>) {
        for o in pending.iter_mut().filter(|o| !o.delivered_here) {
            self.deliver_local(&o.stream, &o.payload, None);
            o.delivered_here = true;
        }
    }

    /// Publishes `batch` with [`log::PUBLISH_SCRIPT`]: each logged, marked and published, in
    /// order. Returns each one's log id and receiver count.
    async fn publish_batch(
        &self,
        manager: &mut redis::aio::ConnectionManager,
        batch: impl Iterator<Item = &Outgoing>,
    ) -> anyhow::Result<Vec<(String, i64)>> {
        let (epoch_key, offsets_key, history_prefix) = self.history.keys();
        let mut eval = redis::cmd("EVAL");
        eval.arg(log::PUBLISH_SCRIPT)
            .arg(3)
            .arg(&self.log_key)
            .arg(epoch_key)
            .arg(offsets_key)
            .arg(&self.marks_channel)
            .arg(self.history_settings.log_limit)
            .arg(&*crate::history::new_epoch())
            .arg(history_prefix)
            .arg(self.history_settings.limit)
            .arg(self.history_settings.ttl.as_secs().max(1));
        for o in batch {
            let (stream, kept) = self.history_stream(&o.stream).unwrap_or(("", false));
            eval.arg(self.channel(&o.stream))
                .arg(&o.payload[..])
                .arg(if o.delivered_here { &self.node } else { "-" })
                .arg(stream)
                .arg(if kept { "1" } else { "0" });
        }
        match tokio::time::timeout(COMMAND_TIMEOUT, eval.query_async(manager)).await {
            Ok(Ok(replies)) => Ok(replies),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(anyhow::anyhow!("timed out")),
        }
    }

    /// Sends this node's heartbeat (the time it left, in Unix milliseconds) to its own
    /// subscriber through Redis.
    async fn heartbeat(&self, manager: &mut redis::aio::ConnectionManager) {
        let sent = unix_ms();
        let mut cmd = redis::cmd("PUBLISH");
        cmd.arg(&self.heartbeat_channel).arg(sent);
        let publish = cmd.query_async::<i64>(manager);
        if let Ok(Err(e)) = tokio::time::timeout(COMMAND_TIMEOUT, publish).await {
            tracing::debug!(error = %e, "Redis heartbeat not sent");
        }
    }

    /// A heartbeat came back: records its trip.
    fn heartbeat_seen(&self, payload: &[u8]) {
        let sent: Option<u64> = std::str::from_utf8(payload)
            .ok()
            .and_then(|t| t.parse().ok());
        if let Some(sent) = sent {
            let lag = unix_ms().saturating_sub(sent);
            self.link.lag_ms.store(lag, Ordering::Relaxed);
            self.link.lag_gauge.set(lag as f64 / 1000.0);
        }
    }
}

/// Milliseconds since the Unix epoch.
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Sends queued broadcasts in order, in batches; keeps those Redis cannot take and tries
/// again (100 ms to 1 s apart), delivering them to this node's clients at once; delivers
/// here those that reached no subscriber; sends the heartbeat while idle.
async fn publisher(
    adapter: std::sync::Weak<RedisPubSub>,
    mut manager: redis::aio::ConnectionManager,
    mut outbox: mpsc::UnboundedReceiver<(Box<str>, Bytes)>,
) {
    let mut pending: VecDeque<Outgoing> = VecDeque::new();
    let mut beat = tokio::time::interval(HEARTBEAT_INTERVAL);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut pause = RECONNECT_MIN;
    let mut failing = false;
    loop {
        if pending.is_empty() {
            tokio::select! {
                next = outbox.recv() => match next {
                    Some((stream, payload)) => pending.push_back(Outgoing {
                        stream,
                        payload,
                        delivered_here: false,
                    }),
                    None => return,
                },
                _ = beat.tick() => {
                    let Some(a) = adapter.upgrade() else {
                        return;
                    };
                    a.heartbeat(&mut manager).await;
                    continue;
                }
            }
        }
        let Some(a) = adapter.upgrade() else {
            return;
        };
        while let Ok((stream, payload)) = outbox.try_recv() {
            a.keep(
                &mut pending,
                Outgoing {
                    stream,
                    payload,
                    delivered_here: false,
                },
            );
        }
        if !a.is_up() {
            // This node hears nothing from Redis now: its clients get these at once, and
            // the log entries tell it to skip them when it replays.
            a.deliver_kept_here(&mut pending);
        }
        let n = pending.len().min(PUBLISH_BATCH);
        match a.publish_batch(&mut manager, pending.range(..n)).await {
            Ok(replies) => {
                if failing {
                    tracing::info!("Redis takes broadcasts again: kept ones published");
                    failing = false;
                }
                pause = RECONNECT_MIN;
                for (o, (id, receivers)) in pending.drain(..n).zip(replies) {
                    if receivers == 0 && !o.delivered_here {
                        if let Some(id) = log::EntryId::parse(&id) {
                            a.delivered_here.lock().insert(id);
                        }
                        a.deliver_local(&o.stream, &o.payload, None);
                    }
                }
                a.link.set_pending(pending.len());
            }
            Err(e) => {
                if !failing {
                    tracing::warn!(error = %e, broadcasts = pending.len(), "Redis PUBLISH failed: delivering on this node, keeping them for Redis");
                    failing = true;
                }
                a.deliver_kept_here(&mut pending);
                a.link.retries.increment(1);
                a.link.set_pending(pending.len());
                drop(a);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(RETRY_MAX);
            }
        }
    }
}

/// Applies `change` to the wanted set; returns the prefixed channels to add and remove
/// (net of each other).
fn apply(
    adapter: &RedisPubSub,
    wanted: &mut HashSet<Arc<str>>,
    change: InterestChange,
    add: &mut Vec<String>,
    remove: &mut Vec<String>,
) {
    let (InterestChange::Gained(name) | InterestChange::Lost(name)) = &change;
    if adapter.is_own_channel(&adapter.channel(name)) {
        // A stream named like one of the node's own channels (an app's `stream_from` of
        // `__anycable__` or `hearth/control`): those are listened to for the link's whole
        // life, and the last such subscriber leaving must not UNSUBSCRIBE the node.
        return;
    }
    match change {
        InterestChange::Gained(name) => {
            let channel = adapter.channel(&name);
            if let Some(i) = remove.iter().position(|c| *c == channel) {
                remove.swap_remove(i);
            } else {
                add.push(channel);
            }
            wanted.insert(name);
        }
        InterestChange::Lost(name) => {
            let channel = adapter.channel(&name);
            if let Some(i) = add.iter().position(|c| *c == channel) {
                add.swap_remove(i);
            } else {
                remove.push(channel);
            }
            wanted.remove(&name);
        }
    }
}

/// The subscriber link: connects, subscribes to everything wanted, then follows messages and
/// interest changes until the link fails; reconnects with a growing pause.
async fn subscriber(
    adapter: std::sync::Weak<RedisPubSub>,
    client: redis::Client,
    mut changes: mpsc::UnboundedReceiver<InterestChange>,
) {
    let mut wanted: HashSet<Arc<str>> = HashSet::new();
    let mut tracker = log::Tracker::default();
    let mut pause = RECONNECT_MIN;
    let mut logged_failure = false;
    loop {
        let connected = tokio::time::timeout(COMMAND_TIMEOUT, client.get_async_pubsub()).await;
        let Some(a) = adapter.upgrade() else {
            return;
        };
        let pubsub = match connected {
            Ok(Ok(pubsub)) => pubsub,
            Ok(Err(e)) => {
                if !logged_failure {
                    tracing::warn!(error = %e, "Redis subscriber cannot connect; retrying");
                    logged_failure = true;
                }
                a.set_up(false);
                drop(a);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(RECONNECT_MAX);
                continue;
            }
            Err(_) => {
                if !logged_failure {
                    tracing::warn!("Redis subscriber connect timed out; retrying");
                    logged_failure = true;
                }
                a.set_up(false);
                drop(a);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(RECONNECT_MAX);
                continue;
            }
        };
        drop(a);
        logged_failure = false;
        pause = RECONNECT_MIN;
        tracker.reconnected();
        match listen(
            &adapter,
            &client,
            pubsub,
            &mut changes,
            &mut wanted,
            &mut tracker,
        )
        .await
        {
            Listen::Stop => return,
            Listen::Lost(reason) => {
                tracing::warn!(reason = %reason, "Redis subscriber link lost; reconnecting");
            }
        }
        if let Some(a) = adapter.upgrade() {
            a.confirmed.lock().clear();
            a.set_up(false);
            a.link.reconnects.increment(1);
        }
        tokio::time::sleep(RECONNECT_MIN).await;
    }
}

enum Listen {
    /// The adapter or its interest source is gone.
    Stop,
    /// The link failed.
    Lost(String),
}

/// Reads the log after the tracker's watermark ([`log::Tracker::backfill`]) on a connection
/// of its own, within [`REPLAY_TIMEOUT`].
async fn replay(
    a: &RedisPubSub,
    client: &redis::Client,
    tracker: &mut log::Tracker,
) -> Result<log::Backfill, String> {
    let listened = a.confirmed.lock().clone();
    let run = async {
        let mut conn = client.get_multiplexed_async_connection().await?;
        tracker.backfill(a, &mut conn, &listened).await
    };
    match tokio::time::timeout(REPLAY_TIMEOUT, run).await {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(e)) => Err(format!("replay from the log failed: {e}")),
        Err(_) => Err("replay from the log timed out".into()),
    }
}

async fn listen(
    adapter: &std::sync::Weak<RedisPubSub>,
    client: &redis::Client,
    pubsub: redis::aio::PubSub,
    changes: &mut mpsc::UnboundedReceiver<InterestChange>,
    wanted: &mut HashSet<Arc<str>>,
    tracker: &mut log::Tracker,
) -> Listen {
    let (mut sink, mut stream) = pubsub.split();
    // Take in what changed while disconnected, then subscribe to everything wanted, then
    // replay what the log holds after the last entry settled here.
    {
        let Some(a) = adapter.upgrade() else {
            return Listen::Stop;
        };
        if tracker.watermark.is_none() {
            // The first link: the log's end, before subscribing, is where this node starts.
            if let Err(e) = replay(&a, client, tracker).await {
                return Listen::Lost(e);
            }
        }
        let (mut add, mut remove) = (Vec::new(), Vec::new());
        while let Ok(change) = changes.try_recv() {
            apply(&a, wanted, change, &mut add, &mut remove);
        }
        let mut channels: Vec<String> = wanted.iter().map(|n| a.channel(n)).collect();
        channels.push(a.anycable_channel.clone());
        channels.push(a.channel(CONTROL_CHANNEL));
        channels.push(a.marks_channel.clone());
        channels.push(a.heartbeat_channel.clone());
        for chunk in channels.chunks(SUBSCRIBE_BATCH) {
            match tokio::time::timeout(COMMAND_TIMEOUT, sink.subscribe(chunk)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Listen::Lost(e.to_string()),
                Err(_) => return Listen::Lost("SUBSCRIBE timed out".into()),
            }
        }
        a.confirmed.lock().extend(channels);
        match replay(&a, client, tracker).await {
            Ok(done) => {
                if done.replayed > 0 {
                    tracing::info!(
                        broadcasts = done.replayed,
                        "replayed what this node missed while its Redis link was down"
                    );
                    a.link.replayed.fetch_add(done.replayed, Ordering::Relaxed);
                    a.link.replayed_total.increment(done.replayed);
                }
                if done.gap {
                    tracing::warn!("the log no longer holds everything this node missed: its clients are told to reconnect and catch up");
                    a.link.gaps.increment(1);
                    a.on_control.apply(&Control::Resync);
                }
            }
            Err(e) => return Listen::Lost(e),
        }
        a.set_up(true);
    }
    let silence = tokio::time::sleep(HEARTBEAT_SILENCE);
    tokio::pin!(silence);
    loop {
        tokio::select! {
            biased;
            change = changes.recv() => {
                let Some(change) = change else {
                    return Listen::Stop;
                };
                let Some(a) = adapter.upgrade() else {
                    return Listen::Stop;
                };
                let (mut add, mut remove) = (Vec::new(), Vec::new());
                apply(&a, wanted, change, &mut add, &mut remove);
                while add.len() + remove.len() < SUBSCRIBE_BATCH {
                    match changes.try_recv() {
                        Ok(change) => apply(&a, wanted, change, &mut add, &mut remove),
                        Err(_) => break,
                    }
                }
                if !add.is_empty() {
                    match tokio::time::timeout(COMMAND_TIMEOUT, sink.subscribe(&add)).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => return Listen::Lost(e.to_string()),
                        Err(_) => return Listen::Lost("SUBSCRIBE timed out".into()),
                    }
                }
                if !remove.is_empty() {
                    match tokio::time::timeout(COMMAND_TIMEOUT, sink.unsubscribe(&remove)).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => return Listen::Lost(e.to_string()),
                        Err(_) => return Listen::Lost("UNSUBSCRIBE timed out".into()),
                    }
                }
                {
                    let mut confirmed = a.confirmed.lock();
                    for c in &remove {
                        confirmed.remove(c);
                    }
                    confirmed.extend(add);
                }
                a.generation.send_modify(|g| *g += 1);
            }
            message = stream.next() => {
                let Some(message) = message else {
                    return Listen::Lost("connection closed".into());
                };
                let Some(a) = adapter.upgrade() else {
                    return Listen::Stop;
                };
                let channel = message.get_channel_name();
                let payload = message.get_payload_bytes();
                if channel == a.heartbeat_channel {
                    tracker.on_other();
                    a.heartbeat_seen(payload);
                    silence
                        .as_mut()
                        .reset(tokio::time::Instant::now() + HEARTBEAT_SILENCE);
                    continue;
                }
                match tracker.on_message(&a.marks_channel, &a.node, channel, payload) {
                    (log::Seen::Deliver(position), _) => {
                        a.receive(channel, payload, position.as_ref());
                    }
                    (log::Seen::Drop, Some(marker)) => {
                        if let (Some(p), Some(stream)) = (
                            &marker.position,
                            marker.channel.strip_prefix(a.prefix.as_str()),
                        ) {
                            a.history.heads.saw(&p.epoch, stream, p.offset);
                        }
                    }
                    (log::Seen::Drop, None) => {}
                }
            }
            () = &mut silence => {
                return Listen::Lost(format!(
                    "no heartbeat through Redis for {} s",
                    HEARTBEAT_SILENCE.as_secs_f32()
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_disconnect_payloads() {
        let d = RemoteDisconnect::parse("abc", br#"{"type":"disconnect","reconnect":false}"#)
            .expect("a disconnect");
        assert_eq!(d.identifier, "abc");
        assert!(!d.reconnect);
        assert_eq!(d.payload(), r#"{"type":"disconnect","reconnect":false}"#);
        let d = RemoteDisconnect::parse("abc", br#"{"type":"disconnect"}"#).expect("default");
        assert!(d.reconnect);
        assert_eq!(RemoteDisconnect::parse("abc", br#"{"type":"other"}"#), None);
        assert_eq!(RemoteDisconnect::parse("abc", b"nope"), None);
        let with_session = RemoteDisconnect {
            identifier: "x".into(),
            reconnect: false,
            session_sha256: Some("00ff".into()),
        };
        assert_eq!(
            RemoteDisconnect::parse("x", with_session.payload().as_bytes()),
            Some(with_session)
        );
    }

    #[test]
    fn control_channel_payloads() {
        for (user_id, digest) in [(7, None), (8, Some("00ff"))] {
            assert_eq!(
                parse_control(sessions_ended_payload(user_id, digest).as_bytes()),
                Some(Control::SessionsEnded {
                    user_id,
                    session_sha256: digest.map(str::to_owned),
                })
            );
        }
        assert_eq!(
            parse_control(access_revoked_payload(&[1, 2]).as_bytes()),
            Some(Control::AccessRevoked {
                user_ids: vec![1, 2]
            })
        );
        for bad in [
            &br#"{"type":"sessions_ended"}"#[..],
            br#"{"type":"sessions_ended","user_id":"7"}"#,
            br#"{"type":"sessions_ended","user_id":7,"session_sha256":1}"#,
            br#"{"type":"other","user_id":7}"#,
            b"nope",
        ] {
            assert_eq!(parse_control(bad), None);
        }
    }
}
