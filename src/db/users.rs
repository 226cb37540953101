//! Queries on `users` (Campfire's `User`: roles member/administrator/bot, statuses
//! active/deactivated/banned).

use sqlx::SqlitePool;

/// A user row, without the password digest.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct User {
    /// Primary key.
    pub id: i64,
    /// Display name.
    pub name: String,
    /// Login e-mail address (bots have none).
    pub email_address: Option<String>,
    /// `member`, `administrator` or `bot`.
    pub role: String,
    /// `active`, `deactivated` or `banned`.
    pub status: String,
}

impl User {
    /// Only active users may log in, post or keep a cable connection.
    pub fn is_active(&self) -> bool {
        self.status == "active"
    }

    /// The initials shown in the avatar placeholder (`"David Heinemeier"` → `"DH"`).
    pub fn initials(&self) -> String {
        self.name
            .split_whitespace()
            .filter_map(|w| w.chars().next())
            .take(2)
            .flat_map(char::to_uppercase)
            .collect()
    }
}

/// A user row plus one secret column (password digest or bot token).
type UserRowWithSecret = (i64, String, Option<String>, String, String, Option<String>);

/// Finds a user by id.
pub async fn find(pool: &SqlitePool, id: i64) -> sqlx::Result<Option<User>> {
    sqlx::query_as("SELECT id, name, email_address, role, status FROM users WHERE id = ?")
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Returns the user and password digest of an **active** user with this e-mail address
/// (Campfire: `User.active.authenticate_by`).
pub async fn find_active_for_login(
    pool: &SqlitePool,
    email_address: &str,
) -> sqlx::Result<Option<(User, String)>> {
    let row: Option<UserRowWithSecret> = sqlx::query_as(
        "SELECT id, name, email_address, role, status, password_digest FROM users \
         WHERE email_address = ? AND status = 'active' AND role != 'bot'",
    )
    .bind(email_address.trim().to_lowercase())
    .fetch_optional(pool)
    .await?;
    Ok(
        row.and_then(|(id, name, email_address, role, status, digest)| {
            digest.map(|d| {
                (
                    User {
                        id,
                        name,
                        email_address,
                        role,
                        status,
                    },
                    d,
                )
            })
        }),
    )
}

/// Finds an active bot by its bot key `"<user_id>-<bot_token>"` (Campfire's
/// `User.authenticate_bot`). `None` for a malformed key or no match.
pub async fn authenticate_bot(pool: &SqlitePool, bot_key: &str) -> sqlx::Result<Option<User>> {
    let Some((id, token)) = bot_key.split_once('-') else {
        return Ok(None);
    };
    let Ok(id) = id.parse::<i64>() else {
        return Ok(None);
    };
    let candidate: Option<(User, Option<String>)> = sqlx::query_as::<_, UserRowWithSecret>(
        "SELECT id, name, email_address, role, status, bot_token FROM users \
         WHERE id = ? AND role = 'bot' AND status = 'active'",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?
    .map(|(id, name, email_address, role, status, t)| {
        (
            User {
                id,
                name,
                email_address,
                role,
                status,
            },
            t,
        )
    });
    Ok(candidate.and_then(|(user, stored)| {
        let stored = stored?;
        let equal: bool = subtle::ConstantTimeEq::ct_eq(stored.as_bytes(), token.as_bytes()).into();
        equal.then_some(user)
    }))
}

/// Sets a user's status (`active`, `deactivated`, `banned`); deactivating or banning also
/// deletes the user's sessions (Campfire's `User#deactivate`). Returns whether a row changed.
pub async fn set_status(pool: &SqlitePool, id: i64, status: &str) -> sqlx::Result<bool> {
    let _write = super::write_lock().await;
    let mut tx = pool.begin().await?;
    let changed = sqlx::query("UPDATE users SET status = ?, updated_at = ? WHERE id = ?")
        .bind(status)
        .bind(super::now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if status != "active" {
        sqlx::query("DELETE FROM sessions WHERE user_id = ?")
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(changed > 0)
}
