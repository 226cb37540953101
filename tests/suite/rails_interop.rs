//! Interop with Rails' own ActiveSupport (Ruby): signed stream names Hearth makes verify in
//! Rails and names Rails makes verify in Hearth, for both key-generator digests; Hearth's signed
//! cookie carries a signature Rails accepts, and Hearth reads a cookie Rails signed.
//!
//! Needs `ruby` with ActiveSupport (Debian: `apt-get install ruby ruby-activesupport`;
//! `.ci/run` installs them when missing). The test fails, with that command, without them.

use std::process::Command;

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
