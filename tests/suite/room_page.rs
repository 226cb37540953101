//! The room page's server side of messages (issue: a room a team can live with): a permalink
//! renders the page around its message, signing in returns to the page asked for, search
//! results name their room, and the message partial stays the same for every reader (who may
//! edit is decided in the browser; the server keeps its 403).

use crate::common;

use common::TestServer;

const DAVID: &str = "david@example.com";
const JASON: &str = "jason@example.com";
const SECRET: &str = "secret123456";

/// The ids of a page's messages, in page order.
fn message_ids(html: &str) -> Vec<i64> {
    html.match_indices("data-message-id=\"")
        .filter_map(|(at, marker)| {
            let rest = &html[at + marker.len()..];
            rest[..rest.find('"')?].parse().ok()
        })
        .collect()
}

async fn main_room_ids(server: &TestServer) -> Vec<i64> {
    sqlx::query_scalar("SELECT id FROM messages WHERE room_id = 1 ORDER BY created_at, id")
        .fetch_all(&server.state.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_permalink_renders_the_page_around_its_message() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let ids = main_room_ids(&server).await;
    let second = ids[1];
    let page = c.get(&format!("/rooms/1/@{second}")).await;
    assert_eq!(page.status, 200);
    let shown = message_ids(&page.body);
    assert!(
        shown.contains(&second),
        "message {second} is not on its permalink's page"
    );
    // Half a page after it, all there is before it.
    assert_eq!(shown, ids[..22].to_vec());
    assert!(page
        .body
        .contains(&format!("data-highlight-message-id=\"{second}\"")));
    assert!(page.body.contains("data-has-older=\"false\""));
    assert!(page.body.contains("data-up-to-date=\"false\""));

    // In the middle of the room: 20 before, the message, 20 after.
    let middle = ids[100];
    let page = c.get(&format!("/rooms/1/@{middle}")).await;
    assert_eq!(message_ids(&page.body), ids[80..=120].to_vec());
    assert!(page.body.contains("data-has-older=\"true\""));

    // The newest message: the list reaches the present.
    let page = c.get(&format!("/rooms/1/@{}", ids.last().unwrap())).await;
    assert!(page.body.contains("data-up-to-date=\"true\""));

    // The plain room page is the latest page and reaches the present.
    let (_, html) = c.room(1).await;
    assert_eq!(message_ids(&html), ids[ids.len() - 40..].to_vec());
    assert!(html.contains("data-up-to-date=\"true\""));
    assert!(!html.contains("data-highlight-message-id"));
}

#[tokio::test]
async fn a_permalink_to_a_message_of_another_room_or_none_is_404() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let other: i64 = sqlx::query_scalar("SELECT id FROM messages WHERE room_id = 2 LIMIT 1")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(c.get(&format!("/rooms/1/@{other}")).await.status, 404);
    assert_eq!(c.get("/rooms/1/@999999").await.status, 404);
    assert_eq!(c.get("/rooms/1/@-1").await.status, 404);
    assert_eq!(c.get("/rooms/1/@abc").await.status, 404);
    assert_eq!(c.get("/rooms/1/@").await.status, 404);
}

#[tokio::test]
async fn signing_in_returns_to_the_page_asked_for() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let asked = c.get("/rooms/1/@2").await;
    assert_eq!(asked.status, 302);
    assert_eq!(asked.header("location"), Some("/session/new"));
    assert_eq!(
        c.cookie("return_to_after_authenticating"),
        Some("/rooms/1/@2")
    );
    let r = c.login(JASON, SECRET).await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/rooms/1/@2"));
    assert_eq!(
        c.cookie("return_to_after_authenticating"),
        None,
        "remembered once"
    );
    // The next sign-in goes to the root again.
    let mut again = server.client();
    assert_eq!(
        again.login(JASON, SECRET).await.header("location"),
        Some("/")
    );
}

#[tokio::test]
async fn a_return_path_to_another_site_is_ignored() {
    let server = TestServer::start().await;
    for hostile in [
        "//evil.example/rooms",
        "/\\evil.example",
        "https://evil.example/",
        "/rooms/1%0d%0aSet-Cookie:x=1",
        "/rooms/1\"><script>",
    ] {
        let mut c = server.client();
        c.cookies
            .push(("return_to_after_authenticating".into(), hostile.into()));
        let r = c.login(JASON, SECRET).await;
        assert_eq!(r.status, 302);
        assert_eq!(r.header("location"), Some("/"), "{hostile}");
    }
}

#[tokio::test]
async fn search_results_name_their_room_and_link_to_the_message() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(DAVID, SECRET).await;
    let page = c.get("/searches?q=deploy").await;
    assert_eq!(page.status, 200);
    let hits = page.body.matches("class=\"search-result\"").count();
    assert!(hits > 0, "{}", page.body);
    assert_eq!(page.body.matches("class=\"message__room\"").count(), hits);
    assert!(page.body.contains(">All Talk</a>"));
    for id in message_ids(&page.body) {
        assert!(
            page.body.contains(&format!(
                "href=\"/rooms/1/@{id}\" class=\"message__permalink\""
            )) || page
                .body
                .contains(&format!("/@{id}\" class=\"message__permalink\"")),
            "hit {id} has no permalink"
        );
    }
    assert!(page.body.contains(&format!("{hits} message")));
}

#[tokio::test]
async fn the_partial_is_the_same_for_every_reader_and_edit_stays_403_for_others() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let (_, for_david) = david.room(1).await;
    let (_, for_jason) = jason.room(1).await;
    let list = |html: &str| {
        let start = html.find("<div id=\"messages_rooms_open_1\"").unwrap();
        let start = start + html[start..].find('>').unwrap();
        let end = html
            .find("<button type=\"button\" class=\"jump-to-newest\"")
            .unwrap();
        html[start..end].to_owned()
    };
    assert_eq!(
        list(&for_david),
        list(&for_jason),
        "the messages differ by reader"
    );
    // Who may edit is told to the page, not written into the partial.
    assert!(for_david.contains("class=\"room room--admin\""));
    assert!(for_jason.contains("class=\"room\""));
    assert!(for_jason.contains("<meta name=\"current-user-role\" content=\"member\">"));
    assert!(for_jason.contains("message__action--creator-only"));
    let davids: i64 =
        sqlx::query_scalar("SELECT id FROM messages WHERE room_id = 1 AND creator_id = 1 LIMIT 1")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    let r = jason.get(&format!("/rooms/1/messages/{davids}/edit")).await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn play_and_emoji_only_posts_are_drawn_as_such() {
    let server = TestServer::start().await;
    let mut c = server.signed_in(JASON, SECRET).await;
    let (csrf, _) = c.room(1).await;
    let r = c.post_message(1, "/play tada", "play-1", &csrf).await;
    assert_eq!(r.status, 200);
    assert!(r.body.contains("message--sound"), "{}", r.body);
    assert!(r.body.contains("data-sound=\"tada\""));
    assert!(r.body.contains("ta-da!"));
    let r = c.post_message(1, "🎉🎉", "emoji-1", &csrf).await;
    assert!(
        r.body.contains("class=\"message message--emoji\""),
        "{}",
        r.body
    );
    // Unknown sounds and hostile names are text, escaped.
    let r = c
        .post_message(1, "/play <img src=x onerror=alert(1)>", "play-2", &csrf)
        .await;
    assert_eq!(r.status, 200);
    assert!(!r.body.contains("data-sound="));
    assert!(!r.body.contains("<img"));
    let r = c
        .post_message(1, "/play nosuchsound", "play-3", &csrf)
        .await;
    assert!(!r.body.contains("data-sound="));
    assert!(r.body.contains("/play nosuchsound"));
}
