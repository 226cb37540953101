//! Endpoints: the plain `http://` and `ws://` URLs the load generator talks to.
//!
//! The load generator measures servers on loopback, so it speaks cleartext HTTP/1.1 and
//! WebSocket only. A URL is split into the parts the wire needs: the TCP address to connect to,
//! the `Host` header (always `host:port`, so that it matches the `Origin` the load generator
//! sends; Rails' same-origin check compares `Origin` with `"http://" + Host`, see
//! `actioncable/lib/action_cable/connection/base.rb#allow_request_origin?`), and the
//! origin-form request target (path plus query).

use std::fmt;

/// The scheme of an [`Endpoint`]: `http` (also used for the base URL of a Campfire target) or
/// `ws` (an Action Cable mount such as `ws://127.0.0.1:3000/cable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`; default port 80.
    Http,
    /// `ws://`; default port 80.
    Ws,
}

/// A parsed cleartext URL: `scheme://host[:port][/path][?query]`.
///
/// `path` always starts with `/` and keeps the query string; a base URL given with a trailing
/// slash (`http://127.0.0.1:3000/`) has the path `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http` or `ws`.
    pub scheme: Scheme,
    /// The host as written (a name, an IPv4 address, or an IPv6 address without brackets).
    pub host: String,
    /// The TCP port (explicit, or 80 by default).
    pub port: u16,
    /// The origin-form request target: path and query, starting with `/`.
    pub path: String,
}

/// Why a URL could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointError {
    /// `https://` and `wss://` are not supported: the load generator measures loopback servers.
    TlsUnsupported(String),
    /// Not `http://` or `ws://`.
    BadScheme(String),
    /// No host after the scheme.
    MissingHost(String),
    /// The port is not a number in 1..=65535.
    BadPort(String),
}

impl fmt::Display for EndpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TlsUnsupported(u) => write!(
                f,
                "{u}: TLS is not supported; point the load generator at the server's plain http:// port"
            ),
            Self::BadScheme(u) => write!(f, "{u}: the URL must start with http:// or ws://"),
            Self::MissingHost(u) => write!(f, "{u}: the URL has no host"),
            Self::BadPort(u) => write!(f, "{u}: the port must be a number from 1 to 65535"),
        }
    }
}

impl std::error::Error for EndpointError {}

impl Endpoint {
    /// Parses `http://host[:port][/path]` or `ws://host[:port][/path]`.
    ///
    /// Errors: [`EndpointError`] for `https`/`wss`, any other scheme, a missing host or a bad port.
    pub fn parse(url: &str) -> Result<Self, EndpointError> {
        let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else if let Some(rest) = url.strip_prefix("ws://") {
            (Scheme::Ws, rest)
        } else if url.starts_with("https://") || url.starts_with("wss://") {
            return Err(EndpointError::TlsUnsupported(url.to_owned()));
        } else {
            return Err(EndpointError::BadScheme(url.to_owned()));
        };
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(split);
        let path = if path.is_empty() {
            "/".to_owned()
        } else if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_owned()
        };
        let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
            let close = bracketed
                .find(']')
                .ok_or_else(|| EndpointError::MissingHost(url.to_owned()))?;
            let host = &bracketed[..close];
            let after = &bracketed[close + 1..];
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(EndpointError::BadPort(url.to_owned())),
            };
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(EndpointError::MissingHost(url.to_owned()));
        }
        let port = match port {
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(p) if p > 0 => p,
                _ => return Err(EndpointError::BadPort(url.to_owned())),
            },
        };
        Ok(Self {
            scheme,
            host: host.to_owned(),
            port,
            path,
        })
    }

    /// `host:port` for `TcpStream::connect` and for the `Host` header (IPv6 hosts bracketed).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The browser origin of this endpoint, `http://host:port`, as sent in the `Origin` header
    /// (a `ws://` endpoint's page origin is its `http://` twin).
    pub fn origin(&self) -> String {
        format!("http://{}", self.authority())
    }

    /// The same host and port with another request target (`path` must start with `/`):
    /// `base.join("/rooms/1")` keeps a base path prefix, so `http://h/app` joins to `/app/rooms/1`.
    #[must_use]
    pub fn join(&self, path: &str) -> Self {
        let prefix = self.path.trim_end_matches('/');
        Self {
            scheme: self.scheme,
            host: self.host.clone(),
            port: self.port,
            path: format!("{prefix}{path}"),
        }
    }

    /// The Action Cable URL for a base URL: scheme `ws`, path `<prefix>/cable`.
    #[must_use]
    pub fn cable(&self) -> Self {
        let mut e = self.join("/cable");
        e.scheme = Scheme::Ws;
        e
    }

    /// Whether the host is a loopback address or `localhost` (so `/proc` can tell which local
    /// process serves it).
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .map(|ip| ip.is_loopback())
                .unwrap_or(false)
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Ws => "ws",
        };
        write!(f, "{scheme}://{}{}", self.authority(), self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_base_and_cable_urls() {
        let e = Endpoint::parse("http://127.0.0.1:3000").unwrap();
        assert_eq!(e.scheme, Scheme::Http);
        assert_eq!(e.host, "127.0.0.1");
        assert_eq!(e.port, 3000);
        assert_eq!(e.path, "/");
        assert_eq!(e.origin(), "http://127.0.0.1:3000");
        assert_eq!(e.join("/rooms/1").path, "/rooms/1");
        assert_eq!(e.cable().to_string(), "ws://127.0.0.1:3000/cable");

        let t = Endpoint::parse("http://localhost:28080/broadcast?stream=bench").unwrap();
        assert_eq!(t.path, "/broadcast?stream=bench");
        assert_eq!(t.port, 28080);
        assert!(t.is_loopback());

        let d = Endpoint::parse("ws://example.test/cable").unwrap();
        assert_eq!((d.port, d.scheme), (80, Scheme::Ws));
        assert!(!d.is_loopback());

        let v6 = Endpoint::parse("http://[::1]:8080/x").unwrap();
        assert_eq!(v6.host, "::1");
        assert_eq!(v6.authority(), "[::1]:8080");
    }

    #[test]
    fn prefix_paths_are_kept_when_joining() {
        let e = Endpoint::parse("http://h:1/app/").unwrap();
        assert_eq!(e.join("/session/new").path, "/app/session/new");
    }

    #[test]
    fn rejects_tls_and_bad_ports() {
        assert!(matches!(
            Endpoint::parse("https://x"),
            Err(EndpointError::TlsUnsupported(_))
        ));
        assert!(matches!(
            Endpoint::parse("ftp://x"),
            Err(EndpointError::BadScheme(_))
        ));
        assert!(matches!(
            Endpoint::parse("http://x:0"),
            Err(EndpointError::BadPort(_))
        ));
        assert!(matches!(
            Endpoint::parse("http://:80"),
            Err(EndpointError::MissingHost(_))
        ));
    }
}
