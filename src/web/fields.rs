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
    if value.chars().count() > max_chars {
        return Err(AppError::Unprocessable(format!(
            "{name} is too long (at most {max_chars} characters)"
        )));
    }
    Ok(value.to_owned())
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
