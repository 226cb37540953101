//! The bus seam: where a payload for a stream goes, which streams this node listens to, and
//! the commands nodes send each other.
//!
//! [`Bus`] is chosen once at start ([`crate::state::AppState::build`]): the in-process
//! [`LocalBus`] (one node holds every subscriber) or the Redis adapter
//! ([`crate::redis_pubsub::RedisPubSub`], several nodes share broadcasts and commands). No
//! module above asks which one it has. A bus carries:
//!
//! - **broadcasts** ([`Bus::publish`], [`Bus::publish_each`]): Action Cable's
//!   `ActionCable.server.broadcast(broadcasting, message)`;
//! - **node-to-node commands** ([`Bus::control`] with a [`Control`]): "close this user's (or
//!   this session's) sockets", "forget what was kept of this user's (or this session's)
//!   connections" and "these users lost access to rooms", applied by every node
//!   (this one included) to its own sockets, by the handler set with [`Bus::on_control`];
//! - **the local interest count** ([`Bus::interest`]): the only way a connection attaches or
//!   detaches a stream, so the Redis adapter `SUBSCRIBE`s a stream's first local subscriber
//!   and `UNSUBSCRIBE`s after its last;
//! - **readiness** ([`Bus::ready`]): resolves once the given streams are listened to (Redis
//!   confirmed the `SUBSCRIBE`), so a `confirm_subscription` is sent after that, as Rails does.
//!
//! [`Broadcaster`] is the narrow handle that handlers, channels and [`crate::broadcasts`]
//! receive instead of the whole server state: the bus plus the two settings an event needs to
//! build its payload and stream name (ActiveSupport's JSON escaping and the GlobalID app name).
//!
//! `publish` takes one stream and one payload and returns nothing the caller must keep, so a
//! later bus can give each publication a stream position (an offset per stream, for reliable
//! delivery) inside the implementation without changing a caller.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures_util::future::BoxFuture;

use bytes::Bytes;

use crate::fanout::interest::Interest;
use crate::fanout::Fanout;
use crate::history::{History, Numbered, Position};
use crate::metrics::Metrics;
use crate::rails::json::{self, JsonEscaping};
use crate::streams::Retention;

/// A command every node applies to its own sockets (centrifuge's `Controller`), sent with
/// [`Bus::control`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Close the user's connections, every one of them or those opened with one session
    /// (sign-out, deactivation, ban, Rails' `remote_connections.where(current_user:)
    /// .disconnect`), with Action Cable's `disconnect` notice (reason `remote`).
    Disconnect {
        /// The user.
        user_id: i64,
        /// Only the connections opened with the session whose token has this SHA-256
        /// (lowercase hex, [`crate::registry::session_digest`]); None for all of them.
        session_sha256: Option<String>,
        /// Whether the client may reconnect.
        reconnect: bool,
    },
    /// A user's sessions ended (all of them, or one: sign-out, deactivation, a ban, a
    /// password change, a remote disconnect): every node forgets what it kept of them (the
    /// `actioncable-v1-ext-json` sessions it could restore, a cable node's cached answers
    /// about the user), whether or not it holds a socket of the user. Sent with every
    /// [`Control::Disconnect`] (which reaches only the nodes holding the user's sockets).
    SessionsEnded {
        /// The user.
        user_id: i64,
        /// Only the session whose token has this SHA-256 (lowercase hex); None for all.
        session_sha256: Option<String>,
    },
    /// Close the connections an app identified with exactly `identifiers` (`--rpc-url`;
    /// AnyCable's remote disconnect, `{"command":"disconnect","payload":{"identifier":…}}`),
    /// with Action Cable's `disconnect` notice (reason `remote`).
    DisconnectIdentifiers {
        /// The app's identifiers, as its `connect` answered them.
        identifiers: String,
        /// Whether the client may reconnect.
        reconnect: bool,
    },
    /// These users lost access to rooms (a membership revoked, a room closed to them or
    /// destroyed): their connections re-check their room subscriptions and drop those no
    /// longer allowed, with `reject_subscription`. Grants send nothing.
    AccessRevoked {
        /// The users, ascending, each once.
        user_ids: Vec<i64>,
    },
    /// This node missed broadcasts it cannot replay (its Redis link was down longer than the
    /// broadcast log reaches): every connection of this node is told to reconnect
    /// (`server_restart`, reconnect allowed), spread over `--drain-spread`, so each client
    /// catches up from its own positions (the room page's refresh and sidebar catch-up, an
    /// `actioncable-v1-ext-json` client's restore and history) instead of silently lacking
    /// them. This node's only: never sent to other nodes.
    Resync,
}

/// Applies a [`Control`] to this node's sockets; set once with [`Bus::on_control`].
pub type ControlHandler = Box<dyn Fn(&Control) + Send + Sync>;

/// How the bus' link to other nodes is, for `GET /up`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Health {
    /// Every subscriber is local: nothing to be linked to.
    Local,
    /// The link to the other nodes is up.
    Linked,
    /// The link is down: broadcasts and commands reach this node's clients only.
    LinkDown,
}

/// A bus link's figures ([`Bus::link_report`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkReport {
    /// The subscriber link is up (its subscriptions in place, its heartbeat arriving).
    pub up: bool,
    /// The last heartbeat's trip through Redis and back to this node, in milliseconds.
    pub lag_ms: u64,
    /// Broadcasts kept because Redis could not take them yet.
    pub pending: usize,
    /// Broadcasts replayed to this node's clients from the log since it started.
    pub replayed: u64,
}

/// The bus (see the module docs): one dynamic call per broadcast, never per subscriber.
pub trait Bus: Send + Sync + std::fmt::Debug {
    /// Delivers `payload` (one JSON value, the `message` of the Action Cable frame) to the
    /// subscribers of `stream`. Returns how many local connections it was queued for within
    /// this call (0 when delivery comes back through a remote link). Must not wait for a
    /// socket.
    fn publish(&self, stream: &str, payload: &[u8]) -> usize;

    /// Delivers `payload` to each stream `next` names, in turn (`next` writes the next name
    /// into the buffer it is given and returns false when there is none; see
    /// [`Fanout::broadcast_each`]). Returns how many local connections it was queued for, in
    /// all. By default one [`Bus::publish`] per stream.
    fn publish_each(&self, next: &mut dyn FnMut(&mut String) -> bool, payload: &[u8]) -> usize {
        let mut stream = String::new();
        let mut reached = 0;
        while next(&mut stream) {
            reached += self.publish(&stream, payload);
        }
        reached
    }

    /// Delivers `payload` to the stream of `family` for each of `ids`, in turn (a post's
    /// unread notice to `user_<id>_unreads` of each member of its room): the same as
    /// [`Bus::publish_each`] over their names ([`Numbered::write`]), which is the default. A
    /// bus that assigns positions gives them by id ([`History::append_numbered`]) instead of
    /// parsing each name back. Returns how many local connections it was queued for, in all.
    fn publish_numbered(&self, family: &Numbered, ids: &[i64], payload: &[u8]) -> usize {
        let mut ids = ids.iter().copied();
        self.publish_each(&mut family.names(move || ids.next()), payload)
    }

    /// Sends `command` to every node, this one included (at once here; through the link
    /// elsewhere, or here only while the link is down).
    fn control(&self, command: Control);

    /// Sets the handler that applies commands to this node's sockets (once; later calls are
    /// ignored). Commands before it is set are dropped.
    fn on_control(&self, handler: ControlHandler);

    /// This node's subscription counts: every attach and detach of a stream goes through it.
    fn interest(&self) -> &Interest;

    /// Resolves once every one of `streams` is listened to (at most a couple of seconds; at
    /// once in process or while the link is down).
    fn ready<'a>(&'a self, streams: &'a [String]) -> BoxFuture<'a, ()>;

    /// A connection of `user_id` opened here: listen to the user's commands (Rails' internal
    /// channel). By default nothing.
    fn user_connected(&self, _user_id: i64) {}

    /// A connection of `user_id` closed here (undoes one [`Bus::user_connected`]).
    fn user_disconnected(&self, _user_id: i64) {}

    /// The link's state, for `GET /up`.
    fn health(&self) -> Health;

    /// The link's figures, for `GET /up`'s headers; None without a link (in process).
    fn link_report(&self) -> Option<LinkReport> {
        None
    }

    /// Stops the bus' background tasks (the server is stopping). By default nothing.
    fn stop(&self) {}
}

/// The in-process bus: every subscriber is a connection of this process; commands are
/// applied here at once. With a [`History`], each broadcast on a stream that is not
/// transient ([`crate::streams::retention`]) is appended to it first (an entry only where the
/// stream keeps them), and its position is stamped on the frames of the subscribers that
/// asked for positions (`actioncable-v1-ext-json`): this bus is where positions are assigned
/// on a single node.
#[derive(Debug)]
pub struct LocalBus {
    fanout: Fanout,
    interest: Interest,
    handler: ControlSlot,
    history: Option<Arc<dyn History>>,
    json: JsonEscaping,
}

/// A once-set [`ControlHandler`] (with a `Debug` that says whether it is set).
#[derive(Default)]
pub struct ControlSlot(OnceLock<ControlHandler>);

impl std::fmt::Debug for ControlSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ControlSlot")
            .field(&self.0.get().is_some())
            .finish()
    }
}

impl ControlSlot {
    /// Sets the handler (once; later calls are ignored).
    pub fn set(&self, handler: ControlHandler) {
        let _ = self.0.set(handler);
    }

    /// Applies `command` with the handler, if one is set.
    pub fn apply(&self, command: &Control) {
        match self.0.get() {
            Some(handler) => handler(command),
            None => tracing::debug!(?command, "a node command before its handler was set"),
        }
    }
}

impl LocalBus {
    /// The bus onto the in-process `fanout` engine.
    pub fn new(fanout: Fanout) -> Self {
        Self {
            fanout,
            interest: Interest::new(),
            handler: ControlSlot::default(),
            history: None,
            json: JsonEscaping::default(),
        }
    }

    /// The bus onto `fanout` that appends every broadcast to `history` and stamps its
    /// position (stream names in the positioned suffix escaped with `json`).
    pub fn with_history(fanout: Fanout, history: Arc<dyn History>, json: JsonEscaping) -> Self {
        Self {
            history: Some(history),
            json,
            ..Self::new(fanout)
        }
    }
}

/// Delivers `payload` on `stream` through `fanout`, first appending it to `history` (when
/// there is one and the stream is not transient) and stamping its position on positioned
/// subscribers' frames: the one delivery path of every bus that assigns or carries positions.
pub fn deliver(
    fanout: &Fanout,
    history: Option<&dyn History>,
    json: JsonEscaping,
    stream: &str,
    payload: &[u8],
) -> usize {
    let position = history.and_then(|history| {
        append(
            history,
            stream,
            payload,
            &mut None,
            crate::history::unix_now(),
        )
    });
    let Some(position) = position else {
        return fanout.broadcast(stream, payload);
    };
    deliver_at(fanout, json, stream, payload, &position)
}

/// Appends a broadcast of `payload` on `stream` at `now` (Unix seconds) to `history` as the
/// stream's retention says ([`crate::streams::retention`]): nothing for a transient stream,
/// a position only, or a position and an entry. The entry's bytes are copied into `shared`
/// once and shared by every stream of one broadcast. Returns the position given, if any.
fn append(
    history: &dyn History,
    stream: &str,
    payload: &[u8],
    shared: &mut Option<Bytes>,
    now: u64,
) -> Option<Position> {
    match crate::streams::retention(stream) {
        Retention::Transient => None,
        Retention::Position => history.append(stream, None, now),
        Retention::Kept => {
            let entry = shared.get_or_insert_with(|| Bytes::copy_from_slice(payload));
            history.append(stream, Some(entry), now)
        }
    }
}

/// Delivers `payload` on `stream` at `position` (assigned already: by [`deliver`], or by
/// another node and carried with the publication).
pub fn deliver_at(
    fanout: &Fanout,
    json: JsonEscaping,
    stream: &str,
    payload: &[u8],
    position: &Position,
) -> usize {
    fanout.broadcast_at(stream, payload, &mut |s| Some(stamp(s, position, json)))
}

/// The positioned suffix of a broadcast on `stream` at `position`, with the position for the
/// held subscriptions that compare it ([`crate::fanout::Connection::hold`]).
fn stamp(stream: &str, position: &Position, json: JsonEscaping) -> crate::fanout::Stamp {
    crate::fanout::Stamp {
        suffix: crate::history::ext_suffix(stream, position, json),
        epoch: position.epoch.clone(),
        offset: position.offset,
    }
}

impl Bus for LocalBus {
    fn publish(&self, stream: &str, payload: &[u8]) -> usize {
        deliver(
            &self.fanout,
            self.history.as_deref(),
            self.json,
            stream,
            payload,
        )
    }

    fn publish_each(&self, next: &mut dyn FnMut(&mut String) -> bool, payload: &[u8]) -> usize {
        let Some(history) = &self.history else {
            return self.fanout.broadcast_each(next, payload);
        };
        // One copy of the payload and one clock read for all the streams.
        let mut shared: Option<Bytes> = None;
        let now = crate::history::unix_now();
        let last: std::cell::RefCell<Option<Position>> = std::cell::RefCell::new(None);
        let mut appending = |stream: &mut String| {
            if !next(stream) {
                return false;
            }
            *last.borrow_mut() = append(history.as_ref(), stream, payload, &mut shared, now);
            true
        };
        let json = self.json;
        self.fanout
            .broadcast_each_at(&mut appending, payload, &mut |s| {
                last.borrow().as_ref().map(|p| stamp(s, p, json))
            })
    }

    /// Positions by id, given first for every member ([`History::append_numbered`]: a
    /// table's atomic add each, no name, no lock), the epoch read once and only for the stamp
    /// of a stream with positioned subscribers; the engine names and looks up only the
    /// members' streams it holds ([`Fanout::broadcast_numbered_at`]). A family of another
    /// retention than [`Retention::Position`] goes the way of [`Bus::publish_each`].
    fn publish_numbered(&self, family: &Numbered, ids: &[i64], payload: &[u8]) -> usize {
        let history = self.history.as_deref();
        if history.is_some() && !crate::streams::MARKS.contains(family) {
            let mut ids = ids.iter().copied();
            return self.publish_each(&mut family.names(move || ids.next()), payload);
        }
        let mut offsets = Vec::new();
        if let Some(history) = history {
            offsets.reserve_exact(ids.len());
            history.append_numbered(family, ids, crate::history::unix_now(), &mut offsets);
        }
        let offset: std::cell::Cell<u64> = std::cell::Cell::new(0);
        let mut ids = ids.iter();
        let mut offsets = offsets.into_iter();
        let mut next_id = || {
            let id = *ids.next()?;
            offset.set(offsets.next().unwrap_or(0));
            Some(id)
        };
        let json = self.json;
        let epoch: OnceLock<Arc<str>> = OnceLock::new();
        self.fanout
            .broadcast_numbered_at(family, &mut next_id, payload, &mut |stream| {
                let history = history?;
                let position = Position {
                    epoch: epoch.get_or_init(|| history.epoch()).clone(),
                    offset: Some(offset.get()).filter(|&o| o > 0)?,
                };
                Some(stamp(stream, &position, json))
            })
    }

    fn control(&self, command: Control) {
        self.handler.apply(&command);
    }

    fn on_control(&self, handler: ControlHandler) {
        self.handler.set(handler);
    }

    fn interest(&self) -> &Interest {
        &self.interest
    }

    fn ready<'a>(&'a self, _streams: &'a [String]) -> BoxFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    fn health(&self) -> Health {
        Health::Local
    }
}

/// The delivery handle: the bus chosen at start and what sits on it, cloned into every
/// handler that broadcasts, attaches a connection or reads a stream's history.
#[derive(Clone)]
pub struct Delivery {
    /// The bus, chosen once at start: in process ([`LocalBus`]), or the Redis adapter with
    /// `--pubsub redis` (broadcasts, node-to-node commands, the local interest count).
    pub bus: Arc<dyn Bus>,
    /// Where events are broadcast (onto [`Self::bus`]).
    pub broadcaster: Broadcaster,
    /// Every stream's recent broadcasts and their positions (`--history-limit`,
    /// `--history-ttl`): read by the `history` command and the room page's catch-up.
    pub history: Arc<dyn History>,
    /// The fan-out engine (cable connections attach to it).
    pub fanout: Fanout,
    /// ActiveSupport's JSON escaping settings for frames.
    pub json: JsonEscaping,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("broadcaster", &self.broadcaster)
            .field("json", &self.json)
            .finish_non_exhaustive()
    }
}

/// Sends already-encoded payloads to streams. Cheap to clone (two `Arc`s, an app name and a
/// flag pair).
#[derive(Clone, Debug)]
pub struct Broadcaster {
    sink: Arc<dyn Bus>,
    json: JsonEscaping,
    gid_app: Arc<str>,
    metrics: Arc<Metrics>,
}

impl Broadcaster {
    /// A broadcaster onto the in-process `fanout` engine ([`LocalBus`]). `gid_app` is the
    /// GlobalID app name of stream names (`gid://<app>/…`, `--gid-app`); `json` the escaping
    /// of every JSON string it encodes; `metrics` records each event's duration.
    pub fn new(fanout: Fanout, json: JsonEscaping, gid_app: &str, metrics: Arc<Metrics>) -> Self {
        Self::with_sink(Arc::new(LocalBus::new(fanout)), json, gid_app, metrics)
    }

    /// A broadcaster onto any [`Bus`] (the Redis adapter, a test's recorder).
    pub fn with_sink(
        sink: Arc<dyn Bus>,
        json: JsonEscaping,
        gid_app: &str,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            sink,
            json,
            gid_app: gid_app.into(),
            metrics,
        }
    }

    /// The bus this broadcaster publishes on.
    pub fn bus(&self) -> &Arc<dyn Bus> {
        &self.sink
    }

    /// Sends `payload` (one JSON value, the `message` of the Action Cable frame) to every
    /// subscriber of `stream`. Returns the number of local connections it was queued for;
    /// never waits for a socket.
    pub fn broadcast(&self, stream: &str, payload: &[u8]) -> usize {
        self.sink.publish(stream, payload)
    }

    /// Sends `payload` to each stream `next` names ([`Bus::publish_each`]): the same as one
    /// [`Self::broadcast`] per stream, with one frame built for all of them locally.
    pub fn broadcast_each(
        &self,
        next: &mut dyn FnMut(&mut String) -> bool,
        payload: &[u8],
    ) -> usize {
        self.sink.publish_each(next, payload)
    }

    /// Sends `payload` to the stream of `family` for each of `ids` ([`Bus::publish_numbered`]:
    /// a post's unread notice to each member of its room).
    pub fn broadcast_numbered(&self, family: &Numbered, ids: &[i64], payload: &[u8]) -> usize {
        self.sink.publish_numbered(family, ids, payload)
    }

    /// Sends `text` as a JSON string (ActiveSupport escaping), as turbo-rails'
    /// `broadcast_*_to` does with rendered HTML. Returns what [`Self::broadcast`] returns.
    pub fn broadcast_string(&self, stream: &str, text: &str) -> usize {
        let payload = json::json_string(text, self.json);
        self.broadcast(stream, payload.as_bytes())
    }

    /// ActiveSupport's JSON escaping settings for payloads.
    pub fn json(&self) -> JsonEscaping {
        self.json
    }

    /// The GlobalID app name of stream names (`gid://<app>/…`).
    pub fn gid_app(&self) -> &str {
        &self.gid_app
    }

    /// Runs `f`'s broadcasts as one delivery pass of the local engine
    /// ([`crate::fanout::one_pass`]): each connection's writer wakes once, after all of them
    /// are queued. A sink that is not
    /// local (Redis) publishes as usual.
    pub fn one_pass<R>(&self, f: impl FnOnce() -> R) -> R {
        crate::fanout::one_pass(f)
    }

    /// Records how long one event's broadcasts took (`hearth_broadcast_duration_seconds`).
    pub fn record_duration(&self, elapsed: Duration) {
        self.metrics.broadcast_finished(elapsed);
    }
}

/// Every revocation a membership write reports ([`crate::db::memberships`]) goes to every
/// node as [`Control::AccessRevoked`].
impl crate::db::memberships::MembershipObserver for Broadcaster {
    fn access_revoked(&self, user_ids: &[i64]) {
        self.sink.control(Control::AccessRevoked {
            user_ids: user_ids.to_vec(),
        });
    }
}
