//! `PresenceChannel` (Campfire `app/channels/presence_channel.rb`): a member's tab being in a
//! room. Subscribing marks this connection's tab present and tells the user's other tabs the
//! room is read (`user_<id>_reads`); unsubscribing takes the tab away. Actions: `present`,
//! `absent`, `refresh`.
//!
//! The state is kept per connection in [`crate::presence`], which writes the membership only
//! when it turns connected or not (at a bounded rate): one tab's `absent` and close never
//! count twice, nor override another open, visible tab (Campfire counts each action on the
//! shared `connections` column).

use super::{Channel, ChannelContext, Outcome, Subscribed};
use crate::db::rooms::Room;

/// `subscribed` for a member of `room` (the caller rejects others, `super::member_room`).
pub async fn subscribe(ctx: ChannelContext<'_>, room: Room) -> anyhow::Result<Outcome> {
    ctx.presence
        .subscribed(room.id, ctx.user.id, ctx.connection_id)
        .await?;
    crate::broadcasts::room_read(ctx.broadcaster, room.id, ctx.user.id);
    let stream = crate::streams::presence(ctx.broadcaster.gid_app(), &room);
    Ok(Outcome::Confirm(Subscribed {
        channel: Channel::Presence(room),
        streams: vec![stream],
    }))
}

/// `unsubscribed`.
pub async fn unsubscribed(ctx: ChannelContext<'_>, room: &Room) -> anyhow::Result<()> {
    ctx.presence
        .unsubscribed(room.id, ctx.user.id, ctx.connection_id)
        .await?;
    Ok(())
}

/// Actions `present`, `absent` and `refresh`. Past the connection's rate (`within_rate`
/// false) the tab's state is still updated, but `present` sends no read notice.
pub async fn perform(
    ctx: ChannelContext<'_>,
    room: &Room,
    action: &str,
    within_rate: bool,
) -> anyhow::Result<bool> {
    let (presence, user, connection) = (ctx.presence, ctx.user.id, ctx.connection_id);
    match action {
        "present" => {
            presence.present(room.id, user, connection).await?;
            if within_rate {
                crate::broadcasts::room_read(ctx.broadcaster, room.id, user);
            }
        }
        "absent" => presence.absent(room.id, user, connection).await?,
        "refresh" => presence.refresh(room.id, user, connection).await?,
        _ => return Ok(false),
    }
    Ok(true)
}
