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
//! | `GET /users/me/sidebar/catch_up` | [`sidebar_history`] |
//! | `GET /autocompletable/users?query=&room_id=` | [`autocompletable`] |
//! | `POST /rooms/{id}/messages`, `GET /rooms/{id}/messages/{message_id}/edit`, `PATCH`/`DELETE /rooms/{id}/messages/{message_id}`, `POST /messages/{id}/boosts` | [`messages`] |
//! | `POST /rooms/{id}/{bot_key}/messages` | [`messages::create_by_bot`] |
//! | `GET /rooms/opens/new`, `POST /rooms/opens`, `GET /rooms/opens/{id}`, `GET /rooms/opens/{id}/edit`, `PATCH`/`PUT /rooms/opens/{id}` | [`rooms::by_kind`] |
//! | the same under `/rooms/closeds` | [`rooms::by_kind`] |
//! | `GET /rooms/directs/new`, `POST /rooms/directs`, `GET /rooms/directs/{id}/edit`, `DELETE /rooms/directs/{id}` | [`rooms::directs`] |
//! | `DELETE /rooms/{id}` | [`rooms::settings::destroy`] |
//! | `GET`, `PUT`/`PATCH /rooms/{id}/involvement` | [`rooms::involvements`] |
//! | `POST /rooms/{id}/unread` | [`rooms::marks`] |
//! | `POST`/`DELETE /messages/{id}/bookmark`, `GET /users/me/bookmarks` | [`bookmarks`] |
//! | `GET /inbox`, `GET /inbox/count`, `POST /inbox/read` | [`inbox`] |
//! | `POST /messages/{id}/thread`, `POST`/`DELETE /rooms/{id}/follow` | [`threads`] |
//! | `GET`/`POST /first_run` | [`first_run`] |
//! | `GET`/`POST /join/{join_code}` | [`join`] |
//! | `GET /session/oidc`, `GET /session/oidc/callback` | [`sso`] |
//! | `PATCH`/`PUT /account/sso` | [`account::sso`] |
//! | `GET /users/{id}`, `GET`/`PATCH /users/me/profile` | [`profiles`] |
//! | `PATCH /users/{id}` (`user[status]`), `POST`/`DELETE /users/{id}/ban` (administrators) | [`users`] |
//! | `GET /messages/{id}/boosts/new`, `DELETE /messages/{id}/boosts/{boost_id}` | [`boosts`] |
//! | `GET /account/edit`, `PATCH /account`, `GET /account/custom_styles/edit`, `PATCH /account/custom_styles` | [`account::settings`] |
//! | `GET`, `PUT`/`PATCH /session/transfers/{id}` | [`transfers`] |
//! | `GET /qr_code/{id}` | [`links::qr_code`] |
//! | `GET /account/users`, `PATCH`/`DELETE /account/users/{id}`, `POST /account/join_code` | [`account::users`] |
//! | `GET`/`POST /account/bots`, `PATCH`/`DELETE /account/bots/{id}`, `PATCH /account/bots/{id}/key` | [`account::bots`] |
//! | `GET /rooms/{id}/{bot_key}/messages`, `PATCH`/`DELETE …/messages/{id}`, `POST …/messages/{id}/boosts`, `DELETE …/boosts/{boost_id}` | [`bots_api`] |
//! | `GET`/`POST /searches`, `DELETE /searches/clear` | [`searches`] |
//! | `GET`/`POST /users/me/push_subscriptions`, `DELETE /users/me/push_subscriptions/{id}`, `POST …/{id}/test_notifications` | [`push_subscriptions`] |
//! | `GET`, `POST`, `DELETE /users/{id}/avatar`, `GET`, `POST`, `DELETE /account/logo` | [`avatars`] |
//! | `GET /webmanifest`, `GET /service-worker`, `GET /favicon.svg`, `GET /icons/…` | [`pwa`] |
//! | `POST /rails/active_storage/direct_uploads`, `PUT`/`GET /rails/active_storage/disk/…`, `GET /rails/active_storage/blobs/…`, `GET /rails/active_storage/representations/…` | [`files`] |
//! | `POST /unfurl_link`, `GET /unfurl_link/images/{name}` | [`unfurl_links`] |
//! | `POST /session/code`, `POST /session/code/verify`, `GET /password_reset/new`, `POST /password_reset`, `GET /password_reset/edit`, `POST /password_reset/update` | [`mail_sign_in`] |
//! | `PATCH /account/mail`, `POST /account/mail/test_email` | [`account::mail`] |
//! | `PATCH /users/me/digest`, `GET`/`POST /digests/unsubscribe/{token}` | [`digest_settings`] |
//! | `GET /up` | health check |
//! | `GET /assets/js/…`, `GET /assets/npm/<package>/…` | `crate::assets` (mounted by the wiring in front of the request context) |
//!
//! `/cable` and `/metrics` are mounted by the wiring (`app`), beside these routes.

/// Declares a handle made of handles: a `Clone` struct of the named fields, each a handle of
/// the state, and its `FromRef` from any state that gives each of them (so the struct never
/// names the state). For routes that use many handles together.
macro_rules! handles_of {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($(#[$field_meta:meta])* $field:ident: $ty:ty),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug)]
        $vis struct $name {
            $($(#[$field_meta])* pub $field: $ty),*
        }

        impl<S> axum::extract::FromRef<S> for $name
        where
            S: Send + Sync,
            $($ty: axum::extract::FromRef<S>),*
        {
            fn from_ref(state: &S) -> Self {
                Self {
                    $($field: axum::extract::FromRef::from_ref(state)),*
                }
            }
        }
    };
}

pub mod account;
pub mod autocompletable;
pub mod avatars;
pub mod bookmarks;
pub mod boosts;
pub mod bots_api;
pub mod browsers;
pub mod byte_ranges;
pub mod client_ip;
pub mod context;
pub mod cookies;
pub mod csrf;
pub mod digest_settings;
pub mod error;
pub mod extract;
pub mod fields;
pub mod files;
pub mod first_run;
pub mod flash;
pub mod form;
pub mod inbox;
pub mod internal;
pub mod join;
pub mod links;
pub mod mail_on_page;
pub mod mail_sign_in;
pub mod messages;
pub mod page;
pub mod profiles;
pub mod push_subscriptions;
pub mod pwa;
pub mod quota;
pub mod request_line;
pub mod respond;
pub mod rooms;
pub mod searches;
pub mod sessions;
pub mod sidebar_history;
pub mod sign_in_options;
pub mod sso;
pub mod threads;
pub mod transfers;
pub mod translations;
pub mod unfurl_links;
pub mod upload_clock;
pub mod users;
pub mod webhooks;

use axum::routing::{delete, get, patch, post};
use axum::Router;

use crate::state::SharedState;

/// The routes of mail: signing in by mail, the mail panel, digest settings and unsubscribe.
fn mail_routes() -> Router<SharedState> {
    Router::new()
        .route("/session/code", post(mail_sign_in::request_code))
        .route("/session/code/verify", post(mail_sign_in::verify_code))
        .route("/password_reset/new", get(mail_sign_in::new_reset))
        .route("/password_reset", post(mail_sign_in::request_reset))
        .route("/password_reset/edit", get(mail_sign_in::edit_reset))
        .route("/password_reset/update", post(mail_sign_in::update_reset))
        .route("/account/mail", patch(account::mail::update))
        .route("/account/mail/test_email", post(account::mail::test_email))
        .route("/users/me/digest", patch(digest_settings::update))
        .route(
            "/digests/unsubscribe/{token}",
            get(digest_settings::show).post(digest_settings::unsubscribe),
        )
}

/// The routes, without the [`context::prepare`] wrapper (the wiring puts it in front).
pub fn routes(state: SharedState) -> Router {
    Router::new()
        .route("/session/new", get(sessions::new))
        .route("/session", post(sessions::create).delete(sessions::destroy))
        .route("/", get(rooms::root))
        .route(
            "/rooms/{room_id}",
            get(rooms::show).delete(rooms::settings::destroy),
        )
        .merge(rooms::by_kind::routes::<rooms::by_kind::Opens>())
        .merge(rooms::by_kind::routes::<rooms::by_kind::Closeds>())
        .route("/rooms/directs/new", get(rooms::directs::new))
        .route("/rooms/directs", post(rooms::directs::create))
        .route("/rooms/directs/{room_id}", delete(rooms::directs::destroy))
        .route("/rooms/directs/{room_id}/edit", get(rooms::directs::edit))
        .route(
            "/rooms/{room_id}/involvement",
            get(rooms::involvements::show)
                .put(rooms::involvements::update)
                .patch(rooms::involvements::update),
        )
        .route("/rooms/{room_id}/unread", post(rooms::marks::create))
        .route("/rooms/{room_id}/{segment}", get(rooms::show_segment))
        .route("/rooms/{room_id}/refresh", get(rooms::refresh))
        .route(
            "/rooms/{room_id}/messages",
            get(rooms::messages_page).post(messages::create).layer(
                axum::middleware::from_fn_with_state(state.clone(), webhooks::after_post),
            ),
        )
        .route(
            "/rooms/{room_id}/messages/{message_id}",
            patch(messages::update)
                .put(messages::update)
                .delete(messages::destroy),
        )
        .route(
            "/rooms/{room_id}/messages/{message_id}/edit",
            get(messages::edit),
        )
        .route(
            "/rooms/{room_id}/{bot_key}/messages",
            get(bots_api::index).post(messages::create_by_bot),
        )
        .route(
            "/rooms/{room_id}/{bot_key}/messages/{message_id}",
            patch(bots_api::update)
                .put(bots_api::update)
                .delete(bots_api::destroy),
        )
        .route(
            "/rooms/{room_id}/{bot_key}/messages/{message_id}/boosts",
            post(bots_api::create_boost),
        )
        .route(
            "/rooms/{room_id}/{bot_key}/messages/{message_id}/boosts/{boost_id}",
            delete(bots_api::destroy_boost),
        )
        .route("/messages/{message_id}/boosts", post(messages::boost))
        .route("/messages/{message_id}/thread", post(threads::start))
        .route(
            "/messages/{message_id}/bookmark",
            post(bookmarks::create).delete(bookmarks::destroy),
        )
        .route("/users/me/bookmarks", get(bookmarks::index))
        .route("/inbox", get(inbox::index))
        .route("/inbox/count", get(inbox::count))
        .route("/inbox/read", post(inbox::read_all))
        .route(
            "/rooms/{room_id}/follow",
            post(threads::follow).delete(threads::unfollow),
        )
        .route("/messages/{message_id}/boosts/new", get(boosts::new))
        .route(
            "/messages/{message_id}/boosts/{boost_id}",
            delete(boosts::destroy),
        )
        .route("/users/me/sidebar", get(rooms::sidebar))
        .route(
            "/users/me/sidebar/catch_up",
            get(sidebar_history::catch_up),
        )
        .route("/autocompletable/users", get(autocompletable::users))
        .route("/first_run", get(first_run::show).post(first_run::create))
        .route("/join/{join_code}", get(join::new).post(join::create))
        .merge(sso::routes())
        .merge(account::sso::routes())
        .route("/users/{user_id}", get(profiles::show).patch(users::update))
        .route(
            "/users/{user_id}/avatar",
            get(avatars::show)
                .post(avatars::create)
                .delete(avatars::destroy),
        )
        .route(
            "/account/logo",
            get(avatars::show_logo)
                .post(avatars::create_logo)
                .delete(avatars::destroy_logo),
        )
        .route(
            "/users/{user_id}/ban",
            post(users::create_ban).delete(users::destroy_ban),
        )
        .route(
            "/users/me/profile",
            get(profiles::edit)
                .patch(profiles::update)
                .put(profiles::update),
        )
        .route("/account/edit", get(account::settings::edit))
        .route(
            "/account",
            patch(account::settings::update).put(account::settings::update),
        )
        .route(
            "/account/custom_styles/edit",
            get(account::settings::edit_custom_styles),
        )
        .route(
            "/account/custom_styles",
            patch(account::settings::update_custom_styles)
                .put(account::settings::update_custom_styles),
        )
        .route(
            "/session/transfers/{transfer_id}",
            get(transfers::show)
                .put(transfers::update)
                .patch(transfers::update),
        )
        .route("/qr_code/{qr_id}", get(links::qr_code))
        .route("/account/users", get(account::users::index))
        .route(
            "/account/users/{user_id}",
            patch(account::users::update).delete(account::users::destroy),
        )
        .route(
            "/account/join_code",
            post(account::users::regenerate_join_code),
        )
        .route(
            "/account/bots",
            get(account::bots::index).post(account::bots::create),
        )
        .route(
            "/account/bots/{bot_id}",
            patch(account::bots::update).delete(account::bots::destroy),
        )
        .route(
            "/account/bots/{bot_id}/key",
            patch(account::bots::update_key),
        )
        .merge(mail_routes())
        .route("/searches", get(searches::index).post(searches::create))
        .route(
            "/rails/active_storage/direct_uploads",
            post(files::create_direct_upload),
        )
        .route(
            "/rails/active_storage/disk/{encoded_token}",
            axum::routing::put(files::upload_to_disk),
        )
        .route(
            "/rails/active_storage/disk/{encoded_key}/{*filename}",
            get(files::serve_from_disk),
        )
        .route(
            "/rails/active_storage/blobs/redirect/{signed_id}/{*filename}",
            get(files::blob_redirect),
        )
        .route(
            "/rails/active_storage/blobs/{signed_id}/{*filename}",
            get(files::blob_redirect),
        )
        .route(
            "/rails/active_storage/representations/redirect/{signed_blob_id}/{variation_key}/{*filename}",
            get(files::representation_redirect),
        )
        .route(
            "/rails/active_storage/representations/{signed_blob_id}/{variation_key}/{*filename}",
            get(files::representation_redirect),
        )
        .route("/searches/clear", delete(searches::clear))
        .route(
            "/users/me/push_subscriptions",
            get(push_subscriptions::index).post(push_subscriptions::create),
        )
        .route(
            "/users/me/push_subscriptions/{id}",
            delete(push_subscriptions::destroy),
        )
        .route(
            "/users/me/push_subscriptions/{id}/test_notifications",
            post(push_subscriptions::test_notification),
        )
        .route("/unfurl_link", post(unfurl_links::create))
        .route("/unfurl_link/images/{name}", get(unfurl_links::image))
        .route("/webmanifest", get(pwa::manifest))
        .route("/service-worker", get(pwa::service_worker))
        .route("/favicon.svg", get(pwa::icon_svg))
        .route("/icons/icon.svg", get(pwa::icon_svg))
        .route("/icons/icon-192.png", get(pwa::icon_192))
        .route("/icons/icon-512.png", get(pwa::icon_512))
        .fallback(|| async { error::AppError::NotFound })
        .layer(axum::middleware::from_fn(browsers::allow_browser))
        .with_state(state)
}
