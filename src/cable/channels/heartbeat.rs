//! `HeartbeatChannel` (Campfire `app/channels/heartbeat_channel.rb`): an empty channel with
//! no stream. Clients use its connected/disconnected callbacks to notice reconnects.

use super::{Channel, Outcome, Subscribed};

/// `subscribed`.
pub fn subscribe() -> Outcome {
    Outcome::Confirm(Subscribed {
        channel: Channel::Heartbeat,
        streams: Vec::new(),
    })
}
