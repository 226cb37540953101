//! `ReadRoomsChannel` (Campfire `app/channels/read_rooms_channel.rb`): streams from
//! `user_<id>_reads`, where `PresenceChannel` announces rooms the user just read.

use super::{Channel, ChannelContext, Outcome, Subscribed};

/// `subscribed`.
pub fn subscribe(ctx: ChannelContext<'_>) -> Outcome {
    Outcome::Confirm(Subscribed {
        channel: Channel::ReadRooms,
        streams: vec![crate::streams::reads(ctx.user.id)],
    })
}
