//! The HTTP side of Hearth: Campfire's routes on axum.
//!
//! Every request first passes [`context::prepare`], which reads the cookies, resolves the
//! signed-in user, enforces the body limit, applies the `_method` form override, and checks
//! the CSRF token of state-changing requests. Handlers then find a [`context::Ctx`] in the
//! request's extensions.
//!
//! | route | handler |
//! |---|---|
//! | `GET /session/new`, `POST /session`, `DELETE /session` | [`sessions`] |
//! | `GET /`, `GET /rooms/{id}`, `GET /rooms/{id}/@{message_id}`, `GET /rooms/{id}/messages`, `GET /rooms/{id}/refresh`, `GET /users/me/sidebar` | [`rooms`] |
//! | `POST /rooms/{id}/messages`, `PATCH`/`DELETE /rooms/{id}/messages/{message_id}`, `POST /messages/{id}/boosts` | [`messages`] |
//! | `POST /rooms/{id}/{bot_key}/messages` | [`messages::create_by_bot`] |
//! | `PATCH /users/{id}` (administrators: `user[status]`) | [`users`] |
//! | `GET /up` | health check |
//! | `GET /assets/js/…`, `GET /assets/npm/<package>/…` | [`assets`] (mounted by the wiring in front of the request context) |
//!
//! `/cable` and `/metrics` are mounted by the wiring (`app`), beside these routes.

pub mod assets;
pub mod context;
pub mod csrf;
pub mod error;
pub mod extract;
pub mod form;
pub mod internal;
pub mod messages;
pub mod respond;
pub mod rooms;
pub mod sessions;
pub mod users;

use axum::routing::{get, patch, post};
use axum::Router;

use crate::state::SharedState;

/// The routes, without the [`context::prepare`] wrapper (the wiring puts it in front).
pub fn routes(state: SharedState) -> Router {
    Router::new()
        .route("/up", get(up))
        .route("/session/new", get(sessions::new))
        .route("/session", post(sessions::create).delete(sessions::destroy))
        .route("/", get(rooms::root))
        .route("/rooms/{room_id}", get(rooms::show))
        .route("/rooms/{room_id}/{segment}", get(rooms::show_segment))
        .route("/rooms/{room_id}/refresh", get(rooms::refresh))
        .route(
            "/rooms/{room_id}/messages",
            get(rooms::messages_page).post(messages::create),
        )
        .route(
            "/rooms/{room_id}/messages/{message_id}",
            patch(messages::update)
                .put(messages::update)
                .delete(messages::destroy),
        )
        .route(
            "/rooms/{room_id}/{bot_key}/messages",
            post(messages::create_by_bot),
        )
        .route("/messages/{message_id}/boosts", post(messages::boost))
        .route("/users/me/sidebar", get(rooms::sidebar))
        .route("/users/{user_id}", patch(users::update))
        .route("/assets/hearth.css", get(assets_css))
        .fallback(|| async { error::AppError::NotFound })
        .with_state(state)
}

async fn assets_css() -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../../templates/hearth.css"),
    )
}

/// `GET /up`: the health check. `OK`; with the Redis adapter and its link down, still 200
/// (the node serves and delivers its own broadcasts) with `OK (redis link down)`.
async fn up(axum::extract::State(state): axum::extract::State<SharedState>) -> &'static str {
    match &state.redis {
        Some(redis) if !redis.is_up() => "OK (redis link down)",
        _ => "OK",
    }
}
