//! Channels on a cable node (`--role cable`): the calls its [`super::host::ChannelHost`] makes, the operations it asks the app
//! node for, and the app node's side of them (`POST /_internal/cable/<op>`, see [`crate::app_link`]).
//!
//! Every operation is an [`crate::app_link::Op`]; its request type names it and its answer
//! type ([`crate::app_link::Call`]), so neither end spells an operation as a string.
//!
//! | `Op` (path) | body | answer | cached on the cable node |
//! |---|---|---|---|
//! | `Hello` (`hello`) | `HelloRequest` | `true` | never (the key check at start and `/up`) |
//! | `Identify` (`identify`) | [`IdentifyRequest`] | [`IdentifyResponse`] | yes, by session |
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

use super::{Channel, Outcome, Subscribed, Who};
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

/// Asks the app node who holds `session_token` (cached by session).
pub async fn identify(link: &AppLink, session_token: &str) -> anyhow::Result<Option<User>> {
    let key = format!(
        "identify:{}",
        crate::registry::session_digest(session_token)
    );
    let request = IdentifyRequest {
        session_token: session_token.to_owned(),
    };
    Ok(link.call(Some(&key), &request).await?.user)
}

/// Asks the app node to decide a subscribe of a channel that [`needs_app`] (cached by user
/// and identifier when [`subscribe_cacheable`]).
pub async fn subscribe(
    link: &AppLink,
    who: Who<'_>,
    identifier: &str,
    channel: &str,
    params: Map<String, Value>,
) -> anyhow::Result<Outcome> {
    let key =
        subscribe_cacheable(channel).then(|| format!("subscribe:{}:{identifier}", who.user.id));
    let request = SubscribeRequest {
        connection_id: link.connection_key(who.connection_id),
        user: who.user.clone(),
        channel: channel.to_owned(),
        params,
    };
    link.call(key.as_deref(), &request).await
}

/// Asks the app node to run an action; one past its rate is dropped here, without asking.
pub async fn perform(
    link: &AppLink,
    who: Who<'_>,
    sub: &Subscribed,
    action: &str,
    within_rate: bool,
) -> anyhow::Result<bool> {
    if !within_rate {
        return Ok(true);
    }
    let request = PerformRequest {
        connection_id: link.connection_key(who.connection_id),
        user: who.user.clone(),
        subscribed: sub.clone(),
        action: action.to_owned(),
    };
    link.call(None, &request).await
}

/// Asks the app node to run the `unsubscribed` of a subscription that
/// [`unsubscribed_needs_app`].
pub async fn unsubscribed(link: &AppLink, who: Who<'_>, sub: &Subscribed) -> anyhow::Result<()> {
    let request = UnsubscribedRequest {
        connection_id: link.connection_key(who.connection_id),
        user: who.user.clone(),
        subscribed: sub.clone(),
    };
    link.call(None, &request).await?;
    Ok(())
}

/// Asks the app node whether a room-scoped subscription is still allowed; a user-scoped one
/// always is, without asking.
pub async fn still_allowed(link: &AppLink, who: Who<'_>, sub: &Subscribed) -> anyhow::Result<bool> {
    if super::scoped_room(sub).is_none() {
        return Ok(true);
    }
    let request = StillAllowedRequest {
        user: who.user.clone(),
        subscribed: sub.clone(),
    };
    link.call(None, &request).await
}
