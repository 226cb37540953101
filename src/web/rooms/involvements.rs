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

/// The bell's order in a shared room (Campfire's `SHARED_INVOLVEMENT_ORDER`).
pub const SHARED_ORDER: [&str; 4] = ["mentions", "everything", "nothing", "invisible"];

/// The bell's order in a direct room (Campfire's `DIRECT_INVOLVEMENT_ORDER`).
pub const DIRECT_ORDER: [&str; 2] = ["everything", "nothing"];

/// The involvement the room's bell moves to from `current`, as Campfire's
/// `next_involvement_for` (`helpers/rooms/involvements_helper.rb`): shared rooms cycle
/// mentions → everything → nothing → invisible → mentions, direct rooms everything ↔ nothing;
/// a value outside the order starts it again.
pub fn next_involvement(direct: bool, current: &str) -> &'static str {
    let order: &[&'static str] = if direct { &DIRECT_ORDER } else { &SHARED_ORDER };
    order
        .iter()
        .position(|v| *v == current)
        .and_then(|i| order.get(i + 1))
        .unwrap_or(&order[0])
}

/// A short name of an involvement, for the bell's title.
pub fn short_label(involvement: &str) -> &'static str {
    match involvement {
        "invisible" => "Hidden from the sidebar, no notifications",
        "nothing" => "No notifications",
        "mentions" => "Notified of @mentions",
        _ => "Notified of every message",
    }
}

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
/// `:rooms` stream. 302 to the involvement page (to the room itself with `return_to=room`,
/// which the room's bell sends); 422 for an unknown value; 404 for a non-member.
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
    if ctx.form.get("return_to") == Some("room") {
        return Ok(found(&format!("/rooms/{}", room.id)));
    }
    Ok(found(&format!("/rooms/{}/involvement", room.id)))
}

#[cfg(test)]
mod tests {
    use super::next_involvement;

    #[test]
    fn the_bell_cycles_as_campfires() {
        let mut seen = vec!["mentions"];
        for _ in 0..4 {
            seen.push(next_involvement(false, seen.last().unwrap()));
        }
        assert_eq!(
            seen,
            ["mentions", "everything", "nothing", "invisible", "mentions"]
        );
        assert_eq!(next_involvement(true, "everything"), "nothing");
        assert_eq!(next_involvement(true, "nothing"), "everything");
        assert_eq!(next_involvement(true, "mentions"), "everything");
        assert_eq!(next_involvement(false, "bogus"), "mentions");
    }
}
