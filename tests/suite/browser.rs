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
//! How a scenario runs (Chromium, `playwright-core`, the server's log on failure):
//! [`crate::common::browser`].

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn two_people_see_a_post_live_and_catch_up_after_a_restart() {
    let stdout = run("live_room.mjs", &work_dir("browser"), &[]);
    assert_steps(
        &stdout,
        &[
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
        ],
    );
    assert_screenshots(&["live-message.png", "after-restart.png", "new-rooms.png"]);
}

#[test]
fn rich_text_links_bold_code_and_a_mention_the_mentioned_see_highlighted() {
    let stdout = run("rich_text.mjs", &work_dir("rich-text"), &[]);
    assert_steps(
        &stdout,
        &[
            "AUTOCOMPLETE-INSERTED",
            "RENDERED david mentioned=false",
            "RENDERED jason mentioned=true",
            "COMPOSER-CLEARED",
            "EDITED-KEEPS-RICH-TEXT",
            "NO-PAGE-ERRORS NO-FOREIGN-REQUESTS",
            "OK",
        ],
    );
}

/// The look (`tests/browser/look.mjs`): screenshots of the room, profile, settings and search
/// pages at 1280×900 and 390×844, light and dark, into `target/artifacts/browser/`; by element
/// boxes at 390 and 360 px nothing overflows sideways, the message column is at least 90 % of
/// the width, the sidebar is behind the menu button and touch targets are at least 44 px; on a
/// phone the composer's toolbar shows only by its button (aria-expanded, aria-controls, Enter
/// and Space), above the editor without covering the newest message, and Send stays where it
/// is when the editor loses focus (the click posts); a desktop shows the toolbar on focus; the
/// dark pages' background is dark; the bell cycles as Campfire's; `/webmanifest` lists PNG
/// icons of 192 and 512 px and Chromium registers the service worker.
#[test]
fn the_look_at_desktop_and_phone_sizes_light_and_dark() {
    let stdout = run("look.mjs", &work_dir("look"), &[]);
    for step in [
        "DARK-IS-DARK",
        "NO-OVERFLOW-390",
        "PHONE-COLUMN",
        "PHONE-TARGETS",
        "PHONE-SIDEBAR",
        "PHONE-TOOLBAR-SHOWN",
        "PHONE-SEND-AFTER-BLUR",
        "PHONE-TOOLBAR-KEYS",
        "NO-OVERFLOW-360",
        "DESKTOP-SIDEBAR",
        "DESKTOP-TOOLBAR",
        "BELL mentions → everything → nothing → invisible → mentions",
        "MANIFEST",
        "SERVICE-WORKER",
        "NO-PAGE-ERRORS",
        "OK",
    ] {
        assert!(stdout.contains(step), "step {step:?} missing:\n{stdout}");
    }
}
