//! `hearth`: the command-line front. `serve` runs the server, `seed` builds a seed database,
//! `sign-stream` prints a signed stream name, `broadcast-key` the key of `POST /_broadcast`;
//! `import`, `export`, `backup` and `restore` move a team in and out (`hearth::transfer`).
//! Thin on purpose: the work is in the library.

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

use std::path::PathBuf;

use hearth::config::{Config, Redacted};
use hearth::rails::KdfDigest;

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
    Serve(Box<Config>),
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
        /// The key itself, printed as given (as `hearth serve --broadcast-key`).
        #[arg(long, env = "HEARTH_BROADCAST_KEY", hide_env_values = true)]
        broadcast_key: Option<Redacted<String>>,
        #[command(flatten)]
        secret: SecretFlags,
        /// anycable-go's names, as `hearth serve` reads them (hidden).
        #[command(flatten)]
        anycable: hearth::config::AnyCableNames,
    },
    /// Print the signed name of a stream, as Turbo's `signed_stream_name` would.
    SignStream {
        /// The stream name, e.g. `rooms`.
        name: String,
        /// Turbo's signed stream verifier key as hex, instead of deriving it from
        /// secret_key_base (as `hearth serve --turbo-verifier-key`).
        #[arg(long, env = "HEARTH_TURBO_VERIFIER_KEY", hide_env_values = true)]
        turbo_verifier_key: Option<Redacted<String>>,
        /// Digest of the PBKDF2 key generator (Rails 7.0+ defaults: sha256; older apps: sha1).
        #[arg(long, env = "HEARTH_KEY_GENERATOR_DIGEST", default_value = "sha256")]
        key_generator_digest: KdfDigest,
        #[command(flatten)]
        secret: SecretFlags,
        /// anycable-go's names, as `hearth serve` reads them (hidden).
        #[command(flatten)]
        anycable: hearth::config::AnyCableNames,
    },
    /// Bring a team's history in: a Campfire `storage/` directory or a Slack export.
    #[command(subcommand)]
    Import(ImportCmd),
    /// Write the team out as the `storage/` directory Campfire reads (its database and files).
    Export {
        /// The directory to write (created; must be empty or missing).
        #[arg(long)]
        to: PathBuf,
        #[command(flatten)]
        target: TargetFlags,
        #[command(flatten)]
        s3: S3Flags,
    },
    /// Take a consistent backup of the database and the files, while the server runs.
    Backup {
        /// The backup file to write.
        #[arg(long)]
        to: PathBuf,
        #[command(flatten)]
        target: TargetFlags,
    },
    /// Restore a backup taken by `hearth backup` (the server stopped).
    Restore {
        /// The backup file to read.
        #[arg(long)]
        from: PathBuf,
        /// Write into a database that already holds a team, replacing it.
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        target: TargetFlags,
    },
}

/// What `hearth import` reads.
#[derive(Debug, Subcommand)]
enum ImportCmd {
    /// A Campfire `storage/` directory (`db/production.sqlite3` and `files/`), read only; ids kept.
    Campfire {
        /// The Campfire `storage/` directory.
        #[arg(long)]
        from: PathBuf,
        /// Write into a database that already holds a team, replacing it.
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        target: TargetFlags,
    },
    /// A Slack workspace export (the `.zip` Slack's export page gives); prints each person's
    /// sign-in link (Slack's export has no passwords).
    Slack {
        /// The export's `.zip` file.
        #[arg(long)]
        from: PathBuf,
        /// Write into a database that already holds a team, replacing it.
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        target: TargetFlags,
        #[command(flatten)]
        slack: SlackFlags,
    },
}

/// What `hearth import slack` is asked besides the source and target.
#[derive(Debug, clap::Args)]
struct SlackFlags {
    /// The server's address, for the printed sign-in links (e.g. https://chat.example.com);
    /// without it the links are paths.
    #[arg(long, default_value = "")]
    url: String,
    /// The account's name (default: from the zip's name, `Acme Slack export …` → Acme).
    #[arg(long)]
    name: Option<String>,
    /// How long the printed sign-in links work, in hours.
    #[arg(long, default_value_t = 4)]
    links_valid_hours: u64,
    /// The most one entry of the zip may inflate to, in bytes.
    #[arg(long, default_value_t = hearth::transfer::slack::archive::Limits::default().max_entry_bytes)]
    max_entry_bytes: u64,
    /// The most the whole zip may inflate to, in bytes.
    #[arg(long, default_value_t = hearth::transfer::slack::archive::Limits::default().max_total_bytes)]
    max_export_bytes: u64,
    /// Rails' secret_key_base of the server (as `hearth serve`); when unset, the one kept in
    /// `<data-dir>/secret_key_base`, created there if missing.
    #[arg(long, env = "SECRET_KEY_BASE", hide_env_values = true)]
    secret_key_base: Option<Redacted<String>>,
    /// Digest of the PBKDF2 key generator (as `hearth serve`).
    #[arg(long, env = "HEARTH_KEY_GENERATOR_DIGEST", default_value = "sha256")]
    key_generator_digest: KdfDigest,
    /// The GlobalID app name (as `hearth serve --gid-app`).
    #[arg(long, env = "HEARTH_GID_APP", default_value = "campfire")]
    gid_app: String,
}

impl SlackFlags {
    fn settings(&self, target: &TargetFlags) -> hearth::transfer::slack::Settings {
        hearth::transfer::slack::Settings {
            secret_key_base: self
                .secret_key_base
                .as_deref()
                .cloned()
                .filter(|s| !s.is_empty()),
            data_dir: target.data_dir.clone(),
            key_generator_digest: self.key_generator_digest,
            gid_app: self.gid_app.clone(),
            origin: self.url.clone(),
            account_name: self.name.clone(),
            limits: hearth::transfer::slack::archive::Limits {
                max_entry_bytes: self.max_entry_bytes,
                max_total_bytes: self.max_export_bytes,
            },
            link_validity: std::time::Duration::from_secs(self.links_valid_hours * 3600),
        }
    }
}

/// Hearth's database and files, found as `hearth serve` finds them, and what every transfer
/// command is asked.
#[derive(Debug, clap::Args)]
struct TargetFlags {
    /// Hearth's SQLite database file (as `hearth serve --database`); with `--data-dir` given
    /// and this not, `<data-dir>/hearth.sqlite3`.
    #[arg(
        long,
        env = "HEARTH_DATABASE",
        default_value = "storage/hearth.sqlite3"
    )]
    database: PathBuf,
    /// Directory of generated state (as `hearth serve --data-dir`).
    #[arg(long, env = "HEARTH_DATA_DIR", default_value = "storage")]
    data_dir: PathBuf,
    /// Root of the disk service (as `hearth serve --storage-root`); default: the data directory.
    #[arg(long, env = "HEARTH_STORAGE_ROOT")]
    storage_root: Option<PathBuf>,
    /// Print what would be done (counts per table) and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// No progress line on standard error.
    #[arg(long)]
    quiet: bool,
}

impl TargetFlags {
    fn target(&self) -> hearth::transfer::Target {
        hearth::transfer::Target {
            database: self.database.clone(),
            storage_root: self
                .storage_root
                .clone()
                .unwrap_or_else(|| self.data_dir.clone()),
        }
    }

    /// The options of a command; `replace` only for those that write into Hearth's database
    /// (the imports and the restore take `--replace`; the export and the backup only read it).
    fn options(&self, replace: bool) -> hearth::transfer::Options {
        hearth::transfer::Options {
            dry_run: self.dry_run,
            replace,
            progress: !self.quiet,
        }
    }
}

/// The S3 bucket a server run with `--storage s3` keeps files in, with `hearth serve`'s flags
/// and environment variables, for the commands that read those files.
#[derive(Debug, clap::Args)]
struct S3Flags {
    /// The S3-compatible server's URL (as `hearth serve --s3-endpoint`); unset: files are read
    /// from the disk service only.
    #[arg(long, env = "HEARTH_S3_ENDPOINT", default_value = "")]
    s3_endpoint: String,
    /// The bucket (as `hearth serve --s3-bucket`).
    #[arg(long, env = "HEARTH_S3_BUCKET", default_value = "")]
    s3_bucket: String,
    /// The region requests are signed for (as `hearth serve --s3-region`).
    #[arg(long, env = "HEARTH_S3_REGION", default_value = "us-east-1")]
    s3_region: String,
    /// The access key id (as `hearth serve --s3-access-key-id`).
    #[arg(long, env = "HEARTH_S3_ACCESS_KEY_ID", default_value = "")]
    s3_access_key_id: String,
    /// The secret access key (as `hearth serve --s3-secret-access-key`).
    #[arg(
        long,
        env = "HEARTH_S3_SECRET_ACCESS_KEY",
        default_value = "",
        hide_env_values = true
    )]
    s3_secret_access_key: Redacted<String>,
}

impl S3Flags {
    /// The bucket, when an endpoint and a bucket are given.
    fn config(&self) -> Option<hearth::storage::s3::S3Config> {
        (!self.s3_endpoint.is_empty() && !self.s3_bucket.is_empty()).then(|| {
            hearth::storage::s3::S3Config {
                endpoint: self.s3_endpoint.clone(),
                bucket: self.s3_bucket.clone(),
                region: self.s3_region.clone(),
                access_key_id: self.s3_access_key_id.clone(),
                secret_access_key: self.s3_secret_access_key.0.clone(),
            }
        })
    }
}

/// Where secret_key_base comes from, for the commands that print a key derived from it: the
/// flags and environment variables of `hearth serve` with the same names, and nothing else.
#[derive(Debug, clap::Args)]
struct SecretFlags {
    /// Rails' secret_key_base. When unset, the one kept in `<data-dir>/secret_key_base` (created
    /// there on first use, as `hearth serve` does).
    #[arg(long, env = "SECRET_KEY_BASE", hide_env_values = true)]
    secret_key_base: Option<Redacted<String>>,
    /// Directory of generated state (the secret_key_base file).
    #[arg(long, env = "HEARTH_DATA_DIR", default_value = "storage")]
    data_dir: PathBuf,
    /// Production mode: refuse to run without an explicit SECRET_KEY_BASE.
    #[arg(long, env = "HEARTH_PRODUCTION", default_value_t = false)]
    production: bool,
}

impl SecretFlags {
    fn secret_key_base(&self) -> anyhow::Result<String> {
        hearth::state::find_secret_key_base(
            self.secret_key_base.as_deref().map(String::as_str),
            self.production,
            &self.data_dir,
        )
    }
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

/// `<data-dir>/hearth.sqlite3` when the command's `--data-dir` (or `HEARTH_DATA_DIR`) was given
/// and its `--database` (or `HEARTH_DATABASE`) was not: one flag moves all of Hearth's state.
/// None otherwise, and for commands without both flags.
fn database_beside_data_dir(matches: &ArgMatches) -> Option<PathBuf> {
    let mut leaf = matches;
    while let Some((_, sub)) = leaf.subcommand() {
        leaf = sub;
    }
    // `try_get_raw` answers an error, where `value_source` would panic, for an unknown id.
    leaf.try_get_raw("database").ok()?;
    let data_dir = leaf.try_get_one::<PathBuf>("data_dir").ok()??;
    let given = |id| {
        !matches!(
            leaf.value_source(id),
            None | Some(ValueSource::DefaultValue)
        )
    };
    (!given("database") && given("data_dir")).then(|| data_dir.join("hearth.sqlite3"))
}

/// Where the database was before `--data-dir` alone named it too: relative to the working
/// directory, whatever the data directory.
const FORMER_DEFAULT_DATABASE: &str = "storage/hearth.sqlite3";

/// Refuses to go on with `database` (named by `--data-dir` alone) when it does not exist yet
/// but a database is at the former default path: a team that kept its data there would
/// otherwise get a new, empty (or seeded) database without a word.
fn refuse_a_left_database(database: &std::path::Path) -> anyhow::Result<()> {
    let former = std::path::Path::new(FORMER_DEFAULT_DATABASE);
    if !database.exists() && former.exists() && database != former {
        anyhow::bail!(
            "{} does not exist, but a database is at {FORMER_DEFAULT_DATABASE}: give \
             --database {FORMER_DEFAULT_DATABASE} to use it, or move it (with its -wal and -shm \
             files) into the data directory",
            database.display()
        );
    }
    Ok(())
}

impl Cmd {
    /// Sets the database file of a command that has one ([`database_beside_data_dir`]).
    fn set_database(&mut self, database: PathBuf) {
        match self {
            Self::Serve(config) => config.database = database,
            Self::Import(ImportCmd::Campfire { target, .. } | ImportCmd::Slack { target, .. })
            | Self::Export { target, .. }
            | Self::Backup { target, .. }
            | Self::Restore { target, .. } => target.database = database,
            Self::Seed { .. } | Self::BroadcastKey { .. } | Self::SignStream { .. } => {}
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Some(database) = database_beside_data_dir(&matches) {
        refuse_a_left_database(&database)?;
        cli.command.set_database(database);
    }
    match cli.command {
        Cmd::Serve(config) => {
            let mut config = *config;
            hearth::config::AnyCableNames::apply(&mut config)?;
            init_tracing(&config.log_level, config.log_json);
            let server = hearth::app::Server::bind(config).await?;
            tracing::info!(
                address = %server.local_addr()?,
                fanout = ?server.state.delivery.fanout.kind(),
                database = %server.state.config.database.display(),
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
        Cmd::BroadcastKey {
            broadcast_key,
            secret,
            anycable,
        } => {
            // As `hearth serve` picks it: Hearth's name, then anycable-go's two, else derived
            // from ANYCABLE_SECRET or secret_key_base.
            let given = [
                &broadcast_key,
                &anycable.go_broadcast_key,
                &anycable.go_http_broadcast_secret,
            ]
            .into_iter()
            .flatten()
            .find(|k| !k.is_empty());
            match given {
                Some(key) => println!("{}", key.as_str()),
                None => {
                    let base = match anycable.key_base() {
                        Some(base) => base.to_owned(),
                        None => secret.secret_key_base()?,
                    };
                    println!("{}", hearth::anycable::broadcast_key(&base));
                }
            }
        }
        Cmd::SignStream {
            name,
            turbo_verifier_key,
            key_generator_digest,
            secret,
            anycable,
        } => {
            // As `hearth serve` picks it: Hearth's hex key, else anycable-go's Turbo secret
            // or common secret as the key itself.
            let go_key = [&anycable.go_turbo_streams_secret, &anycable.go_secret]
                .into_iter()
                .flatten()
                .find(|k| !k.is_empty())
                .map(|k| Redacted(hex::encode(k.as_bytes())));
            let signer = match turbo_verifier_key.filter(|k| !k.is_empty()).or(go_key) {
                Some(key) => {
                    hearth::rails::StreamNameSigner::from_raw_key(&hex::decode(key.trim())?)
                }
                None => hearth::rails::StreamNameSigner::from_secret_key_base(
                    secret.secret_key_base()?.as_bytes(),
                    key_generator_digest,
                ),
            };
            println!("{}", signer.sign(&name));
        }
        Cmd::Import(ImportCmd::Campfire {
            from,
            replace,
            target,
        }) => {
            init_tracing("warn", false);
            let counts = hearth::transfer::campfire::import(
                &from,
                &target.target(),
                target.options(replace),
            )
            .await?;
            print!("{counts}");
        }
        Cmd::Import(ImportCmd::Slack {
            from,
            replace,
            target,
            slack,
        }) => {
            init_tracing("warn", false);
            let report = hearth::transfer::slack::import(
                &from,
                &target.target(),
                target.options(replace),
                &slack.settings(&target),
            )
            .await?;
            print!("{report}");
        }
        Cmd::Export { to, target, s3 } => {
            init_tracing("warn", false);
            let source = target.target();
            let mut export = hearth::transfer::export::Export::new(&source, &to)
                .interrupted_by(hearth::transfer::export::interrupt_on_ctrl_c());
            if let Some(config) = s3.config() {
                export = export.with_s3(config);
            }
            // The export prints its own comparison of Hearth's rows and the export's.
            export.run(target.options(false)).await?;
        }
        Cmd::Backup { to, target } => {
            init_tracing("warn", false);
            let counts = hearth::transfer::backup::backup(
                &target.target(),
                &target.data_dir,
                &to,
                target.options(false),
            )
            .await?;
            print!("{counts}");
        }
        Cmd::Restore {
            from,
            replace,
            target,
        } => {
            init_tracing("warn", false);
            let counts = hearth::transfer::backup::restore(
                &from,
                &target.target(),
                &target.data_dir,
                target.options(replace),
            )
            .await?;
            print!("{counts}");
        }
    }
    Ok(())
}
