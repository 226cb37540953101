//! A person's boosts beyond the picker (Campfire's `Messages::BoostsController#new` and
//! `#destroy`): the "New boost" form for a custom boost of up to 16 characters, and removing
//! one's own boost (a live `remove` for everyone in the room). Posting a boost stays
//! `POST /messages/{id}/boosts` (`crate::web::messages::boost`).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::context::Ctx;
use super::error::AppError;
use super::extract::{parse_id, MemberMessage};
use super::respond::stream_or_back;
use crate::broadcasts;
use crate::db::boosts;
use crate::state::SharedState;

/// The most characters a boost holds (Campfire's boosts form and the column's check).
pub const MAX_BOOST_CHARS: usize = 16;

/// The "New boost" form (`templates/messages/boosts/new.html`).
#[derive(Template, Debug)]
#[template(path = "messages/boosts/new.html")]
pub struct NewBoostPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The boosted message's id.
    pub message_id: i64,
    /// Its room (where "Cancel" goes).
    pub room_id: i64,
    /// The most characters accepted.
    pub max_chars: usize,
}

/// `GET /messages/{message_id}/boosts/new`: the form, for members of the message's room (404
/// otherwise; 401 signed out).
pub async fn new(
    Extension(ctx): Extension<Ctx>,
    MemberMessage { message, room, .. }: MemberMessage,
) -> Result<Response, AppError> {
    let token = ctx.csrf_token();
    let page = NewBoostPage {
        csrf_token: &token,
        message_id: message.id,
        room_id: room.id,
        max_chars: MAX_BOOST_CHARS,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `DELETE /messages/{message_id}/boosts/{boost_id}`: removes the signed-in person's own
/// boost and broadcasts its `remove`; the turbo-stream when asked for, else 302 to the room.
/// 404 for an unknown message or boost or a room the person is not in, 403 for someone else's
/// boost.
pub async fn destroy(
    State(state): State<SharedState>,
    MemberMessage {
        user,
        message,
        room,
    }: MemberMessage,
    Path((_, boost_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let boost = boosts::find(&state.pool, message.id, parse_id(&boost_id)?)
        .await?
        .ok_or(AppError::NotFound)?;
    if boost.booster_id != user.id {
        return Err(AppError::Forbidden);
    }
    if !boosts::delete(&state.pool, boost.id).await? {
        return Err(AppError::NotFound);
    }
    let html = broadcasts::boost_removed(&state.broadcaster, &room, boost.id);
    Ok(stream_or_back(&headers, html, room.id))
}
