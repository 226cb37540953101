//! The Action Cable server at `/cable`, compatible with Rails, `@rails/actioncable` and Turbo.
//!
//! - [`handshake`]: the RFC 6455 checks of the opening handshake (400, 426).
//! - [`deflate`]: permessage-deflate (RFC 7692): the offer agreed in the handshake, and
//!   compressed client messages inflated within the message size bound (broadcasts are
//!   compressed once for all subscribers by `crate::fanout::deflate`).
//! - [`upgrade`]: the RFC 6455 handshake with Rails' checks: GET WebSocket upgrades only, the
//!   Origin check (`allow_request_origin?`), the subprotocol pick, cookie identification.
//! - [`protocol`]: commands in, frames out, byte for byte as Rails writes them.
//! - [`connection`]: one task per connection, applying commands in order.
//! - [`reader`]: inbound frames to whole messages, with the message size bound.
//! - [`channels`]: Campfire's channels.

pub mod channels;
pub mod connection;
pub mod deflate;
pub mod handshake;
pub mod protocol;
pub mod reader;

use crate::config::Config;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use base64::Engine as _;
use hyper_util::rt::TokioIo;
use sha1::Digest as _;
use tokio::net::TcpStream;

use crate::db::users::User;
use crate::metrics::Metrics;
use crate::pubsub::Delivery;
use crate::rails::Keys;
use crate::rate_limit::Limits;
use crate::registry::Sockets;
use std::sync::Arc;

/// What the cable face and its connections touch: the settings (limits of a connection), the
/// delivery (bus, fan-out, history), the keys (Turbo's stream signer), the request limits (a
/// connection's commands), the metrics and the sockets (registry, sessions, presence,
/// permits). Built once by the wiring and cloned into each connection.
#[derive(Clone, Debug)]
pub struct CableHandles {
    /// The settings.
    pub config: Arc<Config>,
    /// Broadcasts in and out.
    pub delivery: Delivery,
    /// Turbo's stream signer.
    pub keys: Keys,
    /// The per-user request limits.
    pub limits: Limits,
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// Open connections, sessions, presence and permits.
    pub sockets: Sockets,
    /// The app's RPC (`--rpc-url`), whose `connect` a connection asks.
    pub rpc: Option<Arc<crate::rpc::RpcApp>>,
}

impl<S> axum::extract::FromRef<S> for CableHandles
where
    S: Send + Sync,
    Arc<Config>: axum::extract::FromRef<S>,
    Delivery: axum::extract::FromRef<S>,
    Keys: axum::extract::FromRef<S>,
    Limits: axum::extract::FromRef<S>,
    Arc<Metrics>: axum::extract::FromRef<S>,
    Sockets: axum::extract::FromRef<S>,
    crate::app_link::Apps: axum::extract::FromRef<S>,
{
    fn from_ref(state: &S) -> Self {
        Self {
            config: Arc::from_ref(state),
            delivery: Delivery::from_ref(state),
            keys: Keys::from_ref(state),
            limits: Limits::from_ref(state),
            metrics: Arc::from_ref(state),
            sockets: Sockets::from_ref(state),
            rpc: crate::app_link::Apps::from_ref(state).rpc,
        }
    }
}

/// The subprotocols Rails supports, in its order (`ActionCable::INTERNAL[:protocols]`).
pub const PROTOCOLS: [&str; 2] = ["actioncable-v1-json", "actioncable-unsupported"];

/// The subprotocols Hearth offers, in its order of preference: Rails' two and AnyCable's
/// extended protocol ([`protocol::EXT_PROTOCOL`]). The client's order decides.
pub const OFFERED: [&str; 3] = [
    "actioncable-v1-json",
    protocol::EXT_PROTOCOL,
    "actioncable-unsupported",
];

/// The GUID of RFC 6455 §1.3, appended to the key for `Sec-WebSocket-Accept`.
const WEBSOCKET_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// What Rails answers for anything at the mount that it will not upgrade: 404 `text/plain`
/// `Page not found` (`Connection::Base#respond_to_invalid_request`).
pub fn page_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain")],
        "Page not found",
    )
        .into_response()
}

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key` (RFC 6455 §4.2.2): base64(SHA-1(key ‖ GUID)).
pub fn accept_key(key: &[u8]) -> String {
    let mut sha = sha1::Sha1::new();
    sha.update(key);
    sha.update(WEBSOCKET_GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// The first subprotocol offered by the client that Hearth supports ([`OFFERED`]) (websocket-driver picks in
/// the client's order); None when nothing matches, and then the header is omitted.
pub fn pick_protocol(headers: &HeaderMap) -> Option<&'static str> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .find_map(|offered| OFFERED.iter().find(|p| **p == offered).copied())
}

/// Rails' `allow_request_origin?`: the check is off, or the Origin equals
/// `<proto>://<Host>`, or it is in the allowed list. A missing Origin is refused.
pub fn origin_allowed(config: &Config, headers: &HeaderMap, secure: bool) -> bool {
    if config.disable_origin_check {
        return true;
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    if let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) {
        let proto = if secure { "https" } else { "http" };
        if origin == format!("{proto}://{host}") {
            return true;
        }
    }
    config
        .allowed_origins
        .iter()
        .any(|allowed| allowed == origin)
}

/// Who a connection is, as the HTTP layer resolved it from the request's cookies before the
/// upgrade (Campfire's `ApplicationCable::Connection#connect` → `find_verified_user`).
#[derive(Clone, Debug, Default)]
pub struct Identity {
    /// The signed-in, active user; None makes the connection answer `unauthorized`.
    pub user: Option<User>,
    /// The session token the user was found by (sign-out closes the connections opened with
    /// it).
    pub session_token: Option<String>,
    /// Whether the request came over TLS (directly or per `X-Forwarded-Proto`): the scheme the
    /// Origin check expects.
    pub secure: bool,
    /// Whether `user` was identified afresh, uncached, because the request asks to restore a
    /// stored session of its own ([`restore_requested`]): only then does [`upgrade`] give the
    /// session back ([`take_stored`], then [`verify_restore`]).
    pub identified_afresh: bool,
}

/// Whether a `/cable` request asks to restore (`?sid=`, see [`requested_sid`]) a session
/// stored with `session_token` (the request's own verified session cookie) that has not
/// expired, without taking it ([`crate::resumable::SessionStore::holds`]): the caller then
/// identifies the request afresh, and [`upgrade`] takes the session once its own checks
/// passed.
pub fn restore_requested(
    sessions: &crate::resumable::SessionStore,
    request: &Request<Body>,
    session_token: Option<&str>,
) -> bool {
    requested_sid(request).is_some_and(|sid| sessions.holds(&sid, session_token))
}

/// Takes the extended-protocol session a `/cable` request asks to restore (`?sid=`, see
/// [`requested_sid`]) from the store, when it was opened with `session_token` (the request's
/// own verified session cookie) and has not expired; None otherwise. The attempt uses the
/// stored session up whatever comes of it: a restore is then refused or granted by
/// [`verify_restore`], and a refused one leaves nothing behind. [`upgrade`] takes it only
/// after its own checks passed (a handshake, the Origin, the connection limits), so a
/// request turned away before the upgrade uses nothing up.
pub fn take_stored(
    sessions: &crate::resumable::SessionStore,
    request: &Request<Body>,
    session_token: Option<&str>,
) -> Option<crate::resumable::StoredSession> {
    let sid = requested_sid(request)?;
    sessions.take(&sid, session_token)
}

/// A restore is an identification: what of `stored` may be given back to `user`, the user the
/// session's token identifies now (looked up afresh, [`channels::host::ChannelHost::identify`]
/// with `fresh`: an ended session, a deactivated or banned user, a password changed since
/// give None). None when nobody or another user holds the session now (the connection is then
/// the fresh connect of `user`); else the session, its user the one just identified, with only
/// the subscriptions the channels still allow: each room-scoped one is asked of the host
/// ([`channels::host::ChannelHost::still_allowed`], as after a revocation; a room the user
/// left, or one the host cannot answer for, is dropped), so the client subscribes to it again
/// and gets what a fresh subscribe gets. Runs once per restore, never per broadcast.
pub async fn verify_restore(
    host: &dyn channels::host::ChannelHost,
    user: Option<&User>,
    stored: crate::resumable::StoredSession,
) -> Option<crate::resumable::StoredSession> {
    let user = user.filter(|u| u.id == stored.user.id)?;
    let who = channels::host::Who {
        user,
        connection_id: 0,
    };
    let checks = stored
        .subscriptions
        .into_iter()
        .map(|(identifier, json)| async move {
            let subscribed: channels::Subscribed = serde_json::from_str(&json).ok()?;
            if channels::scoped_room(&subscribed).is_some() {
                match host.still_allowed(who, &subscribed).await {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(e) => {
                        tracing::warn!(
                            error = %crate::loggable::loggable(&e.to_string()),
                            "restored subscription dropped: its room could not be re-checked"
                        );
                        return None;
                    }
                }
            }
            Some((identifier, json))
        });
    let subscriptions = futures_util::future::join_all(checks)
        .await
        .into_iter()
        .flatten()
        .collect();
    Some(crate::resumable::StoredSession {
        user: user.clone(),
        session_token: stored.session_token,
        subscriptions,
    })
}

/// The `sid` query parameter of a `/cable` request (the session an `@anycable/core` client
/// asks to restore), when the request offers the extended protocol.
pub fn requested_sid(request: &Request<Body>) -> Option<String> {
    if pick_protocol(request.headers()) != Some(protocol::EXT_PROTOCOL) {
        return None;
    }
    let query = request.uri().query()?;
    query
        .split('&')
        .find_map(|pair| pair.strip_prefix("sid="))
        .filter(|v| !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_owned)
}

/// `GET /cable`: validates the upgrade ([`handshake::check`]: 404 for what is not a WebSocket
/// upgrade, 400 for a broken one, 426 for another version), checks the Origin (404 as Rails),
/// answers 101 (agreeing to permessage-deflate when the client offers it and
/// `--websocket-compression` is on, [`deflate::negotiate`]) and hands the socket to
/// [`connection::run`]; past
/// `config.max_connections` open sockets, an upgrade gets 503 with `Retry-After`, and past
/// `config.max_connections_per_user` sockets of the same user, 429 with `Retry-After`. Only
/// then is a restore's stored session taken ([`take_stored`]; given back when the caller
/// identified the request afresh, [`Identity::identified_afresh`], and [`verify_restore`]
/// allows it), so a restore turned away by any of these checks can be retried.
pub async fn upgrade(
    state: CableHandles,
    host: std::sync::Arc<dyn channels::host::ChannelHost>,
    mut request: Request<Body>,
    identity: Identity,
) -> Response {
    let headers = request.headers();
    let key = match handshake::check(request.method(), request.version(), headers) {
        handshake::Outcome::Accept { key } => key,
        handshake::Outcome::NotWebSocket => return page_not_found(),
        handshake::Outcome::BadRequest(why) => {
            tracing::info!(reason = why, "Cable handshake refused");
            return handshake::bad_request();
        }
        handshake::Outcome::UpgradeRequired => return handshake::upgrade_required(),
    };
    if !origin_allowed(&state.config, headers, identity.secure) {
        tracing::warn!(
            "Request origin not allowed: {}",
            headers
                .get(header::ORIGIN)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
        );
        return page_not_found();
    }
    let user_slot = match &identity.user {
        Some(user) => {
            let cap = state.config.max_connections_per_user;
            let Some(slot) = state.sockets.registry.reserve_user_slot(user.id, cap) else {
                tracing::warn!(
                    user_id = user.id,
                    limit = cap,
                    "Cable connection refused: at the per-user connection limit"
                );
                return (
                    StatusCode::TOO_MANY_REQUESTS,
                    [(header::RETRY_AFTER, "5")],
                    "Too many connections for this user",
                )
                    .into_response();
            };
            Some(slot)
        }
        None => None,
    };
    let Ok(permit) = state.sockets.permits.clone().try_acquire_owned() else {
        tracing::warn!(
            limit = state.config.max_connections,
            "Cable connection refused: at the connection limit"
        );
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "5")],
            "Too many connections",
        )
            .into_response();
    };
    let protocol = pick_protocol(headers);
    // RFC 7692: the first permessage-deflate offer this server accepts, unless
    // `--websocket-compression off`.
    let deflate = match state.config.websocket_compression {
        crate::config::Switch::On => deflate::negotiate(headers),
        crate::config::Switch::Off => None,
    };
    let agreed = deflate.as_ref().map(|(agreed, _)| *agreed);
    let extended = if protocol == Some(protocol::EXT_PROTOCOL) {
        // Taken only now that the connection is let in: a restore turned away above (its
        // Origin, a limit) leaves the session for the client's retry.
        let stored = take_stored(
            &state.sockets.sessions,
            &request,
            identity.session_token.as_deref(),
        );
        let restored = match stored.filter(|_| identity.identified_afresh) {
            Some(stored) => verify_restore(host.as_ref(), identity.user.as_ref(), stored).await,
            None => None,
        };
        Some(connection::Extended {
            sid: crate::resumable::new_sid(),
            restored,
        })
    } else {
        None
    };
    // The app's `connect` (`--rpc-url`) is asked once the socket is open, with the request as
    // it came (AnyCable's `env`).
    let app = state.rpc.as_ref().map(|rpc| crate::rpc::ConnectContext {
        sid: extended
            .as_ref()
            .map_or_else(crate::resumable::new_sid, |e| e.sid.clone()),
        env: crate::rpc::request_env(
            request_url(&request, identity.secure),
            request.headers(),
            &rpc.headers,
            request
                .extensions()
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map_or(std::net::Ipv4Addr::LOCALHOST.into(), |c| c.0.ip()),
        ),
    });
    let on_upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let _permit = permit;
        let _user_slot = user_slot;
        let upgraded = match on_upgrade.await {
            Ok(u) => u,
            Err(e) => {
                tracing::debug!(error = %e, "upgrade failed");
                return;
            }
        };
        let Ok(parts) = upgraded.downcast::<TokioIo<TcpStream>>() else {
            tracing::error!("upgraded connection is not a TcpStream");
            return;
        };
        // `read_buf` is a slice of hyper's read buffer; copying the (usually empty) leftover
        // lets that buffer go instead of keeping it alive for the connection's lifetime.
        let leftover = bytes::Bytes::copy_from_slice(&parts.read_buf);
        drop(parts.read_buf);
        connection::run(
            state,
            host,
            parts.io.into_inner(),
            leftover,
            identity.user,
            identity.session_token,
            extended,
            agreed,
            app,
        )
        .await;
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = response.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Some(p) = protocol {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(p));
    }
    if let Some((_, answer)) = deflate {
        h.insert(header::SEC_WEBSOCKET_EXTENSIONS, answer);
    }
    response
}

/// The URL of a `/cable` request as Rails' `request.url` gives it: the scheme (`https` when
/// the request came over TLS), the `Host` header, the path and query.
pub fn request_url(request: &Request<Body>, secure: bool) -> String {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let path = request
        .uri()
        .path_and_query()
        .map_or("/cable", axum::http::uri::PathAndQuery::as_str);
    let scheme = if secure { "https" } else { "http" };
    format!("{scheme}://{host}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_key_matches_rfc_6455_example() {
        assert_eq!(
            accept_key(b"dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn protocol_pick_follows_client_order() {
        let mut h = HeaderMap::new();
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("actioncable-v1-json, actioncable-unsupported"),
        );
        assert_eq!(pick_protocol(&h), Some("actioncable-v1-json"));
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("foo, actioncable-unsupported"),
        );
        assert_eq!(pick_protocol(&h), Some("actioncable-unsupported"));
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("actioncable-v1-ext-json"),
        );
        assert_eq!(pick_protocol(&h), Some("actioncable-v1-ext-json"));
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("actioncable-v1-msgpack"),
        );
        assert_eq!(pick_protocol(&h), None);
        assert_eq!(pick_protocol(&HeaderMap::new()), None);
    }
}
