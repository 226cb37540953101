//! `/users/me/push_subscriptions` (Campfire's `Users::PushSubscriptionsController` and
//! `Users::PushSubscriptions::TestNotificationsController`): the signed-in user's web push
//! subscriptions, one per browser.
//!
//! | route | answer |
//! |---|---|
//! | `GET /users/me/push_subscriptions` | the list (HTML; JSON with `Accept: application/json`), with the VAPID public key |
//! | `POST /users/me/push_subscriptions` with `push_subscription[endpoint]`, `[p256dh_key]`, `[auth_key]` | 201 with the stored subscription as JSON (the same endpoint again refreshes its keys); 422 for an endpoint not `https` (plain-HTTP loopback only with `--push-allow-loopback`), longer than 2 KiB, or keys that do not decode, and for a new endpoint of a user who has [`push_subscriptions::MAX_PER_USER`] (20) already |
//! | `DELETE /users/me/push_subscriptions/{id}` | 302 to the list; 404 for another user's or an unknown id |
//! | `POST /users/me/push_subscriptions/{id}/test_notifications` | queues a test notification to that browser; 302 to the list; 404 for another user's |
//!
//! Signed out: 401 (the list: 302 to the sign-in form).

use crate::config::Config;
use crate::db::Db;
use crate::outbox::Outbox;
use askama::Template;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Extension;
use std::sync::Arc;

use crate::db::push_subscriptions::{self, NewSubscription, PushSubscription, Upserted};
use crate::push::{self, Job, Notification};
use crate::web::context::Ctx;
use crate::web::error::AppError;
use crate::web::extract::{Id, SignedInPage};
use crate::web::respond::found;

const LIST: &str = "/users/me/push_subscriptions";

/// The list page (`templates/users/push_subscriptions/index.html`).
#[derive(Template, Debug)]
#[template(path = "users/push_subscriptions/index.html")]
pub struct PushSubscriptionsPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The user's subscriptions, newest first.
    pub subscriptions: &'a [PushSubscription],
    /// The VAPID public key, base64url.
    pub vapid_public_key: &'a str,
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}

/// `GET /users/me/push_subscriptions`.
pub async fn index(
    State(db): State<Db>,
    State(outbox): State<Outbox>,
    SignedInPage { ctx, user }: SignedInPage,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let list = push_subscriptions::for_user(&db.pool, user.id).await?;
    if wants_json(&headers) {
        let body = serde_json::json!({
            "vapid_public_key": outbox.pusher.public_key(),
            "push_subscriptions": list,
        });
        return Ok((
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response());
    }
    let token = ctx.csrf_token();
    let page = PushSubscriptionsPage {
        csrf_token: &token,
        subscriptions: &list,
        vapid_public_key: outbox.pusher.public_key(),
    };
    Ok(Html(page.render()?).into_response())
}

/// `POST /users/me/push_subscriptions`.
pub async fn create(
    State(config): State<Arc<Config>>,
    State(db): State<Db>,
    State(outbox): State<Outbox>,
    Extension(ctx): Extension<Ctx>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let field = |name: &str| ctx.form.get(name).unwrap_or("").trim().to_owned();
    let endpoint = field("push_subscription[endpoint]");
    let p256dh = field("push_subscription[p256dh_key]");
    let auth = field("push_subscription[auth_key]");
    push::validate(&endpoint, &p256dh, &auth, config.push_allow_loopback)
        .map_err(|e| AppError::Unprocessable(e.to_string()))?;
    let user_agent: Option<String> = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(255).collect());
    let upserted = push_subscriptions::upsert(
        &db.pool,
        outbox.pusher.subscriptions_present(),
        &NewSubscription {
            user_id: user.id,
            endpoint: &endpoint,
            p256dh_key: &p256dh,
            auth_key: &auth,
            user_agent: user_agent.as_deref(),
        },
    )
    .await?;
    let Upserted::Stored(stored) = upserted else {
        return Err(AppError::Unprocessable(format!(
            "at most {} push subscriptions per user: remove one at {LIST} first",
            push_subscriptions::MAX_PER_USER
        )));
    };
    let location = format!("{LIST}/{}", stored.id);
    Ok((
        StatusCode::CREATED,
        [
            (header::LOCATION, location),
            (header::CONTENT_TYPE, "application/json".to_owned()),
        ],
        serde_json::to_string(&stored).unwrap_or_default(),
    )
        .into_response())
}

/// `DELETE /users/me/push_subscriptions/{id}`.
pub async fn destroy(
    State(db): State<Db>,
    Extension(ctx): Extension<Ctx>,
    Id(id): Id,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    if !push_subscriptions::delete_for_user(&db.pool, user.id, id).await? {
        return Err(AppError::NotFound);
    }
    Ok(found(LIST))
}

/// `POST /users/me/push_subscriptions/{id}/test_notifications`.
pub async fn test_notification(
    State(db): State<Db>,
    State(outbox): State<Outbox>,
    Extension(ctx): Extension<Ctx>,
    Id(id): Id,
) -> Result<Response, AppError> {
    let user = ctx.require_user()?;
    let subscription = push_subscriptions::find_for_user(&db.pool, user.id, id)
        .await?
        .ok_or(AppError::NotFound)?;
    outbox.pusher.enqueue(Job {
        room_id: 0,
        creator_id: 0,
        mentionee_ids: Vec::new(),
        notification: Notification {
            title: "Hearth".into(),
            body: "Notifications are on for this browser.".into(),
            path: "/".into(),
        },
        only: Some(subscription),
    });
    Ok(found(LIST))
}
