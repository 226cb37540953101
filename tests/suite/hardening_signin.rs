//! Hostile tries at signing in by mail and through single sign-on, and at the letters
//! themselves: "passwords for administrators only" slipped past through a code or a reset
//! link, codes asked for one address from many clients, a code or a reset link outliving the
//! address it was sent to, a provider's address that only Unicode case folding makes an
//! existing person's, the reset page kept in a cache, header injection through names and
//! subjects, markup in a digest, and the test letter asked for by a member.

use std::time::{Duration, SystemTime};

use hearth::rails::token_for::{password_reset_value, PASSWORD_RESET};

use crate::common::{csrf_meta, form, oidc, smtp, TestServer};
use crate::mail::{hearth_mailing, shared_smtp};
use crate::mail_sign_in::{ask_code, set_site_url, use_code};
use crate::sso::user_id;

const SECRET: &str = "secret123456";

/// A seeded Hearth with mail (the module's SMTP server) and single sign-on configured; no
/// provider runs (the settings and the password rules need none).
async fn mail_and_sso() -> TestServer {
    let smtp = shared_smtp().await;
    let port = oidc::free_port();
    TestServer::start_with(|c| {
        smtp::configure(c, smtp.starttls_url(), &smtp.ca_file);
        oidc::configure(c, port);
    })
    .await
}

async fn id_of(server: &TestServer, email: &str) -> i64 {
    user_id(server, email).await.expect(email)
}

/// Gives `email`'s person the address `to`, unique to one test: every test of the process
/// shares the SMTP server, and the seeded addresses are the same in each test's server.
async fn readdress(server: &TestServer, email: &str, to: &str) {
    sqlx::query("UPDATE users SET email_address = ? WHERE email_address = ?")
        .bind(to)
        .bind(email)
        .execute(&server.state.db.pool)
        .await
        .unwrap();
}

/// Stores a live sign-in code `code` for `user_id`, as asking for one does.
async fn plant_code(server: &TestServer, user_id: i64, code: &str) {
    let keys = server.state.outbox.mailer.keys().unwrap();
    let digest = keys.code_digest(user_id, code);
    hearth::db::sign_in_codes::issue(&server.state.db.pool, user_id, &digest)
        .await
        .unwrap();
}

async fn address_of(server: &TestServer, user_id: i64) -> String {
    sqlx::query_scalar("SELECT email_address FROM users WHERE id = ?")
        .bind(user_id)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

async fn password_digest(server: &TestServer, user_id: i64) -> String {
    hearth::db::users::password_digest(&server.state.db.pool, user_id)
        .await
        .unwrap()
        .unwrap()
}

/// A reset token for `user_id` as the letter carries one now.
async fn reset_token(server: &TestServer, user_id: i64) -> String {
    let digest = password_digest(server, user_id).await;
    let keys = server.state.outbox.mailer.keys().unwrap();
    keys.token_for.generate(
        &PASSWORD_RESET,
        user_id,
        &password_reset_value(&digest, &address_of(server, user_id).await).unwrap(),
        SystemTime::now(),
    )
}

/// A Hearth with mail and its site address set, and a live reset link for JZ.
async fn a_reset_link_for_jz() -> (TestServer, String) {
    let smtp = shared_smtp().await;
    let server = hearth_mailing(smtp.starttls_url(), &smtp.ca_file).await;
    let mut david = server.signed_in("david@example.com", SECRET).await;
    set_site_url(&server, &mut david, "8").await;
    let jz = id_of(&server, "jz@example.com").await;
    let token = reset_token(&server, jz).await;
    (server, token)
}

fn reset_path(token: &str) -> String {
    format!("/password_reset/edit?{}", form(&[("token", token)]))
}

/// Posts a new password with a reset token from a fresh client: the answer and the client.
async fn post_reset(
    server: &TestServer,
    token: &str,
    password: &str,
) -> (crate::common::Client, crate::common::Response) {
    let mut c = server.client();
    let csrf = csrf_meta(&c.get("/session/new").await.body);
    let body = form(&[
        ("token", token),
        ("password", password),
        ("authenticity_token", &csrf),
    ]);
    let r = c.post_form("/password_reset/update", &body, &[]).await;
    (c, r)
}

#[tokio::test]
async fn passwords_for_administrators_only_holds_for_codes_and_reset_links() {
    let server = mail_and_sso().await;
    let mut david = server.signed_in("david@example.com", SECRET).await;
    set_site_url(&server, &mut david, "8").await;
    let settings = hearth::db::sso::Settings {
        passwords_for_administrators_only: true,
        ..Default::default()
    };
    hearth::db::sso::save(&server.state.db.pool, &settings)
        .await
        .unwrap();
    let jason = id_of(&server, "jason@example.com").await;

    // A member's code (asked for before the setting, say) does not sign in.
    plant_code(&server, jason, "123456").await;
    let mut c = server.client();
    let r = use_code(&mut c, "jason@example.com", "123456").await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body
            .contains("Passwords are for administrators only here"),
        "{}",
        r.body
    );
    assert!(c.cookie("session_token").is_none());

    // Nor does a member's reset link set a password.
    let token = reset_token(&server, jason).await;
    let before = password_digest(&server, jason).await;
    let page = server.client().get(&reset_path(&token)).await;
    assert_eq!(page.status, 403, "{}", page.body);
    let (c, r) = post_reset(&server, &token, "a new secret").await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(c.cookie("session_token").is_none());
    assert_eq!(password_digest(&server, jason).await, before);

    // Administrators keep both.
    let david_id = id_of(&server, "david@example.com").await;
    plant_code(&server, david_id, "654321").await;
    let r = use_code(&mut server.client(), "david@example.com", "654321").await;
    assert_eq!(r.status, 302, "{}", r.body);
    let token = reset_token(&server, david_id).await;
    assert_eq!(server.client().get(&reset_path(&token)).await.status, 200);

    // And no code is mailed to a member (the same answer as for anyone).
    readdress(&server, "jason@example.com", "hs-pwoff-member@example.com").await;
    readdress(&server, "david@example.com", "hs-pwoff-admin@example.com").await;
    let mut c = server.client();
    let member = ask_code(&mut c, "hs-pwoff-member@example.com").await;
    let admin = ask_code(&mut c, "hs-pwoff-admin@example.com").await;
    assert_eq!((member.status, admin.status), (200, 200));
    let smtp = shared_smtp().await;
    let to_admin = smtp
        .wait_matching(
            "hs-pwoff-admin@example.com",
            "sign-in code",
            1,
            Duration::from_secs(20),
        )
        .await;
    assert_eq!(to_admin.len(), 1);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(smtp
        .wait_matching("hs-pwoff-member@example.com", "", 0, Duration::ZERO)
        .await
        .is_empty());
    server.stop().await;
}

#[tokio::test]
async fn codes_for_one_address_are_capped_whatever_the_client() {
    let smtp = shared_smtp().await;
    let server = hearth_mailing(smtp.starttls_url(), &smtp.ca_file).await;
    readdress(&server, "kevin@example.com", "hs-cap@example.com").await;
    // Eight asks from eight clients (each its own browser; the per-client limit is off in the
    // tests, as it would be for as many addresses).
    for _ in 0..8 {
        let r = ask_code(&mut server.client(), "hs-cap@example.com").await;
        assert_eq!(r.status, 200, "the same answer every time");
    }
    let got = smtp
        .wait_matching(
            "hs-cap@example.com",
            "sign-in code",
            8,
            Duration::from_secs(8),
        )
        .await;
    assert_eq!(
        got.len(),
        hearth::db::sign_in_codes::MAX_CODES_PER_HOUR as usize,
        "letters to one address in an hour"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_code_dies_when_the_address_it_went_to_changes() {
    let smtp = shared_smtp().await;
    let server = hearth_mailing(smtp.starttls_url(), &smtp.ca_file).await;
    let jz = id_of(&server, "jz@example.com").await;
    plant_code(&server, jz, "246810").await;
    let change = hearth::db::users::update_credentials(
        &server.state.db.pool,
        jz,
        Some("hs-moved@example.com"),
        None,
        None,
    )
    .await
    .unwrap();
    assert!(matches!(
        change,
        hearth::db::users::CredentialsChange::Done { .. }
    ));
    let r = use_code(&mut server.client(), "hs-moved@example.com", "246810").await;
    assert_eq!(r.status, 401, "{}", r.body);
    server.stop().await;
}

#[tokio::test]
async fn a_reset_link_dies_when_the_address_it_went_to_changes() {
    let (server, token) = a_reset_link_for_jz().await;
    let page = server.client().get(&reset_path(&token)).await;
    assert_eq!(page.status, 200, "the link works before: {}", page.body);
    readdress(&server, "jz@example.com", "hs-reset-moved@example.com").await;
    let page = server.client().get(&reset_path(&token)).await;
    assert_eq!(page.status, 404, "{}", page.body);
    let (c, r) = post_reset(&server, &token, "a-new-long-password").await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(c.cookie("session_token").is_none());
    server.stop().await;
}

#[tokio::test]
async fn the_reset_page_is_never_stored_and_sends_no_referrer() {
    let (server, token) = a_reset_link_for_jz().await;
    let page = server.client().get(&reset_path(&token)).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    // Nothing on it comes from another site.
    for marker in ["src=\"http", "href=\"http", "src=\"//", "href=\"//"] {
        assert!(!page.body.contains(marker), "{marker}: {}", page.body);
    }
    // The form again (a password too short) carries the token too.
    let (_, again) = post_reset(&server, &token, "short").await;
    assert_eq!(again.status, 422);
    assert_eq!(again.header("cache-control"), Some("no-store"));
    server.stop().await;
}

#[tokio::test]
async fn a_unicode_look_alike_address_does_not_take_an_account_over() {
    let port = oidc::free_port();
    let server = crate::sso::server(port).await;
    let op = crate::sso::provider(&server, port, "k1", &["k1"]).await;
    let kevin = id_of(&server, "kevin@example.com").await;
    // U+212A KELVIN SIGN lower-cases to an ASCII "k": a provider that verified this address
    // verified a mailbox that is not Kevin's.
    let login = "\u{212a}evin@example.com";
    let (_, answer) = crate::sso::sign_in(&server, &op, login).await;
    let linked: Option<i64> =
        sqlx::query_scalar("SELECT user_id FROM sso_identities WHERE subject = ?")
            .bind(format!("sub-{login}"))
            .fetch_optional(&server.state.db.pool)
            .await
            .unwrap();
    assert_ne!(linked, Some(kevin), "{} {}", answer.status, answer.body);
    let sessions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sessions WHERE user_id = ?")
        .bind(kevin)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(sessions, 0);
    // A provider's name with a right-to-left override loses it (a typed name refuses it).
    let (_, answer) =
        crate::sso::sign_in(&server, &op, "mallory\u{202e}moc.rood@example.com").await;
    assert_eq!(answer.status, 302, "{}", answer.body);
    let name: String =
        sqlx::query_scalar("SELECT name FROM users WHERE email_address LIKE 'mallory%'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    assert!(!name.contains('\u{202e}'), "{name:?}");
    server.stop().await;
}

#[tokio::test]
async fn names_and_subjects_cannot_add_headers_or_recipients() {
    let smtp = shared_smtp().await;
    let server = hearth_mailing(smtp.starttls_url(), &smtp.ca_file).await;
    let letter = hearth::mail::Letter {
        to: "hs-inject@example.net".into(),
        to_name: "Eve\r\nBcc: hs-inject-bcc@example.net".into(),
        subject: "Hello\r\nBcc: hs-inject-bcc2@example.net\r\n\r\nbody".into(),
        text: "Plain.".into(),
        html: "<p>Rich.</p>".into(),
        unsubscribe: None,
    };
    server.state.outbox.mailer.send(letter).unwrap();
    let got = smtp
        .wait_for("hs-inject@example.net", 1, Duration::from_secs(20))
        .await;
    assert_eq!(got.len(), 1);
    let m = &got[0];
    assert_eq!(m.rcpt_tos, ["hs-inject@example.net"]);
    assert!(m.header("Bcc").is_none(), "{:?}", m.headers);
    assert!(m.subject().starts_with("Hello"), "{:?}", m.headers);
    assert_eq!(m.text().trim(), "Plain.");
    // A person's name may hold line breaks (a typed name keeps them): their code still goes,
    // to them alone (a letter to such a name used to panic lettre, in the task sending it).
    readdress(&server, "jz@example.com", "hs-inject-code@example.net").await;
    sqlx::query("UPDATE users SET name = ? WHERE email_address = ?")
        .bind("Eve\r\nBcc: hs-inject-bcc3@example.net")
        .bind("hs-inject-code@example.net")
        .execute(&server.state.db.pool)
        .await
        .unwrap();
    let r = ask_code(&mut server.client(), "hs-inject-code@example.net").await;
    assert_eq!(r.status, 200);
    let got = smtp
        .wait_matching(
            "hs-inject-code@example.net",
            "sign-in code",
            1,
            Duration::from_secs(20),
        )
        .await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].rcpt_tos, ["hs-inject-code@example.net"]);
    assert!(got[0].header("Bcc").is_none(), "{:?}", got[0].headers);
    for extra in [
        "hs-inject-bcc@example.net",
        "hs-inject-bcc2@example.net",
        "hs-inject-bcc3@example.net",
    ] {
        assert!(smtp.wait_for(extra, 0, Duration::ZERO).await.is_empty());
    }
    server.stop().await;
}

#[test]
fn a_digest_shows_markup_as_text() {
    let item = hearth::letters::DigestItem {
        author: "<script>alert(1)</script>".into(),
        room: "<img src=x onerror=alert(2)>".into(),
        direct: false,
        at: "Mon 07 Dec, 09:15".into(),
        text: "<a href=\"javascript:alert(3)\">click</a>".into(),
        url: "https://chat.example.com/rooms/1/@2\"><script>".into(),
    };
    let digest = hearth::letters::Digest {
        account_name: "<b>Acme</b>",
        period: "p",
        frequency: "daily",
        items: std::slice::from_ref(&item),
        unsubscribe_url: "https://chat.example.com/digests/unsubscribe/t",
    };
    let to = hearth::letters::To {
        address: "ann@example.com",
        name: "Ann",
    };
    let letter = hearth::letters::digest(to, &digest).unwrap();
    for markup in ["<script", "<img", "<a href=\"javascript", "<b>Acme"] {
        assert!(!letter.html.contains(markup), "{markup}: {}", letter.html);
    }
}

#[tokio::test]
async fn a_member_cannot_send_the_test_letter() {
    let smtp = shared_smtp().await;
    let server = hearth_mailing(smtp.starttls_url(), &smtp.ca_file).await;
    let mut jason = server.signed_in("jason@example.com", SECRET).await;
    let csrf = csrf_meta(&jason.get("/users/me/profile").await.body);
    let body = form(&[("authenticity_token", &csrf)]);
    let r = jason
        .post_form("/account/mail/test_email", &body, &[])
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    server.stop().await;
}

/// Wrong codes sent at once are each counted before they are compared: eight at once leave
/// five tries counted and the code dead (the right code then fails too), and twenty tries
/// taken at once get the code's digest five times, never more.
#[tokio::test]
async fn wrong_codes_sent_at_once_are_compared_at_most_five_times() {
    let server = mail_and_sso().await;
    let jason = id_of(&server, "jason@example.com").await;
    plant_code(&server, jason, "123456").await;
    let guesses = (0..8).map(|i| {
        let mut c = server.client();
        async move {
            use_code(&mut c, "jason@example.com", &format!("65432{i}"))
                .await
                .status
        }
    });
    let statuses = futures_util::future::join_all(guesses).await;
    assert_eq!(statuses, vec![401; 8]);
    let counted: i64 =
        sqlx::query_scalar("SELECT failed_attempts FROM sign_in_codes WHERE user_id = ?")
            .bind(jason)
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    assert_eq!(counted, hearth::db::sign_in_codes::MAX_FAILED_ATTEMPTS);
    let mut c = server.client();
    let r = use_code(&mut c, "jason@example.com", "123456").await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(c.cookie("session_token").is_none());

    let kevin = id_of(&server, "kevin@example.com").await;
    plant_code(&server, kevin, "123456").await;
    let pool = &server.state.db.pool;
    let tries = (0..20).map(|_| hearth::db::sign_in_codes::take_try(pool, kevin));
    let taken = futures_util::future::join_all(tries).await;
    let given = taken.into_iter().filter(|t| t.as_ref().unwrap().is_some());
    assert_eq!(
        given.count(),
        hearth::db::sign_in_codes::MAX_FAILED_ATTEMPTS as usize
    );
}

/// One reset link used several times at once sets the password once: the others find the
/// link used (404) and sign nobody in.
#[tokio::test]
async fn a_reset_link_used_at_once_from_several_clients_works_once() {
    let (server, token) = a_reset_link_for_jz().await;
    let posts = (0..4).map(|n| {
        let (server, token) = (&server, &token);
        async move { post_reset(server, token, &format!("a-new-password-{n}")).await }
    });
    let answers = futures_util::future::join_all(posts).await;
    let statuses: Vec<u16> = answers.iter().map(|(_, r)| r.status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 302).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 404).count(),
        3,
        "{statuses:?}"
    );
    let signed_in = answers
        .iter()
        .filter(|(c, _)| c.cookie("session_token").is_some())
        .count();
    assert_eq!(signed_in, 1);
    server.stop().await;
}
