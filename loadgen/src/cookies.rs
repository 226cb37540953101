//! A per-user cookie jar, as much of RFC 6265 as a single-host load generator needs.
//!
//! Campfire's login binds the CSRF token to the Rails session cookie (`_campfire_session`; Hearth
//! calls it `_hearth_session`) set by `GET /session/new`, and `POST /session` then sets the
//! `session_token` cookie that authenticates both HTTP requests and the `/cable` upgrade
//! (`app/controllers/concerns/authentication.rb`, `app/channels/application_cable/connection.rb`).
//! So each simulated user keeps one jar, stores every `Set-Cookie` it receives and sends all of
//! its cookies back.
//!
//! Simplifications (one host, one path tree): the `Domain`, `Path`, `Secure`, `HttpOnly` and
//! `SameSite` attributes are ignored; a cookie is deleted when `Max-Age` is zero or negative or
//! `Expires` lies in 1970 (how Rails deletes cookies). Values are kept byte for byte, so
//! URL-escaped signed values go back exactly as they came (RFC 6265 §5.4).

use std::fmt;

/// One user's cookies, in the order first set. Names are case-sensitive (RFC 6265 §5.3).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CookieJar {
    entries: Vec<(String, String)>,
}

/// A `Set-Cookie` header value without a `name=value` pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieError(pub String);

impl fmt::Display for CookieError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed Set-Cookie header: {:?}", self.0)
    }
}

impl std::error::Error for CookieError {}

impl CookieJar {
    /// An empty jar.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a jar from a `Cookie` request header value such as `user=alice; theme=dark`
    /// (used by `fanout-only --cookie`). Pairs without `=` are skipped.
    pub fn from_header(header: &str) -> Self {
        let mut jar = Self::new();
        for pair in header.split(';') {
            if let Some((name, value)) = pair.trim().split_once('=') {
                if !name.trim().is_empty() {
                    jar.set(name.trim(), value.trim());
                }
            }
        }
        jar
    }

    /// Stores one `Set-Cookie` header value (RFC 6265 §5.2): the first `name=value` pair sets or
    /// replaces the cookie; `Max-Age<=0` or an `Expires` date in 1970 deletes it.
    ///
    /// Errors: [`CookieError`] when the value has no `name=value` pair or an empty name.
    pub fn store(&mut self, set_cookie: &str) -> Result<(), CookieError> {
        let mut parts = set_cookie.split(';');
        let pair = parts.next().unwrap_or("");
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| CookieError(set_cookie.to_owned()))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(CookieError(set_cookie.to_owned()));
        }
        let value = value.trim();
        let mut delete = false;
        for attr in parts {
            let (key, val) = attr.split_once('=').unwrap_or((attr, ""));
            let key = key.trim();
            if key.eq_ignore_ascii_case("max-age") {
                if val.trim().parse::<i64>().map(|s| s <= 0).unwrap_or(false) {
                    delete = true;
                }
            } else if key.eq_ignore_ascii_case("expires") && val.contains("1970") {
                delete = true;
            }
        }
        if delete {
            self.entries.retain(|(n, _)| n != name);
        } else {
            self.set(name, value);
        }
        Ok(())
    }

    /// Sets or replaces a cookie directly.
    pub fn set(&mut self, name: &str, value: &str) {
        match self.entries.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = value.to_owned(),
            None => self.entries.push((name.to_owned(), value.to_owned())),
        }
    }

    /// The value of the cookie `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Number of cookies held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the jar holds no cookie.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `Cookie` request header value, `a=1; b=2` (RFC 6265 §5.4), or `None` when empty.
    pub fn header(&self) -> Option<String> {
        if self.entries.is_empty() {
            return None;
        }
        let mut out = String::new();
        for (i, (n, v)) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push_str("; ");
            }
            out.push_str(n);
            out.push('=');
            out.push_str(v);
        }
        Some(out)
    }

    /// The cookie names, for error messages (values are credentials and are never printed).
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|(n, _)| n.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_replaces_and_sends_back_all_cookies() {
        let mut jar = CookieJar::new();
        jar.store("_hearth_session=abc%3D%3D--12; path=/; HttpOnly; SameSite=Lax")
            .unwrap();
        jar.store("session_token=tok1; path=/; HttpOnly; SameSite=Lax")
            .unwrap();
        assert_eq!(
            jar.header().unwrap(),
            "_hearth_session=abc%3D%3D--12; session_token=tok1"
        );
        jar.store("_hearth_session=def; path=/").unwrap();
        assert_eq!(jar.get("_hearth_session"), Some("def"));
        assert_eq!(jar.len(), 2);
        assert_eq!(jar.names(), vec!["_hearth_session", "session_token"]);
    }

    #[test]
    fn deletes_on_max_age_zero_and_epoch_expiry() {
        let mut jar = CookieJar::from_header("a=1; b=2; c=3");
        jar.store("a=; path=/; max-age=0").unwrap();
        jar.store("b=; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT")
            .unwrap();
        assert_eq!(jar.header().unwrap(), "c=3");
        jar.store("c=; Max-Age=-1").unwrap();
        assert!(jar.is_empty());
        assert_eq!(jar.header(), None);
    }

    #[test]
    fn rejects_values_without_a_pair() {
        let mut jar = CookieJar::new();
        assert!(jar.store("garbage").is_err());
        assert!(jar.store("=value").is_err());
        assert!(jar.is_empty());
    }

    #[test]
    fn parses_cookie_request_headers() {
        let jar = CookieJar::from_header("user=alice;  other = x ; junk");
        assert_eq!(jar.get("user"), Some("alice"));
        assert_eq!(jar.get("other"), Some("x"));
        assert_eq!(jar.len(), 2);
    }
}
