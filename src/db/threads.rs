//! Queries on threads: rooms of kind `thread` whose parent is a message (migration 0019,
//! the `Rooms::Thread` of Campfire's public forks).
//!
//! A thread is a room like any other (its messages, boosts, files, edits, unread marks,
//! presence and streams are a room's), with two columns more: `rooms.parent_room_id`, the room
//! of the parent message, and `rooms.parent_message_id`, the parent itself.
//!
//! - **Who sees it**: every member of the parent's room ([`super::rooms::find_for_member`]
//!   answers for a thread through the parent room's membership); losing that membership
//!   deletes the thread memberships too (trigger `memberships_threads_revoke`).
//! - **Who follows it**: the thread's own memberships, involvement `everything` while
//!   following (unread marks, pushes, the sidebar), `invisible` after "Unfollow". The parent's
//!   author, everyone who replies and everyone a reply mentions follow it
//!   ([`follow_on_reply`]).
//! - **When it takes replies**: while its parent exists and its last reply (or its start) is
//!   younger than [`CLOSE_AFTER_MS`]; a closed thread stays readable and leaves the sidebar.
//! - **No nesting**: a message of a thread has no thread of its own ([`start`] refuses it).

use sqlx::SqlitePool;

use super::{Access, One, Write};

/// A thread takes no more replies, and leaves the sidebar, once this long has passed since its
/// last reply (or its start): 30 days, in ms.
pub const CLOSE_AFTER_MS: i64 = 30 * 24 * 60 * 60 * 1000;

/// How many of the last repliers a parent's summary shows.
pub const SUMMARY_FACES: usize = 3;

/// A thread room with its parent.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Thread {
    /// The thread's room id.
    pub id: i64,
    /// The room of the parent message.
    pub parent_room_id: i64,
    /// The parent message's id (it may have been deleted since).
    pub parent_message_id: i64,
    /// Whether the parent message still exists.
    pub parent_exists: bool,
    /// The room's last touch (its start, then each reply), ms.
    pub updated_at: i64,
}

impl Thread {
    /// Whether the thread is closed to new replies at `now` (ms): no reply for
    /// [`CLOSE_AFTER_MS`].
    pub fn closed_at(&self, now: i64) -> bool {
        now - self.updated_at >= CLOSE_AFTER_MS
    }
}

/// Why a thread cannot be started on a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartRefused {
    /// The message is itself in a thread (no thread of a thread).
    Nested,
}

/// What a parent message shows of its thread: the reply count, the last repliers' faces and
/// the time of the last reply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// The thread's room id.
    pub thread_id: i64,
    /// Replies in the thread.
    pub replies: i64,
    /// The time of the last reply, ms (0 without replies).
    pub last_reply_at: i64,
    /// Up to [`SUMMARY_FACES`] of the last repliers, the latest first: user id, name and
    /// avatar blob id (None: the initials).
    pub repliers: Vec<(i64, String, Option<i64>)>,
}

const THREAD_COLUMNS: &str = "r.id, r.parent_room_id, r.parent_message_id, \
     EXISTS (SELECT 1 FROM messages p WHERE p.id = r.parent_message_id) AS parent_exists, \
     r.updated_at";

/// The thread whose room is `room_id`, `None` when that room is no thread.
pub async fn find(pool: &SqlitePool, room_id: i64) -> sqlx::Result<Option<Thread>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {THREAD_COLUMNS} FROM rooms r WHERE r.id = ? AND r.kind = 'thread'"
    )))
    .bind(room_id)
    .fetch_optional(pool)
    .await
}

/// The thread of message `message_id`, `None` when it has none yet.
pub async fn of_message(pool: &SqlitePool, message_id: i64) -> sqlx::Result<Option<Thread>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {THREAD_COLUMNS} FROM rooms r WHERE r.parent_message_id = ?"
    )))
    .bind(message_id)
    .fetch_optional(pool)
    .await
}

/// Finds or starts the thread of message `message_id` (in room `room_id`, of kind
/// `room_kind`), started by `creator_id`; returns its room id.
///
/// # Errors
/// [`StartRefused::Nested`] (as `Ok(Err(..))`) for a message of a thread; database failures.
pub async fn start(
    pool: &SqlitePool,
    room_id: i64,
    room_kind: super::RoomKind,
    message_id: i64,
    creator_id: i64,
) -> sqlx::Result<Result<i64, StartRefused>> {
    if room_kind.is_thread() {
        return Ok(Err(StartRefused::Nested));
    }
    if let Some(thread) = of_message(pool, message_id).await? {
        return Ok(Ok(thread.id));
    }
    // A new room id: answers cached for it before it existed go stale.
    let one = One::begin(pool, Access::Changed).await?;
    let now = super::now_ms();
    sqlx::query(
        "INSERT INTO rooms (name, kind, creator_id, created_at, updated_at, parent_room_id, \
         parent_message_id) VALUES (NULL, 'thread', ?, ?, ?, ?, ?) \
         ON CONFLICT (parent_message_id) WHERE parent_message_id IS NOT NULL DO NOTHING",
    )
    .bind(creator_id)
    .bind(now)
    .bind(now)
    .bind(room_id)
    .bind(message_id)
    .execute(&*one)
    .await?;
    let id: i64 = sqlx::query_scalar("SELECT id FROM rooms WHERE parent_message_id = ?")
        .bind(message_id)
        .fetch_one(&*one)
        .await?;
    one.done();
    Ok(Ok(id))
}

/// Before a reply by `author_id` in `thread`: the author follows it (again, after an
/// "Unfollow"), and the parent's author and everyone in `mentioned` follow it unless they
/// chose otherwise already; only members of the parent's room, active ones.
///
/// # Errors
/// Database failures.
pub async fn follow_on_reply(
    pool: &SqlitePool,
    thread: &Thread,
    author_id: i64,
    mentioned: &[i64],
) -> sqlx::Result<()> {
    let mut others: Vec<i64> = mentioned.to_vec();
    let parent_author: Option<i64> =
        sqlx::query_scalar("SELECT creator_id FROM messages WHERE id = ?")
            .bind(thread.parent_message_id)
            .fetch_optional(pool)
            .await?;
    others.extend(parent_author);
    others.retain(|id| *id != author_id);
    let mut write = Write::begin(pool, Access::Changed).await?;
    let now = super::now_ms();
    sqlx::query(
        "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
         SELECT ?1, ?2, 'everything', ?4, ?4 WHERE EXISTS (SELECT 1 FROM memberships \
           WHERE room_id = ?3 AND user_id = ?2) \
         ON CONFLICT (room_id, user_id) DO UPDATE SET involvement = 'everything', updated_at = ?4 \
         WHERE involvement = 'invisible'",
    )
    .bind(thread.id)
    .bind(author_id)
    .bind(thread.parent_room_id)
    .bind(now)
    .execute(&mut *write)
    .await?;
    sqlx::query(
        "INSERT OR IGNORE INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
         SELECT ?1, m.user_id, 'everything', ?4, ?4 FROM memberships m \
           JOIN users u ON u.id = m.user_id AND u.status = 'active' \
         WHERE m.room_id = ?2 AND m.user_id IN (SELECT value FROM json_each(?3))",
    )
    .bind(thread.id)
    .bind(thread.parent_room_id)
    .bind(serde_json::to_string(&others).unwrap_or_else(|_| "[]".into()))
    .bind(now)
    .execute(&mut *write)
    .await?;
    write.commit().await?;
    Ok(())
}

/// Follows (`true`: involvement `everything`) or unfollows (`false`: `invisible`) `thread` for
/// `user_id`, a member of its parent's room.
///
/// # Errors
/// Database failures.
pub async fn set_following(
    pool: &SqlitePool,
    thread: &Thread,
    user_id: i64,
    following: bool,
) -> sqlx::Result<()> {
    let involvement = if following { "everything" } else { "invisible" };
    One::execute(pool, Access::Changed, |now| {
        sqlx::query(
            "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
             SELECT ?1, ?2, ?3, ?4, ?4 WHERE EXISTS (SELECT 1 FROM memberships \
               WHERE room_id = ?5 AND user_id = ?2) \
             ON CONFLICT (room_id, user_id) DO UPDATE SET involvement = ?3, updated_at = ?4, \
               unread_at = CASE WHEN ?3 = 'invisible' THEN NULL ELSE unread_at END",
        )
        .bind(thread.id)
        .bind(user_id)
        .bind(involvement)
        .bind(now)
        .bind(thread.parent_room_id)
    })
    .await?;
    Ok(())
}

/// Whether `user_id` follows thread room `thread_id`.
pub async fn follows(pool: &SqlitePool, thread_id: i64, user_id: i64) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM memberships WHERE room_id = ? AND user_id = ? \
         AND involvement != 'invisible')",
    )
    .bind(thread_id)
    .bind(user_id)
    .fetch_one(pool)
    .await
}

/// The summaries of the threads of messages `message_ids` that have replies, by parent
/// message id.
///
/// # Errors
/// Database failures.
pub async fn summaries(
    pool: &SqlitePool,
    message_ids: &[i64],
) -> sqlx::Result<Vec<(i64, Summary)>> {
    if message_ids.is_empty() {
        return Ok(Vec::new());
    }
    let json = serde_json::to_string(message_ids).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let rows: Vec<(i64, i64, i64, i64, String)> = sqlx::query_as(
        "SELECT r.parent_message_id, r.id, COUNT(m.id), MAX(m.created_at), \
           COALESCE((SELECT json_group_array(json_array(id, name)) FROM \
             (SELECT u.id, u.name FROM messages x JOIN users u ON u.id = x.creator_id \
               WHERE x.room_id = r.id GROUP BY u.id ORDER BY MAX(x.id) DESC LIMIT ?2)), '[]') \
         FROM rooms r JOIN messages m ON m.room_id = r.id \
         WHERE r.parent_message_id IN (SELECT value FROM json_each(?1)) \
         GROUP BY r.id",
    )
    .bind(json)
    .bind(SUMMARY_FACES as i64)
    .fetch_all(pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    let mut people: Vec<i64> = Vec::new();
    for (parent, thread_id, replies, last_reply_at, faces) in rows {
        let faces: Vec<(i64, String)> =
            serde_json::from_str(&faces).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
        people.extend(faces.iter().map(|(id, _)| *id));
        let repliers = faces
            .into_iter()
            .map(|(id, name)| (id, name, None))
            .collect();
        out.push((
            parent,
            Summary {
                thread_id,
                replies,
                last_reply_at,
                repliers,
            },
        ));
    }
    people.sort_unstable();
    people.dedup();
    let avatars = super::blobs::avatars_of(pool, &people).await?;
    for (_, summary) in &mut out {
        for face in &mut summary.repliers {
            face.2 = avatars
                .iter()
                .find(|(id, _)| *id == face.0)
                .map(|(_, b)| *b);
        }
    }
    Ok(out)
}

/// Logs a change of parent message `message_id` in `message_changes` (a `replace`), so that a
/// page's catch-up renders its new thread summary (migration 0007).
///
/// # Errors
/// Database failures.
pub async fn parent_changed(pool: &SqlitePool, message_id: i64) -> sqlx::Result<()> {
    One::execute(pool, Access::Kept, |_| {
        sqlx::query(
            "INSERT INTO message_changes (room_id, message_id, client_message_id, action) \
             SELECT room_id, id, client_message_id, 'replace' FROM messages WHERE id = ?",
        )
        .bind(message_id)
    })
    .await?;
    Ok(())
}
