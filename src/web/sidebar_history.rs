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
//!   received live already is not doubled), and for each room whose unread mark changed
//!   meanwhile, a `replace` of its entry rendered from the database now (the unread and read
//!   notices of one room on two streams cannot be ordered by their offsets; the membership's
//!   `unread_at` is the truth); the `X-Sidebar-History` header carries the positions to send
//!   next time;
//! - when it does not (a restart: another epoch; more missed than `--history-limit` keeps, or
//!   older than `--history-ttl`): a `replace` of the whole list (`<nav id="sidebar_rooms">`)
//!   rendered now, with fresh positions, and never a page reload. The frame's stream sources
//!   stay subscribed.
//!
//! The streams are the signed-in user's own: the parameter holds positions only, never a
//! stream name. A malformed parameter is answered like positions the history no longer covers.

use axum::extract::{Query, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;

use super::context::Ctx;
use super::error::AppError;
use super::respond::TURBO_STREAM;
use crate::db::rooms;
use crate::history::{Backlog, History, Since};
use crate::render::{self, SidebarNav};
use crate::state::SharedState;
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

/// A room's notice, as the unread and read streams carry it (`{"roomId":…}` or
/// `{"room_id":…}`, with `"mentioned":true` for a mention).
#[derive(Debug, Deserialize)]
struct Notice {
    #[serde(rename = "roomId", alias = "room_id")]
    room_id: i64,
    #[serde(default)]
    mentioned: bool,
}

/// `GET /users/me/sidebar/catch_up?history=<positions>`: see the module docs. Signed-in
/// users only (401 otherwise); the answer is a turbo-stream, empty when nothing was missed.
pub async fn catch_up(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Query(q): Query<CatchUpQuery>,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let history = state.history.as_ref();
    let streams = sidebar_streams(&state.config.gid_app, user.id);
    let mut body = String::new();
    let mut heads = [0u64; 4];
    let mut changed: Vec<(i64, bool)> = Vec::new();
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
                if i < 2 {
                    // A turbo-stream broadcast: one JSON string of HTML.
                    match serde_json::from_slice::<String>(&entry.payload) {
                        Ok(html) => body.push_str(&html),
                        Err(_) => covered = false,
                    }
                } else {
                    match serde_json::from_slice::<Notice>(&entry.payload) {
                        Ok(n) => match changed.iter_mut().find(|(id, _)| *id == n.room_id) {
                            Some((_, mentioned)) => *mentioned |= n.mentioned,
                            None => changed.push((n.room_id, n.mentioned)),
                        },
                        Err(_) => covered = false,
                    }
                }
            }
        }
    }
    let mut response = if covered {
        state.metrics.history_replayed(replayed);
        for (room_id, mentioned) in changed {
            let Some(entry) = rooms::sidebar_entry(&state.pool, room_id, user.id).await? else {
                continue;
            };
            let mut html = render::sidebar_room(&entry)?;
            if mentioned && entry.unread {
                html = html.replacen(
                    "class=\"room-link",
                    "class=\"room-link room-link--attention",
                    1,
                );
            }
            body.push_str(&render::turbo_stream(
                "replace",
                &format!("list_rooms_{}_{}", entry.kind, entry.id),
                Some(&html),
            ));
        }
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
        state.metrics.history_rejected();
        let positions = positions_now(history, &state.config.gid_app, user.id);
        let list = rooms::for_sidebar(&state.pool, user.id).await?;
        let (direct, shared): (Vec<_>, Vec<_>) = list
            .into_iter()
            .partition(|r| r.kind == crate::db::RoomKind::Direct);
        let people = crate::db::users::direct_placeholders(&state.pool, user.id).await?;
        let token = ctx.csrf_token();
        let nav = askama::Template::render(&SidebarNav {
            user_id: user.id,
            shared,
            direct,
            history: &positions,
            people,
            csrf_token: &token,
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
