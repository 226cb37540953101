//! Command-line interface: `run`, `sweep`, `idle`, `fanout-only` and `scrape`.
//!
//! Exit status: 0 when every cell passed its checks, 3 when some cell ran but failed a check
//! (the results are still written), 1 on an error that stopped the run.

use crate::campfire::{self, ExtraChannel, PrepareOptions};
use crate::cell::{run_cell_with, AnyCableBroadcast, CellOptions};
use crate::coordination::Coordination;
use crate::endpoint::Endpoint;
use crate::fanout::{self, FanoutOptions};
use crate::idle::{self, IdleOptions};
use crate::multi;
use crate::report::{render_table, summarize, CellResult, FloorFps};
use crate::server::TargetSpec;
use crate::sweep::{self, campfire_target, discover_pid, SweepOptions};
use anyhow::{bail, Result};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

/// Parses a duration: `10s`, `500ms`, `2m`, `1.5s`, or a bare number of seconds.
///
/// Errors: an unknown unit or a bad number.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{s:?}: expected a duration like 10s, 500ms or 2m"))?;
    let secs = match unit.trim() {
        "" | "s" => v,
        "ms" => v / 1000.0,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        other => return Err(format!("{s:?}: unknown unit {other:?} (use ms, s, m or h)")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("{s:?}: must be a non-negative duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A comma-separated list of client counts, e.g. `50,100,200`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCounts(pub Vec<usize>);

/// Parses a comma-separated list of client counts, e.g. `50,100,200`.
///
/// Errors: an entry that is not a positive integer, or an empty list.
pub fn parse_ns(s: &str) -> Result<ClientCounts, String> {
    let v = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("{p:?} is not a positive client count")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if v.is_empty() {
        return Err("no client counts given".into());
    }
    Ok(ClientCounts(v))
}

/// The Campfire load generator: runs the N-sweep against Hearth, a Rails Campfire or another
/// port, and measures fan-out throughput, latency and cost.
#[derive(Debug, Parser)]
#[command(name = "loadgen", version, about, long_about = None)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
    /// Bind the clients' WebSocket connections to these local addresses, round-robin
    /// (comma-separated, e.g. `127.0.0.1,127.0.0.2`); each address has its own ephemeral port
    /// range. Default: the kernel's choice.
    #[arg(long, global = true, value_parser = parse_source_addrs)]
    pub source_addrs: Option<SourceAddrs>,
}

/// A comma-separated list of local IP addresses (`--source-addrs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceAddrs(pub Vec<std::net::IpAddr>);

/// Parses `--source-addrs`.
///
/// Errors: an entry that is not an IP address.
pub fn parse_source_addrs(s: &str) -> Result<SourceAddrs, String> {
    crate::cable::parse_source_addrs(s).map(SourceAddrs)
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One cell against a running Campfire-compatible server.
    Run(RunArgs),
    /// The N-sweep over one or more targets, with managed servers when given a cmd.
    Sweep(SweepArgs),
    /// Hold N idle subscribed connections; report server RSS per connection and threads.
    Idle(IdleArgs),
    /// Fan-out only: a plain Action Cable endpoint plus an HTTP broadcast trigger.
    FanoutOnly(FanoutArgs),
    /// Log in and print what the room page and sidebar yield (a contract check).
    Scrape(ScrapeArgs),
    /// Measure this load generator's own receive capacity against an in-process writer.
    Selftest(SelftestArgs),
}

/// Login and subscription flags.
#[derive(Debug, Clone, Args)]
pub struct LoginArgs {
    /// Users to log in; clients and posters are spread over them round-robin.
    #[arg(long, default_value_t = 50)]
    pub users: usize,
    /// Email template; `{i}` is the user number from 1.
    #[arg(long, default_value = "user{i}@example.com")]
    pub email: String,
    /// Password of every user.
    #[arg(long, default_value = "password")]
    pub password: String,
    /// Room to scrape, subscribe and post to.
    #[arg(long, default_value_t = 1)]
    pub room: u32,
    /// Channels besides the room's message stream: presence, heartbeat, unread, reads, typing,
    /// sidebar, or none.
    #[arg(long, default_value = "presence,heartbeat,unread")]
    pub channels: String,
    /// Logins run concurrently.
    #[arg(long, default_value_t = 4)]
    pub login_concurrency: usize,
}

impl LoginArgs {
    fn options(&self) -> Result<PrepareOptions> {
        Ok(PrepareOptions {
            users: self.users,
            email_template: self.email.clone(),
            password: self.password.clone(),
            room: self.room,
            channels: ExtraChannel::parse_list(&self.channels)?,
            login_concurrency: self.login_concurrency,
        })
    }
}

/// Load shape flags of a cell.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Posting phase per cell.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Concurrent posters (each its own keep-alive HTTP connection).
    #[arg(long, default_value_t = 4)]
    pub posters: usize,
    /// Most posted-but-not-fully-delivered messages; posters wait while it is reached
    /// (0 = unbounded).
    #[arg(long, default_value_t = 32)]
    pub window: usize,
    /// Paced mode: total posts per second (default: closed loop).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Longest wait for undelivered messages after the posting phase.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub drain: Duration,
    /// Longest wait for all clients to connect and subscribe.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// Concurrent WebSocket handshakes.
    #[arg(long, default_value_t = 64)]
    pub connect_concurrency: usize,
    /// Pause between all clients ready and the first post.
    #[arg(long, default_value = "500ms", value_parser = parse_duration)]
    pub settle: Duration,
    /// Message body bytes (fanout-only: broadcast padding bytes).
    #[arg(long, default_value_t = 64)]
    pub body_bytes: usize,
    /// Receive buffer per WebSocket connection, bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    pub read_buffer: usize,
    /// Offer permessage-deflate (RFC 7692) as Chromium does and inflate compressed messages;
    /// `wire_bytes_per_receipt` then shows the compressed bytes per delivered post.
    #[arg(long)]
    pub deflate: bool,
}

impl LoadArgs {
    fn options(&self, n: usize) -> Result<CellOptions> {
        if let Some(r) = self.rate {
            if !(r > 0.0 && r.is_finite()) {
                bail!("--rate must be a positive number of posts per second");
            }
        }
        if self.read_buffer < 4096 {
            bail!("--read-buffer must be at least 4096 bytes");
        }
        Ok(CellOptions {
            n,
            duration: self.duration,
            posters: self.posters.max(1),
            window: self.window,
            rate: self.rate,
            drain: self.drain,
            connect_timeout: self.connect_timeout,
            connect_concurrency: self.connect_concurrency.max(1),
            settle: self.settle,
            body_bytes: self.body_bytes,
        })
    }
}

/// `loadgen run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Base URL of the server, e.g. http://127.0.0.1:3000.
    #[arg(long)]
    pub url: String,
    /// Clients.
    #[arg(long, default_value_t = 100)]
    pub n: usize,
    /// Target name in the results.
    #[arg(long, default_value = "target")]
    pub name: String,
    /// Server pid for CPU/RSS (default: the process listening on the URL's port).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Base URLs of cable nodes (comma-separated) to spread the clients' /cable connections
    /// over, round-robin; logins and posts still go to --url (the app node). Default: --url.
    #[arg(long, value_delimiter = ',')]
    pub cable_urls: Vec<String>,
    /// Append the JSON line to this file too.
    #[arg(long)]
    pub jsonl: Option<PathBuf>,
    /// Several processes, one run: the token run tag shared by every process (1 to 16
    /// lowercase letters and digits; default: a random one).
    #[arg(long, value_parser = crate::coordination::parse_run_tag)]
    pub run_tag: Option<String>,
    /// Write a JSON line here once every client is ready or failed (counts and the connect
    /// phase's start and end in Unix µs).
    #[arg(long)]
    pub ready_file: Option<PathBuf>,
    /// Wait for this file to exist (after the ready file) before posting, or, with
    /// --listen-only, before waiting for the posts file.
    #[arg(long)]
    pub start_file: Option<PathBuf>,
    /// Longest wait for --start-file.
    #[arg(long, default_value = "300s", value_parser = parse_duration)]
    pub start_timeout: Duration,
    /// The posting process writes every post here after its drain (sequence number, answered
    /// or not, sent at, its own clients' last receipt); --listen-only processes read it.
    #[arg(long)]
    pub posts_file: Option<PathBuf>,
    /// Write the posts' timeline here after the drain: one line per post, when it was sent,
    /// its request written, its answer's first byte read, the answer checked, and its first
    /// and last receipt, in nanoseconds of CLOCK_MONOTONIC (the clock of `perf record -k
    /// CLOCK_MONOTONIC`), to line a post's steps up with the scheduler's events. Not with
    /// --listen-only (a listener posts nothing).
    #[arg(long, conflicts_with = "listen_only")]
    pub timeline: Option<PathBuf>,
    /// Post nothing: hold --n clients, wait for --posts-file (at most --duration + --drain +
    /// --settle + 60 s after the start file), then until every client holds each answered post
    /// (at most --drain), and count per client and post what is held once, missing or
    /// duplicated. Needs --run-tag and --posts-file. Prints one JSON line (exit 3 unless every
    /// client was ready and nothing is missing or duplicated).
    #[arg(long, requires_all = ["run_tag", "posts_file"])]
    pub listen_only: bool,
    /// Login and subscription flags.
    #[command(flatten)]
    pub login: LoginArgs,
    /// Load shape flags.
    #[command(flatten)]
    pub load: LoadArgs,
}

impl RunArgs {
    fn coordination(&self) -> Coordination {
        Coordination {
            run_tag: self.run_tag.clone(),
            ready_file: self.ready_file.clone(),
            start_file: self.start_file.clone(),
            start_timeout: self.start_timeout,
            posts_file: self.posts_file.clone(),
            timeline_file: self.timeline.clone(),
        }
    }
}

/// Appends `line` to the file at `path`.
fn append_line(path: &std::path::Path, line: &str) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "{line}")?;
    Ok(())
}

/// `loadgen sweep`.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Client counts.
    #[arg(long, default_value = "50,100,200,300,500,1000", value_parser = parse_ns)]
    pub n: ClientCounts,
    /// Repetitions (the table shows medians).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// NAME=URL[,cmd=SERVER COMMAND with {port} {db}]; repeat for several targets.
    #[arg(long = "target", required = true)]
    pub targets: Vec<String>,
    /// Seed database copied fresh for every cell of a target with cmd.
    #[arg(long)]
    pub seed_db: Option<PathBuf>,
    /// Pin managed servers with `taskset -c CPUS`.
    #[arg(long)]
    pub server_cpu: Option<String>,
    /// Output directory (default `results/<UTC timestamp>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Longest wait for a managed server's GET /up.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub up_timeout: Duration,
    /// SIGTERM → SIGKILL grace period for managed servers.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub stop_timeout: Duration,
    /// After each cell, run a paced latency probe at this many posts/s on the same server
    /// (fresh clients); the table's `paced →first p50` and `paced →all p50` come from it.
    #[arg(long)]
    pub paced_rate: Option<f64>,
    /// Posting phase of each paced probe.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub paced_duration: Duration,
    /// This machine's loopback frames/s with one write() per frame, for the table's
    /// `floor ms` column (N ÷ frames/s): `F` for every N, or `N=F,N=F,…`.
    #[arg(long, value_parser = parse_floor)]
    pub floor_fps: Option<FloorFps>,
    /// Login and subscription flags.
    #[command(flatten)]
    pub login: LoginArgs,
    /// Load shape flags.
    #[command(flatten)]
    pub load: LoadArgs,
}

/// Parses `--floor-fps` (see [`FloorFps::parse`]).
///
/// Errors: as [`FloorFps::parse`].
pub fn parse_floor(s: &str) -> Result<FloorFps, String> {
    FloorFps::parse(s)
}

/// `loadgen idle`.
#[derive(Debug, Clone, Args)]
pub struct IdleArgs {
    /// Base URL of the server.
    #[arg(long)]
    pub url: String,
    /// Connections to hold.
    #[arg(long, default_value_t = 1000)]
    pub n: usize,
    /// Server pid (default: the process listening on the URL's port).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Pause after all are ready (and after closing) before measuring.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub settle: Duration,
    /// Keep holding the connections this long after measuring.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub hold: Duration,
    /// Longest wait for all clients to connect and subscribe.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// Concurrent WebSocket handshakes.
    #[arg(long, default_value_t = 64)]
    pub connect_concurrency: usize,
    /// Receive buffer per connection, bytes.
    #[arg(long, default_value_t = 16 * 1024)]
    pub read_buffer: usize,
    /// Offer permessage-deflate (RFC 7692): the idle cost with compression agreed.
    #[arg(long)]
    pub deflate: bool,
    /// Login and subscription flags.
    #[command(flatten)]
    pub login: LoginArgs,
}

/// `loadgen fanout-only`.
#[derive(Debug, Clone, Args)]
pub struct FanoutArgs {
    /// Action Cable URL, e.g. ws://127.0.0.1:28080/cable.
    #[arg(long)]
    pub cable_url: String,
    /// Origin header (default: http://host:port of the cable URL).
    #[arg(long)]
    pub origin: Option<String>,
    /// Cookie header for every client, e.g. 'user=alice'.
    #[arg(long)]
    pub cookie: Option<String>,
    /// Subscription identifier JSON; repeat for several subscriptions per client.
    #[arg(
        long = "identifier",
        default_value = r#"{"channel":"StreamChannel","stream":"bench"}"#
    )]
    pub identifiers: Vec<String>,
    /// Broadcast trigger URL, POSTed `{"body":"<padding>","id":"<token>"}`.
    #[arg(long)]
    pub trigger: String,
    /// Cookie header for the trigger.
    #[arg(long)]
    pub trigger_cookie: Option<String>,
    /// The trigger is AnyCable's `POST /_broadcast`: broadcast to this stream (with
    /// `--anycable-key`).
    #[arg(long, requires = "anycable_key")]
    pub anycable_stream: Option<String>,
    /// The bearer key of AnyCable's `POST /_broadcast` (`hearth broadcast-key`).
    #[arg(long, requires = "anycable_stream")]
    pub anycable_key: Option<String>,
    /// Client counts.
    #[arg(long, default_value = "100", value_parser = parse_ns)]
    pub n: ClientCounts,
    /// Repetitions.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Name in the results.
    #[arg(long, default_value = "fanout")]
    pub name: String,
    /// Server pid (default: the process listening on the cable port).
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Accept a server that does not select actioncable-v1-json.
    #[arg(long)]
    pub any_protocol: bool,
    /// Output directory (default `results/<UTC timestamp>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Load shape flags.
    #[command(flatten)]
    pub load: LoadArgs,
}

/// `loadgen scrape`.
#[derive(Debug, Clone, Args)]
pub struct ScrapeArgs {
    /// Base URL of the server.
    #[arg(long)]
    pub url: String,
    /// Login and subscription flags.
    #[command(flatten)]
    pub login: LoginArgs,
}

/// `loadgen selftest`.
#[derive(Debug, Clone, Args)]
pub struct SelftestArgs {
    /// Connections.
    #[arg(long, default_value_t = 1000)]
    pub n: usize,
    /// Messages written to every connection.
    #[arg(long, default_value_t = 200)]
    pub messages: usize,
    /// Payload bytes per frame.
    #[arg(long, default_value_t = 9400)]
    pub frame_bytes: usize,
    /// Frames per writer write().
    #[arg(long, default_value_t = 16)]
    pub batch: usize,
    /// Subscriptions per client.
    #[arg(long, default_value_t = 4)]
    pub subscriptions: usize,
    /// Receive buffer per connection, bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    pub read_buffer: usize,
    /// Pin the writer thread to this CPU.
    #[arg(long)]
    pub writer_cpu: Option<usize>,
    /// Pin the client thread to this CPU.
    #[arg(long)]
    pub reader_cpu: Option<usize>,
}

fn exit_code(cells: &[CellResult]) -> i32 {
    if cells.iter().all(|c| c.ok) {
        0
    } else {
        3
    }
}

/// Runs a parsed command line; returns the process exit status.
///
/// Errors: anything that stopped the run (bad flags, failed login or scrape, a server that
/// would not start, unwritable output).
pub async fn run(cli: Cli) -> Result<i32> {
    if let Some(SourceAddrs(addrs)) = cli.source_addrs {
        crate::cable::set_source_addrs(addrs);
    }
    match cli.command {
        Command::Run(a) => {
            let base = Endpoint::parse(&a.url)?;
            let prepare = a.login.options()?;
            let opts = a.load.options(a.n)?;
            let prepared = Rc::new(campfire::prepare(&base, &prepare).await?);
            eprintln!(
                "prepared {} users in {:.1} s; room stream {} ({}), {} subscriptions per client",
                prepared.users.len(),
                prepared.prepare_secs,
                prepared.room_stream.channel,
                prepared.room_stream.stream_name.as_deref().unwrap_or("?"),
                prepared.subscriptions_per_client
            );
            let pid = a.server_pid.or_else(|| discover_pid(&base));
            let mut target = campfire_target(&a.name, &base, prepared, a.load.read_buffer, pid);
            target.cable.deflate = a.load.deflate;
            for url in &a.cable_urls {
                let node = Endpoint::parse(url)?;
                target.cable.spread.push((node.cable(), node.origin()));
            }
            let coord = a.coordination();
            if a.listen_only {
                let r = multi::run_listen(&target, &opts, &coord, &|p| eprintln!("{p}…")).await?;
                let line = serde_json::to_string(&r)?;
                println!("{line}");
                if let Some(path) = &a.jsonl {
                    append_line(path, &line)?;
                }
                eprintln!("{}", multi::describe(&r));
                for e in &r.errors {
                    eprintln!("error: {e}");
                }
                return Ok(if r.ok { 0 } else { 3 });
            }
            let result = run_cell_with(&target, &opts, 0, &|p| eprintln!("{p}…"), &coord).await;
            let line = serde_json::to_string(&result)?;
            println!("{line}");
            if let Some(path) = &a.jsonl {
                append_line(path, &line)?;
            }
            eprintln!(
                "{}",
                render_table(&summarize(std::slice::from_ref(&result)))
            );
            for n in &result.notes {
                eprintln!("note: {n}");
            }
            for e in &result.errors {
                eprintln!("error: {e}");
            }
            Ok(exit_code(std::slice::from_ref(&result)))
        }
        Command::Sweep(a) => {
            let targets = a
                .targets
                .iter()
                .map(|t| TargetSpec::parse(t))
                .collect::<Result<Vec<_>>>()?;
            let opts = SweepOptions {
                ns: a.n.0.clone(),
                repeat: a.repeat.max(1),
                targets,
                seed_db: a.seed_db.clone(),
                server_cpu: a.server_cpu.clone(),
                out: a.out.clone().unwrap_or_else(sweep::default_out_dir),
                up_timeout: a.up_timeout,
                stop_timeout: a.stop_timeout,
                cell: a.load.options(0)?,
                prepare: a.login.options()?,
                read_buffer: a.load.read_buffer,
                deflate: a.load.deflate,
                paced_rate: match a.paced_rate {
                    Some(r) if !(r > 0.0 && r.is_finite()) => {
                        bail!("--paced-rate must be a positive number of posts per second")
                    }
                    r => r,
                },
                paced_duration: a.paced_duration,
                floor: a.floor_fps.clone().unwrap_or_default(),
            };
            let cells = sweep::run_sweep(&opts).await?;
            Ok(exit_code(&cells))
        }
        Command::Idle(a) => {
            let opts = IdleOptions {
                base: Endpoint::parse(&a.url)?,
                n: a.n,
                prepare: a.login.options()?,
                server_pid: a.server_pid,
                settle: a.settle,
                hold: a.hold,
                connect_timeout: a.connect_timeout,
                connect_concurrency: a.connect_concurrency.max(1),
                read_buffer: a.read_buffer.max(4096),
                deflate: a.deflate,
            };
            let report = idle::run_idle(&opts).await?;
            println!("{}", serde_json::to_string(&report)?);
            eprintln!("{}", idle::describe(&report));
            Ok(if report.ready == report.n { 0 } else { 3 })
        }
        Command::FanoutOnly(a) => {
            let cable_url = Endpoint::parse(&a.cable_url)?;
            let opts = FanoutOptions {
                name: a.name.clone(),
                origin: a.origin.clone().unwrap_or_else(|| cable_url.origin()),
                cable_url,
                cookie: a.cookie.clone(),
                identifiers: a.identifiers.clone(),
                trigger: Endpoint::parse(&a.trigger)?,
                trigger_cookie: a.trigger_cookie.clone(),
                anycable: a.anycable_stream.clone().map(|stream| AnyCableBroadcast {
                    stream,
                    key: a.anycable_key.clone().unwrap_or_default(),
                }),
                ns: a.n.0.clone(),
                repeat: a.repeat.max(1),
                server_pid: a.server_pid,
                cell: a.load.options(0)?,
                read_buffer: a.load.read_buffer,
                deflate: a.load.deflate,
                require_protocol: !a.any_protocol,
                out: a.out.clone().unwrap_or_else(sweep::default_out_dir),
            };
            let cells = fanout::run_fanout(&opts).await?;
            Ok(exit_code(&cells))
        }
        Command::Scrape(a) => {
            let base = Endpoint::parse(&a.url)?;
            let mut prepare = a.login.options()?;
            prepare.users = prepare.users.min(1);
            let p = campfire::prepare(&base, &prepare).await?;
            let u = &p.users[0];
            println!("user: {} (id {:?})", u.email, u.user_id);
            println!("cookies: {:?}", u.jar.names());
            println!("append target: {}", p.messages_target);
            println!(
                "room stream: {} → {}",
                p.room_stream.channel,
                p.room_stream.stream_name.as_deref().unwrap_or("?")
            );
            println!("subscriptions per client: {}", p.subscriptions_per_client);
            for id in &u.identifiers {
                println!("  {id}");
            }
            Ok(0)
        }
        Command::Selftest(a) => {
            let report = crate::selftest::run_selftest(&crate::selftest::SelftestOptions {
                n: a.n,
                messages: a.messages,
                frame_bytes: a.frame_bytes,
                batch: a.batch,
                subscriptions: a.subscriptions,
                read_buffer: a.read_buffer.max(4096),
                writer_cpu: a.writer_cpu,
                reader_cpu: a.reader_cpu,
            })
            .await?;
            println!("{}", serde_json::to_string(&report)?);
            eprintln!(
                "selftest: {} frames of {} B matched in {:.2} s = {} frames/s ({:.0} MB/s) at {:.0} % of the client core → {} frames per CPU-second{}",
                report.frames_matched,
                report.frame_bytes,
                report.secs,
                crate::report::thousands(report.frames_per_sec),
                report.mb_per_sec,
                report.reader_cpu_percent,
                crate::report::thousands(report.frames_per_cpu_sec),
                if report.complete { "" } else { " (INCOMPLETE)" }
            );
            Ok(if report.complete { 0 } else { 3 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn durations_and_lists_parse() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("s").is_err());
        assert_eq!(parse_ns("50, 100,200").unwrap().0, vec![50, 100, 200]);
        assert!(parse_ns("").is_err());
        assert!(parse_ns("50,0").is_err());
        assert!(parse_ns("a").is_err());
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "loadgen",
            "sweep",
            "--n",
            "50,200",
            "--duration",
            "5s",
            "--target",
            "q=http://127.0.0.1:3100,cmd=hearth serve --bind 127.0.0.1:{port}",
            "--target",
            "b=http://127.0.0.1:3101",
            "--seed-db",
            "seed.sqlite3",
        ])
        .unwrap();
        let Command::Sweep(a) = cli.command else {
            panic!("not a sweep")
        };
        assert_eq!(a.n.0, vec![50, 200]);
        assert_eq!(a.targets.len(), 2);
        assert_eq!(a.load.window, 32);
        assert_eq!(a.login.users, 50);
    }

    #[test]
    fn listen_only_needs_a_run_tag_and_a_posts_file() {
        let base = [
            "loadgen",
            "run",
            "--url",
            "http://127.0.0.1:3000",
            "--listen-only",
        ];
        assert!(Cli::try_parse_from(base).is_err());
        assert!(Cli::try_parse_from(base.iter().chain(&["--run-tag", "ab12"])).is_err());
        let cli = Cli::try_parse_from(base.iter().chain(&[
            "--run-tag",
            "ab12",
            "--posts-file",
            "posts.json",
            "--start-file",
            "go",
        ]))
        .unwrap();
        let Command::Run(a) = cli.command else {
            panic!("not a run")
        };
        assert!(a.listen_only);
        let c = a.coordination();
        assert_eq!(c.run_tag.as_deref(), Some("ab12"));
        assert_eq!(c.start_file, Some(PathBuf::from("go")));
        assert_eq!(c.start_timeout, Duration::from_secs(300));
        assert!(Cli::try_parse_from(["loadgen", "run", "--url", "u", "--run-tag", "A!"]).is_err());
        // Without the new flags a run is a lone process, as before.
        let Command::Run(a) = Cli::try_parse_from(["loadgen", "run", "--url", "u"])
            .unwrap()
            .command
        else {
            panic!("not a run")
        };
        let c = a.coordination();
        assert!(!a.listen_only && c.run_tag.is_none() && c.ready_file.is_none());
        assert!(c.start_file.is_none() && c.posts_file.is_none());
        assert!(c.timeline_file.is_none());
    }

    #[test]
    fn a_timeline_is_for_a_posting_run_only() {
        let run = ["loadgen", "run", "--url", "u", "--timeline", "t.txt"];
        let Command::Run(a) = Cli::try_parse_from(run).unwrap().command else {
            panic!("not a run")
        };
        assert_eq!(a.coordination().timeline_file, Some(PathBuf::from("t.txt")));
        let listen = [
            "--listen-only",
            "--run-tag",
            "ab12",
            "--posts-file",
            "p.json",
        ];
        assert!(Cli::try_parse_from(run.iter().chain(&listen)).is_err());
    }
}
