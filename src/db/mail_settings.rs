//! The account's mail settings that are not secrets, kept under `mail` in `accounts.settings`
//! (the JSON object of migration 0014): the site address that links in mail point to, and
//! the local hour of daily digests. SMTP's address and password stay in flags.

use sqlx::SqlitePool;

use super::{Access, One};

/// The hour of daily digests when none is set (local time of each person).
pub const DEFAULT_DIGEST_HOUR: u8 = 8;

/// The mail settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailSettings {
    /// The site's address for links in mail (`https://chat.example.com`, no trailing `/`);
    /// empty until an administrator sets it (password-reset links and digests need it).
    pub site_url: String,
    /// The local hour (0-23) daily digests go out.
    pub digest_hour: u8,
}

impl Default for MailSettings {
    fn default() -> Self {
        Self {
            site_url: String::new(),
            digest_hour: DEFAULT_DIGEST_HOUR,
        }
    }
}

/// Reads the mail settings (the defaults when there is no account or none are stored).
///
/// # Errors
/// A database failure.
pub async fn get(pool: &SqlitePool) -> sqlx::Result<MailSettings> {
    let row: Option<(Option<String>, Option<i64>)> = sqlx::query_as(
        "SELECT json_extract(settings, '$.mail.site_url'), json_extract(settings, '$.mail.digest_hour') \
         FROM accounts ORDER BY id LIMIT 1",
    )
    .fetch_optional(pool)
    .await?;
    let (site_url, hour) = row.unwrap_or_default();
    Ok(MailSettings {
        site_url: site_url.unwrap_or_default(),
        digest_hour: hour
            .and_then(|h| u8::try_from(h).ok())
            .filter(|h| *h < 24)
            .unwrap_or(DEFAULT_DIGEST_HOUR),
    })
}

/// Stores the mail settings (checked by the caller), keeping the other settings.
///
/// # Errors
/// A database failure.
pub async fn set(pool: &SqlitePool, settings: &MailSettings) -> sqlx::Result<()> {
    One::execute(pool, Access::Kept, |now| {
        sqlx::query(
            "UPDATE accounts SET settings = json_set(settings, '$.mail', \
             json_object('site_url', ?, 'digest_hour', ?)), updated_at = ? \
             WHERE id = (SELECT MIN(id) FROM accounts)",
        )
        .bind(settings.site_url.clone())
        .bind(i64::from(settings.digest_hour))
        .bind(now)
    })
    .await?;
    Ok(())
}
