//! Direct rooms (`/rooms/directs`, Campfire's `Rooms::DirectsController`): found or created
//! for a set of people, unnamed, listed under `direct_rooms` and named for each member by the
//! other members. Every member may delete one.

use crate::db::Db;
use crate::pubsub::Delivery;
use crate::storage::Storage;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::Extension;
use std::sync::Arc;

use super::settings::{self, Scope};
use crate::db::{memberships, rooms};
use crate::render::RoomForm;
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::respond::found;

/// `GET /rooms/directs/new`: the people to message (signed-in users).
pub async fn new(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let token = ctx.csrf_token();
    let people = settings::people(&db, user, &[]).await?;
    settings::form_page(&RoomForm {
        csrf_token: &token,
        title: "New direct message",
        action: "/rooms/directs",
        method: "post",
        name: None,
        max_name_chars: settings::MAX_NAME_CHARS,
        kind: crate::db::RoomKind::Direct,
        people,
        user_id: user.id,
        editable: true,
        submit: "Start",
        destroy_action: None,
        kind_switch: None,
        back: "/",
    })
}

/// `POST /rooms/directs` with `user_ids[]`: finds the direct room of exactly those people and
/// the sender, or creates it; prepends each member's own entry to their `direct_rooms`
/// (found or created, as Campfire does) and redirects to the room (302). 422 for a bad list
/// or more than [`settings::MAX_DIRECT_MEMBER_IDS`] people; 401 when signed out.
pub async fn create(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let ids = settings::user_ids(&ctx.form, settings::MAX_DIRECT_MEMBER_IDS)?;
    let (room, members, created) =
        memberships::find_or_create_direct(&db.pool, &delivery.broadcaster, user.id, &ids).await?;
    let mut entries = Vec::with_capacity(members.len());
    for id in &members {
        if let Some(entry) = rooms::sidebar_entry(&db.pool, room.id, *id).await? {
            entries.push((*id, entry));
        }
    }
    crate::broadcasts::direct_room_created(&delivery.broadcaster, &entries)?;
    tracing::info!(room_id = room.id, created, "direct room");
    Ok(found(&format!("/rooms/{}", room.id)))
}

/// `GET /rooms/directs/{id}/edit`: the room's people and its delete button (members; others
/// and non-direct rooms: 302 to `/`).
pub async fn edit(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let Some(room) = settings::find_room(&db, user, &id, Scope::Direct).await? else {
        return Ok(settings::not_found_or_inaccessible());
    };
    let members = rooms::member_ids(&db.pool, room.id).await?;
    let people = settings::people(&db, user, &members)
        .await?
        .into_iter()
        .filter(|p| p.selected)
        .collect();
    let label = rooms::sidebar_entry(&db.pool, room.id, user.id)
        .await?
        .map_or_else(|| room.display_name().to_owned(), |e| e.label);
    let token = ctx.csrf_token();
    let back = format!("/rooms/{}", room.id);
    settings::form_page(&RoomForm {
        csrf_token: &token,
        title: &label,
        action: &back,
        method: "get",
        name: None,
        max_name_chars: settings::MAX_NAME_CHARS,
        kind: crate::db::RoomKind::Direct,
        people,
        user_id: user.id,
        editable: false,
        submit: "",
        destroy_action: Some(format!("/rooms/directs/{}", room.id)),
        kind_switch: None,
        back: &back,
    })
}

/// `DELETE /rooms/directs/{id}`: any member deletes the direct room (see
/// [`settings::destroy`]).
pub async fn destroy(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Result<Response, AppError> {
    settings::destroy_in(&db, &delivery, &storage, &ctx, &id, Scope::Direct).await
}
