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
//!   (`{"type":"access_revoked","user_ids":[…]}`). Both become a [`Control`] handed to the
//!   handler set with [`Bus::on_control`]: [`Bus::control`] publishes, and every node applies
//!   what it receives, the sender included.
//! - **Local delivery** comes back through the node's own subscription, as in Rails. While the
//!   subscriber link is down, and whenever a `PUBLISH` fails or reaches no subscriber, the
//!   node delivers the broadcast to its own clients directly instead, so the publishing node
//!   keeps working and nothing is delivered twice. The outage is logged, shown by
//!   `hearth_redis_link_up` and by `/up`; on reconnect every live subscription is restored.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

use crate::anycable;
use crate::fanout::interest::{Interest, InterestChange};
use crate::fanout::Fanout;
use crate::metrics::Metrics;
use crate::pubsub::{Bus, Control, ControlHandler, ControlSlot, Health};

/// Hearth's node-to-node control channel (under the channel prefix): revocations, as
/// `{"type":"access_revoked","user_ids":[…]}`.
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
        let adapter = Arc::new(Self {
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
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(COMMAND_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(RECONNECT_MAX);
        let manager = redis::aio::ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| anyhow::anyhow!("Redis connection manager: {e}"))?;
        let publisher = tokio::spawn(publisher(Arc::downgrade(&adapter), manager, outbox_rx));
        let subscriber = tokio::spawn(subscriber(Arc::downgrade(&adapter), client, changes));
        adapter.tasks.lock().extend([publisher, subscriber]);
        Ok(adapter)
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
    fn receive(&self, channel: &str, payload: &[u8]) {
        if channel == self.anycable_channel {
            match anycable::parse_message(payload) {
                Ok(anycable::Message::Publications(publications)) => {
                    for p in publications {
                        self.fanout.broadcast(&p.stream, p.data.as_bytes());
                    }
                }
                Ok(anycable::Message::Disconnect {
                    identifier,
                    reconnect,
                }) => self.apply_disconnect(&identifier, reconnect, None),
                Err(e) => tracing::warn!(error = %e, "dropped a malformed AnyCable publication"),
            }
            return;
        }
        match channel.strip_prefix(self.prefix.as_str()) {
            Some(name) => self.deliver_local(name, payload),
            None => tracing::debug!(channel, "message on a channel without our prefix"),
        }
    }

    /// Delivers a broadcast (or a remote disconnect) to this node's clients only.
    fn deliver_local(&self, name: &str, payload: &[u8]) {
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
        self.fanout.broadcast(name, payload);
    }
}

/// The control channel's payload of an [`Control::AccessRevoked`].
fn access_revoked_payload(user_ids: &[i64]) -> String {
    serde_json::json!({"type": "access_revoked", "user_ids": user_ids}).to_string()
}

/// Parses a control channel message; None for anything else.
fn parse_control(payload: &[u8]) -> Option<Control> {
    let value: serde_json::Value = serde_json::from_slice(payload).ok()?;
    if value.get("type")?.as_str()? != "access_revoked" {
        return None;
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
            self.deliver_local(&stream, &payload);
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
                let disconnect = RemoteDisconnect {
                    identifier: connection_identifier(&self.gid_app, user_id),
                    reconnect,
                    session_sha256,
                };
                let name = internal_channel(&disconnect.identifier);
                self.publish(&name, disconnect.payload().as_bytes());
            }
            Control::AccessRevoked { user_ids } => {
                self.publish(
                    CONTROL_CHANNEL,
                    access_revoked_payload(&user_ids).as_bytes(),
                );
            }
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

    fn stop(&self) {
        for task in self.tasks.lock().drain(..) {
            task.abort();
        }
        self.set_up(false);
    }
}

/// Sends queued broadcasts in order, pipelined; delivers locally those that Redis could not
/// take or that reached no subscriber (this node's own subscription was not in place).
async fn publisher(
    adapter: std::sync::Weak<RedisPubSub>,
    mut manager: redis::aio::ConnectionManager,
    mut outbox: mpsc::UnboundedReceiver<(Box<str>, Bytes)>,
) {
    let mut batch: Vec<(Box<str>, Bytes)> = Vec::with_capacity(PUBLISH_BATCH);
    while let Some(first) = outbox.recv().await {
        batch.push(first);
        while batch.len() < PUBLISH_BATCH {
            match outbox.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let Some(adapter) = adapter.upgrade() else {
            return;
        };
        if !adapter.is_up() {
            for (stream, payload) in batch.drain(..) {
                adapter.deliver_local(&stream, &payload);
            }
            continue;
        }
        let mut pipe = redis::pipe();
        for (stream, payload) in &batch {
            pipe.cmd("PUBLISH")
                .arg(adapter.channel(stream))
                .arg(&payload[..]);
        }
        match pipe.query_async::<Vec<i64>>(&mut manager).await {
            Ok(receivers) => {
                for ((stream, payload), n) in batch.drain(..).zip(receivers) {
                    if n == 0 {
                        adapter.deliver_local(&stream, &payload);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, broadcasts = batch.len(), "Redis PUBLISH failed: delivering on this node only");
                for (stream, payload) in batch.drain(..) {
                    adapter.deliver_local(&stream, &payload);
                }
            }
        }
        batch.clear();
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
        match listen(&adapter, pubsub, &mut changes, &mut wanted).await {
            Listen::Stop => return,
            Listen::Lost(reason) => {
                tracing::warn!(reason = %reason, "Redis subscriber link lost; reconnecting");
            }
        }
        if let Some(a) = adapter.upgrade() {
            a.confirmed.lock().clear();
            a.set_up(false);
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

async fn listen(
    adapter: &std::sync::Weak<RedisPubSub>,
    pubsub: redis::aio::PubSub,
    changes: &mut mpsc::UnboundedReceiver<InterestChange>,
    wanted: &mut HashSet<Arc<str>>,
) -> Listen {
    let (mut sink, mut stream) = pubsub.split();
    // Take in what changed while disconnected, then subscribe to everything wanted.
    {
        let Some(a) = adapter.upgrade() else {
            return Listen::Stop;
        };
        let (mut add, mut remove) = (Vec::new(), Vec::new());
        while let Ok(change) = changes.try_recv() {
            apply(&a, wanted, change, &mut add, &mut remove);
        }
        let mut channels: Vec<String> = wanted.iter().map(|n| a.channel(n)).collect();
        channels.push(a.anycable_channel.clone());
        channels.push(a.channel(CONTROL_CHANNEL));
        for chunk in channels.chunks(SUBSCRIBE_BATCH) {
            match tokio::time::timeout(COMMAND_TIMEOUT, sink.subscribe(chunk)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Listen::Lost(e.to_string()),
                Err(_) => return Listen::Lost("SUBSCRIBE timed out".into()),
            }
        }
        a.confirmed.lock().extend(channels);
        a.set_up(true);
    }
    loop {
        tokio::select! {
            message = stream.next() => {
                let Some(message) = message else {
                    return Listen::Lost("connection closed".into());
                };
                let Some(a) = adapter.upgrade() else {
                    return Listen::Stop;
                };
                a.receive(message.get_channel_name(), message.get_payload_bytes());
            }
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
}
