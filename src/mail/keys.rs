//! The keys of signing in by mail, derived from secret_key_base once at start: Rails'
//! `generates_token_for` verifier (password-reset links, [`crate::rails::token_for`]) and the
//! HMAC key under which sign-in codes are stored (a 6-digit code is guessed from a plain hash
//! in a million tries; keyed, a copy of the database alone does not tell it).

use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::Sha256;

use crate::rails::token_for::TokenFor;
use crate::rails::{generate_key, KdfDigest, ITERATIONS};

/// The key generator salt of sign-in code digests.
const CODE_SALT: &str = "hearth/sign_in_code";

/// Password-reset tokens and sign-in code digests. `Debug` shows no key.
#[derive(Clone)]
pub struct MailKeys {
    /// `generates_token_for`'s verifier.
    pub token_for: TokenFor,
    code_key: Vec<u8>,
}

impl std::fmt::Debug for MailKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MailKeys")
    }
}

impl MailKeys {
    /// The keys of an application with this `secret_key_base` (PBKDF2 twice: build once).
    pub fn from_secret_key_base(secret_key_base: &[u8], kdf: KdfDigest) -> Self {
        Self {
            token_for: TokenFor::from_secret_key_base(secret_key_base, kdf),
            code_key: generate_key(secret_key_base, CODE_SALT, ITERATIONS, 32, kdf),
        }
    }

    /// The stored digest of `code` for `user_id`: hex HMAC-SHA256 of `"<user_id>:<code>"`.
    pub fn code_digest(&self, user_id: i64, code: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.code_key).expect("any key length");
        mac.update(format!("{user_id}:{code}").as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    /// Whether `code` is the one whose digest is `digest` (constant time).
    pub fn code_matches(&self, user_id: i64, code: &str, digest: &str) -> bool {
        use subtle::ConstantTimeEq as _;
        let mine = self.code_digest(user_id, code);
        mine.len() == digest.len() && bool::from(mine.as_bytes().ct_eq(digest.as_bytes()))
    }
}

/// A new 6-digit code, uniformly drawn (leading zeros kept).
pub fn new_code() -> String {
    format!("{:06}", rand::random_range(0..1_000_000u32))
}
