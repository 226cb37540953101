//! Property tests over the entry points the fuzz targets in `fuzz/` exercise: the command
//! parser, identifier and params parsing, the signed stream verifier, the signed cookie
//! verifier and the inbound frame reader. Hostile input never panics; what is accepted
//! round-trips.

use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

use hearth::cable::channels::room_id_param;
use hearth::cable::protocol::{self, Command};
use hearth::cable::reader::{Inbound, MessageReader, ReadError};
use hearth::rails::json::JsonEscaping;
use hearth::rails::{parse_gid_param, to_gid_param, SignedCookieJar, StreamNameSigner};
use proptest::prelude::*;

fn signer() -> &'static StreamNameSigner {
    static SIGNER: OnceLock<StreamNameSigner> = OnceLock::new();
    SIGNER.get_or_init(|| StreamNameSigner::from_raw_key(b"property test key"))
}

fn jar() -> &'static SignedCookieJar {
    static JAR: OnceLock<SignedCookieJar> = OnceLock::new();
    JAR.get_or_init(|| SignedCookieJar::from_secret_key_base(b"property test secret"))
}

/// A masked client frame.
fn frame(fin: bool, opcode: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut f = Vec::new();
    loadgen::ws::encode_client_frame(fin, opcode, payload, mask, &mut f);
    f
}

/// Reads every message from `bytes` with `limit`; the error that ended it, if not EOF.
fn read_all(bytes: Vec<u8>, limit: usize) -> (Vec<Inbound>, Option<ReadError>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut reader = MessageReader::new(std::io::Cursor::new(bytes), limit);
        let mut out = Vec::new();
        loop {
            match reader.read().await {
                Ok(m) => out.push(m),
                Err(ReadError::Gone) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    })
}

proptest! {
    #[test]
    fn the_command_parser_never_panics(text in ".*") {
        let _ = protocol::parse_command(&text);
    }

    #[test]
    fn any_identifier_round_trips_through_command_and_frames(
        identifier in ".*",
        command in prop::sample::select(vec!["subscribe", "unsubscribe", "message"]),
        html in any::<bool>(),
        separators in any::<bool>(),
    ) {
        let raw = serde_json::json!({"command": command, "identifier": identifier, "data": "{}"})
            .to_string();
        let parsed = protocol::parse_command(&raw).unwrap();
        let got = match parsed {
            Command::Subscribe { identifier }
            | Command::Unsubscribe { identifier }
            | Command::Message { identifier, .. } => identifier,
        };
        prop_assert_eq!(&*got, identifier.as_str());
        let escaping = JsonEscaping { escape_html_entities: html, escape_js_separators: separators };
        for frame in [protocol::confirm(&got, escaping), protocol::reject(&got, escaping)] {
            let v: serde_json::Value = serde_json::from_slice(&frame).unwrap();
            prop_assert_eq!(v["identifier"].as_str(), Some(identifier.as_str()));
        }
    }

    #[test]
    fn identifier_params_never_panic_and_keep_the_channel(text in ".*") {
        if let Some((channel, params)) = protocol::identifier_params(&text) {
            prop_assert_eq!(params["channel"].as_str(), Some(channel.as_str()));
            let _ = room_id_param(&params);
        }
    }

    #[test]
    fn room_ids_read_as_numbers_or_decimal_strings(id in any::<i64>(), as_string in any::<bool>()) {
        let value = if as_string { serde_json::json!(id.to_string()) } else { serde_json::json!(id) };
        let identifier = serde_json::json!({"channel": "PresenceChannel", "room_id": value}).to_string();
        let (_, params) = protocol::identifier_params(&identifier).unwrap();
        prop_assert_eq!(room_id_param(&params), Some(id));
    }

    #[test]
    fn gid_params_round_trip_and_garbage_is_refused_quietly(
        app in "[a-z0-9.-]{1,12}",
        model in "[A-Za-z0-9_:]{1,16}",
        id in any::<i64>(),
        garbage in ".*",
    ) {
        let param = to_gid_param(&app, &model, id);
        prop_assert_eq!(parse_gid_param(&param), Some((app, model, id)));
        let _ = parse_gid_param(&garbage);
    }

    #[test]
    fn signed_stream_names_verify_to_themselves_and_tampering_fails(
        name in ".*",
        garbage in ".*",
        at in any::<prop::sample::Index>(),
    ) {
        let signed = signer().sign(&name);
        prop_assert_eq!(signer().verify(&signed), Some(name.clone()));
        let _ = signer().verify(&garbage);
        let mut tampered = signed.into_bytes();
        let i = at.index(tampered.len());
        tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(tampered).unwrap();
        prop_assert_ne!(signer().verify(&tampered), Some(name));
    }

    #[test]
    fn signed_cookies_read_back_until_they_expire(
        value in ".*",
        envelope in prop::collection::vec(any::<u8>(), 0..200),
        garbage in ".*",
        ttl in 1u64..1_000_000,
    ) {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let signed = jar().sign("session_token", &value, Some(now + Duration::from_secs(ttl)));
        prop_assert_eq!(jar().verify_at("session_token", &signed, now), Some(value));
        prop_assert_eq!(
            jar().verify_at("session_token", &signed, now + Duration::from_secs(ttl)),
            None
        );
        prop_assert_eq!(jar().verify_at("_hearth_session", &signed, now), None);
        let _ = jar().verify_at("session_token", &jar().sign_envelope(&envelope), now);
        let _ = jar().verify_at("session_token", &garbage, now);
    }

    #[test]
    fn any_split_into_fragments_reads_back_as_the_message(
        text in ".{0,400}",
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        pings in prop::collection::vec(any::<bool>(), 8),
        mask in any::<[u8; 4]>(),
    ) {
        let bytes = text.as_bytes();
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        points.push(0);
        points.push(bytes.len());
        points.sort_unstable();
        points.dedup();
        let mut wire = Vec::new();
        let pieces: Vec<&[u8]> = if points.len() < 2 {
            vec![bytes]
        } else {
            points.windows(2).map(|w| &bytes[w[0]..w[1]]).collect()
        };
        let mut want = Vec::new();
        for (i, piece) in pieces.iter().enumerate() {
            let last = i + 1 == pieces.len();
            wire.extend(frame(last, if i == 0 { 0x1 } else { 0x0 }, piece, mask));
            if !last && pings[i % pings.len()] {
                wire.extend(frame(true, 0x9, b"p", mask));
                want.push(Inbound::Ping(b"p".to_vec()));
            }
        }
        want.push(Inbound::Text(text.clone()));
        let (got, err) = read_all(wire.clone(), 400 * 4);
        prop_assert!(err.is_none(), "{:?}", err);
        prop_assert_eq!(got, want);
        // With a limit one byte short, the same stream is refused with 1009.
        if !bytes.is_empty() {
            let (got, err) = read_all(wire, bytes.len() - 1);
            prop_assert!(got.iter().all(|m| !matches!(m, Inbound::Text(_))));
            prop_assert_eq!(err.and_then(|e| e.close_code()), Some(1009));
        }
    }

    #[test]
    fn arbitrary_bytes_never_yield_an_oversized_or_invalid_message(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
    ) {
        let (got, _) = read_all(bytes, 300);
        for m in got {
            match m {
                Inbound::Text(t) => prop_assert!(t.len() <= 300),
                Inbound::Binary(n) => prop_assert!(n <= 300),
                Inbound::Ping(p) => prop_assert!(p.len() <= 125),
                Inbound::Close(_) => {}
            }
        }
    }
}
