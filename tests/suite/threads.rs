//! Threads over real HTTP and `/cable`: "Reply in thread" starting (or finding) a message's
//! thread, a reply updating the parent's summary live in its room's open pages, who follows a
//! thread, "also send to the room", search, and the permission rules: only members of the
//! parent's room see or reply (a closed room's thread goes with its membership, on open
//! sockets at once), no reply to a deleted parent, no thread of a thread, none after 30 days
//! without a reply.

use crate::common;

use std::time::Duration;

use common::forms::{
    broadcast_containing, csrf, keep_only_its_editor, scalar_i64, scalar_text, send, watch_room,
};
use common::{connect_as, reject, subscribe_cmd, TestServer, Ws, WsEvent};

const DAVID: &str = "david@example.com";
const JASON: &str = "jason@example.com";
const JZ: &str = "jz@example.com";
const KEVIN: &str = "kevin@example.com";
const SECRET: &str = "secret123456";
const T: Duration = Duration::from_secs(10);

/// The room id a 302 points at (`/rooms/{id}`).
fn room_of(r: &common::Response) -> i64 {
    assert_eq!(r.status, 302, "{}", r.body);
    r.header("location")
        .and_then(|l| l.strip_prefix("/rooms/"))
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("a room location: {:?}", r.header("location")))
}

/// Posts `text` in room `room` as `c` (a form post, with `extra` fields); returns the status.
async fn reply(
    c: &mut common::Client,
    room: i64,
    text: &str,
    extra: &[(&str, &str)],
) -> common::Response {
    let token = csrf(c, "/rooms/opens/new").await;
    let mut pairs = vec![("message[body]", text)];
    pairs.extend_from_slice(extra);
    send(
        c,
        "POST",
        &format!("/rooms/{room}/messages"),
        &pairs,
        &token,
    )
    .await
}

async fn involvement(server: &TestServer, room: i64, user: i64) -> String {
    scalar_text(
        server,
        &format!(
            "SELECT COALESCE((SELECT involvement FROM memberships WHERE room_id = {room} \
             AND user_id = {user}), 'none')"
        ),
    )
    .await
}

/// Reads frames until one contains `needle`; panics after `T`.
async fn frame_containing(ws: &mut Ws, needle: &str) -> String {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_non_ping(left).await {
            Some(WsEvent::Text(t)) if t.contains(needle) => return t,
            Some(WsEvent::Text(_)) => {}
            other => panic!("expected a frame with {needle:?}, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_reply_in_a_thread_updates_the_parent_live_and_its_people_follow_it() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let mut kevin = server.signed_in(KEVIN, SECRET).await;
    let mut watching = watch_room(&server, &mut david, 1).await;
    // A message of David's in All Talk is the parent.
    assert_eq!(reply(&mut david, 1, "Lunch plans?", &[]).await.status, 302);
    let parent = scalar_i64(&server, "SELECT MAX(id) FROM messages WHERE room_id = 1").await;
    let parent_cid = scalar_text(
        &server,
        &format!("SELECT client_message_id FROM messages WHERE id = {parent}"),
    )
    .await;

    // "Reply in thread" in the message menu; pressed again, the same thread.
    let page = jason.get("/rooms/1").await;
    assert!(page
        .body
        .contains(&format!("action=\"/messages/{parent}/thread\"")));
    let token = csrf(&mut jason, "/rooms/1").await;
    let thread = room_of(
        &send(
            &mut jason,
            "POST",
            &format!("/messages/{parent}/thread"),
            &[],
            &token,
        )
        .await,
    );
    let again = send(
        &mut jason,
        "POST",
        &format!("/messages/{parent}/thread"),
        &[],
        &token,
    )
    .await;
    assert_eq!(room_of(&again), thread);
    let page = jason.get(&format!("/rooms/{thread}")).await;
    assert_eq!(page.status, 200);
    for part in [
        "room--thread",
        "Lunch plans?",
        "in All Talk",
        ">Follow</button>",
        "Also send to All Talk",
        &format!("action=\"/rooms/{thread}/messages\""),
    ] {
        assert!(
            page.body.contains(part),
            "{part} missing from the thread page"
        );
    }

    // Jason replies: the parent's summary is replaced in All Talk's open pages.
    assert_eq!(reply(&mut jason, thread, "Tacos!", &[]).await.status, 302);
    let target = format!("action=\"replace\" target=\"thread_summary_message_{parent_cid}\"");
    let summary = broadcast_containing(&mut watching, &target).await;
    assert!(summary.contains("1 reply"), "{summary}");
    assert!(
        summary.contains(&format!("href=\"/rooms/{thread}\""))
            && summary.contains("/users/2/avatar"),
        "{summary}"
    );
    // The replier and the parent's author follow it; Kevin does not, yet sees it.
    assert_eq!(involvement(&server, thread, 2).await, "everything");
    assert_eq!(involvement(&server, thread, 1).await, "everything");
    assert_eq!(involvement(&server, thread, 4).await, "none");
    assert_eq!(kevin.get(&format!("/rooms/{thread}")).await.status, 200);
    // David had not seen the reply: the thread is unread for him, and in his sidebar.
    let sidebar = david.get("/users/me/sidebar").await.body;
    assert!(
        sidebar.contains(&format!("id=\"list_rooms_thread_{thread}\"")),
        "{sidebar}"
    );
    assert!(sidebar.contains("Lunch plans?"));

    // Also sent to the room: a message of its own in All Talk; the summary counts 2.
    let before = scalar_i64(&server, "SELECT COUNT(*) FROM messages WHERE room_id = 1").await;
    let r = reply(
        &mut kevin,
        thread,
        "Burritos",
        &[("also_send_to_room", "1")],
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM messages WHERE room_id = 1").await,
        before + 1
    );
    let summary = broadcast_containing(&mut watching, "2 replies").await;
    assert!(summary.contains("/users/4/avatar") && summary.contains("/users/2/avatar"));
    // The room page shows the summary too (and its catch-up replaces the parent).
    let page = david.get("/rooms/1").await.body;
    assert!(page.contains("2 replies") && page.contains(&format!("href=\"/rooms/{thread}\"")));

    // Search finds a reply for a member of the parent's room.
    let jz_hits = server
        .signed_in(JZ, SECRET)
        .await
        .get("/searches?q=Tacos")
        .await
        .body;
    assert!(jz_hits.contains("Tacos"), "search missed the thread reply");

    // No thread of a thread.
    let in_thread = scalar_i64(
        &server,
        &format!("SELECT MIN(id) FROM messages WHERE room_id = {thread}"),
    )
    .await;
    let r = send(
        &mut jason,
        "POST",
        &format!("/messages/{in_thread}/thread"),
        &[],
        &token,
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.body);

    // Follow and unfollow.
    let token = csrf(&mut kevin, &format!("/rooms/{thread}")).await;
    let path = format!("/rooms/{thread}/follow");
    assert_eq!(
        room_of(&send(&mut kevin, "DELETE", &path, &[], &token).await),
        thread
    );
    assert_eq!(involvement(&server, thread, 4).await, "invisible");
    let page = kevin.get(&format!("/rooms/{thread}")).await.body;
    assert!(page.contains(">Follow</button>"));
    assert_eq!(
        room_of(&send(&mut kevin, "POST", &path, &[], &token).await),
        thread
    );
    assert_eq!(involvement(&server, thread, 4).await, "everything");
    assert!(kevin
        .get(&format!("/rooms/{thread}"))
        .await
        .body
        .contains(">Unfollow</button>"));
    // A room that is no thread cannot be followed.
    assert_eq!(
        send(&mut kevin, "POST", "/rooms/1/follow", &[], &token)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn only_the_parent_rooms_members_see_a_thread_and_refused_replies_store_nothing() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let mut jz = server.signed_in(JZ, SECRET).await;
    // A closed room of David and Jason, a message of Jason's and its thread.
    let token = csrf(&mut david, "/rooms/closeds/new").await;
    let closed = room_of(
        &send(
            &mut david,
            "POST",
            "/rooms/closeds",
            &[("room[name]", "Plans"), ("user_ids[]", "2")],
            &token,
        )
        .await,
    );
    assert_eq!(
        reply(&mut jason, closed, "Secret plan", &[]).await.status,
        302
    );
    let parent = scalar_i64(
        &server,
        &format!("SELECT MAX(id) FROM messages WHERE room_id = {closed}"),
    )
    .await;
    let token = csrf(&mut jason, &format!("/rooms/{closed}")).await;
    let thread = room_of(
        &send(
            &mut jason,
            "POST",
            &format!("/messages/{parent}/thread"),
            &[],
            &token,
        )
        .await,
    );
    assert_eq!(reply(&mut jason, thread, "Step one", &[]).await.status, 302);

    // JZ is not in the room: nothing of the thread answers him.
    let jz_token = csrf(&mut jz, "/rooms/1").await;
    assert_eq!(jz.get(&format!("/rooms/{thread}")).await.status, 404);
    assert_eq!(reply(&mut jz, thread, "let me in", &[]).await.status, 404);
    for path in [
        format!("/messages/{parent}/thread"),
        format!("/rooms/{thread}/follow"),
    ] {
        assert_eq!(
            send(&mut jz, "POST", &path, &[], &jz_token).await.status,
            404,
            "{path}"
        );
    }
    assert!(!jz.get("/searches?q=Step").await.body.contains("Step one"));
    assert_eq!(
        scalar_i64(
            &server,
            &format!("SELECT COUNT(*) FROM messages WHERE room_id = {thread}")
        )
        .await,
        1
    );

    // Jason watches the thread; David removes him from the room: the thread goes at once.
    let (_jc, mut jason_ws) = connect_as(&server, JASON, SECRET).await;
    let room = hearth::db::rooms::find(&server.state.db.pool, thread)
        .await
        .unwrap()
        .unwrap();
    let name = hearth::streams::room_messages(&server.state.config.gid_app, &room);
    let identifier = serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": server.state.keys.signer.sign(&name)}).to_string();
    jason_ws.send_text(&subscribe_cmd(&identifier)).await;
    frame_containing(&mut jason_ws, "confirm_subscription").await;
    keep_only_its_editor(&mut david, closed).await;
    let rejected = frame_containing(&mut jason_ws, "reject_subscription").await;
    assert_eq!(rejected, reject(&identifier));
    assert_eq!(involvement(&server, thread, 2).await, "none");
    assert_eq!(jason.get(&format!("/rooms/{thread}")).await.status, 404);
    assert_eq!(
        reply(&mut jason, thread, "still here?", &[]).await.status,
        404
    );

    // A deleted parent: the thread stays readable and refuses replies.
    let token = csrf(&mut david, &format!("/rooms/{closed}")).await;
    let r = send(
        &mut david,
        "DELETE",
        &format!("/rooms/{closed}/messages/{parent}"),
        &[],
        &token,
    )
    .await;
    assert!(r.status == 302 || r.status == 200, "{}", r.body);
    let page = david.get(&format!("/rooms/{thread}")).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("was deleted") && page.body.contains("Step one"));
    let r = reply(&mut david, thread, "too late", &[]).await;
    assert_eq!(r.status, 422);
    assert!(r.body.contains("was deleted"), "{}", r.body);
    assert_eq!(
        scalar_i64(
            &server,
            &format!("SELECT COUNT(*) FROM messages WHERE room_id = {thread}")
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_thread_without_a_reply_for_30_days_closes_and_leaves_the_sidebar() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    assert_eq!(reply(&mut david, 2, "Cats or dogs?", &[]).await.status, 302);
    let parent = scalar_i64(&server, "SELECT MAX(id) FROM messages WHERE room_id = 2").await;
    let token = csrf(&mut david, "/rooms/2").await;
    let thread = room_of(
        &send(
            &mut david,
            "POST",
            &format!("/messages/{parent}/thread"),
            &[],
            &token,
        )
        .await,
    );
    assert_eq!(reply(&mut david, thread, "Dogs", &[]).await.status, 302);
    let entry = format!("id=\"list_rooms_thread_{thread}\"");
    assert!(david.get("/users/me/sidebar").await.body.contains(&entry));
    // 29 days: still open.
    let day = 24 * 60 * 60 * 1000_i64;
    let age = |days: i64| {
        format!(
            "UPDATE rooms SET updated_at = updated_at - {} WHERE id = {thread} RETURNING id",
            days * day
        )
    };
    scalar_i64(&server, &age(29)).await;
    assert!(david.get("/users/me/sidebar").await.body.contains(&entry));
    // A reply moves the clock on: back 30 days from it, the thread is closed.
    assert_eq!(reply(&mut david, thread, "Cats", &[]).await.status, 302);
    scalar_i64(&server, &age(30)).await;
    let r = reply(&mut david, thread, "Hamsters", &[]).await;
    assert_eq!(r.status, 422);
    assert!(r.body.contains("closed"), "{}", r.body);
    assert!(!david.get("/users/me/sidebar").await.body.contains(&entry));
    let page = david.get(&format!("/rooms/{thread}")).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("room--thread-closed") && page.body.contains("Cats"));
    assert_eq!(
        scalar_i64(
            &server,
            &format!("SELECT COUNT(*) FROM messages WHERE room_id = {thread}")
        )
        .await,
        2
    );
}

#[tokio::test]
async fn a_bot_mentioned_in_a_thread_gets_the_threads_path_and_answers_in_it() {
    let server = TestServer::start().await;
    let (url, mut hits) =
        common::webhooks::receiver((200, "text/plain", b"on it".to_vec()), Duration::ZERO, None)
            .await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/account/bots").await;
    let r = send(
        &mut david,
        "POST",
        "/account/bots",
        &[("user[name]", "Helper"), ("user[webhook_url]", &url)],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let bot = scalar_i64(
        &server,
        "SELECT id FROM users WHERE name = 'Helper' AND role = 'bot'",
    )
    .await;
    let key = format!(
        "{bot}-{}",
        scalar_text(
            &server,
            &format!("SELECT bot_token FROM users WHERE id = {bot}")
        )
        .await
    );
    assert_eq!(
        reply(&mut david, 1, "Is the build green?", &[])
            .await
            .status,
        302
    );
    let parent = scalar_i64(&server, "SELECT MAX(id) FROM messages WHERE room_id = 1").await;
    let token = csrf(&mut david, "/rooms/1").await;
    let thread = room_of(
        &send(
            &mut david,
            "POST",
            &format!("/messages/{parent}/thread"),
            &[],
            &token,
        )
        .await,
    );

    // A mention of the bot in the thread: the payload's room is the thread, with its parent.
    let sgid = server
        .state
        .keys
        .sgids
        .sign("User", bot, hearth::rails::ATTACHABLE_PURPOSE);
    let html = format!(
        "<div><action-text-attachment sgid=\"{sgid}\" content-type=\"application/vnd.campfire.mention\"></action-text-attachment> check it</div>"
    );
    let r = reply(
        &mut david,
        thread,
        &html,
        &[("message[body_format]", "html")],
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let (_, body) = tokio::time::timeout(T, hits.recv())
        .await
        .expect("the webhook")
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["room"]["id"], thread);
    assert_eq!(v["room"]["path"], format!("/rooms/{thread}/{key}/messages"));
    assert_eq!(v["thread"]["id"], thread);
    assert_eq!(
        v["thread"]["path"],
        format!("/rooms/{thread}/{key}/messages")
    );
    assert_eq!(v["thread"]["parent"]["message_id"], parent);
    assert_eq!(v["thread"]["parent"]["room_id"], 1);
    assert_eq!(v["thread"]["parent"]["path"], format!("/rooms/1/@{parent}"));
    assert_eq!(v["message"]["body"]["plain"], "check it");

    // Its answer lands in the thread; so does a post through the bot API with the thread's id.
    let answered =
        format!("SELECT COUNT(*) FROM messages WHERE room_id = {thread} AND creator_id = {bot}");
    let deadline = tokio::time::Instant::now() + T;
    while scalar_i64(&server, &answered).await < 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no answer in the thread"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = server
        .client()
        .request(
            "POST",
            &format!("/rooms/{thread}/{key}/messages"),
            &[],
            b"all green",
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r
        .header("location")
        .is_some_and(|l| l.starts_with(&format!("/rooms/{thread}/@"))));
    assert_eq!(scalar_i64(&server, &answered).await, 2);
    // A message outside threads keeps Campfire's payload: no thread key.
    let r = reply(&mut david, 1, &html, &[("message[body_format]", "html")]).await;
    assert_eq!(r.status, 302);
    let (_, body) = tokio::time::timeout(T, hits.recv())
        .await
        .expect("the webhook")
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["room"]["id"], 1);
    assert!(v.get("thread").is_none(), "{v}");
}

#[tokio::test]
async fn a_bookmark_lists_its_message_for_its_owner_only_and_goes_live_from_every_list() {
    let server = TestServer::start().await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let mut kevin = server.signed_in(KEVIN, SECRET).await;
    assert_eq!(
        reply(&mut jason, 1, "Remember the milk", &[]).await.status,
        302
    );
    let id = scalar_i64(&server, "SELECT MAX(id) FROM messages WHERE room_id = 1").await;
    assert!(jason
        .get("/rooms/1")
        .await
        .body
        .contains(&format!("action=\"/messages/{id}/bookmark\"")));
    let token = csrf(&mut jason, "/rooms/1").await;
    let path = format!("/messages/{id}/bookmark");
    for _ in 0..2 {
        let r = send(&mut jason, "POST", &path, &[], &token).await;
        assert_eq!(r.status, 302, "{}", r.body);
    }
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM bookmarks").await,
        1
    );
    let list = jason.get("/users/me/bookmarks").await;
    assert_eq!(list.status, 200);
    assert!(
        list.body.contains("Remember the milk")
            && list.body.contains(&format!("id=\"bookmark_message_{id}\""))
    );
    // Someone else's list is their own; a message one cannot see cannot be saved.
    assert!(!kevin
        .get("/users/me/bookmarks")
        .await
        .body
        .contains("Remember the milk"));
    let mut jz = server.signed_in(JZ, SECRET).await;
    let secret = scalar_i64(&server, "SELECT MAX(id) FROM messages WHERE room_id = 5").await;
    let jz_token = csrf(&mut jz, "/rooms/1").await;
    assert_eq!(
        send(
            &mut jz,
            "POST",
            &format!("/messages/{secret}/bookmark"),
            &[],
            &jz_token
        )
        .await
        .status,
        404
    );

    // Removed from one list: every open list of Jason's drops it.
    let (_c, mut ws) = connect_as(&server, JASON, SECRET).await;
    let signed = server
        .state
        .keys
        .signer
        .sign(&hearth::streams::user_bookmarks(2));
    let identifier =
        serde_json::json!({"channel": "Turbo::StreamsChannel", "signed_stream_name": signed})
            .to_string();
    ws.send_text(&subscribe_cmd(&identifier)).await;
    frame_containing(&mut ws, "confirm_subscription").await;
    let r = send(&mut jason, "DELETE", &path, &[], &token).await;
    assert_eq!(r.status, 302);
    let removed = frame_containing(&mut ws, &format!("bookmark_message_{id}")).await;
    assert!(removed.contains("remove"), "{removed}");
    assert!(!jason
        .get("/users/me/bookmarks")
        .await
        .body
        .contains("Remember the milk"));
}

#[tokio::test]
async fn mark_unread_marks_a_room_or_a_followed_thread_for_its_member_only() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let mut jz = server.signed_in(JZ, SECRET).await;
    let unread = |room: i64, user: i64| {
        format!("SELECT unread_at IS NOT NULL FROM memberships WHERE room_id = {room} AND user_id = {user}")
    };
    let token = csrf(&mut david, "/rooms/2").await;
    assert_eq!(scalar_i64(&server, &unread(2, 1)).await, 0);
    let r = send(&mut david, "POST", "/rooms/2/unread", &[], &token).await;
    assert_eq!(room_of(&r), 2);
    assert_eq!(scalar_i64(&server, &unread(2, 1)).await, 1);
    assert!(david
        .get("/users/me/sidebar")
        .await
        .body
        .contains("room-link--unread\" data-room-id=\"2\""));
    // A thread David follows (he replied in it).
    assert_eq!(reply(&mut david, 3, "A parent", &[]).await.status, 302);
    let parent = scalar_i64(&server, "SELECT MAX(id) FROM messages WHERE room_id = 3").await;
    let thread = room_of(
        &send(
            &mut david,
            "POST",
            &format!("/messages/{parent}/thread"),
            &[],
            &token,
        )
        .await,
    );
    assert_eq!(reply(&mut david, thread, "A reply", &[]).await.status, 302);
    assert_eq!(
        room_of(
            &send(
                &mut david,
                "POST",
                &format!("/rooms/{thread}/unread"),
                &[],
                &token
            )
            .await
        ),
        thread
    );
    assert_eq!(scalar_i64(&server, &unread(thread, 1)).await, 1);
    // Not a member: 404.
    let jz_token = csrf(&mut jz, "/rooms/1").await;
    assert_eq!(
        send(&mut jz, "POST", "/rooms/5/unread", &[], &jz_token)
            .await
            .status,
        404
    );
}
