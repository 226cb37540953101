//! Campfire's channels, one file each. A channel decides, on `subscribe`, whether to confirm
//! (and which streams to attach) or reject; it may run side effects on unsubscribe and
//! answer actions sent with the `message` command.
//!
//! | channel (params) | streams | actions |
//! |---|---|---|
//! | `Turbo::StreamsChannel` `{signed_stream_name}` | the verified name (names ending in `:messages` are refused, as Campfire's `RoomStreamsAreAuthorized`) | — |
//! | `RoomMessagesChannel` `{signed_stream_name}` | `<room gid>:messages`, members only | — |
//! | `PresenceChannel` `{room_id}` | `presence:<room gid>` | `present`, `absent`, `refresh` |
//! | `TypingNotificationsChannel` `{room_id}` | `typing_notifications:<room gid>` | `start`, `stop` |
//! | `UnreadRoomsChannel` `{}` | `user_<id>_unreads` | — |
//! | `ReadRoomsChannel` `{}` | `user_<id>_reads` | — |
//! | `HeartbeatChannel` `{}` | none | — |
//!
//! Where they run is a [`host::ChannelHost`], chosen once at start: here ([`host::LocalHost`]),
//! or, on a cable node (`--role cable`), on the app node for the channels that need the
//! database ([`remote::RemoteHost`]); with `--rpc-url`, an app's own channels run beside
//! them, asked over AnyCable's HTTP RPC ([`rpc::RpcHost`]).

pub mod heartbeat;
pub mod host;
pub mod presence;
pub mod read_rooms;
pub mod remote;
pub mod room_messages;
pub mod rpc;
pub mod turbo_streams;
pub mod typing_notifications;
pub mod unread_rooms;

use serde_json::{Map, Value};

use sqlx::SqlitePool;

use crate::db::auth_cache::AuthCache;
use crate::db::rooms::Room;
use crate::db::users::User;
use crate::pubsub::Broadcaster;
use crate::rails::StreamNameSigner;

/// Which channel a subscription belongs to, with what it resolved at subscribe time.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Channel {
    /// `Turbo::StreamsChannel`.
    TurboStreams,
    /// `RoomMessagesChannel` for a room.
    RoomMessages(Room),
    /// `PresenceChannel` for a room.
    Presence(Room),
    /// `TypingNotificationsChannel` for a room.
    TypingNotifications(Room),
    /// `UnreadRoomsChannel`.
    UnreadRooms,
    /// `ReadRoomsChannel`.
    ReadRooms,
    /// `HeartbeatChannel`.
    Heartbeat,
    /// One of an app's channels (`--rpc-url`), with the subscription's state (`istate`,
    /// opaque to Hearth).
    App(crate::rpc::StringMap),
}

/// A confirmed subscription's channel and streams.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Subscribed {
    /// The channel.
    pub channel: Channel,
    /// The streams to attach (`stream_from`).
    pub streams: Vec<String>,
}

/// What a `subscribe` comes to.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Outcome {
    /// Attach the streams, then send `confirm_subscription`.
    Confirm(Subscribed),
    /// Send `reject_subscription` (the channel called `reject`).
    Reject,
    /// No such channel class: Rails sends nothing and logs `Subscription class not found`.
    UnknownChannel,
}

/// Everything a channel may need: the database, the broadcaster, the stream signer and the
/// connection's user — not the whole server state.
#[derive(Clone, Copy, Debug)]
pub struct ChannelContext<'a> {
    /// The SQLite pool (membership lookups, presence).
    pub pool: &'a SqlitePool,
    /// Membership answers kept for a few seconds (a subscription's room check).
    pub auth_cache: &'a AuthCache,
    /// Where the channel's broadcasts go (typing, reads).
    pub broadcaster: &'a Broadcaster,
    /// Turbo's signed stream name verifier.
    pub signer: &'a StreamNameSigner,
    /// The connection's user (`current_user`).
    pub user: &'a User,
    /// Presence per connection (`PresenceChannel` reports its tab's state there).
    pub presence: &'a crate::presence::Presence,
    /// The connection's id (its tab, for presence).
    pub connection_id: u64,
}

/// Runs a channel's `subscribed` for `channel` with `params`.
pub async fn subscribe(
    ctx: ChannelContext<'_>,
    channel: &str,
    params: &Map<String, Value>,
) -> anyhow::Result<Outcome> {
    Ok(match channel {
        "Turbo::StreamsChannel" => turbo_streams::subscribe(ctx, params),
        "RoomMessagesChannel" => room_messages::subscribe(ctx, params).await?,
        "PresenceChannel" => match member_room(ctx, params).await? {
            Some(room) => presence::subscribe(ctx, room).await?,
            None => Outcome::Reject,
        },
        "TypingNotificationsChannel" => match member_room(ctx, params).await? {
            Some(room) => typing_notifications::subscribe(ctx, room),
            None => Outcome::Reject,
        },
        "UnreadRoomsChannel" => unread_rooms::subscribe(ctx),
        "ReadRoomsChannel" => read_rooms::subscribe(ctx),
        "HeartbeatChannel" => heartbeat::subscribe(),
        _ => Outcome::UnknownChannel,
    })
}

/// The channel classes Campfire owns (the table above): every other name is an app's when
/// `--rpc-url` is set.
pub const CAMPFIRE_CHANNELS: [&str; 7] = [
    "Turbo::StreamsChannel",
    "RoomMessagesChannel",
    "PresenceChannel",
    "TypingNotificationsChannel",
    "UnreadRoomsChannel",
    "ReadRoomsChannel",
    "HeartbeatChannel",
];

/// Runs a channel's `unsubscribed` (on `unsubscribe` and when the connection closes).
pub async fn unsubscribed(ctx: ChannelContext<'_>, sub: &Subscribed) -> anyhow::Result<()> {
    if let Channel::Presence(room) = &sub.channel {
        presence::unsubscribed(ctx, room).await?;
    }
    Ok(())
}

/// Runs action `action` of a subscription with the decoded `data`. Returns false when the
/// channel has no such action (Rails logs `Unable to process Channel#action`).
///
/// `within_rate` is false for an action past the connection's budget for its channel: a
/// typing notice is then dropped, and a presence action updates the tab's state without
/// broadcasting (see [`crate::cable::connection`]).
pub async fn perform(
    ctx: ChannelContext<'_>,
    sub: &Subscribed,
    action: &str,
    within_rate: bool,
) -> anyhow::Result<bool> {
    match &sub.channel {
        Channel::Presence(room) => presence::perform(ctx, room, action, within_rate).await,
        Channel::TypingNotifications(room) => Ok(typing_notifications::perform(
            ctx,
            room,
            action,
            within_rate,
        )),
        _ => Ok(false),
    }
}

/// The room a subscription is scoped to (`RoomMessagesChannel`, `PresenceChannel`,
/// `TypingNotificationsChannel`), `None` for the user-scoped channels.
pub fn scoped_room(sub: &Subscribed) -> Option<&Room> {
    match &sub.channel {
        Channel::RoomMessages(room)
        | Channel::Presence(room)
        | Channel::TypingNotifications(room) => Some(room),
        _ => None,
    }
}

/// Whether a confirmed subscription is still allowed: for a room-scoped channel, whether the
/// user is still a member of the room (the re-check after a membership change); user-scoped
/// channels always are.
pub async fn still_allowed(ctx: ChannelContext<'_>, sub: &Subscribed) -> anyhow::Result<bool> {
    Ok(match scoped_room(sub) {
        Some(room) => ctx
            .auth_cache
            .find_for_member(ctx.pool, room.id, ctx.user.id)
            .await?
            .is_some(),
        None => true,
    })
}

/// Reads `room_id` from a subscription's params as an integer or a decimal string (as Rails'
/// `Room.find(params[:room_id])` accepts both); None when missing, fractional, out of `i64`
/// range or of another type.
pub fn room_id_param(params: &Map<String, Value>) -> Option<i64> {
    match params.get("room_id")? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The room named by `room_id` when the user is a member of it: the rooms `PresenceChannel`
/// and `TypingNotificationsChannel` subscribe to (a non-member is rejected).
pub(crate) async fn member_room(
    ctx: ChannelContext<'_>,
    params: &Map<String, Value>,
) -> anyhow::Result<Option<Room>> {
    let Some(id) = room_id_param(params) else {
        return Ok(None);
    };
    Ok(ctx
        .auth_cache
        .find_for_member(ctx.pool, id, ctx.user.id)
        .await?)
}
