//! Rich-text bodies and @mentions over real HTTP: what the editor's HTML becomes when stored,
//! shown, broadcast and listed to bots; the size and blank limits; `GET /autocompletable/users`.

use crate::common;

use common::{form, TestServer};

const DAVID: &str = "david@example.com";
const KEVIN: &str = "kevin@example.com";
const SECRET: &str = "secret123456";
const BOT_KEY: &str = "5-bNd3rB0tK3y7";
const MENTION: &str = "application/vnd.campfire.mention";

/// Posts the editor's HTML (`message[body_format]=html`) as a Turbo client would.
async fn post_html(
    c: &mut common::Client,
    room: i64,
    html: &str,
    cid: &str,
    csrf: &str,
) -> common::Response {
    let b = form(&[
        ("message[body]", html),
        ("message[body_format]", "html"),
        ("message[client_message_id]", cid),
        ("authenticity_token", csrf),
    ]);
    c.post_form(
        &format!("/rooms/{room}/messages"),
        &b,
        &[("Accept", "text/vnd.turbo-stream.html, text/html")],
    )
    .await
}

/// The sgids `GET /autocompletable/users` gives for `query` (everyone of the account), by id.
pub(crate) async fn sgid_of(c: &mut common::Client, query: &str, id: i64) -> String {
    let r = c
        .get(&format!("/autocompletable/users?query={query}"))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let list: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .find(|u| u["value"] == id)
        .unwrap_or_else(|| panic!("no user {id} in {}", r.body))["sgid"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A mention as Trix serializes the attachment the composer inserts.
pub(crate) fn trix_mention(sgid: &str, label: &str) -> String {
    let json = serde_json::json!({
        "content": format!("<span class=\"mention\" onclick=\"steal()\">@{label}</span>"),
        "contentType": MENTION,
        "sgid": sgid,
    });
    format!(
        "<figure data-trix-attachment=\"{}\" data-trix-content-type=\"{MENTION}\" class=\"attachment attachment--content\"><span class=\"mention\">@{label}</span><figcaption class=\"attachment__caption\"></figcaption></figure>",
        hearth::rich_text::html_escape(&json.to_string())
    )
}

const HOSTILE: &[&str] = &[
    "<script",
    "alert(1)",
    "onclick",
    "onerror",
    "javascript:",
    "evil.example",
    "<img",
    "<iframe",
    "style=",
    "steal()",
];

fn assert_clean(what: &str, html: &str) {
    for bad in HOSTILE {
        assert!(!html.contains(bad), "{what} holds {bad:?}: {html}");
    }
}

#[tokio::test]
async fn an_editor_body_is_stored_shown_and_listed_without_what_the_sanitizer_cuts() {
    let server = TestServer::start().await;
    let pool = &server.state.db.pool;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(4).await;
    let jason = sgid_of(&mut david, "Jason", 2).await;
    let user1 = sgid_of(&mut david, "Ada%20Abara", 8).await; // not in room 4 (Designers)
    let forged = jason.replace("--", "--0");
    let html = format!(
        concat!(
            "<div>see https://example.com/x and <strong>bold</strong> ",
            "<a href=\"javascript:alert(1)\">click</a> <a href=\"https://ok.example/\" onclick=\"alert(1)\">ok</a>",
            "<script>alert(1)</script><img src=\"https://evil.example/x.png\" onerror=\"alert(1)\">",
            "<iframe src=\"https://evil.example/\"></iframe><span style=\"color:red\">red</span> ",
            "{jason} {user1} {forged}</div><pre>let x = 1 &lt; 2;</pre>",
            "<figure data-trix-attachment='{{\"contentType\":\"image/png\",\"url\":\"https://evil.example/a.png\"}}'><img src=\"https://evil.example/a.png\"></figure>",
            "<action-text-attachment sgid=\"x\" content-type=\"text/html\" content=\"&lt;script&gt;alert(1)&lt;/script&gt;\"></action-text-attachment>",
        ),
        jason = trix_mention(&jason, "Jason"),
        user1 = trix_mention(&user1, "Ada Abara"),
        forged = trix_mention(&forged, "Forged"),
    );
    let r = post_html(&mut david, 4, &html, "rich-1", &csrf).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_clean("the answer (the broadcast frame's HTML)", &r.body);
    assert!(r.body.contains("<strong>bold</strong>"), "{}", r.body);
    assert!(r.body.contains(
        "<a href=\"https://example.com/x\" target=\"_blank\" rel=\"noopener noreferrer\">https://example.com/x</a>"
    ));
    assert!(r
        .body
        .contains("<span class=\"mention\" data-user-id=\"2\">@Jason</span>"));
    assert!(r.body.contains("data-mentionee-ids=\"2\""), "{}", r.body);
    assert!(!r.body.contains("Ada Abara") && !r.body.contains("Forged"));

    let (id, stored, plain): (i64, String, String) = sqlx::query_as(
        "SELECT id, body, plain_text FROM messages WHERE client_message_id = 'rich-1'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_clean("the stored body", &stored);
    let rich: String = sqlx::query_scalar(
        "SELECT body FROM action_text_rich_texts WHERE record_type = 'Message' AND record_id = ? AND name = 'body'",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(rich, stored, "Campfire's table shows the body");
    assert_eq!(
        stored.matches("<action-text-attachment").count(),
        1,
        "{stored}"
    );
    assert!(stored.contains(&format!("sgid=\"{jason}\" content-type=\"{MENTION}\"")));
    assert!(
        plain.contains("@Jason") && plain.contains("let x = 1 < 2;"),
        "{plain}"
    );
    // The search index reads the plain text, not the markup.
    let indexed: String = sqlx::query_scalar("SELECT body FROM message_search_texts WHERE id = ?")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(indexed, plain);

    let message = hearth::db::messages::find(pool, 4, id)
        .await
        .unwrap()
        .unwrap();
    let mentionees = hearth::db::messages::mentionees(pool, &message)
        .await
        .unwrap();
    assert_eq!(
        mentionees
            .iter()
            .map(|m| (m.id, m.name.as_str()))
            .collect::<Vec<_>>(),
        [(2, "Jason")]
    );

    let (_, page) = david.room(4).await;
    assert!(page.contains("data-mentionee-ids=\"2\""));
    let body_start = page.find("id=\"message_rich-1\"").unwrap();
    assert_clean(
        "the room page",
        &page[body_start..body_start + 4000.min(page.len() - body_start)],
    );
}

#[tokio::test]
async fn bots_see_sanitized_html_and_plain_text_and_post_plain_text_linked() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    let html = "<div><b>hi</b> <a href=\"javascript:alert(1)\" onclick=\"alert(1)\">x</a><script>alert(1)</script></div>";
    assert_eq!(
        post_html(&mut david, 1, html, "rich-bot", &csrf)
            .await
            .status,
        200
    );
    let mut bot = server.client();
    let r = bot.get(&format!("/rooms/1/{BOT_KEY}/messages")).await;
    assert_eq!(r.status, 200);
    let list: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    // Campfire's shape: an array of `{id, body: {plain_text, html}, …}`; the posted one is there.
    let newest = list
        .as_array()
        .and_then(|all| all.iter().find(|m| m["body"]["plain_text"] == "hi x"))
        .unwrap_or_else(|| panic!("the posted message is listed: {}", r.body));
    assert_eq!(newest["body"]["plain_text"], "hi x", "{}", r.body);
    assert_clean("the bot's html", newest["body"]["html"].as_str().unwrap());
    assert!(newest["body"]["html"]
        .as_str()
        .unwrap()
        .contains("<b>hi</b>"));

    // A bot posts plain text: escaped, linked.
    let r = bot
        .request(
            "POST",
            &format!("/rooms/1/{BOT_KEY}/messages"),
            &[],
            "<b>not bold</b> www.example.com".as_bytes(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let stored: String = sqlx::query_scalar("SELECT body FROM messages ORDER BY id DESC LIMIT 1")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(
        stored,
        "<div>&lt;b&gt;not bold&lt;/b&gt; <a href=\"http://www.example.com\" target=\"_blank\" rel=\"noopener noreferrer\">www.example.com</a></div>"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_413_and_an_empty_editor_body_is_refused() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM messages")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap()
    };
    let before = count().await;
    let long = format!(
        "<div>{}</div>",
        "a".repeat(hearth::rich_text::MAX_BODY_BYTES)
    );
    assert_eq!(
        post_html(&mut david, 1, &long, "long-1", &csrf)
            .await
            .status,
        413
    );
    assert_eq!(
        david
            .post_message(1, &"a".repeat(70_000), "long-2", &csrf)
            .await
            .status,
        413
    );
    for (i, empty) in [
        "<div><br></div>",
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<div> </div>",
    ]
    .iter()
    .enumerate()
    {
        let r = post_html(&mut david, 1, empty, &format!("empty-{i}"), &csrf).await;
        assert_eq!(r.status, 422, "{empty}: {}", r.body);
    }
    assert_eq!(count().await, before, "nothing was stored");
}

#[tokio::test]
async fn a_deeply_nested_body_is_422_and_nothing_is_stored() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    let count = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM messages")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap()
    };
    let before = count().await;
    // Under the size limit, but thousands of levels deep: refused before the sanitizer runs.
    for (i, deep) in [
        format!("{}x", "<div>".repeat(13_000)),
        format!("{}x", "<i>".repeat(21_000)),
        format!("{}x", "<i></b>".repeat(9_000)),
    ]
    .iter()
    .enumerate()
    {
        assert!(deep.len() <= hearth::rich_text::MAX_BODY_BYTES);
        let r = post_html(&mut david, 1, deep, &format!("deep-{i}"), &csrf).await;
        assert_eq!(r.status, 422, "{}", r.body);
    }
    assert_eq!(count().await, before, "nothing was stored");
    // A quote holding a list of bold links is far from the limit.
    let nested = "<blockquote><ul><li><strong><a href=\"https://example.com\">x</a></strong></li></ul></blockquote>";
    assert_eq!(
        post_html(&mut david, 1, nested, "nested-ok", &csrf)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn an_edit_through_the_editor_is_sanitized_and_keeps_mentions_of_members_only() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(4).await;
    assert_eq!(
        david
            .post_message(4, "before", "edit-rich", &csrf)
            .await
            .status,
        200
    );
    let id: i64 =
        sqlx::query_scalar("SELECT id FROM messages WHERE client_message_id = 'edit-rich'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    let kevin = sgid_of(&mut david, "Kevin", 4).await;
    let bender = sgid_of(&mut david, "Bender", 5).await; // a bot, not in room 4
    let html = format!(
        "<div><em>after</em> {} {}<script>alert(1)</script></div>",
        trix_mention(&kevin, "Kevin"),
        trix_mention(&bender, "Bender")
    );
    let b = form(&[
        ("_method", "patch"),
        ("message[body]", &html),
        ("message[body_format]", "html"),
        ("authenticity_token", &csrf),
    ]);
    let r = david
        .post_form(
            &format!("/rooms/4/messages/{id}"),
            &b,
            &[("Accept", "text/vnd.turbo-stream.html, text/html")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_clean("the replace", &r.body);
    assert!(r.body.contains("<em>after</em>"));
    assert!(r.body.contains("data-mentionee-ids=\"4\""));
    assert!(!r.body.contains("Bender"));
    let plain: String = sqlx::query_scalar("SELECT plain_text FROM messages WHERE id = ?")
        .bind(id)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(plain, "after @Kevin");
}

#[tokio::test]
async fn autocompletable_users_lists_active_people_by_name_as_campfire_does() {
    let server = TestServer::start().await;
    let mut anonymous = server.client();
    assert_eq!(
        anonymous.get("/autocompletable/users?query=J").await.status,
        401
    );

    let mut kevin = server.signed_in(KEVIN, SECRET).await;
    let r = kevin.get("/autocompletable/users?query=j").await;
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/json"));
    let list: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    // Any word of the name: two of the seed's generated people match too.
    assert_eq!(names, ["Farid Johansson", "Jason", "Jonas Nakamura", "JZ"]);
    let jason = &list[1];
    assert_eq!(jason["value"], 2);
    assert!(jason["avatar_url"]
        .as_str()
        .unwrap()
        .starts_with("data:image/svg+xml,"));
    let sgid = jason["sgid"].as_str().unwrap();
    assert_eq!(
        server
            .state
            .keys
            .sgids
            .verify(sgid, "User", "attachable", 0),
        Some(2),
        "a Rails signed GlobalID of the user"
    );
    for u in list.as_array().unwrap() {
        assert_eq!(
            u.as_object().unwrap().len(),
            4,
            "name, value, avatar_url, sgid: {u}"
        );
    }

    // Deactivated and banned people are not offered; at most 20; by name.
    let all = kevin.get("/autocompletable/users").await;
    let all: serde_json::Value = serde_json::from_str(&all.body).unwrap();
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 20);
    assert!(all
        .iter()
        .all(|u| u["name"] != "Ralph" && u["name"] != "Mallory"));

    // Limited to a room's members: Designers (room 4) has David, Jason, JZ and Kevin.
    let r = kevin.get("/autocompletable/users?room_id=4").await;
    let list: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["David", "Jason", "JZ", "Kevin"]);
    // A room one is not in, or none such: 404; a bad id 404 too.
    let mut user1 = server.signed_in("user1@example.com", "password").await;
    assert_eq!(
        user1.get("/autocompletable/users?room_id=4").await.status,
        404
    );
    assert_eq!(
        kevin.get("/autocompletable/users?room_id=999").await.status,
        404
    );
    assert_eq!(
        kevin.get("/autocompletable/users?room_id=abc").await.status,
        404
    );

    // Hostile queries: LIKE wildcards are literal, quotes harmless, long ones cut.
    for q in ["%25", "_", "%27%20OR%201%3D1--", "%3Cscript%3E"] {
        let r = kevin
            .get(&format!("/autocompletable/users?query={q}"))
            .await;
        assert_eq!(r.status, 200, "{q}");
        assert_eq!(r.body, "[]", "{q}");
    }
    // Far past the 100-character cut, inside the request line's 8 KiB: cut and answered.
    let long = "J".repeat(4_000);
    assert_eq!(
        kevin
            .get(&format!("/autocompletable/users?query={long}"))
            .await
            .status,
        200
    );
    // Past the request line's limit (`--max-request-line-bytes`): 414 before any lookup.
    let longer = "J".repeat(10_000);
    assert_eq!(
        kevin
            .get(&format!("/autocompletable/users?query={longer}"))
            .await
            .status,
        414
    );
}
