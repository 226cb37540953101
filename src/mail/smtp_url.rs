//! `--smtp-url`: where outgoing mail goes and how (RFC 5321 submission over TLS).
//!
//! | URL | transport | default port |
//! |---|---|---|
//! | `smtp://[user:password@]host[:port]` | STARTTLS required (RFC 3207) before AUTH and mail | 587 |
//! | `smtps://[user:password@]host[:port]` | TLS from the first byte (RFC 8314 §3.3) | 465 |
//!
//! The user and password are percent-decoded (a `@` in a password is `%40`). Anything else (a
//! plain `smtp` without STARTTLS, another scheme, a path, no host) is refused at start with
//! the reason.

use std::time::Duration;

use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::transport::smtp::PoolConfig;
use lettre::{AsyncSmtpTransport, Tokio1Executor};

/// How long one SMTP command may take to be answered.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How a connection is secured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Security {
    /// `smtp://`: STARTTLS, required.
    StartTls,
    /// `smtps://`: implicit TLS.
    ImplicitTls,
}

/// A parsed `--smtp-url`, without its password in `Debug`.
#[derive(Clone)]
pub struct SmtpUrl {
    /// The host name or address (also the name the certificate must carry).
    pub host: String,
    /// The port.
    pub port: u16,
    /// How the connection is secured.
    pub security: Security,
    /// The user name, percent-decoded (empty: no AUTH).
    pub user: String,
    password: String,
}

impl std::fmt::Debug for SmtpUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown())
    }
}

/// Why `--smtp-url` or `--smtp-ca-file` was refused.
#[derive(Debug, thiserror::Error)]
pub enum SmtpUrlError {
    /// Not a URL, or not one of the two forms.
    #[error("--smtp-url: {0}")]
    Url(String),
    /// The CA file could not be read or used.
    #[error("--smtp-ca-file {path}: {reason}")]
    CaFile {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

impl SmtpUrl {
    /// Parses `text` (see the [module docs](self)).
    ///
    /// # Errors
    /// [`SmtpUrlError::Url`] naming what is wrong; the message never holds the password.
    pub fn parse(text: &str) -> Result<Self, SmtpUrlError> {
        let bad = |why: &str| SmtpUrlError::Url(why.to_owned());
        let url = url::Url::parse(text).map_err(|e| bad(&format!("not a URL ({e})")))?;
        let (security, default_port) = match url.scheme() {
            "smtp" => (Security::StartTls, 587),
            "smtps" => (Security::ImplicitTls, 465),
            _ => return Err(bad("the scheme must be smtp (STARTTLS) or smtps (TLS)")),
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
            return Err(bad("a path, query or fragment is not understood"));
        }
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| bad("the user or password is not UTF-8 once percent-decoded"))
        };
        Ok(Self {
            host,
            port: url.port().unwrap_or(default_port),
            security,
            user: decode(url.username())?,
            password: decode(url.password().unwrap_or(""))?,
        })
    }

    /// The URL as the account page and the log show it: no password.
    pub fn shown(&self) -> String {
        let scheme = match self.security {
            Security::StartTls => "smtp",
            Security::ImplicitTls => "smtps",
        };
        let user = if self.user.is_empty() {
            String::new()
        } else {
            format!("{}@", self.user)
        };
        format!("{scheme}://{user}{}:{}", self.host, self.port)
    }

    /// The lettre transport (with its connection pool) for this server, trusting the webpki
    /// roots plus every certificate of `ca_pem` (the bytes of `--smtp-ca-file`).
    ///
    /// # Errors
    /// [`SmtpUrlError::CaFile`] when `ca_pem` holds no usable certificate.
    pub fn transport(
        &self,
        ca_pem: Option<(&str, &[u8])>,
    ) -> Result<AsyncSmtpTransport<Tokio1Executor>, SmtpUrlError> {
        let mut tls = TlsParameters::builder(self.host.clone());
        if let Some((path, pem)) = ca_pem {
            let fail = |reason: String| SmtpUrlError::CaFile {
                path: path.to_owned(),
                reason,
            };
            let cert = Certificate::from_pem(pem).map_err(|e| fail(e.to_string()))?;
            tls = tls.add_root_certificate(cert);
        }
        let tls = tls.build_rustls().map_err(|e| SmtpUrlError::CaFile {
            path: ca_pem.map_or_else(String::new, |(p, _)| p.to_owned()),
            reason: e.to_string(),
        })?;
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&self.host)
            .port(self.port)
            .timeout(Some(COMMAND_TIMEOUT))
            .pool_config(PoolConfig::new().max_size(4))
            .tls(match self.security {
                Security::StartTls => Tls::Required(tls),
                Security::ImplicitTls => Tls::Wrapper(tls),
            });
        if !self.user.is_empty() {
            builder =
                builder.credentials(Credentials::new(self.user.clone(), self.password.clone()));
        }
        Ok(builder.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_and_their_ports() {
        let u = SmtpUrl::parse("smtp://me%40x.org:p%40ss@mail.example.com").unwrap();
        assert_eq!(
            (u.security, u.port, u.user.as_str(), u.password.as_str()),
            (Security::StartTls, 587, "me@x.org", "p@ss")
        );
        assert_eq!(u.shown(), "smtp://me@x.org@mail.example.com:587");
        assert!(!format!("{u:?}").contains("p@ss"));
        let u = SmtpUrl::parse("smtps://127.0.0.1:2465").unwrap();
        assert_eq!(
            (u.security, u.port, u.user.as_str()),
            (Security::ImplicitTls, 2465, "")
        );
    }

    #[test]
    fn anything_else_is_refused_without_the_password() {
        for bad in [
            "http://x",
            "smtp://",
            "smtp://u:secretpw@host/path",
            "smtp://host?tls=none",
            "nonsense",
        ] {
            let e = SmtpUrl::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with("--smtp-url: "), "{bad}: {e}");
            assert!(!e.contains("secretpw"), "{e}");
        }
    }
}
