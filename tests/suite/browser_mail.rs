//! Signing in by mail in a real browser (`tests/browser/mail.mjs`, Debian's headless Chromium
//! driven by `playwright-core`, against the `hearth` binary) with the real SMTP server of
//! `tests/smtp/server.py`: the account page's mail panel and its test e-mail, "Email me a code"
//! to All Talk, the profile's digest time zone filled from the browser, and "Forgot password?"
//! through the e-mailed link, at 1280×900 and 390×844, light and dark (screenshots in
//! `target/artifacts/browser/`).

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};
use crate::mail::shared_smtp;

#[tokio::test]
async fn codes_and_reset_links_sign_people_in() {
    let smtp = shared_smtp().await;
    let work = work_dir("mail");
    std::fs::create_dir_all(&work).unwrap();
    let url = smtp.starttls_url();
    let (ca, dir) = (smtp.ca_file.clone(), smtp.dir.clone());
    let stdout = tokio::task::spawn_blocking(move || {
        run(
            "mail.mjs",
            &work,
            &[
                "--smtp-url".as_ref(),
                url.as_ref(),
                "--smtp-ca".as_ref(),
                ca.as_os_str(),
                "--maildir".as_ref(),
                dir.as_os_str(),
            ],
        )
    })
    .await
    .unwrap();
    assert_steps(
        &stdout,
        &[
            "TEST-EMAIL 1280x900",
            "TEST-EMAIL 390x844",
            "CODE-SIGN-IN 1280x900",
            "DIGEST-TIME-ZONE 1280x900",
            "RESET-SIGN-IN 1280x900",
            "RESET-LINK-DEAD 1280x900",
            "CODE-SIGN-IN 390x844",
            "DIGEST-TIME-ZONE 390x844",
            "RESET-SIGN-IN 390x844",
            "RESET-LINK-DEAD 390x844",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    let mut shots = Vec::new();
    for name in ["account", "sign-in", "code", "digest", "reset"] {
        for size in ["1280x900", "390x844"] {
            for scheme in ["light", "dark"] {
                shots.push(format!("mail-{name}-{size}-{scheme}.png"));
            }
        }
    }
    let shots: Vec<&str> = shots.iter().map(String::as_str).collect();
    assert_screenshots(&shots);
}
