//! What the sign-in page offers besides the password form, and when a password is not enough:
//! the single sign-on button's name and the account's "passwords for administrators only"
//! (docs/sso.md). Read by the sign-in form ([`super::sessions`]) and single sign-on
//! ([`super::sso`]).

use crate::db::sso as store;
use crate::oidc::{Provider, Sso};
use crate::web::error::AppError;

/// The name on the sign-in page's button, when single sign-on is configured: the account's
/// `provider_name`, else the issuer's host.
///
/// # Errors
/// A database failure.
pub async fn button_label(pool: &sqlx::SqlitePool, sso: &Sso) -> Result<Option<String>, AppError> {
    let Some(provider) = sso.provider() else {
        return Ok(None);
    };
    let settings = store::settings(pool).await?;
    Ok(Some(label(&settings, provider)))
}

/// The provider's name as the account calls it, else the issuer's host.
pub fn label(settings: &store::Settings, provider: &Provider) -> String {
    if settings.provider_name.trim().is_empty() {
        url::Url::parse(provider.issuer())
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| "single sign-on".to_owned())
    } else {
        settings.provider_name.trim().to_owned()
    }
}

/// Whether a password sign-in of `user` is refused: single sign-on is configured, the account
/// keeps passwords for administrators only, and `user` is not one.
///
/// # Errors
/// A database failure.
pub async fn refuses_password(
    pool: &sqlx::SqlitePool,
    sso: &Sso,
    user: &crate::db::users::User,
) -> Result<bool, AppError> {
    if sso.provider().is_none() || user.role == crate::db::Role::Administrator {
        return Ok(false);
    }
    Ok(store::settings(pool)
        .await?
        .passwords_for_administrators_only)
}

/// What a person refused a password (or a code, or a reset link) is told, naming the button's
/// `label` when known.
pub fn passwords_refused(label: Option<&str>) -> String {
    format!(
        "Passwords are for administrators only here: sign in with {}.",
        label.unwrap_or("single sign-on")
    )
}
