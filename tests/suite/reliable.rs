//! Reliable delivery over `/cable` (docs/reliable-delivery.md): AnyCable's extended protocol
//! `actioncable-v1-ext-json` byte for byte (the welcome's `sid`, positions on broadcasts,
//! `history` with `confirm_history` / `reject_history`, restores by `sid`), with
//! `actioncable-v1-json` frames unchanged; and hostile input to it (malformed `history`, forged,
//! stolen, reused or expired `sid`s).

use std::time::Duration;

use crate::common::{self, subscribe_cmd, text, Client, TestServer, Ws, WsEvent};

const T: Duration = Duration::from_secs(10);
const EXT: &str = "actioncable-v1-ext-json";

fn room_identifier(signed: &str) -> String {
    serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed}).to_string()
}

/// Signs `email` in and returns the client, the room page's CSRF token and room 1's
/// identifier.
async fn signed_in(server: &TestServer, email: &str, password: &str) -> (Client, String, String) {
    let mut c = server.signed_in(email, password).await;
    let (csrf, html) = c.room(1).await;
    let signed = common::attr_after(
        &html,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .unwrap()
    .replace("&#x3D;", "=");
    (c, csrf, room_identifier(&signed))
}

/// Opens `/cable` (with `query`) offering the extended protocol, and reads the welcome.
async fn ext(server: &TestServer, c: &Client, query: &str) -> (Ws, serde_json::Value) {
    let (ws, welcome) = ext_raw(server, c, query).await;
    (ws, serde_json::from_str(&welcome).unwrap())
}

/// [`ext`], with the welcome as it came.
async fn ext_raw(server: &TestServer, c: &Client, query: &str) -> (Ws, String) {
    let mut ws = Ws::connect_to(
        server.addr,
        &format!("/cable{query}"),
        Some(&c.cookie_header()),
        Some(&server.origin()),
        Some(EXT),
    )
    .await;
    assert_eq!(ws.status, 101, "{}", ws.response_head);
    assert_eq!(ws.header("sec-websocket-protocol").as_deref(), Some(EXT));
    let Some(WsEvent::Text(welcome)) = ws.next(T).await else {
        panic!("no welcome")
    };
    (ws, welcome)
}

async fn next_json(ws: &mut Ws) -> serde_json::Value {
    match ws.next_non_ping(T).await {
        Some(WsEvent::Text(frame)) => serde_json::from_str(&frame).unwrap(),
        other => panic!("expected a frame, got {other:?}"),
    }
}

async fn subscribed(ws: &mut Ws, id: &str) {
    ws.send_text(&subscribe_cmd(id)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&common::confirm(id)));
}

/// The sidebar's positions as its list renders them now (`data-sidebar-history`,
/// `<epoch>.<rooms>.<own rooms>.<unreads>.<reads>`) and the unread stream's offset in them.
async fn sidebar_positions(c: &mut Client) -> (String, u64) {
    let sidebar = c.get("/users/me/sidebar").await.body;
    let positions = common::attr_after(&sidebar, "data-sidebar-history=\"").unwrap();
    let unreads = positions.split('.').nth(3).unwrap().parse().unwrap();
    (positions, unreads)
}

fn history_cmd(id: &str, history: impl serde::Serialize) -> String {
    serde_json::json!({"command": "history", "identifier": id, "history": history}).to_string()
}

#[tokio::test]
async fn the_extended_protocol_adds_a_sid_and_positions_and_v1_frames_stay_rails() {
    let server = TestServer::start().await;
    let (mut c, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let mut v1 = common::connect_with(&server, &c).await;
    subscribed(&mut v1, &id).await;
    let (mut e, welcome) = ext_raw(&server, &c, "").await;
    let parsed: serde_json::Value = serde_json::from_str(&welcome).unwrap();
    let sid = parsed["sid"].as_str().unwrap().to_owned();
    assert_eq!(welcome, format!(r#"{{"type":"welcome","sid":"{sid}"}}"#));
    assert_eq!(sid.len(), 32);
    subscribed(&mut e, &id).await;
    assert_eq!(
        c.post_message(1, "positions", "pos-1", &csrf).await.status,
        200
    );
    let Some(WsEvent::Text(plain)) = v1.next_non_ping(T).await else {
        panic!("no frame")
    };
    let Some(WsEvent::Text(extended)) = e.next_non_ping(T).await else {
        panic!("no frame")
    };
    // The v1 frame is Rails' shape exactly; the extended one is the same bytes up to the
    // message, then AnyCable's three fields.
    let message_end = plain.len() - 1;
    assert!(plain.starts_with(r#"{"identifier":"#), "{plain}");
    assert!(!plain.contains("stream_id"), "{plain}");
    assert_eq!(&extended[..message_end], &plain[..message_end]);
    let parsed: serde_json::Value = serde_json::from_str(&extended).unwrap();
    let stream = parsed["stream_id"].as_str().unwrap();
    assert!(stream.ends_with(":messages"), "{extended}");
    let epoch = parsed["epoch"].as_str().unwrap();
    let offset = parsed["offset"].as_u64().unwrap();
    assert_eq!(
        &extended[message_end..],
        format!(r#","stream_id":"{stream}","epoch":"{epoch}","offset":{offset}}}"#)
    );
    // A pong is accepted silently; v1 clients are unchanged by it all.
    e.send_text(r#"{"command":"pong"}"#).await;
    assert_eq!(e.next_non_ping(Duration::from_millis(300)).await, None);
}

/// A post's unread notice on `user_<id>_unreads` (given its position by user id, with no
/// name parsed): an extended subscriber gets its own stream's name and consecutive offsets
/// after the sidebar's, each post once; a v1 subscriber of the same stream gets Rails' frame.
#[tokio::test]
async fn unread_notices_carry_each_members_own_stream_and_offsets() {
    let server = TestServer::start().await;
    let (mut jason, csrf, _) = signed_in(&server, "jason@example.com", "secret123456").await;
    let mut david = server.signed_in("david@example.com", "secret123456").await;
    let (positions, had) = sidebar_positions(&mut david).await;
    let unreads = r#"{"channel":"UnreadRoomsChannel"}"#;
    let mut v1 = common::connect_with(&server, &david).await;
    subscribed(&mut v1, unreads).await;
    let (mut e, _) = ext(&server, &david, "").await;
    subscribed(&mut e, unreads).await;
    for round in 1..=2 {
        let posted = jason
            .post_message(1, "unread", &format!("unread-{round}"), &csrf)
            .await;
        assert_eq!(posted.status, 200);
        assert_eq!(
            v1.next_non_ping(T).await,
            text(r#"{"identifier":"{\"channel\":\"UnreadRoomsChannel\"}","message":{"roomId":1}}"#)
        );
        let frame = next_json(&mut e).await;
        assert_eq!(
            frame["message"],
            serde_json::json!({"roomId": 1}),
            "{frame}"
        );
        let stream = frame["stream_id"].as_str().unwrap();
        assert!(
            stream.starts_with("user_") && stream.ends_with("_unreads"),
            "{frame}"
        );
        assert_ne!(stream, "user_0_unreads");
        assert_eq!(frame["offset"].as_u64(), Some(had + round), "{frame}");
        assert_eq!(
            frame["epoch"].as_str(),
            positions.split('.').next(),
            "{frame}"
        );
    }
    assert_eq!(e.next_non_ping(Duration::from_millis(300)).await, None);
}

/// Posts that mention a user, from several posters at once, among posts that do not: every
/// notice on the user's unread stream (each post's, each mention's) reaches an extended
/// subscriber once, at consecutive offsets in order. (A mention's notice once went out after
/// the commit, outside the write lock, and could take its offset while a concurrent post's
/// notices were being given theirs, be queued first and make the gate drop the post's; that
/// race needs seconds of load to show, so the order is held deterministically by
/// `broadcasts::tests::a_new_messages_mentions_go_out_in_its_pass_after_the_unread_notices`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_mentions_and_posts_keep_an_unread_stream_in_order() {
    const POSTS: usize = 40;
    let server = TestServer::start().await;
    let mut david = server.signed_in("david@example.com", "secret123456").await;
    let (_, had) = sidebar_positions(&mut david).await;
    let (mut e, _) = ext(&server, &david, "").await;
    subscribed(&mut e, r#"{"channel":"UnreadRoomsChannel"}"#).await;
    let sgid = crate::rich_text::sgid_of(&mut david, "David", 1).await;
    let mention = format!(
        "<div>hi {}</div>",
        crate::rich_text::trix_mention(&sgid, "David")
    );
    let mut posters = Vec::new();
    for (k, email) in ["jason@example.com", "jz@example.com", "kevin@example.com"]
        .into_iter()
        .enumerate()
    {
        let (mut c, csrf, _) = signed_in(&server, email, "secret123456").await;
        let mention = mention.clone();
        posters.push(tokio::spawn(async move {
            for i in 0..POSTS {
                let body = match i % 2 {
                    0 => "<div>plain</div>",
                    _ => mention.as_str(),
                };
                let b = common::form(&[
                    ("message[body]", body),
                    ("message[body_format]", "html"),
                    ("message[client_message_id]", &format!("p{k}-{i}")),
                    ("authenticity_token", &csrf),
                ]);
                let r = c.post_form("/rooms/1/messages", &b, &[]).await;
                assert!(
                    r.status == 302 || r.status == 200,
                    "{} {}",
                    r.status,
                    r.body
                );
            }
        }));
    }
    for p in posters {
        p.await.unwrap();
    }
    // Each post's notice and each mention's: 3 × (40 + 20).
    let expected = 3 * (POSTS + POSTS / 2);
    let mut offsets = Vec::new();
    let mut mentions = 0;
    while offsets.len() < expected {
        let Some(WsEvent::Text(frame)) = e.next_non_ping(T).await else {
            panic!("{} of {expected} notices: {offsets:?}", offsets.len())
        };
        let frame: serde_json::Value = serde_json::from_str(&frame).unwrap();
        mentions += usize::from(frame["message"]["mentioned"] == true);
        offsets.push(frame["offset"].as_u64().unwrap());
    }
    assert_eq!(e.next_non_ping(Duration::from_millis(300)).await, None);
    assert_eq!(mentions, 3 * POSTS / 2);
    let consecutive: Vec<u64> = (had + 1..=had + expected as u64).collect();
    assert_eq!(offsets, consecutive);
}

#[tokio::test]
async fn history_replays_after_an_offset_and_rejects_what_it_no_longer_holds() {
    let server = TestServer::start_with(|c| c.history_limit = 2).await;
    let (mut c, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let (mut e, _) = ext(&server, &c, "").await;
    subscribed(&mut e, &id).await;
    let mut offsets = Vec::new();
    let mut epoch = String::new();
    let mut stream = String::new();
    for i in 0..4 {
        let cid = format!("hist-{i}");
        assert_eq!(c.post_message(1, &cid, &cid, &csrf).await.status, 200);
        let frame = next_json(&mut e).await;
        offsets.push(frame["offset"].as_u64().unwrap());
        epoch = frame["epoch"].as_str().unwrap().to_owned();
        stream = frame["stream_id"].as_str().unwrap().to_owned();
    }
    assert!(offsets.windows(2).all(|w| w[1] == w[0] + 1), "{offsets:?}");
    // Malformed requests are ignored, as Rails ignores unknown commands.
    for bad in [
        serde_json::json!("yesterday"),
        serde_json::json!({"since": -5}),
        serde_json::json!({"streams": {stream.clone(): {"epoch": 1, "offset": 1}}}),
        serde_json::json!({}),
    ] {
        e.send_text(&history_cmd(&id, bad)).await;
    }
    e.send_text(r#"{"command":"history"}"#).await;
    e.send_text(
        r#"{"command":"history","identifier":"{\"channel\":\"Nope\"}","history":{"since":1}}"#,
    )
    .await;
    // Another tab, subscribed after the posts (the first got them live, and a history answer
    // never repeats what a subscription was sent).
    let (mut tab, _) = ext(&server, &c, "").await;
    subscribed(&mut tab, &id).await;
    let had = |offset: u64| serde_json::json!({"streams": {stream.clone(): {"epoch": epoch.clone(), "offset": offset}}});
    // offsets[0]: offsets[1] was dropped, so the client would miss it.
    tab.send_text(&history_cmd(&id, had(offsets[0]))).await;
    let rejected = format!(
        r#"{{"type":"reject_history","identifier":{}}}"#,
        serde_json::to_string(&id).unwrap()
    );
    assert_eq!(tab.next_non_ping(T).await, text(&rejected));
    // Another epoch (a restart): rejected; an offset past the head: rejected.
    let other = serde_json::json!({"streams": {stream.clone(): {"epoch": "elsewhere", "offset": offsets[3]}}});
    tab.send_text(&history_cmd(&id, other)).await;
    assert_eq!(tab.next_non_ping(T).await, text(&rejected));
    tab.send_text(&history_cmd(&id, had(offsets[3] + 5))).await;
    assert_eq!(tab.next_non_ping(T).await, text(&rejected));
    // The client had offsets[1]: the history (2 entries) still joins up with it.
    tab.send_text(&history_cmd(&id, had(offsets[1]))).await;
    for expected in &offsets[2..] {
        let frame = next_json(&mut tab).await;
        assert_eq!(frame["identifier"], id.as_str());
        assert_eq!(frame["offset"].as_u64(), Some(*expected), "{frame}");
        assert!(frame["message"].as_str().unwrap().contains("turbo-stream"));
    }
    assert_eq!(
        next_json(&mut tab).await,
        serde_json::json!({"type": "confirm_history", "identifier": id})
    );
    // Up to date: nothing to send, confirmed.
    tab.send_text(&history_cmd(&id, had(offsets[3]))).await;
    assert_eq!(
        next_json(&mut tab).await,
        serde_json::json!({"type": "confirm_history", "identifier": id})
    );
    // A v1 client's `history` is an unknown command: nothing comes back.
    let mut v1 = common::connect_with(&server, &c).await;
    subscribed(&mut v1, &id).await;
    v1.send_text(&history_cmd(&id, had(offsets[1]))).await;
    assert_eq!(v1.next_non_ping(Duration::from_millis(300)).await, None);
}

/// A live subscription's `history` command sends only what comes after what the subscription
/// was already sent: nothing it received live comes again, whatever the client's offset or
/// time.
#[tokio::test]
async fn a_live_subscriptions_history_sends_nothing_it_already_received() {
    let server = TestServer::start().await;
    let (mut c, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let (mut e, _) = ext(&server, &c, "").await;
    subscribed(&mut e, &id).await;
    let mut live = Vec::new();
    let (mut epoch, mut stream) = (String::new(), String::new());
    for i in 0..3 {
        let cid = format!("live-{i}");
        assert_eq!(c.post_message(1, &cid, &cid, &csrf).await.status, 200);
        let frame = next_json(&mut e).await;
        live.push(frame["offset"].as_u64().unwrap());
        epoch = frame["epoch"].as_str().unwrap().to_owned();
        stream = frame["stream_id"].as_str().unwrap().to_owned();
    }
    let confirmed = serde_json::json!({"type": "confirm_history", "identifier": id});
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 60;
    // An older offset of the same epoch, then only a time: the entries it asks for were all
    // received live.
    for asked in [
        serde_json::json!({"streams": {stream.clone(): {"epoch": epoch.clone(), "offset": live[0]}}}),
        serde_json::json!({"since": since}),
    ] {
        e.send_text(&history_cmd(&id, asked)).await;
        assert_eq!(next_json(&mut e).await, confirmed);
    }
    // What follows comes once.
    assert_eq!(c.post_message(1, "after", "after", &csrf).await.status, 200);
    let frame = next_json(&mut e).await;
    assert_eq!(frame["offset"].as_u64(), Some(live[2] + 1), "{frame}");
    assert_eq!(e.next_non_ping(Duration::from_millis(300)).await, None);
}

#[tokio::test]
async fn subscribe_with_history_confirms_then_replays_since_a_time() {
    let server = TestServer::start().await;
    let (mut c, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 5;
    assert_eq!(
        c.post_message(1, "earlier", "since-1", &csrf).await.status,
        200
    );
    let (mut e, _) = ext(&server, &c, "").await;
    let cmd =
        serde_json::json!({"command": "subscribe", "identifier": id, "history": {"since": since}});
    e.send_text(&cmd.to_string()).await;
    assert_eq!(e.next_non_ping(T).await, text(&common::confirm(&id)));
    let replayed = next_json(&mut e).await;
    assert!(
        replayed["message"]
            .as_str()
            .unwrap()
            .contains("message_since-1"),
        "{replayed}"
    );
    assert_eq!(
        next_json(&mut e).await,
        serde_json::json!({"type": "confirm_history", "identifier": id})
    );
}

/// Reads `ws` until `confirm_history` and `after` more positioned frames, checking that the
/// offsets run from `had + 1` up by one (each once, none before an older one); returns the
/// number of offsets read.
async fn offsets_once_in_order(ws: &mut Ws, had: u64, after: usize, round: usize) -> u64 {
    let mut expected = had + 1;
    let mut confirmed = None;
    loop {
        let frame = next_json(ws).await;
        match frame["type"].as_str() {
            Some("confirm_subscription") => continue,
            Some("confirm_history") => {
                assert!(confirmed.is_none(), "round {round}: a second {frame}");
                confirmed = Some(0);
                continue;
            }
            Some(other) => panic!("round {round}: {other}: {frame}"),
            None => {}
        }
        let offset = frame["offset"]
            .as_u64()
            .unwrap_or_else(|| panic!("{frame}"));
        assert_eq!(
            offset,
            expected,
            "round {round}: offset {offset} where {expected} was next ({})",
            if offset < expected {
                "sent twice, or after a later one"
            } else {
                "skipped"
            }
        );
        expected += 1;
        if let Some(n) = confirmed.as_mut() {
            *n += 1;
            if *n == after {
                return expected - had - 1;
            }
        }
    }
}

/// Live broadcasts racing a subscribe with a history request (the reconnect of a client whose
/// session could not be restored): the client gets every offset after its own once and in
/// order, the history's entries first, then the live ones, none twice. (The subscription is
/// attached before the history is read, so broadcasts in between used to come first, and
/// again in the history.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_subscribe_racing_live_broadcasts_gets_each_offset_once_in_order() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let server = TestServer::start_with(|c| c.history_limit = 100_000).await;
    let (mut c, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    // The room stream's name and epoch, from one positioned post.
    let (mut e, _) = ext(&server, &c, "").await;
    subscribed(&mut e, &id).await;
    assert_eq!(
        c.post_message(1, "first", "race-0", &csrf).await.status,
        200
    );
    let frame = next_json(&mut e).await;
    let stream = frame["stream_id"].as_str().unwrap().to_owned();
    let epoch = frame["epoch"].as_str().unwrap().to_owned();
    drop(e);
    // Broadcasts on the stream from another thread, a few thousand a second.
    let stop = Arc::new(AtomicBool::new(false));
    let flood = {
        let (bus, stream, stop) = (
            server.state.delivery.bus.clone(),
            stream.clone(),
            stop.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                bus.publish(&stream, br#""flood""#);
                std::thread::sleep(Duration::from_micros(100));
            }
        })
    };
    let history = server.state.delivery.history.clone();
    let deadline = tokio::time::Instant::now() + T;
    while history.head(&stream).offset < 300 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the flood is too slow"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for round in 0..12 {
        // 200 entries behind: building their frames takes a while, and broadcasts go on.
        let had = history.head(&stream).offset - 200;
        let (mut e, _) = ext(&server, &c, "").await;
        let cmd = serde_json::json!({
            "command": "subscribe",
            "identifier": id,
            "history": {"streams": {stream.clone(): {"epoch": epoch.clone(), "offset": had}}},
        });
        e.send_text(&cmd.to_string()).await;
        let read = offsets_once_in_order(&mut e, had, 20, round).await;
        assert!(read > 200, "round {round}: {read}");
    }
    stop.store(true, Ordering::Relaxed);
    flood.join().unwrap();
}

/// Closes `ws` from the client's side without a close frame (a dropped network) and waits
/// until the server has seen it.
async fn drop_socket(ws: Ws) {
    drop(ws);
    tokio::time::sleep(Duration::from_millis(300)).await;
}

#[tokio::test]
async fn a_session_is_restored_by_its_sid_with_its_own_cookie_once() {
    let server = TestServer::start().await;
    let (mut david, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let (jason, _, _) = signed_in(&server, "jason@example.com", "secret123456").await;

    let (mut e, welcome) = ext(&server, &david, "").await;
    let sid = welcome["sid"].as_str().unwrap().to_owned();
    subscribed(&mut e, &id).await;
    drop_socket(e).await;

    // A forged sid: a fresh session, which holds no subscription.
    let forged = format!("?sid={}", "ab".repeat(16));
    let (_fresh, welcome) = ext(&server, &david, &forged).await;
    assert!(welcome.get("restored").is_none(), "{welcome}");
    // David's sid with Jason's cookie: Jason's own fresh session, never David's.
    let (mut stolen, welcome) = ext(&server, &jason, &format!("?sid={sid}")).await;
    assert!(welcome.get("restored").is_none(), "{welcome}");
    assert_eq!(
        david
            .post_message(1, "not for the thief", "thief-1", &csrf)
            .await
            .status,
        200
    );
    assert_eq!(stolen.next_non_ping(Duration::from_millis(500)).await, None);
    // ...and the attempt used it up: David cannot restore it either now.
    let (_late, welcome) = ext(&server, &david, &format!("?sid={sid}")).await;
    assert!(welcome.get("restored").is_none(), "{welcome}");

    // A session restored by its own cookie: the subscription is back without a subscribe.
    let (mut e, welcome) = ext(&server, &david, "").await;
    let sid = welcome["sid"].as_str().unwrap().to_owned();
    subscribed(&mut e, &id).await;
    drop_socket(e).await;
    let (mut back, welcome) = ext(&server, &david, &format!("?sid={sid}")).await;
    let new_sid = welcome["sid"].as_str().unwrap().to_owned();
    assert_ne!(new_sid, sid);
    assert_eq!(
        welcome,
        serde_json::json!({"type": "welcome", "sid": new_sid, "restored": true, "restored_ids": [id]})
    );
    assert_eq!(
        david
            .post_message(1, "restored", "restored-1", &csrf)
            .await
            .status,
        200
    );
    let frame = next_json(&mut back).await;
    assert!(
        frame["message"]
            .as_str()
            .unwrap()
            .contains("message_restored-1"),
        "{frame}"
    );
    assert!(frame["offset"].as_u64().is_some(), "{frame}");
    // Used once: the old sid restores nothing again.
    let (_again, welcome) = ext(&server, &david, &format!("?sid={sid}")).await;
    assert!(welcome.get("restored").is_none(), "{welcome}");
    let metrics = david.get("/metrics").await.body;
    assert!(
        metrics.contains("hearth_cable_sessions_restored_total 1"),
        "{metrics}"
    );
}

/// Bad input to restores and history: a malformed `sid` (empty, not hex, too long, with junk,
/// under another name) starts a fresh session and does not use the stored one up; a malformed
/// `history` on a subscribe is ignored and the subscription works; a `history` request naming
/// a stream the subscription does not have reads nothing of it.
#[tokio::test]
async fn malformed_restores_and_history_requests_are_ignored_and_read_no_other_stream() {
    let server = TestServer::start().await;
    let (mut david, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let (mut e, welcome) = ext(&server, &david, "").await;
    let sid = welcome["sid"].as_str().unwrap().to_owned();
    subscribed(&mut e, &id).await;
    drop_socket(e).await;
    for query in [
        "?sid=".to_owned(),
        format!("?sid={}", "z".repeat(32)),
        format!("?sid={sid}{}", "0".repeat(40)),
        format!("?sid={sid}%00"),
        format!("?sid[]={sid}"),
        format!("?xsid={sid}"),
    ] {
        let (_fresh, welcome) = ext(&server, &david, &query).await;
        assert!(welcome.get("restored").is_none(), "{query}: {welcome}");
        let fresh = welcome["sid"].as_str().unwrap();
        assert!(fresh != sid && fresh.len() == 32, "{query}: {welcome}");
    }
    // None of them used the stored session up.
    let (mut back, welcome) = ext(&server, &david, &format!("?sid={sid}")).await;
    assert_eq!(welcome["restored"], true, "{welcome}");

    // A history request for a stream the subscription does not have: nothing of it is read.
    server
        .state
        .delivery
        .bus
        .publish("elsewhere", br#""not yours""#);
    let foreign = serde_json::json!({"streams": {"elsewhere": {"epoch": server.state.delivery.history.epoch().to_string(), "offset": 0}}});
    back.send_text(&history_cmd(&id, foreign)).await;
    let answer = next_json(&mut back).await;
    assert_eq!(
        answer,
        serde_json::json!({"type": "confirm_history", "identifier": id}),
        "{answer}"
    );

    // A subscribe whose `history` is malformed: subscribed, no history answer, live posts.
    for bad in [
        serde_json::json!("yesterday"),
        serde_json::json!({"since": -1}),
        serde_json::json!({"streams": ["a"]}),
    ] {
        let (mut e, _) = ext(&server, &david, "").await;
        let cmd = serde_json::json!({"command": "subscribe", "identifier": id, "history": bad});
        e.send_text(&cmd.to_string()).await;
        assert_eq!(
            e.next_non_ping(T).await,
            text(&common::confirm(&id)),
            "{bad}"
        );
        assert_eq!(
            e.next_non_ping(Duration::from_millis(300)).await,
            None,
            "{bad}"
        );
        let cid = format!("bad-history-{}", rand::random::<u32>());
        assert_eq!(david.post_message(1, &cid, &cid, &csrf).await.status, 200);
        let frame = next_json(&mut e).await;
        assert!(frame["message"].as_str().unwrap().contains(&cid), "{frame}");
    }
}

#[tokio::test]
async fn an_expired_or_signed_out_session_is_not_restored() {
    let server = TestServer::start_with(|c| c.sessions_ttl = 1).await;
    let (david, _, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let (mut e, welcome) = ext(&server, &david, "").await;
    let sid = welcome["sid"].as_str().unwrap().to_owned();
    subscribed(&mut e, &id).await;
    drop_socket(e).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let (_fresh, welcome) = ext(&server, &david, &format!("?sid={sid}")).await;
    assert!(welcome.get("restored").is_none(), "{welcome}");

    // Signed out after the socket dropped: the stored session goes with the sign-out.
    let server = TestServer::start().await;
    let (mut david, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let cookie = david.cookie_header();
    let (mut e, welcome) = ext(&server, &david, "").await;
    let sid = welcome["sid"].as_str().unwrap().to_owned();
    subscribed(&mut e, &id).await;
    drop_socket(e).await;
    let out = david
        .post_form(
            "/session",
            &common::form(&[("_method", "delete"), ("authenticity_token", &csrf)]),
            &[],
        )
        .await;
    assert!(out.status < 400, "{}", out.status);
    let mut old = Ws::connect_to(
        server.addr,
        &format!("/cable?sid={sid}"),
        Some(&cookie),
        Some(&server.origin()),
        Some(EXT),
    )
    .await;
    assert_eq!(old.status, 101);
    assert_eq!(
        old.next(T).await,
        text(r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#)
    );
}

/// `@anycable/core` (npm, unmodified) with `actioncable-v1-ext-json`: positions on live
/// broadcasts, a restored session after a dropped socket, the posts made meanwhile from the
/// history exactly once, and `reject_history` once more was missed than the history keeps.
#[tokio::test]
async fn anycable_core_restores_its_session_and_catches_up_from_the_history() {
    crate::node_client::ensure_node_modules();
    let server = TestServer::start_with(|c| c.history_limit = 2).await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/anycable.mjs");
    let output = tokio::process::Command::new("node")
        .arg(script)
        .args(["--base", &server.origin(), "--timeout", "30"])
        .output()
        .await
        .expect("node runs");
    let out = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.contains(r#"RECV {"type":"welcome","sid":""#), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("LIVE live-1 ") && !l.ends_with("undefined")),
        "{out}"
    );
    assert!(out.contains(r#""restored":true,"restored_ids":["#), "{out}");
    assert!(out.contains("CAUGHT-UP gap-1,gap-2"), "{out}");
    assert!(out.contains("REJECTED-HISTORY"), "{out}");
    // Restored twice, never subscribed again: one confirm_subscription in all.
    assert_eq!(out.matches("confirm_subscription").count(), 1, "{out}");
}

/// `GET /users/me/sidebar/catch_up` with `positions`: the answer's body and next positions.
async fn sidebar_catch_up(c: &mut Client, positions: &str) -> (String, String) {
    let r = c
        .get(&format!("/users/me/sidebar/catch_up?history={positions}"))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let next = r
        .header("x-sidebar-history")
        .expect("next positions")
        .to_owned();
    (r.body, next)
}

#[tokio::test]
async fn a_missed_unread_mark_catches_up_as_the_list_rendered_from_the_database() {
    let server = TestServer::start().await;
    let (mut jason, csrf, _) = signed_in(&server, "jason@example.com", "secret123456").await;
    let mut david = server.signed_in("david@example.com", "secret123456").await;
    let (positions, _) = sidebar_positions(&mut david).await;
    // Nothing missed: an empty answer, the same positions.
    let (body, next) = sidebar_catch_up(&mut david, &positions).await;
    assert_eq!((body.trim(), next.as_str()), ("", positions.as_str()));
    // Jason posts while David is away: David's unread mark of room 1 moved.
    assert_eq!(
        jason
            .post_message(1, "while away", "away-1", &csrf)
            .await
            .status,
        200
    );
    let (body, next) = sidebar_catch_up(&mut david, &positions).await;
    assert!(
        body.contains(r#"<turbo-stream action="replace" target="sidebar_rooms">"#),
        "{body}"
    );
    let entry = body
        .split("<li ")
        .find(|li| li.contains(r#"data-room-id="1""#))
        .expect("room 1 in the list");
    assert!(entry.contains("room-link--unread"), "{entry}");
    // The next positions are the list's own, one notice further on the unread stream.
    let offsets =
        |p: &str| -> Vec<u64> { p.split('.').skip(1).map(|n| n.parse().unwrap()).collect() };
    assert_eq!(
        offsets(&next)[2],
        offsets(&positions)[2] + 1,
        "{positions} -> {next}"
    );
    assert!(
        body.contains(&format!("data-sidebar-history=\"{next}\"")),
        "{body}"
    );
    let (body, again) = sidebar_catch_up(&mut david, &next).await;
    assert_eq!((body.trim(), again.as_str()), ("", next.as_str()));
}

/// Hostile `history` requests on a live subscription, each answered exactly: offsets that are
/// not a JSON integer of `u64` (negative, a string, a fraction, `1e300`, `2^64`, null), a
/// position without its epoch, a `since` that is negative, a string or a fraction, more than
/// 64 streams are ignored (no frame, as Rails ignores an unknown command); an offset past the
/// head (`u64::MAX`) or another epoch is `reject_history`; a `since` far in the future
/// confirms and sends nothing; a request for a subscription the connection does not hold,
/// or for an identifier whose stream is not signed (its subscribe rejected), is ignored. The
/// subscription then gets the next post once, at the next offset.
#[tokio::test]
async fn hostile_history_requests_are_ignored_or_rejected_exactly() {
    let server = TestServer::start().await;
    let (mut david, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let (mut e, _) = ext(&server, &david, "").await;
    subscribed(&mut e, &id).await;
    assert_eq!(
        david
            .post_message(1, "hostile 1", "hostile-1", &csrf)
            .await
            .status,
        200
    );
    let live = next_json(&mut e).await;
    let stream = live["stream_id"].as_str().unwrap().to_owned();
    let epoch = live["epoch"].as_str().unwrap().to_owned();
    let offset = live["offset"].as_u64().unwrap();
    let quiet = Duration::from_millis(300);
    let id_json = serde_json::to_string(&id).unwrap();
    let stream_json = serde_json::to_string(&stream).unwrap();
    let position = |value: &str| format!(r#"{{"streams":{{{stream_json}:{value}}}}}"#);
    let many: serde_json::Map<String, serde_json::Value> = (0..65)
        .map(|i| {
            let s = if i == 0 {
                stream.clone()
            } else {
                format!("s{i}")
            };
            (s, serde_json::json!({"epoch": epoch, "offset": 0}))
        })
        .collect();
    let ignored = [
        position(&format!(r#"{{"epoch":"{epoch}","offset":-1}}"#)),
        position(&format!(r#"{{"epoch":"{epoch}","offset":"1"}}"#)),
        position(&format!(r#"{{"epoch":"{epoch}","offset":1.5}}"#)),
        position(&format!(r#"{{"epoch":"{epoch}","offset":1e300}}"#)),
        position(&format!(
            r#"{{"epoch":"{epoch}","offset":18446744073709551616}}"#
        )),
        position(&format!(r#"{{"epoch":"{epoch}","offset":null}}"#)),
        position(r#"{"offset":0}"#),
        position(r#"{"epoch":7,"offset":0}"#),
        position("[0]"),
        r#"{"since":-5}"#.to_owned(),
        r#"{"since":"yesterday"}"#.to_owned(),
        r#"{"since":1.5}"#.to_owned(),
        r"{}".to_owned(),
        r"null".to_owned(),
        serde_json::json!({ "streams": many }).to_string(),
    ];
    for history in &ignored {
        let cmd = format!(r#"{{"command":"history","identifier":{id_json},"history":{history}}}"#);
        e.send_text(&cmd).await;
        assert_eq!(e.next_non_ping(quiet).await, None, "{history}");
    }
    let reject = serde_json::json!({"type": "reject_history", "identifier": id});
    for history in [
        position(&format!(r#"{{"epoch":"{epoch}","offset":{}}}"#, u64::MAX)),
        position(r#"{"epoch":"another","offset":0}"#),
    ] {
        let cmd = format!(r#"{{"command":"history","identifier":{id_json},"history":{history}}}"#);
        e.send_text(&cmd).await;
        assert_eq!(next_json(&mut e).await, reject, "{history}");
        assert_eq!(e.next_non_ping(quiet).await, None, "{history}");
    }
    // A time far in the future: nothing is that recent.
    e.send_text(&history_cmd(&id, serde_json::json!({ "since": u64::MAX })))
        .await;
    assert_eq!(
        next_json(&mut e).await,
        serde_json::json!({"type": "confirm_history", "identifier": id})
    );
    assert_eq!(e.next_non_ping(quiet).await, None);

    // Not this connection's subscription: another room's identifier, never subscribed.
    let valid = serde_json::json!({"streams": {&stream: {"epoch": &epoch, "offset": 0}}});
    let other = room_identifier("never-subscribed");
    e.send_text(&history_cmd(&other, &valid)).await;
    assert_eq!(e.next_non_ping(quiet).await, None);
    // An unsigned stream name: its subscribe is rejected, its history ignored.
    let unsigned =
        serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": stream})
            .to_string();
    e.send_text(&subscribe_cmd(&unsigned)).await;
    assert_eq!(
        next_json(&mut e).await,
        serde_json::json!({"identifier": unsigned, "type": "reject_subscription"})
    );
    e.send_text(&history_cmd(&unsigned, &valid)).await;
    assert_eq!(e.next_non_ping(quiet).await, None);

    // The subscription is as it was: the next post once, at the next offset.
    assert_eq!(
        david
            .post_message(1, "hostile 2", "hostile-2", &csrf)
            .await
            .status,
        200
    );
    let next = next_json(&mut e).await;
    assert!(
        next["message"].as_str().unwrap().contains("hostile-2"),
        "{next}"
    );
    assert_eq!(next["epoch"], epoch.as_str());
    assert_eq!(next["offset"].as_u64(), Some(offset + 1), "{next}");
    assert_eq!(e.next_non_ping(quiet).await, None);
}

/// A tampered `sid` (one hex digit changed) names no session: the exact fresh welcome, no
/// subscription comes back, and the session it was forged from is still David's to restore.
/// Jason with David's `sid` gets a fresh session of his own: a `history` for David's
/// subscription on it is ignored (it holds none), and nothing of David's room reaches it.
#[tokio::test]
async fn a_tampered_or_another_users_sid_starts_a_fresh_session_with_exact_frames() {
    let server = TestServer::start().await;
    let (mut david, csrf, id) = signed_in(&server, "david@example.com", "secret123456").await;
    let (jason, _, _) = signed_in(&server, "jason@example.com", "secret123456").await;
    let quiet = Duration::from_millis(300);
    let fresh_welcome = |raw: &str, not: &str| {
        let welcome: serde_json::Value = serde_json::from_str(raw).unwrap();
        let sid = welcome["sid"].as_str().unwrap().to_owned();
        assert_eq!(raw, format!(r#"{{"type":"welcome","sid":"{sid}"}}"#));
        assert!(
            sid != not && sid.len() == 32 && sid.bytes().all(|b| b.is_ascii_hexdigit()),
            "{raw}"
        );
        sid
    };

    let (mut e, welcome) = ext(&server, &david, "").await;
    let sid = welcome["sid"].as_str().unwrap().to_owned();
    subscribed(&mut e, &id).await;
    drop_socket(e).await;
    let last = sid.chars().last().unwrap();
    let tampered = format!("{}{}", &sid[..31], if last == '0' { '1' } else { '0' });
    let (mut t, raw) = ext_raw(&server, &david, &format!("?sid={tampered}")).await;
    fresh_welcome(&raw, &sid);
    assert_eq!(t.next_non_ping(quiet).await, None);
    assert_eq!(
        david
            .post_message(1, "tampered", "tampered-1", &csrf)
            .await
            .status,
        200
    );
    assert_eq!(
        t.next_non_ping(quiet).await,
        None,
        "a tampered sid restored a subscription"
    );
    drop(t);
    // The session it was forged from is untouched.
    let (back, welcome) = ext(&server, &david, &format!("?sid={sid}")).await;
    let new_sid = welcome["sid"].as_str().unwrap().to_owned();
    assert_eq!(
        welcome,
        serde_json::json!({"type": "welcome", "sid": new_sid, "restored": true, "restored_ids": [id]})
    );
    drop_socket(back).await;

    // Jason with David's (new) sid and his own cookie.
    let (mut stolen, raw) = ext_raw(&server, &jason, &format!("?sid={new_sid}")).await;
    fresh_welcome(&raw, &new_sid);
    let epoch = server.state.delivery.history.epoch().to_string();
    let stream = "Z2lkOi8vY2FtcGZpcmUvUm9vbXM6Ok9wZW4vMQ:messages";
    stolen
        .send_text(&history_cmd(
            &id,
            serde_json::json!({"streams": {stream: {"epoch": epoch, "offset": 0}}}),
        ))
        .await;
    assert_eq!(stolen.next_non_ping(quiet).await, None);
    assert_eq!(
        david
            .post_message(1, "not for jason", "stolen-1", &csrf)
            .await
            .status,
        200
    );
    assert_eq!(stolen.next_non_ping(quiet).await, None);
}
