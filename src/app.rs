//! Wiring: the shared state, the service (routes behind the request context), and `serve`.
//!
//! `serve` accepts TCP connections itself and serves each with hyper's HTTP/1 builder, so an
//! upgraded `/cable` socket can be taken back as the plain `TcpStream` (with any bytes hyper
//! read past the handshake) and its write path handed to the fan-out engine.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::extract::ConnectInfo;
use hyper_util::rt::TokioIo;
use sqlx::SqlitePool;
use tokio::net::TcpListener;
use tower::ServiceExt as _;

use crate::cable::registry::Registry;
use crate::config::Config;
use crate::fanout::frame::Frame;
use crate::fanout::Fanout;
use crate::rails::json::JsonEscaping;
use crate::rails::{SignedCookieJar, StreamNameSigner};
use crate::web::rate_limit::{RateLimiter, WINDOW};

/// Everything a request or a connection needs, shared behind an `Arc`.
#[derive(Debug)]
pub struct AppState {
    /// The settings the server started with.
    pub config: Config,
    /// The SQLite pool.
    pub pool: SqlitePool,
    /// The fan-out engine.
    pub fanout: Fanout,
    /// Rails' signed cookie jar (`cookies.signed`).
    pub cookies: SignedCookieJar,
    /// Turbo's signed stream verifier.
    pub streams: StreamNameSigner,
    /// ActiveSupport's JSON escaping settings for frames.
    pub json: JsonEscaping,
    /// The login rate limit.
    pub login_limiter: RateLimiter,
    /// Open cable connections by user and session.
    pub cable: Registry,
    /// The room page's scripts under `/assets` (`--assets-dir`).
    pub assets: crate::web::assets::BrowserAssets,
    /// Counters, gauges and histograms for `/metrics`.
    pub metrics: crate::metrics::Metrics,
    /// Open (upgraded) cable sockets, identified or not, against `config.max_connections`.
    pub cable_sockets: std::sync::atomic::AtomicUsize,
}

/// The state as handlers receive it.
pub type SharedState = Arc<AppState>;

/// Reads `SECRET_KEY_BASE` from the config, else from `<data_dir>/secret_key_base`, creating
/// that file with 64 random bytes in hex (128 characters, as `rails secret`) on first use.
/// In production mode a missing `SECRET_KEY_BASE` is an error.
pub fn secret_key_base(config: &Config) -> anyhow::Result<String> {
    if let Some(s) = config.secret_key_base.as_ref().filter(|s| !s.is_empty()) {
        return Ok(s.0.clone());
    }
    if config.production {
        anyhow::bail!("SECRET_KEY_BASE must be set in production mode");
    }
    let path = config.data_dir.join("secret_key_base");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim().to_owned();
        if !existing.is_empty() {
            return Ok(existing);
        }
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating {}", config.data_dir.display()))?;
    let mut bytes = [0u8; 64];
    rand::fill(&mut bytes);
    let secret = hex::encode(bytes);
    write_private(&path, &secret).with_context(|| format!("writing {}", path.display()))?;
    Ok(secret)
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(text.as_bytes())
}

impl AppState {
    /// Opens (and on first start, seeds) the database and builds the state.
    pub async fn build(config: Config) -> anyhow::Result<SharedState> {
        let secret = secret_key_base(&config)?;
        let pool = crate::db::open(&config.database).await?;
        if crate::db::seed::is_empty(&pool).await? {
            let options = crate::db::seed::SeedOptions {
                users: config.seed_users,
                ..Default::default()
            };
            let report = crate::db::seed::seed(&pool, &options).await?;
            tracing::info!(?report, "seeded an empty database");
        }
        let streams = match &config.turbo_verifier_key {
            Some(hex_key) => StreamNameSigner::from_raw_key(
                hex::decode(hex_key.trim()).context("HEARTH_TURBO_VERIFIER_KEY must be hex")?,
            ),
            None => StreamNameSigner::from_secret_key_base(
                secret.as_bytes(),
                config.key_generator_digest,
            ),
        };
        let state = AppState {
            pool,
            fanout: {
                let fanout = Fanout::new(config.fanout, config.queue_limits());
                fanout.start();
                fanout
            },
            cookies: SignedCookieJar::from_secret_key_base(secret.as_bytes()),
            streams,
            json: JsonEscaping {
                escape_html_entities: true,
                escape_js_separators: config.escape_js_separators,
            },
            login_limiter: RateLimiter::new(config.login_rate_limit, WINDOW),
            cable: Registry::default(),
            assets: crate::web::assets::BrowserAssets::new(&config.assets_dir),
            metrics: crate::metrics::Metrics::new(),
            cable_sockets: std::sync::atomic::AtomicUsize::new(0),
            config,
        };
        if !state.assets.installed() {
            tracing::warn!(
                assets_dir = %state.assets.dir().display(),
                "browser packages not installed: room pages work by plain form posts, without \
                 live updates; run `{}` to install them",
                crate::web::assets::INSTALL_COMMAND
            );
        }
        Ok(Arc::new(state))
    }
}

/// The whole HTTP service: [`crate::web::context::prepare`] in front of the routes; static
/// assets and `/metrics` beside it (they need no cookies, session or CSRF).
pub fn service(state: SharedState) -> axum::Router {
    let routes = crate::web::routes(state.clone());
    let mut direct = state.assets.routes();
    if state.config.metrics {
        direct = direct.route(
            "/metrics",
            axum::routing::get(metrics).with_state(state.clone()),
        );
    }
    let prepared = axum::middleware::from_fn_with_state(state, crate::web::context::prepare);
    // Wrapping the router (not `Router::layer`) runs the middleware before routing, so the
    // `_method` override is seen by the router.
    direct.fallback_service(tower::Layer::layer(&prepared, routes))
}

/// `GET /metrics`: every metric in Prometheus' text format (see [`crate::metrics`]).
async fn metrics(
    axum::extract::State(state): axum::extract::State<SharedState>,
) -> impl axum::response::IntoResponse {
    let body = state.metrics.render(&state.fanout.stats());
    (
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        body,
    )
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
}

impl Server {
    /// Binds `config.bind` and builds the state.
    pub async fn bind(config: Config) -> anyhow::Result<Server> {
        let listener = TcpListener::bind(config.bind)
            .await
            .with_context(|| format!("binding {}", config.bind))?;
        let state = AppState::build(config).await?;
        Ok(Server { state, listener })
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
        let Server { state, listener } = self;
        let pinger = spawn_pinger(state.clone());
        let checkpointer = crate::db::spawn_checkpointer(state.pool.clone());
        let upkeep = spawn_metrics_upkeep(state.clone());
        let app = service(state.clone());
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let in_flight = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let header_timeout = Duration::from_secs(state.config.header_timeout.max(1));
        let drain = Duration::from_secs(state.config.drain_timeout);
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let _ = stream.set_nodelay(true);
            let app = app.clone();
            let service = hyper::service::service_fn(
                move |mut request: hyper::Request<hyper::body::Incoming>| {
                    request.extensions_mut().insert(ConnectInfo(peer));
                    app.clone().oneshot(request.map(axum::body::Body::new))
                },
            );
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let mut stop = stop_rx.clone();
            let in_flight = in_flight.clone();
            in_flight.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                tokio::pin!(conn);
                let result = tokio::select! {
                    result = conn.as_mut() => result,
                    _ = async { let _ = stop.wait_for(|stop| *stop).await; } => {
                        conn.as_mut().graceful_shutdown();
                        conn.await
                    }
                };
                if let Err(e) = result {
                    tracing::debug!(error = %e, "HTTP connection ended with an error");
                }
                in_flight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        drop(listener);
        let stats = state.fanout.stats();
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
        let closed = state.cable.disconnect_all_for_restart();
        tracing::info!(connections = closed, "stopping: sent server_restart");
        pinger.abort();
        checkpointer.abort();
        upkeep.abort();
        let _ = stop_tx.send(true);
        let drained = tokio::time::timeout(drain, async {
            while in_flight.load(std::sync::atomic::Ordering::SeqCst) > 0 || !state.cable.is_empty()
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                requests = in_flight.load(std::sync::atomic::Ordering::SeqCst),
                cable = state.cable.len(),
                "drain timeout reached; closing what is left"
            );
        }
        state.pool.close().await;
        Ok(())
    }
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
