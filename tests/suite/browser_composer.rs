//! The composer in a real browser: Debian's headless Chromium (`/usr/bin/chromium`) driven by
//! `playwright-core` through `tests/browser/composer.mjs`, against the `hearth` binary.
//!
//! On a desktop the composer has the focus when a room opens (from the sidebar, or by a Turbo
//! visit) and after sending; Enter sends and Shift+Enter starts a new line. On a touch device
//! the room opens without the focus there, Enter starts a new line and posts nothing, and the
//! Send button sends. Picked, pasted and dropped files wait above the field until Send, each
//! removable; Send posts the typed text and each remaining file as its own message, and nothing
//! of a removed file; a file whose upload is refused says so and waits for the next Send.
//! Screenshots of the waiting files at 1280×900 and 390×844, light and dark, go to
//! `target/artifacts/browser/`. Chromium must be installed: without it this test fails,
//! it does not skip.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn the_composer_keeps_the_focus_sends_by_key_or_button_and_holds_files_until_send() {
    let work = work_dir("composer");
    std::fs::create_dir_all(&work).unwrap();
    let image = work.join("photo.png");
    let img = image::RgbImage::from_fn(640, 400, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 160])
    });
    img.save(&image).unwrap();
    let stdout = run(
        "composer.mjs",
        &work,
        &["--image".as_ref(), image.as_os_str()],
    );
    assert_steps(
        &stdout,
        &[
            "FOCUS-DESKTOP",
            "FOCUS-ROOM-SWITCH",
            "FOCUS-TURBO-VISIT",
            "DESKTOP-ENTER",
            "FOCUS-AFTER-SEND-BUTTON",
            "TOUCH-NO-FOCUS",
            "TOUCH-ENTER-NEWLINE",
            "TOUCH-SEND-BUTTON",
            "STAGED",
            "REMOVED",
            "SENT-TEXT-AND-FILE",
            "PASTE-STAGED",
            "DROP-STAGED",
            "NOT-SENT-WAITS",
            "FILES-ALONE-SENT",
            "PHONE-STAGED",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    assert_screenshots(&[
        "composer-staged-1280x900-light.png",
        "composer-staged-1280x900-dark.png",
        "composer-staged-390x844-light.png",
        "composer-staged-390x844-dark.png",
    ]);
}
