//! What of mail the sign-in page offers (`templates/sessions/_mail_sign_in.html`): "Email me
//! a code" with `--smtp-url`, and "Forgot password?" once the account has a site address too
//! (the routes are in the sibling module `mail_sign_in`).

use crate::render::MailOnPage;

/// What the sign-in page offers on this server now.
///
/// # Errors
/// A database failure.
pub async fn on_page(
    pool: &sqlx::SqlitePool,
    mailer: &crate::mail::Mailer,
) -> sqlx::Result<MailOnPage> {
    if !mailer.is_on() {
        return Ok(MailOnPage::default());
    }
    let settings = crate::db::mail_settings::get(pool).await?;
    Ok(MailOnPage {
        codes: true,
        reset: !settings.site_url.is_empty(),
    })
}
