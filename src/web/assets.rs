//! The browser assets of the room page, served under `/assets` without CDNs.
//!
//! - `/assets/js/…`: the page's own scripts, from `<assets-dir>/js`.
//! - `/assets/npm/<package>/…`: the pinned npm packages the page imports (Turbo, turbo-rails'
//!   stream source element, `@rails/actioncable`), from `<assets-dir>/node_modules`, which
//!   `npm ci --prefix assets` fills from `assets/package-lock.json`.
//!
//! The page loads them as ES modules through an import map (the way importmap-rails pins
//! packages): [`BrowserAssets::head_html`] writes the `<script type="importmap">`, the
//! `modulepreload` links and the entry `import "hearth"`. When the npm packages are not
//! installed, [`BrowserAssets::installed`] is false, the page carries no scripts and says so,
//! and every form still works by plain POST and redirect.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower_http::services::ServeDir;

/// The URL prefix of the npm packages.
pub const NPM_PREFIX: &str = "/assets/npm";

/// The npm packages served, by name (each must be pinned in `assets/package.json`).
pub const PACKAGES: [&str; 3] = [
    "@hotwired/turbo",
    "@hotwired/turbo-rails",
    "@rails/actioncable",
];

/// Import map entries: (specifier, file under `node_modules`). The four extensionless
/// relative imports inside turbo-rails' sources are mapped by their resolved URL, since a
/// browser does not add `.js` the way a bundler does.
pub const NPM_PINS: [(&str, &str); 8] = [
    (
        "@hotwired/turbo-rails",
        "@hotwired/turbo-rails/app/javascript/turbo/index.js",
    ),
    (
        "@hotwired/turbo",
        "@hotwired/turbo/dist/turbo.es2017-esm.js",
    ),
    (
        "@rails/actioncable",
        "@rails/actioncable/app/assets/javascripts/actioncable.esm.js",
    ),
    (
        "@rails/actioncable/src",
        "@rails/actioncable/app/assets/javascripts/actioncable.esm.js",
    ),
    (
        "/assets/npm/@hotwired/turbo-rails/app/javascript/turbo/cable_stream_source_element",
        "@hotwired/turbo-rails/app/javascript/turbo/cable_stream_source_element.js",
    ),
    (
        "/assets/npm/@hotwired/turbo-rails/app/javascript/turbo/cable",
        "@hotwired/turbo-rails/app/javascript/turbo/cable.js",
    ),
    (
        "/assets/npm/@hotwired/turbo-rails/app/javascript/turbo/fetch_requests",
        "@hotwired/turbo-rails/app/javascript/turbo/fetch_requests.js",
    ),
    (
        "/assets/npm/@hotwired/turbo-rails/app/javascript/turbo/snakeize",
        "@hotwired/turbo-rails/app/javascript/turbo/snakeize.js",
    ),
];

/// The page's own entry module (`assets/js/hearth.js`), imported as `hearth`.
pub const ENTRY: (&str, &str) = ("hearth", "/assets/js/hearth.js");

/// What a person runs to install the npm packages.
pub const INSTALL_COMMAND: &str = "npm ci --prefix assets";

/// The assets directory and whether its npm packages are installed.
#[derive(Debug)]
pub struct BrowserAssets {
    dir: PathBuf,
    found: AtomicBool,
    head: String,
}

impl BrowserAssets {
    /// Assets served from `dir` (normally `assets`, `--assets-dir`).
    pub fn new(dir: impl Into<PathBuf>) -> BrowserAssets {
        BrowserAssets {
            dir: dir.into(),
            found: AtomicBool::new(false),
            head: head_html(),
        }
    }

    /// The assets directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether every pinned file exists. Checked on each call until it is true once (so an
    /// `npm ci` run while the server is up takes effect on the next page), then remembered.
    pub fn installed(&self) -> bool {
        if self.found.load(Ordering::Relaxed) {
            return true;
        }
        let modules = self.dir.join("node_modules");
        let all = NPM_PINS
            .iter()
            .all(|(_, file)| modules.join(file).is_file())
            && self.dir.join("js/hearth.js").is_file();
        if all {
            self.found.store(true, Ordering::Relaxed);
        }
        all
    }

    /// The `<head>` tags that load the page's scripts, or `""` when the packages are not
    /// installed.
    pub fn head_html(&self) -> &str {
        if self.installed() {
            &self.head
        } else {
            ""
        }
    }

    /// The `/assets/js` and `/assets/npm/<package>` routes. They sit in front of the request
    /// context (no cookies, sessions or CSRF for static files) and answer `Cache-Control:
    /// no-cache` (revalidate with `If-Modified-Since`, since the URLs carry no version).
    pub fn routes(&self) -> Router {
        let mut router =
            Router::new().nest_service("/assets/js", ServeDir::new(self.dir.join("js")));
        for package in PACKAGES {
            let service = ServeDir::new(self.dir.join("node_modules").join(package))
                .not_found_service(axum::routing::any(not_installed));
            router = router.nest_service(&format!("{NPM_PREFIX}/{package}"), service);
        }
        router.layer(axum::middleware::map_response(no_cache))
    }
}

async fn no_cache(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

async fn not_installed() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("Not found. If the browser packages are not installed, run `{INSTALL_COMMAND}`.\n"),
    )
        .into_response()
}

/// The import map, the preload links and the entry script, as importmap-rails writes them.
fn head_html() -> String {
    let mut imports = serde_json::Map::new();
    for (specifier, file) in NPM_PINS {
        imports.insert(specifier.to_owned(), format!("{NPM_PREFIX}/{file}").into());
    }
    imports.insert(ENTRY.0.to_owned(), ENTRY.1.into());
    let map = serde_json::json!({ "imports": imports });
    let json = crate::rails::json::encode_value(&map, crate::rails::json::JsonEscaping::default());
    let mut html =
        format!("<script type=\"importmap\" data-turbo-track=\"reload\">{json}</script>\n");
    for href in [
        ENTRY.1.to_owned(),
        format!("{NPM_PREFIX}/{}", NPM_PINS[0].1),
        format!("{NPM_PREFIX}/{}", NPM_PINS[1].1),
        format!("{NPM_PREFIX}/{}", NPM_PINS[2].1),
    ] {
        html.push_str(&format!("  <link rel=\"modulepreload\" href=\"{href}\">\n"));
    }
    html.push_str("  <script type=\"module\">import \"hearth\"</script>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_import_map_pins_every_specifier_under_assets() {
        let html = head_html();
        let start = html.find('>').unwrap() + 1;
        let end = html.find("</script>").unwrap();
        let map: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
        let imports = map["imports"].as_object().unwrap();
        assert_eq!(imports.len(), NPM_PINS.len() + 1);
        assert_eq!(
            imports["@rails/actioncable/src"],
            "/assets/npm/@rails/actioncable/app/assets/javascripts/actioncable.esm.js"
        );
        assert_eq!(imports["hearth"], "/assets/js/hearth.js");
        assert!(imports
            .values()
            .all(|v| v.as_str().unwrap().starts_with("/assets/")));
        assert!(html.ends_with("<script type=\"module\">import \"hearth\"</script>"));
    }

    #[test]
    fn missing_packages_mean_no_scripts() {
        let assets = BrowserAssets::new("/nonexistent/hearth-assets");
        assert!(!assets.installed());
        assert_eq!(assets.head_html(), "");
    }
}
