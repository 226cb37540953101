//! The real `hearth` binary as a child process, with its output captured.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::Client;

pub const SECRET_KEY_BASE: &str =
    "5f1e0c7a9b3d2e4f6a8c0b1d3e5f7a9c2b4d6e8f0a1c3e5b7d9f2a4c6e8b0d1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c";
pub const DAVID: &str = "david@example.com";
pub const PASSWORD: &str = "secret123456";

/// `setpriv` of util-linux, which sets the parent-death signal and runs the command in the
/// same process (so the child's pid, signals and exit status stay the server's own).
const SETPRIV: &str = "/usr/bin/setpriv";

/// A command running the `hearth` binary that dies with the thread that started it: under
/// `setpriv --pdeathsig KILL` (Linux's `PR_SET_PDEATHSIG`, set between fork and exec by a
/// program made for it, as the tests may not use `unsafe`), so a test process that is killed
/// (a timeout, a Ctrl-C, `SIGKILL`) leaves no server behind; `kill_on_drop` covers a test that
/// ends. Without `setpriv`, the binary itself.
///
/// The binary is the one cargo built for the tests, or the one `HEARTH_TEST_BIN` names: a
/// release build, or an earlier build for a same-run comparison (e.g. the stress test's
/// figures before and after a change).
pub fn hearth_command() -> Command {
    let built = env!("CARGO_BIN_EXE_hearth");
    let bin = std::env::var_os("HEARTH_TEST_BIN").unwrap_or_else(|| built.into());
    if Path::new(SETPRIV).exists() {
        let mut command = Command::new(SETPRIV);
        command.args(["--pdeathsig", "KILL", "--"]).arg(&bin);
        command
    } else {
        Command::new(bin)
    }
}

/// A running `hearth serve` and everything it printed.
pub struct Hearth {
    pub child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<String>>,
}

impl Hearth {
    /// Starts `hearth serve` on `dir/hearth.sqlite3` at an ephemeral port, with JSON logs, and
    /// waits for its "listening" line.
    pub async fn start(dir: &Path, extra: &[&str]) -> Self {
        Self::start_with_env(dir, extra, &[]).await
    }

    /// [`Hearth::start`] with the environment variables `env` set too.
    pub async fn start_with_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = hearth_command()
            .arg("serve")
            .args(["--bind", "127.0.0.1:0"])
            .arg("--database")
            .arg(dir.join("hearth.sqlite3"))
            .arg("--data-dir")
            .arg(dir)
            .args([
                "--seed-users",
                "20",
                "--login-rate-limit",
                "0",
                "--post-rate-limit",
                "0",
                "--log-json",
            ])
            .args(extra)
            .envs(env.iter().copied())
            .env("SECRET_KEY_BASE", SECRET_KEY_BASE)
            .env_remove("HEARTH_LOG_LEVEL")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("hearth starts");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = tokio::sync::oneshot::channel::<SocketAddr>();
        let mut tx = Some(tx);
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let out_log = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("Hearth is listening") {
                    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                    let addr = v["fields"]["address"].as_str().unwrap().parse().unwrap();
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(addr);
                    }
                }
                let mut log = out_log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let err_log = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut log = err_log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let addr = tokio::time::timeout(Duration::from_secs(60), rx)
            .await
            .expect("hearth listens in time")
            .expect("hearth printed its address");
        Self { child, addr, log }
    }

    pub fn client(&self) -> Client {
        Client {
            addr: self.addr,
            cookies: Vec::new(),
        }
    }

    pub fn signal(&self, name: &str) {
        let pid = self.child.id().expect("still running");
        let status = std::process::Command::new("kill")
            .args([&format!("-{name}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit; returns its exit code (None: killed by a signal).
    pub async fn wait(&mut self, within: Duration) -> Option<i32> {
        tokio::time::timeout(within, self.child.wait())
            .await
            .expect("hearth exits in time")
            .unwrap()
            .code()
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The server's peak resident memory so far (`VmHWM` of `/proc/<pid>/status`), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        let pid = self.child.id().expect("still running");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc status")
    }
}
