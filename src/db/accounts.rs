//! Queries on `accounts` (Campfire's `Account`, one per installation) and the first run that
//! creates it (Campfire's `FirstRun`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use sqlx::SqlitePool;

/// The account row.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq)]
pub struct Account {
    /// Primary key.
    pub id: i64,
    /// The account's name.
    pub name: String,
    /// The code of the sign-up link `/join/<join_code>` (Campfire's `Account::Joinable`).
    pub join_code: String,
}

/// The name given to the account the first run creates.
pub const FIRST_RUN_ACCOUNT_NAME: &str = "Hearth";
/// The name of the open room the first run creates (as Campfire's first run names it).
pub const FIRST_RUN_ROOM_NAME: &str = "All Talk";

/// A new join code: 12 random letters and digits in three dash-separated groups of four
/// (`abcd-EFGH-1234`), the shape of Campfire's.
pub fn new_join_code() -> String {
    use rand::RngExt;
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rng();
    let mut out = String::with_capacity(14);
    for i in 0..12 {
        if i > 0 && i % 4 == 0 {
            out.push('-');
        }
        out.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
    }
    out
}

/// The installation's account (the first row), if the database has one.
pub async fn find(pool: &SqlitePool) -> sqlx::Result<Option<Account>> {
    sqlx::query_as("SELECT id, name, join_code FROM accounts ORDER BY id LIMIT 1")
        .fetch_optional(pool)
        .await
}

/// Whether the installation still needs its first run: no account and no user.
pub async fn needs_first_run(pool: &SqlitePool) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT NOT EXISTS (SELECT 1 FROM accounts) AND NOT EXISTS (SELECT 1 FROM users)",
    )
    .fetch_one(pool)
    .await
}

/// Gives the account a new join code (Campfire's `Account#reset_join_code`); returns it, or
/// None when there is no account.
pub async fn regenerate_join_code(pool: &SqlitePool) -> sqlx::Result<Option<String>> {
    let code = new_join_code();
    let changed = super::One::execute(pool, super::Access::Kept, |now| {
        sqlx::query(
            "UPDATE accounts SET join_code = ?, updated_at = ? \
             WHERE id = (SELECT MIN(id) FROM accounts)",
        )
        .bind(&code)
        .bind(now)
    })
    .await?;
    Ok((changed > 0).then_some(code))
}

/// The account's settings (Campfire's `accounts.settings` JSON column) and custom styles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The account's name.
    pub name: String,
    /// Only administrators may create rooms (`restrict_room_creation_to_administrators`).
    pub restrict_room_creation_to_administrators: bool,
    /// The account's stylesheet as stored (already sanitized), empty when none.
    pub custom_styles: String,
    /// The e-mail address of the first active administrator (the sign-in page's help
    /// contact), if any.
    pub help_contact: Option<String>,
    /// The blob id of the account's logo (the version of `/account/logo` URLs), if it has one.
    pub logo: Option<i64>,
}

impl Default for Settings {
    /// The settings before the first run: [`FIRST_RUN_ACCOUNT_NAME`], nothing restricted, no
    /// styles.
    fn default() -> Self {
        Self {
            name: FIRST_RUN_ACCOUNT_NAME.to_owned(),
            restrict_room_creation_to_administrators: false,
            custom_styles: String::new(),
            help_contact: None,
            logo: None,
        }
    }
}

/// The installation's settings; the defaults when there is no account yet.
pub async fn settings(pool: &SqlitePool) -> sqlx::Result<Settings> {
    let row: Option<(String, String, Option<String>, Option<i64>)> = sqlx::query_as(
        "SELECT name, settings, custom_styles, (SELECT MAX(blob_id) FROM active_storage_attachments \
         WHERE record_type = 'Account' AND record_id = accounts.id AND name = 'logo') \
         FROM accounts ORDER BY id LIMIT 1",
    )
    .fetch_optional(pool)
    .await?;
    let Some((name, json, custom_styles, logo)) = row else {
        return Ok(Settings::default());
    };
    let restrict = serde_json::from_str::<serde_json::Value>(&json)
        .ok()
        .and_then(|v| v.get("restrict_room_creation_to_administrators").cloned())
        .is_some_and(|v| truthy(&v));
    Ok(Settings {
        name,
        restrict_room_creation_to_administrators: restrict,
        custom_styles: custom_styles.unwrap_or_default(),
        help_contact: help_contact(pool).await?,
        logo,
    })
}

/// Rails' boolean casting of a stored setting (`true`, `"true"`, `"1"`, `1`).
fn truthy(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::Number(n) => n.as_i64().is_some_and(|n| n != 0),
        serde_json::Value::String(s) => matches!(s.as_str(), "1" | "true" | "t" | "on"),
        _ => false,
    }
}

/// Sets the account's name and, when given, `restrict_room_creation_to_administrators`
/// (other keys of the settings object are kept). Returns false when there is no account.
pub async fn update(
    pool: &SqlitePool,
    name: &str,
    restrict_room_creation: Option<bool>,
) -> sqlx::Result<bool> {
    let changed = super::One::execute(pool, super::Access::Kept, |now| match restrict_room_creation {
        Some(restrict) => sqlx::query(
            "UPDATE accounts SET name = ?, \
             settings = json_set(settings, '$.restrict_room_creation_to_administrators', json(?)), \
             updated_at = ? WHERE id = (SELECT MIN(id) FROM accounts)",
        )
        .bind(name)
        .bind(if restrict { "true" } else { "false" })
        .bind(now),
        None => sqlx::query(
            "UPDATE accounts SET name = ?, updated_at = ? WHERE id = (SELECT MIN(id) FROM accounts)",
        )
        .bind(name)
        .bind(now),
    })
    .await?;
    Ok(changed > 0)
}

/// Stores the account's custom styles (already sanitized; empty clears them). Returns false
/// when there is no account.
pub async fn set_custom_styles(pool: &SqlitePool, css: &str) -> sqlx::Result<bool> {
    let changed = super::One::execute(pool, super::Access::Kept, |now| {
        sqlx::query(
            "UPDATE accounts SET custom_styles = ?, updated_at = ? \
             WHERE id = (SELECT MIN(id) FROM accounts)",
        )
        .bind((!css.is_empty()).then_some(css))
        .bind(now)
    })
    .await?;
    Ok(changed > 0)
}

/// The e-mail address of the first active administrator (Campfire's help contact), if any.
pub async fn help_contact(pool: &SqlitePool) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT email_address FROM users WHERE role = 'administrator' AND status = 'active' \
         AND email_address IS NOT NULL ORDER BY id LIMIT 1",
    )
    .fetch_optional(pool)
    .await
}

/// How long a server keeps the account's settings before reading them again (changes made by
/// another process show within this time; changes made here show at once).
pub const SETTINGS_TTL: Duration = Duration::from_secs(5);

/// A server's cached copy of the account's settings.
#[derive(Debug, Default)]
pub struct SettingsCache {
    cached: RwLock<Option<(Instant, Arc<Settings>)>>,
}

impl SettingsCache {
    /// The settings, from the cache while fresh, else read from the database.
    ///
    /// # Errors
    /// Database failures.
    pub async fn get(&self, pool: &sqlx::SqlitePool) -> sqlx::Result<Arc<Settings>> {
        if let Some((at, settings)) = self.cached.read().as_ref() {
            if at.elapsed() < SETTINGS_TTL {
                return Ok(settings.clone());
            }
        }
        let settings = Arc::new(settings(pool).await?);
        *self.cached.write() = Some((Instant::now(), settings.clone()));
        Ok(settings)
    }

    /// Drops the cached copy (after a change).
    pub fn forget(&self) {
        *self.cached.write() = None;
    }
}

/// What the first run created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FirstRun {
    /// The administrator.
    pub user_id: i64,
    /// The open room.
    pub room_id: i64,
}

/// Campfire's `FirstRun.create!`, in one `BEGIN IMMEDIATE` transaction: the account (with a
/// fresh join code), the administrator and the open room [`FIRST_RUN_ROOM_NAME`] with the
/// administrator as its member. Returns None, writing nothing, when the database already has
/// an account or a user. `password_digest` is a bcrypt digest; `email_address` is stored
/// lower-cased.
pub async fn first_run(
    pool: &SqlitePool,
    name: &str,
    email_address: &str,
    password_digest: &str,
) -> sqlx::Result<Option<FirstRun>> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let taken: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM accounts) OR EXISTS (SELECT 1 FROM users)",
    )
    .fetch_one(&mut *tx)
    .await?;
    if taken {
        return Ok(None);
    }
    let now = super::now_ms();
    sqlx::query(
        "INSERT INTO accounts (name, join_code, created_at, updated_at) VALUES (?, ?, ?, ?)",
    )
    .bind(FIRST_RUN_ACCOUNT_NAME)
    .bind(new_join_code())
    .bind(now)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    let user_id: i64 = sqlx::query_scalar(
        "INSERT INTO users (name, email_address, password_digest, role, status, created_at, updated_at) \
         VALUES (?, ?, ?, 'administrator', 'active', ?, ?) RETURNING id",
    )
    .bind(name)
    .bind(email_address.trim().to_lowercase())
    .bind(password_digest)
    .bind(now)
    .bind(now)
    .fetch_one(&mut *tx)
    .await?;
    let room_id: i64 = sqlx::query_scalar(
        "INSERT INTO rooms (name, kind, creator_id, created_at, updated_at) \
         VALUES (?, 'open', ?, ?, ?) RETURNING id",
    )
    .bind(FIRST_RUN_ROOM_NAME)
    .bind(user_id)
    .bind(now)
    .bind(now)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO memberships (room_id, user_id, created_at, updated_at) VALUES (?, ?, ?, ?)",
    )
    .bind(room_id)
    .bind(user_id)
    .bind(now)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some(FirstRun { user_id, room_id }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_codes_are_three_groups_of_four() {
        let code = new_join_code();
        let groups: Vec<&str> = code.split('-').collect();
        assert_eq!(groups.len(), 3, "{code}");
        assert!(groups
            .iter()
            .all(|g| g.len() == 4 && g.bytes().all(|b| b.is_ascii_alphanumeric())));
        assert_ne!(new_join_code(), code);
    }
}
