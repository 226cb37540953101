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
    if is_blank(value) {
        return Err(AppError::Unprocessable(format!("{name} can't be blank")));
    }
    optional(form, name, max_chars)
}

/// Whether `value` shows nothing: empty, or only whitespace and [`is_invisible`] characters.
pub fn is_blank(value: &str) -> bool {
    value.chars().all(|c| c.is_whitespace() || is_invisible(c))
}

/// Whether `c` shows nothing on its own although it is no whitespace: the fillers and
/// zero-width characters (U+00AD soft hyphen, U+034F, U+115F, U+1160, U+17B4, U+17B5,
/// U+180B–U+180F, U+200B–U+200F, U+2060–U+206F, U+3164 Hangul filler, U+FE00–U+FE0F
/// variation selectors, U+FEFF, U+FFA0, U+1D173–U+1D17A, U+E0000–U+E0FFF tags): a required
/// value made only of them and whitespace reads as blank (a name nobody can see).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
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
