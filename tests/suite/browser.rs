//! The room page in a real browser: Debian's headless Chromium (`/usr/bin/chromium`), driven
//! by `playwright-core` (pinned in `tests/browser/package.json`) through
//! `tests/browser/live_room.mjs`, against the `hearth` binary run from an empty directory: the
//! page's scripts (Turbo, turbo-rails, `@rails/actioncable` and its own) are the ones built
//! into the binary, so no `node_modules` and no checkout are involved. Two people see a post
//! live and a typing notice; a burst of concurrent posts lands in id order; a message is
//! edited in place through its Edit link; both pages reconnect after a restart and catch up
//! (new posts, an edit, a delete); a new closed room and a direct room appear live in their
//! members' sidebars; a page without JavaScript posts by plain form. Screenshots of the two windows side by side are kept in
//! `target/artifacts/browser/`.
//!
//! Chromium must be installed (`apt-get install -y --no-install-recommends chromium`, which
//! `scripts/test` does): without it this test fails, it does not skip. The test's own npm
//! package (`playwright-core`) is installed with `npm ci` on first use.

use std::path::{Path, PathBuf};
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

fn npm_ci(dir: &Path, marker: &str) {
    if !dir.join(marker).exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(dir)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm ci in {} failed", dir.display());
    }
}

fn work_dir() -> PathBuf {
    let n: u64 = rand::random();
    std::env::temp_dir().join(format!("hearth-browser-{}-{n:x}", std::process::id()))
}

#[test]
fn two_people_see_a_post_live_and_catch_up_after_a_restart() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install Debian's Chromium with \
         `apt-get install -y --no-install-recommends chromium` (scripts/test does this)"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    npm_ci(&root.join("tests/browser"), "node_modules/playwright-core");
    let artifacts = root.join("target/artifacts/browser");
    let work = work_dir();
    let output = Command::new("node")
        .arg(root.join("tests/browser/live_room.mjs"))
        .arg("--hearth")
        .arg(env!("CARGO_BIN_EXE_hearth"))
        .arg("--work")
        .arg(&work)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    let log = std::fs::read_to_string(work.join("hearth.log")).unwrap_or_default();
    assert!(
        output.status.success(),
        "the browser scenario failed:\n{stdout}\n{stderr}\n--- hearth log (tail) ---\n{}",
        log.lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    for step in [
        "LIVE-PAGES",
        "TYPING-SEEN \"Jason is typing…\"",
        "TYPING-STOPPED",
        "LIVE ",
        "COMPOSER-CLEARED",
        "ONCE-EACH",
        "ORDERED",
        "EDITED-IN-PLACE",
        "DISCONNECTED server_restart",
        "POSTED-WHILE-DISCONNECTED",
        "CAUGHT-UP-CHANGES",
        "CAUGHT-UP",
        "LIVE-AFTER-RESTART",
        "CLOSED-ROOM-LIVE",
        "DIRECT-ROOM-LIVE",
        "NO-JS-POST",
        "NO-PAGE-ERRORS NO-FOREIGN-REQUESTS",
        "OK",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(step)),
            "step {step:?} missing:\n{stdout}"
        );
    }
    for shot in ["live-message.png", "after-restart.png", "new-rooms.png"] {
        let path = artifacts.join(shot);
        let bytes = std::fs::read(&path).unwrap_or_default();
        assert!(
            bytes.starts_with(b"\x89PNG"),
            "{} is not a PNG",
            path.display()
        );
        eprintln!("screenshot: {}", path.display());
    }
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn rich_text_links_bold_code_and_a_mention_the_mentioned_see_highlighted() {
    assert!(Path::new(CHROMIUM).exists(), "{CHROMIUM} is missing");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    npm_ci(&root.join("tests/browser"), "node_modules/playwright-core");
    let artifacts = root.join("target/artifacts/browser");
    let work = work_dir();
    let output = Command::new("node")
        .arg(root.join("tests/browser/rich_text.mjs"))
        .arg("--hearth")
        .arg(env!("CARGO_BIN_EXE_hearth"))
        .arg("--work")
        .arg(&work)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    let log = std::fs::read_to_string(work.join("hearth.log")).unwrap_or_default();
    assert!(
        output.status.success(),
        "the rich-text scenario failed:\n{stdout}\n{}\n--- hearth log (tail) ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        log.lines().rev().take(30).collect::<Vec<_>>().join("\n")
    );
    for step in [
        "AUTOCOMPLETE-INSERTED",
        "RENDERED david mentioned=false",
        "RENDERED jason mentioned=true",
        "COMPOSER-CLEARED",
        "EDITED-KEEPS-RICH-TEXT",
        "NO-PAGE-ERRORS NO-FOREIGN-REQUESTS",
        "OK",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(step)),
            "step {step:?} missing:\n{stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&work);
}
