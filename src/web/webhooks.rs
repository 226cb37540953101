//! Bots that answer (Campfire's `MessagesController#deliver_webhooks_to_bots`,
//! `Bot::WebhookJob` and `Webhook`): a message that reaches a bot with a webhook URL is posted
//! to that URL as JSON, and the bot's answer is posted back into the room as the bot.
//!
//! Who is reached: in a direct room, every active bot member with a webhook (but the message's
//! creator); in other rooms, the active bots with a webhook that the message mentions
//! (`db::messages::mentionees`, the mention attachments of the stored body; see
//! [`mentioned_bots`]).
//!
//! The post path only meets [`after_post`], a layer on `POST /rooms/{room_id}/messages` that
//! reads the handler's [`Posted`] and calls [`deliver_later`], which costs an atomic load while
//! no webhook exists, and otherwise spawns the lookup and queues the deliveries (bounded queue, see
//! [`crate::webhooks`]); a slow or hanging endpoint never delays a post.
//!
//! The payload, byte for byte the keys of Campfire's `Webhook#payload`:
//!
//! ```json
//! {"user":{"id":1,"name":"David"},
//!  "room":{"id":2,"name":"All Talk","path":"/rooms/2/5-botToken/messages"},
//!  "message":{"id":9,"body":{"html":"<div>@Bot hi</div>","plain":"hi"},"path":"/rooms/2/@9"}}
//! ```
//!
//! A message in a thread (a room of kind `thread`, see `crate::db::threads`) has one key more,
//! `thread`, and its `room` is the thread's room, so the bot's answer (and any post to
//! `room.path`, the bot API's route with the thread's room id) lands in the thread:
//!
//! ```json
//! "thread":{"id":12,"path":"/rooms/12/5-botToken/messages",
//!  "parent":{"room_id":2,"message_id":9,"path":"/rooms/2/@9"}}
//! ```
//!
//! A message outside threads has no `thread` key: the payload stays Campfire's.
//!
//! `plain` is the text without the recipient's own mention, trimmed. The answer: a 200 with
//! `Content-Type` `text/plain` or `text/html` is posted as the bot's message (through the same
//! path and limits as the bot API); no answer within 7 s posts "Failed to respond within 7
//! seconds"; a 200 with any other content type is posted as a file, `attachment.<subtype>`
//! (Campfire's `receive_attachment_reply_to`); anything else posts nothing.

use crate::config::Config;
use crate::db::Db;
use crate::outbox::Outbox;
use crate::storage::Storage;

use serde_json::json;

use axum::extract::{FromRef, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::messages::{post_file, post_message, Posted};
use crate::db::messages::{self, Message};
use crate::db::rooms::{self, Room};
use crate::db::users::User;
use crate::db::webhooks::{self as store, Recipient};
use crate::webhooks::{Delivery, DeliveryError, ENDPOINT_TIMEOUT};

/// The layer after a person's post: hands what the handler stored ([`Posted`], in the
/// response's extensions) to [`deliver_later`]. Other responses pass untouched.
pub async fn after_post(
    State(state): State<super::messages::Posting>,
    request: Request,
    next: Next,
) -> Response {
    let response = next.run(request).await;
    if let Some(posted) = response.extensions().get::<Posted>() {
        deliver_later(&state, &posted.room, &posted.author, &posted.message);
    }
    response
}

/// After `message` by `author` is stored in `room`: reaches the bots it should (see the
/// module docs), off the post path.
pub fn deliver_later(
    state: &super::messages::Posting,
    room: &Room,
    author: &User,
    message: &Message,
) {
    if state.outbox.webhooks.present().known() == Some(false) {
        return;
    }
    let (db, outbox) = (state.db.clone(), state.outbox.clone());
    let room = room.clone();
    let author = author.clone();
    let message = message.clone();
    tokio::spawn(async move {
        if let Err(e) = queue(&db, &outbox, &room, &author, &message).await {
            tracing::warn!(error = %e, message_id = message.id, "webhook lookup failed");
        }
    });
}

async fn queue(
    db: &Db,
    outbox: &Outbox,
    room: &Room,
    author: &User,
    message: &Message,
) -> sqlx::Result<()> {
    if !store::any(&db.pool, outbox.webhooks.present()).await? {
        return Ok(());
    }
    let members = store::bots_in_room(&db.pool, room.id, author.id).await?;
    if members.is_empty() {
        return Ok(());
    }
    let recipients = if room.kind == crate::db::RoomKind::Direct {
        members
    } else {
        let mentioned = messages::mentionees(&db.pool, message).await?;
        mentioned_bots(&mentioned, members)
    };
    let thread = if room.kind.is_thread() {
        crate::db::threads::find(&db.pool, room.id).await?
    } else {
        None
    };
    for bot in recipients {
        let payload = payload(room, author, message, &bot, thread.as_ref());
        outbox.webhooks.enqueue(Delivery {
            bot_id: bot.bot_id,
            room_id: room.id,
            url: bot.url.clone(),
            payload,
        });
    }
    Ok(())
}

/// The bots among `members` (the room's bots with a webhook) that are among `mentioned` (the
/// message's mentionees: mention attachments of active members, Campfire's
/// `@message.mentionees.active_bots`).
pub fn mentioned_bots(
    mentioned: &[messages::Mentionee],
    members: Vec<Recipient>,
) -> Vec<Recipient> {
    members
        .into_iter()
        .filter(|bot| {
            mentioned
                .iter()
                .any(|m| m.id == bot.bot_id && m.role == crate::db::Role::Bot)
        })
        .collect()
}

/// The plain text without the recipient's mention, trimmed (Campfire's
/// `Webhook#without_recipient_mentions`: every `@<bot name>` removed, then the white space at
/// both ends). The mention is matched without regard to case, one character of the text
/// against one of the name (each compared by its full lower case, `char::to_lowercase`), and
/// removed by its byte range in the original text: a character whose lower case has another
/// length (`İ`, `ẞ`) never shifts the cut.
fn without_mention(plain: &str, bot_name: &str) -> String {
    let needle: Vec<char> = std::iter::once('@').chain(bot_name.chars()).collect();
    let mut out = String::with_capacity(plain.len());
    let mut kept_from = 0;
    let mut at = 0;
    while at < plain.len() {
        if let Some(len) = mention_at(&plain[at..], &needle) {
            out.push_str(&plain[kept_from..at]);
            at += len;
            kept_from = at;
        } else {
            at += plain[at..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out.push_str(&plain[kept_from..]);
    out.trim().to_owned()
}

/// The byte length of the prefix of `text` that is `needle`, regardless of case; `None` when
/// `text` does not start with it.
fn mention_at(text: &str, needle: &[char]) -> Option<usize> {
    let mut chars = text.char_indices();
    for wanted in needle {
        let (_, got) = chars.next()?;
        if got != *wanted && !got.to_lowercase().eq(wanted.to_lowercase()) {
            return None;
        }
    }
    Some(chars.next().map_or(text.len(), |(i, _)| i))
}

/// Campfire's `Webhook#payload` for `bot`; for a message in `thread`, a `thread` key more (see
/// the module docs): the bot answers in the thread through `room.path`, as in any room.
pub fn payload(
    room: &Room,
    author: &User,
    message: &Message,
    bot: &Recipient,
    thread: Option<&crate::db::threads::Thread>,
) -> Vec<u8> {
    let plain = crate::rich_text::plain_text(&message.body);
    let mut payload = json!({
        "user": {"id": author.id, "name": author.name},
        "room": {
            "id": room.id,
            "name": room.name,
            "path": format!("/rooms/{}/{}-{}/messages", room.id, bot.bot_id, bot.bot_token),
        },
        "message": {
            "id": message.id,
            "body": {"html": message.body, "plain": without_mention(&plain, &bot.name)},
            "path": format!("/rooms/{}/@{}", room.id, message.id),
        },
    });
    if let Some(thread) = thread {
        payload["thread"] = json!({
            "id": thread.id,
            "path": format!("/rooms/{}/{}-{}/messages", thread.id, bot.bot_id, bot.bot_token),
            "parent": {
                "room_id": thread.parent_room_id,
                "message_id": thread.parent_message_id,
                "path": format!("/rooms/{}/@{}", thread.parent_room_id, thread.parent_message_id),
            },
        });
    }
    payload.to_string().into_bytes()
}

/// One delivery and its answer (Campfire's `Webhook#deliver`): a 200 with text is posted as
/// text, a 200 with another content type as a file, a timeout as "Failed to respond within 7
/// seconds".
pub async fn deliver(state: &super::messages::Posting, delivery: &Delivery) {
    let answer = match state.outbox.webhooks.deliver(delivery).await {
        Ok(reply) if reply.status == 200 && !reply.body.is_empty() => answer_of(reply),
        Ok(reply) => {
            tracing::debug!(
                status = reply.status,
                bot_id = delivery.bot_id,
                "webhook answered without text or a file"
            );
            None
        }
        Err(DeliveryError::TimedOut) => Some(Answer::Text {
            html: false,
            text: format!(
                "Failed to respond within {} seconds",
                ENDPOINT_TIMEOUT.as_secs()
            ),
        }),
        Err(e) => {
            tracing::info!(error = %e, bot_id = delivery.bot_id, "webhook delivery failed");
            None
        }
    };
    let Some(answer) = answer else {
        return;
    };
    if let Err(e) = post_answer(state, delivery, answer).await {
        tracing::info!(error = %e, bot_id = delivery.bot_id, "webhook answer not posted");
    }
}

/// What a 200 answer posts: `text/plain` and `text/html` as text (when it decodes and is not
/// blank), any other content type as a file named `attachment.<subtype>` (Campfire's
/// `extract_attachment_from`); an answer without a content type posts nothing. Text is
/// decoded by [`decode_text`].
fn answer_of(reply: crate::webhooks::Reply) -> Option<Answer> {
    match reply.content_type.as_str() {
        "" => None,
        "text/plain" | "text/html" => decode_text(&reply.body, reply.charset.as_deref())
            .filter(|text| !text.trim().is_empty())
            .map(|text| Answer::Text {
                html: reply.content_type == "text/html",
                text,
            }),
        other => Some(Answer::File {
            filename: attachment_name(other),
            bytes: reply.body,
        }),
    }
}

/// A text answer's body as a string: decoded from the `charset` of its `Content-Type` by the
/// WHATWG Encoding Standard's labels and decoders (`encoding_rs`; `iso-8859-1` is read as
/// windows-1252, as browsers do; a byte order mark wins over the label, and bytes that are
/// not of the charset become U+FFFD), or, without a charset, as UTF-8, strictly.
/// `None` for a charset that is no label of the standard, or bytes that are not UTF-8 when
/// none is given.
pub fn decode_text(body: &[u8], charset: Option<&str>) -> Option<String> {
    match charset {
        None => std::str::from_utf8(body).ok().map(str::to_owned),
        Some(label) => {
            let encoding = encoding_rs::Encoding::for_label(label.as_bytes())?;
            let (text, _, _) = encoding.decode(body);
            Some(text.into_owned())
        }
    }
}

/// `attachment.<extension>` for a content type: its subtype when that is a plain word
/// (`image/png` → `attachment.png`, `application/pdf` → `attachment.pdf`; `image/svg+xml` →
/// `attachment.svg`), else `attachment.bin`.
pub fn attachment_name(content_type: &str) -> String {
    let subtype = content_type
        .split_once('/')
        .map(|(_, sub)| sub.split('+').next().unwrap_or(""))
        .unwrap_or("");
    let ext = match subtype {
        "jpeg" => "jpg",
        s if !s.is_empty() && s.len() <= 10 && s.bytes().all(|b| b.is_ascii_alphanumeric()) => s,
        _ => "bin",
    };
    format!("attachment.{ext}")
}

/// A webhook's answer to post.
#[derive(Debug)]
enum Answer {
    /// Text, as `text/html` (sanitized as the editor's HTML) or plain text.
    Text {
        /// Whether it came as `text/html`.
        html: bool,
        /// The answer's text.
        text: String,
    },
    /// A file.
    File {
        /// Its name, `attachment.<extension>`.
        filename: String,
        /// Its bytes.
        bytes: bytes::Bytes,
    },
}

/// Posts `answer` as the bot in the delivery's room, with the bot API's checks: the bot is
/// still active and a member; text fits the body limits (HTML goes through the body sanitizer,
/// no mentions kept; plain text is escaped); a file is stored with the limits of the bot API's
/// uploads (rate and `--max-upload-bytes`) and processed like any.
async fn post_answer(
    state: &super::messages::Posting,
    delivery: &Delivery,
    answer: Answer,
) -> anyhow::Result<()> {
    let bot = crate::db::users::find(&state.db.pool, delivery.bot_id)
        .await?
        .filter(|u| u.is_active() && u.role == crate::db::Role::Bot)
        .ok_or_else(|| anyhow::anyhow!("the bot is gone"))?;
    let room = rooms::find_for_member(&state.db.pool, delivery.room_id, bot.id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("the bot left the room"))?;
    let (html, text) = match answer {
        Answer::Text { html, text } => (html, text),
        Answer::File { filename, bytes } => {
            let blob = store_file(
                &state.config,
                &state.db,
                &state.storage,
                &bot,
                &filename,
                bytes,
            )
            .await?;
            post_file(state, &room, &bot, blob)
                .await
                .map_err(|e| anyhow::anyhow!("{e:?}"))?;
            return Ok(());
        }
    };
    anyhow::ensure!(
        text.len() <= state.config.max_body_bytes && text.len() <= crate::rich_text::MAX_BODY_BYTES,
        "answer over the body limit"
    );
    anyhow::ensure!(
        !(html && crate::rich_text::nests_deeper_than(&text, crate::rich_text::MAX_NESTING)),
        "answer nested too deeply"
    );
    let body = if html {
        crate::rich_text::sanitize(&text).finish(&std::collections::HashMap::new())
    } else {
        crate::rich_text::from_plain_text(&text)
    };
    anyhow::ensure!(!body.is_blank(), "blank answer");
    let cid = messages::new_client_message_id();
    post_message(
        &super::messages::Posting::from_ref(state),
        &room,
        &bot,
        &body,
        &cid,
        None,
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    Ok(())
}

async fn store_file(
    config: &Config,
    db: &Db,
    storage: &Storage,
    bot: &User,
    filename: &str,
    bytes: bytes::Bytes,
) -> anyhow::Result<crate::db::blobs::Blob> {
    super::files::store_bytes(config, db, storage, bot, filename, bytes)
        .await
        .map_err(|e| anyhow::anyhow!("{e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bot(name: &str) -> Recipient {
        Recipient {
            bot_id: 5,
            name: name.into(),
            bot_token: "t".into(),
            url: "http://x/".into(),
        }
    }

    #[test]
    fn only_mentioned_bots_are_reached() {
        let mention = |id: i64, role: crate::db::Role| messages::Mentionee {
            id,
            name: "x".into(),
            role,
        };
        assert_eq!(
            mentioned_bots(&[mention(5, crate::db::Role::Bot)], vec![bot("Helper")]).len(),
            1
        );
        assert!(
            mentioned_bots(&[mention(6, crate::db::Role::Bot)], vec![bot("Helper")]).is_empty()
        );
        assert!(mentioned_bots(&[], vec![bot("Helper")]).is_empty());
    }

    #[test]
    fn file_answers_are_named_by_their_content_type() {
        assert_eq!(attachment_name("image/png"), "attachment.png");
        assert_eq!(attachment_name("image/jpeg"), "attachment.jpg");
        assert_eq!(attachment_name("image/svg+xml"), "attachment.svg");
        assert_eq!(attachment_name("application/pdf"), "attachment.pdf");
        assert_eq!(attachment_name("application/x-tar"), "attachment.bin");
        assert_eq!(attachment_name("nonsense"), "attachment.bin");
    }

    #[test]
    fn text_answers_are_decoded_by_their_charset() {
        assert_eq!(
            decode_text(b"caf\xe9", Some("ISO-8859-1")).as_deref(),
            Some("café")
        );
        assert_eq!(
            decode_text(b"\x93\xfa\x96\x7b", Some("shift_jis")).as_deref(),
            Some("日本")
        );
        assert_eq!(
            decode_text("café".as_bytes(), Some("utf-8")).as_deref(),
            Some("café")
        );
        assert_eq!(
            decode_text("café".as_bytes(), None).as_deref(),
            Some("café")
        );
        assert_eq!(decode_text(b"caf\xe9", None), None);
        assert_eq!(decode_text(b"hi", Some("no-such-charset")), None);
    }

    #[test]
    fn the_plain_text_leaves_out_the_recipients_mention() {
        assert_eq!(
            without_mention("@Helper  what time is it? ", "Helper"),
            "what time is it?"
        );
        assert_eq!(
            without_mention("ask @helper and @Other", "Helper"),
            "ask  and @Other"
        );
        // Lower case of another length before, inside and after the mention.
        assert_eq!(
            without_mention("İstanbul @Bot hava durumu?", "Bot"),
            "İstanbul  hava durumu?"
        );
        assert_eq!(without_mention("İİ @iSTANBUL'da", "Istanbul"), "İİ 'da");
        assert_eq!(without_mention("ẞ@Bot", "Bot"), "ẞ");
        assert_eq!(without_mention("@Bo", "Bot"), "@Bo");
        assert_eq!(without_mention("@Bot", "Bot"), "");
    }
}
