//! The shared server state: what every request and connection needs, built once at start.
//!
//! It sits below the web and cable layers (which receive it) and above the parts it holds:
//! the database pool, the fan-out engine behind its [`Broadcaster`], Rails' cookie jar and
//! stream signer, the registry of open connections, the sign-in rate limit and the metrics.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::sync::Semaphore;

use crate::app_link::{AppLink, Apps};
use crate::config::Config;
use crate::config::{PubSubKind, Role};
use crate::db::Db;
use crate::fanout::Fanout;
use crate::metrics::Metrics;
use crate::outbox::Outbox;
use crate::pubsub::{Broadcaster, Bus, Delivery, LocalBus};
use crate::rails::json::JsonEscaping;
use crate::rails::{Keys, SignedCookieJar, SignedGlobalIds, StreamNameSigner};
use crate::rate_limit::{Limits, RateLimiter, WINDOW};
use crate::redis_pubsub::RedisPubSub;
use crate::registry::Sockets;

/// Everything a request or a connection needs: one handle per wing, each extracted by the
/// handlers that use it (`impl FromRef<SharedState>` below).
#[derive(Debug)]
pub struct AppState {
    /// The settings the server started with.
    pub config: Arc<Config>,
    /// The database: pool, auth cache, group commit, settings cache, bans flag.
    pub db: Db,
    /// The bus, the broadcaster, the history and the fan-out engine.
    pub delivery: Delivery,
    /// Every verifier and key derived from `secret_key_base`.
    pub keys: Keys,
    /// Open connections, resumable sessions, presence, socket permits.
    pub sockets: Sockets,
    /// Active Storage: the services, `ActiveStorage.verifier`, the upload limits.
    pub storage: Arc<crate::storage::Storage>,
    /// The sign-in limit and the per-client request limits.
    pub limits: Limits,
    /// Counters, gauges and histograms for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// The room page's scripts under `/assets` (built in, or `--assets-dir`).
    pub assets: Arc<crate::assets::BrowserAssets>,
    /// Pushes, webhooks, mail and link-preview fetches.
    pub outbox: Outbox,
    /// The app node (on a cable node) and an app's RPC (`--rpc-url`).
    pub apps: Apps,
    /// Single sign-on with OpenID Connect: off, or the provider (`--oidc-issuer`).
    pub sso: crate::oidc::Sso,
}

/// The state as the router holds it: one [`AppState`] behind an `Arc`, so that the tasks
/// that must end with the server hold it weakly ([`SharedState::downgrade`]).
#[derive(Clone, Debug)]
pub struct SharedState(Arc<AppState>);

impl SharedState {
    /// A weak reference: it upgrades while the server (some clone of this state) lives.
    pub fn downgrade(&self) -> std::sync::Weak<AppState> {
        Arc::downgrade(&self.0)
    }

    /// The state a weak reference of [`Self::downgrade`] points to, while it lives.
    pub fn upgrade(weak: &std::sync::Weak<AppState>) -> Option<Self> {
        weak.upgrade().map(Self)
    }
}

impl std::ops::Deref for SharedState {
    type Target = AppState;
    fn deref(&self) -> &AppState {
        &self.0
    }
}

/// One `FromRef` per handle: a handler names the handles it uses (`State<Db>`, …).
macro_rules! handles {
    ($($field:ident: $handle:ty),* $(,)?) => {$(
        impl axum::extract::FromRef<SharedState> for $handle {
            fn from_ref(state: &SharedState) -> Self {
                state.$field.clone()
            }
        }
    )*};
}

handles! {
    config: Arc<Config>,
    db: Db,
    delivery: Delivery,
    keys: Keys,
    sockets: Sockets,
    storage: Arc<crate::storage::Storage>,
    limits: Limits,
    metrics: Arc<Metrics>,
    assets: Arc<crate::assets::BrowserAssets>,
    outbox: Outbox,
    apps: Apps,
    sso: crate::oidc::Sso,
}

/// Reads `SECRET_KEY_BASE` from the config, else from `<data_dir>/secret_key_base`, creating
/// that file with 64 random bytes in hex (128 characters, as `rails secret`) on first use.
/// In production mode a missing `SECRET_KEY_BASE` is an error.
pub fn secret_key_base(config: &Config) -> anyhow::Result<String> {
    find_secret_key_base(
        config.secret_key_base.as_deref().map(String::as_str),
        config.production,
        &config.data_dir,
    )
}

/// [`secret_key_base`] from its three settings: `explicit` (`SECRET_KEY_BASE`; empty counts as
/// unset), `production` and `data_dir`.
pub fn find_secret_key_base(
    explicit: Option<&str>,
    production: bool,
    data_dir: &Path,
) -> anyhow::Result<String> {
    if let Some(s) = explicit.filter(|s| !s.is_empty()) {
        return Ok(s.to_owned());
    }
    if production {
        anyhow::bail!("SECRET_KEY_BASE must be set in production mode");
    }
    let path = data_dir.join("secret_key_base");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim().to_owned();
        if !existing.is_empty() {
            return Ok(existing);
        }
    }
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let mut bytes = [0u8; 64];
    rand::fill(&mut bytes);
    let secret = hex::encode(bytes);
    crate::push::write_private(&path, &secret)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(secret)
}

/// A production server's check of its database: an error naming every published demo
/// credential still in it ([`crate::db::seed::demo_credentials`]), so that a seeded demo
/// database is never served in production by mistake.
async fn refuse_demo_credentials(pool: &sqlx::SqlitePool) -> anyhow::Result<()> {
    let found = crate::db::seed::demo_credentials(pool).await?;
    if found.is_empty() {
        if crate::db::seed::is_empty(pool).await? {
            tracing::info!(
                "production: the database is empty; open / to create the administrator (first run)"
            );
        }
        return Ok(());
    }
    anyhow::bail!(
        "refusing to start in production mode: the database holds the demo seed's published \
         credentials ({}). Start without --production to change them, or start production on a \
         new, empty database (it begins at the first-run form)",
        found.join("; ")
    )
}

impl AppState {
    /// Opens (and on first start, unless `--no-seed` or `--production`, seeds) the database and
    /// builds the state. In production an empty database stays empty (the first visitor gets
    /// `/first_run`), and a database holding the seed's published credentials is refused.
    pub async fn build(config: Config) -> anyhow::Result<SharedState> {
        let secret = secret_key_base(&config)?;
        if config.role != Role::All && config.pubsub != PubSubKind::Redis {
            anyhow::bail!("--role app and --role cable need --pubsub redis");
        }
        let internal_key = crate::app_link::internal_key(&secret);
        let app_link = match (config.role, &config.app_url) {
            (Role::Cable, Some(url)) => Some(Arc::new(AppLink::new(
                url,
                internal_key.clone(),
                std::time::Duration::from_secs(config.auth_cache_seconds),
                std::time::Duration::from_secs(config.app_timeout_seconds.max(1)),
            ))),
            (Role::Cable, None) => anyhow::bail!("--role cable needs --app-url"),
            _ => None,
        };
        if let Some(link) = &app_link {
            // A cable node whose secret differs from its app node's could identify no one:
            // refuse to start and say why (an app node not up yet is only a warning).
            match link.check_key().await {
                crate::app_link::KeyCheck::Accepted => {}
                crate::app_link::KeyCheck::Unreachable(e) => tracing::warn!(
                    error = %e,
                    "the app node does not answer yet; /up fails until it does"
                ),
                crate::app_link::KeyCheck::Refused(why) => anyhow::bail!("{why}"),
            }
        }
        if config.channels == crate::config::ChannelSet::Rpc && config.rpc_url.is_none() {
            anyhow::bail!("--channels rpc needs --rpc-url");
        }
        let pool = if !config.has_database() {
            crate::db::unused_pool()?
        } else {
            crate::db::open(&config.database).await?
        };
        if config.has_database() && config.production {
            refuse_demo_credentials(&pool).await?;
        } else if config.has_database()
            && !config.no_seed
            && crate::db::seed::is_empty(&pool).await?
        {
            let options = crate::db::seed::SeedOptions {
                users: config.seed_users,
                ..Default::default()
            };
            let report = crate::db::seed::seed(&pool, &options).await?;
            tracing::info!(?report, "seeded an empty database");
        }
        let signer = match &config.turbo_verifier_key {
            Some(hex_key) => StreamNameSigner::from_raw_key(
                &hex::decode(hex_key.trim()).context("HEARTH_TURBO_VERIFIER_KEY must be hex")?,
            ),
            None => StreamNameSigner::from_secret_key_base(
                secret.as_bytes(),
                config.key_generator_digest,
            ),
        };
        let fanout = Fanout::with_budgets(
            config.fanout,
            config.queue_limits(),
            config.writer_threads,
            config.queue_budgets(),
        )
        .with_numbered(&crate::streams::MARKS);
        fanout.start();
        let json = JsonEscaping {
            escape_html_entities: true,
            escape_js_separators: config.escape_js_separators,
        };
        let metrics = Arc::new(Metrics::new());
        let memory_history = Arc::new(
            crate::history::MemoryHistory::new(
                config.history_limit,
                std::time::Duration::from_secs(config.history_ttl),
            )
            .with_numbered(&crate::streams::MARKS),
        );
        let mut history: Arc<dyn crate::history::History> = memory_history.clone();
        let swept = Arc::downgrade(&memory_history);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(30));
            loop {
                every.tick().await;
                match swept.upgrade() {
                    Some(history) => history.sweep(),
                    None => break,
                }
            }
        });
        let bus: Arc<dyn Bus> = match config.pubsub {
            PubSubKind::Inprocess => Arc::new(LocalBus::with_history(
                fanout.clone(),
                history.clone(),
                json,
            )),
            PubSubKind::Redis => {
                let redis = RedisPubSub::start(
                    &config.redis_url,
                    &config.redis_channel_prefix,
                    &crate::anycable::redis_channel(
                        config.anycable_redis_channel.as_deref(),
                        &config.redis_channel_prefix,
                    ),
                    &config.gid_app,
                    fanout.clone(),
                    metrics.clone(),
                    crate::redis_pubsub::HistorySettings {
                        limit: config.history_limit,
                        ttl: std::time::Duration::from_secs(config.history_ttl),
                        json,
                        log_limit: config.redis_log_limit,
                    },
                )?;
                // Several nodes: positions are assigned and kept in Redis.
                history = redis.history();
                redis
            }
        };
        let broadcaster =
            Broadcaster::with_sink(bus.clone(), json, &config.gid_app, metrics.clone());
        let broadcast_key = match config.broadcast_key.as_deref().filter(|k| !k.is_empty()) {
            Some(key) => key.to_owned(),
            None => crate::anycable::broadcast_key(config.anycable.key_base().unwrap_or(&secret)),
        };
        let rpc = match config.rpc_url.as_deref().filter(|u| !u.is_empty()) {
            Some(url) => {
                let key = match config.rpc_secret.as_deref().filter(|k| !k.is_empty()) {
                    Some(key) => key.to_owned(),
                    None => crate::rpc::rpc_key(config.anycable.key_base().unwrap_or(&secret)),
                };
                crate::rpc::check_settings(url, &key, &config.rpc_headers)?;
                Some(crate::rpc::RpcApp::start(
                    url,
                    key,
                    config.rpc_concurrency,
                    config.rpc_headers.clone(),
                    &metrics,
                ))
            }
            None => None,
        };
        let bans_present = config.has_database() && crate::db::bans::any(&pool).await?;
        let presence = crate::presence::Presence::new(pool.clone());
        let webhooks = crate::webhooks::WebhookQueue::new(
            &metrics,
            crate::webhooks::root_store(config.webhook_ca_file.as_deref())?,
        )?;
        let link_previews = crate::link_previews::LinkPreviews::new(
            config.link_previews,
            config.link_preview_allow_network.clone(),
        )?;
        let sso = crate::oidc::Sso::from_flags(&config.oidc)?;
        let mailer = crate::mail::Mailer::start(
            config.smtp_url.as_deref().map(String::as_str),
            config.mail_from.as_deref(),
            config.smtp_ca_file.as_deref(),
            &metrics,
            || {
                crate::mail::keys::MailKeys::from_secret_key_base(
                    secret.as_bytes(),
                    config.key_generator_digest,
                )
            },
        )?;
        let max_connections = config.max_connections.min(Semaphore::MAX_PERMITS);
        let state = Self {
            db: Db::new(
                pool.clone(),
                std::time::Duration::from_secs(config.auth_cache_seconds),
                bans_present,
            ),
            delivery: Delivery {
                bus,
                broadcaster,
                history,
                fanout,
                json,
            },
            keys: Keys {
                cookies: SignedCookieJar::for_server(
                    secret.as_bytes(),
                    config.key_generator_digest,
                    config.signed_cookie_digest,
                ),
                signer,
                sgids: Arc::new(SignedGlobalIds::from_secret_key_base(
                    secret.as_bytes(),
                    config.key_generator_digest,
                    &config.gid_app,
                )),
                signed_ids: crate::rails::SignedIdVerifier::from_secret_key_base(
                    secret.as_bytes(),
                    config.key_generator_digest,
                ),
                internal_key: internal_key.into(),
                broadcast_key: broadcast_key.into(),
            },
            sockets: Sockets {
                registry: Arc::default(),
                sessions: Arc::new(crate::resumable::SessionStore::new(
                    std::time::Duration::from_secs(config.sessions_ttl),
                )),
                presence,
                permits: Arc::new(Semaphore::new(max_connections)),
                max: max_connections,
            },
            limits: Limits {
                login: Arc::new(RateLimiter::new(config.login_rate_limit, WINDOW)),
                requests: Arc::new(config.request_limits()),
            },
            assets: Arc::new(crate::assets::BrowserAssets::new(
                config.assets_dir.clone(),
            )?),
            outbox: Outbox {
                pusher: crate::push::Pusher::start(
                    pool,
                    crate::push::VapidKeys::load(&config)?,
                    &config,
                    &metrics,
                )?,
                webhooks: Arc::new(webhooks),
                mailer,
                link_previews: Arc::new(link_previews),
            },
            apps: Apps { app_link, rpc },
            sso,
            metrics,
            storage: Arc::new(
                crate::storage::Storage::new(
                    crate::rails::ActiveStorageVerifier::from_secret_key_base(
                        secret.as_bytes(),
                        config.key_generator_digest,
                    ),
                    config
                        .storage_root
                        .clone()
                        .unwrap_or_else(|| config.data_dir.clone()),
                    config.max_upload_bytes,
                    config.upload_rate_limit,
                )
                .with_s3_from(&config)?,
            ),
            config: Arc::new(config),
        };
        if let Some(dir) = state.assets.dir() {
            tracing::info!(assets_dir = %dir.display(), "the page's own scripts are read from disk");
        }
        Ok(SharedState(Arc::new(state)))
    }
}
