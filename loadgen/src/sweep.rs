//! The N-sweep: every target at every N, repeated, interleaved, with fresh servers per cell.
//!
//! Order: `for rep { for n { for target { cell } } }`, so slow drift of the machine (thermal,
//! other load) spreads over all targets instead of biasing whichever ran last.
//!
//! Output, in `--out DIR`:
//! - `cells.jsonl`: one [`CellResult`] per line, written as each cell ends;
//! - `table.md`: the median over repeats per target × N ([`crate::report::render_table`]);
//! - `delivered`, `deliveries`, `post_latency`, `post_to_all_p99` `.svg` and `.png`;
//! - `logs/`: each managed server's output; `db/`: the per-cell seed copies (removed after
//!   each cell).

use crate::cable::{CableConfig, ClientProfile};
use crate::campfire::{self, PrepareOptions, Prepared};
use crate::cell::{run_cell, CellOptions, CellTarget, PostTarget};
use crate::endpoint::Endpoint;
use crate::plot;
use crate::procfs;
use crate::report::{render_table, summarize, CellResult, FloorFps};
use crate::server::{self, TargetSpec};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Sweep settings.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Client counts, in order.
    pub ns: Vec<usize>,
    /// Repetitions.
    pub repeat: usize,
    /// Targets.
    pub targets: Vec<TargetSpec>,
    /// Seed database copied per cell for targets with a command.
    pub seed_db: Option<PathBuf>,
    /// CPU list for `taskset -c` of managed servers.
    pub server_cpu: Option<String>,
    /// Output directory.
    pub out: PathBuf,
    /// Longest wait for `GET /up`.
    pub up_timeout: Duration,
    /// SIGTERM → SIGKILL grace period.
    pub stop_timeout: Duration,
    /// Cell settings (`n` is replaced per cell).
    pub cell: CellOptions,
    /// Login and subscription settings.
    pub prepare: PrepareOptions,
    /// Receive buffer per connection, bytes.
    pub read_buffer: usize,
    /// Offer permessage-deflate (`--deflate`).
    pub deflate: bool,
    /// After each cell, a paced latency probe on the same server at this many posts/s
    /// (`--paced-rate`), for the table's paced p50 columns; `None`: no probe.
    pub paced_rate: Option<f64>,
    /// Posting phase of each paced probe.
    pub paced_duration: Duration,
    /// Loopback write figures for the table's floor column (`--floor-fps`).
    pub floor: FloorFps,
}

/// UTC `YYYYMMDD-HHMMSS` for `secs` since the Unix epoch. Instants past the end of year 9999
/// print as its last second.
pub fn utc_timestamp(secs: u64) -> String {
    let t = i64::try_from(secs)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .unwrap_or_else(|| time::PrimitiveDateTime::MAX.assume_utc());
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// `results/<UTC timestamp>`.
pub fn default_out_dir() -> PathBuf {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    PathBuf::from("results").join(utc_timestamp(secs))
}

/// Prints through the progress bar when it is drawn, else to stderr.
pub fn say(pb: &ProgressBar, line: &str) {
    if pb.is_hidden() {
        eprintln!("{line}");
    } else {
        pb.println(line);
    }
}

/// A progress bar over `total` cells.
pub fn progress_bar(total: u64) -> ProgressBar {
    let pb = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:30.cyan/blue} {pos}/{len} cells {elapsed_precise} {msg}")
    {
        pb.set_style(style);
    }
    pb
}

/// The client profiles of a prepared Campfire target: one per user.
pub fn campfire_profiles(prepared: &Prepared) -> Vec<Rc<ClientProfile>> {
    prepared
        .users
        .iter()
        .map(|u| {
            Rc::new(ClientProfile {
                cookie: Some(u.cookie_header.clone()),
                identifiers: u.identifiers.clone(),
            })
        })
        .collect()
}

/// A [`CellTarget`] for a prepared Campfire server at `base`.
pub fn campfire_target(
    name: &str,
    base: &Endpoint,
    prepared: Rc<Prepared>,
    read_buffer: usize,
    server_pid: Option<u32>,
) -> CellTarget {
    CellTarget {
        name: name.to_owned(),
        url: base.to_string(),
        kind: "campfire".into(),
        cable: CableConfig {
            endpoint: base.cable(),
            origin: base.origin(),
            read_buffer,
            required_protocol: Some("actioncable-v1-json".into()),
            deflate: false,
            spread: Vec::new(),
            next: Default::default(),
        },
        profiles: campfire_profiles(&prepared),
        users: prepared.users.len(),
        post: PostTarget::Campfire {
            base: base.clone(),
            prepared,
        },
        server_pid,
    }
}

/// The pid serving a loopback endpoint's port, when exactly one process listens on it.
pub fn discover_pid(endpoint: &Endpoint) -> Option<u32> {
    if !endpoint.is_loopback() {
        return None;
    }
    match procfs::listening_pids(endpoint.port).as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// One line per cell for the log.
pub fn cell_line(c: &CellResult) -> String {
    let srv = c
        .server
        .as_ref()
        .map(|s| format!(", srv CPU {:.0} % RSS {:.1} MB", s.cpu_percent, s.rss_mb))
        .unwrap_or_default();
    format!(
        "rep {} N={} {}: ready {}/{}, posted {}, complete {}{}, {:.0} deliveries/s, {:.1} msgs/s, \
         post p50 {:.2} p99 {:.2} ms, →all p99 {:.1} ms{}, loadgen CPU {:.0} %{} — {}",
        c.rep + 1,
        c.n,
        if c.paced_probe {
            format!(
                "{} paced probe at {} posts/s (→first p50 {:.2} ms, →all p50 {:.2} ms)",
                c.target,
                c.rate.unwrap_or(0.0),
                c.post_to_first.p50_ms,
                c.post_to_all.p50_ms
            )
        } else {
            c.target.clone()
        },
        c.ready,
        c.n,
        c.posted,
        c.complete,
        if c.complete_eq_posted {
            ""
        } else {
            " (INCOMPLETE)"
        },
        c.deliveries_per_sec,
        c.delivered_msgs_per_sec,
        c.post.p50_ms,
        c.post.p99_ms,
        c.post_to_all.p99_ms,
        srv,
        c.loadgen.cpu_percent,
        if c.loadgen.saturated {
            " (SATURATED)"
        } else {
            ""
        },
        if c.ok {
            "ok".to_owned()
        } else {
            format!("FAILED {:?}", c.errors)
        }
    )
}

/// One line naming the CPUs each process was allowed to run on (`Cpus_allowed_list`).
pub fn pinning_summary(cells: &[CellResult]) -> String {
    let mut loadgen: Vec<&str> = Vec::new();
    let mut servers: Vec<String> = Vec::new();
    for c in cells {
        if !loadgen.contains(&c.loadgen.cpus_allowed.as_str()) {
            loadgen.push(&c.loadgen.cpus_allowed);
        }
        let srv = format!(
            "{} {}",
            c.target,
            c.server
                .as_ref()
                .map(|s| s.cpus_allowed.as_str())
                .unwrap_or("unknown")
        );
        if !servers.contains(&srv) {
            servers.push(srv);
        }
    }
    format!(
        "pinning: loadgen CPUs {}; server CPUs: {}",
        loadgen.join(" / "),
        servers.join(", ")
    )
}

/// An output directory receiving cells as they finish.
#[derive(Debug)]
pub struct Output {
    dir: PathBuf,
    jsonl: std::fs::File,
}

impl Output {
    /// Creates `dir` and `dir/cells.jsonl` (appending if it exists).
    ///
    /// Errors: the directory or file cannot be created.
    pub fn create(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let jsonl = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("cells.jsonl"))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            jsonl,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one JSON line.
    ///
    /// Errors: the write fails.
    pub fn write_cell(&mut self, cell: &CellResult) -> Result<()> {
        let line = serde_json::to_string(cell)?;
        writeln!(self.jsonl, "{line}")?;
        self.jsonl.flush()?;
        Ok(())
    }

    /// Writes `table.md` and the plots; returns the table text and notes about the files.
    ///
    /// Errors: `table.md` cannot be written (plot failures become notes).
    pub fn finish(&self, cells: &[CellResult], floor: &FloorFps) -> Result<(String, Vec<String>)> {
        let mut rows = summarize(cells);
        floor.apply(&mut rows);
        let table = render_table(&rows);
        std::fs::write(self.dir.join("table.md"), &table)?;
        let mut notes = vec![
            format!("cells: {}", self.dir.join("cells.jsonl").display()),
            format!("table: {}", self.dir.join("table.md").display()),
        ];
        notes.push(pinning_summary(cells));
        let saturated = cells.iter().filter(|c| c.loadgen.saturated).count();
        if saturated > 0 {
            notes.push(format!(
                "WARNING: the load generator saturated its core (>90 % CPU) in {saturated} of {} \
                 cells: those cells may measure the load generator, not the server",
                cells.len()
            ));
        }
        match plot::write_sweep_plots(&rows, &self.dir) {
            Ok((files, text)) => {
                notes.push(format!(
                    "plots: {} files in {}{}",
                    files.len(),
                    self.dir.display(),
                    if text {
                        ""
                    } else {
                        " (no TrueType font found: drawn without text; set LOADGEN_FONT)"
                    }
                ));
            }
            Err(e) => notes.push(format!("plots failed: {e}")),
        }
        Ok((table, notes))
    }
}

/// Runs the sweep; returns every cell.
///
/// Errors: a target cannot be prepared (login, scrape, missing message stream), a managed
/// server cannot be started or stopped cleanly, or the output cannot be written. Cells that
/// run but fail their checks are results, not errors.
pub async fn run_sweep(opts: &SweepOptions) -> Result<Vec<CellResult>> {
    if opts.targets.is_empty() {
        bail!("no --target given");
    }
    let managed = opts.targets.iter().any(|t| t.cmd.is_some());
    if managed {
        let Some(seed) = &opts.seed_db else {
            bail!("a --target with cmd= needs --seed-db PATH");
        };
        let side = server::seed_sidecars(seed);
        if !side.is_empty() {
            bail!(
                "the seed database has sidecars {side:?}: it was not checkpointed (or a server \
                 still has it open); a copy would miss data"
            );
        }
    }
    let mut out = Output::create(&opts.out)?;
    let meta = serde_json::json!({
        "ns": opts.ns, "repeat": opts.repeat,
        "targets": opts.targets.iter().map(|t| serde_json::json!({
            "name": t.name, "url": t.url.to_string(), "cmd": t.cmd })).collect::<Vec<_>>(),
        "server_cpu": opts.server_cpu, "posters": opts.cell.posters, "window": opts.cell.window,
        "rate": opts.cell.rate, "duration_secs": opts.cell.duration.as_secs_f64(),
        "users": opts.prepare.users,
        "loadgen_cpus_allowed": procfs::status(procfs::Proc::SelfProc).map(|s| s.cpus_allowed),
        "loadgen_build": crate::cell::build_kind(),
    });
    std::fs::write(
        out.dir().join("meta.json"),
        serde_json::to_string_pretty(&meta)?,
    )?;

    let total = (opts.repeat * opts.ns.len() * opts.targets.len()) as u64;
    let pb = progress_bar(total);
    let mut cells = Vec::new();
    let mut cached: HashMap<String, Rc<Prepared>> = HashMap::new();
    for rep in 0..opts.repeat {
        for &n in &opts.ns {
            for target in &opts.targets {
                let label = format!("rep {}/{} N={n} {}", rep + 1, opts.repeat, target.name);
                pb.set_message(format!("{label}: preparing"));
                let cell_opts = CellOptions {
                    n,
                    ..opts.cell.clone()
                };
                let result = run_one(opts, target, &cell_opts, rep, &mut cached, &pb, &label).await;
                let results = match result {
                    Ok(r) => r,
                    Err(e) => {
                        pb.abandon_with_message(format!("{label}: error"));
                        return Err(e.context(format!("cell {label}")));
                    }
                };
                for result in results {
                    out.write_cell(&result)?;
                    say(&pb, &cell_line(&result));
                    cells.push(result);
                }
                pb.inc(1);
            }
        }
    }
    pb.finish_with_message("done");
    let (table, notes) = out.finish(&cells, &opts.floor)?;
    println!("{table}");
    for n in notes {
        eprintln!("{n}");
    }
    Ok(cells)
}

async fn run_one(
    opts: &SweepOptions,
    target: &TargetSpec,
    cell_opts: &CellOptions,
    rep: usize,
    cached: &mut HashMap<String, Rc<Prepared>>,
    pb: &ProgressBar,
    label: &str,
) -> Result<Vec<CellResult>> {
    let phase = |p: &str| pb.set_message(format!("{label}: {p}"));
    let probe_opts = opts.paced_rate.map(|rate| CellOptions {
        rate: Some(rate),
        duration: opts.paced_duration,
        ..cell_opts.clone()
    });
    // The cell, then (with --paced-rate) the paced probe on the same server and logins.
    let run_both = |ct: CellTarget| {
        let probe_opts = probe_opts.clone();
        let phase = &phase;
        async move {
            let mut results = vec![run_cell(&ct, cell_opts, rep, phase).await];
            if let Some(p) = &probe_opts {
                phase("paced probe");
                let mut probe = run_cell(&ct, p, rep, phase).await;
                probe.paced_probe = true;
                results.push(probe);
            }
            results
        }
    };
    let Some(cmd) = &target.cmd else {
        let prepared = match cached.get(&target.name) {
            Some(p) => p.clone(),
            None => {
                phase("logging in");
                let p = Rc::new(campfire::prepare(&target.url, &opts.prepare).await?);
                cached.insert(target.name.clone(), p.clone());
                p
            }
        };
        let ct = campfire_target(
            &target.name,
            &target.url,
            prepared,
            opts.read_buffer,
            discover_pid(&target.url),
        );
        let ct = CellTarget {
            cable: CableConfig {
                deflate: opts.deflate,
                ..ct.cable
            },
            ..ct
        };
        return Ok(run_both(ct).await);
    };
    let seed = opts.seed_db.as_deref().unwrap_or(Path::new(""));
    let stem = format!("{}-n{}-r{}", target.name, cell_opts.n, rep + 1);
    let db_dir = opts.out.join("db");
    let db = server::fresh_db_copy(seed, &db_dir, &format!("{stem}.sqlite3"))?;
    let db_abs = std::fs::canonicalize(&db).unwrap_or(db.clone());
    let command = server::render_command(cmd, target.url.port, &db_abs);
    phase("starting server");
    let srv = server::start(
        &target.url,
        &command,
        opts.server_cpu.as_deref(),
        &opts.out.join("logs").join(format!("{stem}.log")),
        opts.up_timeout,
        opts.stop_timeout,
    )
    .await?;
    phase("logging in");
    let prepared = match campfire::prepare(&target.url, &opts.prepare).await {
        Ok(p) => Rc::new(p),
        Err(e) => {
            let _ = srv.stop(opts.stop_timeout).await;
            return Err(e);
        }
    };
    let ct = campfire_target(
        &target.name,
        &target.url,
        prepared,
        opts.read_buffer,
        Some(srv.pid),
    );
    let ct = CellTarget {
        cable: CableConfig {
            deflate: opts.deflate,
            ..ct.cable
        },
        ..ct
    };
    let mut results = run_both(ct).await;
    phase("stopping server");
    let graceful = srv.stop(opts.stop_timeout).await?;
    if !graceful {
        for result in &mut results {
            result.notes.push(format!(
                "the server ignored SIGTERM for {:?} and was killed",
                opts.stop_timeout
            ));
        }
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_is_summarized_per_target() {
        let mut a = CellResult {
            target: "q".into(),
            ..Default::default()
        };
        a.loadgen.cpus_allowed = "1".into();
        a.server = Some(crate::report::ServerStats {
            cpus_allowed: "0".into(),
            ..Default::default()
        });
        let mut b = a.clone();
        b.target = "r".into();
        b.server = None;
        assert_eq!(
            pinning_summary(&[a.clone(), a, b]),
            "pinning: loadgen CPUs 1; server CPUs: q 0, r unknown"
        );
    }

    #[test]
    fn timestamps_are_utc_civil_dates() {
        assert_eq!(utc_timestamp(0), "19700101-000000");
        assert_eq!(utc_timestamp(951_782_400), "20000229-000000");
        assert_eq!(utc_timestamp(1_700_000_000), "20231114-221320");
        assert_eq!(utc_timestamp(u64::MAX), "99991231-235959");
        assert!(default_out_dir().starts_with("results"));
    }
}
