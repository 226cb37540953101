//! Signed GlobalIDs: how Action Text names an attachable record inside a body
//! (`<action-text-attachment sgid="…">`), so that only the server that signed it can make one.
//!
//! What Campfire (Rails 8.2, `load_defaults 8.2`, globalid 1.3.0) writes for a mention,
//! `user.attachable_sgid`:
//!
//! - `attachable_sgid` is `to_sgid(expires_in: nil, for: "attachable")`
//!   (`actiontext/lib/action_text/attachable.rb`). `GlobalID.create` passes every option but
//!   `app`, `verifier` and `for` on as the gid's parameters, so the signed gid carries a bare
//!   `expires_in` query: `gid://campfire/User/1?expires_in`, and no expiry
//!   (`rails/globalid`, `lib/global_id/global_id.rb`, `signed_global_id.rb`).
//! - The verifier is `GlobalID::Verifier.new(key_generator.generate_key("signed_global_ids"))`
//!   (`lib/global_id/railtie.rb`): an `ActiveSupport::MessageVerifier` with HMAC-SHA1 (the
//!   default digest) that encodes with URL-safe base64 **with** padding
//!   (`lib/global_id/verifier.rb`). Its serializer is `Codec.default_serializer`,
//!   `:json_allow_marshal` since `load_defaults "7.1"`, which together with
//!   `use_message_serializer_for_metadata` gives the Rails 7.1+ envelope
//!   (`activesupport/lib/active_support/messages/metadata.rb`):
//!
//! ```text
//! {"_rails":{"data":"gid://campfire/User/1?expires_in","pur":"attachable"}}
//! ```
//!
//!   with `"exp"` (an ISO 8601 time) only when it expires.
//! - Bodies written before an app moved to the 7.1 defaults (Rails 7.0) hold the older
//!   envelope, the gid Marshal-dumped and base64 inside: `{"_rails":{"message":"BAhJIiVn…",
//!   "exp":null,"pur":"attachable"}}`, which Rails 8.2 still verifies (its serializer allows
//!   Marshal) and Campfire still renders (`lib/rails_ext/action_text_attachables.rb`).
//!
//! [`SignedGlobalIds::sign`] writes the first form byte for byte; [`SignedGlobalIds::verify`]
//! reads both, in either base64 alphabet (the tokens of `Rails.application.message_verifier`,
//! which older globalid used, are in the standard one), with or without gid parameters.
//! [`peek_id`] reads the record id without the signature, as Campfire draws a mention whose
//! signature no longer verifies.

use super::json::{write_json_string, JsonEscaping};
use super::key_generator::{generate_key, KdfDigest, ITERATIONS};
use super::message_verifier::{decode64_with_fallback, MacDigest, MessageVerifier};

/// The purpose Action Text signs attachables for (`ActionText::Attachable::LOCATOR_NAME`).
pub const ATTACHABLE_PURPOSE: &str = "attachable";

/// The key generator salt of signed global ids (globalid's railtie).
const SALT: &str = "signed_global_ids";

/// The query `to_sgid(expires_in: nil)` leaves on the gid (see the module docs).
const EXPIRES_IN_QUERY: &str = "?expires_in";

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
    /// key with the app's key generator digest `kdf`, HMAC-SHA1) for the application `app`
    /// (`GlobalID.app`, e.g. `campfire`). Runs PBKDF2: build it once.
    pub fn from_secret_key_base(secret_key_base: &[u8], kdf: KdfDigest, app: &str) -> Self {
        let key = generate_key(secret_key_base, SALT, ITERATIONS, 64, kdf);
        Self {
            verifier: MessageVerifier::new(&key, MacDigest::Sha1),
            app: app.to_owned(),
        }
    }

    /// `record.to_sgid(expires_in: nil, for: purpose).to_s` for record `id` of `model`, as
    /// Campfire writes it (its `attachable_sgid` for purpose [`ATTACHABLE_PURPOSE`]):
    /// `urlsafe_base64({"_rails":{"data":"gid://<app>/<model>/<id>?expires_in","pur":<purpose>}}) + "--" + hex HMAC-SHA1`,
    /// the base64 padded with `=`, the JSON escaped as ActiveSupport::JSON does.
    pub fn sign(&self, model: &str, id: i64, purpose: &str) -> String {
        let gid = format!(
            "{}{EXPIRES_IN_QUERY}",
            super::global_id::gid(&self.app, model, id)
        );
        let mut data = Vec::with_capacity(gid.len() + purpose.len() + 32);
        data.extend_from_slice(br#"{"_rails":{"data":"#);
        write_json_string(&mut data, &gid, JsonEscaping::RAILS_8_1);
        data.extend_from_slice(br#","pur":"#);
        write_json_string(&mut data, purpose, JsonEscaping::RAILS_8_1);
        data.extend_from_slice(b"}}");
        self.verifier.generate_url_safe_padded(&data)
    }

    /// The record id a signed global id names, when its signature verifies, its envelope (either
    /// form of the module docs) is for `purpose` and has not expired (`now_ms`: the time now,
    /// ms since the epoch), and its gid is of this application and `model` (its parameters,
    /// such as `?expires_in`, are ignored, as the locator ignores them). `None` for anything
    /// else, never panicking. Source: `SignedGlobalID.parse(sgid, for:)` and
    /// `MessageVerifier#verified` (Rails 8.2).
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
        let gid = enveloped_gid(rails)?;
        let (app, found_model, id) = parse_gid(&gid)?;
        (app == self.app && found_model == model).then_some(id)
    }
}

/// The id of the `model` record a signed global id names, read **without** checking its
/// signature, purpose or expiry (Campfire's `attachable_from_possibly_expired_sgid`, which draws
/// a mention of a user even after `SECRET_KEY_BASE` changed): the gid inside either envelope,
/// the base64 in either alphabet, of any application. `None` when it cannot be read.
pub fn peek_id(sgid: &str, model: &str) -> Option<i64> {
    let (data, _) = sgid.rsplit_once("--")?;
    let bytes = decode64_with_fallback(data.as_bytes())?;
    let envelope: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let gid = enveloped_gid(envelope.get("_rails")?)?;
    let (_, found_model, id) = parse_gid(&gid)?;
    (found_model == model).then_some(id)
}

/// The gid text of an envelope's `_rails` object: `data`, a JSON string (Rails 7.1+), or
/// `message`, base64 of `Marshal.dump(gid)` (Rails 7.0) or of the gid as JSON.
fn enveloped_gid(rails: &serde_json::Value) -> Option<String> {
    if let Some(data) = rails.get("data") {
        return data.as_str().map(str::to_owned);
    }
    let bytes = decode64_with_fallback(rails.get("message")?.as_str()?.as_bytes())?;
    if bytes.starts_with(&[4, 8]) {
        return super::marshal::load(&bytes)?.as_str().map(str::to_owned);
    }
    match serde_json::from_slice(&bytes).ok()? {
        serde_json::Value::String(gid) => Some(gid),
        _ => None,
    }
}

/// `(app, model, id)` of `gid://<app>/<model>/<id>[?<params>]`: `app` and `model` non-empty
/// and without `/`, `id` a canonical decimal `i64` (as Rails writes a primary key). The
/// parameters are not read.
fn parse_gid(gid: &str) -> Option<(&str, &str, i64)> {
    let rest = gid.strip_prefix("gid://")?;
    let path = rest.split_once('?').map_or(rest, |(path, _)| path);
    let (app, rest) = path.split_once('/')?;
    let (model, id_text) = rest.split_once('/')?;
    if app.is_empty() || model.is_empty() {
        return None;
    }
    let id: i64 = id_text.parse().ok()?;
    (id.to_string() == id_text).then_some((app, model, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn campfire() -> SignedGlobalIds {
        SignedGlobalIds::from_secret_key_base(b"campfire-secret", KdfDigest::Sha256, "campfire")
    }

    /// `User.new(id).attachable_sgid` of a Rails 8.2.0.alpha app (Campfire's pinned commit) with
    /// globalid 1.3.0, `load_defaults 8.2`, `GlobalID.app` "campfire" and `secret_key_base`
    /// "campfire-secret", made once by those libraries themselves.
    const RAILS_82_USER_1: &str = "eyJfcmFpbHMiOnsiZGF0YSI6ImdpZDovL2NhbXBmaXJlL1VzZXIvMT9leHBpcmVzX2luIiwicHVyIjoiYXR0YWNoYWJsZSJ9fQ==--4e05f5937ad5eed7ea4069f619a6045e96d8abdc";
    /// The same for user 12: URL-safe base64 (`_`), padded.
    const RAILS_82_USER_12: &str = "eyJfcmFpbHMiOnsiZGF0YSI6ImdpZDovL2NhbXBmaXJlL1VzZXIvMTI_ZXhwaXJlc19pbiIsInB1ciI6ImF0dGFjaGFibGUifX0=--2a92d0b0d650a2da282df583da9c6fd218bc1819";
    /// User 1 in Rails 7.0's envelope (the gid Marshal-dumped), as Debian's ActiveSupport signs
    /// it with the same key (`tests/ruby/campfire_cookies.rb`, `sgid_legacy`).
    const RAILS_70_USER_1: &str = "eyJfcmFpbHMiOnsibWVzc2FnZSI6IkJBaEpJaVZuYVdRNkx5OWpZVzF3Wm1seVpTOVZjMlZ5THpFL1pYaHdhWEpsYzE5cGJnWTZCa1ZVIiwiZXhwIjpudWxsLCJwdXIiOiJhdHRhY2hhYmxlIn19--e5c9a8da22cf3d1c72e40954b9013cb26ccb9531";

    #[test]
    fn signs_what_campfire_signs_and_reads_it() {
        let ids = campfire();
        assert_eq!(ids.sign("User", 1, ATTACHABLE_PURPOSE), RAILS_82_USER_1);
        assert_eq!(ids.sign("User", 12, ATTACHABLE_PURPOSE), RAILS_82_USER_12);
        for (sgid, id) in [
            (RAILS_82_USER_1, 1),
            (RAILS_82_USER_12, 12),
            (RAILS_70_USER_1, 1),
        ] {
            assert_eq!(ids.verify(sgid, "User", ATTACHABLE_PURPOSE, 0), Some(id));
            assert_eq!(peek_id(sgid, "User"), Some(id));
            assert_eq!(peek_id(sgid, "Room"), None);
        }
    }

    #[test]
    fn signs_and_verifies_with_purpose_and_model() {
        let ids = SignedGlobalIds::from_secret_key_base(b"secret", KdfDigest::Sha256, "campfire");
        let sgid = ids.sign("User", 7, ATTACHABLE_PURPOSE);
        assert_eq!(ids.verify(&sgid, "User", ATTACHABLE_PURPOSE, 0), Some(7));
        assert_eq!(ids.verify(&sgid, "Room", ATTACHABLE_PURPOSE, 0), None);
        assert_eq!(ids.verify(&sgid, "User", "other", 0), None);
        let other = SignedGlobalIds::from_secret_key_base(b"other", KdfDigest::Sha256, "campfire");
        assert_eq!(other.verify(&sgid, "User", ATTACHABLE_PURPOSE, 0), None);
        let sha1 = SignedGlobalIds::from_secret_key_base(b"secret", KdfDigest::Sha1, "campfire");
        assert_eq!(sha1.verify(&sgid, "User", ATTACHABLE_PURPOSE, 0), None);
        let elsewhere = SignedGlobalIds::from_secret_key_base(b"secret", KdfDigest::Sha256, "app");
        assert_eq!(elsewhere.verify(&sgid, "User", ATTACHABLE_PURPOSE, 0), None);
        assert_eq!(
            ids.verify("garbage--00", "User", ATTACHABLE_PURPOSE, 0),
            None
        );
    }

    #[test]
    fn reads_every_envelope_and_alphabet_hearth_or_rails_wrote() {
        let ids = campfire();
        let sign_std = |data: &str| ids.verifier.generate(data.as_bytes());
        let cases: &[(&str, Option<i64>)] = &[
            // What Hearth wrote before: the standard alphabet, no gid parameter.
            (
                r#"{"_rails":{"data":"gid://campfire/User/3","pur":"attachable"}}"#,
                Some(3),
            ),
            (
                r#"{"_rails":{"data":"gid://campfire/User/3?expires_in","pur":"attachable"}}"#,
                Some(3),
            ),
            // The gid as JSON inside `message` (a JSON serializer before 7.1).
            (
                r#"{"_rails":{"message":"ImdpZDovL2NhbXBmaXJlL1VzZXIvMyI=","exp":null,"pur":"attachable"}}"#,
                Some(3),
            ),
            (r#"{"_rails":{"data":"gid://campfire/User/3"}}"#, None),
            (
                r#"{"_rails":{"data":"gid://campfire/User/03","pur":"attachable"}}"#,
                None,
            ),
            (
                r#"{"_rails":{"data":"gid://campfire/User/3/4","pur":"attachable"}}"#,
                None,
            ),
            (
                r#"{"_rails":{"data":"gid:///User/3","pur":"attachable"}}"#,
                None,
            ),
            (
                r#"{"_rails":{"data":"gid://campfire//3","pur":"attachable"}}"#,
                None,
            ),
            (r#"{"_rails":{"data":3,"pur":"attachable"}}"#, None),
            (r#"{"_rails":{"message":"NDI=","pur":"attachable"}}"#, None),
            (
                r#"{"_rails":{"message":"BAhpBg==","pur":"attachable"}}"#,
                None,
            ),
            (r#""gid://campfire/User/3""#, None),
        ];
        for (data, expected) in cases {
            assert_eq!(
                ids.verify(&sign_std(data), "User", ATTACHABLE_PURPOSE, 0),
                *expected,
                "{data}"
            );
        }
    }

    #[test]
    fn an_expired_sgid_is_refused() {
        let ids = SignedGlobalIds::from_secret_key_base(b"secret", KdfDigest::Sha256, "campfire");
        let data = r#"{"_rails":{"data":"gid://campfire/User/1","exp":"2020-01-01T00:00:00.000Z","pur":"attachable"}}"#;
        let sgid = ids.verifier.generate_url_safe_padded(data.as_bytes());
        assert_eq!(
            ids.verify(&sgid, "User", ATTACHABLE_PURPOSE, 1_000),
            Some(1)
        );
        assert_eq!(
            ids.verify(&sgid, "User", ATTACHABLE_PURPOSE, 1_700_000_000_000),
            None
        );
    }

    #[test]
    fn peek_reads_without_the_signature_and_never_panics() {
        let forged = RAILS_82_USER_12.replace("--2a", "--00");
        assert_eq!(peek_id(&forged, "User"), Some(12));
        for junk in ["", "--", "x--y", "eyJ--", "e30=--00", &"-".repeat(500)] {
            assert_eq!(peek_id(junk, "User"), None, "{junk}");
        }
    }
}
