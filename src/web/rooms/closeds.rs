//! Closed rooms (`/rooms/closeds`, Campfire's `Rooms::ClosedsController`): a chosen member list.
//! The flow is shared with the other kind in [`super::shared`].

use axum::extract::{Path, State};
use axum::response::Response;
use axum::Extension;

use super::shared::{self, Kind};
use crate::state::SharedState;
use crate::web::context::Ctx;
use crate::web::error::AppError;

/// `GET /rooms/closeds/new` (see [`shared::new_page`]).
pub async fn new(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    shared::new_page(&state, &ctx, Kind::Closed).await
}

/// `POST /rooms/closeds` (see [`shared::create`]).
pub async fn create(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    shared::create(&state, &ctx, Kind::Closed).await
}

/// `GET /rooms/closeds/{id}` (see [`shared::show`]).
pub async fn show(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    shared::show(&state, &ctx, &id).await
}

/// `GET /rooms/closeds/{id}/edit` (see [`shared::edit_page`]).
pub async fn edit(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    shared::edit_page(&state, &ctx, &id, Kind::Closed).await
}

/// `PATCH`/`PUT /rooms/closeds/{id}` (see [`shared::update`]).
pub async fn update(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    shared::update(&state, &ctx, &id, Kind::Closed).await
}
