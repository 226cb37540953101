//! Single sign-on against a real OpenID Connect provider (npm's `oidc-provider`, started by
//! `tests/node/oidc_provider.mjs` on loopback), over real HTTP: a new person gets an account in
//! every open room and lands in All Talk, an existing one is matched by verified e-mail, and an
//! address outside the allowed domains, an unverified one and a deactivated person are refused
//! with a page saying why; a tampered `state`, a replayed code, a wrong `nonce` and an ID token
//! signed with a key the provider retired are refused; keys rotated at the provider are
//! fetched again; passwords for administrators only refuses a member's password and not an
//! administrator's.

use base64::Engine as _;
use sha2::Digest as _;

use crate::common::oidc::{self, begin, flow, free_port, local, refusal, Provider};
use crate::common::{csrf_meta, form, Client, TestServer};

const PASSWORD: &str = "secret123456";

/// A server with single sign-on at `http://127.0.0.1:<port>`.
pub(crate) async fn server(port: u16) -> TestServer {
    TestServer::start_with(|config| oidc::configure(config, port)).await
}

/// The provider for `server`, keys in its directory.
pub(crate) async fn provider(
    server: &TestServer,
    port: u16,
    sign: &str,
    publish: &[&str],
) -> Provider {
    let redirect = format!("{}/session/oidc/callback", server.origin());
    Provider::start(
        port,
        &redirect,
        &server.dir.join("op-keys.json"),
        sign,
        publish,
    )
    .await
}

/// Saves the account's single sign-on settings as David (an administrator).
async fn settings(server: &TestServer, name: &str, domains: &str, passwords_off: bool) {
    let mut david = server.signed_in("david@example.com", PASSWORD).await;
    let page = david.get("/account/edit").await;
    assert!(page.body.contains("Single sign-on"), "{}", page.body);
    let body = form(&[
        ("_method", "patch"),
        ("authenticity_token", &csrf_meta(&page.body)),
        ("sso[provider_name]", name),
        ("sso[allowed_domains]", domains),
        ("sso[passwords_for_administrators_only]", "0"),
        (
            "sso[passwords_for_administrators_only]",
            if passwords_off { "1" } else { "0" },
        ),
    ]);
    let saved = david.post_form("/account/sso", &body, &[]).await;
    assert_eq!(saved.status, 302, "{}", saved.body);
}

/// A domain that is not one, and a member's try, are refused; nothing is saved.
async fn bad_settings_are_refused(server: &TestServer) {
    let mut david = server.signed_in("david@example.com", PASSWORD).await;
    let page = david.get("/account/edit").await;
    let body = form(&[
        ("_method", "patch"),
        ("authenticity_token", &csrf_meta(&page.body)),
        ("sso[allowed_domains]", "allowed.test\nnot a domain"),
    ]);
    let refused = david.post_form("/account/sso", &body, &[]).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("is not a domain name"),
        "{}",
        refused.body
    );
    let mut jason = server.signed_in("jason@example.com", PASSWORD).await;
    let page = jason.get("/account/edit").await;
    assert!(
        !page.body.contains("Single sign-on"),
        "members do not see the settings"
    );
    let body = form(&[
        ("_method", "patch"),
        ("authenticity_token", &csrf_meta(&page.body)),
        ("sso[allowed_domains]", ""),
    ]);
    assert_eq!(
        jason.post_form("/account/sso", &body, &[]).await.status,
        403
    );
    let saved = hearth::db::sso::settings(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(saved.allowed_domains, ["allowed.test", "example.com"]);
}

/// A whole sign-in of `login` at the provider from a fresh client: the client and Hearth's
/// answer to the callback.
pub(crate) async fn sign_in(
    server: &TestServer,
    op: &Provider,
    login: &str,
) -> (Client, crate::common::Response) {
    let mut browser = server.client();
    let authorize = begin(&mut browser).await;
    let callback = op.sign_in(&authorize, login).await;
    let answer = browser.get(&local(&callback)).await;
    (browser, answer)
}

pub(crate) async fn user_id(server: &TestServer, email: &str) -> Option<i64> {
    sqlx::query_scalar("SELECT id FROM users WHERE email_address = ?")
        .bind(email)
        .fetch_optional(&server.state.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn people_sign_in_through_the_provider_and_the_wrong_ones_are_refused() {
    let port = free_port();
    let server = server(port).await;
    let op = provider(&server, port, "k1", &["k1"]).await;
    let page = server.client().get("/session/new").await;
    assert!(
        page.body.contains("Sign in with 127.0.0.1</button>"),
        "{}",
        page.body
    );
    settings(&server, "Acme ID", "allowed.test\n@Example.com", false).await;
    bad_settings_are_refused(&server).await;
    let page = server.client().get("/session/new").await;
    assert!(
        page.body.contains("Sign in with Acme ID</button>"),
        "{}",
        page.body
    );

    // A new person: an account made as a join link makes one, landing in All Talk.
    let (mut ada, answer) = sign_in(&server, &op, "ada.lovelace@allowed.test").await;
    assert_eq!(answer.status, 302, "{}", answer.body);
    assert_eq!(answer.header("location"), Some("/"));
    assert!(
        ada.cookie("oidc_sign_in").is_none(),
        "the flow cookie is deleted"
    );
    let root = ada.get("/").await;
    let room = root.header("location").expect("a room").to_owned();
    let room_page = ada.get(&room).await;
    assert_eq!(room_page.status, 200);
    assert!(
        room_page.body.contains("<title>All Talk"),
        "{}",
        &room_page.body[..400]
    );
    let id = user_id(&server, "ada.lovelace@allowed.test")
        .await
        .expect("made");
    let (name, digest, rooms, open_rooms): (String, Option<String>, i64, i64) = sqlx::query_as(
        "SELECT name, password_digest, \
         (SELECT COUNT(*) FROM memberships WHERE user_id = users.id), \
         (SELECT COUNT(*) FROM rooms WHERE kind = 'open') FROM users WHERE id = ?",
    )
    .bind(id)
    .fetch_one(&server.state.db.pool)
    .await
    .unwrap();
    assert_eq!(
        (name.as_str(), digest, rooms),
        ("Ada Lovelace", None, open_rooms)
    );
    let (_, again) = sign_in(&server, &op, "ada.lovelace@allowed.test").await;
    assert_eq!(again.status, 302);
    let count: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE email_address LIKE 'ada.%'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    assert_eq!(count, 1, "the second sign-in is the same person");

    // An existing person, matched by the verified address and linked.
    let (mut jason, answer) = sign_in(&server, &op, "jason@example.com").await;
    assert_eq!(answer.status, 302, "{}", answer.body);
    let jason_id = user_id(&server, "jason@example.com").await.unwrap();
    let linked: i64 = sqlx::query_scalar("SELECT user_id FROM sso_identities WHERE subject = ?")
        .bind("sub-jason@example.com")
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
    assert_eq!(linked, jason_id);
    let profile = jason.get("/users/me/profile").await;
    assert!(
        profile.body.contains("jason@example.com"),
        "{}",
        profile.body
    );

    // Outside the allowed domains: a clear page, nothing made.
    let (_, answer) = sign_in(&server, &op, "eve@elsewhere.test").await;
    assert_eq!(
        (answer.status, refusal(&answer).as_deref()),
        (403, Some("outside-domains"))
    );
    assert!(
        answer.body.contains("eve@elsewhere.test"),
        "{}",
        answer.body
    );
    assert!(
        answer.body.contains("allowed.test or example.com"),
        "{}",
        answer.body
    );
    assert!(answer.body.contains("Back to sign in"));
    assert_eq!(user_id(&server, "eve@elsewhere.test").await, None);
    let (_, answer) = sign_in(&server, &op, "unverified.zed@allowed.test").await;
    assert_eq!(
        (answer.status, refusal(&answer).as_deref()),
        (403, Some("unverified"))
    );
    let ralph = "ralph-deactivated-0c2f5e8a-3b1d-4f6e-9a7c-5d8e2b4f1a63@example.com";
    let (_, answer) = sign_in(&server, &op, ralph).await;
    assert_eq!(
        (answer.status, refusal(&answer).as_deref()),
        (403, Some("inactive"))
    );

    refusals_of_tampered_answers(&server, &op).await;
    passwords_for_administrators_only(&server).await;
    server.stop().await;
}

/// A tampered `state`, no sign-in under way, a replayed code and a wrong `nonce`.
async fn refusals_of_tampered_answers(server: &TestServer, op: &Provider) {
    let mut browser = server.client();
    let authorize = begin(&mut browser).await;
    let callback = local(&op.sign_in(&authorize, "ada.lovelace@allowed.test").await);
    let (state, _, _) = flow(&browser);
    let tampered = callback.replace(&format!("state={state}"), "state=forged-by-someone-else");
    let answer = browser.get(&tampered).await;
    assert_eq!(
        (answer.status, refusal(&answer).as_deref()),
        (400, Some("state"))
    );
    let answer = server.client().get(&callback).await;
    assert_eq!(
        (answer.status, refusal(&answer).as_deref()),
        (400, Some("expired"))
    );

    // The same callback and flow cookie twice: the provider refuses the used code.
    let mut first = server.client();
    let authorize = begin(&mut first).await;
    let cookie = first.cookie("oidc_sign_in").unwrap().to_owned();
    let callback = local(&op.sign_in(&authorize, "ada.lovelace@allowed.test").await);
    assert_eq!(first.get(&callback).await.status, 302);
    let mut replay = server.client();
    replay.cookies.push(("oidc_sign_in".into(), cookie));
    let answer = replay.get(&callback).await;
    assert_eq!(
        (answer.status, refusal(&answer).as_deref()),
        (400, Some("code"))
    );
    assert!(replay.cookie("session_token").is_none());

    // An authorization asked with this browser's state and PKCE verifier but another nonce.
    let mut browser = server.client();
    let authorize = begin(&mut browser).await;
    let (state, nonce, verifier) = flow(&browser);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    let mut url = url::Url::parse(&authorize).unwrap();
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .map(|(k, v)| match &*k {
            "nonce" => (k.to_string(), "not-the-nonce-of-this-sign-in".to_owned()),
            "code_challenge" => (k.to_string(), challenge.clone()),
            _ => (k.to_string(), v.to_string()),
        })
        .collect();
    assert!(pairs.iter().any(|(k, v)| k == "state" && *v == state));
    assert!(pairs.iter().any(|(k, v)| k == "nonce" && *v != nonce));
    url.query_pairs_mut().clear().extend_pairs(pairs);
    let callback = local(&op.sign_in(url.as_str(), "ada.lovelace@allowed.test").await);
    let answer = browser.get(&callback).await;
    assert_eq!(
        (answer.status, refusal(&answer).as_deref()),
        (400, Some("nonce"))
    );
    assert!(browser.cookie("session_token").is_none());
}

/// Passwords for administrators only: a member's password refused, an administrator's not.
async fn passwords_for_administrators_only(server: &TestServer) {
    let mut jason = server.client();
    assert_eq!(jason.login("jason@example.com", PASSWORD).await.status, 302);
    settings(server, "Acme ID", "allowed.test\nexample.com", true).await;
    let mut jason = server.client();
    let answer = jason.login("jason@example.com", PASSWORD).await;
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert!(
        answer
            .body
            .contains("Passwords are for administrators only here: sign in with Acme ID."),
        "{}",
        answer.body
    );
    assert!(jason.cookie("session_token").is_none());
    let mut jason = server.client();
    let wrong = jason.login("jason@example.com", "not-his-password").await;
    assert_eq!(wrong.status, 401, "a wrong password still says only that");
    let mut david = server.client();
    assert_eq!(david.login("david@example.com", PASSWORD).await.status, 302);
    settings(server, "Acme ID", "allowed.test\nexample.com", false).await;
}

#[tokio::test]
async fn rotated_keys_are_fetched_again_and_a_retired_key_is_refused() {
    let (log, _guard) = crate::common::captured_log();
    let port = free_port();
    let server = server(port).await;
    let op = provider(&server, port, "k1", &["k1"]).await;
    let (_, answer) = sign_in(&server, &op, "ada@example.com").await;
    let logged = || String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    assert_eq!(answer.status, 302, "signed with k1: {}", logged());
    // The provider rotates to k2: Hearth's cached JWKS holds k1 only, and fetches it again.
    let op = op.restart("k2", &["k2"]).await;
    let (_, answer) = sign_in(&server, &op, "ada@example.com").await;
    assert_eq!(answer.status, 302, "signed with k2: {}", answer.body);
    // A token signed with k1, which the provider no longer publishes.
    let op = op.restart("k1", &["k2"]).await;
    let (browser, answer) = sign_in(&server, &op, "ada@example.com").await;
    assert_eq!(
        (answer.status, refusal(&answer).as_deref()),
        (400, Some("key")),
        "{}",
        answer.body
    );
    assert!(browser.cookie("session_token").is_none());
    server.stop().await;
}

#[tokio::test]
async fn without_a_provider_there_is_no_button_and_no_route() {
    let server = TestServer::start().await;
    let mut client = server.client();
    let page = client.get("/session/new").await;
    assert!(!page.body.contains("Sign in with"), "{}", page.body);
    assert_eq!(client.get("/session/oidc").await.status, 404);
    assert_eq!(
        client
            .get("/session/oidc/callback?code=x&state=y")
            .await
            .status,
        404
    );
    let mut david = server.signed_in("david@example.com", PASSWORD).await;
    let page = david.get("/account/edit").await;
    assert!(!page.body.contains("Single sign-on"));
    let body = form(&[
        ("_method", "patch"),
        ("authenticity_token", &csrf_meta(&page.body)),
    ]);
    assert_eq!(
        david.post_form("/account/sso", &body, &[]).await.status,
        404
    );
    server.stop().await;
}

#[tokio::test]
async fn an_issuer_on_plain_http_must_be_loopback() {
    let mut flags = hearth::config::OidcFlags {
        oidc_issuer: Some("http://id.example.com".into()),
        oidc_client_id: Some("hearth".into()),
        oidc_client_secret: None,
    };
    let refused = hearth::oidc::Sso::from_flags(&flags).unwrap_err();
    assert!(refused.to_string().contains("must be https"), "{refused}");
    flags.oidc_issuer = Some("https://id.example.com".into());
    assert!(hearth::oidc::Sso::from_flags(&flags)
        .unwrap()
        .provider()
        .is_some());
    flags.oidc_issuer = Some("http://[::1]:9000".into());
    assert!(hearth::oidc::Sso::from_flags(&flags)
        .unwrap()
        .provider()
        .is_some());
}
