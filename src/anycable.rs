//! AnyCable's broadcast API, so an app using anycable-rails can broadcast into Hearth
//! unchanged: the publication JSON (`{"stream":"<name>","data":"<JSON text>"}` or an array of
//! them, AnyCable's `docs/broadcasting.md`) and the remote disconnect command
//! (`{"command":"disconnect","payload":{"identifier":"<identifiers JSON>","reconnect":<bool>}}`,
//! anycable-rails' `RemoteConnection#disconnect`), received on `POST /_broadcast` with a bearer
//! key or on AnyCable's Redis channel (`redis_channel`, default `__anycable__`, scoped by the
//! channel prefix: see [`redis_channel`]), and the default broadcast key derivation.
//!
//! `data` is the already JSON-encoded message (what Rails' adapters publish); it becomes the
//! `message` of the Action Cable frame as it is. A publication whose `data` is not one JSON
//! value is dropped whole, never spliced half-way. `meta` (e.g. `exclude_socket`) is ignored.

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use sha2::Sha256;

/// AnyCable's default `redis_channel`, the channel its broadcasters publish on.
pub const REDIS_CHANNEL: &str = "__anycable__";

/// The Redis channel a node listens to for AnyCable broadcasts: `configured` when set
/// (`--anycable-redis-channel`), else [`REDIS_CHANNEL`] under the deployment's channel prefix
/// (`<prefix>:__anycable__`, or `__anycable__` without a prefix), so that deployments sharing
/// one Redis with different prefixes never receive each other's publications.
pub fn redis_channel(configured: Option<&str>, channel_prefix: &str) -> String {
    match configured.filter(|c| !c.is_empty()) {
        Some(channel) => channel.to_owned(),
        None if channel_prefix.is_empty() => REDIS_CHANNEL.to_owned(),
        None => format!("{channel_prefix}:{REDIS_CHANNEL}"),
    }
}

/// What one AnyCable broadcast body asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// Broadcast each publication.
    Publications(Vec<Publication>),
    /// Close the connections of a user (anycable-rails' remote disconnect).
    Disconnect {
        /// The connection identifier: for Campfire's `identified_by :current_user`, the
        /// user's GlobalID param (taken from the identifiers JSON's `current_user`).
        identifier: String,
        /// The identifiers as sent (an app's connection identifiers under `--rpc-url`).
        identifiers: String,
        /// Whether the client may reconnect (default true).
        reconnect: bool,
    },
}

#[derive(Deserialize)]
struct Command {
    command: String,
    #[serde(default)]
    payload: serde_json::Value,
}

/// Parses a broadcast body: a remote disconnect command, or publications ([`parse`]).
///
/// # Errors
/// [`PublicationError`] for a body of neither shape (an unknown command is refused too).
pub fn parse_message(body: &[u8]) -> Result<Message, PublicationError> {
    if let Ok(command) = serde_json::from_slice::<Command>(body) {
        if command.command != "disconnect" {
            return Err(PublicationError::Command(command.command));
        }
        // Without one (or with an empty one), it names no connection: an app's connections
        // accepted without identifiers have empty ones, and must not all be closed.
        let identifiers = command
            .payload
            .get("identifier")
            .and_then(serde_json::Value::as_str)
            .filter(|i| !i.is_empty())
            .ok_or(PublicationError::NoIdentifier)?;
        // anycable-rails sends the identifiers as JSON (`{"current_user":"gid://…"}`); a bare
        // GlobalID is taken as it is.
        let identifier = serde_json::from_str::<serde_json::Value>(identifiers)
            .ok()
            .and_then(|v| v.get("current_user")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| identifiers.to_owned());
        let reconnect = command
            .payload
            .get("reconnect")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(true);
        return Ok(Message::Disconnect {
            identifier,
            identifiers: identifiers.to_owned(),
            reconnect,
        });
    }
    parse(body).map(Message::Publications)
}

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
    /// A command other than `disconnect`.
    #[error("unknown AnyCable command {0:?}")]
    Command(String),
    /// A `disconnect` command whose `payload.identifier` is missing, empty or not a string.
    #[error("a disconnect command without an identifier")]
    NoIdentifier,
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

/// Whether an `Authorization` header value is `Bearer <key>` (the scheme in any case, the key
/// compared in constant time): the one bearer check of `/_broadcast`, `/metrics` and the
/// internal endpoint.
pub fn bearer_matches(header: Option<&str>, key: &str) -> bool {
    // The scheme is case-insensitive (RFC 7235, section 2.1).
    let Some(given) = header
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, given)| given)
    else {
        return false;
    };
    // A key configured with spaces around it is the key without them, as a given one is.
    let key = key.trim();
    !key.is_empty() && subtle::ConstantTimeEq::ct_eq(given.trim().as_bytes(), key.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_configured_with_spaces_around_it_matches_without_them() {
        assert!(bearer_matches(Some("Bearer k1"), " k1 "));
        assert!(bearer_matches(Some("bearer  k1 "), "k1"));
        assert!(!bearer_matches(Some("Bearer k2"), " k1 "));
        assert!(!bearer_matches(Some("Bearer "), "  "));
    }

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
    fn remote_disconnect_commands() {
        let body = br#"{"command":"disconnect","payload":{"identifier":"{\"current_user\":\"Z2lkOi8vY2FtcGZpcmUvVXNlci8x\"}","reconnect":false}}"#;
        assert_eq!(
            parse_message(body).expect("a command"),
            Message::Disconnect {
                identifier: "Z2lkOi8vY2FtcGZpcmUvVXNlci8x".into(),
                identifiers: r#"{"current_user":"Z2lkOi8vY2FtcGZpcmUvVXNlci8x"}"#.into(),
                reconnect: false
            }
        );
        assert!(parse_message(br#"{"command":"other","payload":{}}"#).is_err());
        for body in [
            r#"{"command":"disconnect","payload":{}}"#,
            r#"{"command":"disconnect","payload":{"identifier":""}}"#,
            r#"{"command":"disconnect","payload":{"identifier":7}}"#,
        ] {
            assert!(
                matches!(
                    parse_message(body.as_bytes()),
                    Err(PublicationError::NoIdentifier)
                ),
                "{body}"
            );
        }
        assert!(matches!(
            parse_message(br#"{"stream":"a","data":"1"}"#),
            Ok(Message::Publications(_))
        ));
        assert_eq!(redis_channel(None, ""), "__anycable__");
        assert_eq!(redis_channel(None, "one"), "one:__anycable__");
        assert_eq!(redis_channel(Some("mine"), "one"), "mine");
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
        assert!(bearer_matches(Some(&format!("bearer {key}")), &key));
    }
}
