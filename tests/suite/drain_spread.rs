//! `--drain-spread`: a stopping server sends `server_restart` to its cable connections one
//! after another over the spread, so a deploy's reconnects do not arrive in one burst.

use crate::common;

use std::time::Duration;

use common::{connect_with, TestServer, WsEvent};

/// When each of `n` connections got `server_restart`, after the first one did, with
/// `--drain-spread spread`; sorted.
async fn restart_times(spread: u64, n: usize) -> Vec<Duration> {
    let server = TestServer::start_with(|c| c.drain_spread = spread).await;
    let c = server.signed_in("david@example.com", "secret123456").await;
    let mut sockets = Vec::new();
    for _ in 0..n {
        sockets.push(connect_with(&server, &c).await);
    }
    let mut waiting = Vec::new();
    for mut ws in sockets {
        waiting.push(tokio::spawn(async move {
            loop {
                match ws.next(Duration::from_secs(20)).await {
                    Some(WsEvent::Text(t)) if t.contains("server_restart") => {
                        assert_eq!(
                            t,
                            r#"{"type":"disconnect","reason":"server_restart","reconnect":true}"#
                        );
                        return tokio::time::Instant::now();
                    }
                    Some(WsEvent::Text(_)) => {}
                    other => panic!("no server_restart: {other:?}"),
                }
            }
        }));
    }
    server.stop().await;
    let mut at = Vec::new();
    for w in waiting {
        at.push(w.await.expect("a client task"));
    }
    at.sort();
    at.iter().map(|t| *t - at[0]).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_server_spreads_its_disconnects_over_the_drain_spread() {
    let spread = restart_times(2, 20).await;
    let last = spread[spread.len() - 1];
    assert!(
        last >= Duration::from_millis(1500) && last <= Duration::from_millis(2600),
        "{spread:?}"
    );
    // Evenly: no more than a quarter of the clients within any 200 ms.
    for (i, t) in spread.iter().enumerate() {
        let within = spread[i..]
            .iter()
            .take_while(|u| **u - *t < Duration::from_millis(200))
            .count();
        assert!(
            within <= 5,
            "{within} disconnects within 200 ms: {spread:?}"
        );
    }
    let burst = restart_times(0, 20).await;
    assert!(
        burst[burst.len() - 1] < Duration::from_millis(500),
        "{burst:?}"
    );
}
