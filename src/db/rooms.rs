//! Queries on `rooms` and `memberships` (Campfire's `Room` STI kinds open/closed/direct and
//! `Membership` with involvement, unread and presence columns).

use sqlx::SqlitePool;

use super::RoomKind;

/// A membership counts as connected while `connected_at` is this recent (Campfire's
/// `Membership::Connectable::CONNECTION_TTL`, 60 s).
pub const CONNECTION_TTL_MS: i64 = 60_000;

/// A room row.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Room {
    /// Primary key.
    pub id: i64,
    /// Name; direct rooms have none.
    pub name: Option<String>,
    /// Open, closed or direct (Campfire's `Rooms::Open`, `Rooms::Closed`, `Rooms::Direct`).
    pub kind: RoomKind,
    /// Bumped by every new message (`belongs_to :room, touch: true`), in ms.
    pub updated_at: i64,
}

impl Room {
    /// The GlobalID model name of this room's class (`Rooms::Open`, …).
    pub fn model_name(&self) -> &'static str {
        match self.kind {
            RoomKind::Open => "Rooms::Open",
            RoomKind::Closed => "Rooms::Closed",
            RoomKind::Direct => "Rooms::Direct",
            RoomKind::Thread => "Rooms::Thread",
        }
    }

    /// `dom_id(room, :messages)`: the id of the message container and the target of appends
    /// (`messages_rooms_open_1`).
    pub fn messages_target(&self) -> String {
        format!("messages_rooms_{}_{}", self.kind, self.id)
    }

    /// The name shown for the room (`"Direct message"` for unnamed direct rooms).
    pub fn display_name(&self) -> &str {
        match self.kind {
            RoomKind::Thread => self.name.as_deref().unwrap_or("Thread"),
            _ => self.name.as_deref().unwrap_or("Direct message"),
        }
    }
}

/// A room in a user's sidebar, with that user's unread mark.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq)]
pub struct SidebarRoom {
    /// Room id.
    pub id: i64,
    /// Room name (None for direct rooms).
    pub name: Option<String>,
    /// Room kind.
    pub kind: RoomKind,
    /// Whether this user has unread messages in it.
    pub unread: bool,
    /// What the list shows: the room's name, or for a direct room the names of its other
    /// members (the viewer's own name when alone), as Campfire's `users/sidebars/rooms/_direct`.
    pub label: String,
    /// The faces of a direct room's entry, `<user id>:<avatar version>` separated by spaces
    /// (version 0: no photo, the initials): up to four of its other members in the label's
    /// order, the viewer when alone. Empty for shared rooms.
    pub avatars: String,
}

impl SidebarRoom {
    /// The list entry of a shared (open or closed) room, read, for broadcasts.
    pub fn shared(room: &Room) -> Self {
        Self {
            id: room.id,
            name: room.name.clone(),
            kind: room.kind,
            unread: false,
            label: room.display_name().to_owned(),
            avatars: String::new(),
        }
    }

    /// The entry's faces ([`SidebarRoom::avatars`]): each person's user id and avatar version
    /// (None: no picture, the initials), in the list's order.
    pub fn faces(&self) -> Vec<(i64, Option<i64>)> {
        self.avatars
            .split_whitespace()
            .filter_map(|face| {
                let (id, version) = face.split_once(':')?;
                let version: i64 = version.parse().ok()?;
                Some((id.parse().ok()?, (version > 0).then_some(version)))
            })
            .collect()
    }
}

/// The SQL expression of a sidebar label for room `r` seen by the user bound at `?` (twice).
macro_rules! label_sql {
    () => {
        "CASE WHEN r.kind = 'direct' THEN COALESCE( \
       (SELECT group_concat(name, ', ') FROM (SELECT u.name FROM memberships o \
          JOIN users u ON u.id = o.user_id WHERE o.room_id = r.id AND o.user_id != ? \
          ORDER BY u.name COLLATE NOCASE, u.id)), \
       (SELECT name FROM users WHERE id = ?)) \
     WHEN r.kind = 'thread' THEN COALESCE((SELECT NULLIF(trim(substr(replace(t.body, char(10), ' '), \
       1, 60)), '') FROM message_search_texts t WHERE t.id = r.parent_message_id), 'Thread') \
     ELSE COALESCE(r.name, 'Untitled') END"
    };
}

/// The SQL expression of [`SidebarRoom::avatars`] for room `r` seen by the user bound at `?`
/// (twice): each face is `<user id>:<newest avatar blob id, or 0>`.
macro_rules! avatars_sql {
    () => {
        "CASE WHEN r.kind = 'direct' THEN COALESCE( \
       (SELECT group_concat(face, ' ') FROM (SELECT u.id || ':' || COALESCE( \
          (SELECT MAX(a.blob_id) FROM active_storage_attachments a WHERE a.record_type = 'User' \
            AND a.name = 'avatar' AND a.record_id = u.id), 0) AS face FROM memberships o \
          JOIN users u ON u.id = o.user_id WHERE o.room_id = r.id AND o.user_id != ? \
          ORDER BY u.name COLLATE NOCASE, u.id LIMIT 4)), \
       (SELECT id || ':' || COALESCE((SELECT MAX(a.blob_id) FROM active_storage_attachments a \
          WHERE a.record_type = 'User' AND a.name = 'avatar' AND a.record_id = users.id), 0) \
          FROM users WHERE id = ?)) \
     ELSE '' END"
    };
}

/// Finds a room by id.
pub async fn find(pool: &SqlitePool, id: i64) -> sqlx::Result<Option<Room>> {
    sqlx::query_as("SELECT id, name, kind, updated_at FROM rooms WHERE id = ?")
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Finds a room by id only when `user_id` is a member of it (Campfire's
/// `Current.user.rooms.find`): the way every room route, channel and re-check looks rooms up,
/// so that a non-member gets a 404. A thread is found for every member of its parent's room
/// (`rooms.parent_room_id`, see [`super::threads`]), whether or not they follow it.
pub async fn find_for_member(
    pool: &SqlitePool,
    id: i64,
    user_id: i64,
) -> sqlx::Result<Option<Room>> {
    sqlx::query_as(
        "SELECT r.id, r.name, r.kind, r.updated_at FROM rooms r \
         JOIN memberships m ON m.room_id = COALESCE(r.parent_room_id, r.id) \
         WHERE r.id = ? AND m.user_id = ?",
    )
    .bind(id)
    .bind(user_id)
    .fetch_optional(pool)
    .await
}

/// The rooms of a user's sidebar, visible memberships only: shared rooms by name, then direct
/// rooms and followed threads by latest activity, the most recent first (a new message
/// touches its room's `updated_at`; Campfire's `users/sidebars_controller.rb`). A thread
/// closed by age ([`super::threads::CLOSE_AFTER_MS`] without a reply) is left out.
pub async fn for_sidebar(pool: &SqlitePool, user_id: i64) -> sqlx::Result<Vec<SidebarRoom>> {
    sqlx::query_as(concat!(
        "SELECT r.id, r.name, r.kind, (m.unread_at IS NOT NULL) AS unread, ",
        label_sql!(),
        " AS label, ",
        avatars_sql!(),
        " AS avatars FROM rooms r JOIN memberships m ON m.room_id = r.id \
         WHERE m.user_id = ? AND m.involvement != 'invisible' \
           AND (r.kind != 'thread' OR r.updated_at > ?) \
         ORDER BY r.kind IN ('direct', 'thread'), \
           CASE WHEN r.kind IN ('direct', 'thread') THEN -r.updated_at END, \
           r.name COLLATE NOCASE, r.id"
    ))
    .bind(user_id)
    .bind(user_id)
    .bind(user_id)
    .bind(user_id)
    .bind(user_id)
    .bind(super::now_ms() - super::threads::CLOSE_AFTER_MS)
    .fetch_all(pool)
    .await
}

/// One room of a user's sidebar (whatever its involvement), `None` when not a member: the
/// entry a broadcast sends to that user.
pub async fn sidebar_entry(
    pool: &SqlitePool,
    room_id: i64,
    user_id: i64,
) -> sqlx::Result<Option<SidebarRoom>> {
    sqlx::query_as(concat!(
        "SELECT r.id, r.name, r.kind, (m.unread_at IS NOT NULL) AS unread, ",
        label_sql!(),
        " AS label, ",
        avatars_sql!(),
        " AS avatars FROM rooms r JOIN memberships m ON m.room_id = r.id \
         WHERE r.id = ? AND m.user_id = ?"
    ))
    .bind(user_id)
    .bind(user_id)
    .bind(user_id)
    .bind(user_id)
    .bind(room_id)
    .bind(user_id)
    .fetch_optional(pool)
    .await
}

/// The first room there is (Campfire's `Room.original`, the first run's room while it lasts),
/// `None` when there is no room.
pub async fn original_id(pool: &SqlitePool) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT MIN(id) FROM rooms")
        .fetch_one(pool)
        .await
}

/// The user who created a room (`rooms.creator_id`), `None` when unknown or not recorded.
pub async fn creator_id(pool: &SqlitePool, room_id: i64) -> sqlx::Result<Option<i64>> {
    let id: Option<Option<i64>> = sqlx::query_scalar("SELECT creator_id FROM rooms WHERE id = ?")
        .bind(room_id)
        .fetch_optional(pool)
        .await?;
    Ok(id.flatten())
}

/// The first room of a user, for `GET /` when no room was visited yet.
pub async fn first_for_user(pool: &SqlitePool, user_id: i64) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT room_id FROM memberships WHERE user_id = ? ORDER BY room_id LIMIT 1")
        .bind(user_id)
        .fetch_optional(pool)
        .await
}

/// Ids of every member of a room, ascending (Campfire's `room.memberships.pluck(:user_id)`).
///
/// Fetched as ONE row (a JSON array built by SQLite): sqlx hands every result row from its
/// SQLite worker thread to the async side through a channel, so a thousand-member room read
/// row by row would cost a thousand thread wake-ups on every post.
pub async fn member_ids(pool: &SqlitePool, room_id: i64) -> sqlx::Result<Vec<i64>> {
    let json: String = sqlx::query_scalar(
        "SELECT json_group_array(user_id) FROM \
           (SELECT user_id FROM memberships WHERE room_id = ? ORDER BY user_id)",
    )
    .bind(room_id)
    .fetch_one(pool)
    .await?;
    serde_json::from_str(&json).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// Marks a membership present (Campfire's `Membership#present`): one more connection (or 1
/// when the last was stale), `connected_at` now, `unread_at` cleared. Returns false when the
/// user is not a member.
pub async fn present(pool: &SqlitePool, room_id: i64, user_id: i64) -> sqlx::Result<bool> {
    let changed = super::One::execute(pool, super::Access::Kept, |now| {
        sqlx::query(
            "UPDATE memberships SET \
               connections = CASE WHEN connected_at IS NOT NULL AND connected_at >= ? THEN connections + 1 ELSE 1 END, \
               connected_at = ?, unread_at = NULL, updated_at = ? \
             WHERE room_id = ? AND user_id = ?",
        )
        .bind(now - CONNECTION_TTL_MS)
        .bind(now)
        .bind(now)
        .bind(room_id)
        .bind(user_id)
    })
    .await?;
    Ok(changed > 0)
}

/// Marks one connection gone (Campfire's `Membership#disconnected`): `connections - 1`, and
/// `connected_at` cleared when none is left.
pub async fn absent(pool: &SqlitePool, room_id: i64, user_id: i64) -> sqlx::Result<()> {
    super::One::execute(pool, super::Access::Kept, |now| {
        sqlx::query(
            "UPDATE memberships SET \
               connections = MAX(connections - 1, 0), \
               connected_at = CASE WHEN connections - 1 < 1 THEN NULL ELSE connected_at END, \
               updated_at = ? \
             WHERE room_id = ? AND user_id = ?",
        )
        .bind(now)
        .bind(room_id)
        .bind(user_id)
    })
    .await?;
    Ok(())
}

/// Keeps a membership connected (Campfire's `Membership#refresh_connection`).
pub async fn refresh_connection(pool: &SqlitePool, room_id: i64, user_id: i64) -> sqlx::Result<()> {
    super::One::execute(pool, super::Access::Kept, |now| {
        sqlx::query(
            "UPDATE memberships SET connected_at = ?, updated_at = ? WHERE room_id = ? AND user_id = ?",
        )
        .bind(now)
        .bind(now)
        .bind(room_id)
        .bind(user_id)
    })
    .await?;
    Ok(())
}

/// Writes a membership's presence as the server's per-connection record has it (see
/// `crate::presence`): with `connections > 0`, that many tabs present, `connected_at` now and
/// `unread_at` cleared (Campfire's `present`); with 0, `connections` 0 and `connected_at`
/// cleared (its `disconnected` of the last tab). Returns false when the user is not a member.
pub async fn set_presence(
    pool: &SqlitePool,
    room_id: i64,
    user_id: i64,
    connections: i64,
) -> sqlx::Result<bool> {
    let changed = super::One::execute(pool, super::Access::Kept, |now| {
        if connections > 0 {
            sqlx::query(
                "UPDATE memberships SET connections = ?, connected_at = ?, unread_at = NULL, \
                 updated_at = ? WHERE room_id = ? AND user_id = ?",
            )
            .bind(connections)
            .bind(now)
            .bind(now)
            .bind(room_id)
            .bind(user_id)
        } else {
            sqlx::query(
                "UPDATE memberships SET connections = 0, connected_at = NULL, updated_at = ? \
                 WHERE room_id = ? AND user_id = ?",
            )
            .bind(now)
            .bind(room_id)
            .bind(user_id)
        }
    })
    .await?;
    Ok(changed > 0)
}

/// Marks a visible membership unread ("Mark unread" in the room's menu): `unread_at` now.
/// Returns false when the user is no member, or an invisible one (an unfollowed thread).
pub async fn mark_unread(pool: &SqlitePool, room_id: i64, user_id: i64) -> sqlx::Result<bool> {
    let changed = super::One::execute(pool, super::Access::Kept, |now| {
        sqlx::query(
            "UPDATE memberships SET unread_at = ?, updated_at = ? \
             WHERE room_id = ? AND user_id = ? AND involvement != 'invisible'",
        )
        .bind(now)
        .bind(now)
        .bind(room_id)
        .bind(user_id)
    })
    .await?;
    Ok(changed > 0)
}

/// Reads a membership's presence columns: `(connections, connected_at, unread_at)`.
pub async fn membership_state(
    pool: &SqlitePool,
    room_id: i64,
    user_id: i64,
) -> sqlx::Result<Option<(i64, Option<i64>, Option<i64>)>> {
    sqlx::query_as("SELECT connections, connected_at, unread_at FROM memberships WHERE room_id = ? AND user_id = ?")
        .bind(room_id)
        .bind(user_id)
        .fetch_optional(pool)
        .await
}
