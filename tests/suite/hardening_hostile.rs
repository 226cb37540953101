//! What a hostile pass over the fixes of restored sessions, attachments, byte ranges, file
//! names and limits found, each held over a real socket: a restore the server turns away
//! before the upgrade (at the connection limit, from a foreign Origin) leaves the stored
//! session for the client's retry.

use std::time::Duration;

use crate::common::{Ws, WsEvent};
use crate::hardening_sessions::{ext, room_identifier, stored_session, Nodes, Topology};

const T: Duration = Duration::from_secs(10);
const EXT: &str = "actioncable-v1-ext-json";
const SECRET: &str = "secret123456";

/// David's session is stored; Jason's socket takes the only connection slot of the node
/// serving `/cable` (`--max-connections 1`). David's restore is turned away with 503, and a
/// restore with his cookie and `sid` from a foreign Origin with 404: neither upgraded, so
/// neither may use the stored session up. Once Jason's socket is gone, David's retry restores
/// it (`restored: true` with his room).
async fn a_refused_restore_leaves_the_session_for_the_retry(topology: Topology) {
    let nodes = Nodes::start(topology, |c| c.max_connections = 1).await;
    let app = nodes.app();
    let mut david = app.signed_in("david@example.com", SECRET).await;
    let cookie = david.cookie_header();
    let id = room_identifier(&mut david, 1).await;
    let jason = app.signed_in("jason@example.com", SECRET).await;
    let sid = stored_session(&nodes, &cookie, &[&id]).await;
    let kept = nodes.kept();
    let (jason_ws, _) = ext(&nodes, &jason.cookie_header(), "").await;

    let node = nodes.cable();
    let path = format!("/cable?sid={sid}");
    let full = Ws::connect_to(
        node.addr,
        &path,
        Some(&cookie),
        Some(&node.origin()),
        Some(EXT),
    )
    .await;
    assert_eq!(full.status, 503, "{topology:?}: {}", full.response_head);
    let foreign = Ws::connect_to(
        node.addr,
        &path,
        Some(&cookie),
        Some("http://evil.example"),
        Some(EXT),
    )
    .await;
    assert_eq!(
        foreign.status, 404,
        "{topology:?}: {}",
        foreign.response_head
    );
    assert_eq!(
        nodes.kept(),
        kept,
        "{topology:?}: a restore turned away before the upgrade used the stored session up"
    );

    drop(jason_ws);
    let mut back = None;
    for _ in 0..100 {
        let ws = Ws::connect_to(
            node.addr,
            &path,
            Some(&cookie),
            Some(&node.origin()),
            Some(EXT),
        )
        .await;
        if ws.status == 101 {
            back = Some(ws);
            break;
        }
        assert_eq!(ws.status, 503, "{topology:?}: {}", ws.response_head);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut back = back.expect("the slot is free again");
    let welcome = match back.next_non_ping(T).await {
        Some(WsEvent::Text(first)) => first,
        other => panic!("{topology:?}: no welcome: {other:?}"),
    };
    let welcome: serde_json::Value = serde_json::from_str(&welcome).expect("a JSON welcome");
    assert_eq!(
        (welcome["restored"].as_bool(), &welcome["restored_ids"]),
        (Some(true), &serde_json::json!([id])),
        "{topology:?}: the retry after a refused restore was not restored: {welcome}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_refused_before_the_upgrade_keeps_the_session_on_one_node() {
    a_refused_restore_leaves_the_session_for_the_retry(Topology::One).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_refused_before_the_upgrade_keeps_the_session_on_a_cable_node() {
    a_refused_restore_leaves_the_session_for_the_retry(Topology::AppAndCable).await;
}
