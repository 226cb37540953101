//! Several Hearth nodes sharing broadcasts through the machine's real Redis (`REDIS_URL`,
//! default `redis://127.0.0.1:6379`), in Rails' redis adapter format: each test uses its own
//! `--redis-channel-prefix`, so tests (and other users of the same Redis) do not interfere.
//! Nodes share one SQLite database, as an app node and cable nodes share one app.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{confirm, connect_with, subscribe_cmd, text, Client, TestServer, Ws, WsEvent};

const T: Duration = Duration::from_secs(10);

fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

fn unique_prefix(tag: &str) -> String {
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

async fn wait_link(node: &TestServer, up: bool) {
    let redis = node.state.redis.clone().expect("a Redis adapter");
    let deadline = tokio::time::Instant::now() + T;
    while redis.is_up() != up {
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

async fn publish(url: &str, channel: &str, payload: &[u8]) -> i64 {
    let mut conn = redis_conn(url).await;
    redis::cmd("PUBLISH")
        .arg(channel)
        .arg(payload)
        .query_async(&mut conn)
        .await
        .expect("PUBLISH")
}

fn room_identifier(signed: &str) -> String {
    serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed}).to_string()
}

fn turbo_identifier(signed: &str) -> String {
    serde_json::json!({"channel": "Turbo::StreamsChannel", "signed_stream_name": signed})
        .to_string()
}

/// A signed-in client of `app` and room 1's signed message stream name and CSRF token.
async fn member_of_room_1(app: &TestServer, email: &str) -> (Client, String, String) {
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
async fn subscribed(node: &TestServer, c: &Client, identifier: &str) -> Ws {
    let mut ws = connect_with(node, c).await;
    ws.send_text(&subscribe_cmd(identifier)).await;
    assert_eq!(ws.next_non_ping(T).await, text(&confirm(identifier)));
    ws
}

async fn next_text(ws: &mut Ws) -> String {
    match ws.next_non_ping(T).await {
        Some(WsEvent::Text(t)) => t,
        other => panic!("expected a text frame, got {other:?}"),
    }
}

async fn nothing_more(ws: &mut Ws) {
    let next = ws.next_non_ping(Duration::from_millis(400)).await;
    assert!(next.is_none(), "unexpected frame: {next:?}");
}

async fn user_id(node: &TestServer, email: &str) -> i64 {
    hearth::db::users::find_active_for_login(&node.state.pool, email)
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
            nodes[0].state.signer.verify(&signed).expect("signed")
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
    let id = turbo_identifier(&nodes[0].state.signer.sign("chat:2021"));
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
    publish(&url, "__anycable__", b"[{\"stream\":\"chat:2021\"}]").await;
    publish(&url, &format!("{prefix}:action_cable/xyz"), b"nope").await;

    // AnyCable's Redis channel: every node delivers once to its own clients.
    publish(
        &url,
        "__anycable__",
        br#"[{"stream":"chat:2021","data":"{\"n\":1}"},{"stream":"elsewhere","data":"2"}]"#,
    )
    .await;
    assert_eq!(next_text(&mut a).await, wrap(r#"{"n":1}"#));
    assert_eq!(next_text(&mut b).await, wrap(r#"{"n":1}"#));

    // AnyCable's HTTP API on node 1, shared with node 0 through Redis.
    let key = nodes[1].state.broadcast_key.clone();
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
    let id = turbo_identifier(&nodes[0].state.signer.sign("rooms"));
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
        &nodes[0].state,
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
    let id = turbo_identifier(&nodes[0].state.signer.sign("rooms"));
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
struct PrivateRedis {
    port: u16,
    child: std::process::Child,
}

impl PrivateRedis {
    fn start(port: u16) -> Option<Self> {
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

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn wait_ready(&self) {
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
async fn redis_restarted_mid_run_delivery_resumes_and_the_publishing_node_loses_nothing() {
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
    // The remote node missed the outage's posts (Redis pub/sub keeps nothing), then resumes.
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
