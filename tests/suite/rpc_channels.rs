//! An app's own channels on Hearth's `/cable` (`--rpc-url`): AnyCable's HTTP RPC answered by
//! `@anycable/serverless-js` behind `tests/node/rpc_app.mjs`, driven by `@rails/actioncable`
//! and `@anycable/core` (`tests/node/rpc_clients.mjs`), all unmodified, over real sockets;
//! and what clients get when the app is slow or stops.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{TestServer, Ws, WsEvent};
use tokio::io::AsyncBufReadExt;

/// The RPC key both sides use.
pub(crate) const KEY: &str = "rpc-test-key";

/// The running app (`rpc_app.mjs`), killed when dropped.
pub(crate) struct App {
    pub(crate) child: tokio::process::Child,
    pub(crate) url: String,
}

impl App {
    pub(crate) async fn start() -> Self {
        crate::node_client::ensure_node_modules();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/rpc_app.mjs");
        let mut child = tokio::process::Command::new("node")
            .arg(script)
            .args(["--secret", KEY])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the app starts")
            .unwrap()
            .expect("a line");
        let port = line.strip_prefix("LISTENING ").expect("LISTENING <port>");
        Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    pub(crate) async fn control(&self, path: &str) {
        let status = reqwest_like_post(&format!("{}{path}", self.url)).await;
        assert_eq!(status, 200, "{path}");
    }
}

/// POSTs an empty body, returns the status.
async fn reqwest_like_post(url: &str) -> u16 {
    post(url, &[], Vec::new()).await
}

/// POSTs `body` with `headers`, returns the status.
async fn post(url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> u16 {
    let uri: hyper::Uri = url.parse().unwrap();
    let addr = format!("{}:{}", uri.host().unwrap(), uri.port_u16().unwrap());
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let mut request = hyper::Request::post(uri.path_and_query().unwrap().as_str())
        .header(hyper::header::HOST, uri.host().unwrap());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(axum::body::Body::from(body)).unwrap();
    sender
        .send_request(request)
        .await
        .unwrap()
        .status()
        .as_u16()
}

pub(crate) async fn server_for(app: &App) -> TestServer {
    let url = format!("{}/_anycable", app.url);
    TestServer::start_with(|c| {
        c.rpc_url = Some(url);
        c.rpc_secret = Some(KEY.to_owned().into());
        c.rpc_headers = vec!["cookie".into(), "x-api-token".into()];
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rails_and_anycable_clients_run_the_apps_channels() {
    let app = App::start().await;
    let server = server_for(&app).await;
    run_clients(&app, &server).await;
}

/// Runs `rpc_clients.mjs` against `server` and checks that every scenario passed.
async fn run_clients(app: &App, server: &TestServer) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/rpc_clients.mjs");
    let output = tokio::process::Command::new("node")
        .arg(script)
        .args(["--base", &server.origin(), "--app", &app.url])
        .args(["--broadcast-key", &server.state.keys.broadcast_key])
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for scenario in [
        "welcome",
        "transmissions-in-order",
        "perform",
        "transmissions-before-confirm",
        "streams",
        "stop-stream-from",
        "channel-state",
        "reject",
        "unsubscribe",
        "disconnect-with-subscriptions",
        "refused-without-cookie",
        "refused-by-header",
        "request-url",
        "accepted-by-header",
        "app-disconnect",
        "many-clients",
        "remote-disconnect",
        "anycable-client",
        "ping",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("PASS {scenario}"))),
            "{scenario}: {stdout}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cable_server_alone_runs_the_apps_channels_and_turbo_without_a_database() {
    let app = App::start().await;
    let url = format!("{}/_anycable", app.url);
    let server = TestServer::start_with(|c| {
        c.channels = hearth::config::ChannelSet::Rpc;
        c.rpc_url = Some(url);
        c.rpc_secret = Some(KEY.to_owned().into());
        c.rpc_headers = vec!["cookie".into(), "x-api-token".into()];
    })
    .await;
    assert!(
        !server.dir.join("hearth.sqlite3").exists(),
        "no database is opened"
    );
    assert_eq!(
        {
            let mut client = server.client();
            client.get("/").await.status
        },
        404,
        "no chat app"
    );
    run_clients(&app, &server).await;
    // Turbo's signed streams, verified here without a call, beside the app's connection.
    let signed = server.state.keys.signer.sign("updates");
    let origin = server.origin();
    let mut ws = Ws::connect(server.addr, Some("username=kim"), Some(&origin), None).await;
    let identifier = serde_json::json!({
        "channel": "Turbo::StreamsChannel",
        "signed_stream_name": signed,
    })
    .to_string();
    let command = serde_json::json!({"command": "subscribe", "identifier": identifier});
    ws.send_text(&command.to_string()).await;
    assert!(
        frame_with(&mut ws, "confirm_subscription", Duration::from_secs(5))
            .await
            .is_some()
    );
    server
        .state
        .delivery
        .broadcaster
        .broadcast("updates", br#""<turbo-stream></turbo-stream>""#);
    assert!(frame_with(&mut ws, "turbo-stream", Duration::from_secs(5))
        .await
        .is_some());
    let calls = app_calls(&app).await;
    assert!(!calls.contains("Turbo::StreamsChannel"), "{calls}");
}

/// The app's log of what it was asked (`/_control/log`).
pub(crate) async fn app_calls(app: &App) -> String {
    let uri: hyper::Uri = format!("{}/_control/log", app.url).parse().unwrap();
    let addr = format!("{}:{}", uri.host().unwrap(), uri.port_u16().unwrap());
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    let request = hyper::Request::get("/_control/log")
        .header(hyper::header::HOST, "127.0.0.1")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let body = axum::body::to_bytes(axum::body::Body::new(response.into_body()), usize::MAX)
        .await
        .unwrap();
    String::from_utf8_lossy(&body).into_owned()
}

/// Reads frames until one contains `needle` (pings skipped); None past `within`.
pub(crate) async fn frame_with(ws: &mut Ws, needle: &str, within: Duration) -> Option<String> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match ws.next_non_ping(left).await? {
            WsEvent::Text(text) if text.contains(needle) => return Some(text),
            WsEvent::Text(_) => {}
            _ => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_or_stopped_app_gets_the_documented_answers() {
    let mut app = App::start().await;
    let server = server_for(&app).await;
    let origin = server.origin();
    let open = || Ws::connect(server.addr, Some("username=dora"), Some(&origin), None);
    let mut ws = open().await;
    assert!(frame_with(&mut ws, "welcome", Duration::from_secs(5))
        .await
        .is_some());
    // A slow app: the subscribe is rejected at the 3 s timeout, while another connection's
    // commands and broadcasts go on.
    let mut quick = open().await;
    assert!(frame_with(&mut quick, "welcome", Duration::from_secs(5))
        .await
        .is_some());
    quick
        .send_text(r#"{"command":"subscribe","identifier":"{\"channel\":\"StreamChannel\",\"name\":\"s\"}"}"#)
        .await;
    assert!(
        frame_with(&mut quick, "confirm_subscription", Duration::from_secs(5))
            .await
            .is_some()
    );
    app.control("/_control/slow?ms=4000").await;
    let started = std::time::Instant::now();
    ws.send_text(r#"{"command":"subscribe","identifier":"{\"channel\":\"EchoChannel\"}"}"#)
        .await;
    server
        .state
        .delivery
        .broadcaster
        .broadcast("s", br#"{"during":"slow"}"#);
    assert!(frame_with(&mut quick, "during", Duration::from_secs(1))
        .await
        .is_some());
    let rejected = frame_with(&mut ws, "reject_subscription", Duration::from_secs(6)).await;
    assert!(rejected.is_some(), "a timed-out subscribe is rejected");
    assert!(
        started.elapsed() >= Duration::from_millis(2900),
        "{:?}",
        started.elapsed()
    );
    app.control("/_control/slow?ms=0").await;
    // A stopped app: connects fail (closed, 1011) and, past ten failures, the breaker opens.
    app.child.kill().await.unwrap();
    for _ in 0..20 {
        let mut refused = open().await;
        match refused.next_non_ping(Duration::from_secs(5)).await {
            Some(WsEvent::Close(code)) => assert_eq!(code, 1011),
            other => panic!("a refused connect closes: {other:?}"),
        }
    }
    let mut client = server.client();
    let metrics = client.get("/metrics").await.body;
    assert!(metrics.contains("hearth_rpc_breaker_state 2"), "{metrics}");
    assert!(
        metrics.contains("hearth_rpc_calls_total{result=\"error\"}"),
        "{metrics}"
    );
    let mut refused = open().await;
    assert!(matches!(
        refused.next_non_ping(Duration::from_secs(1)).await,
        Some(WsEvent::Close(1011))
    ));
    let metrics = client.get("/metrics").await.body;
    assert!(
        metrics.contains("hearth_rpc_calls_total{result=\"refused\"} "),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_or_oversized_answer_closes_that_connection_only() {
    let app = App::start().await;
    let server = server_for(&app).await;
    let origin = server.origin();
    let subscribe = r#"{"command":"subscribe","identifier":"{\"channel\":\"EchoChannel\"}"}"#;
    let mut bystander = Ws::connect(server.addr, Some("username=ivy"), Some(&origin), None).await;
    bystander.send_text(subscribe).await;
    assert!(frame_with(
        &mut bystander,
        "confirm_subscription",
        Duration::from_secs(5)
    )
    .await
    .is_some());
    for action in ["malformed", "oversized"] {
        let mut ws = Ws::connect(server.addr, Some("username=jon"), Some(&origin), None).await;
        ws.send_text(subscribe).await;
        assert!(
            frame_with(&mut ws, "confirm_subscription", Duration::from_secs(5))
                .await
                .is_some()
        );
        ws.send_text(&format!(
            r#"{{"command":"message","identifier":"{{\"channel\":\"EchoChannel\"}}","data":"{{\"action\":\"{action}\"}}"}}"#
        ))
        .await;
        assert_eq!(
            ws.next_non_ping(Duration::from_secs(5)).await,
            Some(WsEvent::Close(1011)),
            "{action}"
        );
    }
    bystander
        .send_text(r#"{"command":"message","identifier":"{\"channel\":\"EchoChannel\"}","data":"{\"action\":\"echo\",\"still\":\"here\"}"}"#)
        .await;
    assert!(frame_with(&mut bystander, "still", Duration::from_secs(5))
        .await
        .is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campfire_and_the_apps_channels_share_a_connection() {
    let app = App::start().await;
    let server = server_for(&app).await;
    let origin = server.origin();
    let campfire = server.signed_in("david@example.com", "secret123456").await;
    // Signed in to Campfire and known to the app: Campfire's welcome, both sets of channels.
    let cookie = format!("{}; username=zed", campfire.cookie_header());
    let mut ws = Ws::connect(server.addr, Some(&cookie), Some(&origin), None).await;
    assert_eq!(
        ws.next_non_ping(Duration::from_secs(5)).await,
        Some(WsEvent::Text(r#"{"type":"welcome"}"#.into()))
    );
    ws.send_text(r#"{"command":"subscribe","identifier":"{\"channel\":\"HeartbeatChannel\"}"}"#)
        .await;
    assert!(
        frame_with(&mut ws, "confirm_subscription", Duration::from_secs(5))
            .await
            .is_some()
    );
    ws.send_text(r#"{"command":"subscribe","identifier":"{\"channel\":\"EchoChannel\"}"}"#)
        .await;
    let confirm = frame_with(&mut ws, "confirm_subscription", Duration::from_secs(5)).await;
    assert!(confirm.is_some_and(|f| f.contains("EchoChannel")));
    // Signed in to Campfire only: the app refuses, Campfire's channels stay open, the app's
    // are rejected.
    let mut ws = Ws::connect(
        server.addr,
        Some(&campfire.cookie_header()),
        Some(&origin),
        None,
    )
    .await;
    assert_eq!(
        ws.next_non_ping(Duration::from_secs(5)).await,
        Some(WsEvent::Text(r#"{"type":"welcome"}"#.into()))
    );
    ws.send_text(r#"{"command":"subscribe","identifier":"{\"channel\":\"EchoChannel\"}"}"#)
        .await;
    assert!(
        frame_with(&mut ws, "reject_subscription", Duration::from_secs(5))
            .await
            .is_some()
    );
    ws.send_text(r#"{"command":"subscribe","identifier":"{\"channel\":\"HeartbeatChannel\"}"}"#)
        .await;
    assert!(
        frame_with(&mut ws, "confirm_subscription", Duration::from_secs(5))
            .await
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rails_client_rides_out_a_server_restart_on_the_apps_channels() {
    let app = App::start().await;
    let server = server_for(&app).await;
    let addr = server.addr;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/rpc_clients.mjs");
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .args(["--base", &server.origin(), "--app", &app.url])
        .args(["--broadcast-key", &server.state.keys.broadcast_key])
        .args(["--scenario", "restart", "--timeout", "60"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut out = String::new();
    let wait = Duration::from_secs(45);
    while let Some(line) = tokio::time::timeout(wait, lines.next_line())
        .await
        .expect("the client goes on")
        .unwrap()
    {
        out.push_str(&line);
        out.push('\n');
        if line == "CONNECTED" {
            break;
        }
    }
    assert!(out.ends_with("CONNECTED\n"), "{out}");
    let dir = server.stop_keeping_dir().await;
    let url = format!("{}/_anycable", app.url);
    let _server = TestServer::start_in(dir, |c| {
        c.bind = addr;
        c.rpc_url = Some(url);
        c.rpc_secret = Some(KEY.to_owned().into());
    })
    .await;
    while let Some(line) = tokio::time::timeout(wait, lines.next_line())
        .await
        .expect("the client goes on")
        .unwrap()
    {
        out.push_str(&line);
        out.push('\n');
    }
    assert!(child.wait().await.unwrap().success(), "{out}");
    assert!(
        out.contains("DISCONNECTED willAttemptReconnect=true"),
        "{out}"
    );
    assert!(out.contains("RECONNECTED 2"), "{out}");
    assert!(out.contains("RECEIVED"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_share_the_apps_broadcasts_and_remote_disconnects_over_redis() {
    let app = App::start().await;
    let url = crate::redis::redis_url();
    let prefix = crate::redis::unique_prefix("rpc");
    let mut nodes = Vec::new();
    for _ in 0..2 {
        let (rpc, redis, prefix) = (
            format!("{}/_anycable", app.url),
            url.clone(),
            prefix.clone(),
        );
        nodes.push(
            TestServer::start_with(|c| {
                c.pubsub = hearth::config::PubSubKind::Redis;
                c.redis_url = redis.into();
                c.redis_channel_prefix = prefix;
                c.rpc_url = Some(rpc);
                c.rpc_secret = Some(KEY.to_owned().into());
            })
            .await,
        );
    }
    let (one, two) = (&nodes[0], &nodes[1]);
    let origin = two.origin();
    let mut ws = Ws::connect(two.addr, Some("username=nia"), Some(&origin), None).await;
    ws.send_text(r#"{"command":"subscribe","identifier":"{\"channel\":\"StreamChannel\",\"name\":\"shared\"}"}"#)
        .await;
    assert!(
        frame_with(&mut ws, "confirm_subscription", Duration::from_secs(5))
            .await
            .is_some()
    );
    // A broadcast taken by the first node reaches the app's subscriber on the second.
    let key = one.state.keys.broadcast_key.clone();
    let auth = format!("Bearer {key}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let mut client = one.client();
    let r = client
        .request(
            "POST",
            "/_broadcast",
            &headers,
            br#"{"stream":"shared","data":"{\"n\":1}"}"#,
        )
        .await;
    assert_eq!(r.status, 201);
    assert!(frame_with(&mut ws, r#""n":1"#, Duration::from_secs(5))
        .await
        .is_some());
    // AnyCable's remote disconnect through the first node closes the app's connection on the
    // second, matched by the identifiers the app gave it.
    // In the app's key order (JSON.stringify's), as the app encoded them.
    let identifiers = format!(r#"{{"username":"nia","url":"{origin}/cable"}}"#);
    let command = serde_json::json!({
        "command": "disconnect",
        "payload": {"identifier": identifiers, "reconnect": false},
    });
    let r = client
        .request(
            "POST",
            "/_broadcast",
            &headers,
            command.to_string().as_bytes(),
        )
        .await;
    assert_eq!(r.status, 201);
    let frame = frame_with(&mut ws, "disconnect", Duration::from_secs(5)).await;
    assert_eq!(
        frame.as_deref(),
        Some(r#"{"type":"disconnect","reason":"remote","reconnect":false}"#)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anycable_go_environment_names_configure_the_cable_server() {
    let app = App::start().await;
    let dir = common::temp_dir("anycable-env");
    let rpc_host = format!("{}/_anycable", app.url);
    let hearth = common::child::Hearth::start_with_env(
        &dir,
        &["--channels", "rpc"],
        &[
            ("ANYCABLE_RPC_HOST", rpc_host.as_str()),
            ("ANYCABLE_HTTP_RPC_SECRET", KEY),
            ("ANYCABLE_BROADCAST_KEY", "env-broadcast-key"),
        ],
    )
    .await;
    // The app is asked (with the key it checks) and welcomes the connection itself.
    let origin = format!("http://{}", hearth.addr);
    let mut ws = Ws::connect(hearth.addr, Some("username=env"), Some(&origin), None).await;
    let welcome = frame_with(&mut ws, "welcome", Duration::from_secs(5)).await;
    assert!(
        welcome.is_some_and(|w| w.contains(r#""sid":"#)),
        "{}",
        hearth.log()
    );
    ws.send_text(r#"{"command":"subscribe","identifier":"{\"channel\":\"StreamChannel\",\"name\":\"env\"}"}"#)
        .await;
    assert!(
        frame_with(&mut ws, "confirm_subscription", Duration::from_secs(5))
            .await
            .is_some()
    );
    // `/_broadcast` takes anycable-go's broadcast key.
    let url = format!("{origin}/_broadcast");
    let body = br#"{"stream":"env","data":"{\"from\":\"env\"}"}"#.to_vec();
    let json = ("Content-Type", "application/json");
    let wrong = post(
        &url,
        &[("Authorization", "Bearer nope"), json],
        body.clone(),
    )
    .await;
    assert_eq!(wrong, 401);
    let status = post(
        &url,
        &[("Authorization", "Bearer env-broadcast-key"), json],
        body,
    )
    .await;
    assert_eq!(status, 201);
    assert!(
        frame_with(&mut ws, r#""from":"env""#, Duration::from_secs(5))
            .await
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calls_of_a_client_gone_are_dropped_and_its_disconnect_still_sent() {
    let app = App::start().await;
    let server = server_for(&app).await;
    let origin = server.origin();
    let mut ws = Ws::connect(server.addr, Some("username=gus"), Some(&origin), None).await;
    assert!(frame_with(&mut ws, "welcome", Duration::from_secs(5))
        .await
        .is_some());
    // A slow app, and a client gone while its `connect` is pending: that call is abandoned.
    app.control("/_control/slow?ms=1000").await;
    drop(Ws::connect(server.addr, Some("username=ida"), Some(&origin), None).await);
    // Five subscribes sent at once, and the client gone before the first is answered (as a
    // client that gives up and reconnects).
    for n in 0..5 {
        ws.send_text(&format!(
            r#"{{"command":"subscribe","identifier":"{{\"channel\":\"EchoChannel\",\"n\":{n}}}"}}"#
        ))
        .await;
    }
    drop(ws);
    // Its disconnect still reaches the app; the first call was abandoned, the others were
    // never made (anycable#266), so the disconnect is not held up behind them.
    let started = std::time::Instant::now();
    let calls = loop {
        let calls = app_calls(&app).await;
        if calls.contains(r#""event":"disconnect","username":"gus""#) {
            break calls;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{calls}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let subscribes = calls.matches(r#"\"n\":"#).count();
    assert!(
        subscribes <= 1,
        "{subscribes} subscribes reached the app: {calls}"
    );
    let metrics = server.client().get("/metrics").await.body;
    assert!(
        metrics.contains("hearth_rpc_calls_total{result=\"canceled\"} 2"),
        "{metrics}"
    );
}

/// A stopping server sends the app's `disconnect` for every connection it closes, without the
/// queue's pause between calls: 300 clients' disconnects reach the app before the process
/// exits (at 100 a second they would take 3 s, and the process would exit first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_server_sends_every_connections_disconnect_to_the_app() {
    let app = App::start().await;
    let dir = common::temp_dir("rpc-stop");
    let url = format!("{}/_anycable", app.url);
    let flags = [
        "--rpc-url",
        &url,
        "--rpc-secret",
        KEY,
        "--drain-spread",
        "0",
        "--max-connections-per-address",
        "0",
    ];
    let mut server = common::child::Hearth::start(&dir, &flags).await;
    let origin = format!("http://{}", server.addr);
    let mut clients = Vec::new();
    for n in 0..300 {
        let cookie = format!("username=stop{n}");
        let mut ws = Ws::connect(server.addr, Some(&cookie), Some(&origin), None).await;
        assert!(frame_with(&mut ws, "welcome", Duration::from_secs(5))
            .await
            .is_some());
        clients.push(ws);
    }
    server.signal("INT");
    server.wait(Duration::from_secs(30)).await;
    let calls = app_calls(&app).await;
    let sent = (0..300)
        .filter(|n| calls.contains(&format!(r#""event":"disconnect","username":"stop{n}""#)))
        .count();
    assert_eq!(sent, 300);
    drop(clients);
}
