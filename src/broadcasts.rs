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
//! | boost deleted (bot API) | `<room gid param>:messages` | turbo-stream `remove` of `boost_<id>` |
//! | ban (the user's messages purged) | `<room gid param>:messages`, per room | one turbo-stream `remove` per message |
//! | typing start/stop | `typing_notifications:<room gid param>` | `{"action":"start","user":{"id":1,"name":"…"}}` |
//! | presence | `user_<id>_reads` | `{"room_id":<room id>}` |
//! | open room created | `rooms` | turbo-stream `prepend` to `shared_rooms` |
//! | closed room created | `<user gid param>:rooms`, for every member | `prepend` to `shared_rooms` |
//! | open room updated | `rooms` | `replace` of `list_rooms_<kind>_<id>`; newcomers: `prepend` on their `:rooms` |
//! | closed room updated | `<user gid param>:rooms` | kept members: `replace`; granted: `prepend` to `shared_rooms`; revoked: `remove` |
//! | direct room found or created | `<user gid param>:rooms`, for every member | `prepend` to `direct_rooms` (each member's own entry) |
//! | room destroyed | `rooms` | `remove` of `list_rooms_<kind>_<id>` |
//! | reply in a thread | `<parent room gid param>:messages` | turbo-stream `replace` of `thread_summary_message_<parent's client_message_id>` |
//! | inbox changed (a boost on one's message, "Mark all read") | `user_<id>_inbox` | turbo-stream `replace` of `inbox_badge` |
//! | involvement to/from invisible | `<user gid param>:rooms` | `remove` / `prepend` to `shared_rooms` (not for direct rooms) |
//!
//! One call per event: it renders the payload once, JSON-encodes it once (ActiveSupport
//! escaping), hands it to the [`Broadcaster`] (which wraps it once per identifier variant) and
//! returns the turbo-stream HTML for the HTTP answer of the request that caused it. A render
//! that fails is an error, never an empty broadcast. Nothing here touches the database.

use crate::db::memberships::Revision;
use crate::db::messages::{Boost, Message};
use crate::db::rooms::{Room, SidebarRoom};
use crate::pubsub::Broadcaster;
use crate::rails::json;
use crate::rails::ActiveStorageVerifier;
use crate::render;
use crate::streams;

/// Broadcasts a new message: the `append` to the room's stream, `{"roomId":…}` to every
/// member's unread stream, then `{"roomId":…,"mentioned":true}` to the unread stream of each
/// of `mentionee_ids` ([`message_appended`], [`message_unreads`], `mentioned`), as one
/// delivery pass ([`Broadcaster::one_pass`]: a member's connection writes its frames at once).
/// Called at the message's commit, under the write lock, so every notice on a user's unread
/// stream is given its position and queued in one order (an extended client's gate drops a
/// frame whose position comes after one it was sent already). Returns the `append` (the
/// poster's own turbo-stream answer). `shown` is its body as drawn ([`render::message_shown`]).
///
/// # Errors
/// The message partial failed to render; nothing was broadcast.
pub fn message_created(
    b: &Broadcaster,
    urls: &ActiveStorageVerifier,
    room: &Room,
    message: &Message,
    shown: (String, Vec<i64>),
    member_ids: &[i64],
    mentionee_ids: &[i64],
) -> Result<String, askama::Error> {
    b.one_pass(|| {
        let html = message_appended(b, urls, room, message, shown)?;
        message_unreads(b, room, member_ids);
        mentioned(b, room.id, mentionee_ids);
        Ok(html)
    })
}

/// Broadcasts the `append` of a new message to the room's stream (Campfire's
/// `broadcast_append_to room, :messages`) and returns it. Called at the message's commit,
/// under the write lock ([`crate::db::messages::create_then`]), so a room's appends go out in
/// the order of the messages' ids. The call's duration is recorded as
/// `hearth_broadcast_duration_seconds`. `shown` is the message's body as drawn
/// ([`render::message_shown`]).
///
/// # Errors
/// The message partial failed to render; nothing was broadcast.
pub fn message_appended(
    b: &Broadcaster,
    urls: &ActiveStorageVerifier,
    room: &Room,
    message: &Message,
    shown: (String, Vec<i64>),
) -> Result<String, askama::Error> {
    let started = std::time::Instant::now();
    let html = render::turbo_stream(
        "append",
        &room.messages_target(),
        Some(&render::message_shown(message, shown, urls)?),
    );
    b.broadcast_string(&streams::room_messages(b.gid_app(), room), &html);
    b.record_duration(started.elapsed());
    Ok(html)
}

/// Broadcasts `{"roomId":<room id>}` to each member's `user_<id>_unreads` stream (Campfire's
/// unread notice of a new message).
pub fn message_unreads(b: &Broadcaster, room: &Room, member_ids: &[i64]) {
    let unread = format!("{{\"roomId\":{}}}", room.id);
    b.broadcast_numbered(&streams::UNREADS, member_ids, unread.as_bytes());
}

/// Broadcasts `{"roomId":<room id>,"mentioned":true}` to the unread stream of each member a
/// new message mentions: the sidebar marks the room for attention (bold and a dot). Only part
/// of [`message_created`], at the commit: sent on its own, outside the write lock, a notice
/// could take a position on a user's unread stream before a concurrent post's notice and be
/// queued first.
fn mentioned(b: &Broadcaster, room_id: i64, mentionee_ids: &[i64]) {
    if mentionee_ids.is_empty() {
        return;
    }
    let notice = format!("{{\"roomId\":{room_id},\"mentioned\":true}}");
    for id in mentionee_ids {
        b.broadcast(&streams::unreads(*id), notice.as_bytes());
    }
}

/// Broadcasts an edited message: a `replace` of its element. Returns the turbo-stream (the
/// editor's own answer).
///
/// # Errors
/// The message partial failed to render; nothing was broadcast.
pub fn message_updated(
    b: &Broadcaster,
    urls: &ActiveStorageVerifier,
    room: &Room,
    message: &Message,
) -> Result<String, askama::Error> {
    let html = render::turbo_stream(
        "replace",
        &message.dom_id(),
        Some(&render::message(message, urls)?),
    );
    b.broadcast_string(&streams::room_messages(b.gid_app(), room), &html);
    Ok(html)
}

/// Broadcasts a thread's new summary to its parent's room (a reply was posted in it): a
/// `replace` of the parent's `thread_summary_<dom id>` element, in every open page of that
/// room. `parent_dom_id` is the parent's `message_<client_message_id>`.
///
/// # Errors
/// The summary failed to render; nothing was broadcast.
pub fn thread_summary_changed(
    b: &Broadcaster,
    parent_room: &Room,
    parent_dom_id: &str,
    summary: &crate::db::threads::Summary,
) -> Result<(), askama::Error> {
    let html = render::turbo_stream(
        "replace",
        &format!("thread_summary_{parent_dom_id}"),
        Some(&render::thread_summary(parent_dom_id, Some(summary))?),
    );
    b.broadcast_string(&streams::room_messages(b.gid_app(), parent_room), &html);
    Ok(())
}

/// Broadcasts a deleted message: a `remove` of its element. Returns the turbo-stream.
pub fn message_removed(b: &Broadcaster, room: &Room, message: &Message) -> String {
    let html = render::turbo_stream("remove", &message.dom_id(), None);
    b.broadcast_string(&streams::room_messages(b.gid_app(), room), &html);
    html
}

/// Broadcasts a boost: an `append` to `boosts_message_<client_message_id>`. Returns the
/// turbo-stream.
pub fn boost_created(b: &Broadcaster, room: &Room, message: &Message, boost: &Boost) -> String {
    let html = render::turbo_stream(
        "append",
        &format!("boosts_{}", message.dom_id()),
        Some(&render::boost(boost)),
    );
    b.broadcast_string(&streams::room_messages(b.gid_app(), room), &html);
    html
}

/// Broadcasts a deleted boost: a `remove` of `boost_<id>`. Returns the turbo-stream.
pub fn boost_removed(b: &Broadcaster, room: &Room, boost_id: i64) -> String {
    let html = render::turbo_stream("remove", &format!("boost_{boost_id}"), None);
    b.broadcast_string(&streams::room_messages(b.gid_app(), room), &html);
    html
}

/// Broadcasts the removal of a banned user's messages from one room (Campfire's ban
/// cleanup): one `remove` of `message_<client_message_id>` per message, in one frame (the
/// turbo-streams one after another). Sends nothing for an empty list.
pub fn messages_purged(b: &Broadcaster, room: &Room, client_message_ids: &[String]) {
    if client_message_ids.is_empty() {
        return;
    }
    let mut html = String::with_capacity(client_message_ids.len() * 80);
    for id in client_message_ids {
        html.push_str(&render::turbo_stream(
            "remove",
            &format!("message_{id}"),
            None,
        ));
    }
    b.broadcast_string(&streams::room_messages(b.gid_app(), room), &html);
}

/// Broadcasts a typing notice: `{"action":"start"|"stop","user":{"id":…,"name":"…"}}`.
pub fn typing(b: &Broadcaster, room: &Room, action: &str, user_id: i64, user_name: &str) {
    let mut payload = Vec::with_capacity(64);
    payload.extend_from_slice(b"{\"action\":");
    json::write_json_string(&mut payload, action, b.json());
    payload.extend_from_slice(format!(",\"user\":{{\"id\":{user_id},\"name\":").as_bytes());
    json::write_json_string(&mut payload, user_name, b.json());
    payload.extend_from_slice(b"}}");
    b.broadcast(&streams::typing(b.gid_app(), room), &payload);
}

/// Broadcasts a read notice `{"room_id":…}` to the user's reads stream (PresenceChannel).
pub fn room_read(b: &Broadcaster, room_id: i64, user_id: i64) {
    b.broadcast(
        &streams::reads(user_id),
        format!("{{\"room_id\":{room_id}}}").as_bytes(),
    );
}

/// Broadcasts `user_id`'s inbox badge with its `count` of unread items
/// ([`render::inbox_badge`]): a turbo-stream `replace` of `inbox_badge` on `user_<id>_inbox`,
/// to every open sidebar and inbox page of theirs.
pub fn inbox_count(b: &Broadcaster, user_id: i64, count: usize) {
    let html = render::turbo_stream("replace", "inbox_badge", Some(&render::inbox_badge(count)));
    b.broadcast_string(&streams::user_inbox(user_id), &html);
}

/// The stream every sidebar listens to for shared room-list changes (`turbo_stream_from :rooms`).
pub const ROOMS_STREAM: &str = "rooms";

/// `dom_id(room, :list)`: the id of a room's sidebar entry (`list_rooms_open_1`).
pub fn list_target(room: &Room) -> String {
    format!("list_rooms_{}_{}", room.kind, room.id)
}

/// Broadcasts a new open or closed room to the sidebars (Campfire's
/// `Rooms::OpensController#broadcast_create_room`, `Rooms::ClosedsController#…`): an open room
/// is prepended to `shared_rooms` on `rooms`, a closed one on each member's `:rooms` stream.
///
/// # Errors
/// The entry failed to render; nothing was broadcast.
pub fn shared_room_created(
    b: &Broadcaster,
    room: &Room,
    member_ids: &[i64],
) -> Result<(), askama::Error> {
    let entry = render::sidebar_room(&SidebarRoom::shared(room))?;
    let html = render::turbo_stream("prepend", "shared_rooms", Some(&entry));
    if room.kind == crate::db::RoomKind::Open {
        b.broadcast_string(ROOMS_STREAM, &html);
    } else {
        for id in member_ids {
            b.broadcast_string(&streams::user_rooms(b.gid_app(), *id), &html);
        }
    }
    Ok(())
}

/// Broadcasts a renamed or converted open/closed room (Campfire's `broadcast_update_room`):
/// the entry is replaced (on `rooms` for an open room, else on each kept member's `:rooms`),
/// prepended for the members `revision` granted, and removed for those it revoked. `was` is
/// the room's kind before the change: the sidebars still name a converted room's entry by it
/// (`list_rooms_open_5` until it is replaced by `list_rooms_closed_5`).
///
/// # Errors
/// The entry failed to render; nothing was broadcast.
pub fn shared_room_updated(
    b: &Broadcaster,
    room: &Room,
    was: crate::db::RoomKind,
    revision: &Revision,
) -> Result<(), askama::Error> {
    let entry = render::sidebar_room(&SidebarRoom::shared(room))?;
    let target = format!("list_rooms_{}_{}", was, room.id);
    let replace = render::turbo_stream("replace", &target, Some(&entry));
    if room.kind == crate::db::RoomKind::Open {
        b.broadcast_string(ROOMS_STREAM, &replace);
    } else {
        for id in &revision.kept {
            b.broadcast_string(&streams::user_rooms(b.gid_app(), *id), &replace);
        }
    }
    let prepend = render::turbo_stream("prepend", "shared_rooms", Some(&entry));
    for id in &revision.granted {
        b.broadcast_string(&streams::user_rooms(b.gid_app(), *id), &prepend);
    }
    let remove = render::turbo_stream("remove", &target, None);
    for id in &revision.revoked {
        b.broadcast_string(&streams::user_rooms(b.gid_app(), *id), &remove);
    }
    Ok(())
}

/// Removes a room's entry from the sidebars of `user_ids` (their memberships were deleted).
pub fn members_removed(b: &Broadcaster, room: &Room, user_ids: &[i64]) {
    let remove = render::turbo_stream("remove", &list_target(room), None);
    for id in user_ids {
        b.broadcast_string(&streams::user_rooms(b.gid_app(), *id), &remove);
    }
}

/// Broadcasts a direct room found or created for its members (Campfire's
/// `Rooms::DirectsController#broadcast_create_room`): each member's own entry (named by the
/// others) is prepended to `direct_rooms` on that member's `:rooms` stream.
///
/// # Errors
/// An entry failed to render; the entries before it were broadcast.
pub fn direct_room_created(
    b: &Broadcaster,
    entries: &[(i64, SidebarRoom)],
) -> Result<(), askama::Error> {
    for (user_id, entry) in entries {
        let html = render::turbo_stream(
            "prepend",
            "direct_rooms",
            Some(&render::sidebar_room(entry)?),
        );
        b.broadcast_string(&streams::user_rooms(b.gid_app(), *user_id), &html);
    }
    Ok(())
}

/// Broadcasts a destroyed room (Campfire's `RoomsController#broadcast_remove_room`): a
/// `remove` of its entry on `rooms`. Returns the turbo-stream.
pub fn room_removed(b: &Broadcaster, room: &Room) -> String {
    let html = render::turbo_stream("remove", &list_target(room), None);
    b.broadcast_string(ROOMS_STREAM, &html);
    html
}

/// Broadcasts an involvement change to the member's own sidebars (Campfire's
/// `Rooms::InvolvementsController#broadcast_visibility_changes`): going invisible removes the
/// entry, leaving invisible prepends it; direct rooms and other changes send nothing.
///
/// # Errors
/// The entry failed to render; nothing was broadcast.
pub fn involvement_changed(
    b: &Broadcaster,
    room: &Room,
    user_id: i64,
    previous: crate::db::Involvement,
    involvement: crate::db::Involvement,
    entry: &SidebarRoom,
) -> Result<(), askama::Error> {
    if room.kind == crate::db::RoomKind::Direct || previous == involvement {
        return Ok(());
    }
    let stream = streams::user_rooms(b.gid_app(), user_id);
    if involvement == crate::db::Involvement::Invisible {
        b.broadcast_string(
            &stream,
            &render::turbo_stream("remove", &list_target(room), None),
        );
    } else if previous == crate::db::Involvement::Invisible {
        let html = render::turbo_stream(
            "prepend",
            "shared_rooms",
            Some(&render::sidebar_room(entry)?),
        );
        b.broadcast_string(&stream, &html);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::fanout::interest::Interest;
    use crate::metrics::Metrics;
    use crate::pubsub::{Bus, Control, ControlHandler, Health};
    use crate::rails::json::JsonEscaping;

    /// Records every publish: (stream, payload).
    #[derive(Debug, Default)]
    struct Recorder(Mutex<Vec<(String, String)>>, Interest);

    impl Bus for Recorder {
        fn control(&self, _command: Control) {}

        fn on_control(&self, _handler: ControlHandler) {}

        fn interest(&self) -> &Interest {
            &self.1
        }

        fn ready<'a>(&'a self, _streams: &'a [String]) -> futures_util::future::BoxFuture<'a, ()> {
            Box::pin(std::future::ready(()))
        }

        fn health(&self) -> Health {
            Health::Local
        }

        fn publish(&self, stream: &str, payload: &[u8]) -> usize {
            let payload = String::from_utf8_lossy(payload).into_owned();
            self.0
                .lock()
                .expect("not poisoned")
                .push((stream.to_owned(), payload));
            1
        }
    }

    fn broadcaster() -> (Arc<Recorder>, Broadcaster) {
        let recorder = Arc::new(Recorder::default());
        let json = JsonEscaping {
            escape_html_entities: true,
            escape_js_separators: true,
        };
        let b =
            Broadcaster::with_sink(recorder.clone(), json, "campfire", Arc::new(Metrics::new()));
        (recorder, b)
    }

    fn room() -> Room {
        Room {
            id: 1,
            name: Some("All Talk".into()),
            kind: crate::db::RoomKind::Open,
            updated_at: 0,
        }
    }

    fn shown() -> (String, Vec<i64>) {
        crate::rich_text::render(&message().body)
    }

    fn message() -> Message {
        Message {
            id: 7,
            room_id: 1,
            creator_id: 2,
            creator_name: "Ada <Lovelace>".into(),
            creator_bio: String::new(),
            client_message_id: "c-7".into(),
            body: "<div>hi</div>".into(),
            created_at: 1_796_004_300_000,
            updated_at: 1_796_004_300_000,
            boosts: Vec::new(),
            attachment: None,
            creator_avatar: None,
            thread: None,
        }
    }

    fn urls() -> ActiveStorageVerifier {
        ActiveStorageVerifier::from_secret_key_base(b"test", crate::rails::KdfDigest::Sha256)
    }

    #[test]
    fn a_new_message_goes_to_the_room_then_to_each_members_unreads() {
        let (recorder, b) = broadcaster();
        let html = message_created(&b, &urls(), &room(), &message(), shown(), &[2, 3], &[])
            .expect("renders");
        assert!(html.starts_with(
            "<turbo-stream action=\"append\" target=\"messages_rooms_open_1\"><template>"
        ));
        let sent = recorder.0.lock().expect("not poisoned").clone();
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[0].0, streams::room_messages("campfire", &room()));
        // The payload is the returned HTML as one JSON string, with ActiveSupport's escaping.
        assert_eq!(sent[0].1, json::json_string(&html, b.json()));
        assert!(!sent[0].1.contains('<'));
        assert_eq!(sent[1], ("user_2_unreads".into(), "{\"roomId\":1}".into()));
        assert_eq!(sent[2], ("user_3_unreads".into(), "{\"roomId\":1}".into()));
    }

    #[test]
    fn a_new_messages_mentions_go_out_in_its_pass_after_the_unread_notices() {
        let (recorder, b) = broadcaster();
        message_created(&b, &urls(), &room(), &message(), shown(), &[2, 3], &[3]).expect("renders");
        let sent = recorder.0.lock().expect("not poisoned").clone();
        let streams: Vec<(&str, &str)> = sent
            .iter()
            .skip(1)
            .map(|(s, p)| (s.as_str(), p.as_str()))
            .collect();
        assert_eq!(
            streams,
            [
                ("user_2_unreads", "{\"roomId\":1}"),
                ("user_3_unreads", "{\"roomId\":1}"),
                ("user_3_unreads", "{\"roomId\":1,\"mentioned\":true}"),
            ]
        );
    }

    #[test]
    fn edits_and_deletes_target_the_messages_element() {
        let (recorder, b) = broadcaster();
        let replaced = message_updated(&b, &urls(), &room(), &message()).expect("renders");
        assert!(replaced.starts_with("<turbo-stream action=\"replace\" target=\"message_c-7\">"));
        let removed = message_removed(&b, &room(), &message());
        assert_eq!(
            removed,
            "<turbo-stream action=\"remove\" target=\"message_c-7\"></turbo-stream>"
        );
        let sent = recorder.0.lock().expect("not poisoned").clone();
        let stream = streams::room_messages("campfire", &room());
        assert_eq!(sent.len(), 2);
        assert!(sent.iter().all(|(s, _)| *s == stream));
    }

    #[test]
    fn room_list_changes_go_to_the_shared_or_the_members_streams() {
        let (recorder, b) = broadcaster();
        shared_room_created(&b, &room(), &[2, 3]).expect("renders");
        let closed = Room {
            kind: crate::db::RoomKind::Closed,
            id: 5,
            ..room()
        };
        shared_room_created(&b, &closed, &[2, 3]).expect("renders");
        let revision = Revision {
            granted: vec![4],
            revoked: vec![3],
            kept: vec![2],
        };
        shared_room_updated(&b, &closed, crate::db::RoomKind::Closed, &revision).expect("renders");
        room_removed(&b, &closed);
        let sent = recorder.0.lock().expect("not poisoned").clone();
        let streams: Vec<&str> = sent.iter().map(|(s, _)| s.as_str()).collect();
        let user = |id| streams::user_rooms("campfire", id);
        assert_eq!(
            streams,
            [
                "rooms",
                user(2).as_str(),
                user(3).as_str(),
                user(2).as_str(),
                user(4).as_str(),
                user(3).as_str(),
                "rooms"
            ]
        );
        assert!(sent[0].1.contains("prepend") && sent[0].1.contains("shared_rooms"));
        assert!(sent[3].1.contains("replace") && sent[3].1.contains("list_rooms_closed_5"));
        assert!(sent[5].1.contains("remove"));
    }

    #[test]
    fn a_converted_room_replaces_and_removes_the_entry_named_by_its_old_kind() {
        let (recorder, b) = broadcaster();
        let closed = Room {
            kind: crate::db::RoomKind::Closed,
            id: 5,
            ..room()
        };
        let revision = Revision {
            granted: vec![],
            revoked: vec![3],
            kept: vec![2],
        };
        shared_room_updated(&b, &closed, crate::db::RoomKind::Open, &revision).expect("renders");
        let sent = recorder.0.lock().expect("not poisoned").clone();
        assert_eq!(sent.len(), 2);
        // The replace aims at the old entry and brings the new one; the remove, at the old.
        let (replace, remove) = (&sent[0].1, &sent[1].1);
        assert!(replace.contains("replace") && replace.contains("list_rooms_open_5"));
        assert!(replace.contains("list_rooms_closed_5"));
        assert!(remove.contains("remove") && remove.contains("list_rooms_open_5"));
        assert!(!remove.contains("list_rooms_closed_5"));
    }

    #[test]
    fn typing_and_reads_are_json_objects_on_their_streams() {
        let (recorder, b) = broadcaster();
        typing(&b, &room(), "start", 2, "Ada \"A\" </script>");
        room_read(&b, 1, 2);
        let sent = recorder.0.lock().expect("not poisoned").clone();
        assert_eq!(sent[0].0, streams::typing("campfire", &room()));
        let parsed: serde_json::Value = serde_json::from_str(&sent[0].1).expect("JSON");
        assert_eq!(parsed["user"]["name"], "Ada \"A\" </script>");
        assert!(!sent[0].1.contains("</script>"));
        assert_eq!(sent[1], ("user_2_reads".into(), "{\"room_id\":1}".into()));
    }
}
