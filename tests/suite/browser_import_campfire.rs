//! A Campfire team in a real browser after `hearth import campfire`: the storage/ directory
//! built by Ruby's ActiveRecord (`tests/ruby/campfire_storage.rb`) is imported with the real
//! binary, then Debian's headless Chromium (`/usr/bin/chromium`), driven by `playwright-core`
//! through `tests/browser/import_campfire.mjs`, signs Ada in with her Campfire password and sees
//! her rooms, the unread mark, a permalink's message with its mention and boosts, and Campfire's
//! thumbnail of a photo. Screenshots at 1280×900 and 390×844 go to `target/artifacts/browser/`.
//! Chromium must be installed: without it this test fails, it does not skip.

use std::ffi::OsStr;

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn a_campfire_team_signs_in_and_reads_in_chromium() {
    let fixture = work_dir("import-campfire-fixture");
    let campfire = fixture.join("campfire");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/ruby/campfire_storage.rb"
    );
    let output = std::process::Command::new("ruby")
        .arg(script)
        .arg(&campfire)
        .arg(crate::common::child::SECRET_KEY_BASE)
        .output()
        .expect("ruby runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let facts = String::from_utf8(output.stdout).unwrap();

    let work = work_dir("import-campfire");
    let imported = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["import", "campfire", "--quiet", "--from"])
        .arg(&campfire)
        .arg("--database")
        .arg(work.join("hearth.sqlite3"))
        .arg("--data-dir")
        .arg(&work)
        .env_remove("HEARTH_DATABASE")
        .env_remove("HEARTH_DATA_DIR")
        .env_remove("HEARTH_STORAGE_ROOT")
        .output()
        .unwrap();
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );

    let stdout = run(
        "import_campfire.mjs",
        &work,
        &[OsStr::new("--facts"), OsStr::new(facts.trim())],
    );
    assert_steps(
        &stdout,
        &[
            "SIGNED-IN",
            "ROOMS",
            "UNREAD",
            "MENTION",
            "BOOSTS",
            "THUMBNAIL",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    let mut shots = Vec::new();
    for name in ["landed", "permalink", "thumbnail"] {
        for size in ["1280x900", "390x844"] {
            shots.push(format!("import-campfire-{name}-{size}.png"));
        }
    }
    let shots: Vec<&str> = shots.iter().map(String::as_str).collect();
    assert_screenshots(&shots);
    let _ = std::fs::remove_dir_all(&fixture);
}
