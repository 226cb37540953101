//! Wiring: the service (routes and `/cable` behind the request context), the accept loop and
//! the graceful drain.
//!
//! `serve` accepts TCP connections itself and serves each with hyper's HTTP/1 builder, so an
//! upgraded `/cable` socket can be taken back as the plain `TcpStream` (with any bytes hyper
//! read past the handshake) and its write path handed to the fan-out engine.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::ConnectInfo;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tower::ServiceExt as _;

use tokio::sync::Semaphore;

use crate::cable::channels::host::{ChannelHost, LocalHost};
use crate::cable::channels::remote::RemoteHost;
use crate::cable::channels::rpc::RpcHost;
use crate::cable::protocol::{disconnect_frames, DisconnectReason};
use crate::cable::Identity;
use crate::config::{ChannelSet, Config, Role};
use crate::fanout::frame::Frame;
use crate::peer_connections::{PeerConnections, PeerSlot};
use crate::pubsub::Control;
use crate::state::{AppState, SharedState};
use crate::web::context::Ctx;
use crate::web::request_line::{self, FirstLine};

/// The whole HTTP service, by `--role`: [`crate::web::context::prepare`] in front of the
/// routes and `/cable` (`all`), the routes without `/cable` (`app`), or `/cable` alone with
/// identification by the app node (`cable`); static assets, `/metrics`, `/_broadcast` and the
/// app node's internal endpoint beside them (they need no cookies, session or CSRF).
pub fn service(state: SharedState) -> axum::Router {
    let production = state.config.production;
    let router = routes_by_role(state);
    if production {
        router.layer(axum::middleware::map_response(strict_transport_security))
    } else {
        router
    }
}

/// `Strict-Transport-Security` as Rails' `config.force_ssl` sends it (`ActionDispatch::SSL`:
/// two years, subdomains included), on every answer of a production server: browsers then
/// reach it over TLS only.
async fn strict_transport_security(
    mut response: axum::response::Response,
) -> axum::response::Response {
    response.headers_mut().insert(
        axum::http::header::STRICT_TRANSPORT_SECURITY,
        axum::http::HeaderValue::from_static(HSTS),
    );
    response
}

/// The `Strict-Transport-Security` value of a production server.
pub const HSTS: &str = "max-age=63072000; includeSubDomains";

/// [`service`] before the production-only headers.
fn routes_by_role(state: SharedState) -> axum::Router {
    let mut direct = axum::Router::new()
        .route(
            "/_broadcast",
            axum::routing::post(anycable_broadcast).with_state(state.clone()),
        )
        .route("/up", axum::routing::get(up).with_state(state.clone()));
    if state.config.metrics {
        direct = direct.route(
            "/metrics",
            axum::routing::get(metrics).with_state(state.clone()),
        );
    }
    // The channel host, chosen once: the app node's (a cable node), or this node's.
    let local = LocalHost::new(
        state.db.clone(),
        state.delivery.clone(),
        state.keys.clone(),
        state.sockets.clone(),
    );
    // The app node's end of the cable nodes' calls runs on the same host.
    let internal_host = local.clone();
    let campfire: Arc<dyn ChannelHost> = match &state.apps.app_link {
        Some(link) => RemoteHost::new(link.clone(), local),
        None => local,
    };
    // An app's own channels beside Campfire's (`--rpc-url`), or alone (`--channels rpc`).
    let app_only = state.config.channels == ChannelSet::Rpc;
    let host: Arc<dyn ChannelHost> = match &state.apps.rpc {
        Some(app) => RpcHost::new(campfire, app.clone(), !app_only),
        None => campfire,
    };
    let cable_state = CableState {
        state: state.clone(),
        cable: axum::extract::FromRef::from_ref(&state),
        host,
    };
    if app_only {
        return direct.route(
            "/cable",
            axum::routing::any(cable_app_only).with_state(cable_state),
        );
    }
    if state.config.role == Role::Cable {
        return direct.route(
            "/cable",
            axum::routing::any(cable_via_app).with_state(cable_state),
        );
    }
    let mut routes = crate::web::routes(state.clone()).layer(axum::middleware::from_fn_with_state(
        state.clone(),
        limit_requests,
    ));
    if state.config.role == Role::All {
        routes = routes.route("/cable", axum::routing::any(cable).with_state(cable_state));
    }
    let direct = direct.merge(state.assets.routes()).merge(
        crate::web::internal::routes(internal_host, state.keys.internal_key.clone()).layer(
            axum::middleware::from_fn_with_state(state.clone(), internal_guard),
        ),
    );
    let prepared = axum::middleware::from_fn_with_state(state, crate::web::context::prepare);
    // Wrapping the router (not `Router::layer`) runs the middleware before routing, so the
    // `_method` override is seen by the router.
    direct
        .fallback_service(tower::Layer::layer(&prepared, routes))
        .layer(axum::middleware::map_response(security_headers))
}

/// The [`crate::rate_limit::Action`] a request is, if any: posting, editing, creating a room,
/// searching, boosting, signing up, creating a push subscription, sending a test notification,
/// asking for a link preview
/// (by method and path, after the `_method` override).
fn limited_action(
    method: &axum::http::Method,
    uri: &axum::http::Uri,
) -> Option<crate::rate_limit::Action> {
    use crate::rate_limit::Action;
    use axum::http::Method;
    let segments: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        (&Method::POST, ["rooms", _, "messages"] | ["rooms", _, _, "messages"]) => {
            Some(Action::Post)
        }
        (&Method::POST, ["rooms", "opens" | "closeds" | "directs"]) => Some(Action::CreateRoom),
        (&Method::POST, ["searches"]) => Some(Action::Search),
        (&Method::GET, ["searches"])
            if uri
                .query()
                .is_some_and(|q| q.split('&').any(|p| p.starts_with("q=") && p.len() > 2)) =>
        {
            Some(Action::Search)
        }
        (&Method::POST, ["messages", _, "boosts"] | ["rooms", _, _, "messages", _, "boosts"]) => {
            Some(Action::Boost)
        }
        (&Method::POST, ["join", _]) => Some(Action::Join),
        (
            &Method::PATCH | &Method::PUT,
            ["rooms", _, "messages", _] | ["rooms", _, _, "messages", _],
        ) => Some(Action::Edit),
        (&Method::POST, ["users", "me", "push_subscriptions"]) => Some(Action::PushSubscription),
        (&Method::POST, ["users", "me", "push_subscriptions", _, "test_notifications"]) => {
            Some(Action::TestNotification)
        }
        (&Method::POST, ["unfurl_link"]) => Some(Action::LinkPreview),
        _ => None,
    }
}

/// The request limits ([`crate::rate_limit::RequestLimits`]) in front of the routes, after
/// the request context: a request past its limit gets 429 with `Retry-After` (whole seconds)
/// and changes nothing.
async fn limit_requests(
    axum::extract::State(state): axum::extract::State<SharedState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use crate::rate_limit::{Action, Client};
    use axum::response::IntoResponse as _;
    let Some(action) = limited_action(request.method(), request.uri()) else {
        return next.run(request).await;
    };
    let ctx = request.extensions().get::<Ctx>();
    let client = match ctx {
        Some(ctx) if action != Action::Join => match &ctx.user {
            Some(user) => Client::User(user.id),
            None => Client::Ip(ctx.ip),
        },
        Some(ctx) => Client::Ip(ctx.ip),
        None => return next.run(request).await,
    };
    match state
        .limits
        .requests
        .check(action, client, std::time::Instant::now())
    {
        Ok(()) => next.run(request).await,
        Err(wait) => {
            let secs = crate::rate_limit::retry_after_secs(wait);
            tracing::info!(
                ?action,
                ?client,
                retry_after = secs,
                "request over its rate limit"
            );
            (
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                [(axum::http::header::RETRY_AFTER, secs.to_string())],
                "Too many requests: try again later.\n",
            )
                .into_response()
        }
    }
}

/// In front of the app node's internal endpoint (`/_internal/cable/<op>`): anything but a
/// `POST` with the internal key gets 404 before a byte of its body is read, as if the route did
/// not exist; a keyed call's body is read under the same `--max-body-bytes` (413) and
/// `--body-timeout` (408) as every route's.
async fn internal_guard(
    axum::extract::State(state): axum::extract::State<SharedState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse as _;
    let auth = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if request.method() != axum::http::Method::POST
        || !crate::anycable::bearer_matches(auth, &state.keys.internal_key)
    {
        return StatusCode::NOT_FOUND.into_response();
    }
    match read_limited_body(&state, request).await {
        Ok(request) => next.run(request).await,
        Err(status) => status.into_response(),
    }
}

/// Reads `request`'s body whole within `--max-body-bytes` (413, also when `Content-Length`
/// announces more) and `--body-timeout` (408), and gives the request back with it.
async fn read_limited_body(
    state: &AppState,
    request: axum::extract::Request,
) -> Result<axum::extract::Request, axum::http::StatusCode> {
    use axum::http::StatusCode;
    let limit = state.config.max_body_bytes;
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(StatusCode::PAYLOAD_TOO_LARGE);
    }
    let (parts, body) = request.into_parts();
    let deadline = Duration::from_secs(state.config.body_timeout);
    let bytes = tokio::time::timeout(deadline, axum::body::to_bytes(body, limit))
        .await
        .map_err(|_| StatusCode::REQUEST_TIMEOUT)?
        .map_err(|_| StatusCode::PAYLOAD_TOO_LARGE)?;
    Ok(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    ))
}

/// The response headers Rails sets by default (`action_dispatch.default_headers`), on every
/// answer: no framing by other sites (`X-Frame-Options: SAMEORIGIN`), no content sniffing
/// (`X-Content-Type-Options: nosniff`), and only the origin as referrer across origins
/// (`Referrer-Policy: strict-origin-when-cross-origin`). A handler's own value is kept.
async fn security_headers(mut response: axum::response::Response) -> axum::response::Response {
    use axum::http::{header, HeaderValue};
    let headers = response.headers_mut();
    for (name, value) in [
        (header::X_FRAME_OPTIONS, "SAMEORIGIN"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "strict-origin-when-cross-origin"),
    ] {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    }
    response
}

/// `GET /up`, the health check of every role: `OK`; with the Redis link down still 200
/// (the node serves and delivers its own broadcasts) with `OK (redis link down)`. With Redis,
/// the link's figures in headers: `X-Hearth-Redis-Link` (`up` or `down`),
/// `X-Hearth-Redis-Lag-Ms` (the last heartbeat's trip), `X-Hearth-Redis-Pending` (broadcasts
/// kept for Redis) and `X-Hearth-Redis-Replayed` (replayed from the log since start). On a cable
/// node the app node is asked too: 503 with the cause when it refuses this node's key (another
/// `SECRET_KEY_BASE`) or does not answer within `--app-timeout-seconds`.
async fn up(
    axum::extract::State(state): axum::extract::State<SharedState>,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    if let Some(link) = &state.apps.app_link {
        let why = match link.check_key().await {
            crate::app_link::KeyCheck::Accepted => None,
            crate::app_link::KeyCheck::Refused(why) => Some(why),
            crate::app_link::KeyCheck::Unreachable(e) => {
                Some(format!("the app node does not answer: {e:#}"))
            }
        };
        if let Some(why) = why {
            return (axum::http::StatusCode::SERVICE_UNAVAILABLE, why).into_response();
        }
    }
    let body = match state.delivery.bus.health() {
        crate::pubsub::Health::LinkDown => "OK (redis link down)",
        crate::pubsub::Health::Local | crate::pubsub::Health::Linked => "OK",
    };
    let mut response = body.into_response();
    if let Some(link) = state.delivery.bus.link_report() {
        let headers = response.headers_mut();
        let up = if link.up { "up" } else { "down" };
        headers.insert(
            "x-hearth-redis-link",
            axum::http::HeaderValue::from_static(up),
        );
        for (name, value) in [
            ("x-hearth-redis-lag-ms", link.lag_ms),
            ("x-hearth-redis-pending", link.pending as u64),
            ("x-hearth-redis-replayed", link.replayed),
        ] {
            headers.insert(name, axum::http::HeaderValue::from(value));
        }
    }
    response
}

/// `GET /cable` on a cable node: verifies the session cookie here, asks the app node who
/// holds the session (answers cached for `--auth-cache-seconds`, except for a restore, whose
/// session is looked up afresh and whose rooms are re-checked:
/// [`crate::cable::verify_restore`]), then upgrades as [`crate::cable::upgrade`]. 503 while
/// the app node cannot answer.
async fn cable_via_app(
    axum::extract::State(CableState { state, cable, host }): axum::extract::State<CableState>,
    request: axum::extract::Request,
) -> axum::response::Response {
    use crate::web::context::SESSION_COOKIE;
    use axum::response::IntoResponse as _;
    let headers = request.headers();
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), |c| {
            c.0.ip()
        });
    let secure =
        crate::web::client_ip::forwarded_https(peer, headers, &state.config.trusted_proxies)
            || state.config.production;
    let token = crate::web::context::parse_cookies(headers)
        .into_iter()
        .find(|(name, _)| name == SESSION_COOKIE)
        .and_then(|(_, value)| state.keys.cookies.verify(SESSION_COOKIE, &value));
    // A restored extended-protocol session is identified too, afresh (nothing cached about
    // the session is trusted: it may have ended while its socket was away); the upgrade takes
    // the session once its own checks passed.
    let restoring =
        crate::cable::restore_requested(&state.sockets.sessions, &request, token.as_deref());
    let user = match &token {
        Some(token) => match host.identify(token, restoring).await {
            Ok(user) => user,
            Err(e) => {
                tracing::warn!(error = %e, "cannot identify a cable connection: app node unreachable");
                return (
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    [(axum::http::header::RETRY_AFTER, "2")],
                    "App node unreachable",
                )
                    .into_response();
            }
        },
        None => None,
    };
    let session_token = token.filter(|_| user.is_some());
    crate::cable::upgrade(
        cable,
        host,
        request,
        Identity {
            user,
            session_token,
            secure,
            identified_afresh: restoring,
        },
    )
    .await
}

/// `GET /cable`: hands the request and who it is (from the request context the web layer
/// built out of its cookies) to [`crate::cable::upgrade`]. A restore (`?sid=` naming a stored
/// session of the cookie's session) looks the session up again, uncached, and re-checks its
/// rooms ([`crate::cable::verify_restore`]); 503 when the database cannot answer.
async fn cable(
    axum::extract::State(CableState { state, cable, host }): axum::extract::State<CableState>,
    request: axum::extract::Request,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let mut identity = match request.extensions().get::<Ctx>() {
        Some(ctx) => Identity {
            user: ctx.user.clone(),
            session_token: ctx.session_token.clone(),
            secure: ctx.secure,
            identified_afresh: false,
        },
        None => Identity::default(),
    };
    let token = identity.session_token.clone();
    if let Some(token) = token
        .as_deref()
        .filter(|t| crate::cable::restore_requested(&state.sockets.sessions, &request, Some(t)))
    {
        identity.user = match host.identify(token, true).await {
            Ok(user) => user,
            Err(e) => {
                tracing::warn!(error = %e, "cannot identify a restored cable session");
                return (
                    axum::http::StatusCode::SERVICE_UNAVAILABLE,
                    [(axum::http::header::RETRY_AFTER, "2")],
                    "Service unavailable",
                )
                    .into_response();
            }
        };
        identity.identified_afresh = true;
    }
    crate::cable::upgrade(cable, host, request, identity).await
}

/// `GET /cable` of the cable server alone (`--channels rpc`): no Campfire session is looked
/// up (there is no database); the app's `connect` identifies the connection.
async fn cable_app_only(
    axum::extract::State(CableState { state, cable, host }): axum::extract::State<CableState>,
    request: axum::extract::Request,
) -> axum::response::Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), |c| {
            c.0.ip()
        });
    let secure = crate::web::client_ip::forwarded_https(
        peer,
        request.headers(),
        &state.config.trusted_proxies,
    ) || state.config.production;
    let identity = Identity {
        secure,
        ..Identity::default()
    };
    crate::cable::upgrade(cable, host, request, identity).await
}

/// What the `/cable` handlers take: the state and the channel host chosen at start.
#[derive(Clone, Debug)]
struct CableState {
    state: SharedState,
    cable: crate::cable::CableHandles,
    host: Arc<dyn ChannelHost>,
}

/// `POST /_broadcast`: AnyCable's HTTP broadcast API. Needs `Authorization: Bearer <key>`
/// (401 without it); the body is one publication or an array
/// ([`crate::anycable::parse`]), each broadcast as `ActionCable.server.broadcast` would
/// (through Redis with `--pubsub redis`), or anycable-rails' remote disconnect command, which
/// closes the user's sockets on every node. 201 when taken, 422 for a malformed body or an
/// identifier that names no user of this app (logged, nothing done), 413 past
/// `--max-body-bytes`, 408 past `--body-timeout` (the key is checked before the body is read).
async fn anycable_broadcast(
    axum::extract::State(state): axum::extract::State<SharedState>,
    request: axum::extract::Request,
) -> axum::http::StatusCode {
    use axum::http::StatusCode;
    let auth = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !crate::anycable::bearer_matches(auth, &state.keys.broadcast_key) {
        return StatusCode::UNAUTHORIZED;
    }
    let body = match read_limited_body(&state, request).await {
        Ok(request) => request.into_body(),
        Err(status) => return status,
    };
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::PAYLOAD_TOO_LARGE;
    };
    match crate::anycable::parse_message(&body) {
        Ok(crate::anycable::Message::Publications(publications)) => {
            for p in &publications {
                state
                    .delivery
                    .broadcaster
                    .broadcast(&p.stream, p.data.as_bytes());
            }
            StatusCode::CREATED
        }
        Ok(crate::anycable::Message::Disconnect {
            identifier,
            identifiers,
            reconnect,
        }) => {
            // anycable-rails' remote disconnect: the user's sockets on every node.
            match crate::rails::global_id::parse_gid_param(&identifier) {
                Some((app, model, user_id)) if app == state.config.gid_app && model == "User" => {
                    state.delivery.bus.control(Control::Disconnect {
                        user_id,
                        session_sha256: None,
                        reconnect,
                    });
                    StatusCode::CREATED
                }
                // An app's connections (`--rpc-url`), by the identifiers its `connect` gave.
                _ if state.apps.rpc.is_some() => {
                    state.delivery.bus.control(Control::DisconnectIdentifiers {
                        identifiers,
                        reconnect,
                    });
                    StatusCode::CREATED
                }
                _ => {
                    tracing::warn!(
                        identifier = %crate::loggable::loggable(&identifier),
                        "remote disconnect for an unknown identifier"
                    );
                    StatusCode::UNPROCESSABLE_ENTITY
                }
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "dropped a malformed /_broadcast body");
            StatusCode::UNPROCESSABLE_ENTITY
        }
    }
}

/// Applies a node command from the bus to this node's sockets (every node runs this for
/// every command, the sender's own included): the one place that closes a user's sockets and
/// that starts the re-check of a user's room subscriptions.
fn apply_control(state: &SharedState, command: &Control) {
    match command {
        Control::Disconnect {
            user_id,
            session_sha256,
            reconnect,
        } => {
            let frames = disconnect_frames(DisconnectReason::Remote, *reconnect);
            let closed = match session_sha256 {
                Some(digest) => state
                    .sockets
                    .registry
                    .close_session_digest(*user_id, digest, &frames),
                None => state.sockets.registry.close_user(*user_id, &frames),
            };
            state
                .sockets
                .sessions
                .forget_user(*user_id, session_sha256.as_deref());
            if let Some(link) = &state.apps.app_link {
                link.forget_user(*user_id);
            }
            tracing::debug!(user_id, connections = closed, "remote disconnect");
        }
        Control::DisconnectIdentifiers {
            identifiers,
            reconnect,
        } => {
            let frames = disconnect_frames(DisconnectReason::Remote, *reconnect);
            let closed = state
                .sockets
                .registry
                .close_identifiers(identifiers, &frames);
            tracing::debug!(
                connections = closed,
                "remote disconnect of an app's connection"
            );
        }
        Control::SessionsEnded {
            user_id,
            session_sha256,
        } => {
            // Whether or not this node holds a socket of the user: nothing it kept of those
            // sessions may bring them back (a restore, a cached identification).
            crate::db::generation::advance();
            state
                .sockets
                .sessions
                .forget_user(*user_id, session_sha256.as_deref());
            if let Some(link) = &state.apps.app_link {
                link.forget_user(*user_id);
            }
        }
        Control::AccessRevoked { user_ids } => {
            // Lookups cached before the revocation (this node's, and a cable node's answers
            // from its app node) must not confirm a new subscription.
            crate::db::generation::advance();
            // A stored session would bring the revoked subscriptions back unchecked.
            state.sockets.sessions.forget_users(user_ids);
            if let Some(link) = &state.apps.app_link {
                for user_id in user_ids {
                    link.forget_user(*user_id);
                }
            }
            let signalled = state.sockets.registry.signal_access_revoked(user_ids);
            tracing::debug!(
                users = user_ids.len(),
                connections = signalled,
                "access revoked"
            );
        }
        Control::Resync => {
            let state = state.clone();
            tokio::spawn(async move {
                let frames = disconnect_frames(DisconnectReason::ServerRestart, true);
                let spread = Duration::from_secs(state.config.drain_spread);
                let closed = close_spread(&state, &frames, spread).await
                    + state.sockets.registry.close_all(&frames);
                tracing::warn!(
                    connections = closed,
                    spread_seconds = spread.as_secs(),
                    "told every connection to reconnect and catch up"
                );
            });
        }
    }
}

/// `GET /metrics`: every metric in Prometheus' text format (see [`crate::metrics`]). With
/// `--metrics-token`, only for `Authorization: Bearer <token>` (compared in constant time);
/// anything else gets 401 with `WWW-Authenticate: Bearer`.
async fn metrics(
    axum::extract::State(state): axum::extract::State<SharedState>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse as _;
    if let Some(token) = state.config.metrics_token.as_ref() {
        let auth = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if !crate::anycable::bearer_matches(auth, token) {
            return (
                axum::http::StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "Unauthorized",
            )
                .into_response();
        }
    }
    let body = state.metrics.render(&state.delivery.fanout.stats());
    ([(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)], body).into_response()
}

/// Folds histogram samples into buckets every [`crate::metrics::UPKEEP_INTERVAL`].
pub fn spawn_metrics_upkeep(state: SharedState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(crate::metrics::UPKEEP_INTERVAL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            state.metrics.upkeep();
        }
    })
}

/// Sends `{"type":"ping","message":<unix seconds>}` to every connection every
/// `config.ping_interval` seconds (Rails' `BEAT_INTERVAL`), through the fan-out path.
pub fn spawn_pinger(state: SharedState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let period = Duration::from_secs(state.config.ping_interval.max(1));
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            ticker.tick().await;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            state
                .delivery
                .fanout
                .send_all(&Frame::text(&crate::cable::protocol::ping(now.as_secs())));
        }
    })
}

/// A bound, ready server.
#[derive(Debug)]
pub struct Server {
    /// The state shared by every request.
    pub state: SharedState,
    listener: TcpListener,
    /// Whether [`Server::run`] starts the periodic tasks (pinger, checkpointer, upkeep, …).
    background: bool,
}

/// The listen queue the server asks for (`listen(2)`'s backlog; the kernel caps it at
/// `net.core.somaxconn`): room for a connect storm, every client of a restarted node coming
/// back at once, where a plain bind's 128 overflowed (SYNs dropped, clients retrying after
/// a second or more).
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` (address reuse on, as a plain bind sets it) with [`LISTEN_BACKLOG`].
fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

impl Server {
    /// Binds `config.bind` and builds the state.
    pub async fn bind(config: Config) -> anyhow::Result<Self> {
        let listener = listen(config.bind).with_context(|| format!("binding {}", config.bind))?;
        let state = AppState::build(config).await?;
        spawn_webhook_worker(&state);
        let weak = state.downgrade();
        state.delivery.bus.on_control(Box::new(move |command| {
            if let Some(state) = SharedState::upgrade(&weak) {
                apply_control(&state, command);
            }
        }));
        Ok(Self {
            state,
            listener,
            background: true,
        })
    }

    /// The server without its periodic tasks (pinger, metrics upkeep, WAL checkpointer, search
    /// indexing and change-log pruning, file purger, the resumption of file processing a restart
    /// cut off): what the instruction-count benchmarks serve, so that no timer's work falls
    /// into a counted operation.
    #[cfg(feature = "test-support")]
    #[must_use]
    pub fn without_background_tasks(mut self) -> Self {
        self.background = false;
        self
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` resolves, then stops accepting, sends `server_restart` (with
    /// `reconnect: true`) to every cable connection, and waits at most
    /// `config.drain_timeout` seconds for open HTTP requests and cable connections to end.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> anyhow::Result<()> {
        let Self {
            state,
            listener,
            background: periodic,
        } = self;
        let mut background = Vec::new();
        if periodic && state.config.role != Role::Cable && state.outbox.mailer.is_on() {
            background
                .push(crate::digests::Digests::of(&state.db, &state.keys, &state.outbox).spawn());
        }
        if periodic {
            background.push(spawn_pinger(state.clone()));
            background.push(spawn_metrics_upkeep(state.clone()));
        }
        // A cable node has no database of its own (it asks its app node).
        if periodic && state.config.has_database() {
            background.push(crate::db::spawn_checkpointer_with(
                state.db.pool.clone(),
                state.metrics.wal_stats(),
            ));
            background.push(crate::db::upkeep::spawn(state.db.pool.clone()));
            background.push(crate::web::files::spawn_purger(
                state.db.clone(),
                state.storage.clone(),
            ));
            background.push(crate::web::files::spawn_resume_processing(
                state.db.clone(),
                state.delivery.clone(),
                state.storage.clone(),
            ));
        }
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        // Every HTTP connection task holds a clone of `done_tx`; when the last is dropped,
        // `done_rx.recv()` returns None (the drain idiom of tokio's mini-redis).
        let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(1);
        accept(&state, &listener, shutdown, &stop_rx, &done_tx).await;
        drop(listener);
        log_fanout_totals(&state);
        let restart = disconnect_frames(DisconnectReason::ServerRestart, true);
        let spread = Duration::from_secs(state.config.drain_spread);
        let spread_out = close_spread(&state, &restart, spread).await;
        let closed = state.sockets.registry.close_all(&restart);
        tracing::info!(
            connections = spread_out + closed,
            spread_seconds = spread.as_secs(),
            "stopping: sent server_restart"
        );
        for task in background {
            task.abort();
        }
        let _ = stop_tx.send(true);
        drop(done_tx);
        drain(&state, &mut done_rx).await;
        // The app's `disconnect` for each connection closed above (`--rpc-url`).
        if let Some(rpc) = &state.apps.rpc {
            let within = Duration::from_secs(state.config.drain_timeout);
            let left = rpc.disconnects.flush(within).await;
            if left > 0 {
                tracing::warn!(left, "stopping: RPC disconnects left unsent");
            }
        }
        state.delivery.bus.stop();
        state.db.pool.close().await;
        Ok(())
    }
}

/// Accepts connections until `shutdown` resolves; serves each on its own task with hyper's
/// HTTP/1 builder (header read timeout, upgrades), which ends gracefully once `stop` turns
/// true.
async fn accept(
    state: &SharedState,
    listener: &TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
    stop: &tokio::sync::watch::Receiver<bool>,
    done: &tokio::sync::mpsc::Sender<()>,
) {
    let app = service(state.clone());
    let header_timeout = Duration::from_secs(state.config.header_timeout.max(1));
    let peers = PeerConnections::new(state.config.max_connections_per_address);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // EMFILE and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => return,
        };
        // A trusted proxy (`--trusted-proxies`) carries many clients: it is not capped.
        let trusted = state
            .config
            .trusted_proxies
            .iter()
            .any(|proxy| proxy.contains(peer.ip()));
        let slot = if trusted {
            Some(PeerSlot::uncounted())
        } else {
            peers.open(peer.ip())
        };
        let Some(slot) = slot else {
            // Closed before a byte is read: the cheapest answer, and one an idle or
            // half-sent connection cannot hold.
            tracing::debug!(
                limit = state.config.max_connections_per_address,
                "connection refused: its address holds too many open connections"
            );
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let max_line = state.config.max_request_line_bytes;
        // The first request's whole head (its line included) must arrive within one header
        // timeout of the accept: hyper's own timer starts only once the line was seen.
        let head_by = tokio::time::Instant::now() + header_timeout;
        let head_seen = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = head_seen.clone();
        let service = hyper::service::service_fn(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                seen.store(true, std::sync::atomic::Ordering::Relaxed);
                request.extensions_mut().insert(ConnectInfo(peer));
                let app = app.clone();
                async move {
                    if request_line::too_long(request.uri(), max_line) {
                        return Ok(request_line::response());
                    }
                    if let Some(refused) = request_line::refused_head(&request) {
                        return Ok(refused);
                    }
                    app.oneshot(request.map(axum::body::Body::new)).await
                }
            },
        );
        let mut stop = stop.clone();
        let done = done.clone();
        tokio::spawn(async move {
            match request_line::first_line(&stream, max_line, header_timeout).await {
                FirstLine::Fits => {}
                FirstLine::TooLong => return request_line::refuse(stream).await,
                FirstLine::Gone => return,
            }
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::pin!(conn);
            let first_head_late = async {
                tokio::time::sleep_until(head_by).await;
                if head_seen.load(std::sync::atomic::Ordering::Relaxed) {
                    std::future::pending::<()>().await;
                }
            };
            let result = tokio::select! {
                result = conn.as_mut() => result,
                () = first_head_late => {
                    tracing::debug!("request head not whole within the header timeout");
                    return;
                }
                // The guard `wait_for` returns is not `Send`: drop it inside.
                () = async { let _ = stop.wait_for(|stop| *stop).await; } => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
            drop(done);
            drop(slot);
        });
    }
}

/// Sends `frames` (`server_restart`) to every cable connection and closes it, one after
/// another in random order, evenly over `spread` (the i-th of n at `i / n × spread`), so the
/// clients' reconnects spread over that time instead of arriving in one burst. Returns how
/// many were closed; at once (0) with a zero `spread`.
async fn close_spread(
    state: &AppState,
    frames: &[crate::fanout::frame::Frame],
    spread: Duration,
) -> usize {
    if spread.is_zero() {
        return 0;
    }
    let mut connections = state.sockets.registry.connections();
    // Fisher-Yates, so no user's or node's clients always go first.
    for i in (1..connections.len()).rev() {
        let j = (rand::random::<u64>() % (i as u64 + 1)) as usize;
        connections.swap(i, j);
    }
    let n = connections.len();
    let start = tokio::time::Instant::now();
    for (i, connection) in connections.iter().enumerate() {
        let at = start + spread.mul_f64(i as f64 / n as f64);
        tokio::time::sleep_until(at).await;
        connection.close(frames);
    }
    n
}

/// Waits at most `config.drain_timeout` seconds for every HTTP connection task to end and
/// every cable socket to close (each holds a permit of `state.sockets.permits`).
async fn drain(state: &SharedState, done: &mut tokio::sync::mpsc::Receiver<()>) {
    let all_sockets =
        u32::try_from(state.config.max_connections.min(Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
    let drained = tokio::time::timeout(Duration::from_secs(state.config.drain_timeout), async {
        let _ = done.recv().await;
        let _ = state.sockets.permits.acquire_many(all_sockets).await;
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            cable = state.sockets.open(),
            "drain timeout reached; closing what is left"
        );
    }
}

/// Logs the fan-out engine's totals at shutdown (frames, bytes, write calls, cut-offs).
fn log_fanout_totals(state: &AppState) {
    let stats = state.delivery.fanout.stats();
    tracing::info!(
        frames_written = stats.frames_written,
        bytes_written = stats.bytes_written,
        write_syscalls = stats.write_syscalls,
        frames_per_write = stats.frames_written as f64 / stats.write_syscalls.max(1) as f64,
        broadcasts = stats.broadcasts,
        slow_disconnects = stats.slow_disconnects,
        queue_depth_high_water = stats.queue_depth_high_water,
        "fan-out totals"
    );
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutdown signal received");
}

/// The bots' webhook deliveries of this server (`crate::web::webhooks`): takes each off the
/// queue, at most [`crate::webhooks::CONCURRENCY`] at once. Holds the state weakly, so it ends
/// with the server.
fn spawn_webhook_worker(state: &SharedState) {
    let Some(mut rx) = state.outbox.webhooks.take_receiver() else {
        return;
    };
    let weak = state.downgrade();
    tokio::spawn(async move {
        let permits = Arc::new(tokio::sync::Semaphore::new(crate::webhooks::CONCURRENCY));
        while let Some(delivery) = rx.recv().await {
            let Ok(permit) = permits.clone().acquire_owned().await else {
                break;
            };
            let Some(state) = SharedState::upgrade(&weak) else {
                break;
            };
            let posting: crate::web::messages::Posting = axum::extract::FromRef::from_ref(&state);
            drop(state);
            tokio::spawn(async move {
                crate::web::webhooks::deliver(&posting, &delivery).await;
                drop(permit);
            });
        }
    });
}
