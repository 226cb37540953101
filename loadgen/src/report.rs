//! Cell results: the JSON line per cell, the median-over-repeats summary and its markdown table.
//!
//! Rates follow the verification load generator's definitions so numbers compare:
//! `deliveries_per_sec` counts client × message receipts (its `frames_per_sec`, a README's
//! "deliveries/s") and `delivered_msgs_per_sec` counts messages that reached *every* client;
//! both divide by the span from the first post to the last receipt.

use crate::stats::{median, LatencySummary};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Server process figures over a cell's measurement window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStats {
    /// The server's pid.
    pub pid: u32,
    /// CPU % of one core over the window (100 = one core busy).
    pub cpu_percent: f64,
    /// Resident set size at the end of the window, MiB.
    pub rss_mb: f64,
    /// Peak resident set size so far (`VmHWM`), MiB.
    pub peak_rss_mb: f64,
    /// Threads at the end of the window.
    pub threads: u64,
    /// The server's `Cpus_allowed_list` (its CPU pinning).
    pub cpus_allowed: String,
}

/// The load generator's own figures over a cell's measurement window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadgenStats {
    /// CPU % of one core over the window.
    pub cpu_percent: f64,
    /// This process's `Cpus_allowed_list`.
    pub cpus_allowed: String,
    /// Whether it used more than 90 % of its core: then the cell may measure the load
    /// generator rather than the server.
    pub saturated: bool,
    /// `release` or `debug` (a debug build cannot keep up; numbers from it mean little).
    pub build: String,
    /// Receive buffer per connection, bytes.
    pub read_buffer: usize,
}

/// One cell: one target at one N for one repetition. Serialized as one JSON line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// Target name (`NAME` of `--target NAME=URL`).
    pub target: String,
    /// Base URL (or cable URL for `fanout-only`).
    pub url: String,
    /// `campfire` or `fanout-only`.
    pub kind: String,
    /// Clients.
    pub n: usize,
    /// Repetition index, from 0.
    pub rep: usize,
    /// `closed-loop` or `paced`.
    pub mode: String,
    /// Posters.
    pub posters: usize,
    /// Undelivered-message window (0 = unbounded).
    pub window: usize,
    /// Paced post rate, posts/s.
    pub rate: Option<f64>,
    /// Posting phase length, s.
    pub duration_secs: f64,
    /// Users logged in (clients are spread over them).
    pub users: usize,
    /// Subscriptions each client made.
    pub subscriptions_per_client: usize,
    /// Clients with every subscription confirmed.
    pub ready: usize,
    /// Clients that failed to connect or subscribe.
    pub failed_connections: usize,
    /// Clients that lost their connection after becoming ready.
    pub disconnected: usize,
    /// Seconds from the first connect to the last client ready.
    pub connect_secs: f64,
    /// Posts with a valid response.
    pub posted: u64,
    /// Posts that failed or returned an invalid response.
    pub post_errors: u64,
    /// Posted messages that reached every ready client.
    pub complete: u64,
    /// `complete == posted`.
    pub complete_eq_posted: bool,
    /// First receipts (client × message).
    pub receipts: u64,
    /// `posted × ready`: receipts a perfect run gets.
    pub expected_receipts: u64,
    /// `posted / duration`.
    pub posts_per_sec: f64,
    /// `receipts / span`.
    pub deliveries_per_sec: f64,
    /// `complete / span`.
    pub delivered_msgs_per_sec: f64,
    /// First post to last receipt, s.
    pub span_secs: f64,
    /// End of posting to end of drain, s.
    pub drain_secs: f64,
    /// HTTP round trip of a post.
    pub post: LatencySummary,
    /// Post sent → first client received.
    pub post_to_first: LatencySummary,
    /// Post sent → all ready clients received.
    pub post_to_all: LatencySummary,
    /// Post sent → each receipt.
    pub post_to_each: LatencySummary,
    /// Receipts of a message a client already had.
    pub duplicates: u64,
    /// Receipts out of their poster's order.
    pub out_of_order: u64,
    /// Clients whose receive order differs from the first client's.
    pub order_divergent_clients: u64,
    /// Frames with this run's token prefix but an unknown sequence number.
    pub unknown_tokens: u64,
    /// Data frames received by ready clients.
    pub frames: u64,
    /// Data frames without a token (pings, unread notices...).
    pub other_frames: u64,
    /// Mean payload size of matched frames, bytes.
    pub mean_frame_bytes: f64,
    /// WebSocket bytes received per second over the span, MB/s (10^6).
    pub wire_mb_per_sec: f64,
    /// WebSocket bytes received over the span per first receipt (client × message), bytes:
    /// what one delivered post costs on the wire, every other frame of the span included
    /// (compressed bytes with `--deflate`).
    #[serde(default)]
    pub wire_bytes_per_receipt: f64,
    /// Server figures, when its process is known.
    pub server: Option<ServerStats>,
    /// Load generator figures.
    pub loadgen: LoadgenStats,
    /// First distinct errors (connections and posts).
    pub errors: Vec<String>,
    /// Warnings worth reading next to the numbers.
    pub notes: Vec<String>,
    /// A paced latency probe run after the cell proper (`loadgen sweep --paced-rate`): its
    /// post→first and post→all p50 fill the table's paced columns, and it does not make a row
    /// of its own.
    #[serde(default)]
    pub paced_probe: bool,
    /// Every check passed: all ready, no failures, `complete == posted > 0`, no duplicates,
    /// no message out of its poster's order. (`order_divergent_clients` is reported, not
    /// judged: posts sent concurrently by different posters have no defined order, and
    /// neither Rails nor a multi-threaded server promises every client the same interleaving.)
    pub ok: bool,
}

impl CellResult {
    /// Sets [`CellResult::ok`] from the counters (see [`CellResult::ok`]).
    pub fn judge(&mut self) {
        self.ok = self.ready == self.n
            && self.failed_connections == 0
            && self.disconnected == 0
            && self.post_errors == 0
            && self.posted > 0
            && self.complete == self.posted
            && self.duplicates == 0
            && self.out_of_order == 0;
    }
}

/// The median over repeats of one target at one N.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableRow {
    /// Target name.
    pub target: String,
    /// Clients.
    pub n: usize,
    /// Repetitions summarized.
    pub reps: usize,
    /// Repetitions with `ok`.
    pub ok_reps: usize,
    /// Fewest ready clients over the repetitions.
    pub ready_min: usize,
    /// Most failed plus disconnected clients over the repetitions.
    pub failed_max: usize,
    /// Subscriptions per client.
    pub subscriptions_per_client: usize,
    /// Median posts.
    pub posted: f64,
    /// `complete == posted` in every repetition.
    pub complete_all: bool,
    /// Median posts/s.
    pub posts_per_sec: f64,
    /// Median deliveries/s.
    pub deliveries_per_sec: f64,
    /// Median fully delivered messages/s.
    pub delivered_msgs_per_sec: f64,
    /// Median post p50, ms.
    pub post_p50_ms: f64,
    /// Median post p99, ms.
    pub post_p99_ms: f64,
    /// Median post→first p50, ms.
    pub first_p50_ms: f64,
    /// Median post→first p99, ms.
    pub first_p99_ms: f64,
    /// Median post→all p50, ms.
    pub all_p50_ms: f64,
    /// Median post→all p99, ms.
    pub all_p99_ms: f64,
    /// Median connect-and-subscribe time, s.
    pub connect_secs: f64,
    /// Median post→first p50 of the paced probes (`--paced-rate`), ms.
    pub paced_first_p50_ms: Option<f64>,
    /// Median post→all p50 of the paced probes, ms.
    pub paced_all_p50_ms: Option<f64>,
    /// The loopback floor for one message to reach all N clients: N ÷ the frames/s of one
    /// `write()` per frame on this machine (`--floor-fps`), ms.
    pub floor_ms: Option<f64>,
    /// Median server CPU %, if known.
    pub server_cpu: Option<f64>,
    /// Median server RSS, MiB, if known.
    pub server_rss_mb: Option<f64>,
    /// Median load generator CPU %.
    pub loadgen_cpu: f64,
    /// The load generator saturated its core in some repetition.
    pub loadgen_saturated: bool,
}

/// Groups cells by (target, N), in first-seen target order and ascending N, and takes medians.
pub fn summarize(cells: &[CellResult]) -> Vec<TableRow> {
    let mut targets: Vec<&str> = Vec::new();
    let mut ns: Vec<usize> = Vec::new();
    for c in cells {
        if !targets.contains(&c.target.as_str()) {
            targets.push(&c.target);
        }
        if !ns.contains(&c.n) {
            ns.push(c.n);
        }
    }
    ns.sort_unstable();
    let mut rows = Vec::new();
    for &n in &ns {
        for &t in &targets {
            let group: Vec<&CellResult> = cells
                .iter()
                .filter(|c| c.n == n && c.target == t && !c.paced_probe)
                .collect();
            if group.is_empty() {
                continue;
            }
            let probes: Vec<&CellResult> = cells
                .iter()
                .filter(|c| c.n == n && c.target == t && c.paced_probe)
                .collect();
            let probe_med = |f: &dyn Fn(&CellResult) -> f64| {
                median(&probes.iter().map(|c| f(c)).collect::<Vec<_>>())
            };
            let med = |f: &dyn Fn(&CellResult) -> f64| {
                median(&group.iter().map(|c| f(c)).collect::<Vec<_>>()).unwrap_or(0.0)
            };
            let server_vals: Vec<&ServerStats> =
                group.iter().filter_map(|c| c.server.as_ref()).collect();
            rows.push(TableRow {
                target: t.to_owned(),
                n,
                reps: group.len(),
                ok_reps: group.iter().filter(|c| c.ok).count(),
                ready_min: group.iter().map(|c| c.ready).min().unwrap_or(0),
                failed_max: group
                    .iter()
                    .map(|c| c.failed_connections + c.disconnected)
                    .max()
                    .unwrap_or(0),
                subscriptions_per_client: group
                    .iter()
                    .map(|c| c.subscriptions_per_client)
                    .max()
                    .unwrap_or(0),
                posted: med(&|c| c.posted as f64),
                complete_all: group.iter().all(|c| c.complete_eq_posted),
                posts_per_sec: med(&|c| c.posts_per_sec),
                deliveries_per_sec: med(&|c| c.deliveries_per_sec),
                delivered_msgs_per_sec: med(&|c| c.delivered_msgs_per_sec),
                post_p50_ms: med(&|c| c.post.p50_ms),
                post_p99_ms: med(&|c| c.post.p99_ms),
                first_p50_ms: med(&|c| c.post_to_first.p50_ms),
                first_p99_ms: med(&|c| c.post_to_first.p99_ms),
                all_p50_ms: med(&|c| c.post_to_all.p50_ms),
                all_p99_ms: med(&|c| c.post_to_all.p99_ms),
                connect_secs: med(&|c| c.connect_secs),
                paced_first_p50_ms: probe_med(&|c| c.post_to_first.p50_ms),
                paced_all_p50_ms: probe_med(&|c| c.post_to_all.p50_ms),
                floor_ms: None,
                server_cpu: median(
                    &server_vals
                        .iter()
                        .map(|s| s.cpu_percent)
                        .collect::<Vec<_>>(),
                ),
                server_rss_mb: median(&server_vals.iter().map(|s| s.rss_mb).collect::<Vec<_>>()),
                loadgen_cpu: med(&|c| c.loadgen.cpu_percent),
                loadgen_saturated: group.iter().any(|c| c.loadgen.saturated),
            });
        }
    }
    rows
}

/// Frames per second of one `write()` per frame on this machine's loopback, by N (the
/// `fanout-limit` tool's `write` variant), for the table's floor column.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FloorFps {
    /// A figure for every N, used when `by_n` has none for a row's N.
    pub all: Option<f64>,
    /// Figures for particular N.
    pub by_n: Vec<(usize, f64)>,
}

impl FloorFps {
    /// Parses `F` (one figure for every N) or `N=F,N=F,…`, F in frames/s.
    ///
    /// Errors: an entry that is not a positive number or `N=number`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut out = Self::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let fps = |v: &str| match v.trim().parse::<f64>() {
                Ok(f) if f > 0.0 && f.is_finite() => Ok(f),
                _ => Err(format!("{v:?} is not a positive frames/s figure")),
            };
            match part.split_once('=') {
                Some((n, f)) => {
                    let n = n
                        .trim()
                        .parse::<usize>()
                        .map_err(|_| format!("{n:?} is not a client count"))?;
                    out.by_n.push((n, fps(f)?));
                }
                None => out.all = Some(fps(part)?),
            }
        }
        Ok(out)
    }

    /// The figure for `n`, if any.
    pub fn for_n(&self, n: usize) -> Option<f64> {
        self.by_n
            .iter()
            .find(|(m, _)| *m == n)
            .map(|(_, f)| *f)
            .or(self.all)
    }

    /// Fills each row's `floor_ms` = N ÷ frames/s, in ms.
    pub fn apply(&self, rows: &mut [TableRow]) {
        for r in rows {
            r.floor_ms = self.for_n(r.n).map(|f| r.n as f64 / f * 1000.0);
        }
    }
}

/// Formats an integer-ish value with thousands separators: `1234567.8` → `1,234,568`.
pub fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "-".to_owned();
    }
    let neg = v < 0.0;
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if neg {
        format!("-{out}")
    } else {
        out
    }
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The column headers of [`render_table`], with their meaning, for the README and `--help`.
pub const COLUMNS: &[(&str, &str)] = &[
    ("target", "target name"),
    ("N", "clients"),
    ("ready", "fewest clients ready over the repetitions"),
    ("failed", "most failed + disconnected clients"),
    ("subs", "subscriptions per client"),
    ("posted", "median posts with a valid response"),
    ("complete", "complete == posted in every repetition"),
    ("posts/s", "median posts per second"),
    (
        "deliveries/s",
        "median client × message receipts per second",
    ),
    ("msgs/s", "median fully delivered messages per second"),
    ("post p50", "median of the post round-trip p50, ms"),
    ("post p99", "median of the post round-trip p99, ms"),
    ("→first p50", "post → first client, p50, ms"),
    ("→first p99", "post → first client, p99, ms"),
    ("→all p50", "post → every client, p50, ms"),
    ("→all p99", "post → every client, p99, ms"),
    (
        "paced →first p50",
        "post → first client, p50, ms, in the paced probe (`--paced-rate`)",
    ),
    (
        "paced →all p50",
        "post → every client, p50, ms, in the paced probe",
    ),
    (
        "floor ms",
        "N ÷ frames/s of one write() per frame on this machine (`--floor-fps`), ms",
    ),
    ("connect s", "connect and subscribe all N, s"),
    ("srv CPU %", "server CPU over the window (100 = one core)"),
    ("srv RSS MB", "server resident memory at the end, MiB"),
    ("lg CPU %", "load generator CPU (! = saturated, >90 %)"),
    ("ok", "passing repetitions / repetitions"),
];

/// Renders rows as a GitHub-flavoured markdown table (see [`COLUMNS`]).
pub fn render_table(rows: &[TableRow]) -> String {
    let mut out = String::new();
    out.push('|');
    for (h, _) in COLUMNS {
        let _ = write!(out, " {h} |");
    }
    out.push('\n');
    out.push('|');
    for (i, _) in COLUMNS.iter().enumerate() {
        out.push_str(if i == 0 { "---|" } else { "---:|" });
    }
    out.push('\n');
    for r in rows {
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map(f).unwrap_or("-".into());
        let cells = [
            r.target.clone(),
            r.n.to_string(),
            r.ready_min.to_string(),
            r.failed_max.to_string(),
            r.subscriptions_per_client.to_string(),
            thousands(r.posted),
            if r.complete_all { "yes" } else { "NO" }.to_owned(),
            thousands(r.posts_per_sec),
            thousands(r.deliveries_per_sec),
            thousands(r.delivered_msgs_per_sec),
            ms(r.post_p50_ms),
            ms(r.post_p99_ms),
            ms(r.first_p50_ms),
            ms(r.first_p99_ms),
            ms(r.all_p50_ms),
            ms(r.all_p99_ms),
            opt(r.paced_first_p50_ms, &ms),
            opt(r.paced_all_p50_ms, &ms),
            opt(r.floor_ms, &ms),
            format!("{:.2}", r.connect_secs),
            opt(r.server_cpu, &|v| format!("{v:.0}")),
            opt(r.server_rss_mb, &|v| format!("{v:.1}")),
            format!(
                "{:.0}{}",
                r.loadgen_cpu,
                if r.loadgen_saturated { "!" } else { "" }
            ),
            format!("{}/{}", r.ok_reps, r.reps),
        ];
        out.push('|');
        for c in cells {
            let _ = write!(out, " {c} |");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(target: &str, n: usize, rep: usize, dps: f64, p50: f64) -> CellResult {
        let mut c = CellResult {
            target: target.into(),
            n,
            rep,
            ready: n,
            posted: 100,
            complete: 100,
            complete_eq_posted: true,
            subscriptions_per_client: 4,
            deliveries_per_sec: dps,
            delivered_msgs_per_sec: dps / n as f64,
            post: LatencySummary {
                p50_ms: p50,
                p99_ms: p50 * 3.0,
                ..Default::default()
            },
            server: Some(ServerStats {
                cpu_percent: 95.0,
                rss_mb: 20.0,
                ..Default::default()
            }),
            loadgen: LoadgenStats {
                cpu_percent: 40.0,
                ..Default::default()
            },
            ..Default::default()
        };
        c.judge();
        c
    }

    #[test]
    fn judge_requires_every_check() {
        let mut c = cell("a", 10, 0, 1.0, 1.0);
        assert!(c.ok);
        c.order_divergent_clients = 3;
        c.judge();
        assert!(c.ok, "interleaving of concurrent posters is not judged");
        c.out_of_order = 1;
        c.judge();
        assert!(!c.ok);
        let mut c = cell("a", 10, 0, 1.0, 1.0);
        c.duplicates = 1;
        c.judge();
        assert!(!c.ok);
        let mut c = cell("a", 10, 0, 1.0, 1.0);
        c.complete = 99;
        c.judge();
        assert!(!c.ok);
    }

    #[test]
    fn summarize_takes_medians_per_target_and_n() {
        let cells = vec![
            cell("queue", 100, 0, 1000.0, 1.0),
            cell("bcast", 100, 0, 500.0, 2.0),
            cell("queue", 50, 0, 300.0, 1.0),
            cell("queue", 100, 1, 3000.0, 3.0),
            cell("queue", 100, 2, 2000.0, 2.0),
        ];
        let rows = summarize(&cells);
        let keys: Vec<(String, usize, usize)> = rows
            .iter()
            .map(|r| (r.target.clone(), r.n, r.reps))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("queue".into(), 50, 1),
                ("queue".into(), 100, 3),
                ("bcast".into(), 100, 1)
            ]
        );
        assert_eq!(rows[1].deliveries_per_sec, 2000.0);
        assert_eq!(rows[1].post_p50_ms, 2.0);
        assert_eq!(rows[1].post_p99_ms, 6.0);
        assert_eq!(rows[1].ok_reps, 3);
        assert_eq!(rows[1].server_cpu, Some(95.0));
    }

    #[test]
    fn table_renders_header_alignment_and_values() {
        let mut c = cell("hearth-queue", 1000, 0, 212_345.6, 4.567);
        c.loadgen.saturated = true;
        c.loadgen.cpu_percent = 97.0;
        let mut bad = cell("other", 1000, 0, 10.0, 150.0);
        bad.complete = 90;
        bad.complete_eq_posted = false;
        bad.server = None;
        bad.judge();
        let table = render_table(&summarize(&[c, bad]));
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("| target | N | ready |"));
        assert_eq!(lines[1].matches("---:|").count(), COLUMNS.len() - 1);
        assert!(lines[2].contains("| hearth-queue | 1000 | 1000 | 0 | 4 | 100 | yes |"));
        assert!(lines[2].contains("| 212,346 |"));
        assert!(lines[2].contains("| 4.57 | 13.7 |"));
        assert!(lines[2].contains("| 97! | 1/1 |"));
        assert!(lines[3].contains("| NO |"));
        assert!(lines[3].contains("| 150 | 450 |"));
        assert!(
            lines[3].contains("| - | - |"),
            "unknown server figures: {}",
            lines[3]
        );
        assert!(lines[3].ends_with("| 0/1 |"));
    }

    #[test]
    fn paced_probes_fill_their_columns_and_make_no_row_and_the_floor_is_n_over_fps() {
        let main = cell("q", 2000, 0, 500_000.0, 4.0);
        let mut probe = cell("q", 2000, 0, 40_000.0, 2.0);
        probe.paced_probe = true;
        probe.post_to_first.p50_ms = 1.5;
        probe.post_to_all.p50_ms = 9.25;
        let mut rows = summarize(&[main, probe]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].paced_first_p50_ms, Some(1.5));
        assert_eq!(rows[0].paced_all_p50_ms, Some(9.25));
        let floor = FloorFps::parse("100000,2000=80000").unwrap();
        floor.apply(&mut rows);
        assert_eq!(rows[0].floor_ms, Some(25.0));
        assert_eq!(
            FloorFps::parse("250000").unwrap().for_n(10_000),
            Some(250_000.0)
        );
        assert!(FloorFps::parse("x").is_err());
        assert!(FloorFps::parse("5=0").is_err());
        let table = render_table(&rows);
        assert!(table.contains("| 1.50 | 9.25 | 25.0 |"), "{table}");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
        assert_eq!(thousands(-12_345.0), "-12,345");
        assert_eq!(thousands(f64::NAN), "-");
    }

    #[test]
    fn json_lines_round_trip() {
        let c = cell("a", 5, 1, 10.0, 1.0);
        let line = serde_json::to_string(&c).unwrap();
        assert!(!line.contains('\n'));
        let back: CellResult = serde_json::from_str(&line).unwrap();
        assert_eq!(back, c);
    }
}
