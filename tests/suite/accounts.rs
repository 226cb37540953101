//! Accounts, bans, bots and search over real HTTP (and `/cable` where they broadcast).

use crate::common;

use std::time::Duration;

use common::forms::{
    csrf, expect_statuses, next_message, scalar_i64, scalar_text, send, watch_room,
};
use common::{csrf_meta, text, TestServer, Ws, WsEvent};

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const BOT_KEY: &str = "5-bNd3rB0tK3y7";
const T: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// First run and sign-up.

#[tokio::test]
async fn first_run_creates_the_administrator_and_the_first_open_room() {
    let server = TestServer::start_with(|c| c.no_seed = true).await;
    assert_eq!(scalar_i64(&server, "SELECT COUNT(*) FROM users").await, 0);
    let mut c = server.client();
    let root = c.get("/").await;
    assert_eq!(root.header("location"), Some("/session/new"));
    let sign_in = c.get("/session/new").await;
    assert_eq!(sign_in.status, 302);
    assert_eq!(sign_in.header("location"), Some("/first_run"));
    let token = csrf(&mut c, "/first_run").await;
    // Bad fields: 422, nothing stored.
    let long = "x".repeat(101);
    for pairs in [
        vec![
            ("user[name]", long.as_str()),
            ("user[email_address]", "a@b.c"),
            ("user[password]", "pw123456"),
        ],
        vec![
            ("user[name]", "Ada"),
            ("user[email_address]", "nope"),
            ("user[password]", "pw123456"),
        ],
        vec![
            ("user[name]", "Ada"),
            ("user[email_address]", "a@b.c"),
            ("user[password]", ""),
        ],
    ] {
        let r = send(&mut c, "POST", "/first_run", &pairs, &token).await;
        assert_eq!(r.status, 422, "{pairs:?}");
    }
    assert_eq!(scalar_i64(&server, "SELECT COUNT(*) FROM users").await, 0);
    let r = send(
        &mut c,
        "POST",
        "/first_run",
        &[
            ("user[name]", "Ada Lovelace"),
            ("user[email_address]", "Ada@Example.com"),
            ("user[password]", "analytical"),
        ],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header("location"), Some("/"));
    assert!(c.cookie("session_token").is_some());
    let role = scalar_text(
        &server,
        "SELECT role FROM users WHERE email_address = 'ada@example.com'",
    )
    .await;
    assert_eq!(role, "administrator");
    assert_eq!(
        scalar_text(&server, "SELECT name FROM rooms WHERE kind = 'open'").await,
        "All Talk"
    );
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM accounts").await,
        1
    );
    let root = c.get("/").await;
    let room = root.header("location").unwrap().to_owned();
    assert!(room.starts_with("/rooms/"), "{room}");
    assert_eq!(c.get(&room).await.status, 200);
    // Done once: the form and a second post send everyone to `/`, creating nothing.
    let mut other = server.client();
    assert_eq!(other.get("/first_run").await.header("location"), Some("/"));
    let page = other.get("/session/new").await;
    assert_eq!(page.status, 200);
    let r = send(
        &mut other,
        "POST",
        "/first_run",
        &[
            ("user[name]", "Eve"),
            ("user[email_address]", "eve@example.com"),
            ("user[password]", "intruder1"),
        ],
        &csrf_meta(&page.body),
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(scalar_i64(&server, "SELECT COUNT(*) FROM users").await, 1);
    // The new administrator can sign in with the password.
    let mut again = server.client();
    assert_eq!(
        again.login("ada@example.com", "analytical").await.status,
        302
    );
}

#[tokio::test]
async fn a_seeded_database_has_no_first_run() {
    let server = TestServer::start().await;
    let mut c = server.client();
    assert_eq!(c.get("/first_run").await.header("location"), Some("/"));
    assert_eq!(c.get("/session/new").await.status, 200);
}

#[tokio::test]
async fn the_join_code_signs_people_up_and_administrators_regenerate_it() {
    let server = TestServer::start().await;
    let code = hearth::db::seed::JOIN_CODE;
    let mut c = server.client();
    assert_eq!(c.get("/join/wrong-code-1234").await.status, 404);
    let token = csrf(&mut c, &format!("/join/{code}")).await;
    let r = send(
        &mut c,
        "POST",
        "/join/wrong-code-1234",
        &[
            ("user[name]", "Nina"),
            ("user[email_address]", "nina@example.com"),
            ("user[password]", "pw123456"),
        ],
        &token,
    )
    .await;
    assert_eq!(r.status, 404);
    let r = send(
        &mut c,
        "POST",
        &format!("/join/{code}"),
        &[
            ("user[name]", &"n".repeat(101)),
            ("user[email_address]", "nina@example.com"),
            ("user[password]", "pw123456"),
        ],
        &token,
    )
    .await;
    assert_eq!(r.status, 422);
    let r = send(
        &mut c,
        "POST",
        &format!("/join/{code}"),
        &[
            ("user[name]", "Nina"),
            ("user[email_address]", "nina@example.com"),
            ("user[password]", "pw123456"),
        ],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header("location"), Some("/"));
    assert!(c.cookie("session_token").is_some());
    let id = scalar_i64(
        &server,
        "SELECT id FROM users WHERE email_address = 'nina@example.com'",
    )
    .await;
    let rooms: Vec<i64> =
        sqlx::query_scalar("SELECT room_id FROM memberships WHERE user_id = ? ORDER BY room_id")
            .bind(id)
            .fetch_all(&server.state.db.pool)
            .await
            .unwrap();
    assert_eq!(
        rooms,
        vec![1, 2, 3],
        "every open room, no closed or direct one"
    );
    assert_eq!(
        scalar_text(&server, &format!("SELECT role FROM users WHERE id = {id}")).await,
        "member"
    );
    // Signed in: the join page sends to `/`.
    assert_eq!(
        c.get(&format!("/join/{code}")).await.header("location"),
        Some("/")
    );
    // A taken address creates nothing.
    let mut d = server.client();
    let token = csrf(&mut d, &format!("/join/{code}")).await;
    let r = send(
        &mut d,
        "POST",
        &format!("/join/{code}"),
        &[
            ("user[name]", "Copy"),
            ("user[email_address]", "NINA@example.com"),
            ("user[password]", "pw123456"),
        ],
        &token,
    )
    .await;
    assert_eq!(r.header("location"), Some("/session/new"));
    assert_eq!(
        scalar_i64(
            &server,
            "SELECT COUNT(*) FROM users WHERE email_address = 'nina@example.com'"
        )
        .await,
        1
    );

    // Regenerating: members get 403, administrators a new code; the old link is gone.
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let token = csrf(&mut jason, "/rooms/1").await;
    expect_statuses(
        &mut jason,
        &token,
        &[("POST", "/account/join_code", &[], 403)],
    )
    .await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/users").await;
    let r = send(&mut david, "POST", "/account/join_code", &[], &token).await;
    assert_eq!(r.status, 302);
    let new_code = scalar_text(&server, "SELECT join_code FROM accounts").await;
    assert_ne!(new_code, code);
    let mut fresh = server.client();
    assert_eq!(fresh.get(&format!("/join/{code}")).await.status, 404);
    assert_eq!(fresh.get(&format!("/join/{new_code}")).await.status, 200);
    assert!(david.get("/account/users").await.body.contains(&new_code));
}

// ---------------------------------------------------------------------------------------------
// Profiles.

#[tokio::test]
async fn profiles_show_and_edit_name_and_bio() {
    let server = TestServer::start().await;
    let mut out = server.client();
    assert_eq!(
        out.get("/users/2").await.header("location"),
        Some("/session/new")
    );
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let page = jason.get("/users/1").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("David"));
    assert_eq!(jason.get("/users/99999").await.status, 404);
    assert_eq!(jason.get("/users/nope").await.status, 404);
    let token = csrf(&mut jason, "/users/me/profile").await;
    for (name, bio) in [
        ("", "x"),
        ("Jason", &"b".repeat(1001)[..]),
        (&"n".repeat(101)[..], ""),
    ] {
        let r = send(
            &mut jason,
            "PATCH",
            "/users/me/profile",
            &[("user[name]", name), ("user[bio]", bio)],
            &token,
        )
        .await;
        assert_eq!(r.status, 422);
    }
    assert_eq!(
        scalar_text(&server, "SELECT name FROM users WHERE id = 2").await,
        "Jason"
    );
    let r = send(
        &mut jason,
        "PATCH",
        "/users/me/profile",
        &[
            ("user[name]", "Jason Fried"),
            ("user[bio]", "Writes <books>"),
        ],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/users/me/profile"));
    let page = jason.get("/users/2").await;
    assert!(page.body.contains("Jason Fried"));
    assert!(
        page.body.contains("Writes &#60;books&#62;") || page.body.contains("Writes &lt;books&gt;"),
        "escaped bio"
    );
    assert!(page.body.contains(">JF<"), "initials avatar");
    // Signed out: 401 for the change.
    let mut anon = server.client();
    let page = anon.get("/session/new").await;
    let r = send(
        &mut anon,
        "PATCH",
        "/users/me/profile",
        &[("user[name]", "X")],
        &csrf_meta(&page.body),
    )
    .await;
    assert_eq!(r.status, 401);
}

// ---------------------------------------------------------------------------------------------
// The administrators' people page, roles, deactivation and bans.

#[tokio::test]
async fn administrators_list_people_change_roles_and_deactivate() {
    let server = TestServer::start().await;
    assert_eq!(
        server
            .client()
            .get("/account/users")
            .await
            .header("location"),
        Some("/session/new")
    );
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    assert_eq!(jason.get("/account/users").await.status, 403);
    let token = csrf(&mut jason, "/rooms/1").await;
    expect_statuses(
        &mut jason,
        &token,
        &[
            (
                "PATCH",
                "/account/users/3",
                &[("user[role]", "administrator")],
                403,
            ),
            ("DELETE", "/account/users/3", &[], 403),
            ("POST", "/users/3/ban", &[], 403),
        ],
    )
    .await;

    let mut david = server.signed_in(DAVID, SECRET).await;
    let page = david.get("/account/users").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("jason@example.com"));
    let token = csrf_meta(&page.body);
    let r = send(
        &mut david,
        "PATCH",
        "/account/users/2",
        &[("user[role]", "administrator")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(
        scalar_text(&server, "SELECT role FROM users WHERE id = 2").await,
        "administrator"
    );
    expect_statuses(
        &mut david,
        &token,
        &[
            ("PATCH", "/account/users/2", &[("user[role]", "bot")], 422),
            // A word outside the set, or in another case, is the form's fault: 422, not 400.
            (
                "PATCH",
                "/account/users/2",
                &[("user[role]", "Administrator")],
                422,
            ),
            ("PATCH", "/users/2", &[("user[status]", "asleep")], 422),
            (
                "PATCH",
                "/account/users/5",
                &[("user[role]", "member")],
                404,
            ),
        ],
    )
    .await;
    let (mut jz, mut ws) = common::connect_as(&server, "jz@example.com", SECRET).await;
    let r = send(&mut david, "DELETE", "/account/users/3", &[], &token).await;
    assert_eq!(r.status, 302);
    assert_eq!(
        scalar_text(&server, "SELECT status FROM users WHERE id = 3").await,
        "deactivated"
    );
    assert_eq!(
        ws.next_non_ping(T).await,
        text(r#"{"type":"disconnect","reason":"remote","reconnect":false}"#)
    );
    assert_eq!(jz.get("/rooms/1").await.status, 302);
}

#[tokio::test]
async fn the_last_active_administrator_cannot_deactivate_ban_or_demote_themself() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/users").await;
    let r = send(&mut david, "DELETE", "/account/users/1", &[], &token).await;
    assert_eq!(r.status, 422);
    assert!(r.body.contains("last active administrator"), "{}", r.body);
    expect_statuses(
        &mut david,
        &token,
        &[
            ("POST", "/users/1/ban", &[], 422),
            ("PATCH", "/users/1", &[("user[status]", "deactivated")], 422),
            ("PATCH", "/users/1", &[("user[status]", "banned")], 422),
            (
                "PATCH",
                "/account/users/1",
                &[("user[role]", "member")],
                422,
            ),
        ],
    )
    .await;
    assert_eq!(
        scalar_text(
            &server,
            "SELECT status || ' ' || role FROM users WHERE id = 1"
        )
        .await,
        "active administrator"
    );
    assert_eq!(david.get("/rooms/1").await.status, 200, "still signed in");
    // With a second administrator, stepping down works.
    send(
        &mut david,
        "PATCH",
        "/account/users/2",
        &[("user[role]", "administrator")],
        &token,
    )
    .await;
    expect_statuses(
        &mut david,
        &token,
        &[(
            "PATCH",
            "/account/users/1",
            &[("user[role]", "member")],
            302,
        )],
    )
    .await;
}

#[tokio::test]
async fn a_ban_removes_the_users_messages_live_and_blocks_their_addresses() {
    let server = TestServer::start().await;
    let mut kevin = server.signed_in("kevin@example.com", SECRET).await;
    let (token, _) = kevin.room(1).await;
    assert_eq!(
        kevin
            .post_message(1, "soon gone", "kevin-gone-1", &token)
            .await
            .status,
        200
    );
    // A session from a public address (loopback and private ones are never banned).
    sqlx::query("INSERT INTO sessions (user_id, token, ip_address, last_active_at, created_at, updated_at) VALUES (4, 'kevin-phone-session-token', '8.8.8.8', 0, 0, 0)")
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    let mut david = server.signed_in(DAVID, SECRET).await;
    let mut ws = watch_room(&server, &mut david, 1).await;
    let token = csrf(&mut david, "/users/4").await;
    assert!(david.get("/users/4").await.body.contains("/users/4/ban"));
    let r = send(&mut david, "POST", "/users/4/ban", &[], &token).await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header("location"), Some("/users/4"));
    let frame = next_message(&mut ws).await;
    assert!(
        frame.contains(
            r#"<turbo-stream action="remove" target="message_kevin-gone-1"></turbo-stream>"#
        ),
        "{frame}"
    );
    assert_eq!(
        scalar_i64(
            &server,
            "SELECT COUNT(*) FROM messages WHERE creator_id = 4"
        )
        .await,
        0
    );
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM sessions WHERE user_id = 4").await,
        0
    );
    assert_eq!(
        scalar_text(
            &server,
            "SELECT group_concat(ip_address) FROM bans WHERE user_id = 4"
        )
        .await,
        "8.8.8.8"
    );
    assert_eq!(
        scalar_text(&server, "SELECT status FROM users WHERE id = 4").await,
        "banned"
    );
    assert!(!david.get("/rooms/1").await.body.contains("kevin-gone-1"));
    assert_eq!(kevin.get("/rooms/1").await.status, 302);
    assert_eq!(
        server
            .client()
            .login("kevin@example.com", SECRET)
            .await
            .status,
        401
    );

    // A banned address changes nothing (429), reading still works.
    sqlx::query("INSERT INTO bans (user_id, ip_address, created_at, updated_at) VALUES (4, '127.0.0.1', 0, 0)")
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    server
        .state
        .db
        .bans_present
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let (token, _) = david.room(1).await;
    assert_eq!(
        david
            .post_message(1, "blocked", "blocked-1", &token)
            .await
            .status,
        429
    );
    assert_eq!(david.get("/rooms/1").await.status, 200);
    sqlx::query("DELETE FROM bans WHERE ip_address = '127.0.0.1'")
        .execute(&server.state.db.pool)
        .await
        .unwrap();

    // Lifting the ban.
    let r = send(&mut david, "DELETE", "/users/4/ban", &[], &token).await;
    assert_eq!(r.status, 302);
    assert_eq!(
        scalar_text(&server, "SELECT status FROM users WHERE id = 4").await,
        "active"
    );
    assert_eq!(scalar_i64(&server, "SELECT COUNT(*) FROM bans").await, 0);
    assert!(!server
        .state
        .db
        .bans_present
        .load(std::sync::atomic::Ordering::Relaxed));
    expect_statuses(&mut david, &token, &[("DELETE", "/users/4/ban", &[], 404)]).await;
    assert_eq!(
        server
            .client()
            .login("kevin@example.com", SECRET)
            .await
            .status,
        302
    );
}

// ---------------------------------------------------------------------------------------------
// Bots.

#[tokio::test]
async fn administrators_create_rename_rekey_and_remove_bots() {
    let server = TestServer::start().await;
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    assert_eq!(jason.get("/account/bots").await.status, 403);
    let token = csrf(&mut jason, "/rooms/1").await;
    expect_statuses(
        &mut jason,
        &token,
        &[
            ("POST", "/account/bots", &[("user[name]", "Evil")], 403),
            ("PATCH", "/account/bots/5/key", &[], 403),
        ],
    )
    .await;

    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/bots").await;
    expect_statuses(
        &mut david,
        &token,
        &[(
            "POST",
            "/account/bots",
            &[("user[name]", &"m".repeat(101))],
            422,
        )],
    )
    .await;
    let r = send(
        &mut david,
        "POST",
        "/account/bots",
        &[("user[name]", "Marvin")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/account/bots"));
    let (id, bot_token): (i64, String) =
        sqlx::query_as("SELECT id, bot_token FROM users WHERE name = 'Marvin' AND role = 'bot'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    let key = format!("{id}-{bot_token}");
    assert!(david.get("/account/bots").await.body.contains(&key));
    let mut anon = server.client();
    let post = |key: String| {
        let mut anon = anon.clone();
        async move {
            anon.request(
                "POST",
                &format!("/rooms/1/{key}/messages"),
                &[],
                b"Here I am, brain the size of a planet",
            )
            .await
        }
    };
    assert_eq!(post(key.clone()).await.status, 201);
    let r = send(
        &mut david,
        "PATCH",
        &format!("/account/bots/{id}"),
        &[("user[name]", "Marvin II")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(
        scalar_text(&server, &format!("SELECT name FROM users WHERE id = {id}")).await,
        "Marvin II"
    );
    expect_statuses(
        &mut david,
        &token,
        &[(
            "PATCH",
            "/account/bots/2",
            &[("user[name]", "Not a bot")],
            404,
        )],
    )
    .await;
    let r = send(
        &mut david,
        "PATCH",
        &format!("/account/bots/{id}/key"),
        &[],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(
        post(key.clone()).await.status,
        401,
        "the old key is revoked"
    );
    let new_token = scalar_text(
        &server,
        &format!("SELECT bot_token FROM users WHERE id = {id}"),
    )
    .await;
    let new_key = format!("{id}-{new_token}");
    assert_eq!(post(new_key.clone()).await.status, 201);
    let r = send(
        &mut david,
        "DELETE",
        &format!("/account/bots/{id}"),
        &[],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(
        post(new_key).await.status,
        401,
        "a removed bot's key is gone"
    );
    assert!(!david.get("/account/bots").await.body.contains("Marvin"));
    expect_statuses(
        &mut david,
        &token,
        &[("DELETE", &format!("/account/bots/{id}"), &[], 404)],
    )
    .await;
    let _ = anon.get("/up").await;
}

#[tokio::test]
async fn a_wrong_bot_key_is_a_bare_401_and_bot_answers_set_no_cookie() {
    let server = TestServer::start().await;
    let mut anon = server.client();
    for key in ["wrong", "5-wrongtoken", "999-bNd3rB0tK3y7"] {
        let r = anon
            .request("POST", &format!("/rooms/1/{key}/messages"), &[], b"hi")
            .await;
        assert_eq!(r.status, 401, "{key}");
        assert!(r.body.is_empty(), "{key}: {}", r.body);
        assert!(r.headers_named("set-cookie").is_empty(), "{key}");
    }
    let r = anon
        .request("POST", &format!("/rooms/1/{BOT_KEY}/messages"), &[], b"hi")
        .await;
    assert_eq!(r.status, 201);
    assert!(r.headers_named("set-cookie").is_empty());
    let r = anon
        .request("GET", &format!("/rooms/1/{BOT_KEY}/messages"), &[], b"")
        .await;
    assert_eq!(r.status, 200);
    assert!(r.headers_named("set-cookie").is_empty());
    let r = anon
        .request("POST", &format!("/rooms/4/{BOT_KEY}/messages"), &[], b"hi")
        .await;
    assert_eq!(r.status, 404, "a room the bot is not in");
    assert!(r.body.is_empty());
}

#[tokio::test]
async fn the_bot_api_lists_edits_and_deletes_its_messages_and_boosts_live() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let mut ws = watch_room(&server, &mut david, 1).await;
    let mut bot = server.client();
    let base = format!("/rooms/1/{BOT_KEY}/messages");
    let r = bot.request("POST", &base, &[], b"first draft").await;
    assert_eq!(r.status, 201);
    let id: i64 = r
        .header("location")
        .unwrap()
        .rsplit('@')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let appended = next_message(&mut ws).await;
    assert!(appended.contains("first draft"));
    let cid = scalar_text(
        &server,
        &format!("SELECT client_message_id FROM messages WHERE id = {id}"),
    )
    .await;

    // Index: Campfire's JSON array, oldest first, the newest message last.
    let r = bot.request("GET", &base, &[], b"").await;
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let list = v.as_array().expect("an array");
    assert_eq!(list.len(), 40);
    assert_eq!(list[39]["id"], id);
    assert_eq!(list[39]["room"]["id"], 1);
    assert_eq!(list[39]["body"]["plain_text"], "first draft");
    assert_eq!(list[39]["creator"]["role"], "bot");
    assert!(r
        .header("link")
        .is_some_and(|l| l.ends_with("rel=\"next\"")));
    let older = bot
        .request("GET", &format!("{base}?before={id}"), &[], b"")
        .await;
    let w: serde_json::Value = serde_json::from_str(&older.body).unwrap();
    assert!(w[0]["id"].as_i64().unwrap() < id);
    assert_eq!(
        bot.request("GET", "/rooms/4/5-bNd3rB0tK3y7/messages", &[], b"")
            .await
            .status,
        404
    );

    // Edit its own message: 204 + replace; someone else's: 403.
    let r = bot
        .request("PATCH", &format!("{base}/{id}"), &[], b"final text")
        .await;
    assert_eq!(r.status, 204);
    let replaced = next_message(&mut ws).await;
    assert!(
        replaced.starts_with(&format!(
            r#"<turbo-stream action="replace" target="message_{cid}">"#
        )),
        "{replaced}"
    );
    assert!(replaced.contains("final text"));
    let davids: i64 = scalar_i64(
        &server,
        "SELECT id FROM messages WHERE room_id = 1 AND creator_id = 1 LIMIT 1",
    )
    .await;
    assert_eq!(
        bot.request("PATCH", &format!("{base}/{davids}"), &[], b"hijack")
            .await
            .status,
        403
    );
    assert_eq!(
        bot.request("DELETE", &format!("{base}/{davids}"), &[], b"")
            .await
            .status,
        403
    );
    assert_eq!(
        bot.request("PATCH", &format!("{base}/99999"), &[], b"x")
            .await
            .status,
        404
    );
    assert_eq!(
        bot.request("PATCH", &format!("/rooms/1/wrong/messages/{id}"), &[], b"x")
            .await
            .status,
        401
    );

    // Boost any message of the room; delete only its own boost.
    let r = bot
        .request(
            "POST",
            &format!("{base}/{davids}/boosts"),
            &[],
            "🤖".as_bytes(),
        )
        .await;
    assert_eq!(r.status, 201);
    let boost_frame = next_message(&mut ws).await;
    assert!(
        boost_frame.contains("action=\"append\" target=\"boosts_message_"),
        "{boost_frame}"
    );
    assert_eq!(
        bot.request(
            "POST",
            &format!("{base}/{davids}/boosts"),
            &[],
            "x".repeat(17).as_bytes()
        )
        .await
        .status,
        422
    );
    let boost_id = scalar_i64(&server, "SELECT MAX(id) FROM boosts WHERE booster_id = 5").await;
    let others_boost = scalar_i64(&server, "SELECT b.id FROM boosts b JOIN messages m ON m.id = b.message_id WHERE b.booster_id != 5 AND m.room_id = 1 LIMIT 1").await;
    let others_message = scalar_i64(
        &server,
        &format!("SELECT message_id FROM boosts WHERE id = {others_boost}"),
    )
    .await;
    assert_eq!(
        bot.request(
            "DELETE",
            &format!("{base}/{others_message}/boosts/{others_boost}"),
            &[],
            b""
        )
        .await
        .status,
        403
    );
    let r = bot
        .request(
            "DELETE",
            &format!("{base}/{davids}/boosts/{boost_id}"),
            &[],
            b"",
        )
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(
        next_message(&mut ws).await,
        format!(r#"<turbo-stream action="remove" target="boost_{boost_id}"></turbo-stream>"#)
    );

    // Delete its own message: 204 + remove.
    let r = bot
        .request("DELETE", &format!("{base}/{id}"), &[], b"")
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(
        next_message(&mut ws).await,
        format!(r#"<turbo-stream action="remove" target="message_{cid}"></turbo-stream>"#)
    );
    assert_eq!(
        scalar_i64(
            &server,
            &format!("SELECT COUNT(*) FROM messages WHERE id = {id}")
        )
        .await,
        0
    );
}

// ---------------------------------------------------------------------------------------------
// Search.

#[tokio::test]
async fn search_finds_words_in_the_users_rooms_and_follows_edits_and_deletes() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    // Room 5 is David and Jason's direct room.
    let (token, _) = david.room(5).await;
    assert_eq!(
        david
            .post_message(5, "the zanzibar plan", "zanzibar-1", &token)
            .await
            .status,
        200
    );
    let r = send(
        &mut david,
        "POST",
        "/searches",
        &[("q", "Zanzibar!")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/searches?q=Zanzibar"));
    let page = david.get("/searches?q=Zanzibar").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("message_zanzibar-1"), "{}", page.body);
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    assert!(jason
        .get("/searches?q=zanzibar")
        .await
        .body
        .contains("message_zanzibar-1"));
    let mut jz = server.signed_in("jz@example.com", SECRET).await;
    let page = jz.get("/searches?q=zanzibar").await;
    assert_eq!(page.status, 200);
    assert!(
        !page.body.contains("message_zanzibar-1"),
        "not a member of the room"
    );
    // Markup is not searchable; operators are plain words.
    assert!(!david
        .get("/searches?q=div")
        .await
        .body
        .contains("message_zanzibar-1"));
    assert_eq!(
        david.get("/searches?q=%22zanzibar%20OR%20*").await.status,
        200
    );
    // Edits and deletes keep the index in step.
    let id = scalar_i64(
        &server,
        "SELECT id FROM messages WHERE client_message_id = 'zanzibar-1'",
    )
    .await;
    let r = send(
        &mut david,
        "PATCH",
        &format!("/rooms/5/messages/{id}"),
        &[("message[body]", "the timbuktu plan")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert!(!david
        .get("/searches?q=zanzibar")
        .await
        .body
        .contains("message_zanzibar-1"));
    assert!(david
        .get("/searches?q=timbuktu")
        .await
        .body
        .contains("message_zanzibar-1"));
    send(
        &mut david,
        "DELETE",
        &format!("/rooms/5/messages/{id}"),
        &[],
        &token,
    )
    .await;
    assert!(!david
        .get("/searches?q=timbuktu")
        .await
        .body
        .contains("message_zanzibar-1"));
    // Limits and signed-out visitors.
    let long = "a".repeat(201);
    assert_eq!(david.get(&format!("/searches?q={long}")).await.status, 422);
    expect_statuses(
        &mut david,
        &token,
        &[("POST", "/searches", &[("q", &long)], 422)],
    )
    .await;
    assert_eq!(
        server.client().get("/searches").await.header("location"),
        Some("/session/new")
    );
}

#[tokio::test]
async fn recent_searches_keep_the_newest_ten_and_clear() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/searches").await;
    for i in 0..12 {
        send(
            &mut david,
            "POST",
            "/searches",
            &[("q", &format!("word{i}"))],
            &token,
        )
        .await;
    }
    // Searching an old query again moves it to the top.
    send(&mut david, "POST", "/searches", &[("q", "word5")], &token).await;
    let recent: Vec<String> = sqlx::query_scalar(
        "SELECT query FROM searches WHERE user_id = 1 ORDER BY updated_at DESC, id DESC",
    )
    .fetch_all(&server.state.db.pool)
    .await
    .unwrap();
    assert_eq!(recent.len(), 10);
    assert_eq!(recent[0], "word5");
    assert!(!recent.contains(&"word0".to_owned()) && !recent.contains(&"word1".to_owned()));
    let page = david.get("/searches").await;
    assert!(page.body.contains("/searches?q=word11"));
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    assert!(
        !jason.get("/searches").await.body.contains("word11"),
        "per user"
    );
    let r = send(&mut david, "DELETE", "/searches/clear", &[], &token).await;
    assert_eq!(r.status, 302);
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM searches").await,
        0
    );
}

// ---------------------------------------------------------------------------------------------
// The binary: `serve` seeds an empty database by default; `--no-seed` gives the first run.

#[tokio::test]
async fn serve_seeds_by_default_and_no_seed_starts_with_the_first_run() {
    let seeded_dir = common::temp_dir("serve-seed");
    let seeded = common::child::Hearth::start(&seeded_dir, &[]).await;
    let mut c = seeded.client();
    assert_eq!(c.get("/first_run").await.header("location"), Some("/"));
    assert_eq!(c.login(DAVID, SECRET).await.status, 302);
    drop(seeded);

    let empty_dir = common::temp_dir("serve-no-seed");
    let empty = common::child::Hearth::start(&empty_dir, &["--no-seed"]).await;
    let mut c = empty.client();
    assert_eq!(
        c.get("/session/new").await.header("location"),
        Some("/first_run")
    );
    let page = c.get("/first_run").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("name=\"user[email_address]\""));
    drop(empty);
    let _ = std::fs::remove_dir_all(&seeded_dir);
    let _ = std::fs::remove_dir_all(&empty_dir);
}

// ---------------------------------------------------------------------------------------------
// Access changes reach the next lookup at once, though sessions are cached.

/// Opens `/cable` with a raw `Cookie` header and returns the first frame.
async fn first_cable_frame(server: &TestServer, cookie: &str) -> Option<WsEvent> {
    let mut ws = Ws::connect(
        server.addr,
        Some(cookie),
        Some(&server.origin()),
        Some(common::PROTOCOLS),
    )
    .await;
    assert_eq!(ws.status, 101, "{}", ws.response_head);
    ws.next(T).await
}

const WELCOME: &str = r#"{"type":"welcome"}"#;
const UNAUTHORIZED: &str = r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#;

#[tokio::test]
async fn a_signed_out_cookie_is_refused_at_once_by_pages_and_the_cable() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let cookie = c.cookie_header();
    // The session is looked up (and kept) by a page and a connection.
    assert_eq!(c.get("/rooms/1").await.status, 200);
    assert_eq!(first_cable_frame(&server, &cookie).await, text(WELCOME));
    let token = csrf(&mut c, "/rooms/1").await;
    expect_statuses(&mut c, &token, &[("DELETE", "/session", &[], 302)]).await;
    let mut replay = server.client();
    replay.cookies = cookie
        .split("; ")
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let page = replay.get("/rooms/1").await;
    assert_eq!(page.header("location"), Some("/session/new"));
    assert_eq!(
        first_cable_frame(&server, &cookie).await,
        text(UNAUTHORIZED)
    );
}

#[tokio::test]
async fn role_changes_deactivation_and_bans_take_effect_at_the_next_request() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/users").await;
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    assert_eq!(jason.get("/account/users").await.status, 403);
    let promote = [("user[role]", "administrator")];
    let r = send(&mut david, "PATCH", "/account/users/2", &promote, &token).await;
    assert_eq!(r.status, 302);
    assert_eq!(jason.get("/account/users").await.status, 200);
    let demote = [("user[role]", "member")];
    let r = send(&mut david, "PATCH", "/account/users/2", &demote, &token).await;
    assert_eq!(r.status, 302);
    assert_eq!(jason.get("/account/users").await.status, 403);

    // Deactivation: the next page and the next connection are refused.
    let jason_cookie = jason.cookie_header();
    assert_eq!(
        first_cable_frame(&server, &jason_cookie).await,
        text(WELCOME)
    );
    let r = send(&mut david, "DELETE", "/account/users/2", &[], &token).await;
    assert_eq!(r.status, 302);
    assert_eq!(
        jason.get("/rooms/1").await.header("location"),
        Some("/session/new")
    );
    assert_eq!(
        first_cable_frame(&server, &jason_cookie).await,
        text(UNAUTHORIZED)
    );

    // A ban: the same.
    let mut jz = server.signed_in("jz@example.com", SECRET).await;
    let jz_cookie = jz.cookie_header();
    assert_eq!(jz.get("/rooms/1").await.status, 200);
    assert_eq!(first_cable_frame(&server, &jz_cookie).await, text(WELCOME));
    let r = send(&mut david, "POST", "/users/3/ban", &[], &token).await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(
        jz.get("/rooms/1").await.header("location"),
        Some("/session/new")
    );
    assert_eq!(
        first_cable_frame(&server, &jz_cookie).await,
        text(UNAUTHORIZED)
    );
}

#[tokio::test]
async fn a_session_ended_by_another_process_is_refused_after_the_cache_lifetime() {
    let server = TestServer::start_with(|c| c.auth_cache_seconds = 1).await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    assert_eq!(c.get("/rooms/1").await.status, 200);
    // As a console or another node would: straight in the database, not through Hearth.
    sqlx::query("DELETE FROM sessions")
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(
        c.get("/rooms/1").await.header("location"),
        Some("/session/new")
    );
    assert_eq!(
        first_cable_frame(&server, &c.cookie_header()).await,
        text(UNAUTHORIZED)
    );
}

/// Every administrator route that names a person: a malformed id is a 404 for an
/// administrator (nothing changes), and a 403 for anyone else whatever the id (the
/// administrator check comes first, so a member learns nothing about ids).
#[tokio::test]
async fn administrator_routes_answer_a_malformed_id_with_404_and_members_with_403() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let david_token = csrf(&mut david, "/rooms/1").await;
    let jason_token = csrf(&mut jason, "/rooms/1").await;
    /// Method, path (`{}`: the id) and form pairs.
    type Route = (
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
    );
    let routes: [Route; 5] = [
        (
            "PATCH",
            "/account/users/{}",
            &[("user[role]", "administrator")],
        ),
        ("DELETE", "/account/users/{}", &[]),
        ("PATCH", "/users/{}", &[("user[status]", "deactivated")]),
        ("POST", "/users/{}/ban", &[]),
        ("DELETE", "/users/{}/ban", &[]),
    ];
    for (method, path, pairs) in routes {
        for id in ["x", "3x", "-", "99999999999999999999"] {
            let path = path.replace("{}", id);
            let answer = send(&mut david, method, &path, pairs, &david_token).await;
            assert_eq!(answer.status, 404, "{method} {path}: {}", answer.body);
        }
        let path = path.replace("{}", "3");
        let answer = send(&mut jason, method, &path, pairs, &jason_token).await;
        assert_eq!(answer.status, 403, "{method} {path} by a member");
    }
    let active = scalar_i64(
        &server,
        "SELECT COUNT(*) FROM users WHERE status = 'active' AND role = 'administrator'",
    )
    .await;
    assert_eq!(active, 1, "nothing changed");
}
