//! Channels on a cable node (`--role cable`): [`RemoteHost`], the operations it asks the app
//! node for, and the app node's side of them (`POST /_internal/cable/<op>`, see [`crate::app_link`]).
//!
//! Every operation is an [`crate::app_link::Op`]; its request type names it and its answer
//! type ([`crate::app_link::Call`]), so neither end spells an operation as a string.
//!
//! | `Op` (path) | body | answer | cached on the cable node |
//! |---|---|---|---|
//! | `Hello` (`hello`) | `HelloRequest` | `true` | never (the key check at start and `/up`) |
//! | `Identify` (`identify`) | [`IdentifyRequest`] | [`IdentifyResponse`] | yes, by session, but never for a restore (`fresh`) |
//! | `Subscribe` (`subscribe`) | [`SubscribeRequest`] | [`super::Outcome`] | `RoomMessagesChannel`, `TypingNotificationsChannel` (membership checks) |
//! | `Perform` (`perform`) | [`PerformRequest`] | `bool` (handled) | never |
//! | `Unsubscribed` (`unsubscribed`) | [`UnsubscribedRequest`] | `true` | never |
//! | `StillAllowed` (`still_allowed`) | [`StillAllowedRequest`] | `bool` | never (the re-check after a revocation) |
//!
//! Cached answers of a user are dropped when the user loses access
//! ([`crate::app_link::AppLink::forget_user`]).
//!
//! Channels that need no database (`Turbo::StreamsChannel`, whose signed stream names are
//! verified locally, `UnreadRoomsChannel`, `ReadRoomsChannel`, `HeartbeatChannel`) are run on
//! the cable node itself, without a call.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::host::{ChannelHost, LocalHost, Who};
use super::{Channel, Outcome, Subscribed};
use crate::app_link::AppLink;
use crate::db::users::User;

impl crate::app_link::Call for IdentifyRequest {
    const OP: crate::app_link::Op = crate::app_link::Op::Identify;
    type Answer = IdentifyResponse;
}

impl crate::app_link::Call for SubscribeRequest {
    const OP: crate::app_link::Op = crate::app_link::Op::Subscribe;
    type Answer = Outcome;
}

impl crate::app_link::Call for PerformRequest {
    const OP: crate::app_link::Op = crate::app_link::Op::Perform;
    type Answer = bool;
}

impl crate::app_link::Call for UnsubscribedRequest {
    const OP: crate::app_link::Op = crate::app_link::Op::Unsubscribed;
    type Answer = bool;
}

impl crate::app_link::Call for StillAllowedRequest {
    const OP: crate::app_link::Op = crate::app_link::Op::StillAllowed;
    type Answer = bool;
}

/// Whether a confirmed subscription is still allowed (after a revocation).
#[derive(Debug, Serialize, Deserialize)]
pub struct StillAllowedRequest {
    /// The connection's user.
    pub user: User,
    /// The subscription, as the app node confirmed it.
    pub subscribed: Subscribed,
}

/// Who holds a session token.
#[derive(Debug, Serialize, Deserialize)]
pub struct IdentifyRequest {
    /// The session token from the verified `session_token` cookie.
    pub session_token: String,
    /// Whether the app node must look the session up instead of answering from its cache (a
    /// restored session's identification); false when absent.
    #[serde(default)]
    pub fresh: bool,
}

/// The active user of a session, or None (unknown, expired or deactivated).
#[derive(Debug, Serialize, Deserialize)]
pub struct IdentifyResponse {
    /// The user.
    pub user: Option<User>,
}

/// A subscribe to decide on the app node.
#[derive(Debug, Serialize, Deserialize)]
pub struct SubscribeRequest {
    /// The connection, unique across cable nodes ([`crate::app_link::AppLink::connection_key`]).
    #[serde(default)]
    pub connection_id: u64,
    /// The connection's user.
    pub user: User,
    /// The channel class name.
    pub channel: String,
    /// The identifier's params.
    pub params: Map<String, Value>,
}

/// An action to run on the app node.
#[derive(Debug, Serialize, Deserialize)]
pub struct PerformRequest {
    /// The connection, unique across cable nodes ([`crate::app_link::AppLink::connection_key`]).
    #[serde(default)]
    pub connection_id: u64,
    /// The connection's user.
    pub user: User,
    /// The subscription, as the app node confirmed it.
    pub subscribed: Subscribed,
    /// The action name.
    pub action: String,
}

/// An `unsubscribed` to run on the app node.
#[derive(Debug, Serialize, Deserialize)]
pub struct UnsubscribedRequest {
    /// The connection, unique across cable nodes ([`crate::app_link::AppLink::connection_key`]).
    #[serde(default)]
    pub connection_id: u64,
    /// The connection's user.
    pub user: User,
    /// The subscription that ended.
    pub subscribed: Subscribed,
}

/// Whether a channel needs the app node (its database) to subscribe.
pub fn needs_app(channel: &str) -> bool {
    matches!(
        channel,
        "RoomMessagesChannel" | "PresenceChannel" | "TypingNotificationsChannel"
    )
}

/// Whether the app node's answer to a subscribe may be reused for the cache's lifetime
/// (a membership check without side effects; `PresenceChannel` marks presence, so never).
pub fn subscribe_cacheable(channel: &str) -> bool {
    matches!(
        channel,
        "RoomMessagesChannel" | "TypingNotificationsChannel"
    )
}

/// Whether an ended subscription has an `unsubscribed` to run on the app node.
pub fn unsubscribed_needs_app(sub: &Subscribed) -> bool {
    matches!(sub.channel, Channel::Presence(_))
}

/// A cable node's [`ChannelHost`]: the channels that need the database run on the app node
/// (answers cached as the table above says); the others run here.
#[derive(Debug)]
pub struct RemoteHost {
    link: Arc<AppLink>,
    local: Arc<LocalHost>,
}

impl RemoteHost {
    /// The host asking the app node over `link`, running the channels that need no database
    /// on `local`.
    pub fn new(link: Arc<AppLink>, local: Arc<LocalHost>) -> Arc<Self> {
        Arc::new(Self { link, local })
    }
}

impl ChannelHost for RemoteHost {
    fn identify<'a>(
        &'a self,
        session_token: &'a str,
        fresh: bool,
    ) -> BoxFuture<'a, anyhow::Result<Option<User>>> {
        Box::pin(async move {
            let key = format!(
                "identify:{}",
                crate::registry::session_digest(session_token)
            );
            let request = IdentifyRequest {
                session_token: session_token.to_owned(),
                fresh,
            };
            // A fresh answer is never taken from the cache.
            let key = (!fresh).then_some(key);
            Ok(self.link.call(key.as_deref(), &request).await?.user)
        })
    }

    fn subscribe<'a>(
        &'a self,
        who: Who<'a>,
        identifier: &'a str,
        channel: &'a str,
        params: Map<String, Value>,
    ) -> BoxFuture<'a, anyhow::Result<Outcome>> {
        if !needs_app(channel) {
            return self.local.subscribe(who, identifier, channel, params);
        }
        Box::pin(async move {
            let key = subscribe_cacheable(channel)
                .then(|| format!("subscribe:{}:{identifier}", who.user.id));
            let request = SubscribeRequest {
                connection_id: self.link.connection_key(who.connection_id),
                user: who.user.clone(),
                channel: channel.to_owned(),
                params,
            };
            self.link.call(key.as_deref(), &request).await
        })
    }

    fn perform<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
        action: &'a str,
        within_rate: bool,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        Box::pin(async move {
            // An action past its rate is dropped here, without asking the app node.
            if !within_rate {
                return Ok(true);
            }
            let request = PerformRequest {
                connection_id: self.link.connection_key(who.connection_id),
                user: who.user.clone(),
                subscribed: sub.clone(),
                action: action.to_owned(),
            };
            self.link.call(None, &request).await
        })
    }

    fn unsubscribed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<()>> {
        if !unsubscribed_needs_app(sub) {
            return self.local.unsubscribed(who, sub);
        }
        Box::pin(async move {
            let request = UnsubscribedRequest {
                connection_id: self.link.connection_key(who.connection_id),
                user: who.user.clone(),
                subscribed: sub.clone(),
            };
            self.link.call(None, &request).await?;
            Ok(())
        })
    }

    fn still_allowed<'a>(
        &'a self,
        who: Who<'a>,
        sub: &'a Subscribed,
    ) -> BoxFuture<'a, anyhow::Result<bool>> {
        Box::pin(async move {
            if super::scoped_room(sub).is_none() {
                return Ok(true);
            }
            let request = StillAllowedRequest {
                user: who.user.clone(),
                subscribed: sub.clone(),
            };
            self.link.call(None, &request).await
        })
    }
}
