//! A real SMTP server for the mail tests: `tests/smtp/server.py` (PyPI's aiosmtpd, installed
//! by `scripts/test`), with STARTTLS on one port and implicit TLS on another, both requiring
//! AUTH, under a certificate issued at test time by a throwaway CA (rcgen). Each delivered
//! message is read back from the directory the server writes it to.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::temp_dir;

/// The user and password the server accepts.
pub const USER: &str = "hearth";
/// See [`USER`].
pub const PASSWORD: &str = "p@ss word";

/// A running server, killed on drop; it also stops by itself when the test process ends (its
/// standard input closes), so a server shared by a module through a `static` does not outlive
/// the run.
pub struct SmtpServer {
    child: Child,
    pub dir: PathBuf,
    pub starttls_port: u16,
    pub tls_port: u16,
    /// The CA's certificate (PEM file) the server's certificate chains to.
    pub ca_file: PathBuf,
}

/// One delivered message, as `server.py` decoded it.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Delivered {
    pub mail_from: String,
    pub rcpt_tos: Vec<String>,
    pub headers: std::collections::BTreeMap<String, Vec<String>>,
    pub text: Option<String>,
    pub html: Option<String>,
    #[serde(skip)]
    pub raw: String,
}

impl Delivered {
    /// The first value of header `name` (as the message spells it).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.first())
            .map(String::as_str)
    }

    pub fn subject(&self) -> &str {
        self.header("Subject").unwrap_or("")
    }

    pub fn text(&self) -> &str {
        self.text.as_deref().unwrap_or("")
    }

    pub fn html(&self) -> &str {
        self.html.as_deref().unwrap_or("")
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes a throwaway CA and a certificate it issued for `localhost` and 127.0.0.1 to `dir`:
/// (CA PEM path, certificate path, key path).
fn pki(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "Hearth mail test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let paths = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&paths.0, ca.pem()).unwrap();
    std::fs::write(&paths.1, leaf.pem()).unwrap();
    std::fs::write(&paths.2, key.serialize_pem()).unwrap();
    paths
}

impl SmtpServer {
    /// Starts a server on free ports.
    pub async fn start() -> Self {
        Self::start_on(0, 0).await
    }

    /// Starts a server on these ports (0: a free one), with a new certificate.
    pub async fn start_on(starttls_port: u16, tls_port: u16) -> Self {
        let dir = temp_dir("smtp");
        let (ca_file, cert, key) = pki(&dir);
        Self::spawn(dir, ca_file, (cert, key), starttls_port, tls_port).await
    }

    /// A new server on `starttls_port` under the certificate files of an earlier one (`ca`),
    /// writing to a directory of its own.
    pub async fn start_like(ca: &Path, starttls_port: u16) -> Self {
        let old = ca.parent().unwrap();
        let dir = temp_dir("smtp");
        let files = (old.join("cert.pem"), old.join("key.pem"));
        Self::spawn(dir, ca.to_path_buf(), files, starttls_port, 0).await
    }

    async fn spawn(
        dir: PathBuf,
        ca_file: PathBuf,
        (cert, key): (PathBuf, PathBuf),
        starttls_port: u16,
        tls_port: u16,
    ) -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/smtp/server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg("--dir")
            .arg(&dir)
            .arg("--cert")
            .arg(&cert)
            .arg("--key")
            .arg(&key)
            .args(["--user", USER, "--password", PASSWORD])
            .args(["--starttls-port", &starttls_port.to_string()])
            .args(["--tls-port", &tls_port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs tests/smtp/server.py (scripts/test installs aiosmtpd)");
        let stdout = child.stdout.take().unwrap();
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
            line
        })
        .await
        .unwrap();
        let ports: Vec<u16> = line
            .strip_prefix("ready ")
            .unwrap_or_else(|| {
                panic!("the SMTP server did not start (is aiosmtpd installed?): {line:?}")
            })
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        Self {
            child,
            dir,
            starttls_port: ports[0],
            tls_port: ports[1],
            ca_file,
        }
    }

    /// `--smtp-url` of the STARTTLS listener, with the credentials.
    pub fn starttls_url(&self) -> String {
        url_for("smtp", self.starttls_port)
    }

    /// `--smtp-url` of the implicit-TLS listener, with the credentials.
    pub fn tls_url(&self) -> String {
        url_for("smtps", self.tls_port)
    }

    /// Every message delivered so far, in order.
    pub fn delivered(&self) -> Vec<Delivered> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|p| {
                let mut m: Delivered = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
                m.raw = std::fs::read_to_string(p.with_extension("eml")).unwrap_or_default();
                m
            })
            .collect()
    }

    /// The messages to `to`, waiting (up to `within`) until there are at least `n`.
    pub async fn wait_for(&self, to: &str, n: usize, within: Duration) -> Vec<Delivered> {
        self.wait_matching(to, "", n, within).await
    }

    /// The messages to `to` whose subject contains `subject` (the tests of a module share the
    /// server and the seed's addresses), waiting (up to `within`) until there are at least `n`.
    pub async fn wait_matching(
        &self,
        to: &str,
        subject: &str,
        n: usize,
        within: Duration,
    ) -> Vec<Delivered> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let found: Vec<Delivered> = self
                .delivered()
                .into_iter()
                .filter(|m| m.rcpt_tos.iter().any(|r| r == to) && m.subject().contains(subject))
                .collect();
            if found.len() >= n || tokio::time::Instant::now() >= deadline {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Sets `config` to send mail through `url` (From `Hearth <hearth@example.com>`), trusting the
/// CA certificate in `ca`.
pub fn configure(config: &mut hearth::config::Config, url: String, ca: &Path) {
    config.smtp_url = Some(url.into());
    config.mail_from = Some("Hearth <hearth@example.com>".into());
    config.smtp_ca_file = Some(ca.to_path_buf());
}

/// An SMTP URL at 127.0.0.1 with the test credentials, percent-encoded.
pub fn url_for(scheme: &str, port: u16) -> String {
    let password = PASSWORD.replace('@', "%40").replace(' ', "%20");
    format!("{scheme}://{USER}:{password}@127.0.0.1:{port}")
}
