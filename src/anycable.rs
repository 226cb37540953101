//! AnyCable's broadcast API, so an app using anycable-rails can broadcast into Hearth
//! unchanged: the publication JSON (`{"stream":"<name>","data":"<JSON text>"}` or an array of
//! them, AnyCable's `docs/broadcasting.md`), received on `POST /_broadcast` with a bearer key
//! or on the `__anycable__` Redis channel, and the default broadcast key derivation.
//!
//! `data` is the already JSON-encoded message (what Rails' adapters publish); it becomes the
//! `message` of the Action Cable frame as it is. A publication whose `data` is not one JSON
//! value is dropped whole, never spliced half-way. `meta` (e.g. `exclude_socket`) is ignored.

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use sha2::Sha256;

/// The Redis channel AnyCable's broadcasters publish on (never prefixed).
pub const REDIS_CHANNEL: &str = "__anycable__";

/// One publication: the stream and the message's JSON text.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Publication {
    /// The broadcasting (stream name).
    pub stream: String,
    /// The message as JSON text (the `message` of the client frame).
    pub data: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Body {
    One(Publication),
    Many(Vec<Publication>),
}

/// Why a body was refused.
#[derive(Debug, thiserror::Error)]
pub enum PublicationError {
    /// Not a publication object nor an array of them.
    #[error("not an AnyCable publication: {0}")]
    Shape(#[from] serde_json::Error),
    /// A publication's `data` is not one JSON value.
    #[error("publication data for stream {stream:?} is not JSON")]
    Data {
        /// The stream it was meant for.
        stream: String,
    },
}

/// Parses a publication body (one object or an array) and checks that each `data` is one JSON
/// value. All or nothing: one bad publication refuses the whole body.
///
/// # Errors
/// [`PublicationError`] for a body of another shape or a `data` that is not JSON.
pub fn parse(body: &[u8]) -> Result<Vec<Publication>, PublicationError> {
    let publications = match serde_json::from_slice::<Body>(body)? {
        Body::One(p) => vec![p],
        Body::Many(ps) => ps,
    };
    for p in &publications {
        if !is_json(p.data.as_bytes()) {
            return Err(PublicationError::Data {
                stream: p.stream.clone(),
            });
        }
    }
    Ok(publications)
}

/// Whether `bytes` is exactly one JSON value (UTF-8, surrounding whitespace allowed): what may
/// be spliced as the `message` of a frame.
pub fn is_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// AnyCable's default broadcast key: HMAC-SHA256 of `"broadcast-cable"` keyed with `secret`,
/// as lowercase hex (64 characters).
pub fn broadcast_key(secret: &str) -> String {
    // HMAC takes keys of any length: the `else` is never taken.
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(b"broadcast-cable");
    hex::encode(mac.finalize().into_bytes())
}

/// Whether an `Authorization` header value is `Bearer <key>` (compared in constant time).
pub fn bearer_matches(header: Option<&str>, key: &str) -> bool {
    let Some(given) = header.and_then(|h| h.strip_prefix("Bearer ")) else {
        return false;
    };
    !key.is_empty() && subtle::ConstantTimeEq::ct_eq(given.trim().as_bytes(), key.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_or_many_publications() {
        let one = parse(br#"{"stream":"chat","data":"{\"a\":1}"}"#).expect("one");
        assert_eq!(one[0].stream, "chat");
        assert_eq!(one[0].data, r#"{"a":1}"#);
        let many = parse(br#"[{"stream":"a","data":"\"x\""},{"stream":"b","data":"2","meta":{}}]"#)
            .expect("many");
        assert_eq!(many.len(), 2);
    }

    #[test]
    fn bad_bodies_are_refused_whole() {
        assert!(parse(b"").is_err());
        assert!(parse(b"{\"stream\":\"a\"}").is_err());
        assert!(parse(br#"[{"stream":"a","data":"1"},{"stream":"b","data":"{"}]"#).is_err());
        assert!(parse(br#"{"stream":"a","data":"1 2"}"#).is_err());
    }

    #[test]
    fn key_and_bearer() {
        let key = broadcast_key("s3cr3t");
        assert_eq!(key.len(), 64);
        assert_eq!(key, broadcast_key("s3cr3t"));
        assert_ne!(key, broadcast_key("other"));
        assert!(bearer_matches(Some(&format!("Bearer {key}")), &key));
        assert!(!bearer_matches(Some("Bearer nope"), &key));
        assert!(!bearer_matches(None, &key));
        assert!(!bearer_matches(Some(&key), &key));
    }
}
