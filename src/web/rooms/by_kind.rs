//! Open and closed rooms (`/rooms/opens` and `/rooms/closeds`: Campfire's
//! `Rooms::OpensController` and `Rooms::ClosedsController`), one set of routes and handlers for
//! both kinds, told apart by a type parameter: [`Opens`] (every active user is a member) or
//! [`Closeds`] (a chosen member list). The flow they share with each other is in
//! [`super::shared`].

use crate::db::Db;
use crate::pubsub::Delivery;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};

use super::settings::SharedRoom;
use super::shared::{self, Kind};
use crate::state::SharedState;
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::respond::found;

/// A kind of shared room, as a type: its [`Kind`] and the path segment of its routes.
pub trait RoomsOfKind: Send + Sync + 'static {
    /// The kind the handlers pass on.
    const KIND: Kind;
    /// `/rooms/<this>`.
    const PATH: &'static str;
}

/// Open rooms, `/rooms/opens`.
#[derive(Debug)]
pub struct Opens;

impl RoomsOfKind for Opens {
    const KIND: Kind = Kind::Open;
    const PATH: &'static str = "/rooms/opens";
}

/// Closed rooms, `/rooms/closeds`.
#[derive(Debug)]
pub struct Closeds;

impl RoomsOfKind for Closeds {
    const KIND: Kind = Kind::Closed;
    const PATH: &'static str = "/rooms/closeds";
}

/// The routes of one kind: `GET <path>/new`, `POST <path>`, `GET`/`PATCH`/`PUT <path>/{room_id}`
/// and `GET <path>/{room_id}/edit`.
pub fn routes<K: RoomsOfKind>() -> Router<SharedState> {
    let path = K::PATH;
    Router::new()
        .route(&format!("{path}/new"), get(new::<K>))
        .route(path, axum::routing::post(create::<K>))
        .route(
            &format!("{path}/{{room_id}}"),
            get(show).patch(update::<K>).put(update::<K>),
        )
        .route(&format!("{path}/{{room_id}}/edit"), get(edit::<K>))
}

/// `GET <path>/new` (see [`shared::new_page`]).
pub async fn new<K: RoomsOfKind>(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    shared::new_page(&db, &ctx, K::KIND).await
}

/// `POST <path>` (see [`shared::create`]).
pub async fn create<K: RoomsOfKind>(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    shared::create(&db, &delivery, &ctx, K::KIND).await
}

/// `GET <path>/{id}`: redirects to the room page (members; others: 302 to `/`), the same for
/// both kinds.
pub async fn show(SharedRoom { room, .. }: SharedRoom) -> Response {
    found(&format!("/rooms/{}", room.id))
}

/// `GET <path>/{id}/edit` (see [`shared::edit_page`]).
pub async fn edit<K: RoomsOfKind>(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
    room: SharedRoom,
) -> Result<Response, AppError> {
    shared::edit_page(&db, &ctx, room, K::KIND).await
}

/// `PATCH`/`PUT <path>/{id}` (see [`shared::update`]).
pub async fn update<K: RoomsOfKind>(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    Extension(ctx): Extension<Ctx>,
    room: SharedRoom,
) -> Result<Response, AppError> {
    shared::update(&db, &delivery, &ctx, room, K::KIND).await
}
