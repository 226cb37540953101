//! Room pages (Campfire's `WelcomeController`, `RoomsController`, `Messages` paging,
//! `Rooms::RefreshesController` and `Users::SidebarsController`).
//!
//! Managing rooms lives in the submodules: [`by_kind`] (open and closed rooms) and
//! [`directs`] (new, create, edit, update), [`settings`] (what they share: input limits, who may administer a
//! room, `DELETE /rooms/{id}`), [`involvements`] (`/rooms/{id}/involvement`) and [`marks`]
//! (`POST /rooms/{id}/unread`).

pub mod by_kind;
pub mod directs;
pub mod involvements;
pub mod marks;
pub mod settings;
pub mod shared;

use crate::assets::BrowserAssets;
use crate::config::Config;
use crate::db::Db;
use crate::outbox::Outbox;
use crate::pubsub::Delivery;
use crate::rails::Keys;
use crate::storage::Storage;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use std::sync::Arc;

use super::context::{set_cookie, Ctx, LAST_ROOM_COOKIE};
use super::error::AppError;
use super::extract::{parse_id, MemberRoom};
use super::respond::{found, TURBO_STREAM};
use super::sessions;
use crate::db::{memberships, messages, rooms};
use crate::render::{self, RoomPage, Sidebar, SidebarNav};
use crate::streams;

fn sign_in() -> Response {
    found("/session/new")
}

/// `GET /`: the last visited room (the `last_room` cookie), else the user's first room.
pub async fn root(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let Some(user) = &ctx.user else {
        return Ok(sign_in());
    };
    if let Some(id) = ctx
        .cookie(LAST_ROOM_COOKIE)
        .and_then(|v| v.parse::<i64>().ok())
    {
        if rooms::find_for_member(&db.pool, id, user.id)
            .await?
            .is_some()
        {
            return Ok(found(&format!("/rooms/{id}")));
        }
    }
    match rooms::first_for_user(&db.pool, user.id).await? {
        Some(id) => Ok(found(&format!("/rooms/{id}"))),
        None => Err(AppError::NotFound),
    }
}

/// Query of `GET /rooms/{id}`.
#[derive(Debug, Default, Deserialize)]
pub struct ShowQuery {
    /// `1`: the page is drawn for the thread panel beside a room (no sidebar).
    pub panel: Option<String>,
}

handles_of! {
    /// What the room page reads: the settings, the database, the stream signer, the files, the
    /// page's scripts and the push key.
    pub struct RoomHandles {
        /// The settings.
        config: Arc<Config>,
        /// The database.
        db: Db,
        /// The stream signer and the mention signer.
        keys: Keys,
        /// Active Storage (attachment URLs).
        storage: Arc<Storage>,
        /// The page's scripts.
        assets: Arc<BrowserAssets>,
        /// The push key and link previews.
        outbox: Outbox,
    }
}

/// `GET /rooms/{id}`: the latest 40 messages, the room's signed message stream and the
/// composer (`?panel=1`: a thread drawn for the panel beside its room, without the sidebar).
/// Signed out: 302 to the sign-in form, which then returns here.
pub async fn show(
    State(handles): State<RoomHandles>,
    Extension(ctx): Extension<Ctx>,
    Path(room_id): Path<String>,
    Query(q): Query<ShowQuery>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let panel = q.panel.as_deref() == Some("1");
    render_room(&handles, &ctx, &headers, parse_id(&room_id)?, (None, panel)).await
}

/// `GET /rooms/{id}/@{message_id}`: a deep link to a message (Campfire's
/// `RoomsController#show` with `page_around`): the room page with the page around the
/// message, which the page scrolls to and highlights. A message of another room, or none, is
/// 404; other segments are unknown (404).
pub async fn show_segment(
    State(handles): State<RoomHandles>,
    Extension(ctx): Extension<Ctx>,
    Path((room_id, segment)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let Some(message_id) = segment.strip_prefix('@') else {
        return Err(AppError::NotFound);
    };
    let message_id = parse_id(message_id)?;
    render_room(
        &handles,
        &ctx,
        &headers,
        parse_id(&room_id)?,
        (Some(message_id), false),
    )
    .await
}

async fn render_room(
    handles: &RoomHandles,
    ctx: &Ctx,
    headers: &HeaderMap,
    room_id: i64,
    (message_id, panel): (Option<i64>, bool),
) -> Result<Response, AppError> {
    let Some(user) = &ctx.user else {
        let path = match message_id {
            Some(m) => format!("/rooms/{room_id}/@{m}"),
            None => format!("/rooms/{room_id}"),
        };
        return Ok(sessions::sign_in_returning_to(
            &path,
            ctx.secure || handles.config.production,
        ));
    };
    let room = rooms::find_for_member(&handles.db.pool, room_id, user.id)
        .await?
        .ok_or(AppError::NotFound)?;
    // The cursor first: whatever commits between the two reads comes again in the catch-up.
    let refresh_cursor = messages::last_change(&handles.db.pool).await?;
    let page = match message_id {
        Some(id) => messages::page_around(&handles.db.pool, room.id, id)
            .await?
            .ok_or(AppError::NotFound)?,
        None => messages::last_page(&handles.db.pool, room.id).await?,
    };
    let has_older = match page.first() {
        Some(first) => messages::any_beyond(&handles.db.pool, room.id, first.id, true).await?,
        None => false,
    };
    let has_newer = match (message_id, page.last()) {
        (Some(_), Some(last)) => {
            messages::any_beyond(&handles.db.pool, room.id, last.id, false).await?
        }
        _ => false,
    };
    // Campfire's `rooms/show/_invitation`: the first room, while it holds no more than a page
    // of messages, welcomes with the invite block.
    let welcome = if message_id.is_none()
        && !has_older
        && rooms::original_id(&handles.db.pool).await? == Some(room.id)
    {
        let invite =
            super::account::settings::invite_link(&handles.config, &handles.db, ctx, headers)
                .await?;
        Some((invite.url, invite.qr_path))
    } else {
        None
    };
    let messages_html = render::messages(&page, &handles.storage.verifier)?;
    let messages_stream = &handles
        .keys
        .signer
        .sign(&streams::room_messages(&handles.config.gid_app, &room));
    let token = ctx.csrf_token();
    let client_message_id = messages::new_client_message_id();
    let room_name = rooms::sidebar_entry(&handles.db.pool, room.id, user.id)
        .await?
        .map_or_else(|| room.display_name().to_owned(), |entry| entry.label);
    let settings_path = settings::edit_path(&room);
    let involvement = memberships::involvement(&handles.db.pool, room.id, user.id)
        .await?
        .unwrap_or(crate::db::Involvement::Mentions);
    let next = involvements::next_involvement(room.kind.is_direct(), involvement);
    let user_initials = render::initials(&user.name);
    let thread =
        super::threads::page_view(&handles.db.pool, &handles.storage.verifier, &room, user.id)
            .await?;
    let view = RoomPage {
        involvement: involvement.as_str(),
        next_involvement: next.as_str(),
        involvement_label: involvements::short_label(involvement),
        next_involvement_label: involvements::short_label(next),
        user_hue: crate::web::profiles::avatar_hue(user.id),
        user_initials: &user_initials,
        user_avatar: handles
            .storage
            .avatars
            .get(&handles.db.pool, user.id)
            .await?
            .map(|v| crate::storage::avatar_path(user.id, Some(v))),
        vapid_public_key: handles.outbox.pusher.public_key(),
        csrf_token: &token,
        user,
        room: &room,
        room_name: &room_name,
        settings_path: &settings_path,
        messages_stream,
        messages_html: &messages_html,
        has_older,
        has_newer,
        shown_ids: (
            page.first().map_or(0, |m| m.id),
            page.last().map_or(0, |m| m.id),
        ),
        highlight_message_id: message_id.unwrap_or(0),
        client_message_id: &client_message_id,
        refresh_cursor,
        scripts: handles.assets.head_html(),
        panel: panel && thread.is_some(),
        welcome,
        thread,
    };
    let html = askama::Template::render(&view)?;
    let mut response = Html(html).into_response();
    let secure = ctx.secure || handles.config.production;
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(LAST_ROOM_COOKIE, &room.id.to_string(), None, secure),
    );
    Ok(response)
}

/// Query of `GET /rooms/{id}/messages`.
#[derive(Debug, Deserialize)]
pub struct PageQuery {
    /// Messages before this message id.
    pub before: Option<String>,
    /// Messages after this message id.
    pub after: Option<String>,
}

/// `GET /rooms/{id}/messages?before=ID|after=ID`: a page of 40 partials, no layout; 204 when
/// empty. The cursor is looked up inside the room (Campfire's `@room.messages.find`): a
/// message of another room, or none, answers 404; a cursor that is not a number, 400.
pub async fn messages_page(
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    MemberRoom { room, .. }: MemberRoom,
    Query(q): Query<PageQuery>,
) -> Result<Response, AppError> {
    let cursor = |raw: &str| {
        raw.parse::<i64>()
            .map_err(|_| AppError::BadRequest("before and after must be message ids".into()))
    };
    let page = match (&q.before, &q.after) {
        (Some(b), None) => {
            let id = cursor_in_room(&db, room.id, cursor(b)?).await?;
            messages::page_before(&db.pool, room.id, id).await?
        }
        (None, Some(a)) => {
            let id = cursor_in_room(&db, room.id, cursor(a)?).await?;
            messages::page_after(&db.pool, room.id, id).await?
        }
        (None, None) => messages::last_page(&db.pool, room.id).await?,
        (Some(_), Some(_)) => {
            return Err(AppError::BadRequest(
                "give before or after, not both".into(),
            ))
        }
    };
    if page.is_empty() {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    Ok(Html(render::messages(&page, &storage.verifier)?).into_response())
}

/// The most changes one catch-up answers with (five pages of [`messages::PAGE_SIZE`]); past
/// it the page is told to reload.
pub const REFRESH_MAX: i64 = 5 * messages::PAGE_SIZE;

/// The response header carrying the cursor of the next catch-up (a change id).
pub const REFRESH_CURSOR_HEADER: &str = "x-refresh-cursor";

/// The turbo-stream that makes the page reload itself (Turbo 8's `refresh` action): the
/// catch-up's answer when more was missed than [`REFRESH_MAX`] or the cursor is too old.
pub const RELOAD_STREAM: &str = "<turbo-stream action=\"refresh\"></turbo-stream>";

/// The paging cursor `id` when it names a message of room `room_id`; 404 otherwise.
async fn cursor_in_room(db: &Db, room_id: i64, id: i64) -> Result<i64, AppError> {
    if messages::in_room(&db.pool, room_id, id).await? {
        Ok(id)
    } else {
        Err(AppError::NotFound)
    }
}

/// Query of `GET /rooms/{id}/refresh`.
#[derive(Debug, Deserialize)]
pub struct RefreshQuery {
    /// The newest change the page knows (its `data-refresh-room-cursor-value`, then the
    /// `X-Refresh-Cursor` of the previous catch-up).
    pub cursor: Option<String>,
    /// Epoch milliseconds: what pages of earlier versions send instead of a cursor.
    pub since: Option<String>,
}

/// `GET /rooms/{id}/refresh?cursor=<change id>`: the catch-up a page runs after a reconnect
/// (Campfire's `Rooms::RefreshesController`), as a turbo-stream: an `append` of the messages
/// posted since the cursor (oldest first), a `replace` of each message edited or boosted
/// since, a `remove` of each message deleted since; empty when nothing changed. The
/// `X-Refresh-Cursor` header is the cursor for next time. More than [`REFRESH_MAX`] changes,
/// or a cursor the log no longer covers: [`RELOAD_STREAM`] instead.
///
/// `?since=<epoch ms>` (pages of earlier versions) still works: messages created at or after
/// it and messages updated at or after it, no deletes.
///
/// Errors: 400 without a numeric `cursor` or `since`; 404 for non-members.
pub async fn refresh(
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    MemberRoom { room, .. }: MemberRoom,
    Query(q): Query<RefreshQuery>,
) -> Result<Response, AppError> {
    let number = |raw: &Option<String>| raw.as_deref().and_then(|s| s.parse::<i64>().ok());
    let (body, cursor) = if let Some(cursor) = number(&q.cursor) {
        match messages::catch_up(&db.pool, room.id, cursor, REFRESH_MAX).await? {
            None => (RELOAD_STREAM.to_owned(), None),
            Some(up) => {
                let mut body = String::new();
                if !up.appended.is_empty() {
                    body.push_str(&render::turbo_stream(
                        "append",
                        &room.messages_target(),
                        Some(&render::messages(&up.appended, &storage.verifier)?),
                    ));
                }
                for m in &up.replaced {
                    body.push_str(&render::turbo_stream(
                        "replace",
                        &m.dom_id(),
                        Some(&render::message(m, &storage.verifier)?),
                    ));
                }
                for client_message_id in &up.removed {
                    body.push_str(&render::turbo_stream(
                        "remove",
                        &format!("message_{client_message_id}"),
                        None,
                    ));
                }
                (body, Some(up.cursor))
            }
        }
    } else if let Some(since) = number(&q.since) {
        let cursor = messages::last_change(&db.pool).await?;
        let (created, updated) =
            messages::changed_since(&db.pool, room.id, since, REFRESH_MAX + 1).await?;
        let too_many = |list: &[messages::Message]| {
            i64::try_from(list.len()).unwrap_or(i64::MAX) > REFRESH_MAX
        };
        if too_many(&created) || too_many(&updated) {
            (RELOAD_STREAM.to_owned(), None)
        } else {
            let mut body = String::new();
            for m in &updated {
                body.push_str(&render::turbo_stream(
                    "replace",
                    &m.dom_id(),
                    Some(&render::message(m, &storage.verifier)?),
                ));
            }
            if !created.is_empty() {
                body.push_str(&render::turbo_stream(
                    "append",
                    &room.messages_target(),
                    Some(&render::messages(&created, &storage.verifier)?),
                ));
            }
            (body, Some(cursor))
        }
    } else {
        return Err(AppError::BadRequest(
            "give cursor (a change id) or since (epoch milliseconds)".into(),
        ));
    };
    let mut response = (
        [(header::CONTENT_TYPE, HeaderValue::from_static(TURBO_STREAM))],
        body,
    )
        .into_response();
    if let Some(cursor) = cursor {
        response
            .headers_mut()
            .insert(REFRESH_CURSOR_HEADER, HeaderValue::from(cursor));
    }
    Ok(response)
}

/// `GET /users/me/sidebar`: the room list with its two stream sources (`rooms` and
/// `<user gid>:rooms`), and the people one click starts a direct room with (Campfire's
/// placeholders: a form posting `user_ids[]` to `/rooms/directs`).
pub async fn sidebar(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    State(keys): State<Keys>,
    Extension(ctx): Extension<Ctx>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    // Before the list: what is broadcast after this read comes again in the catch-up.
    let history =
        super::sidebar_history::positions_now(delivery.history.as_ref(), &config.gid_app, user.id);
    let list = rooms::for_sidebar(&db.pool, user.id).await?;
    let (threads, list): (Vec<_>, Vec<_>) = list
        .into_iter()
        .partition(|r| r.kind == crate::db::RoomKind::Thread);
    let (direct, shared): (Vec<_>, Vec<_>) = list
        .into_iter()
        .partition(|r| r.kind == crate::db::RoomKind::Direct);
    let rooms_stream = keys.signer.sign("rooms");
    let user_rooms_stream = keys
        .signer
        .sign(&streams::user_rooms(&config.gid_app, user.id));
    let inbox_stream = keys.signer.sign(&streams::user_inbox(user.id));
    let people = crate::db::users::direct_placeholders(&db.pool, user.id).await?;
    let may_create_rooms = shared::may_create_rooms(&db.account_settings, &db.pool, user).await?;
    let unread = crate::db::inbox::unread_count(&db.pool, user.id).await?;
    let token = ctx.csrf_token();
    let view = Sidebar {
        rooms_stream: &rooms_stream,
        user_rooms_stream: &user_rooms_stream,
        inbox_stream: &inbox_stream,
        nav: SidebarNav {
            user_id: user.id,
            inbox_badge: crate::render::inbox_badge(unread),
            shared,
            direct,
            threads,
            history: &history,
            people,
            csrf_token: &token,
            may_create_rooms,
        },
    };
    let html = askama::Template::render(&view)?;
    Ok(Html(html).into_response())
}
