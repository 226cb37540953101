//! The sidebar's catch-up after a reconnect: `GET /users/me/sidebar/catch_up?history=…`.
//!
//! The sidebar frame (`GET /users/me/sidebar`) shows four streams: `rooms` and
//! `<user gid>:rooms` (turbo-streams of the room list), `user_<id>_unreads` and
//! `user_<id>_reads` (the unread marks). When it renders, it writes their positions in the
//! stream history ([`crate::history`]) on its list, `data-sidebar-history="<epoch>.<rooms>.
//! <own rooms>.<unreads>.<reads>"`, read *before* the list, so nothing committed in between is
//! missed. After a reconnect the page sends them back, and gets, as one turbo-stream answer:
//!
//! - when the history covers every stream since those positions: the room-list turbo-streams
//!   it missed, as they were broadcast (Turbo drops a duplicate on `prepend`/`append`, so one
//!   received live already is not doubled); the `X-Sidebar-History` header carries the
//!   positions to send next time;
//! - when it does not: a `replace` of the whole list (`<nav id="sidebar_rooms">`) rendered
//!   now, with fresh positions, and never a page reload. The frame's stream sources stay
//!   subscribed. That is the answer after a restart (another epoch), when more was missed than
//!   `--history-limit` keeps or older than `--history-ttl`, and whenever an unread or read
//!   mark was missed: the marks' streams keep positions but no entries
//!   ([`crate::streams::Retention::Position`]: a post sends one notice per member of its
//!   room), and the memberships' `unread_at` in the database are the truth the list is
//!   rendered from.
//!
//! The streams are the signed-in user's own: the parameter holds positions only, never a
//! stream name. A malformed parameter is answered like positions the history no longer covers.

use crate::config::Config;
use crate::db::Db;
use crate::metrics::Metrics;
use crate::pubsub::Delivery;
use axum::extract::{Query, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use std::sync::Arc;

use super::context::Ctx;
use super::error::AppError;
use super::respond::TURBO_STREAM;
use crate::db::rooms;
use crate::history::{Backlog, History, Since};
use crate::render::{self, SidebarNav};
use crate::streams;

/// The response header with the positions the page sends next time.
pub const SIDEBAR_HISTORY_HEADER: &str = "x-sidebar-history";

/// Longest `history` parameter accepted, in bytes.
const MAX_PARAM: usize = 256;

/// The sidebar's streams for `user_id`: `rooms`, `<user gid>:rooms`, unreads, reads.
pub fn sidebar_streams(gid_app: &str, user_id: i64) -> [String; 4] {
    [
        crate::broadcasts::ROOMS_STREAM.to_owned(),
        streams::user_rooms(gid_app, user_id),
        streams::unreads(user_id),
        streams::reads(user_id),
    ]
}

/// The positions of `user_id`'s sidebar streams now, as `data-sidebar-history` holds them.
pub fn positions_now(history: &dyn History, gid_app: &str, user_id: i64) -> String {
    let mut out = history.epoch().to_string();
    for stream in sidebar_streams(gid_app, user_id) {
        out.push('.');
        out.push_str(&history.head(&stream).offset.to_string());
    }
    out
}

/// Reads `<epoch>.<n>.<n>.<n>.<n>`; None when malformed.
fn parse(raw: &str) -> Option<(String, [u64; 4])> {
    if raw.len() > MAX_PARAM {
        return None;
    }
    let mut parts = raw.rsplitn(5, '.');
    let mut offsets = [0u64; 4];
    for slot in offsets.iter_mut().rev() {
        *slot = parts.next()?.parse().ok()?;
    }
    let epoch = parts.next().filter(|e| !e.is_empty())?;
    Some((epoch.to_owned(), offsets))
}

/// Query of `GET /users/me/sidebar/catch_up`.
#[derive(Debug, Deserialize)]
pub struct CatchUpQuery {
    /// The page's `data-sidebar-history` (or the previous answer's `X-Sidebar-History`).
    pub history: Option<String>,
}

/// `GET /users/me/sidebar/catch_up?history=<positions>`: see the module docs. Signed-in
/// users only (401 otherwise); the answer is a turbo-stream, empty when nothing was missed.
pub async fn catch_up(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    State(metrics): State<Arc<Metrics>>,
    Extension(ctx): Extension<Ctx>,
    Query(q): Query<CatchUpQuery>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let history = delivery.history.as_ref();
    let streams = sidebar_streams(&config.gid_app, user.id);
    let mut body = String::new();
    let mut heads = [0u64; 4];
    let mut covered = false;
    let mut replayed = 0;
    if let Some((epoch, offsets)) = q.history.as_deref().and_then(parse) {
        covered = true;
        for (i, stream) in streams.iter().enumerate() {
            let since = Since::Offset {
                epoch: epoch.clone(),
                offset: offsets[i],
            };
            let Backlog::Entries(entries) = history.read(stream, &since).await else {
                covered = false;
                break;
            };
            heads[i] = entries.last().map_or(offsets[i], |e| e.offset);
            replayed += entries.len();
            for entry in entries {
                // A turbo-stream broadcast: one JSON string of HTML. (The marks' streams have
                // no entries: a mark missed reads as not covered above.)
                match serde_json::from_slice::<String>(&entry.payload) {
                    Ok(html) => body.push_str(&html),
                    Err(_) => covered = false,
                }
            }
        }
    }
    let mut response = if covered {
        metrics.history_replayed(replayed);
        let next = format!(
            "{}.{}.{}.{}.{}",
            history.epoch(),
            heads[0],
            heads[1],
            heads[2],
            heads[3]
        );
        let mut response = (
            [(header::CONTENT_TYPE, HeaderValue::from_static(TURBO_STREAM))],
            body,
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&next) {
            response.headers_mut().insert(SIDEBAR_HISTORY_HEADER, value);
        }
        response
    } else {
        metrics.history_rejected();
        let positions = positions_now(history, &config.gid_app, user.id);
        let list = rooms::for_sidebar(&db.pool, user.id).await?;
        let (threads, list): (Vec<_>, Vec<_>) = list
            .into_iter()
            .partition(|r| r.kind == crate::db::RoomKind::Thread);
        let (direct, shared): (Vec<_>, Vec<_>) = list
            .into_iter()
            .partition(|r| r.kind == crate::db::RoomKind::Direct);
        let people = crate::db::users::direct_placeholders(&db.pool, user.id).await?;
        let may_create_rooms =
            super::rooms::shared::may_create_rooms(&db.account_settings, &db.pool, user).await?;
        let token = ctx.csrf_token();
        let unread = crate::db::inbox::unread_count(&db.pool, user.id).await?;
        let nav = askama::Template::render(&SidebarNav {
            user_id: user.id,
            inbox_badge: render::inbox_badge(unread),
            shared,
            direct,
            threads,
            history: &positions,
            people,
            csrf_token: &token,
            may_create_rooms,
        })?;
        let mut response = (
            [(header::CONTENT_TYPE, HeaderValue::from_static(TURBO_STREAM))],
            render::turbo_stream("replace", "sidebar_rooms", Some(&nav)),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&positions) {
            response.headers_mut().insert(SIDEBAR_HISTORY_HEADER, value);
        }
        response
    };
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn positions_parse_and_anything_else_is_none() {
        assert_eq!(
            parse("Ab-_1234.1.2.3.4"),
            Some(("Ab-_1234".into(), [1, 2, 3, 4]))
        );
        assert_eq!(parse("a.b.c.1.2.3.4"), Some(("a.b.c".into(), [1, 2, 3, 4])));
        for bad in [
            "",
            "e.1.2.3",
            ".1.2.3.4",
            "e.1.2.3.-4",
            "e.1.2.3.x",
            &"e".repeat(300),
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
