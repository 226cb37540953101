//! Queries on `sessions` (Campfire's `Session`, `has_secure_token`): one row per login, found
//! by the random token that the signed `session_token` cookie carries.

use sqlx::SqlitePool;

use super::users::User;

/// How often `last_active_at` is refreshed at most (Campfire: once an hour).
pub const ACTIVITY_REFRESH_MS: i64 = 60 * 60 * 1000;

/// A new random session token: 24 alphanumeric characters, as Rails' `has_secure_token`.
pub fn new_token() -> String {
    use rand::RngExt;
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rng();
    (0..24)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// Starts a session for `user_id` and returns its token (Campfire's `Session.start!`).
pub async fn start(
    pool: &SqlitePool,
    user_id: i64,
    ip_address: Option<&str>,
    user_agent: Option<&str>,
) -> sqlx::Result<String> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    let token = new_token();
    let now = super::now_ms();
    sqlx::query(
        "INSERT INTO sessions (user_id, token, ip_address, user_agent, last_active_at, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(user_id)
    .bind(&token)
    .bind(ip_address)
    .bind(user_agent)
    .bind(now)
    .bind(now)
    .bind(now)
    .execute(&*one)
    .await?;
    one.done();
    Ok(token)
}

/// Resolves a session token to its **active** user, refreshing `last_active_at` at most once
/// per [`ACTIVITY_REFRESH_MS`] (Campfire's `Session#resume`). Uncached: requests and cable
/// connections go through [`super::auth_cache::AuthCache::resume`].
pub async fn resume(pool: &SqlitePool, token: &str) -> sqlx::Result<Option<User>> {
    Ok(resume_with_activity(pool, token)
        .await?
        .map(|(user, _)| user))
}

/// [`resume`], also returning the session's `last_active_at` as it now stands (ms since the
/// epoch: now when this call refreshed it; the stored value when no refresh was due or a
/// locked database postponed it), so a cache can tell when the next refresh is due.
pub async fn resume_with_activity(
    pool: &SqlitePool,
    token: &str,
) -> sqlx::Result<Option<(User, i64)>> {
    let row: Option<super::users::UserRowWith<i64>> = sqlx::query_as(
        "SELECT u.id, u.name, u.email_address, u.role, u.status, s.last_active_at \
         FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token = ?",
    )
    .bind(token)
    .fetch_optional(pool)
    .await?;
    let Some((user, mut last_active_at)) = row.map(super::users::split_extra) else {
        return Ok(None);
    };
    if !user.is_active() {
        return Ok(None);
    }
    let now = super::now_ms();
    if now - last_active_at > ACTIVITY_REFRESH_MS {
        // A locked database postpones the refresh to a later request instead of failing this
        // one (the refresh is bookkeeping; the request may be a read).
        match touch(pool, token, now).await {
            Err(e) if super::is_busy(&e) => {
                tracing::debug!("session activity refresh postponed: database locked");
            }
            Err(e) => return Err(e),
            Ok(()) => last_active_at = now,
        }
    }
    Ok(Some((user, last_active_at)))
}

async fn touch(pool: &SqlitePool, token: &str, now: i64) -> sqlx::Result<()> {
    let one = super::One::begin(pool, super::Access::Kept).await?;
    sqlx::query("UPDATE sessions SET last_active_at = ?, updated_at = ? WHERE token = ?")
        .bind(now)
        .bind(now)
        .bind(token)
        .execute(&*one)
        .await?;
    one.done();
    Ok(())
}

/// Destroys the session with this token; returns the user id it belonged to.
pub async fn destroy(pool: &SqlitePool, token: &str) -> sqlx::Result<Option<i64>> {
    let one = super::One::begin(pool, super::Access::Changed).await?;
    let user_id = sqlx::query_scalar("DELETE FROM sessions WHERE token = ? RETURNING user_id")
        .bind(token)
        .fetch_optional(&*one)
        .await?;
    one.done();
    Ok(user_id)
}
