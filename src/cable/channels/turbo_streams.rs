//! `Turbo::StreamsChannel` (turbo-rails `app/channels/turbo/streams_channel.rb`): verifies
//! `signed_stream_name` and streams from the name; a bad or missing signature is rejected.
//! Names ending in `:messages` are refused, as Campfire's `RoomStreamsAreAuthorized` does:
//! room message streams go through `RoomMessagesChannel`, which checks membership.

use serde_json::{Map, Value};

use super::{Channel, ChannelContext, Outcome, Subscribed};

/// `subscribed`.
pub fn subscribe(ctx: ChannelContext<'_>, params: &Map<String, Value>) -> Outcome {
    let Some(signed) = params.get("signed_stream_name").and_then(Value::as_str) else {
        return Outcome::Reject;
    };
    match ctx.signer.verify(signed) {
        Some(name) if !name.ends_with(":messages") => Outcome::Confirm(Subscribed {
            channel: Channel::TurboStreams,
            streams: vec![name],
        }),
        _ => Outcome::Reject,
    }
}
