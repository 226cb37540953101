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
    /// Internal error: the server could not go on (an app's `connect` that failed, as
    /// AnyCable closes it).
    pub const INTERNAL_ERROR: u16 = 1011;
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
        deflate: None,
    }
}

/// The `actioncable-v1-ext-json` subprotocol (AnyCable's extended protocol): positions on
/// broadcasts, `history`, `sid` and restores, pongs.
pub const EXT_PROTOCOL: &str = "actioncable-v1-ext-json";

/// `{"type":"welcome","sid":"<sid>"}`: an extended-protocol welcome (AnyCable's `Reply`
/// field order).
pub fn welcome_ext(sid: &str) -> Vec<u8> {
    let mut out = br#"{"type":"welcome","sid":"#.to_vec();
    write_json_string(&mut out, sid, JsonEscaping::default());
    out.push(b'}');
    out
}

/// `{"type":"welcome","sid":"<sid>","restored":true,"restored_ids":[…]}`: the welcome of a
/// restored session, naming the identifiers it still holds (the client subscribes again to
/// the others).
pub fn welcome_restored(sid: &str, identifiers: &[Arc<str>], escaping: JsonEscaping) -> Vec<u8> {
    let mut out = br#"{"type":"welcome","sid":"#.to_vec();
    write_json_string(&mut out, sid, escaping);
    out.extend_from_slice(br#","restored":true,"restored_ids":["#);
    for (i, identifier) in identifiers.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json_string(&mut out, identifier, escaping);
    }
    out.extend_from_slice(b"]}");
    out
}

fn typed(kind: &str, identifier: &str, escaping: JsonEscaping) -> Vec<u8> {
    let mut out = format!(r#"{{"type":"{kind}","identifier":"#).into_bytes();
    write_json_string(&mut out, identifier, escaping);
    out.push(b'}');
    out
}

/// `{"type":"confirm_history","identifier":"…"}`: every entry the history request asked for
/// was sent.
pub fn confirm_history(identifier: &str, escaping: JsonEscaping) -> Vec<u8> {
    typed("confirm_history", identifier, escaping)
}

/// `{"type":"reject_history","identifier":"…"}`: the history no longer covers the request;
/// the client missed something.
pub fn reject_history(identifier: &str, escaping: JsonEscaping) -> Vec<u8> {
    typed("reject_history", identifier, escaping)
}

/// The fan-out variant of an extended-protocol subscription: as [`variant`], positioned
/// (broadcasts with a position end `,"stream_id":…,"epoch":…,"offset":…}`), under its own
/// key (`ext:` and the identifier: an identifier is a JSON object and starts with `{`), so
/// it never shares a frame with a `actioncable-v1-json` subscription.
pub fn ext_variant(identifier: &Arc<str>, escaping: JsonEscaping) -> Variant {
    Variant {
        key: ext_key(identifier),
        positioned: true,
        ..variant(identifier, escaping)
    }
}

/// The variant key of an extended-protocol subscription of `identifier`.
pub fn ext_key(identifier: &str) -> Arc<str> {
    Arc::from(format!("ext:{identifier}"))
}

/// What an extended-protocol client asks of the history (`"history":{"since":…,"streams":…}`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryRequest {
    /// Unix seconds: every entry since then, for streams not in `streams` (0: none).
    pub since: u64,
    /// Per stream: (stream, epoch, last offset the client had).
    pub streams: Vec<(String, String, u64)>,
}

/// Most streams one history request may name (a subscription has a handful).
pub const MAX_HISTORY_STREAMS: usize = 64;

/// Reads a `history` object; None when it is malformed (not an object, `since` not a
/// non-negative integer, a stream's position not `{"epoch":"…","offset":N}`, too many
/// streams) or asks for nothing (AnyCable: "history request is missing"). Such a request is
/// ignored, as Rails ignores unknown commands.
pub fn history_request(value: &serde_json::Value) -> Option<HistoryRequest> {
    let object = value.as_object()?;
    let since = match object.get("since") {
        None | Some(serde_json::Value::Null) => 0,
        Some(v) => v.as_u64()?,
    };
    let mut streams = Vec::new();
    match object.get("streams") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Object(map)) => {
            if map.len() > MAX_HISTORY_STREAMS {
                return None;
            }
            for (stream, position) in map {
                let epoch = position.get("epoch")?.as_str()?.to_owned();
                let offset = position.get("offset")?.as_u64()?;
                streams.push((stream.clone(), epoch, offset));
            }
        }
        Some(_) => return None,
    }
    (since > 0 || !streams.is_empty()).then_some(HistoryRequest { since, streams })
}

/// The commands only the extended protocol has, read from a frame an extended-protocol
/// connection sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExtCommand {
    /// `{"command":"history","identifier":"…","history":{…}}` (None: malformed, ignored).
    History {
        /// The subscription.
        identifier: Arc<str>,
        /// What it asks for.
        request: Option<HistoryRequest>,
    },
    /// `{"command":"pong"}`: the client's answer to a ping.
    Pong,
}

#[derive(Deserialize)]
struct RawExt {
    command: Option<String>,
    identifier: Option<serde_json::Value>,
    history: Option<serde_json::Value>,
}

/// The extended-protocol command of `text`, if it is one (`history` needs a string
/// identifier); None for everything else, which [`parse_command`] handles.
pub fn parse_ext(text: &str) -> Option<ExtCommand> {
    let raw: RawExt = serde_json::from_str(text).ok()?;
    match raw.command.as_deref()? {
        "pong" => Some(ExtCommand::Pong),
        "history" => {
            let serde_json::Value::String(identifier) = raw.identifier? else {
                return None;
            };
            Some(ExtCommand::History {
                identifier: identifier.into(),
                request: raw.history.as_ref().and_then(history_request),
            })
        }
        _ => None,
    }
}

/// The `history` a `subscribe` frame carries (`{"command":"subscribe",…,"history":{…}}`), if
/// any and well-formed.
pub fn subscribe_history(text: &str) -> Option<HistoryRequest> {
    let raw: RawExt = serde_json::from_str(text).ok()?;
    history_request(raw.history.as_ref()?)
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

    #[test]
    fn extended_frames_follow_anycables_field_order() {
        let esc = JsonEscaping::default();
        assert_eq!(
            String::from_utf8(welcome_ext("abc")).unwrap(),
            r#"{"type":"welcome","sid":"abc"}"#
        );
        assert_eq!(
            String::from_utf8(welcome_restored("n", &[Arc::from(ID)], esc)).unwrap(),
            r#"{"type":"welcome","sid":"n","restored":true,"restored_ids":["{\"channel\":\"StreamChannel\",\"stream\":\"room1\"}"]}"#
        );
        assert_eq!(
            String::from_utf8(confirm_history(r#"{"channel":"A"}"#, esc)).unwrap(),
            r#"{"type":"confirm_history","identifier":"{\"channel\":\"A\"}"}"#
        );
        assert_eq!(
            String::from_utf8(reject_history(r#"{"channel":"A"}"#, esc)).unwrap(),
            r#"{"type":"reject_history","identifier":"{\"channel\":\"A\"}"}"#
        );
    }

    #[test]
    fn history_requests_parse_and_malformed_ones_are_none() {
        let ok = parse_ext(
            r#"{"command":"history","identifier":"x","history":{"since":5,"streams":{"s":{"epoch":"e","offset":3}}}}"#,
        );
        assert_eq!(
            ok,
            Some(ExtCommand::History {
                identifier: Arc::from("x"),
                request: Some(HistoryRequest {
                    since: 5,
                    streams: vec![("s".into(), "e".into(), 3)]
                })
            })
        );
        for bad in [
            r#"{"since":-1}"#,
            r#"{"since":"5"}"#,
            r#"{"streams":[1]}"#,
            r#"{"streams":{"s":{"epoch":1,"offset":3}}}"#,
            r#"{"streams":{"s":{"epoch":"e","offset":-3}}}"#,
            r#"{}"#,
            r#"5"#,
        ] {
            let value: serde_json::Value = serde_json::from_str(bad).unwrap();
            assert_eq!(history_request(&value), None, "{bad}");
        }
        assert_eq!(parse_ext(r#"{"command":"pong"}"#), Some(ExtCommand::Pong));
        assert_eq!(parse_ext(r#"{"command":"history","identifier":5}"#), None);
        assert_eq!(
            parse_ext(r#"{"command":"subscribe","identifier":"x"}"#),
            None
        );
        assert_eq!(
            subscribe_history(r#"{"command":"subscribe","identifier":"x","history":{"since":9}}"#),
            Some(HistoryRequest {
                since: 9,
                streams: vec![]
            })
        );
    }

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
