//! Administering users: `PATCH /users/{user_id}` with `user[status]` set to `active`,
//! `deactivated` or `banned` (administrators only).
//!
//! Deactivating or banning deletes the user's sessions (Campfire's `User#deactivate`) and
//! closes every open cable connection of the user with
//! `{"type":"disconnect","reason":"remote","reconnect":false}`, as Campfire's
//! `remote_connections.where(current_user:).disconnect(reconnect: false)` does; the closed
//! client cannot reconnect, since its session is gone.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::context::Ctx;
use super::error::AppError;
use crate::cable::protocol::{disconnect_frames, DisconnectReason};
use crate::state::{AppState, SharedState};

/// The statuses a user can be given.
pub const STATUSES: [&str; 3] = ["active", "deactivated", "banned"];

/// Sets `user_id`'s status; for any status but `active`, also deletes the user's sessions and
/// disconnects the user's cable connections (reason `remote`, no reconnect). Returns whether
/// the user exists. Errors: a status outside [`STATUSES`] (`BadRequest`), database failures.
pub async fn set_status(state: &AppState, user_id: i64, status: &str) -> Result<bool, AppError> {
    if !STATUSES.contains(&status) {
        return Err(AppError::BadRequest(format!("unknown status {status:?}")));
    }
    let changed = crate::db::users::set_status(&state.pool, user_id, status).await?;
    if changed && status != "active" {
        if let Some(redis) = &state.redis {
            // Rails' `remote_connections.where(current_user:).disconnect(reconnect: false)`:
            // every node closes the user's connections (this one through its own
            // subscription).
            redis.remote_disconnect(&crate::redis_pubsub::RemoteDisconnect {
                identifier: crate::redis_pubsub::connection_identifier(
                    &state.config.gid_app,
                    user_id,
                ),
                reconnect: false,
                session_sha256: None,
            });
            tracing::info!(
                user_id,
                status,
                "user disabled: remote disconnect published"
            );
        } else {
            let closed = state
                .cable
                .close_user(user_id, &disconnect_frames(DisconnectReason::Remote, false));
            tracing::info!(user_id, status, connections = closed, "user disabled");
        }
    }
    Ok(changed)
}

/// `PATCH /users/{user_id}` with `user[status]`: 204 on success, 403 for non-administrators,
/// 404 for an unknown user, 400 for an unknown status.
pub async fn update(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(user_id): Path<i64>,
) -> Result<Response, AppError> {
    let admin = ctx.require_user()?;
    if admin.role != "administrator" {
        return Err(AppError::Forbidden);
    }
    let status = ctx.form.get("user[status]").unwrap_or("").to_owned();
    if set_status(&state, user_id, &status).await? {
        Ok(StatusCode::NO_CONTENT.into_response())
    } else {
        Err(AppError::NotFound)
    }
}
