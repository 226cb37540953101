//! Rails' own Action Cable redis adapter (Debian's `ruby-actioncable` and `ruby-redis`)
//! broadcasting into Hearth's clients, `Turbo::StreamsChannel`-style, checked byte for byte;
//! Rails' `remote_connections.where(current_user:).disconnect` closing that user's sockets; and
//! Hearth's own PUBLISH byte-identical to Rails'. Needs Redis (`REDIS_URL`) and Ruby with
//! `action_cable` and `redis` (`.ci/run` installs both).

use crate::common;

use std::time::Duration;

use futures_util::StreamExt as _;

use common::{confirm, connect_with, subscribe_cmd, text, TestServer, Ws, WsEvent};

const T: Duration = Duration::from_secs(10);

const HTML: &str = "<turbo-stream action=\"append\" target=\"messages\"><template><p id=\"message_1\">Hi & \"bye\" \u{2028} é</p></template></turbo-stream>";

async fn next_text(ws: &mut Ws) -> String {
    match ws.next_non_ping(T).await {
        Some(WsEvent::Text(t)) => t,
        other => panic!("expected a text frame, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rails_redis_adapter_broadcasts_and_disconnects_into_hearth() {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = format!(
        "hearth_rails_{}_{:x}",
        std::process::id(),
        rand::random::<u32>()
    );
    let node = {
        let (url, prefix) = (url.clone(), prefix.clone());
        TestServer::start_with(move |c| {
            c.pubsub = hearth::config::PubSubKind::Redis;
            c.redis_url = url.into();
            c.redis_channel_prefix = prefix;
        })
        .await
    };

    let deadline = tokio::time::Instant::now() + T;
    while node.state.delivery.bus.health() != hearth::pubsub::Health::Linked {
        assert!(
            tokio::time::Instant::now() < deadline,
            "Redis link never came up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A plain subscriber sees what each side publishes.
    let mut watcher = redis::Client::open(url.as_str())
        .expect("a Redis URL")
        .get_async_pubsub()
        .await
        .expect("Redis answers");
    watcher
        .subscribe(format!("{prefix}:chat:2021"))
        .await
        .expect("SUBSCRIBE");
    let mut published = watcher.into_on_message();

    let identifier = serde_json::json!({
        "channel": "Turbo::StreamsChannel",
        "signed_stream_name": node.state.keys.signer.sign("chat:2021"),
    })
    .to_string();
    let david = node.signed_in("david@example.com", "secret123456").await;
    let jason = node.signed_in("jason@example.com", "secret123456").await;
    let mut sockets = Vec::new();
    for c in [&david, &jason] {
        let mut ws = connect_with(&node, c).await;
        ws.send_text(&subscribe_cmd(&identifier)).await;
        assert_eq!(ws.next_non_ping(T).await, text(&confirm(&identifier)));
        sockets.push(ws);
    }
    let david_id =
        hearth::db::users::find_active_for_login(&node.state.db.pool, "david@example.com")
            .await
            .expect("query")
            .expect("david")
            .0
            .id;

    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/ruby/rails_redis_broadcast.rb"
    );
    let output = tokio::process::Command::new("ruby")
        .args([script, &url, &prefix, "chat:2021", &david_id.to_string()])
        .output()
        .await
        .expect("ruby runs (apt-get install ruby-actioncable ruby-redis)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let encoded = String::from_utf8(output.stdout).expect("UTF-8");
    let encoded = encoded.trim_end_matches('\n');

    let expected = format!(
        r#"{{"identifier":{},"message":{encoded}}}"#,
        serde_json::to_string(&identifier).expect("JSON")
    );
    for ws in &mut sockets {
        assert_eq!(next_text(ws).await, expected);
    }
    // Rails 6.1 publishes `{"type":"disconnect"}` (reconnect defaults to true).
    assert_eq!(
        sockets[0].next_non_ping(T).await,
        text(r#"{"type":"disconnect","reason":"remote","reconnect":true}"#)
    );
    assert_eq!(
        sockets[0].next_non_ping(T).await,
        Some(WsEvent::Close(1000))
    );
    assert_eq!(
        sockets[1].next_non_ping(Duration::from_millis(400)).await,
        None
    );

    // What Rails published, and then what Hearth publishes for the same HTML: the same bytes.
    let rails = tokio::time::timeout(T, published.next())
        .await
        .expect("in time")
        .expect("a message");
    assert_eq!(rails.get_payload_bytes(), encoded.as_bytes());
    node.state
        .delivery
        .broadcaster
        .broadcast_string("chat:2021", HTML);
    let hearth = tokio::time::timeout(T, published.next())
        .await
        .expect("in time")
        .expect("a message");
    assert_eq!(hearth.get_payload_bytes(), rails.get_payload_bytes());
    assert_eq!(next_text(&mut sockets[1]).await, expected);
}
