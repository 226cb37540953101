//! `/play` sounds in a real browser: Debian's headless Chromium (`/usr/bin/chromium`) driven by
//! `playwright-core` through `tests/browser/sounds.mjs`, against the `hearth` binary. David
//! (1280×900) posts `/play 56k`, `greatjob`, `trombone` and a few more; Jason (390×844) reads
//! them live. The pictures' and lines' boxes are checked, both pages' Web Audio is watched
//! (the sound named is the one played, and it made oscillators or noise), every name of
//! [`hearth::sounds::SOUNDS`] has a recipe in `assets/js/sounds.js` that is audible when
//! rendered offline, and an unknown name stays text. Screenshots at both sizes, light and dark,
//! go to `target/artifacts/browser/`.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn play_draws_every_sound_and_synthesizes_it_in_chromium() {
    let work = work_dir("sounds");
    std::fs::create_dir_all(&work).unwrap();
    let names = hearth::sounds::SOUNDS
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(",");
    let stdout = run("sounds.mjs", &work, &["--names".as_ref(), names.as_ref()]);
    assert_steps(
        &stdout,
        &[
            "EVERY-NAME-HAS-A-RECIPE",
            "PLAY-56K",
            "PLAY-GREATJOB",
            "PLAY-TROMBONE",
            "PLAY-MORE",
            "CLICK-REPLAYS",
            "UNKNOWN-IS-TEXT",
            "PICTURES",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    assert_screenshots(&[
        "sounds-1280x900-light.png",
        "sounds-390x844-light.png",
        "sounds-1280x900-dark.png",
        "sounds-390x844-dark.png",
        "sounds-pictures-1280x900-light.png",
        "sounds-pictures-1280x900-dark.png",
    ]);
}
