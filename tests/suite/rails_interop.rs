//! Interop with Rails' own ActiveSupport (Ruby): signed stream names Hearth makes verify in
//! Rails and names Rails makes verify in Hearth, for both key-generator digests; Hearth's signed
//! cookie carries a signature Rails accepts, and Hearth reads a cookie Rails signed.
//!
//! Needs `ruby` with ActiveSupport (Debian: `apt-get install ruby ruby-activesupport`;
//! `.ci/run` installs them when missing). The test fails, with that command, without them.

use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};

use hearth::rails::{KdfDigest, SignedCookieJar, StreamNameSigner};

const SECRET_KEY_BASE: &str = "3f1c9a7e5b2d4c6a8e0f1b3d5c7e9a1b2c4d6e8f0a1b3c5d7e9f1a2b4c6d8e0f3f1c9a7e5b2d4c6a8e0f1b3d5c7e9a1b2c4d6e8f0a1b3c5d7e9f1a2b4c6d8e0f";

fn field<'a>(out: &'a str, key: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no {key} in:\n{out}"))
}

#[test]
fn rails_and_hearth_verify_each_others_signatures() {
    let skb = SECRET_KEY_BASE.as_bytes();
    let name = "Z2lkOi8vY2FtcGZpcmUvUm9vbXM6Ok9wZW4vMQ:messages";
    let sha256 = StreamNameSigner::from_secret_key_base(skb, KdfDigest::Sha256);
    let sha1 = StreamNameSigner::from_secret_key_base(skb, KdfDigest::Sha1);
    let jar = SignedCookieJar::from_secret_key_base(skb);
    let cookie = jar.sign("session_token", "tok-from-hearth", None);

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ruby/interop.rb");
    let output = Command::new("ruby")
        .args([
            script,
            SECRET_KEY_BASE,
            &sha256.sign(name),
            &sha1.sign(name),
            &cookie,
        ])
        .output()
        .expect("ruby runs (apt-get install -y --no-install-recommends ruby ruby-activesupport)");
    let out = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    assert_eq!(field(&out, "VERIFIED_SHA256"), format!("{name:?}"));
    assert_eq!(field(&out, "VERIFIED_SHA1"), format!("{name:?}"));
    assert_eq!(
        sha256.verify(field(&out, "SIGNED_SHA256")).as_deref(),
        Some("rooms")
    );
    assert_eq!(
        sha1.verify(field(&out, "SIGNED_SHA256")),
        None,
        "a key of the other digest refuses it"
    );
    assert_eq!(
        field(&out, "COOKIE_PURPOSE"),
        "cookie.session_token",
        "{cookie}\n{out}"
    );
    assert_eq!(field(&out, "COOKIE_VALUE"), "tok-from-hearth");
    assert_eq!(
        jar.verify("session_token", field(&out, "SIGNED_COOKIE"))
            .as_deref(),
        Some("tok-from-rails")
    );
}

/// Active Storage: a blob URL Hearth makes is resolved by Rails' own Active Storage (Debian's
/// `ruby-activestorage`) with the same secret: the signed id names the blob, the variation
/// key decodes to the `thumb` transformations with the same digest, the disk URL's key names
/// the file; and a signed id Rails makes names its blob in Hearth. Needs `ruby` with
/// `ruby-activestorage` (`.ci/run` installs them when missing).
#[test]
fn rails_active_storage_resolves_hearths_blob_urls() {
    use hearth::db::blobs::{resize_to_limit, Blob};
    use hearth::rails::ActiveStorageVerifier;

    for (digest, kdf) in [("sha256", KdfDigest::Sha256), ("sha1", KdfDigest::Sha1)] {
        let verifier = ActiveStorageVerifier::from_secret_key_base(SECRET_KEY_BASE.as_bytes(), kdf);
        let storage =
            hearth::storage::Storage::new(verifier.clone(), std::env::temp_dir(), 1024, 0);
        let blob = Blob {
            id: 42,
            key: "abcdefghijklmnopqrstuvwxyz01".into(),
            filename: "page.html".into(),
            content_type: Some("text/html".into()),
            metadata: None,
            service_name: "local".into(),
            byte_size: 10,
            checksum: None,
            created_at: String::new(),
        };
        let path = hearth::storage::blob_path(&verifier, &blob, false);
        let signed_id = percent_decode(path.split('/').nth(5).expect("a signed id segment"));
        assert_eq!(signed_id, verifier.signed_blob_id(42));
        let variation_key = verifier.variation_key(&resize_to_limit(1200, 800));
        let disk = storage.disk_url(&blob, false, hearth::db::now_ms());
        let disk_token = percent_decode(disk.split('/').nth(4).expect("a token segment"));

        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ruby/active_storage.rb");
        let output = Command::new("ruby")
            .args([
                script,
                SECRET_KEY_BASE,
                digest,
                &signed_id,
                &variation_key,
                &disk_token,
            ])
            .output()
            .expect(
                "ruby runs (apt-get install -y --no-install-recommends ruby ruby-activestorage)",
            );
        let out = String::from_utf8_lossy(&output.stdout).to_string();
        assert!(
            output.status.success(),
            "{out}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(field(&out, "BLOB_ID"), "42", "{digest}");
        assert_eq!(
            field(&out, "TRANSFORMATIONS"),
            "{:resize_to_limit=>[1200, 800]}"
        );
        assert_eq!(
            field(&out, "DIGEST"),
            hearth::rails::active_storage::variation_digest(&resize_to_limit(1200, 800))
        );
        assert_eq!(field(&out, "SAME_KEY"), "true", "the very key Rails makes");
        assert_eq!(field(&out, "DISK_KEY"), blob.key);
        assert_eq!(
            field(&out, "DISK_TYPE"),
            "application/octet-stream",
            "HTML is served as binary"
        );
        assert!(field(&out, "DISK_DISPOSITION").starts_with("attachment; filename=\"page.html\""));
        assert_eq!(verifier.blob_id(field(&out, "SIGNED_BY_RAILS")), Some(77));
    }
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .expect("UTF-8")
        .into_owned()
}

/// A body Hearth stored (posted through the editor's form, with a mention picked from
/// `/autocompletable/users`) read by Rails' Action Text: the sgid locates the user under the
/// same secret_key_base, the attachment is the mention type, the plain text reads `@Jason`,
/// and the attachment rendered with the chip partial is the chip Hearth draws.
#[tokio::test]
async fn action_text_reads_a_body_hearth_stored_and_renders_the_same_mention_chip() {
    let server = common::TestServer::start_with(|c| {
        c.secret_key_base = Some(SECRET_KEY_BASE.to_owned().into());
    })
    .await;
    let mut david = server.signed_in("david@example.com", "secret123456").await;
    let (csrf, _) = david.room(1).await;
    let r = david
        .get("/autocompletable/users?room_id=1&query=Jason")
        .await;
    let people: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let sgid = people[0]["sgid"].as_str().unwrap().to_owned();
    let attachment = serde_json::json!({
        "content": "<span class=\"mention\">@Jason</span>",
        "contentType": "application/vnd.campfire.mention",
        "sgid": sgid,
    });
    let html = format!(
        "<div>Hi <figure data-trix-attachment=\"{}\" data-trix-content-type=\"application/vnd.campfire.mention\"></figure> see <strong>this</strong></div>",
        hearth::rich_text::html_escape(&attachment.to_string())
    );
    let body = common::form(&[
        ("message[body]", &html),
        ("message[body_format]", "html"),
        ("message[client_message_id]", "interop-1"),
        ("authenticity_token", &csrf),
    ]);
    let r = david.post_form("/rooms/1/messages", &body, &[]).await;
    assert_eq!(r.status, 302, "{}", r.body);
    let stored: String = sqlx::query_scalar(
        "SELECT r.body FROM action_text_rich_texts r JOIN messages m ON m.id = r.record_id \
         WHERE r.record_type = 'Message' AND r.name = 'body' AND m.client_message_id = 'interop-1'",
    )
    .fetch_one(&server.state.db.pool)
    .await
    .unwrap();

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ruby/action_text.rb");
    let mut child = Command::new("ruby")
        .args([script, SECRET_KEY_BASE, "campfire", "2=Jason"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ruby runs (apt-get install -y ruby ruby-actiontext)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stored.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(field(&out, "ATTACHABLE"), "2 Jason");
    assert_eq!(
        field(&out, "CONTENT_TYPE"),
        "application/vnd.campfire.mention"
    );
    let plain: String = serde_json::from_str(field(&out, "PLAIN_TEXT")).unwrap();
    assert_eq!(plain, hearth::rich_text::plain_text(&stored));
    assert_eq!(plain, "Hi @Jason see this");
    let rendered: String = serde_json::from_str(field(&out, "RENDERED")).unwrap();
    let chip = hearth::rich_text::mention_chip(2, "Jason");
    assert!(
        rendered.contains(&format!("{chip}</action-text-attachment>")),
        "{rendered}"
    );
    let (hearth_rendered, ids) = hearth::rich_text::render(&stored);
    assert_eq!(ids, [2]);
    assert!(hearth_rendered.contains(&format!("{chip}</action-text-attachment>")));
}
