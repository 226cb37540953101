//! The account page's single sign-on settings that are not secrets (administrators only; the
//! issuer, client id and secret are flags, docs/sso.md):
//!
//! - `PATCH`/`PUT /account/sso` with `sso[provider_name]` (at most 50 characters; empty: the
//!   issuer's host), `sso[allowed_domains]` (domains separated by commas, spaces or lines;
//!   empty: any) and `sso[passwords_for_administrators_only]` (`0`/`1`, a checkbox after a
//!   hidden `0`): 302 to `/account/edit` with the "Saved" notice; 404 while single sign-on is
//!   not configured, 403 for members, 422 for a bad domain (naming it) or an over-long name.

use axum::extract::State;
use axum::response::Response;

use crate::db::sso::{self as store, Settings};
use crate::oidc::Sso;
use crate::web::error::AppError;
use crate::web::extract::Admin;
use crate::web::sso::SsoHandle;

/// The longest provider name, in characters.
pub const MAX_PROVIDER_NAME_CHARS: usize = 50;

/// What the account page's single sign-on block shows (`templates/accounts/_sso.html`).
#[derive(Clone, Debug)]
pub struct SsoSettingsView {
    /// The issuer (a flag, shown read-only).
    pub issuer: String,
    /// The client id (a flag, shown read-only).
    pub client_id: String,
    /// The redirect URI to register at the provider (this site's callback URL).
    pub redirect_uri: String,
    /// The settings as saved.
    pub settings: Settings,
    /// The allowed domains, one per line, for the text area.
    pub allowed_domains: String,
}

/// The block's contents on the site at `origin` (`scheme://host`), None while single sign-on
/// is not configured.
///
/// # Errors
/// A database failure.
pub async fn view(
    pool: &sqlx::SqlitePool,
    sso: &Sso,
    origin: &str,
) -> Result<Option<SsoSettingsView>, AppError> {
    let Some(provider) = sso.provider() else {
        return Ok(None);
    };
    let settings = store::settings(pool).await?;
    Ok(Some(SsoSettingsView {
        issuer: provider.issuer().to_owned(),
        client_id: provider.client_id().to_owned(),
        redirect_uri: format!("{origin}{}", crate::web::sso::CALLBACK_PATH),
        allowed_domains: settings.allowed_domains.join("\n"),
        settings,
    }))
}

/// `PATCH`/`PUT /account/sso` (see the module docs).
pub async fn update(
    State(handle): State<SsoHandle>,
    Admin(ctx): Admin,
) -> Result<Response, AppError> {
    if handle.sso().provider().is_none() {
        return Err(AppError::NotFound);
    }
    let provider_name = ctx.form.get("sso[provider_name]").unwrap_or("").trim();
    if provider_name.chars().count() > MAX_PROVIDER_NAME_CHARS {
        return Err(AppError::Unprocessable(format!(
            "sso[provider_name] must be at most {MAX_PROVIDER_NAME_CHARS} characters"
        )));
    }
    let allowed_domains = store::parse_domains(ctx.form.get("sso[allowed_domains]").unwrap_or(""))
        .map_err(|bad| {
            AppError::Unprocessable(format!(
                "sso[allowed_domains]: {bad:?} is not a domain name"
            ))
        })?;
    let key = "sso[passwords_for_administrators_only]";
    let passwords = match ctx.form.get_all(key).last() {
        None | Some("0" | "false" | "") => false,
        Some("1" | "true" | "on") => true,
        Some(_) => return Err(AppError::Unprocessable(format!("{key} must be 0 or 1"))),
    };
    let settings = Settings {
        provider_name: provider_name.to_owned(),
        allowed_domains,
        passwords_for_administrators_only: passwords,
    };
    store::save(handle.pool(), &settings).await?;
    Ok(crate::web::flash::found_with(
        "/account/edit",
        crate::web::flash::Notice::Saved,
        ctx.secure,
    ))
}

/// The route of the settings.
pub fn routes() -> axum::Router<crate::state::SharedState> {
    axum::Router::new().route("/account/sso", axum::routing::patch(update).put(update))
}
