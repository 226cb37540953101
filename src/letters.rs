//! What the app says by mail: each letter's text and HTML parts, rendered from the askama
//! templates under `templates/mail/` (the HTML in the app's look, with inline styles, since
//! mail clients drop stylesheets) into a [`Letter`] for [`crate::mail::Mailer::send`].

use askama::Template;

use crate::mail::Letter;

/// The sign-in code letter.
#[derive(Template)]
#[template(path = "mail/code.html")]
struct CodeHtml<'a> {
    account_name: &'a str,
    code: &'a str,
}

#[derive(Template)]
#[template(path = "mail/code.txt")]
struct CodeText<'a> {
    account_name: &'a str,
    code: &'a str,
}

#[derive(Template)]
#[template(path = "mail/reset.html")]
struct ResetHtml<'a> {
    account_name: &'a str,
    email_address: &'a str,
    url: &'a str,
}

#[derive(Template)]
#[template(path = "mail/reset.txt")]
struct ResetText<'a> {
    account_name: &'a str,
    email_address: &'a str,
    url: &'a str,
}

#[derive(Template)]
#[template(path = "mail/test.html")]
struct TestHtml<'a> {
    account_name: &'a str,
    server: &'a str,
    requested_by: &'a str,
}

#[derive(Template)]
#[template(path = "mail/test.txt")]
struct TestText<'a> {
    account_name: &'a str,
    server: &'a str,
    requested_by: &'a str,
}

/// One item of a digest, ready to show.
#[derive(Clone, Debug)]
pub struct DigestItem {
    /// The author's name.
    pub author: String,
    /// The room's name (empty for a direct room).
    pub room: String,
    /// Whether it is a direct message.
    pub direct: bool,
    /// When it was posted, in the reader's time zone (`Mon 7 Dec, 09:15`).
    pub at: String,
    /// The message's text, cut to a few hundred characters.
    pub text: String,
    /// The link to the message.
    pub url: String,
}

/// A digest: what the reader missed in a period.
#[derive(Clone, Debug)]
pub struct Digest<'a> {
    /// The account's name.
    pub account_name: &'a str,
    /// The period, as words (`Mon 7 Dec, 08:00 to Tue 8 Dec, 08:00 (Europe/Paris)`).
    pub period: &'a str,
    /// `hourly` or `daily`.
    pub frequency: &'a str,
    /// The items, oldest first.
    pub items: &'a [DigestItem],
    /// The one-click unsubscribe URL (also `List-Unsubscribe`).
    pub unsubscribe_url: &'a str,
}

#[derive(Template)]
#[template(path = "mail/digest.html")]
struct DigestHtml<'a> {
    account_name: &'a str,
    period: &'a str,
    frequency: &'a str,
    items: &'a [DigestItem],
    unsubscribe_url: &'a str,
}

#[derive(Template)]
#[template(path = "mail/digest.txt")]
struct DigestText<'a> {
    account_name: &'a str,
    period: &'a str,
    frequency: &'a str,
    items: &'a [DigestItem],
    unsubscribe_url: &'a str,
}

/// Who a letter goes to.
#[derive(Clone, Copy, Debug)]
pub struct To<'a> {
    /// The address.
    pub address: &'a str,
    /// The name.
    pub name: &'a str,
}

fn letter(to: To<'_>, subject: String, text: String, html: String) -> Letter {
    Letter {
        to: to.address.to_owned(),
        to_name: to.name.to_owned(),
        subject,
        text,
        html,
        unsubscribe: None,
    }
}

/// The letter carrying a sign-in `code`.
///
/// # Errors
/// A template failed to render.
pub fn sign_in_code(to: To<'_>, account_name: &str, code: &str) -> askama::Result<Letter> {
    Ok(letter(
        to,
        format!("{code} is your {account_name} sign-in code"),
        CodeText { account_name, code }.render()?,
        CodeHtml { account_name, code }.render()?,
    ))
}

/// The letter carrying a password-reset link `url`.
///
/// # Errors
/// A template failed to render.
pub fn password_reset(to: To<'_>, account_name: &str, url: &str) -> askama::Result<Letter> {
    let email_address = to.address;
    Ok(letter(
        to,
        format!("Reset your {account_name} password"),
        ResetText {
            account_name,
            email_address,
            url,
        }
        .render()?,
        ResetHtml {
            account_name,
            email_address,
            url,
        }
        .render()?,
    ))
}

/// The administrator's test letter, sent through `server`.
///
/// # Errors
/// A template failed to render.
pub fn test(to: To<'_>, account_name: &str, server: &str) -> askama::Result<Letter> {
    let requested_by = to.name;
    Ok(letter(
        to,
        format!("Test e-mail from {account_name}"),
        TestText {
            account_name,
            server,
            requested_by,
        }
        .render()?,
        TestHtml {
            account_name,
            server,
            requested_by,
        }
        .render()?,
    ))
}

/// A digest letter, with RFC 8058 one-click unsubscribe.
///
/// # Errors
/// A template failed to render.
pub fn digest(to: To<'_>, d: &Digest<'_>) -> askama::Result<Letter> {
    let n = d.items.len();
    let subject = format!(
        "{n} unread {} on {}",
        if n == 1 { "message" } else { "messages" },
        d.account_name
    );
    let mut letter = letter(
        to,
        subject,
        DigestText {
            account_name: d.account_name,
            period: d.period,
            frequency: d.frequency,
            items: d.items,
            unsubscribe_url: d.unsubscribe_url,
        }
        .render()?,
        DigestHtml {
            account_name: d.account_name,
            period: d.period,
            frequency: d.frequency,
            items: d.items,
            unsubscribe_url: d.unsubscribe_url,
        }
        .render()?,
    );
    letter.unsubscribe = Some(d.unsubscribe_url.to_owned());
    Ok(letter)
}
