//! Running a browser scenario: a `tests/browser/<name>.mjs` script that drives Debian's
//! headless Chromium (`/usr/bin/chromium`) with `playwright-core` against the `hearth` binary,
//! printing one line per step it saw hold (`STEP detail…`) and `OK` at the end.
//!
//! Chromium must be installed (`apt-get install -y --no-install-recommends chromium`, which
//! `scripts/test` does): without it a scenario fails, it does not skip. The scripts' own npm
//! package (`playwright-core`, pinned in `tests/browser/package.json`) is installed with
//! `npm ci` on first use.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the scenarios find Chromium.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// `tests/browser/`.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// Where scenarios leave their screenshots: `target/artifacts/browser/`.
pub fn artifacts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/artifacts/browser")
}

/// A fresh, not yet created directory under the temp dir for one scenario's server.
pub fn work_dir(name: &str) -> PathBuf {
    let n: u64 = rand::random();
    std::env::temp_dir().join(format!("hearth-{name}-{}-{n:x}", std::process::id()))
}

/// Runs `tests/browser/<script>` with `--hearth <binary> --work <work> --artifacts <dir>` and
/// `extra`, prints what it printed and returns it. Panics, with its output and the tail of the
/// server's log (`<work>/hearth.log`), when it does not exit with success. Removes `work`.
pub fn run(script: &str, work: &Path, extra: &[&OsStr]) -> String {
    ensure_ready();
    let dir = scripts_dir();
    let output = Command::new("node")
        .arg(dir.join(script))
        .arg("--hearth")
        .arg(env!("CARGO_BIN_EXE_hearth"))
        .arg("--work")
        .arg(work)
        .arg("--artifacts")
        .arg(artifacts())
        .args(extra)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    println!("{stdout}");
    let log = std::fs::read_to_string(work.join("hearth.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(40).collect();
    assert!(
        output.status.success(),
        "the browser scenario {script} failed:\n{stdout}\n{}\n--- hearth log (tail) ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
    let _ = std::fs::remove_dir_all(work);
    stdout
}

/// Panics unless Chromium is installed; installs the scripts' npm package when it is missing.
pub fn ensure_ready() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install Debian's Chromium with \
         `apt-get install -y --no-install-recommends chromium` (scripts/test does this)"
    );
    let dir = scripts_dir();
    if !dir.join("node_modules/playwright-core").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm ci in {} failed", dir.display());
    }
}

/// Asserts that a line of `stdout` starts with each of `steps`.
pub fn assert_steps(stdout: &str, steps: &[&str]) {
    for step in steps {
        assert!(
            stdout.lines().any(|l| l.starts_with(step)),
            "step {step:?} missing:\n{stdout}"
        );
    }
}

/// Asserts that each of `shots` in [`artifacts`] is a PNG file.
pub fn assert_screenshots(shots: &[&str]) {
    for shot in shots {
        let path = artifacts().join(shot);
        let bytes = std::fs::read(&path).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "{} is not a PNG",
            path.display()
        );
        eprintln!("screenshot: {}", path.display());
    }
}
