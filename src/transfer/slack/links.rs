//! How imported people sign in: Slack's export holds no passwords, so the import prints each
//! active person's transfer link, the one an administrator hands out from a person's profile
//! (Campfire's `User::Transferable`, `GET /session/transfers/:id`): a signed id of the user
//! (`user/transfer`, Active Record's signed ids, [`crate::rails::SignedIdVerifier`]) that
//! expires. Opened, it signs that device in; the person can then set an address and a
//! password on their profile. An administrator can make a new one on each person's profile
//! page after it expires.

use std::time::{Duration, SystemTime};

use crate::rails::{KdfDigest, SignedIdVerifier};
use crate::web::links::TRANSFER_PURPOSE;

/// One person's link, as the import prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The person's name.
    pub name: String,
    /// Their address, if they have one.
    pub email: Option<String>,
    /// The link: `<origin>/session/transfers/<signed id>`, or the path alone without an
    /// origin.
    pub url: String,
}

/// Signs transfer links as a server with the same `secret_key_base` verifies them.
#[derive(Debug)]
pub struct Signer {
    ids: SignedIdVerifier,
    origin: String,
    expires_at: SystemTime,
}

impl Signer {
    /// Links on `origin` (`https://chat.example.com`; empty: paths only) valid for `valid`.
    pub fn new(secret_key_base: &str, kdf: KdfDigest, origin: &str, valid: Duration) -> Self {
        Self {
            ids: SignedIdVerifier::from_secret_key_base(secret_key_base.as_bytes(), kdf),
            origin: origin.trim_end_matches('/').to_owned(),
            expires_at: SystemTime::now() + valid,
        }
    }

    /// When the links expire.
    pub fn expires_at(&self) -> SystemTime {
        self.expires_at
    }

    /// The link of user `user_id`.
    pub fn link(&self, user_id: i64) -> String {
        let id = self.ids.generate(
            TRANSFER_PURPOSE.0,
            TRANSFER_PURPOSE.1,
            user_id,
            self.expires_at,
        );
        format!("{}/session/transfers/{id}", self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_verify_as_the_server_reads_them() {
        let signer = Signer::new(
            "secret",
            KdfDigest::Sha256,
            "https://chat.example/",
            Duration::from_secs(3600),
        );
        let link = signer.link(42);
        let id = link
            .strip_prefix("https://chat.example/session/transfers/")
            .expect(&link);
        let server = SignedIdVerifier::from_secret_key_base(b"secret", KdfDigest::Sha256);
        assert_eq!(server.verify("user", "transfer", id), Some(42));
        let other = SignedIdVerifier::from_secret_key_base(b"other", KdfDigest::Sha256);
        assert_eq!(other.verify("user", "transfer", id), None);
    }
}
