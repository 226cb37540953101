//! Avatars in a real browser: Debian's headless Chromium (`/usr/bin/chromium`) driven by
//! `playwright-core` through `tests/browser/avatars.mjs`, against the `hearth` binary. David
//! picks a picture on his profile page; it comes back as a 512 px square, and in All Talk it is
//! his avatar in the sidebar's footer and beside his messages, including one Jason receives by
//! broadcast (each checked by its element's box and its loaded image). Screenshots at 1280×900
//! and 390×844, light and dark, go to `target/artifacts/browser/`. Chromium must be installed:
//! without it this test fails, it does not skip.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn an_avatar_picked_on_the_profile_page_shows_in_the_sidebar_and_messages() {
    let work = work_dir("avatars");
    std::fs::create_dir_all(&work).unwrap();
    let image = work.join("david.png");
    // A face-like picture wider than tall: an orange disc with two dark eyes on teal.
    let img = image::RgbImage::from_fn(900, 700, |x, y| {
        let (dx, dy) = (x as i64 - 450, y as i64 - 350);
        let eye = |cx: i64| (x as i64 - cx).pow(2) + (y as i64 - 300).pow(2) < 30 * 30;
        if eye(390) || eye(510) {
            image::Rgb([30, 30, 40])
        } else if dx * dx + dy * dy < 300 * 300 {
            image::Rgb([240, 150, 60])
        } else {
            image::Rgb([30, 140, 150])
        }
    });
    img.save(&image).unwrap();
    let stdout = run(
        "avatars.mjs",
        &work,
        &["--image".as_ref(), image.as_os_str()],
    );
    assert_steps(
        &stdout,
        &[
            "PICK-FIELD",
            "PROFILE",
            "SIDEBAR",
            "MESSAGE-BROADCAST",
            "MESSAGES",
            "SCREENSHOT",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    assert_screenshots(&[
        "avatars-1280x900-light.png",
        "avatars-390x844-light.png",
        "avatars-1280x900-dark.png",
        "avatars-390x844-dark.png",
    ]);
}
