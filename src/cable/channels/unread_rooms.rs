//! `UnreadRoomsChannel` (Campfire `app/channels/unread_rooms_channel.rb`): streams from
//! `user_<id>_unreads`, where each new message in one of the user's rooms sends `{roomId}`.

use super::{Channel, ChannelContext, Outcome, Subscribed};

/// `subscribed`.
pub fn subscribe(ctx: ChannelContext<'_>) -> Outcome {
    Outcome::Confirm(Subscribed {
        channel: Channel::UnreadRooms,
        streams: vec![crate::streams::unreads(ctx.user.id)],
    })
}
