//! Bookmarks: any message saved for later, and the list of them (see [`crate::db::bookmarks`]).
//!
//! | route | handler |
//! |---|---|
//! | `POST /messages/{message_id}/bookmark` | [`create`]: "Save for later" in the message's menu |
//! | `DELETE /messages/{message_id}/bookmark` | [`destroy`] |
//! | `GET /users/me/bookmarks` | [`index`]: the saved messages, the latest saved first |
//!
//! Only the owner's own bookmarks are ever read or written (the routes take the signed-in
//! user's). A removal goes out on the owner's stream `user_<id>_bookmarks` (a `remove` of
//! `bookmark_message_<message id>`), so every open list drops the entry at once.

use askama::Template;
use axum::extract::{FromRef, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse, Response};
use sqlx::SqlitePool;

use super::error::AppError;
use super::extract::{MemberMessage, SignedInPage};
use super::respond::{found, turbo_stream, wants_turbo_stream};
use crate::db::bookmarks;
use crate::pubsub::Broadcaster;
use crate::rails::{ActiveStorageVerifier, StreamNameSigner};

/// The most bookmarks the list shows.
pub const MAX_LISTED: i64 = 200;

/// What the bookmark routes use.
#[derive(Clone, Debug)]
pub struct BookmarksHandle {
    /// The SQLite pool.
    pub pool: SqlitePool,
    /// Where removals are broadcast.
    pub broadcaster: Broadcaster,
    /// Signs the list's stream name.
    pub signer: StreamNameSigner,
    /// Signs the files' URLs of the listed messages.
    pub urls: std::sync::Arc<ActiveStorageVerifier>,
    /// The page's script tags.
    pub scripts: std::sync::Arc<str>,
}

impl<S> FromRef<S> for BookmarksHandle
where
    S: Send + Sync,
    crate::db::Db: FromRef<S>,
    crate::pubsub::Delivery: FromRef<S>,
    crate::rails::Keys: FromRef<S>,
    std::sync::Arc<crate::storage::Storage>: FromRef<S>,
    std::sync::Arc<crate::assets::BrowserAssets>: FromRef<S>,
{
    fn from_ref(state: &S) -> Self {
        let db = crate::db::Db::from_ref(state);
        let delivery = crate::pubsub::Delivery::from_ref(state);
        let keys = crate::rails::Keys::from_ref(state);
        let storage: std::sync::Arc<crate::storage::Storage> = FromRef::from_ref(state);
        let assets: std::sync::Arc<crate::assets::BrowserAssets> = FromRef::from_ref(state);
        Self {
            pool: db.pool,
            broadcaster: delivery.broadcaster,
            signer: keys.signer,
            urls: storage.verifier.clone(),
            scripts: assets.head_html().into(),
        }
    }
}

/// The bookmarks page (`templates/users/bookmarks.html`).
#[derive(Template, Debug)]
#[template(path = "users/bookmarks.html")]
struct BookmarksPage<'a> {
    user_id: i64,
    csrf_token: &'a str,
    scripts: &'a str,
    stream: &'a str,
    /// `(message id, room id, the message's partial)`.
    saved: Vec<(i64, i64, String)>,
}

/// `POST /messages/{message_id}/bookmark`: saves a message of a room the user may see (again:
/// no change). An empty turbo-stream for Turbo, else 302 to the message. 404 for a message the
/// user cannot see.
pub async fn create(
    State(handle): State<BookmarksHandle>,
    MemberMessage { user, message, .. }: MemberMessage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    bookmarks::add(&handle.pool, user.id, message.id).await?;
    if wants_turbo_stream(&headers) {
        return Ok(turbo_stream(axum::http::StatusCode::OK, String::new()));
    }
    Ok(found(&format!(
        "/rooms/{}/@{}",
        message.room_id, message.id
    )))
}

/// `DELETE /messages/{message_id}/bookmark`: removes the user's bookmark of a message, from
/// every open list of theirs; the `remove` for Turbo, else 302 to the list. 404 for a message
/// the user cannot see.
pub async fn destroy(
    State(handle): State<BookmarksHandle>,
    MemberMessage { user, message, .. }: MemberMessage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let html =
        crate::render::turbo_stream("remove", &format!("bookmark_message_{}", message.id), None);
    if bookmarks::remove(&handle.pool, user.id, message.id).await? {
        handle
            .broadcaster
            .broadcast_string(&crate::streams::user_bookmarks(user.id), &html);
    }
    if wants_turbo_stream(&headers) {
        return Ok(turbo_stream(axum::http::StatusCode::OK, html));
    }
    Ok(found("/users/me/bookmarks"))
}

/// `GET /users/me/bookmarks`: the signed-in user's saved messages, the latest saved first,
/// each with a link into its room and a Remove button; live through `user_<id>_bookmarks`.
pub async fn index(
    State(handle): State<BookmarksHandle>,
    SignedInPage { ctx, user }: SignedInPage,
) -> Result<Response, AppError> {
    let messages = bookmarks::list(&handle.pool, user.id, MAX_LISTED).await?;
    let mut saved = Vec::with_capacity(messages.len());
    for m in &messages {
        saved.push((m.id, m.room_id, crate::render::message(m, &handle.urls)?));
    }
    let token = ctx.csrf_token();
    let signed = handle.signer.sign(&crate::streams::user_bookmarks(user.id));
    let page = BookmarksPage {
        user_id: user.id,
        csrf_token: &token,
        scripts: &handle.scripts,
        stream: &signed,
        saved,
    };
    Ok(Html(page.render()?).into_response())
}
