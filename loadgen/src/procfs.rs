//! What `/proc` says about a process: CPU time, memory, threads, CPU affinity, and which process
//! listens on a TCP port (proc(5)).
//!
//! - CPU time: fields 14 `utime` and 15 `stime` of `/proc/<pid>/stat`, in clock ticks
//!   (`sysconf(_SC_CLK_TCK)`, usually 100 per second); fields are counted after the `)` that
//!   ends the command name, which may itself contain spaces and parentheses.
//! - Memory and threads: `VmRSS`, `VmHWM` (peak RSS) and `Threads` in `/proc/<pid>/status`.
//! - Pinning: `Cpus_allowed_list` in `/proc/<pid>/status` is the process's
//!   `sched_getaffinity` mask, e.g. `0` when started under `taskset -c 0`, `0-1` when unpinned.
//! - Listeners: `/proc/net/tcp` and `/proc/net/tcp6` list sockets with a hex local port and a
//!   state (`0A` = LISTEN) and an inode; a process owns the socket when one of its
//!   `/proc/<pid>/fd/*` links reads `socket:[<inode>]`.

use std::collections::BTreeSet;
use std::fs;
use std::time::Instant;

/// A process to observe: a pid or `self`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proc {
    /// This process (`/proc/self`).
    SelfProc,
    /// Another process by pid.
    Pid(u32),
    /// The calling thread only (`/proc/thread-self`).
    ThisThread,
}

impl Proc {
    fn dir(self) -> String {
        match self {
            Self::SelfProc => "/proc/self".to_owned(),
            Self::Pid(p) => format!("/proc/{p}"),
            Self::ThisThread => "/proc/thread-self".to_owned(),
        }
    }
}

/// Clock ticks per second for `/proc/<pid>/stat` times (100 when `sysconf` is unavailable).
pub fn clock_ticks_per_sec() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|t| *t > 0)
        .map(|t| t as u64)
        .unwrap_or(100)
}

/// Parses `utime + stime` (clock ticks) from the text of a `/proc/<pid>/stat` file.
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    // After ")": field 3 (state) is index 0, so utime (field 14) is index 11, stime index 12.
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// User plus system CPU time of `p`, in clock ticks; `None` if the process is gone.
pub fn cpu_ticks(p: Proc) -> Option<u64> {
    parse_stat_cpu_ticks(&fs::read_to_string(format!("{}/stat", p.dir())).ok()?)
}

/// A field of a `/proc/<pid>/status` text, e.g. `Threads` → `"4"`, `VmRSS` → `"1234 kB"`.
pub fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k == name).then(|| v.trim())
    })
}

/// Memory and thread facts of a process at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcStatus {
    /// Resident set size, KiB (`VmRSS`).
    pub rss_kb: u64,
    /// Peak resident set size, KiB (`VmHWM`).
    pub hwm_kb: u64,
    /// Threads.
    pub threads: u64,
    /// `Cpus_allowed_list`, e.g. `0` or `0-1`.
    pub cpus_allowed: String,
}

/// Parses the facts of [`ProcStatus`] from a `/proc/<pid>/status` text.
pub fn parse_status(status: &str) -> ProcStatus {
    let kb = |name| {
        status_field(status, name)
            .and_then(|v| v.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    ProcStatus {
        rss_kb: kb("VmRSS"),
        hwm_kb: kb("VmHWM"),
        threads: kb("Threads"),
        cpus_allowed: status_field(status, "Cpus_allowed_list")
            .unwrap_or("")
            .to_owned(),
    }
}

/// The [`ProcStatus`] of `p`; `None` if the process is gone.
pub fn status(p: Proc) -> Option<ProcStatus> {
    Some(parse_status(
        &fs::read_to_string(format!("{}/status", p.dir())).ok()?,
    ))
}

/// A CPU-time sample for measuring CPU % over an interval.
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    ticks: u64,
    at: Instant,
}

impl CpuSample {
    /// Samples `p` now; `None` if the process is gone.
    pub fn take(p: Proc) -> Option<Self> {
        Some(Self {
            ticks: cpu_ticks(p)?,
            at: Instant::now(),
        })
    }

    /// CPU % of one core used between `self` and `later` (100 = one core busy throughout).
    pub fn percent_until(&self, later: &Self) -> f64 {
        let secs = later.at.duration_since(self.at).as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        let ticks = later.ticks.saturating_sub(self.ticks) as f64;
        ticks / clock_ticks_per_sec() as f64 / secs * 100.0
    }
}

/// Socket inodes in LISTEN state on local `port`, from the text of `/proc/net/tcp` or
/// `/proc/net/tcp6`.
pub fn parse_listen_inodes(table: &str, port: u16) -> Vec<u64> {
    let mut out = Vec::new();
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 10 || f[3] != "0A" {
            continue;
        }
        let Some((_, hex_port)) = f[1].rsplit_once(':') else {
            continue;
        };
        if u16::from_str_radix(hex_port, 16).ok() == Some(port) {
            if let Ok(inode) = f[9].parse::<u64>() {
                if inode != 0 {
                    out.push(inode);
                }
            }
        }
    }
    out
}

/// Pids of the processes that hold a listening TCP socket on `port` (IPv4 or IPv6), sorted.
/// Processes whose `fd` directory cannot be read (another user's) are not seen.
pub fn listening_pids(port: u16) -> Vec<u32> {
    let mut inodes = BTreeSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(text) = fs::read_to_string(table) {
            inodes.extend(parse_listen_inodes(&text, port));
        }
    }
    if inodes.is_empty() {
        return Vec::new();
    }
    let wanted: BTreeSet<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut pids = BTreeSet::new();
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(link) = fs::read_link(fd.path()) {
                if link.to_str().is_some_and(|l| wanted.contains(l)) {
                    pids.insert(pid);
                    break;
                }
            }
        }
    }
    pids.into_iter().collect()
}

/// Raises this process's soft open-file limit to its hard limit (so N = 10,000 sockets fit);
/// returns the new soft limit.
pub fn raise_nofile_limit() -> Option<u64> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).ok()?;
        return Some(hard);
    }
    Some(soft)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_cpu_ticks_skip_odd_command_names() {
        let stat = "1234 (we ird) (x)) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 \
                    12345 1000000 300 18446744073709551615";
        assert_eq!(parse_stat_cpu_ticks(stat), Some(300));
        assert_eq!(parse_stat_cpu_ticks("garbage"), None);
        assert!(cpu_ticks(Proc::SelfProc).is_some());
    }

    #[test]
    fn status_fields() {
        let text = "Name:\thearth\nThreads:\t5\nVmHWM:\t  20480 kB\nVmRSS:\t   10240 kB\nCpus_allowed_list:\t0\n";
        let s = parse_status(text);
        assert_eq!(
            s,
            ProcStatus {
                rss_kb: 10240,
                hwm_kb: 20480,
                threads: 5,
                cpus_allowed: "0".into()
            }
        );
        let me = status(Proc::SelfProc).unwrap();
        assert!(me.threads >= 1 && me.rss_kb > 0 && !me.cpus_allowed.is_empty());
    }

    #[test]
    fn listen_table_parsing() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 55501 1 0000000000000000 100 0 0 10 0\n\
   1: 0100007F:0BB8 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 55502 1 0000000000000000 20 4 30 10 -1\n\
   2: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 55503 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(parse_listen_inodes(table, 3000), vec![55501]);
        assert_eq!(parse_listen_inodes(table, 8080), vec![55503]);
        assert!(parse_listen_inodes(table, 9).is_empty());
    }

    #[test]
    fn finds_this_process_listening() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert_eq!(listening_pids(port), vec![std::process::id()]);
        drop(listener);
        assert!(listening_pids(port).is_empty());
    }
}
