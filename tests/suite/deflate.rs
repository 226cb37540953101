//! permessage-deflate (RFC 7692) on `/cable`, end to end: raw clients that offer it and raw
//! clients that do not, side by side with the official `@rails/actioncable` client over `ws`
//! (which offers it by default), all on one broadcast: the compressed clients get one shared
//! compressed frame per window size they agreed to (RSV1 set, compressed once however many
//! they are), the others the plain frame, and everybody the same text once inflated. Then the hostile cases, each closing that
//! connection alone with RFC 6455's code while another connection goes on: a deflate bomb
//! (1009), RSV1 where nothing was agreed (1002), a compressed control frame (1002), and a
//! client that breaks the window it agreed to (1007; RFC 7692 §7.1.2.2's window bits are left
//! unlimited, so offering `client_max_window_bits=8` and compressing with 15 bits is not a
//! breach, and is read). The `--websocket-compression off` switch agrees to nothing.
//!
//! The servers run the queue engine whatever `HEARTH_FANOUT` says: the reference engine sends
//! every frame uncompressed (which RFC 7692 allows), so its frames would not show RSV1. Chromium
//! on the same broadcast: `browser_deflate.rs`.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{confirm, connect_with, subscribe_cmd, Client, RawFrame, TestServer, Ws, WsEvent};
use hearth::fanout::EngineKind;

const T: Duration = Duration::from_secs(10);

/// What Chromium, Firefox and `ws` offer.
pub(crate) const OFFER: &str = "permessage-deflate; client_max_window_bits";

/// What the server answers them (RFC 7692 §7.1.1: neither side keeps its context).
pub(crate) const ANSWER: &str =
    "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

/// A command that gets an answer: subscribing to the user's unread notices.
const UNREADS: &str = r#"{"channel":"UnreadRoomsChannel"}"#;

/// A server on the queue engine (see the module docs), compression on (the default).
pub(crate) async fn start() -> TestServer {
    TestServer::start_with(|c| c.fanout = EngineKind::Queue).await
}

/// Opens `/cable` as `c` offering `offer`; checks the 101, that permessage-deflate was agreed
/// as [`ANSWER`] says, and the welcome.
pub(crate) async fn connect_deflate(server: &TestServer, c: &Client, offer: &str) -> Ws {
    connect_answered(server, c, offer, ANSWER).await
}

/// [`connect_deflate`] expecting `answer`.
pub(crate) async fn connect_answered(
    server: &TestServer,
    c: &Client,
    offer: &str,
    answer: &str,
) -> Ws {
    let mut ws = Ws::connect_offering(
        server.addr,
        Some(&c.cookie_header()),
        Some(&server.origin()),
        Some(common::PROTOCOLS),
        offer,
    )
    .await;
    assert_eq!(ws.status, 101, "{}", ws.response_head);
    assert_eq!(
        ws.header("sec-websocket-extensions").as_deref(),
        Some(answer),
        "{}",
        ws.response_head
    );
    assert_eq!(ws.next(T).await, common::text(r#"{"type":"welcome"}"#));
    ws
}

/// The identifier the room page's `RoomMessagesChannel` source subscribes with (the key order
/// Turbo's `JSON.stringify` gives).
pub(crate) fn room_identifier(signed: &str) -> String {
    serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed}).to_string()
}

/// Room 1's CSRF token and message stream identifier, as `c` sees them on the room page.
pub(crate) async fn room_stream(c: &mut Client) -> (String, String) {
    let (csrf, html) = c.room(1).await;
    let signed = common::attr_after(
        &html,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .unwrap()
    .replace("&#x3D;", "=");
    (csrf, room_identifier(&signed))
}

/// Subscribes `ws` to `identifier` with a plain text command and waits for the confirm.
pub(crate) async fn subscribe(ws: &mut Ws, identifier: &str) {
    ws.send_text(&subscribe_cmd(identifier)).await;
    assert_eq!(
        ws.next_non_ping(T).await,
        common::text(&confirm(identifier))
    );
}

/// Sends one masked client frame whose first header byte is `first` (FIN, RSV1–3, opcode).
pub(crate) async fn send_raw(ws: &mut Ws, first: u8, payload: &[u8]) {
    use tokio::io::AsyncWriteExt;
    let mut f = Vec::new();
    loadgen::ws::encode_client_frame(
        first & 0x80 != 0,
        first & 0x0f,
        payload,
        [0x0b, 0xad, 0xf0, 0x0d],
        &mut f,
    );
    f[0] = first;
    ws.stream.write_all(&f).await.unwrap();
}

/// FIN | RSV1 | text: a whole compressed text message.
pub(crate) const COMPRESSED_TEXT: u8 = 0x80 | 0x40 | 0x1;

/// The next frame that is not a ping, as it came off the socket.
pub(crate) async fn next_message(ws: &mut Ws) -> RawFrame {
    loop {
        let frame = ws.next_raw(T).await.expect("a frame in time");
        if !(frame.opcode() == 0x1 && frame.text().starts_with(r#"{"type":"ping""#)) {
            return frame;
        }
    }
}

/// A message body long enough that its broadcast is compressed: a few paragraphs of prose.
pub(crate) fn long_body(tag: &str) -> String {
    let paragraph = "Campfire keeps the team's conversation in one place: rooms for projects, \
                     direct messages for the rest, files and pictures inline, and everybody \
                     sees a new line the moment it is posted. ";
    format!("{tag}: {}", paragraph.repeat(8))
}

/// Asserts that `ws` (signed in, not subscribed to the unread notices yet) is still served.
pub(crate) async fn still_served(ws: &mut Ws) {
    subscribe(ws, UNREADS).await;
}

/// The hostile connection's last word from the server: its close frame's code.
async fn closed_with(ws: &mut Ws) -> u16 {
    loop {
        match ws.next_non_ping(T).await {
            Some(WsEvent::Close(code)) => return code,
            Some(WsEvent::Text(_)) => {}
            other => panic!("no close frame: {other:?}"),
        }
    }
}

/// Runs `tests/node/driver.mjs --scenario deflate` (`@rails/actioncable` over `ws`, offering
/// permessage-deflate and compressing what it sends) until it is subscribed to room 1; its
/// remaining output ends with the frame of the post carrying `cid`.
pub(crate) async fn node_deflate_client(
    server: &TestServer,
    cid: &str,
) -> (
    tokio::process::Child,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    String,
) {
    use tokio::io::AsyncBufReadExt;
    crate::node_client::ensure_node_modules();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/driver.mjs");
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .args(["--base", &server.origin(), "--scenario", "deflate"])
        .args([
            "--cid",
            cid,
            "--email",
            "kevin@example.com",
            "--timeout",
            "60",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut out = String::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the node client subscribes")
        .unwrap()
    {
        out.push_str(&line);
        out.push('\n');
        if line == "CONNECTED" {
            return (child, lines, out);
        }
    }
    panic!("the node client ended before it subscribed:\n{out}");
}

/// The decoded frame the node client printed (`FRAME <base64>`), waiting for it.
pub(crate) async fn node_frame(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    out: &mut String,
) -> String {
    use base64::Engine as _;
    while let Some(line) = tokio::time::timeout(T, lines.next_line())
        .await
        .expect("the node client gets the post")
        .unwrap()
    {
        out.push_str(&line);
        out.push('\n');
        if let Some(b64) = line.strip_prefix("FRAME ") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            return String::from_utf8(bytes).unwrap();
        }
    }
    panic!("no FRAME line:\n{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_compressed_frame_per_broadcast_and_window_for_every_deflate_client_plain_for_the_rest()
{
    let server = start().await;
    let cid = "deflate-everyone";
    let (_node, mut node_lines, mut node_out) = node_deflate_client(&server, cid).await;
    // `ws` names the extensions it agreed to (their parameters are the raw clients' check).
    assert!(
        node_out.contains("\nEXTENSIONS permessage-deflate\n"),
        "{node_out}"
    );
    let mut poster = server.signed_in("david@example.com", "secret123456").await;
    let (csrf, id) = room_stream(&mut poster).await;
    let mut plain = connect_with(&server, &poster).await;
    assert_eq!(plain.header("sec-websocket-extensions"), None);
    subscribe(&mut plain, &id).await;
    let jason = server.signed_in("jason@example.com", "secret123456").await;
    let mut first = connect_deflate(&server, &jason, OFFER).await;
    let mut second = connect_deflate(&server, &jason, "permessage-deflate").await;
    // A client that decompresses with a 1 KiB window: a parameter set of its own.
    let mut narrow = connect_answered(
        &server,
        &jason,
        "permessage-deflate; server_max_window_bits=10",
        &format!("{ANSWER}; server_max_window_bits=10"),
    )
    .await;
    // The subscribe commands themselves compressed, as a browser sends them.
    for ws in [&mut first, &mut second, &mut narrow] {
        send_raw(
            ws,
            COMPRESSED_TEXT,
            &common::deflate(subscribe_cmd(&id).as_bytes(), 15),
        )
        .await;
        assert_eq!(ws.next_non_ping(T).await, common::text(&confirm(&id)));
        // Short frames go uncompressed (RSV1 clear) even here.
        subscribe(ws, UNREADS).await;
    }
    subscribe(&mut plain, UNREADS).await;

    let before = server.state.delivery.fanout.stats().frames_compressed;
    let r = poster
        .post_message(1, &long_body("everyone"), cid, &csrf)
        .await;
    assert_eq!(r.status, 200);
    let a = next_message(&mut first).await;
    let b = next_message(&mut second).await;
    let n = next_message(&mut narrow).await;
    let p = next_message(&mut plain).await;
    assert!(a.rsv1(), "a deflate client's post frame is compressed");
    assert_eq!(a, b, "both deflate clients get the same bytes");
    assert!(n.rsv1());
    assert!(
        n.payload.len() > a.payload.len(),
        "a 1 KiB window compresses less: {} vs {} bytes",
        n.payload.len(),
        a.payload.len()
    );
    assert!(!p.rsv1(), "the plain client's frame is not compressed");
    let text = p.text();
    assert!(text.contains(&format!(r#"id=\"message_{cid}\""#)), "{text}");
    assert!(text.len() > 2000, "{} bytes", text.len());
    assert_eq!(a.text(), text, "the same text once inflated");
    assert_eq!(n.text(), text);
    assert!(
        a.payload.len() * 3 < text.len(),
        "{} compressed bytes for {}",
        a.payload.len(),
        text.len()
    );
    // The node client decoded the same frame.
    assert_eq!(node_frame(&mut node_lines, &mut node_out).await, text);
    // One compression for the three deflate subscribers of the room with a 32 KiB window, one
    // for the one with 1 KiB (the unread notices that follow are short and stay plain).
    for ws in [&mut first, &mut second, &mut narrow, &mut plain] {
        let notice = next_message(ws).await;
        assert!(!notice.rsv1());
        assert_eq!(
            notice.text(),
            r#"{"identifier":"{\"channel\":\"UnreadRoomsChannel\"}","message":{"roomId":1}}"#
        );
    }
    assert_eq!(
        server.state.delivery.fanout.stats().frames_compressed - before,
        2
    );
}

#[tokio::test]
async fn compression_off_agrees_to_nothing_and_sends_plain_frames() {
    let server = TestServer::start_with(|c| {
        c.fanout = EngineKind::Queue;
        c.websocket_compression = hearth::config::Switch::Off;
    })
    .await;
    let mut c = server.signed_in("david@example.com", "secret123456").await;
    let (csrf, id) = room_stream(&mut c).await;
    let mut ws = Ws::connect_offering(
        server.addr,
        Some(&c.cookie_header()),
        Some(&server.origin()),
        Some(common::PROTOCOLS),
        OFFER,
    )
    .await;
    assert_eq!(ws.status, 101);
    assert_eq!(ws.header("sec-websocket-extensions"), None);
    assert_eq!(ws.next(T).await, common::text(r#"{"type":"welcome"}"#));
    subscribe(&mut ws, &id).await;
    let r = c
        .post_message(1, &long_body("off"), "deflate-off", &csrf)
        .await;
    assert_eq!(r.status, 200);
    let frame = next_message(&mut ws).await;
    assert!(!frame.rsv1());
    assert!(frame.text().contains("deflate-off"));
    assert_eq!(server.state.delivery.fanout.stats().frames_compressed, 0);
    // And RSV1 is then a protocol error like any reserved bit.
    send_raw(&mut ws, COMPRESSED_TEXT, &common::deflate(b"{}", 15)).await;
    assert_eq!(closed_with(&mut ws).await, 1002);
}

#[tokio::test]
async fn a_deflate_bomb_closes_that_connection_with_1009() {
    let server = start().await;
    let c = server.signed_in("jason@example.com", "secret123456").await;
    let mut bystander = connect_deflate(&server, &c, OFFER).await;
    let mut bomber = connect_deflate(&server, &c, OFFER).await;
    // 4 MiB of one command's worth of spaces, 4 KiB compressed: past the 1 MiB message limit
    // only once inflated.
    let mut bomb = b"{\"command\":\"subscribe\",\"identifier\":\"".to_vec();
    bomb.resize(4 << 20, b' ');
    let compressed = common::deflate(&bomb, 15);
    assert!(compressed.len() < 16 * 1024, "{}", compressed.len());
    // Sent in two fragments, RSV1 on the first only.
    let (head, tail) = compressed.split_at(compressed.len() / 2);
    send_raw(&mut bomber, 0x40 | 0x1, head).await;
    send_raw(&mut bomber, 0x80, tail).await;
    assert_eq!(closed_with(&mut bomber).await, 1009);
    still_served(&mut bystander).await;
}

#[tokio::test]
async fn rsv1_is_read_only_where_permessage_deflate_was_agreed() {
    let server = start().await;
    let c = server.signed_in("jason@example.com", "secret123456").await;
    let mut agreed = connect_deflate(&server, &c, OFFER).await;
    let mut plain = connect_with(&server, &c).await;
    let command = common::deflate(subscribe_cmd(UNREADS).as_bytes(), 15);
    send_raw(&mut agreed, COMPRESSED_TEXT, &command).await;
    assert_eq!(
        agreed.next_non_ping(T).await,
        common::text(&confirm(UNREADS))
    );
    send_raw(&mut plain, COMPRESSED_TEXT, &command).await;
    assert_eq!(closed_with(&mut plain).await, 1002);
    // The connection that agreed goes on.
    let unsubscribe = serde_json::json!({"command": "unsubscribe", "identifier": UNREADS});
    let unsubscribe = common::deflate(unsubscribe.to_string().as_bytes(), 15);
    send_raw(&mut agreed, COMPRESSED_TEXT, &unsubscribe).await;
    still_served(&mut agreed).await;
}

#[tokio::test]
async fn compressed_control_frames_close_with_1002() {
    let server = start().await;
    let c = server.signed_in("jason@example.com", "secret123456").await;
    let mut bystander = connect_deflate(&server, &c, OFFER).await;
    for opcode in [0x9u8, 0xA, 0x8] {
        let mut ws = connect_deflate(&server, &c, OFFER).await;
        let payload = if opcode == 0x8 {
            common::deflate(&1000u16.to_be_bytes(), 15)
        } else {
            common::deflate(b"ping?", 15)
        };
        send_raw(&mut ws, 0x80 | 0x40 | opcode, &payload).await;
        assert_eq!(closed_with(&mut ws).await, 1002, "opcode {opcode:#x}");
    }
    still_served(&mut bystander).await;
}

#[tokio::test]
async fn a_small_window_offer_is_not_a_limit_but_a_context_taken_over_against_the_agreement_is_1007(
) {
    let server = start().await;
    let c = server.signed_in("jason@example.com", "secret123456").await;
    let mut bystander = connect_deflate(&server, &c, OFFER).await;
    // The client offers to compress with a 256-byte window; the answer leaves its window
    // unlimited (RFC 7692 §7.1.2.2: absent from the answer, up to 32,768 bytes).
    let mut ws = connect_deflate(&server, &c, "permessage-deflate; client_max_window_bits=8").await;
    // A command whose repeats are 5,000 bytes apart, compressed with a 15-bit window: it uses
    // distances an 8-bit window could not hold, and is read all the same.
    let pad: String = (0..5000u32)
        .map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26))
        .collect();
    let command = format!(
        r#"{{"command":"subscribe","identifier":"{{\"channel\":\"UnreadRoomsChannel\"}}","pad":"{pad}{pad}"}}"#
    );
    let wide = common::deflate(command.as_bytes(), 15);
    let narrow = common::deflate(command.as_bytes(), 9);
    assert!(
        wide.len() * 3 < narrow.len() * 2,
        "{} vs {}",
        wide.len(),
        narrow.len()
    );
    send_raw(&mut ws, COMPRESSED_TEXT, &wide).await;
    assert_eq!(ws.next_non_ping(T).await, common::text(&confirm(UNREADS)));
    // Then two messages compressed with one kept context: the second refers back into the
    // first, which `client_no_context_takeover` (agreed) forbids.
    let heartbeat = subscribe_cmd(r#"{"channel":"HeartbeatChannel"}"#);
    let mut kept = flate2::Compress::new(flate2::Compression::default(), false);
    let alone = common::deflate_with(&mut kept, heartbeat.as_bytes());
    let taken_over = common::deflate_with(&mut kept, heartbeat.as_bytes());
    assert!(taken_over.len() < alone.len() / 2);
    send_raw(&mut ws, COMPRESSED_TEXT, &alone).await;
    send_raw(&mut ws, COMPRESSED_TEXT, &taken_over).await;
    assert_eq!(closed_with(&mut ws).await, 1007);
    still_served(&mut bystander).await;
}

/// One loadgen cell of `n` clients against `url`, run as the loadgen runs (one thread, one
/// `LocalSet`), offering permessage-deflate when `deflate`.
fn loadgen_cell(url: &str, n: usize, deflate: bool) -> loadgen::report::CellResult {
    use loadgen::campfire::{self, ExtraChannel, PrepareOptions};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, async {
        let base = loadgen::endpoint::Endpoint::parse(url).unwrap();
        let prepare = PrepareOptions {
            users: 5,
            email_template: "user{i}@example.com".into(),
            password: "password".into(),
            room: 1,
            channels: ExtraChannel::parse_list("presence,heartbeat,unread").unwrap(),
            login_concurrency: 2,
        };
        let prepared = std::rc::Rc::new(campfire::prepare(&base, &prepare).await.unwrap());
        let mut target = loadgen::sweep::campfire_target("hearth", &base, prepared, 64 << 10, None);
        target.cable.deflate = deflate;
        let opts = loadgen::cell::CellOptions {
            n,
            duration: Duration::from_millis(1500),
            posters: 2,
            window: 8,
            rate: None,
            drain: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(30),
            connect_concurrency: 8,
            settle: Duration::ZERO,
            body_bytes: 64,
        };
        loadgen::cell::run_cell(&target, &opts, 0, &|_| {}).await
    })
}

/// `loadgen --deflate` against the real server: every client agrees to permessage-deflate,
/// every post reaches every client through the shared compressed frames and is read inflated
/// (the tokens found in it), and the wire bytes per delivered post fall to under 40 % of the
/// same server's plain bytes (a post's frame compresses to about 29 %, the notices less).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loadgen_agrees_to_deflate_and_counts_compressed_wire_bytes_per_delivery() {
    let server = start().await;
    let url = format!("http://{}", server.addr);
    let (plain, compressed) = tokio::task::spawn_blocking(move || {
        (loadgen_cell(&url, 12, false), loadgen_cell(&url, 12, true))
    })
    .await
    .unwrap();
    for r in [&plain, &compressed] {
        assert!(r.ok, "{:?} {:?}", r.errors, r.notes);
        assert_eq!(r.ready, 12);
        assert!(r.posted > 0);
        assert_eq!(r.receipts, r.posted * 12, "every post reached every client");
        assert_eq!((r.duplicates, r.unknown_tokens), (0, 0));
        assert!(r.wire_bytes_per_receipt > 0.0);
    }
    // The inflated frames are the plain ones: the same size as the plain run's, give or take
    // the post's own token and timestamps.
    let size_ratio = compressed.mean_frame_bytes / plain.mean_frame_bytes;
    assert!((0.97..1.03).contains(&size_ratio), "{size_ratio}");
    let wire_ratio = compressed.wire_bytes_per_receipt / plain.wire_bytes_per_receipt;
    assert!(
        wire_ratio < 0.40,
        "compressed {} B per delivery, plain {} B",
        compressed.wire_bytes_per_receipt,
        plain.wire_bytes_per_receipt
    );
}

/// Where compression pays, on this server's real frames: prints, for prefixes of a typical
/// post's frame and for whole frames (the unread notice, a one-word post, a typical post),
/// the bytes before and after compression at the server's level and at level 1, and the time
/// of one compression as the server makes it (the thread's compressor reset, the frame
/// allocated). `fanout::deflate::MIN_COMPRESSED_PAYLOAD` and `LEVEL` are set from it. zlib-rs
/// is optimized in test builds too (Cargo.toml), so the times are its real ones.
///
/// `cargo test -p hearth --features hearth/test-support,hearth/reference-engine --test suite
/// -- deflate::measure --ignored --nocapture`
#[tokio::test]
#[ignore = "a measurement: prints the table the compression threshold is set from"]
async fn measure_the_compression_threshold() {
    use hearth::fanout::deflate::{Deflate, LEVEL};
    use std::time::Instant;

    let server = start().await;
    let mut c = server.signed_in("david@example.com", "secret123456").await;
    let (csrf, id) = room_stream(&mut c).await;
    let mut ws = connect_with(&server, &c).await;
    subscribe(&mut ws, &id).await;
    subscribe(&mut ws, UNREADS).await;
    let mut frames: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, body) in [
        ("one-word post", "ok".to_owned()),
        (
            "typical post",
            "Morning all — the deploy went out at 9:40 and the error rate is back to normal. \
             I'll keep an eye on the queue until lunch; ping me if anything looks off."
                .to_owned(),
        ),
        ("long post", long_body("long")),
    ] {
        let cid = format!("measure-{}", name.replace(' ', "-"));
        let r = c.post_message(1, &body, &cid, &csrf).await;
        assert_eq!(r.status, 200);
        frames.push((name.to_owned(), next_message(&mut ws).await.payload));
        let notice = next_message(&mut ws).await.payload;
        if frames.iter().all(|(n, _)| n != "unread notice") {
            frames.push(("unread notice".to_owned(), notice));
        }
    }
    let typical = frames
        .iter()
        .find(|(n, _)| n == "typical post")
        .unwrap()
        .1
        .clone();
    let mut cases: Vec<(String, Vec<u8>)> = [64, 96, 128, 192, 256, 384, 512, 1024, 2048, 4096]
        .into_iter()
        .filter(|&n| n < typical.len())
        .map(|n| (format!("typical post, first {n} B"), typical[..n].to_vec()))
        .collect();
    cases.extend(frames);
    let deflate = Deflate::new(15).unwrap();
    // The fastest of 20 batches of 100: the machine is shared, and the slower batches are
    // other processes' time.
    let time = |f: &mut dyn FnMut() -> usize| {
        let mut size = f();
        let mut best = f64::MAX;
        for _ in 0..20 {
            let start = Instant::now();
            for _ in 0..100 {
                size = f();
            }
            best = best.min(start.elapsed().as_secs_f64() * 1e6 / 100.0);
        }
        (size, best)
    };
    let mut level1 = flate2::Compress::new(flate2::Compression::new(1), false);
    // The level: each one on the typical post.
    let typical_frame = &cases.iter().find(|(n, _)| n == "typical post").unwrap().1;
    println!("| level | typical post compressed | µs |\n|---|---|---|");
    for level in 1..=9 {
        let mut c = flate2::Compress::new(flate2::Compression::new(level), false);
        let (z, us) = time(&mut || {
            c.reset();
            common::deflate_with(&mut c, typical_frame).len()
        });
        println!("| {level} | {z} | {us:.1} |");
    }
    println!();
    println!("| frame | bytes | level {LEVEL}: bytes (saved) | µs | level 1: bytes (saved) | µs |");
    println!("|---|---|---|---|---|---|");
    for (name, payload) in &cases {
        let (z, us) = time(&mut || {
            let frame = hearth::fanout::deflate::compressed_text(&[payload], deflate);
            frame.payload().unwrap().len()
        });
        let (z1, us1) = time(&mut || {
            level1.reset();
            common::deflate_with(&mut level1, payload).len()
        });
        let saved = |z: usize| 100.0 - 100.0 * z as f64 / payload.len() as f64;
        println!(
            "| {name} | {} | {z} ({:.0} %) | {us:.1} | {z1} ({:.0} %) | {us1:.1} |",
            payload.len(),
            saved(z),
            saved(z1)
        );
    }
}
