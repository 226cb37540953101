//! `hearth`: the command-line front. `serve` runs the server, `seed` builds a seed database,
//! `sign-stream` prints a signed stream name. Thin on purpose: the work is in the library.

use clap::{Parser, Subcommand};

use hearth::config::Config;

#[derive(Debug, Parser)]
#[command(
    name = "hearth",
    version,
    about = "A Campfire-style chat with a Rails-compatible Action Cable server",
    after_help = "Every setting of `hearth serve` is a flag with an environment variable; \
`hearth serve --help` lists them all with their defaults.\n\n\
A server answers the chat at /, Action Cable at /cable, a health check at /up, \
Prometheus metrics at /metrics and AnyCable's broadcast API at POST /_broadcast.\n\n\
Several nodes: --pubsub redis shares broadcasts through Redis in Rails' redis adapter format \
(channel [--redis-channel-prefix:]<broadcasting>), so Rails apps with cable.yml `adapter: redis` \
broadcast into Hearth; --role app serves the web app and the database, --role cable serves \
/cable only and asks the app node (--app-url) who a connection is.\n\nIt logs to stdout (JSON lines with --log-json). SIGTERM or \
SIGINT stops it gracefully: cable clients are told to reconnect (server_restart) and open \
requests finish."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Run the server (creates, migrates and seeds the database on first start).
    Serve(Config),
    /// Build a deterministic seed database.
    Seed {
        /// SQLite database file to create; must not hold users yet.
        #[arg(
            long,
            env = "HEARTH_DATABASE",
            default_value = "storage/hearth.sqlite3"
        )]
        database: std::path::PathBuf,
        /// Generated users `user1@example.com` … `userN@example.com` (password `password`).
        #[arg(long, env = "HEARTH_SEED_USERS", default_value_t = 1000)]
        users: usize,
    },
    /// Print the bearer key of AnyCable's broadcast endpoint `POST /_broadcast`
    /// (`--broadcast-key`, or derived from secret_key_base).
    BroadcastKey {
        #[command(flatten)]
        config: Config,
    },
    /// Print the signed name of a stream, as Turbo's `signed_stream_name` would.
    SignStream {
        /// The stream name, e.g. `rooms`.
        name: String,
        #[command(flatten)]
        config: Config,
    },
}

fn init_tracing(level: &str, json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours only on a terminal: a log redirected to a file stays plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Cmd::Serve(config) => {
            init_tracing(&config.log_level, config.log_json);
            let server = hearth::app::Server::bind(config).await?;
            tracing::info!(
                address = %server.local_addr()?,
                fanout = ?server.state.fanout.kind(),
                "Hearth is listening"
            );
            server.run(hearth::app::shutdown_signal()).await?;
        }
        Cmd::Seed { database, users } => {
            init_tracing("info", false);
            let pool = hearth::db::open(&database).await?;
            let options = hearth::db::seed::SeedOptions {
                users,
                ..Default::default()
            };
            let started = std::time::Instant::now();
            let report = hearth::db::seed::seed(&pool, &options).await?;
            pool.close().await;
            println!("{report:?} in {:.2?}", started.elapsed());
        }
        Cmd::BroadcastKey { config } => {
            match config.broadcast_key.as_deref().filter(|k| !k.is_empty()) {
                Some(key) => println!("{key}"),
                None => println!(
                    "{}",
                    hearth::anycable::broadcast_key(&hearth::state::secret_key_base(&config)?)
                ),
            }
        }
        Cmd::SignStream { name, config } => {
            let secret = hearth::state::secret_key_base(&config)?;
            let signer = match &config.turbo_verifier_key {
                Some(key) => {
                    hearth::rails::StreamNameSigner::from_raw_key(&hex::decode(key.trim())?)
                }
                None => hearth::rails::StreamNameSigner::from_secret_key_base(
                    secret.as_bytes(),
                    config.key_generator_digest,
                ),
            };
            println!("{}", signer.sign(&name));
        }
    }
    Ok(())
}
