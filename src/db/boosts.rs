//! Queries on single `boosts` rows beyond creating them (which [`super::messages::boost`]
//! does): finding and deleting one, for the bot API (Campfire's
//! `Messages::Boosts::ByBotsController#destroy`).

use sqlx::SqlitePool;

use super::messages::Boost;

/// Finds boost `id` of message `message_id`, with its booster's name.
pub async fn find(pool: &SqlitePool, message_id: i64, id: i64) -> sqlx::Result<Option<Boost>> {
    sqlx::query_as(
        "SELECT b.id, b.message_id, b.booster_id, u.name AS booster_name, b.content FROM boosts b \
         JOIN users u ON u.id = b.booster_id WHERE b.message_id = ? AND b.id = ?",
    )
    .bind(message_id)
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// Deletes boost `id`; returns whether a row went.
pub async fn delete(pool: &SqlitePool, id: i64) -> sqlx::Result<bool> {
    let gone = super::One::execute(pool, super::Access::Kept, |_| {
        sqlx::query("DELETE FROM boosts WHERE id = ?").bind(id)
    })
    .await?;
    Ok(gone > 0)
}
