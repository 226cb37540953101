//! The account page's mail panel (administrators, shown only with `--smtp-url`): the SMTP
//! server and `From` as read from the flags (never the password), the settings that are not
//! secrets ([`crate::db::mail_settings`]), and "Send a test e-mail".
//!
//! - `PATCH /account/mail` with `mail[site_url]` (an `http` or `https` origin, empty to
//!   unset) and `mail[digest_hour]` (0-23): 302 to `/account/edit` with "Saved"; 422 otherwise.
//! - `POST /account/mail/test_email`: sends a test letter to the administrator's own address
//!   while the request waits (bounded, past the queue: the point is the SMTP server's answer),
//!   then 302 to `/account/edit` with "Test e-mail sent"; 422 with the server's answer (or its
//!   silence) when it did not take the letter.

use axum::extract::{FromRef, State};
use axum::response::Response;

use crate::db::mail_settings::{self, MailSettings};
use crate::mail::Mailer;
use crate::web::error::AppError;
use crate::web::extract::Admin;
use crate::web::flash::{found_with, Notice};

/// The handles of the mail panel and the digest settings: the database and the mailer.
#[derive(Clone, Debug)]
pub struct MailDesk {
    /// The SQLite pool.
    pub pool: sqlx::SqlitePool,
    /// Outgoing mail.
    pub mailer: Mailer,
    /// Signed ids (the digests' unsubscribe links).
    pub signed_ids: crate::rails::SignedIdVerifier,
    /// Single sign-on (whether a reset link may set a member's password).
    pub sso: crate::oidc::Sso,
}

impl<S> FromRef<S> for MailDesk
where
    S: Send + Sync,
    crate::db::Db: FromRef<S>,
    crate::outbox::Outbox: FromRef<S>,
    crate::rails::Keys: FromRef<S>,
    crate::oidc::Sso: FromRef<S>,
{
    fn from_ref(state: &S) -> Self {
        let db = crate::db::Db::from_ref(state);
        let outbox = crate::outbox::Outbox::from_ref(state);
        let keys = crate::rails::Keys::from_ref(state);
        let sso = crate::oidc::Sso::from_ref(state);
        Self {
            pool: db.pool,
            mailer: outbox.mailer,
            signed_ids: keys.signed_ids,
            sso,
        }
    }
}

/// What the account page's mail panel shows (`templates/accounts/_mail.html`).
#[derive(Clone, Debug)]
pub struct MailPanel {
    /// The SMTP server, without the password.
    pub server: String,
    /// The `From` mailbox.
    pub from: String,
    /// The stored settings.
    pub settings: MailSettings,
    /// The site address this request came through (the field's suggestion).
    pub suggested_site_url: String,
}

/// The panel for this server, `None` when mail is off.
///
/// # Errors
/// A database failure.
pub async fn panel(desk: &MailDesk, suggested: String) -> sqlx::Result<Option<MailPanel>> {
    let (Some(server), Some(from)) = (desk.mailer.server_shown(), desk.mailer.from_shown()) else {
        return Ok(None);
    };
    Ok(Some(MailPanel {
        server,
        from,
        settings: mail_settings::get(&desk.pool).await?,
        suggested_site_url: suggested,
    }))
}

/// A site address as stored: an `http`/`https` URL with a host and no query, without its
/// trailing `/`; empty stays empty.
///
/// # Errors
/// 422 for anything else.
pub fn site_url(value: &str) -> Result<String, AppError> {
    let value = value.trim().trim_end_matches('/');
    if value.is_empty() {
        return Ok(String::new());
    }
    let bad = || AppError::Unprocessable("mail[site_url] must be an http or https address".into());
    let url = url::Url::parse(value).map_err(|_| bad())?;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none()
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || value.len() > 300
    {
        return Err(bad());
    }
    Ok(value.to_owned())
}

/// `PATCH /account/mail` (see the module docs).
///
/// # Errors
/// 404 without mail; 401/403 for others than administrators; 422 for a bad value.
pub async fn update(State(desk): State<MailDesk>, Admin(ctx): Admin) -> Result<Response, AppError> {
    if !desk.mailer.is_on() {
        return Err(AppError::NotFound);
    }
    let site_url = site_url(ctx.form.get("mail[site_url]").unwrap_or(""))?;
    let digest_hour = ctx
        .form
        .get("mail[digest_hour]")
        .and_then(|h| h.trim().parse::<u8>().ok())
        .filter(|h| *h < 24)
        .ok_or_else(|| AppError::Unprocessable("mail[digest_hour] must be 0 to 23".into()))?;
    mail_settings::set(
        &desk.pool,
        &MailSettings {
            site_url,
            digest_hour,
        },
    )
    .await?;
    Ok(found_with("/account/edit", Notice::Saved, ctx.secure))
}

/// `POST /account/mail/test_email` (see the module docs).
///
/// # Errors
/// 404 without mail; 401/403 for others than administrators; 422 when the administrator has
/// no address, or with the SMTP server's answer (or its silence) when it did not take the
/// letter ([`crate::mail::Mailer::send_now`]).
pub async fn test_email(
    State(desk): State<MailDesk>,
    Admin(ctx): Admin,
) -> Result<Response, AppError> {
    let server = desk.mailer.server_shown().ok_or(AppError::NotFound)?;
    let user = ctx.require_user()?;
    let address = user
        .email_address
        .as_deref()
        .ok_or_else(|| AppError::Unprocessable("you have no e-mail address".into()))?;
    let account = crate::db::accounts::settings(&desk.pool).await?;
    let to = crate::letters::To {
        address,
        name: &user.name,
    };
    let letter = crate::letters::test(to, &account.name, &server)?;
    desk.mailer
        .send_now(letter)
        .await
        .map_err(|why| AppError::Unprocessable(format!("The test e-mail was not sent: {why}")))?;
    tracing::info!(user_id = user.id, "test e-mail sent");
    Ok(found_with(
        "/account/edit",
        Notice::TestMailSent,
        ctx.secure,
    ))
}
