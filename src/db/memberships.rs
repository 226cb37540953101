//! Every write that changes who is in a room: creating, converting and destroying rooms,
//! granting and revoking memberships, finding or creating direct rooms (Campfire's
//! `Room.create_for`, `Room#memberships.revise`, `Rooms::Open` granting everyone,
//! `Rooms::Direct.find_or_create_for`, `RoomsController#destroy`), plus involvement.
//!
//! Each access-changing function takes a [`MembershipObserver`] and ends in one private
//! function that commits the transaction and then tells the observer which users lost a
//! membership, so no write path can forget to tell open connections (the server passes its
//! bus, which carries the revocation to every node; each re-checks the room subscriptions of
//! those users only). Grants tell no one: a new membership takes effect at the next
//! subscribe, so creating a room costs nothing per open connection. Involvement changes do
//! not change access and tell no one either.
//!
//! Member lists are passed to SQLite as one JSON array (`json_each`), so a room of a thousand
//! members costs one statement, not a thousand.

use sqlx::{SqliteConnection, SqlitePool};

use super::rooms::Room;
use super::{Involvement, RoomKind};

/// Told after every committed revocation of room access, with the ids of the users whose
/// memberships were deleted (each at most once, ascending; never empty).
pub trait MembershipObserver: Send + Sync {
    /// Called after the commit; must not block (it only signals).
    fn access_revoked(&self, user_ids: &[i64]);
}

/// An observer that does nothing (seeding, tools and tests without connections).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl MembershipObserver for NoObserver {
    fn access_revoked(&self, _user_ids: &[i64]) {}
}

/// The involvement levels, least to most (Campfire's `Membership` enum).
pub const INVOLVEMENTS: &[Involvement] = Involvement::ALL;

/// Who was added to, removed from and kept in a room by one change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Revision {
    /// Users given a membership, ascending.
    pub granted: Vec<i64>,
    /// Users whose membership was deleted, ascending.
    pub revoked: Vec<i64>,
    /// Members before and after, ascending.
    pub kept: Vec<i64>,
}

/// Campfire's default involvement of a new membership: `everything` in direct rooms,
/// `mentions` elsewhere (`Room#default_involvement`, `Rooms::Direct#default_involvement`).
pub fn default_involvement(kind: RoomKind) -> Involvement {
    Involvement::default_for(kind)
}

fn json_ids(ids: &[i64]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

fn parse_ids(json: &str) -> sqlx::Result<Vec<i64>> {
    serde_json::from_str(json).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

/// Commits `tx`, then tells `observer` about `revoked` (when not empty): the one place every
/// access change ends.
async fn commit_and_tell(
    tx: super::Write,
    observer: &dyn MembershipObserver,
    revoked: &[i64],
) -> sqlx::Result<()> {
    // Cached access answers go stale at the commit (`Access::Changed`), before any connection
    // is told to re-check (its re-check must not read them).
    let _held = tx.commit().await?;
    if !revoked.is_empty() {
        let mut ids = revoked.to_vec();
        ids.sort_unstable();
        ids.dedup();
        observer.access_revoked(&ids);
    }
    Ok(())
}

/// The active users among `ids`, ascending (unknown, bot-less filtering is the caller's).
async fn active_among(tx: &mut SqliteConnection, ids: &[i64]) -> sqlx::Result<Vec<i64>> {
    let json: String = sqlx::query_scalar(
        "SELECT json_group_array(id) FROM (SELECT id FROM users WHERE status = 'active' \
         AND id IN (SELECT value FROM json_each(?)) ORDER BY id)",
    )
    .bind(json_ids(ids))
    .fetch_one(&mut *tx)
    .await?;
    parse_ids(&json)
}

async fn all_active(tx: &mut SqliteConnection) -> sqlx::Result<Vec<i64>> {
    let json: String = sqlx::query_scalar(
        "SELECT json_group_array(id) FROM \
         (SELECT id FROM users WHERE status = 'active' ORDER BY id)",
    )
    .fetch_one(&mut *tx)
    .await?;
    parse_ids(&json)
}

async fn members_of(tx: &mut SqliteConnection, room_id: i64) -> sqlx::Result<Vec<i64>> {
    let json: String = sqlx::query_scalar(
        "SELECT json_group_array(user_id) FROM \
         (SELECT user_id FROM memberships WHERE room_id = ? ORDER BY user_id)",
    )
    .bind(room_id)
    .fetch_one(&mut *tx)
    .await?;
    parse_ids(&json)
}

async fn grant(
    tx: &mut SqliteConnection,
    room_id: i64,
    kind: RoomKind,
    user_ids: &[i64],
) -> sqlx::Result<()> {
    if user_ids.is_empty() {
        return Ok(());
    }
    let now = super::now_ms();
    sqlx::query(
        "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
         SELECT ?, value, ?, ?, ? FROM json_each(?) WHERE true \
         ON CONFLICT (room_id, user_id) DO NOTHING",
    )
    .bind(room_id)
    .bind(default_involvement(kind))
    .bind(now)
    .bind(now)
    .bind(json_ids(user_ids))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

async fn revoke(tx: &mut SqliteConnection, room_id: i64, user_ids: &[i64]) -> sqlx::Result<()> {
    if user_ids.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "DELETE FROM memberships WHERE room_id = ? AND user_id IN (SELECT value FROM json_each(?))",
    )
    .bind(room_id)
    .bind(json_ids(user_ids))
    .execute(&mut *tx)
    .await?;
    Ok(())
}

async fn find_room(tx: &mut SqliteConnection, id: i64) -> sqlx::Result<Option<Room>> {
    sqlx::query_as("SELECT id, name, kind, updated_at FROM rooms WHERE id = ?")
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
}

fn with(mut ids: Vec<i64>, id: i64) -> Vec<i64> {
    if let Err(at) = ids.binary_search(&id) {
        ids.insert(at, id);
    }
    ids
}

/// Moves a room to `target` members: grants the new, revokes the gone. Returns the revision.
async fn revise_to(
    tx: &mut SqliteConnection,
    room_id: i64,
    kind: RoomKind,
    target: &[i64],
) -> sqlx::Result<Revision> {
    let current = members_of(tx, room_id).await?;
    let granted: Vec<i64> = target
        .iter()
        .copied()
        .filter(|id| current.binary_search(id).is_err())
        .collect();
    let (kept, revoked): (Vec<i64>, Vec<i64>) = current
        .iter()
        .copied()
        .partition(|id| target.binary_search(id).is_ok());
    grant(tx, room_id, kind, &granted).await?;
    revoke(tx, room_id, &revoked).await?;
    Ok(Revision {
        granted,
        revoked,
        kept,
    })
}

/// Creates an `open` or `closed` room named `name` by `creator_id` (Campfire's
/// `Rooms::Open.create_for` / `Rooms::Closed.create_for`). An open room is granted to every
/// active user; a closed room to the active users among `member_ids` plus the creator.
/// Returns the room and its members, ascending.
///
/// # Errors
/// Database failures (nothing is stored then). `kind` must be `open` or `closed` (anything
/// else is stored as neither: the caller validates).
pub async fn create_room(
    pool: &SqlitePool,
    observer: &dyn MembershipObserver,
    kind: RoomKind,
    name: &str,
    creator_id: i64,
    member_ids: &[i64],
) -> sqlx::Result<(Room, Vec<i64>)> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let now = super::now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO rooms (name, kind, creator_id, created_at, updated_at) \
         VALUES (?, ?, ?, ?, ?) RETURNING id",
    )
    .bind(name)
    .bind(kind)
    .bind(creator_id)
    .bind(now)
    .bind(now)
    .fetch_one(&mut *tx)
    .await?;
    let members = if kind == RoomKind::Open {
        all_active(&mut tx).await?
    } else {
        with(active_among(&mut tx, member_ids).await?, creator_id)
    };
    grant(&mut tx, id, kind, &members).await?;
    let room = find_room(&mut tx, id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
    commit_and_tell(tx, observer, &[]).await?;
    Ok((room, members))
}

/// Renames room `room_id` and makes it `open` (granted to every active user, revoking no one) or `closed`
/// (exactly the active users among `member_ids`, plus `actor_id`), converting between the two
/// as Campfire's `Rooms::OpensController#update` / `Rooms::ClosedsController#update` do.
/// Direct rooms never convert: `None` for a direct or unknown room.
///
/// # Errors
/// Database failures (nothing is stored then).
pub async fn update_room(
    pool: &SqlitePool,
    observer: &dyn MembershipObserver,
    room_id: i64,
    kind: RoomKind,
    name: &str,
    actor_id: i64,
    member_ids: &[i64],
) -> sqlx::Result<Option<(Room, Revision)>> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    match find_room(&mut tx, room_id).await? {
        Some(room) if room.kind != RoomKind::Direct => {}
        _ => return Ok(None),
    }
    sqlx::query("UPDATE rooms SET name = ?, kind = ? WHERE id = ?")
        .bind(name)
        .bind(kind)
        .bind(room_id)
        .execute(&mut *tx)
        .await?;
    let target = if kind == RoomKind::Open {
        // Everyone active joins; no one leaves an open room (inactive members stay, as the
        // seed's deactivated user stays in All Talk).
        let mut target = members_of(&mut tx, room_id).await?;
        target.extend(all_active(&mut tx).await?);
        target.push(actor_id);
        target.sort_unstable();
        target.dedup();
        target
    } else {
        with(active_among(&mut tx, member_ids).await?, actor_id)
    };
    let revision = revise_to(&mut tx, room_id, kind, &target).await?;
    let room = find_room(&mut tx, room_id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
    commit_and_tell(tx, observer, &revision.revoked).await?;
    Ok(Some((room, revision)))
}

/// Grants and revokes memberships of room `room_id` directly (Campfire's
/// `room.memberships.revise(granted:, revoked:)`, as an administrator's tool or a test's).
/// Unknown or inactive users are not granted. Returns the revision; `None` for an unknown room.
///
/// # Errors
/// Database failures (nothing is stored then).
pub async fn revise(
    pool: &SqlitePool,
    observer: &dyn MembershipObserver,
    room_id: i64,
    granted: &[i64],
    revoked: &[i64],
) -> sqlx::Result<Option<Revision>> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let Some(room) = find_room(&mut tx, room_id).await? else {
        return Ok(None);
    };
    let current = members_of(&mut tx, room_id).await?;
    let granted = active_among(&mut tx, granted).await?;
    let mut target: Vec<i64> = current
        .iter()
        .copied()
        .filter(|id| !revoked.contains(id))
        .chain(granted)
        .collect();
    target.sort_unstable();
    target.dedup();
    let revision = revise_to(&mut tx, room_id, room.kind, &target).await?;
    commit_and_tell(tx, observer, &revision.revoked).await?;
    Ok(Some(revision))
}

/// Finds the direct room whose members are exactly the active users among `user_ids` plus
/// `creator_id`, or creates it (Campfire's `Rooms::Direct.find_or_create_for`). Returns the
/// room, its members (ascending) and whether it was created.
///
/// # Errors
/// Database failures (nothing is stored then).
pub async fn find_or_create_direct(
    pool: &SqlitePool,
    observer: &dyn MembershipObserver,
    creator_id: i64,
    user_ids: &[i64],
) -> sqlx::Result<(Room, Vec<i64>, bool)> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let members = with(active_among(&mut tx, user_ids).await?, creator_id);
    let count = i64::try_from(members.len()).unwrap_or(i64::MAX);
    let existing: Option<i64> = sqlx::query_scalar(
        "SELECT r.id FROM rooms r WHERE r.kind = 'direct' \
           AND (SELECT COUNT(*) FROM memberships m WHERE m.room_id = r.id) = ? \
           AND (SELECT COUNT(*) FROM memberships m WHERE m.room_id = r.id \
                AND m.user_id IN (SELECT value FROM json_each(?))) = ? \
         ORDER BY r.id LIMIT 1",
    )
    .bind(count)
    .bind(json_ids(&members))
    .bind(count)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(id) = existing {
        let room = find_room(&mut tx, id)
            .await?
            .ok_or(sqlx::Error::RowNotFound)?;
        tx.commit().await?;
        return Ok((room, members, false));
    }
    let now = super::now_ms();
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO rooms (name, kind, creator_id, created_at, updated_at) \
         VALUES (NULL, 'direct', ?, ?, ?) RETURNING id",
    )
    .bind(creator_id)
    .bind(now)
    .bind(now)
    .fetch_one(&mut *tx)
    .await?;
    grant(&mut tx, id, RoomKind::Direct, &members).await?;
    let room = find_room(&mut tx, id)
        .await?
        .ok_or(sqlx::Error::RowNotFound)?;
    commit_and_tell(tx, observer, &[]).await?;
    Ok((room, members, true))
}

/// Destroys room `room_id` with its memberships, messages and boosts (Campfire's
/// `RoomsController#destroy`). Returns the room and its former members, `None` for an unknown
/// room.
///
/// # Errors
/// Database failures (nothing is deleted then).
pub async fn destroy_room(
    pool: &SqlitePool,
    observer: &dyn MembershipObserver,
    room_id: i64,
) -> sqlx::Result<Option<(Room, Vec<i64>)>> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let Some(room) = find_room(&mut tx, room_id).await? else {
        return Ok(None);
    };
    let former = members_of(&mut tx, room_id).await?;
    sqlx::query("DELETE FROM rooms WHERE id = ?")
        .bind(room_id)
        .execute(&mut *tx)
        .await?;
    commit_and_tell(tx, observer, &former).await?;
    Ok(Some((room, former)))
}

/// Grants every open room to `user_id` (Campfire: open rooms include users created later).
/// Returns how many memberships were created.
///
/// # Errors
/// Database failures (nothing is stored then).
pub async fn grant_open_rooms(
    pool: &SqlitePool,
    observer: &dyn MembershipObserver,
    user_id: i64,
) -> sqlx::Result<u64> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let now = super::now_ms();
    let created = sqlx::query(
        "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
         SELECT id, ?, 'mentions', ?, ? FROM rooms WHERE kind = 'open' \
         ON CONFLICT (room_id, user_id) DO NOTHING",
    )
    .bind(user_id)
    .bind(now)
    .bind(now)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    // A grant only: the next subscribe sees it.
    commit_and_tell(tx, observer, &[]).await?;
    Ok(created)
}

/// The involvement of `user_id` in `room_id`, `None` when not a member.
pub async fn involvement(
    pool: &SqlitePool,
    room_id: i64,
    user_id: i64,
) -> sqlx::Result<Option<Involvement>> {
    sqlx::query_scalar("SELECT involvement FROM memberships WHERE room_id = ? AND user_id = ?")
        .bind(room_id)
        .bind(user_id)
        .fetch_optional(pool)
        .await
}

/// Sets the involvement of `user_id` in `room_id` (one of [`INVOLVEMENTS`]; the caller
/// validates). Returns the previous involvement, `None` when not a member. Access does not
/// change (an invisible member is still a member), so no observer is told.
///
/// # Errors
/// Database failures.
pub async fn set_involvement(
    pool: &SqlitePool,
    room_id: i64,
    user_id: i64,
    involvement: Involvement,
) -> sqlx::Result<Option<Involvement>> {
    let mut tx = super::Write::begin(pool, super::Access::Kept).await?;
    let previous: Option<Involvement> =
        sqlx::query_scalar("SELECT involvement FROM memberships WHERE room_id = ? AND user_id = ?")
            .bind(room_id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await?;
    if previous.is_some() {
        sqlx::query(
            "UPDATE memberships SET involvement = ?, updated_at = ? WHERE room_id = ? AND user_id = ?",
        )
        .bind(involvement)
        .bind(super::now_ms())
        .bind(room_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(previous)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A membership write whose turn at the process's write lock does not come within the
    /// lock wait fails as busy (it used to go ahead without the lock).
    #[tokio::test]
    async fn a_write_that_cannot_take_the_write_lock_fails_as_busy() {
        let (pool, dir, _serial) = super::super::test_pool().await;
        let held = super::super::write_lock().await.expect("lock");
        let started = std::time::Instant::now();
        let result = grant_open_rooms(&pool, &NoObserver, 1).await;
        assert!(
            result.as_ref().is_err_and(super::super::is_busy),
            "{result:?}"
        );
        assert!(started.elapsed() >= super::super::LOCK_WAIT);
        drop(held);
        pool.close().await;
        let _ = std::fs::remove_dir_all(dir);
    }
}
