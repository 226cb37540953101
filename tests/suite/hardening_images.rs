//! Hostile and undecodable images over real HTTP, against the real binary as a child process
//! (a decoder that allocates without bound aborts the whole process, which must not be the
//! test's): every route that takes an image — the composer's multipart form, a direct upload's
//! signed id, the bot API, avatars and the account logo — leaves the server up and within its
//! decode limits, and a message whose file cannot be processed ends as a plain file chip,
//! replaced live over the cable, never "processing…" for ever.
//!
//! The hostile files are built here, byte by byte: a 34-byte GIF whose one frame declares
//! 65,535 × 65,535 pixels behind a 16 × 16 screen, a 3 MB PNG of 11,000 × 11,000 RGBA pixels
//! (484 MB decoded), a WebP whose lossless bitstream declares 16,384 × 16,384 pixels, and a
//! 12,000 × 1 PNG that a logo's fill to 512 × 512 would scale up to 6,144,000 × 512 pixels.

use std::net::SocketAddr;
use std::time::Duration;

use crate::common::child::{Hearth, DAVID, PASSWORD};
use crate::common::{self, form, subscribe_cmd, temp_dir, Ws, WsEvent, PROTOCOLS};
use crate::files::{md5_base64, multipart, raw};

/// Bender's key for the bot API (user 5).
const BOT_KEY: &str = "5-bNd3rB0tK3y7";
/// The documented ceiling of one image's decode (docs/files.md), in MiB.
pub(crate) const DECODE_CEILING_MIB: u64 = 512;
/// How much the server's peak resident memory may rise while it refuses hostile images (no
/// decoder runs for them: what remains is uploads streaming to disk and pages), in MiB.
const REFUSAL_RISE_MIB: u64 = 64;
/// The child server's address-space limit in the hostile test, in GiB.
const ADDRESS_SPACE_GIB: u64 = 4;

// ---------------------------------------------------------------------------------------------
// The files.

/// A GIF89a whose 16 × 16 logical screen holds one frame that declares 65,535 × 65,535 pixels,
/// with a 2-colour table and an LZW stream of just a clear code and the end code.
fn gif_frame_beyond_screen() -> Vec<u8> {
    let mut gif = b"GIF89a".to_vec();
    gif.extend_from_slice(&[16, 0, 16, 0, 0x80, 0, 0]);
    gif.extend_from_slice(&[0, 0, 0, 255, 255, 255]);
    gif.extend_from_slice(&[0x2C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0]);
    // Minimum code size 2: clear (4) then end (5), 3 bits each, least significant first.
    gif.extend_from_slice(&[2, 1, 4 | (5 << 3), 0]);
    gif.push(0x3B);
    gif
}

/// A WebP whose lossless (`VP8L`) bitstream declares 16,384 × 16,384 pixels.
fn webp_beyond_limits() -> Vec<u8> {
    let bits: u32 = 16_383 | (16_383 << 14);
    let mut vp8l = vec![0x2f];
    vp8l.extend_from_slice(&bits.to_le_bytes());
    vp8l.extend_from_slice(&[0; 11]);
    let mut webp = b"RIFF".to_vec();
    webp.extend_from_slice(&u32::try_from(4 + 8 + vp8l.len()).unwrap().to_le_bytes());
    webp.extend_from_slice(b"WEBPVP8L");
    webp.extend_from_slice(&u32::try_from(vp8l.len()).unwrap().to_le_bytes());
    webp.extend_from_slice(&vp8l);
    webp
}

/// CRC-32 (ISO-HDLC, as PNG chunks carry it).
fn crc32(parts: &[&[u8]]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for part in parts {
        for &byte in *part {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
    }
    !crc
}

/// A raw DEFLATE stream (RFC 1951) of `n` zero bytes: one block of fixed Huffman codes, a
/// literal zero and then matches of 258 bytes at distance 1 (13 bits each), the rest literals.
fn deflate_zeros(n: u64) -> Vec<u8> {
    struct Bits {
        out: Vec<u8>,
        acc: u64,
        len: u32,
    }
    impl Bits {
        /// `count` bits of `value`, least significant first.
        fn put(&mut self, value: u32, count: u32) {
            self.acc |= u64::from(value) << self.len;
            self.len += count;
            while self.len >= 8 {
                self.out.push(self.acc as u8);
                self.acc >>= 8;
                self.len -= 8;
            }
        }
        /// A Huffman code of `count` bits, most significant first.
        fn code(&mut self, code: u32, count: u32) {
            self.put(code.reverse_bits() >> (32 - count), count);
        }
    }
    let mut bits = Bits {
        out: Vec::new(),
        acc: 0,
        len: 0,
    };
    bits.put(1, 1); // BFINAL
    bits.put(1, 2); // fixed Huffman codes
    let literal_zero = |bits: &mut Bits| bits.code(0x30, 8);
    let mut left = n;
    if left > 0 {
        literal_zero(&mut bits);
        left -= 1;
    }
    while left >= 258 {
        bits.code(0xC5, 8); // length code 285: 258 bytes
        bits.code(0, 5); // distance code 0: 1 byte back
        left -= 258;
    }
    for _ in 0..left {
        literal_zero(&mut bits);
    }
    bits.code(0, 7); // end of block
    if bits.len > 0 {
        bits.out.push(bits.acc as u8);
    }
    bits.out
}

/// A PNG of `width` × `height` transparent black 8-bit RGBA pixels, small however large it
/// claims to be (its zlib stream is [`deflate_zeros`]).
fn zero_png(width: u32, height: u32) -> Vec<u8> {
    let raw_len = u64::from(height) * (1 + u64::from(width) * 4);
    let mut zlib = vec![0x78, 0x01];
    zlib.extend_from_slice(&deflate_zeros(raw_len));
    let adler = ((raw_len % 65_521) << 16) | 1;
    zlib.extend_from_slice(&u32::try_from(adler).unwrap().to_be_bytes());
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(&b"IHDR"[..], &ihdr[..]), (b"IDAT", &zlib), (b"IEND", &[])] {
        png.extend_from_slice(&u32::try_from(data.len()).unwrap().to_be_bytes());
        png.extend_from_slice(kind);
        png.extend_from_slice(data);
        png.extend_from_slice(&crc32(&[kind, data]).to_be_bytes());
    }
    png
}

/// A real 64 × 64 PNG cut in the middle of its pixels.
pub(crate) fn truncated_png() -> Vec<u8> {
    let whole = crate::files::png(64, 64);
    whole[..whole.len() / 2].to_vec()
}

// ---------------------------------------------------------------------------------------------
// The routes.

/// David (an administrator) signed in to a child server.
#[derive(Clone)]
pub(crate) struct David {
    pub(crate) addr: SocketAddr,
    pub(crate) cookie: String,
    pub(crate) csrf: String,
}

/// Where an image is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// `POST /rooms/1/messages`, multipart `message[attachment]` (the composer's form).
    Composer,
    /// `POST /rails/active_storage/direct_uploads`, the `PUT`, then the signed id posted.
    DirectUpload,
    /// `POST /rooms/1/<bot key>/messages` with `-F attachment=@…`.
    Bot,
    /// `POST /users/me/avatar`.
    Avatar,
    /// `POST /account/logo`.
    Logo,
}

const MESSAGE_ROUTES: [Route; 3] = [Route::Composer, Route::DirectUpload, Route::Bot];
const ALL_ROUTES: [Route; 5] = [
    Route::Composer,
    Route::DirectUpload,
    Route::Bot,
    Route::Avatar,
    Route::Logo,
];

impl David {
    pub(crate) async fn sign_in(hearth: &Hearth) -> Self {
        let mut client = hearth.client();
        assert_eq!(client.login(DAVID, PASSWORD).await.status, 302);
        let (csrf, _) = client.room(1).await;
        Self {
            addr: hearth.addr,
            cookie: client.cookie_header(),
            csrf,
        }
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let mut all = vec![
            ("Cookie", self.cookie.as_str()),
            ("X-CSRF-Token", self.csrf.as_str()),
        ];
        all.extend_from_slice(headers);
        raw(&self.addr.to_string(), method, path, &all, body).await
    }

    /// Sends `bytes` named `filename` by `route`; the answer's status.
    pub(crate) async fn upload(&self, route: Route, filename: &str, bytes: &[u8]) -> u16 {
        let multipart_to = |path: String, field: &'static str| {
            let (content_type, body) = multipart(&[], field, filename, bytes);
            async move {
                let headers = [
                    ("Content-Type", content_type.as_str()),
                    ("Accept", "text/vnd.turbo-stream.html"),
                ];
                self.send("POST", &path, &headers, &body).await.0
            }
        };
        match route {
            Route::Composer => {
                multipart_to("/rooms/1/messages".into(), "message[attachment]").await
            }
            Route::Bot => {
                let (content_type, body) = multipart(&[], "attachment", filename, bytes);
                let path = format!("/rooms/1/{BOT_KEY}/messages");
                raw(
                    &self.addr.to_string(),
                    "POST",
                    &path,
                    &[("Content-Type", &content_type)],
                    &body,
                )
                .await
                .0
            }
            Route::Avatar => multipart_to("/users/me/avatar".into(), "user[avatar]").await,
            Route::Logo => multipart_to("/account/logo".into(), "account[logo]").await,
            Route::DirectUpload => {
                let checksum = md5_base64(bytes);
                let json = serde_json::json!({"blob": {
                    "filename": filename, "content_type": "image/png",
                    "byte_size": bytes.len(), "checksum": checksum
                }});
                let (status, _, body) = self
                    .send(
                        "POST",
                        "/rails/active_storage/direct_uploads",
                        &[("Content-Type", "application/json")],
                        json.to_string().as_bytes(),
                    )
                    .await;
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
                let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let url = answer["direct_upload"]["url"].as_str().unwrap();
                let (put, _, _) = raw(
                    &self.addr.to_string(),
                    "PUT",
                    url,
                    &[("Content-Type", "image/png"), ("Content-MD5", &checksum)],
                    bytes,
                )
                .await;
                assert_eq!(put, 204, "the direct upload's PUT");
                let body = form(&[
                    ("message[attachment]", answer["signed_id"].as_str().unwrap()),
                    ("message[client_message_id]", &crate::files::uuid()),
                ]);
                self.send(
                    "POST",
                    "/rooms/1/messages",
                    &[
                        ("Content-Type", "application/x-www-form-urlencoded"),
                        ("Accept", "text/vnd.turbo-stream.html"),
                    ],
                    body.as_bytes(),
                )
                .await
                .0
            }
        }
    }

    /// Room 1's page.
    pub(crate) async fn room_page(&self) -> String {
        let (status, _, body) = self.send("GET", "/rooms/1", &[], b"").await;
        assert_eq!(status, 200);
        String::from_utf8_lossy(&body).into_owned()
    }
}

/// The chip of a file named `filename` in a page or partial.
pub(crate) fn chip(filename: &str) -> String {
    format!("message__file-name\" title=\"{filename}\"")
}

/// Fails with the server's log unless it is still running and answers `/up`.
pub(crate) async fn assert_alive(hearth: &mut Hearth, after: &str) {
    if let Ok(Some(status)) = hearth.child.try_wait() {
        let log = hearth.log();
        let tail = &log[log.len().saturating_sub(2000)..];
        panic!("the server died ({status}) after {after}:\n{tail}");
    }
    let (status, _, _) = raw(&hearth.addr.to_string(), "GET", "/up", &[], b"").await;
    assert_eq!(status, 200, "the server answers after {after}");
}

/// Waits until room 1's page shows nothing "processing…" any more, checking that the server
/// stays up meanwhile; then the peak memory must be within `REFUSAL_RISE_MIB` of `before`
/// (KiB) and `filename` a plain file chip.
async fn processing_ends_as_a_chip(
    hearth: &mut Hearth,
    david: &David,
    filename: &str,
    before: u64,
) {
    let mut page = String::new();
    for _ in 0..600 {
        page = page_unless_dead(hearth, david, &format!("posting {filename}")).await;
        if page.contains(filename) && !page.contains("processing…") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !page.contains("processing…"),
        "{filename} still processing after a minute"
    );
    assert_memory_bounded(hearth, before, &format!("processing {filename}"));
    assert!(
        page.contains(&chip(filename)),
        "{filename} is not shown as a plain file chip"
    );
}

/// Room 1's page; when the request fails, the server must have died: fails with its log.
async fn page_unless_dead(hearth: &mut Hearth, david: &David, after: &str) -> String {
    let asking = david.clone();
    // `raw` panics on a connection that closes without an answer: caught by the task.
    match tokio::spawn(async move { asking.room_page().await }).await {
        Ok(page) => page,
        Err(_) => {
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_alive(hearth, after).await;
            panic!("the room page failed after {after}");
        }
    }
}

/// Fails unless the server's peak memory is still within `REFUSAL_RISE_MIB` of `before` (KiB).
fn assert_memory_bounded(hearth: &Hearth, before: u64, after: &str) {
    let rise_mib = hearth.peak_rss_kib().saturating_sub(before) / 1024;
    assert!(
        rise_mib < REFUSAL_RISE_MIB,
        "{after} raised the server's peak memory by {rise_mib} MiB"
    );
}

/// Limits the child's address space to `ADDRESS_SPACE_GIB` (util-linux `prlimit`, when it is
/// there), so that a decoder asking for more than the machine would give fails as it would on
/// a smaller server (Rust aborts the process on a failed allocation) instead of being granted
/// untouched pages by overcommit.
fn limit_address_space(hearth: &Hearth) {
    let Some(pid) = hearth.child.id() else {
        return;
    };
    let bytes = (ADDRESS_SPACE_GIB << 30).to_string();
    let _ = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(pid.to_string())
        .arg(format!("--as={bytes}:{bytes}"))
        .status();
}

// ---------------------------------------------------------------------------------------------
// The rules.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_images_by_every_route_leave_the_server_up_within_its_decode_limits() {
    let dir = temp_dir("hostile-images");
    let mut hearth = Hearth::start(&dir, &["--upload-rate-limit", "0"]).await;
    limit_address_space(&hearth);
    let david = David::sign_in(&hearth).await;
    let before = hearth.peak_rss_kib();
    let hostile: [(&str, Vec<u8>); 3] = [
        ("frame-beyond-screen.gif", gif_frame_beyond_screen()),
        ("huge.png", zero_png(11_000, 11_000)),
        ("huge.webp", webp_beyond_limits()),
    ];
    for (name, bytes) in &hostile {
        for route in ALL_ROUTES {
            let filename = format!("{route:?}-{name}");
            let status = david.upload(route, &filename, bytes).await;
            assert_alive(&mut hearth, &format!("{filename} by {route:?}")).await;
            assert_memory_bounded(&hearth, before, &format!("{filename} by {route:?}"));
            match route {
                Route::Avatar | Route::Logo => {
                    assert_eq!(status, 422, "{filename} by {route:?} is refused");
                }
                Route::Bot => assert_eq!(status, 201, "{filename} by {route:?}"),
                Route::Composer | Route::DirectUpload => {
                    assert_eq!(status, 200, "{filename} by {route:?}");
                }
            }
            if MESSAGE_ROUTES.contains(&route) {
                processing_ends_as_a_chip(&mut hearth, &david, &filename, before).await;
            }
        }
    }
    // A sliver that a fill to the logo's 512 × 512 would first scale up to 6,144,000 × 512
    // pixels: cropped to its middle first, it is a small logo like any other.
    let sliver = zero_png(12_000, 1);
    assert_eq!(david.upload(Route::Logo, "sliver.png", &sliver).await, 302);
    assert_alive(&mut hearth, "the sliver logo").await;
    let (status, _, logo) = david.send("GET", "/account/logo", &[], b"").await;
    assert_eq!(status, 200);
    let logo = image::load_from_memory(&logo).expect("the logo is a PNG");
    assert_eq!((logo.width(), logo.height()), (512, 512));
    assert_eq!(
        david.upload(Route::Avatar, "sliver.png", &sliver).await,
        302
    );
    assert_alive(&mut hearth, "the sliver avatar").await;

    let rise_mib = hearth.peak_rss_kib().saturating_sub(before) / 1024;
    eprintln!(
        "hostile images: server VmHWM {} MiB before, rose {rise_mib} MiB (bound \
         {REFUSAL_RISE_MIB} MiB)",
        before / 1024
    );
    assert!(
        rise_mib < REFUSAL_RISE_MIB,
        "refusing hostile images raised the server's peak memory by {rise_mib} MiB"
    );
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_accepted_png_is_decoded_within_the_documented_ceiling() {
    let dir = temp_dir("largest-png");
    let mut hearth = Hearth::start(&dir, &[]).await;
    let david = David::sign_in(&hearth).await;
    let before = hearth.peak_rss_kib();
    // 25 megapixels of 8-bit RGBA: 100 MB decoded, the most a PNG may be.
    let largest = zero_png(5_000, 5_000);
    assert_eq!(
        david.upload(Route::Composer, "largest.png", &largest).await,
        200
    );
    let mut page = String::new();
    for _ in 0..1200 {
        assert_alive(&mut hearth, "the largest PNG").await;
        page = david.room_page().await;
        if page.contains("message__attachment-link--image") && !page.contains("processing…") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        page.contains("width=\"800\" height=\"800\""),
        "the largest PNG gets its thumbnail"
    );
    let peak = hearth.peak_rss_kib();
    eprintln!(
        "largest PNG: server VmHWM {} MiB before, {} MiB after (ceiling {DECODE_CEILING_MIB} MiB \
         above the start)",
        before / 1024,
        peak / 1024
    );
    assert!(
        peak.saturating_sub(before) / 1024 < DECODE_CEILING_MIB,
        "the decode raised the peak by {} MiB",
        peak.saturating_sub(before) / 1024
    );
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_image_ends_as_a_file_chip_replaced_live() {
    let dir = temp_dir("undecodable-images");
    let mut hearth = Hearth::start(&dir, &["--upload-rate-limit", "0"]).await;
    let david = David::sign_in(&hearth).await;
    let page = david.room_page().await;
    let signed = common::attr_after(
        &page,
        "channel=\"RoomMessagesChannel\" signed-stream-name=\"",
    )
    .expect("the room's stream name")
    .replace("&#x3D;", "=");
    let identifier =
        serde_json::json!({"channel": "RoomMessagesChannel", "signed_stream_name": signed})
            .to_string();
    let origin = format!("http://{}", hearth.addr);
    let mut ws = Ws::connect(
        hearth.addr,
        Some(&david.cookie),
        Some(&origin),
        Some(PROTOCOLS),
    )
    .await;
    assert_eq!(ws.status, 101, "{}", ws.response_head);
    ws.send_text(&subscribe_cmd(&identifier)).await;

    let undecodable: [(&str, Vec<u8>); 4] = [
        ("truncated.png", truncated_png()),
        (
            "not-really.png",
            b"\x89PNG\r\n\x1a\nnot a PNG after all".to_vec(),
        ),
        (
            "drawing.svg",
            b"<svg xmlns=\"http://www.w3.org/2000/svg\"><rect width=\"9\"/></svg>".to_vec(),
        ),
        ("frame-beyond-screen.gif", gif_frame_beyond_screen()),
    ];
    for (name, bytes) in &undecodable {
        for route in MESSAGE_ROUTES {
            let filename = format!("{route:?}-{name}");
            let status = david.upload(route, &filename, bytes).await;
            assert!(
                status == 200 || status == 201,
                "{filename} by {route:?}: {status}"
            );
            // The live replacement: the message as a plain file chip, no longer processing.
            let replaced = loop {
                match ws.next_non_ping(Duration::from_secs(30)).await {
                    Some(WsEvent::Text(frame)) => {
                        let Ok(json) = serde_json::from_str::<serde_json::Value>(&frame) else {
                            continue;
                        };
                        let Some(html) = json["message"].as_str() else {
                            continue;
                        };
                        if html.starts_with("<turbo-stream action=\"replace\"")
                            && html.contains(&chip(&filename))
                        {
                            break html.to_owned();
                        }
                    }
                    other => panic!(
                        "no live replacement of {filename} by {route:?} after its processing \
                         ended: {other:?}"
                    ),
                }
            };
            assert!(
                !replaced.contains("processing…")
                    && !replaced.contains("message__file--processing"),
                "the replacement of {filename} still says processing: {replaced}"
            );
            assert_alive(&mut hearth, &filename).await;
        }
    }
    // And the page shows them all as chips, none processing.
    let page = david.room_page().await;
    assert!(
        !page.contains("processing…"),
        "the page still shows processing"
    );
    for (name, _) in &undecodable {
        for route in MESSAGE_ROUTES {
            assert!(
                page.contains(&chip(&format!("{route:?}-{name}"))),
                "{route:?}-{name}"
            );
        }
    }
    hearth.signal("TERM");
    assert_eq!(hearth.wait(Duration::from_secs(30)).await, Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}
