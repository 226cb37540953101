//! Web push, as Campfire sends it (`app/models/room/message_pusher.rb`,
//! `app/models/push/subscription.rb`, `lib/web_push/`): a new message is pushed to the room's
//! members who are not connected to it, by involvement (`everything`; `mentions` when
//! mentioned; direct rooms default to `everything`; `nothing` and `invisible` never).
//!
//! - [`VapidKeys`]: the server's P-256 key pair (RFC 8292), from `--vapid-private-key` /
//!   `VAPID_PRIVATE_KEY`, else generated once and kept in `<data-dir>/vapid_private_key`.
//! - [`validate`]: what a subscription must be to be stored (422 otherwise).
//! - [`Pusher`]: a bounded queue in front of one worker task, so a post never waits for a
//!   push service: [`Pusher::enqueue`] only enqueues. The worker finds the recipients
//!   ([`crate::db::push_subscriptions::recipients`]), encrypts each payload for its browser
//!   (RFC 8291 `aes128gcm`, with a VAPID JWT whose contact is [`contact`]'s, by
//!   `web-push-native`) and sends it with `Urgency: high` (RFC 8030 §5.3, as Campfire's
//!   `WebPush::Notification` does). 429 and 5xx answers are retried ([`MAX_ATTEMPTS`] in all)
//!   after their `Retry-After` (capped at [`MAX_RETRY_AFTER`]); 404 and 410 delete the
//!   subscription. Outcomes are counted in `hearth_push_deliveries_total`.
//! - Sending is fair ([`lanes`]): at most [`CONCURRENCY`] requests are in flight, at most
//!   [`PER_ORIGIN_CONCURRENCY`] of them to one push service and [`PER_USER_CONCURRENCY`] to
//!   one user's browsers, each bounded by `--push-timeout-seconds`; a delivery waiting for a
//!   retry holds no slot. So endpoints that never answer hold only their own user's and push
//!   service's slots, and another user's push goes out at once. At most [`MAX_WAITING`]
//!   deliveries wait in all, [`MAX_WAITING_PER_USER`] for one user and
//!   [`MAX_WAITING_PER_ORIGIN`] for one push service; more are dropped and counted.
//!   Subscriptions per user are capped too
//!   ([`push_subscriptions::MAX_PER_USER`]).

pub mod contact;
pub mod lanes;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use base64::Engine as _;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use sqlx::SqlitePool;
use tokio::sync::{mpsc, Semaphore};

use web_push_native::jwt_simple::algorithms::{
    ECDSAP256KeyPairLike as _, ECDSAP256PublicKeyLike as _, ES256KeyPair,
};
use web_push_native::p256;
use web_push_native::{Auth, WebPushBuilder};

use crate::config::Config;
use crate::db::any_rows::AnyRows;
use crate::db::push_subscriptions::{self, PushSubscription};
use crate::metrics::Metrics;
use lanes::{Lanes, Place};

/// The longest endpoint accepted, in bytes.
pub const MAX_ENDPOINT_BYTES: usize = 2048;
/// Messages waiting to be pushed; past this a message's pushes are dropped (and counted).
pub const QUEUE_CAPACITY: usize = 1024;
/// Push requests in flight at once, to all push services together.
pub const CONCURRENCY: usize = 64;
/// Push requests in flight at once to one push service (one origin of endpoints: scheme,
/// host and port).
pub const PER_ORIGIN_CONCURRENCY: usize = 16;
/// Push requests in flight at once to one user's browsers.
pub const PER_USER_CONCURRENCY: usize = 4;
/// Deliveries (one message to one subscription) waiting, in flight or between tries, in all;
/// past this a delivery is dropped (and counted).
pub const MAX_WAITING: usize = 16_384;
/// Deliveries waiting for one push service at most; more to it are dropped.
pub const MAX_WAITING_PER_ORIGIN: usize = 4_096;
/// Deliveries waiting for one user's browsers at most; more to them are dropped.
pub const MAX_WAITING_PER_USER: usize = 256;
/// Tries of one push request in all (the first and the retries).
pub const MAX_ATTEMPTS: u32 = 3;
/// The longest `Retry-After` waited for; a longer one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// The longest text of a notification's body, in characters (Campfire truncates too).
pub const MAX_BODY_CHARS: usize = 200;
/// How long a push service keeps an undelivered push, in seconds (the `TTL` header).
pub const TTL_SECONDS: u64 = 4 * 60 * 60;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Decodes base64url with or without padding (browsers send it unpadded, Ruby's
/// `urlsafe_encode64` pads).
pub fn decode_b64url(text: &str) -> Option<Vec<u8>> {
    B64.decode(text.trim().trim_end_matches('=')).ok()
}

/// The server's VAPID key pair (RFC 8292).
pub struct VapidKeys {
    pair: ES256KeyPair,
    public: String,
}

impl std::fmt::Debug for VapidKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VapidKeys")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl VapidKeys {
    /// From the 32-byte private scalar.
    ///
    /// # Errors
    /// Not a valid P-256 private key.
    pub fn from_private(bytes: &[u8]) -> anyhow::Result<Self> {
        let pair = ES256KeyPair::from_bytes(bytes)
            .map_err(|e| anyhow::anyhow!("not a P-256 private key: {e}"))?;
        let public = B64.encode(pair.public_key().public_key().to_bytes_uncompressed());
        Ok(Self { pair, public })
    }

    /// The keys of the configuration: `--vapid-private-key` (base64url), else
    /// `<data-dir>/vapid_private_key`, created with a new key on first use (mode 0600). A
    /// given `--vapid-public-key` must match the private key.
    ///
    /// # Errors
    /// A key that does not decode, a public key of another pair, or the file can't be
    /// written.
    pub fn load(config: &Config) -> anyhow::Result<Self> {
        let keys = match config.vapid_private_key.as_ref().filter(|k| !k.is_empty()) {
            Some(private) => Self::from_private(
                &decode_b64url(private).context("VAPID_PRIVATE_KEY is not base64url")?,
            )?,
            None => Self::from_file(&config.data_dir.join("vapid_private_key"))?,
        };
        if let Some(public) = config.vapid_public_key.as_deref().filter(|k| !k.is_empty()) {
            if decode_b64url(public) != decode_b64url(&keys.public) {
                anyhow::bail!("VAPID_PUBLIC_KEY does not belong to VAPID_PRIVATE_KEY");
            }
        }
        Ok(keys)
    }

    fn from_file(path: &Path) -> anyhow::Result<Self> {
        if let Ok(text) = std::fs::read_to_string(path) {
            let bytes = decode_b64url(&text)
                .with_context(|| format!("{} is not base64url", path.display()))?;
            return Self::from_private(&bytes);
        }
        let pair = ES256KeyPair::generate();
        let text = B64.encode(pair.to_bytes());
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        write_private(path, &text).with_context(|| format!("writing {}", path.display()))?;
        Self::from_private(&decode_b64url(&text).expect("just encoded"))
    }

    /// The `Authorization` header of a push to `endpoint` (RFC 8292 §3): `vapid t=<JWT>,
    /// k=<public key>`, the JWT signed with ES256 for the endpoint's origin (`aud`: scheme,
    /// host and a port other than the scheme's default), valid for 12 hours, `sub` the
    /// contact.
    ///
    /// # Errors
    /// The endpoint has no scheme or host; signing failed.
    pub fn authorization(&self, endpoint: &http::Uri, subject: &str) -> anyhow::Result<String> {
        use web_push_native::jwt_simple::prelude::{Claims, Duration as JwtDuration};
        let origin = origin_of(endpoint).context("endpoint without a scheme or a host")?;
        let claims = Claims::create(JwtDuration::from_hours(12))
            .with_audience(origin)
            .with_subject(subject);
        let token = self
            .pair
            .sign(claims)
            .map_err(|e| anyhow::anyhow!("VAPID token not signed: {e}"))?;
        Ok(format!("vapid t={token}, k={}", self.public))
    }

    /// The public key as the browser's `applicationServerKey` wants it: base64url of the
    /// uncompressed point.
    pub fn public_key(&self) -> &str {
        &self.public
    }
}

/// An endpoint's origin (RFC 6454): `scheme://host`, with `:port` when the port is not the
/// scheme's default. `None` without a scheme or a host.
pub fn origin_of(endpoint: &http::Uri) -> Option<String> {
    let scheme = endpoint.scheme_str()?;
    let host = endpoint.host()?;
    Some(match endpoint.port_u16() {
        Some(port) if !matches!((scheme, port), ("https", 443) | ("http", 80)) => {
            format!("{scheme}://{host}:{port}")
        }
        _ => format!("{scheme}://{host}"),
    })
}

/// Writes `text` to a new file at `path` that only its owner may read (mode 0600 on Unix).
///
/// # Errors
/// The file exists already, or cannot be created or written.
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text.as_bytes())
}

/// Why a subscription is refused (422).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Invalid {
    /// The endpoint is not an `https` URL (or, with `--push-allow-loopback`, an `http` URL
    /// on a loopback address).
    #[error("push_subscription[endpoint] must be an https URL")]
    NotHttps,
    /// The endpoint's host is `localhost` or an address of this machine or its private
    /// networks (loopback, private, link-local such as a cloud's metadata service, unspecified):
    /// a push service is a public host, and the server must not be made to call inward.
    #[error("push_subscription[endpoint] must name a public host")]
    NotPublic,
    /// The endpoint is longer than [`MAX_ENDPOINT_BYTES`].
    #[error("push_subscription[endpoint] is longer than 2048 bytes")]
    TooLong,
    /// `p256dh_key` is not a base64url P-256 public key.
    #[error("push_subscription[p256dh_key] is not a base64url P-256 public key")]
    BadP256dh,
    /// `auth_key` is not 16 base64url bytes.
    #[error("push_subscription[auth_key] must be 16 base64url bytes")]
    BadAuth,
}

/// Checks a subscription's fields: the endpoint an `https` URL with a host of at most
/// [`MAX_ENDPOINT_BYTES`] (plain `http` to a loopback address only when `allow_loopback`),
/// `p256dh` a P-256 point, `auth` 16 bytes.
///
/// # Errors
/// The first field that is wrong.
pub fn validate(
    endpoint: &str,
    p256dh: &str,
    auth: &str,
    allow_loopback: bool,
) -> Result<(), Invalid> {
    if endpoint.len() > MAX_ENDPOINT_BYTES {
        return Err(Invalid::TooLong);
    }
    let uri: http::Uri = endpoint.parse().map_err(|_| Invalid::NotHttps)?;
    let host = uri.host().unwrap_or("");
    if host.is_empty() {
        return Err(Invalid::NotHttps);
    }
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if allow_loopback && is_loopback(host) => {}
        _ => return Err(Invalid::NotHttps),
    }
    if !(allow_loopback && is_loopback(host)) && is_inward(host) {
        return Err(Invalid::NotPublic);
    }
    let key = decode_b64url(p256dh).ok_or(Invalid::BadP256dh)?;
    p256::PublicKey::from_sec1_bytes(&key).map_err(|_| Invalid::BadP256dh)?;
    if decode_b64url(auth).is_none_or(|a| a.len() != 16) {
        return Err(Invalid::BadAuth);
    }
    Ok(())
}

/// Whether `host` names this machine or a private network by itself: `localhost` (and its
/// subdomains) or an IP literal that is not globally routable. (A name that resolves to such
/// an address is not caught here.)
fn is_inward(host: &str) -> bool {
    use std::net::IpAddr;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let lower = bare.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return true;
    }
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            let [a, b, ..] = ip.octets();
            ip.is_loopback()
                || ip.is_private()
                || ip.is_link_local()
                || ip.is_unspecified()
                || ip.is_broadcast()
                || (a == 100 && (64..128).contains(&b))
        }
        Ok(IpAddr::V6(ip)) => {
            let first = ip.segments()[0];
            ip.is_loopback()
                || ip.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_inward(&v4.to_string()))
        }
        Err(_) => false,
    }
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A notification as the service worker shows it: `{title, options: {body, icon, tag, data:
/// {path, badge}}}` (`assets/pwa/service-worker.js`); the icon is [`ICON`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    /// The title: the room's name; in a direct room, the author's name.
    pub title: String,
    /// The body: `author: text` (in a direct room, the text alone).
    pub body: String,
    /// Where a click leads (`/rooms/{id}/@{message_id}`).
    pub path: String,
}

/// The icon of every notification: the account's logo as its small (192 px) square, or the
/// stock icon before one is uploaded (`GET /account/logo`, answered `no-cache` with an ETag
/// when no version is asked for, so a new logo shows in the next notification).
pub const ICON: &str = "/account/logo?size=small";

impl Notification {
    /// The payload for a recipient with `badge` unread rooms.
    pub fn payload(&self, badge: i64) -> Vec<u8> {
        serde_json::json!({
            "title": self.title,
            "options": {
                "body": self.body,
                "tag": self.path,
                "icon": ICON,
                "data": { "path": self.path, "badge": badge },
            },
        })
        .to_string()
        .into_bytes()
    }

    /// Campfire's payload of a new message (`build_direct_payload`, `build_shared_payload`).
    pub fn for_message(
        room_name: &str,
        direct: bool,
        author: &str,
        text: &str,
        path: String,
    ) -> Self {
        let mut text: String = text.chars().take(MAX_BODY_CHARS).collect();
        if text.is_empty() {
            text = "(an attachment)".into();
        }
        if direct {
            Self {
                title: author.to_owned(),
                body: text,
                path,
            }
        } else {
            Self {
                title: room_name.to_owned(),
                body: format!("{author}: {text}"),
                path,
            }
        }
    }
}

/// What became of a web push request, as the `result` label of
/// `hearth_push_deliveries_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushOutcome {
    /// The push service accepted it (2xx).
    Sent = 0,
    /// 429, 5xx or no answer in time: it is tried again.
    Retried = 1,
    /// 404 or 410: the subscription has expired and was deleted.
    Gone = 2,
    /// Given up: out of retries, or another error status.
    Failed = 3,
    /// Never sent: the push queue was full, or too many of its user's or push service's
    /// deliveries were waiting ([`MAX_WAITING_PER_USER`], [`MAX_WAITING_PER_ORIGIN`],
    /// [`MAX_WAITING`]).
    Dropped = 4,
}

impl PushOutcome {
    /// Every outcome, in label order.
    pub const ALL: [Self; 5] = [
        Self::Sent,
        Self::Retried,
        Self::Gone,
        Self::Failed,
        Self::Dropped,
    ];

    /// The `result` label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Retried => "retried",
            Self::Gone => "gone",
            Self::Failed => "failed",
            Self::Dropped => "dropped",
        }
    }
}

/// The counters of `hearth_push_deliveries_total`, one per [`PushOutcome`].
#[derive(Debug)]
struct Outcomes([metrics::Counter; 5]);

impl Outcomes {
    fn new(metrics: &Metrics) -> Self {
        Self(PushOutcome::ALL.map(|outcome| {
            metrics.labelled_counter(
                "hearth_push_deliveries_total",
                ("result", outcome.label()),
                "Web push requests by outcome (sent, retried, gone, failed, dropped).",
            )
        }))
    }

    fn count(&self, outcome: PushOutcome) {
        self.0[outcome as usize].increment(1);
    }
}

/// One message's pushes, as queued by the post path.
#[derive(Debug)]
pub struct Job {
    /// The room.
    pub room_id: i64,
    /// Who posted (never pushed to).
    pub creator_id: i64,
    /// Who the message mentions (`rich_text::Body::mentionee_ids`).
    pub mentionee_ids: Vec<i64>,
    /// What each recipient is shown.
    pub notification: Notification,
    /// Only this subscription (a test notification), instead of the room's recipients.
    pub only: Option<PushSubscription>,
}

type HttpsClient = Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<bytes::Bytes>,
>;

/// The push queue and its worker (see the module's documentation).
#[derive(Debug, Clone)]
pub struct Pusher {
    queue: mpsc::Sender<Job>,
    public_key: Arc<str>,
    outcomes: Arc<Outcomes>,
    present: Arc<AnyRows>,
}

impl Pusher {
    /// Starts the worker on the current runtime.
    ///
    /// # Errors
    /// A `--vapid-subject` that is no public contact ([`contact::check`]).
    pub fn start(
        pool: SqlitePool,
        keys: VapidKeys,
        config: &Config,
        metrics: &Metrics,
    ) -> anyhow::Result<Self> {
        let subject = match config.vapid_subject.as_deref().map(str::trim) {
            Some(given) if !given.is_empty() => {
                contact::check(given)?;
                Some(given.to_owned())
            }
            _ => None,
        };
        let outcomes = Arc::new(Outcomes::new(metrics));
        let (queue, jobs) = mpsc::channel(QUEUE_CAPACITY);
        let public_key: Arc<str> = keys.public.clone().into();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .build();
        let client: HttpsClient = Client::builder(TokioExecutor::new()).build(https);
        let present = Arc::new(AnyRows::new());
        let worker = Worker {
            pool,
            present: present.clone(),
            keys: Arc::new(keys),
            subject,
            timeout: Duration::from_secs(config.push_timeout_seconds.max(1)),
            client,
            outcomes: outcomes.clone(),
            slots: Arc::new(Semaphore::new(CONCURRENCY)),
            waiting: Arc::new(Semaphore::new(MAX_WAITING)),
            users: Lanes::new(PER_USER_CONCURRENCY, MAX_WAITING_PER_USER),
            origins: Lanes::new(PER_ORIGIN_CONCURRENCY, MAX_WAITING_PER_ORIGIN),
            warned: parking_lot::Mutex::new(None),
        };
        tokio::spawn(worker.run(jobs));
        Ok(Self {
            queue,
            public_key,
            outcomes,
            present,
        })
    }

    /// Whether any push subscription exists, as this server remembers it: pass it to
    /// [`push_subscriptions::upsert`], which tells it.
    pub fn subscriptions_present(&self) -> &AnyRows {
        &self.present
    }

    /// The VAPID public key (the page's `applicationServerKey`).
    pub fn public_key(&self) -> &str {
        &self.public_key
    }

    /// Queues a job without waiting; a full queue drops it (counted as `dropped`). A
    /// message's job is not even queued while no push subscription exists.
    pub fn enqueue(&self, job: Job) {
        if job.only.is_none() && self.present.known() == Some(false) {
            return;
        }
        if self.queue.try_send(job).is_err() {
            self.outcomes.count(PushOutcome::Dropped);
            tracing::warn!("push queue full: a message's notifications were dropped");
        }
    }
}

struct Worker {
    pool: SqlitePool,
    present: Arc<AnyRows>,
    keys: Arc<VapidKeys>,
    /// `--vapid-subject`, checked; `None`: the administrator's address ([`contact`]).
    subject: Option<String>,
    timeout: Duration,
    client: HttpsClient,
    outcomes: Arc<Outcomes>,
    /// Requests in flight, all push services together ([`CONCURRENCY`]).
    slots: Arc<Semaphore>,
    /// Deliveries waiting, in flight or between tries ([`MAX_WAITING`]).
    waiting: Arc<Semaphore>,
    users: Arc<Lanes<i64>>,
    origins: Arc<Lanes<String>>,
    /// When the log last said that no contact could be found.
    warned: parking_lot::Mutex<Option<std::time::Instant>>,
}

/// A delivery's places in the sender's queues, held until it ends.
struct Ticket {
    user: Place<i64>,
    origin: Place<String>,
    _waiting: tokio::sync::OwnedSemaphorePermit,
}

impl Worker {
    async fn run(self, mut jobs: mpsc::Receiver<Job>) {
        let worker = Arc::new(self);
        while let Some(job) = jobs.recv().await {
            let recipients = match job.only.clone() {
                Some(one) => Ok(vec![one]),
                None => {
                    push_subscriptions::recipients(
                        &worker.pool,
                        &worker.present,
                        job.room_id,
                        job.creator_id,
                        &job.mentionee_ids,
                    )
                    .await
                }
            };
            let recipients = match recipients {
                Ok(r) => r,
                Err(error) => {
                    tracing::warn!(%error, "push recipients query failed");
                    continue;
                }
            };
            if recipients.is_empty() {
                continue;
            }
            let Some(subject) = worker.subject().await else {
                for _ in &recipients {
                    worker.outcomes.count(PushOutcome::Failed);
                }
                continue;
            };
            let subject: Arc<str> = subject.into();
            for subscription in recipients {
                let Some(ticket) = worker.admit(&subscription) else {
                    worker.outcomes.count(PushOutcome::Dropped);
                    tracing::warn!(
                        user_id = subscription.user_id,
                        "too many pushes waiting for this user or push service: one was dropped"
                    );
                    continue;
                };
                let badge = push_subscriptions::unread_rooms(&worker.pool, subscription.user_id)
                    .await
                    .unwrap_or(0);
                let payload = job.notification.payload(badge);
                let worker = worker.clone();
                let subject = subject.clone();
                tokio::spawn(async move {
                    worker
                        .deliver(&subscription, &subject, payload, ticket)
                        .await;
                });
            }
        }
    }

    /// The VAPID contact ([`contact`]): `--vapid-subject`, else the first active
    /// administrator's public address. `None` (and, at most once a minute, a warning naming
    /// the flag) when there is none.
    async fn subject(&self) -> Option<String> {
        if let Some(given) = &self.subject {
            return Some(given.clone());
        }
        let addresses = match crate::db::users::administrator_addresses(&self.pool).await {
            Ok(addresses) => addresses,
            Err(error) => {
                tracing::warn!(%error, "push contact lookup failed");
                return None;
            }
        };
        if let Some(found) = addresses.iter().find_map(|a| contact::of_address(a)) {
            return Some(found);
        }
        let mut warned = self.warned.lock();
        let now = std::time::Instant::now();
        if warned.is_none_or(|at| now.duration_since(at) >= Duration::from_secs(60)) {
            *warned = Some(now);
            tracing::warn!(
                administrators = ?addresses,
                "web push not sent: no administrator has an e-mail address at a public domain \
                 to give push services as the VAPID contact; set {}",
                contact::FLAG
            );
        }
        None
    }

    /// The delivery's places in its user's and its push service's lanes and in the whole
    /// queue; `None` when one of them is full.
    fn admit(&self, subscription: &PushSubscription) -> Option<Ticket> {
        let waiting = self.waiting.clone().try_acquire_owned().ok()?;
        let origin = subscription
            .endpoint
            .parse::<http::Uri>()
            .ok()
            .and_then(|uri| origin_of(&uri))
            .unwrap_or_default();
        Some(Ticket {
            user: self.users.join(subscription.user_id)?,
            origin: self.origins.join(origin)?,
            _waiting: waiting,
        })
    }

    async fn deliver(
        &self,
        subscription: &PushSubscription,
        subject: &str,
        payload: Vec<u8>,
        ticket: Ticket,
    ) {
        for attempt in 1..=MAX_ATTEMPTS {
            // A slot of the user's lane, then of the push service's, then of the whole: only
            // for the request, never across the wait before a retry.
            let sent = {
                let _user = ticket.user.slot().await;
                let _origin = ticket.origin.slot().await;
                let Ok(_slot) = self.slots.clone().acquire_owned().await else {
                    return;
                };
                self.send_once(subscription, subject, &payload).await
            };
            let retry_after = match sent {
                Ok(status) if (200..300).contains(&status) => {
                    self.outcomes.count(PushOutcome::Sent);
                    return;
                }
                Ok(404 | 410) => {
                    self.outcomes.count(PushOutcome::Gone);
                    if let Err(error) =
                        push_subscriptions::delete(&self.pool, subscription.id).await
                    {
                        tracing::warn!(%error, "deleting an expired push subscription failed");
                    }
                    return;
                }
                Ok(status) if status == 429 || status >= 500 => None,
                Ok(status) => {
                    tracing::info!(status, subscription = subscription.id, "push refused");
                    self.outcomes.count(PushOutcome::Failed);
                    return;
                }
                Err(Retry(after)) => after,
            };
            if attempt == MAX_ATTEMPTS {
                break;
            }
            self.outcomes.count(PushOutcome::Retried);
            let wait = retry_after
                .unwrap_or(Duration::from_secs(1 << attempt))
                .min(MAX_RETRY_AFTER);
            tokio::time::sleep(wait).await;
        }
        self.outcomes.count(PushOutcome::Failed);
    }

    /// One request: its status, or `Retry` with the `Retry-After` of a 429/5xx.
    async fn send_once(
        &self,
        subscription: &PushSubscription,
        subject: &str,
        payload: &[u8],
    ) -> Result<u16, Retry> {
        let request = match self.build(subscription, subject, payload) {
            Ok(r) => r,
            Err(error) => {
                tracing::warn!(%error, subscription = subscription.id, "push not encrypted");
                return Ok(400);
            }
        };
        let (parts, body) = request.into_parts();
        let request = http::Request::from_parts(parts, Full::new(bytes::Bytes::from(body)));
        let answer = tokio::time::timeout(self.timeout, async {
            let response = self.client.request(request).await?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            // read (and bound) the answer's body so the connection can be reused
            let _ =
                tokio::time::timeout(Duration::from_secs(1), response.into_body().collect()).await;
            Ok::<_, hyper_util::client::legacy::Error>((status, retry_after))
        })
        .await;
        match answer {
            Ok(Ok((status, retry_after))) if status == 429 || status >= 500 => {
                Err(Retry(retry_after))
            }
            Ok(Ok((status, _))) => Ok(status),
            Ok(Err(error)) => {
                tracing::info!(%error, subscription = subscription.id, "push request failed");
                Err(Retry(None))
            }
            Err(_) => {
                tracing::info!(
                    subscription = subscription.id,
                    "push service did not answer in time"
                );
                Err(Retry(None))
            }
        }
    }

    fn build(
        &self,
        s: &PushSubscription,
        subject: &str,
        payload: &[u8],
    ) -> anyhow::Result<http::Request<Vec<u8>>> {
        let endpoint: http::Uri = s.endpoint.parse()?;
        let key =
            p256::PublicKey::from_sec1_bytes(&decode_b64url(&s.p256dh_key).context("p256dh")?)?;
        let auth = decode_b64url(&s.auth_key).context("auth")?;
        anyhow::ensure!(auth.len() == 16, "auth is not 16 bytes");
        let mut request = WebPushBuilder::new(endpoint.clone(), key, Auth::clone_from_slice(&auth))
            .with_valid_duration(Duration::from_secs(TTL_SECONDS))
            .build(payload.to_vec())?;
        let authorization = self.keys.authorization(&endpoint, subject)?;
        let headers = request.headers_mut();
        headers.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_str(&authorization)?,
        );
        headers.insert(URGENCY, http::HeaderValue::from_static("high"));
        Ok(request)
    }
}

/// RFC 8030 §5.3's header: how soon the push service should deliver (`high`: at once, even
/// to a device saving power, as a chat message wants and Campfire asks).
const URGENCY: http::HeaderName = http::HeaderName::from_static("urgency");

struct Retry(Option<Duration>);

/// `Retry-After` as seconds or an HTTP date (RFC 9110 §10.2.3).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    if let Ok(seconds) = value.trim().parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(value.trim()).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: notifications showed the stock icon after the account's logo was changed.
    #[test]
    fn the_payload_shows_the_accounts_logo() {
        let n = Notification::for_message("All Talk", false, "David", "hi", "/rooms/1/@2".into());
        let payload: serde_json::Value =
            serde_json::from_slice(&n.payload(3)).expect("json payload");
        assert_eq!(payload["options"]["icon"], "/account/logo?size=small");
        assert_eq!(payload["options"]["data"]["badge"], 3);
        assert_eq!(payload["title"], "All Talk");
    }

    fn keys() -> (String, String) {
        let secret = p256::SecretKey::random(&mut rand_core_rng());
        let public = B64.encode(secret.public_key().to_sec1_bytes());
        (public, B64.encode([7u8; 16]))
    }

    fn rand_core_rng() -> p256::elliptic_curve::rand_core::OsRng {
        p256::elliptic_curve::rand_core::OsRng
    }

    #[test]
    fn subscriptions_are_checked() {
        let (p256dh, auth) = keys();
        assert_eq!(
            validate("https://push.example/abc", &p256dh, &auth, false),
            Ok(())
        );
        assert_eq!(
            validate("http://push.example/abc", &p256dh, &auth, false),
            Err(Invalid::NotHttps)
        );
        assert_eq!(
            validate("http://127.0.0.1:9/abc", &p256dh, &auth, false),
            Err(Invalid::NotHttps)
        );
        assert_eq!(
            validate("http://127.0.0.1:9/abc", &p256dh, &auth, true),
            Ok(())
        );
        assert_eq!(
            validate("http://push.example/abc", &p256dh, &auth, true),
            Err(Invalid::NotHttps)
        );
        assert_eq!(
            validate("javascript:alert(1)", &p256dh, &auth, true),
            Err(Invalid::NotHttps)
        );
        for inward in [
            "https://127.0.0.1:3977/x",
            "https://169.254.169.254/latest/meta-data",
            "https://10.0.0.5/push",
            "https://192.168.1.1/push",
            "https://localhost/push",
            "https://[::1]/push",
            "https://[fd00::1]/push",
            "https://[::ffff:10.1.2.3]/push",
            "https://0.0.0.0/push",
        ] {
            assert_eq!(
                validate(inward, &p256dh, &auth, false),
                Err(Invalid::NotPublic),
                "{inward}"
            );
        }
        assert_eq!(
            validate("https://8.8.8.8/push", &p256dh, &auth, false),
            Ok(())
        );
        let long = format!("https://push.example/{}", "a".repeat(2048));
        assert_eq!(
            validate(&long, &p256dh, &auth, false),
            Err(Invalid::TooLong)
        );
        assert_eq!(
            validate("https://push.example/abc", "AAAA", &auth, false),
            Err(Invalid::BadP256dh)
        );
        assert_eq!(
            validate("https://push.example/abc", "%%%", &auth, false),
            Err(Invalid::BadP256dh)
        );
        assert_eq!(
            validate("https://push.example/abc", &p256dh, "AAAA", false),
            Err(Invalid::BadAuth)
        );
    }

    #[test]
    fn retry_after_reads_seconds() {
        assert_eq!(parse_retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("soon"), None);
    }
}
