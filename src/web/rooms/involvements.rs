//! `/rooms/{room_id}/involvement` (Campfire's `Rooms::InvolvementsController`): a member's
//! notification level in a room: `invisible` (hidden from the sidebar: how a member leaves a
//! room, since open rooms always include everyone), `nothing`, `mentions`, `everything`.

use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use crate::db::memberships::{self, INVOLVEMENTS};
use crate::db::rooms;
use crate::render::InvolvementPage;
use crate::state::SharedState;
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::extract::MemberRoom;
use crate::web::respond::found;

fn label(involvement: &str) -> &'static str {
    match involvement {
        "invisible" => "Hidden: leave the room (it stays reachable by link)",
        "nothing" => "No notifications",
        "mentions" => "Notify me of @mentions",
        _ => "Notify me of everything",
    }
}

/// `GET /rooms/{room_id}/involvement`: the current involvement and the choices (members; a
/// non-member or unknown room: 404, as Campfire's `RoomScoped`).
pub async fn show(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    MemberRoom { user, room }: MemberRoom,
) -> Result<Response, AppError> {
    let current = memberships::involvement(&state.pool, room.id, user.id)
        .await?
        .ok_or(AppError::NotFound)?;
    let name = rooms::sidebar_entry(&state.pool, room.id, user.id)
        .await?
        .map_or_else(|| room.display_name().to_owned(), |e| e.label);
    let token = ctx.csrf_token();
    let page = InvolvementPage {
        csrf_token: &token,
        room_id: room.id,
        room_name: &name,
        involvement: &current,
        choices: INVOLVEMENTS
            .iter()
            .map(|v| (*v, label(v), *v == current))
            .collect(),
    };
    Ok(Html(askama::Template::render(&page)?).into_response())
}

/// `PUT`/`PATCH /rooms/{room_id}/involvement` with `involvement`: sets it and, for a shared
/// room going to or from `invisible`, removes or prepends its entry on the member's own
/// `:rooms` stream. 302 to the involvement page; 422 for an unknown value; 404 for a
/// non-member.
pub async fn update(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    MemberRoom { user, room }: MemberRoom,
) -> Result<Response, AppError> {
    let involvement = ctx.form.get("involvement").unwrap_or("");
    if !INVOLVEMENTS.contains(&involvement) {
        return Err(AppError::Unprocessable(format!(
            "involvement must be one of {}",
            INVOLVEMENTS.join(", ")
        )));
    }
    let previous = memberships::set_involvement(&state.pool, room.id, user.id, involvement)
        .await?
        .ok_or(AppError::NotFound)?;
    if let Some(entry) = rooms::sidebar_entry(&state.pool, room.id, user.id).await? {
        crate::broadcasts::involvement_changed(
            &state.broadcaster,
            &room,
            user.id,
            &previous,
            involvement,
            &entry,
        )?;
    }
    Ok(found(&format!("/rooms/{}/involvement", room.id)))
}
