//! Files over real HTTP: Active Storage's direct-upload protocol, the disk service, blob and
//! representation URLs, thumbnails, bots' `-F` uploads, and the refusals (size, checksum,
//! non-members, runnable types).

use base64::Engine as _;

use crate::common::{self, csrf_meta, form, Client, TestServer};
use md5::Digest as _;

const DAVID: &str = "david@example.com";
const SECRET: &str = "secret123456";
const BOT_KEY: &str = "5-bNd3rB0tK3y7";
/// Designers: David, Jason, JZ, Kevin (and not user1).
const CLOSED_ROOM: i64 = 4;

pub(crate) fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x * y) % 251) as u8])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(
            &mut std::io::Cursor::new(&mut out),
            image::ImageOutputFormat::Png,
        )
        .unwrap();
    out
}

pub(crate) fn md5_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(bytes))
}

pub(crate) fn multipart(
    fields: &[(&str, &str)],
    file_field: &str,
    filename: &str,
    file: &[u8],
) -> (String, Vec<u8>) {
    let boundary = "----hearthtestboundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{file_field}\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// One raw request, keeping the body as bytes.
pub(crate) async fn raw(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(req.as_bytes()).await.unwrap();
    let _ = stream.write_all(body).await;
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out).await;
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = out[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    (status, headers, body)
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&body[..end]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[end + 2..end + 2 + size]);
        body = &body[end + 4 + size..];
    }
}

pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

pub(crate) struct Session {
    pub(crate) client: Client,
    pub(crate) csrf: String,
    pub(crate) addr: String,
}

impl Session {
    pub(crate) async fn new(server: &TestServer, email: &str, password: &str) -> Self {
        let mut client = server.signed_in(email, password).await;
        let (csrf, _) = client.room(1).await;
        Self {
            client,
            csrf,
            addr: server.origin().trim_start_matches("http://").to_owned(),
        }
    }

    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let cookie = self.client.cookie_header();
        let mut all = vec![
            ("Cookie", cookie.as_str()),
            ("X-CSRF-Token", self.csrf.as_str()),
        ];
        all.extend_from_slice(headers);
        raw(&self.addr, method, path, &all, body).await
    }

    /// `@rails/activestorage`'s two steps: the blob record, then the PUT. Returns the signed
    /// id and the PUT's status.
    pub(crate) async fn direct_upload(
        &self,
        filename: &str,
        content_type: &str,
        bytes: &[u8],
        checksum: &str,
    ) -> (String, u16) {
        let json = serde_json::json!({"blob": {
            "filename": filename, "content_type": content_type,
            "byte_size": bytes.len(), "checksum": checksum
        }});
        let (status, _, body) = self
            .send(
                "POST",
                "/rails/active_storage/direct_uploads",
                &[("Content-Type", "application/json")],
                json.to_string().as_bytes(),
            )
            .await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let signed_id = answer["signed_id"].as_str().unwrap().to_owned();
        let url = answer["direct_upload"]["url"].as_str().unwrap().to_owned();
        assert_eq!(
            answer["direct_upload"]["headers"]["Content-Type"],
            content_type
        );
        let (put, _, _) = raw(
            &self.addr,
            "PUT",
            &url,
            &[("Content-Type", content_type), ("Content-MD5", checksum)],
            bytes,
        )
        .await;
        (signed_id, put)
    }

    pub(crate) async fn post_signed(&self, room: i64, signed_id: &str) -> u16 {
        let body = form(&[
            ("message[attachment]", signed_id),
            ("message[client_message_id]", &uuid()),
        ]);
        let (status, _, answer) = self
            .send(
                "POST",
                &format!("/rooms/{room}/messages"),
                &[
                    ("Content-Type", "application/x-www-form-urlencoded"),
                    ("Accept", "text/vnd.turbo-stream.html"),
                ],
                body.as_bytes(),
            )
            .await;
        if status != 200 {
            eprintln!("post: {status} {}", String::from_utf8_lossy(&answer));
        }
        status
    }

    /// Follows a blob or representation URL to the bytes: (redirect status, final status, headers, bytes).
    pub(crate) async fn fetch(&self, path: &str) -> (u16, u16, Vec<(String, String)>, Vec<u8>) {
        let (status, headers, _) = self.send("GET", path, &[], b"").await;
        if status != 302 {
            return (status, 0, headers, Vec::new());
        }
        let location = header(&headers, "location").unwrap().to_owned();
        let (s2, h2, b2) = raw(&self.addr, "GET", &location, &[], b"").await;
        (status, s2, h2, b2)
    }
}

pub(crate) fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The `src`/`href` after `marker` in the room page's last message with a file.
async fn room_page(s: &mut Session, room: i64) -> String {
    s.client.get(&format!("/rooms/{room}")).await.body
}

#[tokio::test]
async fn a_direct_upload_becomes_a_message_with_a_thumbnail_within_1200_by_800() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let original = png(2400, 1000);
    let (signed_id, put) = david
        .direct_upload("wide.png", "image/png", &original, &md5_base64(&original))
        .await;
    assert_eq!(put, 204);
    assert_eq!(david.post_signed(CLOSED_ROOM, &signed_id).await, 200);
    // The post answered before processing; the thumbnail follows.
    let mut page = String::new();
    for _ in 0..100 {
        page = room_page(&mut david, CLOSED_ROOM).await;
        if page.contains("/rails/active_storage/representations/redirect/") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let src = common::attr_after(
        &page,
        "class=\"message__attachment-link message__attachment-link--image\"",
    )
    .map(|_| ())
    .and_then(|()| common::attr_after(&page, "<img src=\""))
    .expect("an image in the message");
    assert!(
        src.starts_with("/rails/active_storage/representations/redirect/"),
        "{src}"
    );
    assert!(
        page.contains("width=\"1200\" height=\"500\""),
        "shown at the thumbnail's size"
    );
    let (redirect, status, headers, thumb) = david.fetch(&src.replace("&amp;", "&")).await;
    assert_eq!((redirect, status), (302, 200));
    assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
    let decoded = image::load_from_memory(&thumb).unwrap();
    assert!(
        decoded.width() <= 1200 && decoded.height() <= 800,
        "{}x{}",
        decoded.width(),
        decoded.height()
    );
    assert_eq!((decoded.width(), decoded.height()), (1200, 500));
    assert!(
        thumb.len() < original.len(),
        "{} vs {}",
        thumb.len(),
        original.len()
    );
    // The original, by its blob URL, is the uploaded bytes.
    let href = common::attr_after(
        &page,
        "message__attachment-link--image\" data-lightbox-download=\"",
    )
    .unwrap();
    let (_, status, headers, bytes) = david.fetch(&href.replace("&amp;", "&")).await;
    assert_eq!(status, 200);
    assert_eq!(bytes, original);
    assert!(header(&headers, "content-disposition")
        .unwrap()
        .starts_with("attachment;"));
    server.stop().await;
}

#[tokio::test]
async fn a_wrong_checksum_or_size_is_refused_and_nothing_is_kept() {
    let server = TestServer::start().await;
    let david = Session::new(&server, DAVID, SECRET).await;
    let bytes = png(40, 30);
    let wrong = md5_base64(b"something else");
    let (signed_id, put) = david
        .direct_upload("a.png", "image/png", &bytes, &wrong)
        .await;
    assert_eq!(put, 422);
    assert_eq!(
        david.post_signed(CLOSED_ROOM, &signed_id).await,
        422,
        "an upload that never finished cannot be attached"
    );
    let dir_files = count_files(&server.dir);
    assert_eq!(dir_files, 0, "no file under the storage root");
    // A different byte count than declared.
    let json = serde_json::json!({"blob": {"filename": "b.png", "content_type": "image/png", "byte_size": bytes.len() + 5, "checksum": md5_base64(&bytes)}});
    let (_, _, body) = david
        .send(
            "POST",
            "/rails/active_storage/direct_uploads",
            &[("Content-Type", "application/json")],
            json.to_string().as_bytes(),
        )
        .await;
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let url = answer["direct_upload"]["url"].as_str().unwrap();
    let (put, _, _) = raw(
        &david.addr,
        "PUT",
        url,
        &[("Content-Type", "image/png")],
        &bytes,
    )
    .await;
    assert_eq!(put, 422);
    // A forged token.
    let (put, _, _) = raw(
        &david.addr,
        "PUT",
        "/rails/active_storage/disk/forged--abc",
        &[],
        &bytes,
    )
    .await;
    assert_eq!(put, 404);
    assert_eq!(count_files(&server.dir), 0);
    server.stop().await;
}

pub(crate) fn count_files(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let path = entry.path();
        if path.is_dir() && name.len() == 2 {
            for sub in std::fs::read_dir(&path).unwrap().flatten() {
                n += std::fs::read_dir(sub.path())
                    .map(|d| d.count())
                    .unwrap_or(0);
            }
        } else if path.is_dir() && name == "tmp" {
            n += std::fs::read_dir(&path).unwrap().count();
        }
    }
    n
}

#[tokio::test]
async fn oversize_uploads_are_refused_before_they_are_stored() {
    let server = TestServer::start_with(|c| c.max_upload_bytes = 64 * 1024).await;
    let david = Session::new(&server, DAVID, SECRET).await;
    let json = serde_json::json!({"blob": {"filename": "big.bin", "content_type": "application/octet-stream", "byte_size": 64 * 1024 + 1, "checksum": md5_base64(b"x")}});
    let (status, _, _) = david
        .send(
            "POST",
            "/rails/active_storage/direct_uploads",
            &[("Content-Type", "application/json")],
            json.to_string().as_bytes(),
        )
        .await;
    assert_eq!(status, 413);
    let big = vec![7u8; 200 * 1024];
    let (ct, body) = multipart(
        &[("message[client_message_id]", &uuid())],
        "message[attachment]",
        "big.bin",
        &big,
    );
    let (status, _, _) = david
        .send(
            "POST",
            &format!("/rooms/{CLOSED_ROOM}/messages"),
            &[("Content-Type", &ct)],
            &body,
        )
        .await;
    assert_eq!(status, 413);
    let (status, _, _) = raw(
        &david.addr,
        "POST",
        &format!("/rooms/1/{BOT_KEY}/messages"),
        &[("Content-Type", &ct)],
        &body,
    )
    .await;
    assert_eq!(status, 413);
    assert_eq!(count_files(&server.dir), 0);
    server.stop().await;
}

#[tokio::test]
async fn a_bot_posts_a_file_with_curl_f_and_html_is_served_as_a_download() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let html = b"<!DOCTYPE html><script>alert(document.cookie)</script>";
    let (ct, body) = multipart(&[], "attachment", "page.png", html);
    let (status, headers, _) = raw(
        &david.addr,
        "POST",
        &format!("/rooms/1/{BOT_KEY}/messages"),
        &[("Content-Type", &ct)],
        &body,
    )
    .await;
    assert_eq!(status, 201);
    assert!(header(&headers, "location")
        .unwrap()
        .starts_with("/rooms/1/@"));
    let page = room_page(&mut david, 1).await;
    assert!(
        page.contains("message__file-name\" title=\"page.png\""),
        "a file chip, not an image"
    );
    let start = page.rfind("/rails/active_storage/blobs/redirect/").unwrap();
    let href = page[start..].split('"').next().unwrap().to_owned();
    // Even the inline URL of the blob serves it as a download.
    let inline = href.split('?').next().unwrap().to_owned();
    let (redirect, status, headers, bytes) = david.fetch(&inline.replace("&amp;", "&")).await;
    assert_eq!((redirect, status), (302, 200));
    assert_eq!(bytes, html);
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/octet-stream")
    );
    assert!(
        header(&headers, "content-disposition")
            .unwrap()
            .starts_with("attachment;"),
        "{headers:?}"
    );
    assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
    assert!(header(&headers, "content-security-policy")
        .unwrap()
        .contains("sandbox"));
    // A bot's image gets a thumbnail too.
    let (ct, body) = multipart(
        &[("body", "a chart")],
        "attachment",
        "chart.png",
        &png(100, 80),
    );
    let (status, _, _) = raw(
        &david.addr,
        "POST",
        &format!("/rooms/1/{BOT_KEY}/messages"),
        &[("Content-Type", &ct)],
        &body,
    )
    .await;
    assert_eq!(status, 201);
    server.stop().await;
}

#[tokio::test]
async fn non_members_cannot_read_a_rooms_files_and_deleting_the_message_deletes_them() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let bytes = b"quarterly numbers".to_vec();
    let (signed_id, put) = david
        .direct_upload("numbers.txt", "text/plain", &bytes, &md5_base64(&bytes))
        .await;
    assert_eq!(put, 204);
    assert_eq!(david.post_signed(CLOSED_ROOM, &signed_id).await, 200);
    let path = format!(
        "/rails/active_storage/blobs/redirect/{}/numbers.txt",
        hearth::storage::segment(&signed_id)
    );
    let (redirect, status, _, got) = david.fetch(&path).await;
    assert_eq!((redirect, status), (302, 200));
    assert_eq!(got, bytes);
    let outsider = Session::new(&server, "user1@example.com", "password").await;
    let (status, _, _, _) = outsider.fetch(&path).await;
    assert_eq!(status, 404, "not a member of the room");
    let (status, _, _) = raw(&david.addr, "GET", &path, &[], b"").await;
    assert_eq!(status, 404, "signed out");
    // Another user cannot attach David's upload.
    let (signed2, _) = david
        .direct_upload("n2.txt", "text/plain", &bytes, &md5_base64(&bytes))
        .await;
    assert_eq!(outsider.post_signed(1, &signed2).await, 422);
    // Deleting the message deletes its file.
    assert_eq!(count_files(&server.dir), 2);
    let page = room_page(&mut david, CLOSED_ROOM).await;
    let at = page.rfind("numbers.txt").unwrap();
    let id_at = page[..at].rfind("data-message-id=\"").unwrap();
    let id: String = page[id_at + 17..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let (status, _, _) = david
        .send(
            "POST",
            &format!("/rooms/{CLOSED_ROOM}/messages/{id}"),
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"_method=delete",
        )
        .await;
    assert_eq!(status, 302);
    assert_eq!(
        count_files(&server.dir),
        1,
        "only the unattached upload is left"
    );
    let (status, _, _, _) = david.fetch(&path).await;
    assert_eq!(status, 404);
    server.stop().await;
}

#[tokio::test]
async fn the_composer_multipart_form_posts_one_file() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let (ct, body) = multipart(
        &[("message[client_message_id]", "file-post-1")],
        "message[attachment]",
        "notes.pdf",
        b"%PDF-1.4 tiny",
    );
    let (status, _, answer) = david
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
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.contains("message_file-post-1") && answer.contains("notes.pdf"),
        "{answer}"
    );
    // Without the CSRF header the form is refused.
    let (status, _, _) = raw(
        &david.addr,
        "POST",
        &format!("/rooms/{CLOSED_ROOM}/messages"),
        &[
            ("Content-Type", &ct),
            ("Cookie", &david.client.cookie_header()),
        ],
        &body,
    )
    .await;
    assert_eq!(status, 422);
    let _ = room_page(&mut david, CLOSED_ROOM).await;
    let _ = csrf_meta;
    server.stop().await;
}
