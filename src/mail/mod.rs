//! Outgoing mail: a bounded queue between the pages and schedulers that write letters and the
//! SMTP server that takes them (`--smtp-url`, `--mail-from`, `--smtp-ca-file`).
//!
//! - Whoever has a letter calls [`Mailer::send`], which only `try_send`s onto a queue of
//!   [`QUEUE_CAPACITY`] letters: no request ever waits for SMTP. A full queue drops the letter
//!   and counts it (`outcome="dropped"`).
//! - One task takes letters off the queue and sends up to [`CONCURRENCY`] at once through
//!   lettre's pooled SMTP transport (STARTTLS or implicit TLS, rustls with ring).
//! - A letter the server could not take for a passing reason (no connection, a timeout, a 4xx
//!   reply) is tried again after [`backoff`] (1 s, doubling up to a minute), up to
//!   [`MAX_ATTEMPTS`] attempts in all (about ten minutes): a server down for a while gets its
//!   mail once it is back. A 5xx reply (RFC 5321 §4.2.1: permanent) is not tried again.
//! - `/metrics`: `hearth_mail_deliveries_total{outcome}`, `outcome` = `sent`, `retried` (an
//!   attempt failed and another follows), `failed` (given up), `dropped` (the queue was full).
//!
//! Without `--smtp-url` the [`Mailer`] is off ([`Mailer::is_on`] false): every page part that
//! needs mail is hidden and [`Mailer::send`] refuses.

pub mod keys;
pub mod smtp_url;

use std::sync::Arc;
use std::time::Duration;

use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Tokio1Executor};
use metrics::Counter;
use tokio::sync::{mpsc, Semaphore};

pub use smtp_url::{SmtpUrl, SmtpUrlError};

use crate::metrics::Metrics;

/// Letters waiting at most; more are dropped (and counted).
pub const QUEUE_CAPACITY: usize = 1024;
/// Letters in flight at once (each may be waiting out its back-off).
pub const CONCURRENCY: usize = 8;
/// Attempts per letter, the first included.
pub const MAX_ATTEMPTS: u32 = 14;
/// The deliveries' counter in `/metrics` (label `outcome`).
pub const DELIVERIES: &str = "hearth_mail_deliveries_total";

/// The wait before attempt `attempt + 1` (`attempt` ≥ 1): 1 s, 2 s, 4 s, … at most 60 s.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.saturating_sub(1).min(6)).min(Duration::from_secs(60))
}

/// One letter to one person: a `multipart/alternative` of a text and an HTML part.
#[derive(Clone, Debug)]
pub struct Letter {
    /// The recipient's address.
    pub to: String,
    /// The recipient's name, shown in `To` (empty: the address alone).
    pub to_name: String,
    /// The `Subject`.
    pub subject: String,
    /// The `text/plain` part.
    pub text: String,
    /// The `text/html` part.
    pub html: String,
    /// RFC 2369 `List-Unsubscribe` URL (https or http); with it, RFC 8058's
    /// `List-Unsubscribe-Post: List-Unsubscribe=One-Click` is sent too.
    pub unsubscribe: Option<String>,
}

/// Why [`Mailer::send`] did not queue a letter.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NotQueued {
    /// No `--smtp-url`.
    #[error("mail is not configured")]
    Off,
    /// The queue was full.
    #[error("the mail queue is full")]
    Full,
    /// An address or header did not parse.
    #[error("the letter is not valid: {0}")]
    Invalid(String),
}

/// How long [`Mailer::send_now`] waits for the SMTP server.
pub const SEND_NOW_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug)]
struct Counters {
    sent: Counter,
    retried: Counter,
    failed: Counter,
    dropped: Counter,
}

struct Inner {
    keys: keys::MailKeys,
    tx: mpsc::Sender<lettre::Message>,
    /// The SMTP transport the queue sends through (pooled connections), for a letter sent
    /// while its sender waits ([`Mailer::send_now`]).
    transport: AsyncSmtpTransport<Tokio1Executor>,
    /// Held by the test letter being sent ([`Mailer::send_now`]).
    sending_now: tokio::sync::Mutex<()>,
    from: Mailbox,
    server: SmtpUrl,
    counters: Counters,
}

/// The handle of outgoing mail: cheap to clone, off when no SMTP server is set.
#[derive(Clone, Default)]
pub struct Mailer {
    inner: Option<Arc<Inner>>,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Some(inner) => f
                .debug_struct("Mailer")
                .field("server", &inner.server)
                .field("from", &inner.from.to_string())
                .finish_non_exhaustive(),
            None => f.write_str("Mailer(off)"),
        }
    }
}

/// Why the mailer could not start.
#[derive(Debug, thiserror::Error)]
pub enum MailSetupError {
    /// `--smtp-url` or `--smtp-ca-file`.
    #[error(transparent)]
    Smtp(#[from] SmtpUrlError),
    /// `--mail-from` is not an address or `Name <address>`.
    #[error("--mail-from {0:?} is not an address or `Name <address>`")]
    From(String),
}

impl Mailer {
    /// The keys of signing in by mail, when mail is on.
    pub fn keys(&self) -> Option<&keys::MailKeys> {
        self.inner.as_ref().map(|i| &i.keys)
    }

    /// The mailer of these settings, its sending task started: off when `smtp_url` is `None`.
    /// `keys` are the keys of signing in by mail ([`keys::MailKeys`]).
    ///
    /// # Errors
    /// [`MailSetupError`] for a URL, CA file or `From` that does not parse.
    pub fn start(
        smtp_url: Option<&str>,
        mail_from: Option<&str>,
        ca_file: Option<&std::path::Path>,
        metrics: &Metrics,
        keys: impl FnOnce() -> keys::MailKeys,
    ) -> Result<Self, MailSetupError> {
        let Some(url) = smtp_url.filter(|u| !u.is_empty()) else {
            return Ok(Self::default());
        };
        let server = SmtpUrl::parse(url)?;
        let pem = match ca_file {
            Some(path) => Some(std::fs::read(path).map_err(|e| SmtpUrlError::CaFile {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?),
            None => None,
        };
        let path = ca_file.map(|p| p.display().to_string()).unwrap_or_default();
        let transport = server.transport(pem.as_deref().map(|pem| (path.as_str(), pem)))?;
        let from_text =
            mail_from.map_or_else(|| format!("Hearth <hearth@{}>", server.host), str::to_owned);
        let from: Mailbox = from_text
            .parse()
            .map_err(|_| MailSetupError::From(from_text.clone()))?;
        if mail_from.is_none() {
            tracing::warn!(
                from = %from_text,
                "No --mail-from: letters come from this address; set one your mail server accepts"
            );
        }
        let outcome = |value| {
            metrics.labelled_counter(DELIVERIES, ("outcome", value), "Outgoing mail, by outcome.")
        };
        let counters = Counters {
            sent: outcome("sent"),
            retried: outcome("retried"),
            failed: outcome("failed"),
            dropped: outcome("dropped"),
        };
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let inner = Arc::new(Inner {
            keys: keys(),
            tx,
            transport,
            sending_now: tokio::sync::Mutex::new(()),
            from,
            server,
            counters,
        });
        tokio::spawn(run(rx, inner.transport.clone(), Arc::downgrade(&inner)));
        tracing::info!(smtp = %inner.server.shown(), from = %inner.from, "outgoing mail on");
        Ok(Self { inner: Some(inner) })
    }

    /// Whether mail is configured.
    pub fn is_on(&self) -> bool {
        self.inner.is_some()
    }

    /// The SMTP server as shown to administrators (no password), when on.
    pub fn server_shown(&self) -> Option<String> {
        self.inner.as_ref().map(|i| i.server.shown())
    }

    /// The `From` mailbox, when on.
    pub fn from_shown(&self) -> Option<String> {
        self.inner.as_ref().map(|i| i.from.to_string())
    }

    /// Sends `letter` once, now, and waits at most [`SEND_NOW_TIMEOUT`] for the SMTP server's
    /// answer, bypassing the queue and its retries: for the administrator's test letter,
    /// whose point is the server's answer (counted as sent or failed like the queue's).
    ///
    /// # Errors
    /// A sentence for the administrator: mail is off, the letter does not parse, the server
    /// could not be reached in time, or what it answered.
    pub async fn send_now(&self, letter: Letter) -> Result<(), String> {
        let inner = self
            .inner
            .as_ref()
            .ok_or_else(|| NotQueued::Off.to_string())?;
        let message = build(&inner.from, letter).map_err(|e| e.to_string())?;
        // One at a time: a test is one letter, and many at once would each hold a connection.
        let Ok(_one) = inner.sending_now.try_lock() else {
            return Err("another test e-mail is on its way: try again in a moment".into());
        };
        // The send runs on a task of its own and is never cut off: a send dropped in the
        // middle of its SMTP exchange would leave its pooled connection with an answer unread,
        // which the next letter on it would take for its own. Past the wait it ends on its own
        // (lettre's timeouts) and the page says the server did not answer.
        let transport = inner.transport.clone();
        let send = tokio::spawn(async move { transport.send(message).await });
        let outcome = match tokio::time::timeout(SEND_NOW_TIMEOUT, send).await {
            Ok(Ok(Ok(_))) => Ok(()),
            Ok(Ok(Err(e))) => Err(format!("the mail server did not take it: {e}")),
            Ok(Err(e)) => Err(format!("the send failed: {e}")),
            Err(_) => Err(format!(
                "the mail server did not answer within {} s",
                SEND_NOW_TIMEOUT.as_secs()
            )),
        };
        match &outcome {
            Ok(()) => inner.counters.sent.increment(1),
            Err(why) => {
                tracing::warn!(error = %why, "test e-mail not sent");
                inner.counters.failed.increment(1);
            }
        }
        outcome
    }

    /// Queues `letter` without waiting: [`Self::prepare`], then [`Self::enqueue`].
    ///
    /// # Errors
    /// [`NotQueued`]: mail is off, the queue is full (counted as dropped), or the letter's
    /// address does not parse.
    pub fn send(&self, letter: Letter) -> Result<(), NotQueued> {
        self.enqueue(self.prepare(letter)?)
    }

    /// The message of `letter` as it would go out (headers and MIME parts encoded), not yet
    /// queued. A caller that must spend the same work whether or not it sends (the answers
    /// to unknown addresses, [`crate::web::mail_sign_in`]) prepares every letter and queues
    /// only the real ones.
    ///
    /// # Errors
    /// [`NotQueued::Off`] without mail; [`NotQueued::Invalid`] for an address or header that
    /// does not parse.
    pub fn prepare(&self, letter: Letter) -> Result<Prepared, NotQueued> {
        let inner = self.inner.as_ref().ok_or(NotQueued::Off)?;
        Ok(Prepared(build(&inner.from, letter)?))
    }

    /// Queues a prepared letter without waiting.
    ///
    /// # Errors
    /// [`NotQueued::Off`] without mail; [`NotQueued::Full`] when the queue is full (counted
    /// as dropped).
    pub fn enqueue(&self, letter: Prepared) -> Result<(), NotQueued> {
        let inner = self.inner.as_ref().ok_or(NotQueued::Off)?;
        inner.tx.try_send(letter.0).map_err(|_| {
            inner.counters.dropped.increment(1);
            tracing::warn!("mail queue full: letter dropped");
            NotQueued::Full
        })
    }
}

/// `text` on one line, fit for a header: each control character (CR and LF among them, which
/// would end the header, and which lettre refuses to encode in a name by panicking) becomes a
/// space. People's and rooms' names may hold line breaks.
fn header_text(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A letter built into its message ([`Mailer::prepare`]), ready for [`Mailer::enqueue`].
#[derive(Debug)]
pub struct Prepared(lettre::Message);

/// The lettre message of `letter`, from `from`.
fn build(from: &Mailbox, letter: Letter) -> Result<lettre::Message, NotQueued> {
    let invalid = |e: &dyn std::fmt::Display| NotQueued::Invalid(e.to_string());
    let address = letter.to.parse().map_err(|e| invalid(&e))?;
    let name = header_text(letter.to_name.trim());
    let name = (!name.trim().is_empty()).then_some(name);
    // RFC 5322 §3.6.4: every message SHOULD carry a Message-ID; a unique left part at the
    // sender's domain (lettre's own would name `localhost`).
    let message_id = format!(
        "<{}@{}>",
        uuid::Uuid::new_v4().simple(),
        from.email.domain()
    );
    let mut builder = lettre::Message::builder()
        .message_id(Some(message_id))
        .from(from.clone())
        .to(Mailbox::new(name, address))
        .subject(header_text(&letter.subject));
    if let Some(url) = letter.unsubscribe {
        if !url.is_ascii() || url.contains(['<', '>', '\r', '\n']) {
            return Err(NotQueued::Invalid("unsubscribe URL".into()));
        }
        builder = builder
            .raw_header(HeaderValue::new(
                HeaderName::new_from_ascii_str("List-Unsubscribe"),
                format!("<{url}>"),
            ))
            .raw_header(HeaderValue::new(
                HeaderName::new_from_ascii_str("List-Unsubscribe-Post"),
                "List-Unsubscribe=One-Click".into(),
            ));
    }
    builder
        .multipart(MultiPart::alternative_plain_html(letter.text, letter.html))
        .map_err(|e| invalid(&e))
}

/// The sending task: takes letters off the queue until every [`Mailer`] handle is gone.
async fn run(
    mut rx: mpsc::Receiver<lettre::Message>,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    inner: std::sync::Weak<Inner>,
) {
    let slots = Arc::new(Semaphore::new(CONCURRENCY));
    while let Some(message) = rx.recv().await {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            break;
        };
        let transport = transport.clone();
        let inner = inner.clone();
        tokio::spawn(async move {
            deliver(&transport, &message, &inner).await;
            drop(permit);
        });
    }
}

/// Sends one message, with the retries of the [module docs](self), and counts the outcome.
async fn deliver(
    transport: &AsyncSmtpTransport<Tokio1Executor>,
    message: &lettre::Message,
    inner: &std::sync::Weak<Inner>,
) {
    let count = |pick: fn(&Counters) -> &Counter| {
        if let Some(inner) = inner.upgrade() {
            pick(&inner.counters).increment(1);
        }
    };
    for attempt in 1..=MAX_ATTEMPTS {
        match transport.send(message.clone()).await {
            Ok(_) => return count(|c| &c.sent),
            Err(e) if e.is_permanent() => {
                tracing::warn!(error = %e, "mail refused by the SMTP server");
                return count(|c| &c.failed);
            }
            Err(e) if attempt < MAX_ATTEMPTS => {
                tracing::info!(error = %e, attempt, "mail not sent yet; trying again");
                count(|c| &c.retried);
                tokio::time::sleep(backoff(attempt)).await;
            }
            Err(e) => tracing::warn!(error = %e, "mail given up after every attempt"),
        }
    }
    count(|c| &c.failed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_minute() {
        let waits: Vec<u64> = (1..=9).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn a_digest_carries_one_click_unsubscribe() {
        let from: Mailbox = "Hearth <h@example.com>".parse().unwrap();
        let letter = Letter {
            to: "ann@example.com".into(),
            to_name: "Ann".into(),
            subject: "What you missed".into(),
            text: "hi".into(),
            html: "<p>hi</p>".into(),
            unsubscribe: Some("https://chat.example.com/unsubscribe/abc".into()),
        };
        let bytes = String::from_utf8(build(&from, letter.clone()).unwrap().formatted()).unwrap();
        assert!(bytes.contains("List-Unsubscribe: <https://chat.example.com/unsubscribe/abc>"));
        assert!(bytes.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click"));
        let bad = Letter {
            unsubscribe: Some("https://x/>\r\nBcc: e@x".into()),
            ..letter
        };
        assert!(build(&from, bad).is_err());
    }

    #[test]
    fn names_and_subjects_stay_on_one_line() {
        assert_eq!(header_text("Eve\r\nBcc: x@y\t!"), "Eve  Bcc: x@y !");
        let from: Mailbox = "Hearth <h@example.com>".parse().unwrap();
        let letter = Letter {
            to: "ann@example.com".into(),
            to_name: "Ann\r\nBcc: eve@example.com".into(),
            subject: "Hi\r\nBcc: eve@example.com".into(),
            text: "hi".into(),
            html: "<p>hi</p>".into(),
            unsubscribe: None,
        };
        let bytes = String::from_utf8(build(&from, letter).unwrap().formatted()).unwrap();
        let head = bytes.split("\r\n\r\n").next().unwrap();
        assert!(!head.lines().any(|l| l.starts_with("Bcc")), "{head}");
    }
}
