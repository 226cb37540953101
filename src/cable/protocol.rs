//! The Action Cable wire protocol: client commands in, server frames out.
//!
//! Server frames are written by hand in Rails' key order with ActiveSupport's JSON escaping,
//! so they equal what Rails sends byte for byte (`ActionCable::Connection::Base` and
//! `ActionCable::Channel::Base`):
//!
//! | frame | bytes |
//! |---|---|
//! | welcome | `{"type":"welcome"}` |
//! | ping | `{"type":"ping","message":1712345678}` |
//! | confirm | `{"identifier":"<identifier>","type":"confirm_subscription"}` |
//! | reject | `{"identifier":"<identifier>","type":"reject_subscription"}` |
//! | data | `{"identifier":"<identifier>","message":<payload>}` |
//! | disconnect | `{"type":"disconnect","reason":"unauthorized","reconnect":false}` |
//!
//! The identifier is the client's own string, kept as received and written back as a JSON
//! string: never re-serialized from parsed params.

use std::sync::Arc;

use bytes::Bytes;
use serde::Deserialize;

use crate::fanout::frame::Frame;
use crate::fanout::Variant;
use crate::rails::json::{write_json_string, JsonEscaping};

/// `{"type":"welcome"}`.
pub const WELCOME: &[u8] = br#"{"type":"welcome"}"#;

/// Disconnect reasons (`ActionCable::INTERNAL[:disconnect_reasons]`, plus AnyCable's
/// `too_slow`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisconnectReason {
    /// The connection could not be identified.
    Unauthorized,
    /// The server is stopping or restarting.
    ServerRestart,
    /// Closed from elsewhere (sign-out, deactivation).
    Remote,
    /// The client did not keep up with its outbound queue.
    TooSlow,
}

impl DisconnectReason {
    /// The reason's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unauthorized => "unauthorized",
            Self::ServerRestart => "server_restart",
            Self::Remote => "remote",
            Self::TooSlow => "too_slow",
        }
    }
}

/// `{"type":"disconnect","reason":"<reason>","reconnect":<bool>}`.
pub fn disconnect(reason: DisconnectReason, reconnect: bool) -> Vec<u8> {
    format!(
        r#"{{"type":"disconnect","reason":"{}","reconnect":{reconnect}}}"#,
        reason.as_str()
    )
    .into_bytes()
}

/// The last two frames of a connection the server ends: the `disconnect` notice, then a close
/// frame with code 1000 (what Rails' `Connection::Base#close` writes).
pub fn disconnect_frames(reason: DisconnectReason, reconnect: bool) -> [Frame; 2] {
    [
        Frame::text(&disconnect(reason, reconnect)),
        Frame::close(close_code::NORMAL, ""),
    ]
}

/// RFC 6455 §7.4.1 close codes Hearth sends.
pub mod close_code {
    /// Normal closure.
    pub const NORMAL: u16 = 1000;
    /// Protocol error.
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// Invalid frame payload data (e.g. a text frame that is not UTF-8).
    pub const INVALID_PAYLOAD: u16 = 1007;
    /// Message too big.
    pub const MESSAGE_TOO_BIG: u16 = 1009;
}

/// `{"type":"ping","message":<unix seconds>}`.
pub fn ping(unix_seconds: u64) -> Vec<u8> {
    format!(r#"{{"type":"ping","message":{unix_seconds}}}"#).into_bytes()
}

fn with_identifier(identifier: &str, tail: &[u8], escaping: JsonEscaping) -> Vec<u8> {
    let mut out = Vec::with_capacity(identifier.len() + tail.len() + 32);
    out.extend_from_slice(br#"{"identifier":"#);
    write_json_string(&mut out, identifier, escaping);
    out.extend_from_slice(tail);
    out
}

/// `{"identifier":"…","type":"confirm_subscription"}`.
pub fn confirm(identifier: &str, escaping: JsonEscaping) -> Vec<u8> {
    with_identifier(identifier, br#","type":"confirm_subscription"}"#, escaping)
}

/// `{"identifier":"…","type":"reject_subscription"}`.
pub fn reject(identifier: &str, escaping: JsonEscaping) -> Vec<u8> {
    with_identifier(identifier, br#","type":"reject_subscription"}"#, escaping)
}

/// `{"identifier":"…","message":<message>}` where `message` is already-encoded JSON.
pub fn data(identifier: &str, message: &[u8], escaping: JsonEscaping) -> Vec<u8> {
    let mut out = with_identifier(identifier, br#","message":"#, escaping);
    out.extend_from_slice(message);
    out.push(b'}');
    out
}

/// The fan-out variant of a subscription: frames are `prefix + message + suffix`, with
/// prefix `{"identifier":"…","message":` and suffix `}`. Subscriptions with the same
/// identifier string share one encoded frame per broadcast.
pub fn variant(identifier: &Arc<str>, escaping: JsonEscaping) -> Variant {
    Variant {
        key: identifier.clone(),
        prefix: Bytes::from(with_identifier(identifier, br#","message":"#, escaping)),
        suffix: Bytes::from_static(b"}"),
        positioned: false,
    }
}

/// A command frame from the client, before it is interpreted
/// (`{"command":"subscribe","identifier":"…"}`, `{"command":"message","identifier":"…","data":"…"}`).
#[derive(Debug, Deserialize, PartialEq, Eq)]
pub struct RawCommand {
    /// `subscribe`, `unsubscribe` or `message`.
    pub command: Option<String>,
    /// The subscription's identifier: a JSON object encoded as a string.
    pub identifier: Option<serde_json::Value>,
    /// For `message`: the action and its arguments, a JSON object encoded as a string.
    pub data: Option<serde_json::Value>,
}

/// A client command, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Subscribe to a channel; the identifier is kept exactly as received.
    Subscribe {
        /// The raw identifier string.
        identifier: Arc<str>,
    },
    /// Unsubscribe.
    Unsubscribe {
        /// The raw identifier string.
        identifier: Arc<str>,
    },
    /// Perform an action on a subscription.
    Message {
        /// The raw identifier string.
        identifier: Arc<str>,
        /// The raw data string (JSON object text).
        data: String,
    },
}

/// Why a client frame was not a valid command. Rails logs these and keeps the connection
/// open; so does Hearth.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommandError {
    /// Not JSON, or not a JSON object.
    #[error("malformed command: {0}")]
    Malformed(String),
    /// `command` missing or not one of subscribe/unsubscribe/message.
    #[error("unrecognized command: {0}")]
    UnknownCommand(String),
    /// `identifier` missing or not a string.
    #[error("missing identifier")]
    MissingIdentifier,
    /// `data` missing or not a string on a `message` command.
    #[error("missing data")]
    MissingData,
}

/// Parses one text frame into a [`Command`].
pub fn parse_command(text: &str) -> Result<Command, CommandError> {
    let raw: RawCommand =
        serde_json::from_str(text).map_err(|e| CommandError::Malformed(e.to_string()))?;
    let identifier = match raw.identifier {
        Some(serde_json::Value::String(s)) => Arc::<str>::from(s),
        _ => {
            return match raw.command.as_deref() {
                Some("subscribe" | "unsubscribe" | "message") => {
                    Err(CommandError::MissingIdentifier)
                }
                other => Err(CommandError::UnknownCommand(other.unwrap_or("").to_owned())),
            }
        }
    };
    match raw.command.as_deref() {
        Some("subscribe") => Ok(Command::Subscribe { identifier }),
        Some("unsubscribe") => Ok(Command::Unsubscribe { identifier }),
        Some("message") => match raw.data {
            Some(serde_json::Value::String(data)) => Ok(Command::Message { identifier, data }),
            _ => Err(CommandError::MissingData),
        },
        other => Err(CommandError::UnknownCommand(other.unwrap_or("").to_owned())),
    }
}

/// The params of an identifier (`{"channel":"…", …}`): None when the identifier is not a
/// JSON object or has no string `channel`.
pub fn identifier_params(
    identifier: &str,
) -> Option<(String, serde_json::Map<String, serde_json::Value>)> {
    let serde_json::Value::Object(map) = serde_json::from_str(identifier).ok()? else {
        return None;
    };
    let channel = map.get("channel")?.as_str()?.to_owned();
    Some((channel, map))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = r#"{"channel":"StreamChannel","stream":"room1"}"#;

    #[test]
    fn frames_match_the_rails_transcripts() {
        let esc = JsonEscaping::default();
        assert_eq!(
            String::from_utf8(confirm(ID, esc)).unwrap(),
            r#"{"identifier":"{\"channel\":\"StreamChannel\",\"stream\":\"room1\"}","type":"confirm_subscription"}"#
        );
        assert_eq!(
            String::from_utf8(reject(r#"{"channel":"RejectChannel"}"#, esc)).unwrap(),
            r#"{"identifier":"{\"channel\":\"RejectChannel\"}","type":"reject_subscription"}"#
        );
        assert_eq!(
            String::from_utf8(ping(1796004300)).unwrap(),
            r#"{"type":"ping","message":1796004300}"#
        );
        assert_eq!(
            String::from_utf8(disconnect(DisconnectReason::Unauthorized, false)).unwrap(),
            r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#
        );
        assert_eq!(
            String::from_utf8(data(ID, br#""just a string""#, esc)).unwrap(),
            r#"{"identifier":"{\"channel\":\"StreamChannel\",\"stream\":\"room1\"}","message":"just a string"}"#
        );
    }

    #[test]
    fn variant_wraps_like_data() {
        let id: Arc<str> = Arc::from(ID);
        let v = variant(&id, JsonEscaping::default());
        let mut framed = v.prefix.to_vec();
        framed.extend_from_slice(b"{\"n\":1}");
        framed.extend_from_slice(&v.suffix);
        assert_eq!(framed, data(ID, b"{\"n\":1}", JsonEscaping::default()));
    }

    #[test]
    fn identifiers_with_html_are_escaped_like_activesupport() {
        let id = r#"{"channel":"X","s":"<b>&"}"#;
        assert_eq!(
            String::from_utf8(confirm(id, JsonEscaping::default())).unwrap(),
            r#"{"identifier":"{\"channel\":\"X\",\"s\":\"\u003cb\u003e\u0026\"}","type":"confirm_subscription"}"#
        );
    }

    #[test]
    fn commands_parse() {
        assert_eq!(
            parse_command(r#"{"command":"subscribe","identifier":"{\"channel\":\"A\"}"}"#),
            Ok(Command::Subscribe {
                identifier: Arc::from(r#"{"channel":"A"}"#)
            })
        );
        assert_eq!(
            parse_command(r#"{"command":"message","identifier":"x","data":"{\"action\":\"a\"}"}"#),
            Ok(Command::Message {
                identifier: Arc::from("x"),
                data: r#"{"action":"a"}"#.into()
            })
        );
        assert!(matches!(
            parse_command("not json at all"),
            Err(CommandError::Malformed(_))
        ));
        assert!(matches!(
            parse_command("[1,2]"),
            Err(CommandError::Malformed(_))
        ));
        assert_eq!(
            parse_command(r#"{"command":"bogus"}"#),
            Err(CommandError::UnknownCommand("bogus".into()))
        );
        assert_eq!(
            parse_command(r#"{"command":"subscribe"}"#),
            Err(CommandError::MissingIdentifier)
        );
        assert_eq!(
            parse_command(r#"{"command":"subscribe","identifier":{"channel":"A"}}"#),
            Err(CommandError::MissingIdentifier)
        );
        assert_eq!(
            parse_command(r#"{"command":"message","identifier":"x"}"#),
            Err(CommandError::MissingData)
        );
    }

    #[test]
    fn identifier_params_need_a_channel() {
        assert_eq!(
            identifier_params(r#"{"channel":"A","room_id":1}"#)
                .unwrap()
                .0,
            "A"
        );
        assert!(identifier_params(r#"{"room_id":1}"#).is_none());
        assert!(identifier_params("nope").is_none());
        assert!(identifier_params(r#"{"channel":5}"#).is_none());
    }
}
