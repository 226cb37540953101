//! The activity inbox: one page with what needs the signed-in person — mentions of them,
//! replies in the threads they follow, boosts on their messages, direct messages — and the
//! count of the unread ones beside the sidebar's "Inbox" link (see [`crate::db::inbox`] for
//! what an item is and when it is read).
//!
//! | route | handler |
//! |---|---|
//! | `GET /inbox` (`?kind=mentions\|replies\|boosts\|direct`) | [`index`]: the items, the newest first, one tab per kind |
//! | `GET /inbox/count` | [`count`]: `{"unread":<n>}`, what the badge shows |
//! | `POST /inbox/read` | [`read_all`]: "Mark all read" |
//!
//! Every route answers for the signed-in person's own inbox only (no route names another
//! person or an item's id). The badge stays right in every tab: a new message, a mention and a
//! read in a room are told on the streams the sidebar already follows (`user_<id>_unreads`,
//! `user_<id>_reads`), on which the page's script asks [`count`] again; a boost on the
//! person's message and "Mark all read" send the new badge on `user_<id>_inbox`
//! ([`crate::broadcasts::inbox_count`]).

use askama::Template;
use axum::extract::{FromRef, Query, State};
use axum::http::HeaderMap;
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use sqlx::SqlitePool;

use super::error::AppError;
use super::extract::SignedInPage;
use super::respond::{found, turbo_stream, wants_turbo_stream};
use crate::db::inbox::{self, Item, Kind};
use crate::pubsub::Broadcaster;
use crate::rails::StreamNameSigner;

/// The most items the page lists.
pub const MAX_LISTED: usize = 100;

/// The most characters of a message's text an item shows.
pub const EXCERPT_CHARS: usize = 160;

/// The 422 detail of an unknown `?kind=`.
pub const UNKNOWN_KIND: &str = "kind must be one of mentions, replies, boosts, direct";

/// What the inbox routes use.
#[derive(Clone, Debug)]
pub struct InboxHandle {
    /// The SQLite pool.
    pub pool: SqlitePool,
    /// Where the badge is broadcast.
    pub broadcaster: Broadcaster,
    /// Signs the page's stream name.
    pub signer: StreamNameSigner,
    /// The page's script tags.
    pub scripts: std::sync::Arc<str>,
}

impl<S> FromRef<S> for InboxHandle
where
    S: Send + Sync,
    crate::db::Db: FromRef<S>,
    crate::pubsub::Delivery: FromRef<S>,
    crate::rails::Keys: FromRef<S>,
    std::sync::Arc<crate::assets::BrowserAssets>: FromRef<S>,
{
    fn from_ref(state: &S) -> Self {
        let db = crate::db::Db::from_ref(state);
        let delivery = crate::pubsub::Delivery::from_ref(state);
        let keys = crate::rails::Keys::from_ref(state);
        let assets: std::sync::Arc<crate::assets::BrowserAssets> = FromRef::from_ref(state);
        Self {
            pool: db.pool,
            broadcaster: delivery.broadcaster,
            signer: keys.signer,
            scripts: assets.head_html().into(),
        }
    }
}

/// The query string of `GET /inbox`.
#[derive(Debug, Deserialize)]
pub struct InboxQuery {
    /// One kind's tab ([`Kind::param`]); all kinds without it.
    pub kind: Option<String>,
}

/// One item as the page shows it.
#[derive(Debug)]
struct Shown {
    item: Item,
    /// Where the room is, as the reader calls it.
    room_label: String,
    /// The text, cut to [`EXCERPT_CHARS`].
    excerpt: String,
}

/// The inbox page (`templates/users/inbox.html`).
#[derive(Template, Debug)]
#[template(path = "users/inbox.html")]
struct InboxPage<'a> {
    user_id: i64,
    csrf_token: &'a str,
    scripts: &'a str,
    stream: &'a str,
    /// The chosen tab's kind, `None` for "All".
    kind: Option<Kind>,
    badge: String,
    items: Vec<Shown>,
    unread: usize,
}

impl InboxPage<'_> {
    /// The tab's label of `kind`.
    const fn tab_label(kind: Kind) -> &'static str {
        match kind {
            Kind::Mention => "Mentions",
            Kind::Reply => "Threads",
            Kind::Boost => "Boosts",
            Kind::Direct => "Direct",
        }
    }

    /// What an item says happened.
    const fn verb(kind: Kind) -> &'static str {
        match kind {
            Kind::Mention => "mentioned you",
            Kind::Reply => "replied in a thread you follow",
            Kind::Boost => "boosted your message",
            Kind::Direct => "wrote to you",
        }
    }
}

/// `GET /inbox`: the signed-in person's items, the newest first (at most [`MAX_LISTED`]),
/// all of them or one kind's (`?kind=`), each linking to its message in its room (a reply: in
/// its thread), the unread ones marked. 422 ([`UNKNOWN_KIND`]) for another `kind`.
pub async fn index(
    State(handle): State<InboxHandle>,
    SignedInPage { ctx, user }: SignedInPage,
    Query(query): Query<InboxQuery>,
) -> Result<Response, AppError> {
    let kind = match query.kind.as_deref().filter(|k| !k.is_empty()) {
        None => None,
        Some(k) => Some(Kind::from_param(k).ok_or(AppError::Unprocessable(UNKNOWN_KIND.into()))?),
    };
    let items = inbox::items(&handle.pool, user.id, kind, false, MAX_LISTED).await?;
    let unread = inbox::unread_count(&handle.pool, user.id).await?;
    let items = shown(&handle.pool, user.id, items).await?;
    let token = ctx.csrf_token();
    let signed = handle.signer.sign(&crate::streams::user_inbox(user.id));
    let page = InboxPage {
        user_id: user.id,
        csrf_token: &token,
        scripts: &handle.scripts,
        stream: &signed,
        kind,
        badge: crate::render::inbox_badge(unread),
        items,
        unread,
    };
    Ok(Html(page.render()?).into_response())
}

/// The items with their rooms' labels and excerpts.
async fn shown(pool: &SqlitePool, user_id: i64, items: Vec<Item>) -> Result<Vec<Shown>, AppError> {
    let mut rooms: Vec<i64> = items.iter().map(|i| i.room_id).collect();
    rooms.sort_unstable();
    rooms.dedup();
    let labels = inbox::room_labels(pool, user_id, &rooms).await?;
    Ok(items
        .into_iter()
        .map(|item| {
            let room_label = labels
                .iter()
                .find(|(id, _)| *id == item.room_id)
                .map_or_else(String::new, |(_, label)| label.clone());
            let excerpt = excerpt(&item.text);
            Shown {
                item,
                room_label,
                excerpt,
            }
        })
        .collect())
}

/// `text` on one line, cut to [`EXCERPT_CHARS`] (with "…").
fn excerpt(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= EXCERPT_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(EXCERPT_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// `GET /inbox/count`: `{"unread":<n>}`, the signed-in person's unread items (the badge).
pub async fn count(
    State(handle): State<InboxHandle>,
    SignedInPage { user, .. }: SignedInPage,
) -> Result<Response, AppError> {
    let unread = inbox::unread_count(&handle.pool, user.id).await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        format!("{{\"unread\":{unread}}}"),
    )
        .into_response())
}

/// `POST /inbox/read` ("Mark all read"): every item of the signed-in person up to now is read;
/// the new badge goes to every tab of theirs. The badge's `replace` for Turbo, else 302 to
/// the inbox.
pub async fn read_all(
    State(handle): State<InboxHandle>,
    SignedInPage { user, .. }: SignedInPage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    inbox::mark_all_read(&handle.pool, user.id).await?;
    let unread = send_count(&handle.pool, &handle.broadcaster, user.id).await?;
    if wants_turbo_stream(&headers) {
        let html = crate::render::turbo_stream(
            "replace",
            "inbox_badge",
            Some(&crate::render::inbox_badge(unread)),
        );
        return Ok(turbo_stream(axum::http::StatusCode::OK, html));
    }
    Ok(found("/inbox"))
}

/// Counts `user_id`'s unread items and sends the badge to their tabs
/// ([`crate::broadcasts::inbox_count`]); returns the count.
///
/// # Errors
/// Database failures.
pub async fn send_count(
    pool: &SqlitePool,
    broadcaster: &Broadcaster,
    user_id: i64,
) -> sqlx::Result<usize> {
    let unread = inbox::unread_count(pool, user_id).await?;
    crate::broadcasts::inbox_count(broadcaster, user_id, unread);
    Ok(unread)
}

/// After a boost by someone else on a message of `author_id`'s: their new badge. A failure
/// is logged; the boost stays.
pub async fn after_boost(pool: &SqlitePool, broadcaster: &Broadcaster, author_id: i64) {
    if let Err(e) = send_count(pool, broadcaster, author_id).await {
        tracing::warn!(user = author_id, error = %e, "inbox badge not sent");
    }
}
