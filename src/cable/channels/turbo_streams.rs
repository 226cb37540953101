//! `Turbo::StreamsChannel` (turbo-rails `app/channels/turbo/streams_channel.rb`): verifies
//! `signed_stream_name` and streams from the name; a bad or missing signature is rejected.
//! Names ending in `:messages` are refused, as Campfire's `RoomStreamsAreAuthorized` does:
//! room message streams go through `RoomMessagesChannel`, which checks membership.

use serde_json::{Map, Value};

use super::{Channel, ChannelContext, Outcome, Subscribed};
use crate::rails::StreamNameSigner;

/// The channel's class name.
pub const CHANNEL: &str = "Turbo::StreamsChannel";

/// `subscribed`.
pub fn subscribe(ctx: ChannelContext<'_>, params: &Map<String, Value>) -> Outcome {
    verify(ctx.signer, params)
}

/// `subscribed` without a Campfire user: the signature alone decides (a connection an app
/// identified, `--rpc-url`; AnyCable's RPC-less Turbo streams).
pub fn verify(signer: &StreamNameSigner, params: &Map<String, Value>) -> Outcome {
    let Some(signed) = params.get("signed_stream_name").and_then(Value::as_str) else {
        return Outcome::Reject;
    };
    match signer.verify(signed) {
        Some(name) if !name.ends_with(":messages") => Outcome::Confirm(Subscribed {
            channel: Channel::TurboStreams,
            streams: vec![name],
        }),
        _ => Outcome::Reject,
    }
}
