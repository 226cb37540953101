//! Administering people: statuses (`PATCH /users/{user_id}` with `user[status]`), bans
//! (`POST`/`DELETE /users/{user_id}/ban`, Campfire's `Users::BansController`), all for
//! administrators only.
//!
//! Deactivating or banning deletes the user's sessions (Campfire's `User#deactivate`) and
//! closes every open cable connection of the user with
//! `{"type":"disconnect","reason":"remote","reconnect":false}`, as Campfire's
//! `remote_connections.where(current_user:).disconnect(reconnect: false)` does; the closed
//! client cannot reconnect, since its session is gone. A ban also blocks the public IP
//! addresses of the user's sessions for state-changing requests and deletes the user's
//! messages, broadcasting their removal to each room (Campfire's `User::Bannable`). The last
//! active administrator can be neither deactivated nor banned (422).

use crate::db::Db;
use crate::pubsub::Delivery;
use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error::AppError;
use super::extract::{Admin, Id};
use super::respond::found;
use crate::broadcasts;
use crate::db::bans::{self, Banned};
use crate::db::users::Guard;
use crate::db::{rooms, Status};
use crate::pubsub::Control;

/// The statuses a user can be given.
pub const STATUSES: &[Status] = Status::ALL;

/// What administrators are told when a change would leave no active administrator.
pub const LAST_ADMINISTRATOR: &str =
    "The last active administrator can't be deactivated, banned or demoted.";

/// Turns a refused change into its error: 404 for a missing user, 422 for the last
/// administrator.
pub fn guard_error(guard: Guard) -> Result<(), AppError> {
    match guard {
        Guard::Ok => Ok(()),
        Guard::Missing => Err(AppError::NotFound),
        Guard::LastAdministrator => Err(AppError::Unprocessable(LAST_ADMINISTRATOR.into())),
    }
}

/// Closes every open cable connection of `user_id` (reason `remote`, no reconnect) on every
/// node (Rails' `remote_connections.where(current_user:).disconnect(reconnect: false)`).
pub fn disconnect(delivery: &Delivery, user_id: i64) {
    delivery.bus.control(Control::Disconnect {
        user_id,
        session_sha256: None,
        reconnect: false,
    });
}

/// Closes the cable connections opened with session `token` of `user_id` (the session itself
/// is already deleted), on every node.
pub fn close_session(delivery: &Delivery, user_id: i64, token: &str) {
    delivery.bus.control(Control::Disconnect {
        user_id,
        session_sha256: Some(crate::registry::session_digest(token)),
        reconnect: false,
    });
}

/// Sets `user_id`'s status; `banned` is a full [`ban`]; `deactivated` also deletes the
/// user's sessions and disconnects the user's cable connections.
///
/// # Errors
/// 422 for a status outside [`STATUSES`], 404 for an unknown user or a bot, 422 for the last
/// active administrator, database failures.
pub async fn set_status(
    db: &Db,
    delivery: &Delivery,
    user_id: i64,
    status: &str,
) -> Result<(), AppError> {
    let status: Status = status
        .parse()
        .map_err(|e: crate::db::kinds::UnknownWord| AppError::Unprocessable(e.to_string()))?;
    if status == Status::Banned {
        return ban(db, delivery, user_id).await;
    }
    if status == Status::Active {
        // Lifting a ban also lifts its address blocks.
        if bans::unban(&db.pool, user_id).await? {
            refresh_bans_present(db).await?;
        }
    }
    guard_error(crate::db::users::set_status(&db.pool, user_id, status).await?)?;
    if status != Status::Active {
        disconnect(delivery, user_id);
        tracing::info!(user_id, status = status.as_str(), "user disabled");
    }
    Ok(())
}

async fn refresh_bans_present(db: &Db) -> Result<(), AppError> {
    let any = bans::any(&db.pool).await?;
    db.bans_present
        .store(any, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Bans `user_id` (see the module docs): one transaction, then the `remove` broadcasts of
/// the deleted messages, room by room, and the disconnects.
///
/// # Errors
/// 404 for an unknown user or a bot, 422 for the last active administrator, database
/// failures (nothing changed).
pub async fn ban(db: &Db, delivery: &Delivery, user_id: i64) -> Result<(), AppError> {
    let (ips, removed) = match bans::ban(&db.pool, user_id).await? {
        Banned::Done { ips, removed } => (ips, removed),
        Banned::NotFound => return Err(AppError::NotFound),
        Banned::LastAdministrator => {
            return Err(AppError::Unprocessable(LAST_ADMINISTRATOR.into()))
        }
    };
    if !ips.is_empty() {
        db.bans_present
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let mut by_room: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for m in &removed {
        by_room
            .entry(m.room_id)
            .or_default()
            .push(m.client_message_id.clone());
    }
    for (room_id, ids) in &by_room {
        if let Some(room) = rooms::find(&db.pool, *room_id).await? {
            broadcasts::messages_purged(&delivery.broadcaster, &room, ids);
        }
    }
    disconnect(delivery, user_id);
    tracing::info!(
        user_id,
        addresses = ips.len(),
        messages = removed.len(),
        "user banned"
    );
    Ok(())
}

/// `PATCH /users/{user_id}` with `user[status]`: 204 on success, 403 for non-administrators,
/// 404 for an unknown user, 400 for an unknown status, 422 for the last active
/// administrator.
pub async fn update(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    Admin(ctx): Admin,
    Id(user_id): Id,
) -> Result<Response, AppError> {
    let status = ctx.form.get("user[status]").unwrap_or("").to_owned();
    set_status(&db, &delivery, user_id, &status).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /users/{user_id}/ban`: bans the user and answers 302 to the profile. 403 for
/// non-administrators, 404 for an unknown user, 422 for the last active administrator.
pub async fn create_ban(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    _: Admin,
    Id(user_id): Id,
) -> Result<Response, AppError> {
    ban(&db, &delivery, user_id).await?;
    Ok(found(&format!("/users/{user_id}")))
}

/// `DELETE /users/{user_id}/ban`: lifts the ban (the user is active again, the address
/// blocks go) and answers 302 to the profile. 403 for non-administrators, 404 when the user
/// is not banned.
pub async fn destroy_ban(
    State(db): State<Db>,
    _: Admin,
    Id(user_id): Id,
) -> Result<Response, AppError> {
    if !bans::unban(&db.pool, user_id).await? {
        return Err(AppError::NotFound);
    }
    refresh_bans_present(&db).await?;
    Ok(found(&format!("/users/{user_id}")))
}
