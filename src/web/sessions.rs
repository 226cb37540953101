//! Sign in and sign out (Campfire's `SessionsController`).
//!
//! `POST /session` answers 302 with the signed `session_token` cookie on success, 401 with
//! the form again on failure, and 429 past the per-IP login rate limit.

use crate::config::Config;
use crate::db::Db;
use crate::oidc::Sso;
use crate::outbox::Outbox;
use crate::pubsub::Delivery;
use crate::rails::Keys;
use crate::rate_limit::Limits;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::context::{
    delete_cookie, rotate_csrf, set_cookie, set_cookie_until, Ctx, SESSION_COOKIE,
};
use super::error::AppError;
use super::respond;
use crate::db::users::PASSWORD_BCRYPT_COST;
use crate::pubsub::Control;
use crate::render::SignInPage;

/// bcrypt ignores bytes past 72; Rails' `has_secure_password` refuses longer passwords, and so
/// does Hearth (such a login fails).
pub const MAX_PASSWORD_BYTES: usize = 72;

/// Checks `password` against a bcrypt `digest` on the blocking pool; false for any error.
/// Only the first [`MAX_PASSWORD_BYTES`] bytes are hashed, so an over-long password costs the
/// same as any other (the caller refuses it before).
pub async fn verify_password(password: String, digest: String) -> bool {
    tokio::task::spawn_blocking(move || {
        let bytes = password.as_bytes();
        bcrypt::verify(&bytes[..bytes.len().min(MAX_PASSWORD_BYTES)], &digest).unwrap_or(false)
    })
    .await
    .unwrap_or(false)
}

/// A fixed digest of [`PASSWORD_BCRYPT_COST`] (the cost of every account's digest) that no
/// password matches in practice, computed once (on the blocking pool) and then reused.
async fn dummy_digest() -> String {
    static DUMMY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    DUMMY
        .get_or_init(|| async {
            tokio::task::spawn_blocking(|| {
                bcrypt::hash_with_salt(b"\0hearth-no-such-account", PASSWORD_BCRYPT_COST, [7u8; 16])
                    .map(|parts| parts.format_for_version(bcrypt::Version::TwoB))
                    .unwrap_or_default()
            })
            .await
            .unwrap_or_default()
        })
        .await
        .clone()
}

/// `GET /session/new`: the sign-in form (signed-in users go to `/`; before the first run,
/// everyone goes to `/first_run`, as Campfire's `request_authentication` does).
pub async fn new(
    State(db): State<Db>,
    State(outbox): State<Outbox>,
    State(sso): State<Sso>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    if ctx.user.is_some() {
        return Ok(respond::found("/"));
    }
    if crate::db::accounts::needs_first_run(&db.pool).await? {
        return Ok(respond::found("/first_run"));
    }
    let offers = offers(&db.pool, &sso, &outbox.mailer).await?;
    Ok(sign_in_page(&ctx, &offers, StatusCode::OK, None, ""))
}

/// What the sign-in page offers besides the password, read for each answer: single sign-on's
/// button (its provider's name) and the mail parts (codes, reset links).
struct Offers {
    sso: Option<String>,
    mail: crate::render::MailOnPage,
}

async fn offers(
    pool: &sqlx::SqlitePool,
    sso: &crate::oidc::Sso,
    mailer: &crate::mail::Mailer,
) -> Result<Offers, AppError> {
    Ok(Offers {
        sso: super::sign_in_options::button_label(pool, sso).await?,
        mail: super::mail_on_page::on_page(pool, mailer).await?,
    })
}

fn sign_in_page(
    ctx: &Ctx,
    offers: &Offers,
    status: StatusCode,
    alert: Option<&str>,
    email: &str,
) -> Response {
    let token = ctx.csrf_token();
    let page = SignInPage {
        sso_provider: offers.sso.as_deref(),
        csrf_token: &token,
        alert,
        email_address: email,
        mail: offers.mail,
    };
    match askama::Template::render(&page) {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => AppError::Internal(e.into()).into_response(),
    }
}

handles_of! {
    /// What signing in uses: the settings, the database, the cookie keys, the sign-in limit,
    /// the mailer (for the offers on the page) and single sign-on.
    pub struct SignIn {
        /// The settings.
        config: Arc<Config>,
        /// The database.
        db: Db,
        /// The cookie jar's keys.
        keys: Keys,
        /// The sign-in limit.
        limits: Limits,
        /// The mailer (whether codes and reset links are offered).
        outbox: Outbox,
        /// Single sign-on.
        sso: Sso,
    }
}

/// `POST /session` with `email_address` and `password`: starts a session.
pub async fn create(
    State(sign_in): State<SignIn>,
    Extension(ctx): Extension<Ctx>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let email = ctx
        .form
        .get("email_address")
        .unwrap_or("")
        .trim()
        .to_owned();
    if let Err(wait) = sign_in.limits.login.attempt(ctx.ip, Instant::now()) {
        let alert = "Too many sign-in attempts. Try again later.";
        let offers = offers(&sign_in.db.pool, &sign_in.sso, &sign_in.outbox.mailer).await?;
        let status = StatusCode::TOO_MANY_REQUESTS;
        let mut page = sign_in_page(&ctx, &offers, status, Some(alert), &email);
        let secs = crate::rate_limit::retry_after_secs(wait);
        page.headers_mut().insert(header::RETRY_AFTER, secs.into());
        return Ok(page);
    }
    let password = ctx.form.get("password").unwrap_or("").to_owned();
    let found = if password.is_empty() || password.len() > MAX_PASSWORD_BYTES {
        None
    } else {
        crate::db::users::find_active_for_login(&sign_in.db.pool, &email).await?
    };
    let authenticated = match found {
        Some((user, digest)) => verify_password(password, digest).await.then_some(user),
        None => {
            // Same work as a wrong password, so the answer's timing does not tell whether the
            // address has an account.
            let _ = verify_password(password, dummy_digest().await).await;
            None
        }
    };
    let Some(user) = authenticated else {
        tracing::info!(ip = %ctx.ip, "failed sign-in");
        let alert = "Try another email address or password.";
        let offers = offers(&sign_in.db.pool, &sign_in.sso, &sign_in.outbox.mailer).await?;
        let status = StatusCode::UNAUTHORIZED;
        return Ok(sign_in_page(&ctx, &offers, status, Some(alert), &email));
    };
    if super::sign_in_options::refuses_password(&sign_in.db.pool, &sign_in.sso, &user).await? {
        tracing::info!(ip = %ctx.ip, user_id = user.id, "password sign-in refused: single sign-on only");
        let offers = offers(&sign_in.db.pool, &sign_in.sso, &sign_in.outbox.mailer).await?;
        let alert = format!(
            "Passwords are for administrators only here: sign in with {}.",
            offers.sso.as_deref().unwrap_or("single sign-on")
        );
        let status = StatusCode::FORBIDDEN;
        return Ok(sign_in_page(&ctx, &offers, status, Some(&alert), &email));
    }
    start_session(
        &sign_in.config,
        &sign_in.db,
        &sign_in.keys,
        &ctx,
        &headers,
        user.id,
    )
    .await
}

/// Starts a session for `user_id` (Campfire's `start_new_session_for`) and answers 302 to `/`
/// with the signed, permanent `session_token` cookie and a new CSRF secret (the old page's
/// tokens stop working): the end of a sign-in, a first run and a sign-up.
///
/// # Errors
/// The session could not be stored.
pub async fn start_session(
    config: &Config,
    db: &Db,
    keys: &Keys,
    ctx: &Ctx,
    headers: &HeaderMap,
    user_id: i64,
) -> Result<Response, AppError> {
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let ip = ctx.ip.to_string();
    let token = crate::db::sessions::start(&db.pool, user_id, Some(&ip), user_agent).await?;
    // `cookies.signed.permanent[:session_token] = { value:, httponly: true, same_site: :lax }`.
    let expires = crate::rails::signed_cookie::permanent_expiry(std::time::SystemTime::now());
    let value = keys.cookies.sign(SESSION_COOKIE, &token, Some(expires));
    let secure = ctx.secure || config.production;
    let back_to = ctx
        .cookie(RETURN_TO_COOKIE)
        .filter(|path| is_return_path(path));
    let mut response = respond::found(back_to.unwrap_or("/"));
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie_until(SESSION_COOKIE, &value, expires, secure),
    );
    if ctx.cookie(RETURN_TO_COOKIE).is_some() {
        response
            .headers_mut()
            .append(header::SET_COOKIE, delete_cookie(RETURN_TO_COOKIE));
    }
    rotate_csrf(keys, config, &mut response, secure);
    Ok(response)
}

/// The cookie that remembers the page asked for while signed out (Campfire keeps it in the
/// session as `return_to_after_authenticating`, `controllers/concerns/authentication.rb`).
pub const RETURN_TO_COOKIE: &str = "return_to_after_authenticating";

/// How long the page asked for is remembered, in seconds.
pub const RETURN_TO_SECS: u64 = 600;

/// Whether `path` may be returned to after signing in: a path of this site (one leading `/`,
/// not `//` or `/\`, which browsers read as another host), at most 512 bytes of
/// `A-Z a-z 0-9 / @ - _ . ~ ? = & %` (so it needs no escaping in a cookie or a `Location`).
pub fn is_return_path(path: &str) -> bool {
    path.len() <= 512
        && path.starts_with('/')
        && !path.starts_with("//")
        && !path.starts_with("/\\")
        && path.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'/' | b'@' | b'-' | b'_' | b'.' | b'~' | b'?' | b'=' | b'&' | b'%'
                )
        })
}

/// The answer to a signed-out request for a page: 302 to the sign-in form, remembering `path`
/// (when [`is_return_path`]) so that signing in lands there.
pub fn sign_in_returning_to(path: &str, secure: bool) -> Response {
    let mut response = respond::found("/session/new");
    if is_return_path(path) {
        response.headers_mut().append(
            header::SET_COOKIE,
            set_cookie(RETURN_TO_COOKIE, path, Some(RETURN_TO_SECS), secure),
        );
    }
    response
}

/// Hashes a new password with bcrypt at [`PASSWORD_BCRYPT_COST`], off the async threads (as
/// Rails' `has_secure_password`).
///
/// # Errors
/// 422 for an empty password or one over [`MAX_PASSWORD_BYTES`]; 500 when hashing fails.
pub async fn hash_password(password: &str) -> Result<String, AppError> {
    if password.is_empty() || password.len() > MAX_PASSWORD_BYTES {
        return Err(AppError::Unprocessable(format!(
            "password must be 1-{MAX_PASSWORD_BYTES} bytes"
        )));
    }
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || bcrypt::hash(password, PASSWORD_BCRYPT_COST))
        .await
        .map_err(|e| AppError::Internal(e.into()))?
        .map_err(|e| AppError::Internal(e.into()))
}

/// `DELETE /session` (or `POST /session` with `_method=delete`): destroys the server-side
/// session, deletes the cookie, gives the browser a new CSRF secret and closes the cable
/// connections opened with it. With `push_subscription_endpoint` (the sign-out form's, filled
/// in by `assets/js/notifications.js`), the user's push subscription there is deleted too.
pub async fn destroy(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    State(keys): State<Keys>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    // Campfire's `remove_push_subscription`: the page sends the browser's endpoint (its
    // script unsubscribed the browser first); only the signed-out user's own is deleted.
    if let (Some(user), Some(endpoint)) = (&ctx.user, ctx.form.get("push_subscription_endpoint")) {
        if !endpoint.is_empty() {
            crate::db::push_subscriptions::delete_endpoint_for_user(&db.pool, user.id, endpoint)
                .await?;
        }
    }
    if let Some(token) = &ctx.session_token {
        crate::db::sessions::destroy(&db.pool, token).await?;
        if let Some(user) = &ctx.user {
            // Every node closes its connections of this session.
            delivery.bus.control(Control::Disconnect {
                user_id: user.id,
                session_sha256: Some(crate::registry::session_digest(token)),
                reconnect: false,
            });
        }
    }
    let mut response = respond::found("/session/new");
    response
        .headers_mut()
        .append(header::SET_COOKIE, delete_cookie(SESSION_COOKIE));
    rotate_csrf(&keys, &config, &mut response, ctx.secure);
    Ok(response)
}
