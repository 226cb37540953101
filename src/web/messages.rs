//! Posting, editing, deleting and boosting messages (Campfire's `MessagesController`,
//! `Messages::ByBotsController` and `Messages::BoostsController`).
//!
//! A post is stored in one transaction with its membership updates and only then handed to
//! the fan-out engine; the response never waits for a socket write.

use crate::config::Config;
use crate::db::Db;
use crate::outbox::Outbox;
use crate::pubsub::Delivery;
use crate::rails::Keys;
use crate::storage::Storage;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;
use std::sync::Arc;

use super::context::Ctx;
use super::error::AppError;
use super::extract::{parse_id, CachedMemberRoom, EditableMessage, MemberMessage};
use super::files;
use super::respond::stream_or_back;
use crate::broadcasts;
use crate::db::blobs::Blob;
use crate::db::rooms::Room;
use crate::db::users::User;
use crate::db::{messages, users};
use crate::metrics::PostSource;
use crate::render;
use crate::rich_text;

/// Longest accepted `client_message_id`, in bytes.
pub const MAX_CLIENT_MESSAGE_ID: usize = 64;

/// The 422 detail for a `client_message_id` that already belongs to another message: its
/// element id (`message_<client_message_id>`) is taken in every open page, so the post is
/// refused rather than letting later edits and deletes act on the other message's element.
pub const CLIENT_MESSAGE_ID_TAKEN: &str =
    "message[client_message_id] already belongs to another message";

/// The form field that says how `message[body]` is written: `html` for the editor's (Trix's)
/// HTML; anything else, or none, for typed plain text (curl, bots, pages without the editor).
pub const BODY_FORMAT_FIELD: &str = "message[body_format]";

/// The body a form submits (`message[body]`, read as [`BODY_FORMAT_FIELD`] says), ready to
/// store in `room`: plain text escaped and linked, or the editor's HTML sanitized with its
/// mentions resolved to the room's active members (one query, only when it mentions someone;
/// a mention of anyone else, or with a signature that does not verify, is cut).
///
/// # Errors
/// 413 past [`rich_text::MAX_BODY_BYTES`]; 422 for a body with nothing left to show or HTML
/// nested deeper than [`rich_text::MAX_NESTING`]; a database failure.
pub async fn body_from_form(
    db: &Db,
    keys: &Keys,
    room_id: i64,
    text: &str,
    format: Option<&str>,
) -> Result<rich_text::Body, AppError> {
    if text.len() > rich_text::MAX_BODY_BYTES {
        return Err(AppError::PayloadTooLarge);
    }
    let body = if format == Some("html") {
        if rich_text::nests_deeper_than(text, rich_text::MAX_NESTING) {
            return Err(AppError::Unprocessable(format!(
                "The message nests more than {} elements deep",
                rich_text::MAX_NESTING
            )));
        }
        let draft = rich_text::sanitize(text);
        let now = crate::db::now_ms();
        let verified: Vec<(String, i64)> = draft
            .sgids()
            .iter()
            .filter_map(|sgid| {
                keys.sgids
                    .verify(sgid, "User", crate::rails::ATTACHABLE_PURPOSE, now)
                    .map(|id| (sgid.clone(), id))
            })
            .collect();
        let ids: Vec<i64> = verified.iter().map(|(_, id)| *id).collect();
        let members = messages::mentionable(&db.pool, room_id, &ids).await?;
        let people = verified
            .into_iter()
            .filter_map(|(sgid, id)| {
                let m = members.iter().find(|m| m.id == id)?;
                Some((
                    sgid,
                    rich_text::Person {
                        id,
                        name: m.name.clone(),
                    },
                ))
            })
            .collect();
        draft.finish(&people)
    } else {
        rich_text::from_plain_text(text)
    };
    if body.is_blank() {
        return Err(AppError::Unprocessable(
            "message body can't be blank".into(),
        ));
    }
    Ok(body)
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
/// 422 for a `client_message_id` that already names another message (the unique index of
/// migration 0008) and for a file attached already (migration 0016); 404 when the room was deleted after the member check (a foreign key
/// failed; nothing stored); a database failure (nothing stored); a render failure (stored,
/// not broadcast).
pub async fn post_message(
    posting: &Posting,
    room: &Room,
    author: &User,
    body: &rich_text::Body,
    client_message_id: &str,
    attachment: Option<&Blob>,
) -> Result<(messages::Message, String), AppError> {
    // The append and the unread notices go out at the commit, under the write lock: a room's
    // appends reach its subscribers in the order of the messages' ids, and each member's
    // connection finds the append and its notice queued together (see
    // `messages::create_then`).
    let new = messages::NewMessage {
        room_id: room.id,
        creator_id: author.id,
        creator_name: &author.name,
        client_message_id,
        body: &body.html,
        plain_text: Some(&body.plain_text),
        attachment_blob_id: attachment.map(|b| b.id),
        creator_avatar: posting
            .storage
            .avatars
            .get(&posting.db.pool, author.id)
            .await?,
    };
    let mentioned: Vec<i64> = body
        .mentionee_ids
        .iter()
        .copied()
        .filter(|id| *id != author.id)
        .collect();
    // A reply in a thread: refused when the thread is closed or its parent gone; its author,
    // the parent's and the people it mentions follow the thread before the post's commit
    // (their unread marks and pushes are the post's).
    let thread = if room.kind.is_thread() {
        Some(super::threads::admit_reply(&posting.db.pool, room.id, author, &mentioned).await?)
    } else {
        None
    };
    // Drawn before the write lock: the partial needs only the message's id and time from it.
    let shown = body.shown();
    let (broadcaster, urls, at, notified) = (
        posting.delivery.broadcaster.clone(),
        posting.storage.verifier.clone(),
        room.clone(),
        mentioned.clone(),
    );
    let (message, appended) = messages::create_then(
        &posting.db.pool,
        &posting.db.auth_cache,
        &posting.db.commits,
        &new,
        move |message, member_ids| {
            broadcasts::message_created(
                &broadcaster,
                &urls,
                &at,
                message,
                shown,
                member_ids,
                &notified,
            )
        },
    )
    .await
    .map_err(|e| match e.as_database_error() {
        // The file was attached by another request since it was checked.
        Some(_) if crate::db::blobs::is_already_attached(&e) => {
            AppError::Unprocessable(files::ALREADY_ATTACHED.into())
        }
        Some(d) if d.is_unique_violation() => {
            AppError::Unprocessable(CLIENT_MESSAGE_ID_TAKEN.into())
        }
        // The room (or the author) was deleted after the member check: nothing to post to.
        Some(d) if d.is_foreign_key_violation() => AppError::NotFound,
        _ => AppError::from(e),
    })?;
    queue_pushes(&posting.outbox, room, author, &message, body, mentioned);
    if let Some(thread) = &thread {
        super::threads::after_reply(&posting.db.pool, &posting.delivery.broadcaster, thread).await;
    }
    Ok((message, appended?))
}

/// Queues the web pushes of a new message (Campfire's `Room::MessagePusher`, run by its
/// `Room::PushMessageJob`) without waiting for them; `mentioned` are the people it mentions
/// but its author (told on their unread stream at the commit, [`broadcasts::message_created`]).
/// The push worker finds the recipients ([`crate::push`]).
fn queue_pushes(
    outbox: &Outbox,
    room: &Room,
    author: &User,
    message: &messages::Message,
    body: &rich_text::Body,
    mentioned: Vec<i64>,
) {
    let notification = crate::push::Notification::for_message(
        room.display_name(),
        room.kind == crate::db::RoomKind::Direct,
        &author.name,
        &body.plain_text,
        format!("/rooms/{}/@{}", room.id, message.id),
    );
    outbox.pusher.enqueue(crate::push::Job {
        room_id: room.id,
        creator_id: author.id,
        mentionee_ids: mentioned,
        notification,
        only: None,
    });
}

/// The body of a post that may carry a file: with a file, a blank text is an empty body (a
/// file's message, as Campfire's posts of one file each); otherwise [`body_from_form`].
async fn body_with_file(
    db: &Db,
    keys: &Keys,
    room_id: i64,
    text: &str,
    format: Option<&str>,
    has_file: bool,
) -> Result<rich_text::Body, AppError> {
    if has_file && text.trim().is_empty() {
        return Ok(rich_text::Body::empty());
    }
    body_from_form(db, keys, room_id, text, format).await
}

/// What a post form carries.
struct PostFields {
    text: String,
    format: Option<String>,
    client_message_id: Option<String>,
    blob: Option<Blob>,
    /// Whether the blob was uploaded by this very request (and goes if the post fails).
    uploaded_here: bool,
    /// A reply in a thread asked to be posted in the parent's room too
    /// (`also_send_to_room=1`).
    also_send_to_room: bool,
}

/// The form field of a thread's composer that posts the reply in the parent's room too.
pub const ALSO_SEND_FIELD: &str = "also_send_to_room";

/// A post's fields: from the urlencoded form (`message[attachment]` a direct upload's signed
/// blob id, as `@rails/activestorage` forms send it) or from a multipart form
/// (`message[attachment]` the file, as Campfire's composer sends it; stored as a new blob).
async fn post_fields(
    config: &Config,
    db: &Db,
    storage: &Storage,
    ctx: &Ctx,
    user: &User,
    request: Request,
    headers: &HeaderMap,
) -> Result<PostFields, AppError> {
    const FILE: &str = "message[attachment]";
    const TEXT: &str = "message[body]";
    const CID: &str = "message[client_message_id]";
    if files::is_multipart(headers) {
        let form = files::read_upload_form(config, db, storage, user, request, FILE).await?;
        return Ok(PostFields {
            text: form.get(TEXT).unwrap_or("").to_owned(),
            format: form.get(BODY_FORMAT_FIELD).map(str::to_owned),
            client_message_id: form.get(CID).map(str::to_owned),
            also_send_to_room: form.get(ALSO_SEND_FIELD) == Some("1"),
            blob: form.blob,
            uploaded_here: true,
        });
    }
    let blob = match ctx.form.get(FILE).filter(|v| !v.is_empty()) {
        Some(signed_id) => Some(files::blob_for_attaching(db, storage, user, signed_id).await?),
        None => None,
    };
    Ok(PostFields {
        text: ctx.form.get(TEXT).unwrap_or("").to_owned(),
        format: ctx.form.get(BODY_FORMAT_FIELD).map(str::to_owned),
        client_message_id: ctx.form.get(CID).map(str::to_owned),
        also_send_to_room: ctx.form.get(ALSO_SEND_FIELD) == Some("1"),
        blob,
        uploaded_here: false,
    })
}

handles_of! {
    /// What posting and editing touch: the database (the write and group commit), the
    /// broadcaster, the mention signer, the files (an attachment), the outbox (pushes and
    /// webhooks), the settings (limits) and the metrics.
    pub struct Posting {
        /// The database.
        db: Db,
        /// The broadcaster.
        delivery: Delivery,
        /// The mention signer.
        keys: Keys,
        /// Active Storage.
        storage: Arc<Storage>,
        /// Pushes and webhooks.
        outbox: Outbox,
        /// The limits of a post (its body, its file).
        config: Arc<crate::config::Config>,
        /// The post's timing.
        metrics: Arc<crate::metrics::Metrics>,
    }
}

/// Posts `fields` as `author`; when the post fails, purges a blob the request itself uploaded;
/// when it succeeds, starts processing the file (off the post path).
async fn post_with_file(
    state: &Posting,
    room: &Room,
    author: &User,
    fields: PostFields,
    client_message_id: Option<String>,
) -> Result<(messages::Message, String), AppError> {
    let PostFields {
        text,
        format,
        blob,
        uploaded_here,
        ..
    } = fields;
    let posted = async {
        let cid = match client_message_id {
            Some(cid) => cid,
            None => messages::new_client_message_id(),
        };
        let body = body_with_file(
            &state.db,
            &state.keys,
            room.id,
            &text,
            format.as_deref(),
            blob.is_some(),
        )
        .await?;
        post_message(state, room, author, &body, &cid, blob.as_ref()).await
    }
    .await;
    match posted {
        Ok(posted) => {
            if let Some(blob) = blob {
                files::spawn_processing(
                    (
                        state.db.clone(),
                        state.delivery.clone(),
                        state.storage.clone(),
                    ),
                    room.clone(),
                    posted.0.id,
                    blob,
                );
            }
            Ok(posted)
        }
        Err(e) => {
            if let (Some(blob), true) = (blob, uploaded_here) {
                files::purge_blob(&state.db, &state.storage, blob.id).await;
            }
            Err(e)
        }
    }
}

/// Posts `blob` (stored for this post) as `author`'s message without text in `room` (a bot's
/// file answer to a webhook, Campfire's `create_with_attachment!`): processed like any file;
/// when the post fails, the blob is purged.
///
/// # Errors
/// As [`post_message`].
pub async fn post_file(
    state: &Posting,
    room: &Room,
    author: &User,
    blob: Blob,
) -> Result<messages::Message, AppError> {
    let fields = PostFields {
        text: String::new(),
        format: None,
        client_message_id: None,
        also_send_to_room: false,
        blob: Some(blob),
        uploaded_here: true,
    };
    Ok(post_with_file(state, room, author, fields, None).await?.0)
}

/// What a person's post stored, left in its response's extensions for the layers after the
/// handler (the bot webhooks, `crate::web::webhooks::after_post`).
#[derive(Clone, Debug)]
pub struct Posted {
    /// The room posted in.
    pub room: Room,
    /// Who posted.
    pub author: User,
    /// The stored message.
    pub message: messages::Message,
}

/// `POST /rooms/{room_id}/messages` with `message[body]`, `message[client_message_id]`,
/// optionally `message[body_format]=html` (the editor's HTML, see [`body_from_form`]) and
/// `message[attachment]` (a file in a multipart form, or a direct upload's signed blob id):
/// 200 turbo-stream `append` when asked for, else 302 back to the room. Non-members get 404,
/// a blank body without a file 422, one over [`rich_text::MAX_BODY_BYTES`] 413. The
/// membership comes from the access cache ([`CachedMemberRoom`]).
pub async fn create(
    State(state): State<Posting>,
    Extension(ctx): Extension<Ctx>,
    CachedMemberRoom { user, room }: CachedMemberRoom,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, AppError> {
    let started = std::time::Instant::now();
    let fields = post_fields(
        &state.config,
        &state.db,
        &state.storage,
        &ctx,
        &user,
        request,
        &headers,
    )
    .await?;
    let cid = match client_message_id(fields.client_message_id.as_deref()) {
        Ok(cid) => cid,
        Err(e) => {
            if let (Some(blob), true) = (fields.blob, fields.uploaded_here) {
                files::purge_blob(&state.db, &state.storage, blob.id).await;
            }
            return Err(e);
        }
    };
    let also = (fields.also_send_to_room && room.kind.is_thread())
        .then(|| (fields.text.clone(), fields.format.clone()));
    let (message, html) = post_with_file(&state, &room, &user, fields, Some(cid)).await?;
    if let Some((text, format)) = also {
        also_send_to_room(&state, &room, &user, &text, format.as_deref()).await?;
    }
    let mut response = stream_or_back(&headers, html, room.id);
    response.extensions_mut().insert(Posted {
        room,
        author: user,
        message,
    });
    state
        .metrics
        .post_finished(PostSource::Web, started.elapsed());
    Ok(response)
}

/// `POST /rooms/{room_id}/{bot_key}/messages`: a bot posts the raw request body as the
/// message's plain text (escaped, URLs linked), or a multipart form with a file `attachment`
/// (and an optional `body`), as `curl -F attachment=@file` sends it; 201 with `Location`; 413
/// past [`rich_text::MAX_BODY_BYTES`] (or `--max-upload-bytes` for the file). A bad key gets a
/// bare 401 (no body, no cookie); a room the bot is not in, a bare 404 (Campfire's `head`).
pub async fn create_by_bot(
    State(state): State<Posting>,
    Extension(ctx): Extension<Ctx>,
    Path((room_id, bot_key)): Path<(String, String)>,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, AppError> {
    let started = std::time::Instant::now();
    let Some(bot) = users::authenticate_bot(&state.db.pool, &bot_key).await? else {
        return Ok(StatusCode::UNAUTHORIZED.into_response());
    };
    let Ok(room_id) = parse_id(&room_id) else {
        return Ok(StatusCode::NOT_FOUND.into_response());
    };
    let Some(room) = state
        .db
        .auth_cache
        .find_for_member(&state.db.pool, room_id, bot.id)
        .await?
    else {
        return Ok(StatusCode::NOT_FOUND.into_response());
    };
    let fields = if files::is_multipart(&headers) {
        let form = files::read_upload_form(
            &state.config,
            &state.db,
            &state.storage,
            &bot,
            request,
            "attachment",
        )
        .await?;
        PostFields {
            text: form.get("body").unwrap_or("").to_owned(),
            format: None,
            client_message_id: None,
            also_send_to_room: false,
            blob: form.blob,
            uploaded_here: true,
        }
    } else {
        let text = std::str::from_utf8(&ctx.body)
            .map_err(|_| AppError::BadRequest("body is not valid UTF-8".into()))?;
        PostFields {
            text: text.to_owned(),
            format: None,
            client_message_id: None,
            also_send_to_room: false,
            blob: None,
            uploaded_here: false,
        }
    };
    let (message, _) = post_with_file(&state, &room, &bot, fields, None).await?;
    let location = format!("/rooms/{}/@{}", room.id, message.id);
    let response = (StatusCode::CREATED, [(header::LOCATION, location)]).into_response();
    state
        .metrics
        .post_finished(PostSource::Bot, started.elapsed());
    Ok(response)
}

/// Replaces the body of message `message_id` of `room` with `text` (read as `format`, as for a
/// post) and broadcasts the `replace`: the broadcast's `<turbo-stream>` HTML, or None when the
/// message is gone. The edit of a member's form and of a bot's raw body alike.
///
/// # Errors
/// Those of [`body_from_form`]; a database or rendering failure.
pub async fn edit_body(
    posting: &Posting,
    room: &Room,
    message_id: i64,
    text: &str,
    format: Option<&str>,
) -> Result<Option<String>, AppError> {
    let body = body_from_form(&posting.db, &posting.keys, room.id, text, format).await?;
    let Some(updated) = messages::update_body(
        &posting.db.pool,
        room.id,
        message_id,
        &body.html,
        &body.plain_text,
    )
    .await?
    else {
        return Ok(None);
    };
    Ok(Some(broadcasts::message_updated(
        &posting.delivery.broadcaster,
        &posting.storage.verifier,
        room,
        &updated,
    )?))
}

/// `GET /rooms/{room_id}/messages/{id}/edit`: the edit form of a message (Campfire's
/// `MessagesController#edit`), for its creator or an administrator (403 for others, 404 for
/// non-members and unknown messages, 401 signed out). A whole page whose form sits in the
/// `<turbo-frame id="presentation_message_<client_message_id>">` that the message's Edit link
/// targets: Turbo swaps it into the message in place, a page without JavaScript shows it alone.
/// The form `PATCH`es the message (see [`update`]).
pub async fn edit(
    Extension(ctx): Extension<Ctx>,
    EditableMessage { message, .. }: EditableMessage,
) -> Result<Response, AppError> {
    let token = ctx.csrf_token();
    let text = rich_text::html_escape(&rich_text::plain_text(&message.body));
    let trix_html = rich_text::to_trix_html(&message.body);
    let view = render::MessageEdit {
        csrf_token: &token,
        m: &message,
        text: &text,
        trix_html: &trix_html,
    };
    Ok(Html(askama::Template::render(&view)?).into_response())
}

/// `PATCH /rooms/{room_id}/messages/{id}` with `message[body]` (and `message[body_format]`, as
/// for a post): the creator (or an administrator) edits; broadcasts a `replace`. 422 for a
/// blank body, 413 for one too long.
pub async fn update(
    State(posting): State<Posting>,
    Extension(ctx): Extension<Ctx>,
    EditableMessage { room, message }: EditableMessage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let text = ctx.form.get("message[body]").unwrap_or("");
    let format = ctx.form.get(BODY_FORMAT_FIELD);
    let html = edit_body(&posting, &room, message.id, text, format)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(stream_or_back(&headers, html, room.id))
}

/// `DELETE /rooms/{room_id}/messages/{id}`: the creator (or an administrator) deletes;
/// broadcasts a `remove`.
pub async fn destroy(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    State(storage): State<Arc<Storage>>,
    EditableMessage { room, message }: EditableMessage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let removed = messages::delete(&db.pool, room.id, message.id)
        .await?
        .ok_or(AppError::NotFound)?;
    let html = broadcasts::message_removed(&delivery.broadcaster, &room, &removed);
    if removed.attachment.is_some() {
        files::purge_orphans(&db, &storage).await;
    }
    Ok(stream_or_back(&headers, html, room.id))
}

/// `POST /messages/{id}/boosts` with `boost[content]` (at most 16 characters): broadcasts an
/// `append` to the message's boosts container; answered by [`super::boosts::boosted`].
pub async fn boost(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    Extension(ctx): Extension<Ctx>,
    MemberMessage {
        user,
        message,
        room,
    }: MemberMessage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let content = ctx.form.get("boost[content]").unwrap_or("").trim();
    if content.is_empty() || content.chars().count() > 16 {
        return Err(AppError::Unprocessable(
            "boost[content] must be 1-16 characters".into(),
        ));
    }
    super::fields::refuse_unsafe_chars("boost[content]", content)?;
    let boost = messages::boost(&db.pool, message.id, user.id, &user.name, content).await?;
    let html = broadcasts::boost_created(&delivery.broadcaster, &room, &message, &boost);
    if message.creator_id != user.id {
        super::inbox::after_boost(&db.pool, &delivery.broadcaster, message.creator_id).await;
    }
    Ok(super::boosts::boosted(&headers, html, &room, &message))
}

/// Posts a thread reply's text in the thread's parent room too, as a message of its own ("also
/// send to the room"): written by `author` with the same text and format, checked as any
/// post there (the parent room's members are the mentionable people).
///
/// # Errors
/// As [`post_message`]; 404 when the parent room is gone.
async fn also_send_to_room(
    state: &Posting,
    thread_room: &crate::db::rooms::Room,
    author: &User,
    text: &str,
    format: Option<&str>,
) -> Result<(), AppError> {
    let thread = crate::db::threads::find(&state.db.pool, thread_room.id)
        .await?
        .ok_or(AppError::NotFound)?;
    let parent_room = crate::db::rooms::find(&state.db.pool, thread.parent_room_id)
        .await?
        .ok_or(AppError::NotFound)?;
    if text.trim().is_empty() {
        return Ok(());
    }
    let body = body_from_form(&state.db, &state.keys, parent_room.id, text, format).await?;
    let cid = crate::db::messages::new_client_message_id();
    post_message(state, &parent_room, author, &body, &cid, None).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_message_ids_are_checked() {
        assert_eq!(client_message_id(Some("abc-1_2")).unwrap(), "abc-1_2");
        assert!(client_message_id(Some("a\"><script>")).is_err());
        assert!(client_message_id(Some(&"a".repeat(65))).is_err());
        assert_eq!(client_message_id(None).unwrap().len(), 36);
    }
}
