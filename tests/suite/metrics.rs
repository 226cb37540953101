//! `/metrics` scraped over HTTP: the counters move when a post is delivered to a subscribed
//! Action Cable client, and the exposition is Prometheus' text format.

use crate::common;

use std::time::Duration;

use common::{attr_after, TestServer, Ws, WsEvent};

const T: Duration = Duration::from_secs(10);

/// The value of one series (`name` or `name{labels}`) in a text exposition.
pub(crate) fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (name, v) = l.rsplit_once(' ')?;
            (name == series).then(|| v.parse::<f64>().ok())?
        })
        .unwrap_or_else(|| panic!("series {series} missing:\n{text}"))
}

/// `GET /metrics` (200, Prometheus' text format): the exposition.
pub(crate) async fn scrape(server: &TestServer) -> String {
    let r = server.client().get("/metrics").await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    r.body
}

#[tokio::test]
async fn counters_move_when_a_post_is_delivered() {
    let server = TestServer::start().await;
    let mut david = server.signed_in("david@example.com", "secret123456").await;
    let (csrf, page) = david.room(1).await;
    let signed = attr_after(
        &page,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .expect("the room's stream source");
    let mut ws = Ws::connect(
        server.addr,
        Some(&david.cookie_header()),
        Some(&server.origin()),
        Some("actioncable-v1-json"),
    )
    .await;
    assert_eq!(ws.status, 101);
    assert_eq!(
        ws.next(T).await,
        Some(WsEvent::Text(r#"{"type":"welcome"}"#.into()))
    );
    let identifier =
        serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed})
            .to_string();
    ws.send_text(
        &serde_json::json!({"command": "subscribe", "identifier": identifier}).to_string(),
    )
    .await;
    match ws.next_non_ping(T).await {
        Some(WsEvent::Text(t)) => assert!(t.contains("confirm_subscription"), "{t}"),
        other => panic!("no confirm: {other:?}"),
    }

    let before = scrape(&server).await;
    assert!(value(&before, "hearth_cable_connections") >= 1.0);
    assert!(value(&before, "hearth_cable_subscriptions") >= 1.0);
    assert!(value(&before, "hearth_cable_connections_opened_total") >= 1.0);

    let r = david
        .post_message(1, "counted", "metrics-post-1", &csrf)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    loop {
        match ws.next_non_ping(T).await {
            Some(WsEvent::Text(t)) if t.contains("message_metrics-post-1") => break,
            Some(WsEvent::Text(_)) => {}
            other => panic!("the post was not delivered: {other:?}"),
        }
    }

    // The writer counts a frame once its write call returns, which may be just after the
    // client read it: scrape until the sent counter has moved.
    let deadline = tokio::time::Instant::now() + T;
    let after = loop {
        let text = scrape(&server).await;
        if value(&text, "hearth_fanout_frames_sent_total")
            > value(&before, "hearth_fanout_frames_sent_total")
        {
            break text;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "frames_sent never moved:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let moved = |series: &str| value(&after, series) - value(&before, series);
    // One broadcast to the room's stream, one per member's unread stream.
    assert!(moved("hearth_fanout_broadcasts_total") >= 2.0);
    assert!(moved("hearth_fanout_frames_queued_total") >= 1.0);
    assert!(moved("hearth_fanout_queued_bytes_total") > 1000.0);
    assert!(moved("hearth_fanout_sent_bytes_total") > 1000.0);
    assert!(moved("hearth_fanout_write_calls_total") >= 1.0);
    assert_eq!(moved("hearth_messages_posted_total{source=\"web\"}"), 1.0);
    assert_eq!(
        moved("hearth_post_duration_seconds_count{source=\"web\"}"),
        1.0
    );
    assert_eq!(moved("hearth_broadcast_duration_seconds_count"), 1.0);
    assert!(value(&after, "hearth_fanout_queue_depth_high_water_frames") >= 1.0);
    // Only frames longer than queue-bytes / queue-frames (16 KiB) are accounted in bytes.
    assert_eq!(value(&after, "hearth_fanout_queue_high_water_bytes"), 0.0);
    assert_eq!(
        value(&after, "hearth_fanout_slow_consumer_disconnects_total"),
        0.0
    );
    assert!(after.contains("# TYPE hearth_post_duration_seconds histogram"));
    assert!(after.contains("hearth_post_duration_seconds_bucket{source=\"web\",le=\"+Inf\"} "));
}

#[tokio::test]
async fn bot_posts_and_rejected_connections_are_counted() {
    let server = TestServer::start().await;
    let before = scrape(&server).await;
    let mut anonymous = Ws::connect(server.addr, None, Some(&server.origin()), None).await;
    assert_eq!(anonymous.status, 101);
    assert!(
        matches!(anonymous.next(T).await, Some(WsEvent::Text(t)) if t.contains("unauthorized"))
    );
    let r = server
        .client()
        .request("POST", "/rooms/1/5-bNd3rB0tK3y7/messages", &[], b"beep")
        .await;
    assert_eq!(r.status, 201);
    let after = scrape(&server).await;
    let moved = |series: &str| value(&after, series) - value(&before, series);
    assert_eq!(moved("hearth_cable_connections_rejected_total"), 1.0);
    assert_eq!(moved("hearth_messages_posted_total{source=\"bot\"}"), 1.0);
    assert_eq!(
        moved("hearth_post_duration_seconds_count{source=\"bot\"}"),
        1.0
    );
}

#[tokio::test]
async fn metrics_can_be_turned_off() {
    let server = TestServer::start_with(|c| c.metrics = false).await;
    assert_eq!(server.client().get("/metrics").await.status, 404);
}
