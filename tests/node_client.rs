//! The official `@rails/actioncable` client (pinned in `tests/node/package.json`) against
//! Hearth: sign in, subscribe to the room's signed stream, post over HTTP, receive the
//! turbo-stream append; plus the unauthorized and rejected cases. Runs `npm ci` first when
//! `tests/node/node_modules` is missing.

mod common;

use std::path::Path;
use std::process::Command;

use common::TestServer;

fn ensure_node_modules() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    if !dir.join("node_modules/@rails/actioncable").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm ci in tests/node failed");
    }
}

async fn drive(server: &TestServer, scenario: &str) -> String {
    ensure_node_modules();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/driver.mjs");
    let base = server.origin();
    let output = tokio::process::Command::new("node")
        .arg(script)
        .args(["--base", &base, "--scenario", scenario, "--timeout", "15"])
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "driver {scenario} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test]
async fn rails_client_receives_a_post_live() {
    let server = TestServer::start().await;
    let out = drive(&server, "post").await;
    assert!(out.contains("RECV {\"type\":\"welcome\"}"), "{out}");
    assert!(out.contains("POSTED 200"), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("RECEIVED node-")),
        "{out}"
    );
}

#[tokio::test]
async fn rails_client_without_a_session_is_refused_for_good() {
    let server = TestServer::start().await;
    let out = drive(&server, "unauthorized").await;
    assert!(
        out.contains(r#"RECV {"type":"disconnect","reason":"unauthorized","reconnect":false}"#),
        "{out}"
    );
    assert!(out.contains("DISCONNECTED reconnect=false"), "{out}");
}

#[tokio::test]
async fn rails_client_sees_a_rejected_subscription() {
    let server = TestServer::start().await;
    let out = drive(&server, "rejected").await;
    assert!(out.contains("REJECTED"), "{out}");
}
