//! Form fields with limits: every text a person types is trimmed and measured in characters,
//! and a missing, blank or oversize value is a 422 that names the field.

use super::error::AppError;
use super::form::Form;

/// Longest name of a person or bot, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Longest bio, in characters.
pub const MAX_BIO_CHARS: usize = 1_000;
/// Longest e-mail address, in bytes (RFC 5321's path limit).
pub const MAX_EMAIL_BYTES: usize = 254;

/// The trimmed value of `name`, required (1 to `max_chars` characters).
///
/// # Errors
/// 422 when missing, blank or longer than `max_chars`.
pub fn required(form: &Form, name: &str, max_chars: usize) -> Result<String, AppError> {
    let value = form.get(name).unwrap_or("").trim();
    if value.is_empty() {
        return Err(AppError::Unprocessable(format!("{name} can't be blank")));
    }
    optional(form, name, max_chars)
}

/// The trimmed value of `name`, possibly empty (at most `max_chars` characters).
///
/// # Errors
/// 422 when longer than `max_chars`.
pub fn optional(form: &Form, name: &str, max_chars: usize) -> Result<String, AppError> {
    let value = form.get(name).unwrap_or("").trim();
    refuse_unsafe_chars(name, value)?;
    if value.chars().count() > max_chars {
        return Err(AppError::Unprocessable(format!(
            "{name} is too long (at most {max_chars} characters)"
        )));
    }
    Ok(value.to_owned())
}

/// Whether `c` is a character no typed name or bio needs and a hostile one uses: NUL and
/// the other C0/C1 controls except tab and line breaks (they truncate or garble text in
/// logs, terminals and other clients), and the bidirectional embeddings, overrides and
/// isolates (U+202A–U+202E, U+2066–U+2069) that make a name display as something else
/// (CVE-2021-42574's "Trojan Source"). The plain marks U+200E/U+200F stay allowed.
pub fn is_unsafe_char(c: char) -> bool {
    (c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// 422 naming `name` when `value` holds an [`is_unsafe_char`].
///
/// # Errors
/// 422 as described.
pub fn refuse_unsafe_chars(name: &str, value: &str) -> Result<(), AppError> {
    if value.chars().any(is_unsafe_char) {
        return Err(AppError::Unprocessable(format!(
            "{name} must not contain control or bidirectional override characters"
        )));
    }
    Ok(())
}

/// A required e-mail address: one `@` with text on both sides, no spaces, at most
/// [`MAX_EMAIL_BYTES`]; lower-cased.
///
/// # Errors
/// 422 otherwise.
pub fn email(form: &Form, name: &str) -> Result<String, AppError> {
    let value = form.get(name).unwrap_or("").trim().to_lowercase();
    let valid = value.len() <= MAX_EMAIL_BYTES
        && !value.chars().any(char::is_whitespace)
        && value.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && !domain.is_empty() && !domain.contains('@')
        });
    if valid {
        Ok(value)
    } else {
        Err(AppError::Unprocessable(format!(
            "{name} must be an e-mail address"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> Form {
        Form::parse(loadgen::http::form_urlencode(pairs).as_bytes()).expect("a valid form")
    }

    #[test]
    fn limits_are_enforced() {
        let f = form(&[("n", "  Ada  "), ("long", &"é".repeat(101)), ("e", "A@B.c")]);
        assert_eq!(required(&f, "n", 100).unwrap(), "Ada");
        assert!(required(&f, "missing", 100).is_err());
        assert!(required(&f, "long", 100).is_err());
        assert_eq!(optional(&f, "missing", 10).unwrap(), "");
        assert_eq!(email(&f, "e").unwrap(), "a@b.c");
        assert!(email(&form(&[("e", "nope")]), "e").is_err());
        assert!(email(&form(&[("e", "a b@c")]), "e").is_err());
    }
}
