//! Profiles: `GET /users/{id}` (the page the avatar link opens, Campfire's
//! `UsersController#show`) and the signed-in user's own profile at `/users/me/profile`
//! (Campfire's `Users::ProfilesController`: name and bio; the avatar is the initials).

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::context::Ctx;
use super::error::AppError;
use super::extract::parse_id;
use super::fields::{self, MAX_BIO_CHARS, MAX_NAME_CHARS};
use super::respond::found;
use crate::db::users::{self, Profile, User};
use crate::state::SharedState;

/// The hue of a user's initials avatar (the message partial's formula).
pub fn avatar_hue(user_id: i64) -> u32 {
    (user_id.unsigned_abs() * 47 % 360) as u32
}

/// A profile page (`templates/users/show.html`).
#[derive(Template, Debug)]
#[template(path = "users/show.html")]
pub struct ProfilePage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The user shown.
    pub profile: &'a Profile,
    /// The avatar's hue.
    pub hue: u32,
    /// The avatar's initials.
    pub initials: String,
    /// Whether the viewer is the user shown.
    pub is_self: bool,
    /// Whether the viewer may ban or unban the user shown (administrators, for people
    /// other than themselves).
    pub can_ban: bool,
}

/// The edit form of one's own profile (`templates/users/profiles/edit.html`).
#[derive(Template, Debug)]
#[template(path = "users/profiles/edit.html")]
pub struct EditProfilePage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The signed-in user.
    pub user: &'a User,
    /// The bio as stored.
    pub bio: &'a str,
    /// The avatar's hue.
    pub hue: u32,
    /// The avatar's initials.
    pub initials: String,
}

/// `GET /users/{user_id}`: any user's profile, for signed-in people (302 to the sign-in
/// form otherwise); 404 for an unknown id.
pub async fn show(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(user_id): Path<String>,
) -> Result<Response, AppError> {
    let Some(viewer) = &ctx.user else {
        return Ok(found("/session/new"));
    };
    let profile = users::profile(&state.pool, parse_id(&user_id)?)
        .await?
        .ok_or(AppError::NotFound)?;
    let token = ctx.csrf_token();
    let is_self = viewer.id == profile.user.id;
    let page = ProfilePage {
        csrf_token: &token,
        hue: avatar_hue(profile.user.id),
        initials: crate::render::initials(&profile.user.name),
        is_self,
        can_ban: viewer.role == "administrator" && !is_self && profile.user.role != "bot",
        profile: &profile,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `GET /users/me/profile`: the signed-in user's edit form (302 to the sign-in form
/// otherwise).
pub async fn edit(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let Some(user) = &ctx.user else {
        return Ok(found("/session/new"));
    };
    let profile = users::profile(&state.pool, user.id)
        .await?
        .ok_or(AppError::Unauthorized)?;
    let token = ctx.csrf_token();
    let page = EditProfilePage {
        csrf_token: &token,
        user: &profile.user,
        bio: &profile.bio,
        hue: avatar_hue(user.id),
        initials: crate::render::initials(&profile.user.name),
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `PATCH`/`PUT /users/me/profile` with `user[name]` (1-100 characters) and `user[bio]`
/// (at most 1,000): saves both and answers 302 to `/users/me/profile`. 401 when signed out,
/// 422 for a blank name or an oversize field (nothing saved).
pub async fn update(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let name = fields::required(&ctx.form, "user[name]", MAX_NAME_CHARS)?;
    let bio = fields::optional(&ctx.form, "user[bio]", MAX_BIO_CHARS)?;
    users::update_profile(&state.pool, user.id, &name, &bio).await?;
    Ok(found("/users/me/profile"))
}
