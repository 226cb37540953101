//! Link previews over real HTTP (`POST /unfurl_link`, `crate::link_previews`): a site on
//! loopback plays the hostile web. Without `--link-preview-allow-network` nothing on loopback,
//! private, link-local or IPv6-mapped addresses is fetched (the site counts its connections);
//! with loopback allowed (as an intranet would be), a redirect to a private address is
//! refused, a 10 GB body is cut at the limit, a slow drip at the deadline, a pixel bomb is
//! refused before decoding, and none of them leaves anything stored; the positive case gives
//! the card, whose image is re-encoded and served by Hearth. The card survives storing and
//! showing only in its checked form.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::common;
use common::{form, TestServer};

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const EMBED: &str = "application/vnd.actiontext.opengraph-embed";

/// What the hostile site saw.
#[derive(Default)]
struct Seen {
    /// Connections accepted.
    connections: AtomicU64,
    /// Body bytes the endless page managed to write.
    endless_bytes: AtomicU64,
}

/// A PNG of `w`×`h` pixels.
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A PNG that claims 100,000 × 100,000 pixels in a few hundred bytes (a decompression bomb).
fn pixel_bomb() -> Vec<u8> {
    let mut bytes = png(8, 8);
    // IHDR's width and height are bytes 16..24; its CRC (bytes 29..33) is recomputed.
    bytes[16..20].copy_from_slice(&100_000u32.to_be_bytes());
    bytes[20..24].copy_from_slice(&100_000u32.to_be_bytes());
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    bytes
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn og_page(title: &str, image: &str) -> String {
    format!(
        "<!doctype html><html><head><title>x</title>\
         <meta property=\"og:title\" content=\"{title}\">\
         <meta property=\"og:description\" content=\"Snow &amp; lakes, <b>a walk</b> above the valley.\">\
         <meta property=\"og:image\" content=\"{image}\">\
         </head><body>hello</body></html>"
    )
}

/// Serves the hostile site on `addr` (port 0: any) until the test ends; `redirect_to` is where
/// `/redirect` points.
async fn site(addr: &str, redirect_to: String) -> (SocketAddr, Arc<Seen>) {
    let listener = TcpListener::bind(addr).await.unwrap();
    let local = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let seen2 = seen.clone();
    let cover = Arc::new(png(800, 600));
    let bomb = Arc::new(pixel_bomb());
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            seen2.connections.fetch_add(1, Ordering::SeqCst);
            let seen = seen2.clone();
            let redirect_to = redirect_to.clone();
            let (cover, bomb) = (cover.clone(), bomb.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&head)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned();
                let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
                let reply = |status: &str, ctype: &str, body: &[u8]| {
                    let mut r = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend_from_slice(body);
                    r
                };
                let answer = match path.as_str() {
                    "/og" => reply("200 OK", "text/html; charset=utf-8", og_page("Mountains", "/cover.png").as_bytes()),
                    "/cover.png" => reply("200 OK", "image/png", &cover),
                    "/bomb" => reply("200 OK", "text/html", og_page("Bomb", "/bomb.png").as_bytes()),
                    "/bomb.png" => reply("200 OK", "image/png", &bomb),
                    "/plain" => reply("200 OK", "text/plain", og_page("Plain", "/cover.png").as_bytes()),
                    "/redirect" => format!(
                        "HTTP/1.1 302 Found\r\nLocation: {redirect_to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                    .into_bytes(),
                    "/declared-huge" => b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10737418240\r\nConnection: close\r\n\r\n".to_vec(),
                    "/endless" => {
                        // 10 GB of HTML, written until the reader goes away.
                        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n";
                        if stream.write_all(head).await.is_err() {
                            return;
                        }
                        let chunk = og_page("Endless", "/cover.png").repeat(64 * 1024 / 300);
                        let mut sent = 0u64;
                        while sent < 10 * 1024 * 1024 * 1024 {
                            if stream.write_all(chunk.as_bytes()).await.is_err() {
                                break;
                            }
                            sent += chunk.len() as u64;
                            seen.endless_bytes.store(sent, Ordering::SeqCst);
                        }
                        return;
                    }
                    "/drip" => {
                        let page = og_page("Drip", "/cover.png");
                        let head = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                            page.len()
                        );
                        if stream.write_all(head.as_bytes()).await.is_err() {
                            return;
                        }
                        for b in page.bytes() {
                            if stream.write_all(&[b]).await.is_err() {
                                return;
                            }
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                        return;
                    }
                    _ => reply("404 Not Found", "text/plain", b"no"),
                };
                let _ = stream.write_all(&answer).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (local, seen)
}

/// `POST /unfurl_link` with `url`: the status, the JSON (if any) and how long it took.
async fn unfurl(
    c: &mut common::Client,
    csrf: &str,
    url: &str,
) -> (u16, serde_json::Value, Duration) {
    let body = serde_json::json!({ "url": url }).to_string();
    let started = Instant::now();
    let r = c
        .request(
            "POST",
            "/unfurl_link",
            &[
                ("Content-Type", "application/json"),
                ("X-CSRF-Token", csrf),
                ("Accept", "application/json"),
            ],
            body.as_bytes(),
        )
        .await;
    let json = serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null);
    (r.status, json, started.elapsed())
}

/// Files under `dir` whose name is a preview image's key (64 hex digits).
fn stored_previews(dir: &Path) -> usize {
    let mut found = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.len() == 64 && n.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                found += 1;
            }
        }
    }
    found
}

#[tokio::test]
async fn loopback_private_link_local_and_mapped_addresses_are_never_fetched() {
    let (addr, seen) = site("127.0.0.1:0", String::new()).await;
    let port = addr.port();
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    for url in [
        format!("http://127.0.0.1:{port}/og"),
        format!("http://localhost:{port}/og"),
        format!("http://[::1]:{port}/og"),
        format!("http://[::ffff:127.0.0.1]:{port}/og"),
        format!("http://[::ffff:7f00:1]:{port}/og"),
        format!("http://2130706433:{port}/og"),
        format!("http://0x7f.1:{port}/og"),
        format!("http://0.0.0.0:{port}/og"),
        "http://10.0.0.1/og".to_owned(),
        "http://192.168.1.1/og".to_owned(),
        "http://100.64.0.1/og".to_owned(),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://[fd00::1]/og".to_owned(),
        "http://[fe80::1]/og".to_owned(),
        "file:///etc/passwd".to_owned(),
        format!("gopher://127.0.0.1:{port}/og"),
    ] {
        let (status, _, took) = unfurl(&mut david, &csrf, &url).await;
        assert_eq!(status, 204, "{url} gave a preview");
        assert!(took < Duration::from_secs(3), "{url} took {took:?}");
    }
    assert_eq!(
        seen.connections.load(Ordering::SeqCst),
        0,
        "the site was reached"
    );
    assert_eq!(stored_previews(&server.dir), 0);
    server.stop().await;
}

#[tokio::test]
async fn an_allowed_site_gives_its_card_and_hostile_answers_give_none() {
    // A second loopback address outside the allow-list: where the redirect points.
    let (inner, inner_seen) = site("127.0.0.2:0", String::new()).await;
    let (addr, seen) = site("127.0.0.1:0", format!("http://{inner}/og")).await;
    let origin = format!("http://{addr}");
    let server = TestServer::start_with(|c| {
        c.link_preview_allow_network = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;

    // The positive case: title, description (markup dropped), the canonical URL, the image
    // fetched, scaled into 640×360 (800×600: 480×360) and served by Hearth.
    let (log, _guard) = common::captured_log();
    let (status, card, _) = unfurl(&mut david, &csrf, &format!("{origin}/og")).await;
    let said = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    let said: Vec<&str> = said.lines().filter(|l| l.contains("preview")).collect();
    assert_eq!(status, 200, "{card} {said:?}");
    assert_eq!(card["title"], "Mountains");
    assert_eq!(
        card["description"],
        "Snow & lakes, a walk above the valley."
    );
    assert_eq!(card["url"], format!("{origin}/og"));
    let image = card["image"].as_str().expect("an image").to_owned();
    assert!(
        image.starts_with("/unfurl_link/images/") && image.ends_with(".png"),
        "{image}"
    );
    let served = david.get(&image).await;
    assert_eq!(served.status, 200);
    assert_eq!(served.header("content-type"), Some("image/png"));
    assert_eq!(stored_previews(&server.dir), 1);
    let mut anonymous = server.client();
    assert_ne!(
        anonymous.get(&image).await.status,
        200,
        "served to the signed out"
    );
    let bytes = {
        // The test client's body is text; fetch the bytes again raw.
        let mut s = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        let req = format!(
            "GET {image} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\nConnection: close\r\n\r\n",
            server.addr,
            david.cookie_header()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.unwrap();
        let at = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        raw[at..].to_vec()
    };
    let decoded = image::load_from_memory(&bytes).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (480, 360));

    // A redirect from the allowed site to an address outside the list.
    let (status, _, _) = unfurl(&mut david, &csrf, &format!("{origin}/redirect")).await;
    assert_eq!(status, 204);
    assert_eq!(
        inner_seen.connections.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );

    // Not HTML, and a Content-Length of 10 GB: refused before the body.
    assert_eq!(
        unfurl(&mut david, &csrf, &format!("{origin}/plain"))
            .await
            .0,
        204
    );
    assert_eq!(
        unfurl(&mut david, &csrf, &format!("{origin}/declared-huge"))
            .await
            .0,
        204
    );

    // 10 GB of HTML without a length: cut at the limit, in bounded time and memory.
    let (status, _, took) = unfurl(&mut david, &csrf, &format!("{origin}/endless")).await;
    assert_eq!(status, 204);
    assert!(took < Duration::from_secs(6), "took {took:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let written = seen.endless_bytes.load(Ordering::SeqCst);
    assert!(written < 64 * 1024 * 1024, "{written} bytes were taken");

    // One byte a second: cut off at the deadline (5 s), with no preview.
    let (status, _, took) = unfurl(&mut david, &csrf, &format!("{origin}/drip")).await;
    assert_eq!(status, 204);
    assert!(took < Duration::from_secs(7), "took {took:?}");

    // A pixel bomb as the image: the card comes without it, nothing decoded or stored.
    let (status, card, took) = unfurl(&mut david, &csrf, &format!("{origin}/bomb")).await;
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["title"], "Bomb");
    assert!(card["image"].is_null(), "{card}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert_eq!(
        stored_previews(&server.dir),
        1,
        "only the first card's image is stored"
    );
    server.stop().await;
}

#[tokio::test]
async fn link_previews_off_answers_404() {
    let server = TestServer::start_with(|c| c.link_previews = false).await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    let (status, _, _) = unfurl(&mut david, &csrf, "https://example.com/").await;
    assert_eq!(status, 404);
    let mut anonymous = server.client();
    let (status, _, _) = unfurl(&mut anonymous, &csrf, "https://example.com/").await;
    assert_ne!(status, 200);
    server.stop().await;
}

#[tokio::test]
async fn a_card_is_stored_and_shown_only_in_its_checked_form() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    let image = format!("/unfurl_link/images/{}.jpg", "ab".repeat(32));
    let figure = |href: &str, url: &str| {
        let json = serde_json::json!({
            "contentType": EMBED,
            "content": "<div class=\"og-embed\" onclick=\"steal()\"><img src=\"https://tracker.example/x.gif\"></div>",
            "href": href,
            "filename": "Mountains <script>alert(1)</script>",
            "caption": "A walk",
            "url": url,
        });
        format!(
            "<figure data-trix-attachment=\"{}\" data-trix-content-type=\"{EMBED}\"></figure>",
            json.to_string()
                .replace('&', "&amp;")
                .replace('"', "&quot;")
        )
    };
    let body = format!(
        "<div>https://example.com/walk{}{}{}</div>",
        figure("https://example.com/walk", &image),
        figure("javascript:alert(1)", &image),
        figure(
            "https://example.com/other",
            "https://tracker.example/pixel.gif"
        ),
    );
    let b = form(&[
        ("message[body]", &body),
        ("message[body_format]", "html"),
        (
            "message[client_message_id]",
            "c0ffee00-0000-4000-8000-00000000e1b1",
        ),
        ("authenticity_token", &csrf),
    ]);
    let r = david
        .post_form(
            "/rooms/1/messages",
            &b,
            &[("Accept", "text/vnd.turbo-stream.html, text/html")],
        )
        .await;
    assert!(r.status < 400, "{} {}", r.status, r.body);
    let (_, page) = david.room(1).await;
    let cards = page.matches("class=\"og-embed\"").count();
    assert_eq!(cards, 2, "the javascript: card is dropped");
    assert!(
        page.contains(&format!("<img src=\"{image}\"")),
        "the stored image is shown"
    );
    assert!(
        !page.contains("tracker.example"),
        "a foreign image reached the page"
    );
    assert!(
        !page.contains("onclick") && !page.contains("<script>alert"),
        "markup of the card was kept"
    );
    assert!(
        page.contains(">Mountains alert(1)</a>"),
        "the title is its text"
    );

    // A message that is only the link shows the card alone (the link's text is not repeated).
    let solo = format!(
        "<div>https://example.com/solo{}</div>",
        figure("https://example.com/solo", &image)
    );
    let b = form(&[
        ("message[body]", &solo),
        ("message[body_format]", "html"),
        (
            "message[client_message_id]",
            "c0ffee00-0000-4000-8000-00000000e1b2",
        ),
        ("authenticity_token", &csrf),
    ]);
    let r = david
        .post_form(
            "/rooms/1/messages",
            &b,
            &[("Accept", "text/vnd.turbo-stream.html, text/html")],
        )
        .await;
    assert!(r.status < 400, "{} {}", r.status, r.body);
    let (_, page) = david.room(1).await;
    assert!(
        !page.contains(">https://example.com/solo</a>"),
        "the solo link's text is not shown"
    );
    assert_eq!(
        page.matches("<a href=\"https://example.com/solo\"").count(),
        1,
        "the solo link is shown once, in its card"
    );
    server.stop().await;
}
