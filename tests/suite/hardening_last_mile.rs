//! Hostile requests at what issue 48 added: the link previews' fetcher (more address forms,
//! redirects, lying answers, hostile Open Graph properties, a flood of slow fetches and a
//! per-user limit), the saved notice's cookie and the paged people list.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::common;
use common::TestServer;

const DAVID: &str = "david@example.com";
const JASON: &str = "jason@example.com";
const SECRET: &str = "secret123456";

/// A PNG of `w`×`h` pixels.
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 40])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// An Open Graph page of `title` whose image is `image` and whose `og:url` is `url`.
fn og_page(title: &str, image: &str, url: &str) -> String {
    format!(
        "<!doctype html><html><head>\
         <meta property=\"og:title\" content=\"{title}\">\
         <meta property=\"og:description\" content=\"A page.\">\
         <meta property=\"og:image\" content=\"{image}\">\
         <meta property=\"og:url\" content=\"{url}\">\
         </head><body></body></html>"
    )
}

/// A full HTTP/1.1 answer.
fn reply(status: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// A site on `addr` answering each path of `answers` with its bytes (404 otherwise); paths
/// starting with `/slow` answer after 30 s. Counts its connections.
async fn site(addr: &str, answers: HashMap<String, Vec<u8>>) -> (SocketAddr, Arc<AtomicU64>) {
    let listener = TcpListener::bind(addr).await.unwrap();
    let local = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let seen2 = seen.clone();
    let answers = Arc::new(answers);
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            seen2.fetch_add(1, Ordering::SeqCst);
            let answers = answers.clone();
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
                if path.starts_with("/slow") {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                let answer = answers
                    .get(&path)
                    .cloned()
                    .unwrap_or_else(|| reply("404 Not Found", "", b"no"));
                let _ = stream.write_all(&answer).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (local, seen)
}

/// `POST /unfurl_link` with `url`: the status and the JSON (if any).
async fn unfurl(c: &mut common::Client, csrf: &str, url: &str) -> (u16, serde_json::Value) {
    let body = serde_json::json!({ "url": url }).to_string();
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
    (r.status, json)
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
async fn other_spellings_of_loopback_are_never_fetched() {
    let (addr, seen) = site("127.0.0.1:0", HashMap::new()).await;
    let port = addr.port();
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    for url in [
        format!("http://public.example@127.0.0.1:{port}/og"),
        format!("http://127.0.0.1:{port}@example.com/og"),
        format!("http://[64:ff9b::7f00:1]:{port}/og"),
        format!("http://[64:ff9b::a00:1]:{port}/og"),
        format!("http://[2002:7f00:1::]:{port}/og"),
        format!("http://[::127.0.0.1]:{port}/og"),
        format!("http://[fe80::1%25eth0]:{port}/og"),
        format!("http://[::ffff:127.0.0.1%25lo]:{port}/og"),
        format!("http://0177.0.0.1:{port}/og"),
        format!("http://017700000001:{port}/og"),
        format!("http://0x7f000001:{port}/og"),
        format!("http://127.1:{port}/og"),
        format!("http://127.0.0.1.:{port}/og"),
        format!("HTTP://LOCALHOST:{port}/og"),
        format!("http://localhost.:{port}/og"),
        format!(" http://127.0.0.1:{port}/og"),
        format!("//127.0.0.1:{port}/og"),
        format!("javascript:fetch('http://127.0.0.1:{port}/og')"),
        "data:text/html,<meta property=og:title content=x>".to_owned(),
    ] {
        let (status, _) = unfurl(&mut david, &csrf, &url).await;
        assert_eq!(status, 204, "{url} gave a preview");
    }
    assert_eq!(seen.load(Ordering::SeqCst), 0, "the site was reached");
    server.stop().await;
}

#[tokio::test]
async fn redirects_lying_answers_and_hostile_properties_give_nothing_unsafe() {
    // Outside the allow-list: where redirects and images point.
    let (inner, inner_seen) = site("127.0.0.2:0", {
        let mut m = HashMap::new();
        m.insert(
            "/og".to_owned(),
            reply(
                "200 OK",
                "Content-Type: text/html\r\n",
                og_page("Inner", "/x.png", "").as_bytes(),
            ),
        );
        m
    })
    .await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let origin = format!("http://127.0.0.1:{port}");
    let html = "Content-Type: text/html; charset=utf-8\r\n";
    let mut m: HashMap<String, Vec<u8>> = HashMap::new();
    let redirect = |to: &str| reply("302 Found", &format!("Location: {to}\r\n"), b"");
    m.insert(
        "/protocol-relative".into(),
        redirect(&format!("//{inner}/og")),
    );
    m.insert("/file".into(), redirect("file:///etc/passwd"));
    m.insert("/gopher".into(), redirect(&format!("gopher://{inner}/og")));
    m.insert("/loop".into(), redirect("/loop"));
    m.insert("/relative".into(), redirect("og-private-image"));
    m.insert(
        "/huge-header".into(),
        reply(
            "200 OK",
            &format!("{html}X-Big: {}\r\n", "a".repeat(2 * 1024 * 1024)),
            og_page("Big", "", "").as_bytes(),
        ),
    );
    m.insert("/png-as-html".into(), reply("200 OK", html, &png(4, 4)));
    m.insert(
        "/html-as-image".into(),
        reply(
            "200 OK",
            html,
            og_page("Lying image", "/fake.png", "").as_bytes(),
        ),
    );
    m.insert(
        "/fake.png".into(),
        reply(
            "200 OK",
            "Content-Type: image/png\r\n",
            og_page("x", "", "").as_bytes(),
        ),
    );
    m.insert(
        "/og-private-image".into(),
        reply(
            "200 OK",
            html,
            og_page("Private image", &format!("http://{inner}/og"), "").as_bytes(),
        ),
    );
    m.insert(
        "/og-javascript".into(),
        reply(
            "200 OK",
            html,
            og_page("Script", "javascript:alert(1)", "javascript:alert(1)").as_bytes(),
        ),
    );
    m.insert(
        "/og-data".into(),
        reply(
            "200 OK",
            html,
            og_page(
                "Data",
                "data:image/png;base64,iVBORw0KGgo=",
                " data:text/html,<script>alert(1)</script>",
            )
            .as_bytes(),
        ),
    );
    let listener_addr = format!("127.0.0.1:{port}");
    let (_, seen) = site(&listener_addr, m).await;
    let server = TestServer::start_with(|c| {
        c.link_preview_allow_network = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;

    for path in [
        "/protocol-relative",
        "/file",
        "/gopher",
        "/huge-header",
        "/png-as-html",
    ] {
        let (status, card) = unfurl(&mut david, &csrf, &format!("{origin}{path}")).await;
        assert_eq!(status, 204, "{path}: {card}");
    }
    let before = seen.load(Ordering::SeqCst);
    let (status, _) = unfurl(&mut david, &csrf, &format!("{origin}/loop")).await;
    assert_eq!(status, 204);
    let hops = seen.load(Ordering::SeqCst) - before;
    assert!(hops <= 4, "a redirect loop was followed {hops} times");

    // A relative redirect is followed (to a page whose image is private: no image).
    for path in ["/relative", "/og-private-image"] {
        let (status, card) = unfurl(&mut david, &csrf, &format!("{origin}{path}")).await;
        assert_eq!(status, 200, "{path}: {card}");
        assert_eq!(card["title"], "Private image");
        assert!(card["image"].is_null(), "{card}");
    }
    let (status, card) = unfurl(&mut david, &csrf, &format!("{origin}/html-as-image")).await;
    assert_eq!(status, 200, "{card}");
    assert!(card["image"].is_null(), "HTML kept as an image: {card}");
    for path in ["/og-javascript", "/og-data"] {
        let (status, card) = unfurl(&mut david, &csrf, &format!("{origin}{path}")).await;
        assert_eq!(status, 200, "{path}: {card}");
        assert_eq!(card["url"], format!("{origin}{path}"), "{card}");
        assert!(card["image"].is_null(), "{card}");
    }
    assert_eq!(
        inner_seen.load(Ordering::SeqCst),
        0,
        "the inner site was reached"
    );
    assert_eq!(stored_previews(&server.dir), 0);
    server.stop().await;
}

#[tokio::test]
async fn fifty_slow_unfurls_leave_pages_answering() {
    let (addr, _) = site("127.0.0.1:0", HashMap::new()).await;
    let server = TestServer::start_with(|c| {
        c.link_preview_allow_network = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    let mut flood = Vec::new();
    for i in 0..50 {
        let mut c = david.clone();
        let csrf = csrf.clone();
        let url = format!("http://{addr}/slow/{i}");
        flood.push(tokio::spawn(async move {
            let started = Instant::now();
            let (status, _) = unfurl(&mut c, &csrf, &url).await;
            (status, started.elapsed())
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let (_, page) = david.room(1).await;
    assert!(page.contains("<html"), "the room did not answer");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the room took {:?} under the flood",
        started.elapsed()
    );
    for f in flood {
        let (status, took) = f.await.unwrap();
        assert!(status == 204 || status == 429, "{status}");
        assert!(took < Duration::from_secs(8), "an unfurl took {took:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn unfurls_are_limited_per_user() {
    let server = TestServer::start_with(|c| c.link_preview_rate_limit = 5).await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.room(1).await;
    for n in 0..5 {
        let (status, _) = unfurl(&mut david, &csrf, "http://10.0.0.1/").await;
        assert_eq!(status, 204, "unfurl {n}");
    }
    let (status, _) = unfurl(&mut david, &csrf, "http://10.0.0.1/").await;
    assert_eq!(status, 429, "the sixth unfurl in a minute");
    // Someone else is not limited by David's unfurls.
    let mut jason = server.signed_in(JASON, SECRET).await;
    let (csrf, _) = jason.room(1).await;
    let (status, _) = unfurl(&mut jason, &csrf, "http://10.0.0.1/").await;
    assert_eq!(status, 204);
    server.stop().await;
}

#[tokio::test]
async fn a_forged_flash_cookie_shows_nothing_but_a_known_notice() {
    let server = TestServer::start().await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let long = "s".repeat(3000);
    for value in [
        "%3Cscript%3Ealert(1)%3C/script%3E",
        "\"<img src=x onerror=alert(1)>\"",
        "Saved",
        "saved%00",
        "saved2",
        long.as_str(),
    ] {
        let mut c = jason.clone();
        c.cookies.push(("flash".to_owned(), value.to_owned()));
        let r = c.get("/rooms/1").await;
        assert_eq!(r.status, 200, "{value}");
        assert!(!r.body.contains("flash-notice"), "{value} showed a notice");
        assert!(!r.body.contains("onerror") && !r.body.contains("<script>alert"));
    }
    // A forged known name shows only its fixed text, once.
    jason.cookies.push(("flash".to_owned(), "saved".to_owned()));
    let r = jason.get("/rooms/1").await;
    assert!(r.body.contains("flash-notice"));
    assert_eq!(jason.cookie("flash"), None, "the notice's cookie is kept");
    assert!(!jason.get("/rooms/1").await.body.contains("flash-notice"));
    server.stop().await;
}

#[tokio::test]
async fn the_people_list_takes_hostile_pages_and_filters() {
    let server = TestServer::start().await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let rows = |body: &str| body.matches("<tr").count();
    let everyone = david.get("/account/users").await;
    assert_eq!(everyone.status, 200);
    assert!(rows(&everyone.body) > 2);
    for (query, status) in [
        ("page=4294967295", 200),
        ("page=0", 200),
        ("page=-1", 400),
        ("page=99999999999999999999", 400),
        ("page=1e3", 400),
        ("page=", 400),
    ] {
        let r = david.get(&format!("/account/users?{query}")).await;
        assert_eq!(r.status, status, "{query}");
    }
    let last = david.get("/account/users?page=4294967295").await;
    assert!(last.body.contains("No one matches."));
    assert!(!last.body.contains("rel=\"next\""));
    // SQL wildcards are literal: no one's name or address has `%` or `_`.
    for q in ["%25", "_", "%25%25", "%5C", "'", "%22%3E%3Cscript%3E"] {
        let r = david.get(&format!("/account/users?q={q}")).await;
        assert_eq!(r.status, 200, "{q}");
        assert!(r.body.contains("No one matches."), "{q} matched people");
        assert!(
            !r.body.contains("\"><script>"),
            "{q} reached the page unescaped"
        );
    }
    let long = "a".repeat(60_000);
    let started = Instant::now();
    let r = david.get(&format!("/account/users?q={long}")).await;
    assert!(
        r.status == 200 || r.status == 414 || r.status == 431,
        "{}",
        r.status
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    if r.status == 200 {
        assert!(!r.body.contains(&"a".repeat(101)), "the filter was not cut");
    }
    // Members cannot page or filter it.
    for path in [
        "/account/users",
        "/account/users?page=2",
        "/account/users?q=david",
    ] {
        assert_eq!(jason.get(path).await.status, 403, "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn one_users_slow_unfurls_leave_room_for_everyone_elses() {
    let mut m = HashMap::new();
    m.insert(
        "/og".to_owned(),
        reply(
            "200 OK",
            "Content-Type: text/html\r\n",
            og_page("Quick", "", "").as_bytes(),
        ),
    );
    let (addr, _) = site("127.0.0.1:0", m).await;
    let server = TestServer::start_with(|c| {
        c.link_preview_allow_network = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    let david = server.signed_in(DAVID, SECRET).await;
    let (csrf, _) = david.clone().room(1).await;
    let mut jason = server.signed_in(JASON, SECRET).await;
    let (jason_csrf, _) = jason.room(1).await;
    let mut flood = Vec::new();
    for i in 0..20 {
        let mut c = david.clone();
        let csrf = csrf.clone();
        let url = format!("http://{addr}/slow/{i}");
        flood.push(tokio::spawn(
            async move { unfurl(&mut c, &csrf, &url).await },
        ));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let (status, card) = unfurl(&mut jason, &jason_csrf, &format!("http://{addr}/og")).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["title"], "Quick");
    assert!(
        took < Duration::from_secs(2),
        "someone else's slow unfurls held every fetch: {took:?}"
    );
    // David's own are held to a few at once: the rest are refused at once.
    let mut refused = 0;
    for f in flood {
        let status = f.await.unwrap().0;
        assert!(status == 204 || status == 429, "{status}");
        refused += usize::from(status == 429);
    }
    assert!(refused >= 20 - 2, "{refused} of David's 20 were refused");
    server.stop().await;
}
