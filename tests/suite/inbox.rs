//! The activity inbox over real HTTP and `/cable`: its four kinds (a mention, a reply in a
//! followed thread, a boost on one's message, a direct message) newest first and one kind per
//! tab; an item read in its room (presence, as a page's `PresenceChannel` makes it) is read in
//! the inbox; "Mark all read" reads the rest and sends the badge on `user_<id>_inbox`; only the
//! owner sees their inbox, and a member removed from a room loses its items.

use crate::common;

use std::time::Duration;

use common::forms::{
    broadcast_containing, csrf, direct_room, keep_only_its_editor, mention, post_html, scalar_i64,
    send,
};
use common::{confirm, connect_with, subscribe_cmd, text, Client, TestServer};

const SECRET: &str = "secret123456";
const T: Duration = Duration::from_secs(10);

/// `/inbox/count`'s number for `c`.
async fn unread(c: &mut Client) -> i64 {
    let r = c.get("/inbox/count").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    v["unread"].as_i64().expect("a count")
}

/// The inbox page (at `query`) of `c`.
async fn inbox(c: &mut Client, query: &str) -> String {
    let r = c.get(&format!("/inbox{query}")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// Where `needle` is on `page`; panics when it is not there.
fn at(page: &str, needle: &str) -> usize {
    page.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} missing from {page}"))
}

/// The id of the last message of room `room`.
async fn last_message(server: &TestServer, room: i64) -> i64 {
    scalar_i64(
        server,
        &format!("SELECT MAX(id) FROM messages WHERE room_id = {room}"),
    )
    .await
}

/// A little time between steps, so that their items' times differ.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}

#[tokio::test]
async fn the_four_kinds_newest_first_and_one_kind_per_tab() {
    let server = TestServer::start().await;
    let mut david = server.signed_in("david@example.com", SECRET).await;
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let mut kevin = server.signed_in("kevin@example.com", SECRET).await;
    // A plain post is no item; a mention of Jason is.
    post_html(&mut david, 1, "<div>plain news for all</div>", "plain").await;
    post_html(&mut david, 1, &mention(&server, 2, "see the deploy"), "m1").await;
    let mentioned = last_message(&server, 1).await;
    tick().await;
    // A boost by David on Jason's message.
    post_html(&mut jason, 1, "<div>shipped the fix</div>", "j1").await;
    let boosted = last_message(&server, 1).await;
    let token = csrf(&mut david, "/rooms/1").await;
    let r = send(
        &mut david,
        "POST",
        &format!("/messages/{boosted}/boosts"),
        &[("boost[content]", "🎉")],
        &token,
    )
    .await;
    assert!(r.status < 400, "{}", r.body);
    tick().await;
    // A direct message from Kevin.
    let dm = direct_room(&mut kevin, "2").await;
    post_html(&mut kevin, dm, "<div>call me later</div>", "k1").await;
    let direct = last_message(&server, dm).await;
    tick().await;
    // A thread on Jason's message: David's reply is one for Jason (its parent's author).
    let token = csrf(&mut david, "/rooms/1").await;
    let r = send(
        &mut david,
        "POST",
        &format!("/messages/{boosted}/thread"),
        &[],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let thread: i64 = r.header("location").unwrap()["/rooms/".len()..]
        .parse()
        .unwrap();
    post_html(&mut david, thread, "<div>which fix?</div>", "d-reply").await;
    let replied = last_message(&server, thread).await;

    let page = inbox(&mut jason, "").await;
    assert!(!page.contains("plain news for all"), "{page}");
    let order = [
        at(&page, &format!("href=\"/rooms/{thread}/@{replied}\"")),
        at(&page, &format!("href=\"/rooms/{dm}/@{direct}\"")),
        at(&page, &format!("href=\"/rooms/1/@{boosted}\"")),
        at(&page, &format!("href=\"/rooms/1/@{mentioned}\"")),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{page}");
    for text in [
        "replied in a thread you follow",
        "which fix?",
        "Thread in All Talk",
        "wrote to you",
        "call me later",
        "boosted your message",
        "🎉",
        "mentioned you",
        "see the deploy",
    ] {
        assert!(page.contains(text), "{text} missing");
    }
    assert_eq!(page.matches("inbox-item--unread").count(), 4, "{page}");
    assert_eq!(unread(&mut jason).await, 4);
    // The sidebar's badge says the same.
    let sidebar = jason.get("/users/me/sidebar").await.body;
    assert!(sidebar.contains("data-count=\"4\""), "{sidebar}");

    // One kind per tab; an unknown kind is refused.
    for (kind, href) in [
        ("mentions", format!("/rooms/1/@{mentioned}")),
        ("replies", format!("/rooms/{thread}/@{replied}")),
        ("boosts", format!("/rooms/1/@{boosted}")),
        ("direct", format!("/rooms/{dm}/@{direct}")),
    ] {
        let tab = inbox(&mut jason, &format!("?kind={kind}")).await;
        assert_eq!(
            tab.matches("class=\"inbox-item ").count(),
            1,
            "{kind}: {tab}"
        );
        assert!(tab.contains(&format!("href=\"{href}\"")), "{kind}: {tab}");
    }
    let r = jason.get("/inbox?kind=everything").await;
    assert_eq!(r.status, 422);
    assert!(
        r.body.contains(hearth::web::inbox::UNKNOWN_KIND),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn an_item_read_in_its_room_is_read_and_mark_all_read_reads_the_rest_in_every_tab() {
    let server = TestServer::start().await;
    let mut david = server.signed_in("david@example.com", SECRET).await;
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let mut kevin = server.signed_in("kevin@example.com", SECRET).await;
    post_html(&mut david, 1, &mention(&server, 2, "standup?"), "m1").await;
    let dm = direct_room(&mut kevin, "2").await;
    post_html(&mut kevin, dm, "<div>lunch?</div>", "k1").await;
    assert_eq!(unread(&mut jason).await, 2);

    // Jason opens All Talk (its page's presence): the mention is read there, so here too.
    let mut ws = connect_with(&server, &jason).await;
    let presence = r#"{"channel":"PresenceChannel","room_id":1}"#;
    ws.send_text(&subscribe_cmd(presence)).await;
    let deadline = tokio::time::Instant::now() + T;
    while ws.next_non_ping(T).await != text(&confirm(presence)) {
        assert!(tokio::time::Instant::now() < deadline, "no presence");
    }
    assert_eq!(unread(&mut jason).await, 1);
    let page = inbox(&mut jason, "").await;
    assert_eq!(page.matches("inbox-item--unread").count(), 1, "{page}");
    let unread_at = page.find("inbox-item--unread").unwrap();
    assert!(page[unread_at..].contains("lunch?"), "{page}");

    // Another tab of Jason's follows his inbox stream; "Mark all read" in this one clears its
    // badge there too.
    let mut other = server.signed_in("jason@example.com", SECRET).await;
    let page = inbox(&mut other, "").await;
    let signed = common::attr_after(&page, "signed-stream-name=\"").expect("stream");
    let identifier =
        serde_json::json!({"channel": "Turbo::StreamsChannel", "signed_stream_name": signed})
            .to_string();
    let mut tab = connect_with(&server, &other).await;
    tab.send_text(&subscribe_cmd(&identifier)).await;
    assert_eq!(tab.next_non_ping(T).await, text(&confirm(&identifier)));
    let token = csrf(&mut jason, "/inbox").await;
    let r = send(&mut jason, "POST", "/inbox/read", &[], &token).await;
    assert_eq!(r.status, 302, "{}", r.body);
    let badge = broadcast_containing(&mut tab, "target=\"inbox_badge\"").await;
    assert!(badge.contains("data-count=\"0\" hidden"), "{badge}");
    assert_eq!(unread(&mut jason).await, 0);
    assert_eq!(
        inbox(&mut jason, "")
            .await
            .matches("inbox-item--unread")
            .count(),
        0
    );
    // The rooms' own marks are left as they were: the direct room is still unread.
    assert_eq!(
        scalar_i64(
            &server,
            &format!("SELECT unread_at IS NOT NULL FROM memberships WHERE room_id = {dm} AND user_id = 2"),
        )
        .await,
        1
    );

    // What comes after is unread again; a boost sends the new badge at once.
    tokio::time::sleep(Duration::from_millis(5)).await;
    post_html(&mut kevin, dm, "<div>still on?</div>", "k2").await;
    assert_eq!(unread(&mut jason).await, 1);
    post_html(&mut jason, dm, "<div>yes</div>", "j1").await;
    let mine = last_message(&server, dm).await;
    let token = csrf(&mut kevin, &format!("/rooms/{dm}")).await;
    let r = send(
        &mut kevin,
        "POST",
        &format!("/messages/{mine}/boosts"),
        &[("boost[content]", "👍")],
        &token,
    )
    .await;
    assert!(r.status < 400, "{}", r.body);
    let badge = broadcast_containing(&mut tab, "target=\"inbox_badge\"").await;
    assert!(badge.contains("data-count=\"2\""), "{badge}");
}

#[tokio::test]
async fn only_the_owner_sees_their_inbox_and_a_removed_member_loses_its_items() {
    let server = TestServer::start().await;
    // Signed out: sent to sign in, nothing told.
    let mut nobody = server.client();
    for path in ["/inbox", "/inbox/count"] {
        let r = nobody.get(path).await;
        assert_eq!(r.status, 302, "{path}");
        assert_eq!(r.header("location"), Some("/session/new"), "{path}");
    }
    let mut david = server.signed_in("david@example.com", SECRET).await;
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let mut kevin = server.signed_in("kevin@example.com", SECRET).await;
    // A closed room of David and Jason, where David mentions Jason.
    let token = csrf(&mut david, "/rooms/closeds/new").await;
    let r = send(
        &mut david,
        "POST",
        "/rooms/closeds",
        &[("room[name]", "Plans"), ("user_ids[]", "2")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let closed: i64 = r.header("location").unwrap()["/rooms/".len()..]
        .parse()
        .unwrap();
    post_html(
        &mut david,
        closed,
        &mention(&server, 2, "the secret plan"),
        "m1",
    )
    .await;
    assert!(inbox(&mut jason, "").await.contains("the secret plan"));
    // Nobody else's inbox shows it, nor its room.
    for c in [&mut david, &mut kevin] {
        let page = inbox(c, "").await;
        assert!(!page.contains("the secret plan"), "{page}");
        assert!(!page.contains(&format!("/rooms/{closed}/")), "{page}");
    }
    assert_eq!(unread(&mut kevin).await, 0);
    // Jason's stream name is signed for him alone: another user's page carries its own.
    let kevin_page = inbox(&mut kevin, "").await;
    let jason_page = inbox(&mut jason, "").await;
    let stream = |page: &str| common::attr_after(page, "signed-stream-name=\"").unwrap();
    assert_ne!(stream(&kevin_page), stream(&jason_page));

    // David takes Jason out of the room: the item goes with the membership.
    keep_only_its_editor(&mut david, closed).await;
    let page = inbox(&mut jason, "").await;
    assert!(!page.contains("the secret plan"), "{page}");
    assert_eq!(unread(&mut jason).await, 0);
}

/// A tab present in a room before the person's membership row exists (a thread is open to its
/// parent room's members before they follow it) is not taken as written: once the row is made
/// (a mention, a follow) and marked unread, the person's next tab in the room reads it.
#[tokio::test]
async fn a_membership_made_while_a_tab_is_present_is_read_by_the_next_tab() {
    let server = TestServer::start().await;
    let pool = &server.state.db.pool;
    let presence = &server.state.sockets.presence;
    let david = scalar_i64(
        &server,
        "SELECT id FROM users WHERE email_address = 'david@example.com'",
    )
    .await;
    let room = scalar_i64(
        &server,
        &format!("SELECT MAX(room_id) FROM memberships WHERE user_id = {david}"),
    )
    .await;
    let row = format!("room_id = {room} AND user_id = {david}");
    sqlx::query("DELETE FROM memberships WHERE room_id = ? AND user_id = ?")
        .bind(room)
        .bind(david)
        .execute(pool)
        .await
        .unwrap();
    presence.subscribed(room, david, 1).await.unwrap();
    sqlx::query(
        "INSERT INTO memberships (room_id, user_id, involvement, connections, unread_at, \
         created_at, updated_at) VALUES (?, ?, 'everything', 0, 1, 1, 1)",
    )
    .bind(room)
    .bind(david)
    .execute(pool)
    .await
    .unwrap();
    presence.subscribed(room, david, 2).await.unwrap();
    let state =
        format!("SELECT connections * 10 + (unread_at IS NULL) FROM memberships WHERE {row}");
    assert_eq!(scalar_i64(&server, &state).await, 21, "two tabs, read");
}
