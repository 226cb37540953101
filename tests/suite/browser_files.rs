//! Files in a real browser: Debian's headless Chromium (`/usr/bin/chromium`) driven by
//! `playwright-core` through `tests/browser/files.mjs`, against the `hearth` binary. A PNG of
//! 2400×1600 picked in David's composer goes up through `@rails/activestorage`'s direct upload;
//! Jason, watching the room, gets the message and its thumbnail by broadcast (at most 1200×800,
//! smaller than the original); the lightbox shows the original. Screenshots at 1280×900 and
//! 390×844 go to `target/artifacts/browser/`. Chromium must be installed: without it this test
//! fails, it does not skip.

use std::path::{Path, PathBuf};
use std::process::Command;

#[test]
fn a_file_picked_in_chromium_is_uploaded_directly_and_broadcast_with_its_thumbnail() {
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "/usr/bin/chromium is missing: apt-get install -y --no-install-recommends chromium"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let browser_dir = root.join("tests/browser");
    if !browser_dir.join("node_modules/playwright-core").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&browser_dir)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm ci failed");
    }
    let n: u64 = rand::random();
    let work: PathBuf =
        std::env::temp_dir().join(format!("hearth-files-{}-{n:x}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let image = work.join("mountains.png");
    let img = image::RgbImage::from_fn(2400, 1600, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x ^ y) % 256) as u8])
    });
    img.save(&image).unwrap();
    let artifacts = root.join("target/artifacts/browser");
    let output = Command::new("node")
        .arg(browser_dir.join("files.mjs"))
        .arg("--hearth")
        .arg(env!("CARGO_BIN_EXE_hearth"))
        .arg("--work")
        .arg(&work)
        .arg("--artifacts")
        .arg(&artifacts)
        .arg("--image")
        .arg(&image)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    let log = std::fs::read_to_string(work.join("hearth.log")).unwrap_or_default();
    let tail: Vec<&str> = log.lines().rev().take(30).collect();
    assert!(
        output.status.success(),
        "the browser scenario failed:\n{stdout}\n{}\n--- hearth log (tail) ---\n{}",
        String::from_utf8_lossy(&output.stderr),
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
    for step in [
        "ATTACH-BUTTON",
        "THUMBNAIL-BROADCAST",
        "DIRECT-UPLOAD",
        "LIGHTBOX",
        "NO-PAGE-ERRORS",
        "OK",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(step)),
            "step {step:?} missing:\n{stdout}"
        );
    }
    for shot in [
        "files-1280x900.png",
        "files-390x844.png",
        "files-lightbox-1280x900.png",
    ] {
        let bytes = std::fs::read(artifacts.join(shot)).unwrap_or_default();
        assert!(bytes.starts_with(b"\x89PNG"), "{shot} is not a PNG");
    }
    let _ = std::fs::remove_dir_all(&work);
}
