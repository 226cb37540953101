//! Rooms and the account in a real browser: Debian's headless Chromium (`/usr/bin/chromium`)
//! driven by `playwright-core` through `tests/browser/rooms_admin.mjs`, against the `hearth`
//! binary. On a phone, the menu button's dot while another room is unread (and gone once it is
//! read); the gear to the account page and its join link for a member; the new-room links left
//! out for members while only administrators create rooms; the "Everyone" switch turning a room
//! closed (members kept, one left out: gone from his sidebar live) and open again (back in his
//! sidebar live); "Delete room" asking first. Screenshots at 1280×900 and 390×844, light and
//! dark, go to `target/artifacts/browser/`. Chromium must be installed: without it this test
//! fails, it does not skip.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn rooms_and_the_account_are_managed_in_chromium() {
    let work = work_dir("rooms-admin");
    let stdout = run("rooms_admin.mjs", &work, &[]);
    assert_steps(
        &stdout,
        &[
            "DOT-SHOWN",
            "DOT-GONE",
            "GEAR",
            "PLUS-HIDDEN",
            "SWITCH-CLOSED",
            "SWITCH-OPEN",
            "DELETE-DISMISSED",
            "DELETE-ACCEPTED",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    let mut shots = Vec::new();
    for name in [
        "unread-dot",
        "sidebar-member",
        "account-member",
        "switch-on",
        "switch-off",
        "delete",
    ] {
        for size in ["1280x900", "390x844"] {
            for scheme in ["", "-dark"] {
                shots.push(format!("rooms-admin-{name}-{size}{scheme}.png"));
            }
        }
    }
    let shots: Vec<&str> = shots.iter().map(String::as_str).collect();
    assert_screenshots(&shots);
}
