//! Active Record's `generates_token_for` (Rails 7.1+, `activerecord/lib/active_record/
//! token_for.rb`): a signed, expiring token for one record and one purpose, whose payload
//! carries a value of the record, so that the token stops resolving once that value changes.
//!
//! What Rails does, and this module with it:
//!
//! - the verifier is `Rails.application.message_verifiers["active_record/token_for"]`: the key
//!   is `key_generator.generate_key("active_record/token_for")` (64 bytes), the MAC HMAC-SHA1
//!   (`MessageVerifier`'s default), the serializer JSON, the encoding strict base64;
//! - the purpose is `[class name, purpose, expires_in].join("\n")`, e.g.
//!   `"User\npassword_reset\n900"` (a duration joins as its seconds);
//! - the payload is `[id, value.as_json]`, in Rails 7.1's metadata envelope with the expiry:
//!   `{"_rails":{"data":[42,"…"],"exp":"2026-12-07T18:15:00.000Z","pur":"User\npassword_reset\n900"}}`;
//! - resolving checks the MAC, the purpose and the expiry, looks the record up by the id, and
//!   compares the payload with the record's **current** one: for a password reset the value is
//!   the last 10 characters of the bcrypt salt (the `password_salt&.last(10)` of Rails' own
//!   example), so a token dies as soon as the password changes, which also makes it single use.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::json::{write_json_string, JsonEscaping};
use super::key_generator::{generate_key, KdfDigest, ITERATIONS};
use super::message_verifier::{MacDigest, MessageVerifier};
use super::time::{format_iso8601_millis, unix_nanos};

/// The key generator salt of `generates_token_for`'s verifier.
const SALT: &str = "active_record/token_for";

/// Signs and resolves `generates_token_for` tokens (see the [module docs](self)). `Debug`
/// never shows the key.
#[derive(Clone, Debug)]
pub struct TokenFor {
    verifier: MessageVerifier,
}

/// One token definition: `generates_token_for :purpose, expires_in:` on class `class`.
#[derive(Clone, Copy, Debug)]
pub struct Definition {
    /// The model's class name (`User`).
    pub class: &'static str,
    /// The purpose (`password_reset`).
    pub purpose: &'static str,
    /// `expires_in`.
    pub expires_in: Duration,
}

impl Definition {
    /// Rails' `full_purpose`: class, purpose and seconds joined by newlines.
    pub fn full_purpose(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.class,
            self.purpose,
            self.expires_in.as_secs()
        )
    }
}

/// The password reset of Rails' documentation: `User`, `password_reset`, 15 minutes.
pub const PASSWORD_RESET: Definition = Definition {
    class: "User",
    purpose: "password_reset",
    expires_in: Duration::from_secs(15 * 60),
};

/// The value a password-reset token carries: the last 10 characters of the bcrypt digest's
/// salt (`BCrypt::Password#salt`, the first 29 characters `$2a$12$` + 22 of salt); `None`
/// for a digest too short to hold one (no password).
pub fn password_salt_tail(digest: &str) -> Option<&str> {
    digest.get(19..29)
}

/// The value Hearth's reset tokens carry: [`password_salt_tail`] then 16 hex digits of the
/// SHA-256 of the address the link was sent to, so a link dies when the password changes
/// (as in Rails' documentation) and also when the address does (it was mailed to the old
/// one). `None` for a digest without a salt.
pub fn password_reset_value(digest: &str, email_address: &str) -> Option<String> {
    use sha2::Digest as _;
    let tail = password_salt_tail(digest)?;
    let hash = sha2::Sha256::digest(email_address.as_bytes());
    Some(format!("{tail}{}", hex::encode(&hash[..8])))
}

impl TokenFor {
    /// The verifier of an application with this `secret_key_base` (key derived with `kdf`).
    /// Runs PBKDF2: build it once.
    pub fn from_secret_key_base(secret_key_base: &[u8], kdf: KdfDigest) -> Self {
        let key = generate_key(secret_key_base, SALT, ITERATIONS, 64, kdf);
        Self {
            verifier: MessageVerifier::new(&key, MacDigest::Sha1),
        }
    }

    /// `record.generate_token_for(purpose)` at `now`, for record `id` whose value is `value`.
    pub fn generate(&self, def: &Definition, id: i64, value: &str, now: SystemTime) -> String {
        let opts = JsonEscaping::default();
        let mut envelope = Vec::with_capacity(128);
        envelope.extend_from_slice(br#"{"_rails":{"data":["#);
        envelope.extend_from_slice(id.to_string().as_bytes());
        envelope.push(b',');
        write_json_string(&mut envelope, value, opts);
        envelope.extend_from_slice(br#"],"exp":""#);
        let exp = format_iso8601_millis(unix_nanos(now + def.expires_in));
        envelope.extend_from_slice(exp.as_bytes());
        envelope.extend_from_slice(br#"","pur":"#);
        write_json_string(&mut envelope, &def.full_purpose(), opts);
        envelope.extend_from_slice(b"}}");
        self.verifier.generate(&envelope)
    }

    /// The first half of `find_by_token_for`: the id and value a token carries if its MAC,
    /// purpose and expiry (against `now`) hold. The caller then compares the value with the
    /// record's current one ([`TokenFor::resolves`]).
    pub fn read(&self, def: &Definition, token: &str, now: SystemTime) -> Option<(i64, String)> {
        if token.len() > 2048 {
            return None;
        }
        let data = self.verifier.verify(token)?;
        let envelope: Value = serde_json::from_slice(&data).ok()?;
        let meta = envelope.as_object()?.get("_rails")?.as_object()?;
        if meta.get("pur")?.as_str()? != def.full_purpose() {
            return None;
        }
        super::time::unexpired(meta, now)?;
        match meta.get("data")?.as_array()?.as_slice() {
            [Value::Number(id), Value::String(value)] => Some((id.as_i64()?, value.clone())),
            _ => None,
        }
    }

    /// Whether a value read from a token equals the record's current value (constant time).
    pub fn resolves(read: &str, current: &str) -> bool {
        use subtle::ConstantTimeEq as _;
        read.len() == current.len() && bool::from(read.as_bytes().ct_eq(current.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    const DIGEST: &str = "$2b$12$abcdefghijklmnopqrstuvOOOOOOOOOOOOOOOOOOOOOOOOOOOOOOO";

    #[test]
    fn a_token_lives_fifteen_minutes_and_dies_with_the_password() {
        let t = TokenFor::from_secret_key_base(b"a-secret-key-base", KdfDigest::Sha256);
        let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let tail = password_salt_tail(DIGEST).unwrap();
        assert_eq!(tail, "mnopqrstuv");
        let token = t.generate(&PASSWORD_RESET, 42, tail, at);
        let (id, value) = t.read(&PASSWORD_RESET, &token, at).unwrap();
        assert_eq!((id, TokenFor::resolves(&value, tail)), (42, true));
        assert!(
            !TokenFor::resolves(&value, "zzzzzzzzzz"),
            "another password"
        );
        let later = at + Duration::from_secs(15 * 60);
        assert!(t.read(&PASSWORD_RESET, &token, later).is_none(), "expired");
        let other = Definition {
            purpose: "email_verification",
            ..PASSWORD_RESET
        };
        assert!(t.read(&other, &token, at).is_none(), "another purpose");
        let mut tampered = token.clone();
        tampered.replace_range(0..1, if token.starts_with('e') { "f" } else { "e" });
        assert!(t.read(&PASSWORD_RESET, &tampered, at).is_none());
    }

    #[test]
    fn the_envelope_is_rails_71s() {
        let t = TokenFor::from_secret_key_base(b"a-secret-key-base", KdfDigest::Sha256);
        let token = t.generate(&PASSWORD_RESET, 7, "abc", UNIX_EPOCH);
        let (data, _) = token.split_once("--").unwrap();
        let json =
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data).unwrap();
        assert_eq!(
            String::from_utf8(json).unwrap(),
            r#"{"_rails":{"data":[7,"abc"],"exp":"1970-01-01T00:15:00.000Z","pur":"User\npassword_reset\n900"}}"#
        );
    }
}
