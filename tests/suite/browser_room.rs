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

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn the_room_page_menu_paging_times_and_posting_work_in_a_browser() {
    let stdout = run("room_page.mjs", &work_dir("room-page"), &[]);
    assert_steps(
        &stdout,
        &[
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
        ],
    );
    assert_screenshots(&[
        "room-1280x900.png",
        "room-390x844.png",
        "room-menu-1280x900.png",
        "room-permalink-1280x900.png",
    ]);
}

/// The room page with stock `@rails/actioncable` and Turbo gets everything it missed after a
/// dropped socket and after a restart, once and without a reload: the room's post and boost,
/// a new room in the sidebar and its unread mark; a catch-up answered 503 is tried again
/// (`tests/browser/reliable_room.mjs`, docs/reliable-delivery.md).
#[test]
fn the_room_page_catches_up_every_stream_after_a_drop_and_a_restart() {
    let stdout = run("reliable_room.mjs", &work_dir("reliable-room"), &[]);
    assert_steps(
        &stdout,
        &[
            "SETTLED",
            "DROPPED",
            "ACTED-WHILE-AWAY",
            "CAUGHT-UP-AFTER-A-DROP",
            "RESTARTED",
            "CAUGHT-UP-AFTER-A-RESTART",
            "LIVE-AGAIN",
            "CAUGHT-UP-AFTER-A-FAILED-CATCH-UP",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
}
