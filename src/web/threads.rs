//! Threads: starting one from a message's menu, following and unfollowing it, and the rules a
//! reply in one obeys (see [`crate::db::threads`] for the model).
//!
//! | route | handler |
//! |---|---|
//! | `POST /messages/{message_id}/thread` | [`start`]: finds or starts the message's thread, 302 to it |
//! | `POST /rooms/{room_id}/follow`, `DELETE` (or `_method=delete`) | [`follow`], [`unfollow`] |
//!
//! Everything else is a room's: the thread's page is `GET /rooms/{id}`, a reply is
//! `POST /rooms/{id}/messages` (with `also_send_to_room=1` to post it in the parent's room
//! too, [`super::messages`]), and its messages, boosts, files, edits, unread marks, presence, typing and streams
//! are those of a room. A reply ([`admit_reply`], [`after_reply`]):
//!
//! - is refused (422) when the parent was deleted ([`PARENT_DELETED`]) or the thread closed
//!   by age ([`CLOSED`]), and nothing is stored;
//! - makes its author, the parent's author and whoever it mentions followers (unless they
//!   unfollowed: only its author follows again);
//! - sends the parent's new summary to the parent's room (`replace` of
//!   `thread_summary_message_<client_message_id>`) and logs a change of the parent, so a page
//!   that missed the broadcast gets the summary in its catch-up.

use axum::extract::State;
use axum::response::Response;
use sqlx::SqlitePool;

use super::error::AppError;
use super::extract::{MemberMessage, MemberRoom};
use super::respond::found;
use crate::db::threads::{self, Thread};
use crate::db::users::User;
use crate::db::Db;
use crate::pubsub::Broadcaster;

/// The 422 detail of a reply to a thread whose parent message was deleted.
pub const PARENT_DELETED: &str =
    "The message this thread answers was deleted: it takes no more replies";

/// The 422 detail of a reply to a thread closed by age.
pub const CLOSED: &str = "This thread had no reply for 30 days: it is closed to new replies";

/// The 422 detail of "Reply in thread" on a message of a thread.
pub const NESTED: &str = "A message in a thread cannot have a thread of its own";

/// `POST /messages/{message_id}/thread` ("Reply in thread"): finds or starts the thread of a
/// message of a room the user is in, then 302 to the thread's page. 404 for a message the
/// user cannot see; 422 ([`NESTED`]) for a message that is itself in a thread.
pub async fn start(
    State(db): State<Db>,
    MemberMessage {
        user,
        message,
        room,
    }: MemberMessage,
) -> Result<Response, AppError> {
    match threads::start(&db.pool, room.id, room.kind, message.id, user.id).await? {
        Ok(id) => Ok(found(&format!("/rooms/{id}"))),
        Err(threads::StartRefused::Nested) => Err(AppError::Unprocessable(NESTED.into())),
    }
}

/// `POST /rooms/{room_id}/follow`: the user follows the thread (unread marks, pushes, the
/// sidebar); 302 back to it. 404 for a room that is no thread or one the user cannot see.
pub async fn follow(
    State(db): State<Db>,
    MemberRoom { user, room }: MemberRoom,
) -> Result<Response, AppError> {
    set_following(&db.pool, &user, room.id, true).await
}

/// `DELETE /rooms/{room_id}/follow`: the user stops following the thread; 302 back to it.
pub async fn unfollow(
    State(db): State<Db>,
    MemberRoom { user, room }: MemberRoom,
) -> Result<Response, AppError> {
    set_following(&db.pool, &user, room.id, false).await
}

async fn set_following(
    pool: &SqlitePool,
    user: &User,
    room_id: i64,
    following: bool,
) -> Result<Response, AppError> {
    let thread = threads::find(pool, room_id)
        .await?
        .ok_or(AppError::NotFound)?;
    threads::set_following(pool, &thread, user.id, following).await?;
    Ok(found(&format!("/rooms/{room_id}")))
}

/// The checks and follows before a reply by `author` in thread room `room_id`; returns the
/// thread.
///
/// # Errors
/// 422 ([`PARENT_DELETED`], [`CLOSED`]); 404 when the room is no thread; database failures.
pub async fn admit_reply(
    pool: &SqlitePool,
    room_id: i64,
    author: &User,
    mentioned: &[i64],
) -> Result<Thread, AppError> {
    let thread = threads::find(pool, room_id)
        .await?
        .ok_or(AppError::NotFound)?;
    if !thread.parent_exists {
        return Err(AppError::Unprocessable(PARENT_DELETED.into()));
    }
    if thread.closed_at(crate::db::now_ms()) {
        return Err(AppError::Unprocessable(CLOSED.into()));
    }
    threads::follow_on_reply(pool, &thread, author.id, mentioned).await?;
    Ok(thread)
}

/// After a reply in `thread` committed: the parent's summary to its room's open pages, and a
/// change of the parent in the change log (the catch-up of a page that missed it). A failure
/// is logged; the reply stays posted.
pub async fn after_reply(pool: &SqlitePool, broadcaster: &Broadcaster, thread: &Thread) {
    if let Err(e) = summary_to_parent_room(pool, broadcaster, thread).await {
        tracing::warn!(thread = thread.id, error = %e, "thread summary not sent");
    }
}

async fn summary_to_parent_room(
    pool: &SqlitePool,
    broadcaster: &Broadcaster,
    thread: &Thread,
) -> Result<(), AppError> {
    let Some(parent_room) = crate::db::rooms::find(pool, thread.parent_room_id).await? else {
        return Ok(());
    };
    let Some(parent) =
        crate::db::messages::find(pool, parent_room.id, thread.parent_message_id).await?
    else {
        return Ok(());
    };
    let Some(summary) = parent.thread.as_ref() else {
        return Ok(());
    };
    crate::broadcasts::thread_summary_changed(
        broadcaster,
        &parent_room,
        &parent.dom_id(),
        summary,
    )?;
    threads::parent_changed(pool, parent.id).await?;
    Ok(())
}

/// The parts of thread `room`'s page for `user_id` ([`crate::render::ThreadView`]);
/// `None` when the room is no thread.
///
/// # Errors
/// Database failures; the parent's partial failed to render.
pub async fn page_view(
    pool: &SqlitePool,
    urls: &crate::rails::ActiveStorageVerifier,
    room: &crate::db::rooms::Room,
    user_id: i64,
) -> Result<Option<crate::render::ThreadView>, AppError> {
    if !room.kind.is_thread() {
        return Ok(None);
    }
    let room_id = room.id;
    let Some(thread) = threads::find(pool, room_id).await? else {
        return Ok(None);
    };
    let parent =
        crate::db::messages::find(pool, thread.parent_room_id, thread.parent_message_id).await?;
    let parent_html = match &parent {
        Some(m) => crate::render::message(m, urls)?,
        None => String::new(),
    };
    let parent_room_name = crate::db::rooms::sidebar_entry(pool, thread.parent_room_id, user_id)
        .await?
        .map_or_else(String::new, |entry| entry.label);
    let closed = if parent.is_none() {
        Some(PARENT_DELETED)
    } else if thread.closed_at(crate::db::now_ms()) {
        Some(CLOSED)
    } else {
        None
    };
    Ok(Some(crate::render::ThreadView {
        parent_html,
        parent_room_id: thread.parent_room_id,
        parent_room_name,
        parent_message_id: thread.parent_message_id,
        following: threads::follows(pool, room_id, user_id).await?,
        closed,
    }))
}
