//! The channel host seam: where a connection's channels run. Chosen once at start (in
//! `app.rs`, by role) and handed to every connection, so the connection never asks which
//! node it runs on:
//!
//! - [`LocalHost`]: here, against this node's database (`--role all`, and the app node's
//!   side of the internal endpoint);
//! - [`super::remote::RemoteHost`]: a cable node's, which asks its app node for what needs
//!   the database and runs the rest here;
//! - [`super::rpc::RpcHost`]: either of those for Campfire's channels, and an app's own
//!   channels beside them, asked over AnyCable's HTTP RPC (`--rpc-url`).
//!
//! A connection is identified by a Campfire session ([`ChannelHost::identify`]: a
//! [`User`]), by the app's `connect` ([`ChannelHost::connect`]: opaque identifiers and the
//! connection's state, an [`AppSession`]), or both; Campfire's channels need the first, the
//! app's channels ([`ChannelHost::is_app_channel`]) the second.
//!
//! Every method returns a boxed future: a connection boxes the database work of each command
//! anyway (see `cable/connection.rs`), and a trait object needs it.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::{ChannelContext, Outcome, Subscribed};
use crate::db::users::User;
use crate::db::Db;
use crate::pubsub::Delivery;
use crate::rails::Keys;
use crate::registry::Sockets;
use crate::rpc::{CommandResponse, ConnectContext, ConnectResponse, Env, StringMap};

/// Who a channel call is for: the connection's user and its id (unique across the nodes that
/// share an app node: presence is kept per connection).
#[derive(Clone, Copy, Debug)]
pub struct Who<'a> {
    /// The connection's user (`current_user`).
    pub user: &'a User,
    /// The connection's id.
    pub connection_id: u64,
}

/// A connection the app accepted (its `connect` succeeded): what the app's calls about it
/// carry.
#[derive(Clone, Debug)]
pub struct AppSession {
    /// The session id (`x-anycable-meta-sid`).
    pub sid: String,
    /// The app's opaque identifiers of the connection.
    pub identifiers: std::sync::Arc<str>,
    /// The request (URL, proxied headers) and the connection's state (`cstate`).
    pub env: Env,
}

/// A subscription's command for the app ([`ChannelHost::command`]).
#[derive(Clone, Copy, Debug)]
pub enum AppCommand<'a> {
    /// `subscribe`.
    Subscribe,
    /// `unsubscribe`.
    Unsubscribe,
    /// `message`, with the client's data (JSON text).
    Message(&'a str),
}

impl AppCommand<'_> {
    /// The protocol's name of the command.
    pub fn name(self) -> &'static str {
        match self {
            Self::Subscribe => "subscribe",
            Self::Unsubscribe => "unsubscribe",
            Self::Message(_) => "message",
        }
    }
}

/// Where channels run (see the module docs).
pub trait ChannelHost: Send + Sync + std::fmt::Debug {
    /// The active user of a session token (`ApplicationCable::Connection#connect`); None for
    /// an unknown, ended or deactivated session. `fresh`: no cached answer is used (a
    /// restored session's identification: the session may have ended since anything about it
    /// was cached).
    fn identify<'a>(
        &'a self,
        session_token: &'a str,
        fresh: bool,
    ) -> BoxFuture<'a, anyhow::Result<Option<User>>>;

    /// A channel's `subscribed` for `channel` with `params` (`identifier` is the whole
    /// identifier, which a host may cache answers by).
    fn subscribe<'a>(
        &'a self,
        who: Who<'a>,
        identifier: &'a str,
        channel: &'a str,
        params: Map<String, Value>,
    ) -> BoxFuture<'a, anyhow::Result<Outcome>>;

    /// A channel action; false when the channel has no such action. `within_rate` is false
    /// past the connection's budget for the channel.
    fn perform<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
        action: &'a str,
        within_rate: bool,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;

    /// A channel's `unsubscribed` (on `unsubscribe`, a revocation and the connection's end).
    fn unsubscribed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<()>>;

    /// Whether a confirmed subscription is still allowed (the re-check after a revocation).
    fn still_allowed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<bool>>;

    /// Whether `channel` is an app's channel, run by [`ChannelHost::command`] (false: one of
    /// Campfire's, or none). No app's channels by default.
    fn is_app_channel(&self, _channel: &str) -> bool {
        false
    }

    /// The app's `connect` for the request in `ctx`; None when this host runs no app's
    /// channels (the default).
    fn connect<'a>(
        &'a self,
        _ctx: &'a ConnectContext,
    ) -> BoxFuture<'a, anyhow::Result<Option<ConnectResponse>>> {
        Box::pin(async { Ok(None) })
    }

    /// An app subscription's command, with the subscription's state `istate`.
    ///
    /// # Errors
    /// The app could not answer (see [`crate::rpc::CallError`]); no app by default.
    fn command<'a>(
        &'a self,
        _session: &'a AppSession,
        _identifier: &'a str,
        _command: AppCommand<'a>,
        _istate: &'a StringMap,
    ) -> BoxFuture<'a, anyhow::Result<CommandResponse>> {
        Box::pin(async { anyhow::bail!("no app channels here") })
    }

    /// Queues the app's `disconnect` of a closed connection, with its subscriptions and each
    /// one's state (nothing by default).
    fn disconnected(&self, _session: AppSession, _subscriptions: Vec<(String, StringMap)>) {}
}

/// Channels run here, against this node's database.
#[derive(Clone, Debug)]
pub struct LocalHost {
    db: Db,
    delivery: Delivery,
    keys: Keys,
    sockets: Sockets,
}

impl LocalHost {
    /// The host over this node's database, delivery, keys (the stream signer) and sockets
    /// (presence).
    pub fn new(db: Db, delivery: Delivery, keys: Keys, sockets: Sockets) -> Arc<Self> {
        Arc::new(Self {
            db,
            delivery,
            keys,
            sockets,
        })
    }

    /// The channel context of `who`.
    pub fn ctx<'a>(&'a self, who: Who<'a>) -> ChannelContext<'a> {
        ChannelContext {
            pool: &self.db.pool,
            auth_cache: &self.db.auth_cache,
            broadcaster: &self.delivery.broadcaster,
            signer: &self.keys.signer,
            user: who.user,
            presence: &self.sockets.presence,
            connection_id: who.connection_id,
        }
    }
}

impl ChannelHost for LocalHost {
    fn identify<'a>(
        &'a self,
        session_token: &'a str,
        fresh: bool,
    ) -> BoxFuture<'a, anyhow::Result<Option<User>>> {
        Box::pin(async move {
            let pool = &self.db.pool;
            Ok(if fresh {
                crate::db::sessions::resume(pool, session_token).await?
            } else {
                self.db.auth_cache.resume(pool, session_token).await?
            })
        })
    }

    fn subscribe<'a>(
        &'a self,
        who: Who<'a>,
        _identifier: &'a str,
        channel: &'a str,
        params: Map<String, Value>,
    ) -> BoxFuture<'a, anyhow::Result<Outcome>> {
        Box::pin(async move { super::subscribe(self.ctx(who), channel, &params).await })
    }

    fn perform<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
        action: &'a str,
        within_rate: bool,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        Box::pin(super::perform(self.ctx(who), sub, action, within_rate))
    }

    fn unsubscribed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(super::unsubscribed(self.ctx(who), sub))
    }

    fn still_allowed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        Box::pin(super::still_allowed(self.ctx(who), sub))
    }
}
