//! `ActiveSupport::KeyGenerator`: every Rails secret is derived from `secret_key_base`.
//!
//! A Rails application never signs anything with `secret_key_base` directly. It asks
//! `Rails.application.key_generator` for a key per purpose, named by a *salt*:
//! `"signed cookie"` for `cookies.signed`, `"turbo/signed_stream_verifier_key"` for Turbo's
//! signed stream names, and so on. The generator is
//! `KeyGenerator.new(secret_key_base, iterations: 1000)` (`railties/lib/rails/application.rb`),
//! and `generate_key(salt, key_size = 64)` is PBKDF2-HMAC (RFC 8018 §5.2) over the secret with
//! that salt (`activesupport/lib/active_support/key_generator.rb`).
//!
//! The PBKDF2 digest depends on the application:
//! - **SHA256** when `config.active_support.key_generator_hash_digest_class` is SHA256, which
//!   `load_defaults "7.0"` and later set;
//! - **SHA1** for older defaults, for ActiveSupport 6.1 (whose generator only knows SHA1), and
//!   for turbo-rails before 1.1.1, which derived its key before the setting was applied.
//!
//! Hearth makes the digest a setting ([`KdfDigest`]) instead of guessing.

use std::fmt;
use std::str::FromStr;

use sha1::Sha1;
use sha2::Sha256;

/// PBKDF2 iteration count Rails uses for `Rails.application.key_generator`.
///
/// Source: `railties/lib/rails/application.rb#key_generator`
/// (`KeyGenerator.new(secret_key_base, iterations: 1000)`).
pub const ITERATIONS: u32 = 1000;

/// The HMAC digest PBKDF2 runs with (`KeyGenerator.hash_digest_class`).
///
/// Parse it from a setting with [`FromStr`]: `"sha1"` or `"sha256"`, in any letter case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KdfDigest {
    /// PBKDF2-HMAC-SHA1: Rails before `load_defaults "7.0"`, ActiveSupport 6.1, turbo-rails
    /// before 1.1.1.
    Sha1,
    /// PBKDF2-HMAC-SHA256: `load_defaults "7.0"` and later.
    Sha256,
}

/// Error of [`KdfDigest::from_str`]: the text was neither `sha1` nor `sha256`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownKdfDigest(
    /// The rejected text, as given.
    pub String,
);

impl fmt::Display for UnknownKdfDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown key generator digest {:?} (expected \"sha1\" or \"sha256\")",
            self.0
        )
    }
}

impl std::error::Error for UnknownKdfDigest {}

impl FromStr for KdfDigest {
    type Err = UnknownKdfDigest;

    /// Accepts `sha1` and `sha256` in any letter case (so Ruby's `"SHA256"` works too).
    ///
    /// # Errors
    /// [`UnknownKdfDigest`] carrying the input for anything else.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("sha1") {
            Ok(Self::Sha1)
        } else if s.eq_ignore_ascii_case("sha256") {
            Ok(Self::Sha256)
        } else {
            Err(UnknownKdfDigest(s.to_owned()))
        }
    }
}

/// Derives a key as `KeyGenerator#generate_key(salt, key_len)` does:
/// PBKDF2-HMAC-`digest`(password = `secret_key_base`, salt = `salt` as UTF-8 bytes,
/// `iterations`, output `key_len` bytes). Rails calls it with [`ITERATIONS`] and 64 bytes.
///
/// Deterministic and infallible; any lengths are accepted (`key_len` 0 gives an empty key).
/// An `iterations` of 0 behaves like 1. Cost grows with `iterations × key_len`, so derive keys
/// once at start-up and keep them.
///
/// Source: `activesupport/lib/active_support/key_generator.rb`
/// (`OpenSSL::PKCS5.pbkdf2_hmac(@secret, salt, @iterations, key_size, @hash_digest_class.new)`).
pub fn generate_key(
    secret_key_base: &[u8],
    salt: &str,
    iterations: u32,
    key_len: usize,
    digest: KdfDigest,
) -> Vec<u8> {
    let mut key = vec![0u8; key_len];
    match digest {
        KdfDigest::Sha1 => {
            pbkdf2::pbkdf2_hmac::<Sha1>(secret_key_base, salt.as_bytes(), iterations, &mut key)
        }
        KdfDigest::Sha256 => {
            pbkdf2::pbkdf2_hmac::<Sha256>(secret_key_base, salt.as_bytes(), iterations, &mut key)
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_digest_names() {
        assert_eq!("sha1".parse::<KdfDigest>(), Ok(KdfDigest::Sha1));
        assert_eq!("SHA1".parse::<KdfDigest>(), Ok(KdfDigest::Sha1));
        assert_eq!("sha256".parse::<KdfDigest>(), Ok(KdfDigest::Sha256));
        assert_eq!("Sha256".parse::<KdfDigest>(), Ok(KdfDigest::Sha256));
        let err = "md5".parse::<KdfDigest>().unwrap_err();
        assert_eq!(err, UnknownKdfDigest("md5".to_owned()));
        assert!(err.to_string().contains("md5"));
        assert!("".parse::<KdfDigest>().is_err());
        assert!(" sha1".parse::<KdfDigest>().is_err());
    }

    #[test]
    fn rfc6070_pbkdf2_sha1_vectors() {
        // RFC 6070 test vectors 1 and 2.
        assert_eq!(
            hex::encode(generate_key(b"password", "salt", 1, 20, KdfDigest::Sha1)),
            "0c60c80f961f0e71f3a9b524af6012062fe037a6"
        );
        assert_eq!(
            hex::encode(generate_key(b"password", "salt", 2, 20, KdfDigest::Sha1)),
            "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"
        );
    }

    #[test]
    fn pbkdf2_sha256_vector() {
        // Widely published PBKDF2-HMAC-SHA256 vector (password/salt, c = 1, dkLen = 32).
        assert_eq!(
            hex::encode(generate_key(b"password", "salt", 1, 32, KdfDigest::Sha256)),
            "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"
        );
    }

    #[test]
    fn turbo_key_prefix_from_reference() {
        // Protocol reference §5.4: with secret_key_base "0123456789abcdef" * 8 and SHA256, the
        // Turbo verifier key starts 7abcd575.
        let skb = "0123456789abcdef".repeat(8);
        let key = generate_key(
            skb.as_bytes(),
            "turbo/signed_stream_verifier_key",
            ITERATIONS,
            64,
            KdfDigest::Sha256,
        );
        assert_eq!(key.len(), 64);
        assert!(hex::encode(&key).starts_with("7abcd575"));
    }

    #[test]
    fn lengths_salts_and_digests_matter() {
        let a = generate_key(b"skb", "salt", 3, 64, KdfDigest::Sha256);
        assert_eq!(a.len(), 64);
        // A shorter key is a prefix of a longer one (PBKDF2 block structure).
        assert_eq!(
            generate_key(b"skb", "salt", 3, 16, KdfDigest::Sha256),
            a[..16]
        );
        assert_ne!(a, generate_key(b"skb", "salt2", 3, 64, KdfDigest::Sha256));
        assert_ne!(a, generate_key(b"skb", "salt", 3, 64, KdfDigest::Sha1));
        assert_ne!(a, generate_key(b"skb", "salt", 4, 64, KdfDigest::Sha256));
        assert!(generate_key(b"skb", "salt", 3, 0, KdfDigest::Sha1).is_empty());
        // Zero iterations does not panic and equals one.
        assert_eq!(
            generate_key(b"", "", 0, 20, KdfDigest::Sha1),
            generate_key(b"", "", 1, 20, KdfDigest::Sha1)
        );
    }
}
