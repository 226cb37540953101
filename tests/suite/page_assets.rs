//! The room page's scripts: the import map and what it points at, served by Hearth under
//! `/assets` from the binary (no npm, no `node_modules`); every vendored file checked against
//! its pin in `vendor/javascript/pins`; and `--assets-dir` for the page's own scripts.

use crate::common;

use std::path::Path;

use base64::Engine as _;
use sha2::{Digest, Sha384};

use common::TestServer;

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

fn sri(bytes: &[u8]) -> String {
    format!(
        "sha384-{}",
        base64::engine::general_purpose::STANDARD.encode(Sha384::digest(bytes))
    )
}

/// One `file` line of the pins: (package, path in the package, integrity, specifiers).
struct Pin {
    package: String,
    file: String,
    integrity: String,
    specifiers: String,
}

/// The pins, read here on their own (not through the build script's list).
fn pins() -> (Vec<(String, String)>, Vec<Pin>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("vendor/javascript/pins")).unwrap();
    let (mut packages, mut files) = (Vec::new(), Vec::new());
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f[0] {
            "package" => {
                assert_eq!(f.len(), 4, "{line}");
                assert!(f[3].starts_with("sha512-"), "{line}");
                packages.push((f[1].to_owned(), f[2].to_owned()));
            }
            "file" => {
                assert_eq!(f.len(), 5, "{line}");
                files.push(Pin {
                    package: f[1].to_owned(),
                    file: f[2].to_owned(),
                    integrity: f[3].to_owned(),
                    specifiers: f[4].to_owned(),
                });
            }
            other => panic!("unknown pins line kind {other}: {line}"),
        }
    }
    (packages, files)
}

#[tokio::test]
async fn the_import_map_points_at_files_hearth_serves() {
    let server = TestServer::start().await;
    let mut c = server.signed_in("david@example.com", "secret123456").await;
    let (_, page) = c.room(1).await;
    assert!(page.contains("<script type=\"module\">import \"hearth\"</script>"));
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
        // Revalidation: the entity tag answers 304.
        let etag = r.header("etag").expect("an entity tag").to_owned();
        let again = anonymous
            .request("GET", url, &[("If-None-Match", &etag)], b"")
            .await;
        assert_eq!(again.status, 304, "{url}");
        assert!(again.body.is_empty());
    }
    // Our own modules import each other by relative URL.
    for module in [
        "composer.js",
        "mentions.js",
        "bodies.js",
        "typing.js",
        "presence.js",
        "connection.js",
        "unreads.js",
        "scrolling.js",
        "ordering.js",
        "formatter.js",
        "menu.js",
        "posting.js",
        "sounds.js",
        "util.js",
    ] {
        let r = anonymous.get(&format!("/assets/js/{module}")).await;
        assert_eq!(r.status, 200, "{module}");
    }
    // Only the vendored files are served.
    for url in [
        "/assets/npm/ws/index.js",
        "/assets/npm/@hotwired/turbo/no-such-file.js",
        "/assets/npm/@hotwired/turbo/package.json",
        "/assets/js/no-such-file.js",
    ] {
        let r = anonymous.get(url).await;
        assert_eq!(r.status, 404, "{url}");
        assert!(!r.body.contains("npm"), "{}", r.body);
    }
}

#[tokio::test]
async fn every_vendored_file_matches_its_pin_on_disk_served_and_in_the_import_map() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (packages, files) = pins();
    // Turbo, turbo-rails and Action Cable at least; every other pin is checked the same way.
    assert!(packages.len() >= 3, "{}", packages.len());
    assert!(files.len() >= 7, "{}", files.len());
    let stylesheets = files.iter().filter(|f| f.file.ends_with(".css")).count();
    assert!(stylesheets >= 2, "Trix's and highlight.js's");
    let server = TestServer::start().await;
    let mut c = server.signed_in("david@example.com", "secret123456").await;
    let (_, page) = c.room(1).await;
    let map = import_map(&page);
    let integrity = map["integrity"].as_object().expect("an integrity map");
    // Stylesheets are linked from the head; every other file is a module in the import map.
    assert_eq!(integrity.len(), files.len() - stylesheets);
    let imports = map["imports"].as_object().unwrap();
    let mut anonymous = server.client();
    for pin in &files {
        assert!(
            packages.iter().any(|(name, _)| *name == pin.package),
            "{} is not a pinned package",
            pin.package
        );
        let on_disk = std::fs::read(
            root.join("vendor/javascript")
                .join(&pin.package)
                .join(&pin.file),
        )
        .unwrap();
        assert_eq!(sri(&on_disk), pin.integrity, "{} {}", pin.package, pin.file);
        let url = format!("/assets/npm/{}/{}", pin.package, pin.file);
        let r = anonymous.get(&url).await;
        assert_eq!(r.status, 200, "{url}");
        assert_eq!(sri(r.body.as_bytes()), pin.integrity, "{url} as served");
        if pin.file.ends_with(".css") {
            // A stylesheet is linked from the head with its integrity, not mapped as a module.
            assert_eq!(
                r.header("content-type"),
                Some("text/css; charset=utf-8"),
                "{url}"
            );
            let link = format!(
                "<link rel=\"stylesheet\" href=\"{url}\" integrity=\"{}\">",
                pin.integrity
            );
            assert!(page.contains(&link), "{link}");
            assert!(!integrity.contains_key(&url));
            continue;
        }
        assert_eq!(
            integrity[&url],
            pin.integrity.as_str(),
            "{url} in the import map"
        );
        let preload = format!(
            "<link rel=\"modulepreload\" href=\"{url}\" integrity=\"{}\">",
            pin.integrity
        );
        if pin.specifiers == "-" {
            let bare = url.strip_suffix(".js").unwrap();
            assert_eq!(imports[bare], url.as_str());
            assert!(!page.contains(&preload));
        } else {
            for specifier in pin.specifiers.split(',') {
                assert_eq!(imports[specifier], url.as_str(), "{specifier}");
            }
            assert!(page.contains(&preload), "{preload}");
        }
    }
    // Nothing else is vendored: every file in the folder is pinned.
    let mut stack = vec![root.join("vendor/javascript")];
    let mut count = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().unwrap() != "pins" {
                count += 1;
            }
        }
    }
    assert_eq!(
        count,
        files.len(),
        "files in vendor/javascript that are not pinned"
    );
}

#[tokio::test]
async fn the_server_needs_no_npm_packages() {
    // The page works from a directory without any checkout next to it: nothing is read from
    // `assets/node_modules` (nor `assets/`).
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        !root.join("assets/package.json").exists(),
        "the server has no npm packages"
    );
    let server = TestServer::start().await;
    assert!(server.state.assets.dir().is_none());
    let mut c = server.signed_in("jason@example.com", "secret123456").await;
    let (_, page) = c.room(1).await;
    assert!(page.contains("<script type=\"importmap\""));
    assert!(!page.contains("npm ci"));
}

#[tokio::test]
async fn assets_dir_serves_the_page_scripts_from_disk_and_a_wrong_one_is_named() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = common::temp_dir("assets-dir");
    std::fs::create_dir_all(dir.join("js")).unwrap();
    for entry in std::fs::read_dir(root.join("assets/js")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join("js").join(path.file_name().unwrap())).unwrap();
    }
    std::fs::write(dir.join("js/edited.js"), "export const edited = true\n").unwrap();
    let server = TestServer::start_with(|c| c.assets_dir = Some(dir.clone())).await;
    let mut anonymous = server.client();
    let r = anonymous.get("/assets/js/edited.js").await;
    assert_eq!(r.status, 200);
    assert!(r.body.contains("edited = true"));
    // The vendored modules still come from the binary: the directory has no node_modules.
    let r = anonymous
        .get("/assets/npm/@hotwired/turbo/dist/turbo.es2017-esm.js")
        .await;
    assert_eq!(r.status, 200);
    drop(server);

    // A directory without the page's scripts stops the start, naming that directory.
    let empty = common::temp_dir("assets-empty");
    let mut config = hearth::config::Config::for_tests(&common::temp_dir("assets-db"));
    config.assets_dir = Some(empty.clone());
    let err = match hearth::app::Server::bind(config).await {
        Ok(_) => panic!("a wrong --assets-dir is refused"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains(&format!("--assets-dir {}", empty.display())),
        "{err}"
    );
    assert!(
        err.contains(&empty.join("js/hearth.js").display().to_string()),
        "{err}"
    );
    assert!(!err.contains("npm"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&empty);
}
