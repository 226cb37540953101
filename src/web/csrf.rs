//! Cross-site request forgery protection, as Rails' `protect_from_forgery` does it.
//!
//! Each browser gets a random 32-byte secret, kept in the signed `_hearth_session` cookie
//! (Campfire keeps it in its `_campfire_session` cookie). Pages embed a *masked* copy of it
//! (a fresh one-time pad XOR the secret, base64url of `pad ‖ masked`, 64 bytes, as Rails'
//! `masked_authenticity_token`), in `<meta name="csrf-token">` and in every form's
//! `authenticity_token` field. A state-changing request must carry a token — the form field
//! or the `X-CSRF-Token` header — that unmasks to the secret; otherwise it gets 422.

use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use subtle::ConstantTimeEq;

/// Length of the CSRF secret, in bytes (Rails: `AUTHENTICITY_TOKEN_LENGTH = 32`).
pub const SECRET_LEN: usize = 32;

/// A browser's CSRF secret.
#[derive(Clone, PartialEq, Eq)]
pub struct CsrfSecret(pub [u8; SECRET_LEN]);

impl std::fmt::Debug for CsrfSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CsrfSecret(..)")
    }
}

impl CsrfSecret {
    /// A new random secret.
    pub fn generate() -> Self {
        let mut bytes = [0u8; SECRET_LEN];
        rand::fill(&mut bytes);
        Self(bytes)
    }

    /// The secret as stored in the cookie (base64url, no padding).
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0)
    }

    /// Reads a secret stored by [`CsrfSecret::encode`]; None when malformed.
    pub fn decode(text: &str) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        Some(Self(bytes.try_into().ok()?))
    }

    /// A freshly masked token for a page or form.
    pub fn masked_token(&self) -> String {
        let mut pad = [0u8; SECRET_LEN];
        rand::fill(&mut pad);
        let mut out = [0u8; SECRET_LEN * 2];
        out[..SECRET_LEN].copy_from_slice(&pad);
        for i in 0..SECRET_LEN {
            out[SECRET_LEN + i] = pad[i] ^ self.0[i];
        }
        URL_SAFE_NO_PAD.encode(out)
    }

    /// Whether `token` (masked, as this module writes it, in base64url or standard base64,
    /// with or without padding) unmasks to this secret. Constant time in the secret.
    pub fn verify(&self, token: &str) -> bool {
        let token = token.trim();
        let decoded = URL_SAFE_NO_PAD
            .decode(token)
            .or_else(|_| URL_SAFE.decode(token))
            .or_else(|_| STANDARD.decode(token));
        let Ok(bytes) = decoded else { return false };
        if bytes.len() != SECRET_LEN * 2 {
            return false;
        }
        let mut unmasked = [0u8; SECRET_LEN];
        for i in 0..SECRET_LEN {
            unmasked[i] = bytes[i] ^ bytes[SECRET_LEN + i];
        }
        unmasked.ct_eq(&self.0).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_tokens_differ_but_verify() {
        let secret = CsrfSecret::generate();
        let a = secret.masked_token();
        let b = secret.masked_token();
        assert_ne!(a, b);
        assert!(secret.verify(&a));
        assert!(secret.verify(&b));
        assert!(!CsrfSecret::generate().verify(&a));
    }

    #[test]
    fn malformed_tokens_are_refused() {
        let secret = CsrfSecret::generate();
        for bad in ["", "x", "!!!!", &"A".repeat(86), &secret.encode()] {
            assert!(!secret.verify(bad), "{bad}");
        }
    }

    #[test]
    fn secret_round_trips() {
        let secret = CsrfSecret::generate();
        assert_eq!(CsrfSecret::decode(&secret.encode()), Some(secret));
        assert_eq!(CsrfSecret::decode("short"), None);
    }
}
