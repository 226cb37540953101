//! Starting and stopping the server of a sweep cell, avoiding the known harness traps.
//!
//! For a target with a command, every cell gets a fresh server on a fresh copy of the seed
//! database:
//! 1. the seed is copied to a new path and any `-wal`/`-shm` sidecars at that path are removed
//!    (a killed server leaves them, and SQLite would replay a stale WAL into the copy);
//! 2. the port must be free: a stale server still bound to it (possibly with `SO_REUSEPORT`)
//!    would silently take part of the load;
//! 3. the command runs as `sh -c "exec [taskset -c CPU] COMMAND"` in its own process group with
//!    output to a log file; `exec` keeps the server's pid equal to the child's pid;
//! 4. `GET /up` must answer 200 within the start timeout;
//! 5. exactly one process must then listen on the port: that pid is measured;
//! 6. stopping sends SIGTERM, then SIGKILL to the process group after the stop timeout, and
//!    waits until the port is free again.

use crate::cookies::CookieJar;
use crate::endpoint::Endpoint;
use crate::http::HttpConnection;
use crate::procfs;
use anyhow::{anyhow, bail, Context, Result};
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A sweep target: `NAME=URL[,cmd=SERVER COMMAND with {port} {db}]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSpec {
    /// Name in the results.
    pub name: String,
    /// Base URL.
    pub url: Endpoint,
    /// Command template run per cell, if the sweep manages the server.
    pub cmd: Option<String>,
}

impl TargetSpec {
    /// Parses `NAME=URL` or `NAME=URL,cmd=COMMAND` (the command may contain commas).
    ///
    /// Errors: a missing `=`, an empty name, or a bad URL.
    pub fn parse(s: &str) -> Result<Self> {
        let (name, rest) = s
            .split_once('=')
            .ok_or_else(|| anyhow!("--target {s:?}: expected NAME=URL[,cmd=COMMAND]"))?;
        let name = name.trim();
        if name.is_empty() {
            bail!("--target {s:?}: empty name");
        }
        let (url, cmd) = match rest.split_once(",cmd=") {
            Some((u, c)) => (u, Some(c.trim().to_owned())),
            None => (rest, None),
        };
        let url = Endpoint::parse(url.trim()).with_context(|| format!("--target {name}"))?;
        if cmd.as_deref() == Some("") {
            bail!("--target {name}: empty cmd");
        }
        Ok(Self {
            name: name.to_owned(),
            url,
            cmd,
        })
    }
}

/// Substitutes `{port}` and `{db}` in a command template.
pub fn render_command(template: &str, port: u16, db: &Path) -> String {
    template
        .replace("{port}", &port.to_string())
        .replace("{db}", &db.display().to_string())
}

/// The shell line that runs `command`, pinned with `taskset -c CPU` when `cpu` is given;
/// `exec` makes the server replace the shell so its pid is the child's pid.
pub fn shell_line(command: &str, cpu: Option<&str>) -> String {
    match cpu {
        Some(c) => format!("exec taskset -c {c} {command}"),
        None => format!("exec {command}"),
    }
}

/// Copies `seed` to `dir/<name>` and removes any `-wal`/`-shm`/`-journal` sidecars at the
/// destination. Returns the copy's path.
///
/// Errors: the seed is missing or the copy fails.
pub fn fresh_db_copy(seed: &Path, dir: &Path, name: &str) -> Result<PathBuf> {
    if !seed.is_file() {
        bail!(
            "seed database {} not found (build it with `hearth seed --database {} --users N`)",
            seed.display(),
            seed.display()
        );
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dest = dir.join(name);
    for suffix in ["-wal", "-shm", "-journal"] {
        let side = PathBuf::from(format!("{}{suffix}", dest.display()));
        if side.exists() {
            std::fs::remove_file(&side).with_context(|| format!("removing {}", side.display()))?;
        }
    }
    std::fs::copy(seed, &dest)
        .with_context(|| format!("copying {} to {}", seed.display(), dest.display()))?;
    Ok(dest)
}

/// Sidecars next to the seed itself: a seed with a `-wal` was not checkpointed and a plain
/// copy would miss data.
pub fn seed_sidecars(seed: &Path) -> Vec<PathBuf> {
    ["-wal", "-shm"]
        .iter()
        .map(|s| PathBuf::from(format!("{}{s}", seed.display())))
        .filter(|p| p.exists())
        .collect()
}

/// A server started for one cell.
#[derive(Debug)]
pub struct RunningServer {
    child: tokio::process::Child,
    /// The pid of the process listening on the port (measured for CPU and memory).
    pub pid: u32,
    /// The port it listens on.
    pub port: u16,
    /// Its log file (stdout and stderr).
    pub log: PathBuf,
}

/// The last `lines` lines of a file, for error messages.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Returns `Ok(())` if no process listens on `port`.
///
/// Errors: names the listening pids (a stale server).
pub fn ensure_port_free(port: u16) -> Result<()> {
    let pids = procfs::listening_pids(port);
    if !pids.is_empty() {
        bail!(
            "port {port} already has a listener (pids {pids:?}): a stale server would share the \
             load; stop it first"
        );
    }
    Ok(())
}

/// Polls `GET /up` until it answers 200.
///
/// Errors: the timeout passed, or `child` exited first.
pub async fn wait_up(
    base: &Endpoint,
    timeout: Duration,
    child: &mut tokio::process::Child,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            bail!("the server exited with {status} before answering GET /up");
        }
        let mut conn = HttpConnection::new(base);
        let mut jar = CookieJar::new();
        if let Ok(resp) = conn.get("/up", &mut jar, "*/*").await {
            if resp.status == 200 {
                return Ok(());
            }
        }
        if Instant::now() >= deadline {
            bail!("GET /up did not answer 200 within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts `command` for a cell (see the module docs).
///
/// Errors: the port is taken, the command cannot start, `/up` never answers, or not exactly one
/// process listens on the port afterwards. The server is stopped before an error returns.
pub async fn start(
    base: &Endpoint,
    command: &str,
    cpu: Option<&str>,
    log: &Path,
    up_timeout: Duration,
    stop_timeout: Duration,
) -> Result<RunningServer> {
    let port = base.port;
    ensure_port_free(port)?;
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(shell_line(command, cpu))
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting `{command}`"))?;
    let child_pid = child.id().ok_or_else(|| anyhow!("server exited at once"))?;
    if let Err(e) = wait_up(base, up_timeout, &mut child).await {
        let mut s = RunningServer {
            child,
            pid: child_pid,
            port,
            log: log.to_path_buf(),
        };
        let _ = stop_inner(&mut s, stop_timeout).await;
        bail!(
            "{e}\ncommand: {command}\nlast log lines ({}):\n{}",
            log.display(),
            log_tail(log, 20)
        );
    }
    let pids = procfs::listening_pids(port);
    let mut server = RunningServer {
        child,
        pid: child_pid,
        port,
        log: log.to_path_buf(),
    };
    match pids.as_slice() {
        [one] => {
            server.pid = *one;
            Ok(server)
        }
        other => {
            let _ = stop_inner(&mut server, stop_timeout).await;
            bail!(
                "expected exactly one process listening on port {port} after start, found \
                 {other:?}"
            )
        }
    }
}

async fn stop_inner(server: &mut RunningServer, timeout: Duration) -> Result<bool> {
    let Some(pid) = server.child.id() else {
        return Ok(true);
    };
    let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
    let graceful = tokio::time::timeout(timeout, server.child.wait())
        .await
        .is_ok();
    if !graceful {
        let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
        let _ = server.child.wait().await;
    }
    Ok(graceful)
}

impl RunningServer {
    /// Stops the server: SIGTERM, then SIGKILL to its process group after `timeout`; then waits
    /// (up to 5 s) for the port to be free. Returns whether it exited on SIGTERM.
    ///
    /// Errors: the port is still taken afterwards.
    pub async fn stop(mut self, timeout: Duration) -> Result<bool> {
        let graceful = stop_inner(&mut self, timeout).await?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while !procfs::listening_pids(self.port).is_empty() {
            if Instant::now() >= deadline {
                bail!(
                    "port {} still has a listener after stopping the server",
                    self.port
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(graceful)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_specs_parse() {
        let t = TargetSpec::parse("hearth-queue=http://127.0.0.1:3100").unwrap();
        assert_eq!(t.name, "hearth-queue");
        assert_eq!(t.url.port, 3100);
        assert_eq!(t.cmd, None);
        let t = TargetSpec::parse(
            "q=http://127.0.0.1:3100,cmd=hearth serve --bind 127.0.0.1:{port} --database {db} --fanout queue",
        )
        .unwrap();
        assert_eq!(
            t.cmd.as_deref(),
            Some("hearth serve --bind 127.0.0.1:{port} --database {db} --fanout queue")
        );
        assert!(TargetSpec::parse("nourl").is_err());
        assert!(TargetSpec::parse("=http://x").is_err());
        assert!(TargetSpec::parse("a=https://x").is_err());
    }

    #[test]
    fn commands_render_and_pin() {
        let c = render_command(
            "serve --bind 127.0.0.1:{port} --database {db}",
            3100,
            Path::new("/t/db.sqlite3"),
        );
        assert_eq!(c, "serve --bind 127.0.0.1:3100 --database /t/db.sqlite3");
        assert_eq!(shell_line(&c, Some("0")), format!("exec taskset -c 0 {c}"));
        assert_eq!(shell_line("x", None), "exec x");
    }

    #[test]
    fn fresh_copies_drop_stale_sidecars() {
        let dir = std::env::temp_dir().join(format!("loadgen-db-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let seed = dir.join("seed.sqlite3");
        std::fs::write(&seed, b"seed-bytes").unwrap();
        let cells = dir.join("cells");
        std::fs::create_dir_all(&cells).unwrap();
        std::fs::write(cells.join("db.sqlite3-wal"), b"stale").unwrap();
        std::fs::write(cells.join("db.sqlite3-shm"), b"stale").unwrap();
        let copy = fresh_db_copy(&seed, &cells, "db.sqlite3").unwrap();
        assert_eq!(std::fs::read(&copy).unwrap(), b"seed-bytes");
        assert!(!cells.join("db.sqlite3-wal").exists());
        assert!(!cells.join("db.sqlite3-shm").exists());
        assert!(seed_sidecars(&seed).is_empty());
        std::fs::write(dir.join("seed.sqlite3-wal"), b"x").unwrap();
        assert_eq!(seed_sidecars(&seed).len(), 1);
        assert!(fresh_db_copy(&dir.join("missing"), &cells, "x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_taken_port_is_refused() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let err = ensure_port_free(port).unwrap_err().to_string();
        assert!(err.contains("stale server"), "{err}");
        drop(l);
        assert!(ensure_port_free(port).is_ok());
    }
}
