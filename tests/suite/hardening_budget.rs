//! The queued-frame budgets against the real binary: what the server holds for many
//! non-reading sockets, of many users or of one, that are sent large posts. What it holds is
//! its resident memory (the rise of `VmHWM`) and the bytes the kernel keeps in its sockets'
//! send queues (memory the kernel takes on the process's behalf, counted to its cgroup), which
//! no budget counted before: a frame written to the socket had left the budgets.

use crate::common;

use std::time::Duration;

use common::child::{Hearth, DAVID, PASSWORD};
use common::{Ws, WsEvent};

/// The server's resident memory now (`VmRSS`), in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc status")
}

/// Bytes the kernel holds in the send queues of the server's sockets on `port` (the
/// `tx_queue` column of `/proc/net/tcp`: written by the server, not yet acknowledged by the
/// peer), in KiB.
fn kernel_queued_kib(port: u16) -> u64 {
    let mut total = 0u64;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(queues)) = (fields.get(1), fields.get(4)) else {
                continue;
            };
            let local_port = local
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if local_port != Some(port) {
                continue;
            }
            let tx = queues
                .split(':')
                .next()
                .and_then(|q| u64::from_str_radix(q, 16).ok())
                .unwrap_or(0);
            total += tx;
        }
    }
    total / 1024
}

/// A load: `users` accounts (David, then `user1@example.com`, …), `sockets` non-reading
/// sockets of each (small receive windows), each subscribed to room 1 under its own
/// identifier (an extra `n` key: one frame per socket and post, charged to it alone), then
/// `posts` posts of `body` characters; `flags` for the server.
struct Load {
    users: usize,
    sockets: usize,
    posts: usize,
    body: usize,
    flags: Vec<String>,
}

/// The e-mail address and password of the seed's user number `u` (0: David).
fn email(u: usize) -> (String, &'static str) {
    if u == 0 {
        (DAVID.to_owned(), PASSWORD)
    } else {
        (format!("user{u}@example.com"), "password")
    }
}

/// What the server held at most beyond what it held before the posts: the rise of its peak
/// resident memory plus the most its sockets' send queues held (sampled after each post), in
/// MiB; and the slow-consumer cut-offs it counted.
struct Held {
    mib: f64,
    cut_off: u64,
}

async fn run(load: &Load, tag: &str) -> Held {
    let dir = common::temp_dir(tag);
    let mut flags = load.flags.clone();
    flags.extend(
        [
            "--max-connections-per-user",
            "0",
            "--max-connections-per-address",
            "0",
        ]
        .map(str::to_owned),
    );
    if let Ok(extra) = std::env::var("HEARTH_TEST_QUEUE_FLAGS") {
        flags.extend(extra.split_whitespace().map(str::to_owned));
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let hearth = Hearth::start(&dir, &flags).await;
    let pid = hearth.child.id().unwrap();
    let origin = format!("http://{}", hearth.addr);
    let mut poster = hearth.client();
    assert_eq!(poster.login(DAVID, PASSWORD).await.status, 302);
    let (csrf, _) = poster.room(1).await;

    let mut stalled = Vec::new();
    for u in 0..load.users {
        let mut c = hearth.client();
        let (mail, password) = email(u);
        assert_eq!(c.login(&mail, password).await.status, 302, "{mail}");
        let (_, page) = c.room(1).await;
        let signed = common::attr_after(
            &page,
            "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
        )
        .expect("the room's stream name");
        let cookie = c.cookie_header();
        for s in 0..load.sockets {
            let mut ws = Ws::connect_small_window(hearth.addr, &cookie, &origin).await;
            assert_eq!(ws.status, 101, "{mail} socket {s}: {}", ws.response_head);
            let id = serde_json::json!({
                "channel": "RoomMessagesChannel",
                "signed_stream_name": signed,
                "n": format!("{u}-{s}"),
            });
            ws.send_text(&common::subscribe_cmd(&id.to_string())).await;
            loop {
                match ws.next_non_ping(Duration::from_secs(60)).await {
                    Some(WsEvent::Text(t)) if t.contains("confirm_subscription") => break,
                    Some(WsEvent::Text(t)) if t.contains("welcome") => {}
                    other => panic!("{mail} socket {s}: {other:?}"),
                }
            }
            stalled.push(ws);
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kib(pid);
    let peak_before = hearth.peak_rss_kib();
    let port = hearth.addr.port();
    let kernel_before = kernel_queued_kib(port);
    let mut kernel = 0;
    let body = "x".repeat(load.body);
    for p in 0..load.posts {
        let r = poster
            .post_message(1, &body, &format!("{tag}-{p}"), &csrf)
            .await;
        assert_eq!(r.status, 200, "post {p}");
        kernel = kernel.max(kernel_queued_kib(port));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    kernel = kernel.max(kernel_queued_kib(port));
    let after = rss_kib(pid);
    let peak = hearth.peak_rss_kib();
    let kernel_rise = kernel.saturating_sub(kernel_before) as f64 / 1024.0;
    let rise = after.saturating_sub(before) as f64 / 1024.0;
    let peak_rise = peak.saturating_sub(peak_before.max(before)) as f64 / 1024.0;
    let metrics = hearth.client().get("/metrics").await.body;
    let cut = metrics
        .lines()
        .find(|l| l.starts_with("hearth_fanout_slow_consumer_disconnects_total"))
        .unwrap_or("")
        .to_owned();
    let cut_off = cut
        .rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let held = peak_rise + kernel_rise;
    eprintln!(
        "{tag}: {} users x {} sockets, {} posts of {} chars, flags {:?}: VmRSS {} -> {} MiB \
         (+{rise:.1}), VmHWM +{peak_rise:.1} MiB, send queues +{kernel_rise:.1} MiB: \
         held +{held:.1} MiB; {cut_off} cut off",
        load.users,
        load.sockets,
        load.posts,
        load.body,
        flags,
        before / 1024,
        after / 1024,
    );
    drop(stalled);
    let _ = std::fs::remove_dir_all(&dir);
    Held { mib: held, cut_off }
}

/// A post's body: near the 64 KiB limit, so each frame is a long one (about 60 KiB).
const BODY_CHARS: usize = 60_000;
/// What the server may hold beyond a budget whatever the sockets: the post path's own memory
/// (rendering, the database's page cache, the history kept for catch-up) and allocator slack.
const FIXED_OVERHEAD_MIB: f64 = 16.0;
/// What each non-reading connection may hold beyond a budget (docs/hardening.md, "Queued
/// frames"): the kernel's unsent bytes (`SOCKET_UNSENT_BYTES`, 128 KiB, and one segment),
/// frames its writer took in hand (`MAX_BATCH_BYTES`, 256 KiB, and one frame) and its ring.
const PER_CONNECTION_MIB: f64 = 0.5;

/// `budgets` as owned flags.
fn flags(budgets: &[&str]) -> Vec<String> {
    budgets.iter().map(|f| (*f).to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_budget_holds_what_ten_users_non_reading_sockets_make_the_server_hold() {
    const SERVER_BUDGET_MIB: f64 = 16.0;
    let load = Load {
        users: 10,
        sockets: 4,
        posts: 48,
        body: BODY_CHARS,
        // The server's budget alone (no user budget), well under what the posts make.
        flags: flags(&[
            "--queue-user-bytes",
            "0",
            "--queue-server-bytes",
            "16777216",
        ]),
    };
    let held = run(&load, "server-budget").await;
    let sockets = (load.users * load.sockets) as f64;
    let allowed = sockets.mul_add(PER_CONNECTION_MIB, SERVER_BUDGET_MIB + FIXED_OVERHEAD_MIB);
    assert!(
        held.mib <= allowed,
        "the server held {:.1} MiB for 40 non-reading sockets: more than its budget \
         ({SERVER_BUDGET_MIB} MiB) and {allowed:.1} MiB in all",
        held.mib
    );
    assert!(held.cut_off > 0, "the posts pass the budget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_non_reading_sockets_of_one_account_hold_its_budget_not_megabytes_each() {
    const USER_BUDGET_MIB: f64 = 8.0;
    let load = Load {
        users: 1,
        sockets: 50,
        posts: 32,
        body: BODY_CHARS,
        flags: flags(&["--queue-user-bytes", "8388608"]),
    };
    let held = run(&load, "user-budget").await;
    let sockets = load.sockets as f64;
    let allowed = sockets.mul_add(PER_CONNECTION_MIB, USER_BUDGET_MIB + FIXED_OVERHEAD_MIB);
    assert!(
        held.mib <= allowed,
        "the server held {:.1} MiB for one account's 50 non-reading sockets: more than its \
         budget ({USER_BUDGET_MIB} MiB) and {allowed:.1} MiB in all ({:.2} MiB a socket)",
        held.mib,
        held.mib / sockets
    );
    assert!(held.cut_off > 0, "the posts pass the account's budget");
}
