//! [`Keys`]: every verifier and key a server derives from `secret_key_base`, built once at
//! start (each one runs PBKDF2) and cloned into the handlers that sign or verify.

use std::sync::Arc;

use super::{SignedCookieJar, SignedGlobalIds, SignedIdVerifier, StreamNameSigner};

/// The keys handle. Cloning it clones `Arc`s and two short strings.
#[derive(Clone, Debug)]
pub struct Keys {
    /// Rails' signed cookie jar (`cookies.signed`).
    pub cookies: SignedCookieJar,
    /// Turbo's signed stream name signer and verifier.
    pub signer: StreamNameSigner,
    /// Signed GlobalIDs (`sgid`) of mentioned users, as Rails' `signed_global_ids` verifier
    /// makes them for `--gid-app`.
    pub sgids: Arc<SignedGlobalIds>,
    /// Active Record's signed ids (the transfer links).
    pub signed_ids: SignedIdVerifier,
    /// The key of the app node's internal endpoint (a cable node's calls to its app node).
    pub internal_key: Arc<str>,
    /// The bearer key of `POST /_broadcast` (`--broadcast-key`, or derived as AnyCable derives
    /// it from its secret).
    pub broadcast_key: Arc<str>,
}
