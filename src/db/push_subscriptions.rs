//! Queries on `push_subscriptions` (Campfire's `Push::Subscription`, migration 0015) and the
//! recipients of a message's pushes (Campfire's `Room::MessagePusher#relevant_subscriptions`).

use sqlx::SqlitePool;

use super::any_rows::AnyRows;
use super::now_ms;
use super::rooms::CONNECTION_TTL_MS;

/// A push subscription row.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq, serde::Serialize)]
pub struct PushSubscription {
    /// Primary key.
    pub id: i64,
    /// Whose it is.
    pub user_id: i64,
    /// The push service's URL for this browser (RFC 8030 §5).
    pub endpoint: String,
    /// The browser's P-256 public key, base64url (RFC 8291 `p256dh`).
    pub p256dh_key: String,
    /// The browser's 16-byte authentication secret, base64url (RFC 8291 `auth`).
    pub auth_key: String,
    /// The browser's `User-Agent` when it subscribed.
    pub user_agent: Option<String>,
    /// Creation time, ms.
    pub created_at: i64,
}

macro_rules! columns {
    () => {
        "id, user_id, endpoint, p256dh_key, auth_key, user_agent, created_at"
    };
}

/// A subscription to store.
#[derive(Debug)]
pub struct NewSubscription<'a> {
    /// Whose it is.
    pub user_id: i64,
    /// The endpoint (validated by the caller).
    pub endpoint: &'a str,
    /// `p256dh`, base64url.
    pub p256dh_key: &'a str,
    /// `auth`, base64url.
    pub auth_key: &'a str,
    /// The browser's `User-Agent`.
    pub user_agent: Option<&'a str>,
}

/// The most push subscriptions one user may have (one per browser; Campfire has no cap). A
/// person with a phone, a laptop and a few browsers has a handful; the cap bounds what one
/// account can make the push sender do per message.
pub const MAX_PER_USER: i64 = 20;

/// What [`upsert`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Upserted {
    /// Stored (new, or the user's subscription to the same endpoint with new keys).
    Stored(PushSubscription),
    /// The user has [`MAX_PER_USER`] subscriptions already and this endpoint is none of them:
    /// nothing stored.
    AtCap,
}

/// Stores the subscription, or refreshes the keys of the user's subscription with the same
/// endpoint (Campfire's `find_or_create_by`); returns it. A new endpoint is stored only while
/// the user has fewer than [`MAX_PER_USER`] (checked and inserted in one statement, so
/// concurrent requests cannot pass the cap together); otherwise [`Upserted::AtCap`].
/// `present` (the server's answer to "is there any subscription", see [`recipients`]) is told
/// afterwards. Deleting a subscription leaves `present` as it is: an answer of "some" that is
/// no longer true costs [`recipients`] one query, never a push.
pub async fn upsert(
    pool: &SqlitePool,
    present: &AnyRows,
    new: &NewSubscription<'_>,
) -> sqlx::Result<Upserted> {
    let now = now_ms();
    let stored = sqlx::query_as(concat!(
        "INSERT INTO push_subscriptions (user_id, endpoint, p256dh_key, auth_key, user_agent, created_at, updated_at) \
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?6 \
         WHERE (SELECT COUNT(*) FROM push_subscriptions WHERE user_id = ?1) < ?7 \
            OR EXISTS (SELECT 1 FROM push_subscriptions WHERE user_id = ?1 AND endpoint = ?2) \
         ON CONFLICT (user_id, endpoint) DO UPDATE SET p256dh_key = excluded.p256dh_key, \
           auth_key = excluded.auth_key, user_agent = excluded.user_agent, updated_at = excluded.updated_at \
         RETURNING ",
        columns!()
    ))
    .bind(new.user_id)
    .bind(new.endpoint)
    .bind(new.p256dh_key)
    .bind(new.auth_key)
    .bind(new.user_agent)
    .bind(now)
    .bind(MAX_PER_USER)
    .fetch_optional(pool)
    .await;
    present.changed();
    Ok(stored?.map_or(Upserted::AtCap, Upserted::Stored))
}

/// The user's subscriptions, newest first.
pub async fn for_user(pool: &SqlitePool, user_id: i64) -> sqlx::Result<Vec<PushSubscription>> {
    sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM push_subscriptions WHERE user_id = ? ORDER BY id DESC"
    ))
    .bind(user_id)
    .fetch_all(pool)
    .await
}

/// The user's subscription `id`; `None` when there is none or it is another user's.
pub async fn find_for_user(
    pool: &SqlitePool,
    user_id: i64,
    id: i64,
) -> sqlx::Result<Option<PushSubscription>> {
    sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM push_subscriptions WHERE id = ? AND user_id = ?"
    ))
    .bind(id)
    .bind(user_id)
    .fetch_optional(pool)
    .await
}

/// Deletes the user's subscription `id`; false when there is none or it is another user's.
pub async fn delete_for_user(pool: &SqlitePool, user_id: i64, id: i64) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM push_subscriptions WHERE id = ? AND user_id = ?")
        .bind(id)
        .bind(user_id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Deletes the user's subscription to `endpoint` (the browser's, as it signs out: Campfire's
/// `Push::Subscription.destroy_by(endpoint:, user_id:)`); false when the user has none there.
pub async fn delete_endpoint_for_user(
    pool: &SqlitePool,
    user_id: i64,
    endpoint: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM push_subscriptions WHERE endpoint = ? AND user_id = ?")
        .bind(endpoint)
        .bind(user_id)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// Deletes a subscription whose push service answered that it is gone (404/410).
pub async fn delete(pool: &SqlitePool, id: i64) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM push_subscriptions WHERE id = ?")
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

/// The subscriptions a new message in `room_id` by `creator_id` is pushed to, as Campfire's
/// `Room::MessagePusher`: members other than the creator whose membership is visible (not
/// `invisible`) and disconnected (no connection within [`CONNECTION_TTL_MS`]), with
/// involvement `everything`, or `mentions` when they are among `mentionee_ids`. Active users
/// only. While `present` knows that no subscription exists at all (none was ever stored
/// through [`upsert`] with it since it last looked), no query is made.
pub async fn recipients(
    pool: &SqlitePool,
    present: &AnyRows,
    room_id: i64,
    creator_id: i64,
    mentionee_ids: &[i64],
) -> sqlx::Result<Vec<PushSubscription>> {
    let any = present.any(|| async {
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM push_subscriptions)")
            .fetch_one(pool)
            .await
    });
    if !any.await? {
        return Ok(Vec::new());
    }
    let mentioned = serde_json::to_string(mentionee_ids).unwrap_or_else(|_| "[]".into());
    sqlx::query_as(
        "SELECT s.id, s.user_id, s.endpoint, s.p256dh_key, s.auth_key, s.user_agent, s.created_at \
         FROM push_subscriptions s \
         JOIN memberships m ON m.user_id = s.user_id AND m.room_id = ? \
         JOIN users u ON u.id = s.user_id AND u.status = 'active' \
         WHERE s.user_id != ? \
           AND m.involvement != 'invisible' \
           AND (m.connected_at IS NULL OR m.connected_at < ?) \
           AND (m.involvement = 'everything' \
                OR (m.involvement = 'mentions' AND s.user_id IN (SELECT value FROM json_each(?)))) \
         ORDER BY s.id",
    )
    .bind(room_id)
    .bind(creator_id)
    .bind(now_ms() - CONNECTION_TTL_MS)
    .bind(mentioned)
    .fetch_all(pool)
    .await
}

/// How many rooms `user_id` has unread messages in (visible memberships), for the app badge.
pub async fn unread_rooms(pool: &SqlitePool, user_id: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM memberships WHERE user_id = ? AND unread_at IS NOT NULL \
         AND involvement != 'invisible'",
    )
    .bind(user_id)
    .fetch_one(pool)
    .await
}
