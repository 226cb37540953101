//! Boosts added in place, the "Saved" notice and the author's bio in a real browser: Debian's
//! headless Chromium (`/usr/bin/chromium`) driven by `playwright-core` through
//! `tests/browser/boosts_inline.mjs`, against the `hearth` binary with the seed. On a permalink
//! to an old message of the main room, the menu's "+" and then the "Add a boost" button beside
//! its boosts open the form inside that message (boxes measured, the focus in the field),
//! Escape closes it, a sent boost shows on the message for the booster and, by broadcast, for
//! another person, and the booster's page keeps its URL and scroll; the profile's notice shows once; an author's name has "name – bio" as its
//! title. Screenshots at 1280×900 and 390×844, light and dark, go to
//! `target/artifacts/browser/`. Chromium must be installed: without it this test fails, it does
//! not skip.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn a_boost_is_added_in_place_on_a_permalink_and_the_notice_and_bio_show() {
    let stdout = run("boosts_inline.mjs", &work_dir("boosts-inline"), &[]);
    assert_steps(
        &stdout,
        &[
            "ROW-ONLY-WITH-BOOSTS",
            "MENU-OPENS-FORM",
            "ESCAPE-CLOSES",
            "BOOST-POSTED",
            "ADD-BUTTON",
            "SECOND-BOOST",
            "PAGE-KEPT-ITS-PLACE",
            "LIVE-FOR-OTHERS",
            "PHONE-FORM",
            "BIO-TITLE",
            "NOTICE-ONCE",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    assert_screenshots(&[
        "boosts-1280x900.png",
        "boosts-1280x900-dark.png",
        "boosts-390x844.png",
        "boosts-390x844-dark.png",
        "boosts-notice-1280x900.png",
        "boosts-notice-1280x900-dark.png",
    ]);
}
