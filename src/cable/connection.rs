//! One Action Cable connection, from the socket handed over by the upgrade to its close.
//!
//! The welcome (or the `unauthorized` disconnect) is written straight to the socket before the
//! fan-out engine takes the write half over, so it is always the first frame. After that, this
//! task reads client frames (a well-kept WebSocket reader: masked, fragmented, control frames
//! interleaved) and applies commands strictly in the order they arrived; everything it sends
//! goes through the engine's queue for this connection.
//!
//! A subscribe attaches the subscription's streams first and queues `confirm_subscription`
//! after, so no broadcast after the confirm can be missed (Rails: `ensure_confirmation_sent`).
//! The confirm (or reject) is queued without waking the writer (`Connection::send_deferred`); the
//! read loop wakes it once no further client frame is readable at once, so the subscribe
//! commands a page sends together when its socket opens are answered in one write.
//!
//! History (`actioncable-v1-ext-json`): a subscription whose history is about to be sent (a
//! subscribe with a `history` request, a restored session's subscriptions until the client's
//! `history` command, a `history` command) is held in the fan-out engine
//! ([`Connection::hold`]): its live broadcasts are kept aside while the history is read and
//! sent, then those after the last entry sent follow, and none at or before it is sent later.
//! So the client sees each position once and in order, though the subscription was attached
//! before the history was read (as it must be, or what is broadcast between the two is lost).
//! A restored subscription the client asks no history for is let go after [`RESTORE_HOLD`].
//!
//! Memory: an idle connection's task holds the reader (no buffer until a frame arrives, see
//! `reader.rs`) and the wait on its signals. The database work of a command (subscribe,
//! perform, a membership re-check, the final unsubscribes) runs in a boxed future allocated
//! for that command only: a task's future is one allocation sized for its largest state, so
//! that work kept inline would make every idle connection carry it.
//!
//! Beside the reader, the task waits on its registry [`Signal`]: when the user's
//! memberships change (a room closed to them, a membership revoked, a room destroyed), it
//! re-checks every room-scoped subscription against the database and drops those no longer
//! allowed at once: their streams are detached, the channel's `unsubscribed` runs, and the
//! client gets `reject_subscription` for the identifier (which `@rails/actioncable` handles
//! by forgetting the subscription). Campfire reaches the same end by disconnecting the user
//! (`reset_remote_connections`); here the connection's other subscriptions stay.

use crate::metrics::Metrics;
use crate::pubsub::Delivery;
use crate::registry::Sockets;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod app;
mod peer;

use super::channels::host::{AppSession, ChannelHost, Who};
use super::channels::{self, Outcome, Subscribed};
use super::deflate::{Agreed, Inflater};
use super::protocol::{self, close_code, Command};
use super::reader::{Inbound, MessageReader};
use super::CableHandles;
use crate::db::users::User;
use crate::fanout::frame::Frame;
use crate::fanout::{Connection, Variant};
use crate::loggable::loggable;
use crate::rate_limit::{Action, Client, TokenBucket};
use crate::registry::Signal;

/// How long a connection refused for a bad message keeps draining the client's input after
/// its close frame, before the socket is dropped.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a restored session's subscriptions hold their live broadcasts for the client's
/// `history` command (`@anycable/core` sends it right after the welcome); past it, what was
/// held is sent as it is.
pub const RESTORE_HOLD: std::time::Duration = std::time::Duration::from_secs(2);

/// Typing notices (`start`/`stop`) one connection may send at once; past it and the rate
/// below, the excess is dropped (Campfire's client sends `start` at most once a second).
/// Past these per-connection budgets, `--typing-rate-limit` and `--presence-rate-limit` hold
/// all of a user's connections together.
pub const TYPING_BURST: u32 = 5;
/// Typing notices per second one connection may send past [`TYPING_BURST`].
pub const TYPING_PER_SECOND: f64 = 2.0;
/// Presence actions (`present`/`absent`/`refresh`) one connection may send at once; past it
/// and the rate below, the excess still updates the tab's state (which
/// [`crate::presence`] coalesces into membership writes) but sends no read notice (Campfire's
/// client sends one action every 50 s, and one per visibility change).
pub const PRESENCE_BURST: u32 = 10;
/// Presence actions per second one connection may send past [`PRESENCE_BURST`].
pub const PRESENCE_PER_SECOND: f64 = 1.0;

/// A subscription of this connection.
#[derive(Debug)]
struct Subscription {
    subscribed: Subscribed,
}

/// What an `actioncable-v1-ext-json` connection brings ([`run`]).
#[derive(Debug)]
pub struct Extended {
    /// This connection's session id (its welcome's `sid`).
    pub sid: String,
    /// The session it restores (`?sid=` matched a stored one): its subscriptions are attached
    /// again without the channels being asked.
    pub restored: Option<crate::resumable::StoredSession>,
}

/// Runs a connection to its end. `leftover` holds bytes the HTTP layer read past the
/// handshake (a client may send its first command in the same packet). `extended` is Some
/// for an `actioncable-v1-ext-json` connection; `deflate` is Some when the handshake agreed to
/// permessage-deflate (RFC 7692, [`super::deflate::negotiate`]): the connection's
/// subscriptions then get their broadcasts compressed (variants [`Variant::deflated`]), and
/// its compressed messages are inflated.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    state: CableHandles,
    host: Arc<dyn ChannelHost>,
    stream: TcpStream,
    leftover: Bytes,
    user: Option<User>,
    session_token: Option<String>,
    extended: Option<Extended>,
    deflate: Option<Agreed>,
    app: Option<crate::rpc::ConnectContext>,
) {
    let _ = stream.set_nodelay(true);
    let (read_half, mut write_half) = stream.into_split();
    let read_half = peer::SharedRead::new(read_half);
    let app = app_session(
        &state.metrics,
        host.as_ref(),
        app,
        user.is_some(),
        &read_half,
    )
    .await;
    let (app, app_frames) = match app {
        Ok(accepted) => accepted,
        Err(None) => return,
        Err(Some(refusal)) => {
            refuse(read_half, write_half, refusal).await;
            return;
        }
    };
    let restored = restored_subscriptions(extended.as_ref());
    let opening = opening(
        &state.delivery,
        user.is_some(),
        extended.as_ref(),
        &restored,
        &app_frames,
    );
    if write_half.write_all(&opening).await.is_err() {
        return;
    }
    state.metrics.connection_opened();
    let user_id = user.as_ref().map(|u| u.id);
    let kept_token = session_token.clone();
    let identifiers = app.as_ref().map(|a| a.identifiers.clone());
    let (conn, revoked) = enter(
        &state.delivery,
        &state.sockets,
        write_half,
        user_id,
        session_token,
        identifiers,
    );
    let mut reader = Reader {
        state: state.clone(),
        host,
        user,
        app,
        conn: conn.clone(),
        revoked,
        subscriptions: HashMap::new(),
        typing_budget: TokenBucket::new(TYPING_BURST, TYPING_PER_SECOND, Instant::now()),
        presence_budget: TokenBucket::new(PRESENCE_BURST, PRESENCE_PER_SECOND, Instant::now()),
        warnings: TokenBucket::new(WARNING_BURST, WARNINGS_PER_SECOND, Instant::now()),
        warnings_dropped: 0,
        sid: extended.map(|e| e.sid),
        ended_by_peer: false,
        held: Vec::new(),
        release_at: None,
        deflate,
        peer: read_half.clone(),
        app_gone: false,
    };
    if !restored.is_empty() {
        reader.attach_restored(restored).await;
    }
    reader.read_loop(read_half, leftover).await;
    reader.keep_session(kept_token);
    // Boxed, like every command below: the task's future is sized for its largest state, so
    // rare database work kept inline would make every idle connection pay for it.
    Box::pin(reader.unsubscribe_all()).await;
    forget(&state.delivery, &state.sockets, &conn, user_id);
}

/// The first bytes of an accepted connection: Campfire's welcome then what the app sent
/// beside its own welcome (`campfire`: a Campfire session identified it), or the app's
/// transmissions as they are (its welcome among them).
fn opening(
    delivery: &Delivery,
    campfire: bool,
    extended: Option<&Extended>,
    restored: &[(Arc<str>, Subscribed)],
    app_frames: &[String],
) -> Vec<u8> {
    if !campfire {
        return app::frames(app_frames, false);
    }
    let mut bytes = Frame::text(&welcome(delivery, extended, restored))
        .0
        .to_vec();
    bytes.extend(app::frames(app_frames, true));
    bytes
}

/// The start of an accepted connection: the fan-out engine takes its write half over, it
/// enters the registry (its Signal is returned), and the user's commands reach this node
/// (Rails' `Connection::InternalChannel#subscribe_to_internal_channel`).
fn enter(
    delivery: &Delivery,
    sockets: &Sockets,
    write_half: tokio::net::tcp::OwnedWriteHalf,
    user_id: Option<i64>,
    session_token: Option<String>,
    identifiers: Option<Arc<str>>,
) -> (Connection, Signal) {
    let conn = match user_id {
        Some(id) => delivery
            .fanout
            .attach_owned(write_half, u64::try_from(id).unwrap_or(u64::MAX)),
        None => delivery.fanout.attach(write_half),
    };
    let revoked = sockets
        .registry
        .register(user_id, session_token, identifiers, conn.clone());
    if let Some(id) = user_id {
        delivery.bus.user_connected(id);
    }
    (conn, revoked)
}

/// The end of a connection: it leaves the registry, the user's commands are let go for it
/// (`user_connected`'s counterpart), and its socket is dropped.
fn forget(delivery: &Delivery, sockets: &Sockets, conn: &Connection, user_id: Option<i64>) {
    sockets.registry.deregister(conn.id());
    if let Some(id) = user_id {
        delivery.bus.user_disconnected(id);
    }
    if !conn.is_closed() {
        conn.abort();
    }
}

/// Asks the app's `connect` when `ctx` is given (`--rpc-url`): the app's session (None when
/// there is no app, or it refused a connection Campfire identified, `campfire`) and its
/// transmissions. Err with the last bytes to write when nobody identified the connection
/// (counted as rejected); Err(None) when the client left while the app was asked (the call is
/// abandoned, see `peer`).
async fn app_session(
    metrics: &Metrics,
    host: &dyn ChannelHost,
    ctx: Option<crate::rpc::ConnectContext>,
    campfire: bool,
    peer: &peer::SharedRead,
) -> Result<(Option<AppSession>, Vec<String>), Option<Vec<u8>>> {
    let connected = match ctx {
        Some(ctx) => tokio::select! {
            biased;
            connected = app::connect(host, ctx) => Some(connected),
            () = peer.peer_closed() => return Err(None),
        },
        None => None,
    };
    match connected {
        Some(app::Connected::Accepted(session, frames)) => Ok((Some(session), frames)),
        // The app could not answer (down, slow, a bad answer): not a refusal of the client.
        Some(app::Connected::Failed) if !campfire => {
            tracing::warn!("Closing a connection: the app's connect could not be answered");
            Err(Some(app::refusal(Some(&app::Connected::Failed))))
        }
        refused if !campfire => {
            metrics.connection_rejected();
            tracing::info!("An unauthorized connection attempt was rejected");
            Err(Some(app::refusal(refused.as_ref())))
        }
        _ => Ok((None, Vec::new())),
    }
}

/// A restored session's subscriptions, as the channels resolved them when they were made
/// (Presence is never stored: its client subscribes again, which marks it present).
fn restored_subscriptions(extended: Option<&Extended>) -> Vec<(Arc<str>, Subscribed)> {
    extended
        .and_then(|e| e.restored.as_ref())
        .map(|r| {
            r.subscriptions
                .iter()
                .filter_map(|(id, json)| {
                    Some((Arc::from(id.as_str()), serde_json::from_str(json).ok()?))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The welcome of a Campfire connection: Rails', or the extended protocol's (with the
/// restored subscriptions' identifiers).
fn welcome(
    delivery: &Delivery,
    extended: Option<&Extended>,
    restored: &[(Arc<str>, Subscribed)],
) -> Vec<u8> {
    match extended {
        None => protocol::WELCOME.to_vec(),
        Some(Extended {
            sid,
            restored: Some(_),
        }) => {
            let ids: Vec<Arc<str>> = restored.iter().map(|(id, _)| id.clone()).collect();
            protocol::welcome_restored(sid, &ids, delivery.json)
        }
        Some(Extended { sid, .. }) => protocol::welcome_ext(sid),
    }
}

/// Refuses a connection: writes `bytes` (its last frames, a close among them), then waits a
/// little for the client's close (or EOF) so the close handshake completes.
async fn refuse(
    read_half: peer::SharedRead,
    mut write_half: tokio::net::tcp::OwnedWriteHalf,
    bytes: Vec<u8>,
) {
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        let _ = write_half.write_all(&bytes).await;
        let _ = write_half.shutdown().await;
        let mut sink = [0u8; 512];
        let mut rd = read_half;
        while let Ok(n) = rd.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

struct Reader {
    state: CableHandles,
    /// Where the channels run (here, or on the app node).
    host: Arc<dyn ChannelHost>,
    /// The Campfire user (`current_user`), when a Campfire session identified the connection.
    user: Option<User>,
    /// The app's connection, when the app's `connect` accepted it (`--rpc-url`).
    app: Option<AppSession>,
    conn: Connection,
    revoked: Signal,
    subscriptions: HashMap<Arc<str>, Subscription>,
    /// `TypingNotificationsChannel` actions this connection may still send.
    typing_budget: TokenBucket,
    /// `PresenceChannel` actions this connection may still send.
    presence_budget: TokenBucket,
    /// Warnings about this connection's commands that may still be logged.
    warnings: TokenBucket,
    /// Warnings not logged since the last one that was.
    warnings_dropped: u64,
    /// The session id of an `actioncable-v1-ext-json` connection; None for
    /// `actioncable-v1-json`.
    sid: Option<String>,
    /// Whether the client ended the connection (EOF, a reset, its close frame) rather than
    /// the server.
    ended_by_peer: bool,
    /// Restored subscriptions held for the client's `history` command (see the module docs).
    held: Vec<Arc<str>>,
    /// When the `held` ones are let go without one.
    release_at: Option<tokio::time::Instant>,
    /// What the handshake agreed of permessage-deflate (RFC 7692), if anything.
    deflate: Option<Agreed>,
    /// The client's side of the socket, for its close while an app's call is pending.
    peer: peer::SharedRead,
    /// Whether the connection was found over while an app's call was pending: no further
    /// command is sent to the app for it (see `peer`).
    app_gone: bool,
}

/// Warnings one connection's bad commands may log at once, then [`WARNINGS_PER_SECOND`]; the
/// rest are counted and the count is logged with the next warning let through, so a client
/// sending garbage in a loop cannot fill the log.
const WARNING_BURST: u32 = 10;
/// See [`WARNING_BURST`].
const WARNINGS_PER_SECOND: f64 = 1.0;

impl Reader {
    /// Whether a warning about this connection's commands may be logged now (see
    /// [`WARNING_BURST`]); logs how many were held back before one that may.
    fn may_warn(&mut self) -> bool {
        if !self.warnings.try_take(Instant::now()) {
            self.warnings_dropped += 1;
            return false;
        }
        if self.warnings_dropped > 0 {
            tracing::warn!(
                dropped = self.warnings_dropped,
                "Cable warnings of this connection were not logged (rate limit)"
            );
            self.warnings_dropped = 0;
        }
        true
    }

    async fn read_loop(&mut self, read_half: peer::SharedRead, leftover: Bytes) {
        let mut source = std::io::Cursor::new(leftover).chain(read_half);
        let mut reader = MessageReader::new(&mut source, self.state.config.max_message_bytes)
            .inflating(self.deflate.as_ref().map(Inflater::new));
        let replies = self.conn.clone();
        let refused = loop {
            // The read future lives across revocation signals (a WebSocket read is not
            // cancel-safe): a signal is handled between polls of the same read.
            let inbound = {
                let mut read = std::pin::pin!(reader.read());
                // Subscribe replies are queued deferred (`send_deferred`): the writer is woken once no
                // further command is readable at once, so commands that arrived together (a
                // page's subscriptions) have their replies written in one write.
                let mut read = std::future::poll_fn(|cx| {
                    let polled = read.as_mut().poll(cx);
                    if polled.is_pending() {
                        replies.wake_deferred();
                    }
                    polled
                });
                loop {
                    let release_at = self.release_at;
                    tokio::select! {
                        biased;
                        _ = self.conn.closed() => return,
                        _ = self.revoked.access_revoked() => Box::pin(self.recheck()).await,
                        // Boxed: the timer exists only while a restore holds, and never
                        // weighs on an idle connection's task.
                        () = async move {
                            match release_at {
                                Some(at) => Box::pin(tokio::time::sleep_until(at)).await,
                                None => std::future::pending().await,
                            }
                        } => self.release_held(),
                        inbound = &mut read => break inbound,
                    }
                }
            };
            match inbound {
                Ok(Inbound::Text(text)) => Box::pin(self.handle_text(&text)).await,
                Ok(Inbound::Binary(_)) => {
                    if self.may_warn() {
                        tracing::warn!("Couldn't handle non-string message");
                    }
                }
                Ok(Inbound::Ping(payload)) => {
                    self.conn.send(Frame::pong(&payload));
                }
                Ok(Inbound::Close(code)) => {
                    self.ended_by_peer = true;
                    return self.close_with_code(code.unwrap_or(close_code::NORMAL));
                }
                Err(e) => {
                    tracing::debug!(error = %e, "cable read ended");
                    match e.close_code() {
                        Some(code) => {
                            self.close_with_code(code);
                            break true;
                        }
                        None => {
                            self.ended_by_peer = !self.conn.is_closed();
                            return;
                        }
                    }
                }
            }
        };
        drop(reader);
        if refused {
            // Keep reading (and dropping) what the client still sends, for a short while, so
            // that closing the socket with unread input does not reset the connection before
            // the client has read the close frame.
            let _ = tokio::time::timeout(LINGER, async {
                let mut sink = vec![0u8; 16 * 1024];
                while let Ok(n) = source.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
            })
            .await;
        }
    }

    fn close_with_code(&self, code: u16) {
        self.conn.close(&[Frame::close(code, "")]);
    }

    /// Who the Campfire channels' calls are for; None on a connection only the app identified
    /// (Campfire's channels then reject it).
    fn who(&self) -> Option<Who<'_>> {
        Some(Who {
            user: self.user.as_ref()?,
            connection_id: self.conn.id(),
        })
    }

    /// Attaches a restored session's subscriptions again, held until the client's `history`
    /// command (see the module docs).
    async fn attach_restored(&mut self, restored: Vec<(Arc<str>, Subscribed)>) {
        let interest = self.state.delivery.bus.interest();
        for (identifier, subscribed) in restored {
            let variant = self.variant(&identifier);
            for stream in &subscribed.streams {
                self.conn.hold(stream, &variant.key);
                interest.subscribe(&self.conn, stream, &variant);
            }
            self.held.push(identifier.clone());
            self.state.delivery.bus.ready(&subscribed.streams).await;
            self.subscriptions
                .insert(identifier, Subscription { subscribed });
        }
        self.release_at = Some(tokio::time::Instant::now() + RESTORE_HOLD);
        self.state.metrics.session_restored();
    }

    /// Keeps an extended-protocol Campfire session the client ended by itself (a dropped
    /// network, a closed tab): it may come back with this sid. Closed by the server (sign-out,
    /// ban, too slow, a restart), it may not. The app's subscriptions are not kept: the app
    /// is asked again on a reconnect.
    fn keep_session(&self, session_token: Option<String>) {
        let (Some(sid), Some(user)) = (self.sid.as_deref(), self.user.as_ref()) else {
            return;
        };
        if !self.ended_by_peer {
            return;
        }
        let subscriptions = self
            .subscriptions
            .iter()
            .filter(|(_, sub)| {
                !matches!(
                    sub.subscribed.channel,
                    channels::Channel::Presence(_) | channels::Channel::App(_)
                )
            })
            .filter_map(|(id, sub)| {
                Some((id.to_string(), serde_json::to_string(&sub.subscribed).ok()?))
            })
            .collect();
        self.state.sockets.sessions.keep(
            sid,
            crate::resumable::StoredSession {
                user: user.clone(),
                session_token,
                subscriptions,
            },
        );
    }

    /// The fan-out variant of this connection's subscription of `identifier` (compressed
    /// frames when the connection agreed to permessage-deflate).
    fn variant(&self, identifier: &Arc<str>) -> Variant {
        let variant = match self.sid {
            Some(_) => protocol::ext_variant(identifier, self.state.delivery.json),
            None => protocol::variant(identifier, self.state.delivery.json),
        };
        variant.deflated(self.deflate.map(|d| d.server))
    }

    /// The fan-out variant key of this connection's subscription of `identifier` (that of
    /// [`Reader::variant`]).
    fn variant_key(&self, identifier: &Arc<str>) -> Arc<str> {
        let key = match self.sid {
            Some(_) => protocol::ext_key(identifier),
            None => identifier.clone(),
        };
        match self.deflate {
            Some(agreed) => agreed.server.key(&key),
            None => key,
        }
    }

    async fn handle_text(&mut self, text: &str) {
        if self.sid.is_some() {
            match protocol::parse_ext(text) {
                Some(protocol::ExtCommand::Pong) => return,
                Some(protocol::ExtCommand::History {
                    identifier,
                    request,
                }) => {
                    match request {
                        Some(request) => Box::pin(self.history(&identifier, &request)).await,
                        None => {
                            if self.may_warn() {
                                tracing::warn!("Could not execute command: malformed history");
                            }
                        }
                    }
                    return;
                }
                None => {}
            }
        }
        let command = match protocol::parse_command(text) {
            Ok(c) => c,
            Err(e) => {
                if self.may_warn() {
                    // The error quotes the client's text (an unknown command as sent).
                    tracing::warn!(error = %loggable(&e.to_string()), "Could not execute command");
                }
                return;
            }
        };
        let result = match command {
            Command::Subscribe { identifier } => {
                let asked = self
                    .sid
                    .as_ref()
                    .and_then(|_| protocol::subscribe_history(text));
                let result = self.subscribe(identifier.clone(), asked.is_some()).await;
                if let Some(request) = asked {
                    if self.subscriptions.contains_key(&identifier) {
                        Box::pin(self.history(&identifier, &request)).await;
                    }
                }
                result
            }
            Command::Unsubscribe { identifier } => self.unsubscribe(&identifier).await,
            Command::Message { identifier, data } => self.perform(&identifier, &data).await,
        };
        if let Err(e) = result {
            if self.may_warn() {
                tracing::warn!(error = %loggable(&e.to_string()), "Could not execute command");
            }
        }
    }

    /// Lets the restored subscriptions still held go (the client asked no history for them
    /// within [`RESTORE_HOLD`]): what was held is sent.
    fn release_held(&mut self) {
        self.release_at = None;
        for identifier in std::mem::take(&mut self.held) {
            let Some(sub) = self.subscriptions.get(&identifier) else {
                continue;
            };
            let key = self.variant_key(&identifier);
            for stream in &sub.subscribed.streams {
                self.conn.release(stream, &key, None);
            }
        }
    }

    /// Runs a `subscribe`; `hold`: its history is sent next, so its live broadcasts are held
    /// from the attach on (see the module docs).
    async fn subscribe(&mut self, identifier: Arc<str>, hold: bool) -> anyhow::Result<()> {
        if self.subscriptions.contains_key(&identifier) {
            // Rails ignores a duplicate subscribe silently (no second confirm).
            return Ok(());
        }
        if identifier.len() > self.state.config.max_identifier_bytes {
            if self.may_warn() {
                tracing::warn!(
                    bytes = identifier.len(),
                    limit = self.state.config.max_identifier_bytes,
                    "Subscription refused: identifier too long"
                );
            }
            self.conn.send_deferred(Frame::text(&protocol::reject(
                &identifier,
                self.state.delivery.json,
            )));
            return Ok(());
        }
        if self.subscriptions.len() >= self.state.config.max_subscriptions {
            if self.may_warn() {
                tracing::warn!(
                    limit = self.state.config.max_subscriptions,
                    "Subscription refused: too many subscriptions on this connection"
                );
            }
            self.conn.send_deferred(Frame::text(&protocol::reject(
                &identifier,
                self.state.delivery.json,
            )));
            return Ok(());
        }
        let Some((channel, params)) = protocol::identifier_params(&identifier) else {
            anyhow::bail!(
                "identifier is not a JSON object with a channel: {}",
                loggable(&identifier)
            );
        };
        if self.host.is_app_channel(&channel) {
            return self.app_subscribe(identifier, hold).await;
        }
        let escaping = self.state.delivery.json;
        let outcome = match self.channel_subscribe(&identifier, &channel, params).await {
            Ok(outcome) => outcome,
            Err(e) => {
                // The app node is stopped or slow (a bounded wait), or the database failed:
                // the client is told at once instead of waiting for a confirm forever.
                // The error may quote the client's identifier or parameters (an app node's answer).
                tracing::warn!(
                    error = %loggable(&e.to_string()),
                    channel = loggable(&channel),
                    "Subscription refused: the channel could not decide"
                );
                self.conn
                    .send_deferred(Frame::text(&protocol::reject(&identifier, escaping)));
                return Ok(());
            }
        };
        match outcome {
            Outcome::Confirm(subscribed) => {
                let variant = self.variant(&identifier);
                let interest = self.state.delivery.bus.interest();
                for stream in &subscribed.streams {
                    if hold {
                        self.conn.hold(stream, &variant.key);
                    } else if variant.positioned {
                        // Notes what it is sent live, so a later `history` repeats none of it.
                        self.conn.track(stream, &variant.key);
                    }
                    interest.subscribe(&self.conn, stream, &variant);
                }
                self.state.delivery.bus.ready(&subscribed.streams).await;
                self.conn
                    .send_deferred(Frame::text(&protocol::confirm(&identifier, escaping)));
                self.subscriptions
                    .insert(identifier, Subscription { subscribed });
            }
            Outcome::Reject => {
                self.conn
                    .send_deferred(Frame::text(&protocol::reject(&identifier, escaping)));
            }
            Outcome::UnknownChannel => {
                if self.may_warn() {
                    tracing::warn!("Subscription class not found: {}", loggable(&channel));
                }
            }
        }
        Ok(())
    }

    async fn unsubscribe(&mut self, identifier: &Arc<str>) -> anyhow::Result<()> {
        let Some(sub) = self.subscriptions.remove(identifier) else {
            anyhow::bail!(
                "Unable to find subscription with identifier: {}",
                loggable(identifier)
            );
        };
        let interest = self.state.delivery.bus.interest();
        let key = self.variant_key(identifier);
        for stream in &sub.subscribed.streams {
            interest.unsubscribe(&self.conn, stream, &key);
        }
        if let channels::Channel::App(istate) = &sub.subscribed.channel {
            return self.app_unsubscribe(identifier, istate).await;
        }
        self.channel_unsubscribed(&sub.subscribed).await
    }

    /// Answers an extended-protocol `history` request for the subscription `identifier`
    /// (AnyCable's `Node#History`): for each of its streams, the entries after the client's
    /// offset (or since its time), sent as positioned broadcasts, then `confirm_history`; or
    /// only `reject_history` when the history no longer covers one of them. The subscription's
    /// live broadcasts are held meanwhile and follow the entries, each offset once.
    async fn history(&mut self, identifier: &Arc<str>, request: &protocol::HistoryRequest) {
        use crate::history::{Backlog, Since};
        let Some(sub) = self.subscriptions.get(identifier) else {
            if self.may_warn() {
                tracing::warn!(
                    "Unable to find subscription with identifier: {}",
                    loggable(identifier)
                );
            }
            return;
        };
        let streams = sub.subscribed.streams.clone();
        let key = self.variant_key(identifier);
        self.held.retain(|held| held != identifier);
        // Per stream: the last position the subscription was already sent (live, or by an
        // earlier history answer): nothing at or before it is sent again.
        let sent: Vec<_> = streams
            .iter()
            .map(|stream| self.conn.hold(stream, &key))
            .collect();
        let history = self.state.delivery.history.clone();
        let json = self.state.delivery.json;
        let prefix = protocol::variant(identifier, json).prefix;
        let mut frames = Vec::new();
        // Per stream: the last position the client has (its own, then each entry sent).
        let mut lasts: Vec<Option<(Arc<str>, u64)>> = Vec::with_capacity(streams.len());
        let mut gone = false;
        for (stream, sent) in streams.iter().zip(sent) {
            let asked = request.streams.iter().find(|(s, _, _)| s == stream);
            let (since, mut last) = match (asked, sent) {
                // The client's own position, unless the subscription was sent past it.
                (Some((_, epoch, offset)), sent)
                    if sent
                        .as_ref()
                        .is_none_or(|(e, o)| **e != **epoch || offset >= o) =>
                {
                    (
                        Since::Offset {
                            epoch: epoch.clone(),
                            offset: *offset,
                        },
                        Some((Arc::from(epoch.as_str()), *offset)),
                    )
                }
                (asked, Some((epoch, offset))) if asked.is_some() || request.since > 0 => (
                    Since::Offset {
                        epoch: epoch.to_string(),
                        offset,
                    },
                    Some((epoch, offset)),
                ),
                (None, None) if request.since > 0 => (Since::Time(request.since), None),
                (_, sent) => {
                    lasts.push(sent);
                    continue;
                }
            };
            if !gone {
                match history.read(stream, &since).await {
                    Backlog::Gone => gone = true,
                    Backlog::Entries(entries) => {
                        let epoch = history.epoch();
                        for entry in entries {
                            let position = crate::history::Position {
                                epoch: epoch.clone(),
                                offset: entry.offset,
                            };
                            let suffix = crate::history::ext_suffix(stream, &position, json);
                            frames.push(Frame::text_parts(&[&prefix, &entry.payload, &suffix]));
                            last = Some((epoch.clone(), entry.offset));
                        }
                    }
                }
            }
            lasts.push(last);
        }
        if gone {
            self.state.metrics.history_rejected();
            self.conn
                .send(Frame::text(&protocol::reject_history(identifier, json)));
        } else {
            self.state.metrics.history_replayed(frames.len());
            for frame in frames {
                self.conn.send(frame);
            }
            self.conn
                .send(Frame::text(&protocol::confirm_history(identifier, json)));
        }
        for (stream, last) in streams.iter().zip(lasts) {
            // Rejected, nothing was sent: the floor stays what the subscription had (the
            // client's claim may be past the head).
            self.conn
                .release(stream, &key, if gone { None } else { last });
        }
    }

    /// Runs a channel's `subscribed` on the host.
    async fn channel_subscribe(
        &self,
        identifier: &str,
        channel: &str,
        params: serde_json::Map<String, serde_json::Value>,
    ) -> anyhow::Result<Outcome> {
        let Some(who) = self.who() else {
            // A connection only an app identified: Turbo's signed streams need no user.
            return Ok(if channel == channels::turbo_streams::CHANNEL {
                channels::turbo_streams::verify(&self.state.keys.signer, &params)
            } else {
                Outcome::Reject
            });
        };
        self.host.subscribe(who, identifier, channel, params).await
    }

    /// Runs a channel's `unsubscribed` on the host.
    async fn channel_unsubscribed(&self, subscribed: &Subscribed) -> anyhow::Result<()> {
        match self.who() {
            Some(who) => self.host.unsubscribed(who, subscribed).await,
            None => Ok(()),
        }
    }

    /// Runs a channel action on the host. `within_rate` is false for an action past its rate
    /// limit: the channel drops or coalesces it.
    async fn channel_perform(
        &self,
        subscribed: &Subscribed,
        action: &str,
        within_rate: bool,
    ) -> anyhow::Result<bool> {
        match self.who() {
            Some(who) => {
                self.host
                    .perform(who, subscribed, action, within_rate)
                    .await
            }
            None => Ok(false),
        }
    }

    /// Whether a confirmed subscription is still allowed, asked of the host.
    async fn channel_still_allowed(&self, subscribed: &Subscribed) -> anyhow::Result<bool> {
        match self.who() {
            Some(who) => self.host.still_allowed(who, subscribed).await,
            None => Ok(true),
        }
    }

    async fn perform(&mut self, identifier: &Arc<str>, data: &str) -> anyhow::Result<()> {
        let Some(sub) = self.subscriptions.get(identifier) else {
            anyhow::bail!(
                "Unable to find subscription with identifier: {}",
                loggable(identifier)
            );
        };
        if matches!(sub.subscribed.channel, channels::Channel::App(_)) {
            return self.app_perform(identifier, data).await;
        }
        let subscribed = sub.subscribed.clone();
        let user_id = self.user.as_ref().map_or(0, |u| u.id);
        let budget = match subscribed.channel {
            channels::Channel::TypingNotifications(_) => {
                Some((&mut self.typing_budget, Action::Typing))
            }
            channels::Channel::Presence(_) => Some((&mut self.presence_budget, Action::Presence)),
            _ => None,
        };
        // The connection's bucket first, then the user's (over all their connections), so a
        // notice one connection drops costs the user nothing.
        let now = Instant::now();
        let limits = &self.state.limits.requests;
        let user = Client::User(user_id);
        let within_rate = budget
            .is_none_or(|(b, action)| b.try_take(now) && limits.check(action, user, now).is_ok());
        if !within_rate {
            tracing::debug!(user_id, "client action over its rate");
        }
        let decoded: serde_json::Value = serde_json::from_str(data)?;
        let action = decoded
            .get("action")
            .and_then(|a| a.as_str())
            .filter(|a| !a.is_empty())
            .unwrap_or("receive");
        if !self
            .channel_perform(&subscribed, action, within_rate)
            .await?
        {
            tracing::warn!(
                "Unable to process {}#{}",
                loggable(identifier),
                loggable(action)
            );
        }
        Ok(())
    }

    /// Drops every room-scoped subscription the user may no longer have (see the module docs).
    async fn recheck(&mut self) {
        let mut revoked = Vec::new();
        for (identifier, sub) in &self.subscriptions {
            match self.channel_still_allowed(&sub.subscribed).await {
                Ok(true) => {}
                Ok(false) => revoked.push(identifier.clone()),
                Err(e) => {
                    tracing::warn!(error = %loggable(&e.to_string()), "membership re-check failed")
                }
            }
        }
        for identifier in revoked {
            let Some(sub) = self.subscriptions.remove(&identifier) else {
                continue;
            };
            // Through the interest count, so the bus stops listening to a stream whose last
            // local subscriber this was.
            let interest = self.state.delivery.bus.interest();
            let key = self.variant_key(&identifier);
            for stream in &sub.subscribed.streams {
                interest.unsubscribe(&self.conn, stream, &key);
            }
            if let Err(e) = self.channel_unsubscribed(&sub.subscribed).await {
                tracing::warn!(error = %loggable(&e.to_string()), "unsubscribed failed");
            }
            self.conn.send(Frame::text(&protocol::reject(
                &identifier,
                self.state.delivery.json,
            )));
            tracing::info!(
                user_id = self.user.as_ref().map(|u| u.id),
                identifier = %loggable(&identifier),
                "subscription revoked"
            );
        }
    }

    async fn unsubscribe_all(&mut self) {
        let subs: Vec<(Arc<str>, Subscription)> = self.subscriptions.drain().collect();
        // The app's subscriptions end with the app's `disconnect`, queued.
        let mut app_subscriptions = Vec::new();
        for (identifier, sub) in subs {
            // The engine detaches the connection's streams itself when it closes.
            for stream in &sub.subscribed.streams {
                self.state.delivery.bus.interest().remove(stream);
            }
            if let channels::Channel::App(istate) = sub.subscribed.channel {
                app_subscriptions.push((identifier.to_string(), istate));
                continue;
            }
            if let Err(e) = self.channel_unsubscribed(&sub.subscribed).await {
                tracing::warn!(error = %loggable(&e.to_string()), "unsubscribed failed");
            }
        }
        if let Some(session) = self.app.take() {
            self.host.disconnected(session, app_subscriptions);
        }
    }
}
