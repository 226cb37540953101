//! Room management over real HTTP and `/cable`: open, closed and direct rooms, room settings,
//! deletion and involvement, with Campfire's authorization and broadcasts, and membership
//! revocations that reach already open sockets at once.

use crate::common;

use std::time::Duration;

use common::{confirm, connect_as, form, reject, subscribe_cmd, TestServer, Ws, WsEvent};

const T: Duration = Duration::from_secs(5);
const PASSWORD: &str = "secret123456";

fn turbo(server: &TestServer, stream: &str) -> String {
    let signed = server.state.keys.signer.sign(stream);
    serde_json::json!({"channel": "Turbo::StreamsChannel", "signed_stream_name": signed})
        .to_string()
}

fn user_rooms(server: &TestServer, user_id: i64) -> String {
    turbo(
        server,
        &hearth::streams::user_rooms(&server.state.config.gid_app, user_id),
    )
}

async fn room_messages_identifier(server: &TestServer, room_id: i64) -> String {
    let room = hearth::db::rooms::find(&server.state.db.pool, room_id)
        .await
        .unwrap()
        .unwrap();
    let name = hearth::streams::room_messages(&server.state.config.gid_app, &room);
    serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": server.state.keys.signer.sign(&name)})
        .to_string()
}

fn typing_identifier(room_id: i64) -> String {
    serde_json::json!({"channel": "TypingNotificationsChannel", "room_id": room_id}).to_string()
}

async fn subscribe(ws: &mut Ws, identifier: &str) {
    ws.send_text(&subscribe_cmd(identifier)).await;
    let want = confirm(identifier);
    expect_frame(ws, |t| t == want).await;
}

/// Reads frames until one satisfies `pred`; panics after `T`.
async fn expect_frame(ws: &mut Ws, pred: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_non_ping(left).await {
            Some(WsEvent::Text(t)) if pred(&t) => return t,
            Some(WsEvent::Text(_)) => {}
            other => panic!("expected a frame, got {other:?}"),
        }
    }
}

/// Asserts no frame containing `needle` arrives within `wait`.
async fn expect_none(ws: &mut Ws, needle: &str, wait: Duration) {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_non_ping(left).await {
            None => return,
            Some(WsEvent::Text(t)) => assert!(!t.contains(needle), "unexpected frame: {t}"),
            Some(other) => panic!("socket ended: {other:?}"),
        }
    }
}

use common::forms::submit as send;

fn room_id_of(r: &common::Response) -> i64 {
    assert_eq!(r.status, 302, "{}", r.body);
    r.header("location")
        .and_then(|l| l.strip_prefix("/rooms/"))
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("a room location: {:?}", r.header("location")))
}

async fn room_count(server: &TestServer) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM rooms")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn open_rooms_include_everyone_and_appear_on_every_sidebar() {
    let server = TestServer::start().await;
    let (_jc, mut jason) = connect_as(&server, "jason@example.com", PASSWORD).await;
    let rooms = turbo(&server, "rooms");
    subscribe(&mut jason, &rooms).await;

    let mut david = server.signed_in("david@example.com", PASSWORD).await;
    let page = david.get("/rooms/opens/new").await;
    assert!(page.body.contains("name=\"room[name]\""), "{}", page.body);
    let id = room_id_of(
        &send(
            &mut david,
            "POST",
            "/rooms/opens",
            &[("room[name]", "Book <club>")],
        )
        .await,
    );

    let frame = expect_frame(&mut jason, |t| t.contains("shared_rooms")).await;
    assert!(
        frame.contains(r#"\u003cturbo-stream action=\"prepend\" target=\"shared_rooms\"\u003e"#),
        "{frame}"
    );
    assert!(frame.contains(&format!("list_rooms_open_{id}")));
    assert!(
        frame.contains("Book \\u0026#60;club\\u0026#62;"),
        "escaped name: {frame}"
    );
    // Everyone, not only the creator, is a member.
    let mut kevin = server.signed_in("kevin@example.com", PASSWORD).await;
    assert_eq!(kevin.get(&format!("/rooms/{id}")).await.status, 200);
    assert_eq!(
        kevin
            .get(&format!("/rooms/opens/{id}"))
            .await
            .header("location"),
        Some(format!("/rooms/{id}").as_str())
    );

    // Bad input stores nothing: blank, too long, no CSRF token, signed out.
    let before = room_count(&server).await;
    for name in ["  ", &"x".repeat(101)] {
        let r = send(&mut david, "POST", "/rooms/opens", &[("room[name]", name)]).await;
        assert_eq!(r.status, 422, "{name:?}");
    }
    let r = david
        .post_form("/rooms/opens", &form(&[("room[name]", "No token")]), &[])
        .await;
    assert_eq!(r.status, 422);
    let mut anonymous = server.client();
    let page = anonymous.get("/session/new").await;
    let token = common::csrf_meta(&page.body);
    let r = anonymous
        .post_form(
            "/rooms/opens",
            &form(&[("authenticity_token", &token), ("room[name]", "x")]),
            &[],
        )
        .await;
    assert_eq!(r.status, 401);
    assert_eq!(room_count(&server).await, before);

    // Renaming: creators and administrators only; everyone's entry is replaced.
    let r = send(
        &mut kevin,
        "PATCH",
        &format!("/rooms/opens/{id}"),
        &[("room[name]", "Mine")],
    )
    .await;
    assert_eq!(r.status, 403);
    let r = send(
        &mut david,
        "PATCH",
        &format!("/rooms/opens/{id}"),
        &[("room[name]", "Books")],
    )
    .await;
    assert_eq!(r.status, 302);
    let frame = expect_frame(&mut jason, |t| t.contains("replace")).await;
    assert!(frame.contains(&format!("list_rooms_open_{id}")) && frame.contains("Books"));
    assert_eq!(
        kevin.get(&format!("/rooms/opens/{id}/edit")).await.status,
        200
    );
}

#[tokio::test]
async fn closed_rooms_hold_their_members_and_removal_ends_subscriptions_at_once() {
    let server = TestServer::start().await;
    let (_jc, mut jason) = connect_as(&server, "jason@example.com", PASSWORD).await;
    let (_kc, mut kevin) = connect_as(&server, "kevin@example.com", PASSWORD).await;
    subscribe(&mut jason, &user_rooms(&server, 2)).await;
    subscribe(&mut kevin, &user_rooms(&server, 4)).await;

    let mut david = server.signed_in("david@example.com", PASSWORD).await;
    let too_many: Vec<String> = (0..10_001).map(|i| i.to_string()).collect();
    let mut pairs: Vec<(&str, &str)> = vec![("room[name]", "Big")];
    pairs.extend(too_many.iter().map(|v| ("user_ids[]", v.as_str())));
    assert_eq!(
        send(&mut david, "POST", "/rooms/closeds", &pairs)
            .await
            .status,
        422
    );
    let r = send(
        &mut david,
        "POST",
        "/rooms/closeds",
        &[
            ("room[name]", "Secret"),
            ("user_ids[]", "2"),
            ("user_ids[]", "4"),
        ],
    )
    .await;
    let id = room_id_of(&r);
    for ws in [&mut jason, &mut kevin] {
        let frame = expect_frame(ws, |t| t.contains("shared_rooms")).await;
        assert!(frame.contains(&format!("list_rooms_closed_{id}")) && frame.contains("Secret"));
    }
    assert_eq!(
        hearth::db::rooms::member_ids(&server.state.db.pool, id)
            .await
            .unwrap(),
        vec![1, 2, 4]
    );

    // Non-members: 404 on the room, Campfire's redirect home on its settings.
    let mut jz = server.signed_in("jz@example.com", PASSWORD).await;
    assert_eq!(jz.get(&format!("/rooms/{id}")).await.status, 404);
    let r = jz.get(&format!("/rooms/closeds/{id}/edit")).await;
    assert_eq!((r.status, r.header("location")), (302, Some("/")));
    let r = send(
        &mut jz,
        "PATCH",
        &format!("/rooms/closeds/{id}"),
        &[("room[name]", "x")],
    )
    .await;
    assert_eq!((r.status, r.header("location")), (302, Some("/")));
    // A member who is neither the creator nor an administrator: 403.
    let mut jason_http = server.signed_in("jason@example.com", PASSWORD).await;
    let r = send(
        &mut jason_http,
        "PATCH",
        &format!("/rooms/closeds/{id}"),
        &[("room[name]", "x"), ("user_ids[]", "2")],
    )
    .await;
    assert_eq!(r.status, 403);

    // Jason listens to the room and types; Kevin listens too.
    let messages = room_messages_identifier(&server, id).await;
    let typing = typing_identifier(id);
    subscribe(&mut jason, &messages).await;
    subscribe(&mut jason, &typing).await;
    subscribe(&mut kevin, &typing).await;
    subscribe(&mut kevin, &messages).await;

    // David removes Jason: Jason's sidebar entry goes, his room subscriptions end at once.
    let r = send(
        &mut david,
        "PATCH",
        &format!("/rooms/closeds/{id}"),
        &[("room[name]", "Secret"), ("user_ids[]", "4")],
    )
    .await;
    assert_eq!(r.status, 302);
    let remove =
        format!(r#"\u003cturbo-stream action=\"remove\" target=\"list_rooms_closed_{id}\"\u003e"#);
    expect_frame(&mut jason, |t| t.contains(&remove)).await;
    let rejected_messages = reject(&messages);
    let rejected_typing = reject(&typing);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let t = expect_frame(&mut jason, |t| t.contains("reject_subscription")).await;
        seen.push(t);
    }
    assert!(
        seen.contains(&rejected_messages) && seen.contains(&rejected_typing),
        "{seen:?}"
    );
    expect_frame(&mut kevin, |t| {
        t.contains("replace") && t.contains(&format!("list_rooms_closed_{id}"))
    })
    .await;

    // A post reaches Kevin but not Jason; Jason's typing notices reach no one.
    let (token, _) = david.room(id).await;
    let r = david
        .post_message(id, "after-removal", "c-after", &token)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    expect_frame(&mut kevin, |t| t.contains("after-removal")).await;
    let start = serde_json::json!({"command": "message", "identifier": typing, "data": r#"{"action":"start"}"#}).to_string();
    jason.send_text(&start).await;
    expect_none(
        &mut kevin,
        "\"action\":\"start\"",
        Duration::from_millis(700),
    )
    .await;
    expect_none(&mut jason, "after-removal", Duration::from_millis(200)).await;
    // And Jason cannot subscribe again.
    jason.send_text(&subscribe_cmd(&typing)).await;
    expect_frame(&mut jason, |t| t == rejected_typing).await;
}

#[tokio::test]
async fn a_membership_revoked_in_the_database_layer_reaches_open_sockets() {
    let server = TestServer::start().await;
    let (_jc, mut jason) = connect_as(&server, "jason@example.com", PASSWORD).await;
    let messages = room_messages_identifier(&server, 4).await;
    let presence = serde_json::json!({"channel": "PresenceChannel", "room_id": 4}).to_string();
    subscribe(&mut jason, &messages).await;
    subscribe(&mut jason, &presence).await;
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
    let mut seen = Vec::new();
    while seen.len() < 2 {
        seen.push(expect_frame(&mut jason, |t| t.contains("reject_subscription")).await);
    }
    assert!(seen.contains(&reject(&messages)) && seen.contains(&reject(&presence)));
    // The connection itself stays open.
    subscribe(&mut jason, r#"{"channel":"HeartbeatChannel"}"#).await;
}

#[tokio::test]
async fn directs_are_found_or_created_and_named_by_the_other_members() {
    let server = TestServer::start().await;
    let (_jc, mut jason) = connect_as(&server, "jason@example.com", PASSWORD).await;
    subscribe(&mut jason, &user_rooms(&server, 2)).await;
    let mut david = server.signed_in("david@example.com", PASSWORD).await;
    assert_eq!(david.get("/rooms/directs/new").await.status, 200);
    // The seed's David–Jason room is found, not duplicated.
    let r = send(&mut david, "POST", "/rooms/directs", &[("user_ids[]", "2")]).await;
    assert_eq!(room_id_of(&r), 5);
    let frame = expect_frame(&mut jason, |t| t.contains("direct_rooms")).await;
    assert!(
        frame.contains("list_rooms_direct_5") && frame.contains("David"),
        "{frame}"
    );
    // A new group: David, Jason, Kevin.
    let before = room_count(&server).await;
    let id = room_id_of(
        &send(
            &mut david,
            "POST",
            "/rooms/directs",
            &[("user_ids[]", "2"), ("user_ids[]", "4")],
        )
        .await,
    );
    assert_eq!(room_count(&server).await, before + 1);
    let again = room_id_of(
        &send(
            &mut david,
            "POST",
            "/rooms/directs",
            &[("user_ids[]", "4"), ("user_ids[]", "2")],
        )
        .await,
    );
    assert_eq!(again, id);
    let frame = expect_frame(&mut jason, |t| {
        t.contains(&format!("list_rooms_direct_{id}"))
    })
    .await;
    assert!(frame.contains("David, Kevin"), "{frame}");
    // Named by the others in the sidebar and on the room page, never "Direct message".
    let mut jason_http = server.signed_in("jason@example.com", PASSWORD).await;
    let sidebar = jason_http.get("/users/me/sidebar").await.body;
    assert!(
        sidebar.contains(">David, Kevin<") && !sidebar.contains("Direct message"),
        "{sidebar}"
    );
    let (_, page) = jason_http.room(id).await;
    assert!(
        page.contains("title=\"David, Kevin\">David, Kevin</a></h1>"),
        "{page}"
    );
    // Too many people: 422.
    let ids: Vec<String> = (0..51).map(|i| (i + 8).to_string()).collect();
    let pairs: Vec<(&str, &str)> = ids.iter().map(|v| ("user_ids[]", v.as_str())).collect();
    assert_eq!(
        send(&mut david, "POST", "/rooms/directs", &pairs)
            .await
            .status,
        422
    );

    // Deleting: a non-member is sent home and nothing changes; any member may.
    let (_rc, mut watcher) = connect_as(&server, "jz@example.com", PASSWORD).await;
    subscribe(&mut watcher, &turbo(&server, "rooms")).await;
    let mut jz = server.signed_in("jz@example.com", PASSWORD).await;
    let r = send(&mut jz, "DELETE", &format!("/rooms/directs/{id}"), &[]).await;
    assert_eq!((r.status, r.header("location")), (302, Some("/")));
    assert!(hearth::db::rooms::find(&server.state.db.pool, id)
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        jason_http
            .get(&format!("/rooms/directs/{id}/edit"))
            .await
            .status,
        200
    );
    let r = send(
        &mut jason_http,
        "DELETE",
        &format!("/rooms/directs/{id}"),
        &[],
    )
    .await;
    assert_eq!((r.status, r.header("location")), (302, Some("/")));
    assert!(hearth::db::rooms::find(&server.state.db.pool, id)
        .await
        .unwrap()
        .is_none());
    expect_frame(&mut watcher, |t| {
        t.contains("remove") && t.contains(&format!("list_rooms_direct_{id}"))
    })
    .await;
}

#[tokio::test]
async fn rooms_are_destroyed_by_administrators_and_creators_only() {
    let server = TestServer::start().await;
    let mut jason = server.signed_in("jason@example.com", PASSWORD).await;
    let id = room_id_of(
        &send(
            &mut jason,
            "POST",
            "/rooms/opens",
            &[("room[name]", "Short-lived")],
        )
        .await,
    );
    let (_kc, mut kevin_ws) = connect_as(&server, "kevin@example.com", PASSWORD).await;
    subscribe(&mut kevin_ws, &turbo(&server, "rooms")).await;
    let messages = room_messages_identifier(&server, id).await;
    subscribe(&mut kevin_ws, &messages).await;
    let mut kevin = server.signed_in("kevin@example.com", PASSWORD).await;
    assert_eq!(
        send(&mut kevin, "DELETE", &format!("/rooms/{id}"), &[])
            .await
            .status,
        403
    );
    // The seed's rooms were created by David: Jason may not delete them either.
    assert_eq!(
        send(&mut jason, "DELETE", "/rooms/4", &[]).await.status,
        403
    );
    let r = send(&mut jason, "DELETE", &format!("/rooms/{id}"), &[]).await;
    assert_eq!((r.status, r.header("location")), (302, Some("/")));
    expect_frame(&mut kevin_ws, |t| {
        t.contains("remove") && t.contains(&format!("list_rooms_open_{id}"))
    })
    .await;
    expect_frame(&mut kevin_ws, |t| *t == reject(&messages)).await;
    assert_eq!(kevin.get(&format!("/rooms/{id}")).await.status, 404);
    // An administrator may delete any room.
    let mut david = server.signed_in("david@example.com", PASSWORD).await;
    let r = send(&mut david, "DELETE", "/rooms/3", &[]).await;
    assert_eq!(r.status, 302);
    assert!(hearth::db::rooms::find(&server.state.db.pool, 3)
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn involvement_hides_a_room_and_brings_it_back() {
    let server = TestServer::start().await;
    let (_jc, mut ws) = connect_as(&server, "jason@example.com", PASSWORD).await;
    subscribe(&mut ws, &user_rooms(&server, 2)).await;
    let mut jason = server.signed_in("jason@example.com", PASSWORD).await;
    let page = jason.get("/rooms/2/involvement").await;
    assert_eq!(page.status, 200);
    assert!(page
        .body
        .contains("<strong id=\"current_involvement\">mentions</strong>"));
    let r = send(
        &mut jason,
        "PUT",
        "/rooms/2/involvement",
        &[("involvement", "invisible")],
    )
    .await;
    assert_eq!(
        (r.status, r.header("location")),
        (302, Some("/rooms/2/involvement"))
    );
    expect_frame(&mut ws, |t| {
        t.contains("remove") && t.contains("list_rooms_open_2")
    })
    .await;
    assert!(!jason
        .get("/users/me/sidebar")
        .await
        .body
        .contains("list_rooms_open_2"));
    // Still a member: the room stays reachable.
    assert_eq!(jason.get("/rooms/2").await.status, 200);
    let r = send(
        &mut jason,
        "PATCH",
        "/rooms/2/involvement",
        &[("involvement", "everything")],
    )
    .await;
    assert_eq!(r.status, 302);
    expect_frame(&mut ws, |t| {
        t.contains("prepend") && t.contains("list_rooms_open_2")
    })
    .await;
    assert_eq!(
        hearth::db::memberships::involvement(&server.state.db.pool, 2, 2)
            .await
            .unwrap(),
        Some(hearth::db::Involvement::Everything)
    );
    let r = send(
        &mut jason,
        "PUT",
        "/rooms/2/involvement",
        &[("involvement", "loud")],
    )
    .await;
    assert_eq!(r.status, 422);
    // Non-members get 404 (Campfire's RoomScoped).
    let mut user1 = server.signed_in("user1@example.com", "password").await;
    assert_eq!(user1.get("/rooms/4/involvement").await.status, 404);
    let r = send(
        &mut user1,
        "PUT",
        "/rooms/4/involvement",
        &[("involvement", "invisible")],
    )
    .await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn membership_changes_reach_the_next_subscription_at_once() {
    use hearth::db::memberships::{self, NoObserver};
    let server = TestServer::start().await;
    let pool = &server.state.db.pool;
    let (_jc, mut jason) = connect_as(&server, "jason@example.com", PASSWORD).await;
    let presence = serde_json::json!({"channel": "PresenceChannel", "room_id": 4}).to_string();
    let messages = room_messages_identifier(&server, 4).await;
    let typing = typing_identifier(4);
    // Jason's membership of room 4 is looked up (and kept) by a subscription.
    subscribe(&mut jason, &presence).await;
    // Revoked without telling any connection: only the lookup can refuse the next one.
    memberships::revise(pool, &NoObserver, 4, &[], &[2])
        .await
        .unwrap()
        .unwrap();
    jason.send_text(&subscribe_cmd(&typing)).await;
    let rejected = reject(&typing);
    expect_frame(&mut jason, |t| t == rejected).await;
    // Granted again (the refusal was looked up too): the next subscription is confirmed.
    memberships::revise(pool, &NoObserver, 4, &[2], &[])
        .await
        .unwrap()
        .unwrap();
    subscribe(&mut jason, &typing).await;
    // The room destroyed: refused.
    memberships::destroy_room(pool, &NoObserver, 4)
        .await
        .unwrap()
        .unwrap();
    jason.send_text(&subscribe_cmd(&messages)).await;
    let rejected = reject(&messages);
    expect_frame(&mut jason, |t| t == rejected).await;
}

#[tokio::test]
async fn granting_access_rechecks_no_connection_and_a_revocation_only_the_revoked_users() {
    let server = TestServer::start().await;
    let emails = ["jason@example.com", "kevin@example.com", "jz@example.com"];
    let mut sockets = Vec::new();
    for email in emails {
        let (c, mut ws) = connect_as(&server, email, PASSWORD).await;
        subscribe(&mut ws, &turbo(&server, "rooms")).await;
        sockets.push((c, ws));
    }
    let before = server.state.sockets.registry.rechecks();
    let mut david = server.signed_in("david@example.com", PASSWORD).await;
    // An open room grants everyone; a closed room and a direct room grant their members.
    let open = room_id_of(
        &send(
            &mut david,
            "POST",
            "/rooms/opens",
            &[("room[name]", "Granted")],
        )
        .await,
    );
    let closed = room_id_of(
        &send(
            &mut david,
            "POST",
            "/rooms/closeds",
            &[
                ("room[name]", "Few"),
                ("user_ids[]", "2"),
                ("user_ids[]", "4"),
            ],
        )
        .await,
    );
    for (_, ws) in &mut sockets {
        expect_frame(ws, |t| t.contains(&format!("list_rooms_open_{open}"))).await;
    }
    assert!(open > 0 && closed > 0);
    assert_eq!(
        server.state.sockets.registry.rechecks(),
        before,
        "a grant made open connections re-check their subscriptions"
    );
    // Removing one member re-checks that member's one connection, no one else's.
    let r = send(
        &mut david,
        "PATCH",
        &format!("/rooms/closeds/{closed}"),
        &[("room[name]", "Few"), ("user_ids[]", "4")],
    )
    .await;
    assert_eq!(r.status, 302);
    assert_eq!(server.state.sockets.registry.rechecks(), before + 1);
}
