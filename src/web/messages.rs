//! Posting, editing, deleting and boosting messages (Campfire's `MessagesController`,
//! `Messages::ByBotsController` and `Messages::BoostsController`).
//!
//! A post is stored in one transaction with its membership updates and only then handed to
//! the fan-out engine; the response never waits for a socket write.

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;

use super::context::Ctx;
use super::error::AppError;
use super::extract::{parse_id, CachedMemberRoom, MemberRoom};
use super::files;
use super::respond::stream_or_back;
use crate::broadcasts;
use crate::db::blobs::Blob;
use crate::db::rooms::Room;
use crate::db::users::User;
use crate::db::{messages, rooms, users};
use crate::metrics::PostSource;
use crate::render;
use crate::state::{AppState, SharedState};

/// Longest accepted `client_message_id`, in bytes.
pub const MAX_CLIENT_MESSAGE_ID: usize = 64;

/// The 422 detail for a `client_message_id` that already belongs to another message: its
/// element id (`message_<client_message_id>`) is taken in every open page, so the post is
/// refused rather than letting later edits and deletes act on the other message's element.
pub const CLIENT_MESSAGE_ID_TAKEN: &str =
    "message[client_message_id] already belongs to another message";

/// Turns typed plain text into message body HTML: escaped, lines joined with `<br>`, inside a
/// `<div>` (the shape of an Action Text body).
///
/// The escaping is Rails' `ERB::Util.html_escape` (`&amp; &lt; &gt; &quot; &#39;`), not
/// askama's `Html` escaper, which writes numeric references (`&#60;`): the body is stored and
/// shared with Rails-written rows, so its bytes must be the ones Rails would store.
pub fn body_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str("<div>");
    for (i, line) in text.trim().lines().enumerate() {
        if i > 0 {
            out.push_str("<br>");
        }
        out.push_str(&html_escape(line));
    }
    out.push_str("</div>");
    out
}

/// Rails' `ERB::Util.html_escape` of `text`: `&amp; &lt; &gt; &quot; &#39;`.
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The plain text of a message body, for the edit form: the inverse of [`body_html`] (each
/// `<br>` a line break, other tags dropped, character references decoded), so a body typed in
/// the composer comes back exactly as typed. Bodies written by Rails (Action Text) lose their
/// markup, keeping their text and line breaks.
pub fn body_text(body: &str) -> String {
    let mut text = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find('<') {
        text.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('>') else {
            rest = &rest[start..];
            break;
        };
        let tag = rest[start + 1..start + end].trim().to_ascii_lowercase();
        let name = tag.trim_start_matches('/');
        let name = name.split([' ', '/']).next().unwrap_or("");
        let block_end = tag.starts_with('/') && matches!(name, "div" | "p" | "li" | "h1");
        if name == "br" || (block_end && !text.is_empty() && !text.ends_with('\n')) {
            text.push('\n');
        }
        rest = &rest[start + end + 1..];
    }
    text.push_str(rest);
    decode_references(text.trim())
}

/// Decodes the character references an escaped body holds: the five of [`html_escape`],
/// `&nbsp;` and numeric ones (`&#60;`, `&#x3C;`). Anything else is kept as written.
fn decode_references(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest.find(';').filter(|end| *end <= 10).and_then(|end| {
            let name = &rest[1..end];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "nbsp" => Some('\u{a0}'),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, end))
        });
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn client_message_id(given: Option<&str>) -> Result<String, AppError> {
    match given.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(messages::new_client_message_id()),
        Some(id) if id.len() <= MAX_CLIENT_MESSAGE_ID
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Ok(id.to_owned())
        }
        Some(_) => Err(AppError::Unprocessable(format!(
            "message[client_message_id] must be 1-{MAX_CLIENT_MESSAGE_ID} letters, digits, '-' or '_'"
        ))),
    }
}

/// Stores a post by `author` in `room` and broadcasts it (Campfire's `Room#receive` and
/// `Message#broadcast_create`): the one path of people's and bots' posts. Returns the stored
/// message and its turbo-stream `append` (the HTML the poster's answer carries). The post is
/// answered only after its commit; the broadcast never waits for a socket.
///
/// # Errors
/// 422 for a blank `text` or a `client_message_id` that already names another message (the
/// unique index of migration 0008); a database failure (nothing stored); a render failure (stored,
/// not broadcast).
async fn post_message(
    state: &AppState,
    room: &Room,
    author: &User,
    text: &str,
    client_message_id: &str,
    attachment: Option<&Blob>,
) -> Result<(messages::Message, String), AppError> {
    if text.trim().is_empty() && attachment.is_none() {
        return Err(AppError::Unprocessable(
            "message body can't be blank".into(),
        ));
    }
    // The append and the unread notices go out at the commit, under the write lock: a room's
    // appends reach its subscribers in the order of the messages' ids, and each member's
    // connection finds the append and its notice queued together (see
    // `messages::create_then`).
    // A file's message has an empty body, as Campfire's posts of one file each.
    let body = if text.trim().is_empty() {
        String::new()
    } else {
        body_html(text)
    };
    let new = messages::NewMessage {
        room_id: room.id,
        creator_id: author.id,
        creator_name: &author.name,
        client_message_id,
        body: &body,
        attachment_blob_id: attachment.map(|b| b.id),
    };
    let (message, appended) = messages::create_then(
        &state.pool,
        &state.auth_cache,
        &new,
        |message, member_ids| {
            broadcasts::message_created(&state.broadcaster, room, message, member_ids)
        },
    )
    .await
    .map_err(|e| {
        if e.as_database_error()
            .is_some_and(|d| d.is_unique_violation())
        {
            AppError::Unprocessable(CLIENT_MESSAGE_ID_TAKEN.into())
        } else {
            AppError::from(e)
        }
    })?;
    Ok((message, appended?))
}

/// A post's text, client message id and file: from the urlencoded form (`message[attachment]`
/// a direct upload's signed blob id) or from a multipart form (`message[attachment]` the file,
/// as Campfire's composer sends it; stored as a new blob).
async fn post_fields(
    state: &AppState,
    ctx: &Ctx,
    user: &User,
    request: Request,
    headers: &HeaderMap,
) -> Result<(String, Option<String>, Option<Blob>, bool), AppError> {
    let (file_field, text_field, cid_field) = (
        "message[attachment]",
        "message[body]",
        "message[client_message_id]",
    );
    if files::is_multipart(headers) {
        let form = files::read_upload_form(state, user, request, file_field).await?;
        let text = form.get(text_field).unwrap_or("").to_owned();
        let cid = form.get(cid_field).map(str::to_owned);
        return Ok((text, cid, form.blob, true));
    }
    let text = ctx.form.get(text_field).unwrap_or("").to_owned();
    let cid = ctx.form.get(cid_field).map(str::to_owned);
    let blob = match ctx.form.get(file_field).filter(|v| !v.is_empty()) {
        Some(signed_id) => Some(files::blob_for_attaching(state, user, signed_id).await?),
        None => None,
    };
    Ok((text, cid, blob, false))
}

/// Posts and, when the post failed, purges a blob the request itself uploaded; when it
/// succeeded, starts processing the file.
async fn post_with_file(
    state: &SharedState,
    room: &Room,
    author: &User,
    text: &str,
    cid: &str,
    blob: Option<Blob>,
    uploaded_here: bool,
) -> Result<(messages::Message, String), AppError> {
    match post_message(state, room, author, text, cid, blob.as_ref()).await {
        Ok(posted) => {
            if let Some(blob) = blob {
                files::spawn_processing(state.clone(), room.clone(), posted.0.id, blob);
            }
            Ok(posted)
        }
        Err(e) => {
            if let (Some(blob), true) = (blob, uploaded_here) {
                files::purge_blob(state, blob.id).await;
            }
            Err(e)
        }
    }
}

/// `POST /rooms/{room_id}/messages` with `message[body]`, `message[client_message_id]` and
/// optionally `message[attachment]` (a file in a multipart form, or a direct upload's signed
/// blob id): 200 turbo-stream `append` when asked for, else 302 back to the room. Non-members
/// get 404, a blank body without a file 422. The membership comes from the access cache
/// ([`CachedMemberRoom`]).
pub async fn create(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    CachedMemberRoom { user, room }: CachedMemberRoom,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, AppError> {
    let started = std::time::Instant::now();
    let (text, cid, blob, uploaded_here) =
        post_fields(&state, &ctx, &user, request, &headers).await?;
    let cid = match client_message_id(cid.as_deref()) {
        Ok(cid) => cid,
        Err(e) => {
            if let (Some(blob), true) = (blob, uploaded_here) {
                files::purge_blob(&state, blob.id).await;
            }
            return Err(e);
        }
    };
    let (_, html) = post_with_file(&state, &room, &user, &text, &cid, blob, uploaded_here).await?;
    let response = stream_or_back(&headers, html, room.id);
    state
        .metrics
        .post_finished(PostSource::Web, started.elapsed());
    Ok(response)
}

/// `POST /rooms/{room_id}/{bot_key}/messages`: a bot posts the raw request body as the
/// message text, or a multipart form with a file `attachment` (and an optional `body`), as
/// `curl -F attachment=@file` sends it; 201 with `Location`. A bad key gets a bare 401 (no
/// body, no cookie); a room the bot is not in, a bare 404 (Campfire's `head`).
pub async fn create_by_bot(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path((room_id, bot_key)): Path<(String, String)>,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, AppError> {
    let started = std::time::Instant::now();
    let Some(bot) = users::authenticate_bot(&state.pool, &bot_key).await? else {
        return Ok(StatusCode::UNAUTHORIZED.into_response());
    };
    let Ok(room_id) = parse_id(&room_id) else {
        return Ok(StatusCode::NOT_FOUND.into_response());
    };
    let Some(room) = state
        .auth_cache
        .find_for_member(&state.pool, room_id, bot.id)
        .await?
    else {
        return Ok(StatusCode::NOT_FOUND.into_response());
    };
    let (text, blob) = if files::is_multipart(&headers) {
        let form = files::read_upload_form(&state, &bot, request, "attachment").await?;
        (form.get("body").unwrap_or("").to_owned(), form.blob)
    } else {
        let text = std::str::from_utf8(&ctx.body)
            .map_err(|_| AppError::BadRequest("body is not valid UTF-8".into()))?;
        (text.to_owned(), None)
    };
    let cid = messages::new_client_message_id();
    let (message, _) = post_with_file(&state, &room, &bot, &text, &cid, blob, true).await?;
    let location = format!("/rooms/{}/@{}", room.id, message.id);
    let response = (StatusCode::CREATED, [(header::LOCATION, location)]).into_response();
    state
        .metrics
        .post_finished(PostSource::Bot, started.elapsed());
    Ok(response)
}

/// The message an edit form, `PATCH` or `DELETE` names in the member's room (404 otherwise), when the user is
/// its creator or an administrator (403 otherwise).
async fn editable_message(
    state: &SharedState,
    member: &MemberRoom,
    message_id: &str,
) -> Result<messages::Message, AppError> {
    let message = messages::find(&state.pool, member.room.id, parse_id(message_id)?)
        .await?
        .ok_or(AppError::NotFound)?;
    if message.creator_id != member.user.id && member.user.role != "administrator" {
        return Err(AppError::Forbidden);
    }
    Ok(message)
}

/// `GET /rooms/{room_id}/messages/{id}/edit`: the edit form of a message (Campfire's
/// `MessagesController#edit`), for its creator or an administrator (403 for others, 404 for
/// non-members and unknown messages, 401 signed out). A whole page whose form sits in the
/// `<turbo-frame id="presentation_message_<client_message_id>">` that the message's Edit link
/// targets: Turbo swaps it into the message in place, a page without JavaScript shows it alone.
/// The form `PATCH`es the message (see [`update`]).
pub async fn edit(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    member: MemberRoom,
    Path((_, message_id)): Path<(String, String)>,
) -> Result<Response, AppError> {
    let message = editable_message(&state, &member, &message_id).await?;
    let token = ctx.csrf_token();
    let text = html_escape(&body_text(&message.body));
    let view = render::MessageEdit {
        csrf_token: &token,
        m: &message,
        text: &text,
    };
    Ok(Html(askama::Template::render(&view)?).into_response())
}

/// `PATCH /rooms/{room_id}/messages/{id}` with `message[body]`: the creator (or an
/// administrator) edits; broadcasts a `replace`.
pub async fn update(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    member: MemberRoom,
    Path((_, message_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let message = editable_message(&state, &member, &message_id).await?;
    let room = member.room;
    let text = ctx.form.get("message[body]").unwrap_or("");
    if text.trim().is_empty() {
        return Err(AppError::Unprocessable(
            "message[body] can't be blank".into(),
        ));
    }
    let updated = messages::update_body(&state.pool, room.id, message.id, &body_html(text))
        .await?
        .ok_or(AppError::NotFound)?;
    let html = broadcasts::message_updated(&state.broadcaster, &room, &updated)?;
    Ok(stream_or_back(&headers, html, room.id))
}

/// `DELETE /rooms/{room_id}/messages/{id}`: the creator (or an administrator) deletes;
/// broadcasts a `remove`.
pub async fn destroy(
    State(state): State<SharedState>,
    member: MemberRoom,
    Path((_, message_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let message = editable_message(&state, &member, &message_id).await?;
    let room = member.room;
    let removed = messages::delete(&state.pool, room.id, message.id)
        .await?
        .ok_or(AppError::NotFound)?;
    let html = broadcasts::message_removed(&state.broadcaster, &room, &removed);
    if removed.attachment.is_some() {
        files::purge_orphans(&state).await;
    }
    Ok(stream_or_back(&headers, html, room.id))
}

/// `POST /messages/{id}/boosts` with `boost[content]` (at most 16 characters): broadcasts an
/// `append` to the message's boosts container.
pub async fn boost(
    State(state): State<SharedState>,
    Extension(ctx): Extension<Ctx>,
    Path(message_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let message = messages::find_any(&state.pool, parse_id(&message_id)?)
        .await?
        .ok_or(AppError::NotFound)?;
    let room = rooms::find_for_member(&state.pool, message.room_id, user.id)
        .await?
        .ok_or(AppError::NotFound)?;
    let content = ctx.form.get("boost[content]").unwrap_or("").trim();
    if content.is_empty() || content.chars().count() > 16 {
        return Err(AppError::Unprocessable(
            "boost[content] must be 1-16 characters".into(),
        ));
    }
    let boost = messages::boost(&state.pool, message.id, user.id, &user.name, content).await?;
    let html = broadcasts::boost_created(&state.broadcaster, &room, &message, &boost);
    Ok(stream_or_back(&headers, html, room.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_html_escapes_and_keeps_lines() {
        assert_eq!(
            body_html("<script>alert(1)</script>"),
            "<div>&lt;script&gt;alert(1)&lt;/script&gt;</div>"
        );
        assert_eq!(body_html(" a\nb & c "), "<div>a<br>b &amp; c</div>");
        // Rails' html_escape, byte for byte: named references, &#39; for the apostrophe.
        assert_eq!(
            body_html("say \"hi\" & it's <b>\r\ncafé ☕"),
            "<div>say &quot;hi&quot; &amp; it&#39;s &lt;b&gt;<br>café ☕</div>"
        );
        assert_eq!(body_html("   \n  "), "<div></div>");
    }

    #[test]
    fn body_text_inverts_body_html() {
        for typed in [
            "plain",
            "a < b & \"c\" it's\nsecond line\n\nafter a blank",
            "&amp; typed literally &lt;",
            "café ☕ <script>",
        ] {
            assert_eq!(body_text(&body_html(typed)), typed);
        }
        assert_eq!(
            body_text("<div>Rails <strong>rich</strong> text</div><div>two &#60;3 &#x263A;</div>"),
            "Rails rich text\ntwo <3 ☺"
        );
        assert_eq!(body_text("<p>a</p><p>b&nbsp;c</p>"), "a\nb\u{a0}c");
        assert_eq!(body_text("broken < tag & co"), "broken < tag & co");
    }

    #[test]
    fn client_message_ids_are_checked() {
        assert_eq!(client_message_id(Some("abc-1_2")).unwrap(), "abc-1_2");
        assert!(client_message_id(Some("a\"><script>")).is_err());
        assert!(client_message_id(Some(&"a".repeat(65))).is_err());
        assert_eq!(client_message_id(None).unwrap().len(), 36);
    }
}
