//! Writing the plan: multi-row inserts on the seed transaction's connection.

use std::borrow::Cow;
use std::sync::Arc;

use anyhow::Context as _;
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use super::people::{generated_user_created_at, NAMED_USERS};
use super::plan::{MessageRow, Plan};
use super::rooms::{Members, ROOMS, ROOM_CREATOR_ID, UNREAD};
use super::{
    ACCOUNT_NAME, BASE_EPOCH_MS, FIRST_GENERATED_USER_ID, JOIN_CODE, MINUTE, NAMED_USERS_OFFSET_MS,
};

/// Largest number of bind parameters per statement. SQLite builds before 3.32 allowed 999;
/// staying under that keeps the seed portable.
const MAX_BIND_PARAMETERS: usize = 999;
/// Inserts every row of the plan, in id order, on the transaction's connection.
pub(super) async fn write(
    conn: &mut SqliteConnection,
    plan: &Plan,
    named_digests: Arc<Vec<Option<String>>>,
    generated_digest: Arc<str>,
) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO accounts (id, name, join_code, created_at, updated_at) \
         VALUES (1, ?1, ?2, ?3, ?3)",
    )
    .bind(ACCOUNT_NAME)
    .bind(JOIN_CODE)
    .bind(BASE_EPOCH_MS)
    .execute(&mut *conn)
    .await
    .context("cannot insert the account")?;

    insert_users(conn, plan, &named_digests, &generated_digest).await?;
    insert_rooms(conn, plan).await?;
    // Messages before memberships: the `messages_receive` trigger (migration 0003) marks
    // memberships unread as each message arrives, and the seed sets its own unread marks.
    insert_messages(conn, plan).await?;
    insert_memberships(conn, plan).await?;
    insert_boosts(conn, plan).await?;
    Ok(())
}

/// Users in id order: the named people in one statement, then the generated users in chunks of
/// multi-row `VALUES` that all share [`GENERATED_PASSWORD`](super::GENERATED_PASSWORD)'s one digest.
async fn insert_users(
    conn: &mut SqliteConnection,
    plan: &Plan,
    named_digests: &[Option<String>],
    generated_digest: &Arc<str>,
) -> anyhow::Result<()> {
    const COLUMNS: usize = 10;
    let named: Vec<UserRow<'_>> = NAMED_USERS
        .iter()
        .zip(named_digests)
        .map(|(user, digest)| UserRow {
            id: user.id,
            name: user.name.into(),
            email: user.email.map(Into::into),
            digest: digest.as_deref(),
            role: user.role,
            status: user.status,
            bio: user.bio,
            bot_token: user.bot_token,
            created_at: BASE_EPOCH_MS + NAMED_USERS_OFFSET_MS + user.id * MINUTE,
        })
        .collect();
    insert_user_rows(conn, &named, "named users").await?;

    let indexes: Vec<usize> = (1..=plan.generated_users).collect();
    for chunk in indexes.chunks(MAX_BIND_PARAMETERS / COLUMNS) {
        let generated: Vec<UserRow<'_>> = chunk
            .iter()
            .map(|&i| UserRow {
                id: FIRST_GENERATED_USER_ID + i as i64 - 1,
                name: super::people::generated_user_name(i).into(),
                email: Some(format!("user{i}@example.com").into()),
                digest: Some(generated_digest),
                role: crate::db::Role::Member,
                status: crate::db::Status::Active,
                bio: None,
                bot_token: None,
                created_at: generated_user_created_at(i),
            })
            .collect();
        insert_user_rows(conn, &generated, "generated users").await?;
    }
    Ok(())
}

/// One `users` row as the seed writes it (its `updated_at` is its `created_at`).
struct UserRow<'a> {
    id: i64,
    name: Cow<'a, str>,
    email: Option<Cow<'a, str>>,
    digest: Option<&'a str>,
    role: crate::db::Role,
    status: crate::db::Status,
    bio: Option<&'a str>,
    bot_token: Option<&'a str>,
    created_at: i64,
}

/// Inserts `rows` in one multi-row statement; `what` names them in the error.
async fn insert_user_rows(
    conn: &mut SqliteConnection,
    rows: &[UserRow<'_>],
    what: &str,
) -> anyhow::Result<()> {
    let mut query: QueryBuilder<Sqlite> = QueryBuilder::new(
        "INSERT INTO users (id, name, email_address, password_digest, role, status, bio, \
         bot_token, created_at, updated_at) ",
    );
    query.push_values(rows, |mut row, user| {
        row.push_bind(user.id)
            .push_bind(user.name.as_ref())
            .push_bind(user.email.as_deref())
            .push_bind(user.digest)
            .push_bind(user.role)
            .push_bind(user.status)
            .push_bind(user.bio)
            .push_bind(user.bot_token)
            .push_bind(user.created_at)
            .push_bind(user.created_at);
    });
    query
        .build()
        .execute(&mut *conn)
        .await
        .with_context(|| format!("cannot insert the {what}"))?;
    Ok(())
}

/// Rooms; `updated_at` is the newest message's time (Campfire's `belongs_to :room, touch: true`).
async fn insert_rooms(conn: &mut SqliteConnection, plan: &Plan) -> anyhow::Result<()> {
    for room in &ROOMS {
        let created_at = BASE_EPOCH_MS + room.created_offset_ms;
        let updated_at = plan.last_message_at(room.id).unwrap_or(created_at);
        sqlx::query(
            "INSERT INTO rooms (id, name, kind, creator_id, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .bind(room.id)
        .bind(room.name)
        .bind(room.kind)
        .bind(ROOM_CREATOR_ID)
        .bind(created_at)
        .bind(updated_at)
        .execute(&mut *conn)
        .await
        .with_context(|| format!("cannot insert room {}", room.id))?;
    }
    Ok(())
}

/// Memberships, room by room in user id order. A membership is created when both its room and
/// its user exist: `max(room.created_at, user.created_at)`.
async fn insert_memberships(conn: &mut SqliteConnection, plan: &Plan) -> anyhow::Result<()> {
    for room in &ROOMS {
        let room_created_at = BASE_EPOCH_MS + room.created_offset_ms;
        let result = match room.members {
            Members::Everyone => sqlx::query(
                "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
                     SELECT ?1, id, ?2, max(?3, created_at), max(?3, created_at) \
                     FROM users ORDER BY id",
            )
            .bind(room.id)
            .bind(room.involvement)
            .bind(room_created_at)
            .execute(&mut *conn)
            .await,
            Members::NotDeactivated => sqlx::query(
                "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
                     SELECT ?1, id, ?2, max(?3, created_at), max(?3, created_at) \
                     FROM users WHERE status <> 'deactivated' ORDER BY id",
            )
            .bind(room.id)
            .bind(room.involvement)
            .bind(room_created_at)
            .execute(&mut *conn)
            .await,
            Members::Only(ids) => {
                let mut query = QueryBuilder::<Sqlite>::new(
                    "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) ",
                );
                query.push_values(ids, |mut row, &user_id| {
                    let user_created_at = BASE_EPOCH_MS + NAMED_USERS_OFFSET_MS + user_id * MINUTE;
                    let created_at = room_created_at.max(user_created_at);
                    row.push_bind(room.id)
                        .push_bind(user_id)
                        .push_bind(room.involvement)
                        .push_bind(created_at)
                        .push_bind(created_at);
                });
                query.build().execute(&mut *conn).await
            }
        };
        result.with_context(|| format!("cannot insert the members of room {}", room.id))?;
    }

    for (room_id, user_id) in UNREAD {
        let unread_at = plan
            .messages
            .iter()
            .filter(|m| m.room_id == room_id && m.creator_id != user_id)
            .map(|m| m.created_at)
            .max();
        sqlx::query("UPDATE memberships SET unread_at = ?1 WHERE room_id = ?2 AND user_id = ?3")
            .bind(unread_at)
            .bind(room_id)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

async fn insert_messages(conn: &mut SqliteConnection, plan: &Plan) -> anyhow::Result<()> {
    const COLUMNS: usize = 7;
    let numbered: Vec<(i64, &MessageRow)> = plan
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| (i as i64 + 1, m))
        .collect();
    for chunk in numbered.chunks(MAX_BIND_PARAMETERS / COLUMNS) {
        let mut query = QueryBuilder::<Sqlite>::new(
            "INSERT INTO messages (id, room_id, creator_id, client_message_id, body, created_at, \
             updated_at) ",
        );
        query.push_values(chunk, |mut row, (id, message)| {
            row.push_bind(*id)
                .push_bind(message.room_id)
                .push_bind(message.creator_id)
                .push_bind(message.client_message_id.as_str())
                .push_bind(message.body.as_str())
                .push_bind(message.created_at)
                .push_bind(message.created_at);
        });
        query
            .build()
            .execute(&mut *conn)
            .await
            .context("cannot insert the messages")?;
    }
    Ok(())
}

async fn insert_boosts(conn: &mut SqliteConnection, plan: &Plan) -> anyhow::Result<()> {
    if plan.boosts.is_empty() {
        return Ok(());
    }
    let mut query = QueryBuilder::<Sqlite>::new(
        "INSERT INTO boosts (id, message_id, booster_id, content, created_at, updated_at) ",
    );
    query.push_values(plan.boosts.iter().enumerate(), |mut row, (i, boost)| {
        row.push_bind(i as i64 + 1)
            .push_bind(boost.message_id)
            .push_bind(boost.booster_id)
            .push_bind(boost.content)
            .push_bind(boost.created_at)
            .push_bind(boost.created_at);
    });
    query
        .build()
        .execute(&mut *conn)
        .await
        .context("cannot insert the boosts")?;
    Ok(())
}
