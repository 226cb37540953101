//! Outgoing mail against a real SMTP server (aiosmtpd, `tests/smtp/server.py`): STARTTLS and
//! implicit TLS with AUTH, a certificate from a CA made at test time (`--smtp-ca-file`), the
//! `/metrics` outcomes, and a server that is down for a while: posts and sign-ins go on, and
//! the mail goes out once it is back.

use std::time::{Duration, Instant};

use crate::common::smtp::{self, SmtpServer};
use crate::common::TestServer;
use hearth::mail::Letter;

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";

/// The module's SMTP server, started once.
pub(crate) async fn shared_smtp() -> &'static SmtpServer {
    static SMTP: tokio::sync::OnceCell<SmtpServer> = tokio::sync::OnceCell::const_new();
    SMTP.get_or_init(SmtpServer::start).await
}

/// A seeded Hearth sending mail to `url`, trusting the test CA.
pub(crate) async fn hearth_mailing(url: String, ca: &std::path::Path) -> TestServer {
    hearth_mailing_with(url, ca, |_| {}).await
}

/// [`hearth_mailing`] with `tweak` applied to its configuration.
pub(crate) async fn hearth_mailing_with(
    url: String,
    ca: &std::path::Path,
    tweak: impl FnOnce(&mut hearth::config::Config),
) -> TestServer {
    let ca = ca.to_path_buf();
    TestServer::start_with(move |c| {
        smtp::configure(c, url, &ca);
        tweak(c);
    })
    .await
}

/// An SMTP server that is down: nothing listens on `port` until [`SmtpDown::bring_up`].
pub(crate) struct SmtpDown {
    port: u16,
    /// A server started for its CA and certificate (made now), which the one brought up
    /// later on `port` serves too.
    first: SmtpServer,
}

impl SmtpDown {
    /// Starts the server on the port Hearth sends to.
    pub(crate) async fn bring_up(&self) -> SmtpServer {
        SmtpServer::start_like(&self.first.ca_file, self.port).await
    }
}

/// A seeded Hearth whose SMTP server (STARTTLS, on a free port) is down until
/// [`SmtpDown::bring_up`].
pub(crate) async fn hearth_with_smtp_down() -> (TestServer, SmtpDown) {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let first = SmtpServer::start().await;
    let server = hearth_mailing(smtp::url_for("smtp", port), &first.ca_file).await;
    (server, SmtpDown { port, first })
}

/// A short letter to `to`.
pub(crate) fn letter(to: &str, subject: &str) -> Letter {
    Letter {
        to: to.into(),
        to_name: "Someone Ünïcode".into(),
        subject: subject.into(),
        text: "Plain words.".into(),
        html: "<p>Rich <b>words</b>.</p>".into(),
        unsubscribe: None,
    }
}

async fn metric(server: &TestServer, line: &str) -> u64 {
    let body = server.client().get("/metrics").await.body;
    body.lines()
        .find_map(|l| l.strip_prefix(line)?.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn starttls_and_implicit_tls_both_deliver_text_and_html() {
    let smtp = shared_smtp().await;
    for (url, to) in [
        (smtp.starttls_url(), "starttls@example.net"),
        (smtp.tls_url(), "wrapped@example.net"),
    ] {
        let server = hearth_mailing(url, &smtp.ca_file).await;
        assert!(server.state.outbox.mailer.is_on());
        server
            .state
            .outbox
            .mailer
            .send(letter(to, "Hello över TLS"))
            .unwrap();
        let got = smtp.wait_for(to, 1, Duration::from_secs(20)).await;
        assert_eq!(got.len(), 1, "{to}");
        let m = &got[0];
        assert_eq!(m.mail_from, "hearth@example.com");
        assert_eq!(m.subject(), "Hello över TLS");
        assert_eq!(m.header("To"), Some(&*format!("Someone Ünïcode <{to}>")));
        assert_eq!(m.text().trim(), "Plain words.");
        assert_eq!(m.html().trim(), "<p>Rich <b>words</b>.</p>");
        assert!(m.raw.contains("multipart/alternative"), "{}", m.raw);
        // A Message-ID at the sender's domain (RFC 5322 §3.6.4), unique per letter.
        let id = m.header("Message-ID").unwrap_or_default();
        assert!(
            id.starts_with('<') && id.ends_with("@example.com>") && id.len() > 30,
            "{id:?}"
        );
        let sent = r#"hearth_mail_deliveries_total{outcome="sent"}"#;
        for _ in 0..50 {
            if metric(&server, sent).await == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(metric(&server, sent).await, 1);
        server.stop().await;
    }
}

#[tokio::test]
async fn a_wrong_password_or_an_untrusted_certificate_delivers_nothing() {
    let smtp = shared_smtp().await;
    let wrong = format!("smtp://hearth:nope@127.0.0.1:{}", smtp.starttls_port);
    let server = hearth_mailing(wrong, &smtp.ca_file).await;
    server
        .state
        .outbox
        .mailer
        .send(letter("wrongpw@example.net", "x"))
        .unwrap();
    let failed = r#"hearth_mail_deliveries_total{outcome="failed"}"#;
    for _ in 0..200 {
        if metric(&server, failed).await == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(metric(&server, failed).await, 1, "a 535 is permanent");
    server.stop().await;
    // Without --smtp-ca-file the test CA is not trusted: the TLS handshake fails (retried,
    // since a certificate may be renewed), and nothing is delivered meanwhile.
    let url = smtp.starttls_url();
    let server = TestServer::start_with(move |c| c.smtp_url = Some(url.into())).await;
    server
        .state
        .outbox
        .mailer
        .send(letter("untrusted@example.net", "x"))
        .unwrap();
    let retried = r#"hearth_mail_deliveries_total{outcome="retried"}"#;
    for _ in 0..200 {
        if metric(&server, retried).await >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(metric(&server, retried).await >= 1);
    assert!(smtp
        .wait_for("untrusted@example.net", 1, Duration::ZERO)
        .await
        .is_empty());
    server.stop().await;
}

#[tokio::test]
async fn bad_settings_stop_the_start_with_the_reason() {
    let dir = crate::common::temp_dir("mailcfg");
    for (url, from, says) in [
        ("http://x", None, "--smtp-url"),
        ("smtp://h", Some("not an address"), "--mail-from"),
    ] {
        let mut config = hearth::config::Config::for_tests(&dir);
        config.smtp_url = Some(url.to_owned().into());
        config.mail_from = from.map(str::to_owned);
        let e = hearth::state::AppState::build(config).await.unwrap_err();
        assert!(e.to_string().contains(says), "{e}");
    }
}

#[tokio::test]
async fn with_the_smtp_server_down_posts_and_sign_ins_go_on_and_mail_follows() {
    let (server, down) = hearth_with_smtp_down().await;
    server
        .state
        .outbox
        .mailer
        .send(letter("later@example.net", "Held back"))
        .unwrap();
    let started = Instant::now();
    let mut david = server.client();
    assert_eq!(david.login(DAVID, SECRET).await.status, 302);
    let mut jason = server.client();
    let asked = crate::mail_sign_in::ask_code(&mut jason, "jason@example.com").await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    let (csrf, _) = david.room(1).await;
    let r = david
        .post_message(1, "while mail is down", "cid-down-1", &csrf)
        .await;
    assert!(r.status < 400, "{}", r.status);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let smtp = down.bring_up().await;
    let got = smtp
        .wait_for("later@example.net", 1, Duration::from_secs(40))
        .await;
    assert_eq!(got.len(), 1, "delivered once the server is back");
    assert_eq!(got[0].subject(), "Held back");
    // The code asked for while the server was down arrives, and signs in.
    let got = smtp
        .wait_matching(
            "jason@example.com",
            "sign-in code",
            1,
            Duration::from_secs(40),
        )
        .await;
    assert_eq!(got.len(), 1, "the code followed");
    let code: String = got[0].subject().chars().take(6).collect();
    let r = crate::mail_sign_in::use_code(&mut jason, "jason@example.com", &code).await;
    assert_eq!(r.status, 302, "{}", r.body);
    let retried = metric(
        &server,
        r#"hearth_mail_deliveries_total{outcome="retried"}"#,
    )
    .await;
    assert!(retried >= 1, "{retried}");
    server.stop().await;
}

/// The administrator's test letter is sent while the page waits, so its answer is the SMTP
/// server's: with the server down, 422 naming the failure and counted failed; nothing queued
/// to arrive later.
#[tokio::test]
async fn the_test_letter_answers_with_what_the_smtp_server_did() {
    let (server, _down) = hearth_with_smtp_down().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let csrf = crate::common::csrf_meta(&david.get("/account/edit").await.body);
    let body = crate::common::form(&[("authenticity_token", &csrf)]);
    let r = david
        .post_form("/account/mail/test_email", &body, &[])
        .await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.body.contains("The test e-mail was not sent"),
        "{}",
        r.body
    );
    let failed = r#"hearth_mail_deliveries_total{outcome="failed"}"#;
    assert_eq!(metric(&server, failed).await, 1);
    server.stop().await;
}
