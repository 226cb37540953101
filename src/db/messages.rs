//! Queries on `messages` and `boosts` (Campfire's `Message` with its pagination scopes and
//! `Boost`). A message's body is stored as the HTML that Action Text would hold.

use sqlx::SqlitePool;

/// Messages per page (Campfire's `Message::Pagination::PAGE_SIZE`).
pub const PAGE_SIZE: i64 = 40;

/// A message with what its partial shows: the creator's name and the boosts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Primary key.
    pub id: i64,
    /// Room id.
    pub room_id: i64,
    /// Author's user id.
    pub creator_id: i64,
    /// Author's name.
    pub creator_name: String,
    /// The client's id for the message (`dom_id(message)` is `message_<client_message_id>`).
    pub client_message_id: String,
    /// Body HTML.
    pub body: String,
    /// Creation time, ms.
    pub created_at: i64,
    /// Last update, ms.
    pub updated_at: i64,
    /// Boosts on this message, oldest first.
    pub boosts: Vec<Boost>,
}

impl Message {
    /// `dom_id(message)`: `message_<client_message_id>`, the id of the message's element and
    /// the target of its `replace` and `remove` turbo-stream actions.
    pub fn dom_id(&self) -> String {
        format!("message_{}", self.client_message_id)
    }
}

/// A random client message id (a UUID v4 in its text form, as `@rails/request.js`-era
/// Campfire clients make with `crypto.randomUUID()`), for posts that give none.
pub fn new_client_message_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A boost (a short reaction) on a message.
#[derive(Clone, Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Boost {
    /// Primary key.
    pub id: i64,
    /// The boosted message.
    pub message_id: i64,
    /// Who boosted.
    pub booster_id: i64,
    /// Booster's name.
    pub booster_name: String,
    /// The reaction, at most 16 characters.
    pub content: String,
}

#[derive(sqlx::FromRow)]
struct Row {
    id: i64,
    room_id: i64,
    creator_id: i64,
    creator_name: String,
    client_message_id: String,
    body: String,
    created_at: i64,
    updated_at: i64,
}

impl From<Row> for Message {
    fn from(r: Row) -> Self {
        Message {
            id: r.id,
            room_id: r.room_id,
            creator_id: r.creator_id,
            creator_name: r.creator_name,
            client_message_id: r.client_message_id,
            body: r.body,
            created_at: r.created_at,
            updated_at: r.updated_at,
            boosts: Vec::new(),
        }
    }
}

/// `SELECT … FROM messages JOIN users` followed by the given clause, as one literal.
macro_rules! select {
    ($tail:literal) => {
        concat!(
            "SELECT m.id, m.room_id, m.creator_id, u.name AS creator_name, m.client_message_id, ",
            "m.body, m.created_at, m.updated_at FROM messages m JOIN users u ON u.id = m.creator_id ",
            $tail
        )
    };
}

async fn with_boosts(pool: &SqlitePool, rows: Vec<Row>) -> sqlx::Result<Vec<Message>> {
    let mut messages: Vec<Message> = rows.into_iter().map(Message::from).collect();
    if messages.is_empty() {
        return Ok(messages);
    }
    let (lo, hi) = messages.iter().fold((i64::MAX, i64::MIN), |(lo, hi), m| {
        (lo.min(m.id), hi.max(m.id))
    });
    let boosts: Vec<Boost> = sqlx::query_as(
        "SELECT b.id, b.message_id, b.booster_id, u.name AS booster_name, b.content FROM boosts b \
         JOIN users u ON u.id = b.booster_id JOIN messages m ON m.id = b.message_id \
         WHERE m.room_id = ? AND b.message_id BETWEEN ? AND ? ORDER BY b.id",
    )
    .bind(messages[0].room_id)
    .bind(lo)
    .bind(hi)
    .fetch_all(pool)
    .await?;
    for boost in boosts {
        if let Some(m) = messages.iter_mut().find(|m| m.id == boost.message_id) {
            m.boosts.push(boost);
        }
    }
    Ok(messages)
}

/// The latest [`PAGE_SIZE`] messages of a room, oldest first (Campfire's `last_page`).
pub async fn last_page(pool: &SqlitePool, room_id: i64) -> sqlx::Result<Vec<Message>> {
    let mut rows: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ? ORDER BY m.created_at DESC, m.id DESC LIMIT ?"
    ))
    .bind(room_id)
    .bind(PAGE_SIZE)
    .fetch_all(pool)
    .await?;
    rows.reverse();
    with_boosts(pool, rows).await
}

/// The page of messages before message `before_id` (exclusive), oldest first (`page_before`).
pub async fn page_before(
    pool: &SqlitePool,
    room_id: i64,
    before_id: i64,
) -> sqlx::Result<Vec<Message>> {
    let mut rows: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ?1 AND (m.created_at, m.id) < \
           (SELECT created_at, id FROM messages WHERE id = ?2 AND room_id = ?1) \
         ORDER BY m.created_at DESC, m.id DESC LIMIT ?3"
    ))
    .bind(room_id)
    .bind(before_id)
    .bind(PAGE_SIZE)
    .fetch_all(pool)
    .await?;
    rows.reverse();
    with_boosts(pool, rows).await
}

/// The page of messages after message `after_id` (exclusive), oldest first (`page_after`).
pub async fn page_after(
    pool: &SqlitePool,
    room_id: i64,
    after_id: i64,
) -> sqlx::Result<Vec<Message>> {
    let rows: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ?1 AND (m.created_at, m.id) > \
           (SELECT created_at, id FROM messages WHERE id = ?2 AND room_id = ?1) \
         ORDER BY m.created_at, m.id LIMIT ?3"
    ))
    .bind(room_id)
    .bind(after_id)
    .bind(PAGE_SIZE)
    .fetch_all(pool)
    .await?;
    with_boosts(pool, rows).await
}

/// Messages created after `since_ms` (`page_created_since`), and messages created at or
/// before it but updated after it (`page_updated_since`), each oldest first and at most one
/// page: what the catch-up after a reconnect appends and replaces.
pub async fn changed_since(
    pool: &SqlitePool,
    room_id: i64,
    since_ms: i64,
) -> sqlx::Result<(Vec<Message>, Vec<Message>)> {
    let created: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ? AND m.created_at > ? ORDER BY m.created_at, m.id LIMIT ?"
    ))
    .bind(room_id)
    .bind(since_ms)
    .bind(PAGE_SIZE)
    .fetch_all(pool)
    .await?;
    let updated: Vec<Row> = sqlx::query_as(select!(
        "WHERE m.room_id = ? AND m.created_at <= ? AND m.updated_at > ? \
         ORDER BY m.updated_at, m.id LIMIT ?"
    ))
    .bind(room_id)
    .bind(since_ms)
    .bind(since_ms)
    .bind(PAGE_SIZE)
    .fetch_all(pool)
    .await?;
    Ok((
        with_boosts(pool, created).await?,
        with_boosts(pool, updated).await?,
    ))
}

/// Whether message `id` is in room `room_id`: how a paging cursor from a request is checked
/// before it is used (Campfire's `@room.messages.find(params[:before])`), so that a cursor
/// naming another room's message, or none, answers 404 and tells nothing about that message.
pub async fn in_room(pool: &SqlitePool, room_id: i64, id: i64) -> sqlx::Result<bool> {
    let found: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM messages WHERE room_id = ? AND id = ?")
            .bind(room_id)
            .bind(id)
            .fetch_optional(pool)
            .await?;
    Ok(found.is_some())
}

/// Finds one message of a room.
pub async fn find(pool: &SqlitePool, room_id: i64, id: i64) -> sqlx::Result<Option<Message>> {
    let row: Option<Row> = sqlx::query_as(select!("WHERE m.room_id = ? AND m.id = ?"))
        .bind(room_id)
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(with_boosts(pool, row.into_iter().collect()).await?.pop())
}

/// Finds a message by id, whatever its room.
pub async fn find_any(pool: &SqlitePool, id: i64) -> sqlx::Result<Option<Message>> {
    let row: Option<Row> = sqlx::query_as(select!("WHERE m.id = ?"))
        .bind(id)
        .fetch_optional(pool)
        .await?;
    Ok(with_boosts(pool, row.into_iter().collect()).await?.pop())
}

/// What [`create`] stored: the message and the ids of the room's members, for the unread
/// notices.
#[derive(Clone, Debug)]
pub struct Created {
    /// The stored message.
    pub message: Message,
    /// Every member of the room (Campfire broadcasts `{roomId}` to each one's
    /// `user_<id>_unreads`).
    pub member_ids: Vec<i64>,
}

/// Stores a new message with its side effects (Campfire's `room.messages.create!` +
/// `Room#receive`): one `INSERT`, whose `messages_receive` trigger (migration 0003) touches the
/// room's `updated_at` and sets `unread_at` on every visible, disconnected membership other
/// than the creator's that has no unread mark yet. The statement is atomic: nothing is stored
/// when any part fails. The member ids are read after the commit.
pub async fn create(
    pool: &SqlitePool,
    room_id: i64,
    creator_id: i64,
    creator_name: &str,
    client_message_id: &str,
    body: &str,
) -> sqlx::Result<Created> {
    let write = super::write_lock().await?;
    // Stamped under the write lock, so posts commit in the order of their timestamps.
    let now = super::now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO messages (room_id, creator_id, client_message_id, body, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(room_id)
    .bind(creator_id)
    .bind(client_message_id)
    .bind(body)
    .bind(now)
    .bind(now)
    .fetch_one(pool)
    .await?;
    drop(write);
    // Who receives the unread notices, read outside the write lock.
    let member_ids = super::rooms::member_ids(pool, room_id).await?;
    let message = Message {
        id,
        room_id,
        creator_id,
        creator_name: creator_name.to_owned(),
        client_message_id: client_message_id.to_owned(),
        body: body.to_owned(),
        created_at: now,
        updated_at: now,
        boosts: Vec::new(),
    };
    Ok(Created {
        message,
        member_ids,
    })
}

/// Replaces a message's body; returns the updated message, or None when it does not exist.
pub async fn update_body(
    pool: &SqlitePool,
    room_id: i64,
    id: i64,
    body: &str,
) -> sqlx::Result<Option<Message>> {
    let _write = super::write_lock().await?;
    let changed =
        sqlx::query("UPDATE messages SET body = ?, updated_at = ? WHERE room_id = ? AND id = ?")
            .bind(body)
            .bind(super::now_ms())
            .bind(room_id)
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected();
    if changed == 0 {
        return Ok(None);
    }
    find(pool, room_id, id).await
}

/// Deletes a message (and its boosts); returns it as it was, or None when it does not exist.
pub async fn delete(pool: &SqlitePool, room_id: i64, id: i64) -> sqlx::Result<Option<Message>> {
    let _write = super::write_lock().await?;
    let Some(message) = find(pool, room_id, id).await? else {
        return Ok(None);
    };
    sqlx::query("DELETE FROM messages WHERE room_id = ? AND id = ?")
        .bind(room_id)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(Some(message))
}

/// Adds a boost to a message; returns it with the booster's name.
pub async fn boost(
    pool: &SqlitePool,
    message_id: i64,
    booster_id: i64,
    booster_name: &str,
    content: &str,
) -> sqlx::Result<Boost> {
    let _write = super::write_lock().await?;
    let now = super::now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO boosts (message_id, booster_id, content, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(message_id)
    .bind(booster_id)
    .bind(content)
    .bind(now)
    .bind(now)
    .fetch_one(pool)
    .await?;
    Ok(Boost {
        id,
        message_id,
        booster_id,
        booster_name: booster_name.to_owned(),
        content: content.to_owned(),
    })
}

/// Counts a room's messages.
pub async fn count(pool: &SqlitePool, room_id: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE room_id = ?")
        .bind(room_id)
        .fetch_one(pool)
        .await
}
