//! Queries of the activity inbox (migration 0021): what needs a person, read from the tables
//! that hold it. Nothing is written on a post's path: an item is a row of `messages` or
//! `boosts` seen from its person's side.
//!
//! | kind | rows | read when |
//! |---|---|---|
//! | [`Kind::Mention`] | a message by someone else whose body mentions them | its room's unread mark is cleared (or was set after it) |
//! | [`Kind::Direct`] | a message by someone else in a direct room of theirs | the same |
//! | [`Kind::Reply`] | a message by someone else in a thread they follow | the same (the thread's own mark) |
//! | [`Kind::Boost`] | a boost by someone else on a message of theirs | they were present in its room at or after it (`inbox_visits`, or present now) |
//!
//! A message is one item, of the first kind of the list that fits. Every item is also read once
//! "Mark all read" passed it (`inbox_marks`). A message's item is unread exactly when the room's
//! unread mark (`memberships.unread_at`, the first unread post) is at or before it, so an item
//! read in its room is never unread here. Only rooms the person is a member of count (a thread:
//! its parent room's membership), so a removed member's items go with the membership. Items are
//! those of the last [`WINDOW_MS`].

use sqlx::SqlitePool;

use super::{Access, One};

/// How far back the inbox looks: 30 days, in ms (as long as an idle thread stays open).
pub const WINDOW_MS: i64 = 30 * 24 * 60 * 60 * 1000;

/// The most candidate rows one read looks at per table: a bound on the work of a request.
pub const SCAN_LIMIT: i64 = 2_000;

/// A membership counts as present while its `connected_at` is this recent (ms): the post
/// trigger's window (migration 0003).
const PRESENT_MS: i64 = 60_000;

/// What an item is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A message that mentions the person.
    Mention,
    /// A reply in a thread the person follows.
    Reply,
    /// A boost on the person's message.
    Boost,
    /// A message in one of the person's direct rooms.
    Direct,
}

impl Kind {
    /// Every kind, in the order of the page's tabs.
    pub const ALL: [Self; 4] = [Self::Mention, Self::Reply, Self::Boost, Self::Direct];

    /// The kind's name in a URL (`?kind=`) and in the page's classes.
    pub const fn param(self) -> &'static str {
        match self {
            Self::Mention => "mentions",
            Self::Reply => "replies",
            Self::Boost => "boosts",
            Self::Direct => "direct",
        }
    }

    /// The kind named `param` ([`Self::param`]), `None` for any other text.
    pub fn from_param(param: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.param() == param)
    }
}

/// One item of a person's inbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// What it is about.
    pub kind: Kind,
    /// The message (a boost's: the boosted message).
    pub message_id: i64,
    /// The message's room (a reply's: the thread's room).
    pub room_id: i64,
    /// Who wrote the message, or boosted it.
    pub actor_name: String,
    /// When it happened (the post or the boost), ms.
    pub at: i64,
    /// The message's plain text.
    pub text: String,
    /// A boost's content (`None` for the other kinds).
    pub boost: Option<String>,
    /// Whether it is still unread.
    pub unread: bool,
}

/// A message that may be an item: `(id, room id, room kind, author's name, created_at, body,
/// plain text, unread, following)`.
type MessageRow = (i64, i64, String, String, i64, String, String, bool, bool);

/// A boost on the person's message: `(message id, room id, booster's name, created_at,
/// content, the message's plain text, unread)`.
type BoostRow = (i64, i64, String, i64, String, String, bool);

/// The rooms a person sees (the thread rooms through their parent's membership) and, for each
/// message of the window by someone else, whether it is unread and its thread followed.
const MESSAGES: &str = "WITH mine AS (SELECT room_id FROM memberships WHERE user_id = ?1), \
     seen AS (SELECT r.id, r.kind FROM rooms r WHERE r.id IN (SELECT room_id FROM mine) \
       AND r.kind != 'thread' \
       UNION ALL SELECT r.id, r.kind FROM rooms r WHERE r.parent_room_id IN (SELECT room_id FROM mine)) \
     SELECT m.id, m.room_id, s.kind, u.name, m.created_at, m.body, COALESCE(t.body, ''), \
       (ms.unread_at IS NOT NULL AND ms.involvement != 'invisible' \
         AND m.created_at >= ms.unread_at AND m.created_at > ?3) AS unread, \
       COALESCE(ms.involvement != 'invisible', 0) AS following \
     FROM seen s JOIN messages m ON m.room_id = s.id AND m.created_at >= ?2 \
     JOIN users u ON u.id = m.creator_id \
     LEFT JOIN memberships ms ON ms.room_id = s.id AND ms.user_id = ?1 \
     LEFT JOIN message_search_texts t ON t.id = m.id \
     WHERE m.creator_id != ?1 AND (s.kind = 'direct' \
       OR (s.kind = 'thread' AND ms.involvement != 'invisible') \
       OR instr(m.body, 'application/vnd.campfire.mention') > 0) \
       AND (?4 = 0 OR unread) \
     ORDER BY m.created_at DESC, m.id DESC LIMIT ?5";

/// The boosts of the window by others on the person's messages in rooms they see, and whether
/// each is unread.
const BOOSTS: &str = "SELECT m.id, m.room_id, u.name, b.created_at, b.content, \
       COALESCE(t.body, ''), \
       (b.created_at > ?3 AND COALESCE(v.seen_at, 0) < b.created_at \
         AND NOT COALESCE(ms.connected_at >= ?6 - ?7, 0)) AS unread \
     FROM messages m JOIN boosts b ON b.message_id = m.id \
     JOIN rooms r ON r.id = m.room_id \
     JOIN memberships pm ON pm.room_id = COALESCE(r.parent_room_id, r.id) AND pm.user_id = ?1 \
     JOIN users u ON u.id = b.booster_id \
     LEFT JOIN memberships ms ON ms.room_id = r.id AND ms.user_id = ?1 \
     LEFT JOIN inbox_visits v ON v.user_id = ?1 AND v.room_id = r.id \
     LEFT JOIN message_search_texts t ON t.id = m.id \
     WHERE m.creator_id = ?1 AND b.booster_id != ?1 AND b.created_at >= ?2 \
       AND (?4 = 0 OR unread) \
     ORDER BY b.created_at DESC, b.id DESC LIMIT ?5";

/// The time up to which "Mark all read" read `user_id`'s items (0: never).
async fn marked_at(pool: &SqlitePool, user_id: i64) -> sqlx::Result<i64> {
    let at: Option<i64> = sqlx::query_scalar("SELECT read_at FROM inbox_marks WHERE user_id = ?")
        .bind(user_id)
        .fetch_optional(pool)
        .await?;
    Ok(at.unwrap_or(0))
}

/// `user_id`'s items, the newest first: all of them, or only the unread ones; of every kind,
/// or only of `kind`; at most `limit`.
///
/// # Errors
/// Database failures.
pub async fn items(
    pool: &SqlitePool,
    user_id: i64,
    kind: Option<Kind>,
    unread_only: bool,
    limit: usize,
) -> sqlx::Result<Vec<Item>> {
    let now = super::now_ms();
    let mark = marked_at(pool, user_id).await?;
    let mut out = Vec::new();
    if kind != Some(Kind::Boost) {
        let rows: Vec<MessageRow> = sqlx::query_as(MESSAGES)
            .bind(user_id)
            .bind(now - WINDOW_MS)
            .bind(mark)
            .bind(unread_only)
            .bind(SCAN_LIMIT)
            .fetch_all(pool)
            .await?;
        out.extend(
            rows.into_iter()
                .filter_map(|row| message_item(user_id, row))
                .filter(|item| kind.is_none_or(|k| k == item.kind)),
        );
    }
    if kind.is_none_or(|k| k == Kind::Boost) {
        out.extend(boost_items(pool, user_id, now, mark, unread_only).await?);
    }
    out.sort_by(|a, b| b.at.cmp(&a.at).then(b.message_id.cmp(&a.message_id)));
    out.truncate(limit);
    Ok(out)
}

async fn boost_items(
    pool: &SqlitePool,
    user_id: i64,
    now: i64,
    mark: i64,
    unread_only: bool,
) -> sqlx::Result<Vec<Item>> {
    let rows: Vec<BoostRow> = sqlx::query_as(BOOSTS)
        .bind(user_id)
        .bind(now - WINDOW_MS)
        .bind(mark)
        .bind(unread_only)
        .bind(SCAN_LIMIT)
        .bind(now)
        .bind(PRESENT_MS)
        .fetch_all(pool)
        .await?;
    Ok(rows
        .into_iter()
        .map(
            |(message_id, room_id, actor_name, at, content, text, unread)| Item {
                kind: Kind::Boost,
                message_id,
                room_id,
                actor_name,
                at,
                text,
                boost: Some(content),
                unread,
            },
        )
        .collect())
}

/// The item a candidate message is for `user_id`, `None` when it is none (a mention of
/// someone else in a room that is neither direct nor a followed thread).
fn message_item(user_id: i64, row: MessageRow) -> Option<Item> {
    let (message_id, room_id, room_kind, actor_name, at, body, text, unread, following) = row;
    let kind = if crate::rich_text::mentioned_user_ids(&body).contains(&user_id) {
        Kind::Mention
    } else if room_kind == "direct" {
        Kind::Direct
    } else if room_kind == "thread" && following {
        Kind::Reply
    } else {
        return None;
    };
    Some(Item {
        kind,
        message_id,
        room_id,
        actor_name,
        at,
        text,
        boost: None,
        unread,
    })
}

/// How many of `user_id`'s items are unread (at most [`SCAN_LIMIT`] of each table's).
///
/// # Errors
/// Database failures.
pub async fn unread_count(pool: &SqlitePool, user_id: i64) -> sqlx::Result<usize> {
    let limit = usize::try_from(SCAN_LIMIT * 2).unwrap_or(usize::MAX);
    Ok(items(pool, user_id, None, true, limit).await?.len())
}

/// "Mark all read": every item of `user_id` up to now is read (their rooms' unread marks stay
/// as they are).
///
/// # Errors
/// Database failures.
pub async fn mark_all_read(pool: &SqlitePool, user_id: i64) -> sqlx::Result<()> {
    One::execute(pool, Access::Kept, |now| {
        sqlx::query(
            "INSERT INTO inbox_marks (user_id, read_at) VALUES (?1, ?2) \
             ON CONFLICT (user_id) DO UPDATE SET read_at = max(read_at, ?2)",
        )
        .bind(user_id)
        .bind(now)
    })
    .await?;
    Ok(())
}

/// What each of `room_ids` is called in `user_id`'s inbox: a shared room's name, a direct
/// room's other people, "Thread in `<room>`" for a thread.
///
/// # Errors
/// Database failures.
pub async fn room_labels(
    pool: &SqlitePool,
    user_id: i64,
    room_ids: &[i64],
) -> sqlx::Result<Vec<(i64, String)>> {
    let json = serde_json::to_string(room_ids).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query_as(
        "SELECT r.id, CASE \
           WHEN r.kind = 'direct' THEN COALESCE((SELECT group_concat(name, ', ') FROM \
             (SELECT u.name FROM memberships o JOIN users u ON u.id = o.user_id \
               WHERE o.room_id = r.id AND o.user_id != ?1 ORDER BY u.name COLLATE NOCASE)), \
             'Direct message') \
           WHEN r.kind = 'thread' THEN 'Thread in ' || COALESCE((SELECT CASE \
             WHEN p.kind = 'direct' THEN 'a direct message' ELSE p.name END \
             FROM rooms p WHERE p.id = r.parent_room_id), 'a room') \
           ELSE COALESCE(r.name, 'Untitled') END \
         FROM rooms r WHERE r.id IN (SELECT value FROM json_each(?2))",
    )
    .bind(user_id)
    .bind(json)
    .fetch_all(pool)
    .await
}
