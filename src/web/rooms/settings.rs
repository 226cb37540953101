//! What the room-management routes share: the input limits and parsing of `room[name]` and
//! `user_ids[]`, finding a room the way Campfire's `RoomsController#set_room` does, who may
//! administer a room (`User#can_administer?`), the room form page, and
//! `DELETE /rooms/{room_id}` (`RoomsController#destroy`).

use crate::db::Db;
use crate::pubsub::Delivery;
use crate::storage::Storage;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;
use std::sync::Arc;

use crate::db::memberships;
use crate::db::rooms::{self, Room};
use crate::db::users::User;
use crate::render::{Person, RoomForm};
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::extract::parse_id;
use crate::web::form::Form;
use crate::web::respond::found;

/// The longest room name accepted, in characters (longer: 422).
pub const MAX_NAME_CHARS: usize = 100;
/// The most `user_ids[]` one request may name for a closed room (more: 422): room for a team of
/// ten thousand, so closing an open room keeps everyone (its form checks every member); about
/// 200 KB of form, well inside the body limit.
pub const MAX_MEMBER_IDS: usize = 10_000;
/// The most people one direct room may be created for, besides its creator (more: 422).
pub const MAX_DIRECT_MEMBER_IDS: usize = 50;

/// `room[name]`, trimmed. 422 when missing, blank or over [`MAX_NAME_CHARS`].
pub fn room_name(form: &Form) -> Result<String, AppError> {
    let name = form.get("room[name]").unwrap_or("").trim();
    if crate::web::fields::is_blank(name) {
        return Err(AppError::Unprocessable("room[name] can't be blank".into()));
    }
    crate::web::fields::refuse_unsafe_chars("room[name]", name)?;
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(AppError::Unprocessable(format!(
            "room[name] is longer than {MAX_NAME_CHARS} characters"
        )));
    }
    Ok(name.to_owned())
}

/// The ids of `user_ids[]` (or `user_ids`), deduplicated, ascending. 422 for a value that is
/// not a decimal id or for more than `max` values.
pub fn user_ids(form: &Form, max: usize) -> Result<Vec<i64>, AppError> {
    let raw: Vec<&str> = form
        .get_all("user_ids[]")
        .chain(form.get_all("user_ids"))
        .filter(|v| !v.is_empty())
        .collect();
    if raw.len() > max {
        return Err(AppError::Unprocessable(format!(
            "at most {max} user_ids per request"
        )));
    }
    let mut ids = raw
        .iter()
        .map(|v| v.trim().parse::<i64>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| AppError::Unprocessable("user_ids must be user ids".into()))?;
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// Which rooms a route reaches: Campfire's `room_scope` of each controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Open and closed rooms (`Rooms::OpensController`, `Rooms::ClosedsController`: they
    /// convert into each other; direct rooms never do).
    Shared,
    /// Direct rooms (`Rooms::DirectsController`).
    Direct,
    /// Any room (`RoomsController`).
    Any,
}

impl Scope {
    fn admits(self, room: &Room) -> bool {
        match self {
            Self::Shared => room.kind != crate::db::RoomKind::Direct,
            Self::Direct => room.kind == crate::db::RoomKind::Direct,
            Self::Any => true,
        }
    }
}

/// What Campfire's `set_room` answers when the room is not among the user's (or not in the
/// route's scope): a redirect to `/` ("Room not found or inaccessible").
pub fn not_found_or_inaccessible() -> Response {
    found("/")
}

/// The room `raw_id` when `user` is a member and the room is in `scope`; `None` otherwise
/// (answer [`not_found_or_inaccessible`]). A malformed id is a 404.
pub async fn find_room(
    db: &Db,
    user: &User,
    raw_id: &str,
    scope: Scope,
) -> Result<Option<Room>, AppError> {
    let id = parse_id(raw_id)?;
    Ok(rooms::find_for_member(&db.pool, id, user.id)
        .await?
        .filter(|room| scope.admits(room)))
}

/// An open or closed room of the path's `{room_id}`, found as [`find_room`] finds it in
/// [`Scope::Shared`], with the signed-in user: what the shared rooms' `show`, `edit` and
/// `update` act on.
///
/// Rejections: 401 without a signed-in user; 404 for a malformed id; 302 to `/` for a room the
/// user is not in and a direct room ([`not_found_or_inaccessible`]); 500 when the database
/// fails.
#[derive(Clone, Debug)]
pub struct SharedRoom {
    /// The signed-in user.
    pub user: User,
    /// The room, among the user's own.
    pub room: Room,
}

impl<S> FromRequestParts<S> for SharedRoom
where
    S: Send + Sync,
    Db: axum::extract::FromRef<S>,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let user = parts
            .extensions
            .get::<Ctx>()
            .and_then(|ctx| ctx.user.clone())
            .ok_or_else(|| AppError::Unauthorized.into_response())?;
        let Path(raw_id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| AppError::NotFound.into_response())?;
        let db = <Db as axum::extract::FromRef<S>>::from_ref(state);
        match find_room(&db, &user, &raw_id, Scope::Shared).await {
            Ok(Some(room)) => Ok(Self { user, room }),
            Ok(None) => Err(not_found_or_inaccessible()),
            Err(e) => Err(e.into_response()),
        }
    }
}

/// Campfire's `User#can_administer?(room)`: administrators and the room's creator; for a
/// direct room, every member (`Rooms::DirectsController#ensure_can_administer`). The caller
/// has checked membership.
pub async fn can_administer(db: &Db, user: &User, room: &Room) -> Result<bool, AppError> {
    if room.kind.is_thread() {
        // Deleting a thread deletes everyone's replies: administrators only.
        return Ok(user.role == crate::db::Role::Administrator);
    }
    if user.role == crate::db::Role::Administrator || room.kind == crate::db::RoomKind::Direct {
        return Ok(true);
    }
    Ok(rooms::creator_id(&db.pool, room.id).await? == Some(user.id))
}

/// The settings page of a room: `/rooms/{opens|closeds|directs}/{id}/edit`; a thread has none
/// (its own page).
pub fn edit_path(room: &Room) -> String {
    let plural = match room.kind {
        crate::db::RoomKind::Open => "opens",
        crate::db::RoomKind::Closed => "closeds",
        crate::db::RoomKind::Direct => "directs",
        crate::db::RoomKind::Thread => return format!("/rooms/{}", room.id),
    };
    format!("/rooms/{plural}/{}/edit", room.id)
}

/// The people a form offers, `selected` checked (and the viewer always).
pub async fn people(db: &Db, user: &User, selected: &[i64]) -> Result<Vec<Person>, AppError> {
    Ok(crate::db::users::active_ordered(&db.pool)
        .await?
        .into_iter()
        .map(|(id, name)| Person {
            id,
            selected: id == user.id || selected.contains(&id),
            name,
        })
        .collect())
}

/// Renders a room form page.
pub fn form_page(form: &RoomForm<'_>) -> Result<Response, AppError> {
    Ok(Html(askama::Template::render(form)?).into_response())
}

/// `DELETE /rooms/{room_id}` (Campfire's `RoomsController#destroy`): members who may
/// administer the room (administrators, the creator; anyone in a direct room) delete it with
/// its messages; everyone's sidebar loses it (`remove` on `rooms`) and every former member's
/// open subscriptions to it end. 302 to `/`; 403 for a member who may not; 302 to `/` for a
/// non-member (as Campfire's `set_room`); 401 when signed out.
pub async fn destroy(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    State(storage): State<Arc<Storage>>,
    Extension(ctx): Extension<Ctx>,
    Path(room_id): Path<String>,
) -> Result<Response, AppError> {
    destroy_in(&db, &delivery, &storage, &ctx, &room_id, Scope::Any).await
}

/// `DELETE /rooms/{room_id}` within `scope` (also `DELETE /rooms/directs/{id}`).
pub async fn destroy_in(
    db: &Db,
    delivery: &Delivery,
    storage: &Storage,
    ctx: &Ctx,
    room_id: &str,
    scope: Scope,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let Some(room) = find_room(db, user, room_id, scope).await? else {
        return Ok(not_found_or_inaccessible());
    };
    if !can_administer(db, user, &room).await? {
        return Err(AppError::Forbidden);
    }
    if let Some((room, former)) =
        memberships::destroy_room(&db.pool, &delivery.broadcaster, room.id).await?
    {
        crate::broadcasts::room_removed(&delivery.broadcaster, &room);
        tracing::info!(room_id = room.id, members = former.len(), "room destroyed");
        // The room's messages went with it; their files go now.
        crate::web::files::purge_orphans(db, storage).await;
    }
    Ok(found("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_are_parsed_deduplicated_and_limited() {
        let form = Form::parse(b"user_ids%5B%5D=3&user_ids%5B%5D=2&user_ids%5B%5D=3").unwrap();
        assert_eq!(user_ids(&form, 10).unwrap(), vec![2, 3]);
        assert!(user_ids(&form, 2).is_err());
        let bad = Form::parse(b"user_ids%5B%5D=x").unwrap();
        assert!(user_ids(&bad, 10).is_err());
    }

    #[test]
    fn names_are_trimmed_and_limited() {
        let ok = Form::parse(b"room%5Bname%5D=+Hi+").unwrap();
        assert_eq!(room_name(&ok).unwrap(), "Hi");
        let blank = Form::parse(b"room%5Bname%5D=+").unwrap();
        assert!(room_name(&blank).is_err());
        let long = Form::parse(
            loadgen::http::form_urlencode(&[("room[name]", &"x".repeat(MAX_NAME_CHARS + 1))])
                .as_bytes(),
        )
        .expect("a valid form");
        assert!(room_name(&long).is_err());
    }
}
