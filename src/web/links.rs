//! Links a person hands on: the full URL of a path on this server, its QR code
//! (`GET /qr_code/{id}`, Campfire's `QrCodeController`) and the transfer link
//! (Campfire's `User::Transferable`).

use crate::config::Config;
use crate::rails::Keys;
use std::time::{Duration, SystemTime};

use axum::extract::Path;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE;
use base64::Engine as _;

use super::context::Ctx;
use super::error::AppError;

/// How long a transfer link signs in (Campfire's `TRANSFER_LINK_EXPIRY_DURATION`, 4 hours).
pub const TRANSFER_LINK_EXPIRY: Duration = Duration::from_secs(4 * 3600);
/// The model and purpose of a transfer id (`User#signed_id(purpose: :transfer)`).
pub const TRANSFER_PURPOSE: (&str, &str) = ("user", "transfer");
/// The longest URL a QR code is drawn for, in bytes (a QR code holds at most 2,953 bytes).
pub const MAX_QR_URL_BYTES: usize = 2048;

/// `scheme://host` of the request: `https` when it came over TLS (or the server runs in
/// production), the `Host` header's value (`localhost` when missing or not printable ASCII).
pub fn origin(ctx: &Ctx, headers: &HeaderMap, config: &Config) -> String {
    origin_for(ctx, headers, config.production)
}

/// [`origin`] from `--production` alone (`https` in production or over TLS).
pub fn origin_for(ctx: &Ctx, headers: &HeaderMap, production: bool) -> String {
    let scheme = if ctx.secure || production {
        "https"
    } else {
        "http"
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
        })
        .unwrap_or("localhost");
    format!("{scheme}://{host}")
}

/// The path of the QR code of `url`: `/qr_code/<urlsafe base64 of url>`.
pub fn qr_path(url: &str) -> String {
    format!("/qr_code/{}", URL_SAFE.encode(url))
}

/// A new transfer id of `user_id`, valid for [`TRANSFER_LINK_EXPIRY`] (`User#transfer_id`).
pub fn transfer_id(keys: &Keys, user_id: i64) -> String {
    keys.signed_ids.generate(
        TRANSFER_PURPOSE.0,
        TRANSFER_PURPOSE.1,
        user_id,
        SystemTime::now() + TRANSFER_LINK_EXPIRY,
    )
}

/// The user id a transfer id names, if it is genuine and not expired (the caller checks the
/// user is active: `User.active.find_by_transfer_id`).
pub fn find_by_transfer_id(keys: &Keys, id: &str) -> Option<i64> {
    keys.signed_ids
        .verify(TRANSFER_PURPOSE.0, TRANSFER_PURPOSE.1, id)
}

/// A link as the share partial (`templates/accounts/_share.html`) shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareLink {
    /// The full URL.
    pub url: String,
    /// The path of its QR code.
    pub qr_path: String,
}

impl ShareLink {
    /// The link to `path` on this server.
    pub fn to_path(origin: &str, path: &str) -> Self {
        let url = format!("{origin}{path}");
        Self {
            qr_path: qr_path(&url),
            url,
        }
    }
}

/// The transfer link of `user_id` on this server.
pub fn transfer_link(keys: &Keys, origin: &str, user_id: i64) -> ShareLink {
    ShareLink::to_path(
        origin,
        &format!("/session/transfers/{}", transfer_id(keys, user_id)),
    )
}

/// `GET /qr_code/{id}`: the QR code of the URL whose URL-safe base64 is `id`, as SVG, cached
/// publicly for a year (the same id always draws the same code). Anyone may ask (Campfire's
/// `allow_unauthenticated_access`). 404 when `id` is not base64 of UTF-8 text of at most
/// [`MAX_QR_URL_BYTES`].
pub async fn qr_code(Path(id): Path<String>) -> Result<Response, AppError> {
    if id.len() > MAX_QR_URL_BYTES * 4 / 3 + 4 {
        return Err(AppError::NotFound);
    }
    let bytes = URL_SAFE
        .decode(id.as_bytes())
        .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(id.as_bytes()))
        .map_err(|_| AppError::NotFound)?;
    let url = String::from_utf8(bytes).map_err(|_| AppError::NotFound)?;
    if url.is_empty() || url.len() > MAX_QR_URL_BYTES {
        return Err(AppError::NotFound);
    }
    let code = qrcode::QrCode::new(url.as_bytes()).map_err(|_| AppError::NotFound)?;
    let svg = code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(160, 160)
        .dark_color(qrcode::render::svg::Color("#000000"))
        .light_color(qrcode::render::svg::Color("#ffffff"))
        .build();
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "max-age=31536000, public"),
        ],
        svg,
    )
        .into_response())
}
