//! The room page's scripts: the import map and what it points at, served by Hearth under
//! `/assets`; and the page without the npm packages (no scripts, a notice, plain POST forms).

mod common;

use std::path::Path;
use std::process::Command;

use common::{form, TestServer};

fn ensure_assets() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    if !dir.join("node_modules/@hotwired/turbo-rails").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm ci in assets failed");
    }
}

/// The JSON inside `<script type="importmap" …>…</script>`.
fn import_map(html: &str) -> serde_json::Value {
    let start = html
        .find("<script type=\"importmap\"")
        .expect("an import map");
    let body = &html[start..];
    let open = body.find('>').unwrap() + 1;
    let close = body.find("</script>").unwrap();
    serde_json::from_str(&body[open..close]).expect("import map JSON")
}

#[tokio::test]
async fn the_import_map_points_at_files_hearth_serves() {
    ensure_assets();
    let server = TestServer::start().await;
    let mut c = server.signed_in("david@example.com", "secret123456").await;
    let (_, page) = c.room(1).await;
    assert!(page.contains("<script type=\"module\">import \"hearth\"</script>"));
    assert!(!page.contains("Live updates are off"));
    let map = import_map(&page);
    let imports = map["imports"].as_object().unwrap();
    for specifier in [
        "@hotwired/turbo",
        "@hotwired/turbo-rails",
        "@rails/actioncable",
        "@rails/actioncable/src",
        "hearth",
    ] {
        assert!(imports.contains_key(specifier), "{specifier} not pinned");
    }
    let mut anonymous = server.client();
    for url in imports.values() {
        let url = url.as_str().unwrap();
        assert!(url.starts_with("/assets/"), "{url}");
        let r = anonymous.get(url).await;
        assert_eq!(r.status, 200, "{url}");
        assert_eq!(r.header("content-type"), Some("text/javascript"), "{url}");
        assert_eq!(r.header("cache-control"), Some("no-cache"), "{url}");
        assert!(
            r.header("set-cookie").is_none(),
            "static files carry no cookies"
        );
    }
    // Our own modules import each other by relative URL.
    for module in [
        "composer.js",
        "typing.js",
        "presence.js",
        "connection.js",
        "unreads.js",
        "scrolling.js",
        "util.js",
    ] {
        let r = anonymous.get(&format!("/assets/js/{module}")).await;
        assert_eq!(r.status, 200, "{module}");
    }
    // Only the pinned packages are served from node_modules.
    let r = anonymous.get("/assets/npm/ws/index.js").await;
    assert_eq!(r.status, 404);
    let r = anonymous
        .get("/assets/npm/@hotwired/turbo/no-such-file.js")
        .await;
    assert_eq!(r.status, 404);
    assert!(r.body.contains("npm ci --prefix assets"), "{}", r.body);
}

#[tokio::test]
async fn without_the_packages_the_page_has_no_scripts_and_forms_still_post() {
    let empty = common::temp_dir("no-assets");
    let server = TestServer::start_with(|c| c.assets_dir = empty.clone()).await;
    let mut c = server.signed_in("jason@example.com", "secret123456").await;
    let (csrf, page) = c.room(1).await;
    assert!(!page.contains("importmap"));
    assert!(!page.contains("<script"));
    assert!(page.contains("Live updates are off"), "{page}");
    assert!(page.contains("npm ci --prefix assets"));
    let body = form(&[
        ("message[body]", "posted without scripts"),
        ("authenticity_token", &csrf),
    ]);
    let r = c
        .post_form("/rooms/1/messages", &body, &[("Accept", "text/html")])
        .await;
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/rooms/1"));
    let (_, page) = c.room(1).await;
    assert!(page.contains("posted without scripts"));
    let _ = std::fs::remove_dir_all(&empty);
}
