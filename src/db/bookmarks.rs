//! Queries on `bookmarks` (migration 0019): messages a person saved for later. A bookmark is
//! listed only while its reader may still see the message's room (a thread: its parent's
//! room); it goes with its message and its user.

use sqlx::SqlitePool;

use super::messages::Message;
use super::{Access, One};

/// Saves message `message_id` for `user_id` (again: nothing changes). Returns whether a new
/// bookmark was made.
///
/// # Errors
/// Database failures (a message deleted meanwhile: a foreign key failure).
pub async fn add(pool: &SqlitePool, user_id: i64, message_id: i64) -> sqlx::Result<bool> {
    let added = One::execute(pool, Access::Kept, |now| {
        sqlx::query(
            "INSERT OR IGNORE INTO bookmarks (user_id, message_id, created_at) VALUES (?, ?, ?)",
        )
        .bind(user_id)
        .bind(message_id)
        .bind(now)
    })
    .await?;
    Ok(added > 0)
}

/// Removes `user_id`'s bookmark of message `message_id`; returns whether there was one.
///
/// # Errors
/// Database failures.
pub async fn remove(pool: &SqlitePool, user_id: i64, message_id: i64) -> sqlx::Result<bool> {
    let removed = One::execute(pool, Access::Kept, |_| {
        sqlx::query("DELETE FROM bookmarks WHERE user_id = ? AND message_id = ?")
            .bind(user_id)
            .bind(message_id)
    })
    .await?;
    Ok(removed > 0)
}

/// `user_id`'s bookmarked messages in rooms they may still see, the latest saved first (at
/// most `limit`), with their files and threads.
///
/// # Errors
/// Database failures.
pub async fn list(pool: &SqlitePool, user_id: i64, limit: i64) -> sqlx::Result<Vec<Message>> {
    let ids: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT m.id, m.room_id FROM bookmarks b JOIN messages m ON m.id = b.message_id \
         JOIN rooms r ON r.id = m.room_id \
         JOIN memberships ms ON ms.room_id = COALESCE(r.parent_room_id, r.id) AND ms.user_id = ?1 \
         WHERE b.user_id = ?1 ORDER BY b.id DESC LIMIT ?2",
    )
    .bind(user_id)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let mut out = Vec::with_capacity(ids.len());
    for (id, room_id) in ids {
        if let Some(m) = super::messages::find(pool, room_id, id).await? {
            out.push(m);
        }
    }
    Ok(out)
}
