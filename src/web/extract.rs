//! Extractors that resolve what a route's path names, scoped to the signed-in user.
//!
//! [`Admin`] is Campfire's `ensure_can_administer` ([`AdminPage`] for the pages it guards);
//! [`SignedInPage`] a page only a signed-in user sees (`require_authentication`); [`Id`] a path's one numeric id, 404 for
//! anything else. [`MemberRoom`] is Campfire's `RoomScoped` concern (`@room = Current.user.rooms.find(
//! params[:room_id])`): a room is found only among the user's own, so a room the user is not
//! in answers exactly like one that does not exist (404).

use std::collections::HashMap;

use axum::extract::{FromRef, FromRequestParts, Path};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use super::context::Ctx;
use super::error::AppError;
use super::respond::found;
use crate::db::messages::{self, Message};
use crate::db::rooms::{self, Room};
use crate::db::users::User;
use crate::db::Db;

/// Parses an id from a path or query segment; anything but a decimal `i64` is a 404 (Rails'
/// `find` raises `RecordNotFound` for such ids).
pub fn parse_id(raw: &str) -> Result<i64, AppError> {
    raw.parse::<i64>().map_err(|_| AppError::NotFound)
}

/// The request of a signed-in administrator (Campfire's `ensure_can_administer`): its
/// [`Ctx`], whose `user` is that administrator.
///
/// Rejections: 401 without a signed-in user, 403 for anyone else.
#[derive(Clone, Debug)]
pub struct Admin(pub Ctx);

impl<S: Send + Sync> FromRequestParts<S> for Admin {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let ctx = parts
            .extensions
            .get::<Ctx>()
            .ok_or(AppError::Unauthorized)?;
        ctx.require_administrator()?;
        Ok(Self(ctx.clone()))
    }
}

/// The page request of a signed-in administrator: [`Admin`] for a page a browser opens, so a
/// signed-out visitor is sent to sign in (302 to `/session/new`) rather than shown a 401.
///
/// Rejections: 302 to `/session/new` without a signed-in user, 403 for anyone else.
#[derive(Clone, Debug)]
pub struct AdminPage(pub Ctx);

impl<S: Send + Sync> FromRequestParts<S> for AdminPage {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let ctx = parts.extensions.get::<Ctx>();
        let Some(ctx) = ctx.filter(|ctx| ctx.user.is_some()) else {
            return Err(found("/session/new"));
        };
        ctx.require_administrator()
            .map_err(IntoResponse::into_response)?;
        Ok(Self(ctx.clone()))
    }
}

/// The page request of a signed-in user: its [`Ctx`] and that user, for a page a browser
/// opens, so a signed-out visitor is sent to sign in.
///
/// Rejection: 302 to `/session/new` without a signed-in user.
#[derive(Clone, Debug)]
pub struct SignedInPage {
    /// The request's context.
    pub ctx: Ctx,
    /// The signed-in user (`Current.user`).
    pub user: User,
}

impl<S: Send + Sync> FromRequestParts<S> for SignedInPage {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let ctx = parts.extensions.get::<Ctx>();
        let Some((ctx, user)) = ctx.and_then(|ctx| Some((ctx, ctx.user.as_ref()?))) else {
            return Err(found("/session/new"));
        };
        Ok(Self {
            user: user.clone(),
            ctx: ctx.clone(),
        })
    }
}

/// The one id a route's path names (`/users/{user_id}`), as [`parse_id`] reads it.
///
/// Rejection: 404 for anything but a decimal `i64`, as Rails' `find` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Id(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for Id {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| AppError::NotFound)?;
        parse_id(&raw).map(Self)
    }
}

/// The signed-in user and the room of the path's `{room_id}`, when the user is a member.
///
/// Rejections: 401 without a signed-in user, 404 for a malformed id, an unknown room or a
/// room the user is not in; 500 when the database fails.
#[derive(Clone, Debug)]
pub struct MemberRoom {
    /// The signed-in user.
    pub user: User,
    /// The room, found among the user's memberships.
    pub room: Room,
}

impl<S> FromRequestParts<S> for MemberRoom
where
    S: Send + Sync,
    Db: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let (user, room) = member_room(parts, &Db::from_ref(state), Lookup::Fresh).await?;
        Ok(Self { user, room })
    }
}

/// [`MemberRoom`] answered through the access cache (`crate::db::auth_cache`), for the post
/// path, which asks it for every message: membership is as current as for a cable
/// subscription (any access change made through this server applies at once), and the room's
/// `updated_at` may be up to `--auth-cache-seconds` old, so routes that show the room itself
/// use [`MemberRoom`]. Same rejections.
#[derive(Clone, Debug)]
pub struct CachedMemberRoom {
    /// The signed-in user.
    pub user: User,
    /// The room, found among the user's memberships.
    pub room: Room,
}

impl<S> FromRequestParts<S> for CachedMemberRoom
where
    S: Send + Sync,
    Db: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let (user, room) = member_room(parts, &Db::from_ref(state), Lookup::Cached).await?;
        Ok(Self { user, room })
    }
}

/// The signed-in user, the message of the path's `{message_id}` and its room, when the user
/// is a member of that room (`/messages/{message_id}/boosts…`).
///
/// Rejections: 401 without a signed-in user, 404 for a malformed id, an unknown message or a
/// message of a room the user is not in; 500 when the database fails.
#[derive(Clone, Debug)]
pub struct MemberMessage {
    /// The signed-in user.
    pub user: User,
    /// The message.
    pub message: Message,
    /// Its room, found among the user's memberships.
    pub room: Room,
}

impl<S> FromRequestParts<S> for MemberMessage
where
    S: Send + Sync,
    Db: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let user = signed_in_user(parts)?;
        let id = parse_id(&path_param(parts, "message_id").await?)?;
        let db = Db::from_ref(state);
        let message = messages::find_any(&db.pool, id)
            .await?
            .ok_or(AppError::NotFound)?;
        let room = rooms::find_for_member(&db.pool, message.room_id, user.id)
            .await?
            .ok_or(AppError::NotFound)?;
        Ok(Self {
            user,
            message,
            room,
        })
    }
}

/// The message of the path's `{message_id}` in the member's room of `{room_id}`, when the
/// signed-in user may change it: its creator or an administrator (Campfire's
/// `ensure_can_administer` on `MessagesController#edit`, `update` and `destroy`).
///
/// Rejections: those of [`MemberRoom`]; 404 for a malformed id or a message not in the room;
/// 403 for someone else's message and a user who is no administrator.
#[derive(Clone, Debug)]
pub struct EditableMessage {
    /// The room, found among the user's memberships.
    pub room: Room,
    /// The message.
    pub message: Message,
}

impl<S> FromRequestParts<S> for EditableMessage
where
    S: Send + Sync,
    Db: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let MemberRoom { user, room } = MemberRoom::from_request_parts(parts, state).await?;
        let id = parse_id(&path_param(parts, "message_id").await?)?;
        let message = messages::find(&Db::from_ref(state).pool, room.id, id)
            .await?
            .ok_or(AppError::NotFound)?;
        if message.creator_id != user.id && user.role != crate::db::Role::Administrator {
            return Err(AppError::Forbidden);
        }
        Ok(Self { room, message })
    }
}

/// The signed-in user of the request, else 401.
fn signed_in_user(parts: &Parts) -> Result<User, AppError> {
    parts
        .extensions
        .get::<Ctx>()
        .and_then(|ctx| ctx.user.clone())
        .ok_or(AppError::Unauthorized)
}

/// The path's parameter `name`, else 404.
async fn path_param(parts: &mut Parts, name: &str) -> Result<String, AppError> {
    let Path(mut params) = Path::<HashMap<String, String>>::from_request_parts(parts, &())
        .await
        .map_err(|_| AppError::NotFound)?;
    params.remove(name).ok_or(AppError::NotFound)
}

/// Where [`member_room`] looks the membership up.
#[derive(Clone, Copy)]
enum Lookup {
    /// SQLite, every time.
    Fresh,
    /// The access cache.
    Cached,
}

/// The signed-in user (else 401) and the path's `{room_id}` among the user's rooms (else 404).
async fn member_room(parts: &mut Parts, db: &Db, lookup: Lookup) -> Result<(User, Room), AppError> {
    let user = signed_in_user(parts)?;
    let id = parse_id(&path_param(parts, "room_id").await?)?;
    let room = match lookup {
        Lookup::Fresh => rooms::find_for_member(&db.pool, id, user.id).await?,
        Lookup::Cached => db.auth_cache.find_for_member(&db.pool, id, user.id).await?,
    };
    Ok((user, room.ok_or(AppError::NotFound)?))
}
