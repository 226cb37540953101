//! Files as an attacker and a media player use them, over real HTTP: one direct upload
//! attached once however many routes it is posted to at once, a purge that never takes a blob
//! another record still holds, byte ranges of stored files (RFC 9110 §14) on the disk and the
//! S3 services, and file names without bidirectional controls in the chip, the `download`
//! attribute and `Content-Disposition`.

use crate::common::TestServer;
use crate::files::{header, md5_base64, multipart, png, raw, uuid, Session};

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const BOT_KEY: &str = "5-bNd3rB0tK3y7";
/// Designers: David, Jason, JZ, Kevin.
const CLOSED_ROOM: i64 = 4;
/// The direct room of David and Jason.
const DIRECT_ROOM: i64 = 5;
/// The size of the file the range tests read.
const LEN: usize = 200_000;

fn urlencode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// A urlencoded form POST (`_method` included in `body` when needed): status and body.
async fn post_form(s: &Session, path: &str, body: &str) -> (u16, String) {
    let (status, _, answer) = s
        .send(
            "POST",
            path,
            &[("Content-Type", "application/x-www-form-urlencoded")],
            body.as_bytes(),
        )
        .await;
    (status, String::from_utf8_lossy(&answer).into_owned())
}

/// A post of a direct upload's signed id as a message's file: status and body.
async fn post_file(s: &Session, room: i64, signed_id: &str) -> (u16, String) {
    let body = format!(
        "message%5Battachment%5D={}&message%5Bclient_message_id%5D={}",
        urlencode(signed_id),
        uuid()
    );
    post_form(s, &format!("/rooms/{room}/messages"), &body).await
}

async fn scalar(server: &TestServer, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

async fn blob_id_of(server: &TestServer, filename: &str) -> i64 {
    sqlx::query_scalar("SELECT id FROM active_storage_blobs WHERE filename = ?")
        .bind(filename)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap()
}

/// Whether the file of the blob with `key` is on the disk service.
fn on_disk(server: &TestServer, key: &str) -> bool {
    server
        .dir
        .join(&key[0..2])
        .join(&key[2..4])
        .join(key)
        .exists()
}

/// Every attachment names a blob that exists and whose file is on the disk.
async fn every_attachment_has_its_file(server: &TestServer) {
    let keys: Vec<(i64, Option<String>)> = sqlx::query_as(
        "SELECT a.id, b.key FROM active_storage_attachments a \
         LEFT JOIN active_storage_blobs b ON b.id = a.blob_id",
    )
    .fetch_all(&server.state.db.pool)
    .await
    .unwrap();
    for (attachment, key) in keys {
        let key = key.unwrap_or_else(|| panic!("attachment {attachment} names a deleted blob"));
        assert!(
            on_disk(server, &key),
            "attachment {attachment}'s file {key} was removed"
        );
    }
}

#[tokio::test]
async fn one_direct_upload_posted_at_once_to_five_routes_is_attached_once() {
    let server = TestServer::start().await;
    let david = Session::new(&server, DAVID, SECRET).await;
    let bytes = png(48, 48);
    let (signed_id, put) = david
        .direct_upload("once.png", "image/png", &bytes, &md5_base64(&bytes))
        .await;
    assert_eq!(put, 204);
    let blob = blob_id_of(&server, "once.png").await;
    let avatar = format!("user%5Bavatar%5D={}", urlencode(&signed_id));
    let logo = format!("account%5Blogo%5D={}", urlencode(&signed_id));
    let (m1, m2, m3, a, l) = tokio::join!(
        post_file(&david, 1, &signed_id),
        post_file(&david, CLOSED_ROOM, &signed_id),
        post_file(&david, DIRECT_ROOM, &signed_id),
        post_form(&david, "/users/me/avatar", &avatar),
        post_form(&david, "/account/logo", &logo),
    );
    let answers = [
        ("message in room 1", m1, 302),
        ("message in room 4", m2, 302),
        ("message in room 5", m3, 302),
        ("avatar", a, 302),
        ("logo", l, 302),
    ];
    let won: Vec<&str> = answers
        .iter()
        .filter(|(_, (status, _), ok)| status == ok)
        .map(|(route, _, _)| *route)
        .collect();
    assert_eq!(
        won.len(),
        1,
        "exactly one route attaches the upload: {won:?} did ({answers:?})"
    );
    for (route, (status, body), ok) in &answers {
        if status != ok {
            assert_eq!(*status, 422, "{route}: {body}");
            assert!(
                body.contains("this upload is attached already"),
                "{route}: a clear refusal: {body}"
            );
        }
    }
    assert_eq!(
        scalar(
            &server,
            &format!("SELECT COUNT(*) FROM active_storage_attachments WHERE blob_id = {blob}")
        )
        .await,
        1,
        "one attachment row"
    );
    // Removing the one owner takes the blob; nothing else held it.
    let route = won[0];
    let (path, body) = if route == "avatar" {
        ("/users/me/avatar".to_owned(), "_method=delete")
    } else if route == "logo" {
        ("/account/logo".to_owned(), "_method=delete")
    } else {
        let (record, room): (i64, i64) = sqlx::query_as(
            "SELECT m.id, m.room_id FROM active_storage_attachments a JOIN messages m \
             ON m.id = a.record_id WHERE a.blob_id = ? AND a.record_type = 'Message'",
        )
        .bind(blob)
        .fetch_one(&server.state.db.pool)
        .await
        .unwrap();
        (format!("/rooms/{room}/messages/{record}"), "_method=delete")
    };
    let (status, answer) = post_form(&david, &path, body).await;
    assert!(status < 400, "removing the {route}: {status} {answer}");
    every_attachment_has_its_file(&server).await;
    server.stop().await;
}

#[tokio::test]
async fn removing_an_avatar_never_purges_a_file_a_message_still_holds() {
    // A database from before the one-attachment-per-blob index: a message's file also
    // attached as David's avatar (what the race above used to leave).
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let bytes = b"the shared file".to_vec();
    let (signed_id, put) = david
        .direct_upload("shared.txt", "text/plain", &bytes, &md5_base64(&bytes))
        .await;
    assert_eq!(put, 204);
    assert_eq!(post_file(&david, CLOSED_ROOM, &signed_id).await.0, 302);
    let blob = blob_id_of(&server, "shared.txt").await;
    let dir = server.stop_keeping_dir().await;
    {
        let pool = hearth::db::open(&dir.join("hearth.sqlite3")).await.unwrap();
        for sql in [
            "DROP INDEX IF EXISTS index_active_storage_attachments_one_per_blob",
            "DELETE FROM _sqlx_migrations WHERE version = 16",
        ] {
            sqlx::query(sql).execute(&pool).await.unwrap();
        }
        sqlx::query(
            "INSERT INTO active_storage_attachments (name, record_type, record_id, blob_id, created_at) \
             VALUES ('avatar', 'User', 1, ?, '2026-01-01 00:00:00.000000')",
        )
        .bind(blob)
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
    let server = TestServer::start_in(dir, |_| {}).await;
    david = Session::new(&server, DAVID, SECRET).await;
    let path = format!(
        "/rails/active_storage/blobs/redirect/{}/shared.txt",
        hearth::storage::segment(&signed_id)
    );
    let (status, answer) = post_form(&david, "/users/me/avatar", "_method=delete").await;
    assert_eq!(status, 302, "{answer}");
    let (redirect, status, _, got) = david.fetch(&path).await;
    assert_eq!(
        (redirect, status, got),
        (302, 200, bytes),
        "the message's file survives the avatar's removal"
    );
    every_attachment_has_its_file(&server).await;
    assert_eq!(
        scalar(
            &server,
            &format!("SELECT COUNT(*) FROM active_storage_attachments WHERE blob_id = {blob}")
        )
        .await,
        1,
        "the first attachment is kept, the later one deleted"
    );
    server.stop().await;
}

/// 200,000 bytes that differ from place to place.
fn media() -> Vec<u8> {
    (0..LEN)
        .map(|i| u8::try_from((i * 7 + i / 251) % 256).unwrap())
        .collect()
}

/// The disk-service URL a blob redirect of David's file named `filename` in `page` hands out.
async fn disk_url(david: &mut Session, room: i64, filename: &str) -> String {
    let page = david.client.get(&format!("/rooms/{room}")).await.body;
    let at = page.rfind(filename).expect("the file in the room");
    let start = page[..at]
        .rfind("/rails/active_storage/blobs/redirect/")
        .expect("its blob link");
    let link = page[start..]
        .split('"')
        .next()
        .unwrap()
        .replace("&amp;", "&");
    let link = link.split('?').next().unwrap().to_owned();
    // The redirect itself ignores Range: it is a 302 to the bytes.
    let (status, headers, _) = david
        .send("GET", &link, &[("Range", "bytes=0-1")], b"")
        .await;
    assert_eq!(status, 302);
    header(&headers, "location").unwrap().to_owned()
}

/// The range answers of a stored copy of [`media`] at `url`.
async fn ranges_are_served(addr: &str, url: &str, bytes: &[u8]) {
    let get = |range: Option<&'static str>, if_range: Option<String>| async move {
        let mut headers: Vec<(&str, String)> = Vec::new();
        if let Some(r) = range {
            headers.push(("Range", r.to_owned()));
        }
        if let Some(v) = if_range {
            headers.push(("If-Range", v));
        }
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        raw(addr, "GET", url, &headers, b"").await
    };
    let (status, headers, body) = get(None, None).await;
    assert_eq!(status, 200);
    assert_eq!(body, bytes);
    assert_eq!(header(&headers, "accept-ranges"), Some("bytes"));
    let etag = header(&headers, "etag").expect("an ETag").to_owned();

    let (status, headers, body) = get(Some("bytes=0-1"), None).await;
    assert_eq!(status, 206, "bytes=0-1: {headers:?}");
    assert_eq!(body, &bytes[0..2]);
    assert_eq!(header(&headers, "content-range"), Some("bytes 0-1/200000"));
    assert_eq!(header(&headers, "content-length"), Some("2"));
    assert_eq!(header(&headers, "accept-ranges"), Some("bytes"));
    assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));

    let (status, headers, body) = get(Some("bytes=-500"), None).await;
    assert_eq!(status, 206);
    assert_eq!(body, &bytes[LEN - 500..]);
    assert_eq!(
        header(&headers, "content-range"),
        Some("bytes 199500-199999/200000")
    );

    let (status, headers, body) = get(Some("bytes=100-"), None).await;
    assert_eq!(status, 206);
    assert_eq!(body, &bytes[100..]);
    assert_eq!(
        header(&headers, "content-range"),
        Some("bytes 100-199999/200000")
    );

    // Safari starts a video with `bytes=0-`: the whole file, but as a 206.
    let (status, headers, body) = get(Some("bytes=0-"), None).await;
    assert_eq!((status, body.len()), (206, LEN));
    assert_eq!(
        header(&headers, "content-range"),
        Some("bytes 0-199999/200000")
    );

    let (status, _, body) = get(Some("bytes=199990-300000"), None).await;
    assert_eq!(status, 206, "a last position past the end is cut to it");
    assert_eq!(body, &bytes[199_990..]);

    for past in ["bytes=200000-", "bytes=250000-250010"] {
        let (status, headers, body) = get(Some(past), None).await;
        assert_eq!(status, 416, "{past}");
        assert_eq!(header(&headers, "content-range"), Some("bytes */200000"));
        assert!(body.is_empty());
    }

    let (status, _, body) = get(Some("bytes=0-1,10-11"), None).await;
    assert_eq!(
        (status, body.len()),
        (200, LEN),
        "several ranges: the whole file"
    );

    let (status, _, body) = get(Some("bytes=0-1"), Some(etag)).await;
    assert_eq!(
        (status, body.len()),
        (206, 2),
        "If-Range of the current tag"
    );
    let (status, _, body) = get(Some("bytes=0-1"), Some("\"another\"".into())).await;
    assert_eq!(
        (status, body.len()),
        (200, LEN),
        "If-Range of another tag: the whole file"
    );
}

#[tokio::test]
async fn stored_files_answer_byte_ranges_with_206_and_416() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let bytes = media();
    let (signed_id, put) = david
        .direct_upload(
            "clip.bin",
            "application/octet-stream",
            &bytes,
            &md5_base64(&bytes),
        )
        .await;
    assert_eq!(put, 204);
    assert_eq!(post_file(&david, CLOSED_ROOM, &signed_id).await.0, 302);
    let url = disk_url(&mut david, CLOSED_ROOM, "clip.bin").await;
    let addr = david.addr.clone();
    ranges_are_served(&addr, &url, &bytes).await;
    server.stop().await;
}

#[tokio::test]
async fn files_in_s3_answer_byte_ranges_too() {
    let Some(moto) = crate::s3::start_moto().await else {
        return;
    };
    let server = crate::s3::hearth_on(&moto).await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let bytes = media();
    let (content_type, body) = multipart(&[], "attachment", "clip.bin", &bytes);
    let (status, _, _) = raw(
        &david.addr,
        "POST",
        &format!("/rooms/1/{BOT_KEY}/messages"),
        &[("Content-Type", content_type.as_str())],
        &body,
    )
    .await;
    assert_eq!(status, 201);
    let service: String =
        sqlx::query_scalar("SELECT service_name FROM active_storage_blobs WHERE filename = ?")
            .bind("clip.bin")
            .fetch_one(&server.state.db.pool)
            .await
            .unwrap();
    assert_eq!(service, "amazon", "the file is in the bucket");
    let url = disk_url(&mut david, 1, "clip.bin").await;
    let addr = david.addr.clone();
    ranges_are_served(&addr, &url, &bytes).await;
    server.stop().await;
}

/// `invoice` U+202E `fdp.exe`: shown as `invoiceexe.pdf` while the override is in it.
const LYING: &str = "invoice\u{202E}fdp.exe";
const HONEST: &str = "invoicefdp.exe";

/// The chip's name, its `download` attribute and the download's `Content-Disposition` of the
/// last file in `room`, which must be [`HONEST`].
async fn the_name_tells_the_truth(david: &mut Session, room: i64, how: &str) {
    let page = david.client.get(&format!("/rooms/{room}")).await.body;
    assert!(
        !page.contains('\u{202E}'),
        "{how}: no right-to-left override in the page"
    );
    let at = page.rfind("message__file-name\" title=\"").expect("a chip");
    let chip_last = page[at + 27..].split('"').next().unwrap();
    assert_eq!(chip_last, HONEST, "{how}: the chip");
    let at = page.rfind("message__file-download\" download=\"").unwrap();
    let download = page[at + 34..].split('"').next().unwrap();
    assert_eq!(download, HONEST, "{how}: the download attribute");
    let href_at = page[..at].rfind("href=\"").unwrap();
    let href = page[href_at + 6..]
        .split('"')
        .next()
        .unwrap()
        .replace("&amp;", "&");
    let (redirect, status, headers, _) = david.fetch(&href).await;
    assert_eq!((redirect, status), (302, 200), "{how}");
    assert_eq!(
        header(&headers, "content-disposition"),
        Some("attachment; filename=\"invoicefdp.exe\"; filename*=UTF-8''invoicefdp.exe"),
        "{how}: Content-Disposition"
    );
}

#[tokio::test]
async fn file_names_lose_bidirectional_controls_on_every_upload_route() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let bytes = b"MZ not really a program".to_vec();

    // A direct upload: its JSON answer already has the stored name.
    let json = serde_json::json!({"blob": {
        "filename": LYING, "content_type": "application/octet-stream",
        "byte_size": bytes.len(), "checksum": md5_base64(&bytes)
    }});
    let (status, _, body) = david
        .send(
            "POST",
            "/rails/active_storage/direct_uploads",
            &[("Content-Type", "application/json")],
            json.to_string().as_bytes(),
        )
        .await;
    assert_eq!(status, 200);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["filename"], HONEST, "the direct upload's blob");
    let (signed_id, put) = david
        .direct_upload(
            LYING,
            "application/octet-stream",
            &bytes,
            &md5_base64(&bytes),
        )
        .await;
    assert_eq!(put, 204);
    assert_eq!(post_file(&david, CLOSED_ROOM, &signed_id).await.0, 302);
    the_name_tells_the_truth(&mut david, CLOSED_ROOM, "direct upload").await;

    // The composer's multipart form.
    let (content_type, body) = multipart(
        &[("message[client_message_id]", &uuid())],
        "message[attachment]",
        LYING,
        &bytes,
    );
    let (status, _, _) = david
        .send(
            "POST",
            &format!("/rooms/{DIRECT_ROOM}/messages"),
            &[("Content-Type", content_type.as_str())],
            &body,
        )
        .await;
    assert_eq!(status, 302);
    the_name_tells_the_truth(&mut david, DIRECT_ROOM, "composer").await;

    // A bot's `curl -F`.
    let (content_type, body) = multipart(&[], "attachment", LYING, &bytes);
    let (status, _, _) = raw(
        &david.addr,
        "POST",
        &format!("/rooms/1/{BOT_KEY}/messages"),
        &[("Content-Type", content_type.as_str())],
        &body,
    )
    .await;
    assert_eq!(status, 201);
    the_name_tells_the_truth(&mut david, 1, "bot").await;

    let stored: Vec<String> = sqlx::query_scalar("SELECT filename FROM active_storage_blobs")
        .fetch_all(&server.state.db.pool)
        .await
        .unwrap();
    assert!(stored.iter().all(|n| !n.contains('\u{202E}')), "{stored:?}");
    server.stop().await;
}
