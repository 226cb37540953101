//! Signing up with the account's join code (Campfire's `UsersController#new`/`#create`,
//! routed as `join/:join_code`): a wrong code is a 404; signed-in people are sent to `/`.
//! The new member gets a membership in every open room and is signed in.

use crate::config::Config;
use crate::db::Db;
use crate::rails::Keys;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;
use std::sync::Arc;
use subtle::ConstantTimeEq;

use super::context::Ctx;
use super::error::AppError;
use super::fields::{self, MAX_NAME_CHARS};
use super::respond::found;
use super::sessions::{hash_password, start_session};
use crate::db::{accounts, users};

/// The sign-up form (`templates/users/new.html`).
#[derive(Template, Debug)]
#[template(path = "users/new.html")]
pub struct JoinPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The account's name.
    pub account_name: &'a str,
    /// The join code of the form's action.
    pub join_code: &'a str,
}

/// The account when `code` is its join code (compared in constant time), else 404.
async fn verify_join_code(db: &Db, code: &str) -> Result<accounts::Account, AppError> {
    let account = accounts::find(&db.pool).await?.ok_or(AppError::NotFound)?;
    let equal: bool = account.join_code.as_bytes().ct_eq(code.as_bytes()).into();
    if equal {
        Ok(account)
    } else {
        Err(AppError::NotFound)
    }
}

/// `GET /join/{join_code}`: the sign-up form; 404 for a wrong code; 302 to `/` when signed in.
pub async fn new(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
    Path(code): Path<String>,
) -> Result<Response, AppError> {
    let account = verify_join_code(&db, &code).await?;
    if ctx.user.is_some() {
        return Ok(found("/"));
    }
    let token = ctx.csrf_token();
    let page = JoinPage {
        csrf_token: &token,
        account_name: &account.name,
        join_code: &account.join_code,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `POST /join/{join_code}` with `user[name]`, `user[email_address]` and `user[password]`:
/// creates a member, signs it in and answers 302 to `/`. 404 for a wrong code, 422 for a bad
/// field, 302 to `/session/new` (nothing created) when the address is taken, 302 to `/` when
/// already signed in.
pub async fn create(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(keys): State<Keys>,
    Extension(ctx): Extension<Ctx>,
    Path(code): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    verify_join_code(&db, &code).await?;
    if ctx.user.is_some() {
        return Ok(found("/"));
    }
    let name = fields::required(&ctx.form, "user[name]", MAX_NAME_CHARS)?;
    let email = fields::email(&ctx.form, "user[email_address]")?;
    let digest = hash_password(ctx.form.get("user[password]").unwrap_or("")).await?;
    match users::create_member(&db.pool, &name, &email, &digest).await? {
        Some(id) => start_session(&config, &db, &keys, &ctx, &headers, id).await,
        None => Ok(found("/session/new")),
    }
}
