//! Signing in by mail against the real SMTP server: "Email me a code" (6 digits, single use,
//! 10 minutes, wrong codes refused, the same answer and time for unknown addresses) and
//! "Forgot password" (a `generates_token_for` link that works once and dies with the password).

use std::time::{Duration, Instant};

use crate::common::{csrf_meta, form, Client, TestServer};
use crate::mail::{hearth_mailing, hearth_mailing_with, shared_smtp};

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";

async fn csrf(c: &mut Client) -> String {
    csrf_meta(&c.get("/session/new").await.body)
}

/// Asks for a code for `email` on the sign-in page's form.
pub(crate) async fn ask_code(c: &mut Client, email: &str) -> crate::common::Response {
    let token = csrf(c).await;
    let body = form(&[("email_address", email), ("authenticity_token", &token)]);
    c.post_form("/session/code", &body, &[]).await
}

/// Signs in with `code` for `email`.
pub(crate) async fn use_code(c: &mut Client, email: &str, code: &str) -> crate::common::Response {
    let token = csrf(c).await;
    let body = form(&[
        ("email_address", email),
        ("code", code),
        ("authenticity_token", &token),
    ]);
    c.post_form("/session/code/verify", &body, &[]).await
}

/// The code in the newest mail to `to` (waiting for the `n`th).
async fn code_in_mail(to: &str, n: usize) -> String {
    let smtp = shared_smtp().await;
    let got = smtp
        .wait_matching(to, "sign-in code", n, Duration::from_secs(20))
        .await;
    assert_eq!(got.len(), n, "mail {n} to {to}");
    let m = got.last().unwrap();
    let code: String = m.subject().chars().take(6).collect();
    assert!(code.bytes().all(|b| b.is_ascii_digit()), "{}", m.subject());
    assert!(m.text().contains(&code) && m.html().contains(&code));
    code
}

/// The medians (ms) of the answers to `POST /session/code` for `a` and `b`, asked in turn
/// `runs` times each (in turn, so that a load on the machine weighs on both alike).
async fn medians_ms(c: &mut Client, a: &str, b: &str, runs: usize) -> (f64, f64) {
    let token = csrf(c).await;
    let bodies = [a, b].map(|e| form(&[("email_address", e), ("authenticity_token", &token)]));
    let mut times = [Vec::with_capacity(runs), Vec::with_capacity(runs)];
    for _ in 0..runs {
        for (body, times) in bodies.iter().zip(times.iter_mut()) {
            let started = Instant::now();
            let r = c.post_form("/session/code", body, &[]).await;
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(r.status, 200);
        }
    }
    let [mut ta, mut tb] = times;
    ta.sort_by(f64::total_cmp);
    tb.sort_by(f64::total_cmp);
    (ta[runs / 2], tb[runs / 2])
}

#[tokio::test]
async fn an_emailed_code_signs_in_once_and_unknown_addresses_look_the_same() {
    let smtp = shared_smtp().await;
    let server = hearth_mailing(smtp.starttls_url(), &smtp.ca_file).await;
    let mut c = server.client();
    let page = c.get("/session/new").await.body;
    assert!(page.contains("Email me a code"), "{page}");
    assert!(
        !page.contains("Forgot password"),
        "hidden without a site address"
    );
    let known = ask_code(&mut c, "jason@example.com").await;
    let unknown = ask_code(&mut c, "nobody@example.com").await;
    assert_eq!((known.status, unknown.status), (200, 200));
    let strip = |body: &str, email: &str| {
        body.replace(email, "ADDRESS")
            .replace(&csrf_meta(body), "TOKEN")
            .lines()
            .filter(|l| !l.contains("authenticity_token"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        strip(&known.body, "jason@example.com"),
        strip(&unknown.body, "nobody@example.com")
    );
    let code = code_in_mail("jason@example.com", 1).await;
    let wrong = if code == "000000" { "000001" } else { "000000" };
    assert_eq!(
        use_code(&mut c, "jason@example.com", wrong).await.status,
        401
    );
    assert_eq!(
        use_code(&mut c, "nobody@example.com", &code).await.status,
        401
    );
    let r = use_code(&mut c, "jason@example.com", &code).await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert!(c.cookie("session_token").is_some());
    assert_eq!(c.get("/users/me/profile").await.status, 200, "signed in");
    let mut other = server.client();
    assert_eq!(
        use_code(&mut other, "jason@example.com", &code)
            .await
            .status,
        401,
        "a second use"
    );
    // An expired code (10 minutes passed, as the database sees it) is refused.
    assert_eq!(ask_code(&mut other, "jason@example.com").await.status, 200);
    let code = code_in_mail("jason@example.com", 2).await;
    sqlx::query("UPDATE sign_in_codes SET expires_at = expires_at - 600001")
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(
        use_code(&mut other, "jason@example.com", &code)
            .await
            .status,
        401
    );
    // Codes are stored as their HMAC only.
    let stored: Vec<String> = sqlx::query_scalar("SELECT code_digest FROM sign_in_codes")
        .fetch_all(&server.state.db.pool)
        .await
        .unwrap();
    assert!(stored.iter().all(|d| d.len() == 64 && *d != code));
    // Five wrong tries kill a live code.
    assert_eq!(ask_code(&mut other, "kevin@example.com").await.status, 200);
    let code = code_in_mail("kevin@example.com", 1).await;
    let wrong = if code == "999999" { "999998" } else { "999999" };
    for _ in 0..5 {
        assert_eq!(
            use_code(&mut other, "kevin@example.com", wrong)
                .await
                .status,
            401
        );
    }
    assert_eq!(
        use_code(&mut other, "kevin@example.com", &code)
            .await
            .status,
        401
    );
    // The same time within noise: the lookup and the mail happen after the answer.
    let mut timing = server.client();
    medians_ms(
        &mut timing,
        "jz@example.com",
        "no-such-person@example.com",
        5,
    )
    .await;
    let (known_ms, unknown_ms) = medians_ms(
        &mut timing,
        "jz@example.com",
        "no-such-person@example.com",
        40,
    )
    .await;
    eprintln!(
        "median answer to POST /session/code: known {known_ms:.2} ms, unknown {unknown_ms:.2} ms"
    );
    let noise = 5.0_f64.max(0.25 * known_ms.max(unknown_ms));
    assert!(
        (known_ms - unknown_ms).abs() < noise,
        "{known_ms} vs {unknown_ms}"
    );
    server.stop().await;
}

#[tokio::test]
async fn without_mail_nothing_of_it_shows_or_answers() {
    let server = TestServer::start().await;
    let mut c = server.client();
    let page = c.get("/session/new").await.body;
    assert!(!page.contains("Email me a code") && !page.contains("Forgot password"));
    assert_eq!(ask_code(&mut c, "jason@example.com").await.status, 404);
    assert_eq!(c.get("/password_reset/new").await.status, 404);
    let mut david = server.signed_in(DAVID, SECRET).await;
    let account = david.get("/account/edit").await.body;
    assert!(!account.contains("mail_settings"));
    let profile = david.get("/users/me/profile").await.body;
    assert!(!profile.contains("digest_settings"));
    server.stop().await;
}

/// Sets the account's site address as David (the administrator).
pub(crate) async fn set_site_url(server: &TestServer, david: &mut Client, hour: &str) {
    let page = david.get("/account/edit").await.body;
    assert!(page.contains("id=\"mail_settings\""), "{page}");
    let token = csrf_meta(&page);
    let body = form(&[
        ("_method", "patch"),
        ("mail[site_url]", &format!("{}/", server.origin())),
        ("mail[digest_hour]", hour),
        ("authenticity_token", &token),
    ]);
    let r = david.post_form("/account/mail", &body, &[]).await;
    assert_eq!(r.status, 302, "{}", r.body);
}

async fn ask_link(c: &mut Client, email: &str) -> String {
    let page = c.get("/password_reset/new").await;
    assert_eq!(page.status, 200);
    let token = csrf_meta(&page.body);
    let body = form(&[("email_address", email), ("authenticity_token", &token)]);
    let r = c.post_form("/password_reset", &body, &[]).await;
    assert_eq!(r.status, 200);
    r.body
}

async fn link_in_mail(server: &TestServer, to: &str, n: usize) -> String {
    let smtp = shared_smtp().await;
    let got = smtp
        .wait_matching(to, "Reset your", n, Duration::from_secs(20))
        .await;
    assert_eq!(got.len(), n);
    let text = got.last().unwrap().text().to_owned();
    let url = text
        .split_whitespace()
        .find(|w| w.contains("/password_reset/edit?token="))
        .unwrap_or_else(|| panic!("{text}"));
    url.strip_prefix(&server.origin()).unwrap().to_owned()
}

async fn reset(c: &mut Client, path: &str, password: &str) -> crate::common::Response {
    let page = c.get(path).await;
    if page.status != 200 {
        return page;
    }
    let token = csrf_meta(&page.body);
    let reset_token = crate::common::attr_after(&page.body, "name=\"token\" value=\"").unwrap();
    let body = form(&[
        ("token", &reset_token),
        ("password", password),
        ("authenticity_token", &token),
    ]);
    c.post_form("/password_reset/update", &body, &[]).await
}

#[tokio::test]
async fn a_reset_link_works_once_and_dies_when_the_password_changes() {
    let smtp = shared_smtp().await;
    let server = hearth_mailing(smtp.tls_url(), &smtp.ca_file).await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    set_site_url(&server, &mut david, "8").await;
    let mut c = server.client();
    assert!(c
        .get("/session/new")
        .await
        .body
        .contains("Forgot password?"));
    let known = ask_link(&mut c, "jz@example.com").await;
    let unknown = ask_link(&mut c, "nobody@example.com").await;
    assert_eq!(
        known.replace(&csrf_meta(&known), ""),
        unknown.replace(&csrf_meta(&unknown), "")
    );
    let first = link_in_mail(&server, "jz@example.com", 1).await;
    ask_link(&mut c, "jz@example.com").await;
    let second = link_in_mail(&server, "jz@example.com", 2).await;
    let mut jz = server.signed_in("jz@example.com", SECRET).await;
    let r = reset(&mut c, &second, "a new secret").await;
    assert_eq!(r.status, 302, "{}", r.body);
    assert_eq!(c.get("/users/me/profile").await.status, 200, "signed in");
    assert_eq!(
        jz.get("/users/me/profile").await.status,
        302,
        "other sessions ended"
    );
    // Used once: the password changed, so both links are dead now.
    for path in [&second, &first] {
        let r = c.get(path).await;
        assert_eq!(r.status, 404, "{path}");
        assert!(r.body.contains("no longer works"));
    }
    let mut again = server.client();
    assert_eq!(again.login("jz@example.com", SECRET).await.status, 401);
    assert_eq!(
        again.login("jz@example.com", "a new secret").await.status,
        302
    );
    // A tampered token is refused.
    let tampered = second.replacen("token=", "token=A", 1);
    assert_eq!(server.client().get(&tampered).await.status, 404);
    server.stop().await;
}

/// `POST /password_reset` for `email`, whatever the answer.
async fn post_reset(c: &mut Client, email: &str) -> crate::common::Response {
    let token = csrf_meta(&c.get("/password_reset/new").await.body);
    let body = form(&[("email_address", email), ("authenticity_token", &token)]);
    c.post_form("/password_reset", &body, &[]).await
}

#[tokio::test]
async fn codes_and_reset_links_are_under_the_sign_in_limit_and_refused_ones_send_nothing() {
    const CODER: &str = "user8@example.com";
    const RESETTER: &str = "user9@example.com";
    let smtp = shared_smtp().await;
    let server = hearth_mailing_with(smtp.starttls_url(), &smtp.ca_file, |c| {
        c.login_rate_limit = 4;
    })
    .await;
    // Every request comes from 127.0.0.1: David's sign-in is the first of the 4 attempts.
    let mut david = server.signed_in(DAVID, SECRET).await;
    set_site_url(&server, &mut david, "8").await;
    let mut c = server.client();
    assert_eq!(post_reset(&mut c, RESETTER).await.status, 200);
    assert_eq!(ask_code(&mut c, CODER).await.status, 200);
    assert_eq!(ask_code(&mut c, CODER).await.status, 200);
    // Past the limit: codes, links and tries of a code are refused with 429 and Retry-After.
    for refused in [
        ask_code(&mut c, CODER).await,
        post_reset(&mut c, RESETTER).await,
        use_code(&mut c, CODER, "123456").await,
    ] {
        assert_eq!(refused.status, 429, "{}", refused.body);
        assert!(refused.retry_after() >= 1);
    }
    // The SMTP server got the letters of the answered requests, and none of the refused ones.
    let codes = smtp
        .wait_matching(CODER, "sign-in code", 2, Duration::from_secs(20))
        .await;
    let links = smtp
        .wait_matching(RESETTER, "Reset your", 1, Duration::from_secs(20))
        .await;
    assert_eq!((codes.len(), links.len()), (2, 1));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let codes = smtp.wait_matching(CODER, "", 0, Duration::ZERO).await;
    let links = smtp.wait_matching(RESETTER, "", 0, Duration::ZERO).await;
    assert_eq!((codes.len(), links.len()), (2, 1), "nothing more");
    server.stop().await;
}
