//! Link previews over HTTP (Campfire's `UnfurlLinksController`, `resource :unfurl_link`):
//!
//! | route | answer |
//! |---|---|
//! | `POST /unfurl_link` | JSON `{"url": "https://…"}` in: `200` with `{"title","url","description","image"}` (the image a path of this server, or null), or `204` when the page gives no preview; `429` with `Retry-After` while the person has [`link_previews::AT_ONCE_PER_USER`] previews being fetched; `404` with `--link-previews off`; `401` signed out |
//! | `GET /unfurl_link/images/{sha256}.{jpg,png}` | a preview's re-encoded image (signed in; cached for good, its name is its digest) |
//!
//! The fetching and its guard are [`crate::link_previews`].

use crate::outbox::Outbox;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use std::sync::Arc;

use super::context::Ctx;
use super::error::AppError;
use crate::link_previews::{self, LinkPreviews};
use crate::storage::Storage;

/// The longest URL looked at, in bytes.
pub const MAX_URL_BYTES: usize = 2048;

/// The body of `POST /unfurl_link`.
#[derive(Debug, Deserialize)]
pub struct UnfurlParams {
    /// The pasted URL.
    url: String,
}

/// `POST /unfurl_link` (see the module docs).
pub async fn create(
    State(storage): State<Arc<Storage>>,
    State(outbox): State<Outbox>,
    Extension(ctx): Extension<Ctx>,
    Json(params): Json<UnfurlParams>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    unfurl(&outbox.link_previews, &storage, user.id, &params.url).await
}

async fn unfurl(
    previews: &LinkPreviews,
    storage: &Storage,
    user_id: i64,
    url: &str,
) -> Result<Response, AppError> {
    if !previews.enabled() {
        return Err(AppError::NotFound);
    }
    if url.len() > MAX_URL_BYTES {
        return Ok(axum::http::StatusCode::NO_CONTENT.into_response());
    }
    let Some(_reserved) = previews.reserve(user_id) else {
        return Err(AppError::RateLimited(std::time::Duration::from_secs(1)));
    };
    Ok(match previews.preview(url, storage).await {
        Some(preview) => Json(preview).into_response(),
        None => axum::http::StatusCode::NO_CONTENT.into_response(),
    })
}

/// `GET /unfurl_link/images/{name}` (see the module docs).
pub async fn image(
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
    Path(name): Path<String>,
) -> Result<Response, AppError> {
    ctx.require_user()?;
    stored_image(&storage, &name).await
}

async fn stored_image(storage: &Storage, name: &str) -> Result<Response, AppError> {
    let path = format!("{}{name}", link_previews::IMAGE_PATH);
    let (key, content_type) = link_previews::image_key(&path).ok_or(AppError::NotFound)?;
    let bytes = storage
        .read(storage.service_name(), key)
        .await
        .ok_or(AppError::NotFound)?;
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (
                header::CACHE_CONTROL,
                "private, max-age=31536000, immutable",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        bytes,
    )
        .into_response())
}
