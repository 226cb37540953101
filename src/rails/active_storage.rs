//! `ActiveStorage.verifier`: the signed ids of blobs, the variation keys of representations and
//! the disk service's expiring URLs, byte-compatible with a Rails app sharing `secret_key_base`.
//!
//! Rails builds it as `app.message_verifier("ActiveStorage")`: an `ActiveSupport::MessageVerifier`
//! (HMAC-SHA1, hex) keyed with `key_generator.generate_key("ActiveStorage")` (PBKDF2, 1000
//! iterations, 64 bytes; SHA256 or SHA1 per the app's defaults). Tokens carry a metadata
//! envelope `{"_rails":{"message":base64(Marshal.dump(value)),"exp":…,"pur":…}}` (Rails ≤ 7.0,
//! and readable by every later Rails whose serializer allows Marshal); [`ActiveStorageVerifier::verified`]
//! also reads the Rails 7.1+ envelope `{"_rails":{"data":value,"exp":…,"pur":…}}` with a JSON
//! value. The purposes are Active Storage's: `blob_id` (a blob's `signed_id`), `variation`
//! (`ActiveStorage::Variation#key`), `blob_key` (a disk service download URL) and `blob_token`
//! (a disk service upload URL).
//!
//! Sources: `activestorage/lib/active_storage/engine.rb` (initializer `active_storage.verifier`),
//! `app/models/active_storage/blob.rb` (`signed_id`, `combine_signed_id_purposes`),
//! `app/models/active_storage/variation.rb`, `lib/active_storage/service/disk_service.rb`,
//! `activesupport/lib/active_support/messages/metadata.rb`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use super::key_generator::{generate_key, KdfDigest, ITERATIONS};
use super::marshal::{self, Value};
use super::message_verifier::{MacDigest, MessageVerifier};

/// The salt of Active Storage's verifier (`app.message_verifier("ActiveStorage")`).
pub const SALT: &str = "ActiveStorage";

/// Signs and verifies Active Storage's tokens (see the module docs).
#[derive(Clone, Debug)]
pub struct ActiveStorageVerifier {
    verifier: MessageVerifier,
}

impl ActiveStorageVerifier {
    /// The verifier of a Rails app with this `secret_key_base` and key-generator digest.
    pub fn from_secret_key_base(secret_key_base: &[u8], kdf: KdfDigest) -> Self {
        let key = generate_key(secret_key_base, SALT, ITERATIONS, 64, kdf);
        Self {
            verifier: MessageVerifier::new(&key, MacDigest::Sha1),
        }
    }

    /// `ActiveStorage.verifier.generate(value, purpose:, expires_at:)`, with `expires_at` in
    /// milliseconds since the epoch (written as Rails' `iso8601(3)`), `None` for no expiry.
    pub fn generate(&self, value: &Value, purpose: &str, expires_at_ms: Option<i64>) -> String {
        let message = STANDARD.encode(marshal::dump(value));
        // Written by hand in Rails' key order (`message`, `exp`, `pur`), so the token is the
        // very text Rails makes for the same value. The parts are base64, an ISO 8601 time
        // and Active Storage's purpose names; the purpose is JSON-escaped all the same.
        let exp = match expires_at_ms {
            Some(ms) => format!(
                "\"{}\"",
                super::time::format_iso8601_millis(i128::from(ms) * 1_000_000)
            ),
            None => "null".to_owned(),
        };
        let purpose = serde_json::Value::String(purpose.to_owned()).to_string();
        let envelope =
            format!(r#"{{"_rails":{{"message":"{message}","exp":{exp},"pur":{purpose}}}}}"#);
        self.verifier.generate(envelope.as_bytes())
    }

    /// `ActiveStorage.verifier.verified(token, purpose:)`: the value, when the signature holds,
    /// the purpose matches and the expiry (if any) is after `now_ms`. `None` otherwise, never
    /// panicking.
    pub fn verified(&self, token: &str, purpose: &str, now_ms: i64) -> Option<Value> {
        let data = self.verifier.verify(token)?;
        let envelope: serde_json::Value = serde_json::from_slice(&data).ok()?;
        let rails = envelope.get("_rails")?;
        if rails.get("pur").and_then(serde_json::Value::as_str) != Some(purpose) {
            return None;
        }
        match rails.get("exp") {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::String(exp)) => {
                let exp_ms = super::time::parse_iso8601(exp)? / 1_000_000;
                if i128::from(now_ms) >= exp_ms {
                    return None;
                }
            }
            Some(_) => return None,
        }
        if let Some(message) = rails.get("message").and_then(serde_json::Value::as_str) {
            let bytes = STANDARD.decode(message).ok()?;
            return marshal::load(&bytes).or_else(|| {
                serde_json::from_slice::<serde_json::Value>(&bytes)
                    .ok()
                    .and_then(|v| from_json(&v))
            });
        }
        from_json(rails.get("data")?)
    }

    /// A blob's `signed_id` (purpose `blob_id`, no expiry): the same text for the same id, as
    /// Rails writes it.
    pub fn signed_blob_id(&self, blob_id: i64) -> String {
        self.generate(&Value::Int(blob_id), "blob_id", None)
    }

    /// The blob id of a `signed_id`, `None` when forged or of another purpose.
    pub fn blob_id(&self, signed_id: &str) -> Option<i64> {
        self.verified(signed_id, "blob_id", 0)?.as_int()
    }

    /// `ActiveStorage::Variation#key` of `transformations`.
    pub fn variation_key(&self, transformations: &Value) -> String {
        self.generate(transformations, "variation", None)
    }
}

/// A JSON value (of the Rails 7.1+ envelope) as the Ruby value `JSON.parse` would give, with
/// string keys; floats are refused.
fn from_json(v: &serde_json::Value) -> Option<Value> {
    Some(match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Int(n.as_i64()?),
        serde_json::Value::String(s) => Value::Str(s.clone()),
        serde_json::Value::Array(items) => {
            Value::Array(items.iter().map(from_json).collect::<Option<_>>()?)
        }
        serde_json::Value::Object(map) => Value::Hash(
            map.iter()
                .map(|(k, v)| Some((Value::Str(k.clone()), from_json(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// `ActiveStorage::Variation#digest`: base64 of the SHA1 of `Marshal.dump(transformations)`,
/// the `variation_digest` of `active_storage_variant_records`.
pub fn variation_digest(transformations: &Value) -> String {
    use sha1::Digest as _;
    STANDARD.encode(sha1::Sha1::digest(marshal::dump(transformations)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_the_bytes_rails_writes() {
        // ActiveStorage::Variation.new(resize_to_limit: [1200, 800]).key with
        // ActiveStorage.verifier = ActiveSupport::MessageVerifier.new("x") (Rails 6.1, Ruby 3.1).
        let v = ActiveStorageVerifier {
            verifier: MessageVerifier::new(b"x", MacDigest::Sha1),
        };
        let t = crate::rails::marshal::Value::Hash(vec![(
            Value::Sym("resize_to_limit".into()),
            Value::Array(vec![Value::Int(1200), Value::Int(800)]),
        )]);
        assert_eq!(
            v.variation_key(&t),
            "eyJfcmFpbHMiOnsibWVzc2FnZSI6IkJBaDdCam9VY21WemFYcGxYM1J2WDJ4cGJXbDBXd2RwQXJBRWFRSWdBdz09IiwiZXhwIjpudWxsLCJwdXIiOiJ2YXJpYXRpb24ifX0=--93eacbffac44c0dd5a6c16794f7f8a36a5c4c1ea"
        );
        assert_eq!(variation_digest(&t), "wH8BRww/ay6tFEhu6hoYIG5fquo=");
    }

    #[test]
    fn round_trips_and_refuses() {
        let v = ActiveStorageVerifier::from_secret_key_base(b"secret", KdfDigest::Sha256);
        let id = v.signed_blob_id(42);
        assert_eq!(v.signed_blob_id(42), id, "deterministic");
        assert_eq!(v.blob_id(&id), Some(42));
        assert_eq!(v.verified(&id, "variation", 0), None, "purpose");
        let other = ActiveStorageVerifier::from_secret_key_base(b"secret", KdfDigest::Sha1);
        assert_eq!(other.blob_id(&id), None, "other key");
        let token = v.generate(&Value::Str("k".into()), "blob_key", Some(1_000_000));
        assert_eq!(
            v.verified(&token, "blob_key", 999_999),
            Some(Value::Str("k".into()))
        );
        assert_eq!(v.verified(&token, "blob_key", 1_000_000), None, "expired");
        let mut forged = token;
        forged.insert(3, 'A');
        assert_eq!(v.verified(&forged, "blob_key", 0), None);
    }
}
