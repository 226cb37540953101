//! A real OpenID Connect provider for single sign-on tests: `tests/node/oidc_provider.mjs`
//! (npm's `oidc-provider`) on a loopback port, its dev login form driven over HTTP like a
//! browser would, and Hearth's signed flow cookie read back.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::{form, Client, Response};

/// The client Hearth is registered as (`oidc_provider.mjs`'s `CLIENT_ID`, `CLIENT_SECRET`).
pub const CLIENT_ID: &str = "hearth";
pub const CLIENT_SECRET: &str = "hearth-test-client-secret-0123456789";

/// Sets `config` for single sign-on through the provider at `http://127.0.0.1:<port>`, as
/// [`CLIENT_ID`] with [`CLIENT_SECRET`].
pub fn configure(config: &mut hearth::config::Config, port: u16) {
    config.oidc.oidc_issuer = Some(format!("http://127.0.0.1:{port}"));
    config.oidc.oidc_client_id = Some(CLIENT_ID.into());
    config.oidc.oidc_client_secret = Some(CLIENT_SECRET.to_owned().into());
}

/// A free loopback port (bound, then released), for a provider that restarts on it.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running provider.
pub struct Provider {
    child: Child,
    pub port: u16,
    keys: PathBuf,
    redirect: String,
}

impl Provider {
    /// Starts the provider on `port`, with Hearth's callback `redirect`, signing with key `sign`
    /// and publishing `publish` in its JWKS (keys kept in `keys`).
    pub async fn start(
        port: u16,
        redirect: &str,
        keys: &Path,
        sign: &str,
        publish: &[&str],
    ) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/oidc_provider.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .args([
                "--port",
                &port.to_string(),
                "--redirect",
                redirect,
                "--sign",
                sign,
            ])
            .args(["--publish", &publish.join(",")])
            .arg("--keys")
            .arg(keys)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs tests/node/oidc_provider.mjs");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the provider starts in time")
            .unwrap()
            .unwrap_or_default();
        assert!(line.starts_with("listening "), "the provider said {line:?}");
        // The rest of its output is read (and dropped), so that writing it never fails.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            port,
            keys: keys.to_path_buf(),
            redirect: redirect.to_owned(),
        }
    }

    pub fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops it and starts it again on the same port with other keys (its sessions and codes,
    /// kept in memory, are gone).
    pub async fn restart(mut self, sign: &str, publish: &[&str]) -> Self {
        self.child.kill().await.unwrap();
        let _ = self.child.wait().await;
        Self::start(self.port, &self.redirect, &self.keys, sign, publish).await
    }

    /// A browser-like client of the provider.
    pub fn client(&self) -> Client {
        Client {
            addr: format!("127.0.0.1:{}", self.port).parse().unwrap(),
            cookies: Vec::new(),
        }
    }

    /// Signs `login` in at the provider from `authorize` (the URL Hearth sent the browser to)
    /// through its dev login form; returns the callback URL it redirects to (path and query).
    pub async fn sign_in(&self, authorize: &str, login: &str) -> String {
        let mut op = self.client();
        let mut at = self.path(authorize);
        for _ in 0..6 {
            let r = op.get(&at).await;
            assert!(
                matches!(r.status, 200 | 302 | 303),
                "{at}: {} {}",
                r.status,
                r.body
            );
            if r.status == 200 {
                let action = super::attr_after(&r.body, "action=\"").expect("the login form");
                let body = form(&[("prompt", "login"), ("login", login), ("password", "any")]);
                let posted = op.post_form(&self.path(&action), &body, &[]).await;
                assert_eq!(posted.status, 303, "{}", posted.body);
                at = self.path(posted.header("location").unwrap());
                continue;
            }
            let next = r.header("location").unwrap().to_owned();
            if next.contains("/session/oidc/callback") {
                return next;
            }
            at = self.path(&next);
        }
        panic!("no redirect to Hearth's callback");
    }

    /// `url` without this provider's origin.
    fn path(&self, url: &str) -> String {
        url.strip_prefix(&self.issuer())
            .unwrap_or(url)
            .replace("&amp;", "&")
    }
}

/// The callback URL's path and query, on Hearth's side (`http://127.0.0.1:P/session/…` →
/// `/session/…`).
pub fn local(url: &str) -> String {
    match url.find("/session/") {
        Some(i) => url[i..].to_owned(),
        None => url.to_owned(),
    }
}

/// Starts a sign-in at Hearth: `GET /session/oidc`, answering 302 to the provider.
pub async fn begin(hearth: &mut Client) -> String {
    let r = hearth.get("/session/oidc").await;
    assert_eq!(r.status, 302, "{}", r.body);
    r.header("location").unwrap().to_owned()
}

/// Hearth's flow cookie's contents: `(state, nonce, pkce_verifier)` (the cookie is signed, not
/// encrypted, as Rails' `cookies.signed`).
pub fn flow(hearth: &Client) -> (String, String, String) {
    use base64::Engine as _;
    let raw = hearth.cookie("oidc_sign_in").expect("the flow cookie");
    let raw = percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .unwrap();
    let data = raw.split("--").next().unwrap();
    let envelope = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let envelope: serde_json::Value = serde_json::from_slice(&envelope).unwrap();
    let message = envelope["_rails"]["message"].as_str().unwrap();
    let value = base64::engine::general_purpose::STANDARD
        .decode(message)
        .unwrap();
    let value: String = serde_json::from_slice(&value).unwrap();
    let mut parts = value.split(' ').map(str::to_owned);
    (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    )
}

/// The refusal page's kind (`data-refusal`), if the response is one.
pub fn refusal(r: &Response) -> Option<String> {
    super::attr_after(&r.body, "data-refusal=\"")
}
