//! Turbo's signed stream verifier: any token is verified or refused without a panic; a name
//! signed here verifies to itself, and a token with one byte changed does not verify to it.
#![no_main]

use std::sync::OnceLock;

use hearth::rails::StreamNameSigner;
use libfuzzer_sys::fuzz_target;

fn signer() -> &'static StreamNameSigner {
    static SIGNER: OnceLock<StreamNameSigner> = OnceLock::new();
    SIGNER.get_or_init(|| StreamNameSigner::from_raw_key(b"fuzzing stream verifier key"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let signer = signer();
    let _ = signer.verify(text);
    let signed = signer.sign(text);
    assert_eq!(signer.verify(&signed).as_deref(), Some(text));
    if !signed.is_empty() {
        let mut tampered = signed.into_bytes();
        let at = data.len() % tampered.len();
        tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
        if let Ok(tampered) = String::from_utf8(tampered) {
            assert_ne!(signer.verify(&tampered).as_deref(), Some(text));
        }
    }
});
