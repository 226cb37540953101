//! permessage-deflate (RFC 7692) with Chromium: Debian's headless Chromium (which offers the
//! extension on every WebSocket) on the room page, `@rails/actioncable` over `ws` (which offers
//! it too), a raw client that offers it and one that does not, all subscribed to room 1 of one
//! in-process server; one post reaches the four. The compressed clients share one compressed
//! frame (RSV1 set, compressed once); the plain client gets the plain frame (RSV1 clear); and
//! what Chromium and `ws` decode is byte for byte the plain frame. Chromium's side is
//! `tests/browser/deflate.mjs`; the rest is `deflate.rs`'s.

use crate::common;
use crate::deflate::{
    connect_deflate, long_body, next_message, node_deflate_client, node_frame, room_stream, start,
    subscribe, ANSWER, OFFER,
};

use std::time::Duration;

use base64::Engine as _;
use tokio::io::AsyncBufReadExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_and_rails_client_decode_the_compressed_frame_a_plain_client_gets_plain() {
    common::browser::ensure_ready();
    let server = start().await;
    let cid = "deflate-chromium";
    let (_node, mut node_lines, mut node_out) = node_deflate_client(&server, cid).await;

    let work = common::browser::work_dir("deflate");
    let mut browser = tokio::process::Command::new("node")
        .arg(common::browser::scripts_dir().join("deflate.mjs"))
        .arg("--hearth")
        .arg(env!("CARGO_BIN_EXE_hearth"))
        .arg("--work")
        .arg(&work)
        .arg("--artifacts")
        .arg(common::browser::artifacts())
        .args(["--base", &server.origin(), "--cid", cid])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut lines = tokio::io::BufReader::new(browser.stdout.take().unwrap()).lines();
    let mut out = String::new();
    let mut next_line = async || {
        let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .expect("the browser scenario goes on")
            .unwrap()
            .unwrap_or_default();
        line
    };
    loop {
        let line = next_line().await;
        out.push_str(&line);
        out.push('\n');
        assert!(!line.starts_with("FAIL") && !line.is_empty(), "{out}");
        if line == "CONNECTED" {
            break;
        }
    }
    // What Chromium agreed to, as the DevTools protocol saw the answer.
    assert!(out.contains(&format!("EXTENSIONS {ANSWER}\n")), "{out}");

    let mut poster = server.signed_in("david@example.com", "secret123456").await;
    let (csrf, id) = room_stream(&mut poster).await;
    let mut plain = common::connect_with(&server, &poster).await;
    subscribe(&mut plain, &id).await;
    let jason = server.signed_in("jason@example.com", "secret123456").await;
    let mut compressed = connect_deflate(&server, &jason, OFFER).await;
    subscribe(&mut compressed, &id).await;

    let before = server.state.delivery.fanout.stats().frames_compressed;
    let r = poster
        .post_message(1, &long_body("chromium"), cid, &csrf)
        .await;
    assert_eq!(r.status, 200);
    let p = next_message(&mut plain).await;
    let z = next_message(&mut compressed).await;
    assert!(!p.rsv1() && z.rsv1());
    let text = p.text();
    assert!(text.contains(cid));
    assert_eq!(z.text(), text);

    let mut chromium = None;
    while chromium.is_none() {
        let line = next_line().await;
        out.push_str(&line);
        out.push('\n');
        assert!(!line.starts_with("FAIL") && !line.is_empty(), "{out}");
        if let Some(b64) = line.strip_prefix("FRAME ") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            chromium = Some(String::from_utf8(bytes).unwrap());
        }
    }
    assert_eq!(chromium.unwrap(), text, "Chromium's decoded frame");
    assert_eq!(
        node_frame(&mut node_lines, &mut node_out).await,
        text,
        "@rails/actioncable's decoded frame"
    );
    assert_eq!(next_line().await, "OK", "{out}");
    // Chromium, `ws` and the raw client share the one compressed frame of the post.
    assert_eq!(
        server.state.delivery.fanout.stats().frames_compressed - before,
        1
    );
    let _ = std::fs::remove_dir_all(&work);
}
