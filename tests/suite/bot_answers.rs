//! Bots that answer over `https`, and answers that are files: a webhook receiver on loopback
//! behind TLS with a certificate issued by a test CA (made with rcgen), which the server trusts
//! through `--webhook-ca-file` only.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{csrf_meta, form, Client, TestServer};

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const T: Duration = Duration::from_secs(10);

/// A test CA and a certificate it issued for `localhost` and 127.0.0.1: the CA's PEM and the
/// server's TLS configuration.
fn test_pki() -> (String, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "Hearth test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &ca)
        .unwrap();
    let key = rustls_pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![leaf.der().clone()], key)
    .unwrap();
    (ca.pem(), Arc::new(config))
}

/// An `https://` webhook receiver on loopback with `tls`, answering every request `answer`.
async fn https_receiver(
    tls: Arc<rustls::ServerConfig>,
    answer: common::webhooks::Answer,
) -> (String, common::webhooks::Requests) {
    common::webhooks::receiver(answer, Duration::ZERO, Some(tls)).await
}

async fn signed_in(server: &TestServer) -> Client {
    let mut c = server.client();
    assert_eq!(c.login(DAVID, SECRET).await.status, 302);
    c
}

/// Creates bot `name` with webhook `url` as David, and opens David's direct room with it.
async fn bot_and_direct_room(server: &TestServer, david: &mut Client, url: &str) -> (i64, i64) {
    let page = david.get("/account/bots").await;
    let token = csrf_meta(&page.body);
    let r = david
        .post_form(
            "/account/bots",
            &form(&[
                ("user[name]", "Secure"),
                ("user[webhook_url]", url),
                ("authenticity_token", &token),
            ]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302, "{}", r.body);
    let bot_id: i64 =
        sqlx::query_scalar("SELECT id FROM users WHERE name = 'Secure' AND role = 'bot'")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    let r = david
        .post_form(
            "/rooms/directs",
            &form(&[
                ("user_ids[]", &bot_id.to_string()),
                ("authenticity_token", &token),
            ]),
            &[],
        )
        .await;
    assert_eq!(r.status, 302);
    let room = r.header("location").unwrap()["/rooms/".len()..]
        .parse()
        .unwrap();
    (bot_id, room)
}

/// A small PNG (8×8, one colour).
fn png() -> Vec<u8> {
    let img = image::RgbImage::from_pixel(8, 8, image::Rgb([200, 40, 40]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

async fn metric(server: &TestServer, series: &str) -> f64 {
    let text = server.client().get("/metrics").await.body;
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{series} missing:\n{text}"))
}

/// Waits until `sql` (a count) is at least 1.
async fn eventually(server: &TestServer, sql: &'static str) -> bool {
    let deadline = std::time::Instant::now() + T;
    while std::time::Instant::now() < deadline {
        let n: i64 = sqlx::query_scalar(sql)
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
        if n > 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_bot_behind_https_with_a_private_ca_gets_the_payload_and_its_file_answer_is_posted() {
    let (ca_pem, tls) = test_pki();
    let dir = tempfile_dir();
    let ca_file = dir.join("webhook-ca.pem");
    std::fs::write(&ca_file, &ca_pem).unwrap();
    let server = TestServer::start_with(|c| c.webhook_ca_file = Some(ca_file.clone())).await;
    let (url, mut hits) = https_receiver(tls, (200, "image/png", png())).await;
    let mut david = signed_in(&server).await;
    let (bot_id, room) = bot_and_direct_room(&server, &mut david, &url).await;
    let mut ws = common::forms::watch_room(&server, &mut david, room).await;
    let (token, _) = david.room(room).await;
    let r = david
        .post_message(room, "a picture please", "https-dm", &token)
        .await;
    assert!(r.status < 400);
    let (head, body) = tokio::time::timeout(T, hits.recv())
        .await
        .expect("the https webhook")
        .unwrap();
    assert!(head.starts_with("POST /hook HTTP/1.1"), "{head}");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["message"]["body"]["plain"], "a picture please");
    // The PNG answer is the bot's message with a file, `attachment.png`, identified as a PNG,
    // broadcast to the room.
    let appended = common::forms::broadcast_containing(&mut ws, "attachment.png").await;
    assert!(appended.contains("Secure"), "{appended}");
    assert!(
        eventually(
            &server,
            "SELECT COUNT(*) FROM active_storage_blobs b \
             JOIN active_storage_attachments a ON a.blob_id = b.id \
             WHERE b.filename = 'attachment.png' AND b.content_type = 'image/png' \
             AND a.record_type = 'Message'"
        )
        .await,
        "no file answer was posted"
    );
    let creator: i64 = sqlx::query_scalar(
        "SELECT m.creator_id FROM messages m JOIN active_storage_attachments a \
         ON a.record_id = m.id AND a.record_type = 'Message'",
    )
    .fetch_one(&server.state.db.pool)
    .await
    .unwrap();
    assert_eq!(creator, bot_id);
    let page = david.get(&format!("/rooms/{room}")).await;
    assert!(page.body.contains("attachment.png"), "{}", page.body);
    assert_eq!(
        metric(
            &server,
            "hearth_webhook_deliveries_total{outcome=\"delivered\"}"
        )
        .await,
        1.0
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn an_https_webhook_whose_certificate_the_server_does_not_trust_gets_nothing() {
    let (_, tls) = test_pki();
    let server = TestServer::start().await;
    let (url, mut hits) = https_receiver(tls, (200, "text/plain", b"never".to_vec())).await;
    let mut david = signed_in(&server).await;
    let (_, room) = bot_and_direct_room(&server, &mut david, &url).await;
    let (token, _) = david.room(room).await;
    let r = david
        .post_message(room, "hello?", "untrusted", &token)
        .await;
    assert!(r.status < 400);
    let deadline = std::time::Instant::now() + T;
    while metric(
        &server,
        "hearth_webhook_deliveries_total{outcome=\"failed\"}",
    )
    .await
        < 1.0
    {
        assert!(std::time::Instant::now() < deadline, "never counted failed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(hits.try_recv().is_err(), "no request got through");
    let answers: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE room_id = ? AND creator_id != 1")
            .bind(room)
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    assert_eq!(answers, 0);
}

#[tokio::test]
async fn a_webhook_ca_file_without_a_certificate_stops_the_start() {
    let dir = tempfile_dir();
    let ca_file = dir.join("not-a-ca.pem");
    std::fs::write(&ca_file, "hello").unwrap();
    let mut config = hearth::config::Config::for_tests(&dir);
    config.webhook_ca_file = Some(ca_file);
    let Err(err) = hearth::state::AppState::build(config).await else {
        panic!("a CA file without a certificate was accepted");
    };
    assert!(err.to_string().contains("--webhook-ca-file"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

fn tempfile_dir() -> std::path::PathBuf {
    let n: u64 = rand::random();
    let dir = std::env::temp_dir().join(format!("hearth-webhook-tls-{n:x}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether any webhook exists is remembered per server: a server without one, which skips
/// its lookups, never makes another server of the same process skip its bots.
#[tokio::test]
async fn a_server_without_webhooks_never_stops_another_servers_bots() {
    let (url, mut hits) =
        common::webhooks::receiver((200, "text/plain", Vec::new()), Duration::ZERO, None).await;
    let with = TestServer::start().await;
    let mut david = signed_in(&with).await;
    let (_bot, room) = bot_and_direct_room(&with, &mut david, &url).await;

    let without = TestServer::start().await;
    let mut other = signed_in(&without).await;
    let (token, _) = other.room(1).await;
    let r = other
        .post_message(1, "nothing to deliver", "none-1", &token)
        .await;
    assert!(r.status < 400);
    let deadline = std::time::Instant::now() + T;
    while without.state.outbox.webhooks.present().known() != Some(false) {
        assert!(std::time::Instant::now() < deadline, "never looked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let (token, _) = david.room(room).await;
    let r = david
        .post_message(room, "hello bot", "with-1", &token)
        .await;
    assert!(r.status < 400);
    let (_, body) = tokio::time::timeout(T, hits.recv())
        .await
        .expect("the webhook of the server that has one")
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["message"]["body"]["plain"], "hello bot");
}
