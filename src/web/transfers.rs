//! `/session/transfers/{id}` (Campfire's `Sessions::TransfersController`): a transfer link
//! signs the device that opens it in as the link's user ("sign in on another device", or an
//! administrator getting someone back into their account).
//!
//! `GET` shows a page with one button (so a link preview that fetches the URL signs no one
//! in); the button's `PUT` checks the signed id: genuine, not expired (4 hours) and of an
//! active user. Then it starts a session (302 to `/` with the session cookie); otherwise 400
//! and no session.

use crate::config::Config;
use crate::db::Db;
use crate::rails::Keys;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;
use std::sync::Arc;

use super::context::Ctx;
use super::error::AppError;
use super::links::find_by_transfer_id;
use super::sessions::start_session;

/// The longest transfer id looked at (a genuine one is about 150 bytes).
const MAX_ID_BYTES: usize = 1024;

/// The page behind a transfer link (`templates/sessions/transfers/show.html`).
#[derive(Template, Debug)]
#[template(path = "sessions/transfers/show.html")]
pub struct TransferPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The transfer id, as given.
    pub id: &'a str,
}

/// `GET /session/transfers/{id}`: the page with the "Sign in" button (anyone; the id is
/// checked by the button's `PUT`).
pub async fn show(
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    if id.len() > MAX_ID_BYTES {
        return Err(AppError::NotFound);
    }
    let token = ctx.csrf_token();
    let page = TransferPage {
        csrf_token: &token,
        id: &id,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `PUT`/`PATCH /session/transfers/{id}`: signs this device in as the link's user (302 to
/// `/`), or 400 for an expired, forged or malformed id or a user who is not active.
pub async fn update(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(keys): State<Keys>,
    Extension(ctx): Extension<Ctx>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let user_id = (id.len() <= MAX_ID_BYTES)
        .then(|| find_by_transfer_id(&keys, &id))
        .flatten();
    let user = match user_id {
        Some(user_id) => crate::db::users::find(&db.pool, user_id)
            .await?
            .filter(|u| u.is_active() && u.role != crate::db::Role::Bot),
        None => None,
    };
    let Some(user) = user else {
        tracing::info!(ip = %ctx.ip, "refused transfer link");
        return Err(AppError::BadRequest(
            "That link is expired or invalid.".into(),
        ));
    };
    start_session(&config, &db, &keys, &ctx, &headers, user.id).await
}
