//! `GET /autocompletable/users?query=&room_id=`: the people an `@` in the composer (or a
//! picker of people) offers (Campfire's `Autocompletable::UsersController`,
//! `autocompletable/users/index.json.jbuilder`).
//!
//! Answers a JSON array of at most [`PAGE_SIZE`] active users (bots included: mentioning a
//! bot is how it is called), by name, whose name contains `query` (case-insensitive; all of
//! them when it is empty), each as Campfire's `_user.json.jbuilder` writes it:
//!
//! ```json
//! [{"name":"Jason Fried","value":2,"avatar_url":"data:image/svg+xml,…","sgid":"eyJfcmFpbHMi…--…"}]
//! ```
//!
//! `name` is HTML-escaped (Campfire's `h(user.name)`); `value` is the user id; `sgid` the
//! user's signed GlobalID for the `attachable` purpose, what a mention attachment carries;
//! `avatar_url` the initials avatar as an SVG data URL. With `room_id`, only that room's
//! members (404 unless the viewer is one of them); without, everyone of the account.
//! Signed out: 401. A `query` longer than [`MAX_QUERY_CHARS`] characters is cut there.

use crate::db::Db;
use crate::rails::Keys;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;

use super::context::Ctx;
use super::error::AppError;
use super::extract::parse_id;
use crate::db::{rooms, users};
use crate::rails::json::{encode_value, JsonEscaping};

/// The most people one answer lists (Campfire's `per_page: 20`).
pub const PAGE_SIZE: i64 = 20;

/// The longest `query` looked at, in characters.
pub const MAX_QUERY_CHARS: usize = 100;

/// The parameters of `GET /autocompletable/users`.
#[derive(Debug, Default, Deserialize)]
pub struct Params {
    /// Part of a name.
    #[serde(default)]
    query: String,
    /// Limit to this room's members.
    #[serde(default)]
    room_id: Option<String>,
}

/// The initials avatar of a user as an SVG data URL (the message partial's colours).
pub fn avatar_data_url(id: i64, name: &str) -> String {
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 36 36\"><rect width=\"36\" height=\"36\" rx=\"18\" fill=\"hsl({}, 55%, 45%)\"/><text x=\"50%\" y=\"50%\" dy=\"0.35em\" text-anchor=\"middle\" fill=\"#ffffff\" font-family=\"sans-serif\" font-size=\"14\" font-weight=\"600\">{}</text></svg>",
        super::profiles::avatar_hue(id),
        crate::rich_text::html_escape(&crate::render::initials(name))
    );
    format!(
        "data:image/svg+xml,{}",
        percent_encoding::utf8_percent_encode(&svg, percent_encoding::NON_ALPHANUMERIC)
    )
}

/// `GET /autocompletable/users` (see the module docs).
pub async fn users(
    State(db): State<Db>,
    State(keys): State<Keys>,
    Extension(ctx): Extension<Ctx>,
    Query(params): Query<Params>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let room_id = match params.room_id.as_deref().filter(|s| !s.is_empty()) {
        Some(id) => {
            let id = parse_id(id)?;
            rooms::find_for_member(&db.pool, id, user.id)
                .await?
                .ok_or(AppError::NotFound)?;
            Some(id)
        }
        None => None,
    };
    let query: String = params.query.trim().chars().take(MAX_QUERY_CHARS).collect();
    let found = users::autocompletable(&db.pool, room_id, &query, PAGE_SIZE).await?;
    let list: Vec<serde_json::Value> = found
        .iter()
        .map(|(id, name)| {
            serde_json::json!({
                "name": crate::rich_text::html_escape(name),
                "value": id,
                "avatar_url": avatar_data_url(*id, name),
                "sgid": keys.sgids.sign("User", *id, crate::rails::ATTACHABLE_PURPOSE),
            })
        })
        .collect();
    let json = encode_value(&serde_json::Value::Array(list), JsonEscaping::default());
    Ok((
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        json,
    )
        .into_response())
}
