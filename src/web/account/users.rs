//! `GET /account/users` (the people, with the join link; [`PER_PAGE`] a page, filtered by name
//! or e-mail address with `?q=`, paged with `?page=`), `PATCH /account/users/{id}` (role),
//! `DELETE /account/users/{id}` (deactivate) and `POST /account/join_code` (a new join
//! code): Campfire's `Accounts::UsersController` and `Accounts::JoinCodesController`.

use crate::db::Db;
use crate::pubsub::Delivery;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use crate::db::users::User;
use crate::db::{accounts, users};
use crate::db::{Role, Status};
use crate::web::error::AppError;
use crate::web::extract::{Admin, AdminPage, Id};
use crate::web::respond::found;
use crate::web::users::{disconnect, guard_error};

/// How many people one page of `GET /account/users` lists (Campfire's `per_page: 500`).
pub const PER_PAGE: i64 = 500;

/// The longest filter `GET /account/users?q=` reads, in characters (the rest is ignored).
pub const MAX_FILTER_CHARS: usize = 100;

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
    /// The page's people, by name.
    pub people: &'a [User],
    /// The filter as given (empty: everyone).
    pub filter: &'a str,
    /// The 1-based page number.
    pub page: i64,
    /// The previous page's address, on pages after the first.
    pub previous_href: Option<String>,
    /// The next page's address, when there are more people.
    pub next_href: Option<String>,
}

/// Query of `GET /account/users`.
#[derive(Debug, serde::Deserialize)]
pub struct PeopleQuery {
    /// A part of the name or e-mail address (case-insensitive).
    pub q: Option<String>,
    /// The 1-based page (1 when missing or 0).
    pub page: Option<u32>,
}

/// `/account/users?q=…&page=…`, leaving out an empty filter.
fn page_href(filter: &str, page: i64) -> String {
    if filter.is_empty() {
        format!("/account/users?page={page}")
    } else {
        let q = percent_encoding::utf8_percent_encode(filter, percent_encoding::NON_ALPHANUMERIC);
        format!("/account/users?q={q}&page={page}")
    }
}

/// `GET /account/users[?q=…][&page=…]`: the join link and one page of the people
/// ([`PER_PAGE`] at most) whose name or e-mail address contains `q`, with links to the pages
/// before and after. 400 for a page that is not a number.
pub async fn index(
    State(db): State<Db>,
    AdminPage(ctx): AdminPage,
    Query(query): Query<PeopleQuery>,
) -> Result<Response, AppError> {
    let account = accounts::find(&db.pool).await?.ok_or(AppError::NotFound)?;
    let filter: String = query
        .q
        .as_deref()
        .unwrap_or("")
        .trim()
        .chars()
        .take(MAX_FILTER_CHARS)
        .collect();
    let page = i64::from(query.page.unwrap_or(1).max(1));
    let mut people =
        users::people_page(&db.pool, &filter, (page - 1) * PER_PAGE, PER_PAGE + 1).await?;
    let more = people.len() as i64 > PER_PAGE;
    people.truncate(PER_PAGE as usize);
    let token = ctx.csrf_token();
    let page = PeoplePage {
        csrf_token: &token,
        join_code: &account.join_code,
        people: &people,
        filter: &filter,
        page,
        previous_href: (page > 1).then(|| page_href(&filter, page - 1)),
        next_href: more.then(|| page_href(&filter, page + 1)),
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `PATCH /account/users/{user_id}` with `user[role]` (`member` or `administrator`): 302 to
/// `/account/users`. 422 for another role, 404 for an unknown user or a bot, 422 when it
/// would demote the last active administrator.
pub async fn update(
    State(db): State<Db>,
    Admin(ctx): Admin,
    Id(user_id): Id,
) -> Result<Response, AppError> {
    let role = ctx.form.get("user[role]").unwrap_or("");
    let role = role
        .parse::<Role>()
        .ok()
        .filter(|r| ROLES.contains(r))
        .ok_or_else(|| AppError::Unprocessable(format!("unknown role {role:?}")))?;
    guard_error(users::set_role(&db.pool, user_id, role).await?)?;
    Ok(found("/account/users"))
}

/// `DELETE /account/users/{user_id}`: deactivates the person (sessions deleted, cable
/// connections closed) and answers 302 to `/account/users`. 404 for an unknown user or a
/// bot, 422 for the last active administrator.
pub async fn destroy(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    _: Admin,
    Id(user_id): Id,
) -> Result<Response, AppError> {
    guard_error(users::set_status(&db.pool, user_id, Status::Deactivated).await?)?;
    disconnect(&delivery, user_id);
    Ok(found("/account/users"))
}

/// `POST /account/join_code`: a new join code (the old link answers 404 from now on); 302 to
/// `/account/users`.
pub async fn regenerate_join_code(State(db): State<Db>, _: Admin) -> Result<Response, AppError> {
    accounts::regenerate_join_code(&db.pool)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(found("/account/users"))
}
