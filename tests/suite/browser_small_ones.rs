//! The small things of the room in a real browser (`tests/browser/small_ones.mjs`, Debian's
//! headless Chromium driven by `playwright-core`, against the `hearth` binary): Share buttons on
//! file chips and in the lightbox where Web Share exists (and not elsewhere), the install steps
//! for an iPhone's Safari and for Firefox, the skip-to-content link, the globe of translated
//! prompts, the page for browsers too old, and the first run's picture. Screenshots at 1280×900
//! and 390×844, light and dark, go to `target/artifacts/browser/`. Chromium must be installed:
//! without it this test fails, it does not skip.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn share_install_steps_skip_link_globe_old_browsers_and_the_first_run_picture() {
    let work = work_dir("small-ones");
    std::fs::create_dir_all(&work).unwrap();
    let image = work.join("photo.png");
    let img = image::RgbImage::from_fn(320, 240, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x ^ y) % 256) as u8])
    });
    img.save(&image).unwrap();
    let stdout = run(
        "small_ones.mjs",
        &work,
        &["--image".as_ref(), image.as_os_str()],
    );
    assert_steps(
        &stdout,
        &[
            "SHARE-CHIP",
            "SHARE-LIGHTBOX",
            "SKIP-LINK-WIDE",
            "SKIP-LINK ",
            "SHARE-HIDDEN",
            "INSTALL-IPHONE",
            "SKIP-LINK-PAGE",
            "INSTALL-FIREFOX",
            "GLOBE 1280",
            "GLOBE 390",
            "TOO-OLD 1280",
            "TOO-OLD 390",
            "FIRST-RUN-AVATAR",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    let mut shots = Vec::new();
    for name in [
        "lightbox-1280x900",
        "skip-link-1280x900",
        "skip-link-390x844",
        "room-390x844",
        "install-iphone-390x844",
        "install-firefox-1280x900",
        "globe-1280x900",
        "globe-390x844",
        "too-old-1280x900",
        "too-old-390x844",
        "first-run-390x844",
    ] {
        for scheme in ["light", "dark"] {
            shots.push(format!("small-ones-{name}-{scheme}.png"));
        }
    }
    assert_screenshots(&shots.iter().map(String::as_str).collect::<Vec<_>>());
}
