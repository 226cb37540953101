//! The browser assets of the room page, served under `/assets` without CDNs and without npm.
//!
//! - `/assets/npm/<package>/<file>`: Turbo, turbo-rails' stream source element,
//!   `@rails/actioncable`, Trix and highlight.js (with their stylesheets, linked from the page's
//!   `<head>`), vendored unmodified from npm in `vendor/javascript/` and pinned
//!   (version, sha384 integrity) in `vendor/javascript/pins`, which `scripts/vendor-js`
//!   refreshes. They are built into the binary (see `build.rs`).
//! - `/assets/js/…`: the page's own scripts (`assets/js/`), also built in; with `--assets-dir`
//!   they are read from `<dir>/js` instead, to edit them without rebuilding.
//!
//! The page loads them as ES modules through an import map (the way importmap-rails pins
//! packages): [`BrowserAssets::head_html`] writes the `<script type="importmap">` with the
//! pinned files' `integrity`, the `modulepreload` links and the entry `import "hearth"`.

use std::path::{Path, PathBuf};

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::Router;
use sha2::{Digest, Sha256};
use tower_http::services::ServeDir;

/// The URL prefix of the vendored npm packages.
pub const NPM_PREFIX: &str = "/assets/npm";

/// The URL prefix of the page's own scripts.
pub const JS_PREFIX: &str = "/assets/js";

/// Where the stylesheet is served: every part of `templates/css/` in file-name order, as one file.
pub const STYLESHEET_URL: &str = "/assets/hearth.css";

/// The stylesheet: the parts of `templates/css/` (`00-base.css` first: its custom properties are
/// the colours and sizes every other part uses), concatenated in file-name order.
pub fn stylesheet() -> &'static str {
    static SHEET: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        STYLESHEET_PARTS
            .iter()
            .map(|(_, css)| *css)
            .collect::<Vec<_>>()
            .join("\n")
    });
    &SHEET
}

/// The page's own entry module (`assets/js/hearth.js`), imported as `hearth`.
pub const ENTRY: (&str, &str) = ("hearth", "/assets/js/hearth.js");

/// One vendored file of a pinned npm package (a line of `vendor/javascript/pins`).
#[derive(Debug)]
pub struct VendoredFile {
    /// The npm package, e.g. `@hotwired/turbo`.
    pub package: &'static str,
    /// Its pinned version.
    pub version: &'static str,
    /// The file's path inside the package.
    pub file: &'static str,
    /// Subresource Integrity of the file, `sha384-<base64>`.
    pub integrity: &'static str,
    /// Import specifiers mapped to it; none for a file reached only by an extensionless
    /// relative import, which the import map maps by its URL without `.js` (a browser does not
    /// add the extension the way a bundler does).
    pub specifiers: &'static [&'static str],
    /// The file's bytes, as published.
    pub bytes: &'static [u8],
}

impl VendoredFile {
    /// Where Hearth serves it: `/assets/npm/<package>/<file>`.
    pub fn url(&self) -> String {
        format!("{NPM_PREFIX}/{}/{}", self.package, self.file)
    }

    /// Whether it is a stylesheet (`.css`: Trix's editor styles, highlight.js's theme), linked
    /// from the page's `<head>` rather than mapped as a module.
    pub fn is_stylesheet(&self) -> bool {
        self.file.ends_with(".css")
    }

    /// Its `Content-Type`: `text/css; charset=utf-8` for a stylesheet, else `text/javascript`.
    pub fn content_type(&self) -> &'static str {
        if self.is_stylesheet() {
            "text/css; charset=utf-8"
        } else {
            "text/javascript"
        }
    }
}

include!(concat!(env!("OUT_DIR"), "/browser_assets.rs"));

/// An `--assets-dir` that cannot serve the page's scripts.
#[derive(Debug, thiserror::Error)]
#[error(
    "--assets-dir {}: {} is missing (the directory must hold the page's own scripts in js/, \
     like assets/ in the repository; leave --assets-dir unset to serve the built-in copies)",
    dir.display(),
    dir.join("js/hearth.js").display()
)]
pub struct AssetsDirError {
    dir: PathBuf,
}

/// Where the page's own scripts come from, and the `<head>` tags that load everything.
#[derive(Debug)]
pub struct BrowserAssets {
    dir: Option<PathBuf>,
    head: String,
}

impl BrowserAssets {
    /// The built-in scripts, or with `dir` (`--assets-dir`) the page's own scripts from
    /// `<dir>/js`, which must hold `hearth.js`.
    pub fn new(dir: Option<PathBuf>) -> Result<Self, AssetsDirError> {
        if let Some(dir) = &dir {
            if !dir.join("js/hearth.js").is_file() {
                return Err(AssetsDirError { dir: dir.clone() });
            }
        }
        Ok(Self {
            dir,
            head: head_html(),
        })
    }

    /// The `--assets-dir` the page's own scripts are read from, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The `<head>` tags that load the page's scripts.
    pub fn head_html(&self) -> &str {
        &self.head
    }

    /// The `/assets/js`, `/assets/npm` and stylesheet routes. They sit in front of the request context (no
    /// cookies, sessions or CSRF for static files) and answer `Cache-Control: no-cache`
    /// (revalidate with `If-None-Match`, or `If-Modified-Since` for files on disk, since the
    /// URLs carry no version).
    pub fn routes(&self) -> Router {
        let mut router = Router::new();
        for vendored in VENDORED {
            let file = Embedded::new(vendored.bytes, vendored.integrity);
            let content_type = vendored.content_type();
            router = router.route(
                &vendored.url(),
                get(move |h: HeaderMap| file.serve_as(h, content_type)),
            );
        }
        router = router.route(&format!("{NPM_PREFIX}/{{*rest}}"), any(not_found));
        let css = stylesheet();
        let sheet = Embedded::new(
            css.as_bytes(),
            &format!("sha256-{}", hex::encode(Sha256::digest(css))),
        );
        router = router.route(
            STYLESHEET_URL,
            get(move |h: HeaderMap| sheet.serve_as(h, "text/css; charset=utf-8")),
        );
        match &self.dir {
            Some(dir) => {
                router = router.nest_service(JS_PREFIX, ServeDir::new(dir.join("js")));
            }
            None => {
                for (name, bytes) in OWN_SCRIPTS {
                    let tag = format!("sha256-{}", hex::encode(Sha256::digest(bytes)));
                    let file = Embedded::new(bytes, &tag);
                    router = router.route(
                        &format!("{JS_PREFIX}/{name}"),
                        get(move |h: HeaderMap| file.serve(h)),
                    );
                }
                router = router.route(&format!("{JS_PREFIX}/{{*rest}}"), any(not_found));
            }
        }
        router.layer(axum::middleware::map_response(no_cache))
    }
}

/// A file built into the binary, with its entity tag.
#[derive(Debug, Clone)]
struct Embedded {
    bytes: &'static [u8],
    etag: HeaderValue,
}

impl Embedded {
    fn new(bytes: &'static [u8], tag: &str) -> Self {
        let etag = HeaderValue::from_str(&format!("\"{tag}\""))
            .unwrap_or_else(|_| HeaderValue::from_static("\"\""));
        Self { bytes, etag }
    }

    async fn serve(self, headers: HeaderMap) -> Response {
        self.serve_as(headers, "text/javascript").await
    }

    async fn serve_as(self, headers: HeaderMap, content_type: &'static str) -> Response {
        let etag = self.etag;
        let fresh = headers
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|tag| tag.trim() == "*" || tag.trim().trim_start_matches("W/") == etag);
        if fresh {
            return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
        }
        (
            [
                (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
                (header::ETAG, etag),
            ],
            self.bytes,
        )
            .into_response()
    }
}

async fn no_cache(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Not found\n",
    )
        .into_response()
}

/// The import map (with the vendored files' `integrity`), the preload links and the entry
/// script, as importmap-rails writes them.
fn head_html() -> String {
    let mut imports = serde_json::Map::new();
    let mut integrity = serde_json::Map::new();
    let mut preloads = vec![(ENTRY.1.to_owned(), None)];
    let mut stylesheets = String::new();
    for vendored in VENDORED {
        let url = vendored.url();
        if vendored.is_stylesheet() {
            stylesheets.push_str(&format!(
                "  <link rel=\"stylesheet\" href=\"{url}\" integrity=\"{}\">\n",
                vendored.integrity
            ));
            continue;
        }
        if vendored.specifiers.is_empty() {
            let bare = url.strip_suffix(".js").unwrap_or(&url);
            imports.insert(bare.to_owned(), url.clone().into());
        } else {
            for specifier in vendored.specifiers {
                imports.insert((*specifier).to_owned(), url.clone().into());
            }
            preloads.push((url.clone(), Some(vendored.integrity)));
        }
        integrity.insert(url, vendored.integrity.into());
    }
    imports.insert(ENTRY.0.to_owned(), ENTRY.1.into());
    let map = serde_json::json!({ "imports": imports, "integrity": integrity });
    let json = crate::rails::json::encode_value(&map, crate::rails::json::JsonEscaping::default());
    let mut html =
        format!("<script type=\"importmap\" data-turbo-track=\"reload\">{json}</script>\n");
    for (href, integrity) in preloads {
        match integrity {
            Some(sri) => html.push_str(&format!(
                "  <link rel=\"modulepreload\" href=\"{href}\" integrity=\"{sri}\">\n"
            )),
            None => html.push_str(&format!("  <link rel=\"modulepreload\" href=\"{href}\">\n")),
        }
    }
    html.push_str(&stylesheets);
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
        assert_eq!(
            imports["@rails/actioncable/src"],
            "/assets/npm/@rails/actioncable/app/assets/javascripts/actioncable.esm.js"
        );
        assert_eq!(
            imports["/assets/npm/@hotwired/turbo-rails/app/javascript/turbo/cable"],
            "/assets/npm/@hotwired/turbo-rails/app/javascript/turbo/cable.js"
        );
        assert_eq!(imports["hearth"], "/assets/js/hearth.js");
        assert!(imports
            .values()
            .all(|v| v.as_str().unwrap().starts_with("/assets/")));
        let modules = VENDORED.iter().filter(|v| !v.is_stylesheet()).count();
        assert_eq!(map["integrity"].as_object().unwrap().len(), modules);
        assert!(html.ends_with("<script type=\"module\">import \"hearth\"</script>"));
    }

    #[test]
    fn the_page_scripts_are_built_in() {
        assert!(OWN_SCRIPTS.iter().any(|(name, _)| *name == "hearth.js"));
        assert!(VENDORED.iter().all(|v| !v.bytes.is_empty()));
    }

    #[test]
    fn the_stylesheet_is_every_part_in_file_name_order() {
        let names: Vec<&str> = STYLESHEET_PARTS.iter().map(|(name, _)| *name).collect();
        assert_eq!(names.first(), Some(&"00-base.css"));
        assert!(names.windows(2).all(|pair| pair[0] < pair[1]), "{names:?}");
        let sheet = stylesheet();
        let mut at = 0;
        for (name, css) in STYLESHEET_PARTS {
            let found = sheet[at..].find(css).map(|i| i + at);
            assert!(found.is_some(), "{name} is missing or out of order");
            at = found.unwrap_or(at) + css.len();
        }
    }

    #[test]
    fn an_assets_dir_without_the_scripts_is_refused_by_name() {
        let err = BrowserAssets::new(Some("/nonexistent/hearth-assets".into())).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("--assets-dir /nonexistent/hearth-assets"),
            "{text}"
        );
        assert!(
            text.contains("/nonexistent/hearth-assets/js/hearth.js"),
            "{text}"
        );
        assert!(!text.contains("npm"), "{text}");
    }
}
