//! Avatars and the account logo over real HTTP: `/users/:id/avatar` (upload, the square
//! variant, versioned URLs and their caching, the initials fallback, removal, bots' avatars by
//! administrators), the avatar in messages, broadcasts and the sidebar, `/account/logo` (the
//! favicon, the web-app icons of `/webmanifest`, administrators only), EXIF orientation, and
//! the refusals (not an image, oversize, someone else's avatar, signed out, non-administrators).

use crate::common::TestServer;
use crate::files::{header, md5_base64, multipart, png, Session};

const DAVID: &str = "david@example.com";
const JASON: &str = "jason@example.com";
const SECRET: &str = "secret123456";
const BENDER: i64 = 5;

fn decode(bytes: &[u8]) -> image::DynamicImage {
    image::load_from_memory(bytes).expect("an image")
}

/// A JPEG of `width`×`height`, red on its left half and blue on its right, carrying an EXIF
/// `Orientation` of `orientation` (an APP1 segment right after SOI, as cameras write it).
fn jpeg_with_orientation(width: u32, height: u32, orientation: u16) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, _| {
        if x < width / 2 {
            image::Rgb([220, 20, 20])
        } else {
            image::Rgb([20, 20, 220])
        }
    });
    let mut jpeg = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(
            &mut std::io::Cursor::new(&mut jpeg),
            image::ImageOutputFormat::Jpeg(90),
        )
        .unwrap();
    let mut tiff = b"MM\x00\x2a\x00\x00\x00\x08\x00\x01\x01\x12\x00\x03\x00\x00\x00\x01".to_vec();
    tiff.extend_from_slice(&orientation.to_be_bytes());
    tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    let mut segment = b"Exif\x00\x00".to_vec();
    segment.extend_from_slice(&tiff);
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&u16::try_from(segment.len() + 2).unwrap().to_be_bytes());
    out.extend_from_slice(&segment);
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// Uploads `file` as `field` of a multipart POST to `path`: (status, location).
async fn upload(
    s: &Session,
    path: &str,
    field: &str,
    filename: &str,
    file: &[u8],
) -> (u16, String) {
    let (content_type, body) = multipart(&[], field, filename, file);
    let (status, headers, answer) = s
        .send(
            "POST",
            path,
            &[("Content-Type", content_type.as_str())],
            &body,
        )
        .await;
    if status >= 400 {
        eprintln!("{path}: {status} {}", String::from_utf8_lossy(&answer));
    }
    (
        status,
        header(&headers, "location").unwrap_or("").to_owned(),
    )
}

/// GET `path` with the session: (status, headers, bytes).
async fn get(s: &Session, path: &str) -> (u16, Vec<(String, String)>, Vec<u8>) {
    s.send("GET", path, &[], b"").await
}

/// The first `src="/users/<id>/avatar?v=…"` in `html`.
fn avatar_src(html: &str, user_id: i64) -> Option<String> {
    let marker = format!("src=\"/users/{user_id}/avatar?v=");
    let start = html.find(&marker)? + 5;
    let end = start + html[start..].find('"')?;
    Some(html[start..end].to_owned())
}

#[tokio::test]
async fn an_uploaded_avatar_is_a_square_of_at_most_512_px_shown_in_messages_and_the_sidebar() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    // Before: the initials, drawn in the page and served as SVG.
    let page = david.client.get("/rooms/1").await.body;
    assert!(avatar_src(&page, 1).is_none(), "no avatar yet");
    let (status, headers, body) = get(&david, "/users/1/avatar").await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("image/svg+xml"));
    assert!(
        String::from_utf8_lossy(&body).contains(">D<"),
        "David's initial"
    );

    let (status, location) = upload(
        &david,
        "/users/me/avatar",
        "user[avatar]",
        "me.png",
        &png(900, 600),
    )
    .await;
    assert_eq!((status, location.as_str()), (302, "/users/me/profile"));

    // The room page: the sidebar's own avatar and every message of David's carry the photo.
    let page = david.client.get("/rooms/1").await.body;
    let src = avatar_src(&page, 1).expect("the avatar in the page");
    let me = page
        .find("class=\"sidebar__me")
        .expect("the sidebar's own link");
    let me = &page[me..me + 300];
    assert!(
        me.contains(&format!("<img src=\"{src}\"")) && !me.contains("<svg"),
        "the sidebar's avatar is the photo: {me}"
    );
    let in_messages = page
        .matches(&format!("<img src=\"{src}\" width=\"36\""))
        .count();
    assert!(in_messages > 0, "David's messages show the photo");

    // The versioned URL: the square variant, kept a year.
    let (status, headers, body) = get(&david, &src).await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), Some("image/png"));
    assert_eq!(
        header(&headers, "cache-control"),
        Some("private, max-age=31536000, immutable")
    );
    assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"));
    let img = decode(&body);
    assert_eq!((img.width(), img.height()), (512, 512));
    // Without (or with a stale) version: revalidated, and the ETag answers 304.
    let (_, headers, _) = get(&david, "/users/1/avatar").await;
    assert_eq!(header(&headers, "cache-control"), Some("private, no-cache"));
    let etag = header(&headers, "etag").unwrap().to_owned();
    let (status, _, _) = david
        .send(
            "GET",
            "/users/1/avatar",
            &[("If-None-Match", etag.as_str())],
            b"",
        )
        .await;
    assert_eq!(status, 304);

    // A new post carries it in its broadcast (the turbo-stream answer is the same partial).
    let answer = david
        .client
        .post_message(1, "with a face", &crate::files::uuid(), &david.csrf)
        .await;
    assert!(
        answer.body.contains(&src),
        "the new message's partial has the avatar"
    );

    // Others see it too; a second upload is a new version (a new URL).
    let mut jason = Session::new(&server, JASON, SECRET).await;
    let (status, _, _) = get(&jason, &src).await;
    assert_eq!(status, 200);
    let (status, _) = upload(
        &david,
        "/users/1/avatar",
        "user[avatar]",
        "me2.png",
        &png(300, 300),
    )
    .await;
    assert_eq!(status, 302);
    let page = jason.client.get("/rooms/1").await.body;
    let newer = avatar_src(&page, 1).unwrap();
    assert_ne!(newer, src, "a new avatar is a new URL");
    // The old blob and its variant are gone.
    let (_, headers, _) = get(&jason, &src).await;
    assert_eq!(
        header(&headers, "cache-control"),
        Some("private, no-cache"),
        "a stale version is not kept"
    );
    let (_, _, body) = get(&jason, &newer).await;
    let img = decode(&body);
    assert_eq!((img.width(), img.height()), (300, 300), "never scaled up");

    // Removing it brings the initials back.
    let (status, headers, _) = david
        .send(
            "POST",
            "/users/me/avatar",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"_method=delete",
        )
        .await;
    assert_eq!(
        (status, header(&headers, "location")),
        (302, Some("/users/me/profile"))
    );
    let page = jason.client.get("/rooms/1").await.body;
    assert!(avatar_src(&page, 1).is_none());
    let (_, headers, _) = get(&jason, "/users/1/avatar").await;
    assert_eq!(header(&headers, "content-type"), Some("image/svg+xml"));
    server.stop().await;
}

#[tokio::test]
async fn a_wide_avatar_is_cropped_to_its_middle_square() {
    let server = TestServer::start().await;
    let jason = Session::new(&server, JASON, SECRET).await;
    let (status, _) = upload(
        &jason,
        "/users/2/avatar",
        "avatar",
        "wide.png",
        &png(200, 80),
    )
    .await;
    assert_eq!(status, 302);
    let mut client = jason.client.clone();
    let page = client.get("/users/me/profile").await.body;
    let src = avatar_src(&page, 2).expect("the profile page shows the avatar");
    assert!(page.contains("Remove"), "and offers to remove it");
    let (_, _, body) = get(&jason, &src).await;
    let img = decode(&body);
    assert_eq!((img.width(), img.height()), (80, 80));
    server.stop().await;
}

#[tokio::test]
async fn avatars_refuse_what_is_not_an_image_oversize_files_and_other_peoples_avatars() {
    let server = TestServer::start_with(|c| c.max_upload_bytes = 64 * 1024).await;
    let david = Session::new(&server, DAVID, SECRET).await;
    let jason = Session::new(&server, JASON, SECRET).await;
    let pool = server.state.db.pool.clone();
    let blobs = || hearth::db::blobs::count(&pool);
    let before = blobs().await.unwrap();
    // Not an image (the type comes from the bytes, whatever the name says).
    let (status, _) = upload(
        &jason,
        "/users/me/avatar",
        "user[avatar]",
        "face.png",
        b"<html><script>alert(1)</script></html>",
    )
    .await;
    assert_eq!(status, 422);
    // Claims to be a PNG, is not one the decoder reads.
    let mut broken = png(64, 64);
    broken.truncate(200);
    let (status, _) = upload(
        &jason,
        "/users/me/avatar",
        "user[avatar]",
        "broken.png",
        &broken,
    )
    .await;
    assert_eq!(status, 422);
    // Over --max-upload-bytes.
    let big = vec![0u8; 80 * 1024];
    let (status, _) = upload(&jason, "/users/me/avatar", "user[avatar]", "big.png", &big).await;
    assert_eq!(status, 413);
    assert_eq!(blobs().await.unwrap(), before, "nothing is kept");

    // Someone else's avatar: not even an administrator may set a person's; a bot's:
    // administrators only; an unknown user's: 404.
    for (who, path, expected) in [
        (&jason, "/users/1/avatar".to_owned(), 403),
        (&david, "/users/2/avatar".to_owned(), 403),
        (&jason, format!("/users/{BENDER}/avatar"), 403),
        (&david, "/users/999999/avatar".to_owned(), 404),
    ] {
        let (status, _) = upload(who, &path, "user[avatar]", "x.png", &png(20, 20)).await;
        assert_eq!(status, expected, "{path}");
    }
    let (status, _, _) = jason
        .send(
            "POST",
            "/users/1/avatar",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"_method=delete",
        )
        .await;
    assert_eq!(status, 403);
    // Signed-out readers.
    let (status, _, _) = get(&jason, "/users/999999/avatar").await;
    assert_eq!(status, 404);
    let addr = server.origin().trim_start_matches("http://").to_owned();
    let (status, _, _) = crate::files::raw(&addr, "GET", "/users/1/avatar", &[], b"").await;
    assert_eq!(status, 401);
    // Without the CSRF header the streamed form is refused.
    let (content_type, body) = multipart(&[], "user[avatar]", "x.png", &png(20, 20));
    let cookie = jason.client.cookie_header();
    let (status, _, _) = crate::files::raw(
        &addr,
        "POST",
        "/users/me/avatar",
        &[
            ("Cookie", cookie.as_str()),
            ("Content-Type", content_type.as_str()),
        ],
        &body,
    )
    .await;
    assert_eq!(status, 422);
    // A direct upload's signed id works, but only the uploader's own.
    let bytes = png(40, 40);
    let (signed_id, put) = david
        .direct_upload("d.png", "image/png", &bytes, &md5_base64(&bytes))
        .await;
    assert_eq!(put, 204);
    let form = format!("user%5Bavatar%5D={}", urlencode(&signed_id));
    let (status, _, _) = jason
        .send(
            "POST",
            "/users/me/avatar",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            form.as_bytes(),
        )
        .await;
    assert_eq!(status, 422, "someone else's upload");
    let (status, _, _) = david
        .send(
            "POST",
            "/users/me/avatar",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            form.as_bytes(),
        )
        .await;
    assert_eq!(status, 302, "one's own direct upload");
    server.stop().await;
}

fn urlencode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[tokio::test]
async fn administrators_give_bots_avatars_shown_on_the_bots_page_and_in_their_posts() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let page = david.client.get("/account/bots").await.body;
    assert!(
        page.contains(&format!("src=\"/users/{BENDER}/avatar?v=0\"")),
        "the bot picture before"
    );
    let (_, headers, body) = get(&david, &format!("/users/{BENDER}/avatar?v=0")).await;
    assert_eq!(header(&headers, "content-type"), Some("image/svg+xml"));
    assert!(
        String::from_utf8_lossy(&body).contains("<circle"),
        "the bot picture, not initials"
    );
    let (status, location) = upload(
        &david,
        &format!("/users/{BENDER}/avatar"),
        "user[avatar]",
        "bender.png",
        &png(128, 128),
    )
    .await;
    assert_eq!((status, location.as_str()), (302, "/account/bots"));
    let page = david.client.get("/account/bots").await.body;
    let src = avatar_src(&page, BENDER).unwrap();
    assert_ne!(src, format!("/users/{BENDER}/avatar?v=0"));
    // The bot's post shows it.
    let addr = server.origin().trim_start_matches("http://").to_owned();
    let (status, _, _) = crate::files::raw(
        &addr,
        "POST",
        "/rooms/1/5-bNd3rB0tK3y7/messages",
        &[("Content-Type", "text/plain")],
        b"beep",
    )
    .await;
    assert_eq!(status, 201);
    let page = david.client.get("/rooms/1").await.body;
    assert!(page.contains(&format!("<img src=\"{src}\" width=\"36\"")));
    server.stop().await;
}

#[tokio::test]
async fn a_sideways_jpeg_is_turned_upright_in_its_thumbnail_and_avatar() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    // 1600×400 stored, orientation 6 (turn 90° clockwise to show): 400×1600 upright.
    let photo = jpeg_with_orientation(1600, 400, 6);
    let (signed_id, put) = david
        .direct_upload("sideways.jpg", "image/jpeg", &photo, &md5_base64(&photo))
        .await;
    assert_eq!(put, 204);
    assert_eq!(david.post_signed(4, &signed_id).await, 200);
    let mut thumb = None;
    for _ in 0..100 {
        let page = david.client.get("/rooms/4").await.body;
        if let Some(start) = page.find("<img src=\"/rails/active_storage/representations/redirect/")
        {
            thumb = crate::common::attr_after(&page[start..], "<img src=\"")
                .map(|s| s.replace("&amp;", "&"));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let thumb = thumb.expect("the thumbnail was made");
    let (_, status, _, bytes) = david.fetch(&thumb).await;
    assert_eq!(status, 200);
    let img = decode(&bytes);
    assert_eq!(
        (img.width(), img.height()),
        (200, 800),
        "upright, within 1200×800"
    );
    // The width and height analysed are the upright ones.
    let metadata: String = sqlx::query_scalar(
        "SELECT metadata FROM active_storage_blobs WHERE filename = 'sideways.jpg'",
    )
    .fetch_one(&server.state.db.pool)
    .await
    .unwrap();
    let metadata: serde_json::Value = serde_json::from_str(&metadata).unwrap();
    assert_eq!(
        (metadata["width"].as_i64(), metadata["height"].as_i64()),
        (Some(400), Some(1600)),
        "analysed upright"
    );

    // An avatar from a sideways photo: after turning, its top is the red (left) half.
    let photo = jpeg_with_orientation(80, 40, 6);
    let (status, _) = upload(&david, "/users/me/avatar", "user[avatar]", "me.jpg", &photo).await;
    assert_eq!(status, 302);
    let page = david.client.get("/users/me/profile").await.body;
    let src = avatar_src(&page, 1).unwrap();
    let (_, headers, bytes) = get(&david, &src).await;
    assert_eq!(header(&headers, "content-type"), Some("image/jpeg"));
    let img = decode(&bytes).to_rgb8();
    assert_eq!(img.dimensions(), (40, 40));
    let top_right = img.get_pixel(32, 4);
    let bottom_left = img.get_pixel(4, 36);
    assert!(
        top_right[0] > 150 && top_right[2] < 100,
        "top right is red: {top_right:?}"
    );
    assert!(
        bottom_left[2] > 150 && bottom_left[0] < 100,
        "bottom left is blue: {bottom_left:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn the_account_logo_is_the_favicon_and_the_web_app_icons_and_only_administrators_change_it() {
    let server = TestServer::start().await;
    let mut david = Session::new(&server, DAVID, SECRET).await;
    let jason = Session::new(&server, JASON, SECRET).await;
    let addr = server.origin().trim_start_matches("http://").to_owned();
    // The stock icon, to anyone, at both sizes.
    for (path, size) in [("/account/logo", 512), ("/account/logo?size=small", 192)] {
        let (status, headers, body) = crate::files::raw(&addr, "GET", path, &[], b"").await;
        assert_eq!(status, 200);
        assert_eq!(header(&headers, "content-type"), Some("image/png"));
        let img = decode(&body);
        assert_eq!((img.width(), img.height()), (size, size), "{path}");
    }
    let manifest: serde_json::Value = {
        let (_, _, body) = crate::files::raw(&addr, "GET", "/webmanifest", &[], b"").await;
        serde_json::from_slice(&body).unwrap()
    };
    assert_eq!(manifest["icons"][0]["src"], "/account/logo?size=small&v=0");
    assert_eq!(manifest["icons"][1]["src"], "/account/logo?v=0");

    // Not an administrator: refused, nothing changes.
    let logo = jpeg_with_orientation(300, 200, 1);
    let (status, _) = upload(&jason, "/account/logo", "account[logo]", "logo.jpg", &logo).await;
    assert_eq!(status, 403);
    let (status, _, _) = jason
        .send(
            "POST",
            "/account/logo",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"_method=delete",
        )
        .await;
    assert_eq!(status, 403);
    // Not an image.
    let (status, _) = upload(
        &david,
        "/account/logo",
        "account[logo]",
        "logo.svg",
        b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    )
    .await;
    assert_eq!(status, 422);

    let (status, location) =
        upload(&david, "/account/logo", "account[logo]", "logo.jpg", &logo).await;
    assert_eq!((status, location.as_str()), (302, "/account/edit"));
    let manifest: serde_json::Value = {
        let (_, _, body) = crate::files::raw(&addr, "GET", "/webmanifest", &[], b"").await;
        serde_json::from_slice(&body).unwrap()
    };
    let small = manifest["icons"][0]["src"].as_str().unwrap().to_owned();
    let large = manifest["icons"][1]["src"].as_str().unwrap().to_owned();
    assert!(
        small.starts_with("/account/logo?size=small&v=") && !small.ends_with("v=0"),
        "{small}"
    );
    for (path, size) in [(&large, 512), (&small, 192)] {
        let (status, headers, body) = crate::files::raw(&addr, "GET", path, &[], b"").await;
        assert_eq!(status, 200);
        assert_eq!(header(&headers, "content-type"), Some("image/png"));
        assert_eq!(
            header(&headers, "cache-control"),
            Some("public, max-age=31536000, immutable")
        );
        let img = decode(&body).to_rgb8();
        assert_eq!(img.dimensions(), (size, size), "{path}");
        assert!(
            img.get_pixel(size / 2 - size / 8, size / 2)[0] > 150,
            "the logo itself, not the stock icon"
        );
    }
    // Every page's favicon and the sign-in page show it.
    let page = david.client.get("/account/edit").await.body;
    let icon = page.find("<link rel=\"icon\"").map(|i| &page[i..i + 100]);
    assert!(
        page.contains(&format!(
            "<link rel=\"icon\" href=\"{}\" type=\"image/png\">",
            small.replace('&', "&#38;")
        )),
        "favicon: {icon:?}"
    );
    let (_, _, body) = crate::files::raw(&addr, "GET", "/session/new", &[], b"").await;
    assert!(String::from_utf8_lossy(&body).contains("class=\"account-logo__image sign-in__logo\""));

    // Removed: the stock icon again.
    let (status, _, _) = david
        .send(
            "POST",
            "/account/logo",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            b"_method=delete",
        )
        .await;
    assert_eq!(status, 302);
    let (_, _, body) = crate::files::raw(&addr, "GET", &large, &[], b"").await;
    assert_eq!(body, include_bytes!("../../assets/pwa/icon-512.png"));
    server.stop().await;
}
