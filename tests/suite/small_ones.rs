//! The small things of the room over real HTTP: browsers too old get 406 and the page naming the
//! ones that work (page requests only: not `/up`, the stylesheet, bots or other answers); the
//! first-run form takes the administrator's picture as the avatar; the seed's generated people
//! have distinct names; a prompt's globe carries its translations.

use crate::common::forms::{csrf, scalar_i64, scalar_text};
use crate::common::TestServer;
use crate::files::{multipart, png};

const OLD_CHROME: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36";
const OLD_SAFARI: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 16_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1";
const OLD_IE: &str = "Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko";
const MODERN_CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const MODERN_SAFARI: &str = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15";
const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const HTML: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

#[tokio::test]
async fn browsers_too_old_get_406_with_the_page_and_nothing_else_does() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let get = |ua: &'static str, accept: &'static str, path: &'static str| {
        let mut c = server.client();
        async move {
            c.request("GET", path, &[("User-Agent", ua), ("Accept", accept)], b"")
                .await
        }
    };
    for ua in [OLD_CHROME, OLD_SAFARI, OLD_IE] {
        let r = get(ua, HTML, "/session/new").await;
        assert_eq!(r.status, 406, "{ua}: {}", r.body);
        assert!(r.body.contains("This browser is too old"), "{}", r.body);
        for (browser, version) in [
            ("Safari", "17.2"),
            ("Chrome", "120"),
            ("Firefox", "121"),
            ("Opera", "104"),
        ] {
            assert!(
                r.body.contains(&format!(
                    "<strong>{browser}</strong> <span>{version} or newer"
                )),
                "{browser} {version}: {}",
                r.body
            );
        }
        assert!(!r.body.contains("Internet Explorer"));
        // Its text, in other languages, behind the globe.
        assert!(r.body.contains("data-translation=\"unsupported_browser\""));
        assert!(r.body.contains("lang=\"es\""));
        assert!(
            !r.body.contains("name=\"email_address\""),
            "no sign-in form"
        );
    }
    // A room page of a signed-in person, from an old browser, too.
    let mut david = server.signed_in("david@example.com", "secret123456").await;
    let r = david
        .request(
            "GET",
            "/rooms/1",
            &[("User-Agent", OLD_CHROME), ("Accept", HTML)],
            b"",
        )
        .await;
    assert_eq!(r.status, 406);
    // Modern browsers, bots, no User-Agent: the page.
    for ua in [MODERN_CHROME, MODERN_SAFARI, GOOGLEBOT, ""] {
        let r = get(ua, HTML, "/session/new").await;
        assert_eq!(r.status, 200, "{ua:?}");
        assert!(r.body.contains("name=\"email_address\""));
    }
    // What is not a page request: the health check, the stylesheet, the scripts, an answer
    // that is not HTML.
    for (accept, path, status) in [
        (HTML, "/up", 200),
        ("text/css,*/*;q=0.1", "/assets/hearth.css", 200),
        ("*/*", "/assets/js/share.js", 200),
        ("*/*", "/session/new", 200),
        ("application/manifest+json", "/webmanifest", 200),
    ] {
        let r = get(OLD_CHROME, accept, path).await;
        assert_eq!(r.status, status, "{path}: {}", r.body);
    }
    let r = c.get("/session/new").await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn prompts_carry_their_translations_behind_a_globe() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let page = c.get("/session/new").await;
    assert_eq!(page.status, 200);
    for key in ["email_address", "password"] {
        assert!(
            page.body.contains(&format!(
                "<details class=\"translation\" data-translation=\"{key}\">"
            )),
            "{key}: {}",
            page.body
        );
    }
    for (lang, text) in [
        ("es", "Escribe tu dirección de correo"),
        ("fr", "Indiquez votre mot de passe"),
        ("ja", "パスワードを入力してください"),
    ] {
        assert!(
            page.body.contains(&format!("lang=\"{lang}\">{text}</dd>")),
            "{lang}: {}",
            page.body
        );
    }
}

#[tokio::test]
async fn the_first_run_form_takes_the_administrators_picture() {
    let server = TestServer::start_with(|c| c.no_seed = true).await;
    let mut c = server.client();
    let token = csrf(&mut c, "/first_run").await;
    let page = c.get("/first_run").await;
    assert!(page.body.contains("name=\"user[avatar]\""), "{}", page.body);
    let picture = png(300, 200);
    let (content_type, body) = multipart(
        &[
            ("user[name]", "Grace Hopper"),
            ("user[email_address]", "grace@example.com"),
            ("user[password]", "compiler1952"),
        ],
        "user[avatar]",
        "grace.png",
        &picture,
    );
    let r = c
        .request(
            "POST",
            "/first_run",
            &[("Content-Type", &content_type), ("X-CSRF-Token", &token)],
            &body,
        )
        .await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(r.header("location"), Some("/"));
    assert!(c.cookie("session_token").is_some());
    let user_id = scalar_i64(
        &server,
        "SELECT id FROM users WHERE email_address = 'grace@example.com' AND role = 'administrator'",
    )
    .await;
    assert_eq!(
        scalar_text(
            &server,
            &format!("SELECT name FROM users WHERE id = {user_id}")
        )
        .await,
        "Grace Hopper"
    );
    let filename = scalar_text(
        &server,
        &format!(
            "SELECT b.filename FROM active_storage_attachments a JOIN active_storage_blobs b \
             ON b.id = a.blob_id WHERE a.name = 'avatar' AND a.record_type = 'User' \
             AND a.record_id = {user_id}"
        ),
    )
    .await;
    assert_eq!(filename, "grace.png");
    // The profile links the picture, which answers as an image.
    let profile = c.get("/users/me/profile").await;
    assert_eq!(profile.status, 200);
    let marker = format!("/users/{user_id}/avatar?v=");
    assert!(profile.body.contains(&marker), "{}", profile.body);
    let start = profile.body.find(&marker).unwrap();
    let end = start + profile.body[start..].find('"').unwrap();
    let avatar = c.get(&profile.body[start..end].replace("&amp;", "&")).await;
    assert_eq!(avatar.status, 200);
    let kind = avatar.header("content-type").unwrap_or("");
    assert!(kind == "image/png" || kind == "image/jpeg", "{kind}");
}

#[tokio::test]
async fn seeded_people_have_distinct_names() {
    let server = TestServer::start().await;
    let users = scalar_i64(&server, "SELECT COUNT(*) FROM users").await;
    let names = scalar_i64(&server, "SELECT COUNT(DISTINCT name) FROM users").await;
    assert_eq!(users, 27, "7 named people and the 20 generated ones");
    assert_eq!(names, users);
    assert_eq!(
        scalar_i64(
            &server,
            "SELECT COUNT(*) FROM users WHERE name LIKE 'User %'"
        )
        .await,
        0
    );
    // Sign-ins keep their addresses.
    assert_eq!(
        scalar_text(
            &server,
            "SELECT name FROM users WHERE email_address = 'user1@example.com'"
        )
        .await,
        "Ada Abara"
    );
    server.signed_in("user2@example.com", "password").await;
    // Thousands of people: names stay distinct (a number follows past 2,000).
    let all: std::collections::HashSet<String> = (1..=5000)
        .map(hearth::db::seed::generated_user_name)
        .collect();
    assert_eq!(all.len(), 5000);
    assert_eq!(hearth::db::seed::generated_user_name(2001), "Ada Abara 2");
}
