//! `/rooms/{room_id}/involvement` (Campfire's `Rooms::InvolvementsController`): a member's
//! notification level in a room: `invisible` (hidden from the sidebar: how a member leaves a
//! room, since open rooms always include everyone), `nothing`, `mentions`, `everything`.

use crate::db::Db;
use crate::pubsub::Delivery;
use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use crate::db::memberships::{self, INVOLVEMENTS};
use crate::db::rooms;
use crate::db::Involvement;
use crate::render::InvolvementPage;
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::extract::MemberRoom;
use crate::web::respond::found;

/// The bell's order in a shared room (Campfire's `SHARED_INVOLVEMENT_ORDER`).
pub const SHARED_ORDER: [Involvement; 4] = [
    Involvement::Mentions,
    Involvement::Everything,
    Involvement::Nothing,
    Involvement::Invisible,
];

/// The bell's order in a direct room (Campfire's `DIRECT_INVOLVEMENT_ORDER`).
pub const DIRECT_ORDER: [Involvement; 2] = [Involvement::Everything, Involvement::Nothing];

/// The involvement the room's bell moves to from `current`, as Campfire's
/// `next_involvement_for` (`helpers/rooms/involvements_helper.rb`): shared rooms cycle
/// mentions → everything → nothing → invisible → mentions, direct rooms everything ↔ nothing;
/// a value outside the order starts it again.
pub fn next_involvement(direct: bool, current: Involvement) -> Involvement {
    let order: &[Involvement] = if direct { &DIRECT_ORDER } else { &SHARED_ORDER };
    order
        .iter()
        .position(|v| *v == current)
        .and_then(|i| order.get(i + 1))
        .copied()
        .unwrap_or(order[0])
}

/// A short name of an involvement, for the bell's title.
pub fn short_label(involvement: Involvement) -> &'static str {
    match involvement {
        Involvement::Invisible => "Hidden from the sidebar, no notifications",
        Involvement::Nothing => "No notifications",
        Involvement::Mentions => "Notified of @mentions",
        Involvement::Everything => "Notified of every message",
    }
}

fn label(involvement: Involvement) -> &'static str {
    match involvement {
        Involvement::Invisible => "Hidden: leave the room (it stays reachable by link)",
        Involvement::Nothing => "No notifications",
        Involvement::Mentions => "Notify me of @mentions",
        Involvement::Everything => "Notify me of everything",
    }
}

/// `GET /rooms/{room_id}/involvement`: the current involvement and the choices (members; a
/// non-member or unknown room: 404, as Campfire's `RoomScoped`).
pub async fn show(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
    MemberRoom { user, room }: MemberRoom,
) -> Result<Response, AppError> {
    let current = memberships::involvement(&db.pool, room.id, user.id)
        .await?
        .ok_or(AppError::NotFound)?;
    let name = rooms::sidebar_entry(&db.pool, room.id, user.id)
        .await?
        .map_or_else(|| room.display_name().to_owned(), |e| e.label);
    let token = ctx.csrf_token();
    let page = InvolvementPage {
        csrf_token: &token,
        room_id: room.id,
        room_name: &name,
        involvement: current.as_str(),
        choices: INVOLVEMENTS
            .iter()
            .map(|v| (v.as_str(), label(*v), *v == current))
            .collect(),
    };
    Ok(Html(askama::Template::render(&page)?).into_response())
}

/// `PUT`/`PATCH /rooms/{room_id}/involvement` with `involvement`: sets it and, for a shared
/// room going to or from `invisible`, removes or prepends its entry on the member's own
/// `:rooms` stream. 302 to the involvement page (to the room itself with `return_to=room`,
/// which the room's bell sends); 422 for an unknown value; 404 for a non-member.
pub async fn update(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    Extension(ctx): Extension<Ctx>,
    MemberRoom { user, room }: MemberRoom,
) -> Result<Response, AppError> {
    let involvement: Involvement = ctx
        .form
        .get("involvement")
        .unwrap_or("")
        .parse()
        .map_err(|e: crate::db::kinds::UnknownWord| AppError::Unprocessable(e.to_string()))?;
    let previous = memberships::set_involvement(&db.pool, room.id, user.id, involvement)
        .await?
        .ok_or(AppError::NotFound)?;
    if let Some(entry) = rooms::sidebar_entry(&db.pool, room.id, user.id).await? {
        crate::broadcasts::involvement_changed(
            &delivery.broadcaster,
            &room,
            user.id,
            previous,
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
    use crate::db::Involvement::{Everything, Invisible, Mentions, Nothing};

    #[test]
    fn the_bell_cycles_as_campfires() {
        let mut seen = vec![Mentions];
        for _ in 0..4 {
            seen.push(next_involvement(false, *seen.last().unwrap()));
        }
        assert_eq!(seen, [Mentions, Everything, Nothing, Invisible, Mentions]);
        assert_eq!(next_involvement(true, Everything), Nothing);
        assert_eq!(next_involvement(true, Nothing), Everything);
        assert_eq!(next_involvement(true, Mentions), Everything);
        assert_eq!(next_involvement(true, Invisible), Everything);
    }
}
