//! Queries of digests (migration 0018): each person's digest frequency and time zone, who is
//! due one, the unread mentions and direct messages of a period, and the record of the
//! digests built (at most one per person per period).

use sqlx::SqlitePool;

use super::{Access, One};

/// How often a person is e-mailed what they missed (`users.digest_frequency`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, sqlx::Type)]
#[sqlx(type_name = "TEXT", rename_all = "lowercase")]
pub enum Frequency {
    /// No digests.
    Never,
    /// At the end of every hour.
    Hourly,
    /// Once a day, at the account's digest hour in the person's time zone.
    Daily,
}

impl Frequency {
    /// The stored (and form) name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::Hourly => "hourly",
            Self::Daily => "daily",
        }
    }

    /// The frequency named `s` (a form's value), if any.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Never, Self::Hourly, Self::Daily]
            .into_iter()
            .find(|f| f.as_str() == s)
    }
}

/// A person who may be due a digest: active, not a bot, with an address, not `never`.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq)]
pub struct Recipient {
    /// The user id.
    pub id: i64,
    /// The name.
    pub name: String,
    /// The e-mail address.
    pub email_address: String,
    /// Hourly or daily.
    pub digest_frequency: Frequency,
    /// The IANA time zone, if the person's browser has told it.
    pub time_zone: Option<String>,
}

/// Everyone who may be due a digest (deactivated and banned people never are).
///
/// # Errors
/// A database failure.
pub async fn recipients(pool: &SqlitePool) -> sqlx::Result<Vec<Recipient>> {
    sqlx::query_as(
        "SELECT id, name, email_address, digest_frequency, time_zone FROM users \
         WHERE status = 'active' AND role != 'bot' AND email_address IS NOT NULL \
         AND digest_frequency != 'never' ORDER BY id",
    )
    .fetch_all(pool)
    .await
}

/// A person's digest frequency and time zone (`None` for an unknown user).
///
/// # Errors
/// A database failure.
pub async fn preferences(
    pool: &SqlitePool,
    user_id: i64,
) -> sqlx::Result<Option<(Frequency, Option<String>)>> {
    sqlx::query_as("SELECT digest_frequency, time_zone FROM users WHERE id = ?")
        .bind(user_id)
        .fetch_optional(pool)
        .await
}

/// Sets a person's digest frequency and, when given, time zone (an IANA name the caller
/// checked).
///
/// # Errors
/// A database failure.
pub async fn set_preferences(
    pool: &SqlitePool,
    user_id: i64,
    frequency: Frequency,
    time_zone: Option<&str>,
) -> sqlx::Result<()> {
    One::execute(pool, Access::Kept, |now| {
        sqlx::query(
            "UPDATE users SET digest_frequency = ?, time_zone = COALESCE(?, time_zone), \
             updated_at = ? WHERE id = ?",
        )
        .bind(frequency)
        .bind(time_zone)
        .bind(now)
        .bind(user_id)
    })
    .await?;
    Ok(())
}

/// One unread message of a period, as a digest shows it.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq)]
pub struct Missed {
    /// The message id.
    pub id: i64,
    /// The room id.
    pub room_id: i64,
    /// The room's name (`None` for a direct room).
    pub room_name: Option<String>,
    /// Whether the room is a direct one.
    pub direct: bool,
    /// The author's name.
    pub creator_name: String,
    /// The body's stored HTML (mentions are read from it).
    pub body: String,
    /// The body's text.
    pub text: String,
    /// When it was posted, in milliseconds.
    pub created_at: i64,
}

/// The messages of `[start, end)` (milliseconds) that `user_id` has not read as of now, in
/// rooms they see, by others: every message of a room whose unread mark (`unread_at`, the
/// first unread post) is at or before it. Read rooms (no mark) and messages before the mark
/// are left out. The caller keeps the mentions and the direct messages.
///
/// # Errors
/// A database failure.
pub async fn unread_between(
    pool: &SqlitePool,
    user_id: i64,
    start: i64,
    end: i64,
) -> sqlx::Result<Vec<Missed>> {
    sqlx::query_as(
        "SELECT m.id, m.room_id, r.name AS room_name, r.kind = 'direct' AS direct, \
         u.name AS creator_name, m.body, COALESCE(t.body, '') AS text, m.created_at \
         FROM memberships ms JOIN rooms r ON r.id = ms.room_id \
         JOIN messages m ON m.room_id = ms.room_id \
         JOIN users u ON u.id = m.creator_id \
         LEFT JOIN message_search_texts t ON t.id = m.id \
         WHERE ms.user_id = ?1 AND ms.unread_at IS NOT NULL AND ms.involvement != 'invisible' \
         AND m.created_at >= ms.unread_at AND m.created_at >= ?2 AND m.created_at < ?3 \
         AND m.creator_id != ?1 ORDER BY m.created_at, m.id LIMIT 500",
    )
    .bind(user_id)
    .bind(start)
    .bind(end)
    .fetch_all(pool)
    .await
}

/// Records the digest of `user_id` for the period ending at `period_end` with `messages`
/// items: true when this call recorded it, false when that period already had its digest.
///
/// # Errors
/// A database failure.
pub async fn record(
    pool: &SqlitePool,
    user_id: i64,
    period_end: i64,
    messages: usize,
) -> sqlx::Result<bool> {
    let changed = One::execute(pool, Access::Kept, |now| {
        sqlx::query(
            "INSERT OR IGNORE INTO digest_deliveries (user_id, period_end, messages, created_at) \
             VALUES (?, ?, ?, ?)",
        )
        .bind(user_id)
        .bind(period_end)
        .bind(i64::try_from(messages).unwrap_or(i64::MAX))
        .bind(now)
    })
    .await?;
    Ok(changed == 1)
}

/// Takes back the record of `user_id`'s digest for the period ending at `period_end` (its mail
/// could not be queued), so that the next run builds it again.
///
/// # Errors
/// A database failure.
pub async fn forget(pool: &SqlitePool, user_id: i64, period_end: i64) -> sqlx::Result<()> {
    One::execute(pool, Access::Kept, |_| {
        sqlx::query("DELETE FROM digest_deliveries WHERE user_id = ? AND period_end = ?")
            .bind(user_id)
            .bind(period_end)
    })
    .await?;
    Ok(())
}

/// Whether the digest of `user_id` for the period ending at `period_end` was built.
///
/// # Errors
/// A database failure.
pub async fn recorded(pool: &SqlitePool, user_id: i64, period_end: i64) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM digest_deliveries WHERE user_id = ? AND period_end = ?)",
    )
    .bind(user_id)
    .bind(period_end)
    .fetch_one(pool)
    .await
}

/// Forgets the digests of periods that ended before `before` (milliseconds): a period that far
/// back is never due again, so its row no longer guards anything.
///
/// # Errors
/// A database failure.
pub async fn prune(pool: &SqlitePool, before: i64) -> sqlx::Result<u64> {
    One::execute(pool, Access::Kept, |_| {
        sqlx::query("DELETE FROM digest_deliveries WHERE period_end < ?").bind(before)
    })
    .await
}
