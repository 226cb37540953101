//! A person's digest settings and the digests' unsubscribe link (shown only with
//! `--smtp-url`; see [`crate::digests`]).
//!
//! - `PATCH /users/me/digest` with `user[digest_frequency]` (`never`, `hourly`, `daily`) and
//!   `user[time_zone]` (an IANA name such as `Europe/Paris`; empty keeps the stored one):
//!   302 to `/users/me/profile` with "Saved"; 422 for an unknown value.
//! - `GET /digests/unsubscribe/{token}`: a page with a button (a link scanner's `GET` changes
//!   nothing); `POST /digests/unsubscribe/{token}`: RFC 8058's one-click unsubscribe (the
//!   mail client posts `List-Unsubscribe=One-Click`; no cookie or CSRF token, the signed token
//!   names the person), which sets the frequency to `never` and answers 200.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::account::mail::MailDesk;
use super::context::Ctx;
use super::error::AppError;
use crate::db::digests::{self, Frequency};
use crate::digests::UNSUBSCRIBE_PURPOSE;

/// What the profile page's digest panel shows (`templates/users/profiles/_digest.html`).
#[derive(Clone, Debug)]
pub struct DigestPanel {
    /// The stored frequency.
    pub frequency: Frequency,
    /// The stored time zone (empty: UTC).
    pub time_zone: String,
}

/// The panel of `user_id`, `None` when mail is off.
///
/// # Errors
/// A database failure.
pub async fn panel(desk: &MailDesk, user_id: i64) -> sqlx::Result<Option<DigestPanel>> {
    if !desk.mailer.is_on() {
        return Ok(None);
    }
    Ok(digests::preferences(&desk.pool, user_id)
        .await?
        .map(|(frequency, time_zone)| DigestPanel {
            frequency,
            time_zone: time_zone.unwrap_or_default(),
        }))
}

/// `PATCH /users/me/digest` (see the module docs).
///
/// # Errors
/// 404 without mail; 401 signed out; 422 for an unknown frequency or time zone.
pub async fn update(
    State(desk): State<MailDesk>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    if !desk.mailer.is_on() {
        return Err(AppError::NotFound);
    }
    let user = ctx.require_user()?;
    let frequency = ctx
        .form
        .get("user[digest_frequency]")
        .and_then(Frequency::parse)
        .ok_or_else(|| {
            AppError::Unprocessable("user[digest_frequency] must be never, hourly or daily".into())
        })?;
    let time_zone = ctx
        .form
        .get("user[time_zone]")
        .map(str::trim)
        .filter(|t| !t.is_empty());
    if let Some(tz) = time_zone {
        if tz.len() > 64 || jiff::tz::TimeZone::get(tz).is_err() {
            return Err(AppError::Unprocessable(
                "user[time_zone] must be a time zone name such as Europe/Paris".into(),
            ));
        }
    }
    digests::set_preferences(&desk.pool, user.id, frequency, time_zone).await?;
    Ok(super::flash::found_with(
        "/users/me/profile",
        super::flash::Notice::Saved,
        ctx.secure,
    ))
}

#[derive(Template)]
#[template(path = "users/profiles/unsubscribe.html")]
struct UnsubscribePage<'a> {
    csrf_token: &'a str,
    token: &'a str,
    done: bool,
}

fn person(desk: &MailDesk, token: &str) -> Result<i64, AppError> {
    desk.signed_ids
        .verify("user", UNSUBSCRIBE_PURPOSE, token)
        .ok_or(AppError::NotFound)
}

/// `GET /digests/unsubscribe/{token}`: the confirmation page; 404 for a bad token.
///
/// # Errors
/// 404 for a token that does not verify.
pub async fn show(
    State(desk): State<MailDesk>,
    Extension(ctx): Extension<Ctx>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    person(&desk, &token)?;
    let csrf = ctx.csrf_token();
    let html = UnsubscribePage {
        csrf_token: &csrf,
        token: &token,
        done: false,
    }
    .render()?;
    Ok((StatusCode::OK, Html(html)).into_response())
}

/// `POST /digests/unsubscribe/{token}`: unsubscribes (see the module docs); 404 for a bad
/// token.
///
/// # Errors
/// 404 for a token that does not verify; database failures.
pub async fn unsubscribe(
    State(desk): State<MailDesk>,
    Extension(ctx): Extension<Ctx>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    let user_id = person(&desk, &token)?;
    digests::set_preferences(&desk.pool, user_id, Frequency::Never, None).await?;
    tracing::info!(user_id, "unsubscribed from digests");
    let csrf = ctx.csrf_token();
    let html = UnsubscribePage {
        csrf_token: &csrf,
        token: &token,
        done: true,
    }
    .render()?;
    Ok((StatusCode::OK, Html(html)).into_response())
}
