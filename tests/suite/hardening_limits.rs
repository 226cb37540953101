//! Limits people expect, over real HTTP: the password challenge shares the sign-in limit of
//! the client's address; message edits, push subscriptions and test notifications have rate
//! limits (429 with `Retry-After`, nothing done); a per-user storage quota refuses, on every
//! upload route, a file that does not fit with a 413 saying the quota and how much is used,
//! keeping nothing of it, and deleting a file makes room.

use crate::common;
use crate::files::{count_files, md5_base64, multipart, raw, uuid, Session};

use base64::Engine as _;
use common::forms::{csrf, scalar_i64, scalar_text, send};
use common::TestServer;

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const BOT_KEY: &str = "5-bNd3rB0tK3y7";
/// Designers: David, Jason, JZ, Kevin.
const CLOSED_ROOM: i64 = 4;

// ---------------------------------------------------------------------------------------------
// The password challenge and the sign-in limit.

#[tokio::test]
async fn wrong_current_passwords_and_sign_ins_share_the_sign_in_limit_of_the_address() {
    let server = TestServer::start_with(|c| c.login_rate_limit = 10).await;
    // The sign-in of this session is the address' first attempt.
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/users/me/profile").await;
    let change_email = |challenge: &'static str| {
        vec![
            ("user[name]", "David"),
            ("user[bio]", ""),
            ("user[email_address]", "david.new@example.com"),
            ("user[password_challenge]", challenge),
        ]
    };
    // Four wrong sign-ins and five wrong current passwords: ten attempts in all.
    for _ in 0..4 {
        let r = server.client().login(DAVID, "not-it").await;
        assert_eq!(r.status, 401, "{}", r.body);
    }
    for _ in 0..5 {
        let r = send(
            &mut david,
            "PATCH",
            "/users/me/profile",
            &change_email("not-it"),
            &token,
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.body);
    }
    // The eleventh, at the challenge: 429 with Retry-After, nothing changed, even with the
    // right password.
    let r = send(
        &mut david,
        "PATCH",
        "/users/me/profile",
        &change_email(SECRET),
        &token,
    )
    .await;
    assert_eq!(r.status, 429, "{}", r.body);
    let wait = r.retry_after();
    assert!((1..=180).contains(&wait), "Retry-After: {wait}");
    assert_eq!(
        scalar_text(&server, "SELECT email_address FROM users WHERE id = 1").await,
        DAVID
    );
    // And at the sign-in form, as the sign-in limit answers.
    let r = server.client().login(DAVID, SECRET).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.retry_after() >= 1);
    // A profile change that asks for no password is no attempt and goes through.
    let r = send(
        &mut david,
        "PATCH",
        "/users/me/profile",
        &[("user[name]", "David H"), ("user[bio]", "")],
        &token,
    )
    .await;
    assert_eq!(r.status, 302, "{}", r.body);
    server.stop().await;
}

#[tokio::test]
async fn wrong_current_passwords_alone_close_the_sign_in_form_of_the_address() {
    let server = TestServer::start_with(|c| c.login_rate_limit = 10).await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/users/me/profile").await;
    // The sign-in of this session and nine wrong current passwords: ten attempts.
    for _ in 0..9 {
        let r = send(
            &mut david,
            "PATCH",
            "/users/me/profile",
            &[
                ("user[name]", "David"),
                ("user[password]", "a-new-password"),
                ("user[password_challenge]", "not-it"),
            ],
            &token,
        )
        .await;
        assert_eq!(r.status, 422, "{}", r.body);
    }
    let r = server.client().login(DAVID, "not-it").await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.retry_after() >= 1);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Rate limits of edits, push subscriptions and test notifications.

/// The id of the newest message.
async fn newest_message(server: &TestServer) -> i64 {
    scalar_i64(server, "SELECT MAX(id) FROM messages").await
}

#[tokio::test]
async fn message_edits_past_the_limit_are_429_with_retry_after_and_change_nothing() {
    let server = TestServer::start_with(|c| c.edit_rate_limit = 3).await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let (token, _) = david.room(1).await;
    let r = david.post_message(1, "first words", &uuid(), &token).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = newest_message(&server).await;
    let path = format!("/rooms/1/messages/{id}");
    for n in 0..3 {
        let body = format!("edit {n}");
        let r = send(
            &mut david,
            "PATCH",
            &path,
            &[("message[body]", &body)],
            &token,
        )
        .await;
        assert_eq!(r.status, 302, "{}", r.body);
    }
    let r = send(
        &mut david,
        "PATCH",
        &path,
        &[("message[body]", "edit 3")],
        &token,
    )
    .await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.retry_after() >= 1);
    let body = scalar_text(
        &server,
        &format!("SELECT body FROM messages WHERE id = {id}"),
    )
    .await;
    assert!(
        body.contains("edit 2") && !body.contains("edit 3"),
        "{body}"
    );

    // A bot's edits through its key: counted by its address.
    let addr = server.origin().trim_start_matches("http://").to_owned();
    let (status, _, _) = raw(
        &addr,
        "POST",
        &format!("/rooms/1/{BOT_KEY}/messages"),
        &[("Content-Type", "text/plain")],
        b"bot words",
    )
    .await;
    assert_eq!(status, 201);
    let id = newest_message(&server).await;
    for n in 0..3 {
        let (status, _, _) = raw(
            &addr,
            "PUT",
            &format!("/rooms/1/{BOT_KEY}/messages/{id}"),
            &[("Content-Type", "text/plain")],
            format!("bot edit {n}").as_bytes(),
        )
        .await;
        assert_eq!(status, 204);
    }
    let (status, headers, _) = raw(
        &addr,
        "PUT",
        &format!("/rooms/1/{BOT_KEY}/messages/{id}"),
        &[("Content-Type", "text/plain")],
        b"bot edit 3",
    )
    .await;
    assert_eq!(status, 429);
    let wait = crate::files::header(&headers, "retry-after").and_then(|s| s.parse::<u64>().ok());
    assert!(wait.is_some_and(|s| s >= 1), "{headers:?}");
    server.stop().await;
}

/// A browser's push keys (a P-256 public key and a 16-byte auth secret), base64url.
fn browser_keys() -> (String, String) {
    use web_push_native::p256;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let secret = p256::SecretKey::from_slice(&[7u8; 32]).expect("a valid scalar");
    (
        b64.encode(secret.public_key().to_sec1_bytes()),
        b64.encode([9u8; 16]),
    )
}

#[tokio::test]
async fn push_subscription_and_test_notification_floods_are_429_with_retry_after() {
    let server = TestServer::start_with(|c| {
        c.push_allow_loopback = true;
        c.push_subscription_rate_limit = 2;
        c.test_notification_rate_limit = 2;
    })
    .await;
    let mut david = server.signed_in(DAVID, SECRET).await;
    let token = csrf(&mut david, "/users/me/push_subscriptions").await;
    let (p256dh, auth) = browser_keys();
    let subscribe = |n: u32| {
        common::form(&[
            (
                "push_subscription[endpoint]",
                &format!("http://127.0.0.1:9/push/{n}"),
            ),
            ("push_subscription[p256dh_key]", &p256dh),
            ("push_subscription[auth_key]", &auth),
            ("authenticity_token", &token),
        ])
    };
    for n in 0..2 {
        let r = david
            .post_form("/users/me/push_subscriptions", &subscribe(n), &[])
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let r = david
        .post_form("/users/me/push_subscriptions", &subscribe(2), &[])
        .await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.retry_after() >= 1);
    assert_eq!(
        scalar_i64(
            &server,
            "SELECT COUNT(*) FROM push_subscriptions WHERE user_id = 1"
        )
        .await,
        2,
        "the refused one is not stored"
    );

    let id = scalar_i64(
        &server,
        "SELECT MIN(id) FROM push_subscriptions WHERE user_id = 1",
    )
    .await;
    let path = format!("/users/me/push_subscriptions/{id}/test_notifications");
    let test = common::form(&[("authenticity_token", &token)]);
    for _ in 0..2 {
        let r = david.post_form(&path, &test, &[]).await;
        assert_eq!(r.status, 302, "{}", r.body);
    }
    let r = david.post_form(&path, &test, &[]).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.retry_after() >= 1);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// The storage quota.

const KB: u64 = 1024;

/// A storage quota of 100 KiB.
async fn server_with_quota() -> TestServer {
    TestServer::start_with(|c| c.max_storage_bytes_per_user = 100 * KB).await
}

/// Posts `bytes` as the composer's multipart file to the closed room: the status and body.
async fn post_file(s: &Session, bytes: &[u8]) -> (u16, String) {
    let (ct, body) = multipart(
        &[("message[client_message_id]", &uuid())],
        "message[attachment]",
        "file.bin",
        bytes,
    );
    let (status, _, answer) = s
        .send(
            "POST",
            &format!("/rooms/{CLOSED_ROOM}/messages"),
            &[
                ("Content-Type", &ct),
                ("Accept", "text/vnd.turbo-stream.html"),
            ],
            &body,
        )
        .await;
    (status, String::from_utf8_lossy(&answer).into_owned())
}

/// Asks for a direct upload's blob record of `byte_size` bytes: the status and body.
async fn direct_upload_record(s: &Session, byte_size: u64) -> (u16, String) {
    let json = serde_json::json!({"blob": {
        "filename": "big.bin", "content_type": "application/octet-stream",
        "byte_size": byte_size, "checksum": md5_base64(b"x")
    }});
    let (status, _, answer) = s
        .send(
            "POST",
            "/rails/active_storage/direct_uploads",
            &[("Content-Type", "application/json")],
            json.to_string().as_bytes(),
        )
        .await;
    (status, String::from_utf8_lossy(&answer).into_owned())
}

/// Asserts `body` is the quota's page: the quota and the bytes used.
fn says_quota_and_use(status: u16, body: &str, used: u64) {
    assert_eq!(status, 413, "{body}");
    assert!(
        body.contains("of your storage quota of 100 KB (102400 bytes)"),
        "{body}"
    );
    assert!(
        body.contains(&format!(
            "Your files take {} KB ({} bytes)",
            used / KB,
            used
        )),
        "{body}"
    );
}

async fn blobs(server: &TestServer) -> i64 {
    scalar_i64(server, "SELECT COUNT(*) FROM active_storage_blobs").await
}

#[tokio::test]
async fn an_upload_past_the_storage_quota_is_413_with_the_quota_and_use_and_nothing_is_kept() {
    let server = server_with_quota().await;
    let david = Session::new(&server, DAVID, SECRET).await;
    let (status, body) = post_file(&david, &vec![1u8; 60 * KB as usize]).await;
    assert_eq!(status, 200, "{body}");
    let (blobs_before, files_before) = (blobs(&server).await, count_files(&server.dir));
    assert_eq!((blobs_before, files_before), (1, 1));
    let messages_before = scalar_i64(&server, "SELECT COUNT(*) FROM messages").await;

    // The composer's multipart file: cut at the 40 KiB left.
    let (status, body) = post_file(&david, &vec![2u8; 50 * KB as usize]).await;
    says_quota_and_use(status, &body, 60 * KB);
    assert!(
        body.contains("this file is larger than the 40 KB (40960 bytes) left"),
        "{body}"
    );
    // A direct upload: refused at the blob record, by its declared size.
    let (status, body) = direct_upload_record(&david, 50 * KB).await;
    says_quota_and_use(status, &body, 60 * KB);
    assert!(
        body.contains("this file of 50 KB (51200 bytes) does not fit"),
        "{body}"
    );
    // An avatar form.
    let (ct, form) = multipart(&[], "user[avatar]", "me.png", &vec![3u8; 50 * KB as usize]);
    let (status, _, answer) = david
        .send("POST", "/users/me/avatar", &[("Content-Type", &ct)], &form)
        .await;
    says_quota_and_use(status, &String::from_utf8_lossy(&answer), 60 * KB);
    assert_eq!(blobs(&server).await, blobs_before, "no blob row");
    assert_eq!(count_files(&server.dir), files_before, "no file");
    assert_eq!(
        scalar_i64(&server, "SELECT COUNT(*) FROM messages").await,
        messages_before,
        "no message of the refused post"
    );

    // What fits still goes through.
    let (status, body) = direct_upload_record(&david, 40 * KB).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = direct_upload_record(&david, 1).await;
    says_quota_and_use(status, &body, 100 * KB);
    server.stop().await;
}

#[tokio::test]
async fn a_bots_files_have_the_bots_own_quota() {
    let server = server_with_quota().await;
    let addr = server.origin().trim_start_matches("http://").to_owned();
    let bot_file = |bytes: Vec<u8>| {
        let addr = addr.clone();
        async move {
            let (ct, body) = multipart(&[("body", "a file")], "attachment", "f.bin", &bytes);
            let (status, _, answer) = raw(
                &addr,
                "POST",
                &format!("/rooms/1/{BOT_KEY}/messages"),
                &[("Content-Type", &ct)],
                &body,
            )
            .await;
            (status, String::from_utf8_lossy(&answer).into_owned())
        }
    };
    let (status, body) = bot_file(vec![1u8; 70 * KB as usize]).await;
    assert_eq!(status, 201, "{body}");
    let before = (blobs(&server).await, count_files(&server.dir));
    let (status, body) = bot_file(vec![2u8; 40 * KB as usize]).await;
    says_quota_and_use(status, &body, 70 * KB);
    assert_eq!((blobs(&server).await, count_files(&server.dir)), before);
    // People's uploads are not the bot's: David's fits.
    let david = Session::new(&server, DAVID, SECRET).await;
    let (status, body) = post_file(&david, &vec![3u8; 40 * KB as usize]).await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;
}

#[tokio::test]
async fn deleting_a_message_with_a_file_makes_room_for_the_next_upload() {
    let server = server_with_quota().await;
    let david = Session::new(&server, DAVID, SECRET).await;
    let (status, body) = post_file(&david, &vec![1u8; 80 * KB as usize]).await;
    assert_eq!(status, 200, "{body}");
    let id = newest_message(&server).await;
    let (status, body) = post_file(&david, &vec![2u8; 30 * KB as usize]).await;
    says_quota_and_use(status, &body, 80 * KB);

    let (status, _, _) = david
        .send(
            "POST",
            &format!("/rooms/{CLOSED_ROOM}/messages/{id}"),
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"_method=delete",
        )
        .await;
    assert_eq!(status, 302);
    assert_eq!((blobs(&server).await, count_files(&server.dir)), (0, 0));
    let (status, body) = post_file(&david, &vec![2u8; 30 * KB as usize]).await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;
}
