//! The bot API beyond posting (Campfire's `Messages::ByBotsController` and
//! `Messages::Boosts::ByBotsController`), authenticated by the bot key in the path, exempt
//! from CSRF and answered without cookies or bodies where Campfire answers with `head`:
//!
//! | route | answer |
//! |---|---|
//! | `GET /rooms/{room_id}/{bot_key}/messages[?before=ID\|?after=ID]` | 200 JSON array of up to 40 messages, oldest first, `X-Total-Count`, `Link: rel="next"` |
//! | `PATCH`/`PUT /rooms/{room_id}/{bot_key}/messages/{id}` | the raw body replaces the bot's own message: 204, broadcast `replace` |
//! | `DELETE /rooms/{room_id}/{bot_key}/messages/{id}` | deletes the bot's own message: 204, broadcast `remove` |
//! | `POST /rooms/{room_id}/{bot_key}/messages/{id}/boosts` | the raw body (1-16 characters) boosts: 201, broadcast `append` |
//! | `DELETE /rooms/{room_id}/{bot_key}/messages/{id}/boosts/{boost_id}` | deletes the bot's own boost: 204, broadcast `remove` |
//!
//! A wrong or revoked key gets a bare 401; a room the bot is not in, or an unknown message
//! or boost, a bare 404; another author's message or boost, a bare 403.

use crate::config::Config;
use crate::db::Db;
use crate::pubsub::Delivery;
use crate::storage::Storage;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use std::sync::Arc;

use super::context::Ctx;
use super::error::AppError;
use super::extract::parse_id;
use super::messages::edit_body;
use crate::broadcasts;
use crate::db::boosts;
use crate::db::messages::{self, Message};
use crate::db::rooms::{self, Room};
use crate::db::users::{self, User};

/// A response with a status and nothing else (Rails' `head`).
pub fn head(status: StatusCode) -> Response {
    status.into_response()
}

/// The bot and the room of a bot path, or the bare answer to give instead (401 for a bad
/// key, 404 for a room the bot is not in).
async fn bot_and_room(
    db: &Db,
    room_id: &str,
    bot_key: &str,
) -> Result<Result<(User, Room), Response>, AppError> {
    let Some(bot) = users::authenticate_bot(&db.pool, bot_key).await? else {
        return Ok(Err(head(StatusCode::UNAUTHORIZED)));
    };
    let Ok(room_id) = parse_id(room_id) else {
        return Ok(Err(head(StatusCode::NOT_FOUND)));
    };
    match rooms::find_for_member(&db.pool, room_id, bot.id).await? {
        Some(room) => Ok(Ok((bot, room))),
        None => Ok(Err(head(StatusCode::NOT_FOUND))),
    }
}

/// The bot of `bot_key`, its room `room_id` and the message `message_id` there (see
/// [`bot_and_room`]); a bare 404 for a malformed or unknown message.
async fn bot_message(
    db: &Db,
    (room_id, bot_key, message_id): (&str, &str, &str),
) -> Result<Result<(User, Room, Message), Response>, AppError> {
    let (bot, room) = match bot_and_room(db, room_id, bot_key).await? {
        Ok(found) => found,
        Err(answer) => return Ok(Err(answer)),
    };
    let Ok(id) = parse_id(message_id) else {
        return Ok(Err(head(StatusCode::NOT_FOUND)));
    };
    Ok(match messages::find(&db.pool, room.id, id).await? {
        Some(message) => Ok((bot, room, message)),
        None => Err(head(StatusCode::NOT_FOUND)),
    })
}

/// [`bot_message`] when the bot wrote the message; a bare 403 for another's.
async fn own_message(
    db: &Db,
    path: (&str, &str, &str),
) -> Result<Result<(Room, Message), Response>, AppError> {
    Ok(match bot_message(db, path).await? {
        Ok((bot, _, message)) if message.creator_id != bot.id => Err(head(StatusCode::FORBIDDEN)),
        Ok((_, room, message)) => Ok((room, message)),
        Err(answer) => Err(answer),
    })
}

/// Unwraps the inner result of a lookup or returns its bare answer.
macro_rules! or_answer {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(answer) => return Ok(answer),
        }
    };
}

/// The text of a raw request body: 400 when not UTF-8.
fn body_text(ctx: &Ctx) -> Result<&str, AppError> {
    std::str::from_utf8(&ctx.body)
        .map_err(|_| AppError::BadRequest("body is not valid UTF-8".into()))
}

/// The query of the messages index.
#[derive(Debug, Deserialize)]
pub struct IndexQuery {
    /// Only messages older than this message id.
    pub before: Option<String>,
    /// Only messages newer than this message id.
    pub after: Option<String>,
}

/// `GET /rooms/{room_id}/{bot_key}/messages[?before=ID|?after=ID]`: a page of up to 40 of the
/// room's messages, oldest first, as Campfire's JSON array (`messages/_message.json.jbuilder`):
/// `[{"id","created_at","body":{"plain_text","html"},"creator":{"id","name","role","avatar_url"},"room":{"id"},"url"}]`,
/// with `X-Total-Count` (the room's messages) and, when there are more in the direction paged,
/// `Link: <…/messages?before=OLDEST>; rel="next"` (or `?after=NEWEST` when paging with
/// `after`), as Campfire's `set_pagination_headers`. A `before`/`after` id not in the room:
/// bare 404.
pub async fn index(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
    headers: axum::http::HeaderMap,
    Path((room_id, bot_key)): Path<(String, String)>,
    Query(query): Query<IndexQuery>,
) -> Result<Response, AppError> {
    let (_, room) = or_answer!(bot_and_room(&db, &room_id, &bot_key).await?);
    let anchor = |raw: &Option<String>| raw.as_deref().filter(|s| !s.is_empty()).map(parse_id);
    let (page, next) = match (anchor(&query.before), anchor(&query.after)) {
        (Some(Ok(id)), _) if messages::in_room(&db.pool, room.id, id).await? => {
            let page = messages::page_before(&db.pool, room.id, id).await?;
            let next = cursor_past(&db, room.id, page.first(), Toward::Older).await?;
            (page, next)
        }
        (None, Some(Ok(id))) if messages::in_room(&db.pool, room.id, id).await? => {
            let page = messages::page_after(&db.pool, room.id, id).await?;
            let next = cursor_past(&db, room.id, page.last(), Toward::Newer).await?;
            (page, next)
        }
        (None, None) => {
            let page = messages::last_page(&db.pool, room.id).await?;
            let next = cursor_past(&db, room.id, page.first(), Toward::Older).await?;
            (page, next)
        }
        _ => return Ok(head(StatusCode::NOT_FOUND)),
    };
    let origin = super::links::origin(&ctx, &headers, &config);
    let mut roles = std::collections::HashMap::new();
    let mut list = Vec::with_capacity(page.len());
    for m in &page {
        let role = match roles.get(&m.creator_id) {
            Some(r) => *r,
            None => {
                let r = users::find(&db.pool, m.creator_id)
                    .await?
                    .map_or(crate::db::Role::Member, |u| u.role);
                roles.insert(m.creator_id, r);
                r
            }
        };
        list.push(serde_json::json!({
            "id": m.id,
            "created_at": crate::rails::time::format_iso8601_millis(i128::from(m.created_at) * 1_000_000),
            "body": {
                "plain_text": crate::rich_text::plain_text(&m.body),
                "html": crate::rich_text::render(&m.body).0,
            },
            "creator": {
                "id": m.creator_id,
                "name": m.creator_name,
                "role": role,
                "avatar_url": format!("{origin}/users/{}/avatar", m.creator_id),
            },
            "room": {"id": room.id},
            "url": format!("{origin}/rooms/{}/@{}", room.id, m.id),
        }));
    }
    let total = messages::count(&db.pool, room.id).await?;
    let mut response = axum::Json(serde_json::Value::Array(list)).into_response();
    let h = response.headers_mut();
    h.insert("x-total-count", axum::http::HeaderValue::from(total));
    if let Some(next) = next {
        let link = format!(
            "<{origin}/rooms/{}/{bot_key}/messages?{next}>; rel=\"next\"",
            room.id
        );
        if let Ok(v) = axum::http::HeaderValue::from_str(&link) {
            h.insert(axum::http::header::LINK, v);
        }
    }
    Ok(response)
}

/// Which way a page of the bot API's list goes on.
#[derive(Clone, Copy)]
enum Toward {
    /// `before=<id>`: older messages.
    Older,
    /// `after=<id>`: newer messages.
    Newer,
}

/// The query of the next page past `edge` (`before=<id>` or `after=<id>`), when there are
/// messages past it that way; `None` for an empty page or at the end.
async fn cursor_past(
    db: &Db,
    room_id: i64,
    edge: Option<&Message>,
    toward: Toward,
) -> Result<Option<String>, AppError> {
    let Some(edge) = edge else {
        return Ok(None);
    };
    let (more, word) = match toward {
        Toward::Older => (
            messages::page_before(&db.pool, room_id, edge.id).await?,
            "before",
        ),
        Toward::Newer => (
            messages::page_after(&db.pool, room_id, edge.id).await?,
            "after",
        ),
    };
    Ok((!more.is_empty()).then(|| format!("{word}={}", edge.id)))
}

/// `PATCH`/`PUT /rooms/{room_id}/{bot_key}/messages/{message_id}`: the raw body becomes the
/// text of the bot's own message; 204 and a broadcast `replace`. 422 for a blank body.
pub async fn update(
    State(posting): State<super::messages::Posting>,
    Extension(ctx): Extension<Ctx>,
    Path((room_id, bot_key, message_id)): Path<(String, String, String)>,
) -> Result<Response, AppError> {
    let path = (room_id.as_str(), bot_key.as_str(), message_id.as_str());
    let (room, message) = or_answer!(own_message(&posting.db, path).await?);
    let text = body_text(&ctx)?;
    if edit_body(&posting, &room, message.id, text, None)
        .await?
        .is_none()
    {
        return Ok(head(StatusCode::NOT_FOUND));
    }
    Ok(head(StatusCode::NO_CONTENT))
}

/// `DELETE /rooms/{room_id}/{bot_key}/messages/{message_id}`: deletes the bot's own message;
/// 204 and a broadcast `remove`.
pub async fn destroy(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    State(storage): State<Arc<Storage>>,
    Path((room_id, bot_key, message_id)): Path<(String, String, String)>,
) -> Result<Response, AppError> {
    let path = (room_id.as_str(), bot_key.as_str(), message_id.as_str());
    let (room, message) = or_answer!(own_message(&db, path).await?);
    let Some(removed) = messages::delete(&db.pool, room.id, message.id).await? else {
        return Ok(head(StatusCode::NOT_FOUND));
    };
    broadcasts::message_removed(&delivery.broadcaster, &room, &removed);
    if removed.attachment.is_some() {
        super::files::purge_orphans(&db, &storage).await;
    }
    Ok(head(StatusCode::NO_CONTENT))
}

/// `POST /rooms/{room_id}/{bot_key}/messages/{message_id}/boosts`: the raw body (1-16
/// characters, trimmed) boosts the message; 201 and a broadcast `append`. 422 otherwise.
pub async fn create_boost(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    Extension(ctx): Extension<Ctx>,
    Path((room_id, bot_key, message_id)): Path<(String, String, String)>,
) -> Result<Response, AppError> {
    let path = (room_id.as_str(), bot_key.as_str(), message_id.as_str());
    let (bot, room, message) = or_answer!(bot_message(&db, path).await?);
    let content = body_text(&ctx)?.trim();
    if content.is_empty() || content.chars().count() > 16 {
        return Err(AppError::Unprocessable(
            "a boost must be 1-16 characters".into(),
        ));
    }
    super::fields::refuse_unsafe_chars("boost", content)?;
    let boost = messages::boost(&db.pool, message.id, bot.id, &bot.name, content).await?;
    broadcasts::boost_created(&delivery.broadcaster, &room, &message, &boost);
    if message.creator_id != bot.id {
        super::inbox::after_boost(&db.pool, &delivery.broadcaster, message.creator_id).await;
    }
    Ok(head(StatusCode::CREATED))
}

/// `DELETE /rooms/{room_id}/{bot_key}/messages/{message_id}/boosts/{boost_id}`: deletes the
/// bot's own boost; 204 and a broadcast `remove` of `boost_<id>`.
pub async fn destroy_boost(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    Path((room_id, bot_key, message_id, boost_id)): Path<(String, String, String, String)>,
) -> Result<Response, AppError> {
    let path = (room_id.as_str(), bot_key.as_str(), message_id.as_str());
    let (bot, room, message) = or_answer!(bot_message(&db, path).await?);
    let Ok(boost_id) = parse_id(&boost_id) else {
        return Ok(head(StatusCode::NOT_FOUND));
    };
    let Some(boost) = boosts::find(&db.pool, message.id, boost_id).await? else {
        return Ok(head(StatusCode::NOT_FOUND));
    };
    if boost.booster_id != bot.id {
        return Ok(head(StatusCode::FORBIDDEN));
    }
    if boosts::delete(&db.pool, boost.id).await? {
        broadcasts::boost_removed(&delivery.broadcaster, &room, boost.id);
    }
    Ok(head(StatusCode::NO_CONTENT))
}
