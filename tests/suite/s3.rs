//! The S3 service against a real S3-compatible server: moto's (`moto_server`, PyPI's
//! `moto[server]`, which `scripts/test` installs), started on a random port for each test.
//! Direct uploads go to the bucket by the presigned `PUT` URL the server hands out; the post
//! checks the object against its record; thumbnails are made from the object; reads are
//! proxied through the server with its own headers; bots' `-F` uploads land in the bucket; a
//! deleted message's objects leave it.
//!
//! Without `moto_server` on the `PATH` (or when it does not answer) each test prints
//! `SKIPPED (no S3-compatible server): …` on stderr and passes: the only skip in the suite, and
//! a loud one.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::TestServer;
use crate::files::{header, md5_base64, png, raw, Session};

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const BUCKET: &str = "hearth-test";

/// A running `moto_server`, killed on drop.
pub(crate) struct Moto {
    child: Child,
    addr: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) async fn start_moto() -> Option<Moto> {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
        listener.local_addr().ok()?.port()
    };
    let child = Command::new("moto_server")
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) => {
            eprintln!("SKIPPED (no S3-compatible server): moto_server did not start: {e}");
            return None;
        }
    };
    let moto = Moto {
        child,
        addr: format!("127.0.0.1:{port}"),
    };
    for _ in 0..150 {
        if tokio::net::TcpStream::connect(&moto.addr).await.is_ok() {
            let (status, _, _) = raw(&moto.addr, "PUT", &format!("/{BUCKET}"), &[], b"").await;
            if status == 200 {
                return Some(moto);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "SKIPPED (no S3-compatible server): moto_server did not answer on {}",
        moto.addr
    );
    None
}

pub(crate) async fn hearth_on(moto: &Moto) -> TestServer {
    let endpoint = format!("http://{}", moto.addr);
    TestServer::start_with(move |c| {
        c.storage = hearth::config::StorageKind::S3;
        c.s3_endpoint = endpoint;
        c.s3_bucket = BUCKET.into();
        c.s3_access_key_id = "test".into();
        c.s3_secret_access_key = String::from("test").into();
    })
    .await
}

/// The blob record of a direct upload: (signed id, presigned URL, headers to send).
async fn direct_upload_record(
    s: &Session,
    filename: &str,
    bytes: &[u8],
    checksum: &str,
) -> (String, String, serde_json::Value) {
    let json = serde_json::json!({"blob": {
        "filename": filename, "content_type": "image/png",
        "byte_size": bytes.len(), "checksum": checksum
    }});
    let (status, _, body) = s
        .send(
            "POST",
            "/rails/active_storage/direct_uploads",
            &[("Content-Type", "application/json")],
            json.to_string().as_bytes(),
        )
        .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["service_name"], "amazon");
    (
        answer["signed_id"].as_str().unwrap().to_owned(),
        answer["direct_upload"]["url"].as_str().unwrap().to_owned(),
        answer["direct_upload"]["headers"].clone(),
    )
}

/// PUTs `bytes` to an absolute URL on moto, with `headers`: the status.
async fn put_to(moto: &Moto, url: &str, headers: &[(&str, &str)], bytes: &[u8]) -> u16 {
    let path = url
        .strip_prefix(&format!("http://{}", moto.addr))
        .unwrap_or_else(|| panic!("a URL on the S3 server: {url}"));
    let (status, _, body) = raw(&moto.addr, "PUT", path, headers, bytes).await;
    if status != 200 {
        eprintln!(
            "PUT {url}: {status} {}",
            String::from_utf8_lossy(&body[..body.len().min(600)])
        );
    }
    status
}

/// The object `key` as the bucket holds it, read with a signed request: (200, bytes) or (404, []).
async fn object(server: &TestServer, key: &str) -> (u16, Vec<u8>) {
    let storage = &server.state.storage;
    assert_eq!(storage.service_name(), "amazon", "the S3 service");
    match storage.service("amazon").read(key).await {
        Some(bytes) => (200, bytes),
        None => (404, Vec::new()),
    }
}

async fn key_of(server: &TestServer, filename: &str) -> (String, String) {
    sqlx::query_as("SELECT key, service_name FROM active_storage_blobs WHERE filename = ?")
        .bind(filename)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_direct_upload_goes_to_the_bucket_by_a_presigned_put_and_is_served_through_the_server() {
    let Some(moto) = start_moto().await else {
        return;
    };
    let server = hearth_on(&moto).await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let original = png(1600, 900);
    let checksum = md5_base64(&original);
    let (signed_id, url, headers) =
        direct_upload_record(&david, "bay.png", &original, &checksum).await;
    assert!(url.contains("X-Amz-Signature="), "a presigned URL: {url}");
    assert_eq!(headers["Content-MD5"], checksum.as_str());
    let status = put_to(
        &moto,
        &url,
        &[
            ("Content-Type", "image/png"),
            ("Content-MD5", checksum.as_str()),
        ],
        &original,
    )
    .await;
    assert_eq!(status, 200, "the bucket took the PUT");
    let (key, service) = key_of(&server, "bay.png").await;
    assert_eq!(service, "amazon");
    assert_eq!(
        object(&server, &key).await,
        (200, original.clone()),
        "the bytes are in the bucket"
    );
    assert!(
        !server
            .dir
            .join(&key[0..2])
            .join(&key[2..4])
            .join(&key)
            .exists(),
        "not on the disk"
    );

    assert_eq!(david.post_signed(4, &signed_id).await, 200);
    // The thumbnail is made from the object, and stored in the bucket too.
    let mut thumb = None;
    for _ in 0..150 {
        let page = david.client.get("/rooms/4").await.body;
        if let Some(start) = page.find("<img src=\"/rails/active_storage/representations/redirect/")
        {
            thumb = crate::common::attr_after(&page[start..], "<img src=\"")
                .map(|s| s.replace("&amp;", "&"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let thumb = thumb.expect("a thumbnail from the bucket's object");
    let (redirect, status, headers, bytes) = david.fetch(&thumb).await;
    assert_eq!((redirect, status), (302, 200));
    assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
    let img = image::load_from_memory(&bytes).unwrap();
    assert_eq!((img.width(), img.height()), (1200, 675));
    let variants: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM active_storage_blobs WHERE service_name = 'amazon' AND filename = 'bay.png'",
    )
    .fetch_one(&server.state.db.pool)
    .await
    .unwrap();
    assert_eq!(
        variants, 2,
        "the original and its thumbnail, both in the bucket"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_direct_upload_whose_object_differs_from_its_record_is_refused_and_deleted() {
    let Some(moto) = start_moto().await else {
        return;
    };
    let server = hearth_on(&moto).await;
    let david = Session::new(&server, DAVID, SECRET).await;
    let declared = png(40, 40);
    let (signed_id, url, _) =
        direct_upload_record(&david, "swap.png", &declared, &md5_base64(&declared)).await;
    // Other bytes of another size, without the Content-MD5 the bucket would check.
    let other = png(41, 41);
    assert_eq!(
        put_to(&moto, &url, &[("Content-Type", "image/png")], &other).await,
        200
    );
    let (key, _) = key_of(&server, "swap.png").await;
    assert_eq!(object(&server, &key).await.0, 200);
    assert_eq!(david.post_signed(1, &signed_id).await, 422);
    assert_eq!(
        object(&server, &key).await.0,
        404,
        "the object that did not match is deleted"
    );
    // A wrong Content-MD5 is refused by the bucket itself.
    // The same size, other bytes: the ETag (the object's MD5) gives it away.
    let (signed_id, url, _) =
        direct_upload_record(&david, "bad.png", &declared, &md5_base64(&declared)).await;
    let mut tampered = declared.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0xFF;
    assert_eq!(
        put_to(&moto, &url, &[("Content-Type", "image/png")], &tampered).await,
        200
    );
    let (key, _) = key_of(&server, "bad.png").await;
    assert_eq!(david.post_signed(1, &signed_id).await, 422);
    assert_eq!(object(&server, &key).await.0, 404, "deleted too");
    server.stop().await;
}

#[tokio::test]
async fn bot_uploads_land_in_the_bucket_and_leave_it_with_their_message() {
    let Some(moto) = start_moto().await else {
        return;
    };
    let server = hearth_on(&moto).await;
    let addr = server.origin().trim_start_matches("http://").to_owned();
    let (content_type, body) =
        crate::files::multipart(&[], "attachment", "report.pdf", b"%PDF-1.4 a small report");
    let (status, headers, _) = raw(
        &addr,
        "POST",
        "/rooms/1/5-bNd3rB0tK3y7/messages",
        &[("Content-Type", content_type.as_str())],
        &body,
    )
    .await;
    assert_eq!(status, 201);
    let (key, service) = key_of(&server, "report.pdf").await;
    assert_eq!(service, "amazon");
    assert_eq!(
        object(&server, &key).await,
        (200, b"%PDF-1.4 a small report".to_vec())
    );
    // Read through the server: the blob URL, then the proxied bytes.
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let page = david.client.get("/rooms/1").await.body;
    let start = page
        .find("/rails/active_storage/blobs/redirect/")
        .expect("the file's link");
    let link = page[start..page[start..].find('"').unwrap() + start].replace("&amp;", "&");
    let (redirect, status, served, bytes) = david.fetch(&link).await;
    assert_eq!((redirect, status), (302, 200));
    assert_eq!(bytes, b"%PDF-1.4 a small report");
    assert_eq!(header(&served, "content-type"), Some("application/pdf"));
    // Deleting the message deletes the object.
    let location = header(&headers, "location").unwrap().to_owned();
    let message_id: i64 = location
        .rsplit('/')
        .next()
        .unwrap()
        .trim_start_matches('@')
        .parse()
        .unwrap();
    let (status, _, _) = david
        .send(
            "POST",
            &format!("/rooms/1/messages/{message_id}"),
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"_method=delete",
        )
        .await;
    assert!(status < 400, "delete: {status}");
    for _ in 0..50 {
        if object(&server, &key).await.0 == 404 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        object(&server, &key).await.0,
        404,
        "the object left with its message"
    );
    server.stop().await;
}
