//! Signing in by mail (shown only with `--smtp-url`): "Email me a code" and "Forgot password".
//!
//! | route | what |
//! |---|---|
//! | `POST /session/code` (`email_address`) | e-mails a 6-digit code; answers the code form |
//! | `POST /session/code/verify` (`email_address`, `code`) | signs in (302) or 401 with the form |
//! | `GET /password_reset/new`, `POST /password_reset` (`email_address`) | e-mails a reset link |
//! | `GET /password_reset/edit?token=`, `POST /password_reset/update` (`token`, `password`) | sets a new password and signs in |
//!
//! - Every request is under the sign-in rate limit of the client's address (429 past it).
//! - The answer to a request for a code or a link is the same page, status and work on the
//!   request path whether or not the address has an account: looking the address up, storing
//!   the code and queueing the letter happen in a task of their own after the answer. That
//!   task does the same work for an address without an account too (a code and its HMAC, the
//!   same write, storing nothing; a signed token; the letter built), and leaves out only the
//!   queueing, so that what it takes from the machine does not tell the two apart either.
//! - A code: 6 digits, [`crate::db::sign_in_codes::CODE_TTL_MS`] (10 minutes), single use,
//!   only the newest works, stored as an HMAC ([`crate::mail::keys`]), dead after 5 wrong tries
//!   (each try counted before it is compared, so tries sent at once cannot compare more).
//! - A reset link: Rails 7.1's `generates_token_for :password_reset, expires_in: 15.minutes`
//!   carrying the password salt's tail and a hash of the address it went to
//!   ([`crate::rails::token_for::password_reset_value`]): it stops working once the password
//!   changes, so it works once, and once the address changes. A new password ends every session of the person.
//!   Links need the account's site address (`crate::db::mail_settings`): "Forgot password" is
//!   hidden until an administrator sets it (a link built from the request's `Host` could be
//!   pointed elsewhere by whoever asks). Every page carrying the token is `no-store` and sends
//!   no referrer.
//! - While passwords are for administrators only (docs/sso.md), a code and a reset link are
//!   passwords too: none is mailed to anyone else, and one issued before is refused (403).
//! - At most [`sign_in_codes::MAX_CODES_PER_HOUR`] codes a person an hour, whoever asks: the
//!   answer stays the same, the letters stop.

use crate::db::Db;
use crate::outbox::Outbox;
use crate::pubsub::Delivery;
use crate::rate_limit::Limits;
use std::time::{Instant, SystemTime};

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::context::Ctx;
use super::error::AppError;
use super::sessions::{hash_password, start_session, MAX_PASSWORD_BYTES};
use super::sign_in_options::refuses_password;
use crate::db::{sign_in_codes, users};
use crate::letters::To;
use crate::oidc::Sso;
use crate::rails::token_for::{password_reset_value, TokenFor, PASSWORD_RESET};
use crate::web::account::mail::MailDesk;

#[derive(Template)]
#[template(path = "sessions/mail/code.html")]
struct CodePage<'a> {
    csrf_token: &'a str,
    email_address: &'a str,
    alert: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "sessions/mail/notice.html")]
struct NoticePage<'a> {
    csrf_token: &'a str,
    heading: &'a str,
    message: &'a str,
    alert: Option<&'a str>,
    ask_address: bool,
}

#[derive(Template)]
#[template(path = "sessions/mail/reset_edit.html")]
struct ResetPage<'a> {
    csrf_token: &'a str,
    token: &'a str,
    alert: Option<&'a str>,
    min_password_bytes: usize,
}

/// The user id the work for an address without an account is done for (no row has it).
const NOBODY: i64 = 0;
/// The stored digest a code for [`NOBODY`] is compared with: as long as a real one (64 hex
/// digits), and matching nothing.
const NOBODY_DIGEST: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// The value a reset token for [`NOBODY`] carries: as long as a real one.
const NOBODY_RESET_VALUE: &str = "00000000000000000000000000";

fn page(status: StatusCode, html: askama::Result<String>) -> Result<Response, AppError> {
    Ok((status, Html(html?)).into_response())
}

/// 404 when mail is off (the routes do not exist then).
fn require_mail(mailer: &crate::mail::Mailer) -> Result<(), AppError> {
    if mailer.is_on() {
        Ok(())
    } else {
        Err(AppError::NotFound)
    }
}

/// The sign-in limit: `Err` holds the 429 answer.
fn limit(limiter: &crate::rate_limit::RateLimiter, ctx: &Ctx) -> Result<(), AppError> {
    limiter
        .attempt(ctx.ip, Instant::now())
        .map_err(AppError::RateLimited)
}

fn email_of(ctx: &Ctx) -> String {
    let email = ctx.form.get("email_address").unwrap_or("").trim();
    email.chars().take(254).collect::<String>().to_lowercase()
}

/// `POST /session/code`: queues a code for the address (when it has an active account) after
/// answering the code form, the same for every address.
///
/// # Errors
/// 404 without mail; 429 past the sign-in limit.
pub async fn request_code(
    State(db): State<Db>,
    State(limits): State<Limits>,
    State(outbox): State<Outbox>,
    State(sso): State<Sso>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    require_mail(&outbox.mailer)?;
    limit(&limits.login, &ctx)?;
    let email = email_of(&ctx);
    let account = db.account_settings.get(&db.pool).await?.name.clone();
    let (pool, mailer, address) = (db.pool.clone(), outbox.mailer.clone(), email.clone());
    tokio::spawn(async move {
        if let Err(e) = send_code(&pool, &mailer, &sso, &account, &address).await {
            tracing::warn!(error = %e, "sign-in code not sent");
        }
    });
    let token = ctx.csrf_token();
    let html = CodePage {
        csrf_token: &token,
        email_address: &email,
        alert: None,
    }
    .render();
    page(StatusCode::OK, html)
}

/// Issues a code for `email`'s active account, if any, and queues the letter (`account`: the
/// account's name, for the letter); nothing for a person whose passwords are refused or who
/// had their hourly codes. An address without an account costs the same work: a code, its
/// HMAC, the same write (which stores nothing, [`sign_in_codes::issue`]) and the letter built;
/// only the queueing is left out.
async fn send_code(
    pool: &sqlx::SqlitePool,
    mailer: &crate::mail::Mailer,
    sso: &Sso,
    account: &str,
    email: &str,
) -> anyhow::Result<()> {
    let found = users::find_active_for_login(pool, email).await?;
    let mut person = found.as_ref().map(|(user, _)| user);
    if let Some(user) = person {
        if refuses_password(pool, sso, user).await? {
            tracing::info!(user_id = user.id, "no sign-in code: single sign-on only");
            person = None;
        }
    }
    let keys = mailer
        .keys()
        .ok_or_else(|| anyhow::anyhow!("mail is off"))?;
    let (user_id, name, address) = person.map_or((NOBODY, "", email), |user| {
        let address = user.email_address.as_deref().unwrap_or(email);
        (user.id, user.name.as_str(), address)
    });
    let code = crate::mail::keys::new_code();
    let issued = sign_in_codes::issue(pool, user_id, &keys.code_digest(user_id, &code)).await?;
    let to = To { address, name };
    let letter = mailer.prepare(crate::letters::sign_in_code(to, account, &code)?);
    if person.is_some() {
        if !issued {
            tracing::info!(user_id, "no sign-in code: the hour's codes were sent");
            return Ok(());
        }
        mailer.enqueue(letter?)?;
    }
    Ok(())
}

/// `POST /session/code/verify`: signs in with a live code (302 and the session cookie), or
/// answers the code form again with 401.
///
/// # Errors
/// 404 without mail; 429 past the sign-in limit; database failures.
pub async fn verify_code(
    State(state): State<super::sessions::SignIn>,
    Extension(ctx): Extension<Ctx>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    require_mail(&state.outbox.mailer)?;
    limit(&state.limits.login, &ctx)?;
    let email = email_of(&ctx);
    let code = ctx.form.get("code").unwrap_or("").trim();
    let keys = state.outbox.mailer.keys().ok_or(AppError::NotFound)?;
    let user = users::find_active_for_login(&state.db.pool, &email)
        .await?
        .map(|(user, _)| user);
    // The same work whether or not the address has an account or a live code: the try is
    // taken (for NOBODY it takes nothing) and the HMAC compared, so the answer's time does not
    // tell the two apart either.
    let user_id = user.as_ref().map_or(NOBODY, |u| u.id);
    let live = sign_in_codes::take_try(&state.db.pool, user_id).await?;
    let well_formed = code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit());
    let digest = live.as_ref().map_or(NOBODY_DIGEST, |(_, d)| d.as_str());
    let matches = keys.code_matches(user_id, code, digest) && well_formed;
    if let (Some(user), Some((code_id, _))) = (&user, &live) {
        if matches {
            if refuses_password(&state.db.pool, &state.sso, user).await? {
                return passwords_refused(&state.db.pool, &state.sso, &ctx).await;
            }
            if sign_in_codes::consume(&state.db.pool, *code_id).await? {
                tracing::info!(user_id = user.id, "signed in with an e-mailed code");
                return start_session(
                    &state.config,
                    &state.db,
                    &state.keys,
                    &ctx,
                    &headers,
                    user.id,
                )
                .await;
            }
        }
    }
    tracing::info!(ip = %ctx.ip, "failed sign-in with a code");
    let token = ctx.csrf_token();
    let html = CodePage {
        csrf_token: &token,
        email_address: &email,
        alert: Some("That code is wrong, used or expired. Ask for a new one if you need to."),
    }
    .render();
    page(StatusCode::UNAUTHORIZED, html)
}

/// The reset pages need the site address; 404 without it (or without mail).
async fn site_url(
    pool: &sqlx::SqlitePool,
    mailer: &crate::mail::Mailer,
) -> Result<String, AppError> {
    require_mail(mailer)?;
    let settings = crate::db::mail_settings::get(pool).await?;
    if settings.site_url.is_empty() {
        return Err(AppError::NotFound);
    }
    Ok(settings.site_url)
}

/// `GET /password_reset/new`: the form asking for the address.
///
/// # Errors
/// 404 without mail or site address.
pub async fn new_reset(
    State(desk): State<MailDesk>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    site_url(&desk.pool, &desk.mailer).await?;
    let token = ctx.csrf_token();
    let html = NoticePage {
        csrf_token: &token,
        heading: "Forgot your password?",
        message: "Enter your e-mail address and we will send you a link to choose a new one.",
        alert: None,
        ask_address: true,
    }
    .render();
    page(StatusCode::OK, html)
}

/// `POST /password_reset`: queues a reset link for the address (when it has an active
/// account) after answering, the same for every address.
///
/// # Errors
/// 404 without mail or site address; 429 past the sign-in limit.
pub async fn request_reset(
    State(db): State<Db>,
    State(limits): State<Limits>,
    State(outbox): State<Outbox>,
    State(sso): State<Sso>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let site = site_url(&db.pool, &outbox.mailer).await?;
    limit(&limits.login, &ctx)?;
    let email = email_of(&ctx);
    let account = db.account_settings.get(&db.pool).await?.name.clone();
    let (pool, mailer, address) = (db.pool.clone(), outbox.mailer.clone(), email.clone());
    tokio::spawn(async move {
        let letter = (account.as_str(), address.as_str(), site.as_str());
        if let Err(e) = send_reset(&pool, &mailer, &sso, letter).await {
            tracing::warn!(error = %e, "password reset link not sent");
        }
    });
    let token = ctx.csrf_token();
    let html = NoticePage {
        csrf_token: &token,
        heading: "Check your e-mail",
        message: "If that address has an account here, we just sent it a link to choose a new \
                  password. It works for 15 minutes.",
        alert: None,
        ask_address: false,
    }
    .render();
    page(StatusCode::OK, html)
}

/// Queues a reset link at `site` for `email`'s active account, if any (`account`: the
/// account's name, for the letter); nothing for a person whose passwords are refused. An
/// address without an account costs the same work: a token signed for [`NOBODY`] and the
/// letter built; only the queueing is left out.
async fn send_reset(
    pool: &sqlx::SqlitePool,
    mailer: &crate::mail::Mailer,
    sso: &Sso,
    (account, email, site): (&str, &str, &str),
) -> anyhow::Result<()> {
    let found = users::find_active_for_login(pool, email).await?;
    let mut real = found.as_ref().and_then(|(user, digest)| {
        let address = user.email_address.as_deref()?;
        Some((user, password_reset_value(digest, address)?))
    });
    if let Some((user, _)) = real {
        if refuses_password(pool, sso, user).await? {
            tracing::info!(user_id = user.id, "no reset link: single sign-on only");
            real = None;
        }
    }
    let (user_id, name, value) = real
        .as_ref()
        .map_or((NOBODY, "", NOBODY_RESET_VALUE), |(user, value)| {
            (user.id, user.name.as_str(), value.as_str())
        });
    let keys = mailer
        .keys()
        .ok_or_else(|| anyhow::anyhow!("mail is off"))?;
    let token = keys
        .token_for
        .generate(&PASSWORD_RESET, user_id, value, SystemTime::now());
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("token", &token)
        .finish();
    let url = format!("{site}/password_reset/edit?{query}");
    let to = To {
        address: email,
        name,
    };
    let letter = mailer.prepare(crate::letters::password_reset(to, account, &url)?);
    if real.is_some() {
        mailer.enqueue(letter?)?;
    }
    Ok(())
}

/// The active person a reset token names, if it still resolves: MAC, purpose, expiry, and
/// the value it carries equal to the current one (the password salt's tail and the address);
/// with the password digest it was checked against.
async fn resolve(
    pool: &sqlx::SqlitePool,
    mailer: &crate::mail::Mailer,
    token: &str,
) -> Result<Option<(users::User, String)>, AppError> {
    let Some(keys) = mailer.keys() else {
        return Ok(None);
    };
    let Some((id, tail)) = keys
        .token_for
        .read(&PASSWORD_RESET, token, SystemTime::now())
    else {
        return Ok(None);
    };
    let Some(user) = users::find(pool, id).await?.filter(|u| u.is_active()) else {
        return Ok(None);
    };
    let digest = users::password_digest(pool, user.id).await?;
    let current = digest
        .as_deref()
        .zip(user.email_address.as_deref())
        .and_then(|(digest, address)| password_reset_value(digest, address))
        .unwrap_or_default();
    Ok(TokenFor::resolves(&tail, &current)
        .then(|| digest.map(|d| (user, d)))
        .flatten())
}

fn dead_link(ctx: &Ctx) -> Result<Response, AppError> {
    let token = ctx.csrf_token();
    let html = NoticePage {
        csrf_token: &token,
        heading: "This link no longer works",
        message:
            "It has expired, or the password was changed since it was sent. Ask for a new one.",
        alert: None,
        ask_address: true,
    }
    .render();
    page(StatusCode::NOT_FOUND, html)
}

/// Query of `GET /password_reset/edit`.
#[derive(Debug, serde::Deserialize)]
pub struct TokenQuery {
    /// The reset token.
    #[serde(default)]
    pub token: String,
}

/// `GET /password_reset/edit?token=`: the new-password form, or 404 with a page saying the
/// link no longer works.
///
/// # Errors
/// 404 without mail or site address; database failures.
pub async fn edit_reset(
    State(desk): State<MailDesk>,
    Extension(ctx): Extension<Ctx>,
    Query(query): Query<TokenQuery>,
) -> Result<Response, AppError> {
    site_url(&desk.pool, &desk.mailer).await?;
    let Some((user, _)) = resolve(&desk.pool, &desk.mailer, &query.token).await? else {
        return dead_link(&ctx);
    };
    if refuses_password(&desk.pool, &desk.sso, &user).await? {
        return passwords_refused(&desk.pool, &desk.sso, &ctx).await;
    }
    let csrf = ctx.csrf_token();
    let html = ResetPage {
        csrf_token: &csrf,
        token: &query.token,
        alert: None,
        min_password_bytes: super::profiles::MIN_PASSWORD_BYTES,
    }
    .render();
    page(StatusCode::OK, html).map(private)
}

/// A page carrying a reset token: stored by no cache (a shared computer's back button, a
/// proxy), and sending no referrer (the token is in the URL) to any other site.
fn private(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        header::HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The 403 page of a code or a reset link while passwords are for administrators only.
async fn passwords_refused(
    pool: &sqlx::SqlitePool,
    sso: &Sso,
    ctx: &Ctx,
) -> Result<Response, AppError> {
    tracing::info!(ip = %ctx.ip, "mail sign-in refused: single sign-on only");
    let label = super::sign_in_options::button_label(pool, sso).await?;
    let message = super::sign_in_options::passwords_refused(label.as_deref());
    let token = ctx.csrf_token();
    let html = NoticePage {
        csrf_token: &token,
        heading: "Sign in with single sign-on",
        message: &message,
        alert: None,
        ask_address: false,
    }
    .render();
    page(StatusCode::FORBIDDEN, html)
}

/// `POST /password_reset/update` with `token` and `password` (8-72 bytes): sets the password,
/// ends every session of the person (their cable connections close) and signs this browser
/// in (302). 404 page for a dead token, 422 with the form for a password out of bounds.
///
/// # Errors
/// 404 without mail or site address; 429 past the sign-in limit; database failures.
pub async fn update_reset(
    State(sign_in): State<super::sessions::SignIn>,
    State(delivery): State<Delivery>,
    Extension(ctx): Extension<Ctx>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    site_url(&sign_in.db.pool, &sign_in.outbox.mailer).await?;
    limit(&sign_in.limits.login, &ctx)?;
    let token = ctx.form.get("token").unwrap_or("").to_owned();
    let Some((user, checked_digest)) =
        resolve(&sign_in.db.pool, &sign_in.outbox.mailer, &token).await?
    else {
        return dead_link(&ctx);
    };
    if refuses_password(&sign_in.db.pool, &sign_in.sso, &user).await? {
        return passwords_refused(&sign_in.db.pool, &sign_in.sso, &ctx).await;
    }
    let user_id = user.id;
    let password = ctx.form.get("password").unwrap_or("");
    let min = super::profiles::MIN_PASSWORD_BYTES;
    if password.len() < min || password.len() > MAX_PASSWORD_BYTES {
        let csrf = ctx.csrf_token();
        let alert = format!("The password must be {min} to {MAX_PASSWORD_BYTES} bytes long.");
        let html = ResetPage {
            csrf_token: &csrf,
            token: &token,
            alert: Some(&alert),
            min_password_bytes: min,
        }
        .render();
        return page(StatusCode::UNPROCESSABLE_ENTITY, html).map(private);
    }
    let digest = hash_password(password).await?;
    // Only while the password is still the one the link was checked against: of the same
    // link used at once, one sets the password, the others find it used.
    let Some(sessions_ended) =
        users::reset_password(&sign_in.db.pool, user_id, &checked_digest, &digest).await?
    else {
        return dead_link(&ctx);
    };
    for session in &sessions_ended {
        super::users::close_session(&delivery, user_id, session);
    }
    tracing::info!(user_id, "password reset by e-mailed link");
    start_session(
        &sign_in.config,
        &sign_in.db,
        &sign_in.keys,
        &ctx,
        &headers,
        user_id,
    )
    .await
}
