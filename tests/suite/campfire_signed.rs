//! A Campfire team moved onto Hearth stays signed in (issue 44, item 1): started with
//! Campfire's `SECRET_KEY_BASE`, Hearth takes the session cookies and mention sgids Campfire's
//! Rails wrote, and writes a session cookie Campfire's Rails reads.
//!
//! The Campfire side is Rails' own code (`tests/ruby/campfire_cookies.rb`: Debian's
//! ActionDispatch cookie jar and ActiveSupport MessageVerifier, configured as `load_defaults
//! 8.2` configures Campfire). Needs `ruby` with `ruby-actionpack` (`scripts/test` installs it
//! when missing).

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{self, form, text, TestServer, Ws, WsEvent};

/// A `SECRET_KEY_BASE` as `rails secret` makes them: the Campfire's and so the Hearth's.
const CAMPFIRE_SECRET: &str = "9c2f4b6e8a0d1c3e5f7a9b1d3c5e7f9a0b2d4f6a8c0e1f3a5b7d9c1e3f5a7b9d0c2e4f6a8b0d1e3f5a7c9b1d3e5f7a9c0b2d4e6f8a0c1e3f5b7d9a1c3e5f7b9d";
/// Someone else's.
const OTHER_SECRET: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0";
/// A token as Campfire's `has_secure_token` makes them (24 base58 characters).
const CAMPFIRE_TOKEN: &str = "q7NkZ3fW9xRb2LmT5vYc8HdJ";
const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const MENTION: &str = "application/vnd.campfire.mention";
const UNAUTHORIZED: &str = r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#;
const T: Duration = Duration::from_secs(10);

/// Runs the Campfire script with `secret_key_base` on `commands` (each a tab-joined line) and
/// returns its answers, one per command.
fn campfire(secret_key_base: &str, commands: &[&[&str]]) -> Vec<String> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/ruby/campfire_cookies.rb"
    );
    let mut child = Command::new("ruby")
        .args([script, secret_key_base])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ruby runs (apt-get install -y --no-install-recommends ruby ruby-actionpack)");
    let input: String = commands.iter().map(|c| c.join("\t") + "\n").collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = stdout.lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), commands.len(), "{stdout}");
    lines
}

/// The value of a `Set-Cookie` line (`name=value; path=/; …`), as a browser sends it back.
fn cookie_value(set_cookie: &str) -> String {
    let pair = set_cookie.split(';').next().unwrap();
    pair.split_once('=').unwrap().1.to_owned()
}

/// A server started with Campfire's secret, holding a Campfire session of David's (user 1), as
/// the import leaves it.
async fn campfire_server() -> TestServer {
    let server = TestServer::start_with(|c| {
        c.secret_key_base = Some(CAMPFIRE_SECRET.to_owned().into());
    })
    .await;
    let now = hearth::db::now_ms();
    sqlx::query(
        "INSERT INTO sessions (user_id, token, ip_address, user_agent, last_active_at, created_at, updated_at) \
         VALUES (1, ?, '203.0.113.7', 'Campfire browser', ?, ?, ?)",
    )
    .bind(CAMPFIRE_TOKEN)
    .bind(now)
    .bind(now)
    .bind(now)
    .execute(&server.state.db.pool)
    .await
    .unwrap();
    server
}

/// A client of `server` carrying only `session_token=<value>`.
fn with_session_cookie(server: &TestServer, value: &str) -> common::Client {
    let mut c = server.client();
    c.cookies.push(("session_token".into(), value.to_owned()));
    c
}

/// Whether the client's pages answer signed in: `/` leads to a room and the room page is the
/// user's, rather than the sign-in form.
async fn signed_in(c: &mut common::Client) -> bool {
    let root = c.get("/").await;
    let room = c.get("/rooms/1").await;
    root.status == 302
        && root.header("location") != Some("/session/new")
        && room.status == 200
        && room.body.contains("David")
}

/// What `/cable` answers first to a socket carrying `cookie`.
async fn cable_answer(server: &TestServer, cookie: &str) -> Option<WsEvent> {
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

#[tokio::test]
async fn a_campfire_session_cookie_signs_in_pages_and_the_cable() {
    let server = campfire_server().await;
    let answers = campfire(
        CAMPFIRE_SECRET,
        &[&["cookie", "session_token", CAMPFIRE_TOKEN]],
    );
    let set_cookie = &answers[0];
    assert!(
        set_cookie.contains("; HttpOnly") && set_cookie.contains("SameSite=Lax"),
        "{set_cookie}"
    );
    let value = cookie_value(set_cookie);

    let mut c = with_session_cookie(&server, &value);
    assert!(signed_in(&mut c).await, "Campfire's cookie is not taken");
    assert_eq!(
        cable_answer(&server, &format!("session_token={value}")).await,
        text(r#"{"type":"welcome"}"#)
    );
    // The session is Campfire's row, resumed.
    let ip: Option<String> = sqlx::query_scalar("SELECT ip_address FROM sessions WHERE token = ?")
        .bind(CAMPFIRE_TOKEN)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert!(ip.is_some());
}

#[tokio::test]
async fn forged_foreign_and_expired_cookies_are_refused() {
    let server = campfire_server().await;
    let ours = campfire(
        CAMPFIRE_SECRET,
        &[
            &["cookie", "session_token", CAMPFIRE_TOKEN],
            &["cookie", "last_room", CAMPFIRE_TOKEN],
            &["expired", "session_token", CAMPFIRE_TOKEN],
        ],
    );
    let theirs = campfire(
        OTHER_SECRET,
        &[&["cookie", "session_token", CAMPFIRE_TOKEN]],
    );
    let good = cookie_value(&ours[0]);
    // The MAC's last hex digit changed.
    let last = good.chars().last().unwrap();
    let flipped = format!(
        "{}{}",
        &good[..good.len() - 1],
        if last == '0' { '1' } else { '0' }
    );
    let refused = [
        ("signed with another secret", cookie_value(&theirs[0])),
        ("a wrong signature", flipped),
        (
            "signed for another cookie (purpose cookie.last_room)",
            cookie_value(&ours[1]),
        ),
        ("expired", cookie_value(&ours[2])),
    ];
    for (what, value) in &refused {
        let mut c = with_session_cookie(&server, value);
        assert!(!signed_in(&mut c).await, "a cookie {what} signs in");
        let root = c.get("/").await;
        assert_eq!(root.header("location"), Some("/session/new"), "{what}");
        assert_eq!(
            cable_answer(&server, &format!("session_token={value}")).await,
            text(UNAUTHORIZED),
            "{what}"
        );
    }
    // The good one still works on the same server.
    let mut c = with_session_cookie(&server, &good);
    assert!(signed_in(&mut c).await);
}

/// The session cookie Hearth sets at sign-in is read by Rails' jar configured as Campfire's:
/// the way back keeps people signed in.
#[tokio::test]
async fn campfires_rails_reads_the_session_cookie_hearth_writes() {
    let server = TestServer::start_with(|c| {
        c.secret_key_base = Some(CAMPFIRE_SECRET.to_owned().into());
    })
    .await;
    let mut c = server.client();
    let r = c.login(DAVID, SECRET).await;
    assert_eq!(r.status, 302, "{}", r.body);
    let set_cookie = r
        .headers_named("set-cookie")
        .into_iter()
        .find(|s| s.starts_with("session_token="))
        .unwrap()
        .to_owned();
    // `cookies.permanent`: 20 calendar years on, as Rails writes it.
    let year = 1970 + hearth::db::now_ms() / 1000 / 31_556_952;
    assert!(
        set_cookie.contains(&format!(" {} ", year + 20))
            || set_cookie.contains(&format!(" {} ", year + 21)),
        "{set_cookie}"
    );
    let value = c.cookie("session_token").unwrap().to_owned();
    let token: String =
        sqlx::query_scalar("SELECT token FROM sessions WHERE user_id = 1 ORDER BY id DESC LIMIT 1")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    let read = campfire(
        CAMPFIRE_SECRET,
        &[
            &["read", "session_token", &value],
            &["read", "last_room", &value],
        ],
    );
    assert_eq!(read[0], format!("{token:?}"), "Rails' jar reads {value}");
    assert_eq!(read[1], "nil", "bound to its own cookie name");
    let read = campfire(OTHER_SECRET, &[&["read", "session_token", &value]]);
    assert_eq!(read[0], "nil");
}

/// A server started with Campfire's secret.
async fn server_with_campfires_secret() -> TestServer {
    TestServer::start_with(|c| {
        c.secret_key_base = Some(CAMPFIRE_SECRET.to_owned().into());
    })
    .await
}

/// The chip the page draws for a mention of user `id`.
async fn chip(server: &TestServer, id: i64) -> String {
    let name: String = sqlx::query_scalar("SELECT name FROM users WHERE id = ?")
        .bind(id)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    format!("<span class=\"mention\" data-user-id=\"{id}\">@{name}</span>")
}

/// Mentions signed as Campfire's Action Text signs them (Rails 8.2's envelope, and Rails 7.0's
/// older one) verify when posted from the composer, so their chips are kept; one signed with
/// another secret is cut.
#[tokio::test]
async fn campfire_mention_sgids_verify_when_posted_and_forged_ones_are_cut() {
    let server = server_with_campfires_secret().await;
    let answers = campfire(
        CAMPFIRE_SECRET,
        &[&["sgid", "User", "2"], &["sgid_legacy", "User", "4"]],
    );
    let forged = campfire(OTHER_SECRET, &[&["sgid", "User", "3"]]);
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    let html = format!(
        "<div>Hi {} {} {}</div>",
        crate::rich_text::trix_mention(&answers[0], "Jason"),
        crate::rich_text::trix_mention(&answers[1], "Kevin"),
        crate::rich_text::trix_mention(&forged[0], "Forged"),
    );
    let body = form(&[
        ("message[body]", &html),
        ("message[body_format]", "html"),
        ("message[client_message_id]", "campfire-mentions"),
        ("authenticity_token", &csrf),
    ]);
    let r = david
        .post_form(
            "/rooms/1/messages",
            &body,
            &[("Accept", "text/vnd.turbo-stream.html, text/html")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    for id in [2, 4] {
        let chip = chip(&server, id).await;
        assert!(r.body.contains(&chip), "no {chip} in {}", r.body);
    }
    assert!(!r.body.contains("data-user-id=\"3\""), "{}", r.body);
    assert!(!r.body.contains("Forged"), "{}", r.body);
}

/// A body as the import brings it, Action Text's attachments holding Campfire's sgids (URL-safe
/// base64, and Rails 7.0's Marshal envelope), shows its mentions as chips.
#[tokio::test]
async fn imported_campfire_mentions_draw_as_chips() {
    let server = server_with_campfires_secret().await;
    let answers = campfire(
        CAMPFIRE_SECRET,
        &[&["sgid", "User", "12"], &["sgid_legacy", "User", "13"]],
    );
    assert!(answers[0].contains('_'), "URL-safe base64: {}", answers[0]);
    let attachment = |sgid: &str| {
        format!(
            "<action-text-attachment sgid=\"{sgid}\" content-type=\"{MENTION}\" content=\"&lt;div class=&quot;mention&quot;&gt;Someone&lt;/div&gt;\"></action-text-attachment>"
        )
    };
    let imported = format!(
        "<div>Hello {} and {}</div>",
        attachment(&answers[0]),
        attachment(&answers[1])
    );
    let now = hearth::db::now_ms();
    sqlx::query(
        "INSERT INTO messages (room_id, creator_id, client_message_id, body, created_at, updated_at) \
         VALUES (1, 2, 'imported-from-campfire', ?, ?, ?)",
    )
    .bind(&imported)
    .bind(now)
    .bind(now)
    .execute(&server.state.db.pool)
    .await
    .unwrap();
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (_, page) = david.room(1).await;
    let at = page
        .find("id=\"message_imported-from-campfire\"")
        .expect("the imported message is on the page");
    let shown = &page[at..page.len().min(at + 4000)];
    for id in [12, 13] {
        let chip = format!("data-user-id=\"{id}\">@");
        assert!(shown.contains(&chip), "no {chip} in {shown}");
    }
}

/// The way back: the sgid Hearth's composer gets for a person is the one Campfire's Action Text
/// signs, and Rails locates its user.
#[tokio::test]
async fn hearths_mention_sgids_are_campfires() {
    let server = server_with_campfires_secret().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let sgid = crate::rich_text::sgid_of(&mut david, "Jason", 2).await;
    let answers = campfire(
        CAMPFIRE_SECRET,
        &[&["sgid", "User", "2"], &["locate", &sgid]],
    );
    assert_eq!(sgid, answers[0], "Hearth signs Jason as Campfire does");
    assert_eq!(answers[1], "\"gid://campfire/User/2?expires_in\"");
    let elsewhere = campfire(OTHER_SECRET, &[&["locate", &sgid]]);
    assert_eq!(elsewhere[0], "nil");
}

/// Campfire's pages and mention chips link avatars as `/users/<avatar_token>/avatar`, the
/// token being `user.signed_id(purpose: :avatar)`: Hearth shows the same avatar there as at
/// `/users/<id>/avatar`, and a token signed elsewhere or for another purpose finds nobody.
#[tokio::test]
async fn campfire_avatar_urls_show_the_avatar() {
    let server = server_with_campfires_secret().await;
    let ours = campfire(
        CAMPFIRE_SECRET,
        &[
            &["signed_id", "user", "2", "avatar"],
            &["signed_id", "user", "2", "transfer"],
        ],
    );
    let theirs = campfire(OTHER_SECRET, &[&["signed_id", "user", "2", "avatar"]]);
    let mut david = server.signed_in(DAVID, SECRET).await;
    let by_id = david.get("/users/2/avatar").await;
    assert_eq!(by_id.status, 200);
    let by_token = david.get(&format!("/users/{}/avatar?v=1", ours[0])).await;
    assert_eq!(by_token.status, 200, "{}", by_token.body);
    assert_eq!(by_token.body, by_id.body);
    for refused in [&ours[1], &theirs[0]] {
        let r = david.get(&format!("/users/{refused}/avatar")).await;
        assert_eq!(r.status, 404, "{refused}");
    }
}
