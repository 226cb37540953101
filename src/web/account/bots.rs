//! Administering bots (Campfire's `Accounts::BotsController` and
//! `Accounts::Bots::KeysController`): list, create, rename, rekey and remove.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use crate::db::users::{self, Bot};
use crate::state::SharedState;
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::extract::parse_id;
use crate::web::fields::{self, MAX_NAME_CHARS};
use crate::web::respond::found;
use crate::web::users::disconnect;

/// The bots page (`templates/accounts/bots/index.html`).
#[derive(Template, Debug)]
#[template(path = "accounts/bots/index.html")]
pub struct BotsPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The active bots, by name.
    pub bots: &'a [Bot],
}

/// `GET /account/bots`: the bots with their keys.
pub async fn index(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    if ctx.user.is_none() {
        return Ok(found("/session/new"));
    }
    ctx.require_administrator()?;
    let bots = users::bots(&state.pool).await?;
    let token = ctx.csrf_token();
    let page = BotsPage {
        csrf_token: &token,
        bots: &bots,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `POST /account/bots` with `user[name]` (1-100 characters): a new bot, member of every open
/// room; 302 to `/account/bots`. 422 for a bad name.
pub async fn create(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    ctx.require_administrator()?;
    let name = fields::required(&ctx.form, "user[name]", MAX_NAME_CHARS)?;
    let bot = users::create_bot(&state.pool, &name).await?;
    tracing::info!(bot_id = bot.id, "bot created");
    Ok(found("/account/bots"))
}

/// `PATCH /account/bots/{bot_id}` with `user[name]`: renames; 302 to `/account/bots`. 404 for
/// an unknown bot, 422 for a bad name.
pub async fn update(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(bot_id): Path<String>,
) -> Result<Response, AppError> {
    ctx.require_administrator()?;
    let bot_id = parse_id(&bot_id)?;
    let name = fields::required(&ctx.form, "user[name]", MAX_NAME_CHARS)?;
    if !users::rename_bot(&state.pool, bot_id, &name).await? {
        return Err(AppError::NotFound);
    }
    Ok(found("/account/bots"))
}

/// `PATCH /account/bots/{bot_id}/key`: a new key (the old one gets 401 from now on); 302 to
/// `/account/bots`. 404 for an unknown bot.
pub async fn update_key(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(bot_id): Path<String>,
) -> Result<Response, AppError> {
    ctx.require_administrator()?;
    let bot_id = parse_id(&bot_id)?;
    users::reset_bot_token(&state.pool, bot_id)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(found("/account/bots"))
}

/// `DELETE /account/bots/{bot_id}`: removes the bot (deactivated, key cleared; its messages
/// stay); 302 to `/account/bots`. 404 for an unknown bot.
pub async fn destroy(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(bot_id): Path<String>,
) -> Result<Response, AppError> {
    ctx.require_administrator()?;
    let bot_id = parse_id(&bot_id)?;
    if !users::deactivate_bot(&state.pool, bot_id).await? {
        return Err(AppError::NotFound);
    }
    disconnect(&state, bot_id);
    Ok(found("/account/bots"))
}
