//! Files in a real browser: Debian's headless Chromium (`/usr/bin/chromium`) driven by
//! `playwright-core` through `tests/browser/files.mjs`, against the `hearth` binary. A PNG of
//! 2400×1600 picked in David's composer goes up through `@rails/activestorage`'s direct upload;
//! Jason, watching the room, gets the message and its thumbnail by broadcast (at most 1200×800,
//! smaller than the original); the lightbox shows the original. Screenshots at 1280×900 and
//! 390×844 go to `target/artifacts/browser/`. Chromium must be installed: without it this test
//! fails, it does not skip.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn a_file_picked_in_chromium_is_uploaded_directly_and_broadcast_with_its_thumbnail() {
    let work = work_dir("files");
    std::fs::create_dir_all(&work).unwrap();
    let image = work.join("mountains.png");
    let img = image::RgbImage::from_fn(2400, 1600, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x ^ y) % 256) as u8])
    });
    img.save(&image).unwrap();
    let stdout = run("files.mjs", &work, &["--image".as_ref(), image.as_os_str()]);
    assert_steps(
        &stdout,
        &[
            "ATTACH-BUTTON",
            "THUMBNAIL-BROADCAST",
            "DIRECT-UPLOAD",
            "LIGHTBOX",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    assert_screenshots(&[
        "files-1280x900.png",
        "files-390x844.png",
        "files-lightbox-1280x900.png",
    ]);
}
