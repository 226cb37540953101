//! The per-request context: cookies, the signed-in user, the CSRF secret and the form.
//!
//! [`prepare`] wraps the whole router (it must run before routing, since the `_method` form
//! override changes the method that routing sees, as Rack's `MethodOverride` does).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::request::Parts;
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::csrf::CsrfSecret;
use super::error::AppError;
use super::form::Form;
use super::upload_clock::UploadClock;
use crate::config::Config;
use crate::db::users::User;
use crate::db::Db;
use crate::rails::Keys;

/// Name of the signed cookie holding the session token (Campfire's `session_token`).
pub const SESSION_COOKIE: &str = "session_token";
/// Name of the signed cookie holding the CSRF secret (Campfire's `_campfire_session`).
pub const CSRF_COOKIE: &str = "_hearth_session";
/// Name of the cookie remembering the last visited room (Campfire's `last_room`).
pub const LAST_ROOM_COOKIE: &str = "last_room";
/// Lifetime of permanent cookies (Rails' `cookies.permanent`: 20 years), in seconds: 20 years of
/// 365 days. The signed session cookie counts calendar years, as Rails does
/// ([`crate::rails::signed_cookie::permanent_expiry`]).
pub const PERMANENT_SECS: u64 = 20 * 365 * 24 * 3600;

/// What [`prepare`] learned about a request.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// The signed-in, active user, if any.
    pub user: Option<User>,
    /// The verified session token, if any.
    pub session_token: Option<String>,
    /// The browser's CSRF secret.
    pub csrf: CsrfSecret,
    /// The parsed form of a urlencoded body (empty otherwise).
    pub form: Arc<Form>,
    /// The raw body of a state-changing request.
    pub body: Bytes,
    /// The client's IP address.
    pub ip: IpAddr,
    /// Whether the request came over TLS (directly or per `X-Forwarded-Proto`).
    pub secure: bool,
    /// Every cookie of the request, undecoded.
    pub cookies: Arc<Vec<(String, String)>>,
}

impl Ctx {
    /// The signed-in user, or 401 when there is none.
    pub fn require_user(&self) -> Result<&User, AppError> {
        self.user.as_ref().ok_or(AppError::Unauthorized)
    }

    /// The signed-in administrator: 401 without a user, 403 for anyone else (Campfire's
    /// `ensure_can_administer`).
    pub fn require_administrator(&self) -> Result<&User, AppError> {
        let user = self.require_user()?;
        if user.role == crate::db::Role::Administrator {
            Ok(user)
        } else {
            Err(AppError::Forbidden)
        }
    }

    /// A freshly masked authenticity token for a page.
    pub fn csrf_token(&self) -> String {
        self.csrf.masked_token()
    }

    /// The raw value of cookie `name`.
    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub use super::cookies::{delete_cookie, parse_cookies, set_cookie, set_cookie_until};

/// Whether a path is a digest's one-click unsubscribe (RFC 8058: the mail client posts it
/// with no cookie and no CSRF token; the signed token in the path is the authority).
pub fn is_one_click_unsubscribe(path: &str) -> bool {
    path.strip_prefix("/digests/unsubscribe/")
        .is_some_and(|token| !token.is_empty() && !token.contains('/'))
}

/// Whether a path is a bot route (`/rooms/{id}/{bot_key}/messages`, and below it the
/// message, boost and boost-deletion routes of Campfire's `by_bots` controllers), which
/// authenticates by the key in the path: exempt from CSRF, and answered without setting a
/// cookie (Campfire's `allow_bot_access`). Any key shape counts, so that a wrong key reaches
/// the handler and gets its bare 401.
pub fn is_bot_path(path: &str) -> bool {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match parts.as_slice() {
        ["rooms", room, key, "messages", rest @ ..] => {
            room.parse::<i64>().is_ok()
                && !key.is_empty()
                && *key != "messages"
                && match rest {
                    [] => true,
                    [id] | [id, "boosts"] => id.parse::<i64>().is_ok(),
                    [id, "boosts", boost] => {
                        id.parse::<i64>().is_ok() && boost.parse::<i64>().is_ok()
                    }
                    _ => false,
                }
        }
        _ => false,
    }
}

/// The middleware that builds [`Ctx`] (see the module docs). Answers 413 for a body over
/// the limit, 408 for a body slower than the body timeout (a streamed one: see
/// [`super::upload_clock`]), 400 for a malformed form and 422 for a missing or wrong CSRF token.
pub async fn prepare(
    State(db): State<Db>,
    State(keys): State<Keys>,
    State(config): State<Arc<Config>>,
    request: Request,
    next: Next,
) -> Response {
    let notice = super::flash::pending(request.headers());
    match prepare_inner(&db, &keys, &config, request).await {
        Ok((request, new_csrf_cookie, secure)) => {
            let secure = secure || config.production;
            let bot = is_bot_path(request.uri().path());
            let clock = request.extensions().get::<UploadClock>().cloned();
            let mut response = if bot {
                next.run(request).await
            } else {
                // Without settings (a cable node has no database) pages show the defaults.
                let settings = db.account_settings.get(&db.pool).await.unwrap_or_default();
                let page = super::page::scope(settings, next.run(request));
                match notice {
                    Some(notice) => super::flash::scope(notice, page).await,
                    None => page.await,
                }
            };
            if clock.is_some_and(|c| c.timed_out()) {
                return AppError::RequestTimeout.into_response();
            }
            let rotated = response
                .headers()
                .get_all(header::SET_COOKIE)
                .iter()
                .any(|v| v.as_bytes().starts_with(CSRF_COOKIE_PREFIX.as_bytes()));
            if let Some(secret) = new_csrf_cookie.filter(|_| !bot && !rotated) {
                let value = keys.cookies.sign(CSRF_COOKIE, &secret.encode(), None);
                response.headers_mut().append(
                    header::SET_COOKIE,
                    set_cookie(CSRF_COOKIE, &value, None, secure),
                );
            }
            response
        }
        Err(e) => e.into_response(),
    }
}

/// `_hearth_session=`: how a `Set-Cookie` of the CSRF cookie starts.
const CSRF_COOKIE_PREFIX: &str = "_hearth_session=";

/// Gives the browser a new CSRF secret with `response` (Rails' `reset_session` at sign-in and
/// sign-out, which drops the old secret): tokens of pages rendered before stop working, so a
/// token seen before a sign-in cannot act for the session after it. [`prepare`] then sets no
/// other CSRF cookie on the same response.
pub fn rotate_csrf(keys: &Keys, config: &Config, response: &mut Response, secure: bool) {
    let secret = CsrfSecret::generate();
    let value = keys.cookies.sign(CSRF_COOKIE, &secret.encode(), None);
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(CSRF_COOKIE, &value, None, secure || config.production),
    );
}

/// A request path as it may be written to a log: the segment after `/rooms/<id>/` that is not
/// one of Hearth's own words (`messages`, `involvement`, `refresh`, `edit`, `@<id>`) is
/// replaced by `[FILTERED]`, because in a bot route it is the bot's key, also when the rest of
/// the route is malformed (Rails' `filter_parameters` does the same for parameters).
pub fn loggable_path(path: &str) -> std::borrow::Cow<'_, str> {
    let segments: Vec<&str> = path.split('/').collect();
    // "", "rooms", room, key, ...
    let secret_at = match segments.as_slice() {
        ["", "rooms", room, key, ..]
            if !matches!(*room, "opens" | "closeds" | "directs")
                && !key.is_empty()
                && !key.starts_with('@')
                && !matches!(*key, "messages" | "involvement" | "refresh" | "edit") =>
        {
            Some(3)
        }
        _ => None,
    };
    match secret_at {
        Some(i) => {
            let mut out = segments;
            out[i] = "[FILTERED]";
            std::borrow::Cow::Owned(out.join("/"))
        }
        None => std::borrow::Cow::Borrowed(path),
    }
}

/// Builds the [`Ctx`] of a request in named steps: read the cookies and the client's address,
/// resolve the CSRF secret and the session, read the body, apply the method override, check the
/// CSRF token. Returns the request (body restored), the CSRF secret to set when the browser
/// had none, and whether the request came over TLS.
async fn prepare_inner(
    db: &Db,
    keys: &Keys,
    config: &Config,
    request: Request,
) -> Result<(Request, Option<CsrfSecret>, bool), AppError> {
    let (mut parts, body) = request.into_parts();
    let cookies = parse_cookies(&parts.headers);
    let find = |name: &str| {
        cookies
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let secure =
        super::client_ip::forwarded_https(peer_ip(&parts), &parts.headers, &config.trusted_proxies);
    let ip = client_ip(config, &parts);
    let (csrf, new_csrf_cookie) = csrf_secret(keys, find(CSRF_COOKIE));
    let (user, session_token) = resume_session(db, keys, find(SESSION_COOKIE)).await?;
    let safe = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS);
    let streamed = !safe && streams_body(&parts);
    let (body_bytes, form, body) = if streamed {
        let clock = UploadClock::default();
        let body = clock.wrap(
            body,
            std::time::Duration::from_secs(config.body_timeout),
            std::time::Duration::from_secs(config.upload_timeout),
        );
        parts.extensions.insert(clock);
        (Bytes::new(), Form::default(), body)
    } else if safe {
        (Bytes::new(), Form::default(), body)
    } else {
        let (bytes, form) = read_body(config, &parts, body).await?;
        (bytes.clone(), form, Body::from(bytes))
    };
    method_override(&mut parts, &form);
    if !safe {
        refuse_banned(db, ip, parts.uri.path()).await?;
    }
    if !safe
        && !is_bot_path(parts.uri.path())
        && !is_disk_upload(&parts)
        && !is_one_click_unsubscribe(parts.uri.path())
    {
        check_csrf(&parts, &form, &csrf)?;
    }

    let ctx = Ctx {
        user,
        session_token,
        csrf,
        form: Arc::new(form),
        body: body_bytes,
        ip,
        secure,
        cookies: Arc::new(cookies),
    };
    parts.extensions.insert(ctx);
    Ok((Request::from_parts(parts, body), new_csrf_cookie, secure))
}

/// `PUT /rails/active_storage/disk/<token>`: a direct upload's bytes, authorized by the signed
/// token in the path (Rails' `DiskController` skips forgery protection).
fn is_disk_upload(parts: &Parts) -> bool {
    parts.method == Method::PUT && parts.uri.path().starts_with("/rails/active_storage/disk/")
}

/// Requests whose body the handler streams instead of [`read_body`] buffering it (their size
/// is bounded by `--max-upload-bytes` there): a direct upload's bytes, and multipart forms
/// carrying a file to the routes that take one (a post, a bot's post, an avatar, the logo, the
/// first run's form with its avatar). Their CSRF token comes
/// from the `X-CSRF-Token` header (as Campfire's uploader and `@rails/activestorage` send it).
fn streams_body(parts: &Parts) -> bool {
    if is_disk_upload(parts) {
        return true;
    }
    let multipart = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("multipart/form-data"));
    if !multipart || parts.method != Method::POST {
        return false;
    }
    let path = parts.uri.path();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    matches!(segments.as_slice(), ["rooms", room, "messages"] if room.parse::<i64>().is_ok())
        || matches!(segments.as_slice(), ["rooms", _, _, "messages"] if is_bot_path(path))
        || matches!(
            segments.as_slice(),
            ["users", _, "avatar"] | ["account", "logo"] | ["first_run"]
        )
}

/// The client's address: the TCP peer, or, when the peer is one of `--trusted-proxies`, the
/// address the proxies forwarded (see [`super::client_ip`]). Loopback when the connection
/// info is missing (requests served without a socket, as in router unit tests).
fn client_ip(config: &Config, parts: &Parts) -> IpAddr {
    super::client_ip::resolve(peer_ip(parts), &parts.headers, &config.trusted_proxies)
}

/// The TCP peer's address (loopback without connection info).
fn peer_ip(parts: &Parts) -> IpAddr {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
}

/// The browser's CSRF secret from its signed cookie, or a new one (returned twice: the second
/// copy is the cookie to set).
fn csrf_secret(keys: &Keys, cookie: Option<&str>) -> (CsrfSecret, Option<CsrfSecret>) {
    let stored = cookie
        .and_then(|v| keys.cookies.verify(CSRF_COOKIE, v))
        .and_then(|v| CsrfSecret::decode(&v));
    match stored {
        Some(secret) => (secret, None),
        None => {
            let secret = CsrfSecret::generate();
            (secret.clone(), Some(secret))
        }
    }
}

/// The active user of the signed session cookie and the session token, both None when the
/// cookie is missing, forged, or names an ended session or an inactive user.
async fn resume_session(
    db: &Db,
    keys: &Keys,
    cookie: Option<&str>,
) -> Result<(Option<User>, Option<String>), AppError> {
    let session_token = cookie.and_then(|v| keys.cookies.verify(SESSION_COOKIE, v));
    let user = match &session_token {
        Some(token) => db.auth_cache.resume(&db.pool, token).await?,
        None => None,
    };
    let session_token = session_token.filter(|_| user.is_some());
    Ok((user, session_token))
}

/// Reads the body of a state-changing request within `--max-body-bytes` (413 past it, also
/// when `Content-Length` announces more) and `--body-timeout` (408), and parses it when it is
/// `application/x-www-form-urlencoded` (400 when malformed).
async fn read_body(config: &Config, parts: &Parts, body: Body) -> Result<(Bytes, Form), AppError> {
    let limit = config.max_body_bytes;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(AppError::PayloadTooLarge);
    }
    let deadline = std::time::Duration::from_secs(config.body_timeout);
    let bytes = tokio::time::timeout(deadline, axum::body::to_bytes(body, limit))
        .await
        .map_err(|_| AppError::RequestTimeout)?
        .map_err(|_| AppError::PayloadTooLarge)?;
    let urlencoded = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let form = if urlencoded {
        Form::parse(&bytes).map_err(AppError::BadRequest)?
    } else {
        Form::default()
    };
    Ok((bytes, form))
}

/// Campfire's `BlockBannedRequests`: a state-changing request from a banned address changes
/// nothing (429). Reads the database only once some ban exists ([`Db::bans_present`]).
async fn refuse_banned(db: &Db, ip: IpAddr, path: &str) -> Result<(), AppError> {
    if db.bans_present.load(std::sync::atomic::Ordering::Relaxed)
        && crate::db::bans::is_banned(&db.pool, &ip.to_string()).await?
    {
        let path = loggable_path(path);
        tracing::info!(%ip, %path, "request from a banned address refused");
        return Err(AppError::TooManyRequests);
    }
    Ok(())
}

/// Rack's `MethodOverride`: a `POST` whose form has `_method` = `delete`, `patch` or `put`
/// (any case) is routed as that method.
fn method_override(parts: &mut Parts, form: &Form) {
    if parts.method == Method::POST {
        if let Some(method) = form.get("_method") {
            parts.method = match method.to_ascii_lowercase().as_str() {
                "delete" => Method::DELETE,
                "patch" => Method::PATCH,
                "put" => Method::PUT,
                _ => Method::POST,
            };
        }
    }
}

/// Rails' `verify_authenticity_token`: the `X-CSRF-Token` header or the form's
/// `authenticity_token` must be a valid token for the browser's secret; 422 otherwise.
fn check_csrf(parts: &Parts, form: &Form, csrf: &CsrfSecret) -> Result<(), AppError> {
    let token = parts
        .headers
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .or_else(|| form.get("authenticity_token"));
    if token.is_some_and(|t| csrf.verify(t)) {
        return Ok(());
    }
    tracing::info!(path = %loggable_path(parts.uri.path()), "CSRF token missing or invalid");
    Err(AppError::Unprocessable(
        "Can't verify CSRF token authenticity.".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bot_paths() {
        assert!(is_bot_path("/rooms/1/5-abcDEF123456/messages"));
        assert!(!is_bot_path("/rooms/1/messages"));
        assert!(!is_bot_path("/rooms/1/messages/5"));
        assert!(is_bot_path("/rooms/1/wrong/messages"));
        assert!(is_bot_path("/rooms/1/5-abc/messages/7"));
        assert!(is_bot_path("/rooms/1/5-abc/messages/7/boosts"));
        assert!(is_bot_path("/rooms/1/5-abc/messages/7/boosts/9"));
        assert!(!is_bot_path("/rooms/1/5-abc/messages/x"));
        assert!(!is_bot_path("/rooms/1/5-abc/messages/7/edit"));
        assert!(!is_bot_path("/rooms/1/messages/messages"));
        assert!(!is_bot_path("/rooms/x/5-abc/messages"));
    }

    #[test]
    fn bot_keys_are_filtered_from_logged_paths() {
        for (path, shown) in [
            ("/rooms/1/5-key/messages", "/rooms/1/[FILTERED]/messages"),
            (
                "/rooms/1/5-key/messages/x/y",
                "/rooms/1/[FILTERED]/messages/x/y",
            ),
            ("/rooms/x/5-key", "/rooms/x/[FILTERED]"),
            ("/rooms/1/messages/7", "/rooms/1/messages/7"),
            ("/rooms/1/involvement", "/rooms/1/involvement"),
            ("/rooms/opens/1/edit", "/rooms/opens/1/edit"),
            ("/rooms/1/@5", "/rooms/1/@5"),
            ("/session", "/session"),
        ] {
            assert_eq!(loggable_path(path), shown, "{path}");
        }
    }
}
