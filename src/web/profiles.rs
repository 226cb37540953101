//! Profiles: `GET /users/{id}` (the page the avatar link opens, Campfire's
//! `UsersController#show`: a Ping button that opens the direct room; administrators also see
//! the e-mail address and the transfer link) and the signed-in user's own profile at
//! `/users/me/profile` (Campfire's `Users::ProfilesController`: name, bio, e-mail address and
//! password; every membership with its bell; the user's own transfer link; the avatar, uploaded
//! to `/users/me/avatar` (`super::avatars`), or the initials).
//!
//! Changing the e-mail address or the password needs the current password as
//! `user[password_challenge]` (Rails' `has_secure_password` convention); a new password ends
//! every other session of the user, and their cable connections. Each such attempt counts
//! against the sign-in limit of the client's address (`--login-rate-limit`, the bucket
//! `POST /session` uses), so a stolen session cannot guess the password faster than the
//! sign-in form can.

use crate::db::Db;
use crate::pubsub::Delivery;
use crate::rate_limit::Limits;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::context::Ctx;
use super::error::AppError;
use super::extract::{parse_id, SignedInPage};
use super::fields::{self, MAX_BIO_CHARS, MAX_NAME_CHARS};
use super::flash::{found_with, Notice};
use super::links::{origin, transfer_link, ShareLink};
use super::sessions::{verify_password, MAX_PASSWORD_BYTES};
use crate::db::users::{self, CredentialsChange, Profile, ProfileMembership, User};

/// The hue of a user's initials avatar (the message partial's formula).
pub fn avatar_hue(user_id: i64) -> u32 {
    (user_id.unsigned_abs() * 47 % 360) as u32
}

/// The avatar URL of `user_id`, when they have one.
///
/// # Errors
/// Database failures.
pub async fn avatar_url(
    storage: &crate::storage::Storage,
    pool: &sqlx::SqlitePool,
    user_id: i64,
) -> Result<Option<String>, AppError> {
    Ok(storage
        .avatars
        .get(pool, user_id)
        .await?
        .map(|v| crate::storage::avatar_path(user_id, Some(v))))
}

handles_of! {
    /// What the profile pages use: the settings, the database, the cookie keys (a new
    /// password ends the other sessions) and the files (the avatar).
    pub struct ProfileHandles {
        /// The settings.
        config: std::sync::Arc<crate::config::Config>,
        /// The database.
        db: crate::db::Db,
        /// The cookie jar's keys.
        keys: crate::rails::Keys,
        /// The files.
        storage: std::sync::Arc<crate::storage::Storage>,
    }
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
    /// The avatar's URL, when there is one (else the initials are drawn).
    pub avatar: Option<String>,
    /// Whether the viewer is the user shown.
    pub is_self: bool,
    /// Whether the viewer may ban or unban the user shown (administrators, for people
    /// other than themselves).
    pub can_ban: bool,
    /// Whether the Ping button (open the direct room) shows: someone else, active.
    pub can_ping: bool,
    /// The e-mail address, for administrators looking at someone else.
    pub email_address: Option<&'a str>,
    /// The transfer link, for administrators looking at another person.
    pub transfer: Option<ShareLink>,
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
    /// The avatar's URL, when there is one (else the initials are drawn).
    pub avatar: Option<String>,
    /// Every membership with its involvement.
    pub memberships: &'a [ProfileMembership],
    /// The user's own transfer link (sign in on another device).
    pub transfer: ShareLink,
    /// The shortest new password accepted, in bytes.
    pub min_password_bytes: usize,
    /// The digest settings (with mail on).
    pub digest: Option<super::digest_settings::DigestPanel>,
}

/// The shortest new password accepted, in bytes.
pub const MIN_PASSWORD_BYTES: usize = 8;

/// `GET /users/{user_id}`: any user's profile, for signed-in people (302 to the sign-in
/// form otherwise); 404 for an unknown id.
pub async fn show(
    State(state): State<ProfileHandles>,
    SignedInPage { ctx, user: viewer }: SignedInPage,
    headers: HeaderMap,
    Path(user_id): Path<String>,
) -> Result<Response, AppError> {
    let profile = users::profile(&state.db.pool, parse_id(&user_id)?)
        .await?
        .ok_or(AppError::NotFound)?;
    let token = ctx.csrf_token();
    let is_self = viewer.id == profile.user.id;
    let administers = viewer.role == crate::db::Role::Administrator && !is_self;
    let person = profile.user.role != crate::db::Role::Bot;
    let page = ProfilePage {
        csrf_token: &token,
        hue: avatar_hue(profile.user.id),
        initials: crate::render::initials(&profile.user.name),
        avatar: avatar_url(&state.storage, &state.db.pool, profile.user.id).await?,
        is_self,
        can_ban: administers && person,
        can_ping: !is_self && profile.user.is_active(),
        email_address: profile
            .user
            .email_address
            .as_deref()
            .filter(|_| administers),
        transfer: (administers && person && profile.user.is_active()).then(|| {
            transfer_link(
                &state.keys,
                &origin(&ctx, &headers, &state.config),
                profile.user.id,
            )
        }),
        profile: &profile,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `GET /users/me/profile`: the signed-in user's edit form (302 to the sign-in form
/// otherwise).
pub async fn edit(
    State(state): State<ProfileHandles>,
    State(desk): State<super::account::mail::MailDesk>,
    SignedInPage { ctx, user }: SignedInPage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let profile = users::profile(&state.db.pool, user.id)
        .await?
        .ok_or(AppError::Unauthorized)?;
    let memberships = users::memberships(&state.db.pool, user.id).await?;
    let token = ctx.csrf_token();
    let page = EditProfilePage {
        csrf_token: &token,
        user: &profile.user,
        bio: &profile.bio,
        hue: avatar_hue(user.id),
        initials: crate::render::initials(&profile.user.name),
        avatar: avatar_url(&state.storage, &state.db.pool, user.id).await?,
        memberships: &memberships,
        transfer: transfer_link(&state.keys, &origin(&ctx, &headers, &state.config), user.id),
        min_password_bytes: MIN_PASSWORD_BYTES,
        digest: super::digest_settings::panel(&desk, user.id).await?,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `PATCH`/`PUT /users/me/profile` with `user[name]` (1-100 characters), `user[bio]` (at most
/// 1,000), and optionally `user[email_address]` and `user[password]` (8-72 bytes; empty keeps
/// the password), which need `user[password_challenge]`, the current password. Saves
/// everything or nothing and answers 302 to `/users/me/profile` with the "Saved" notice. A
/// new password ends the user's other sessions (their cable connections close). 401 when
/// signed out; 422 for a blank name, an oversize field, a bad e-mail address or one another user has, a new
/// password out of bounds, or a missing or wrong current password; 429 with `Retry-After`,
/// nothing changed, for a challenge past the sign-in limit of the client's address.
pub async fn update(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    State(limits): State<Limits>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let name = fields::required(&ctx.form, "user[name]", MAX_NAME_CHARS)?;
    let bio = fields::optional(&ctx.form, "user[bio]", MAX_BIO_CHARS)?;
    let email = match ctx.form.get("user[email_address]") {
        Some(_) => Some(fields::email(&ctx.form, "user[email_address]")?),
        None => None,
    }
    .filter(|e| Some(e.as_str()) != user.email_address.as_deref());
    let password = ctx
        .form
        .get("user[password]")
        .filter(|p| !p.is_empty())
        .map(str::to_owned);
    if let Some(p) = &password {
        if p.len() < MIN_PASSWORD_BYTES || p.len() > MAX_PASSWORD_BYTES {
            return Err(AppError::Unprocessable(format!(
                "user[password] must be {MIN_PASSWORD_BYTES}-{MAX_PASSWORD_BYTES} bytes"
            )));
        }
    }
    if email.is_some() || password.is_some() {
        if let Err(wait) = limits.login.attempt(ctx.ip, std::time::Instant::now()) {
            tracing::info!(ip = %ctx.ip, user_id = user.id, "password challenge over the sign-in limit");
            return Err(AppError::RateLimited(wait));
        }
        let challenge = ctx.form.get("user[password_challenge]").unwrap_or("");
        // A person who never had a password (brought over by `hearth import slack`, signed in
        // through a transfer link) sets the first one without a challenge, as Campfire's
        // profile form lets anyone signed in do.
        let genuine = match users::password_digest(&db.pool, user.id).await? {
            None => true,
            Some(digest) => {
                !challenge.is_empty()
                    && challenge.len() <= MAX_PASSWORD_BYTES
                    && verify_password(challenge.to_owned(), digest).await
            }
        };
        if !genuine {
            return Err(AppError::Unprocessable(
                "user[password_challenge] is invalid".into(),
            ));
        }
    }
    let digest = match &password {
        Some(p) => Some(super::sessions::hash_password(p).await?),
        None => None,
    };
    if email.is_some() || digest.is_some() {
        let change = users::update_credentials(
            &db.pool,
            user.id,
            email.as_deref(),
            digest.as_deref(),
            ctx.session_token.as_deref(),
        )
        .await?;
        match change {
            CredentialsChange::EmailTaken => {
                return Err(AppError::Unprocessable(
                    "user[email_address] has already been taken".into(),
                ))
            }
            CredentialsChange::Done { sessions_ended } => {
                for token in &sessions_ended {
                    super::users::close_session(&delivery, user.id, token);
                }
                if !sessions_ended.is_empty() {
                    tracing::info!(
                        user_id = user.id,
                        sessions = sessions_ended.len(),
                        "password changed: other sessions ended"
                    );
                }
            }
        }
    }
    users::update_profile(&db.pool, user.id, &name, &bio).await?;
    Ok(found_with("/users/me/profile", Notice::Saved, ctx.secure))
}
