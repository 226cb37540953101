//! Queries on `sign_in_codes` (migration 0018): 6-digit codes e-mailed for signing in, stored
//! as their HMAC only, each valid for [`CODE_TTL_MS`], used at most once, and dead after
//! [`MAX_FAILED_ATTEMPTS`] wrong tries.

use sqlx::SqlitePool;

use super::{Access, One};

/// How long a code is valid, in milliseconds (10 minutes).
pub const CODE_TTL_MS: i64 = 10 * 60 * 1000;
/// Codes issued to one person in an hour at most, whoever asks and from wherever: past it,
/// asking answers as always but issues and mails nothing (the sign-in limit counts per client,
/// and an address asked for from many clients would otherwise get a letter each time, each
/// code another [`MAX_FAILED_ATTEMPTS`] guesses).
pub const MAX_CODES_PER_HOUR: i64 = 5;
/// Wrong codes tried against a person's live codes before they all die.
pub const MAX_FAILED_ATTEMPTS: i64 = 5;

/// Stores a new code digest for `user_id`, valid from now for [`CODE_TTL_MS`]; the person's
/// earlier codes die (only the newest works). False, and nothing stored, when the person had
/// [`MAX_CODES_PER_HOUR`] codes in the last hour.
/// For an id that names nobody (0, the answer to an address without an account) the same
/// transaction runs and stores nothing, so that both cost the same.
///
/// # Errors
/// A database failure.
pub async fn issue(pool: &SqlitePool, user_id: i64, code_digest: &str) -> sqlx::Result<bool> {
    let mut tx = super::Write::begin(pool, Access::Kept).await?;
    let now = super::now_ms();
    let recent: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sign_in_codes WHERE user_id = ? AND created_at > ?",
    )
    .bind(user_id)
    .bind(now - 3_600_000)
    .fetch_one(&mut *tx)
    .await?;
    if recent >= MAX_CODES_PER_HOUR {
        return Ok(false);
    }
    sqlx::query("UPDATE sign_in_codes SET used_at = ? WHERE user_id = ? AND used_at IS NULL")
        .bind(now)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO sign_in_codes (user_id, code_digest, expires_at, created_at) \
         SELECT id, ?, ?, ? FROM users WHERE id = ?",
    )
    .bind(code_digest)
    .bind(now + CODE_TTL_MS)
    .bind(now)
    .bind(user_id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Ends every live code of `user_id` (its address changed: a code mailed to the old one must
/// not sign in under the new one).
///
/// # Errors
/// A database failure.
pub async fn end_all(conn: &mut sqlx::SqliteConnection, user_id: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE sign_in_codes SET used_at = ? WHERE user_id = ? AND used_at IS NULL")
        .bind(super::now_ms())
        .bind(user_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Takes one try at `user_id`'s live code (unused, unexpired, under the failure limit) before
/// the guess is compared: the try is counted first, in the same statement that reads the
/// code's digest, so guesses sent at once are each counted and at most
/// [`MAX_FAILED_ATTEMPTS`] are ever compared with one code. Returns the code's id and digest,
/// or None when the person has no live code (or its tries are spent). A right guess gives its
/// try back ([`consume`]).
///
/// # Errors
/// A database failure.
pub async fn take_try(pool: &SqlitePool, user_id: i64) -> sqlx::Result<Option<(i64, String)>> {
    let one = super::One::begin(pool, Access::Kept).await?;
    let taken = sqlx::query_as(
        "UPDATE sign_in_codes SET failed_attempts = failed_attempts + 1 WHERE id = \
         (SELECT id FROM sign_in_codes WHERE user_id = ?1 AND used_at IS NULL \
          AND expires_at > ?2 AND failed_attempts < ?3 ORDER BY id DESC LIMIT 1) \
         RETURNING id, code_digest",
    )
    .bind(user_id)
    .bind(super::now_ms())
    .bind(MAX_FAILED_ATTEMPTS)
    .fetch_optional(&*one)
    .await?;
    one.done();
    Ok(taken)
}

/// Marks code `id` used after a right guess whose try [`take_try`] took (the try is given
/// back): true only for the one caller that used it while it was unused and unexpired (a
/// second use, even at the same moment, gets false).
///
/// # Errors
/// A database failure.
pub async fn consume(pool: &SqlitePool, id: i64) -> sqlx::Result<bool> {
    let changed = One::execute(pool, Access::Kept, |now| {
        sqlx::query(
            "UPDATE sign_in_codes SET used_at = ?1, failed_attempts = failed_attempts - 1 \
             WHERE id = ?2 AND used_at IS NULL AND expires_at > ?1",
        )
        .bind(now)
        .bind(id)
    })
    .await?;
    Ok(changed == 1)
}
