//! A person's boosts beyond the picker (Campfire's `Messages::BoostsController#new` and
//! `#destroy`): the "Add a boost" form for a custom boost of up to 16 characters, and removing
//! one's own boost (a live `remove` for everyone in the room). Posting a boost stays
//! `POST /messages/{id}/boosts` (`crate::web::messages::boost`), answered by [`boosted`].
//!
//! Every message carries a `<turbo-frame id="new_boost_message_<client_message_id>">` beside
//! its boosts holding the "Add a boost" link ([`add_link`]); Turbo loads the form into that
//! frame (a request with `Turbo-Frame` gets the frame alone), so the page keeps its place. The
//! boost's answer puts the link back in the frame; without JavaScript the link opens the form
//! as a page, whose post comes back to the message's permalink.

use crate::db::Db;
use crate::pubsub::Delivery;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::context::Ctx;
use super::error::AppError;
use super::extract::{parse_id, MemberMessage};
use super::respond::{found, stream_or_back, turbo_stream, wants_turbo_stream};
use crate::broadcasts;
use crate::db::boosts;
use crate::db::messages::Message;
use crate::db::rooms::Room;

/// The most characters a boost holds (Campfire's boosts form and the column's check).
pub const MAX_BOOST_CHARS: usize = 16;

/// The "Add a boost" form as a page (`templates/messages/boosts/new.html`), for browsers
/// without JavaScript.
#[derive(Template, Debug)]
#[template(path = "messages/boosts/new.html")]
pub struct NewBoostPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The boosted message's id.
    pub message_id: i64,
    /// The boosted message's `dom_id` (`message_<client_message_id>`).
    pub message_dom_id: String,
    /// Its room (the permalink "Cancel" goes to).
    pub room_id: i64,
    /// The most characters accepted.
    pub max_chars: usize,
    /// Whether the form is drawn inside the message (false: on its own page).
    pub framed: bool,
}

/// The "Add a boost" form alone in its frame (`templates/messages/boosts/_form.html`): the
/// answer to a Turbo frame's request, swapped in beside the message's boosts.
#[derive(Template, Debug)]
#[template(path = "messages/boosts/_form.html")]
pub struct NewBoostFrame<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The boosted message's id.
    pub message_id: i64,
    /// The boosted message's `dom_id` (`message_<client_message_id>`).
    pub message_dom_id: String,
    /// Its room (the permalink "Cancel" goes to).
    pub room_id: i64,
    /// The most characters accepted.
    pub max_chars: usize,
    /// Whether the form is drawn inside the message (always, here).
    pub framed: bool,
}

/// The id of a message's "Add a boost" frame: `new_boost_message_<client_message_id>`
/// (Campfire's `dom_id(message, :new_boost)`).
pub fn frame_id(message: &Message) -> String {
    format!("new_boost_{}", message.dom_id())
}

/// What a message's "Add a boost" frame holds until the form is opened: the link to the form
/// (an icon with its name for screen readers).
pub fn add_link(message_id: impl std::fmt::Display) -> String {
    format!(
        "<a href=\"/messages/{message_id}/boosts/new\" class=\"btn btn--plain boosts__add\" title=\"Add a boost\">\
<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 24 24\" width=\"16\" height=\"16\" aria-hidden=\"true\">\
<path d=\"M12 2a10 10 0 1 0 0 20 10 10 0 0 0 0-20zm0 18a8 8 0 1 1 0-16 8 8 0 0 1 0 16zm-3.5-9a1.5 1.5 0 1 0 0-3 1.5 1.5 0 0 0 0 3zm7 0a1.5 1.5 0 1 0 0-3 1.5 1.5 0 0 0 0 3zM12 17.5c2.3 0 4.3-1.4 5-3.5H7c.7 2.1 2.7 3.5 5 3.5z\"/>\
</svg><span class=\"visually-hidden\">Add a boost</span></a>"
    )
}

/// Whether the request comes from a Turbo frame (it sends the frame's id as `Turbo-Frame`).
fn frame_request(headers: &HeaderMap) -> Option<&str> {
    headers.get("turbo-frame").and_then(|v| v.to_str().ok())
}

/// `GET /messages/{message_id}/boosts/new`: the form, for members of the message's room (404
/// otherwise; 401 signed out): the frame alone for a Turbo frame's request, else a page.
pub async fn new(
    Extension(ctx): Extension<Ctx>,
    MemberMessage { message, room, .. }: MemberMessage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let token = ctx.csrf_token();
    let html = if frame_request(&headers).is_some() {
        NewBoostFrame {
            csrf_token: &token,
            message_id: message.id,
            message_dom_id: message.dom_id(),
            room_id: room.id,
            max_chars: MAX_BOOST_CHARS,
            framed: true,
        }
        .render()?
    } else {
        NewBoostPage {
            csrf_token: &token,
            message_id: message.id,
            message_dom_id: message.dom_id(),
            room_id: room.id,
            max_chars: MAX_BOOST_CHARS,
            framed: false,
        }
        .render()?
    };
    Ok((StatusCode::OK, Html(html)).into_response())
}

/// The answer to a new boost whose `append` is `stream`: for Turbo, the stream, and when the
/// form was the message's "Add a boost" frame, an `update` that puts the link back in it (the
/// booster's page stays where it was); without Turbo, 302 to the message's permalink.
pub fn boosted(headers: &HeaderMap, stream: String, room: &Room, message: &Message) -> Response {
    if !wants_turbo_stream(headers) {
        return found(&format!("/rooms/{}/@{}", room.id, message.id));
    }
    let frame = frame_id(message);
    let mut body = stream;
    if frame_request(headers) == Some(frame.as_str()) {
        body.push_str(&crate::render::turbo_stream(
            "update",
            &frame,
            Some(&add_link(message.id)),
        ));
    }
    turbo_stream(StatusCode::OK, body)
}

/// `DELETE /messages/{message_id}/boosts/{boost_id}`: removes the signed-in person's own
/// boost and broadcasts its `remove`; the turbo-stream when asked for, else 302 to the room.
/// 404 for an unknown message or boost or a room the person is not in, 403 for someone else's
/// boost.
pub async fn destroy(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    MemberMessage {
        user,
        message,
        room,
    }: MemberMessage,
    Path((_, boost_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let boost = boosts::find(&db.pool, message.id, parse_id(&boost_id)?)
        .await?
        .ok_or(AppError::NotFound)?;
    if boost.booster_id != user.id {
        return Err(AppError::Forbidden);
    }
    if !boosts::delete(&db.pool, boost.id).await? {
        return Err(AppError::NotFound);
    }
    let html = broadcasts::boost_removed(&delivery.broadcaster, &room, boost.id);
    Ok(stream_or_back(&headers, html, room.id))
}
