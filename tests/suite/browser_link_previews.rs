//! Link previews in a real browser (`tests/browser/link_previews.mjs`): a URL of a local page
//! with Open Graph tags pasted into David's composer is unfurled by `POST /unfurl_link` into a
//! card in the editor; Send posts it with the message, and Jason (1280×900) and Kevin (a phone,
//! 390×844) see the card under the message with the image Hearth re-encoded and serves. No
//! browser asks the page's site. Screenshots, light and dark, go to
//! `target/artifacts/browser/`. Chromium must be installed: without it this test fails.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn a_pasted_url_becomes_a_card_in_the_composer_and_under_the_message() {
    let work = work_dir("link-previews");
    std::fs::create_dir_all(&work).unwrap();
    let image = work.join("trail.png");
    let img = image::RgbImage::from_fn(1600, 900, |x, y| {
        let sky = y < 450;
        image::Rgb(if sky {
            [120, (170 + y / 10) as u8, 230]
        } else {
            [(60 + x % 40) as u8, (110 + y % 60) as u8, 70]
        })
    });
    img.save(&image).unwrap();
    let stdout = run(
        "link_previews.mjs",
        &work,
        &["--image".as_ref(), image.as_os_str()],
    );
    assert_steps(
        &stdout,
        &[
            "UNFURL-REQUEST",
            "CARD-IN-COMPOSER",
            "POSTED-WITH-CARD",
            "CARD-SHOWN jason",
            "CARD-SHOWN kevin",
            "SCREENSHOTS",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    assert_screenshots(&[
        "link-previews-composer-1280x900.png",
        "link-previews-1280x900-light.png",
        "link-previews-1280x900-dark.png",
        "link-previews-390x844-light.png",
        "link-previews-390x844-dark.png",
    ]);
}
