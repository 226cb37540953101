//! Scraping the few things the load generator needs from Campfire's HTML.
//!
//! A room page (`GET /rooms/:id`, `app/views/layouts/application.html.erb` and
//! `app/views/rooms/show.html.erb` in Campfire) carries:
//! - `<meta name="csrf-token" content="...">`: the token every form POST must send as
//!   `authenticity_token`;
//! - `<meta name="current-user-id" content="7">`;
//! - the message container `<div id="messages_rooms_open_1" ...>`, whose id is the `target` of
//!   every `<turbo-stream action="append">` for the room;
//! - `<turbo-cable-stream-source channel="RoomMessagesChannel" signed-stream-name="...">`: the
//!   room's message stream (`Turbo::StreamsChannel` before Campfire commit `ee37809`).
//!
//! The sidebar (`GET /users/me/sidebar`) adds `Turbo::StreamsChannel` sources for `rooms` and
//! `<user gid>:rooms`.
//!
//! This is a tolerant tag scanner, not an HTML parser: it finds `<name` tags case-insensitively,
//! reads attributes in any order with double, single or no quotes, and decodes character
//! references in values (`&quot;`, `&#x3D;`, `&#43;`…, HTML Living Standard §13.2.5.72).
//!
//! A signed stream name is Turbo's `Turbo::StreamsChannel.signed_stream_name`: `Base64(JSON of
//! the stream name)`, then `--`, then a hex HMAC digest (`turbo-rails`:
//! `app/channels/turbo/streams/stream_name.rb`). The Base64 half can be decoded without the key,
//! which is how the load generator recognises the room's `...:messages` stream.

use base64::Engine;
use std::borrow::Cow;
use std::fmt;

/// One start tag: its lowercase name and its attributes with decoded values, in source order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// Lowercase tag name, e.g. `meta`.
    pub name: String,
    /// `(lowercase attribute name, decoded value)`; a bare attribute has an empty value.
    pub attrs: Vec<(String, String)>,
}

impl Tag {
    /// The decoded value of attribute `name` (lowercase), if present.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Every start tag named `name` (case-insensitive) in `html`, in document order.
pub fn tags(html: &str, name: &str) -> Vec<Tag> {
    let bytes = html.as_bytes();
    let name_bytes = name.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(off) = memchr::memchr(b'<', &bytes[pos..]) {
        let start = pos + off + 1;
        pos = start;
        let end_name = start + name_bytes.len();
        if end_name > bytes.len() || !bytes[start..end_name].eq_ignore_ascii_case(name_bytes) {
            continue;
        }
        match bytes.get(end_name) {
            Some(b) if b.is_ascii_whitespace() || *b == b'>' || *b == b'/' => {}
            _ => continue,
        }
        let (attrs, next) = parse_attrs(html, end_name);
        out.push(Tag {
            name: name.to_ascii_lowercase(),
            attrs,
        });
        pos = next;
    }
    out
}

/// Parses attributes from `pos` (just after the tag name) to the closing `>`; returns them and
/// the index after the tag.
fn parse_attrs(html: &str, mut pos: usize) -> (Vec<(String, String)>, usize) {
    let b = html.as_bytes();
    let mut attrs = Vec::new();
    loop {
        while pos < b.len() && (b[pos].is_ascii_whitespace() || b[pos] == b'/') {
            pos += 1;
        }
        if pos >= b.len() {
            return (attrs, pos);
        }
        if b[pos] == b'>' {
            return (attrs, pos + 1);
        }
        let name_start = pos;
        while pos < b.len()
            && !b[pos].is_ascii_whitespace()
            && b[pos] != b'='
            && b[pos] != b'>'
            && b[pos] != b'/'
        {
            pos += 1;
        }
        let name = html[name_start..pos].to_ascii_lowercase();
        while pos < b.len() && b[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if pos < b.len() && b[pos] == b'=' {
            pos += 1;
            while pos < b.len() && b[pos].is_ascii_whitespace() {
                pos += 1;
            }
            let value = if pos < b.len() && (b[pos] == b'"' || b[pos] == b'\'') {
                let quote = b[pos];
                let vstart = pos + 1;
                let vend = memchr::memchr(quote, &b[vstart..])
                    .map(|i| vstart + i)
                    .unwrap_or(b.len());
                pos = (vend + 1).min(b.len());
                &html[vstart..vend]
            } else {
                let vstart = pos;
                while pos < b.len() && !b[pos].is_ascii_whitespace() && b[pos] != b'>' {
                    pos += 1;
                }
                &html[vstart..pos]
            };
            attrs.push((name, decode_entities(value).into_owned()));
        } else if !name.is_empty() {
            attrs.push((name, String::new()));
        }
    }
}

/// Decodes HTML character references: the named ones Rails' `ERB::Util.html_escape` and
/// templates emit (`&amp; &lt; &gt; &quot; &apos; &nbsp;`) and every numeric one (`&#43;`,
/// `&#x3D;`). Unknown or malformed references are left as they are.
pub fn decode_entities(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let tail = &rest[amp..];
        let semi = tail.as_bytes()[..tail.len().min(12)]
            .iter()
            .position(|&b| b == b';');
        let decoded = semi.and_then(|semi| {
            let body = &tail[1..semi];
            let ch = if let Some(num) = body.strip_prefix('#') {
                let code = if let Some(hex) = num.strip_prefix(['x', 'X']) {
                    u32::from_str_radix(hex, 16).ok()
                } else {
                    num.parse::<u32>().ok()
                };
                code.and_then(char::from_u32)
            } else {
                match body {
                    "amp" => Some('&'),
                    "lt" => Some('<'),
                    "gt" => Some('>'),
                    "quot" => Some('"'),
                    "apos" => Some('\''),
                    "nbsp" => Some('\u{a0}'),
                    _ => None,
                }
            };
            ch.map(|c| (c, semi + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &tail[len..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The `content` of the first `<meta name="NAME">`, decoded.
pub fn meta_content(html: &str, name: &str) -> Option<String> {
    tags(html, "meta")
        .into_iter()
        .find(|t| t.attr("name") == Some(name))
        .and_then(|t| t.attr("content").map(str::to_owned))
}

/// The `value` of the first `<input name="NAME">`, decoded (the login form's
/// `authenticity_token`).
pub fn input_value(html: &str, name: &str) -> Option<String> {
    tags(html, "input")
        .into_iter()
        .find(|t| t.attr("name") == Some(name))
        .and_then(|t| t.attr("value").map(str::to_owned))
}

/// The `id` of the first `<div>` whose id starts with `prefix` (the room's message container,
/// prefix `messages_rooms_`).
pub fn div_id_with_prefix(html: &str, prefix: &str) -> Option<String> {
    tags(html, "div")
        .into_iter()
        .filter_map(|t| t.attr("id").map(str::to_owned))
        .find(|id| id.starts_with(prefix))
}

/// One `<turbo-cable-stream-source>`: the channel class and the signed stream name a client
/// subscribes with (`{"channel":CHANNEL,"signed_stream_name":SIGNED}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSource {
    /// The `channel` attribute, e.g. `RoomMessagesChannel` or `Turbo::StreamsChannel`.
    pub channel: String,
    /// The `signed-stream-name` attribute, entity-decoded.
    pub signed_stream_name: String,
    /// The decoded stream name (see [`decode_signed_stream_name`]), when it decodes.
    pub stream_name: Option<String>,
}

impl StreamSource {
    /// Whether this source is a room's message stream: its name decodes to a string ending in
    /// `:messages` (Campfire: `turbo_stream_from @room, :messages`).
    pub fn is_room_messages(&self) -> bool {
        self.stream_name
            .as_deref()
            .is_some_and(|n| n.ends_with(":messages"))
    }

    /// The Action Cable subscription identifier for this source, with `channel` first as
    /// `JSON.stringify` writes it in Turbo's `cable_stream_source_element.js`.
    pub fn identifier(&self) -> String {
        format!(
            "{{\"channel\":{},\"signed_stream_name\":{}}}",
            json_string(&self.channel),
            json_string(&self.signed_stream_name)
        )
    }
}

/// A JSON string literal for `s`.
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// Every `<turbo-cable-stream-source>` in `html`, without duplicates, in document order.
pub fn stream_sources(html: &str) -> Vec<StreamSource> {
    let mut out: Vec<StreamSource> = Vec::new();
    for tag in tags(html, "turbo-cable-stream-source") {
        let (Some(channel), Some(signed)) = (tag.attr("channel"), tag.attr("signed-stream-name"))
        else {
            continue;
        };
        let source = StreamSource {
            channel: channel.to_owned(),
            signed_stream_name: signed.to_owned(),
            stream_name: decode_signed_stream_name(signed),
        };
        if !out.contains(&source) {
            out.push(source);
        }
    }
    out
}

/// Decodes the payload half of a Turbo signed stream name, `Base64(JSON string)--hexdigest`,
/// to the stream name, e.g. `Z2lk...:messages`. No key is needed and the digest is not checked.
/// Returns `None` when there is no `--`, the Base64 is invalid, or the JSON is not a string.
pub fn decode_signed_stream_name(signed: &str) -> Option<String> {
    let (payload, digest) = signed.rsplit_once("--")?;
    if digest.is_empty() || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(payload))
        .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(payload))
        .ok()?;
    match serde_json::from_slice::<serde_json::Value>(&raw).ok()? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    }
}

/// What a room page yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomPage {
    /// `<meta name="csrf-token">`: sent as `authenticity_token` with every post.
    pub csrf_token: String,
    /// `<meta name="current-user-id">`, when present.
    pub current_user_id: Option<String>,
    /// The message container id, e.g. `messages_rooms_open_1`: the append target.
    pub messages_target: String,
    /// Every stream source on the page.
    pub sources: Vec<StreamSource>,
}

/// Why a page could not be used for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScrapeError {
    /// `<meta name="csrf-token">` is missing.
    MissingCsrfToken,
    /// No `<div id="messages_rooms_...">`.
    MissingMessagesContainer,
    /// No stream source decodes to a name ending in `:messages`; holds what was found as
    /// `channel → stream name` strings.
    MissingRoomStream(Vec<String>),
}

impl fmt::Display for ScrapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingCsrfToken => write!(f, "the room page has no <meta name=\"csrf-token\">"),
            Self::MissingMessagesContainer => write!(
                f,
                "the room page has no message container <div id=\"messages_rooms_...\">"
            ),
            Self::MissingRoomStream(found) => write!(
                f,
                "the room's message stream (a signed stream name decoding to \"...:messages\") is \
                 not among the page's stream sources, so clients would never receive posts; \
                 refusing to run the cell. Found: [{}]",
                found.join(", ")
            ),
        }
    }
}

impl std::error::Error for ScrapeError {}

/// Scrapes a room page. Errors: [`ScrapeError`] when the CSRF token or the message container
/// is missing. (The message stream is checked by [`room_message_stream`] after the sidebar's
/// sources are added.)
pub fn parse_room_page(html: &str) -> Result<RoomPage, ScrapeError> {
    let csrf_token = meta_content(html, "csrf-token").ok_or(ScrapeError::MissingCsrfToken)?;
    let messages_target = div_id_with_prefix(html, "messages_rooms_")
        .or_else(|| div_id_with_prefix(html, "messages_"))
        .ok_or(ScrapeError::MissingMessagesContainer)?;
    Ok(RoomPage {
        csrf_token,
        current_user_id: meta_content(html, "current-user-id"),
        messages_target,
        sources: stream_sources(html),
    })
}

/// The room's message stream among `sources`, preferring `RoomMessagesChannel` (Campfire HEAD)
/// over `Turbo::StreamsChannel` (before `ee37809`).
///
/// Errors: [`ScrapeError::MissingRoomStream`] listing what was found.
pub fn room_message_stream(sources: &[StreamSource]) -> Result<&StreamSource, ScrapeError> {
    sources
        .iter()
        .filter(|s| s.is_room_messages())
        .max_by_key(|s| s.channel == "RoomMessagesChannel")
        .ok_or_else(|| {
            ScrapeError::MissingRoomStream(
                sources
                    .iter()
                    .map(|s| {
                        format!(
                            "{} → {}",
                            s.channel,
                            s.stream_name.as_deref().unwrap_or("(undecodable)")
                        )
                    })
                    .collect(),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed(name: &str) -> String {
        let json = serde_json::to_string(name).unwrap();
        format!(
            "{}--{}",
            base64::engine::general_purpose::STANDARD.encode(json),
            "0a1b2c3d"
        )
    }

    #[test]
    fn decodes_named_and_numeric_entities() {
        assert_eq!(
            decode_entities("a&quot;b&#x3D;&#43;&amp;&lt;&gt;&#39;"),
            "a\"b=+&<>'"
        );
        assert_eq!(decode_entities("no refs"), "no refs");
        assert_eq!(
            decode_entities("A & B &bogus; &#xZZ;"),
            "A & B &bogus; &#xZZ;"
        );
    }

    #[test]
    fn reads_attributes_in_any_order_and_quoting() {
        let html = r#"<META content='tok&#43;en&#x3D;=' name=csrf-token><meta name="current-user-id" content="7"/>"#;
        assert_eq!(meta_content(html, "csrf-token").unwrap(), "tok+en==");
        assert_eq!(meta_content(html, "current-user-id").unwrap(), "7");
        assert_eq!(meta_content(html, "missing"), None);
    }

    #[test]
    fn does_not_confuse_tag_name_prefixes() {
        let html = r#"<metadata name="csrf-token" content="wrong"><meta name="csrf-token" content="right">"#;
        assert_eq!(meta_content(html, "csrf-token").unwrap(), "right");
    }

    #[test]
    fn scrapes_a_room_page_with_entity_encoded_signed_names() {
        let room = signed("Z2lkOi8vaGVhcnRoL1Jvb21zOjpPcGVuLzE:messages");
        let escaped = room.replace('=', "&#x3D;").replace('+', "&#43;");
        let html = format!(
            r#"<html><head><meta name="csrf-token" content="CSRF&#43;1"><meta name="current-user-id" content="7"></head>
            <body><div id="message-area"><div data-controller="maintain-scroll" id="messages_rooms_open_1">
            <turbo-cable-stream-source signed-stream-name="{escaped}" channel="RoomMessagesChannel"></turbo-cable-stream-source>
            </div></div></body></html>"#
        );
        let page = parse_room_page(&html).unwrap();
        assert_eq!(page.csrf_token, "CSRF+1");
        assert_eq!(page.current_user_id.as_deref(), Some("7"));
        assert_eq!(page.messages_target, "messages_rooms_open_1");
        assert_eq!(page.sources.len(), 1);
        assert_eq!(page.sources[0].signed_stream_name, room);
        let stream = room_message_stream(&page.sources).unwrap();
        assert_eq!(stream.channel, "RoomMessagesChannel");
        assert_eq!(
            stream.identifier(),
            format!(r#"{{"channel":"RoomMessagesChannel","signed_stream_name":"{room}"}}"#)
        );
    }

    #[test]
    fn accepts_the_old_turbo_streams_channel_source() {
        let html = format!(
            r#"<turbo-cable-stream-source channel="Turbo::StreamsChannel" signed-stream-name="{}">
               <turbo-cable-stream-source channel="Turbo::StreamsChannel" signed-stream-name="{}">"#,
            signed("rooms"),
            signed("gid://campfire/Rooms::Closed/1:messages")
        );
        let sources = stream_sources(&html);
        assert_eq!(sources.len(), 2);
        let s = room_message_stream(&sources).unwrap();
        assert_eq!(
            s.stream_name.as_deref(),
            Some("gid://campfire/Rooms::Closed/1:messages")
        );
    }

    #[test]
    fn a_page_without_the_message_stream_is_an_error() {
        let html = format!(
            r#"<meta name="csrf-token" content="t"><div id="messages_rooms_open_1"></div>
               <turbo-cable-stream-source channel="Turbo::StreamsChannel" signed-stream-name="{}">"#,
            signed("rooms")
        );
        let page = parse_room_page(&html).unwrap();
        let err = room_message_stream(&page.sources).unwrap_err();
        match &err {
            ScrapeError::MissingRoomStream(found) => {
                assert_eq!(found, &vec!["Turbo::StreamsChannel → rooms".to_owned()])
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(err.to_string().contains("refusing to run"));
    }

    #[test]
    fn missing_csrf_or_container_is_an_error() {
        assert_eq!(
            parse_room_page("<div id=\"messages_rooms_open_1\">"),
            Err(ScrapeError::MissingCsrfToken)
        );
        assert_eq!(
            parse_room_page("<meta name=\"csrf-token\" content=\"x\">"),
            Err(ScrapeError::MissingMessagesContainer)
        );
    }

    #[test]
    fn signed_names_need_a_hex_digest_and_a_json_string() {
        assert_eq!(decode_signed_stream_name("nodigest"), None);
        assert_eq!(decode_signed_stream_name("InJvb21zIg==--zz"), None);
        // Base64 of `42`: valid JSON, not a string.
        assert_eq!(decode_signed_stream_name("NDI=--ab"), None);
        assert_eq!(
            decode_signed_stream_name("InJvb21zIg==--ab").as_deref(),
            Some("rooms")
        );
    }

    #[test]
    fn finds_the_login_forms_hidden_token() {
        let html = r#"<form action="/session" method="post"><input type="hidden" value="abc&#x3D;" name="authenticity_token" autocomplete="off"></form>"#;
        assert_eq!(input_value(html, "authenticity_token").unwrap(), "abc=");
    }
}
