//! Web push end to end: subscriptions through `/users/me/push_subscriptions`, posts over real
//! HTTP, and a real RFC 8030 push service on loopback, run by the test, that checks each
//! request's VAPID token (RFC 8292) and decrypts its `aes128gcm` body (RFC 8291) with the
//! subscription's private key. Who gets a notification follows Campfire's
//! `Room::MessagePusher`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::common::{self, csrf_meta, form, Client, TestServer};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use base64::Engine as _;
use parking_lot::Mutex;
use web_push_native::jwt_simple::prelude::*;
use web_push_native::p256;

pub(crate) const PASSWORD: &str = "secret123456";
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// A browser's push keys: the P-256 secret (the browser keeps it) and the auth secret.
pub(crate) struct BrowserKeys {
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl BrowserKeys {
    pub(crate) fn new() -> Self {
        let mut auth = [0u8; 16];
        rand::fill(&mut auth);
        let mut scalar = [0u8; 32];
        loop {
            rand::fill(&mut scalar);
            if let Ok(secret) = p256::SecretKey::from_slice(&scalar) {
                return Self { secret, auth };
            }
        }
    }

    pub(crate) fn p256dh(&self) -> String {
        B64.encode(self.secret.public_key().to_sec1_bytes())
    }

    pub(crate) fn auth_key(&self) -> String {
        B64.encode(self.auth)
    }
}

/// One push the service received and decrypted.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) who: String,
    pub(crate) payload: serde_json::Value,
    /// The VAPID token's `sub` claim (empty when none).
    pub(crate) subject: String,
    /// The `Urgency` header (empty when none).
    pub(crate) urgency: String,
    /// When it arrived.
    pub(crate) at: std::time::Instant,
}

/// The push service: `POST /{mode}/{who}`, `mode` one of `ok`, `gone` (410), `hang` (never
/// answers) and `busy` (429 once).
#[derive(Default)]
pub(crate) struct Service {
    pub(crate) keys: Mutex<Vec<(String, BrowserKeys)>>,
    pub(crate) received: Mutex<Vec<Received>>,
    pub(crate) problems: Mutex<Vec<String>>,
    busy_once: Mutex<BTreeSet<String>>,
    pub(crate) vapid_public: Mutex<String>,
    origin: Mutex<String>,
    /// Requests to `hang` endpoints that are being held.
    pub(crate) hanging: std::sync::atomic::AtomicUsize,
}

async fn push_endpoint(
    State(service): State<Arc<Service>>,
    Path((mode, who)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap) {
    let mut answer = HeaderMap::new();
    match mode.as_str() {
        "gone" => return (StatusCode::GONE, answer),
        "hang" => {
            service
                .hanging
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return (StatusCode::CREATED, answer);
        }
        "busy" if service.busy_once.lock().insert(who.clone()) => {
            answer.insert("retry-after", "1".parse().unwrap());
            return (StatusCode::TOO_MANY_REQUESTS, answer);
        }
        _ => {}
    }
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let mut problems = Vec::new();
    let mut subject = String::new();
    if header("content-encoding") != "aes128gcm" {
        problems.push(format!(
            "{who}: Content-Encoding {:?}",
            header("content-encoding")
        ));
    }
    if header("ttl").parse::<u64>().is_err() {
        problems.push(format!("{who}: no TTL"));
    }
    // RFC 8292: `vapid t=<JWT>, k=<public key>`, the JWT signed by that key for this origin.
    let authorization = header("authorization");
    let (t, k) = authorization
        .strip_prefix("vapid t=")
        .and_then(|rest| rest.split_once(", k="))
        .unwrap_or(("", ""));
    if k != service.vapid_public.lock().as_str() {
        problems.push(format!("{who}: VAPID key {k:?}"));
    }
    match ES256PublicKey::from_bytes(&B64.decode(k).unwrap_or_default()) {
        Ok(key) => {
            let options = VerificationOptions {
                allowed_audiences: Some(HashSet::from_strings(&[service.origin.lock().clone()])),
                ..Default::default()
            };
            match key.verify_token::<NoCustomClaims>(t, Some(options)) {
                Ok(claims) => subject = claims.subject.unwrap_or_default(),
                Err(e) => problems.push(format!("{who}: VAPID token refused: {e}")),
            }
        }
        Err(e) => problems.push(format!("{who}: VAPID key does not decode: {e}")),
    }
    let keys = service.keys.lock();
    let Some((_, browser)) = keys.iter().find(|(name, _)| *name == who) else {
        problems.push(format!("{who}: unknown subscriber"));
        service.problems.lock().extend(problems);
        return (StatusCode::NOT_FOUND, answer);
    };
    let auth = web_push_native::Auth::clone_from_slice(&browser.auth);
    match web_push_native::decrypt(body.to_vec(), &browser.secret, &auth) {
        Ok(plain) => match serde_json::from_slice(&plain) {
            Ok(payload) => service.received.lock().push(Received {
                who,
                payload,
                subject,
                urgency: header("urgency"),
                at: std::time::Instant::now(),
            }),
            Err(e) => problems.push(format!("{who}: payload is not JSON: {e}")),
        },
        Err(e) => problems.push(format!("{who}: does not decrypt: {e:?}")),
    }
    service.problems.lock().extend(problems);
    (StatusCode::CREATED, answer)
}

pub(crate) async fn start_service() -> (SocketAddr, Arc<Service>) {
    let service = Arc::new(Service::default());
    let app = Router::new()
        .route("/{mode}/{who}", post(push_endpoint))
        .with_state(service.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    *service.origin.lock() = format!("http://{addr}");
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, service)
}

pub(crate) async fn signed_in(
    server: &TestServer,
    email: &str,
    password: &str,
) -> (Client, String) {
    let mut c = server.signed_in(email, password).await;
    let page = c.get("/users/me/push_subscriptions").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let csrf = csrf_meta(&page.body);
    (c, csrf)
}

pub(crate) async fn subscribe(
    c: &mut Client,
    csrf: &str,
    endpoint: &str,
    p256dh: &str,
    auth: &str,
) -> common::Response {
    let body = form(&[
        ("push_subscription[endpoint]", endpoint),
        ("push_subscription[p256dh_key]", p256dh),
        ("push_subscription[auth_key]", auth),
        ("authenticity_token", csrf),
    ]);
    c.post_form("/users/me/push_subscriptions", &body, &[])
        .await
}

pub(crate) async fn set_involvement(server: &TestServer, room: i64, user: i64, involvement: &str) {
    sqlx::query("UPDATE memberships SET involvement = ? WHERE room_id = ? AND user_id = ?")
        .bind(involvement)
        .bind(room)
        .bind(user)
        .execute(&server.state.db.pool)
        .await
        .unwrap();
}

pub(crate) async fn wait_for(service: &Service, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while service.received.lock().len() < n && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_and_a_dm_reach_exactly_the_members_campfire_pushes_to() {
    let (addr, service) = start_service().await;
    let server = TestServer::start_with(|c| c.push_allow_loopback = true).await;
    *service.vapid_public.lock() = server.state.outbox.pusher.public_key().to_owned();

    // (name, email, password, user id)
    let people = [
        ("david", "david@example.com", PASSWORD, 1),
        ("jason", "jason@example.com", PASSWORD, 2),
        ("jz", "jz@example.com", PASSWORD, 3),
        ("kevin", "kevin@example.com", PASSWORD, 4),
        ("user1", "user1@example.com", "password", 8),
        ("user2", "user2@example.com", "password", 9),
        ("user3", "user3@example.com", "password", 10),
    ];
    let mut jason = None;
    for (name, email, password, _) in people {
        let (mut c, csrf) = signed_in(&server, email, password).await;
        let keys = BrowserKeys::new();
        let endpoint = format!("http://{addr}/ok/{name}");
        let r = subscribe(&mut c, &csrf, &endpoint, &keys.p256dh(), &keys.auth_key()).await;
        assert_eq!(r.status, 201, "{name}: {}", r.body);
        service.keys.lock().push((name.to_owned(), keys));
        if name == "jason" {
            jason = Some(c);
        }
    }
    let mut jason = jason.unwrap();

    // Room 1 (open): involvements as Campfire's cases.
    set_involvement(&server, 1, 1, "mentions").await; // David: mentioned → pushed
    set_involvement(&server, 1, 2, "everything").await; // Jason: the author → never
    set_involvement(&server, 1, 3, "everything").await; // JZ: everything → pushed
    set_involvement(&server, 1, 4, "everything").await; // Kevin: connected → never
    set_involvement(&server, 1, 8, "mentions").await; // Ada Abara: not mentioned → never
    set_involvement(&server, 1, 9, "nothing").await; // Bilal Haddad: mentioned, nothing → never
    set_involvement(&server, 1, 10, "invisible").await; // Carmen Okafor: mentioned, invisible → never
    sqlx::query("UPDATE memberships SET connected_at = ?, connections = 1 WHERE room_id = 1 AND user_id = 4")
        .bind(hearth::db::now_ms())
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    // Room 6 (David and JZ, direct): David turned it to nothing.
    set_involvement(&server, 6, 1, "nothing").await;

    // Mentions as the editor sends them: Action Text HTML with signed mention attachments.
    let (csrf, _) = jason.room(1).await;
    let mention = |id: i64, name: &str| {
        let sgid = server.state.keys.sgids.sign(
            "User",
            id,
            hearth::rails::signed_global_id::ATTACHABLE_PURPOSE,
        );
        format!(
            "<action-text-attachment sgid=\"{sgid}\" content-type=\"application/vnd.campfire.mention\" \
             content=\"&lt;span class=&quot;mention&quot;&gt;@{name}&lt;/span&gt;\"></action-text-attachment>"
        )
    };
    let html = format!(
        "<div>Hey {}, {}, {} and {}: the build is green</div>",
        mention(1, "David"),
        mention(4, "Kevin"),
        mention(9, "Bilal Haddad"),
        mention(10, "Carmen Okafor")
    );
    let posted = form(&[
        ("message[body]", &html),
        ("message[body_format]", "html"),
        ("message[client_message_id]", "push-mention-1"),
        ("authenticity_token", &csrf),
    ]);
    let r = jason
        .post_form(
            "/rooms/1/messages",
            &posted,
            &[("Accept", "text/vnd.turbo-stream.html, text/html")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let text = "Hey @David, @Kevin, @Bilal Haddad and @Carmen Okafor: the build is green";
    // Jason's direct room with David (5): David's default involvement there is everything.
    let (csrf, _) = jason.room(5).await;
    let r = jason
        .post_message(5, "Lunch at noon?", "push-dm-1", &csrf)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // JZ's direct room with David (6), which David set to nothing.
    let (mut jz, _) = signed_in(&server, "jz@example.com", PASSWORD).await;
    let (csrf, _) = jz.room(6).await;
    let r = jz.post_message(6, "Ping", "push-dm-2", &csrf).await;
    assert_eq!(r.status, 200, "{}", r.body);

    wait_for(&service, 3).await;
    tokio::time::sleep(Duration::from_millis(1500)).await; // nothing else arrives
    let problems = service.problems.lock().clone();
    assert!(problems.is_empty(), "{problems:#?}");
    let mut got: Vec<(String, String, String, String)> = service
        .received
        .lock()
        .iter()
        .map(|r| {
            (
                r.who.clone(),
                r.payload["title"].as_str().unwrap_or("").to_owned(),
                r.payload["options"]["body"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                r.payload["options"]["data"]["path"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            )
        })
        .collect();
    got.sort();
    let m1 = hearth::db::messages::last_page(&server.state.db.pool, 1)
        .await
        .unwrap();
    let m1 = m1.last().unwrap().id;
    let m5 = hearth::db::messages::last_page(&server.state.db.pool, 5)
        .await
        .unwrap();
    let m5 = m5.last().unwrap().id;
    let shared_body = format!("Jason: {text}");
    let mut want = vec![
        (
            "david".to_owned(),
            "All Talk".to_owned(),
            shared_body.clone(),
            format!("/rooms/1/@{m1}"),
        ),
        (
            "david".to_owned(),
            "Jason".to_owned(),
            "Lunch at noon?".to_owned(),
            format!("/rooms/5/@{m5}"),
        ),
        (
            "jz".to_owned(),
            "All Talk".to_owned(),
            shared_body,
            format!("/rooms/1/@{m1}"),
        ),
    ];
    want.sort();
    assert_eq!(got, want);
    for r in service.received.lock().iter() {
        assert!(
            r.payload["options"]["data"]["badge"].as_i64().unwrap_or(-1) >= 1,
            "{r:?}"
        );
    }
    server.stop().await;
}

/// A server with no push subscription skips the recipients query of every post (it
/// remembers that none exists); the first subscription must end that, so the next post
/// pushes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_made_after_posts_found_none_is_pushed_to() {
    let (addr, service) = start_service().await;
    let server = TestServer::start_with(|c| c.push_allow_loopback = true).await;
    *service.vapid_public.lock() = server.state.outbox.pusher.public_key().to_owned();
    set_involvement(&server, 1, 1, "everything").await;
    let (mut jason, _) = signed_in(&server, "jason@example.com", PASSWORD).await;
    let (room_csrf, _) = jason.room(1).await;
    let r = jason
        .post_message(1, "Before", "push-late-1", &room_csrf)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // The first post's push job found no subscription (and the server remembered it).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server.state.outbox.pusher.subscriptions_present().known() != Some(false) {
        assert!(tokio::time::Instant::now() < deadline, "never looked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let (mut david, csrf) = signed_in(&server, "david@example.com", PASSWORD).await;
    let keys = BrowserKeys::new();
    let endpoint = format!("http://{addr}/ok/david");
    let r = subscribe(
        &mut david,
        &csrf,
        &endpoint,
        &keys.p256dh(),
        &keys.auth_key(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    service.keys.lock().push(("david".to_owned(), keys));
    drop(david);

    let r = jason
        .post_message(1, "After", "push-late-2", &room_csrf)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for(&service, 1).await;
    let problems = service.problems.lock().clone();
    assert!(problems.is_empty(), "{problems:#?}");
    let got: Vec<String> = service
        .received
        .lock()
        .iter()
        .map(|r| {
            let body = r.payload["options"]["body"].as_str().unwrap_or("");
            format!("{}: {body}", r.who)
        })
        .collect();
    assert_eq!(got, ["david: Jason: After"]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_refuse_bad_input_and_belong_to_their_user() {
    let server = TestServer::start().await;
    let keys = BrowserKeys::new();
    let (p256dh, auth) = (keys.p256dh(), keys.auth_key());
    let (mut david, csrf) = signed_in(&server, "david@example.com", PASSWORD).await;
    for (endpoint, p, a, why) in [
        (
            "http://push.example/x",
            p256dh.as_str(),
            auth.as_str(),
            "plain http",
        ),
        (
            "http://127.0.0.1:9/x",
            &p256dh,
            &auth,
            "loopback without --push-allow-loopback",
        ),
        ("ftp://push.example/x", &p256dh, &auth, "not http"),
        ("not a url", &p256dh, &auth, "not a URL"),
        (
            "https://push.example/x",
            "bm90IGEga2V5",
            &auth,
            "p256dh not a point",
        ),
        (
            "https://push.example/x",
            "%%%",
            &auth,
            "p256dh not base64url",
        ),
        (
            "https://push.example/x",
            &p256dh,
            "c2hvcnQ",
            "auth not 16 bytes",
        ),
        ("https://push.example/x", &p256dh, "", "auth missing"),
    ] {
        let r = subscribe(&mut david, &csrf, endpoint, p, a).await;
        assert_eq!(r.status, 422, "{why}: {}", r.body);
    }
    let long = format!("https://push.example/{}", "a".repeat(2100));
    assert_eq!(
        subscribe(&mut david, &csrf, &long, &p256dh, &auth)
            .await
            .status,
        422
    );
    assert!(
        hearth::db::push_subscriptions::for_user(&server.state.db.pool, 1)
            .await
            .unwrap()
            .is_empty()
    );

    let r = subscribe(
        &mut david,
        &csrf,
        "https://push.example/david",
        &p256dh,
        &auth,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let again = subscribe(
        &mut david,
        &csrf,
        "https://push.example/david",
        &p256dh,
        &auth,
    )
    .await;
    assert_eq!(again.status, 201);
    let list = hearth::db::push_subscriptions::for_user(&server.state.db.pool, 1)
        .await
        .unwrap();
    assert_eq!(list.len(), 1, "the same endpoint is one subscription");
    let id = list[0].id;

    // Jason can neither see, test nor delete David's.
    let (mut jason, jcsrf) = signed_in(&server, "jason@example.com", PASSWORD).await;
    let page = jason
        .request(
            "GET",
            "/users/me/push_subscriptions",
            &[("Accept", "application/json")],
            b"",
        )
        .await;
    assert_eq!(page.status, 200);
    let json: serde_json::Value = serde_json::from_str(&page.body).unwrap();
    assert_eq!(json["push_subscriptions"].as_array().unwrap().len(), 0);
    assert_eq!(
        json["vapid_public_key"].as_str().unwrap(),
        server.state.outbox.pusher.public_key()
    );
    let del = form(&[("_method", "delete"), ("authenticity_token", &jcsrf)]);
    let r = jason
        .post_form(&format!("/users/me/push_subscriptions/{id}"), &del, &[])
        .await;
    assert_eq!(r.status, 404);
    let test = form(&[("authenticity_token", &jcsrf)]);
    let r = jason
        .post_form(
            &format!("/users/me/push_subscriptions/{id}/test_notifications"),
            &test,
            &[],
        )
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(
        hearth::db::push_subscriptions::for_user(&server.state.db.pool, 1)
            .await
            .unwrap()
            .len(),
        1
    );

    // Signed out: 401; the owner deletes it.
    let mut anonymous = server.client();
    let r = anonymous
        .post_form(
            "/users/me/push_subscriptions",
            "push_subscription%5Bendpoint%5D=x",
            &[],
        )
        .await;
    assert!(r.status == 401 || r.status == 422, "{}", r.status);
    let del = form(&[("_method", "delete"), ("authenticity_token", &csrf)]);
    let r = david
        .post_form(&format!("/users/me/push_subscriptions/{id}"), &del, &[])
        .await;
    assert_eq!(r.status, 302);
    assert!(
        hearth::db::push_subscriptions::for_user(&server.state.db.pool, 1)
            .await
            .unwrap()
            .is_empty()
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_subscriptions_are_deleted_busy_ones_retried_and_a_hanging_service_never_delays_a_post(
) {
    let (addr, service) = start_service().await;
    let server = TestServer::start_with(|c| {
        c.push_allow_loopback = true;
        c.push_timeout_seconds = 1;
    })
    .await;
    *service.vapid_public.lock() = server.state.outbox.pusher.public_key().to_owned();
    let mut ids = Vec::new();
    for (name, email, mode) in [
        ("david", "david@example.com", "gone"),
        ("jz", "jz@example.com", "busy"),
        ("kevin", "kevin@example.com", "hang"),
    ] {
        let (mut c, csrf) = signed_in(&server, email, PASSWORD).await;
        let keys = BrowserKeys::new();
        let r = subscribe(
            &mut c,
            &csrf,
            &format!("http://{addr}/{mode}/{name}"),
            &keys.p256dh(),
            &keys.auth_key(),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
        ids.push(
            serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["id"]
                .as_i64()
                .unwrap(),
        );
        service.keys.lock().push((name.to_owned(), keys));
    }
    for user in [1, 3, 4] {
        set_involvement(&server, 1, user, "everything").await;
    }
    let (mut jason, _) = signed_in(&server, "jason@example.com", PASSWORD).await;
    let (csrf, _) = jason.room(1).await;
    for i in 0..3 {
        let started = std::time::Instant::now();
        let r = jason
            .post_message(1, &format!("Post {i}"), &format!("push-hang-{i}"), &csrf)
            .await;
        assert_eq!(r.status, 200);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "a post took {:?}",
            started.elapsed()
        );
    }
    // JZ's service answers 429 + Retry-After: 1 once, then takes all three.
    wait_for(&service, 3).await;
    let got: Vec<String> = service
        .received
        .lock()
        .iter()
        .map(|r| r.who.clone())
        .collect();
    assert_eq!(got, ["jz", "jz", "jz"], "{:?}", service.problems.lock());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = hearth::db::push_subscriptions::for_user(&server.state.db.pool, 1)
            .await
            .unwrap();
        if left.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the 410 subscription is still there"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let metrics = server.client().get("/metrics").await.body;
    let count = |result: &str| {
        metrics
            .lines()
            .find(|l| {
                l.starts_with(&format!(
                    "hearth_push_deliveries_total{{result=\"{result}\"}}"
                ))
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(-1.0)
    };
    assert!(count("sent") >= 3.0, "{metrics}");
    assert!(count("gone") >= 1.0, "{metrics}");
    assert!(count("retried") >= 1.0, "{metrics}");
    server.stop().await;
}

#[tokio::test]
async fn signing_out_deletes_the_browsers_subscription_and_only_the_users_own() {
    let server = TestServer::start().await;
    let keys = BrowserKeys::new();
    let (p256dh, auth) = (keys.p256dh(), keys.auth_key());
    let endpoint = "https://push.example/send/this-browser";
    let other = "https://push.example/send/another-browser";
    let (mut david, csrf) = signed_in(&server, "david@example.com", PASSWORD).await;
    for e in [endpoint, other] {
        let r = subscribe(&mut david, &csrf, e, &p256dh, &auth).await;
        assert!(r.status < 400, "{}", r.body);
    }
    // Jason's browser has a subscription at the same endpoint.
    let (mut jason, jason_csrf) = signed_in(&server, "jason@example.com", PASSWORD).await;
    let r = subscribe(&mut jason, &jason_csrf, endpoint, &p256dh, &auth).await;
    assert!(r.status < 400, "{}", r.body);
    let count = |user: i64| {
        let pool = server.state.db.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT COUNT(*) FROM push_subscriptions WHERE user_id = ?",
            )
            .bind(user)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    assert_eq!((count(1).await, count(2).await), (2, 1));
    // The room page's sign-out form carries the field the script fills in.
    let room = david.get("/rooms/1").await.body;
    assert!(
        room.contains("name=\"push_subscription_endpoint\""),
        "{room}"
    );
    let r = david
        .post_form(
            "/session",
            &form(&[
                ("_method", "delete"),
                ("push_subscription_endpoint", endpoint),
                ("authenticity_token", &csrf_meta(&room)),
            ]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/session/new"));
    let left: Vec<String> =
        sqlx::query_scalar("SELECT endpoint FROM push_subscriptions WHERE user_id = 1")
            .fetch_all(&server.state.db.pool)
            .await
            .unwrap();
    assert_eq!(left, vec![other.to_owned()]);
    assert_eq!(count(2).await, 1, "Jason's subscription stays");
}
