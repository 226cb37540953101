//! Rails' signed cookie jar (`cookies.signed`), so Hearth can read and write the same cookies
//! as a Rails application with the same `secret_key_base`: a Campfire team moved onto Hearth
//! stays signed in, and moved back, stays signed in again.
//!
//! What `cookies.signed.permanent[:session_token] = "tok"` puts in `Set-Cookie` in Rails 8.2
//! with `load_defaults 8.2` (Campfire; `actionpack`, `action_dispatch/middleware/cookies.rb`,
//! `SignedKeyRotatingCookieJar`; `activesupport`, `messages/metadata.rb`):
//!
//! 1. The value is serialized by the cookie serializer, JSON since `load_defaults "7.0"`:
//!    `"tok"` with its quotes (`ActiveSupport::JSON.encode`).
//! 2. That text is wrapped in a *metadata envelope* binding it to the cookie's name (the purpose
//!    `cookie.<name>`, `use_cookies_with_metadata`, `load_defaults "6.0"`) and to its expiry.
//!    The jar's verifier serializes with `NullSerializer`, which Rails 7.1+ does not count among
//!    the envelope serializers, so even Rails 8.2 writes the older envelope with the value as
//!    base64 (and `exp` as `null` when the cookie has none):
//!    `{"_rails":{"message":"InRvayI=","exp":"2046-11-30T03:08:15.123Z","pur":"cookie.session_token"}}`.
//!    Rails reads that form only when it starts with `{"_rails":{"message":`; the expiry is
//!    `Time#utc.iso8601(3)`. `cookies.permanent` makes the expiry `20.years.from_now`.
//! 3. The envelope JSON is signed with a [`MessageVerifier`]: `base64 + "--" + hex HMAC`. The
//!    key is `key_generator.generate_key("signed cookie")` (PBKDF2 with the app's
//!    `key_generator_hash_digest_class`, SHA256 since `load_defaults "7.0"`); the MAC digest is
//!    `config.action_dispatch.signed_cookie_digest`, which no `load_defaults` sets, so the
//!    jar's fallback `"SHA1"`.
//! 4. Rack percent-escapes the token for the header, so `=` padding becomes `%3D`.
//!
//! Reading reverses this: percent-decode, verify the MAC, parse the envelope, check the
//! purpose and the expiry, and return the value, which must be a JSON string. Besides the
//! envelope above, a jar reads the Rails 7.1+ form with the value inline
//! (`{"_rails":{"data":"tok",…}}`), which Hearth wrote before it wrote Rails' own form, and it
//! may read with more than one key and digest ([`SignedCookieJar::reading_also`]), as Rails'
//! `cookies_rotations` do.

use std::time::SystemTime;

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;

use super::json::{write_json_string, JsonEscaping};
use super::key_generator::{generate_key, KdfDigest, ITERATIONS};
use super::message_verifier::{decode64_with_fallback, MacDigest, MessageVerifier};
use super::time::{format_iso8601_millis, unix_nanos};

/// The key generator salt of the signed cookie jar (`config.action_dispatch.signed_cookie_salt`).
const SIGNED_COOKIE_SALT: &str = "signed cookie";

/// How many years `cookies.permanent` keeps a cookie (`20.years.from_now`).
pub const PERMANENT_YEARS: i32 = 20;

/// Bytes escaped in a cookie value: everything except ASCII letters, digits and `-` `_` `.`
/// `~`. For the characters a signed cookie can contain (base64, `-`, hex) this is exactly what
/// Rack's `Utils.escape` does: `+` → `%2B`, `/` → `%2F`, `=` → `%3D`.
const COOKIE_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The expiry Rails' `cookies.permanent` gives a cookie written at `now`: 20 calendar years
/// later (see [`super::time::years_later`]). The same instant is the envelope's `exp` and the
/// `Set-Cookie` `expires` attribute.
pub fn permanent_expiry(now: SystemTime) -> SystemTime {
    super::time::years_later(now, PERMANENT_YEARS)
}

/// Writes and reads cookies in the format of Rails' `cookies.signed` jar.
///
/// Holds keyed MACs only; `Debug` never shows a key. See the [module docs](self) for the
/// format and its sources.
#[derive(Clone, Debug)]
pub struct SignedCookieJar {
    /// Signs, and verifies first.
    verifier: MessageVerifier,
    /// The verifiers read with besides the writer's, in order, each once.
    also: Vec<MessageVerifier>,
}

impl SignedCookieJar {
    /// The jar of a Rails app on `load_defaults "7.0"` or later with no cookie settings of its
    /// own, such as Campfire: key = PBKDF2-HMAC-SHA256(`secret_key_base`, `"signed cookie"`,
    /// 1000 iterations, 64 bytes), MAC = HMAC-SHA1. It also reads cookies with an HMAC-SHA256
    /// MAC under the same key: those Hearth wrote before, and those of an app that sets
    /// `signed_cookie_digest = "SHA256"`.
    ///
    /// Runs PBKDF2, so build the jar once and share it.
    pub fn from_secret_key_base(secret_key_base: &[u8]) -> Self {
        Self::for_server(secret_key_base, KdfDigest::Sha256, MacDigest::Sha1)
    }

    /// The jar a Hearth server uses: it writes with `kdf` (the app's
    /// `key_generator_hash_digest_class`) and `mac` (its `signed_cookie_digest`, SHA1 when
    /// unset) and also reads the cookies Hearth wrote before it wrote Rails' own form (SHA256
    /// key derivation, HMAC-SHA256), so no earlier session ends.
    pub fn for_server(secret_key_base: &[u8], kdf: KdfDigest, mac: MacDigest) -> Self {
        Self::with_digests(secret_key_base, kdf, mac).reading_also(
            secret_key_base,
            KdfDigest::Sha256,
            MacDigest::Sha256,
        )
    }

    /// A jar that writes and reads with exactly these digests: `kdf` is the app's
    /// `key_generator_hash_digest_class`, `mac` its `signed_cookie_digest` (Rails falls back to
    /// SHA1 when that setting is unset).
    pub fn with_digests(secret_key_base: &[u8], kdf: KdfDigest, mac: MacDigest) -> Self {
        Self {
            verifier: verifier(secret_key_base, kdf, mac),
            also: Vec::new(),
        }
    }

    /// This jar, also reading cookies signed under `secret_key_base` with `kdf` and `mac`
    /// (tried after the writer's own, like an entry of Rails' `cookies_rotations.signed`).
    /// Nothing changes when the writer or an earlier entry already uses that pair with the
    /// same secret.
    #[must_use]
    pub fn reading_also(mut self, secret_key_base: &[u8], kdf: KdfDigest, mac: MacDigest) -> Self {
        let candidate = verifier(secret_key_base, kdf, mac);
        // Same digest and same key sign alike; the keys themselves are never kept.
        let probe = |v: &MessageVerifier| (v.digest(), v.generate(b"signed cookie jar"));
        let known = std::iter::once(&self.verifier)
            .chain(&self.also)
            .any(|v| probe(v) == probe(&candidate));
        if !known {
            self.also.push(candidate);
        }
        self
    }

    /// Signs `value` for the cookie `name`, like `cookies.signed[name] = { value:, expires: }`
    /// in Rails 8.2 (and every Rails since 6.0).
    ///
    /// Returns the cookie **value** for `Set-Cookie` (`name=` and the attributes are the
    /// caller's), already percent-escaped:
    /// `escape(strict_base64({"_rails":{"message":strict_base64(json(value)),"exp":"<iso8601>"|null,"pur":"cookie.<name>"}}) + "--" + hex_mac)`.
    /// `exp` is written as UTC with milliseconds (`2046-11-30T03:08:15.123Z`, sub-millisecond
    /// part truncated), `null` when `expires_at` is `None`. The value's JSON is escaped as
    /// ActiveSupport::JSON does under `load_defaults "8.1"`.
    pub fn sign(&self, name: &str, value: &str, expires_at: Option<SystemTime>) -> String {
        use base64::Engine as _;
        let mut json = Vec::with_capacity(value.len() + 2);
        write_json_string(&mut json, value, JsonEscaping::RAILS_8_1);
        let message = base64::engine::general_purpose::STANDARD.encode(&json);
        let mut envelope = Vec::with_capacity(message.len() + name.len() + 80);
        envelope.extend_from_slice(br#"{"_rails":{"message":""#);
        envelope.extend_from_slice(message.as_bytes());
        envelope.extend_from_slice(br#"","exp":"#);
        match expires_at {
            Some(at) => {
                envelope.push(b'"');
                envelope.extend_from_slice(format_iso8601_millis(unix_nanos(at)).as_bytes());
                envelope.push(b'"');
            }
            None => envelope.extend_from_slice(b"null"),
        }
        envelope.extend_from_slice(br#","pur":"#);
        write_json_string(&mut envelope, &purpose(name), JsonEscaping::RAILS_8_1);
        envelope.extend_from_slice(b"}}");
        self.sign_envelope(&envelope)
    }

    /// Signs `envelope` as is (the serialized metadata, e.g. `{"_rails":{"data":"v"}}`) and
    /// returns the percent-escaped cookie value, as [`SignedCookieJar::sign`] does after
    /// building its envelope. Lets tests and fuzzers reach [`SignedCookieJar::verify_at`]'s
    /// envelope checks with a valid MAC.
    pub fn sign_envelope(&self, envelope: &[u8]) -> String {
        let token = self.verifier.generate(envelope);
        utf8_percent_encode(&token, COOKIE_VALUE).to_string()
    }

    /// Reads the signed cookie `name` from its raw `Cookie` header value, checking expiry
    /// against the system clock. See [`SignedCookieJar::verify_at`].
    pub fn verify(&self, name: &str, cookie_value: &str) -> Option<String> {
        self.verify_at(name, cookie_value, SystemTime::now())
    }

    /// Reads the signed cookie `name` as if the time were `now`.
    ///
    /// Steps, each returning `None` on failure (never panicking):
    /// 1. percent-decode `cookie_value` (it must decode to UTF-8; `+` stays `+`);
    /// 2. [`MessageVerifier::verify`] the token with the writer's key and digest, then with
    ///    each pair of [`SignedCookieJar::reading_also`];
    /// 3. parse the data as JSON: an object whose `_rails` member is an object;
    /// 4. `pur`, if present and not `null`, must equal `cookie.<name>`;
    /// 5. `exp`, if present and not `null`, must be an ISO 8601 string (`YYYY-MM-DDTHH:MM:SS`,
    ///    optional fraction, `Z` or a numeric offset) later than `now`; any other type is
    ///    rejected;
    /// 6. the value is `message` (Rails' form), a base64 string whose decoded bytes are JSON for
    ///    a string, or else `data` (the Rails 7.1+ form), which must be a JSON string.
    ///
    /// A token without an envelope (cookies written before Rails 6.0) is rejected: Rails still
    /// reads those as a fallback, but they carry no purpose, so one cookie could stand in for
    /// another. Source: `SignedKeyRotatingCookieJar#parse` and `Messages::Metadata`.
    pub fn verify_at(&self, name: &str, cookie_value: &str, now: SystemTime) -> Option<String> {
        let token = percent_decode_str(cookie_value).decode_utf8().ok()?;
        let data = std::iter::once(&self.verifier)
            .chain(&self.also)
            .find_map(|v| v.verify(&token))?;
        read_envelope(&data, name, now)
    }
}

/// The `MessageVerifier` of the signed cookie jar for this secret and these digests.
fn verifier(secret_key_base: &[u8], kdf: KdfDigest, mac: MacDigest) -> MessageVerifier {
    let key = generate_key(secret_key_base, SIGNED_COOKIE_SALT, ITERATIONS, 64, kdf);
    MessageVerifier::new(&key, mac)
}

/// Steps 3–6 of [`SignedCookieJar::verify_at`]: the value of a verified envelope.
fn read_envelope(data: &[u8], name: &str, now: SystemTime) -> Option<String> {
    let envelope: Value = serde_json::from_slice(data).ok()?;
    let meta = envelope.as_object()?.get("_rails")?.as_object()?;

    match meta.get("pur") {
        None | Some(Value::Null) => {}
        Some(Value::String(p)) if *p == purpose(name) => {}
        Some(_) => return None,
    }

    super::time::unexpired(meta, now)?;

    if let Some(legacy) = meta.get("message") {
        let json = decode64_with_fallback(legacy.as_str()?.as_bytes())?;
        return match serde_json::from_slice::<Value>(&json).ok()? {
            Value::String(s) => Some(s),
            _ => None,
        };
    }
    meta.get("data")?.as_str().map(str::to_owned)
}

/// The metadata purpose Rails gives a cookie: `"cookie.#{name}"`.
fn purpose(name: &str) -> String {
    format!("cookie.{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine as _;
    use std::time::{Duration, UNIX_EPOCH};

    const PEER_SKB: &str =
        "peer-secret-key-base-0000000000000000000000000000000000000000000000000000000000000000";
    const S6_VALUE: &str = "eyJfcmFpbHMiOnsibWVzc2FnZSI6IkltVnlhVzRpIiwiZXhwIjpudWxsLCJwdXIiOiJjb29raWUudXNlcl9pZCJ9fQ%3D%3D--d268d1c6afdbbf0e82262e49106c10897bbd93256ddc6e62fb6af2617558e7db";

    fn jar() -> SignedCookieJar {
        SignedCookieJar::from_secret_key_base(PEER_SKB.as_bytes())
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// Decodes the envelope of a value `sign` returned, for format assertions.
    fn envelope_of(signed: &str) -> String {
        let token = percent_decode_str(signed).decode_utf8().unwrap();
        let (data, _) = token.split_once("--").unwrap();
        String::from_utf8(STANDARD.decode(data).unwrap()).unwrap()
    }

    #[test]
    fn peer_skb_is_the_documented_one() {
        assert_eq!(PEER_SKB, format!("peer-secret-key-base-{}", "0".repeat(64)));
    }

    #[test]
    fn transcript_s6_legacy_envelope() {
        let jar = jar();
        assert_eq!(jar.verify("user_id", S6_VALUE).as_deref(), Some("erin"));
        // Same value, other cookie name: purpose mismatch.
        assert_eq!(jar.verify("session_id", S6_VALUE), None);
        // Other secret.
        let other = SignedCookieJar::from_secret_key_base(b"another-secret");
        assert_eq!(other.verify("user_id", S6_VALUE), None);
        // SHA1 MAC or SHA1 KDF with the same secret: not this cookie.
        let sha1_mac =
            SignedCookieJar::with_digests(PEER_SKB.as_bytes(), KdfDigest::Sha256, MacDigest::Sha1);
        assert_eq!(sha1_mac.verify("user_id", S6_VALUE), None);
        let sha1_kdf =
            SignedCookieJar::with_digests(PEER_SKB.as_bytes(), KdfDigest::Sha1, MacDigest::Sha256);
        assert_eq!(sha1_kdf.verify("user_id", S6_VALUE), None);
        // Not percent-escaped (as some clients send it) still decodes the same.
        let raw = S6_VALUE.replace("%3D", "=");
        assert_eq!(jar.verify("user_id", &raw).as_deref(), Some("erin"));
    }

    #[test]
    fn transcript_s6_tampered() {
        let jar = jar();
        let mut tampered = S6_VALUE.to_owned();
        tampered.replace_range(10..11, "Z");
        assert_eq!(jar.verify("user_id", &tampered), None);
        let flipped_mac = S6_VALUE.replace("e7db", "e7dc");
        assert_eq!(jar.verify("user_id", &flipped_mac), None);
        assert_eq!(jar.verify("user_id", ""), None);
        assert_eq!(jar.verify("user_id", "erin"), None);
        assert_eq!(jar.verify("user_id", "%ff%fe"), None);
        assert_eq!(jar.verify("user_id", "%"), None);
    }

    /// What Rails 8.2.0.alpha (Campfire's pinned commit) writes for
    /// `cookies.signed.permanent[:session_token] = "tokABC123"` with `load_defaults 8.2` and
    /// `secret_key_base` "campfire-secret" at 2027-01-15T08:00:00.123Z (run once with Rails'
    /// own ActionDispatch::Cookies; Rails 6.1's jar, configured alike, writes the same bytes).
    const RAILS_82_SESSION_TOKEN: &str = "eyJfcmFpbHMiOnsibWVzc2FnZSI6IkluUnZhMEZDUXpFeU15ST0iLCJleHAiOiIyMDQ3LTAxLTE1VDA4OjAwOjAwLjEyM1oiLCJwdXIiOiJjb29raWUuc2Vzc2lvbl90b2tlbiJ9fQ%3D%3D--8c81f1b3d5c9dfd4e34a3ecb4027c9d767a76d2f";

    fn iso(text: &str) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(super::super::time::parse_iso8601(text).unwrap() as u64)
    }

    #[test]
    fn writes_and_reads_what_rails_82_writes() {
        let jar = SignedCookieJar::from_secret_key_base(b"campfire-secret");
        let written = iso("2027-01-15T08:00:00.123Z");
        let exp = permanent_expiry(written);
        assert_eq!(exp, iso("2047-01-15T08:00:00.123Z"));
        assert_eq!(
            jar.sign("session_token", "tokABC123", Some(exp)),
            RAILS_82_SESSION_TOKEN
        );
        assert_eq!(
            jar.verify_at("session_token", RAILS_82_SESSION_TOKEN, written)
                .as_deref(),
            Some("tokABC123")
        );
        assert_eq!(
            jar.verify_at("session_token", RAILS_82_SESSION_TOKEN, exp),
            None
        );
        assert_eq!(
            jar.verify_at("last_room", RAILS_82_SESSION_TOKEN, written),
            None
        );
        let other = SignedCookieJar::from_secret_key_base(b"another-secret");
        assert_eq!(
            other.verify_at("session_token", RAILS_82_SESSION_TOKEN, written),
            None
        );
    }

    #[test]
    fn sign_writes_rails_envelope() {
        let jar = jar();
        let signed = jar.sign("user_id", "erin", None);
        assert_eq!(
            envelope_of(&signed),
            r#"{"_rails":{"message":"ImVyaW4i","exp":null,"pur":"cookie.user_id"}}"#
        );
        assert!(signed
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~%".contains(&b)));
        let (_, mac) = signed.rsplit_once("--").unwrap();
        assert_eq!(
            mac.len(),
            40,
            "HMAC-SHA1, Rails' default signed_cookie_digest"
        );

        let exp =
            UNIX_EPOCH + Duration::from_millis(2_427_160_095_123) + Duration::from_micros(999);
        let signed = jar.sign("user_id", "<b>&\u{2028}", Some(exp));
        let envelope = envelope_of(&signed);
        assert_eq!(
            envelope,
            r#"{"_rails":{"message":"Ilx1MDAzY2JcdTAwM2VcdTAwMjbigKgi","exp":"2046-11-30T03:08:15.123Z","pur":"cookie.user_id"}}"#
        );
        assert_eq!(
            STANDARD.decode("Ilx1MDAzY2JcdTAwM2VcdTAwMjbigKgi").unwrap(),
            "\"\\u003cb\\u003e\\u0026\u{2028}\"".as_bytes()
        );
    }

    #[test]
    fn reads_the_cookies_hearth_wrote_before() {
        // Hearth wrote the Rails 7.1+ envelope with HMAC-SHA256 under the SHA256-derived key.
        let before = SignedCookieJar::with_digests(
            PEER_SKB.as_bytes(),
            KdfDigest::Sha256,
            MacDigest::Sha256,
        );
        let cookie = before.sign_envelope(
            br#"{"_rails":{"data":"tok","exp":"2046-11-30T03:08:15.123Z","pur":"cookie.session_token"}}"#,
        );
        let now = at(1_900_000_000);
        for jar in [
            jar(),
            SignedCookieJar::for_server(PEER_SKB.as_bytes(), KdfDigest::Sha256, MacDigest::Sha1),
            SignedCookieJar::for_server(PEER_SKB.as_bytes(), KdfDigest::Sha1, MacDigest::Sha1),
        ] {
            assert_eq!(
                jar.verify_at("session_token", &cookie, now).as_deref(),
                Some("tok")
            );
            assert_eq!(jar.verify_at("_hearth_session", &cookie, now), None);
        }
        // A jar of Rails' digests alone does not.
        let rails =
            SignedCookieJar::with_digests(PEER_SKB.as_bytes(), KdfDigest::Sha256, MacDigest::Sha1);
        assert_eq!(rails.verify_at("session_token", &cookie, now), None);
        // And what the server writes now, the Rails jar reads.
        let server =
            SignedCookieJar::for_server(PEER_SKB.as_bytes(), KdfDigest::Sha256, MacDigest::Sha1);
        let fresh = server.sign("session_token", "tok", None);
        assert_eq!(
            rails.verify_at("session_token", &fresh, now).as_deref(),
            Some("tok")
        );
    }

    #[test]
    fn reading_also_keeps_each_key_once() {
        let skb = PEER_SKB.as_bytes();
        let jar = SignedCookieJar::with_digests(skb, KdfDigest::Sha256, MacDigest::Sha1)
            .reading_also(skb, KdfDigest::Sha256, MacDigest::Sha1)
            .reading_also(skb, KdfDigest::Sha256, MacDigest::Sha256)
            .reading_also(skb, KdfDigest::Sha256, MacDigest::Sha256)
            .reading_also(b"old secret", KdfDigest::Sha256, MacDigest::Sha1);
        assert_eq!(jar.also.len(), 2);
        let old = SignedCookieJar::with_digests(b"old secret", KdfDigest::Sha256, MacDigest::Sha1);
        let cookie = old.sign("k", "v", None);
        assert_eq!(jar.verify("k", &cookie).as_deref(), Some("v"));
    }

    #[test]
    fn sign_verify_round_trip_without_and_with_exp() {
        let jar = jar();
        for value in ["erin", "", "é ☃ 😀", "a=b+c/d", "\"quoted\"\n", "<script>"] {
            let signed = jar.sign("user_id", value, None);
            assert_eq!(jar.verify("user_id", &signed).as_deref(), Some(value));
            assert_eq!(jar.verify("other", &signed), None);
        }
        let exp = at(2_000_000_000);
        let signed = jar.sign("session_id", "42", Some(exp));
        assert_eq!(
            jar.verify_at("session_id", &signed, at(1_999_999_999))
                .as_deref(),
            Some("42")
        );
        assert_eq!(jar.verify_at("session_id", &signed, exp), None);
        assert_eq!(
            jar.verify_at("session_id", &signed, at(2_000_000_001)),
            None
        );
        // An expiry in the past is rejected by `verify`, which uses the clock.
        let past = jar.sign("session_id", "42", Some(at(1)));
        assert_eq!(jar.verify("session_id", &past), None);
    }

    #[test]
    fn millisecond_expiry_boundary() {
        let jar = jar();
        let exp = at(1_800_000_000) + Duration::from_millis(500);
        let signed = jar.sign("k", "v", Some(exp));
        let just_before = exp - Duration::from_nanos(1);
        assert_eq!(
            jar.verify_at("k", &signed, just_before).as_deref(),
            Some("v")
        );
        assert_eq!(jar.verify_at("k", &signed, exp), None);
    }

    /// Signs an arbitrary envelope with the jar's verifier, percent-escaped like a cookie.
    fn sign_raw(jar: &SignedCookieJar, envelope: &str) -> String {
        let token = jar.verifier.generate(envelope.as_bytes());
        utf8_percent_encode(&token, COOKIE_VALUE).to_string()
    }

    #[test]
    fn envelope_rules() {
        let jar = jar();
        let now = at(1_900_000_000);
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"_rails":{"data":"v","pur":"cookie.k"}}"#, Some("v")),
            (r#"{"_rails":{"data":"v"}}"#, Some("v")),
            (
                r#"{"_rails":{"data":"v","pur":null,"exp":null}}"#,
                Some("v"),
            ),
            (
                r#"{"_rails":{"data":"v","exp":"2046-11-30T03:08:15.123Z"}}"#,
                Some("v"),
            ),
            (
                r#"{"_rails":{"data":"v","exp":"2046-11-30T03:08:15Z"}}"#,
                Some("v"),
            ),
            (
                r#"{"_rails":{"data":"v","exp":"2046-11-30T03:08:15+09:00"}}"#,
                Some("v"),
            ),
            (
                r#"{"_rails":{"data":"v","exp":"2020-01-01T00:00:00.000Z"}}"#,
                None,
            ),
            (r#"{"_rails":{"data":"v","exp":1999999999}}"#, None),
            (r#"{"_rails":{"data":"v","exp":false}}"#, None),
            (r#"{"_rails":{"data":"v","exp":"tomorrow"}}"#, None),
            (
                r#"{"_rails":{"data":"v","exp":"2046-11-30T03:08:15"}}"#,
                None,
            ),
            (r#"{"_rails":{"data":"v","pur":"cookie.other"}}"#, None),
            (r#"{"_rails":{"data":"v","pur":""}}"#, None),
            (r#"{"_rails":{"data":"v","pur":7}}"#, None),
            (r#"{"_rails":{"data":42,"pur":"cookie.k"}}"#, None),
            (r#"{"_rails":{"data":null,"pur":"cookie.k"}}"#, None),
            (r#"{"_rails":{"data":{"a":"b"},"pur":"cookie.k"}}"#, None),
            (r#"{"_rails":{"pur":"cookie.k"}}"#, None),
            (r#"{"_rails":"v"}"#, None),
            (r#"{"_rails":null}"#, None),
            (r#"{"rails":{"data":"v"}}"#, None),
            (r#""v""#, None),
            (r#"["v"]"#, None),
            (r#"{"_rails":{"data":"v""#, None),
            ("", None),
            // Legacy envelope: message is base64 of the JSON value.
            (
                r#"{"_rails":{"message":"InYi","exp":null,"pur":"cookie.k"}}"#,
                Some("v"),
            ),
            (r#"{"_rails":{"message":"InYi","pur":"cookie.x"}}"#, None),
            (r#"{"_rails":{"message":"NDI=","pur":"cookie.k"}}"#, None),
            (
                r#"{"_rails":{"message":"not base64!","pur":"cookie.k"}}"#,
                None,
            ),
            (
                r#"{"_rails":{"message":"bm90IGpzb24=","pur":"cookie.k"}}"#,
                None,
            ),
            (r#"{"_rails":{"message":7,"pur":"cookie.k"}}"#, None),
        ];
        for (envelope, expected) in cases {
            let signed = sign_raw(&jar, envelope);
            assert_eq!(
                jar.verify_at("k", &signed, now).as_deref(),
                *expected,
                "{envelope}"
            );
        }
    }

    #[test]
    fn debug_hides_the_key() {
        let shown = format!("{:?}", jar());
        assert!(shown.contains("SignedCookieJar"));
        assert!(!shown.contains("peer-secret"));
    }

    #[test]
    fn huge_and_random_values_return_none() {
        let jar = jar();
        let huge = "%3D".repeat(1_000_000);
        assert_eq!(jar.verify("k", &huge), None);
        let mut state: u64 = 0xDEAD_BEEF_CAFE_F00D;
        for _ in 0..2_000 {
            let mut s = String::new();
            for _ in 0..(state % 160) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push(char::from(b"AZaz09%3D-_+/="[(state % 14) as usize]));
            }
            assert_eq!(jar.verify("k", &s), None);
            state = state.wrapping_add(1);
        }
    }
}
