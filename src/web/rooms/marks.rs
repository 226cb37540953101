//! "Mark unread" in a room's (or a thread's) menu: `POST /rooms/{room_id}/unread` sets the
//! member's unread mark and tells their sidebars (`{"roomId":…}` on `user_<id>_unreads`, as a
//! new message does), so the room shows unread in every tab until it is visited again.

use axum::extract::{FromRef, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use sqlx::SqlitePool;

use crate::pubsub::Broadcaster;
use crate::web::error::AppError;
use crate::web::extract::MemberRoom;
use crate::web::respond::{found, turbo_stream, wants_turbo_stream};

/// What "Mark unread" uses.
#[derive(Clone, Debug)]
pub struct MarksHandle {
    /// The SQLite pool.
    pub pool: SqlitePool,
    /// Where the unread notice goes.
    pub broadcaster: Broadcaster,
}

impl<S> FromRef<S> for MarksHandle
where
    S: Send + Sync,
    crate::db::Db: FromRef<S>,
    crate::pubsub::Delivery: FromRef<S>,
{
    fn from_ref(state: &S) -> Self {
        let db = crate::db::Db::from_ref(state);
        let delivery = crate::pubsub::Delivery::from_ref(state);
        Self {
            pool: db.pool,
            broadcaster: delivery.broadcaster,
        }
    }
}

/// `POST /rooms/{room_id}/unread`: marks the room unread for the member (nothing for an
/// invisible membership or a thread not followed); an empty turbo-stream for Turbo, else 302
/// back to the room. 404 for a room the user cannot see.
pub async fn create(
    State(handle): State<MarksHandle>,
    MemberRoom { user, room }: MemberRoom,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    if crate::db::rooms::mark_unread(&handle.pool, room.id, user.id).await? {
        crate::broadcasts::message_unreads(&handle.broadcaster, &room, &[user.id]);
    }
    if wants_turbo_stream(&headers) {
        return Ok(turbo_stream(StatusCode::OK, String::new()));
    }
    Ok(found(&format!("/rooms/{}", room.id)))
}
