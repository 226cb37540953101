//! Rails' signed cookie verifier: any cookie value is read or refused without a panic, also
//! when its MAC is valid and only the envelope (purpose, expiry, data) is hostile; a value
//! signed here reads back before its expiry and not after.
#![no_main]

use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

use hearth::rails::SignedCookieJar;
use libfuzzer_sys::fuzz_target;

fn jar() -> &'static SignedCookieJar {
    static JAR: OnceLock<SignedCookieJar> = OnceLock::new();
    JAR.get_or_init(|| SignedCookieJar::from_secret_key_base(b"fuzzing cookie verifier"))
}

fuzz_target!(|data: &[u8]| {
    let jar = jar();
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = jar.verify_at("session_token", text, now);
        let signed = jar.sign("session_token", text, Some(now + Duration::from_secs(60)));
        assert_eq!(
            jar.verify_at("session_token", &signed, now).as_deref(),
            Some(text)
        );
        assert_eq!(
            jar.verify_at("session_token", &signed, now + Duration::from_secs(61)),
            None
        );
        assert_eq!(jar.verify_at("other", &signed, now), None);
    }
    let envelope = jar.sign_envelope(data);
    let _ = jar.verify_at("session_token", &envelope, now);
});
