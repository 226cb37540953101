//! What each event broadcasts, and to which stream, as Campfire's models do
//! (`app/models/message/broadcasts.rb`, the channels' `broadcast_to`).
//!
//! | event | stream | payload (the `message` of the frame) |
//! |---|---|---|
//! | new message | `<room gid param>:messages` | turbo-stream `append` to `messages_rooms_<kind>_<id>` |
//! | new message | `user_<id>_unreads`, for every member | `{"roomId":<room id>}` |
//! | edit | `<room gid param>:messages` | turbo-stream `replace` of `message_<client_message_id>` |
//! | delete | `<room gid param>:messages` | turbo-stream `remove` of `message_<client_message_id>` |
//! | boost | `<room gid param>:messages` | turbo-stream `append` to `boosts_message_<client_message_id>` |
//! | typing start/stop | `typing_notifications:<room gid param>` | `{"action":"start","user":{"id":1,"name":"…"}}` |
//! | presence | `user_<id>_reads` | `{"room_id":<room id>}` |
//!
//! Each payload is rendered and JSON-encoded (ActiveSupport escaping) once, then handed to the
//! fan-out engine, which wraps it once per identifier variant.

use crate::app::AppState;
use crate::db::messages::{Boost, Message};
use crate::db::rooms::Room;
use crate::rails::{global_id, json};
use crate::web::render;

/// `<room gid param>:messages`, the stream of a room's message list
/// (`turbo_stream_from @room, :messages`).
pub fn room_messages_stream(app: &str, room: &Room) -> String {
    format!(
        "{}:messages",
        global_id::to_gid_param(app, room.model_name(), room.id)
    )
}

/// `<user gid param>:rooms`, the stream of a user's room list.
pub fn user_rooms_stream(app: &str, user_id: i64) -> String {
    format!("{}:rooms", global_id::to_gid_param(app, "User", user_id))
}

/// `typing_notifications:<room gid param>` (`TypingNotificationsChannel.broadcast_to room`).
pub fn typing_stream(app: &str, room: &Room) -> String {
    format!(
        "typing_notifications:{}",
        global_id::to_gid_param(app, room.model_name(), room.id)
    )
}

/// `presence:<room gid param>` (`PresenceChannel`'s `stream_for room`; nothing is sent on it).
pub fn presence_stream(app: &str, room: &Room) -> String {
    format!(
        "presence:{}",
        global_id::to_gid_param(app, room.model_name(), room.id)
    )
}

/// `user_<id>_unreads` (`UnreadRoomsChannel`).
pub fn unreads_stream(user_id: i64) -> String {
    format!("user_{user_id}_unreads")
}

/// `user_<id>_reads` (`ReadRoomsChannel`).
pub fn reads_stream(user_id: i64) -> String {
    format!("user_{user_id}_reads")
}

/// A random client message id (a UUID v4 in its text form), for posts that give none.
pub fn new_client_message_id() -> String {
    let mut b = [0u8; 16];
    rand::fill(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The turbo-stream `append` of a new message to its room's list (also the poster's own
/// turbo-stream response).
pub fn message_append(room: &Room, message: &Message) -> String {
    render::turbo_stream(
        "append",
        &room.messages_target(),
        Some(&render::message(message)),
    )
}

fn send_html(state: &AppState, stream: &str, html: &str) -> usize {
    let payload = json::json_string(html, state.json);
    state.fanout.broadcast(stream, payload.as_bytes())
}

/// Broadcasts a new message: the append to the room's stream, then `{"roomId":…}` to every
/// member's unread stream. `html` is the rendered append (rendered once, shared with the
/// HTTP response). The call's duration is recorded as `hearth_broadcast_duration_seconds`.
pub fn message_created(state: &AppState, room: &Room, html: &str, member_ids: &[i64]) {
    let started = std::time::Instant::now();
    send_html(
        state,
        &room_messages_stream(&state.config.gid_app, room),
        html,
    );
    let unread = format!("{{\"roomId\":{}}}", room.id);
    let mut stream = String::with_capacity(32);
    for id in member_ids {
        stream.clear();
        use std::fmt::Write as _;
        let _ = write!(stream, "user_{id}_unreads");
        state.fanout.broadcast(&stream, unread.as_bytes());
    }
    state.metrics.broadcast_finished(started.elapsed());
}

/// Broadcasts an edited message: a `replace` of its element. Returns the turbo-stream (the
/// editor's own response).
pub fn message_updated(state: &AppState, room: &Room, message: &Message) -> String {
    let html = render::turbo_stream(
        "replace",
        &format!("message_{}", message.client_message_id),
        Some(&render::message(message)),
    );
    send_html(
        state,
        &room_messages_stream(&state.config.gid_app, room),
        &html,
    );
    html
}

/// Broadcasts a deleted message: a `remove` of its element. Returns the turbo-stream.
pub fn message_removed(state: &AppState, room: &Room, message: &Message) -> String {
    let html = render::turbo_stream(
        "remove",
        &format!("message_{}", message.client_message_id),
        None,
    );
    send_html(
        state,
        &room_messages_stream(&state.config.gid_app, room),
        &html,
    );
    html
}

/// The HTML of one boost, as the boosts container holds it.
pub fn boost_html(boost: &Boost) -> String {
    let title = askama::filters::escape(&boost.booster_name, askama::filters::Html)
        .map(|s| s.to_string())
        .unwrap_or_default();
    let content = askama::filters::escape(&boost.content, askama::filters::Html)
        .map(|s| s.to_string())
        .unwrap_or_default();
    format!(
        "<span id=\"boost_{}\" class=\"boost\" title=\"{title}\">{content}</span>",
        boost.id
    )
}

/// Broadcasts a boost: an `append` to `boosts_message_<client_message_id>`.
pub fn boost_created(state: &AppState, room: &Room, message: &Message, boost: &Boost) -> String {
    let html = render::turbo_stream(
        "append",
        &format!("boosts_message_{}", message.client_message_id),
        Some(&boost_html(boost)),
    );
    send_html(
        state,
        &room_messages_stream(&state.config.gid_app, room),
        &html,
    );
    html
}

/// Broadcasts a typing notice: `{"action":"start"|"stop","user":{"id":…,"name":"…"}}`.
pub fn typing(state: &AppState, room: &Room, action: &str, user_id: i64, user_name: &str) {
    let mut payload = Vec::with_capacity(64);
    payload.extend_from_slice(b"{\"action\":");
    json::write_json_string(&mut payload, action, state.json);
    payload.extend_from_slice(format!(",\"user\":{{\"id\":{user_id},\"name\":").as_bytes());
    json::write_json_string(&mut payload, user_name, state.json);
    payload.extend_from_slice(b"}}");
    state
        .fanout
        .broadcast(&typing_stream(&state.config.gid_app, room), &payload);
}

/// Broadcasts a read notice `{"room_id":…}` to the user's reads stream (PresenceChannel).
pub fn room_read(state: &AppState, room_id: i64, user_id: i64) {
    state.fanout.broadcast(
        &reads_stream(user_id),
        format!("{{\"room_id\":{room_id}}}").as_bytes(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_names_follow_global_id() {
        let room = Room {
            id: 1,
            name: None,
            kind: "open".into(),
            updated_at: 0,
        };
        // base64url("gid://campfire/Rooms::Open/1"), unpadded.
        assert_eq!(
            room_messages_stream("campfire", &room),
            "Z2lkOi8vY2FtcGZpcmUvUm9vbXM6Ok9wZW4vMQ:messages"
        );
        assert_eq!(unreads_stream(7), "user_7_unreads");
    }

    #[test]
    fn client_message_ids_look_like_uuids() {
        let id = new_client_message_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert_ne!(id, new_client_message_id());
    }
}
