//! The installable web app (Campfire's `PwaController`, `views/pwa/`): the web app manifest,
//! the service worker, the app icon and the favicon.
//!
//! | route | answer |
//! |---|---|
//! | `GET /webmanifest` | `application/manifest+json`: the account's name, start URL `/`, `display: standalone`, icons of 192 and 512 px (`/account/logo`: the account's logo, or this icon) |
//! | `GET /service-worker` | the service worker (`assets/pwa/service-worker.js`): shows pushes, sets the badge, opens the message on a click |
//! | `GET /favicon.svg`, `GET /icons/icon.svg` | the app icon (`assets/pwa/icon.svg`) |
//! | `GET /icons/icon-192.png`, `GET /icons/icon-512.png` | the icon rendered by `scripts/render-icons` |
//!
//! They need no session: a browser fetches them before and beside sign-in.

use crate::db::Db;
use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::db::accounts;
use crate::web::error::AppError;

/// The app icon, drawn for Hearth (SVG).
pub const ICON_SVG: &[u8] = include_bytes!("../../assets/pwa/icon.svg");
/// The icon at 192 × 192 px (PNG).
pub const ICON_192: &[u8] = include_bytes!("../../assets/pwa/icon-192.png");
/// The icon at 512 × 512 px (PNG).
pub const ICON_512: &[u8] = include_bytes!("../../assets/pwa/icon-512.png");
/// The service worker's script.
pub const SERVICE_WORKER: &str = include_str!("../../assets/pwa/service-worker.js");

/// The name the app takes when the installation has no account yet.
const DEFAULT_NAME: &str = "Hearth";

fn with_type(body: impl IntoResponse, content_type: &'static str, cache: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

/// The manifest's JSON for an account called `name` (W3C Web Application Manifest) whose
/// logo is at version `logo` (its icons: `/account/logo`, the logo's 192 and 512 px squares or
/// the stock icon).
pub fn manifest_json(name: &str, logo: Option<i64>) -> serde_json::Value {
    let small = crate::storage::logo_path(logo, true);
    let large = crate::storage::logo_path(logo, false);
    let short: String = name.chars().take(12).collect();
    serde_json::json!({
        "name": name,
        "short_name": short,
        "description": format!("{name}: chat rooms and direct messages"),
        "id": "/",
        "start_url": "/",
        "scope": "/",
        "display": "standalone",
        "background_color": "#fbfaf8",
        "theme_color": "#c2410c",
        "icons": [
            { "src": small, "sizes": "192x192", "type": "image/png", "purpose": "any" },
            { "src": large, "sizes": "512x512", "type": "image/png", "purpose": "any" },
            { "src": large, "sizes": "512x512", "type": "image/png", "purpose": "maskable" }
        ],
        "shortcuts": [
            { "name": "Search", "url": "/searches" },
            { "name": "Your profile", "url": "/users/me/profile" }
        ]
    })
}

/// `GET /webmanifest`: the web app manifest, named after the account.
pub async fn manifest(State(db): State<Db>) -> Result<Response, AppError> {
    let settings = db.account_settings.get(&db.pool).await?;
    let name = match accounts::find(&db.pool).await? {
        Some(_) => settings.name.clone(),
        None => DEFAULT_NAME.to_owned(),
    };
    Ok(with_type(
        manifest_json(&name, settings.logo).to_string(),
        "application/manifest+json",
        "no-cache",
    ))
}

/// `GET /service-worker`: the service worker's script (scope `/`).
pub async fn service_worker() -> Response {
    with_type(SERVICE_WORKER, "text/javascript; charset=utf-8", "no-cache")
}

/// `GET /favicon.svg`, `GET /icons/icon.svg`.
pub async fn icon_svg() -> Response {
    with_type(ICON_SVG, "image/svg+xml", "public, max-age=86400")
}

/// `GET /icons/icon-192.png`.
pub async fn icon_192() -> Response {
    with_type(ICON_192, "image/png", "public, max-age=86400")
}

/// `GET /icons/icon-512.png`.
pub async fn icon_512() -> Response {
    with_type(ICON_512, "image/png", "public, max-age=86400")
}
