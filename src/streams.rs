//! Stream (broadcasting) names, as Campfire's models and channels spell them.
//!
//! A room or user stream is named by its GlobalID param (`base64url("gid://<app>/<Model>/<id>")`,
//! unpadded, see [`crate::rails::global_id`]), so a Rails app with the same app name computes
//! the same names.

use crate::db::rooms::Room;
use crate::history::Numbered;
use crate::rails::global_id;

/// `<room gid param>:messages`, the stream of a room's message list
/// (`turbo_stream_from @room, :messages`).
pub fn room_messages(app: &str, room: &Room) -> String {
    format!(
        "{}:messages",
        global_id::to_gid_param(app, room.model_name(), room.id)
    )
}

/// `<user gid param>:rooms`, the stream of a user's room list.
pub fn user_rooms(app: &str, user_id: i64) -> String {
    format!("{}:rooms", global_id::to_gid_param(app, "User", user_id))
}

/// `user_<id>_bookmarks`, the stream of a person's open bookmark lists (a removal's `remove`).
pub fn user_bookmarks(user_id: i64) -> String {
    format!("user_{user_id}_bookmarks")
}

/// Whether `stream` is one of Campfire's own (those of this module, the signed Turbo streams
/// of its pages): a part of it between `:` is a GlobalID param of app `gid_app` (a room's,
/// a user's), or it is `user_<id>_bookmarks`, `_unreads`, `_reads` or `_inbox`. Campfire's channels
/// alone may attach these: what they carry is guarded by memberships an app's channels know
/// nothing of (`docs/rails-app.md`).
pub fn is_campfires(stream: &str, gid_app: &str) -> bool {
    let own_gid = stream.split(':').any(|part| {
        crate::rails::global_id::parse_gid_param(part).is_some_and(|(app, _, _)| app == gid_app)
    });
    let user_stream = ["_bookmarks", "_unreads", "_reads", "_inbox"]
        .iter()
        .any(|suffix| {
            stream
                .strip_prefix("user_")
                .and_then(|rest| rest.strip_suffix(suffix))
                .is_some_and(|id| id.parse::<i64>().is_ok())
        });
    own_gid || user_stream
}

/// `user_<id>_inbox`, the stream of a person's inbox badge: its new count after a boost on
/// their message or "Mark all read" ([`crate::broadcasts::inbox_count`]). New messages and
/// reads in a room are told on `user_<id>_unreads` and `user_<id>_reads`, which the sidebar
/// already follows.
pub fn user_inbox(user_id: i64) -> String {
    format!("user_{user_id}_inbox")
}

/// What the stream history ([`crate::history`]) keeps of a stream's broadcasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retention {
    /// Nothing: no position, no entry (typing notices: replaying one after a reconnect would
    /// show someone typing who stopped).
    Transient,
    /// A position on every broadcast but no entry (a user's unread and read marks,
    /// `user_<id>_unreads` and `user_<id>_reads`): a reader that missed one learns it (the
    /// history answers it as no longer covered) and renders the marks again from the
    /// database, which holds them. One post sends one notice per member of its room, so
    /// keeping them would cost the post path an entry per member.
    Position,
    /// A position and an entry, within `--history-limit` and `--history-ttl`.
    Kept,
}

/// The streams of a user's unread and read marks, `user_<id>_unreads` ([`unreads`]) and
/// `user_<id>_reads` ([`reads`]): [`Retention::Position`], and the families the in-memory
/// history keeps in its tables by id ([`crate::history::MemoryHistory::with_numbered`]).
pub const MARKS: [Numbered; 2] = [UNREADS, READS];

/// The family of a user's unread stream, `user_<id>_unreads` ([`unreads`]).
pub const UNREADS: Numbered = Numbered {
    prefix: "user_",
    suffix: "_unreads",
};

/// The family of a user's read stream, `user_<id>_reads` ([`reads`]).
pub const READS: Numbered = Numbered {
    prefix: "user_",
    suffix: "_reads",
};

/// How much of `stream`'s broadcasts the history keeps (see [`Retention`]).
pub fn retention(stream: &str) -> Retention {
    if stream.starts_with("typing_notifications:") {
        return Retention::Transient;
    }
    let marks = MARKS.iter().any(|family| {
        stream
            .strip_prefix(family.prefix)
            .and_then(|rest| rest.strip_suffix(family.suffix))
            .is_some_and(|id| id.parse::<i64>().is_ok())
    });
    if marks {
        Retention::Position
    } else {
        Retention::Kept
    }
}

/// `typing_notifications:<room gid param>` (`TypingNotificationsChannel.broadcast_to room`).
pub fn typing(app: &str, room: &Room) -> String {
    format!(
        "typing_notifications:{}",
        global_id::to_gid_param(app, room.model_name(), room.id)
    )
}

/// `presence:<room gid param>` (`PresenceChannel`'s `stream_for room`; nothing is sent on it).
pub fn presence(app: &str, room: &Room) -> String {
    format!(
        "presence:{}",
        global_id::to_gid_param(app, room.model_name(), room.id)
    )
}

/// `user_<id>_unreads` (`UnreadRoomsChannel`).
pub fn unreads(user_id: i64) -> String {
    let mut name = String::with_capacity(32);
    write_unreads(&mut name, user_id);
    name
}

/// Writes `user_<id>_unreads` into `name`, replacing what it held: the same name as
/// [`unreads`], for a loop over a room's members that reuses one buffer (no allocation per
/// member on the post path).
pub fn write_unreads(name: &mut String, user_id: i64) {
    UNREADS.write(name, user_id);
}

/// `user_<id>_reads` (`ReadRoomsChannel`).
pub fn reads(user_id: i64) -> String {
    format!("user_{user_id}_reads")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn campfires_streams_are_told_from_an_apps() {
        let room = global_id::to_gid_param("campfire", "Room", 3);
        for own in [
            format!("{room}:messages"),
            room.clone(),
            format!("typing_notifications:{room}"),
            user_rooms("campfire", 4),
            user_bookmarks(4),
            unreads(4),
            reads(4),
        ] {
            assert!(is_campfires(&own, "campfire"), "{own}");
        }
        let other = global_id::to_gid_param("shop", "Room", 3);
        for apps in [
            other.as_str(),
            "chat_3",
            "user_4_notifications",
            "user_x_unreads",
        ] {
            assert!(!is_campfires(apps, "campfire"), "{apps}");
        }
    }

    #[test]
    fn stream_names_follow_global_id() {
        let room = Room {
            id: 1,
            name: None,
            kind: crate::db::RoomKind::Open,
            updated_at: 0,
        };
        // base64url("gid://campfire/Rooms::Open/1"), unpadded.
        assert_eq!(
            room_messages("campfire", &room),
            "Z2lkOi8vY2FtcGZpcmUvUm9vbXM6Ok9wZW4vMQ:messages"
        );
        assert_eq!(unreads(7), "user_7_unreads");
        let mut reused = String::from("something longer than the name");
        write_unreads(&mut reused, -3);
        assert_eq!(reused, "user_-3_unreads");
        assert_eq!(reads(7), "user_7_reads");
    }

    #[test]
    fn marks_keep_positions_only_and_typing_nothing() {
        assert_eq!(retention(&unreads(7)), Retention::Position);
        assert_eq!(retention(&reads(-3)), Retention::Position);
        assert_eq!(retention("typing_notifications:abc"), Retention::Transient);
        for kept in [
            "Z2lkOi8vY2FtcGZpcmUvUm9vbXM6Ok9wZW4vMQ:messages",
            "rooms",
            "user_x_unreads",
            "user__reads",
            "user_7_unreads_more",
            "my_user_7_unreads",
        ] {
            assert_eq!(retention(kept), Retention::Kept, "{kept}");
        }
    }
}
