//! `TypingNotificationsChannel` (Campfire `app/channels/typing_notifications_channel.rb`):
//! actions `start` and `stop` broadcast `{action, user: {id, name}}` to the room.

use serde_json::{Map, Value};

use super::{member_room, Channel, ChannelContext, Outcome, Subscribed};
use crate::db::rooms::Room;

/// `subscribed`: members of the room only.
pub async fn subscribe(
    ctx: ChannelContext<'_>,
    params: &Map<String, Value>,
) -> anyhow::Result<Outcome> {
    let Some(room) = member_room(ctx, params).await? else {
        return Ok(Outcome::Reject);
    };
    let stream = crate::streams::typing(ctx.broadcaster.gid_app(), &room);
    Ok(Outcome::Confirm(Subscribed {
        channel: Channel::TypingNotifications(room),
        streams: vec![stream],
    }))
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
