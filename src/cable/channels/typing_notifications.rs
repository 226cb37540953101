//! `TypingNotificationsChannel` (Campfire `app/channels/typing_notifications_channel.rb`):
//! actions `start` and `stop` broadcast `{action, user: {id, name}}` to the room.

use super::{Channel, ChannelContext, Outcome, Subscribed};
use crate::db::rooms::Room;

/// `subscribed` for a member of `room` (the caller rejects others, `super::member_room`).
pub fn subscribe(ctx: ChannelContext<'_>, room: Room) -> Outcome {
    let stream = crate::streams::typing(ctx.broadcaster.gid_app(), &room);
    Outcome::Confirm(Subscribed {
        channel: Channel::TypingNotifications(room),
        streams: vec![stream],
    })
}

/// Actions `start` and `stop`; past the connection's rate (`within_rate` false) the notice is
/// dropped.
pub fn perform(ctx: ChannelContext<'_>, room: &Room, action: &str, within_rate: bool) -> bool {
    if !matches!(action, "start" | "stop") {
        return false;
    }
    if !within_rate {
        return true;
    }
    crate::broadcasts::typing(ctx.broadcaster, room, action, ctx.user.id, &ctx.user.name);
    true
}
