//! Threads in a real browser: Debian's headless Chromium (`/usr/bin/chromium`) driven by
//! `playwright-core` through `tests/browser/threads.mjs`, against the `hearth` binary with the
//! seed. "Reply in thread" opens the thread in the panel beside the room on a wide screen; a
//! reply there updates the parent's summary live in every open tab of the room; on a 390 px
//! phone the summary opens the thread as its own page; the panel closes. Screenshots at
//! 1280×900 and 390×844, light and dark, go to `target/artifacts/browser/`. The inbox: a mention
//! and a reply in a followed thread reach the other person's inbox and the badge of both their
//! tabs live; read in one tab, the other's badge goes back; the inbox page is shot too.
//! Chromium must be installed: without it this test fails, it does not skip.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn a_thread_opens_beside_the_room_and_its_summary_and_the_inbox_update_in_every_tab() {
    let stdout = run("threads.mjs", &work_dir("threads"), &[]);
    assert_steps(
        &stdout,
        &[
            "PANEL-BESIDE",
            "LIVE-IN-EVERY-TAB",
            "PHONE-OWN-PAGE",
            "PANEL-CLOSES",
            "INBOX-BADGE-LIVE",
            "INBOX-LISTS",
            "READ-CLEARS-OTHER-TAB",
            "INBOX-PHONE",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    assert_screenshots(&[
        "threads-1280x900.png",
        "threads-1280x900-dark.png",
        "threads-room-1280x900.png",
        "threads-room-1280x900-dark.png",
        "threads-390x844.png",
        "threads-390x844-dark.png",
        "inbox-1280x900.png",
        "inbox-1280x900-dark.png",
        "inbox-390x844.png",
        "inbox-390x844-dark.png",
    ]);
}
