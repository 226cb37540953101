//! Queries on `users` (Campfire's `User`: roles member/administrator/bot, statuses
//! active/deactivated/banned).

use sqlx::SqlitePool;

use super::{Role, Status};

/// A user row, without the password digest.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct User {
    /// Primary key.
    pub id: i64,
    /// Display name.
    pub name: String,
    /// Login e-mail address (bots have none).
    pub email_address: Option<String>,
    /// Member, administrator or bot.
    pub role: Role,
    /// Active, deactivated or banned.
    pub status: Status,
}

impl User {
    /// Only active users may log in, post or keep a cable connection.
    pub fn is_active(&self) -> bool {
        self.status == Status::Active
    }
}

/// A user row (`id, name, email_address, role, status`) plus one more column `T`: a password
/// digest, bot token or bio ([`UserRowWithSecret`]), or a session's `last_active_at`.
pub(super) type UserRowWith<T> = (i64, String, Option<String>, Role, Status, T);

/// A user row plus one optional text column (password digest, bot token or bio).
type UserRowWithSecret = UserRowWith<Option<String>>;

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
    Ok(row
        .map(split_extra)
        .and_then(|(user, digest)| Some((user, digest?))))
}

/// A [`UserRowWith`] as the user and the extra column.
pub(super) fn split_extra<T>(row: UserRowWith<T>) -> (User, T) {
    let (id, name, email_address, role, status, secret) = row;
    let user = User {
        id,
        name,
        email_address,
        role,
        status,
    };
    (user, secret)
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
    .map(split_extra);
    Ok(candidate.and_then(|(user, stored)| {
        let stored = stored?;
        let equal: bool = subtle::ConstantTimeEq::ct_eq(stored.as_bytes(), token.as_bytes()).into();
        equal.then_some(user)
    }))
}

/// The outcome of a change that must leave an active administrator behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guard {
    /// The change may go ahead.
    Ok,
    /// No such user, or a bot (bots are managed under `/account/bots`).
    Missing,
    /// The user is the last active administrator.
    LastAdministrator,
}

/// Checks, inside the caller's transaction, that `user_id` is a person and that disabling or
/// demoting it leaves another active administrator (Campfire refuses to lock the account out
/// of administration).
pub async fn guard_last_administrator(
    conn: &mut sqlx::SqliteConnection,
    user_id: i64,
) -> sqlx::Result<Guard> {
    let row: Option<(Role, Status)> =
        sqlx::query_as("SELECT role, status FROM users WHERE id = ? AND role != 'bot'")
            .bind(user_id)
            .fetch_optional(&mut *conn)
            .await?;
    let Some((role, status)) = row else {
        return Ok(Guard::Missing);
    };
    if role != Role::Administrator || status != Status::Active {
        return Ok(Guard::Ok);
    }
    let others: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM users WHERE role = 'administrator' AND status = 'active' AND id != ?",
    )
    .bind(user_id)
    .fetch_one(&mut *conn)
    .await?;
    Ok(if others == 0 {
        Guard::LastAdministrator
    } else {
        Guard::Ok
    })
}

/// Sets a person's status (`active`, `deactivated`, `banned`) in one transaction;
/// deactivating or banning also deletes the user's sessions and web push subscriptions
/// (Campfire's `User#deactivate`: `push_subscriptions.delete_all`, `sessions.delete_all`), so
/// a user made active again is pushed to only on browsers that subscribe anew.
/// Refuses ([`Guard::LastAdministrator`]) to disable the last active administrator, and
/// answers [`Guard::Missing`] for an unknown user or a bot.
pub async fn set_status(pool: &SqlitePool, id: i64, status: Status) -> sqlx::Result<Guard> {
    let disables = status != Status::Active;
    set_guarded(
        pool,
        id,
        Column::Status,
        status.as_str(),
        disables,
        disables,
    )
    .await
}

/// Sets a person's role (`member` or `administrator`); refuses to demote the last active
/// administrator.
pub async fn set_role(pool: &SqlitePool, id: i64, role: Role) -> sqlx::Result<Guard> {
    set_guarded(
        pool,
        id,
        Column::Role,
        role.as_str(),
        role != Role::Administrator,
        false,
    )
    .await
}

/// The column [`set_guarded`] writes.
#[derive(Clone, Copy)]
enum Column {
    Status,
    Role,
}

/// Sets a person's (never a bot's) `column` to `value` in one transaction; when `demotes`,
/// first refuses ([`Guard::LastAdministrator`]) if the person is the last active
/// administrator; when `ends_sessions`, deletes the person's sessions and push subscriptions in
/// the same transaction.
async fn set_guarded(
    pool: &SqlitePool,
    id: i64,
    column: Column,
    value: &str,
    demotes: bool,
    ends_sessions: bool,
) -> sqlx::Result<Guard> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    if demotes {
        let guard = guard_last_administrator(&mut tx, id).await?;
        if guard != Guard::Ok {
            return Ok(guard);
        }
    }
    let sql = match column {
        Column::Status => {
            "UPDATE users SET status = ?, updated_at = ? WHERE id = ? AND role != 'bot'"
        }
        Column::Role => "UPDATE users SET role = ?, updated_at = ? WHERE id = ? AND role != 'bot'",
    };
    let changed = sqlx::query(sql)
        .bind(value)
        .bind(super::now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if changed == 0 {
        return Ok(Guard::Missing);
    }
    if ends_sessions {
        for sql in [
            "DELETE FROM sessions WHERE user_id = ?",
            "DELETE FROM push_subscriptions WHERE user_id = ?",
        ] {
            sqlx::query(sql).bind(id).execute(&mut *tx).await?;
        }
    }
    tx.commit().await?;
    Ok(Guard::Ok)
}

/// Runs `sql` (an `UPDATE` of one person binding `value`, the time `now` and `id`) in `tx`.
async fn update_person(
    tx: &mut sqlx::SqliteConnection,
    sql: &'static str,
    value: &str,
    now: i64,
    id: i64,
) -> sqlx::Result<()> {
    sqlx::query(sql)
        .bind(value)
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// A user's public profile: the user and the bio.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The user.
    pub user: User,
    /// The bio, empty when none.
    pub bio: String,
}

/// Finds a user's profile (any role or status).
pub async fn profile(pool: &SqlitePool, id: i64) -> sqlx::Result<Option<Profile>> {
    let row: Option<UserRowWithSecret> =
        sqlx::query_as("SELECT id, name, email_address, role, status, bio FROM users WHERE id = ?")
            .bind(id)
            .fetch_optional(pool)
            .await?;
    Ok(
        row.map(|(id, name, email_address, role, status, bio)| Profile {
            user: User {
                id,
                name,
                email_address,
                role,
                status,
            },
            bio: bio.unwrap_or_default(),
        }),
    )
}

/// Sets a user's name and bio (Campfire's `Users::ProfilesController#update`).
pub async fn update_profile(pool: &SqlitePool, id: i64, name: &str, bio: &str) -> sqlx::Result<()> {
    super::One::execute(pool, super::Access::Changed, |now| {
        sqlx::query("UPDATE users SET name = ?, bio = ?, updated_at = ? WHERE id = ?")
            .bind(name)
            .bind(bio)
            .bind(now)
            .bind(id)
    })
    .await?;
    Ok(())
}

/// Sets a user's `updated_at` to now (after an avatar change, as Rails' `touch`).
pub async fn touch(pool: &SqlitePool, id: i64) -> sqlx::Result<()> {
    super::One::execute(pool, super::Access::Kept, |now| {
        sqlx::query("UPDATE users SET updated_at = ? WHERE id = ?")
            .bind(now)
            .bind(id)
    })
    .await?;
    Ok(())
}

/// Every person (not bots), by name: the administrators' user list.
pub async fn people(pool: &SqlitePool) -> sqlx::Result<Vec<User>> {
    sqlx::query_as(
        "SELECT id, name, email_address, role, status FROM users WHERE role != 'bot' \
         ORDER BY name COLLATE NOCASE, id",
    )
    .fetch_all(pool)
    .await
}

/// One page of [`people`]: the people (not bots) whose name or e-mail address contains
/// `filter` (case-insensitive, `%` and `_` taken literally; all when empty), by name, skipping
/// `offset`, at most `limit`.
///
/// # Errors
/// A database failure.
pub async fn people_page(
    pool: &SqlitePool,
    filter: &str,
    offset: i64,
    limit: i64,
) -> sqlx::Result<Vec<User>> {
    let pattern = format!(
        "%{}%",
        filter
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    );
    sqlx::query_as(
        "SELECT id, name, email_address, role, status FROM users WHERE role != 'bot' \
         AND (name LIKE ?1 ESCAPE '\\' OR COALESCE(email_address, '') LIKE ?1 ESCAPE '\\') \
         ORDER BY name COLLATE NOCASE, id LIMIT ?2 OFFSET ?3",
    )
    .bind(pattern)
    .bind(limit)
    .bind(offset)
    .fetch_all(pool)
    .await
}

/// Inserts a user and grants it a membership in every open room (Campfire's
/// `User#grant_membership_to_open_rooms`), on the caller's transaction. Returns the id.
pub(super) async fn insert_with_open_rooms(
    conn: &mut sqlx::SqliteConnection,
    name: &str,
    email_address: Option<&str>,
    password_digest: Option<&str>,
    role: Role,
    bot_token: Option<&str>,
) -> sqlx::Result<i64> {
    let now = super::now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO users (name, email_address, password_digest, role, status, bot_token, \
         created_at, updated_at) VALUES (?, ?, ?, ?, 'active', ?, ?, ?) RETURNING id",
    )
    .bind(name)
    .bind(email_address)
    .bind(password_digest)
    .bind(role)
    .bind(bot_token)
    .bind(now)
    .bind(now)
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO memberships (room_id, user_id, created_at, updated_at) \
         SELECT id, ?, ?, ? FROM rooms WHERE kind = 'open'",
    )
    .bind(id)
    .bind(now)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(id)
}

/// Signs a person up as a member (Campfire's `UsersController#create` by join code), with a
/// membership in every open room, in one transaction. `email_address` is stored lower-cased.
/// Returns None, storing nothing, when the address is taken.
pub async fn create_member(
    pool: &SqlitePool,
    name: &str,
    email_address: &str,
    password_digest: &str,
) -> sqlx::Result<Option<i64>> {
    let email = email_address.trim().to_lowercase();
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let taken: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM users WHERE email_address = ?)")
            .bind(&email)
            .fetch_one(&mut *tx)
            .await?;
    if taken {
        return Ok(None);
    }
    let id = insert_with_open_rooms(
        &mut tx,
        name,
        Some(&email),
        Some(password_digest),
        Role::Member,
        None,
    )
    .await?;
    tx.commit().await?;
    Ok(Some(id))
}

/// A bot as the administrators' list shows it.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq)]
pub struct Bot {
    /// The bot's user id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its token (the key is `<id>-<token>`).
    pub bot_token: String,
}

impl Bot {
    /// The bot key of its API paths: `<id>-<token>` (Campfire's `User#bot_key`).
    pub fn key(&self) -> String {
        format!("{}-{}", self.id, self.bot_token)
    }
}

/// A new random bot token: 12 letters and digits (Campfire's `SecureRandom.alphanumeric(12)`).
pub fn new_bot_token() -> String {
    use rand::RngExt;
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rng();
    (0..12)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

/// The active bots, by name.
pub async fn bots(pool: &SqlitePool) -> sqlx::Result<Vec<Bot>> {
    sqlx::query_as(
        "SELECT id, name, bot_token FROM users \
         WHERE role = 'bot' AND status = 'active' AND bot_token IS NOT NULL \
         ORDER BY name COLLATE NOCASE, id",
    )
    .fetch_all(pool)
    .await
}

/// Creates a bot with a fresh token and a membership in every open room (Campfire's
/// `User.create_bot!`), in one transaction.
pub async fn create_bot(pool: &SqlitePool, name: &str) -> sqlx::Result<Bot> {
    let token = new_bot_token();
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let id = insert_with_open_rooms(&mut tx, name, None, None, Role::Bot, Some(&token)).await?;
    tx.commit().await?;
    Ok(Bot {
        id,
        name: name.to_owned(),
        bot_token: token,
    })
}

/// Renames an active bot; returns whether it exists.
pub async fn rename_bot(pool: &SqlitePool, id: i64, name: &str) -> sqlx::Result<bool> {
    update_active_bot(
        pool,
        "UPDATE users SET name = ?, updated_at = ? WHERE id = ? AND role = 'bot' AND status = 'active'",
        Some(name),
        id,
    )
    .await
}

/// Gives an active bot a new token, so its old key stops working (Campfire's
/// `User#reset_bot_key`); returns the new token, or None when there is no such bot.
pub async fn reset_bot_token(pool: &SqlitePool, id: i64) -> sqlx::Result<Option<String>> {
    let token = new_bot_token();
    let changed = update_active_bot(
        pool,
        "UPDATE users SET bot_token = ?, updated_at = ? WHERE id = ? AND role = 'bot' AND status = 'active'",
        Some(&token),
        id,
    )
    .await?;
    Ok(changed.then_some(token))
}

/// Runs `sql` (an `UPDATE` of one active bot binding `value`, None for NULL, the time and `id`) under the
/// write lock; returns whether it changed a row.
async fn update_active_bot(
    pool: &SqlitePool,
    sql: &'static str,
    value: Option<&str>,
    id: i64,
) -> sqlx::Result<bool> {
    let changed = super::One::execute(pool, super::Access::Changed, |now| {
        sqlx::query(sql).bind(value).bind(now).bind(id)
    })
    .await?;
    Ok(changed > 0)
}

/// Removes a bot (Campfire's `Accounts::BotsController#destroy`, which deactivates it): its
/// status becomes `deactivated` and its token is cleared, so its key no longer
/// authenticates; its messages stay. Returns whether there was such a bot.
pub async fn deactivate_bot(pool: &SqlitePool, id: i64) -> sqlx::Result<bool> {
    update_active_bot(
        pool,
        "UPDATE users SET status = 'deactivated', bot_token = ?, updated_at = ? \
         WHERE id = ? AND role = 'bot' AND status = 'active'",
        None,
        id,
    )
    .await
}

/// Every active user as `(id, name)`, ordered by name (Campfire's `User.active.ordered`): the
/// people a room form offers.
pub async fn active_ordered(pool: &SqlitePool) -> sqlx::Result<Vec<(i64, String)>> {
    sqlx::query_as(
        "SELECT id, name FROM users WHERE status = 'active' ORDER BY name COLLATE NOCASE, id",
    )
    .fetch_all(pool)
    .await
}

/// How many people the sidebar offers at most (Campfire's `DIRECT_PLACEHOLDERS`), counting the
/// user and the people already in a direct room with them.
pub const DIRECT_PLACEHOLDERS: i64 = 20;

/// The people the sidebar offers for a one-click direct room (Campfire's
/// `Users::SidebarsController#find_direct_placeholder_users`): active people (no bots) who are
/// neither `user_id` nor in a direct room with them, as `(id, first name, avatar version)` by
/// signing-up order, at most [`DIRECT_PLACEHOLDERS`] less the number of those excluded.
pub async fn direct_placeholders(
    pool: &SqlitePool,
    user_id: i64,
) -> sqlx::Result<Vec<(i64, String, Option<i64>)>> {
    let people: Vec<(i64, String, Option<i64>)> = sqlx::query_as(
        "WITH excluded AS ( \
           SELECT ? AS id UNION \
           SELECT m.user_id FROM memberships m JOIN rooms r ON r.id = m.room_id \
           WHERE r.kind = 'direct' AND m.room_id IN (SELECT room_id FROM memberships WHERE user_id = ?)) \
         SELECT id, name, (SELECT MAX(a.blob_id) FROM active_storage_attachments a \
           WHERE a.record_type = 'User' AND a.name = 'avatar' AND a.record_id = users.id) FROM users \
         WHERE status = 'active' AND role != 'bot' AND id NOT IN (SELECT id FROM excluded) \
         ORDER BY id \
         LIMIT MAX(? - (SELECT COUNT(*) FROM excluded), 0)",
    )
    .bind(user_id)
    .bind(user_id)
    .bind(DIRECT_PLACEHOLDERS)
    .fetch_all(pool)
    .await?;
    Ok(people
        .into_iter()
        .map(|(id, name, version)| match name.split_whitespace().next() {
            Some(first) if first.len() < name.len() => (id, first.to_owned(), version),
            _ => (id, name, version),
        })
        .collect())
}

/// The e-mail addresses of the active administrators, the account's first administrator
/// (lowest id) first: whom a push service may contact about this server's pushes
/// (`crate::push::contact`).
pub async fn administrator_addresses(pool: &SqlitePool) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT email_address FROM users WHERE role = 'administrator' AND status = 'active' \
         AND email_address IS NOT NULL ORDER BY id",
    )
    .fetch_all(pool)
    .await
}

/// The bcrypt cost of every password digest Hearth writes (first run, a join link, a password
/// change, the seed's named people) and of the stand-in digest a sign-in with an unknown
/// address is checked against (`crate::web::sessions`): one cost, so the time a sign-in takes
/// does not tell which addresses have accounts. 12, Rails' production cost
/// (`has_secure_password` hashes at `BCrypt::Engine.cost`, bcrypt-ruby's `DEFAULT_COST`) and the
/// `bcrypt` crate's `DEFAULT_COST`, which every account made before this constant already has:
/// about a quarter of a second of one core per check. Only the seed's generated load-test users
/// differ (`db::seed::SeedOptions::generated_bcrypt_cost`, 4 by default).
pub const PASSWORD_BCRYPT_COST: u32 = 12;

/// The bcrypt digest of a person's password, `None` for a bot or an unknown user.
pub async fn password_digest(pool: &SqlitePool, id: i64) -> sqlx::Result<Option<String>> {
    Ok(sqlx::query_scalar::<_, Option<String>>(
        "SELECT password_digest FROM users WHERE id = ? AND role != 'bot'",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?
    .flatten())
}

/// What [`update_credentials`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredentialsChange {
    /// Stored; the tokens of the other sessions ended (none unless the password changed).
    Done {
        /// Tokens of the user's sessions, other than the kept one, that were deleted.
        sessions_ended: Vec<String>,
    },
    /// The e-mail address belongs to another user; nothing stored.
    EmailTaken,
}

/// Sets a person's e-mail address (stored lower-cased) and/or password digest in one
/// transaction. A new password also ends every other session of the user (all but the session
/// with token `keep_session`). Nothing is stored when the address is another user's.
pub async fn update_credentials(
    pool: &SqlitePool,
    id: i64,
    email_address: Option<&str>,
    password_digest: Option<&str>,
    keep_session: Option<&str>,
) -> sqlx::Result<CredentialsChange> {
    let email = email_address.map(|e| e.trim().to_lowercase());
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let now = super::now_ms();
    if let Some(email) = &email {
        let taken: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM users WHERE email_address = ? AND id != ?)",
        )
        .bind(email)
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
        if taken {
            return Ok(CredentialsChange::EmailTaken);
        }
        let current: Option<Option<String>> =
            sqlx::query_scalar("SELECT email_address FROM users WHERE id = ?")
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
        if current.flatten().as_deref() != Some(email.as_str()) {
            super::sign_in_codes::end_all(&mut tx, id).await?;
        }
        let sql =
            "UPDATE users SET email_address = ?, updated_at = ? WHERE id = ? AND role != 'bot'";
        update_person(&mut tx, sql, email, now, id).await?;
    }
    let mut sessions_ended = Vec::new();
    if let Some(digest) = password_digest {
        let sql =
            "UPDATE users SET password_digest = ?, updated_at = ? WHERE id = ? AND role != 'bot'";
        update_person(&mut tx, sql, digest, now, id).await?;
        sessions_ended = sqlx::query_scalar(
            "DELETE FROM sessions WHERE user_id = ? AND token != ? RETURNING token",
        )
        .bind(id)
        .bind(keep_session.unwrap_or(""))
        .fetch_all(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(CredentialsChange::Done { sessions_ended })
}

/// Replaces the password digest of user `id` with `new_digest` only while it is still
/// `old_digest` (a reset link's password, [`crate::web::mail_sign_in`]), and ends every
/// session of the user, in one transaction. Returns the ended sessions' tokens, or None (and
/// nothing changed) when the password changed meanwhile: a reset link works once even when it
/// is used several times at once.
///
/// # Errors
/// A database failure.
pub async fn reset_password(
    pool: &SqlitePool,
    id: i64,
    old_digest: &str,
    new_digest: &str,
) -> sqlx::Result<Option<Vec<String>>> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let changed = sqlx::query(
        "UPDATE users SET password_digest = ?, updated_at = ? \
         WHERE id = ? AND password_digest = ? AND role != 'bot'",
    )
    .bind(new_digest)
    .bind(super::now_ms())
    .bind(id)
    .bind(old_digest)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if changed == 0 {
        return Ok(None);
    }
    let ended = sqlx::query_scalar("DELETE FROM sessions WHERE user_id = ? RETURNING token")
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Some(ended))
}

/// One of a user's rooms as the profile lists it, with the user's involvement (bell).
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq)]
pub struct ProfileMembership {
    /// Room id.
    pub room_id: i64,
    /// Open, closed or direct.
    pub kind: super::RoomKind,
    /// The room's name, or for a direct room its other members' names.
    pub label: String,
    /// The member's notification level.
    pub involvement: super::Involvement,
}

/// Every membership of `user_id` (hidden ones too: the profile is how a hidden room comes
/// back), shared rooms by name, then direct rooms (Campfire's `memberships.with_ordered_room`).
pub async fn memberships(pool: &SqlitePool, user_id: i64) -> sqlx::Result<Vec<ProfileMembership>> {
    sqlx::query_as(
        "SELECT r.id AS room_id, r.kind, \
           CASE WHEN r.kind = 'direct' THEN COALESCE( \
             (SELECT group_concat(name, ', ') FROM (SELECT u.name FROM memberships o \
                JOIN users u ON u.id = o.user_id WHERE o.room_id = r.id AND o.user_id != ? \
                ORDER BY u.name COLLATE NOCASE, u.id)), \
             (SELECT name FROM users WHERE id = ?)) \
           ELSE COALESCE(r.name, 'Untitled') END AS label, \
           m.involvement \
         FROM memberships m JOIN rooms r ON r.id = m.room_id \
         WHERE m.user_id = ? AND r.kind != 'thread' \
         ORDER BY r.kind = 'direct', label COLLATE NOCASE, r.id",
    )
    .bind(user_id)
    .bind(user_id)
    .bind(user_id)
    .fetch_all(pool)
    .await
}

/// Active users whose name contains `query` (case-insensitive, `%` and `_` taken literally; all
/// when empty), by name, at most `limit`, as `(id, name)`: with `room_id`, only that room's
/// members (Campfire's `Autocompletable::UsersController`: `users_scope.active.filtered_by`).
///
/// # Errors
/// A database failure.
pub async fn autocompletable(
    pool: &SqlitePool,
    room_id: Option<i64>,
    query: &str,
    limit: i64,
) -> sqlx::Result<Vec<(i64, String)>> {
    let pattern = format!(
        "%{}%",
        query
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_")
    );
    sqlx::query_as(
        "SELECT u.id, u.name FROM users u \
         WHERE u.status = 'active' AND u.name LIKE ? ESCAPE '\\' \
           AND (?2 IS NULL OR EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = u.id \
             AND m.room_id = COALESCE((SELECT parent_room_id FROM rooms WHERE id = ?2), ?2))) \
         ORDER BY u.name COLLATE NOCASE, u.id LIMIT ?3",
    )
    .bind(pattern)
    .bind(room_id)
    .bind(limit)
    .fetch_all(pool)
    .await
}
