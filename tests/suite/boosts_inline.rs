//! Boosts added in place, the notice after a saved change and the author's bio on messages,
//! over real HTTP (and `/cable` for what is broadcast): the "Add a boost" frame of every
//! message, the form alone for a Turbo frame's request, the booster's answer that puts the
//! link back (and only theirs), the no-JavaScript form's way back to the permalink; the
//! `flash` cookie a settings form's redirect leaves, shown once by the next page; the
//! "name – bio" title of an author's name, on pages and in a live post.

use crate::common;

use common::forms::{broadcast_containing, csrf, scalar_i64, scalar_text, send, watch_room};
use common::{csrf_meta, form, TestServer};

const DAVID: &str = "david@example.com";
const JASON: &str = "jason@example.com";
const SECRET: &str = "secret123456";
const TURBO_STREAM: &str = "text/vnd.turbo-stream.html, text/html, application/xhtml+xml";

#[tokio::test]
async fn the_boost_form_opens_in_its_frame_and_the_boosters_answer_puts_the_link_back() {
    let server = TestServer::start().await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let mut watcher = server.signed_in(DAVID, SECRET).await;
    let mut ws = watch_room(&server, &mut watcher, 1).await;
    let id = scalar_i64(&server, "SELECT MIN(id) FROM messages WHERE room_id = 1").await;
    let cid = scalar_text(
        &server,
        &format!("SELECT client_message_id FROM messages WHERE id = {id}"),
    )
    .await;
    let frame = format!("new_boost_message_{cid}");

    // The permalink page: every message has the frame with its "Add a boost" link.
    let page = jason.get(&format!("/rooms/1/@{id}")).await;
    assert_eq!(page.status, 200);
    let opening = format!(
        "<turbo-frame id=\"{frame}\" class=\"boosts__new\"><a href=\"/messages/{id}/boosts/new\" \
         class=\"btn btn--plain boosts__add\" title=\"Add a boost\">"
    );
    assert!(page.body.contains(&opening), "no add-a-boost frame");
    assert!(page
        .body
        .contains("<span class=\"visually-hidden\">Add a boost</span></a></turbo-frame>"));
    let token = csrf_meta(&page.body);

    // A Turbo frame's request gets the frame alone: the form, no layout.
    let framed = jason
        .request(
            "GET",
            &format!("/messages/{id}/boosts/new"),
            &[("Turbo-Frame", &frame)],
            b"",
        )
        .await;
    assert_eq!(framed.status, 200);
    let body = framed.body.trim_start();
    assert!(
        body.starts_with(&format!("<turbo-frame id=\"{frame}\"")),
        "{body}"
    );
    assert!(
        !body.contains("<html") && !body.contains("data-turbo=\"false\""),
        "{body}"
    );
    assert!(body.contains(&format!(
        "<form action=\"/messages/{id}/boosts\" method=\"post\""
    )));
    assert!(body.contains("name=\"boost[content]\" required maxlength=\"16\""));
    assert!(body.contains(&format!(
        "href=\"/rooms/1/@{id}\" class=\"btn btn--plain boost-form__cancel\" data-turbo-frame=\"_top\" data-boost-cancel"
    )));

    // Without Turbo: the page, its form posting outside Turbo.
    let alone = jason.get(&format!("/messages/{id}/boosts/new")).await;
    assert_eq!(alone.status, 200);
    assert!(alone.body.starts_with("<!DOCTYPE html>"));
    assert!(alone.body.contains(&format!("<turbo-frame id=\"{frame}\"")));
    assert!(alone.body.contains("data-turbo=\"false\""));

    // Sent from the frame: the append and the link back in the frame, for the booster only.
    let boost_path = format!("/messages/{id}/boosts");
    let r = jason
        .post_form(
            &boost_path,
            &form(&[
                ("boost[content]", "inline!"),
                ("authenticity_token", &token),
            ]),
            &[("Accept", TURBO_STREAM), ("Turbo-Frame", &frame)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("text/vnd.turbo-stream.html"));
    assert!(r.body.contains(&format!(
        "<turbo-stream action=\"append\" target=\"boosts_message_{cid}\">"
    )));
    assert!(r.body.contains("inline!"));
    let update = format!(
        "<turbo-stream action=\"update\" target=\"{frame}\"><template><a href=\"/messages/{id}/boosts/new\""
    );
    assert!(r.body.contains(&update), "{}", r.body);
    let broadcast = broadcast_containing(&mut ws, "inline!").await;
    assert!(broadcast.contains(&format!("target=\"boosts_message_{cid}\"")));
    assert!(
        !broadcast.contains(&frame),
        "the frame's reset went to everyone: {broadcast}"
    );

    // From the menu's picker (no frame): the append alone.
    let r = jason
        .post_form(
            &boost_path,
            &form(&[("boost[content]", "👍"), ("authenticity_token", &token)]),
            &[("Accept", TURBO_STREAM)],
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(!r.body.contains("action=\"update\""), "{}", r.body);

    // Without Turbo: back to the message's permalink, not the room's latest page.
    let r = send(
        &mut jason,
        "POST",
        &boost_path,
        &[("boost[content]", "no js")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(
        r.header("location"),
        Some(format!("/rooms/1/@{id}").as_str())
    );
    assert_eq!(
        scalar_i64(
            &server,
            &format!("SELECT COUNT(*) FROM boosts WHERE message_id = {id} AND booster_id = 2")
        )
        .await,
        3
    );

    // Someone outside the room gets no form.
    let mut outsider = server.client();
    let r = outsider
        .request(
            "GET",
            &format!("/messages/{id}/boosts/new"),
            &[("Turbo-Frame", &frame)],
            b"",
        )
        .await;
    assert_ne!(r.status, 200);
}

#[tokio::test]
async fn a_saved_notice_is_shown_by_the_next_page_only() {
    let server = TestServer::start().await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let token = csrf(&mut jason, "/users/me/profile").await;
    assert!(!jason
        .get("/users/me/profile")
        .await
        .body
        .contains("flash-notice"));

    let r = send(
        &mut jason,
        "PATCH",
        "/users/me/profile",
        &[("user[name]", "Jason"), ("user[bio]", "Ships on Fridays.")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header("location"), Some("/users/me/profile"));
    assert!(
        r.headers_named("set-cookie")
            .iter()
            .any(|c| c.starts_with("flash=saved;") && c.contains("HttpOnly")),
        "{:?}",
        r.headers_named("set-cookie")
    );
    assert_eq!(jason.cookie("flash"), Some("saved"));

    // A request that draws no page leaves the notice waiting.
    let css = jason.get("/assets/hearth.css").await;
    assert_eq!(css.status, 200);
    assert_eq!(jason.cookie("flash"), Some("saved"));

    let shown = jason.get("/users/me/profile").await;
    assert_eq!(shown.status, 200);
    assert!(
        shown
            .body
            .contains("<div class=\"flash-notice\" role=\"status\">"),
        "no notice"
    );
    assert!(shown.body.contains("</svg> Saved</span></div>"));
    assert!(shown
        .headers_named("set-cookie")
        .iter()
        .any(|c| c.starts_with("flash=;") && c.contains("max-age=0")));
    assert_eq!(jason.cookie("flash"), None);
    let again = jason.get("/users/me/profile").await;
    assert!(!again.body.contains("flash-notice"), "shown twice");

    // The account (administrators) and a room's settings leave it too.
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/edit").await;
    let account = scalar_text(&server, "SELECT name FROM accounts LIMIT 1").await;
    let r = send(
        &mut david,
        "PATCH",
        "/account",
        &[("account[name]", &account)],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert!(david
        .get("/account/edit")
        .await
        .body
        .contains("flash-notice"));
    let room = scalar_text(&server, "SELECT name FROM rooms WHERE id = 1").await;
    let r = send(
        &mut david,
        "PATCH",
        "/rooms/opens/1",
        &[("room[name]", &room)],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header("location"), Some("/rooms/1"));
    assert!(david.get("/rooms/1").await.body.contains("flash-notice"));
    assert!(!david.get("/rooms/1").await.body.contains("flash-notice"));

    // A cookie naming no known notice shows nothing.
    jason.cookies.push(("flash".into(), "%3Cb%3Ehi".into()));
    let page = jason.get("/users/me/profile").await;
    assert!(!page.body.contains("flash-notice") && !page.body.contains("<b>hi"));
}

#[tokio::test]
async fn an_authors_name_has_their_bio_as_its_title() {
    let server = TestServer::start().await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let mut ws = watch_room(&server, &mut jason, 1).await;
    let bio = scalar_text(&server, "SELECT bio FROM users WHERE id = 1").await;
    let name = scalar_text(&server, "SELECT name FROM users WHERE id = 1").await;
    assert!(!bio.is_empty());
    let davids = scalar_i64(
        &server,
        "SELECT MAX(id) FROM messages WHERE room_id = 1 AND creator_id = 1",
    )
    .await;
    let page = jason.get(&format!("/rooms/1/@{davids}")).await;
    let titled =
        format!("<strong class=\"message__author\" title=\"{name} – {bio}\">{name}</strong>");
    assert!(page.body.contains(&titled), "no bio title");

    // Someone without a bio: the name alone.
    let token = csrf_meta(&page.body);
    let r = send(
        &mut jason,
        "PATCH",
        "/users/me/profile",
        &[("user[name]", "Jason"), ("user[bio]", "")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    let posted = jason
        .post_message(1, "no bio here", "bio-test-1", &token)
        .await;
    assert!(posted.status < 400, "{}", posted.body);
    let live = broadcast_containing(&mut ws, "no bio here").await;
    assert!(
        live.contains("<strong class=\"message__author\" title=\"Jason\">Jason</strong>"),
        "{live}"
    );

    // A live post carries its author's bio.
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/users/me/profile").await;
    let posted = david
        .post_message(1, "with a bio", "bio-test-2", &token)
        .await;
    assert!(posted.status < 400, "{}", posted.body);
    let live = broadcast_containing(&mut ws, "with a bio").await;
    assert!(live.contains(&titled), "{live}");
}
