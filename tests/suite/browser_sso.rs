//! Single sign-on in a real browser: Debian's headless Chromium driven by `playwright-core`
//! through `tests/browser/sso.mjs`, against the `hearth` binary and a real OpenID Connect
//! provider (npm's `oidc-provider`, `tests/node/oidc_provider.mjs`) on loopback. An
//! administrator names the provider and allows two domains on the account page; a new person
//! signs in through the provider's login form and lands in All Talk; a person of another
//! domain gets the refusal page. The sign-in and refusal pages are shot at both sizes, light
//! and dark, into `target/artifacts/browser/`.

use crate::common::browser::{assert_screenshots, assert_steps, run, work_dir};

#[test]
fn a_new_person_signs_in_through_the_provider_and_an_outsider_is_refused() {
    let work = work_dir("sso");
    std::fs::create_dir_all(&work).unwrap();
    let stdout = run("sso.mjs", &work, &[]);
    assert_steps(
        &stdout,
        &[
            "SETTINGS-SAVED",
            "NEW-PERSON-IN-ALL-TALK",
            "OUTSIDE-REFUSED",
            "NO-PAGE-ERRORS",
            "OK",
        ],
    );
    let mut shots = Vec::new();
    for page in ["sign-in", "refused"] {
        for size in ["1280x900", "390x844"] {
            for scheme in ["light", "dark"] {
                shots.push(format!("sso-{page}-{size}-{scheme}.png"));
            }
        }
    }
    assert_screenshots(&shots.iter().map(String::as_str).collect::<Vec<_>>());
}
