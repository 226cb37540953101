//! ActiveSupport's JSON string encoding, byte for byte.
//!
//! Rails encodes every Action Cable frame with `ActiveSupport::JSON.encode`
//! (`actioncable/lib/action_cable/connection/base.rb#encode`, and `server/broadcasting.rb` for
//! broadcasts). Golden-frame tests compare bytes, so Hearth has to escape strings exactly the
//! way that encoder does. The rules, from `activesupport/lib/active_support/json/encoding.rb`
//! and the json gem's generator it delegates to:
//!
//! | input | output | when |
//! |---|---|---|
//! | `"` `\` | `\"` `\\` | always |
//! | U+0008 U+000C U+000A U+000D U+0009 | `\b` `\f` `\n` `\r` `\t` | always |
//! | any other U+0000..U+001F | `\u00XX`, lowercase hex (`\u0001`, `\u001f`) | always |
//! | `<` `>` `&` | `\u003c` `\u003e` `\u0026` | `escape_html_entities_in_json` (default on) |
//! | U+2028 U+2029 | `\u2028` `\u2029` | `escape_js_separators_in_json` (on before Rails 8.1's defaults) |
//! | `/`, U+007F, all other non-ASCII | copied raw (UTF-8) | always |
//!
//! The recorded Rails peer (`rails-cable-transcripts.md`, S1 and S10) shows the result:
//! `é ☃ <b>&` becomes `"é ☃ \u003cb\u003e\u0026"`.
//!
//! With both options off, the same function produces what Ruby's `JSON.dump` writes for a
//! string (the json gem's generator without `script_safe`), which is the payload format of
//! Turbo's signed stream names (see [`super::message_verifier::StreamNameSigner`]).
//!
//! The writer scans the input once and copies every run of bytes that needs no escaping with
//! a single `extend_from_slice`, so plain text costs one table lookup per byte and one copy.

use std::io::Write as _;

/// Which of ActiveSupport's optional escapes to apply.
///
/// Source: `ActiveSupport.escape_html_entities_in_json` and
/// `ActiveSupport.escape_js_separators_in_json`
/// (`activesupport/lib/active_support/json/encoding.rb`). Rails sets both to `true` by default;
/// `load_defaults "8.1"` turns `escape_js_separators_in_json` off. The escapes of `"`, `\` and
/// control characters are not optional and always apply.
#[derive(Clone, Copy, Debug)]
pub struct JsonEscaping {
    /// Write `<`, `>` and `&` as `\u003c`, `\u003e` and `\u0026`.
    pub escape_html_entities: bool,
    /// Write U+2028 (LINE SEPARATOR) and U+2029 (PARAGRAPH SEPARATOR) as `\u2028` and `\u2029`.
    pub escape_js_separators: bool,
}

impl Default for JsonEscaping {
    /// Both escapes on: what a Rails application writes unless it opted out (Rails 6.1 through
    /// 8.0 defaults, and the recorded peer).
    fn default() -> Self {
        Self {
            escape_html_entities: true,
            escape_js_separators: true,
        }
    }
}

impl JsonEscaping {
    /// No optional escapes: the output of Ruby's `JSON.dump` / `JSON.generate` for a string
    /// (json gem generator, `script_safe: false`). Used for signed stream name payloads.
    pub(crate) const RUBY_JSON_DUMP: Self = Self {
        escape_html_entities: false,
        escape_js_separators: false,
    };

    /// What `ActiveSupport::JSON.encode` writes under `load_defaults "8.1"` and later (Campfire's
    /// 8.2): `<`, `>` and `&` escaped, U+2028 and U+2029 left as they are. Used for the values
    /// and envelopes of signed cookies and signed global ids.
    pub const RAILS_8_1: Self = Self {
        escape_html_entities: true,
        escape_js_separators: false,
    };
}

/// Class of a byte for the scanner: copied as is, escaped unconditionally, escaped only when
/// HTML entity escaping is on, or a possible first byte of U+2028/U+2029.
const SAFE: u8 = 0;
const ALWAYS: u8 = 1;
const HTML: u8 = 2;
const LEAD_E2: u8 = 3;

/// Byte class table, indexed by byte value.
static CLASS: [u8; 256] = {
    let mut table = [SAFE; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = ALWAYS;
        b += 1;
    }
    table[b'"' as usize] = ALWAYS;
    table[b'\\' as usize] = ALWAYS;
    table[b'<' as usize] = HTML;
    table[b'>' as usize] = HTML;
    table[b'&' as usize] = HTML;
    // U+2028 is E2 80 A8 and U+2029 is E2 80 A9 in UTF-8.
    table[0xE2] = LEAD_E2;
    table
};

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Calls `emit` with consecutive pieces (raw runs of `s` and escape sequences) whose
/// concatenation is the escaped body of the string literal, without the quotes.
#[inline]
fn escape_pieces(s: &str, opts: JsonEscaping, mut emit: impl FnMut(&[u8])) {
    let bytes = s.as_bytes();
    let mut run_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let mut unicode_buf = *b"\\u0000";
        // `len` is the number of input bytes the escape replaces.
        let (escape, len): (&[u8], usize) = match CLASS[b as usize] {
            ALWAYS => match b {
                b'"' => (b"\\\"", 1),
                b'\\' => (b"\\\\", 1),
                0x08 => (b"\\b", 1),
                0x0C => (b"\\f", 1),
                b'\n' => (b"\\n", 1),
                b'\r' => (b"\\r", 1),
                b'\t' => (b"\\t", 1),
                _ => {
                    unicode_buf[4] = HEX_DIGITS[usize::from(b >> 4)];
                    unicode_buf[5] = HEX_DIGITS[usize::from(b & 0x0F)];
                    (&unicode_buf, 1)
                }
            },
            HTML if opts.escape_html_entities => match b {
                b'<' => (b"\\u003c", 1),
                b'>' => (b"\\u003e", 1),
                _ => (b"\\u0026", 1),
            },
            LEAD_E2 if opts.escape_js_separators => match bytes.get(i + 1..i + 3) {
                Some([0x80, 0xA8]) => (b"\\u2028", 3),
                Some([0x80, 0xA9]) => (b"\\u2029", 3),
                _ => {
                    i += 1;
                    continue;
                }
            },
            // SAFE, and the classes whose escaping is off: copied as they are.
            _ => {
                i += 1;
                continue;
            }
        };
        if run_start < i {
            emit(&bytes[run_start..i]);
        }
        emit(escape);
        i += len;
        run_start = i;
    }
    if run_start < bytes.len() {
        emit(&bytes[run_start..]);
    }
}

/// Appends `s` to `out` as a quoted JSON string literal, escaped as ActiveSupport::JSON does.
///
/// `out` receives `"`, the escaped text and `"`; nothing else in `out` is touched. The escaping
/// table is in the [module docs](self); `opts` selects the optional escapes. Never fails.
///
/// Source: `ActiveSupport::JSON::Encoding` (`activesupport/lib/active_support/json/encoding.rb`)
/// on top of the json gem's string generator.
pub fn write_json_string(out: &mut Vec<u8>, s: &str, opts: JsonEscaping) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    escape_pieces(s, opts, |piece| out.extend_from_slice(piece));
    out.push(b'"');
}

/// Returns `s` as a quoted JSON string literal, escaped as ActiveSupport::JSON does.
///
/// Same bytes as [`write_json_string`], as an owned `String`. Example with the defaults:
/// `é <b>` gives `"é \u003cb\u003e"`.
pub fn json_string(s: &str, opts: JsonEscaping) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    write_json_string(&mut out, s, opts);
    into_string(out)
}

/// Converts writer output to a `String`. The writer only cuts the input at ASCII bytes or in
/// front of a U+2028/U+2029 lead byte and only inserts ASCII, so the bytes are always UTF-8;
/// the lossy branch exists so that this can never panic.
fn into_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Encodes a whole JSON value the way `ActiveSupport::JSON.encode` writes it: no whitespace,
/// every string (keys included) escaped by [`write_json_string`] with `opts`.
///
/// - Objects are written in the iteration order of [`serde_json::Map`]. Without serde_json's
///   `preserve_order` feature that map is sorted by key, so it cannot reproduce a Ruby Hash's
///   insertion order; callers that need a particular key order (Action Cable frames do:
///   `identifier` before `type` or `message`) must write the object text themselves and use
///   this function for the values.
/// - Numbers are written as serde_json writes them: integers exactly, floats in their shortest
///   round-trip form with `.0` kept (`1.0`, `1000.0`, `-0.5`), which matches Ruby for the
///   values in the transcripts (S10). Very large or small floats differ in exponent notation
///   (serde_json `1e20`, Ruby `1.0e+20`).
pub fn encode_value(v: &serde_json::Value, opts: JsonEscaping) -> String {
    let mut out = Vec::new();
    write_value(&mut out, v, opts);
    into_string(out)
}

fn write_value(out: &mut Vec<u8>, v: &serde_json::Value, opts: JsonEscaping) {
    use serde_json::Value;
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            // Writing into a Vec cannot fail.
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_json_string(out, s, opts),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item, opts);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, value)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_json_string(out, key, opts);
                out.push(b':');
                write_value(out, value, opts);
            }
            out.push(b'}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rails(s: &str) -> String {
        json_string(s, JsonEscaping::default())
    }

    #[test]
    fn transcript_s1_string() {
        assert_eq!(rails("é ☃ <b>&"), r#""é ☃ \u003cb\u003e\u0026""#);
    }

    #[test]
    fn transcript_s10_string() {
        let input = "</script> & é 😀 \u{2028} \u{0001} / \\ \"q\"";
        assert_eq!(
            rails(input),
            r#""\u003c/script\u003e \u0026 é 😀 \u2028 \u0001 / \\ \"q\"""#
        );
    }

    #[test]
    fn control_characters() {
        assert_eq!(rails("\u{8}\u{c}\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(rails("\u{0}\u{1f}\u{b}"), r#""\u0000\u001f\u000b""#);
        // DEL and C1 controls are not escaped.
        assert_eq!(rails("\u{7f}\u{85}"), "\"\u{7f}\u{85}\"");
    }

    #[test]
    fn every_ascii_byte() {
        for b in 0u8..0x80 {
            let s = (b as char).to_string();
            let got = rails(&s);
            let expected = match b {
                b'"' => r#""\"""#.to_owned(),
                b'\\' => r#""\\""#.to_owned(),
                0x08 => r#""\b""#.to_owned(),
                0x0C => r#""\f""#.to_owned(),
                b'\n' => r#""\n""#.to_owned(),
                b'\r' => r#""\r""#.to_owned(),
                b'\t' => r#""\t""#.to_owned(),
                0..=0x1F => format!("\"\\u{b:04x}\""),
                b'<' => r#""\u003c""#.to_owned(),
                b'>' => r#""\u003e""#.to_owned(),
                b'&' => r#""\u0026""#.to_owned(),
                _ => format!("\"{}\"", b as char),
            };
            assert_eq!(got, expected, "byte {b:#04x}");
            // Every output is valid JSON that decodes to the input.
            let back: String = serde_json::from_str(&got).unwrap();
            assert_eq!(back, s);
        }
    }

    #[test]
    fn options_off_is_ruby_json_dump() {
        let opts = JsonEscaping::RUBY_JSON_DUMP;
        assert_eq!(
            json_string("a/b <>& \u{2028}\u{2029} é", opts),
            "\"a/b <>& \u{2028}\u{2029} é\""
        );
        assert_eq!(json_string("\"\\\n\u{1}", opts), r#""\"\\\n\u0001""#);
    }

    #[test]
    fn separators_follow_their_option() {
        let html_only = JsonEscaping {
            escape_html_entities: true,
            escape_js_separators: false,
        };
        assert_eq!(json_string("\u{2028}<", html_only), "\"\u{2028}\\u003c\"");
        let seps_only = JsonEscaping {
            escape_html_entities: false,
            escape_js_separators: true,
        };
        assert_eq!(json_string("\u{2029}<", seps_only), r#""\u2029<""#);
        // Other characters whose UTF-8 starts with E2 are untouched.
        assert_eq!(
            rails("\u{2027}\u{202a}\u{2030}€☃"),
            "\"\u{2027}\u{202a}\u{2030}€☃\""
        );
        // A lone lead byte at the end of the text cannot happen in a &str, but E2 at the end of
        // a three-byte character must not read past the input.
        assert_eq!(rails("x\u{2000}"), "\"x\u{2000}\"");
    }

    #[test]
    fn empty_and_plain() {
        assert_eq!(rails(""), "\"\"");
        assert_eq!(rails("plain text 123"), "\"plain text 123\"");
    }

    #[test]
    fn write_appends() {
        let mut out = b"prefix:".to_vec();
        write_json_string(&mut out, "<", JsonEscaping::default());
        assert_eq!(out, br#"prefix:"\u003c""#);
    }

    #[test]
    fn vec_and_string_writers_agree_and_round_trip() {
        // Deterministic pseudo-random strings over a small alphabet that covers every rule.
        let alphabet = [
            "a", "\"", "\\", "\n", "\u{1}", "\u{1f}", "<", ">", "&", "/", "é", "😀", "\u{2028}",
            "\u{2029}", "\u{2027}", "\u{7f}", " ",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..500 {
            let mut s = String::new();
            for _ in 0..(state % 24) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push_str(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            for opts in [JsonEscaping::default(), JsonEscaping::RUBY_JSON_DUMP] {
                let as_string = json_string(&s, opts);
                let mut as_vec = Vec::new();
                write_json_string(&mut as_vec, &s, opts);
                assert_eq!(as_string.as_bytes(), &as_vec[..]);
                let back: String = serde_json::from_str(&as_string).unwrap();
                assert_eq!(back, s);
                if opts.escape_html_entities {
                    assert!(!as_string.contains(['<', '>', '&', '\u{2028}', '\u{2029}']));
                }
            }
            state = state.wrapping_add(1);
        }
    }

    #[test]
    fn encode_value_matches_transcript_s10_message() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"s":"</script> & é 😀 \u2028 \u0001 / \\ \"q\"","f":1.0,"e":1e3,"big":12345678901234567890,"neg":-0.5}"#,
        )
        .unwrap();
        // serde_json's default map is sorted by key.
        assert_eq!(
            encode_value(&v, JsonEscaping::default()),
            r#"{"big":12345678901234567890,"e":1000.0,"f":1.0,"neg":-0.5,"s":"\u003c/script\u003e \u0026 é 😀 \u2028 \u0001 / \\ \"q\""}"#
        );
    }

    #[test]
    fn encode_value_nested() {
        let v = serde_json::json!({"a<": [1, 2.5, null, true, false, "x&"], "b": {}});
        assert_eq!(
            encode_value(&v, JsonEscaping::default()),
            r#"{"a\u003c":[1,2.5,null,true,false,"x\u0026"],"b":{}}"#
        );
    }
}
