//! A hostile pass on the app channels' surface (`--rpc-url`, AnyCable's HTTP RPC): a client
//! and an app (`tests/node/rpc_app.mjs`, `@anycable/serverless-js` answering, with the hostile
//! answers it gives on request) that try to break a node, and the remote disconnect. Each
//! test holds what a finding showed, or what was tried and held.

use std::time::Duration;

use crate::common::{TestServer, Ws, WsEvent};
use crate::rpc_channels::{app_calls, frame_with, server_for, App, KEY};

const HOSTILE: &str = r#"{\"channel\":\"HostileChannel\"}"#;

/// A connection the app identified as `username` (with the extra `cookie` parts), once its
/// welcome has arrived.
async fn connected(server: &TestServer, cookie: &str) -> Ws {
    let origin = server.origin();
    let mut ws = Ws::connect(server.addr, Some(cookie), Some(&origin), None).await;
    assert!(
        frame_with(&mut ws, "welcome", Duration::from_secs(5))
            .await
            .is_some(),
        "welcome for {cookie}"
    );
    ws
}

/// Subscribes `ws` to the channel whose escaped identifier is `identifier` and waits for the
/// confirmation.
async fn subscribed(ws: &mut Ws, identifier: &str) {
    ws.send_text(&format!(
        r#"{{"command":"subscribe","identifier":"{identifier}"}}"#
    ))
    .await;
    assert!(
        frame_with(ws, "confirm_subscription", Duration::from_secs(5))
            .await
            .is_some(),
        "{identifier} confirmed"
    );
}

/// Performs `action` with the extra JSON members `members` (`,"k":v`, or empty) on the
/// subscription whose escaped identifier is `identifier`.
async fn perform(ws: &mut Ws, identifier: &str, action: &str, members: &str) {
    let data = format!(r#"{{"action":"{action}"{members}}}"#).replace('"', r#"\""#);
    ws.send_text(&format!(
        r#"{{"command":"message","identifier":"{identifier}","data":"{data}"}}"#
    ))
    .await;
}

/// Reads until the connection closes; its close code, or None when it stays open `within`.
async fn closed_within(ws: &mut Ws, within: Duration) -> Option<u16> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_non_ping(left).await? {
            WsEvent::Close(code) => return Some(code),
            WsEvent::Eof => return Some(0),
            WsEvent::Text(_) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_answered_with_a_json_array_closes_the_connection() {
    // serde reads a struct from an array field by field: `[1]` was a SUCCESS with no
    // identifiers and no welcome, a connection left open that nobody could use.
    let app = App::start().await;
    let server = server_for(&app).await;
    let origin = server.origin();
    let mut ws = Ws::connect(
        server.addr,
        Some("username=ada; hostile=array"),
        Some(&origin),
        None,
    )
    .await;
    assert_eq!(
        closed_within(&mut ws, Duration::from_secs(5)).await,
        Some(1011),
        "an answer that is not a JSON object is malformed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_disconnect_without_an_identifier_closes_no_connection() {
    // An app that accepts a connection without identifying it gives `identifiers: ""`; a
    // disconnect command without an identifier (or an empty one) matched all of them.
    let app = App::start().await;
    let server = server_for(&app).await;
    let mut anonymous = connected(&server, "hostile=anonymous").await;
    let auth = format!("Bearer {}", server.state.keys.broadcast_key);
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let mut client = server.client();
    for body in [
        r#"{"command":"disconnect","payload":{"reconnect":false}}"#,
        r#"{"command":"disconnect","payload":{"identifier":"","reconnect":false}}"#,
        r#"{"command":"disconnect","payload":{"identifier":42}}"#,
    ] {
        let r = client
            .request("POST", "/_broadcast", &headers, body.as_bytes())
            .await;
        assert_eq!(r.status, 422, "{body}");
    }
    assert_eq!(
        closed_within(&mut anonymous, Duration::from_secs(1)).await,
        None,
        "the anonymous connection stays open"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_named_like_a_node_channel_leaves_the_node_listening() {
    // A stream `__anycable__` is the Redis channel `<prefix>:__anycable__`, the node's own
    // channel of AnyCable broadcasts: the last subscriber leaving it UNSUBSCRIBEd the node,
    // and the app's broadcasts over Redis stopped reaching it. A client reaches any stream
    // name through an app that streams from a parameter (`stream_from params[:name]`).
    let app = App::start().await;
    let url = crate::redis::redis_url();
    let prefix = crate::redis::unique_prefix("rpcnode");
    let (rpc, redis, channel_prefix) = (
        format!("{}/_anycable", app.url),
        url.clone(),
        prefix.clone(),
    );
    let server = TestServer::start_with(|c| {
        c.pubsub = hearth::config::PubSubKind::Redis;
        c.redis_url = redis.into();
        c.redis_channel_prefix = channel_prefix;
        c.rpc_url = Some(rpc);
        c.rpc_secret = Some(KEY.to_owned().into());
    })
    .await;
    let mut reader = connected(&server, "username=rae").await;
    subscribed(
        &mut reader,
        r#"{\"channel\":\"StreamChannel\",\"name\":\"plain\"}"#,
    )
    .await;
    let mut hostile = connected(&server, "username=hal").await;
    for name in ["__anycable__", "hearth/control", "hearth/marks"] {
        let identifier = format!(r#"{{\"channel\":\"StreamChannel\",\"name\":\"{name}\"}}"#);
        subscribed(&mut hostile, &identifier).await;
        hostile
            .send_text(&format!(
                r#"{{"command":"unsubscribe","identifier":"{identifier}"}}"#
            ))
            .await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let publication = br#"{"stream":"plain","data":"{\"via\":\"anycable\"}"}"#;
    crate::redis::publish(&url, &format!("{prefix}:__anycable__"), publication).await;
    assert!(
        frame_with(&mut reader, "anycable", Duration::from_secs(5))
            .await
            .is_some(),
        "AnyCable's broadcasts still reach the node"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_streams_in_one_answer_close_that_connection_at_once() {
    // 70,000 streams fit in a 1 MiB answer; each was checked against the subscription's list
    // (quadratic: tens of seconds of a core for one answer) and attached.
    let app = App::start().await;
    let server = server_for(&app).await;
    let mut ws = connected(&server, "username=sam").await;
    subscribed(&mut ws, HOSTILE).await;
    perform(&mut ws, HOSTILE, "many_streams", r#","count":10"#).await;
    assert!(
        frame_with(&mut ws, r#""streams":10"#, Duration::from_secs(5))
            .await
            .is_some()
    );
    let started = std::time::Instant::now();
    perform(&mut ws, HOSTILE, "many_streams", r#","count":70000"#).await;
    assert_eq!(
        closed_within(&mut ws, Duration::from_secs(8)).await,
        Some(1011),
        "an answer past the streams limit is refused"
    );
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_state_past_the_limit_closes_the_connection() {
    // Every answer may add connection state, which every later call carries: an app that
    // adds a key per action grew it (and each call's body) without a bound.
    let app = App::start().await;
    let server = server_for(&app).await;
    let mut ws = connected(&server, "username=ben").await;
    subscribed(&mut ws, HOSTILE).await;
    perform(&mut ws, HOSTILE, "bloat", r#","bytes":1000"#).await;
    assert!(frame_with(&mut ws, "bloated", Duration::from_secs(5))
        .await
        .is_some());
    perform(&mut ws, HOSTILE, "bloat", r#","bytes":200000"#).await;
    assert_eq!(
        closed_within(&mut ws, Duration::from_secs(5)).await,
        Some(1011),
        "state past the limit is refused"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identifiers_past_the_limit_refuse_the_connection() {
    // 300 KiB of identifiers were kept for the connection's life and sent with every call.
    let app = App::start().await;
    let server = server_for(&app).await;
    let origin = server.origin();
    let mut ws = Ws::connect(
        server.addr,
        Some("username=ida; hostile=huge_ids"),
        Some(&origin),
        None,
    )
    .await;
    assert_eq!(
        closed_within(&mut ws, Duration::from_secs(5)).await,
        Some(1011)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_cannot_stream_campfires_own_streams() {
    // Campfire's streams carry what its memberships guard, re-checked by Campfire's channels
    // only: an app's subscription (and so a client choosing a stream name through the app)
    // must not receive a room's messages or another person's marks.
    let app = App::start().await;
    let server = server_for(&app).await;
    let gid = hearth::rails::global_id::to_gid_param(&server.state.config.gid_app, "Room", 1);
    let mut ws = connected(&server, "username=eve").await;
    let stream_channel = r#"{\"channel\":\"StreamChannel\",\"name\":\"open\"}"#;
    subscribed(&mut ws, stream_channel).await;
    let campfire = [
        format!("{gid}:messages"),
        gid.clone(),
        format!("typing_notifications:{gid}"),
        "user_1_unreads".to_owned(),
        "user_1_bookmarks".to_owned(),
    ];
    for name in &campfire {
        perform(
            &mut ws,
            stream_channel,
            "follow",
            &format!(r#","name":"{name}""#),
        )
        .await;
        assert!(frame_with(&mut ws, "following", Duration::from_secs(5))
            .await
            .is_some());
    }
    for name in &campfire {
        server
            .state
            .delivery
            .broadcaster
            .broadcast(name, br#"{"secret":"campfire"}"#);
    }
    server
        .state
        .delivery
        .broadcaster
        .broadcast("open", br#"{"fine":"app"}"#);
    let first = frame_with(&mut ws, "message", Duration::from_secs(5)).await;
    assert!(
        first.as_deref().is_some_and(|f| f.contains("fine")),
        "{first:?}"
    );
}

/// A change to a server's settings.
type Tweak = fn(&mut hearth::config::Config);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_rpc_settings_are_refused_at_start() {
    // A key with a line break made every call fail as "could not be reached" (the header is
    // refused when the request is built), an https URL likewise (the client speaks plain
    // HTTP), and a header name that is no header name was never passed: all at run time,
    // each call a breaker failure, nothing said at start.
    let cases: [(&str, Tweak); 4] = [
        ("--rpc-secret", |c| {
            c.rpc_secret = Some("key\r\nX-Injected: 1".to_owned().into());
        }),
        ("--rpc-url", |c| {
            c.rpc_url = Some("https://127.0.0.1:1/_anycable".into());
        }),
        ("--rpc-url", |c| {
            c.rpc_url = Some("127.0.0.1:1/_anycable".into())
        }),
        ("--rpc-headers", |c| {
            c.rpc_headers = vec!["cookie".into(), "x-bad header\r\n".into()];
        }),
    ];
    for (flag, tweak) in cases {
        let dir = crate::common::temp_dir("rpcflags");
        let mut config = hearth::config::Config::for_tests(&dir);
        config.rpc_url = Some("http://127.0.0.1:1/_anycable".into());
        tweak(&mut config);
        let Err(e) = hearth::app::Server::bind(config).await else {
            panic!("{flag}: a bad setting starts a server");
        };
        let message = format!("{e:#}");
        assert!(message.contains(flag), "{flag}: {message}");
        assert!(!message.contains("X-Injected"), "{message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_client_costs_the_app_no_extra_calls() {
    // What held: an identifier past the limit is rejected without a call, an unsubscribe of
    // nothing and a second subscribe of the same identifier make none, and a client gone
    // during a slow call gets one `disconnect`.
    let app = App::start().await;
    let server = server_for(&app).await;
    let mut ws = connected(&server, "username=hugo").await;
    let huge = format!(
        r#"{{\"channel\":\"EchoChannel\",\"pad\":\"{}\"}}"#,
        "x".repeat(server.state.config.max_identifier_bytes)
    );
    ws.send_text(&format!(
        r#"{{"command":"subscribe","identifier":"{huge}"}}"#
    ))
    .await;
    assert!(
        frame_with(&mut ws, "reject_subscription", Duration::from_secs(5))
            .await
            .is_some()
    );
    ws.send_text(
        r#"{"command":"unsubscribe","identifier":"{\"channel\":\"EchoChannel\",\"never\":1}"}"#,
    )
    .await;
    let echo = r#"{\"channel\":\"EchoChannel\",\"twice\":1}"#;
    subscribed(&mut ws, echo).await;
    ws.send_text(&format!(
        r#"{{"command":"subscribe","identifier":"{echo}"}}"#
    ))
    .await;
    app.control("/_control/slow?ms=1500").await;
    perform(&mut ws, echo, "echo", r#","last":1"#).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(ws);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let calls: Vec<serde_json::Value> = serde_json::from_str(&app_calls(&app).await).unwrap();
    let commands: Vec<&serde_json::Value> =
        calls.iter().filter(|c| c["event"] == "command").collect();
    assert_eq!(
        commands.len(),
        2,
        "one subscribe, one message: {commands:?}"
    );
    assert!(commands.iter().all(
        |c| !c["identifier"].as_str().unwrap_or_default().contains("pad")
            && !c["identifier"]
                .as_str()
                .unwrap_or_default()
                .contains("never")
    ));
    let disconnects = calls
        .iter()
        .filter(|c| c["event"] == "disconnect" && c["username"] == "hugo")
        .count();
    assert_eq!(disconnects, 1, "{calls:?}");
}
