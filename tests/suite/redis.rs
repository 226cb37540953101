//! Several Hearth nodes sharing broadcasts through the machine's real Redis (`REDIS_URL`,
//! default `redis://127.0.0.1:6379`), in Rails' redis adapter format: each test uses its own
//! `--redis-channel-prefix`, so tests (and other users of the same Redis) do not interfere.
//! Nodes share one SQLite database, as an app node and cable nodes share one app.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{confirm, connect_with, subscribe_cmd, text, Client, TestServer, Ws, WsEvent};

const T: Duration = Duration::from_secs(10);

pub(crate) fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

pub(crate) fn unique_prefix(tag: &str) -> String {
    format!(
        "hearth_test_{tag}_{}_{:x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

/// `n` nodes on one database with the Redis adapter on `url` and `prefix`; waits until
/// every node's link is up. Only the first node removes the directory when dropped.
async fn cluster(url: &str, prefix: &str, n: usize) -> Vec<TestServer> {
    let dir = common::temp_dir("redis");
    let mut nodes = Vec::new();
    for i in 0..n {
        let (url, prefix) = (url.to_owned(), prefix.to_owned());
        let mut node = TestServer::start_in(dir.clone(), move |c| {
            c.pubsub = hearth::config::PubSubKind::Redis;
            c.redis_url = url.into();
            c.redis_channel_prefix = prefix;
        })
        .await;
        if i > 0 {
            node.dir = PathBuf::new();
        }
        nodes.push(node);
    }
    for node in &nodes {
        wait_link(node, true).await;
    }
    nodes
}

/// An app node (`--role app`) and `cables` cable nodes (`--role cable`, no database file)
/// asking it; index 0 is the app node.
async fn app_and_cables(url: &str, prefix: &str, cables: usize) -> Vec<TestServer> {
    let dir = common::temp_dir("roles");
    let redis = |c: &mut hearth::config::Config| {
        c.pubsub = hearth::config::PubSubKind::Redis;
        c.redis_url = url.to_owned().into();
        c.redis_channel_prefix = prefix.to_owned();
    };
    let app = TestServer::start_in(dir.clone(), |c| {
        redis(c);
        c.role = hearth::config::Role::App;
    })
    .await;
    let app_url = format!("http://{}", app.addr);
    let mut nodes = vec![app];
    for _ in 0..cables {
        let cable_dir = common::temp_dir("cable");
        let app_url = app_url.clone();
        let node = TestServer::start_in(cable_dir.clone(), |c| {
            redis(c);
            c.role = hearth::config::Role::Cable;
            c.app_url = Some(app_url);
            c.database = cable_dir.join("never-opened.sqlite3");
        })
        .await;
        assert!(
            !cable_dir.join("never-opened.sqlite3").exists(),
            "a cable node opened a database file"
        );
        nodes.push(node);
    }
    for node in &nodes {
        wait_link(node, true).await;
    }
    nodes
}

pub(crate) async fn wait_link(node: &TestServer, up: bool) {
    let deadline = tokio::time::Instant::now() + T;
    while (node.state.delivery.bus.health() == hearth::pubsub::Health::Linked) != up {
        assert!(
            tokio::time::Instant::now() < deadline,
            "Redis link never became {up}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn redis_conn(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .expect("a Redis URL")
        .get_multiplexed_async_connection()
        .await
        .expect("Redis answers (start redis-server, or set REDIS_URL)")
}

pub(crate) async fn publish(url: &str, channel: &str, payload: &[u8]) -> i64 {
    let mut conn = redis_conn(url).await;
    redis::cmd("PUBLISH")
        .arg(channel)
        .arg(payload)
        .query_async(&mut conn)
        .await
        .expect("PUBLISH")
}

pub(crate) fn room_identifier(signed: &str) -> String {
    serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed}).to_string()
}

fn turbo_identifier(signed: &str) -> String {
    serde_json::json!({"channel": "Turbo::StreamsChannel", "signed_stream_name": signed})
        .to_string()
}

/// A signed-in client of `app` and room 1's signed message stream name and CSRF token.
pub(crate) async fn member_of_room_1(app: &TestServer, email: &str) -> (Client, String, String) {
    let mut c = app.signed_in(email, "secret123456").await;
    let (csrf, html) = c.room(1).await;
    let signed = common::attr_after(
        &html,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .expect("the room page names its stream")
    .replace("&#x3D;", "=");
    (c, signed, csrf)
}

/// Opens `/cable` on `node` with `c`'s cookies and subscribes to `identifier`.
pub(crate) async fn subscribed(node: &TestServer, c: &Client, identifier: &str) -> Ws {
    let mut ws = connect_with(node, c).await;
    ws.send_text(&subscribe_cmd(identifier)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(identifier)));
    ws
}

pub(crate) async fn next_text(ws: &mut Ws) -> String {
    match ws.next_non_ping(T).await {
        Some(WsEvent::Text(t)) => t,
        other => panic!("expected a text frame, got {other:?}"),
    }
}

pub(crate) async fn nothing_more(ws: &mut Ws) {
    let next = ws.next_non_ping(Duration::from_millis(400)).await;
    assert!(next.is_none(), "unexpected frame: {next:?}");
}

async fn user_id(node: &TestServer, email: &str) -> i64 {
    hearth::db::users::find_active_for_login(&node.state.db.pool, email)
        .await
        .expect("query")
        .expect("an active user")
        .0
        .id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_on_the_app_node_reach_clients_on_both_cable_nodes_once_and_in_order() {
    let url = redis_url();
    let nodes = app_and_cables(&url, &unique_prefix("order"), 2).await;
    let (mut poster, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let id = room_identifier(&signed);
    let (reader, _, _) = member_of_room_1(&nodes[0], "jason@example.com").await;
    // The app node serves no /cable.
    assert_eq!(nodes[0].client().get("/cable").await.status, 404);
    let mut sockets = Vec::new();
    for node in &nodes[1..] {
        sockets.push(subscribed(node, &poster, &id).await);
        sockets.push(subscribed(node, &reader, &id).await);
    }
    for i in 0..5 {
        let r = poster
            .post_message(1, &format!("spread {i}"), &format!("spread-{i}"), &csrf)
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    for ws in &mut sockets {
        for i in 0..5 {
            let frame = next_text(ws).await;
            assert!(frame.contains(&format!("spread {i}")), "{i}: {frame}");
        }
        nothing_more(ws).await;
    }
    // Each cable node SUBSCRIBEd once to the room's channel: one PUBLISH reached both.
    let n = publish(
        &url,
        &format!(
            "{}:{}",
            nodes[0].state.config.redis_channel_prefix,
            nodes[0].state.keys.signer.verify(&signed).expect("signed")
        ),
        b"\"count\"",
    )
    .await;
    assert_eq!(n, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raw_rails_publish_and_anycable_broadcasts_reach_subscribers_byte_for_byte() {
    let url = redis_url();
    let prefix = unique_prefix("raw");
    let nodes = cluster(&url, &prefix, 2).await;
    let c = nodes[0]
        .signed_in("david@example.com", "secret123456")
        .await;
    let id = turbo_identifier(&nodes[0].state.keys.signer.sign("chat:2021"));
    let mut a = subscribed(&nodes[0], &c, &id).await;
    let mut b = subscribed(&nodes[1], &c, &id).await;
    let wrap = |message: &str| {
        format!(
            r#"{{"identifier":{},"message":{message}}}"#,
            serde_json::to_string(&id).unwrap()
        )
    };

    // What `ActionCable.server.broadcast("chat:2021", html)` publishes through Rails' adapter.
    let rails = r#""\u003cturbo-stream action=\"append\" target=\"messages\"\u003e\u003ctemplate\u003e\u003cp id=\"message_1\"\u003eHi\u003c/p\u003e\u003c/template\u003e\u003c/turbo-stream\u003e""#;
    assert_eq!(
        publish(&url, &format!("{prefix}:chat:2021"), rails.as_bytes()).await,
        2
    );
    assert_eq!(next_text(&mut a).await, wrap(rails));
    assert_eq!(next_text(&mut b).await, wrap(rails));

    // Malformed payloads are dropped: nothing half-spliced reaches a client.
    publish(&url, &format!("{prefix}:chat:2021"), b"{\"half\":").await;
    publish(&url, &format!("{prefix}:chat:2021"), &[0xff, 0xfe]).await;
    publish(
        &url,
        &format!("{prefix}:__anycable__"),
        b"[{\"stream\":\"chat:2021\"}]",
    )
    .await;
    publish(&url, &format!("{prefix}:action_cable/xyz"), b"nope").await;

    // AnyCable's Redis channel (under the prefix): every node delivers once to its own
    // clients.
    publish(
        &url,
        &format!("{prefix}:__anycable__"),
        br#"[{"stream":"chat:2021","data":"{\"n\":1}"},{"stream":"elsewhere","data":"2"}]"#,
    )
    .await;
    assert_eq!(next_text(&mut a).await, wrap(r#"{"n":1}"#));
    assert_eq!(next_text(&mut b).await, wrap(r#"{"n":1}"#));

    // AnyCable's HTTP API on node 1, shared with node 0 through Redis.
    let key = nodes[1].state.keys.broadcast_key.clone();
    let mut http = nodes[1].client();
    let body = r#"{"stream":"chat:2021","data":"\"via http\""}"#;
    let r = http
        .request(
            "POST",
            "/_broadcast",
            &[
                ("Authorization", &format!("Bearer {key}")),
                ("Content-Type", "application/json"),
            ],
            body.as_bytes(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(next_text(&mut a).await, wrap(r#""via http""#));
    assert_eq!(next_text(&mut b).await, wrap(r#""via http""#));
    let r = http
        .request(
            "POST",
            "/_broadcast",
            &[("Authorization", "Bearer wrong")],
            body.as_bytes(),
        )
        .await;
    assert_eq!(r.status, 401);
    let r = http
        .request(
            "POST",
            "/_broadcast",
            &[("Authorization", &format!("Bearer {key}"))],
            br#"{"stream":"chat:2021","data":"{oops"}"#,
        )
        .await;
    assert_eq!(r.status, 422);
    nothing_more(&mut a).await;
    nothing_more(&mut b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rails_remote_disconnect_closes_that_users_sockets_on_every_node_only() {
    let url = redis_url();
    let prefix = unique_prefix("remote");
    let nodes = app_and_cables(&url, &prefix, 2).await;
    let david = nodes[0]
        .signed_in("david@example.com", "secret123456")
        .await;
    let jason = nodes[0]
        .signed_in("jason@example.com", "secret123456")
        .await;
    let id = turbo_identifier(&nodes[0].state.keys.signer.sign("rooms"));
    let mut d0 = subscribed(&nodes[2], &david, &id).await;
    let mut d1 = subscribed(&nodes[1], &david, &id).await;
    let mut j1 = subscribed(&nodes[1], &jason, &id).await;

    // `ActionCable.server.remote_connections.where(current_user: david).disconnect` in a
    // Rails console: the identifier is david's GlobalID param.
    let david_id = user_id(&nodes[0], "david@example.com").await;
    let gid = hearth::rails::global_id::to_gid_param("campfire", "User", david_id);
    publish(
        &url,
        &format!("{prefix}:action_cable/{gid}"),
        br#"{"type":"disconnect","reconnect":true}"#,
    )
    .await;
    for ws in [&mut d0, &mut d1] {
        assert_eq!(
            ws.next_non_ping(T).await,
            text(r#"{"type":"disconnect","reason":"remote","reconnect":true}"#)
        );
        assert_eq!(ws.next_non_ping(T).await, Some(WsEvent::Close(1000)));
    }
    publish(&url, &format!("{prefix}:rooms"), b"\"still here\"").await;
    assert!(next_text(&mut j1).await.contains("still here"));

    // Hearth's own deactivation, on node 0, closes jason's socket on node 1.
    hearth::web::users::set_status(
        &nodes[0].state.db,
        &nodes[0].state.delivery,
        user_id(&nodes[0], "jason@example.com").await,
        "deactivated",
    )
    .await
    .expect("status set");
    assert_eq!(
        j1.next_non_ping(T).await,
        text(r#"{"type":"disconnect","reason":"remote","reconnect":false}"#)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_out_closes_that_sessions_sockets_on_every_node() {
    let url = redis_url();
    let nodes = app_and_cables(&url, &unique_prefix("signout"), 1).await;
    let (mut leaving, _, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let staying = nodes[0]
        .signed_in("david@example.com", "secret123456")
        .await;
    let id = turbo_identifier(&nodes[0].state.keys.signer.sign("rooms"));
    let mut gone = subscribed(&nodes[1], &leaving, &id).await;
    let mut kept = subscribed(&nodes[1], &staying, &id).await;
    let r = leaving
        .post_form(
            "/session",
            &common::form(&[("_method", "delete"), ("authenticity_token", &csrf)]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302);
    assert_eq!(
        gone.next_non_ping(T).await,
        text(r#"{"type":"disconnect","reason":"remote","reconnect":false}"#)
    );
    assert_eq!(gone.next_non_ping(T).await, Some(WsEvent::Close(1000)));
    nothing_more(&mut kept).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_one_cable_node_leaves_the_others_clients_unaffected() {
    let url = redis_url();
    let mut nodes = app_and_cables(&url, &unique_prefix("kill"), 2).await;
    let (mut poster, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let id = room_identifier(&signed);
    let mut survivor = subscribed(&nodes[1], &poster, &id).await;
    let mut doomed = subscribed(&nodes[2], &poster, &id).await;
    let victim = nodes.pop().expect("three nodes");
    victim.stop().await;
    assert!(matches!(
        doomed.next_non_ping(T).await,
        Some(WsEvent::Text(t)) if t.contains("server_restart")
    ));
    let r = poster
        .post_message(1, "after the loss", "kill-1", &csrf)
        .await;
    assert_eq!(r.status, 200);
    assert!(next_text(&mut survivor).await.contains("after the loss"));
    nothing_more(&mut survivor).await;
}

/// A private redis-server on a free port, so that restarting it disturbs nobody else.
pub(crate) struct PrivateRedis {
    port: u16,
    child: std::process::Child,
}

impl PrivateRedis {
    pub(crate) fn start(port: u16) -> Option<Self> {
        let child = std::process::Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .ok()?;
        Some(Self { port, child })
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub(crate) async fn wait_ready(&self) {
        let deadline = tokio::time::Instant::now() + T;
        loop {
            if let Ok(client) = redis::Client::open(self.url()) {
                if client.get_multiplexed_async_connection().await.is_ok() {
                    return;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "redis-server did not start"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_mid_run_delivery_resumes_and_no_node_loses_anything() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let Some(redis) = PrivateRedis::start(port) else {
        panic!("redis-server is not installed (apt-get install redis-server)");
    };
    redis.wait_ready().await;
    let url = redis.url();
    let nodes = cluster(&url, "restart", 2).await;
    let (mut poster, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let id = room_identifier(&signed);
    let mut local = subscribed(&nodes[0], &poster, &id).await;
    let mut remote = subscribed(&nodes[1], &poster, &id).await;

    drop(redis);
    // Posted at once, before or after the node noticed: its own clients still get each one.
    for i in 0..3 {
        let r = poster
            .post_message(1, &format!("outage {i}"), &format!("outage-{i}"), &csrf)
            .await;
        assert_eq!(r.status, 200);
    }
    for i in 0..3 {
        assert!(next_text(&mut local).await.contains(&format!("outage {i}")));
    }
    wait_link(&nodes[0], false).await;
    let mut http = nodes[0].client();
    assert_eq!(http.get("/up").await.body, "OK (redis link down)");
    assert!(http
        .get("/metrics")
        .await
        .body
        .contains("hearth_redis_link_up 0"));

    let _redis = PrivateRedis::start(port).expect("redis-server restarts");
    for node in &nodes {
        wait_link(node, true).await;
    }
    assert_eq!(http.get("/up").await.body, "OK");
    let r = poster.post_message(1, "back", "back-1", &csrf).await;
    assert_eq!(r.status, 200);
    assert!(next_text(&mut local).await.contains("back"));
    // The publishing node kept the outage's posts and published them when Redis returned:
    // the remote node gets them, in order, before what followed (and the local clients,
    // which had them at once, not again).
    for i in 0..3 {
        let frame = next_text(&mut remote).await;
        assert!(frame.contains(&format!("outage {i}")), "{frame}");
    }
    let frame = next_text(&mut remote).await;
    assert!(frame.contains("back"), "{frame}");
    nothing_more(&mut local).await;
    nothing_more(&mut remote).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cable_nodes_ask_the_app_node_which_no_one_else_can() {
    let url = redis_url();
    let nodes = app_and_cables(&url, &unique_prefix("internal"), 1).await;
    // Without the key derived from secret_key_base the internal endpoint does not exist.
    let mut http = nodes[0].client();
    for auth in [&[][..], &[("Authorization", "Bearer 00")][..]] {
        let r = http
            .request(
                "POST",
                "/_internal/cable/identify",
                auth,
                b"{\"session_token\":\"x\"}",
            )
            .await;
        assert_eq!(r.status, 404);
    }
    // A cable node identifies through the app node: no session, no connection.
    let anonymous = nodes[1].client();
    let mut ws = Ws::connect(
        nodes[1].addr,
        Some(&anonymous.cookie_header()),
        Some(&nodes[1].origin()),
        Some(common::PROTOCOLS),
    )
    .await;
    assert_eq!(ws.status, 101);
    assert_eq!(
        ws.next(T).await,
        text(r#"{"type":"disconnect","reason":"unauthorized","reconnect":false}"#)
    );
    // Presence (a side effect on the app node's database) and typing through the app node.
    let (c, _, _) = member_of_room_1(&nodes[0], "david@example.com").await;
    let mut typing = subscribed(
        &nodes[1],
        &c,
        r#"{"channel":"TypingNotificationsChannel","room_id":1}"#,
    )
    .await;
    let _presence = subscribed(
        &nodes[1],
        &c,
        r#"{"channel":"PresenceChannel","room_id":1}"#,
    )
    .await;
    typing
        .send_text(r#"{"command":"message","identifier":"{\"channel\":\"TypingNotificationsChannel\",\"room_id\":1}","data":"{\"action\":\"start\"}"}"#)
        .await;
    let frame = next_text(&mut typing).await;
    assert!(
        frame.contains(r#"\"action\":\"start\""#) || frame.contains(r#""action":"start""#),
        "{frame}"
    );
    // A room the user is not in is refused by the app node.
    let refused = r#"{"channel":"TypingNotificationsChannel","room_id":999999}"#;
    typing.send_text(&subscribe_cmd(refused)).await;
    assert_eq!(
        typing.next_non_ping(T).await,
        text(&common::reject(refused))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rails_clients_reconnect_to_the_surviving_cable_node() {
    use tokio::io::AsyncBufReadExt;
    let node_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    if !node_dir.join("node_modules/@rails/actioncable").exists() {
        let status = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&node_dir)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm ci in tests/node failed");
    }
    let url = redis_url();
    let mut nodes = app_and_cables(&url, &unique_prefix("failover"), 2).await;
    let cables = format!("{},{}", nodes[1].origin(), nodes[2].origin());
    let mut child = tokio::process::Command::new("node")
        .arg(node_dir.join("driver.mjs"))
        .args([
            "--base",
            &nodes[0].origin(),
            "--cable",
            &cables,
            "--scenario",
            "restart",
            "--timeout",
            "60",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut out = String::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the client connects")
        .expect("a line")
    {
        out.push_str(&line);
        out.push('\n');
        if line == "CONNECTED" {
            break;
        }
    }
    assert!(out.ends_with("CONNECTED\n"), "{out}");
    // The client is on the first cable node: stop it.
    nodes.remove(1).stop().await;
    let rest = tokio::time::timeout(Duration::from_secs(60), async {
        let mut rest = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push_str(&line);
            rest.push('\n');
        }
        rest
    })
    .await
    .expect("the client finishes");
    out.push_str(&rest);
    let status = child.wait().await.expect("node exits");
    assert!(status.success(), "{out}");
    assert!(
        out.contains("DISCONNECTED willAttemptReconnect=true"),
        "{out}"
    );
    assert!(out.contains("RECONNECTED 2"), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("RECEIVED node-restart-")),
        "{out}"
    );
    // The stopped node accepts nothing and the app node serves no /cable: the client
    // reconnected to the survivor.
    assert_eq!(nodes[0].client().get("/cable").await.status, 404);
}

use common::forms::submit;

/// Creates a closed room of David and `member` through `node` and returns its id.
pub(crate) async fn closed_room_with(node: &TestServer, david: &mut Client, member: i64) -> i64 {
    let member = member.to_string();
    let r = submit(
        david,
        "POST",
        "/rooms/closeds",
        &[("room[name]", "Secret"), ("user_ids[]", &member)],
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let _ = node;
    r.header("location")
        .and_then(|l| l.strip_prefix("/rooms/"))
        .and_then(|id| id.parse().ok())
        .expect("a room location")
}

/// `RoomMessagesChannel`'s identifier of room `room_id` and its stream name.
pub(crate) async fn room_messages_of(node: &TestServer, room_id: i64) -> (String, String) {
    let room = hearth::db::rooms::find(&node.state.db.pool, room_id)
        .await
        .expect("query")
        .expect("the room");
    let stream = hearth::streams::room_messages(&node.state.config.gid_app, &room);
    (
        room_identifier(&node.state.keys.signer.sign(&stream)),
        stream,
    )
}

fn typing_of(room_id: i64) -> String {
    serde_json::json!({"channel": "TypingNotificationsChannel", "room_id": room_id}).to_string()
}

/// Reads frames until `count` `reject_subscription`s arrived; returns them. Panics after `T`.
async fn rejections(ws: &mut Ws, count: usize) -> Vec<String> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + T;
    while seen.len() < count {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_non_ping(left).await {
            Some(WsEvent::Text(t)) if t.contains("reject_subscription") => seen.push(t),
            Some(WsEvent::Text(_)) => {}
            other => panic!("expected reject_subscription, got {other:?} after {seen:?}"),
        }
    }
    seen
}

/// Asserts no frame containing `needle` arrives on `ws` within 600 ms.
async fn never_sees(ws: &mut Ws, needle: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_millis(600);
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_non_ping(left).await {
            None => return,
            Some(WsEvent::Text(t)) => assert!(!t.contains(needle), "unexpected frame: {t}"),
            Some(other) => panic!("socket ended: {other:?}"),
        }
    }
}

/// Redis subscribers of `channel` (`PUBSUB NUMSUB`).
pub(crate) async fn numsub(url: &str, channel: &str) -> i64 {
    let mut conn = redis_conn(url).await;
    let (_, n): (String, i64) = redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(channel)
        .query_async(&mut conn)
        .await
        .expect("PUBSUB NUMSUB");
    n
}

/// Waits until `channel` has `want` Redis subscribers; panics after `T`.
async fn wait_numsub(url: &str, channel: &str, want: i64) {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let n = numsub(url, channel).await;
        if n == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{channel} has {n} subscribers, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A member removed on `writer` loses the room on `reader` at once: both room subscriptions
/// rejected, no later post, no typing of theirs reaching the room, and `reader` no longer
/// `SUBSCRIBE`d to a stream it held for them alone.
async fn removal_reaches(url: &str, prefix: &str, writer: &TestServer, reader: &TestServer) {
    let mut david = writer.signed_in("david@example.com", "secret123456").await;
    let kevin = writer.signed_in("kevin@example.com", "secret123456").await;
    let kevin_id = user_id(writer, "kevin@example.com").await;
    let room = closed_room_with(writer, &mut david, kevin_id).await;
    let (messages, stream) = room_messages_of(writer, room).await;
    let typing = typing_of(room);
    let mut k = subscribed(reader, &kevin, &messages).await;
    k.send_text(&subscribe_cmd(&typing)).await;
    assert_eq!(k.next_non_ping(T).await, text(&confirm(&typing)));
    // David listens to the room's typing on the same node.
    let mut d = subscribed(reader, &david, &typing).await;
    // Only the reader holds sockets: it alone SUBSCRIBEd to the room's messages.
    let channel = format!("{prefix}:{stream}");
    assert_eq!(numsub(url, &channel).await, 1);

    let r = submit(
        &mut david,
        "PATCH",
        &format!("/rooms/closeds/{room}"),
        &[("room[name]", "Secret")],
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let seen = rejections(&mut k, 2).await;
    assert!(
        seen.contains(&common::reject(&messages)) && seen.contains(&common::reject(&typing)),
        "{seen:?}"
    );
    // Kevin's was the reader's only subscription to the room's messages: UNSUBSCRIBEd.
    wait_numsub(url, &channel, 0).await;

    let (csrf, _) = david.room(room).await;
    let r = david
        .post_message(room, "after the removal", "after-removal", &csrf)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    never_sees(&mut k, "after the removal").await;
    k.send_text(&format!(
        r#"{{"command":"message","identifier":{},"data":"{{\"action\":\"start\"}}"}}"#,
        serde_json::to_string(&typing).expect("json")
    ))
    .await;
    never_sees(&mut d, "start").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_removed_on_the_app_node_loses_the_room_on_a_cable_node_at_once() {
    let url = redis_url();
    let prefix = unique_prefix("revoke_cable");
    let nodes = app_and_cables(&url, &prefix, 1).await;
    removal_reaches(&url, &prefix, &nodes[0], &nodes[1]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_removed_on_one_node_loses_the_room_on_another_all_node_at_once() {
    let url = redis_url();
    let prefix = unique_prefix("revoke_all");
    let nodes = cluster(&url, &prefix, 2).await;
    removal_reaches(&url, &prefix, &nodes[0], &nodes[1]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_deleted_on_the_app_node_ends_its_subscriptions_on_cable_nodes_and_its_id_stays_unused(
) {
    let url = redis_url();
    let nodes = app_and_cables(&url, &unique_prefix("destroy"), 1).await;
    let mut david = nodes[0]
        .signed_in("david@example.com", "secret123456")
        .await;
    let kevin = nodes[0]
        .signed_in("kevin@example.com", "secret123456")
        .await;
    let kevin_id = user_id(&nodes[0], "kevin@example.com").await;
    let room = closed_room_with(&nodes[0], &mut david, kevin_id).await;
    let (messages, _) = room_messages_of(&nodes[0], room).await;
    let mut k = subscribed(&nodes[1], &kevin, &messages).await;
    let r = submit(&mut david, "DELETE", &format!("/rooms/{room}"), &[]).await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(rejections(&mut k, 1).await, vec![common::reject(&messages)]);
    // The next room (a direct room between two others, say) never gets the deleted room's id.
    let jason_id = user_id(&nodes[0], "jason@example.com").await;
    let next = closed_room_with(&nodes[0], &mut david, jason_id).await;
    assert!(next > room, "room id {room} handed out again as {next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cable_node_with_another_secret_than_its_app_node_refuses_to_start_and_says_why() {
    let url = redis_url();
    let prefix = unique_prefix("secret");
    let nodes = app_and_cables(&url, &prefix, 0).await;
    let dir = common::temp_dir("cable-secret");
    let mut config = hearth::config::Config::for_tests(&dir);
    config.pubsub = hearth::config::PubSubKind::Redis;
    config.redis_url = url.clone().into();
    config.redis_channel_prefix = prefix;
    config.role = hearth::config::Role::Cable;
    config.app_url = Some(format!("http://{}", nodes[0].addr));
    config.secret_key_base = Some("f".repeat(128).into());
    let error = hearth::app::Server::bind(config)
        .await
        .expect_err("a cable node with another secret must not start");
    let said = format!("{error:#}");
    assert!(said.contains("SECRET_KEY_BASE"), "{said}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anycable_publications_stay_within_their_channel_prefix_and_its_disconnect_closes_sockets()
{
    let url = redis_url();
    let (p1, p2) = (unique_prefix("any1"), unique_prefix("any2"));
    let one = cluster(&url, &p1, 1).await;
    let two = cluster(&url, &p2, 1).await;
    let c1 = one[0].signed_in("david@example.com", "secret123456").await;
    let c2 = two[0].signed_in("david@example.com", "secret123456").await;
    let id = turbo_identifier(&one[0].state.keys.signer.sign("chat:2021"));
    let mut a = subscribed(&one[0], &c1, &id).await;
    let mut b = subscribed(&two[0], &c2, &id).await;
    let body = br#"{"stream":"chat:2021","data":"\"scoped\""}"#;
    // Another deployment's channel, or the bare one: neither reaches a prefixed deployment.
    publish(&url, &format!("{p2}:__anycable__"), body).await;
    publish(&url, "__anycable__", body).await;
    nothing_more(&mut a).await;
    assert!(next_text(&mut b).await.contains("scoped"));
    nothing_more(&mut b).await;

    // anycable-rails' remote disconnect, over Redis and over POST /_broadcast.
    let david = user_id(&one[0], "david@example.com").await;
    let gid = hearth::rails::global_id::to_gid_param("campfire", "User", david);
    let command = serde_json::json!({
        "command": "disconnect",
        "payload": {"identifier": serde_json::json!({"current_user": gid}).to_string(), "reconnect": false},
    })
    .to_string();
    publish(&url, &format!("{p1}:__anycable__"), command.as_bytes()).await;
    assert_eq!(
        a.next_non_ping(T).await,
        text(r#"{"type":"disconnect","reason":"remote","reconnect":false}"#)
    );
    let key = two[0].state.keys.broadcast_key.clone();
    let r = two[0]
        .client()
        .request(
            "POST",
            "/_broadcast",
            &[("Authorization", &format!("Bearer {key}"))],
            command.as_bytes(),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        b.next_non_ping(T).await,
        text(r#"{"type":"disconnect","reason":"remote","reconnect":false}"#)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_app_node_stopped_an_app_channel_subscribe_is_rejected_after_a_bounded_wait() {
    let url = redis_url();
    let mut nodes = app_and_cables(&url, &unique_prefix("appdown"), 1).await;
    let (c, _, _) = member_of_room_1(&nodes[0], "david@example.com").await;
    let mut ws = connect_with(&nodes[1], &c).await;
    nodes.remove(0).stop().await;
    let presence = r#"{"channel":"PresenceChannel","room_id":1}"#;
    let started = tokio::time::Instant::now();
    ws.send_text(&subscribe_cmd(presence)).await;
    assert_eq!(
        ws.next_non_ping(Duration::from_secs(6)).await,
        text(&common::reject(presence))
    );
    assert!(started.elapsed() < Duration::from_secs(6));
}
