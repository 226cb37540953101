//! `ActiveSupport::MessageVerifier`: signed, not encrypted, tokens.
//!
//! A token is `base64(data) + "--" + hex(HMAC(key, base64(data)))`:
//!
//! ```text
//! ImNoYXQ6MjAyMSI=--f9ee45dbccb1da04d8ceb99cc820207804370ba0d06b46fc3b8b373af1315628
//! └─ strict base64 ─┘  └──────── lowercase hex HMAC-SHA256 of the left part ────────┘
//! ```
//!
//! - The data is base64-encoded with the standard alphabet and `=` padding, no line breaks
//!   (`Base64.strict_encode64`).
//! - The MAC is computed over the **base64 text**, not over the raw data, and written as
//!   lowercase hex (`OpenSSL::HMAC.hexdigest`).
//! - The data is whatever the verifier's serializer produced; [`MessageVerifier`] signs and
//!   returns raw bytes and leaves serialization to its callers.
//!
//! Verification follows Rails 7.1+ (`activesupport/lib/active_support/message_verifier.rb`):
//! the separator must sit exactly at `len − hexlen − 2` (so `--` inside URL-safe base64 cannot
//! confuse it), the data part must not be empty, the hex digest is compared in constant time,
//! then the data is decoded with strict base64 and, if that fails, with URL-safe base64 (Ruby's
//! `Base64.urlsafe_decode64`, padding optional). Anything else is rejected; no input panics.
//!
//! [`StreamNameSigner`] is the verifier Turbo uses for `turbo_stream_from`:
//! `Turbo.signed_stream_verifier` (`hotwired/turbo-rails`, `lib/turbo-rails.rb`), SHA256 MAC,
//! JSON serializer, key derived with the salt `turbo/signed_stream_verifier_key`.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::json::{write_json_string, JsonEscaping};
use super::key_generator::{generate_key, KdfDigest, ITERATIONS};

/// The separator between the base64 data and the hex digest (`MessageVerifier::SEPARATOR`).
const SEPARATOR: &[u8; 2] = b"--";

/// The HMAC digest of a [`MessageVerifier`] (`digest:` option; Rails' default is SHA1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacDigest {
    /// HMAC-SHA1: 40 hex characters. Rails' default for `MessageVerifier` and signed cookies.
    Sha1,
    /// HMAC-SHA256: 64 hex characters. Turbo's signed stream names.
    Sha256,
}

/// Error of [`MacDigest::from_str`](std::str::FromStr): the text was neither `sha1` nor
/// `sha256`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownMacDigest(
    /// The rejected text, as given.
    pub String,
);

impl fmt::Display for UnknownMacDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown HMAC digest {:?} (expected \"sha1\" or \"sha256\")",
            self.0
        )
    }
}

impl std::error::Error for UnknownMacDigest {}

impl std::str::FromStr for MacDigest {
    type Err = UnknownMacDigest;

    /// Accepts `sha1` and `sha256` in any letter case (so Rails' `"SHA256"` works too).
    ///
    /// # Errors
    /// [`UnknownMacDigest`] carrying the input for anything else.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("sha1") {
            Ok(Self::Sha1)
        } else if s.eq_ignore_ascii_case("sha256") {
            Ok(Self::Sha256)
        } else {
            Err(UnknownMacDigest(s.to_owned()))
        }
    }
}

impl MacDigest {
    /// Length of the hex digest in characters (twice the digest length in bytes), as
    /// `MessageVerifier#digest_length_in_hex` computes it.
    fn hex_len(self) -> usize {
        match self {
            Self::Sha1 => 40,
            Self::Sha256 => 64,
        }
    }
}

/// A keyed HMAC state, kept so that signing and verifying only clone it.
#[derive(Clone)]
enum KeyedMac {
    Sha1(Hmac<Sha1>),
    Sha256(Hmac<Sha256>),
}

impl KeyedMac {
    fn new(key: &[u8], digest: MacDigest) -> Self {
        // HMAC accepts keys of every length (RFC 2104 §2), so these never fail.
        match digest {
            MacDigest::Sha1 => Self::Sha1(
                <Hmac<Sha1> as KeyInit>::new_from_slice(key)
                    .expect("HMAC accepts keys of any length"),
            ),
            MacDigest::Sha256 => Self::Sha256(
                <Hmac<Sha256> as KeyInit>::new_from_slice(key)
                    .expect("HMAC accepts keys of any length"),
            ),
        }
    }

    /// Lowercase hex HMAC of `data` into `out`; returns the written prefix of `out`.
    fn hex_digest<'a>(&self, data: &[u8], out: &'a mut [u8; 64]) -> &'a [u8] {
        match self {
            Self::Sha1(mac) => {
                let tag = mac.clone().chain_update(data).finalize().into_bytes();
                hex_into(&tag, out)
            }
            Self::Sha256(mac) => {
                let tag = mac.clone().chain_update(data).finalize().into_bytes();
                hex_into(&tag, out)
            }
        }
    }
}

/// Writes `bytes` as lowercase hex into the front of `out` (which must hold twice as many).
fn hex_into<'a>(bytes: &[u8], out: &'a mut [u8; 64]) -> &'a [u8] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = bytes.len().min(32);
    for (i, b) in bytes[..n].iter().enumerate() {
        out[2 * i] = DIGITS[usize::from(b >> 4)];
        out[2 * i + 1] = DIGITS[usize::from(b & 0x0F)];
    }
    &out[..2 * n]
}

/// Ruby's `Base64.strict_decode64`: standard alphabet, canonical `=` padding, no whitespace,
/// unused trailing bits must be zero. `None` on any violation.
pub(crate) fn strict_decode64(text: &[u8]) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

/// Ruby's `Base64.urlsafe_decode64`: pads with `=` to a multiple of four when the text has no
/// padding, maps `-` to `+` and `_` to `/`, then decodes strictly. `None` on failure.
pub(crate) fn urlsafe_decode64(text: &[u8]) -> Option<Vec<u8>> {
    let mut standard: Vec<u8> = text
        .iter()
        .map(|&b| match b {
            b'-' => b'+',
            b'_' => b'/',
            other => other,
        })
        .collect();
    if !text.ends_with(b"=") {
        let padded_len = standard.len().div_ceil(4) * 4;
        standard.resize(padded_len, b'=');
    }
    strict_decode64(&standard)
}

/// Rails 7.1+ `MessageVerifier#decode` for a verifier without `url_safe: true`: strict
/// base64 first, URL-safe base64 as the fallback.
pub(crate) fn decode64_with_fallback(text: &[u8]) -> Option<Vec<u8>> {
    strict_decode64(text).or_else(|| urlsafe_decode64(text))
}

/// Signs and verifies tokens in `ActiveSupport::MessageVerifier`'s format.
///
/// Holds the keyed HMAC state only; `Debug` shows the digest and never the key.
/// Source: `activesupport/lib/active_support/message_verifier.rb` (Rails 7.1–8.1 rules).
#[derive(Clone)]
pub struct MessageVerifier {
    mac: KeyedMac,
    digest: MacDigest,
}

impl fmt::Debug for MessageVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageVerifier")
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

impl MessageVerifier {
    /// A verifier with the raw secret `key` (any length; Rails passes the 64-byte output of
    /// [`generate_key`]) and the HMAC `digest`.
    pub fn new(key: &[u8], digest: MacDigest) -> Self {
        Self {
            mac: KeyedMac::new(key, digest),
            digest,
        }
    }

    /// The HMAC digest this verifier uses.
    pub fn digest(&self) -> MacDigest {
        self.digest
    }

    /// Signs already-serialized `data`: `strict_base64(data) + "--" + hex_hmac(that base64)`.
    ///
    /// Output is ASCII: `4·⌈len/3⌉` base64 characters, `--`, then 40 (SHA1) or 64 (SHA256)
    /// lowercase hex characters. Source: `MessageVerifier#generate` with `url_safe: false`.
    pub fn generate(&self, data: &[u8]) -> String {
        self.signed(&STANDARD.encode(data))
    }

    /// The token of already-encoded data: `encoded + "--" + hex_hmac(encoded)`.
    fn signed(&self, encoded: &str) -> String {
        let mut buf = [0u8; 64];
        let hex = self.mac.hex_digest(encoded.as_bytes(), &mut buf);
        let mut token = String::with_capacity(encoded.len() + 2 + hex.len());
        token.push_str(encoded);
        token.push_str("--");
        // `hex` holds only ASCII hex digits.
        token.extend(hex.iter().map(|&b| char::from(b)));
        token
    }

    /// Signs already-serialized `data` as a verifier built with `url_safe: true` does:
    /// `urlsafe_base64(data, padding: false) + "--" + hex_hmac(that base64)`, so the token can
    /// sit in a URL path unescaped. [`MessageVerifier::verify`] reads both forms. Source:
    /// `ActiveSupport::Messages::Codec#encode` (Rails 7.1+).
    pub fn generate_url_safe(&self, data: &[u8]) -> String {
        self.signed(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data))
    }

    /// Signs already-serialized `data` as globalid's `GlobalID::Verifier` does (the verifier of
    /// signed global ids since globalid 1.2): `urlsafe_base64(data)` **with** `=` padding, `--`,
    /// then the hex HMAC of that text. [`MessageVerifier::verify`] reads it. Source:
    /// `rails/globalid`, `lib/global_id/verifier.rb` (`Base64.urlsafe_encode64(data)`).
    pub fn generate_url_safe_padded(&self, data: &[u8]) -> String {
        self.signed(&base64::engine::general_purpose::URL_SAFE.encode(data))
    }

    /// Checks `token` and returns the data bytes it carries (base64-decoded, not deserialized).
    ///
    /// Returns `None`, never panicking, when: the token is shorter than the digest plus `--`;
    /// `--` is not exactly at `len − hexlen − 2`; the data part is empty; the hex digest differs
    /// from the HMAC of the data part (constant-time compare; uppercase hex is a mismatch, as in
    /// Rails); or the data part is neither strict nor URL-safe base64.
    ///
    /// Source: `MessageVerifier#verified` / `#extract_encoded` / `#decode` (Rails 7.1+).
    pub fn verify(&self, token: &str) -> Option<Vec<u8>> {
        let bytes = token.as_bytes();
        let hex_len = self.digest.hex_len();
        let sep_at = bytes.len().checked_sub(hex_len + SEPARATOR.len())?;
        let (encoded, rest) = bytes.split_at(sep_at);
        let (separator, digest) = rest.split_at(SEPARATOR.len());
        if separator != SEPARATOR || encoded.is_empty() {
            return None;
        }
        let mut buf = [0u8; 64];
        let expected = self.mac.hex_digest(encoded, &mut buf);
        if !bool::from(expected.ct_eq(digest)) {
            return None;
        }
        decode64_with_fallback(encoded)
    }
}

/// The salt Turbo derives its stream-name key with.
///
/// Source: `hotwired/turbo-rails`, `lib/turbo/engine.rb` (initializer
/// `turbo.signed_stream_verifier_key`).
const TURBO_SALT: &str = "turbo/signed_stream_verifier_key";

/// Signs and verifies Turbo signed stream names (`turbo_stream_from` ↔
/// `Turbo::StreamsChannel`), byte-compatible with `Turbo.signed_stream_verifier`.
///
/// A [`MessageVerifier`] with HMAC-SHA256 whose data is the stream name as a JSON string
/// literal, e.g. `"chat:2021"` with its quotes. There is no metadata envelope: Turbo passes no
/// purpose or expiry. Source: `hotwired/turbo-rails` `lib/turbo-rails.rb`
/// (`MessageVerifier.new(key, digest: "SHA256", serializer: JSON)`) and
/// `app/channels/turbo/streams/stream_name.rb`.
#[derive(Clone, Debug)]
pub struct StreamNameSigner {
    verifier: MessageVerifier,
}

impl StreamNameSigner {
    /// Derives the key as a Rails app does by default:
    /// `generate_key(secret_key_base, "turbo/signed_stream_verifier_key", 1000, 64, kdf)`.
    ///
    /// `kdf` must match the app's `key_generator_hash_digest_class` (SHA256 for
    /// `load_defaults "7.0"`+ with turbo-rails ≥ 1.1.1, otherwise SHA1). Runs PBKDF2, so build
    /// the signer once.
    pub fn from_secret_key_base(secret_key_base: &[u8], kdf: KdfDigest) -> Self {
        Self::from_raw_key(&generate_key(
            secret_key_base,
            TURBO_SALT,
            ITERATIONS,
            64,
            kdf,
        ))
    }

    /// Uses `key` as is: for apps that set `config.turbo.signed_stream_verifier_key`, or a key
    /// exported with `Turbo.signed_stream_verifier_key`.
    pub fn from_raw_key(key: &[u8]) -> Self {
        Self {
            verifier: MessageVerifier::new(key, MacDigest::Sha256),
        }
    }

    /// `Turbo::StreamsChannel.signed_stream_name(stream_name)` for an already composed name
    /// (streamables joined with `:`): the name as Ruby's `JSON.dump` writes it (only `"`, `\`
    /// and control characters escaped; `/`, `<`, `>`, `&` and non-ASCII raw), then signed.
    pub fn sign(&self, stream_name: &str) -> String {
        let mut payload = Vec::with_capacity(stream_name.len() + 2);
        write_json_string(&mut payload, stream_name, JsonEscaping::RUBY_JSON_DUMP);
        self.verifier.generate(&payload)
    }

    /// `Turbo.signed_stream_verifier.verified(signed)`: the stream name, or `None` if the
    /// token fails [`MessageVerifier::verify`] or its data is not JSON whose top-level value
    /// is a string (objects, numbers, `null`, invalid JSON are all `None`).
    pub fn verify(&self, signed: &str) -> Option<String> {
        let data = self.verifier.verify(signed)?;
        match serde_json::from_slice::<serde_json::Value>(&data).ok()? {
            serde_json::Value::String(name) => Some(name),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verifier() -> MessageVerifier {
        MessageVerifier::new(b"s3Krit", MacDigest::Sha256)
    }

    const ANYCABLE_TOKEN: &str =
        "ImNoYXQ6MjAyMSI=--f9ee45dbccb1da04d8ceb99cc820207804370ba0d06b46fc3b8b373af1315628";

    #[test]
    fn generate_matches_anycable_vector() {
        assert_eq!(verifier().generate(b"\"chat:2021\""), ANYCABLE_TOKEN);
        assert_eq!(
            verifier().verify(ANYCABLE_TOKEN).as_deref(),
            Some(&b"\"chat:2021\""[..])
        );
    }

    #[test]
    fn round_trips_binary_data_with_both_digests() {
        for digest in [MacDigest::Sha1, MacDigest::Sha256] {
            let v = MessageVerifier::new(&[7; 64], digest);
            for len in 1..70usize {
                let data: Vec<u8> = (0..len).map(|i| (i * 37 % 256) as u8).collect();
                let token = v.generate(&data);
                let (_, hex) = token.rsplit_once("--").unwrap();
                assert_eq!(hex.len(), digest.hex_len());
                assert!(hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
                assert_eq!(v.verify(&token), Some(data));
            }
        }
    }

    #[test]
    fn parses_digest_names() {
        assert_eq!("sha1".parse::<MacDigest>(), Ok(MacDigest::Sha1));
        assert_eq!("SHA256".parse::<MacDigest>(), Ok(MacDigest::Sha256));
        let err = "md5".parse::<MacDigest>().unwrap_err();
        assert_eq!(err, UnknownMacDigest("md5".to_owned()));
        assert!(err.to_string().contains("md5"));
    }

    #[test]
    fn sha1_and_sha256_tokens_do_not_cross() {
        let sha1 = MessageVerifier::new(b"k", MacDigest::Sha1);
        let sha256 = MessageVerifier::new(b"k", MacDigest::Sha256);
        assert_eq!(sha1.verify(&sha256.generate(b"x")), None);
        assert_eq!(sha256.verify(&sha1.generate(b"x")), None);
    }

    #[test]
    fn rejects_wrong_key() {
        let other = MessageVerifier::new(b"s3Krit!", MacDigest::Sha256);
        assert_eq!(other.verify(ANYCABLE_TOKEN), None);
        assert_eq!(
            MessageVerifier::new(&[], MacDigest::Sha256).verify(ANYCABLE_TOKEN),
            None
        );
    }

    #[test]
    fn rejects_every_single_character_change() {
        let v = verifier();
        let original = ANYCABLE_TOKEN.as_bytes();
        for i in 0..original.len() {
            for replacement in [b'A', b'a', b'0', b'f', b'-', b'=', b'+', b'/', b'_', b' '] {
                if original[i] == replacement {
                    continue;
                }
                let mut t = original.to_vec();
                t[i] = replacement;
                let t = String::from_utf8(t).unwrap();
                assert_eq!(v.verify(&t), None, "{t}");
            }
        }
    }

    #[test]
    fn rejects_swapped_parts_and_odd_separators() {
        let v = verifier();
        let (data, digest) = ANYCABLE_TOKEN.split_once("--").unwrap();
        for bad in [
            format!("{digest}--{data}"),
            format!("{data}---{digest}"),
            format!("{data}-{digest}"),
            format!("{data}{digest}"),
            format!("{data}--{digest}--"),
            format!("--{data}--{digest}"),
            format!("{data}--{digest}0"),
            format!("{data}--{}", &digest[1..]),
            format!("{data}--{}", digest.to_uppercase()),
            format!("{data} --{digest}"),
            format!(" {ANYCABLE_TOKEN}"),
            format!("{ANYCABLE_TOKEN} "),
            format!("{ANYCABLE_TOKEN}\n"),
            format!("--{digest}"),
            digest.to_owned(),
            data.to_owned(),
            "--".to_owned(),
            String::new(),
        ] {
            assert_eq!(v.verify(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn empty_data_is_rejected_even_with_valid_mac() {
        let v = verifier();
        let token = v.generate(b"");
        assert!(token.starts_with("--"));
        assert_eq!(v.verify(&token), None);
    }

    #[test]
    fn separator_position_is_fixed_not_searched() {
        // URL-safe base64 can contain "--"; only the position decides. Data "\xfb\xef\xbe"
        // encodes to "++++" standard, "----" URL-safe.
        let v = verifier();
        let mut buf = [0u8; 64];
        let encoded = "----";
        let hex =
            String::from_utf8(v.mac.hex_digest(encoded.as_bytes(), &mut buf).to_vec()).unwrap();
        let token = format!("{encoded}--{hex}");
        assert_eq!(v.verify(&token), Some(vec![0xFB, 0xEF, 0xBE]));
    }

    #[test]
    fn mac_covers_the_base64_text_and_bad_base64_is_rejected() {
        let v = verifier();
        let mut buf = [0u8; 64];
        // Correct MAC over text that is not base64 in either alphabet.
        for text in [
            "not base64!",
            "ab=c",
            "a===",
            "Zm9v\nYmFy",
            "Zh==",
            "Zm8==",
            "=",
            "Z",
        ] {
            let hex =
                String::from_utf8(v.mac.hex_digest(text.as_bytes(), &mut buf).to_vec()).unwrap();
            assert_eq!(v.verify(&format!("{text}--{hex}")), None, "{text}");
        }
        // URL-safe without padding is accepted through the fallback, as in Rails 7.1+.
        let text = "ImNoYXQ6MjAyMSI";
        let hex = String::from_utf8(v.mac.hex_digest(text.as_bytes(), &mut buf).to_vec()).unwrap();
        assert_eq!(
            v.verify(&format!("{text}--{hex}")),
            Some(b"\"chat:2021\"".to_vec())
        );
    }

    #[test]
    fn base64_helpers_follow_ruby() {
        assert_eq!(strict_decode64(b""), Some(Vec::new()));
        assert_eq!(strict_decode64(b"Zm9v"), Some(b"foo".to_vec()));
        assert_eq!(strict_decode64(b"Zm8="), Some(b"fo".to_vec()));
        assert_eq!(strict_decode64(b"Zm8"), None);
        assert_eq!(strict_decode64(b"Zm9="), None, "non-zero trailing bits");
        assert_eq!(strict_decode64(b"Zm 9v"), None);
        assert_eq!(urlsafe_decode64(b"Zm8"), Some(b"fo".to_vec()));
        assert_eq!(urlsafe_decode64(b"Zm8="), Some(b"fo".to_vec()));
        assert_eq!(urlsafe_decode64(b"-_-_"), Some(vec![0xFB, 0xFF, 0xBF]));
        assert_eq!(urlsafe_decode64(b"Z"), None);
        assert_eq!(urlsafe_decode64(b"Zm8=="), None);
        assert_eq!(
            decode64_with_fallback(b"+/+/"),
            Some(vec![0xFB, 0xFF, 0xBF])
        );
        assert_eq!(
            decode64_with_fallback(b"-/+_"),
            Some(vec![0xFB, 0xFF, 0xBF])
        );
    }

    #[test]
    fn huge_and_hostile_inputs_return_none() {
        let v = verifier();
        let huge = "A".repeat(4 * 1024 * 1024);
        assert_eq!(v.verify(&huge), None);
        assert_eq!(v.verify(&format!("{huge}--{}", "0".repeat(64))), None);
        let huge_token = format!("{}{}", "QUFB".repeat(256 * 1024), &ANYCABLE_TOKEN[16..]);
        assert_eq!(v.verify(&huge_token), None);
        for s in [
            "é",
            "--é",
            "ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé",
            "\0",
        ] {
            assert_eq!(v.verify(s), None);
        }
        // Multibyte text right before the digest.
        let (_, digest) = ANYCABLE_TOKEN.split_once("--").unwrap();
        assert_eq!(v.verify(&format!("é--{digest}")), None);
    }

    #[test]
    fn deterministic_fuzz_never_panics() {
        let v = verifier();
        let alphabet = b"AZaz09+/=-_-- \xc3\xa9";
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..5_000 {
            let mut bytes = Vec::new();
            for _ in 0..(state % 100) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                bytes.push(alphabet[(state % alphabet.len() as u64) as usize]);
            }
            let s = String::from_utf8_lossy(&bytes);
            // A random string essentially never carries a valid MAC.
            assert_eq!(v.verify(&s), None);
            state = state.wrapping_add(0x9E37_79B9);
        }
    }

    #[test]
    fn debug_hides_the_key() {
        let v = MessageVerifier::new(b"super-secret-key", MacDigest::Sha1);
        let shown = format!("{v:?}");
        assert!(shown.contains("Sha1"));
        assert!(!shown.contains("super"));
        let signer = StreamNameSigner::from_raw_key(b"super-secret-key");
        assert!(!format!("{signer:?}").contains("super"));
    }

    #[test]
    fn stream_name_signer_round_trip_and_payload() {
        let signer = StreamNameSigner::from_raw_key(b"s3Krit");
        assert_eq!(signer.sign("chat:2021"), ANYCABLE_TOKEN);
        assert_eq!(signer.verify(ANYCABLE_TOKEN).as_deref(), Some("chat:2021"));
        for name in ["", "a/b <b>&", "é ☃ 😀", "q\"\\\n\u{1}\u{2028}", "x:y:z"] {
            let token = signer.sign(name);
            assert_eq!(signer.verify(&token).as_deref(), Some(name));
            let data = signer.verifier.verify(&token).unwrap();
            // The payload is Ruby's JSON.dump: no HTML or separator escapes.
            assert_eq!(
                String::from_utf8(data).unwrap(),
                crate::rails::json::json_string(name, JsonEscaping::RUBY_JSON_DUMP)
            );
        }
        let data = signer.verifier.verify(&signer.sign("a/<b>é")).unwrap();
        assert_eq!(data, "\"a/<b>é\"".as_bytes());
    }

    #[test]
    fn stream_name_signer_requires_a_json_string() {
        let signer = StreamNameSigner::from_raw_key(b"s3Krit");
        for payload in [
            &b"42"[..],
            b"null",
            b"{\"_rails\":{\"data\":\"x\"}}",
            b"[\"x\"]",
            b"\"unterminated",
            b"not json",
            b"\"a\" \"b\"",
            b"\xff\xfe",
        ] {
            let token = signer.verifier.generate(payload);
            assert_eq!(signer.verify(&token), None, "{payload:?}");
        }
        // Whitespace around a string is still a JSON string.
        let token = signer.verifier.generate(b" \"x\" ");
        assert_eq!(signer.verify(&token).as_deref(), Some("x"));
        // Deep nesting is rejected by the parser's recursion limit, not a stack overflow.
        let deep = "[".repeat(100_000);
        let token = signer.verifier.generate(deep.as_bytes());
        assert_eq!(signer.verify(&token), None);
    }

    #[test]
    fn stream_name_signer_rejects_other_keys() {
        let a = StreamNameSigner::from_secret_key_base(b"skb-a", KdfDigest::Sha256);
        let b = StreamNameSigner::from_secret_key_base(b"skb-b", KdfDigest::Sha256);
        let a1 = StreamNameSigner::from_secret_key_base(b"skb-a", KdfDigest::Sha1);
        let token = a.sign("room:1");
        assert_eq!(a.verify(&token).as_deref(), Some("room:1"));
        assert_eq!(b.verify(&token), None);
        assert_eq!(a1.verify(&token), None);
    }
}
