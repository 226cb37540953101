//! The `Cookie` request header, read as bytes, and the `Set-Cookie` values Hearth writes.
//!
//! Browsers send every cookie of the host, including those of other apps on it, and some of
//! those are not ASCII (`pref=café` arrives as the UTF-8 bytes, which `HeaderValue::to_str`
//! refuses). One such pair must not cost the others: [`parse_cookie_header`] splits the raw
//! bytes the way Rack 3 does (`Rack::Utils.parse_cookies_header`, rack/utils.rb) and skips only
//! what it cannot read:
//!
//! - pairs are separated by `;` (Rack 3 no longer splits on `,`), surrounding spaces and tabs
//!   are trimmed, empty pieces (a stray `;`) are skipped;
//! - a piece without `=`, with an empty name, or whose name or value is not UTF-8 is skipped;
//! - the first occurrence of a name wins (Rack keeps the first: the most specific path comes
//!   first, RFC 6265 §5.4);
//! - a value in double quotes (RFC 6265 §4.1.1 `DQUOTE *cookie-octet DQUOTE`) is unquoted.
//!
//! Values are kept as sent, still percent-escaped: Rack unescapes them, and Hearth's readers
//! do the same step themselves (the signed jar, [`crate::rails::SignedCookieJar::verify`],
//! percent-decodes; `last_room` is a plain integer), so a value is never decoded twice.
//!
//! The same parser serves the request context and the `/cable` handshake.

use axum::http::{header, HeaderMap, HeaderValue};

/// The cookies of every `Cookie` header of a request, as `(name, value)` pairs in header
/// order, each name once (see the module docs for what is skipped).
pub fn parse_cookies(headers: &HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for value in headers.get_all(header::COOKIE) {
        for (name, value) in parse_cookie_header(value.as_bytes()) {
            if !out.iter().any(|(n, _)| *n == name) {
                out.push((name, value));
            }
        }
    }
    out
}

/// The `(name, value)` pairs of one `Cookie` header value, given as raw bytes; duplicates
/// after the first occurrence and unreadable pairs are dropped (see the module docs).
pub fn parse_cookie_header(raw: &[u8]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for piece in raw.split(|b| *b == b';') {
        let piece = trim(piece);
        if piece.is_empty() {
            continue;
        }
        let Some(eq) = piece.iter().position(|b| *b == b'=') else {
            continue;
        };
        let name = trim(&piece[..eq]);
        let mut value = trim(&piece[eq + 1..]);
        if value.len() >= 2 && value.first() == Some(&b'"') && value.last() == Some(&b'"') {
            value = &value[1..value.len() - 1];
        }
        let (Ok(name), Ok(value)) = (std::str::from_utf8(name), std::str::from_utf8(value)) else {
            continue;
        };
        if name.is_empty() || out.iter().any(|(n, _)| n == name) {
            continue;
        }
        out.push((name.to_owned(), value.to_owned()));
    }
    out
}

fn trim(mut bytes: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = bytes {
        bytes = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = bytes {
        bytes = rest;
    }
    bytes
}

/// A `Set-Cookie` value: `name=value; path=/; [expires]; HttpOnly; SameSite=Lax; [Secure]`.
/// `value` must already be cookie-safe (signed values are percent-escaped by the jar);
/// `max_age_secs` makes the cookie persistent for that many seconds (as an `expires` date).
pub fn set_cookie(name: &str, value: &str, max_age_secs: Option<u64>, secure: bool) -> HeaderValue {
    let mut s = format!("{name}={value}; path=/");
    if let Some(secs) = max_age_secs {
        let expires = httpdate::fmt_http_date(
            std::time::SystemTime::now() + std::time::Duration::from_secs(secs),
        );
        s.push_str(&format!("; expires={expires}"));
    }
    s.push_str("; HttpOnly; SameSite=Lax");
    if secure {
        s.push_str("; Secure");
    }
    HeaderValue::from_str(&s).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A `Set-Cookie` value like [`set_cookie`]'s that lasts until `expires` (written as an HTTP
/// date, seconds truncated), as Rails writes a cookie given `expires:`: the signed session
/// cookie passes the same instant it put in its envelope
/// ([`crate::rails::signed_cookie::permanent_expiry`]).
pub fn set_cookie_until(
    name: &str,
    value: &str,
    expires: std::time::SystemTime,
    secure: bool,
) -> HeaderValue {
    let mut s = format!(
        "{name}={value}; path=/; expires={}; HttpOnly; SameSite=Lax",
        httpdate::fmt_http_date(expires)
    );
    if secure {
        s.push_str("; Secure");
    }
    HeaderValue::from_str(&s).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A `Set-Cookie` value that deletes cookie `name`.
pub fn delete_cookie(name: &str) -> HeaderValue {
    HeaderValue::from_str(&format!(
        "{name}=; path=/; max-age=0; expires=Thu, 01 Jan 1970 00:00:00 GMT"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(raw: &[u8]) -> Vec<(String, String)> {
        parse_cookie_header(raw)
    }

    fn p(n: &str, v: &str) -> (String, String) {
        (n.to_owned(), v.to_owned())
    }

    #[test]
    fn several_headers_keep_their_order() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; b=x%3D%3D--ff"),
        );
        h.append(header::COOKIE, HeaderValue::from_static("c=3; a=9"));
        assert_eq!(
            parse_cookies(&h),
            vec![p("a", "1"), p("b", "x%3D%3D--ff"), p("c", "3")]
        );
    }

    #[test]
    fn a_non_ascii_pair_costs_only_itself() {
        let raw = b"pref=caf\xC3\xA9; session_token=abc--01; junk=\xFF\xFE; x=1";
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, HeaderValue::from_bytes(raw).unwrap());
        assert_eq!(
            parse_cookies(&h),
            vec![
                p("pref", "caf\u{e9}"),
                p("session_token", "abc--01"),
                p("x", "1")
            ]
        );
    }

    #[test]
    fn first_duplicate_wins_quotes_go_stray_separators_are_skipped() {
        assert_eq!(
            pairs(b";; a=1;;b=\"two\" ; a=2; novalue; =orphan; c= ; d=\"\"; e=\""),
            vec![
                p("a", "1"),
                p("b", "two"),
                p("c", ""),
                p("d", ""),
                p("e", "\"")
            ]
        );
        assert_eq!(pairs(b"a=1, b=2"), vec![p("a", "1, b=2")]);
        assert_eq!(pairs(b"\t a = x=y \t"), vec![p("a", "x=y")]);
        assert!(pairs(b"").is_empty());
    }
}
