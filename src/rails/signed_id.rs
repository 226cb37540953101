//! Active Record's signed ids (`record.signed_id(purpose:, expires_in:)` and
//! `Model.find_signed(id, purpose:)`), byte-compatible with a Rails 7.1+ application that has
//! the same `secret_key_base`.
//!
//! What Rails does (`activerecord/lib/active_record/signed_id.rb` and the Active Record
//! railtie):
//!
//! - the verifier is `MessageVerifier.new(key_generator.generate_key("active_record/signed_id"),
//!   digest: "SHA256", serializer: JSON, url_safe: true)`;
//! - the purpose is the model's name and the given purpose joined by `/`
//!   (`combine_signed_id_purposes`): `user/transfer` for Campfire's transfer link;
//! - the signed data is the Rails 7.1+ metadata envelope around the integer id:
//!   `{"_rails":{"data":42,"exp":"2026-12-01T18:00:00.000Z","pur":"user/transfer"}}`, encoded
//!   with URL-safe base64 without padding.
//!
//! [`SignedIdVerifier::verify_at`] returns the id only when the MAC, the purpose and the
//! expiry all hold; it never panics and says nothing about why a token failed.

use std::time::SystemTime;

use serde_json::Value;

use super::json::{write_json_string, JsonEscaping};
use super::key_generator::{generate_key, KdfDigest, ITERATIONS};
use super::message_verifier::{MacDigest, MessageVerifier};
use super::time::{format_iso8601_millis, unix_nanos};

/// The key generator salt of Active Record's signed ids.
const SIGNED_ID_SALT: &str = "active_record/signed_id";

/// Signs and reads Active Record signed ids (see the [module docs](self)). `Debug` never shows
/// the key.
#[derive(Clone, Debug)]
pub struct SignedIdVerifier {
    verifier: MessageVerifier,
}

impl SignedIdVerifier {
    /// The verifier of an application with this `secret_key_base`, its key derived with
    /// `kdf` (SHA256 for `load_defaults "7.0"` and later). Runs PBKDF2: build it once.
    pub fn from_secret_key_base(secret_key_base: &[u8], kdf: KdfDigest) -> Self {
        let key = generate_key(secret_key_base, SIGNED_ID_SALT, ITERATIONS, 64, kdf);
        Self {
            verifier: MessageVerifier::new(&key, MacDigest::Sha256),
        }
    }

    /// `signed_id(purpose:, expires_in:)` of record `id` of `model` (its underscored name, e.g.
    /// `user`), valid until `expires_at`: a URL-safe token.
    pub fn generate(&self, model: &str, purpose: &str, id: i64, expires_at: SystemTime) -> String {
        let opts = JsonEscaping::default();
        let mut envelope = Vec::with_capacity(96);
        envelope.extend_from_slice(br#"{"_rails":{"data":"#);
        envelope.extend_from_slice(id.to_string().as_bytes());
        envelope.extend_from_slice(br#","exp":""#);
        envelope.extend_from_slice(format_iso8601_millis(unix_nanos(expires_at)).as_bytes());
        envelope.extend_from_slice(br#"","pur":"#);
        write_json_string(&mut envelope, &format!("{model}/{purpose}"), opts);
        envelope.extend_from_slice(b"}}");
        self.verifier.generate_url_safe(&envelope)
    }

    /// `find_signed(token, purpose:)`'s check against the system clock: the id, or `None`.
    pub fn verify(&self, model: &str, purpose: &str, token: &str) -> Option<i64> {
        self.verify_at(model, purpose, token, SystemTime::now())
    }

    /// The id a token carries if its MAC is right, its purpose is `model/purpose` and its
    /// expiry (when it has one) is later than `now`; `None` otherwise. The id must be an
    /// integer (or a string of digits, as Rails also accepts).
    pub fn verify_at(
        &self,
        model: &str,
        purpose: &str,
        token: &str,
        now: SystemTime,
    ) -> Option<i64> {
        if token.len() > 1024 {
            return None;
        }
        let data = self.verifier.verify(token)?;
        let envelope: Value = serde_json::from_slice(&data).ok()?;
        let meta = envelope.as_object()?.get("_rails")?.as_object()?;
        if meta.get("pur")?.as_str()? != format!("{model}/{purpose}") {
            return None;
        }
        super::time::unexpired(meta, now)?;
        match meta.get("data")? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    fn verifier() -> SignedIdVerifier {
        SignedIdVerifier::from_secret_key_base(b"a-secret-key-base", KdfDigest::Sha256)
    }

    #[test]
    fn round_trips_until_the_expiry() {
        let v = verifier();
        let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let token = v.generate("user", "transfer", 42, at);
        assert!(!token.contains('=') && !token.contains('+') && !token.contains('/'));
        let before = at - Duration::from_millis(1);
        assert_eq!(v.verify_at("user", "transfer", &token, before), Some(42));
        assert_eq!(v.verify_at("user", "transfer", &token, at), None);
        assert_eq!(v.verify_at("user", "reset", &token, before), None);
        assert_eq!(v.verify_at("room", "transfer", &token, before), None);
    }

    #[test]
    fn the_envelope_is_rails_71s() {
        let v = verifier();
        let at = UNIX_EPOCH + Duration::from_millis(1_800_000_000_123);
        let token = v.generate("user", "transfer", 7, at);
        let (data, _) = token.split_once("--").unwrap();
        let json = super::super::message_verifier::urlsafe_decode64(data.as_bytes()).unwrap();
        assert_eq!(
            String::from_utf8(json).unwrap(),
            r#"{"_rails":{"data":7,"exp":"2027-01-15T08:00:00.123Z","pur":"user/transfer"}}"#
        );
    }

    #[test]
    fn forged_and_hostile_tokens_find_nothing() {
        let v = verifier();
        let at = SystemTime::now() + Duration::from_secs(3600);
        let token = v.generate("user", "transfer", 42, at);
        let other = SignedIdVerifier::from_secret_key_base(b"another", KdfDigest::Sha256);
        assert_eq!(other.verify("user", "transfer", &token), None);
        let mut forged = token.into_bytes();
        forged[3] ^= 1;
        assert_eq!(
            v.verify("user", "transfer", &String::from_utf8_lossy(&forged)),
            None
        );
        for junk in ["", "--", "x--y", &"a".repeat(5000), "42"] {
            assert_eq!(v.verify("user", "transfer", junk), None);
        }
    }
}
