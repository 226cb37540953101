//! The chat app over real HTTP against a seeded SQLite database in a temp dir.

use crate::common;

use common::{csrf_meta, form, TestServer};
use hearth::rails::SignedCookieJar;

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";

#[tokio::test]
async fn login_succeeds_with_a_signed_session_cookie() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let page = c.get("/session/new").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("name=\"authenticity_token\""));
    assert!(
        c.cookie("_hearth_session").is_some(),
        "the CSRF cookie is set on the form"
    );
    let token = csrf_meta(&page.body);
    let body = form(&[
        ("email_address", DAVID),
        ("password", SECRET),
        ("authenticity_token", &token),
    ]);
    let r = c.post_form("/session", &body, &[]).await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/"));
    let set = r
        .headers_named("set-cookie")
        .into_iter()
        .find(|s| s.starts_with("session_token="))
        .unwrap()
        .to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Lax") && set.contains("path=/"),
        "{set}"
    );
    assert!(!set.contains("Secure"), "no Secure flag over plain HTTP");
    // The cookie is in Rails' signed format: a jar with the same secret_key_base reads it.
    let jar = SignedCookieJar::from_secret_key_base("0123456789abcdef".repeat(8).as_bytes());
    let token = jar
        .verify("session_token", c.cookie("session_token").unwrap())
        .expect("Rails-signed cookie");
    let stored: i64 = sqlx::query_scalar("SELECT user_id FROM sessions WHERE token = ?")
        .bind(&token)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(stored, 1);
    let root = c.get("/").await;
    assert_eq!(root.status, 302);
    assert_eq!(root.header("location"), Some("/rooms/1"));
}

#[tokio::test]
async fn login_failure_is_401_with_the_form() {
    let server = TestServer::start().await;
    let mut c = server.client();
    for (email, password) in [
        (DAVID, "wrong"),
        ("nobody@example.com", SECRET),
        ("mallory@example.com", SECRET),
        (DAVID, ""),
    ] {
        let r = c.login(email, password).await;
        assert_eq!(r.status, 401, "{email}");
        assert!(r.body.contains("Try another email address or password."));
        assert!(r.body.contains("name=\"password\""));
    }
    // A password over bcrypt's 72 bytes never authenticates, even with a valid prefix.
    let long = format!("{SECRET}{}", "x".repeat(80));
    assert_eq!(c.login(DAVID, &long).await.status, 401);
    assert!(c.cookie("session_token").is_none());
}

#[tokio::test]
async fn login_is_rate_limited_per_ip() {
    let server = TestServer::start_with(|c| c.login_rate_limit = 3).await;
    let mut c = server.client();
    for _ in 0..3 {
        assert_eq!(c.login(DAVID, "wrong").await.status, 401);
    }
    let limited = c.login(DAVID, SECRET).await;
    assert_eq!(limited.status, 429);
    assert!(c.cookie("session_token").is_none());
    // When to try again, as every other 429 says it: the oldest of the three attempts leaves
    // the three-minute window within (0, 180] seconds.
    let retry = limited.retry_after();
    assert!((1..=180).contains(&retry), "Retry-After: {retry}");
}

#[tokio::test]
async fn logout_destroys_the_server_side_session() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let stolen_cookie = c.cookie("session_token").unwrap().to_owned();
    let (csrf, _) = c.room(1).await;
    let r = c
        .post_form(
            "/session",
            &form(&[("_method", "delete"), ("authenticity_token", &csrf)]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/session/new"));
    let sessions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sessions")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(sessions, 0);
    // Replaying the old cookie no longer works.
    let mut replay = server.client();
    replay.cookies.push(("session_token".into(), stolen_cookie));
    let page = replay.get("/rooms/1").await;
    assert_eq!(page.status, 302);
    assert_eq!(page.header("location"), Some("/session/new"));
}

#[tokio::test]
async fn state_changing_requests_without_csrf_get_422() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let before: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    let r = c
        .post_form("/rooms/1/messages", &form(&[("message[body]", "hi")]), &[])
        .await;
    assert_eq!(r.status, 422);
    let r = c
        .post_form(
            "/rooms/1/messages",
            &form(&[("message[body]", "hi"), ("authenticity_token", "forged")]),
            &[],
        )
        .await;
    assert_eq!(r.status, 422);
    // The header form works, as Turbo sends it.
    let (csrf, _) = c.room(1).await;
    let r = c
        .post_form(
            "/rooms/1/messages",
            &form(&[("message[body]", "via header")]),
            &[("X-CSRF-Token", &csrf)],
        )
        .await;
    assert_eq!(r.status, 302);
    let after: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(after, before + 1);
    // Sign-in needs the token too.
    let mut anon = server.client();
    let r = anon
        .post_form(
            "/session",
            &form(&[("email_address", DAVID), ("password", SECRET)]),
            &[],
        )
        .await;
    assert_eq!(r.status, 422);
}

#[tokio::test]
async fn the_room_page_has_what_turbo_needs_and_the_latest_40_messages() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (_, html) = c.room(1).await;
    assert!(html.contains("<meta name=\"current-user-id\" content=\"1\">"));
    assert!(html.contains("<meta name=\"action-cable-url\" content=\"/cable\">"));
    assert!(html.contains("id=\"messages_rooms_open_1\""));
    assert_eq!(html.matches(" data-message-created-at=").count(), 40);
    let signed = common::attr_after(
        &html,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .unwrap();
    let signed = signed
        .replace("&#x3D;", "=")
        .replace("&#61;", "=")
        .replace("&#43;", "+");
    // The signed name is `<room 1 gid param>:messages`, verifiable with the same key.
    let name = server.state.keys.signer.verify(&signed).expect("verifies");
    assert_eq!(name, "Z2lkOi8vY2FtcGZpcmUvUm9vbXM6Ok9wZW4vMQ:messages");
    let sidebar = c.get("/users/me/sidebar").await;
    assert_eq!(sidebar.status, 200);
    // The rooms' stream, the user's rooms' stream and the user's inbox stream.
    assert_eq!(
        sidebar
            .body
            .matches("channel=\"Turbo::StreamsChannel\"")
            .count(),
        3
    );
    assert!(sidebar.body.contains("All Talk"));
}

#[tokio::test]
async fn a_post_is_stored_and_answered_with_an_escaped_turbo_stream() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    let r = c
        .post_message(1, "<script>alert('x')</script> & hi", "cid-1", &csrf)
        .await;
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/vnd.turbo-stream.html"));
    assert!(r.body.starts_with(
        "<turbo-stream action=\"append\" target=\"messages_rooms_open_1\"><template>"
    ));
    assert!(r.body.contains("id=\"message_cid-1\""));
    assert!(r
        .body
        .contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; hi"));
    assert!(!r.body.contains("<script>"));
    let stored: String =
        sqlx::query_scalar("SELECT body FROM messages WHERE client_message_id = 'cid-1'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    assert!(stored.contains("&lt;script&gt;"));
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE room_id = 1")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(count, 170);
    // Without the turbo-stream Accept header the answer is a redirect back to the room.
    let b = form(&[("message[body]", "plain"), ("authenticity_token", &csrf)]);
    let r = c.post_form("/rooms/1/messages", &b, &[]).await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/rooms/1"));
}

#[tokio::test]
async fn bad_posts_store_nothing() {
    let server = TestServer::start_with(|c| c.max_body_bytes = 4096).await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM messages")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap()
    };
    let before = count().await;
    assert_eq!(c.post_message(1, "   ", "blank", &csrf).await.status, 422);
    assert_eq!(c.post_message(1, "x", "bad id\"<", &csrf).await.status, 422);
    assert_eq!(
        c.post_message(1, &"x".repeat(5000), "big", &csrf)
            .await
            .status,
        413
    );
    let r = c
        .request(
            "POST",
            "/rooms/1/messages",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("X-CSRF-Token", &csrf),
            ],
            b"message%5Bbody%5D=%FF%FE",
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(c.post_message(999, "x", "nope", &csrf).await.status, 404);
    assert_eq!(count().await, before);
}

#[tokio::test]
async fn non_members_get_404() {
    let server = TestServer::start().await;
    let mut c = server.signed_in("user1@example.com", "password").await;
    let (csrf, _) = c.room(1).await;
    // Room 4 "Designers" is closed to the named people only.
    assert_eq!(c.get("/rooms/4").await.status, 404);
    assert_eq!(c.get("/rooms/4/messages").await.status, 404);
    assert_eq!(c.get("/rooms/4/refresh?since=0").await.status, 404);
    assert_eq!(
        c.post_message(4, "let me in", "x1", &csrf).await.status,
        404
    );
    assert_eq!(c.get("/rooms/9999").await.status, 404);
    assert_eq!(c.get("/no/such/page").await.status, 404);
}

#[tokio::test]
async fn a_revoked_member_cannot_post_although_the_post_route_caches_membership() {
    let server = TestServer::start().await;
    let mut c = server.signed_in("jason@example.com", SECRET).await;
    let (csrf, _) = c.room(4).await;
    // The first post caches Jason's membership of room 4.
    assert_eq!(c.post_message(4, "before", "rev1", &csrf).await.status, 200);
    let revision = hearth::db::memberships::revise(
        &server.state.db.pool,
        &*server.state.sockets.registry,
        4,
        &[],
        &[2],
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(revision.revoked, vec![2]);
    assert_eq!(c.post_message(4, "after", "rev2", &csrf).await.status, 404);
    let stored: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE client_message_id = 'rev2'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    assert_eq!(stored, 0);
}

#[tokio::test]
async fn bots_post_with_their_key() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let r = c
        .request(
            "POST",
            "/rooms/1/5-bNd3rB0tK3y7/messages",
            &[("Content-Type", "text/plain")],
            b"Deploy finished <ok>",
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let location = r.header("location").unwrap().to_owned();
    assert!(location.starts_with("/rooms/1/@"), "{location}");
    let body: String = sqlx::query_scalar(
        "SELECT body FROM messages WHERE creator_id = 5 ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&server.state.db.pool)
    .await
    .unwrap();
    assert_eq!(body, "<div>Deploy finished &lt;ok&gt;</div>");
    let bad = c
        .request("POST", "/rooms/1/5-wrongtoken12/messages", &[], b"x")
        .await;
    assert_eq!(bad.status, 401);
}

#[tokio::test]
async fn pages_of_40_and_204_when_empty() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let ids: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM messages WHERE room_id = 1 ORDER BY created_at, id")
            .fetch_all(&server.state.db.pool)
            .await
            .unwrap();
    assert_eq!(ids.len(), 169);
    let before_last_page = ids[169 - 40];
    let page = c
        .get(&format!("/rooms/1/messages?before={before_last_page}"))
        .await;
    assert_eq!(page.status, 200);
    assert_eq!(page.body.matches(" data-message-created-at=").count(), 40);
    assert!(page
        .body
        .contains(&format!("data-message-id=\"{}\"", ids[169 - 41])));
    let first = c.get(&format!("/rooms/1/messages?before={}", ids[0])).await;
    assert_eq!(first.status, 204);
    let after = c
        .get(&format!("/rooms/1/messages?after={}", ids[165]))
        .await;
    assert_eq!(after.body.matches(" data-message-created-at=").count(), 3);
    assert_eq!(
        c.get(&format!("/rooms/1/messages?after={}", ids[168]))
            .await
            .status,
        204
    );
    assert_eq!(c.get("/rooms/1/messages?before=abc").await.status, 400);
}

#[tokio::test]
async fn refresh_since_appends_new_and_replaces_updated() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    let since = hearth::db::now_ms();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert_eq!(
        c.post_message(1, "after the reconnect", "fresh-1", &csrf)
            .await
            .status,
        200
    );
    let r = c.get(&format!("/rooms/1/refresh?since={since}")).await;
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/vnd.turbo-stream.html"));
    assert!(r
        .body
        .contains("<turbo-stream action=\"append\" target=\"messages_rooms_open_1\">"));
    assert!(r.body.contains("id=\"message_fresh-1\""));
    assert_eq!(r.body.matches(" data-message-created-at=").count(), 1);
    let nothing = c
        .get(&format!(
            "/rooms/1/refresh?since={}",
            hearth::db::now_ms() + 1000
        ))
        .await;
    assert_eq!(nothing.body, "");
    assert_eq!(c.get("/rooms/1/refresh").await.status, 400);
}

#[tokio::test]
async fn health_check_answers() {
    let server = TestServer::start().await;
    let r = server.client().get("/up").await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn a_post_touches_the_room_and_marks_disconnected_members_unread() {
    let server = TestServer::start().await;
    let pool = &server.state.db.pool;
    // Start from a read room, with Jason connected (present) and Ada Abara (user 1) not.
    sqlx::query("UPDATE memberships SET unread_at = NULL WHERE room_id = 1")
        .execute(pool)
        .await
        .unwrap();
    assert!(hearth::db::rooms::present(pool, 1, 2).await.unwrap());
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    assert_eq!(
        c.post_message(1, "anyone there?", "unread-1", &csrf)
            .await
            .status,
        200
    );
    let created: i64 =
        sqlx::query_scalar("SELECT created_at FROM messages WHERE client_message_id = 'unread-1'")
            .fetch_one(pool)
            .await
            .unwrap();
    let unread = |user: i64| async move {
        hearth::db::rooms::membership_state(pool, 1, user)
            .await
            .unwrap()
            .unwrap()
            .2
    };
    assert_eq!(
        unread(8).await,
        Some(created),
        "a disconnected member is marked unread"
    );
    assert_eq!(unread(1).await, None, "never the creator");
    assert_eq!(unread(2).await, None, "not a connected member");
    let room = hearth::db::rooms::find(pool, 1).await.unwrap().unwrap();
    assert_eq!(room.updated_at, created, "the room is touched");
    // Every member is in the unread fan-out list, in one query.
    let members = hearth::db::rooms::member_ids(pool, 1).await.unwrap();
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memberships WHERE room_id = 1")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(members.len() as i64, count);
    assert!(members.windows(2).all(|w| w[0] < w[1]));
}

/// The id of the message posted with client message id `cid`.
async fn message_id(server: &TestServer, cid: &str) -> i64 {
    sqlx::query_scalar("SELECT id FROM messages WHERE client_message_id = ?")
        .bind(cid)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

/// Issue 13, item 5: the Edit link of every message leads to the edit form (Campfire's
/// `GET /rooms/:room_id/messages/:id/edit`), in the turbo frame the link targets; the form
/// PATCHes the message. Only its creator (or an administrator) gets it.
#[tokio::test]
async fn the_edit_link_renders_the_edit_form_in_its_frame() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    let posted = c
        .post_message(1, "a < b & \"c\"\nsecond line", "to-edit", &csrf)
        .await;
    assert_eq!(posted.status, 200);
    let id = message_id(&server, "to-edit").await;
    let edit_path = format!("/rooms/1/messages/{id}/edit");
    // The partial's Edit link is this route, aimed at a frame the partial holds.
    let link = format!("<a href=\"{edit_path}\"");
    assert!(posted.body.contains(&link), "{}", posted.body);
    let frame = "presentation_message_to-edit";
    assert!(posted
        .body
        .contains(&format!("data-turbo-frame=\"{frame}\"")));
    assert!(
        posted
            .body
            .contains(&format!("<turbo-frame id=\"{frame}\"")),
        "the partial has no turbo-frame {frame}: {}",
        posted.body
    );

    let r = c.get(&edit_path).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let start = r
        .body
        .find(&format!("<turbo-frame id=\"{frame}\""))
        .expect("the answer holds the frame");
    let inside = &r.body[start..];
    assert!(inside.contains(&format!("action=\"/rooms/1/messages/{id}\"")));
    assert!(inside.contains("name=\"_method\" value=\"patch\""));
    assert!(inside.contains("name=\"authenticity_token\""));
    // The current text, as typed (lines kept), escaped once for the textarea.
    assert!(
        inside.contains("a &lt; b &amp; &quot;c&quot;\nsecond line</textarea>")
            || inside.contains("a &lt; b &amp; &#34;c&#34;\nsecond line</textarea>"),
        "{inside}"
    );

    // Submitting it edits the message (turbo-stream replace).
    let token = csrf_meta(&r.body);
    let r = c
        .post_form(
            &format!("/rooms/1/messages/{id}"),
            &form(&[
                ("_method", "patch"),
                ("message[body]", "edited"),
                ("authenticity_token", &token),
            ]),
            &[("Accept", "text/vnd.turbo-stream.html")],
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(r
        .body
        .starts_with("<turbo-stream action=\"replace\" target=\"message_to-edit\">"));

    // Someone else's message: 403; not a member: 404; no such message: 404.
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    assert_eq!(jason.get(&edit_path).await.status, 403);
    let mut outsider = server.signed_in("user1@example.com", "password").await;
    let david_in_4: i64 = sqlx::query_scalar("SELECT MAX(id) FROM messages WHERE room_id = 4")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(
        outsider
            .get(&format!("/rooms/4/messages/{david_in_4}/edit"))
            .await
            .status,
        404
    );
    assert_eq!(c.get("/rooms/1/messages/999999/edit").await.status, 404);
    assert_eq!(
        c.get(&format!("/rooms/4/messages/{id}/edit")).await.status,
        404
    );
    // Signed out: 401, as every room-scoped route.
    assert_eq!(server.client().get(&edit_path).await.status, 401);
}

/// The catch-up cursor a room page carries (a change id).
fn page_cursor(html: &str) -> i64 {
    common::attr_after(html, "data-refresh-room-cursor-value=\"")
        .expect("the page carries its catch-up cursor")
        .parse()
        .unwrap()
}

/// GETs the catch-up after `cursor`; returns the answer and the cursor it hands back.
async fn catch_up(c: &mut common::Client, cursor: i64) -> (common::Response, Option<i64>) {
    let r = c
        .get(&format!(
            "/rooms/1/refresh?cursor={cursor}&reason=connection"
        ))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/vnd.turbo-stream.html"));
    let next = r.header("x-refresh-cursor").map(|v| v.parse().unwrap());
    (r, next)
}

/// Issue 13, item 2: a message stamped with the same millisecond as the last one the page
/// holds is caught up, by the old `since=<ms>` and by the page's cursor.
#[tokio::test]
async fn refresh_returns_a_message_sharing_the_last_seen_millisecond() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (_, html) = c.room(1).await;
    let newest: i64 = sqlx::query_scalar("SELECT MAX(created_at) FROM messages WHERE room_id = 1")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    // Committed in the same millisecond as the page's newest message, after the page loaded.
    sqlx::query(
        "INSERT INTO messages (room_id, creator_id, client_message_id, body, created_at, updated_at) \
         VALUES (1, 2, 'same-ms', '<div>same millisecond</div>', ?, ?)",
    )
    .bind(newest)
    .bind(newest)
    .execute(&server.state.db.pool)
    .await
    .unwrap();
    let r = c.get(&format!("/rooms/1/refresh?since={newest}")).await;
    assert_eq!(r.status, 200);
    assert!(r.body.contains("id=\"message_same-ms\""), "{}", r.body);
    let (r, _) = catch_up(&mut c, page_cursor(&html)).await;
    assert_eq!(
        r.body.matches(" data-message-created-at=").count(),
        1,
        "{}",
        r.body
    );
    assert!(r.body.contains("id=\"message_same-ms\""));
}

/// Issue 13, item 2: a page away for more than a page of messages gets every one of them, in
/// order, and past the bound it is told to reload; a second catch-up from the cursor handed
/// back brings nothing twice.
#[tokio::test]
async fn refresh_returns_everything_missed_or_asks_for_a_reload() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, html) = c.room(1).await;
    let cursor = page_cursor(&html);
    for i in 0..95 {
        let r = c
            .post_message(1, &format!("missed {i}"), &format!("missed-{i}"), &csrf)
            .await;
        assert_eq!(r.status, 200);
    }
    let (r, next) = catch_up(&mut c, cursor).await;
    let next = next.expect("the next cursor");
    assert_eq!(r.body.matches(" data-message-created-at=").count(), 95);
    let mut at = 0;
    for i in 0..95 {
        let found = r.body[at..]
            .find(&format!("id=\"message_missed-{i}\""))
            .unwrap_or_else(|| panic!("missed-{i} absent or out of order"));
        at += found;
    }
    assert!(!r.body.contains("action=\"refresh\""));
    let (again, same) = catch_up(&mut c, next).await;
    assert_eq!(again.body, "");
    assert_eq!(same, Some(next));

    // Past the bound (hearth::web::rooms::REFRESH_MAX messages): reload instead.
    let max = usize::try_from(hearth::web::rooms::REFRESH_MAX).unwrap();
    for i in 0..=max {
        sqlx::query(
            "INSERT INTO messages (room_id, creator_id, client_message_id, body, created_at, updated_at) \
             VALUES (1, 2, ?, '<div>flood</div>', ?, ?)",
        )
        .bind(format!("flood-{i}"))
        .bind(hearth::db::now_ms())
        .bind(hearth::db::now_ms())
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    }
    let (r, none) = catch_up(&mut c, next).await;
    assert_eq!(
        r.body, "<turbo-stream action=\"refresh\"></turbo-stream>",
        "too much missed: the page reloads"
    );
    assert_eq!(none, None);
    // So does a cursor the log does not cover.
    let (r, _) = catch_up(&mut c, i64::MAX).await;
    assert_eq!(r.body, "<turbo-stream action=\"refresh\"></turbo-stream>");
    assert_eq!(c.get("/rooms/1/refresh?cursor=abc").await.status, 400);
}

/// Issue 13, item 2: edits, boosts and deletes made while the page was away are caught up
/// (`replace` and `remove`), also when a deleted message's id is given to the next post.
#[tokio::test]
async fn refresh_sends_edits_and_deletes_made_while_away() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = c.room(1).await;
    for cid in ["keep", "edit-me", "boost-me", "drop-me", "last"] {
        assert_eq!(c.post_message(1, cid, cid, &csrf).await.status, 200);
    }
    let (_, html) = c.room(1).await;
    let cursor = page_cursor(&html);
    let last_id = message_id(&server, "last").await;
    let turbo = [("Accept", "text/vnd.turbo-stream.html")];
    let edit = message_id(&server, "edit-me").await;
    let r = c
        .post_form(
            &format!("/rooms/1/messages/{edit}"),
            &form(&[
                ("_method", "patch"),
                ("message[body]", "edited while away"),
                ("authenticity_token", &csrf),
            ]),
            &turbo,
        )
        .await;
    assert_eq!(r.status, 200);
    let boosted = message_id(&server, "boost-me").await;
    let r = c
        .post_form(
            &format!("/messages/{boosted}/boosts"),
            &form(&[("boost[content]", "🔥"), ("authenticity_token", &csrf)]),
            &turbo,
        )
        .await;
    assert_eq!(r.status, 200);
    for cid in ["drop-me", "last"] {
        let id = message_id(&server, cid).await;
        let r = c
            .post_form(
                &format!("/rooms/1/messages/{id}"),
                &form(&[("_method", "delete"), ("authenticity_token", &csrf)]),
                &turbo,
            )
            .await;
        assert_eq!(r.status, 200);
    }
    // The next post gets a new id, never one of the deleted newest messages (`AUTOINCREMENT`).
    assert_eq!(
        c.post_message(1, "reborn", "reborn", &csrf).await.status,
        200
    );
    let reborn = message_id(&server, "reborn").await;
    assert!(reborn > last_id, "the id {reborn} was used before");

    let (r, next) = catch_up(&mut c, cursor).await;
    let next = next.expect("the next cursor");
    assert!(
        r.body
            .contains("<turbo-stream action=\"replace\" target=\"message_edit-me\"><template>"),
        "{}",
        r.body
    );
    assert!(r.body.contains("edited while away"));
    assert!(r
        .body
        .contains("<turbo-stream action=\"replace\" target=\"message_boost-me\"><template>"));
    assert!(r.body.contains("🔥"));
    assert!(r
        .body
        .contains("<turbo-stream action=\"remove\" target=\"message_drop-me\"></turbo-stream>"));
    assert!(r
        .body
        .contains("<turbo-stream action=\"remove\" target=\"message_last\"></turbo-stream>"));
    assert!(r.body.contains("id=\"message_reborn\""), "{}", r.body);
    assert!(!r.body.contains("target=\"message_keep\""));
    let (again, _) = catch_up(&mut c, next).await;
    assert_eq!(again.body, "");
}
