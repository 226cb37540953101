//! The official `@rails/actioncable` client (pinned in `tests/node/package.json`) against
//! Hearth: sign in, subscribe to the room's signed stream, post over HTTP, receive the
//! turbo-stream append; plus the unauthorized and rejected cases, and a server restart the
//! client rides out on its own (reconnect, resubscribe, live again). Runs `npm ci` first when
//! `tests/node/node_modules` is missing.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::TestServer;

pub(crate) fn ensure_node_modules() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node");
    if !dir.join("node_modules/@rails/actioncable").exists()
        || !dir.join("node_modules/@anycable/core").exists()
        || !dir.join("node_modules/@anycable/serverless-js").exists()
    {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rails_client_reconnects_and_resubscribes_after_a_restart() {
    use tokio::io::AsyncBufReadExt;
    ensure_node_modules();
    let server = TestServer::start().await;
    let addr = server.addr;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/driver.mjs");
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .args([
            "--base",
            &server.origin(),
            "--scenario",
            "restart",
            "--timeout",
            "60",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut out = String::new();
    while let Some(line) =
        tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("the client connects")
            .unwrap()
    {
        out.push_str(&line);
        out.push('\n');
        if line == "CONNECTED" {
            break;
        }
    }
    assert!(out.ends_with("CONNECTED\n"), "{out}");
    // Stop (server_restart to every client) and start again on the same address and database.
    let dir = server.stop_keeping_dir().await;
    let server = TestServer::start_in(dir, |c| c.bind = addr).await;
    let rest = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        let mut rest = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push_str(&line);
            rest.push('\n');
        }
        rest
    })
    .await
    .expect("the client finishes");
    let status = child.wait().await.unwrap();
    out.push_str(&rest);
    assert!(status.success(), "{out}");
    assert!(
        out.contains(r#"RECV {"type":"disconnect","reason":"server_restart","reconnect":true}"#),
        "{out}"
    );
    assert!(
        out.contains("DISCONNECTED willAttemptReconnect=true"),
        "{out}"
    );
    assert!(out.contains("RECONNECTED 2"), "{out}");
    assert!(out.contains("POSTED 200"), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("RECEIVED node-restart-")),
        "{out}"
    );
    drop(server);
}
