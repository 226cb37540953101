//! A connection's dealings with an app's channels (`--rpc-url`, [`crate::rpc`]): the app's
//! `connect` at the opening, then each app subscription's commands, their answers applied as
//! anycable-go applies them (`node.go`'s `handleCommandReply`): the streams stopped, then
//! those started, the subscription's and the connection's state merged, then the
//! transmissions sent as they are and in order (so what a channel transmits in `subscribed`
//! precedes its confirmation), then a requested close.
//!
//! What the client sees when the app cannot answer (not up, slow past the 3 s timeout, the
//! breaker open): a refused `connect` closes the socket (code 1011, the client reconnects
//! later); a failed `subscribe` is rejected (`reject_subscription`); a failed action or
//! `unsubscribe` is logged. A malformed answer (not JSON of the protocol's shape, or too
//! large) closes that connection only and is logged once.
//!
//! A command's call is abandoned when the connection ends while it is pending (the client
//! closed its side, or the server closed it), and the connection's later commands make no
//! call, as anycable-go discards the calls of a session that ended (`super::peer`).

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use super::peer::SharedRead;
use super::{Reader, Subscription};
use crate::cable::channels::host::{AppCommand, AppSession, ChannelHost};
use crate::cable::channels::{Channel, Subscribed};
use crate::cable::protocol::{self, close_code, DisconnectReason};
use crate::fanout::frame::Frame;
use crate::fanout::Connection;
use crate::loggable::loggable;
use crate::rpc::{
    merge_state, merged_size, CallError, CommandResponse, ConnectContext, ConnectResponse, Status,
    StringMap, MAX_IDENTIFIERS_BYTES, MAX_STATE_BYTES, MAX_STREAMS,
};

/// What the app's `connect` came to.
pub(super) enum Connected {
    /// Accepted: the app's session and its transmissions (its welcome among them).
    Accepted(AppSession, Vec<String>),
    /// Refused (`FAILURE`, or `ERROR`): its transmissions (the `disconnect` to send).
    Refused(Vec<String>),
    /// The app could not answer.
    Failed,
}

/// Asks the app's `connect` for the request in `ctx`.
pub(super) async fn connect(host: &dyn ChannelHost, ctx: ConnectContext) -> Connected {
    match host.connect(&ctx).await {
        Ok(Some(answer)) if answer.status == Status::Success => {
            if let Some(why) = connect_oversteps(&ctx, &answer) {
                tracing::warn!(
                    why,
                    "Closing a connection: the app's connect answer is too large"
                );
                return Connected::Failed;
            }
            let mut env = ctx.env;
            merge_state(&mut env.cstate, answer.env.cstate);
            Connected::Accepted(
                AppSession {
                    sid: ctx.sid,
                    identifiers: Arc::from(answer.identifiers),
                    env,
                },
                answer.transmissions,
            )
        }
        Ok(Some(answer)) => {
            tracing::info!(
                error = %loggable(&answer.error_msg),
                "The app refused the connection"
            );
            Connected::Refused(answer.transmissions)
        }
        Ok(None) => Connected::Failed,
        Err(e) => {
            tracing::warn!(error = %loggable(&e.to_string()), "The app's connect failed");
            Connected::Failed
        }
    }
}

/// Why an accepted `connect` answer cannot be kept, if it cannot: identifiers past
/// [`MAX_IDENTIFIERS_BYTES`], connection state past [`MAX_STATE_BYTES`].
fn connect_oversteps(ctx: &ConnectContext, answer: &ConnectResponse) -> Option<&'static str> {
    if answer.identifiers.len() > MAX_IDENTIFIERS_BYTES {
        Some("identifiers past the limit")
    } else if merged_size(&ctx.env.cstate, &answer.env.cstate) > MAX_STATE_BYTES {
        Some("connection state past the limit")
    } else {
        None
    }
}

/// The last bytes of a refused connection: the app's transmissions then a normal close; a
/// close 1011 when the app could not answer; Rails' `unauthorized` disconnect when no app was
/// asked.
pub(super) fn refusal(connected: Option<&Connected>) -> Vec<u8> {
    let mut bytes = match connected {
        Some(Connected::Refused(transmissions)) => frames(transmissions, false),
        Some(Connected::Failed) => {
            return Frame::close(close_code::INTERNAL_ERROR, "Auth Error")
                .0
                .to_vec();
        }
        _ => Frame::text(&protocol::disconnect(DisconnectReason::Unauthorized, false))
            .0
            .to_vec(),
    };
    bytes.extend_from_slice(&Frame::close(close_code::NORMAL, "").0);
    bytes
}

/// The text frames of `transmissions`, as they are; without those of type `welcome` when
/// `skip_welcome` (a Campfire connection has sent its own).
pub(super) fn frames(transmissions: &[String], skip_welcome: bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    for t in transmissions {
        if skip_welcome && is_welcome(t) {
            continue;
        }
        bytes.extend_from_slice(&Frame::text(t.as_bytes()).0);
    }
    bytes
}

fn is_welcome(transmission: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(transmission)
        .ok()
        .and_then(|v| v.get("type")?.as_str().map(|t| t == "welcome"))
        .unwrap_or(false)
}

/// The app's answer to `call`, unless the connection is over first (`gone`: found over
/// before; or the client closes its side, or the server closes the connection, while the call
/// is pending): then None, and the call is abandoned or never made (`super::peer`).
async fn unless_gone<T>(
    gone: bool,
    peer: &SharedRead,
    conn: &Connection,
    call: impl Future<Output = T>,
) -> Option<T> {
    if gone || conn.is_closed() {
        return None;
    }
    tokio::select! {
        biased;
        answer = call => Some(answer),
        () = conn.closed() => None,
        () = peer.peer_closed() => None,
    }
}

impl Reader {
    /// Subscribes to an app's channel; `hold`: its history is sent next (see the parent
    /// module's docs).
    pub(super) async fn app_subscribe(
        &mut self,
        identifier: Arc<str>,
        hold: bool,
    ) -> anyhow::Result<()> {
        let json = self.state.delivery.json;
        let Some(session) = self.app.as_ref() else {
            // The app did not accept this connection: its channels are not open to it.
            self.conn
                .send_deferred(Frame::text(&protocol::reject(&identifier, json)));
            return Ok(());
        };
        let none = StringMap::new();
        let call = self
            .host
            .command(session, &identifier, AppCommand::Subscribe, &none);
        let Some(reply) = unless_gone(self.app_gone, &self.peer, &self.conn, call).await else {
            self.app_gone = true;
            return Ok(());
        };
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) => {
                if !self.app_failed(&e) {
                    self.conn
                        .send_deferred(Frame::text(&protocol::reject(&identifier, json)));
                }
                return Ok(());
            }
        };
        let confirmed = reply.status == Status::Success;
        let silent = reply.transmissions.is_empty();
        if confirmed {
            let subscribed = Subscribed {
                channel: Channel::App(StringMap::new()),
                streams: Vec::new(),
            };
            self.subscriptions
                .insert(identifier.clone(), Subscription { subscribed });
        } else if reply.status == Status::Error {
            tracing::warn!(
                error = %loggable(&reply.error_msg),
                identifier = %loggable(&identifier),
                "The app's subscribe failed"
            );
        }
        self.apply_reply(&identifier, reply, true, hold).await;
        if !confirmed && silent {
            self.conn
                .send_deferred(Frame::text(&protocol::reject(&identifier, json)));
        }
        Ok(())
    }

    /// Runs an action of an app subscription (`data` as the client sent it).
    pub(super) async fn app_perform(
        &mut self,
        identifier: &Arc<str>,
        data: &str,
    ) -> anyhow::Result<()> {
        let (Some(session), Some(sub)) = (self.app.as_ref(), self.subscriptions.get(identifier))
        else {
            anyhow::bail!("no app subscription {}", loggable(identifier));
        };
        let istate = match &sub.subscribed.channel {
            Channel::App(istate) => istate.clone(),
            _ => StringMap::new(),
        };
        let call = self
            .host
            .command(session, identifier, AppCommand::Message(data), &istate);
        let Some(reply) = unless_gone(self.app_gone, &self.peer, &self.conn, call).await else {
            self.app_gone = true;
            return Ok(());
        };
        match reply {
            Ok(reply) => {
                if reply.status == Status::Error {
                    tracing::warn!(error = %loggable(&reply.error_msg), "The app's action failed");
                }
                self.apply_reply(identifier, reply, false, false).await;
            }
            Err(e) => {
                self.app_failed(&e);
            }
        }
        Ok(())
    }

    /// Tells the app a subscription ended (its streams are already detached).
    pub(super) async fn app_unsubscribe(
        &mut self,
        identifier: &Arc<str>,
        istate: &StringMap,
    ) -> anyhow::Result<()> {
        let Some(session) = self.app.as_ref() else {
            return Ok(());
        };
        let call = self
            .host
            .command(session, identifier, AppCommand::Unsubscribe, istate);
        let Some(reply) = unless_gone(self.app_gone, &self.peer, &self.conn, call).await else {
            self.app_gone = true;
            return Ok(());
        };
        match reply {
            Ok(reply) => self.apply_reply(identifier, reply, false, false).await,
            Err(e) => {
                self.app_failed(&e);
            }
        }
        Ok(())
    }

    /// Logs a failed call; a malformed answer closes the connection. Returns whether it did.
    fn app_failed(&mut self, e: &anyhow::Error) -> bool {
        let malformed = matches!(e.downcast_ref::<CallError>(), Some(CallError::Malformed(_)));
        if malformed {
            tracing::warn!(error = %loggable(&e.to_string()), "Closing a connection: the app's answer is malformed");
            self.conn
                .close(&[Frame::close(close_code::INTERNAL_ERROR, "")]);
        } else if self.may_warn() {
            tracing::warn!(error = %loggable(&e.to_string()), "The app's command failed");
        }
        malformed
    }

    /// Why an answer to subscription `identifier` cannot be applied, if it cannot: the
    /// subscription past [`MAX_STREAMS`], its state or the connection's past
    /// [`MAX_STATE_BYTES`]. Drops (and logs) the streams that are Campfire's
    /// ([`crate::streams::is_campfires`]) when Campfire's channels run beside the app's.
    fn reply_oversteps(
        &mut self,
        identifier: &Arc<str>,
        reply: &mut CommandResponse,
    ) -> Option<&'static str> {
        if self.state.config.channels == crate::config::ChannelSet::Campfire {
            let gid_app = &self.state.config.gid_app;
            let before = reply.streams.len();
            reply
                .streams
                .retain(|s| !crate::streams::is_campfires(s, gid_app));
            if reply.streams.len() < before && self.may_warn() {
                tracing::warn!(
                    identifier = %loggable(identifier),
                    "The app streamed from Campfire's own streams: refused"
                );
            }
        }
        if let Some(app) = &self.app {
            if merged_size(&app.env.cstate, &reply.env.cstate) > MAX_STATE_BYTES {
                return Some("connection state past the limit");
            }
        }
        let sub = self.subscriptions.get(identifier)?;
        if let Channel::App(istate) = &sub.subscribed.channel {
            if merged_size(istate, &reply.env.istate) > MAX_STATE_BYTES {
                return Some("subscription state past the limit");
            }
        }
        let kept: HashSet<&str> = if reply.stop_streams {
            HashSet::new()
        } else {
            let stopping: HashSet<&str> =
                reply.stopped_streams.iter().map(String::as_str).collect();
            let streams = sub.subscribed.streams.iter().map(String::as_str);
            streams.filter(|s| !stopping.contains(s)).collect()
        };
        let added: HashSet<&str> = reply
            .streams
            .iter()
            .map(String::as_str)
            .filter(|s| !kept.contains(s))
            .collect();
        (kept.len() + added.len() > MAX_STREAMS).then_some("streams past the limit")
    }

    /// Applies an answer of the app to subscription `identifier` (see the module docs);
    /// `deferred`: its frames wait for the read loop's wake (a subscribe's).
    async fn apply_reply(
        &mut self,
        identifier: &Arc<str>,
        mut reply: CommandResponse,
        deferred: bool,
        hold: bool,
    ) {
        if let Some(why) = self.reply_oversteps(identifier, &mut reply) {
            tracing::warn!(why, "Closing a connection: the app's answer is too large");
            self.conn
                .close(&[Frame::close(close_code::INTERNAL_ERROR, "")]);
            return;
        }
        let variant = self.variant(identifier);
        let interest = self.state.delivery.bus.interest();
        let mut added = Vec::new();
        if let Some(sub) = self.subscriptions.get_mut(identifier) {
            let streams = &mut sub.subscribed.streams;
            let stopped: Vec<String> = if reply.stop_streams {
                std::mem::take(streams)
            } else {
                let stopping: HashSet<&str> =
                    reply.stopped_streams.iter().map(String::as_str).collect();
                let (gone, kept) = std::mem::take(streams)
                    .into_iter()
                    .partition(|s| stopping.contains(s.as_str()));
                *streams = kept;
                gone
            };
            for stream in &stopped {
                interest.unsubscribe(&self.conn, stream, &variant.key);
            }
            for stream in reply.streams {
                if streams.contains(&stream) {
                    continue;
                }
                if hold {
                    self.conn.hold(&stream, &variant.key);
                } else if variant.positioned {
                    self.conn.track(&stream, &variant.key);
                }
                interest.subscribe(&self.conn, &stream, &variant);
                streams.push(stream.clone());
                added.push(stream);
            }
            if let Channel::App(istate) = &mut sub.subscribed.channel {
                merge_state(istate, reply.env.istate);
            }
        }
        if !added.is_empty() {
            self.state.delivery.bus.ready(&added).await;
        }
        if let Some(app) = self.app.as_mut() {
            merge_state(&mut app.env.cstate, reply.env.cstate);
        }
        for t in &reply.transmissions {
            let frame = Frame::text(t.as_bytes());
            if deferred {
                self.conn.send_deferred(frame);
            } else {
                self.conn.send(frame);
            }
        }
        if reply.disconnect {
            self.conn.close(&[Frame::close(close_code::NORMAL, "")]);
        }
    }
}
