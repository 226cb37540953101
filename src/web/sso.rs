//! Signing in through the OpenID Connect provider (see [`crate::oidc`] and docs/sso.md):
//!
//! - `GET /session/oidc`: sends the browser to the provider's authorization endpoint with a
//!   fresh `state`, `nonce` and PKCE challenge, which it keeps in the signed, HttpOnly
//!   [`FLOW_COOKIE`] for [`FLOW_SECS`] (so the answer is bound to the browser that asked).
//! - `GET /session/oidc/callback?code=&state=`: checks `state` against the cookie (and `iss`,
//!   RFC 9207, when given), deletes the cookie (one answer per sign-in), exchanges the code,
//!   checks the ID token ([`crate::oidc::Provider::finish`]), then signs in the person the
//!   identity is linked to, or the active person holding the verified address, or a new member
//!   made as a join link makes one (every open room). A provider's person whose address is
//!   unverified or outside the account's allowed domains is refused with a page that says why
//!   ([`Refusal`]), as is every failed check.
//!
//! Both answer 404 while single sign-on is not configured; a signed-in visitor goes to `/`.

use std::time::{Duration, SystemTime};

use askama::Template;
use axum::extract::{FromRef, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;
use subtle::ConstantTimeEq;

use super::context::Ctx;
use super::cookies::{delete_cookie, set_cookie};
use super::error::AppError;
use super::respond::found;
use crate::db::sso::{self as store, Match};
use crate::oidc::{Identity, Provider, Sso, SsoError};
use crate::rails::SignedCookieJar;

/// The signed cookie holding `state`, `nonce` and the PKCE verifier of a sign-in under way.
pub const FLOW_COOKIE: &str = "oidc_sign_in";

/// How long a sign-in may stay at the provider, in seconds.
pub const FLOW_SECS: u64 = 600;

/// The callback's path (the redirect URI registered at the provider is the site's origin
/// followed by it).
pub const CALLBACK_PATH: &str = "/session/oidc/callback";

/// What single sign-on's handlers use: the pool, the provider, the cookie jar and whether
/// cookies must be `Secure`.
#[derive(Clone, Debug)]
pub struct SsoHandle {
    pool: sqlx::SqlitePool,
    sso: Sso,
    cookies: SignedCookieJar,
    production: bool,
}

impl SsoHandle {
    /// The SQLite pool.
    pub fn pool(&self) -> &sqlx::SqlitePool {
        &self.pool
    }

    /// Single sign-on as configured.
    pub fn sso(&self) -> &Sso {
        &self.sso
    }
}

impl<S> FromRef<S> for SsoHandle
where
    S: Send + Sync,
    crate::db::Db: FromRef<S>,
    crate::oidc::Sso: FromRef<S>,
    crate::rails::Keys: FromRef<S>,
    std::sync::Arc<crate::config::Config>: FromRef<S>,
{
    fn from_ref(state: &S) -> Self {
        let db = crate::db::Db::from_ref(state);
        let sso = crate::oidc::Sso::from_ref(state);
        let keys = crate::rails::Keys::from_ref(state);
        let config: std::sync::Arc<crate::config::Config> = FromRef::from_ref(state);
        Self {
            pool: db.pool,
            sso,
            cookies: keys.cookies,
            production: config.production,
        }
    }
}

/// The site's origin as the browser sees it, followed by [`CALLBACK_PATH`].
fn callback_url(ctx: &Ctx, headers: &HeaderMap, production: bool) -> String {
    let origin = super::links::origin_for(ctx, headers, production);
    format!("{origin}{CALLBACK_PATH}")
}

/// `GET /session/oidc` (see the module docs).
pub async fn start(
    State(handle): State<SsoHandle>,
    Extension(ctx): Extension<Ctx>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let Some(provider) = handle.sso.provider() else {
        return Err(AppError::NotFound);
    };
    if ctx.user.is_some() {
        return Ok(found("/"));
    }
    let redirect = callback_url(&ctx, &headers, handle.production);
    let authorization = match provider.authorize(&redirect).await {
        Ok(a) => a,
        Err(e) => return Ok(refuse(&Refusal::from(e), None)),
    };
    let value = format!(
        "{} {} {}",
        authorization.state, authorization.nonce, authorization.pkce_verifier
    );
    let expires = SystemTime::now() + Duration::from_secs(FLOW_SECS);
    let signed = handle.cookies.sign(FLOW_COOKIE, &value, Some(expires));
    let secure = ctx.secure || handle.production;
    let mut response = found(authorization.url.as_str());
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(FLOW_COOKIE, &signed, Some(FLOW_SECS), secure),
    );
    Ok(response)
}

/// The provider's answer (RFC 6749 §4.1.2, RFC 9207's `iss`).
#[derive(Debug, Default, serde::Deserialize)]
pub struct CallbackParams {
    /// The authorization code.
    pub code: Option<String>,
    /// The `state` sent.
    pub state: Option<String>,
    /// The issuer that answered (RFC 9207), when the provider says.
    pub iss: Option<String>,
    /// An error code instead of a code (`access_denied`, …).
    pub error: Option<String>,
}

/// `GET /session/oidc/callback` (see the module docs).
pub async fn callback(
    State(state): State<super::sessions::SignIn>,
    Extension(ctx): Extension<Ctx>,
    headers: HeaderMap,
    Query(params): Query<CallbackParams>,
) -> Result<Response, AppError> {
    let Some(provider) = state.sso.provider() else {
        return Err(AppError::NotFound);
    };
    if ctx.user.is_some() {
        return Ok(found("/"));
    }
    let settings = store::settings(&state.db.pool).await?;
    let name = super::sign_in_options::label(&settings, provider);
    let identity = match checked_identity(&state, &ctx, &headers, provider, &params).await {
        Ok(identity) => identity,
        Err(refusal) => return Ok(refuse(&refusal, Some(&name))),
    };
    let Some(email) = identity.email.clone().filter(|_| identity.email_verified) else {
        return Ok(refuse(&Refusal::Unverified, Some(&name)));
    };
    if !settings.allows(&email) {
        return Ok(refuse(
            &Refusal::OutsideDomains {
                email,
                domains: either_of(&settings.allowed_domains),
            },
            Some(&name),
        ));
    }
    let display = identity
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| {
            // A typed name refuses controls and bidirectional overrides; the provider's loses them.
            n.chars()
                .filter(|c| !c.is_control() && !super::fields::is_unsafe_char(*c))
                .take(super::fields::MAX_NAME_CHARS)
                .collect::<String>()
        })
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| email.split('@').next().unwrap_or("").to_owned());
    let user_id = match store::find_or_create(
        &state.db.pool,
        &identity.issuer,
        &identity.subject,
        &email,
        &display,
    )
    .await?
    {
        Match::Existing(user) => user.id,
        Match::Created(id) => {
            tracing::info!(user_id = id, "single sign-on made a new member");
            id
        }
        Match::Inactive => return Ok(refuse(&Refusal::Inactive, Some(&name))),
    };
    let mut response = super::sessions::start_session(
        &state.config,
        &state.db,
        &state.keys,
        &ctx,
        &headers,
        user_id,
    )
    .await?;
    response
        .headers_mut()
        .append(header::SET_COOKIE, delete_cookie(FLOW_COOKIE));
    Ok(response)
}

/// The provider's answer checked against the flow cookie, the code exchanged and the ID token
/// checked.
async fn checked_identity(
    state: &super::sessions::SignIn,
    ctx: &Ctx,
    headers: &HeaderMap,
    provider: &Provider,
    params: &CallbackParams,
) -> Result<Identity, Refusal> {
    let flow = ctx
        .cookie(FLOW_COOKIE)
        .and_then(|v| state.keys.cookies.verify(FLOW_COOKIE, v))
        .ok_or(Refusal::NoSignInUnderWay)?;
    let mut parts = flow.split(' ');
    let (Some(expected), Some(nonce), Some(verifier)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(Refusal::NoSignInUnderWay);
    };
    if let Some(error) = &params.error {
        return Err(Refusal::ProviderSaidNo(error.chars().take(100).collect()));
    }
    let given = params.state.as_deref().unwrap_or("");
    if !bool::from(given.as_bytes().ct_eq(expected.as_bytes())) {
        return Err(Refusal::StateMismatch);
    }
    if params
        .iss
        .as_deref()
        .is_some_and(|iss| iss != provider.issuer())
    {
        return Err(Refusal::StateMismatch);
    }
    let code = params.code.as_deref().ok_or(Refusal::StateMismatch)?;
    let redirect = callback_url(ctx, headers, state.config.production);
    provider
        .finish(&redirect, code, verifier, nonce)
        .await
        .map_err(Refusal::from)
}

/// Why a single sign-on was refused; each has its page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No (valid, unexpired) flow cookie: the sign-in was finished already, expired, or began
    /// in another browser.
    NoSignInUnderWay,
    /// `state` (or `iss`) is not the one sent.
    StateMismatch,
    /// The provider answered with an error code.
    ProviderSaidNo(String),
    /// The provider could not be reached.
    ProviderDown,
    /// The token endpoint refused the code.
    CodeRefused,
    /// The ID token did not check out (signature, issuer, audience, expiry).
    TokenRefused,
    /// The ID token's `nonce` is not this sign-in's.
    NonceMismatch,
    /// The ID token is signed by a key the provider does not publish (a retired one).
    UnknownKey,
    /// No e-mail address, or one the provider has not verified.
    Unverified,
    /// The address is outside the allowed domains.
    OutsideDomains {
        /// The address the provider gave.
        email: String,
        /// The allowed domains as a phrase (`either_of`): `a.example or b.example`.
        domains: String,
    },
    /// The person here is deactivated, banned or a bot.
    Inactive,
}

impl From<SsoError> for Refusal {
    fn from(e: SsoError) -> Self {
        tracing::info!(error = %e, "single sign-on refused");
        match e {
            SsoError::Provider(_) => Self::ProviderDown,
            SsoError::CodeRefused(_) => Self::CodeRefused,
            SsoError::IdToken(_) => Self::TokenRefused,
            SsoError::Nonce(_) => Self::NonceMismatch,
            SsoError::UnknownKey => Self::UnknownKey,
        }
    }
}

/// The refusal page (`templates/sessions/sso_refused.html`).
#[derive(Template, Debug)]
#[template(path = "sessions/sso_refused.html")]
pub struct RefusalPage<'a> {
    /// Empty: the page carries no form.
    pub csrf_token: &'a str,
    /// A word for tests and styles (`outside-domains`, `state`, …).
    pub kind: &'a str,
    /// The heading.
    pub title: &'a str,
    /// What happened and what to do.
    pub detail: String,
}

impl Refusal {
    /// The page's kind, status, heading and text; `provider` names the provider when known.
    fn page(&self, provider: &str) -> (&'static str, StatusCode, &'static str, String) {
        let again = "Start again from the sign-in page.";
        match self {
            Self::NoSignInUnderWay => (
                "expired",
                StatusCode::BAD_REQUEST,
                "This sign-in has expired",
                format!("It was already used, took more than {} minutes, or began in another browser. {again}", FLOW_SECS / 60),
            ),
            Self::StateMismatch => (
                "state",
                StatusCode::BAD_REQUEST,
                "This sign-in doesn't match",
                format!("The answer from {provider} was not for the sign-in this browser began, so it was ignored. {again}"),
            ),
            Self::ProviderSaidNo(code) => (
                "provider",
                StatusCode::FORBIDDEN,
                "You weren't signed in",
                format!("{provider} answered \u{201c}{code}\u{201d}. {again}"),
            ),
            Self::ProviderDown => (
                "unreachable",
                StatusCode::BAD_GATEWAY,
                "Single sign-on isn't answering",
                format!("{provider} could not be reached. Try again in a moment."),
            ),
            Self::CodeRefused => (
                "code",
                StatusCode::BAD_REQUEST,
                "This sign-in was refused",
                format!("{provider} refused the sign-in code (it can be used only once). {again}"),
            ),
            Self::TokenRefused => (
                "token",
                StatusCode::BAD_REQUEST,
                "This sign-in couldn't be verified",
                format!("The identity {provider} sent did not pass Hearth's checks (its signature, issuer, audience or expiry). {again}"),
            ),
            Self::NonceMismatch => (
                "nonce",
                StatusCode::BAD_REQUEST,
                "This sign-in couldn't be verified",
                format!("The identity {provider} sent was made for another sign-in (its nonce differs). {again}"),
            ),
            Self::UnknownKey => (
                "key",
                StatusCode::BAD_REQUEST,
                "This sign-in couldn't be verified",
                format!("The identity {provider} sent is signed with a key {provider} no longer publishes. {again}"),
            ),
            Self::Unverified => (
                "unverified",
                StatusCode::FORBIDDEN,
                "Your e-mail address isn't verified",
                format!("{provider} did not confirm an e-mail address for your account, and Hearth needs one to know who you are. Verify it there, then sign in again."),
            ),
            Self::OutsideDomains { email, domains } => (
                "outside-domains",
                StatusCode::FORBIDDEN,
                "This account can't sign in here",
                format!("You signed in to {provider} as {email}, but only addresses at {domains} may use {}. Sign in with an account at one of those, or ask an administrator for an invitation.", crate::web::page::account_name()),
            ),
            Self::Inactive => (
                "inactive",
                StatusCode::FORBIDDEN,
                "This account is deactivated",
                "An administrator deactivated the account with this e-mail address. Ask one of them to let you back in.".to_owned(),
            ),
        }
    }
}

/// `names` as a phrase of alternatives: `a`, `a or b`, `a, b or c` (empty for none).
fn either_of(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// The refusal's page, deleting the flow cookie (a sign-in gets one answer).
fn refuse(refusal: &Refusal, provider: Option<&str>) -> Response {
    let (kind, status, title, detail) = refusal.page(provider.unwrap_or("The sign-in provider"));
    tracing::info!(kind, "single sign-on refused");
    let page = RefusalPage {
        csrf_token: "",
        kind,
        title,
        detail,
    };
    let mut response = match page.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(e) => AppError::Internal(e.into()).into_response(),
    };
    response
        .headers_mut()
        .append(header::SET_COOKIE, delete_cookie(FLOW_COOKIE));
    response
}

/// The routes of single sign-on.
pub fn routes() -> axum::Router<crate::state::SharedState> {
    axum::Router::new()
        .route("/session/oidc", axum::routing::get(start))
        .route(CALLBACK_PATH, axum::routing::get(callback))
}

#[cfg(test)]
mod tests {
    use super::either_of;

    #[test]
    fn allowed_domains_read_as_alternatives() {
        let names = |list: &[&str]| list.iter().map(|&n| n.to_owned()).collect::<Vec<_>>();
        assert_eq!(either_of(&names(&[])), "");
        assert_eq!(either_of(&names(&["a.test"])), "a.test");
        assert_eq!(either_of(&names(&["a.test", "b.test"])), "a.test or b.test");
        assert_eq!(
            either_of(&names(&["a.test", "b.test", "c.test"])),
            "a.test, b.test or c.test"
        );
    }
}
