//! Identifier and params parsing: the identifier's JSON object, `room_id`, and the GlobalID
//! param inside a room stream name. Never panics; whatever parses round-trips.
#![no_main]

use hearth::cable::channels::room_id_param;
use hearth::cable::protocol::identifier_params;
use hearth::rails::global_id::{parse_gid_param, to_gid_param};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some((channel, params)) = identifier_params(text) {
        assert_eq!(
            params.get("channel").and_then(|c| c.as_str()),
            Some(&*channel)
        );
        let _ = room_id_param(&params);
    }
    let param = text.strip_suffix(":messages").unwrap_or(text);
    if let Some((app, model, id)) = parse_gid_param(param) {
        let again = to_gid_param(&app, &model, id);
        assert_eq!(parse_gid_param(&again), Some((app, model, id)));
    }
});
