//! Queries on `webhooks` (Campfire's `Webhook`: one optional URL per bot, where the messages
//! that mention the bot or reach it in a direct room are posted).

use sqlx::SqlitePool;

/// The webhook URL of bot `bot_id`, if it has one.
pub async fn url_for(pool: &SqlitePool, bot_id: i64) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT url FROM webhooks WHERE user_id = ?")
        .bind(bot_id)
        .fetch_optional(pool)
        .await
}

/// Sets (or with `None` or an empty URL, removes) the webhook of bot `bot_id` (Campfire's
/// `User::Bot#update_webhook_url!`). The caller checks that the URL is http(s).
pub async fn set(pool: &SqlitePool, bot_id: i64, url: Option<&str>) -> sqlx::Result<()> {
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    match url.filter(|u| !u.is_empty()) {
        Some(url) => {
            let now = super::now_ms();
            sqlx::query(
                "INSERT INTO webhooks (user_id, url, created_at, updated_at) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (user_id) DO UPDATE SET url = excluded.url, updated_at = excluded.updated_at",
            )
            .bind(bot_id)
            .bind(url)
            .bind(now)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        None => {
            sqlx::query("DELETE FROM webhooks WHERE user_id = ?")
                .bind(bot_id)
                .execute(&mut *tx)
                .await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// A bot a message should reach through its webhook.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq)]
pub struct Recipient {
    /// The bot's user id.
    pub bot_id: i64,
    /// The bot's name (its mention text is `@<name>`).
    pub name: String,
    /// Its bot token (its key is `<bot_id>-<token>`).
    pub bot_token: String,
    /// The webhook URL.
    pub url: String,
}

/// The active bots with a webhook among the members of room `room_id`, except `except_user`
/// (the message's creator): who a message in a direct room reaches (Campfire's
/// `room.users.active_bots`).
pub async fn bots_in_room(
    pool: &SqlitePool,
    room_id: i64,
    except_user: i64,
) -> sqlx::Result<Vec<Recipient>> {
    sqlx::query_as(
        "SELECT u.id AS bot_id, u.name, u.bot_token, w.url FROM memberships m \
         JOIN users u ON u.id = m.user_id JOIN webhooks w ON w.user_id = u.id \
         WHERE m.room_id = ? AND u.role = 'bot' AND u.status = 'active' \
         AND u.bot_token IS NOT NULL AND u.id != ? ORDER BY u.id",
    )
    .bind(room_id)
    .bind(except_user)
    .fetch_all(pool)
    .await
}

/// Whether any webhook exists (while none does, posts skip the recipient lookup).
pub async fn any(pool: &SqlitePool) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM webhooks)")
        .fetch_one(pool)
        .await
}
