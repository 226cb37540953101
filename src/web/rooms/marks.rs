//! "Mark unread" in a room's (or a thread's) menu: `POST /rooms/{room_id}/unread` sets the
//! member's unread mark and tells their sidebars (`{"roomId":…}` on `user_<id>_unreads`, as a
//! new message does), so the room shows unread in every tab until it is visited again.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::web::error::AppError;
use crate::web::extract::MemberRoom;
use crate::web::respond::{found, turbo_stream, wants_turbo_stream};

/// `POST /rooms/{room_id}/unread`: marks the room unread for the member (nothing for an
/// invisible membership or a thread not followed); an empty turbo-stream for Turbo, else 302
/// back to the room. 404 for a room the user cannot see.
pub async fn create(
    State(db): State<crate::db::Db>,
    State(delivery): State<crate::pubsub::Delivery>,
    MemberRoom { user, room }: MemberRoom,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    if crate::db::rooms::mark_unread(&db.pool, room.id, user.id).await? {
        crate::broadcasts::message_unreads(&delivery.broadcaster, &room, &[user.id]);
    }
    if wants_turbo_stream(&headers) {
        return Ok(turbo_stream(StatusCode::OK, String::new()));
    }
    Ok(found(&format!("/rooms/{}", room.id)))
}
