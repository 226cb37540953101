//! The first run (Campfire's `FirstRunsController`): on a database with no account and no
//! user (`hearth serve --no-seed`), anyone may create the administrator; the account and the
//! first open room come with it. Once done, both routes send everyone to `/`.

use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::context::Ctx;
use super::error::AppError;
use super::fields::{self, MAX_NAME_CHARS};
use super::respond::found;
use super::sessions::{hash_password, start_session};
use crate::db::accounts;
use crate::state::SharedState;

/// The first-run form (`templates/first_runs/show.html`).
#[derive(Template, Debug)]
#[template(path = "first_runs/show.html")]
pub struct FirstRunPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// An alert above the form.
    pub alert: Option<&'a str>,
}

/// `GET /first_run`: the form, or 302 to `/` once the account exists.
pub async fn show(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    if !accounts::needs_first_run(&state.pool).await? {
        return Ok(found("/"));
    }
    let token = ctx.csrf_token();
    let page = FirstRunPage {
        csrf_token: &token,
        alert: None,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `POST /first_run` with `user[name]` (1-100 characters), `user[email_address]` and
/// `user[password]` (1-72 bytes): creates the account, the administrator and the room
/// "All Talk", signs the administrator in and answers 302 to `/`. 422 for a bad field; 302 to
/// `/` without creating anything once the account exists.
pub async fn create(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    if !accounts::needs_first_run(&state.pool).await? {
        return Ok(found("/"));
    }
    let name = fields::required(&ctx.form, "user[name]", MAX_NAME_CHARS)?;
    let email = fields::email(&ctx.form, "user[email_address]")?;
    let digest = hash_password(ctx.form.get("user[password]").unwrap_or("")).await?;
    let Some(created) = accounts::first_run(&state.pool, &name, &email, &digest).await? else {
        return Ok(found("/"));
    };
    tracing::info!(user_id = created.user_id, "first run: account created");
    start_session(&state, &ctx, &headers, created.user_id).await
}
