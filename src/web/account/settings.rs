//! The account page and its settings (Campfire's `AccountsController` and
//! `Accounts::CustomStylesController`):
//!
//! - `GET /account/edit`: everyone signed in sees the account's name and the invite block (the
//!   full join URL, its QR code, copy and share); administrators also get the form for the
//!   name and "only administrators create rooms", and links to the custom styles, people and
//!   bots.
//! - `PATCH`/`PUT /account` with `account[name]` (1-100 characters) and
//!   `account[settings][restrict_room_creation_to_administrators]` (`1`/`true` or `0`/`false`;
//!   a checkbox's hidden `0` before it, the last value wins): administrators only.
//! - `GET /account/custom_styles/edit`, `PATCH`/`PUT /account/custom_styles` with
//!   `account[custom_styles]` (at most 64 KiB): the account's stylesheet, added to every page
//!   after Hearth's own; administrators only. It is stored sanitized (see
//!   [`crate::web::page::sanitize_css`]).

use crate::config::Config;
use crate::db::Db;
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};

use crate::db::accounts;
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::extract::{Admin, AdminPage, SignedInPage};
use crate::web::fields::{self, MAX_NAME_CHARS};
use crate::web::links::{origin, ShareLink};
use crate::web::page::{sanitize_css, MAX_CUSTOM_STYLES_BYTES};
use crate::web::respond::found;

/// The account page (`templates/accounts/edit.html`).
#[derive(Template, Debug)]
#[template(path = "accounts/edit.html")]
pub struct AccountPage<'a> {
    /// Single sign-on's settings, for administrators while it is configured.
    pub sso: Option<crate::web::account::sso::SsoSettingsView>,
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The account's settings.
    pub settings: &'a accounts::Settings,
    /// Whether the viewer administers the account.
    pub administrator: bool,
    /// The join link.
    pub invite: ShareLink,
    /// The mail panel (administrators, with mail on).
    pub mail: Option<super::mail::MailPanel>,
}

/// The custom styles form (`templates/accounts/custom_styles/edit.html`).
#[derive(Template, Debug)]
#[template(path = "accounts/custom_styles/edit.html")]
pub struct CustomStylesPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The stylesheet as stored.
    pub custom_styles: &'a str,
    /// The most bytes accepted.
    pub max_bytes: usize,
}

/// The join link of the account, on this server.
///
/// # Errors
/// 404 before the first run; database failures.
pub async fn invite_link(
    config: &Config,
    db: &Db,
    ctx: &Ctx,
    headers: &HeaderMap,
) -> Result<ShareLink, AppError> {
    let account = accounts::find(&db.pool).await?.ok_or(AppError::NotFound)?;
    Ok(ShareLink::to_path(
        &origin(ctx, headers, config),
        &format!("/join/{}", account.join_code),
    ))
}

/// `GET /account/edit` (see the module docs); 302 to the sign-in form when signed out.
pub async fn edit(
    State(state): State<crate::web::sessions::SignIn>,
    State(desk): State<super::mail::MailDesk>,
    SignedInPage { ctx, user }: SignedInPage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let settings = state.db.account_settings.get(&state.db.pool).await?;
    let invite = invite_link(&state.config, &state.db, &ctx, &headers).await?;
    let token = ctx.csrf_token();
    let administrator = user.role == crate::db::Role::Administrator;
    let (sso, mail) = if administrator {
        let origin = origin(&ctx, &headers, &state.config);
        let sso = crate::web::account::sso::view(&state.db.pool, &state.sso, &origin).await?;
        (sso, super::mail::panel(&desk, origin).await?)
    } else {
        (None, None)
    };
    let page = AccountPage {
        sso,
        csrf_token: &token,
        settings: &settings,
        administrator,
        invite,
        mail,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// Rails' boolean casting of a form value; `None` for anything else.
fn form_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "true" | "on" | "t" => Some(true),
        "0" | "false" | "off" | "f" | "" => Some(false),
        _ => None,
    }
}

/// `PATCH`/`PUT /account` (see the module docs): 302 to `/account/edit` with the "Saved"
/// notice. 401 signed out, 403 for members, 422 for a blank or oversize name or a setting
/// that is not a boolean. An `account[logo]` is not read here.
pub async fn update(State(db): State<Db>, Admin(ctx): Admin) -> Result<Response, AppError> {
    let name = fields::required(&ctx.form, "account[name]", MAX_NAME_CHARS)?;
    let key = "account[settings][restrict_room_creation_to_administrators]";
    let restrict = match ctx.form.get_all(key).last() {
        Some(v) => Some(
            form_bool(v).ok_or_else(|| AppError::Unprocessable(format!("{key} must be 0 or 1")))?,
        ),
        None => None,
    };
    if !accounts::update(&db.pool, &name, restrict).await? {
        return Err(AppError::NotFound);
    }
    db.account_settings.forget();
    Ok(crate::web::flash::found_with(
        "/account/edit",
        crate::web::flash::Notice::Saved,
        ctx.secure,
    ))
}

/// `GET /account/custom_styles/edit`: the form (administrators; 403 for members).
pub async fn edit_custom_styles(
    State(db): State<Db>,
    AdminPage(ctx): AdminPage,
) -> Result<Response, AppError> {
    let settings = db.account_settings.get(&db.pool).await?;
    let token = ctx.csrf_token();
    let page = CustomStylesPage {
        csrf_token: &token,
        custom_styles: &settings.custom_styles,
        max_bytes: MAX_CUSTOM_STYLES_BYTES,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `PATCH`/`PUT /account/custom_styles` with `account[custom_styles]`: stores the sanitized
/// stylesheet (empty clears it) and answers 302 to the form. 403 for members, 413 over
/// [`MAX_CUSTOM_STYLES_BYTES`].
pub async fn update_custom_styles(
    State(db): State<Db>,
    Admin(ctx): Admin,
) -> Result<Response, AppError> {
    let css = ctx.form.get("account[custom_styles]").unwrap_or("");
    if css.len() > MAX_CUSTOM_STYLES_BYTES {
        return Err(AppError::PayloadTooLarge);
    }
    if !accounts::set_custom_styles(&db.pool, &sanitize_css(css)).await? {
        return Err(AppError::NotFound);
    }
    db.account_settings.forget();
    Ok(found("/account/custom_styles/edit"))
}
