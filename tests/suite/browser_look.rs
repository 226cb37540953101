//! The look of the room a team spends its day in. In a real browser (Debian's headless
//! Chromium driven by `playwright-core` through `tests/browser/campfire_look.mjs`, against the
//! `hearth` binary), by element boxes at 1280×900 and at 390×844 on a touch screen, light and
//! dark: one's own message sits at the right with its avatar right of the bubble, another's at
//! the left; messages are bubbles; the "…" button waits for hover on a desktop and shows on a
//! touch screen; the sidebar's rooms are pills and its people faces; the composer is a rounded
//! field with the attach button and a round Send button drawing an arrow, the search button
//! beside it. Screenshots go to `target/artifacts/browser/`. Chromium must be installed: without
//! it the browser test fails, it does not skip.
//!
//! Over real HTTP: the sidebar's faces are the versioned avatars of a direct room's other
//! members (up to four, a group of them for several) and of the people one click away.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};
use crate::common::forms::{csrf, send};
use crate::common::TestServer;
use crate::files::{header, multipart, png, Session};

const DAVID: &str = "david@example.com";
const JASON: &str = "jason@example.com";
const SECRET: &str = "secret123456";

#[test]
fn own_messages_right_bubbles_hover_menu_pills_faces_and_the_round_composer_in_chromium() {
    let stdout = run("campfire_look.mjs", &work_dir("campfire-look"), &[]);
    let mut steps = Vec::new();
    for what in ["1280 light", "390 light", "1280 dark", "390 dark"] {
        for step in [
            "OWN-RIGHT",
            "OTHER-LEFT",
            "BUBBLES",
            "MENU-HOVER",
            "COMPOSER",
            "ROOM-PILLS",
            "PEOPLE-FACES",
            "FOOTER",
        ] {
            steps.push(format!("{step} {what}"));
        }
    }
    steps.push("NO-PAGE-ERRORS".to_owned());
    steps.push("OK".to_owned());
    assert_steps(
        &stdout,
        &steps.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_screenshots(&[
        "campfire-look-1280-light.png",
        "campfire-look-1280-light-menu.png",
        "campfire-look-390-light.png",
        "campfire-look-390-light-sidebar.png",
        "campfire-look-1280-dark.png",
        "campfire-look-1280-dark-menu.png",
        "campfire-look-390-dark.png",
        "campfire-look-390-dark-sidebar.png",
    ]);
}

/// The `<li …>…</li>` of the sidebar entry linking to `href`.
fn entry<'a>(sidebar: &'a str, href: &str) -> &'a str {
    let at = sidebar
        .find(&format!("href=\"{href}\""))
        .unwrap_or_else(|| panic!("no entry for {href}: {sidebar}"));
    let start = sidebar[..at].rfind("<li").expect("an <li>");
    let end = at + sidebar[at..].find("</li>").expect("a </li>");
    &sidebar[start..end]
}

/// The `<li …>…</li>` of the sidebar's person `user_id` (one click from a direct room).
fn person(sidebar: &str, user_id: i64) -> Option<&str> {
    let at = sidebar.find(&format!(
        "class=\"room-link room-link--person\" data-user-id=\"{user_id}\""
    ))?;
    let end = at + sidebar[at..].find("</li>")?;
    Some(&sidebar[at..end])
}

#[tokio::test]
async fn the_sidebar_shows_the_versioned_faces_of_direct_rooms_and_people() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let sidebar = david.get("/users/me/sidebar").await.body;
    // Direct room 5 (David, Jason): Jason's face, his initials (no photo: version 0).
    let jason_room = entry(&sidebar, "/rooms/5");
    assert!(
        jason_room.contains("<img src=\"/users/2/avatar?v=0\"")
            && jason_room.contains("class=\"avatar__image room-link__face\""),
        "{jason_room}"
    );
    assert!(
        !jason_room.contains("room-link__faces--group"),
        "{jason_room}"
    );
    assert!(
        !jason_room.contains("/users/1/avatar"),
        "not one's own face: {jason_room}"
    );
    // Kevin (4) has no direct room with David: offered with his face.
    let kevin = person(&sidebar, 4).expect("Kevin is one click away");
    assert!(
        kevin.contains("<img src=\"/users/4/avatar?v=0\""),
        "{kevin}"
    );
    // Shared rooms are pills without faces.
    assert!(!entry(&sidebar, "/rooms/1").contains("<img"));

    // Jason's photo: the entry's face is its versioned URL, which answers the image.
    let jason = Session::new(&server, JASON, SECRET).await;
    let (content_type, body) = multipart(&[], "user[avatar]", "me.png", &png(300, 300));
    let (status, _, _) = jason
        .send(
            "POST",
            "/users/me/avatar",
            &[("Content-Type", content_type.as_str())],
            &body,
        )
        .await;
    assert_eq!(status, 302);
    let sidebar = david.get("/users/me/sidebar").await.body;
    let jason_room = entry(&sidebar, "/rooms/5");
    let marker = "<img src=\"/users/2/avatar?v=";
    let at = jason_room.find(marker).expect("Jason's face") + marker.len();
    let version: i64 = jason_room[at..at + jason_room[at..].find('"').unwrap()]
        .parse()
        .unwrap();
    assert!(version > 0, "{jason_room}");
    let david_session = Session::new(&server, DAVID, SECRET).await;
    let (status, headers, _) = david_session
        .send("GET", &format!("/users/2/avatar?v={version}"), &[], b"")
        .await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("image/png"));

    // A direct room of four: the three others' faces as a group, in the label's order.
    let token = csrf(&mut david, "/rooms/1").await;
    let r = send(
        &mut david,
        "POST",
        "/rooms/directs",
        &[
            ("user_ids[]", "2"),
            ("user_ids[]", "3"),
            ("user_ids[]", "4"),
        ],
        &token,
    )
    .await;
    assert_eq!(r.status, 302);
    let room = r.header("location").unwrap().to_owned();
    let sidebar = david.get("/users/me/sidebar").await.body;
    let group = entry(&sidebar, &room);
    assert!(
        group.contains("room-link__faces room-link__faces--group"),
        "{group}"
    );
    assert_eq!(
        group
            .matches("class=\"avatar__image room-link__face\"")
            .count(),
        3,
        "{group}"
    );
    let order: Vec<usize> = [
        format!("/users/2/avatar?v={version}"),
        "/users/3/avatar?v=0".to_owned(),
        "/users/4/avatar?v=0".to_owned(),
    ]
    .iter()
    .map(|src| {
        group
            .find(src.as_str())
            .unwrap_or_else(|| panic!("{src} in {group}"))
    })
    .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "Jason, JZ, Kevin: {group}"
    );
}
