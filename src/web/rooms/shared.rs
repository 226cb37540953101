//! Open and closed rooms ("shared" rooms, listed under `shared_rooms`): the new/create/
//! edit/update flow both kinds go through, parameterized by the kind the route names
//! (Campfire's `Rooms::OpensController` and `Rooms::ClosedsController`, which convert a room
//! of the other kind into their own on update).

use crate::db::Db;
use crate::pubsub::Delivery;
use axum::response::Response;

use super::settings::{self, SharedRoom};
use crate::db::memberships;
use crate::render::RoomForm;
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::respond::found;

/// A shared room's kind as its routes spell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `open`: everyone is a member (`/rooms/opens`).
    Open,
    /// `closed`: a chosen member list (`/rooms/closeds`).
    Closed,
}

impl Kind {
    /// The `rooms.kind` value.
    pub fn room_kind(self) -> crate::db::RoomKind {
        match self {
            Self::Open => crate::db::RoomKind::Open,
            Self::Closed => crate::db::RoomKind::Closed,
        }
    }

    /// The kind a room of this one converts into.
    #[must_use]
    pub fn other(self) -> Self {
        match self {
            Self::Open => Self::Closed,
            Self::Closed => Self::Open,
        }
    }

    fn path(self) -> &'static str {
        match self {
            Self::Open => "/rooms/opens",
            Self::Closed => "/rooms/closeds",
        }
    }
}

/// Campfire's `DEFAULT_ROOM_NAME` of a new room's form.
pub const DEFAULT_ROOM_NAME: &str = "New room";

/// Campfire's `ensure_permission_to_create_rooms`: while the account restricts room creation
/// to administrators, anyone else gets 403 (direct rooms are not restricted).
///
/// # Errors
/// 403 as said; database failures.
pub async fn ensure_permission_to_create_rooms(
    db: &Db,
    user: &crate::db::users::User,
) -> Result<(), AppError> {
    if !may_create_rooms(&db.account_settings, &db.pool, user).await? {
        return Err(AppError::Forbidden);
    }
    Ok(())
}

/// Whether `user` may create open and closed rooms: administrators always, anyone else while
/// the account does not restrict room creation to administrators (what the sidebar's "+" and
/// "New closed room" are shown for).
///
/// # Errors
/// Database failures.
pub async fn may_create_rooms(
    account_settings: &crate::db::accounts::SettingsCache,
    pool: &sqlx::SqlitePool,
    user: &crate::db::users::User,
) -> Result<bool, AppError> {
    if user.role == crate::db::Role::Administrator {
        return Ok(true);
    }
    let settings = account_settings.get(pool).await?;
    Ok(!settings.restrict_room_creation_to_administrators)
}

/// `GET /rooms/{opens|closeds}/new`: the form (signed-in users; 403 for members while room
/// creation is restricted to administrators).
pub async fn new_page(db: &Db, ctx: &Ctx, kind: Kind) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    ensure_permission_to_create_rooms(db, user).await?;
    let token = ctx.csrf_token();
    let people = match kind {
        Kind::Closed => settings::people(db, user, &[]).await?,
        Kind::Open => Vec::new(),
    };
    let title = match kind {
        Kind::Open => "New room",
        Kind::Closed => "New closed room",
    };
    settings::form_page(&RoomForm {
        csrf_token: &token,
        title,
        action: kind.path(),
        method: "post",
        name: Some(DEFAULT_ROOM_NAME),
        max_name_chars: settings::MAX_NAME_CHARS,
        kind: kind.room_kind(),
        people,
        user_id: user.id,
        editable: true,
        submit: "Create room",
        destroy_action: None,
        kind_switch: Some(format!("{}/new", kind.other().path())),
        back: "/",
    })
}

/// `POST /rooms/{opens|closeds}`: creates the room (an open one for everyone, a closed one
/// for the creator and `user_ids[]`), broadcasts it to the sidebars and redirects to it (302).
/// 422 for a bad name or member list; 401 when signed out; 403 for members while room
/// creation is restricted to administrators.
pub async fn create(
    db: &Db,
    delivery: &Delivery,
    ctx: &Ctx,
    kind: Kind,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    ensure_permission_to_create_rooms(db, user).await?;
    let name = settings::room_name(&ctx.form)?;
    let member_ids = match kind {
        Kind::Closed => settings::user_ids(&ctx.form, settings::MAX_MEMBER_IDS)?,
        Kind::Open => Vec::new(),
    };
    let (room, members) = memberships::create_room(
        &db.pool,
        &delivery.broadcaster,
        kind.room_kind(),
        &name,
        user.id,
        &member_ids,
    )
    .await?;
    crate::broadcasts::shared_room_created(&delivery.broadcaster, &room, &members)?;
    Ok(found(&format!("/rooms/{}", room.id)))
}

/// `GET /rooms/{opens|closeds}/{id}/edit`: the room's settings for its members (the form can
/// be submitted by those who may administer it); a direct room or a non-member: 302 to `/`.
pub async fn edit_page(
    db: &Db,
    ctx: &Ctx,
    SharedRoom { user, room }: SharedRoom,
    kind: Kind,
) -> Result<Response, AppError> {
    let editable = settings::can_administer(db, &user, &room).await?;
    let people = match kind {
        Kind::Closed => {
            let members = crate::db::rooms::member_ids(&db.pool, room.id).await?;
            settings::people(db, &user, &members).await?
        }
        Kind::Open => Vec::new(),
    };
    let token = ctx.csrf_token();
    let action = format!("{}/{}", kind.path(), room.id);
    let back = format!("/rooms/{}", room.id);
    let title = format!("Settings of {}", room.display_name());
    settings::form_page(&RoomForm {
        csrf_token: &token,
        title: &title,
        action: &action,
        method: "patch",
        name: Some(room.display_name()),
        max_name_chars: settings::MAX_NAME_CHARS,
        kind: kind.room_kind(),
        people,
        user_id: user.id,
        editable,
        submit: "Save changes",
        destroy_action: editable.then(|| format!("/rooms/{}", room.id)),
        kind_switch: editable.then(|| format!("{}/{}/edit", kind.other().path(), room.id)),
        back: &back,
    })
}

/// `PATCH`/`PUT /rooms/{opens|closeds}/{id}`: renames the room and makes it open (everyone)
/// or closed (`user_ids[]` plus the editor), revoking and granting memberships; broadcasts
/// the change and ends revoked members' subscriptions. 302 to the room (with the "Saved"
/// notice); 403 for a member
/// who may not administer it; 302 to `/` for a direct room or a non-member; 422 for bad input.
pub async fn update(
    db: &Db,
    delivery: &Delivery,
    ctx: &Ctx,
    SharedRoom { user, room }: SharedRoom,
    kind: Kind,
) -> Result<Response, AppError> {
    if !settings::can_administer(db, &user, &room).await? {
        return Err(AppError::Forbidden);
    }
    let name = settings::room_name(&ctx.form)?;
    let member_ids = match kind {
        Kind::Closed => settings::user_ids(&ctx.form, settings::MAX_MEMBER_IDS)?,
        Kind::Open => Vec::new(),
    };
    let was = room.kind;
    let Some((room, revision)) = memberships::update_room(
        &db.pool,
        &delivery.broadcaster,
        room.id,
        kind.room_kind(),
        &name,
        user.id,
        &member_ids,
    )
    .await?
    else {
        return Ok(settings::not_found_or_inaccessible());
    };
    crate::broadcasts::shared_room_updated(&delivery.broadcaster, &room, was, &revision)?;
    Ok(crate::web::flash::found_with(
        &format!("/rooms/{}", room.id),
        crate::web::flash::Notice::Saved,
        ctx.secure,
    ))
}
