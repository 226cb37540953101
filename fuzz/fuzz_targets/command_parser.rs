//! The Action Cable command parser: any text either parses or is refused, never panics, and
//! every identifier it accepts is written back inside valid JSON that carries it unchanged.
#![no_main]

use hearth::cable::protocol::{self, Command};
use hearth::rails::json::JsonEscaping;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(command) = protocol::parse_command(text) else {
        return;
    };
    let identifier = match &command {
        Command::Subscribe { identifier }
        | Command::Unsubscribe { identifier }
        | Command::Message { identifier, .. } => identifier.clone(),
    };
    for (escape_html_entities, escape_js_separators) in
        [(true, true), (true, false), (false, false)]
    {
        let escaping = JsonEscaping {
            escape_html_entities,
            escape_js_separators,
        };
        for frame in [
            protocol::confirm(&identifier, escaping),
            protocol::reject(&identifier, escaping),
            protocol::data(&identifier, b"null", escaping),
        ] {
            let value: serde_json::Value =
                serde_json::from_slice(&frame).expect("a frame is valid JSON");
            assert_eq!(value["identifier"].as_str(), Some(&*identifier));
        }
    }
});
