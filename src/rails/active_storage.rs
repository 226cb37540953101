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
        let envelope = from_json(&data)?;
        let rails = envelope.get("_rails")?;
        if rails.get("pur").and_then(Value::as_str) != Some(purpose) {
            return None;
        }
        match rails.get("exp") {
            None | Some(Value::Nil) => {}
            Some(Value::Str(exp)) => {
                let exp_ms = super::time::parse_iso8601(exp)? / 1_000_000;
                if i128::from(now_ms) >= exp_ms {
                    return None;
                }
            }
            Some(_) => return None,
        }
        if let Some(message) = rails.get("message").and_then(Value::as_str) {
            let bytes = STANDARD.decode(message).ok()?;
            return marshal::load(&bytes).or_else(|| from_json(&bytes));
        }
        rails.get("data").cloned()
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

/// JSON text as the Ruby value `JSON.parse` gives: objects as hashes with string keys **in the
/// order written** (a variation's digest dumps them in that order), numbers as integers; floats
/// and anything not JSON are refused (`None`).
fn from_json(text: &[u8]) -> Option<Value> {
    serde_json::from_slice::<RubyJson>(text).ok().map(|v| v.0)
}

/// A [`Value`] read from JSON by serde, keeping the order of object members.
struct RubyJson(Value);

impl<'de> serde::Deserialize<'de> for RubyJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(RubyJsonVisitor).map(RubyJson)
    }
}

struct RubyJsonVisitor;

impl<'de> serde::de::Visitor<'de> for RubyJsonVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON without floats")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Int(n))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Value, E> {
        i64::try_from(n)
            .map(Value::Int)
            .map_err(|_| E::custom("integer out of range"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::Str(s.to_owned()))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(RubyJson(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut pairs = Vec::new();
        while let Some((key, RubyJson(value))) = map.next_entry::<String, RubyJson>()? {
            // `JSON.parse` keeps the last of repeated keys, at the first one's place.
            match pairs
                .iter_mut()
                .find(|(k, _)| *k == Value::Str(key.clone()))
            {
                Some((_, old)) => *old = value,
                None => pairs.push((Value::Str(key), value)),
            }
        }
        Ok(Value::Hash(pairs))
    }
}

/// `ActiveStorage::Variation#digest`: base64 of the SHA1 of `Marshal.dump(transformations)`,
/// the `variation_digest` of `active_storage_variant_records`. The hash keys are symbols first,
/// at every depth, as `Variation#initialize` makes them (`deep_symbolize_keys`): a variation key
/// of Rails 7.1+ (Campfire's) carries its transformations as JSON, whose keys decode as strings.
/// String values stay strings, as in Rails (`format: :webp` comes back as `"webp"`).
pub fn variation_digest(transformations: &Value) -> String {
    use sha1::Digest as _;
    STANDARD.encode(sha1::Sha1::digest(marshal::dump(&symbolize_keys(
        transformations,
    ))))
}

/// ActiveSupport's `deep_symbolize_keys`: string keys of every hash, also inside arrays, become
/// symbols.
fn symbolize_keys(value: &Value) -> Value {
    match value {
        Value::Hash(pairs) => Value::Hash(
            pairs
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::Str(s) => Value::Sym(s.clone()),
                        other => other.clone(),
                    };
                    (key, symbolize_keys(v))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(symbolize_keys).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_tokens_of_rails_82() {
        // `ActiveStorage.verifier` of Rails 8.2.0.alpha (Campfire's commit) with `load_defaults
        // 8.2` and secret_key_base "campfire-secret": `generate(5, purpose: :blob_id)` and
        // `generate({resize_to_limit: [1200, 800], format: :webp}, purpose: :variation)`; the
        // digest is `Variation.decode(key).digest`, computed by Ruby.
        let v = ActiveStorageVerifier::from_secret_key_base(b"campfire-secret", KdfDigest::Sha256);
        let blob = "eyJfcmFpbHMiOnsiZGF0YSI6NSwicHVyIjoiYmxvYl9pZCJ9fQ==--39334ac1d282278ba41a3b71b50388c5b6c795b6";
        assert_eq!(v.blob_id(blob), Some(5));
        let key = "eyJfcmFpbHMiOnsiZGF0YSI6eyJyZXNpemVfdG9fbGltaXQiOlsxMjAwLDgwMF0sImZvcm1hdCI6IndlYnAifSwicHVyIjoidmFyaWF0aW9uIn19--1242d70694b4ee500b11641af9ba9ad9bb03d3b7";
        let transformations = v.verified(key, "variation", 0).unwrap();
        assert_eq!(
            variation_digest(&transformations),
            "q8YCzNDjQwGSW3IMOrVHQuUA1HA="
        );
    }

    #[test]
    fn a_json_variation_digests_as_rails_symbolizes_it() {
        // Ruby: OpenSSL::Digest::SHA1.base64digest(Marshal.dump(JSON.parse(
        //   '{"resize_to_limit":[1200,800],"format":"webp","saver":{"quality":80}}').deep_symbolize_keys))
        let decoded =
            from_json(br#"{"resize_to_limit":[1200,800],"format":"webp","saver":{"quality":80}}"#)
                .unwrap();
        assert_eq!(variation_digest(&decoded), "iIXOdB2tFz+xfWbXDN2aDxA8F9U=");
    }

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
