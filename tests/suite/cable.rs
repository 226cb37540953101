//! `/cable` against the frames recorded from a real Rails Action Cable server
//! (`rails-cable-transcripts.md`), byte for byte, ping timestamps normalized; plus Campfire's
//! channels end to end.

use crate::common;

use std::time::Duration;

use common::{
    confirm, connect_as, reject, subscribe_cmd, text, TestServer, Ws, WsEvent, PROTOCOLS,
};

const T: Duration = Duration::from_secs(5);

fn turbo_identifier(signed: &str) -> String {
    serde_json::json!({"channel": "Turbo::StreamsChannel", "signed_stream_name": signed})
        .to_string()
}

fn room_identifier(signed: &str) -> String {
    serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed}).to_string()
}

#[tokio::test]
async fn handshake_welcome_and_subprotocol_like_rails() {
    let server = TestServer::start().await;
    let (c, ws) = connect_as(&server, "david@example.com", "secret123456").await;
    assert_eq!(
        ws.header("sec-websocket-protocol").as_deref(),
        Some("actioncable-v1-json")
    );
    assert_eq!(
        ws.header("sec-websocket-accept").as_deref(),
        Some("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    );
    assert_eq!(
        ws.header("sec-websocket-extensions"),
        None,
        "permessage-deflate is agreed only when offered"
    );
    // S8: no protocol offered → 101 without the header, welcome still sent.
    let mut none = Ws::connect(
        server.addr,
        Some(&c.cookie_header()),
        Some(&server.origin()),
        None,
    )
    .await;
    assert_eq!(none.status, 101);
    assert_eq!(none.header("sec-websocket-protocol"), None);
    assert_eq!(none.next(T).await, text(r#"{"type":"welcome"}"#));
    // Unknown protocol only → no header (AnyCable's msgpack; its ext-json is offered, see
    // reliable.rs).
    let unknown = Ws::connect(
        server.addr,
        Some(&c.cookie_header()),
        Some(&server.origin()),
        Some("actioncable-v1-msgpack"),
    )
    .await;
    assert_eq!(unknown.status, 101);
    assert_eq!(unknown.header("sec-websocket-protocol"), None);
    // actioncable-unsupported only → selected.
    let unsupported = Ws::connect(
        server.addr,
        Some(&c.cookie_header()),
        Some(&server.origin()),
        Some("actioncable-unsupported"),
    )
    .await;
    assert_eq!(
        unsupported.header("sec-websocket-protocol").as_deref(),
        Some("actioncable-unsupported")
    );
}

#[tokio::test]
async fn unauthorized_gets_disconnect_then_close_1000_and_no_welcome() {
    let server = TestServer::start().await;
    // S3: no cookie.
    let mut ws = Ws::connect(server.addr, None, Some(&server.origin()), Some(PROTOCOLS)).await;
    assert_eq!(ws.status, 101);
    assert_eq!(
        ws.next(T).await,
        text(r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#)
    );
    assert_eq!(ws.next(T).await, Some(WsEvent::Close(1000)));
    // S6b: tampered signed cookie.
    let c = server.signed_in("david@example.com", "secret123456").await;
    let tampered = c
        .cookie_header()
        .replace("session_token=", "session_token=x");
    let mut ws = Ws::connect(
        server.addr,
        Some(&tampered),
        Some(&server.origin()),
        Some(PROTOCOLS),
    )
    .await;
    assert_eq!(
        ws.next(T).await,
        text(r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#)
    );
    assert_eq!(ws.next(T).await, Some(WsEvent::Close(1000)));
}

#[tokio::test]
async fn bad_origins_and_plain_gets_get_404_page_not_found() {
    let server = TestServer::start().await;
    let c = server.signed_in("david@example.com", "secret123456").await;
    // S7: disallowed Origin, and no Origin at all.
    for origin in [Some("http://evil.example"), None] {
        let ws = Ws::connect(
            server.addr,
            Some(&c.cookie_header()),
            origin,
            Some(PROTOCOLS),
        )
        .await;
        assert_eq!(ws.status, 404);
        assert_eq!(ws.header("content-type").as_deref(), Some("text/plain"));
        assert_eq!(ws.header("content-length").as_deref(), Some("14"));
    }
    // S9: GET /cable without an upgrade.
    let r = server.client().get("/cable").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.body, "Page not found");
}

#[tokio::test]
async fn allowed_origins_and_disabled_check() {
    let server =
        TestServer::start_with(|c| c.allowed_origins = vec!["https://chat.example".into()]).await;
    let c = server.signed_in("david@example.com", "secret123456").await;
    let ws = Ws::connect(
        server.addr,
        Some(&c.cookie_header()),
        Some("https://chat.example"),
        Some(PROTOCOLS),
    )
    .await;
    assert_eq!(ws.status, 101);
    let off = TestServer::start_with(|c| c.disable_origin_check = true).await;
    let c = off.signed_in("david@example.com", "secret123456").await;
    let ws = Ws::connect(off.addr, Some(&c.cookie_header()), None, Some(PROTOCOLS)).await;
    assert_eq!(ws.status, 101);
}

#[tokio::test]
async fn pings_every_interval_with_unix_seconds() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match ws.next(Duration::from_secs(4)).await {
            Some(WsEvent::Text(t)) => seen.push(t),
            other => panic!("expected pings, got {other:?}"),
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for p in &seen {
        let digits = p
            .strip_prefix(r#"{"type":"ping","message":"#)
            .and_then(|r| r.strip_suffix('}'))
            .expect(p);
        let ts: u64 = digits.parse().unwrap();
        assert!(ts.abs_diff(now) <= 5, "{p}");
    }
}

#[tokio::test]
async fn subscribe_confirm_reject_and_silent_cases_like_rails() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    let good = turbo_identifier(&server.state.keys.signer.sign("rooms"));
    let bad = turbo_identifier(
        "ImNoYXQ6MjAyMSI=--f9ee45dbccb1da04d8ceb99cc820207804370ba0d06b46fc3b8b373af1315628",
    );
    // S4: unknown channel → nothing; then a rejected and a confirmed subscription.
    ws.send_text(&subscribe_cmd(r#"{"channel":"NoSuchChannel"}"#))
        .await;
    ws.send_text(&subscribe_cmd(&bad)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&reject(&bad)));
    ws.send_text(&subscribe_cmd(&good)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(&good)));
    // Duplicate subscribe, unknown command, malformed JSON, unsubscribe of an unknown
    // identifier: all silent, and the connection stays open.
    ws.send_text(&subscribe_cmd(&good)).await;
    ws.send_text(r#"{"command":"bogus"}"#).await;
    ws.send_text("not json at all").await;
    ws.send_text(r#"{"command":"unsubscribe","identifier":"{\"channel\":\"Nope\"}"}"#)
        .await;
    ws.send_text(r#"{"command":"message","identifier":"{\"channel\":\"Nope\"}","data":"{}"}"#)
        .await;
    ws.send_frame(0x2, true, b"binary is ignored").await;
    // A broadcast still arrives, exactly once, as Rails wraps it.
    let sent = server
        .state
        .delivery
        .fanout
        .broadcast("rooms", br#""just a string""#);
    assert_eq!(sent, 1);
    let expected = format!(
        r#"{{"identifier":{},"message":"just a string"}}"#,
        serde_json::to_string(&good).unwrap()
    );
    assert_eq!(ws.next_non_ping(T).await, text(&expected));
    // Unsubscribe: no ack, and no more broadcasts.
    ws.send_text(&serde_json::json!({"command": "unsubscribe", "identifier": good}).to_string())
        .await;
    ws.send_text(&subscribe_cmd(r#"{"channel":"HeartbeatChannel"}"#))
        .await;
    assert_eq!(
        ws.next_non_ping(T).await,
        text(&confirm(r#"{"channel":"HeartbeatChannel"}"#))
    );
    assert_eq!(server.state.delivery.fanout.broadcast("rooms", b"1"), 0);
}

#[tokio::test]
async fn a_post_reaches_room_subscribers_with_activesupport_escaping() {
    let server = TestServer::start().await;
    let (mut c, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    let (csrf, html) = c.room(1).await;
    let signed = common::attr_after(
        &html,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .unwrap();
    let signed = signed.replace("&#x3D;", "=");
    let id = room_identifier(&signed);
    ws.send_text(&subscribe_cmd(&id)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(&id)));
    ws.send_text(&subscribe_cmd(r#"{"channel":"UnreadRoomsChannel"}"#))
        .await;
    assert_eq!(
        ws.next_non_ping(T).await,
        text(&confirm(r#"{"channel":"UnreadRoomsChannel"}"#))
    );
    let r = c
        .post_message(1, "a < b & c > d \u{2028} é", "esc-1", &csrf)
        .await;
    assert_eq!(r.status, 200);
    let Some(WsEvent::Text(frame)) = ws.next_non_ping(T).await else {
        panic!("no frame")
    };
    let prefix = format!(
        r#"{{"identifier":{},"message":""#,
        serde_json::to_string(&id).unwrap()
    );
    assert!(frame.starts_with(&prefix), "{frame}");
    assert!(frame.contains(r#"\u003cturbo-stream action=\"append\" target=\"messages_rooms_open_1\"\u003e\u003ctemplate\u003e"#));
    assert!(
        frame.contains(r#"a \u0026lt; b \u0026amp; c \u0026gt; d \u2028 é"#),
        "{frame}"
    );
    assert!(!frame.contains('<') && !frame.contains('>'));
    // The frame's message is a JSON string holding exactly the HTTP response's HTML.
    let parsed: serde_json::Value = serde_json::from_str(&frame).unwrap();
    assert_eq!(parsed["message"].as_str().unwrap(), r.body);
    // Then the unread notice for the room.
    assert_eq!(
        ws.next_non_ping(T).await,
        text(r#"{"identifier":"{\"channel\":\"UnreadRoomsChannel\"}","message":{"roomId":1}}"#)
    );
}

#[tokio::test]
async fn room_streams_are_authorized() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, "user1@example.com", "password").await;
    let designers = hearth::db::rooms::find(&server.state.db.pool, 4)
        .await
        .unwrap()
        .unwrap();
    let name = hearth::streams::room_messages("campfire", &designers);
    let signed = server.state.keys.signer.sign(&name);
    // A validly signed name for a room the user is not a member of is rejected…
    let id = room_identifier(&signed);
    ws.send_text(&subscribe_cmd(&id)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&reject(&id)));
    // …and Turbo::StreamsChannel refuses every `:messages` name, even a member's.
    let all_talk = hearth::db::rooms::find(&server.state.db.pool, 1)
        .await
        .unwrap()
        .unwrap();
    let signed = server
        .state
        .keys
        .signer
        .sign(&hearth::streams::room_messages("campfire", &all_talk));
    let id = turbo_identifier(&signed);
    ws.send_text(&subscribe_cmd(&id)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&reject(&id)));
    let id = room_identifier(&signed);
    ws.send_text(&subscribe_cmd(&id)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(&id)));
}

#[tokio::test]
async fn presence_and_typing_notifications() {
    let server = TestServer::start().await;
    let (_c1, mut david) = connect_as(&server, "david@example.com", "secret123456").await;
    let (_c2, mut jason) = connect_as(&server, "jason@example.com", "secret123456").await;
    let reads = r#"{"channel":"ReadRoomsChannel"}"#;
    david.send_text(&subscribe_cmd(reads)).await;
    assert_eq!(david.next_non_ping(T).await, text(&confirm(reads)));
    let presence = r#"{"channel":"PresenceChannel","room_id":1}"#;
    david.send_text(&subscribe_cmd(presence)).await;
    // The read notice to the user's own reads stream, then the confirm.
    assert_eq!(
        david.next_non_ping(T).await,
        text(r#"{"identifier":"{\"channel\":\"ReadRoomsChannel\"}","message":{"room_id":1}}"#)
    );
    assert_eq!(david.next_non_ping(T).await, text(&confirm(presence)));
    let state = hearth::db::rooms::membership_state(&server.state.db.pool, 1, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.0, 1);
    assert!(state.1.is_some());
    assert_eq!(state.2, None);

    let typing = r#"{"channel":"TypingNotificationsChannel","room_id":1}"#;
    jason.send_text(&subscribe_cmd(typing)).await;
    assert_eq!(jason.next_non_ping(T).await, text(&confirm(typing)));
    david.send_text(&subscribe_cmd(typing)).await;
    assert_eq!(david.next_non_ping(T).await, text(&confirm(typing)));
    let start = serde_json::json!({"command": "message", "identifier": typing, "data": r#"{"action":"start"}"#}).to_string();
    david.send_text(&start).await;
    assert_eq!(
        jason.next_non_ping(T).await,
        text(
            r#"{"identifier":"{\"channel\":\"TypingNotificationsChannel\",\"room_id\":1}","message":{"action":"start","user":{"id":1,"name":"David"}}}"#
        )
    );
    // The typer's own subscription gets it too (Campfire's client ignores its own notices).
    assert!(
        matches!(david.next_non_ping(T).await, Some(WsEvent::Text(t)) if t.contains(r#""action":"start""#))
    );
    // Unsubscribing from presence marks the membership absent.
    david
        .send_text(
            &serde_json::json!({"command": "unsubscribe", "identifier": presence}).to_string(),
        )
        .await;
    david
        .send_text(&subscribe_cmd(r#"{"channel":"HeartbeatChannel"}"#))
        .await;
    assert_eq!(
        david.next_non_ping(T).await,
        text(&confirm(r#"{"channel":"HeartbeatChannel"}"#))
    );
    let state = hearth::db::rooms::membership_state(&server.state.db.pool, 1, 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((state.0, state.1), (0, None));
    // A non-member cannot be present in a closed room.
    let (_c3, mut user1) = connect_as(&server, "user1@example.com", "password").await;
    let closed = r#"{"channel":"PresenceChannel","room_id":4}"#;
    user1.send_text(&subscribe_cmd(closed)).await;
    assert_eq!(user1.next_non_ping(T).await, text(&reject(closed)));
}

#[tokio::test]
async fn sign_out_closes_that_sessions_connections_with_remote() {
    let server = TestServer::start().await;
    let (mut c, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    let (csrf, _) = c.room(1).await;
    let r = c
        .post_form(
            "/session",
            &common::form(&[("_method", "delete"), ("authenticity_token", &csrf)]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302);
    assert_eq!(
        ws.next_non_ping(T).await,
        text(r#"{"type":"disconnect","reason":"remote","reconnect":false}"#)
    );
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1000)));
}

#[tokio::test]
async fn stopping_sends_server_restart_to_everyone() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    let stop = tokio::spawn(server.stop());
    assert_eq!(
        ws.next_non_ping(T).await,
        text(r#"{"type":"disconnect","reason":"server_restart","reconnect":true}"#)
    );
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1000)));
    stop.await.unwrap();
}

#[tokio::test]
async fn client_close_is_echoed_and_pings_answered() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    ws.send_frame(0x9, true, b"hi").await;
    ws.send_frame(0x8, true, &1000u16.to_be_bytes()).await;
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1000)));
    assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Eof));
}

#[tokio::test]
async fn commands_split_across_fragments_and_sent_with_the_handshake() {
    let server = TestServer::start().await;
    let (_c, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    let cmd = subscribe_cmd(r#"{"channel":"HeartbeatChannel"}"#);
    let (a, b) = cmd.as_bytes().split_at(10);
    ws.send_frame(0x1, false, a).await;
    ws.send_frame(0x9, true, b"interleaved ping").await;
    ws.send_frame(0x0, true, b).await;
    assert_eq!(
        ws.next_non_ping(T).await,
        text(&confirm(r#"{"channel":"HeartbeatChannel"}"#))
    );
}

#[tokio::test]
async fn edits_deletes_and_boosts_are_broadcast_to_the_room() {
    let server = TestServer::start().await;
    let (mut c, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    let (csrf, html) = c.room(1).await;
    let signed = common::attr_after(
        &html,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .unwrap()
    .replace("&#x3D;", "=");
    let id = room_identifier(&signed);
    ws.send_text(&subscribe_cmd(&id)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(&id)));
    assert_eq!(
        c.post_message(1, "first draft", "edit-me", &csrf)
            .await
            .status,
        200
    );
    let message = |frame: Option<WsEvent>| -> String {
        let Some(WsEvent::Text(t)) = frame else {
            panic!("no frame: {frame:?}")
        };
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        v["message"].as_str().unwrap_or_default().to_owned()
    };
    assert!(message(ws.next_non_ping(T).await).starts_with("<turbo-stream action=\"append\""));
    let message_id: i64 =
        sqlx::query_scalar("SELECT id FROM messages WHERE client_message_id = 'edit-me'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    let path = format!("/rooms/1/messages/{message_id}");
    let turbo = [("Accept", "text/vnd.turbo-stream.html")];

    // Someone else may not edit it.
    let mut jason = server.signed_in("jason@example.com", "secret123456").await;
    let (jason_csrf, _) = jason.room(1).await;
    let body = common::form(&[
        ("_method", "patch"),
        ("message[body]", "hijack"),
        ("authenticity_token", &jason_csrf),
    ]);
    assert_eq!(jason.post_form(&path, &body, &turbo).await.status, 403);

    let body = common::form(&[
        ("_method", "patch"),
        ("message[body]", "final <b>text</b>"),
        ("authenticity_token", &csrf),
    ]);
    let r = c.post_form(&path, &body, &turbo).await;
    assert_eq!(r.status, 200);
    let replace = message(ws.next_non_ping(T).await);
    assert!(
        replace
            .starts_with("<turbo-stream action=\"replace\" target=\"message_edit-me\"><template>"),
        "{replace}"
    );
    assert!(replace.contains("final &lt;b&gt;text&lt;/b&gt;"));
    assert_eq!(replace, r.body);

    let r = c
        .post_form(
            &format!("/messages/{message_id}/boosts"),
            &common::form(&[("boost[content]", "🎉"), ("authenticity_token", &csrf)]),
            &turbo,
        )
        .await;
    assert_eq!(r.status, 200);
    let boost = message(ws.next_non_ping(T).await);
    assert!(boost.starts_with("<turbo-stream action=\"append\" target=\"boosts_message_edit-me\"><template><span id=\"boost_"), "{boost}");
    assert!(boost.contains("🎉"));

    let r = c
        .post_form(
            &path,
            &common::form(&[("_method", "delete"), ("authenticity_token", &csrf)]),
            &turbo,
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        message(ws.next_non_ping(T).await),
        "<turbo-stream action=\"remove\" target=\"message_edit-me\"></turbo-stream>"
    );
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE id = ?")
        .bind(message_id)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(left, 0);
}

/// Issue 13, item 3: sixteen people post at once (eight posts each, every post its own
/// request) while a real Action Cable client listens to the room: the `append` frames arrive
/// in the order of the messages' ids, every one of them exactly once. Each append is
/// broadcast at its message's commit, under the write lock that numbers the messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_posters_appends_arrive_in_id_order() {
    const POSTERS: usize = 16;
    const EACH: usize = 8;
    let server = TestServer::start().await;
    let (mut c, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    let (csrf, html) = c.room(1).await;
    let signed = common::attr_after(
        &html,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .unwrap()
    .replace("&#x3D;", "=");
    let id = room_identifier(&signed);
    ws.send_text(&subscribe_cmd(&id)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(&id)));

    let start = std::sync::Arc::new(tokio::sync::Barrier::new(POSTERS));
    let mut posters = Vec::new();
    for p in 0..POSTERS {
        let mut client = c.clone();
        let csrf = csrf.clone();
        let start = start.clone();
        posters.push(tokio::spawn(async move {
            start.wait().await;
            for i in 0..EACH {
                let r = client
                    .post_message(
                        1,
                        &format!("post {p}.{i}"),
                        &format!("order-{p}-{i}"),
                        &csrf,
                    )
                    .await;
                assert_eq!(r.status, 200, "{}", r.body);
            }
        }));
    }
    let mut ids = Vec::new();
    let mut sort_keys = Vec::new();
    while ids.len() < POSTERS * EACH {
        let frame = ws.next_non_ping(Duration::from_secs(30)).await;
        let Some(WsEvent::Text(t)) = frame else {
            panic!("no frame after {} appends: {frame:?}", ids.len())
        };
        let v: serde_json::Value = serde_json::from_str(&t).unwrap();
        let message = v["message"].as_str().unwrap_or_default();
        if !message.starts_with("<turbo-stream action=\"append\" target=\"messages_rooms_open_1\"")
        {
            continue;
        }
        let id: i64 = common::attr_after(message, "data-message-id=\"")
            .unwrap()
            .parse()
            .unwrap();
        sort_keys.push(common::attr_after(message, "data-sort-value=\""));
        ids.push(id);
    }
    for poster in posters {
        poster.await.unwrap();
    }
    let swapped: Vec<_> = ids.windows(2).filter(|w| w[0] >= w[1]).collect();
    assert!(
        swapped.is_empty(),
        "{} of {} adjacent appends out of id order: {swapped:?}",
        swapped.len(),
        ids.len() - 1
    );
    // Every partial carries its sort key (the id), for the page's ordered insertion.
    let expected: Vec<_> = ids.iter().map(|id| Some(id.to_string())).collect();
    assert_eq!(sort_keys, expected);
}

/// A page's consumer sends its subscribe commands together when the socket opens (its
/// subscriptions exist before the socket does): the server reads them in one go and writes
/// their confirmations in one `writev`, not one write per confirmation.
#[tokio::test]
async fn subscriptions_read_together_are_confirmed_in_one_write() {
    use tokio::io::AsyncWriteExt;
    // Hearth's own engine, also in the run with HEARTH_FANOUT=tokio-broadcast: the reference
    // engine writes each frame through the WebSocket library's sink, one write a frame.
    let server = TestServer::start_with(|c| {
        c.ping_interval = 3600;
        c.fanout = hearth::fanout::EngineKind::Queue;
    })
    .await;
    let (mut david, mut ws) = connect_as(&server, "david@example.com", "secret123456").await;
    let (_, page) = david.room(1).await;
    let signed = common::attr_after(
        &page,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .expect("the room's stream source");
    let identifiers = [
        room_identifier(&signed),
        r#"{"channel":"PresenceChannel","room_id":1}"#.to_owned(),
        r#"{"channel":"HeartbeatChannel"}"#.to_owned(),
        r#"{"channel":"UnreadRoomsChannel"}"#.to_owned(),
    ];
    let frames = common::subscribe_frames(&identifiers);
    let writes = |text: &str| crate::metrics::value(text, "hearth_fanout_write_calls_total");
    let before = writes(&crate::metrics::scrape(&server).await);
    ws.stream.write_all(&frames).await.expect("subscribe");
    for id in &identifiers {
        assert_eq!(ws.next_non_ping(T).await, text(&confirm(id)));
    }
    // The writer counts a write once its call returns, which may be just after the client
    // has read it: wait until the count has moved, then a little longer for any second write.
    let deadline = tokio::time::Instant::now() + T;
    while writes(&crate::metrics::scrape(&server).await) == before {
        assert!(tokio::time::Instant::now() < deadline, "no write counted");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = writes(&crate::metrics::scrape(&server).await);
    assert_eq!(after - before, 1.0, "the 4 confirmations in one write");
}
