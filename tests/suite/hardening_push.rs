//! Sign-in timing, web push and bot webhooks under hostile or unlucky conditions, over real
//! HTTP with a real push service and real webhook receivers on loopback: one bcrypt cost for
//! every account and for unknown addresses; dead push endpoints of one user or one push
//! service never delay another user's push; subscriptions per user are capped; the VAPID
//! contact is public and pushes are urgent; a bot's text is cut at the mention's own bytes; a
//! webhook answer is read in its charset; deactivation and bans remove push subscriptions.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::forms::{csrf, scalar_i64, scalar_text, send};
use crate::common::{self, form, Client, TestServer};
use crate::push::{self as kit, BrowserKeys, Service};

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const T: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Sign-in timing.

/// The time of one failed sign-in (a wrong password) as `email`.
async fn failed_sign_in(c: &mut Client, token: &str, email: &str) -> Duration {
    let body = form(&[
        ("email_address", email),
        ("password", "not-the-password"),
        ("authenticity_token", token),
    ]);
    let started = Instant::now();
    let r = c.post_form("/session", &body, &[]).await;
    assert_eq!(r.status, 401, "{email}: {}", r.body);
    started.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Regression: unknown addresses were checked against a stand-in digest of bcrypt cost 10 and
/// new passwords hashed at 12, so a wrong password took four times as long for an account made
/// by the first run, a join link or a password change as for an address without an account.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_takes_as_long_for_accounts_made_every_way_as_an_unknown_address() {
    let server = TestServer::start_with(|c| c.no_seed = true).await;
    // The first run's administrator.
    let mut ada = server.client();
    let token = csrf(&mut ada, "/first_run").await;
    let r = send(
        &mut ada,
        "POST",
        "/first_run",
        &[
            ("user[name]", "Ada"),
            ("user[email_address]", "ada@example.com"),
            ("user[password]", "analytical-engine"),
        ],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    // Two people by the join link; the second changes the password.
    let code = scalar_text(&server, "SELECT join_code FROM accounts").await;
    let join = format!("/join/{code}");
    let mut omar = None;
    for (name, email) in [("Nina", "nina@example.com"), ("Omar", "omar@example.com")] {
        let mut c = server.client();
        let token = csrf(&mut c, &join).await;
        let r = send(
            &mut c,
            "POST",
            &join,
            &[
                ("user[name]", name),
                ("user[email_address]", email),
                ("user[password]", "first-password-1"),
            ],
            &token,
        )
        .await;
        assert_eq!(r.status, 302, "{name}: {}", r.body);
        omar = Some(c);
    }
    let mut omar = omar.expect("joined");
    let token = csrf(&mut omar, "/users/me/profile").await;
    let r = send(
        &mut omar,
        "PATCH",
        "/users/me/profile",
        &[
            ("user[name]", "Omar"),
            ("user[password]", "second-password-2"),
            ("user[password_challenge]", "first-password-1"),
        ],
        &token,
    )
    .await;
    assert!(r.status < 400, "password change: {} {}", r.status, r.body);

    let mut c = server.client();
    let token = common::csrf_meta(&c.get("/session/new").await.body);
    let kinds = [
        ("unknown address", "nobody@example.com"),
        ("first run", "ada@example.com"),
        ("join link", "nina@example.com"),
        ("password change", "omar@example.com"),
    ];
    // Warm every path once, then take medians of alternating tries.
    for (_, email) in kinds {
        failed_sign_in(&mut c, &token, email).await;
    }
    let mut samples = vec![Vec::new(); kinds.len()];
    for _ in 0..7 {
        for (i, (_, email)) in kinds.iter().enumerate() {
            samples[i].push(failed_sign_in(&mut c, &token, email).await);
        }
    }
    let medians: Vec<Duration> = samples.into_iter().map(median).collect();
    eprintln!(
        "failed sign-in medians: {:?}",
        kinds.iter().zip(&medians).collect::<Vec<_>>()
    );
    let unknown = medians[0].as_secs_f64();
    for ((kind, _), known) in kinds.iter().zip(&medians).skip(1) {
        let ratio = known.as_secs_f64() / unknown;
        assert!(
            (1.0 / 1.6..=1.6).contains(&ratio),
            "a wrong password for an account made by {kind} took {known:?}, for an unknown \
             address {:?}: the time tells which addresses have accounts",
            medians[0]
        );
    }
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Web push: fair sending, the subscription cap, the VAPID contact, `Urgency`.

/// A push server on loopback that gives up on a push service after 5 s.
async fn push_server() -> TestServer {
    TestServer::start_with(|c| {
        c.push_allow_loopback = true;
        c.push_timeout_seconds = 5;
    })
    .await
}

/// Subscribes the signed-in `c` at `endpoint` and, when `name` is given, lets `service`
/// decrypt what it gets; returns the subscription's id.
async fn subscribed(
    c: &mut Client,
    csrf: &str,
    endpoint: &str,
    service: &Service,
    name: Option<&str>,
) -> i64 {
    let keys = BrowserKeys::new();
    let r = kit::subscribe(c, csrf, endpoint, &keys.p256dh(), &keys.auth_key()).await;
    assert_eq!(r.status, 201, "{endpoint}: {}", r.body);
    if let Some(name) = name {
        service.keys.lock().push((name.to_owned(), keys));
    }
    serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["id"]
        .as_i64()
        .unwrap()
}

/// Waits until `service` holds at least `n` requests to its `hang` endpoints.
async fn hanging(service: &Service, n: usize) {
    let deadline = Instant::now() + T;
    while service.hanging.load(Ordering::SeqCst) < n {
        assert!(
            Instant::now() < deadline,
            "the dead endpoints were never called"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Jason opens a direct room with `user_id` and posts in it; the time of the post's answer.
async fn jason_messages(server: &TestServer, user_id: i64) -> Instant {
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let token = csrf(&mut jason, "/rooms/opens/new").await;
    let r = send(
        &mut jason,
        "POST",
        "/rooms/directs",
        &[("user_ids[]", &user_id.to_string())],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let room: i64 = r.header("location").unwrap()["/rooms/".len()..]
        .parse()
        .unwrap();
    let (token, _) = jason.room(room).await;
    let r = jason
        .post_message(room, "Are you there?", "hardening-push-dm", &token)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    Instant::now()
}

/// How long after `posted` the push to `who` arrived; `None` when it did not within 10 s.
async fn arrival(service: &Service, who: &str, posted: Instant) -> Option<Duration> {
    let deadline = posted + T;
    loop {
        let at = service
            .received
            .lock()
            .iter()
            .find(|r| r.who == who)
            .map(|r| r.at);
        if let Some(at) = at {
            return Some(at.saturating_duration_since(posted));
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Jason posts in All Talk (room 1), which pushes to its members who subscribed.
async fn jason_posts_in_all_talk(server: &TestServer) {
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let (token, _) = jason.room(1).await;
    let r = jason
        .post_message(1, "Everyone: standup in five", "hardening-push-all", &token)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Regression: sixteen subscriptions of one member to an endpoint that never answers held all
/// sixteen send slots through three tries, so another user's direct message was pushed 15 s
/// late (36 s at the default timeout); and a user could subscribe without bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_users_dead_push_endpoints_never_delay_another_users_push_and_subscriptions_are_capped()
{
    let (addr, service) = kit::start_service().await;
    let server = push_server().await;
    *service.vapid_public.lock() = server.state.outbox.pusher.public_key().to_owned();
    // David subscribes 20 browsers (the cap) at endpoints that never answer.
    let (mut david, david_csrf) = kit::signed_in(&server, DAVID, SECRET).await;
    for i in 0..20 {
        let endpoint = format!("http://{addr}/hang/david-{i}");
        subscribed(&mut david, &david_csrf, &endpoint, &service, None).await;
    }
    // The 21st is refused with a clear error; refreshing one of the 20 still works.
    let keys = BrowserKeys::new();
    let (p256dh, auth) = (keys.p256dh(), keys.auth_key());
    let extra = format!("http://{addr}/hang/david-20");
    let r = kit::subscribe(&mut david, &david_csrf, &extra, &p256dh, &auth).await;
    assert_eq!(r.status, 422, "the 21st subscription: {}", r.body);
    assert!(
        r.body.contains("at most 20 push subscriptions"),
        "{}",
        r.body
    );
    let again = format!("http://{addr}/hang/david-0");
    let r = kit::subscribe(&mut david, &david_csrf, &again, &p256dh, &auth).await;
    assert_eq!(
        r.status, 201,
        "refreshing a subscription at the cap: {}",
        r.body
    );
    assert_eq!(
        scalar_i64(
            &server,
            "SELECT COUNT(*) FROM push_subscriptions WHERE user_id = 1"
        )
        .await,
        20
    );
    // Carmen Okafor (id 10) has one browser on the same push service, which answers.
    let (mut user3, csrf3) = kit::signed_in(&server, "user3@example.com", "password").await;
    let endpoint = format!("http://{addr}/ok/user3");
    subscribed(&mut user3, &csrf3, &endpoint, &service, Some("user3")).await;
    kit::set_involvement(&server, 1, 1, "everything").await;
    kit::set_involvement(&server, 1, 10, "nothing").await;

    jason_posts_in_all_talk(&server).await;
    hanging(&service, 4).await;
    let posted = jason_messages(&server, 10).await;
    let took = arrival(&service, "user3", posted).await;
    assert!(
        took.is_some_and(|t| t < Duration::from_secs(2)),
        "user 3's direct message was pushed after {took:?} (None: not within 10 s) while David's \
         20 dead endpoints were being tried; problems: {:?}",
        service.problems.lock()
    );
    server.stop().await;
}

/// Regression: a push service that never answers, with enough of its users' pushes, held every
/// send slot, so a push to another service waited for its timeouts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_push_service_never_delays_a_push_to_another_service() {
    let (dead, dead_service) = kit::start_service().await;
    let (alive, service) = kit::start_service().await;
    let server = push_server().await;
    *service.vapid_public.lock() = server.state.outbox.pusher.public_key().to_owned();
    // Seventeen generated users (ids 8…24), four browsers each, all at the dead service: more
    // than the whole sender's slots.
    for n in 1..=17 {
        let (mut c, token) =
            kit::signed_in(&server, &format!("user{n}@example.com"), "password").await;
        for i in 0..4 {
            let endpoint = format!("http://{dead}/hang/user{n}-{i}");
            subscribed(&mut c, &token, &endpoint, &dead_service, None).await;
        }
    }
    sqlx::query("UPDATE memberships SET involvement = 'everything' WHERE room_id = 1")
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    // Kevin (id 4), at the live service, is pushed his direct messages only.
    let (mut kevin, token) = kit::signed_in(&server, "kevin@example.com", SECRET).await;
    let endpoint = format!("http://{alive}/ok/kevin");
    subscribed(&mut kevin, &token, &endpoint, &service, Some("kevin")).await;
    kit::set_involvement(&server, 1, 4, "nothing").await;

    jason_posts_in_all_talk(&server).await;
    hanging(&dead_service, 16).await;
    let posted = jason_messages(&server, 4).await;
    let took = arrival(&service, "kevin", posted).await;
    assert!(
        took.is_some_and(|t| t < Duration::from_secs(2)),
        "Kevin's direct message was pushed after {took:?} (None: not within 10 s) while another \
         push service held {} requests unanswered; problems: {:?}",
        dead_service.hanging.load(Ordering::SeqCst),
        service.problems.lock()
    );
    server.stop().await;
}

/// Sends the test notification of subscription `id`.
async fn test_notification(c: &mut Client, csrf: &str, id: i64) {
    let r = c
        .post_form(
            &format!("/users/me/push_subscriptions/{id}/test_notifications"),
            &form(&[("authenticity_token", csrf)]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302, "{}", r.body);
}

/// Regression: every push's VAPID contact was `mailto:hearth@localhost`, which Apple's push
/// service refuses (403 BadJwtToken), and pushes had no `Urgency`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_name_the_first_administrators_public_address_and_are_urgent() {
    let (addr, service) = kit::start_service().await;
    let server = push_server().await;
    *service.vapid_public.lock() = server.state.outbox.pusher.public_key().to_owned();
    let (mut kevin, token) = kit::signed_in(&server, "kevin@example.com", SECRET).await;
    let endpoint = format!("http://{addr}/ok/kevin");
    let id = subscribed(&mut kevin, &token, &endpoint, &service, Some("kevin")).await;
    test_notification(&mut kevin, &token, id).await;
    kit::wait_for(&service, 1).await;
    let got = service.received.lock().clone();
    assert_eq!(got.len(), 1, "{:?}", service.problems.lock());
    assert_eq!(got[0].subject, "mailto:david@example.com");
    assert_eq!(got[0].urgency, "high");

    // No administrator with a public address: nothing is sent under a made-up contact.
    sqlx::query(
        "UPDATE users SET email_address = replace(email_address, '@example.com', '@localhost') \
         WHERE role = 'administrator'",
    )
    .execute(&server.state.db.pool)
    .await
    .unwrap();
    test_notification(&mut kevin, &token, id).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got = service.received.lock().clone();
    assert_eq!(got.len(), 1, "pushed without a public contact: {got:?}");
    server.stop().await;
}

/// A `--vapid-subject` that Apple's push service would refuse stops the start, naming the flag;
/// a public one is what every push carries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_vapid_subject_stops_the_start_and_a_public_one_is_used() {
    let dir = common::temp_dir("vapid-subject");
    let mut config = hearth::config::Config::for_tests(&dir);
    config.vapid_subject = Some("mailto:hearth@localhost".into());
    let refused = hearth::app::Server::bind(config).await;
    let Err(error) = refused else {
        panic!("a server with --vapid-subject mailto:hearth@localhost started");
    };
    let error = format!("{error:#}");
    assert!(error.contains("--vapid-subject"), "{error}");
    assert!(error.contains("mailto:hearth@localhost"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);

    let (addr, service) = kit::start_service().await;
    let server = TestServer::start_with(|c| {
        c.push_allow_loopback = true;
        c.vapid_subject = Some("https://chat.example.org/contact".into());
    })
    .await;
    *service.vapid_public.lock() = server.state.outbox.pusher.public_key().to_owned();
    let (mut kevin, token) = kit::signed_in(&server, "kevin@example.com", SECRET).await;
    let endpoint = format!("http://{addr}/ok/kevin");
    let id = subscribed(&mut kevin, &token, &endpoint, &service, Some("kevin")).await;
    test_notification(&mut kevin, &token, id).await;
    kit::wait_for(&service, 1).await;
    let got = service.received.lock().clone();
    assert_eq!(got.len(), 1, "{:?}", service.problems.lock());
    assert_eq!(got[0].subject, "https://chat.example.org/contact");
    server.stop().await;
}

/// Regression: a deactivated (or banned) user kept their push subscriptions, so once active
/// again their old browsers were pushed to (Campfire's `User#deactivate` deletes them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deactivating_or_banning_a_user_removes_their_push_subscriptions() {
    let server = TestServer::start().await;
    let keys = BrowserKeys::new();
    for (email, user_id) in [("kevin@example.com", 4), ("jz@example.com", 3)] {
        let (mut c, token) = kit::signed_in(&server, email, SECRET).await;
        let endpoint = format!("https://push.example/send/{user_id}");
        let r = kit::subscribe(&mut c, &token, &endpoint, &keys.p256dh(), &keys.auth_key()).await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let count = |user_id: i64| {
        let server = &server;
        async move {
            scalar_i64(
                server,
                &format!("SELECT COUNT(*) FROM push_subscriptions WHERE user_id = {user_id}"),
            )
            .await
        }
    };
    assert_eq!((count(4).await, count(3).await), (1, 1));
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/users").await;
    // Kevin deactivated, then active again.
    let r = send(&mut david, "DELETE", "/account/users/4", &[], &token).await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(
        count(4).await,
        0,
        "a deactivated user's subscriptions stayed"
    );
    let active = [("user[status]", "active")];
    let r = send(&mut david, "PATCH", "/users/4", &active, &token).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(count(4).await, 0);
    // JZ banned, then active again.
    let r = send(&mut david, "POST", "/users/3/ban", &[], &token).await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(count(3).await, 0, "a banned user's subscriptions stayed");
    let r = send(&mut david, "PATCH", "/users/3", &active, &token).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(count(3).await, 0);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Bot webhooks.

/// Creates bot `name` with webhook `url` as David; returns its id.
async fn bot(server: &TestServer, david: &mut Client, name: &str, url: &str) -> i64 {
    let token = csrf(david, "/account/bots").await;
    let r = send(
        david,
        "POST",
        "/account/bots",
        &[("user[name]", name), ("user[webhook_url]", url)],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    scalar_i64(
        server,
        &format!("SELECT id FROM users WHERE name = '{name}' AND role = 'bot'"),
    )
    .await
}

/// Regression: the mention was found in the lower-cased text and cut at that position in the
/// original, so after a character whose lower case is longer (`İ` → `i̇`) the wrong bytes went:
/// `İstanbul @Bot hava durumu?` reached the bot as `İstanbul @hava durumu?`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bots_mention_is_cut_from_the_text_at_its_own_place_after_any_unicode() {
    let server = TestServer::start().await;
    let (url, mut hits) =
        common::webhooks::receiver((200, "text/plain", Vec::new()), Duration::ZERO, None).await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let bot_id = bot(&server, &mut david, "Bot", &url).await;
    let mention = {
        let sgid = server
            .state
            .keys
            .sgids
            .sign("User", bot_id, hearth::rails::ATTACHABLE_PURPOSE);
        format!(
            "<action-text-attachment sgid=\"{sgid}\" \
             content-type=\"application/vnd.campfire.mention\"></action-text-attachment>"
        )
    };
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let (token, _) = jason.room(1).await;
    for (i, (before, after, want)) in [
        ("İstanbul", "hava durumu?", "İstanbul  hava durumu?"),
        ("ẞtraße İİİ", "und ǅ", "ẞtraße İİİ  und ǅ"),
    ]
    .into_iter()
    .enumerate()
    {
        let html = format!("<div>{before} {mention} {after}</div>");
        let r = jason
            .post_form(
                "/rooms/1/messages",
                &form(&[
                    ("message[body]", &html),
                    ("message[body_format]", "html"),
                    (
                        "message[client_message_id]",
                        &format!("unicode-mention-{i}"),
                    ),
                    ("authenticity_token", &token),
                ]),
                &[],
            )
            .await;
        assert!(r.status < 400, "{}", r.body);
        let (_, body) = tokio::time::timeout(T, hits.recv())
            .await
            .expect("the webhook within 10 s")
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["message"]["body"]["plain"], want, "{v}");
    }
    server.stop().await;
}

/// Regression: a text answer in a charset other than UTF-8 was dropped; it is decoded by the
/// `charset` of its `Content-Type`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_answer_in_another_charset_is_posted_decoded() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    for (name, content_type, bytes, want) in [
        (
            "Latin",
            "text/plain; charset=ISO-8859-1",
            b"Caf\xe9 cr\xe8me br\xfbl\xe9e".to_vec(),
            "Café crème brûlée",
        ),
        (
            "Nihon",
            "text/html; charset=\"Shift_JIS\"",
            b"<b>\x93\xfa\x96\x7b</b>".to_vec(),
            "日本",
        ),
    ] {
        let (url, mut hits) =
            common::webhooks::receiver((200, content_type, bytes), Duration::ZERO, None).await;
        let bot_id = bot(&server, &mut david, name, &url).await;
        let token = csrf(&mut david, "/rooms/opens/new").await;
        let r = send(
            &mut david,
            "POST",
            "/rooms/directs",
            &[("user_ids[]", &bot_id.to_string())],
            &token,
        )
        .await;
        assert_eq!(r.status, 302, "{}", r.body);
        let room: i64 = r.header("location").unwrap()["/rooms/".len()..]
            .parse()
            .unwrap();
        let (token, _) = david.room(room).await;
        let r = david
            .post_message(room, "hello", &format!("charset-{name}"), &token)
            .await;
        assert!(r.status < 400, "{}", r.body);
        tokio::time::timeout(T, hits.recv())
            .await
            .expect("the webhook within 10 s");
        let deadline = Instant::now() + T;
        loop {
            let bodies: Vec<String> =
                sqlx::query_scalar("SELECT body FROM messages WHERE creator_id = ?")
                    .bind(bot_id)
                    .fetch_all(&server.state.db.pool)
                    .await
                    .unwrap();
            if bodies.iter().any(|b| b.contains(want)) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{name}'s {content_type} answer was not posted as {want:?}: {bodies:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    server.stop().await;
}
