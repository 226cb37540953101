//! Single sign-on with OpenID Connect: the relying party's side of the authorization code flow
//! (OpenID Connect Core 1.0 §3.1) with PKCE (RFC 7636, `S256`), through the `openidconnect`
//! crate.
//!
//! - The provider is found by discovery (OpenID Connect Discovery 1.0): its
//!   `/.well-known/openid-configuration` and its JWKS are read on the first sign-in, not at
//!   start, so Hearth starts while the provider is down; a failed discovery is tried again at
//!   the next sign-in.
//! - Keys rotate (Core §10.1.1): an ID token signed by a key the cached JWKS does not hold
//!   makes the JWKS be fetched again, once, and the new set replaces the old one whole, so a key
//!   the provider retired stops being trusted.
//! - The ID token's signature, `iss`, `aud`, `exp` and `nonce` are checked by the crate; an
//!   e-mail address missing from the ID token is read from the UserInfo endpoint (Core §5.3),
//!   whose `sub` must be the ID token's.
//!
//! The browser's side (the signed cookie holding `state`, `nonce` and the PKCE verifier, the
//! callback, accounts made or matched) is `web::sso`'s.

pub mod http;

use std::sync::Arc;
use std::time::Instant;

use openidconnect::core::{
    CoreAuthenticationFlow, CoreClient, CoreIdTokenVerifier, CoreJsonWebKeySet,
    CoreProviderMetadata, CoreUserInfoClaims,
};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken, IssuerUrl,
    Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope,
    SignatureVerificationError, TokenResponse,
};
use parking_lot::RwLock;

use self::http::HttpClient;
use crate::config::OidcFlags;

/// Why a single sign-on failed.
#[derive(Debug, thiserror::Error)]
pub enum SsoError {
    /// The provider could not be reached, or its discovery document or JWKS did not parse.
    #[error("the provider could not be reached: {0}")]
    Provider(String),
    /// The token endpoint refused the code (used already, expired, or not bound to the PKCE
    /// verifier).
    #[error("the provider refused the sign-in code: {0}")]
    CodeRefused(String),
    /// The ID token did not check out: signature, issuer, audience or expiry.
    #[error("the ID token was refused: {0}")]
    IdToken(String),
    /// The ID token's `nonce` is not the one this sign-in sent.
    #[error("the ID token's nonce is not this sign-in's: {0}")]
    Nonce(String),
    /// The ID token is signed by a key the provider's JWKS does not hold, even fetched again
    /// (a retired key, or another issuer's).
    #[error("the ID token is signed by a key the provider does not publish")]
    UnknownKey,
}

/// Who signed in, as the provider vouches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The issuer (the ID token's `iss`).
    pub issuer: String,
    /// The person's stable id at the issuer (`sub`).
    pub subject: String,
    /// The `email` claim, its ASCII letters lower-cased (and nothing else: Unicode's case
    /// mapping folds other letters onto ASCII ones, U+212A KELVIN SIGN onto `k`, which would
    /// make another mailbox's address an existing person's).
    pub email: Option<String>,
    /// `email_verified` (false when absent).
    pub email_verified: bool,
    /// The `name` claim, if any.
    pub name: Option<String>,
}

/// What a sign-in needs kept between the redirect to the provider and its answer.
#[derive(Clone, Debug)]
pub struct Authorization {
    /// The provider's authorization URL to send the browser to.
    pub url: url::Url,
    /// The `state` parameter (random, URL-safe).
    pub state: String,
    /// The `nonce` the ID token must carry (random, URL-safe).
    pub nonce: String,
    /// The PKCE code verifier (RFC 7636 §4.1, 43 URL-safe characters).
    pub pkce_verifier: String,
}

/// The JWKS as last fetched, and when.
#[derive(Debug)]
struct Keys {
    set: Arc<CoreJsonWebKeySet>,
    fetched: Instant,
}

/// The configured provider (see the module docs).
#[derive(Debug)]
pub struct Provider {
    issuer: IssuerUrl,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    http: HttpClient,
    metadata: tokio::sync::Mutex<Option<Arc<CoreProviderMetadata>>>,
    keys: RwLock<Option<Keys>>,
    refetch: tokio::sync::Mutex<()>,
}

/// Single sign-on as configured: off, or its provider (cheap to clone).
#[derive(Clone, Debug, Default)]
pub struct Sso {
    provider: Option<Arc<Provider>>,
}

impl Sso {
    /// Single sign-on from the flags: off without an issuer and a client id.
    ///
    /// # Errors
    /// An issuer that is not a URL, or uses plain `http` on a host that is not loopback.
    pub fn from_flags(flags: &OidcFlags) -> anyhow::Result<Self> {
        let (Some(issuer), Some(client_id)) = (&flags.oidc_issuer, &flags.oidc_client_id) else {
            return Ok(Self::default());
        };
        let parsed = url::Url::parse(issuer)
            .map_err(|e| anyhow::anyhow!("--oidc-issuer {issuer:?} is not a URL: {e}"))?;
        if !http::is_allowed_url(&parsed) {
            anyhow::bail!(
                "--oidc-issuer {issuer:?} must be https (plain http only for a loopback issuer)"
            );
        }
        let provider = Provider {
            issuer: IssuerUrl::new(issuer.clone())?,
            client_id: ClientId::new(client_id.clone()),
            client_secret: flags
                .oidc_client_secret
                .as_ref()
                .map(|s| ClientSecret::new(s.0.clone())),
            http: HttpClient::new(),
            metadata: tokio::sync::Mutex::new(None),
            keys: RwLock::new(None),
            refetch: tokio::sync::Mutex::new(()),
        };
        Ok(Self {
            provider: Some(Arc::new(provider)),
        })
    }

    /// The provider, when single sign-on is on.
    pub fn provider(&self) -> Option<&Provider> {
        self.provider.as_deref()
    }
}

impl Provider {
    /// The issuer URL as configured.
    pub fn issuer(&self) -> &str {
        self.issuer.as_str()
    }

    /// The client id as configured.
    pub fn client_id(&self) -> &str {
        self.client_id.as_str()
    }

    /// The discovery document, read on first use (and again after a failure).
    async fn metadata(&self) -> Result<Arc<CoreProviderMetadata>, SsoError> {
        let mut slot = self.metadata.lock().await;
        if let Some(found) = &*slot {
            return Ok(found.clone());
        }
        let found = CoreProviderMetadata::discover_async(self.issuer.clone(), &self.http)
            .await
            .map_err(|e| SsoError::Provider(error_chain(&e)))?;
        *self.keys.write() = Some(Keys {
            set: Arc::new(found.jwks().clone()),
            fetched: Instant::now(),
        });
        let found = Arc::new(found);
        *slot = Some(found.clone());
        Ok(found)
    }

    fn client(
        &self,
        metadata: &CoreProviderMetadata,
        redirect: &str,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        SsoError,
    > {
        let redirect = RedirectUrl::new(redirect.to_owned())
            .map_err(|e| SsoError::Provider(format!("redirect URL: {e}")))?;
        Ok(CoreClient::from_provider_metadata(
            metadata.clone(),
            self.client_id.clone(),
            self.client_secret.clone(),
        )
        .set_redirect_uri(redirect))
    }

    /// Starts a sign-in that returns to `redirect` (this server's callback URL): the URL to
    /// send the browser to, with fresh `state`, `nonce` and PKCE challenge, asking for the
    /// `openid email profile` scopes.
    ///
    /// # Errors
    /// [`SsoError::Provider`] when discovery fails.
    pub async fn authorize(&self, redirect: &str) -> Result<Authorization, SsoError> {
        let metadata = self.metadata().await?;
        let client = self.client(&metadata, redirect)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()))
            .add_scope(Scope::new("profile".into()))
            .set_pkce_challenge(challenge)
            .url();
        Ok(Authorization {
            url,
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
        })
    }

    /// Ends a sign-in: exchanges `code` (with the PKCE verifier) at the token endpoint, checks
    /// the ID token (signature against the JWKS, fetched again once for an unknown key;
    /// issuer, audience, expiry, `nonce`), and reads the e-mail claims, from UserInfo when the
    /// ID token lacks them.
    ///
    /// # Errors
    /// See [`SsoError`].
    pub async fn finish(
        &self,
        redirect: &str,
        code: &str,
        pkce_verifier: &str,
        nonce: &str,
    ) -> Result<Identity, SsoError> {
        let metadata = self.metadata().await?;
        let client = self.client(&metadata, redirect)?;
        let tokens = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| SsoError::Provider(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pkce_verifier.to_owned()))
            .request_async(&self.http)
            .await
            .map_err(|e| SsoError::CodeRefused(error_chain(&e)))?;
        let id_token = tokens
            .id_token()
            .ok_or_else(|| SsoError::IdToken("the token response has no id_token".into()))?;
        let nonce = Nonce::new(nonce.to_owned());
        let mut identity = None;
        for attempt in 0..2 {
            let keys = self.current_keys(&metadata).await?;
            let verifier = self.verifier(&keys.0);
            match id_token.claims(&verifier, &nonce) {
                Ok(claims) => {
                    identity = Some(Identity {
                        issuer: claims.issuer().to_string(),
                        subject: claims.subject().to_string(),
                        email: claims.email().map(|e| e.to_ascii_lowercase()),
                        email_verified: claims.email_verified().unwrap_or(false),
                        name: claims
                            .name()
                            .and_then(|n| n.get(None))
                            .map(|n| n.to_string()),
                    });
                    break;
                }
                Err(ClaimsVerificationError::SignatureVerification(
                    SignatureVerificationError::NoMatchingKey,
                )) if attempt == 0 => self.refetch_keys(&metadata, keys.1).await?,
                Err(ClaimsVerificationError::SignatureVerification(
                    SignatureVerificationError::NoMatchingKey,
                )) => return Err(SsoError::UnknownKey),
                Err(ClaimsVerificationError::InvalidNonce(e)) => return Err(SsoError::Nonce(e)),
                Err(e) => return Err(SsoError::IdToken(e.to_string())),
            }
        }
        let mut identity = identity.ok_or(SsoError::UnknownKey)?;
        if identity.email.is_none() {
            self.user_info(&client, tokens.access_token().clone(), &mut identity)
                .await?;
        }
        Ok(identity)
    }

    fn verifier(&self, keys: &CoreJsonWebKeySet) -> CoreIdTokenVerifier<'static> {
        match &self.client_secret {
            Some(secret) => CoreIdTokenVerifier::new_confidential_client(
                self.client_id.clone(),
                secret.clone(),
                self.issuer.clone(),
                keys.clone(),
            ),
            None => CoreIdTokenVerifier::new_public_client(
                self.client_id.clone(),
                self.issuer.clone(),
                keys.clone(),
            ),
        }
    }

    /// The JWKS in use and when it was fetched.
    async fn current_keys(
        &self,
        metadata: &CoreProviderMetadata,
    ) -> Result<(Arc<CoreJsonWebKeySet>, Instant), SsoError> {
        if let Some(keys) = &*self.keys.read() {
            return Ok((keys.set.clone(), keys.fetched));
        }
        self.refetch_keys(metadata, Instant::now()).await?;
        let keys = self.keys.read();
        let keys = keys.as_ref().expect("just fetched");
        Ok((keys.set.clone(), keys.fetched))
    }

    /// Fetches the JWKS again unless another sign-in did since `seen` (one fetch at a time);
    /// the new set replaces the old one whole.
    async fn refetch_keys(
        &self,
        metadata: &CoreProviderMetadata,
        seen: Instant,
    ) -> Result<(), SsoError> {
        let _one = self.refetch.lock().await;
        if self.keys.read().as_ref().is_some_and(|k| k.fetched > seen) {
            return Ok(());
        }
        let set = CoreJsonWebKeySet::fetch_async(metadata.jwks_uri(), &self.http)
            .await
            .map_err(|e| SsoError::Provider(format!("JWKS: {}", error_chain(&e))))?;
        tracing::info!(issuer = %self.issuer.as_str(), keys = set.keys().len(), "fetched the provider's JWKS again");
        *self.keys.write() = Some(Keys {
            set: Arc::new(set),
            fetched: Instant::now(),
        });
        Ok(())
    }

    async fn user_info(
        &self,
        client: &CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        access_token: openidconnect::AccessToken,
        identity: &mut Identity,
    ) -> Result<(), SsoError> {
        let subject = openidconnect::SubjectIdentifier::new(identity.subject.clone());
        let Ok(request) = client.user_info(access_token, Some(subject)) else {
            return Ok(());
        };
        let claims: CoreUserInfoClaims = request
            .request_async(&self.http)
            .await
            .map_err(|e| SsoError::Provider(format!("UserInfo: {}", error_chain(&e))))?;
        identity.email = claims.email().map(|e| e.to_ascii_lowercase());
        identity.email_verified = claims.email_verified().unwrap_or(false);
        if identity.name.is_none() {
            identity.name = claims
                .name()
                .and_then(|n| n.get(None))
                .map(|n| n.to_string());
        }
        Ok(())
    }
}

/// An error and its sources, joined by `: `.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
