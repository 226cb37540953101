//! Signed GlobalIDs: how Action Text names an attachable record inside a body
//! (`<action-text-attachment sgid="…">`), so that only the server that signed it can make one.
//!
//! A signed global id is a [`MessageVerifier`] token (HMAC-SHA1, Rails' default digest) whose
//! data is the JSON metadata envelope of Rails 7.1+ (`use_message_serializer_for_metadata`):
//!
//! ```text
//! {"_rails":{"data":"gid://campfire/User/1","pur":"attachable"}}
//! ```
//!
//! with `"exp"` (an ISO 8601 time) when it expires; Action Text's `attachable_sgid` has none.
//! The key is `key_generator.generate_key("signed_global_ids")`: the verifier of
//! `Rails.application.message_verifier(:signed_global_ids)`, which globalid's railtie makes
//! `SignedGlobalID.verifier`. Sources: `rails/globalid` `lib/global_id/signed_global_id.rb`,
//! `lib/global_id/railtie.rb`; `activesupport/lib/active_support/messages/metadata.rb`;
//! `actiontext/lib/action_text/attachable.rb` (`attachable_sgid`: `to_sgid(expires_in: nil,
//! for: "attachable")`).

use super::global_id::gid;
use super::json::{json_string, JsonEscaping};
use super::key_generator::{generate_key, KdfDigest, ITERATIONS};
use super::message_verifier::{MacDigest, MessageVerifier};

/// The purpose Action Text signs attachables for (`ActionText::Attachable::LOCATOR_NAME`).
pub const ATTACHABLE_PURPOSE: &str = "attachable";

/// Signs and verifies the signed global ids of one application (`GlobalID.app`).
pub struct SignedGlobalIds {
    verifier: MessageVerifier,
    app: String,
}

impl std::fmt::Debug for SignedGlobalIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedGlobalIds")
            .field("app", &self.app)
            .finish_non_exhaustive()
    }
}

impl SignedGlobalIds {
    /// The verifier Rails derives from `secret_key_base` (salt `signed_global_ids`, 64-byte
    /// key, HMAC-SHA1) for the application `app` (`GlobalID.app`, e.g. `campfire`).
    pub fn from_secret_key_base(secret_key_base: &[u8], kdf: KdfDigest, app: &str) -> Self {
        let key = generate_key(secret_key_base, "signed_global_ids", ITERATIONS, 64, kdf);
        Self {
            verifier: MessageVerifier::new(&key, MacDigest::Sha1),
            app: app.to_owned(),
        }
    }

    /// The signed global id of record `id` of `model` for `purpose`, without expiry (what
    /// `record.to_sgid(expires_in: nil, for: purpose).to_s` gives).
    pub fn sign(&self, model: &str, id: i64, purpose: &str) -> String {
        let data = format!(
            "{{\"_rails\":{{\"data\":{},\"pur\":{}}}}}",
            json_string(&gid(&self.app, model, id), JsonEscaping::default()),
            json_string(purpose, JsonEscaping::default())
        );
        self.verifier.generate(data.as_bytes())
    }

    /// The record id a signed global id names, when it verifies, is for this application,
    /// `model` and `purpose`, and has not expired (`now_ms`: the time now, ms since the epoch).
    /// `None` for anything else, never panicking.
    pub fn verify(&self, sgid: &str, model: &str, purpose: &str, now_ms: i64) -> Option<i64> {
        let data = self.verifier.verify(sgid)?;
        let envelope: serde_json::Value = serde_json::from_slice(&data).ok()?;
        let rails = envelope.get("_rails")?;
        if rails.get("pur")?.as_str()? != purpose {
            return None;
        }
        if let Some(exp) = rails.get("exp").filter(|e| !e.is_null()) {
            let nanos = super::time::parse_iso8601(exp.as_str()?)?;
            if nanos / 1_000_000 <= i128::from(now_ms) {
                return None;
            }
        }
        let text = rails.get("data")?.as_str()?;
        let rest = text.strip_prefix("gid://")?;
        let (app, rest) = rest.split_once('/')?;
        let (found_model, id_text) = rest.split_once('/')?;
        if app != self.app || found_model != model {
            return None;
        }
        let id: i64 = id_text.parse().ok()?;
        (id.to_string() == id_text).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_and_verifies_with_purpose_and_model() {
        let ids = SignedGlobalIds::from_secret_key_base(b"secret", KdfDigest::Sha256, "campfire");
        let sgid = ids.sign("User", 7, ATTACHABLE_PURPOSE);
        assert!(sgid.starts_with("eyJfcmFpbHMiOnsiZGF0YSI6ImdpZDovL2NhbXBmaXJlL1VzZXIvNyIs"));
        assert_eq!(ids.verify(&sgid, "User", ATTACHABLE_PURPOSE, 0), Some(7));
        assert_eq!(ids.verify(&sgid, "Room", ATTACHABLE_PURPOSE, 0), None);
        assert_eq!(ids.verify(&sgid, "User", "other", 0), None);
        let other = SignedGlobalIds::from_secret_key_base(b"other", KdfDigest::Sha256, "campfire");
        assert_eq!(other.verify(&sgid, "User", ATTACHABLE_PURPOSE, 0), None);
        let elsewhere = SignedGlobalIds::from_secret_key_base(b"secret", KdfDigest::Sha256, "app");
        assert_eq!(elsewhere.verify(&sgid, "User", ATTACHABLE_PURPOSE, 0), None);
        assert_eq!(
            ids.verify("garbage--00", "User", ATTACHABLE_PURPOSE, 0),
            None
        );
    }

    #[test]
    fn an_expired_sgid_is_refused() {
        let ids = SignedGlobalIds::from_secret_key_base(b"secret", KdfDigest::Sha256, "campfire");
        let data = r#"{"_rails":{"data":"gid://campfire/User/1","exp":"2020-01-01T00:00:00.000Z","pur":"attachable"}}"#;
        let sgid = ids.verifier.generate(data.as_bytes());
        assert_eq!(
            ids.verify(&sgid, "User", ATTACHABLE_PURPOSE, 1_000),
            Some(1)
        );
        assert_eq!(
            ids.verify(&sgid, "User", ATTACHABLE_PURPOSE, 1_700_000_000_000),
            None
        );
    }
}
