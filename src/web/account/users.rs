//! `GET /account/users` (the people, with the join link), `PATCH /account/users/{id}` (role),
//! `DELETE /account/users/{id}` (deactivate) and `POST /account/join_code` (a new join
//! code): Campfire's `Accounts::UsersController` and `Accounts::JoinCodesController`.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use crate::db::users::User;
use crate::db::{accounts, users};
use crate::db::{Role, Status};
use crate::state::SharedState;
use crate::web::error::AppError;
use crate::web::extract::{Admin, AdminPage, Id};
use crate::web::respond::found;
use crate::web::users::{disconnect, guard_error};

/// The roles an administrator can give a person.
pub const ROLES: [Role; 2] = [Role::Member, Role::Administrator];

/// The people page (`templates/accounts/users/index.html`).
#[derive(Template, Debug)]
#[template(path = "accounts/users/index.html")]
pub struct PeoplePage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The account's join code.
    pub join_code: &'a str,
    /// Every person, by name.
    pub people: &'a [User],
}

/// `GET /account/users`: the people and the join link.
pub async fn index(
    State(state): State<SharedState>,
    AdminPage(ctx): AdminPage,
) -> Result<Response, AppError> {
    let account = accounts::find(&state.pool)
        .await?
        .ok_or(AppError::NotFound)?;
    let people = users::people(&state.pool).await?;
    let token = ctx.csrf_token();
    let page = PeoplePage {
        csrf_token: &token,
        join_code: &account.join_code,
        people: &people,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `PATCH /account/users/{user_id}` with `user[role]` (`member` or `administrator`): 302 to
/// `/account/users`. 422 for another role, 404 for an unknown user or a bot, 422 when it
/// would demote the last active administrator.
pub async fn update(
    State(state): State<SharedState>,
    Admin(ctx): Admin,
    Id(user_id): Id,
) -> Result<Response, AppError> {
    let role = ctx.form.get("user[role]").unwrap_or("");
    let role = role
        .parse::<Role>()
        .ok()
        .filter(|r| ROLES.contains(r))
        .ok_or_else(|| AppError::Unprocessable(format!("unknown role {role:?}")))?;
    guard_error(users::set_role(&state.pool, user_id, role).await?)?;
    Ok(found("/account/users"))
}

/// `DELETE /account/users/{user_id}`: deactivates the person (sessions deleted, cable
/// connections closed) and answers 302 to `/account/users`. 404 for an unknown user or a
/// bot, 422 for the last active administrator.
pub async fn destroy(
    State(state): State<SharedState>,
    _: Admin,
    Id(user_id): Id,
) -> Result<Response, AppError> {
    guard_error(users::set_status(&state.pool, user_id, Status::Deactivated).await?)?;
    disconnect(&state, user_id);
    Ok(found("/account/users"))
}

/// `POST /account/join_code`: a new join code (the old link answers 404 from now on); 302 to
/// `/account/users`.
pub async fn regenerate_join_code(
    State(state): State<SharedState>,
    _: Admin,
) -> Result<Response, AppError> {
    accounts::regenerate_join_code(&state.pool)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(found("/account/users"))
}
