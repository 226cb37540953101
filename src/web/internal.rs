//! The app node's internal endpoint for cable nodes: `POST /_internal/cable/<op>` with
//! `Authorization: Bearer <key derived from secret_key_base>` (see [`crate::app_link`]); the
//! operations are [`crate::cable::channels::remote`]'s, matched as [`Op`]s and answered by a
//! [`LocalHost`] (the same host a `--role all` node runs its channels on). Without the key
//! every call gets 404, as if the route did not exist.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::app_link::Op;
use crate::cable::channels::host::{ChannelHost as _, LocalHost, Who};
use crate::cable::channels::remote::{
    IdentifyRequest, IdentifyResponse, PerformRequest, StillAllowedRequest, SubscribeRequest,
    UnsubscribedRequest,
};
/// What the internal route answers with: this node's channels and the key a caller must give.
#[derive(Clone, Debug)]
struct Internal {
    host: Arc<LocalHost>,
    key: Arc<str>,
}

/// The route, to mount beside the app's own (it needs no cookies, session or CSRF): the cable
/// node's calls run on `host`, for callers that give `key` (`crate::app_link::internal_key`).
pub fn routes(host: Arc<LocalHost>, key: Arc<str>) -> axum::Router {
    axum::Router::new()
        .route(
            &format!("{}{{op}}", crate::app_link::INTERNAL_PATH),
            axum::routing::post(call),
        )
        .with_state(Internal { host, key })
}

async fn call(
    State(internal): State<Internal>,
    Path(op): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let auth = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !crate::anycable::bearer_matches(auth, &internal.key) {
        return StatusCode::NOT_FOUND.into_response();
    }
    match answer(&internal.host, &op, &body).await {
        Ok(response) => response,
        Err(e) => {
            tracing::warn!(op, error = %e, "internal cable call failed");
            StatusCode::UNPROCESSABLE_ENTITY.into_response()
        }
    }
}

/// The cable node's channels run here, on this node's `host`.
async fn answer(host: &LocalHost, op: &str, body: &[u8]) -> anyhow::Result<Response> {
    let Some(op) = Op::from_path(op) else {
        return Ok(StatusCode::NOT_FOUND.into_response());
    };
    let who = |user, connection_id| Who {
        user,
        connection_id,
    };
    Ok(match op {
        Op::Hello => Json(true).into_response(),
        Op::Identify => {
            let request: IdentifyRequest = serde_json::from_slice(body)?;
            let user = host.identify(&request.session_token, request.fresh).await?;
            Json(IdentifyResponse { user }).into_response()
        }
        Op::Subscribe => {
            let request: SubscribeRequest = serde_json::from_slice(body)?;
            let outcome = host
                .subscribe(
                    who(&request.user, request.connection_id),
                    "",
                    &request.channel,
                    request.params.clone(),
                )
                .await?;
            Json(outcome).into_response()
        }
        Op::Perform => {
            let request: PerformRequest = serde_json::from_slice(body)?;
            // The cable node counted the action against its rate already.
            let handled = host
                .perform(
                    who(&request.user, request.connection_id),
                    &request.subscribed,
                    &request.action,
                    true,
                )
                .await?;
            Json(handled).into_response()
        }
        Op::Unsubscribed => {
            let request: UnsubscribedRequest = serde_json::from_slice(body)?;
            host.unsubscribed(
                who(&request.user, request.connection_id),
                &request.subscribed,
            )
            .await?;
            Json(true).into_response()
        }
        Op::StillAllowed => {
            let request: StillAllowedRequest = serde_json::from_slice(body)?;
            let allowed = host
                .still_allowed(who(&request.user, 0), &request.subscribed)
                .await?;
            Json(allowed).into_response()
        }
    })
}
