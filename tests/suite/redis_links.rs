//! Faults of the Redis link between nodes, over a private redis-server (restarted at will) and
//! a TCP proxy the test controls: a restarted Redis, a link that stays open but passes no
//! bytes (half-open, as after a failover or a NAT timeout) and a node cut off for a while. In
//! each, every client gets every post once and in order.

use crate::common;
use crate::redis::{
    member_of_room_1, next_text, nothing_more, room_identifier, subscribed, wait_link, PrivateRedis,
};

use std::time::Duration;

use common::{TestServer, WsEvent};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

const T: Duration = Duration::from_secs(10);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

async fn private_redis() -> (PrivateRedis, u16) {
    let port = free_port();
    let Some(redis) = PrivateRedis::start(port) else {
        panic!("redis-server is not installed (apt-get install redis-server)");
    };
    redis.wait_ready().await;
    (redis, port)
}

/// A TCP proxy in front of Redis: forwards bytes until told to stall the connections open
/// now (they stay open and pass nothing, both ways) or to cut every connection and refuse
/// new ones.
struct Proxy {
    port: u16,
    stall: watch::Sender<u64>,
    refuse: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(upstream: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let port = listener.local_addr().expect("an address").port();
        let (stall, _) = watch::channel(0u64);
        let (refuse, _) = watch::channel(false);
        let (stall_tx, refuse_tx) = (stall.clone(), refuse.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *refuse_tx.borrow() {
                    drop(client);
                    continue;
                }
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                else {
                    continue;
                };
                let epoch = *stall_tx.borrow();
                tokio::spawn(pipe(
                    client,
                    server,
                    epoch,
                    stall_tx.subscribe(),
                    refuse_tx.subscribe(),
                ));
            }
        });
        Self {
            port,
            stall,
            refuse,
            task,
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Every connection open now stays open and passes no more bytes; new ones forward.
    fn stall_open_connections(&self) {
        self.stall.send_modify(|e| *e += 1);
    }

    /// Cuts every connection and refuses new ones (`true`), or accepts again (`false`).
    fn refuse(&self, refuse: bool) {
        self.refuse.send_replace(refuse);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
        self.refuse(true);
    }
}

async fn pipe(
    mut a: tokio::net::TcpStream,
    mut b: tokio::net::TcpStream,
    epoch: u64,
    mut stall: watch::Receiver<u64>,
    mut refuse: watch::Receiver<bool>,
) {
    let (mut buf_a, mut buf_b) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
    loop {
        if *refuse.borrow() {
            return;
        }
        if *stall.borrow() > epoch {
            // Half-open: hold both sockets, pass nothing, until the proxy cuts them.
            let _ = refuse.wait_for(|r| *r).await;
            return;
        }
        tokio::select! {
            n = a.read(&mut buf_a) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => if b.write_all(&buf_a[..n]).await.is_err() { return },
            },
            n = b.read(&mut buf_b) => match n {
                Ok(0) | Err(_) => return,
                Ok(n) => if a.write_all(&buf_b[..n]).await.is_err() { return },
            },
            _ = stall.changed() => {}
            _ = refuse.changed() => {}
        }
    }
}

/// An app node on `app_url` and one cable node on `cable_url` (both the same Redis, perhaps
/// through a proxy); index 0 is the app node.
async fn app_and_cable(app_redis: &str, cable_redis: &str) -> Vec<TestServer> {
    app_and_cables(app_redis, &[cable_redis], |_| {}).await
}

/// An app node on `app_redis` and a cable node on each of `cable_redis`, each with `tweak`.
async fn app_and_cables(
    app_redis: &str,
    cable_redis: &[&str],
    tweak: impl Fn(&mut hearth::config::Config),
) -> Vec<TestServer> {
    let dir = common::temp_dir("links");
    let prefix = crate::redis::unique_prefix("links");
    let redis = |c: &mut hearth::config::Config, url: &str| {
        c.pubsub = hearth::config::PubSubKind::Redis;
        c.redis_url = url.to_owned().into();
        c.redis_channel_prefix = prefix.clone();
    };
    let app = TestServer::start_in(dir, |c| {
        redis(c, app_redis);
        c.role = hearth::config::Role::App;
        tweak(c);
    })
    .await;
    let app_url = format!("http://{}", app.addr);
    let mut nodes = vec![app];
    for url in cable_redis {
        let cable_dir = common::temp_dir("links-cable");
        let cable = TestServer::start_in(cable_dir.clone(), |c| {
            redis(c, url);
            c.role = hearth::config::Role::Cable;
            c.app_url = Some(app_url.clone());
            c.database = cable_dir.join("never-opened.sqlite3");
            tweak(c);
        })
        .await;
        nodes.push(cable);
    }
    for node in &nodes {
        wait_link(node, true).await;
    }
    nodes
}

/// Waits until a room's message stream is subscribed on the Redis at `url` (the cable node's
/// subscriptions are back in place).
async fn wait_room_subscribed(url: &str) {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        if let Ok(client) = redis::Client::open(url) {
            if let Ok(mut conn) = client.get_multiplexed_async_connection().await {
                let channels: Vec<String> = redis::cmd("PUBSUB")
                    .arg("CHANNELS")
                    .arg("*")
                    .query_async(&mut conn)
                    .await
                    .unwrap_or_default();
                if channels.iter().any(|c| c.ends_with(":messages")) {
                    return;
                }
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the room was never subscribed again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn metric(node: &TestServer, name: &str) -> Option<f64> {
    let body = node.client().get("/metrics").await.body;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_post_after_a_redis_restart_reaches_a_cable_nodes_client() {
    let (redis, port) = private_redis().await;
    let url = redis.url();
    let nodes = app_and_cable(&url, &url).await;
    let (mut poster, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let id = room_identifier(&signed);
    let mut reader = subscribed(&nodes[1], &poster, &id).await;
    let r = poster.post_message(1, "before", "restart-0", &csrf).await;
    assert_eq!(r.status, 200);
    assert!(next_text(&mut reader).await.contains("before"));

    drop(redis);
    let _redis = PrivateRedis::start(port).expect("redis-server restarts");
    _redis.wait_ready().await;
    wait_room_subscribed(&url).await;
    // The app node's publishing connection died with the old Redis: its first PUBLISH fails.
    let r = poster
        .post_message(1, "first after", "restart-1", &csrf)
        .await;
    assert_eq!(r.status, 200);
    let frame = next_text(&mut reader).await;
    assert!(frame.contains("first after"), "{frame}");
    nothing_more(&mut reader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_open_subscriber_link_is_noticed_within_3_s_and_what_it_missed_is_replayed() {
    let (redis, port) = private_redis().await;
    let proxy = Proxy::start(port).await;
    let nodes = app_and_cable(&redis.url(), &proxy.url()).await;
    let (mut poster, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let id = room_identifier(&signed);
    let mut reader = subscribed(&nodes[1], &poster, &id).await;
    let r = poster.post_message(1, "before", "half-0", &csrf).await;
    assert_eq!(r.status, 200);
    assert!(next_text(&mut reader).await.contains("before"));

    proxy.stall_open_connections();
    let stalled = tokio::time::Instant::now();
    for i in 0..5 {
        let r = poster
            .post_message(1, &format!("silent {i}"), &format!("half-{}", i + 1), &csrf)
            .await;
        assert_eq!(r.status, 200);
    }
    // The silence is noticed (heartbeat through Redis), reported, and the link reconnects.
    let deadline = stalled + Duration::from_millis(3500);
    while nodes[1].state.delivery.bus.health() == hearth::pubsub::Health::Linked {
        assert!(
            tokio::time::Instant::now() < deadline,
            "a silent link was still reported up after 3.5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for i in 0..5 {
        let frame = next_text(&mut reader).await;
        assert!(frame.contains(&format!("silent {i}")), "{frame}");
    }
    nothing_more(&mut reader).await;
    wait_link(&nodes[1], true).await;
    assert!(metric(&nodes[1], "hearth_redis_replayed_total").await >= Some(5.0));
    assert_eq!(metric(&nodes[1], "hearth_redis_link_up").await, Some(1.0));
    let r = poster.post_message(1, "after", "half-9", &csrf).await;
    assert_eq!(r.status, 200);
    assert!(next_text(&mut reader).await.contains("after"));
    nothing_more(&mut reader).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_redis_replays_what_was_posted_meanwhile_once_and_in_order() {
    let (redis, port) = private_redis().await;
    let proxy = Proxy::start(port).await;
    let nodes = app_and_cable(&redis.url(), &proxy.url()).await;
    let (mut poster, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let id = room_identifier(&signed);
    let mut reader = subscribed(&nodes[1], &poster, &id).await;
    let r = poster.post_message(1, "before", "cut-0", &csrf).await;
    assert_eq!(r.status, 200);
    assert!(next_text(&mut reader).await.contains("before"));

    proxy.refuse(true);
    wait_link(&nodes[1], false).await;
    let up = nodes[1].client().get("/up").await;
    assert_eq!(up.body, "OK (redis link down)");
    assert_eq!(up.header("x-hearth-redis-link"), Some("down"));
    for i in 0..3 {
        let r = poster
            .post_message(
                1,
                &format!("meanwhile {i}"),
                &format!("cut-{}", i + 1),
                &csrf,
            )
            .await;
        assert_eq!(r.status, 200);
    }
    proxy.refuse(false);
    wait_link(&nodes[1], true).await;
    for i in 0..3 {
        let frame = next_text(&mut reader).await;
        assert!(frame.contains(&format!("meanwhile {i}")), "{frame}");
    }
    let r = poster.post_message(1, "after", "cut-9", &csrf).await;
    assert_eq!(r.status, 200);
    assert!(next_text(&mut reader).await.contains("after"));
    nothing_more(&mut reader).await;
    assert_eq!(
        metric(&nodes[1], "hearth_redis_replayed_total").await,
        Some(3.0)
    );
    let up = nodes[1].client().get("/up").await;
    assert_eq!(up.body, "OK");
    assert_eq!(up.header("x-hearth-redis-link"), Some("up"));
    assert_eq!(up.header("x-hearth-redis-replayed"), Some("3"));
    assert_eq!(up.header("x-hearth-redis-pending"), Some("0"));
    assert!(up.header("x-hearth-redis-lag-ms").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_longer_than_the_log_reaches_tells_its_clients_to_reconnect() {
    let (redis, port) = private_redis().await;
    let proxy = Proxy::start(port).await;
    // A log of about one entry: Redis trims it in whole nodes of 100 entries.
    let nodes = app_and_cables(&redis.url(), &[&proxy.url()], |c| c.redis_log_limit = 1).await;
    let (mut poster, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let id = room_identifier(&signed);
    let mut reader = subscribed(&nodes[1], &poster, &id).await;
    proxy.refuse(true);
    wait_link(&nodes[1], false).await;
    // Each post logs the room's broadcast and one unread mark per member: well past 100.
    for i in 0..40 {
        let cid = format!("gap-{i}");
        assert_eq!(poster.post_message(1, &cid, &cid, &csrf).await.status, 200);
    }
    proxy.refuse(false);
    wait_link(&nodes[1], true).await;
    // What the log still holds may be replayed; then the client is told to reconnect (and its
    // page catches up), instead of silently lacking the trimmed posts.
    let deadline = tokio::time::Instant::now() + T;
    let told = loop {
        assert!(tokio::time::Instant::now() < deadline, "no disconnect came");
        match reader.next_non_ping(T).await {
            Some(WsEvent::Text(t)) if t.contains(r#""type":"disconnect""#) => break t,
            Some(WsEvent::Text(_)) => {}
            other => panic!("expected frames, then a disconnect: {other:?}"),
        }
    };
    assert_eq!(
        told,
        r#"{"type":"disconnect","reason":"server_restart","reconnect":true}"#
    );
    assert_eq!(
        metric(&nodes[1], "hearth_redis_replay_gaps_total").await,
        Some(1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_during_a_redis_outage_are_kept_and_published_when_it_returns() {
    let (redis, port) = private_redis().await;
    let url = redis.url();
    let nodes = app_and_cable(&url, &url).await;
    let (mut poster, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let id = room_identifier(&signed);
    let mut reader = subscribed(&nodes[1], &poster, &id).await;

    drop(redis);
    wait_link(&nodes[0], false).await;
    for i in 0..3 {
        let r = poster
            .post_message(1, &format!("outage {i}"), &format!("out-{i}"), &csrf)
            .await;
        assert_eq!(r.status, 200);
    }
    let deadline = tokio::time::Instant::now() + T;
    while metric(&nodes[0], "hearth_redis_publish_pending").await < Some(3.0) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the outage's broadcasts are not counted as pending"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _redis = PrivateRedis::start(port).expect("redis-server restarts");
    for i in 0..3 {
        let frame = next_text(&mut reader).await;
        assert!(frame.contains(&format!("outage {i}")), "{frame}");
    }
    nothing_more(&mut reader).await;
    assert_eq!(
        metric(&nodes[0], "hearth_redis_publish_pending").await,
        Some(0.0)
    );
}

/// Opens `/cable` on `node` offering `actioncable-v1-ext-json`, reads the welcome, and
/// subscribes to `identifier`.
async fn ext_subscribed(node: &TestServer, c: &common::Client, identifier: &str) -> common::Ws {
    let mut ws = common::Ws::connect_to(
        node.addr,
        "/cable",
        Some(&c.cookie_header()),
        Some(&node.origin()),
        Some("actioncable-v1-ext-json"),
    )
    .await;
    assert_eq!(ws.status, 101, "{}", ws.response_head);
    let welcome = next_text(&mut ws).await;
    assert!(welcome.contains("\"sid\""), "{welcome}");
    ws.send_text(&common::subscribe_cmd(identifier)).await;
    assert_eq!(
        ws.next_non_ping(T).await,
        common::text(&common::confirm(identifier))
    );
    ws
}

async fn next_json(ws: &mut common::Ws) -> serde_json::Value {
    serde_json::from_str(&next_text(ws).await).expect("a JSON frame")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn positions_come_from_redis_so_another_cable_node_answers_history_in_the_same_numbering() {
    let (redis, _) = private_redis().await;
    let url = redis.url();
    let nodes = app_and_cables(&url, &[&url, &url], |c| c.history_limit = 2).await;
    let (mut poster, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let id = room_identifier(&signed);
    let mut first = ext_subscribed(&nodes[1], &poster, &id).await;
    let mut other = ext_subscribed(&nodes[2], &poster, &id).await;
    let (mut offsets, mut epoch, mut stream) = (Vec::new(), String::new(), String::new());
    for i in 0..4 {
        let cid = format!("pos-{i}");
        assert_eq!(poster.post_message(1, &cid, &cid, &csrf).await.status, 200);
        let frame = next_json(&mut first).await;
        // Both cable nodes stamp the same position on the same broadcast.
        assert_eq!(next_json(&mut other).await, frame);
        offsets.push(frame["offset"].as_u64().expect("an offset"));
        epoch = frame["epoch"].as_str().expect("an epoch").to_owned();
        stream = frame["stream_id"].as_str().expect("a stream").to_owned();
    }
    assert!(offsets.windows(2).all(|w| w[1] == w[0] + 1), "{offsets:?}");
    // The client moves to the other cable node (a new connection there: `other` received every
    // offset live, and a live subscription's history never repeats what it was sent).
    drop(first);
    let mut moved = ext_subscribed(&nodes[2], &poster, &id).await;
    let had = |offset: u64| {
        serde_json::json!({"command": "history", "identifier": id, "history":
            {"streams": {stream.clone(): {"epoch": epoch.clone(), "offset": offset}}}})
        .to_string()
    };
    // offsets[0]: the history (2 per stream) no longer joins up: the client is told.
    moved.send_text(&had(offsets[0])).await;
    assert_eq!(
        next_json(&mut moved).await,
        serde_json::json!({"type": "reject_history", "identifier": id})
    );
    // What followed offsets[1] comes in the same numbering the first node stamped.
    moved.send_text(&had(offsets[1])).await;
    for expected in &offsets[2..] {
        let frame = next_json(&mut moved).await;
        assert_eq!(frame["offset"].as_u64(), Some(*expected), "{frame}");
        assert!(frame["message"]
            .as_str()
            .unwrap_or("")
            .contains("turbo-stream"));
    }
    assert_eq!(
        next_json(&mut moved).await,
        serde_json::json!({"type": "confirm_history", "identifier": id})
    );
    // The connection that received them live asks too: nothing again, only the confirmation.
    other.send_text(&had(offsets[1])).await;
    assert_eq!(
        next_json(&mut other).await,
        serde_json::json!({"type": "confirm_history", "identifier": id})
    );
    // Another epoch (as after a Redis that lost its data) is gone too.
    let mut elsewhere = had(offsets[3]);
    elsewhere = elsewhere.replace(&epoch, "another");
    other.send_text(&elsewhere).await;
    assert_eq!(
        next_json(&mut other).await,
        serde_json::json!({"type": "reject_history", "identifier": id})
    );
    // The members' unread marks got positions, but Redis keeps no entry of them: one per
    // member per post would be most of what a post writes.
    let mut conn = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let keys = |pattern: &'static str| redis::cmd("KEYS").arg(pattern).clone();
    let hash: Vec<String> = keys("*hearth/offsets")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(hash.len(), 1, "{hash:?}");
    let offsets: Vec<String> = redis::cmd("HKEYS")
        .arg(&hash[0])
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        offsets.iter().any(|s| s.ends_with("_unreads")),
        "{offsets:?}"
    );
    let kept: Vec<String> = keys("*hearth/h/*").query_async(&mut conn).await.unwrap();
    assert!(kept.iter().any(|k| k.ends_with(":messages")), "{kept:?}");
    assert!(!kept.iter().any(|k| k.contains("_unreads")), "{kept:?}");
}

/// The posts a frame or a catch-up's HTML names (`message_link-r<n>`), each once, in order.
fn posts_in(text: &str) -> Vec<u32> {
    text.match_indices("message_link-r")
        .filter_map(|(i, m)| {
            let digits: String = text[i + m.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .fold(Vec::new(), |mut seen, n| {
            if !seen.contains(&n) {
                seen.push(n);
            }
            seen
        })
}

/// The stock room page's reconnect to a cable node across a Redis restart (the chaos run's
/// faults): Jason's socket drops; Redis dies; David posts; Jason's page reconnects to the
/// cable node while its link is down (confirmed at once) and catches up over HTTP from the
/// app node's database; David posts again; Redis comes back empty, and the app node publishes
/// what it kept into it before the cable node's link is back; David posts once more.
/// Every post is on Jason's page (catch-up or live), none comes twice over the socket, in
/// order: no span falls between the catch-up and the live stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stock_reconnect_across_a_redis_restart_gets_every_post_from_its_catch_up_or_live() {
    let (redis, port) = private_redis().await;
    let proxy = Proxy::start(port).await;
    let nodes = app_and_cable(&redis.url(), &proxy.url()).await;
    let (mut david, signed, csrf) = member_of_room_1(&nodes[0], "david@example.com").await;
    let (mut jason, _, _) = member_of_room_1(&nodes[0], "jason@example.com").await;
    let id = room_identifier(&signed);
    let post = |n: u32| (format!("link r{n}"), format!("link-r{n}"));
    let mut reader = subscribed(&nodes[1], &jason, &id).await;
    let (body, cid) = post(0);
    assert_eq!(david.post_message(1, &body, &cid, &csrf).await.status, 200);
    assert_eq!(posts_in(&next_text(&mut reader).await), vec![0]);
    let (_, page) = jason.room(1).await;
    let cursor =
        common::attr_after(&page, "data-refresh-room-cursor-value=\"").expect("the page's cursor");

    drop(reader);
    drop(redis);
    wait_link(&nodes[1], false).await;
    for n in 1..=2 {
        let (body, cid) = post(n);
        assert_eq!(david.post_message(1, &body, &cid, &csrf).await.status, 200);
    }
    let mut reader = subscribed(&nodes[1], &jason, &id).await;
    let caught = jason
        .get(&format!(
            "/rooms/1/refresh?cursor={cursor}&reason=connection"
        ))
        .await;
    assert_eq!(caught.status, 200);
    let mut page: Vec<u32> = posts_in(&caught.body);
    let (body, cid) = post(3);
    assert_eq!(david.post_message(1, &body, &cid, &csrf).await.status, 200);
    // The cable node's link comes back only after the app node has published what it kept
    // into the empty Redis: only the log's replay brings it.
    proxy.refuse(true);
    let _redis = PrivateRedis::start(port).expect("redis-server restarts");
    _redis.wait_ready().await;
    wait_link(&nodes[0], true).await;
    let deadline = tokio::time::Instant::now() + T;
    while metric(&nodes[0], "hearth_redis_publish_pending").await != Some(0.0) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "kept posts never published"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    proxy.refuse(false);
    wait_link(&nodes[1], true).await;
    let (body, cid) = post(4);
    assert_eq!(david.post_message(1, &body, &cid, &csrf).await.status, 200);
    let mut live = Vec::new();
    while !live.contains(&4) {
        live.extend(posts_in(&next_text(&mut reader).await));
    }
    nothing_more(&mut reader).await;
    let mut sorted = live.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted, live, "live frames twice or out of order: {live:?}");
    page.extend(&live);
    page.sort_unstable();
    page.dedup();
    assert_eq!(
        page,
        vec![1, 2, 3, 4],
        "caught up {:?}, live {live:?}",
        posts_in(&caught.body)
    );
}
