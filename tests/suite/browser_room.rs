//! The room page's messages in a real browser: Debian's headless Chromium (`/usr/bin/chromium`)
//! driven by `playwright-core` through `tests/browser/room_page.mjs`, against the `hearth`
//! binary run from an empty directory (the page's scripts are the ones built into it). The
//! main room is filled to 500 messages; then the "…" menu opens inside the window (its box
//! measured), Reply quotes a message into the composer, Copy link puts the permalink on the
//! clipboard, Edit is offered on one's own messages only (every message for an administrator),
//! a permalink to the room's 2nd message lands on it, scrolling to the top loads older
//! messages by itself, times are written in the page's time zone (emulated), the day
//! separators and threads show, a post shows pending at once and a failed one is marked with a
//! retry, the composer is disabled while disconnected, `/play` draws its sound, Up arrow edits
//! one's last message. Screenshots at 1280×900 and 390×844 go to `target/artifacts/browser/`.
//!
//! Chromium must be installed (`apt-get install -y --no-install-recommends chromium`): without
//! it this test fails, it does not skip. `playwright-core` is installed with `npm ci` on first
//! use.

use std::path::{Path, PathBuf};
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

fn work_dir() -> PathBuf {
    let n: u64 = rand::random();
    std::env::temp_dir().join(format!("hearth-room-page-{}-{n:x}", std::process::id()))
}

#[test]
fn the_room_page_menu_paging_times_and_posting_work_in_a_browser() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: install Debian's Chromium with \
         `apt-get install -y --no-install-recommends chromium`"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let browser_dir = root.join("tests/browser");
    if !browser_dir.join("node_modules/playwright-core").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&browser_dir)
            .status()
            .expect("npm runs");
        assert!(
            status.success(),
            "npm ci in {} failed",
            browser_dir.display()
        );
    }
    let artifacts = root.join("target/artifacts/browser");
    let work = work_dir();
    let output = Command::new("node")
        .arg(browser_dir.join("room_page.mjs"))
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
    let tail: Vec<&str> = log.lines().rev().take(40).collect();
    assert!(
        output.status.success(),
        "the browser scenario failed:\n{stdout}\n{stderr}\n--- hearth log (tail) ---\n{}",
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
    for step in [
        "FILLED 500",
        "MENU-IN-VIEWPORT",
        "MENU-ESC-CLOSES",
        "REPLY-QUOTED",
        "COPY-LINK",
        "EDIT-OWN-ONLY",
        "EDIT-ADMIN-ALL",
        "UP-ARROW-EDITS",
        "PERMALINK-LANDS",
        "SCROLL-LOADS-NEWER",
        "JUMP-TO-NEWEST",
        "SCROLL-LOADS-OLDER",
        "TIME-ZONE",
        "DAY-SEPARATOR",
        "THREADED",
        "PENDING-THEN-SERVER",
        "PLAY-SOUND",
        "EMOJI-LARGE",
        "FAILED-THEN-RETRIED",
        "COMPOSER-DISABLED-OFFLINE",
        "COMPOSER-ENABLED-AFTER-CATCH-UP",
        "SIGN-IN-RETURNS",
        "SEARCH-NAMES-ROOM",
        "NO-PAGE-ERRORS",
        "OK",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(step)),
            "step {step:?} missing:\n{stdout}"
        );
    }
    for shot in [
        "room-1280x900.png",
        "room-390x844.png",
        "room-menu-1280x900.png",
        "room-permalink-1280x900.png",
    ] {
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
