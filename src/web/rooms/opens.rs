//! Open rooms (`/rooms/opens`, Campfire's `Rooms::OpensController`): every active user is a member.
//! The flow is shared with the other kind in [`super::shared`].

use axum::extract::{Path, State};
use axum::response::Response;
use axum::Extension;

use super::shared::{self, Kind};
use crate::state::SharedState;
use crate::web::context::Ctx;
use crate::web::error::AppError;

/// `GET /rooms/opens/new` (see [`shared::new_page`]).
pub async fn new(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    shared::new_page(&state, &ctx, Kind::Open).await
}

/// `POST /rooms/opens` (see [`shared::create`]).
pub async fn create(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    shared::create(&state, &ctx, Kind::Open).await
}

/// `GET /rooms/opens/{id}` (see [`shared::show`]).
pub async fn show(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    shared::show(&state, &ctx, &id).await
}

/// `GET /rooms/opens/{id}/edit` (see [`shared::edit_page`]).
pub async fn edit(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    shared::edit_page(&state, &ctx, &id, Kind::Open).await
}

/// `PATCH`/`PUT /rooms/opens/{id}` (see [`shared::update`]).
pub async fn update(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    shared::update(&state, &ctx, &id, Kind::Open).await
}
