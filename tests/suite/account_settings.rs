//! Passwords, transfer links, account settings, custom styles, room-creation rights, QR codes,
//! bot webhooks and the bot API's list, over real HTTP (and `/cable` where they broadcast).

use crate::common;

use std::time::{Duration, Instant};

use common::forms::{broadcast_containing, csrf, expect_statuses, scalar_i64, send, watch_room};
use common::{attr_after, csrf_meta, form, Client, TestServer};

const DAVID: &str = "david@example.com";
const JASON: &str = "jason@example.com";
const SECRET: &str = "secret123456";
const T: Duration = Duration::from_secs(10);

async fn signed_in(server: &TestServer, email: &str, password: &str) -> Client {
    server.signed_in(email, password).await
}

/// Whether `c` is signed in (the profile form answers 200 rather than sending to sign-in).
async fn is_signed_in(c: &mut Client) -> bool {
    c.get("/users/me/profile").await.status == 200
}

// ---------------------------------------------------------------------------------------------
// Profile: e-mail and password.

#[tokio::test]
async fn a_password_change_needs_the_current_one_and_ends_the_other_sessions() {
    let server = TestServer::start().await;
    let mut here = signed_in(&server, JASON, SECRET).await;
    let mut elsewhere = signed_in(&server, JASON, SECRET).await;
    let token = csrf(&mut here, "/users/me/profile").await;
    let base = [("user[name]", "Jason"), ("user[bio]", "")];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut v = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    // Wrong or missing current password, short or over-long new one: 422, nothing changes.
    let long = "p".repeat(73);
    let long: &'static str = Box::leak(long.into_boxed_str());
    for pairs in [
        with(&[
            ("user[password]", "brand-new-pw"),
            ("user[password_challenge]", "wrong-one"),
        ]),
        with(&[("user[password]", "brand-new-pw")]),
        with(&[
            ("user[password]", "short7!"),
            ("user[password_challenge]", SECRET),
        ]),
        with(&[
            ("user[password]", long),
            ("user[password_challenge]", SECRET),
        ]),
        with(&[
            ("user[email_address]", "david@example.com"),
            ("user[password_challenge]", SECRET),
        ]),
        with(&[
            ("user[email_address]", "new@example.com"),
            ("user[password_challenge]", "nope"),
        ]),
    ] {
        let r = send(&mut here, "PATCH", "/users/me/profile", &pairs, &token).await;
        assert_eq!(r.status, 422, "{pairs:?}: {}", r.body);
    }
    assert!(is_signed_in(&mut elsewhere).await);
    assert_eq!(server.client().login(JASON, SECRET).await.status, 302);
    assert_eq!(
        scalar_i64(
            &server,
            "SELECT COUNT(*) FROM users WHERE email_address = 'jason@example.com'"
        )
        .await,
        1
    );

    // The right current password: the new password and address are stored.
    let r = send(
        &mut here,
        "PATCH",
        "/users/me/profile",
        &with(&[
            ("user[email_address]", "Jason.F@example.com"),
            ("user[password]", "brand-new-pw"),
            ("user[password_challenge]", SECRET),
        ]),
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header("location"), Some("/users/me/profile"));
    // This session goes on; the other one is over; the old password and address fail.
    assert!(is_signed_in(&mut here).await);
    assert!(!is_signed_in(&mut elsewhere).await);
    assert_eq!(server.client().login(JASON, SECRET).await.status, 401);
    assert_eq!(
        server
            .client()
            .login("jason.f@example.com", SECRET)
            .await
            .status,
        401
    );
    assert_eq!(
        server
            .client()
            .login("jason.f@example.com", "brand-new-pw")
            .await
            .status,
        302
    );
}

#[tokio::test]
async fn profiles_list_rooms_with_bells_ping_and_show_admins_the_email_and_transfer_link() {
    let server = TestServer::start().await;
    let mut jason = signed_in(&server, JASON, SECRET).await;
    let own = jason.get("/users/me/profile").await;
    assert!(own.body.contains("id=\"memberships\""), "{}", own.body);
    assert!(own.body.contains("href=\"/rooms/1/involvement\""));
    assert!(own.body.contains("/session/transfers/"));
    // Someone else's profile: Ping, but neither the address nor a transfer link for members.
    let kevin = jason.get("/users/4").await;
    assert!(kevin.body.contains("action=\"/rooms/directs\""));
    assert!(kevin.body.contains("name=\"user_ids[]\" value=\"4\""));
    assert!(!kevin.body.contains("kevin@example.com"));
    assert!(!kevin.body.contains("/session/transfers/"));
    // Ping opens the direct room.
    let token = csrf_meta(&kevin.body);
    let r = send(
        &mut jason,
        "POST",
        "/rooms/directs",
        &[("user_ids[]", "4")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert!(r.header("location").unwrap().starts_with("/rooms/"));
    // Administrators see both.
    let mut david = signed_in(&server, DAVID, SECRET).await;
    let kevin = david.get("/users/4").await;
    assert!(kevin.body.contains("kevin@example.com"));
    assert!(kevin.body.contains("/session/transfers/"));
}

// ---------------------------------------------------------------------------------------------
// Transfer links and QR codes.

fn transfer_path(html: &str) -> String {
    let at = html.find("/session/transfers/").expect("a transfer link");
    let rest = &html[at..];
    let end = rest.find(['"', '<']).unwrap();
    rest[..end].to_owned()
}

#[tokio::test]
async fn a_transfer_link_signs_in_a_second_client_until_it_expires() {
    let server = TestServer::start().await;
    let mut david = signed_in(&server, DAVID, SECRET).await;
    let page = david.get("/users/me/profile").await;
    let path = transfer_path(&page.body);
    // The QR code of the full link.
    let qr = attr_after(&page.body, "class=\"share-link__qr\" src=\"").unwrap();
    let r = david.get(&qr).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("image/svg+xml"));
    assert!(r.body.contains("<svg"), "{}", r.body);

    // Another device: GET shows a button and signs no one in; its PUT does.
    let mut phone = server.client();
    let shown = phone.get(&path).await;
    assert_eq!(shown.status, 200);
    assert!(phone.cookie("session_token").is_none());
    assert!(!is_signed_in(&mut phone).await);
    let token = csrf_meta(&shown.body);
    let r = send(&mut phone, "PUT", &path, &[], &token).await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header("location"), Some("/"));
    assert!(is_signed_in(&mut phone).await);
    let me = phone.get("/users/me/profile").await;
    assert!(me.body.contains("value=\"david@example.com\""));

    // Expired, forged, purpose-swapped, or a deactivated user's: 400, no session.
    let verifier = &server.state.keys.signed_ids;
    let past = std::time::SystemTime::now() - Duration::from_secs(1);
    let expired = verifier.generate("user", "transfer", 1, past);
    let other_purpose = verifier.generate(
        "user",
        "reset",
        1,
        std::time::SystemTime::now() + Duration::from_secs(3600),
    );
    let deactivated = verifier.generate(
        "user",
        "transfer",
        6,
        std::time::SystemTime::now() + Duration::from_secs(3600),
    );
    let mut forged = path.rsplit('/').next().unwrap().to_owned();
    forged.replace_range(0..1, if forged.starts_with('e') { "f" } else { "e" });
    for id in [
        expired,
        other_purpose,
        deactivated,
        forged,
        "x".repeat(2000),
    ] {
        let mut stranger = server.client();
        let page = stranger.get("/session/new").await;
        let r = send(
            &mut stranger,
            "PUT",
            &format!("/session/transfers/{id}"),
            &[],
            &csrf_meta(&page.body),
        )
        .await;
        assert_eq!(r.status, 400, "{id}: {}", r.body);
        assert!(stranger.cookie("session_token").is_none());
        assert!(!is_signed_in(&mut stranger).await);
    }
    // A QR id that is not base64 of a URL: 404.
    assert_eq!(server.client().get("/qr_code/%%%").await.status, 404);
}

/// PUTs the transfer link `path` from a fresh client: its status, and whether it is signed in.
async fn open_transfer(server: &TestServer, path: &str) -> (u16, bool) {
    let mut device = server.client();
    let shown = device.get(path).await;
    assert_eq!(shown.status, 200, "{path}");
    let r = send(&mut device, "PUT", path, &[], &csrf_meta(&shown.body)).await;
    (r.status, is_signed_in(&mut device).await)
}

#[tokio::test]
async fn a_transfer_link_that_signed_a_device_in_signs_no_one_in_after_it_expires() {
    let server = TestServer::start().await;
    // David's link, as the profile makes it but expiring 2 s from now instead of 4 h.
    let expires = std::time::SystemTime::now() + Duration::from_secs(2);
    let id = server
        .state
        .keys
        .signed_ids
        .generate("user", "transfer", 1, expires);
    let path = format!("/session/transfers/{id}");
    assert_eq!(open_transfer(&server, &path).await, (302, true));
    // The same link again, still in time: another device signs in too.
    assert_eq!(open_transfer(&server, &path).await, (302, true));
    while std::time::SystemTime::now() <= expires + Duration::from_millis(50) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(open_transfer(&server, &path).await, (400, false));
}

// ---------------------------------------------------------------------------------------------
// Account settings.

#[tokio::test]
async fn the_account_name_shows_on_every_page_and_only_administrators_change_it() {
    let server = TestServer::start().await;
    let mut jason = signed_in(&server, JASON, SECRET).await;
    let page = jason.get("/account/edit").await;
    assert_eq!(page.status, 200);
    // Everyone sees the full join link with its QR code.
    let join = format!("{}/join/{}", server.origin(), hearth::db::seed::JOIN_CODE);
    assert!(page.body.contains(&join), "{}", page.body);
    assert!(page.body.contains("data-copy=\""));
    assert!(!page.body.contains("action=\"/account\""));
    let token = csrf_meta(&page.body);
    let r = send(
        &mut jason,
        "PATCH",
        "/account",
        &[("account[name]", "Jason's")],
        &token,
    )
    .await;
    assert_eq!(r.status, 403);

    let mut david = signed_in(&server, DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/edit").await;
    for bad in ["", &"x".repeat(101)] {
        let r = send(
            &mut david,
            "PATCH",
            "/account",
            &[("account[name]", bad)],
            &token,
        )
        .await;
        assert_eq!(r.status, 422);
    }
    let r = send(
        &mut david,
        "PATCH",
        "/account",
        &[("account[name]", "Acme <Chat>")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/account/edit"));
    let escaped = "Acme &#60;Chat&#62;";
    for path in [
        "/rooms/1",
        "/users/me/profile",
        "/account/edit",
        "/users/2",
        "/searches",
    ] {
        let page = david.get(path).await;
        assert_eq!(page.status, 200, "{path}");
        let title = page
            .body
            .split("<title>")
            .nth(1)
            .unwrap()
            .split("</title>")
            .next()
            .unwrap();
        assert!(title.contains(escaped), "{path}: {title}");
    }
    let sign_in = server.client().get("/session/new").await;
    assert!(sign_in.body.contains(escaped), "{}", sign_in.body);
    assert!(!sign_in.body.contains("Acme <Chat>"));
    // The help contact (the first administrator's address) and the version.
    assert!(
        sign_in.body.contains("mailto:david@example.com"),
        "{}",
        sign_in.body
    );
    assert!(sign_in
        .body
        .contains(&format!("Hearth {}", env!("CARGO_PKG_VERSION"))));
}

#[tokio::test]
async fn custom_styles_reach_every_page_as_a_stylesheet_and_cannot_inject_markup() {
    let server = TestServer::start().await;
    let mut jason = signed_in(&server, JASON, SECRET).await;
    assert_eq!(jason.get("/account/custom_styles/edit").await.status, 403);
    let mut david = signed_in(&server, DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/custom_styles/edit").await;
    let jason_token = csrf(&mut jason, "/account/edit").await;
    let r = send(
        &mut jason,
        "PATCH",
        "/account/custom_styles",
        &[("account[custom_styles]", "body{}")],
        &jason_token,
    )
    .await;
    assert_eq!(r.status, 403);
    let css = ".message__body { color: rgb(1, 2, 3); }</style><script>alert(1)</script><style>";
    let r = send(
        &mut david,
        "PATCH",
        "/account/custom_styles",
        &[("account[custom_styles]", css)],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    let page = jason.get("/rooms/1").await;
    let style = page
        .body
        .split("<style id=\"account_custom_styles\">")
        .nth(1)
        .expect("the account's style element")
        .split("</style>")
        .next()
        .unwrap();
    assert!(
        style.contains(".message__body { color: rgb(1, 2, 3); }"),
        "{style}"
    );
    assert!(!style.contains('<'), "{style}");
    assert!(!page.body.contains("<script>alert(1)"));
    // Too big: 413 and the old styles stay.
    let huge = "a{}".repeat(30_000);
    let r = send(
        &mut david,
        "PATCH",
        "/account/custom_styles",
        &[("account[custom_styles]", &huge)],
        &token,
    )
    .await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(jason.get("/rooms/1").await.body.contains("rgb(1, 2, 3)"));
}

#[tokio::test]
async fn a_member_is_refused_room_creation_while_it_is_restricted_to_administrators() {
    let server = TestServer::start().await;
    let mut jason = signed_in(&server, JASON, SECRET).await;
    let token = csrf(&mut jason, "/rooms/opens/new").await;
    let r = send(
        &mut jason,
        "POST",
        "/rooms/opens",
        &[("room[name]", "Before")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);

    let mut david = signed_in(&server, DAVID, SECRET).await;
    let admin_token = csrf(&mut david, "/account/edit").await;
    let key = "account[settings][restrict_room_creation_to_administrators]";
    let r = send(
        &mut david,
        "PATCH",
        "/account",
        &[("account[name]", "Hearth"), (key, "0"), (key, "maybe")],
        &admin_token,
    )
    .await;
    assert_eq!(r.status, 422);
    let r = send(
        &mut david,
        "PATCH",
        "/account",
        &[("account[name]", "Hearth"), (key, "0"), (key, "1")],
        &admin_token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert!(david.get("/account/edit").await.body.contains(" checked"));

    let rooms_before = scalar_i64(&server, "SELECT COUNT(*) FROM rooms").await;
    assert_eq!(jason.get("/rooms/opens/new").await.status, 403);
    assert_eq!(jason.get("/rooms/closeds/new").await.status, 403);
    for path in ["/rooms/opens", "/rooms/closeds"] {
        let r = send(&mut jason, "POST", path, &[("room[name]", "After")], &token).await;
        assert_eq!(r.status, 403, "{path}");
    }
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM rooms").await,
        rooms_before
    );
    // Direct rooms are not restricted; administrators still create rooms.
    let r = send(
        &mut jason,
        "POST",
        "/rooms/directs",
        &[("user_ids[]", "4")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    let r = send(
        &mut david,
        "POST",
        "/rooms/opens",
        &[("room[name]", "Admins'")],
        &admin_token,
    )
    .await;
    assert_eq!(r.status, 302);
    // Lifted again.
    let r = send(
        &mut david,
        "PATCH",
        "/account",
        &[("account[name]", "Hearth"), (key, "0")],
        &admin_token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(jason.get("/rooms/opens/new").await.status, 200);
}

// ---------------------------------------------------------------------------------------------
// Bots that answer.

/// A plain-HTTP webhook receiver on loopback answering `answer` after `delay`.
async fn receiver(
    (status, content_type, body): (u16, &'static str, &'static str),
    delay: Duration,
) -> (String, common::webhooks::Requests) {
    common::webhooks::receiver((status, content_type, body.into()), delay, None).await
}

async fn create_bot(server: &TestServer, david: &mut Client, name: &str, url: &str) -> i64 {
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

#[tokio::test]
async fn a_mentioned_bot_gets_campfires_payload_and_its_answer_appears_live() {
    let server = TestServer::start().await;
    let (url, mut hits) = receiver(
        (200, "text/plain; charset=utf-8", "pong from the bot"),
        Duration::ZERO,
    )
    .await;
    let mut david = signed_in(&server, DAVID, SECRET).await;
    // Webhook URLs must be http(s).
    let token = csrf(&mut david, "/account/bots").await;
    for bad in ["ftp://x/", "javascript:alert(1)", "not a url"] {
        let r = send(
            &mut david,
            "POST",
            "/account/bots",
            &[("user[name]", "Bad"), ("user[webhook_url]", bad)],
            &token,
        )
        .await;
        assert_eq!(r.status, 422, "{bad}");
    }
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM users WHERE name = 'Bad'").await,
        0
    );
    let bot_id = create_bot(&server, &mut david, "Helper", &url).await;
    // A new bot joins every open room, and its page shows curl lines per room.
    let open_rooms = scalar_i64(&server, "SELECT COUNT(*) FROM rooms WHERE kind = 'open'").await;
    assert_eq!(
        scalar_i64(
            &server,
            &format!("SELECT COUNT(*) FROM memberships WHERE user_id = {bot_id}")
        )
        .await,
        open_rooms
    );
    let bots_page = david.get("/account/bots").await;
    let token_of_bot: String = sqlx::query_scalar("SELECT bot_token FROM users WHERE id = ?")
        .bind(bot_id)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    let line = format!(
        "curl -d &#39;Hello!&#39; {}/rooms/1/{bot_id}-{token_of_bot}/messages",
        server.origin()
    );
    assert!(bots_page.body.contains(&line), "{}", bots_page.body);
    assert!(bots_page.body.contains(&format!(
        "curl -F attachment=@file.png {}/rooms/1/{bot_id}-{token_of_bot}/messages",
        server.origin()
    )));

    let mut jason = signed_in(&server, JASON, SECRET).await;
    let mut ws = watch_room(&server, &mut jason, 1).await;
    let (token, _) = jason.room(1).await;
    // A message without the mention reaches no webhook.
    let r = jason
        .post_message(1, "nobody called", "cid-no-mention", &token)
        .await;
    assert!(r.status < 400);
    // A plain "@Helper" is no mention; a mention attachment of the bot is.
    let r = jason
        .post_message(1, "@Helper typed by hand", "cid-typed", &token)
        .await;
    assert!(r.status < 400);
    let sgid = server
        .state
        .keys
        .sgids
        .sign("User", bot_id, hearth::rails::ATTACHABLE_PURPOSE);
    let html = format!(
        "<div><action-text-attachment sgid=\"{sgid}\" content-type=\"application/vnd.campfire.mention\"></action-text-attachment> what's the time?</div>"
    );
    let started = Instant::now();
    let r = jason
        .post_form(
            "/rooms/1/messages",
            &form(&[
                ("message[body]", &html),
                ("message[body_format]", "html"),
                ("message[client_message_id]", "cid-mention"),
                ("authenticity_token", &token),
            ]),
            &[],
        )
        .await;
    assert!(r.status < 400, "{}", r.body);
    let (head, body) = tokio::time::timeout(Duration::from_secs(7), hits.recv())
        .await
        .expect("the webhook within 7 s")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(7));
    assert!(head.starts_with("POST /hook HTTP/1.1"), "{head}");
    assert!(head
        .to_ascii_lowercase()
        .contains("content-type: application/json"));
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let message_id = scalar_i64(
        &server,
        "SELECT id FROM messages WHERE client_message_id = 'cid-mention'",
    )
    .await;
    assert_eq!(v["user"], serde_json::json!({"id": 2, "name": "Jason"}));
    assert_eq!(v["room"]["id"], 1);
    assert_eq!(v["room"]["name"], "All Talk");
    assert_eq!(
        v["room"]["path"],
        format!("/rooms/1/{bot_id}-{token_of_bot}/messages")
    );
    assert_eq!(v["message"]["id"], message_id);
    let stored: String = sqlx::query_scalar("SELECT body FROM messages WHERE id = ?")
        .bind(message_id)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert!(
        stored.contains("application/vnd.campfire.mention"),
        "{stored}"
    );
    assert_eq!(v["message"]["body"]["html"], stored);
    assert_eq!(v["message"]["body"]["plain"], "what's the time?");
    assert_eq!(v["message"]["path"], format!("/rooms/1/@{message_id}"));
    // The answer is posted as the bot and broadcast to the room.
    let appended = broadcast_containing(&mut ws, "pong from the bot").await;
    assert!(appended.contains("Helper"), "{appended}");
    assert!(hits.try_recv().is_err(), "exactly one delivery");
    let metrics = server.client().get("/metrics").await.body;
    assert!(
        metrics.contains("hearth_webhook_deliveries_total{outcome=\"delivered\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_direct_message_reaches_the_bot_and_a_hanging_webhook_never_delays_a_post() {
    let server = TestServer::start().await;
    let (url, mut hits) =
        receiver((200, "text/html", "<b>later</b>"), Duration::from_secs(30)).await;
    let mut david = signed_in(&server, DAVID, SECRET).await;
    let bot_id = create_bot(&server, &mut david, "Sleepy", &url).await;
    let token = csrf(&mut david, "/rooms/1").await;
    let r = send(
        &mut david,
        "POST",
        "/rooms/directs",
        &[("user_ids[]", &bot_id.to_string())],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    let room: i64 = r
        .header("location")
        .unwrap()
        .trim_start_matches("/rooms/")
        .parse()
        .unwrap();
    let (token, _) = david.room(room).await;
    for i in 0..3 {
        let started = Instant::now();
        let r = david
            .post_message(
                room,
                &format!("are you there {i}"),
                &format!("dm-{i}"),
                &token,
            )
            .await;
        assert!(r.status < 400);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }
    let (_, body) = tokio::time::timeout(T, hits.recv()).await.unwrap().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["room"]["id"], room);
    assert!(v["message"]["body"]["plain"]
        .as_str()
        .unwrap()
        .starts_with("are you there"));
    // Removing the URL stops the deliveries.
    let token = csrf(&mut david, "/account/bots").await;
    let r = send(
        &mut david,
        "PATCH",
        &format!("/account/bots/{bot_id}"),
        &[("user[name]", "Sleepy"), ("user[webhook_url]", "")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM webhooks").await,
        0
    );
}

// ---------------------------------------------------------------------------------------------
// The bot API's list.

#[tokio::test]
async fn the_bot_list_is_campfires_array_paged_through_link() {
    let server = TestServer::start().await;
    let mut bot = server.client();
    let base = "/rooms/1/5-bNd3rB0tK3y7/messages";
    let total = scalar_i64(&server, "SELECT COUNT(*) FROM messages WHERE room_id = 1").await;
    let mut path = base.to_owned();
    let mut seen: Vec<i64> = Vec::new();
    let mut pages = 0;
    loop {
        let r = bot.request("GET", &path, &[], b"").await;
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.header("x-total-count"), Some(total.to_string().as_str()));
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        let list = v.as_array().expect("a JSON array");
        assert!(list.len() <= 40);
        let first = &list[0];
        for key in ["id", "created_at", "body", "creator", "room", "url"] {
            assert!(first.get(key).is_some(), "{key} in {first}");
        }
        assert!(first["body"]["plain_text"].is_string());
        assert!(first["body"]["html"].is_string());
        for key in ["id", "name", "role", "avatar_url"] {
            assert!(first["creator"].get(key).is_some(), "creator.{key}");
        }
        assert_eq!(first["room"]["id"], 1);
        let ids: Vec<i64> = list.iter().map(|m| m["id"].as_i64().unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "oldest first: {ids:?}");
        seen.splice(0..0, ids);
        pages += 1;
        match r.header("link") {
            Some(link) => {
                let url = link.trim_start_matches('<').split(">;").next().unwrap();
                assert!(link.ends_with("; rel=\"next\""), "{link}");
                assert!(url.starts_with(&server.origin()));
                path = url[server.origin().len()..].to_owned();
            }
            None => break,
        }
    }
    assert_eq!(seen.len() as i64, total);
    assert!(pages >= 2);
    let mut sorted = seen.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len());
    // An anchor outside the room: bare 404.
    assert_eq!(
        bot.request("GET", &format!("{base}?before=999999"), &[], b"")
            .await
            .status,
        404
    );
}

// ---------------------------------------------------------------------------------------------
// Boosts.

#[tokio::test]
async fn a_custom_boost_shows_its_booster_and_only_the_booster_removes_it_live() {
    let server = TestServer::start().await;
    let mut jason = signed_in(&server, JASON, SECRET).await;
    let mut ws = watch_room(&server, &mut jason, 1).await;
    let message_id = scalar_i64(&server, "SELECT MAX(id) FROM messages WHERE room_id = 1").await;
    let page = jason
        .get(&format!("/messages/{message_id}/boosts/new"))
        .await;
    assert_eq!(page.status, 200);
    assert!(page
        .body
        .contains("name=\"boost[content]\" required maxlength=\"16\""));
    let token = csrf_meta(&page.body);
    let path = format!("/messages/{message_id}/boosts");
    let r = send(
        &mut jason,
        "POST",
        &path,
        &[("boost[content]", &"x".repeat(17))],
        &token,
    )
    .await;
    assert_eq!(r.status, 422);
    let r = send(
        &mut jason,
        "POST",
        &path,
        &[("boost[content]", "nice one!")],
        &token,
    )
    .await;
    assert!(r.status < 400, "{}", r.body);
    let appended = broadcast_containing(&mut ws, "nice one!").await;
    assert!(appended.contains("data-booster-id=\"2\""), "{appended}");
    assert!(appended.contains("class=\"boost__avatar\""));
    assert!(
        appended.contains(">JA<") || appended.contains(">J<"),
        "{appended}"
    );
    let boost_id = scalar_i64(&server, "SELECT MAX(id) FROM boosts").await;
    // Someone else may not remove it; an unknown boost is 404.
    let mut david = signed_in(&server, DAVID, SECRET).await;
    let david_token = csrf(&mut david, "/rooms/1").await;
    let own = format!("/messages/{message_id}/boosts/{boost_id}");
    expect_statuses(&mut david, &david_token, &[("DELETE", &own, &[], 403)]).await;
    let missing = format!("/messages/{message_id}/boosts/999999");
    expect_statuses(&mut jason, &token, &[("DELETE", &missing, &[], 404)]).await;
    // The booster does: a live remove for the room.
    let r = send(&mut jason, "DELETE", &own, &[], &token).await;
    assert_eq!(r.status, 302, "{}", r.body);
    let removed = broadcast_containing(&mut ws, &format!("boost_{boost_id}")).await;
    assert!(removed.contains("action=\"remove\""), "{removed}");
    assert_eq!(
        scalar_i64(
            &server,
            &format!("SELECT COUNT(*) FROM boosts WHERE id = {boost_id}")
        )
        .await,
        0
    );
}

// ---------------------------------------------------------------------------------------------
// In a real browser: the people picker, a custom boost and its removal, the profile and the
// account page (tests/browser/accounts.mjs; screenshots in target/artifacts/browser/).

#[test]
fn the_people_picker_boosts_and_account_pages_work_in_a_browser() {
    let work = common::browser::work_dir("accounts-browser");
    let stdout = common::browser::run("accounts.mjs", &work, &[]);
    for step in [
        "SUGGESTED",
        "PICKED Jason",
        "DIRECT-ROOM",
        "BOOST-REMOVED",
        "PAGES mobile",
        "OK",
    ] {
        assert!(stdout.contains(step), "{step} missing:\n{stdout}");
    }
}

#[tokio::test]
async fn the_first_room_welcomes_with_the_invite_block_until_it_holds_more_than_a_page() {
    let server = TestServer::start().await;
    sqlx::query("DELETE FROM messages WHERE room_id = 1")
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    let mut jason = signed_in(&server, JASON, SECRET).await;
    let code: String = sqlx::query_scalar("SELECT join_code FROM accounts")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    let page = jason.get("/rooms/1").await;
    assert!(page.body.contains("id=\"system_welcome\""), "{}", page.body);
    assert!(
        page.body
            .contains(&format!("{}/join/{code}", server.origin())),
        "the welcome has the full join URL"
    );
    // Not in another room.
    let other = scalar_i64(
        &server,
        "SELECT MIN(r.id) FROM rooms r JOIN memberships m ON m.room_id = r.id \
         WHERE m.user_id = 2 AND r.id > 1",
    )
    .await;
    assert!(!jason
        .get(&format!("/rooms/{other}"))
        .await
        .body
        .contains("system_welcome"));
    // A page of messages (40) keeps it; one more and the room has grown out of it.
    let (token, _) = jason.room(1).await;
    for i in 0..41 {
        let r = jason
            .post_message(1, &format!("message {i}"), &format!("grow-{i}"), &token)
            .await;
        assert!(r.status < 400);
        if i == 39 {
            assert!(jason.get("/rooms/1").await.body.contains("system_welcome"));
        }
    }
    assert!(!jason.get("/rooms/1").await.body.contains("system_welcome"));
}

#[tokio::test]
async fn the_sidebar_offers_people_without_a_direct_room_one_click_away() {
    let server = TestServer::start().await;
    let mut jason = signed_in(&server, JASON, SECRET).await;
    let offered = |html: &str, id: i64| {
        html.contains(&format!(
            "name=\"user_ids[]\" value=\"{id}\"><button type=\"submit\" class=\"room-link__person\""
        ))
    };
    let sidebar = jason.get("/users/me/sidebar").await.body;
    assert!(sidebar.contains("id=\"direct_placeholders\""), "{sidebar}");
    assert!(!offered(&sidebar, 2), "not oneself");
    // A person without a direct room with Jason is offered; a click (the form's POST) opens it.
    let person = scalar_i64(
        &server,
        "SELECT MIN(id) FROM users WHERE status = 'active' AND role != 'bot' AND id != 2 \
         AND id NOT IN (SELECT m.user_id FROM memberships m JOIN rooms r ON r.id = m.room_id \
           WHERE r.kind = 'direct' AND m.room_id IN (SELECT room_id FROM memberships WHERE user_id = 2))",
    )
    .await;
    assert!(offered(&sidebar, person), "{sidebar}");
    let token = csrf(&mut jason, "/rooms/1").await;
    let r = send(
        &mut jason,
        "POST",
        "/rooms/directs",
        &[("user_ids[]", &person.to_string())],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    let room = r.header("location").unwrap().to_owned();
    let sidebar = jason.get("/users/me/sidebar").await.body;
    assert!(
        !offered(&sidebar, person),
        "a person with a direct room is not offered"
    );
    assert!(sidebar.contains(&format!("href=\"{room}\"")));
    // Bots are not people to ping.
    let mut david = signed_in(&server, DAVID, SECRET).await;
    let bot = create_bot(&server, &mut david, "Pinger", "").await;
    assert!(!offered(&jason.get("/users/me/sidebar").await.body, bot));
    // At most 20, counting Jason and the people he has direct rooms with.
    let people = jason
        .get("/users/me/sidebar")
        .await
        .body
        .matches("class=\"room-link__person\"")
        .count();
    assert!(people <= 20 && people > 0, "{people}");
}

#[test]
fn the_first_room_welcomes_custom_styles_apply_and_the_sidebars_people_are_one_click_away() {
    let work = common::browser::work_dir("first-room-browser");
    let stdout = common::browser::run("first_room.mjs", &work, &[]);
    common::browser::assert_steps(
        &stdout,
        &[
            "WELCOME http",
            "CUSTOM-CSS",
            "JOINED Bea,Cal",
            "PING Bea",
            "PING Cal",
            "RESORTED",
            "SEARCH-LOCAL-TIME",
            "SIGNED-OUT",
            "OK",
        ],
    );
    common::browser::assert_screenshots(&[
        "first-room-welcome.png",
        "first-room-sidebar-resorted.png",
    ]);
}

#[tokio::test]
async fn direct_rooms_in_the_sidebar_come_by_latest_activity() {
    let server = TestServer::start().await;
    let mut jason = signed_in(&server, JASON, SECRET).await;
    let token = csrf(&mut jason, "/rooms/1").await;
    let mut open = Vec::new();
    for who in ["4", "3"] {
        let r = send(
            &mut jason,
            "POST",
            "/rooms/directs",
            &[("user_ids[]", who)],
            &token,
        )
        .await;
        assert_eq!(r.status, 302);
        let room: i64 = r.header("location").unwrap()["/rooms/".len()..]
            .parse()
            .unwrap();
        open.push(room);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let position = |html: &str, room: i64| html.find(&format!("href=\"/rooms/{room}\"")).unwrap();
    let sidebar = jason.get("/users/me/sidebar").await.body;
    assert!(
        position(&sidebar, open[1]) < position(&sidebar, open[0]),
        "{sidebar}"
    );
    // A message in the older direct room moves it to the top.
    let (t, _) = jason.room(open[0]).await;
    let r = jason
        .post_message(open[0], "hello again", "dm-order", &t)
        .await;
    assert!(r.status < 400);
    let sidebar = jason.get("/users/me/sidebar").await.body;
    assert!(
        position(&sidebar, open[0]) < position(&sidebar, open[1]),
        "{sidebar}"
    );
}

#[tokio::test]
async fn the_search_page_loads_the_apps_scripts_like_the_room_page() {
    let server = TestServer::start().await;
    let mut jason = signed_in(&server, JASON, SECRET).await;
    let room = jason.get("/rooms/1").await.body;
    let search = jason.get("/searches?q=hello").await;
    assert_eq!(search.status, 200);
    assert!(search.body.contains("<script type=\"importmap\""));
    assert!(search
        .body
        .contains("name=\"current-user-id\" content=\"2\""));
    // The same script tags as the room page's.
    let tags = |html: &str| -> Vec<String> {
        html.match_indices("<script")
            .map(|(at, _)| html[at..at + html[at..].find('>').unwrap()].to_owned())
            .filter(|tag| tag.contains("importmap") || tag.contains("type=\"module\""))
            .collect()
    };
    assert!(!tags(&search.body).is_empty());
    for tag in tags(&search.body) {
        assert!(room.contains(&tag), "{tag} is not on the room page");
    }
}

#[tokio::test]
async fn without_javascript_a_room_pages_back_and_forth_through_plain_links() {
    let server = TestServer::start().await;
    let mut jason = signed_in(&server, JASON, SECRET).await;
    let (token, _) = jason.room(1).await;
    for i in 0..100 {
        let r = jason
            .post_message(1, &format!("paging {i}"), &format!("page-{i}"), &token)
            .await;
        assert!(r.status < 400);
    }
    let link = |html: &str, class: &str| -> Option<i64> {
        let marker = format!("paging-link--{class}\"><a href=\"/rooms/1/@");
        attr_after(html, &marker).map(|id| id.parse().unwrap())
    };
    let ids = |html: &str| -> Vec<i64> {
        html.match_indices("data-message-id=\"")
            .map(|(at, m)| {
                let rest = &html[at + m.len()..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .collect()
    };
    let latest = jason.get("/rooms/1").await.body;
    assert!(
        link(&latest, "newer").is_none(),
        "the latest page has no newer link"
    );
    let first = *ids(&latest).iter().min().unwrap();
    assert_eq!(link(&latest, "older"), Some(first));
    // The older link is a whole page (no JavaScript needed) with messages before the first.
    let older = jason.get(&format!("/rooms/1/@{first}")).await;
    assert_eq!(older.status, 200);
    let shown = ids(&older.body);
    assert!(shown.iter().any(|&id| id < first), "{shown:?}");
    let oldest = *shown.iter().min().unwrap();
    assert_eq!(link(&older.body, "older"), Some(oldest));
    // And it links forward again.
    let newest = *shown.iter().max().unwrap();
    assert_eq!(link(&older.body, "newer"), Some(newest));
    let forward = jason.get(&format!("/rooms/1/@{newest}")).await.body;
    assert!(ids(&forward).iter().any(|&id| id > newest));
    assert!(older.body.contains("<noscript><p class=\"paging-link"));
}
