//! The rows an import writes, on its one transaction: the account, users, rooms, memberships,
//! messages and boosts (Hearth's tables, `migrations/`), and at the end what Hearth derives
//! from them: the full-text index (`message_search_index` and its mark
//! `message_search_progress`, as `db::upkeep` fills them), the catch-up log pruned
//! (`message_changes`, as `db::upkeep` prunes it), and no unread marks (the history is read).
//!
//! The triggers of `messages` run as for any post: the room's `updated_at` follows its newest
//! message, and the catch-up log gets its rows.

use sqlx::SqliteConnection;

use super::messages::Row;
use super::people::Person;
use super::rooms::Room;
use crate::db::Role;

/// Every table of a team emptied, children first: what `--replace` does.
const EMPTY_TEAM: &[&str] = &[
    "DELETE FROM boosts",
    "DELETE FROM messages",
    "DELETE FROM memberships",
    "DELETE FROM webhooks",
    "DELETE FROM push_subscriptions",
    "DELETE FROM searches",
    "DELETE FROM bans",
    "DELETE FROM sessions",
    "DELETE FROM active_storage_variant_records",
    "DELETE FROM active_storage_attachments",
    "DELETE FROM active_storage_blobs",
    "DELETE FROM rooms",
    "DELETE FROM users",
    "DELETE FROM accounts",
    "DELETE FROM message_changes",
    "DELETE FROM message_search_index",
];

/// The tables an import fills and counts, with the query counting each.
pub const COUNTED: &[(&str, &str)] = &[
    ("accounts", "SELECT COUNT(*) FROM accounts"),
    ("users", "SELECT COUNT(*) FROM users"),
    ("rooms", "SELECT COUNT(*) FROM rooms"),
    ("memberships", "SELECT COUNT(*) FROM memberships"),
    ("messages", "SELECT COUNT(*) FROM messages"),
    ("boosts", "SELECT COUNT(*) FROM boosts"),
    (
        "message_search_index",
        "SELECT COUNT(*) FROM message_search_index",
    ),
];

/// Deletes the team the database holds (`--replace`); the files of its blobs stay on disk.
/// Returns how many blobs it had.
///
/// # Errors
/// A database failure.
pub async fn replace_team(conn: &mut SqliteConnection) -> sqlx::Result<u64> {
    let blobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM active_storage_blobs")
        .fetch_one(&mut *conn)
        .await?;
    for &sql in EMPTY_TEAM {
        sqlx::query(sql).execute(&mut *conn).await?;
    }
    sqlx::query("UPDATE message_search_progress SET indexed_through = 0")
        .execute(&mut *conn)
        .await?;
    Ok(u64::try_from(blobs).unwrap_or(0))
}

/// Writes the account named `name`, with a new join code.
///
/// # Errors
/// A database failure.
pub async fn account(conn: &mut SqliteConnection, name: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO accounts (name, join_code, created_at, updated_at) VALUES (?, ?, ?, ?)",
    )
    .bind(name)
    .bind(crate::db::accounts::new_join_code())
    .bind(now)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes `people`; returns their ids, in order. Bots get a new bot token.
///
/// # Errors
/// A database failure.
pub async fn users(
    conn: &mut SqliteConnection,
    people: &[Person],
    now: i64,
) -> sqlx::Result<Vec<i64>> {
    let mut ids = Vec::with_capacity(people.len());
    for p in people {
        let token = (p.role == Role::Bot).then(crate::db::users::new_bot_token);
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO users (name, email_address, password_digest, role, status, bio, \
             bot_token, created_at, updated_at) VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(&p.name)
        .bind(&p.email)
        .bind(p.role)
        .bind(p.status)
        .bind(&p.bio)
        .bind(token)
        .bind(now)
        .bind(now)
        .fetch_one(&mut *conn)
        .await?;
        ids.push(id);
    }
    Ok(ids)
}

/// Writes `rooms` and their memberships; returns the rooms' ids, in order, and how many
/// memberships were written.
///
/// # Errors
/// A database failure.
pub async fn rooms(
    conn: &mut SqliteConnection,
    rooms: &[Room],
    user_ids: &[i64],
) -> sqlx::Result<(Vec<i64>, u64)> {
    let mut ids = Vec::with_capacity(rooms.len());
    let mut memberships = 0;
    for room in rooms {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO rooms (name, kind, creator_id, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(&room.name)
        .bind(room.kind)
        .bind(room.creator.map(|i| user_ids[i]))
        .bind(room.created_at)
        .bind(room.created_at)
        .fetch_one(&mut *conn)
        .await?;
        for &(member, involvement) in &room.members {
            sqlx::query(
                "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
                 VALUES (?, ?, ?, ?, ?)",
            )
            .bind(id)
            .bind(user_ids[member])
            .bind(involvement)
            .bind(room.created_at)
            .bind(room.created_at)
            .execute(&mut *conn)
            .await?;
            memberships += 1;
        }
        ids.push(id);
    }
    Ok((ids, memberships))
}

/// Writes one message of room `room_id` and its boosts; returns its id.
///
/// # Errors
/// A database failure.
pub async fn message(
    conn: &mut SqliteConnection,
    room_id: i64,
    client_message_id: &str,
    row: &Row,
    user_ids: &[i64],
) -> sqlx::Result<i64> {
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO messages (room_id, creator_id, client_message_id, body, plain_text, \
         created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(room_id)
    .bind(user_ids[row.author])
    .bind(client_message_id)
    .bind(&row.body.html)
    .bind(&row.body.plain_text)
    .bind(row.created_at)
    .bind(row.updated_at)
    .fetch_one(&mut *conn)
    .await?;
    for (booster, content) in &row.boosts {
        sqlx::query(
            "INSERT INTO boosts (message_id, booster_id, content, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?)",
        )
        .bind(id)
        .bind(user_ids[*booster])
        .bind(content)
        .bind(row.created_at)
        .bind(row.created_at)
        .execute(&mut *conn)
        .await?;
    }
    Ok(id)
}

/// Fills what Hearth derives: every message indexed for search, the catch-up log pruned to
/// what `db::upkeep` keeps, no unread marks.
///
/// # Errors
/// A database failure.
pub async fn derived(conn: &mut SqliteConnection) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO message_search_index (rowid, body) \
         SELECT id, body FROM message_search_texts \
          WHERE id > (SELECT indexed_through FROM message_search_progress WHERE id = 1) \
          ORDER BY id",
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE message_search_progress \
            SET indexed_through = (SELECT COALESCE(MAX(id), 0) FROM messages) WHERE id = 1",
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "DELETE FROM message_changes WHERE id <= (SELECT MAX(id) FROM message_changes) - ?",
    )
    .bind(crate::db::upkeep::CHANGES_KEPT)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE memberships SET unread_at = NULL WHERE unread_at IS NOT NULL")
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The rows each of [`COUNTED`]'s tables holds.
///
/// # Errors
/// A database failure.
pub async fn count(conn: &mut SqliteConnection) -> sqlx::Result<Vec<(&'static str, u64)>> {
    let mut out = Vec::with_capacity(COUNTED.len());
    for &(table, sql) in COUNTED {
        let n: i64 = sqlx::query_scalar(sql).fetch_one(&mut *conn).await?;
        out.push((table, u64::try_from(n).unwrap_or(0)));
    }
    Ok(out)
}
