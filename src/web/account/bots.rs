//! Administering bots (Campfire's `Accounts::BotsController` and
//! `Accounts::Bots::KeysController`): list, create, rename, rekey and remove; each bot's
//! webhook URL (`user[webhook_url]`, http(s) only; empty removes it) and, per room the bot is
//! in, ready `curl` lines for posting text and files, with copy buttons; each bot's avatar
//! (uploaded to `/users/<bot id>/avatar`, `crate::web::avatars`).

use crate::config::Config;
use crate::db::Db;
use crate::outbox::Outbox;
use crate::pubsub::Delivery;
use crate::storage::Storage;
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use std::sync::Arc;

use crate::db::users::{self, Bot};
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::extract::{Admin, AdminPage, Id};
use crate::web::fields::{self, MAX_NAME_CHARS};
use crate::web::links::origin;
use crate::web::respond::found;
use crate::web::users::disconnect;

/// The bots page (`templates/accounts/bots/index.html`).
#[derive(Template, Debug)]
#[template(path = "accounts/bots/index.html")]
pub struct BotsPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The active bots, by name, with their webhooks and rooms.
    pub bots: &'a [BotRow],
}

/// One bot on the bots page.
#[derive(Clone, Debug)]
pub struct BotRow {
    /// The bot.
    pub bot: Bot,
    /// Its webhook URL, empty when none.
    pub webhook_url: String,
    /// Its avatar's URL (`/users/<id>/avatar?v=…`: the picture, or the bot picture).
    pub avatar: String,
    /// Whether it has an avatar of its own.
    pub has_avatar: bool,
    /// Per room the bot is in: the room's label and the curl lines posting text and a file.
    pub rooms: Vec<BotRoom>,
}

/// A room of a bot, with its ready curl lines.
#[derive(Clone, Debug)]
pub struct BotRoom {
    /// The room's name (or a direct room's people).
    pub label: String,
    /// `curl -d 'Hello!' <url>`.
    pub text_curl: String,
    /// `curl -F attachment=@file.png <url>`.
    pub file_curl: String,
}

/// The webhook URL of a bot form: `None` when the field is absent, `Some("")` to remove it.
///
/// # Errors
/// 422 for anything but an http(s) URL.
fn webhook_url(ctx: &Ctx) -> Result<Option<String>, AppError> {
    let Some(url) = ctx.form.get("user[webhook_url]").map(str::trim) else {
        return Ok(None);
    };
    if !url.is_empty() && !crate::webhooks::valid_url(url) {
        return Err(AppError::Unprocessable(
            "user[webhook_url] must be an http:// or https:// URL".into(),
        ));
    }
    Ok(Some(url.to_owned()))
}

async fn set_webhook(db: &Db, outbox: &Outbox, bot_id: i64, url: &str) -> Result<(), AppError> {
    crate::db::webhooks::set(&db.pool, outbox.webhooks.present(), bot_id, Some(url)).await?;
    Ok(())
}

/// `GET /account/bots`: the bots with their keys.
pub async fn index(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(storage): State<Arc<Storage>>,
    AdminPage(ctx): AdminPage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let origin = origin(&ctx, &headers, &config);
    let mut rows = Vec::new();
    for bot in users::bots(&db.pool).await? {
        let webhook_url = crate::db::webhooks::url_for(&db.pool, bot.id)
            .await?
            .unwrap_or_default();
        let rooms = users::memberships(&db.pool, bot.id)
            .await?
            .into_iter()
            .map(|m| {
                let url = format!("{origin}/rooms/{}/{}/messages", m.room_id, bot.key());
                BotRoom {
                    label: m.label,
                    text_curl: format!("curl -d 'Hello!' {url}"),
                    file_curl: format!("curl -F attachment=@file.png {url}"),
                }
            })
            .collect();
        let version = storage.avatars.get(&db.pool, bot.id).await?;
        rows.push(BotRow {
            avatar: crate::storage::avatar_path(bot.id, version),
            has_avatar: version.is_some(),
            bot,
            webhook_url,
            rooms,
        });
    }
    let token = ctx.csrf_token();
    let page = BotsPage {
        csrf_token: &token,
        bots: &rows,
    };
    Ok((StatusCode::OK, Html(page.render()?)).into_response())
}

/// `POST /account/bots` with `user[name]` (1-100 characters) and optionally
/// `user[webhook_url]`: a new bot, member of every open room; 302 to `/account/bots`. 422 for
/// a bad name or URL (nothing stored).
pub async fn create(
    State(db): State<Db>,
    State(outbox): State<Outbox>,
    Admin(ctx): Admin,
) -> Result<Response, AppError> {
    let name = fields::required(&ctx.form, "user[name]", MAX_NAME_CHARS)?;
    let url = webhook_url(&ctx)?;
    let bot = users::create_bot(&db.pool, &name).await?;
    if let Some(url) = url.filter(|u| !u.is_empty()) {
        set_webhook(&db, &outbox, bot.id, &url).await?;
    }
    tracing::info!(bot_id = bot.id, "bot created");
    Ok(found("/account/bots"))
}

/// `PATCH /account/bots/{bot_id}` with `user[name]` and optionally `user[webhook_url]`
/// (empty removes the webhook): renames and sets the URL; 302 to `/account/bots`. 404 for an
/// unknown bot, 422 for a bad name or URL (nothing stored).
pub async fn update(
    State(db): State<Db>,
    State(outbox): State<Outbox>,
    Admin(ctx): Admin,
    Id(bot_id): Id,
) -> Result<Response, AppError> {
    let name = fields::required(&ctx.form, "user[name]", MAX_NAME_CHARS)?;
    let url = webhook_url(&ctx)?;
    if !users::rename_bot(&db.pool, bot_id, &name).await? {
        return Err(AppError::NotFound);
    }
    if let Some(url) = url {
        set_webhook(&db, &outbox, bot_id, &url).await?;
    }
    Ok(found("/account/bots"))
}

/// `PATCH /account/bots/{bot_id}/key`: a new key (the old one gets 401 from now on); 302 to
/// `/account/bots`. 404 for an unknown bot.
pub async fn update_key(
    State(db): State<Db>,
    _: Admin,
    Id(bot_id): Id,
) -> Result<Response, AppError> {
    users::reset_bot_token(&db.pool, bot_id)
        .await?
        .ok_or(AppError::NotFound)?;
    Ok(found("/account/bots"))
}

/// `DELETE /account/bots/{bot_id}`: removes the bot (deactivated, key cleared; its messages
/// stay); 302 to `/account/bots`. 404 for an unknown bot.
pub async fn destroy(
    State(db): State<Db>,
    State(delivery): State<Delivery>,
    _: Admin,
    Id(bot_id): Id,
) -> Result<Response, AppError> {
    if !users::deactivate_bot(&db.pool, bot_id).await? {
        return Err(AppError::NotFound);
    }
    disconnect(&delivery, bot_id);
    Ok(found("/account/bots"))
}
