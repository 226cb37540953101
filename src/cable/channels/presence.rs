//! `PresenceChannel` (Campfire `app/channels/presence_channel.rb`): a member's tab being in a
//! room. Subscribing marks the membership present (`connections + 1`, `connected_at`, unread
//! cleared) and tells the user's other tabs the room is read (`user_<id>_reads`);
//! unsubscribing marks it absent. Actions: `present`, `absent`, `refresh`.

use serde_json::{Map, Value};

use super::{member_room, Channel, ChannelContext, Outcome, Subscribed};
use crate::db::rooms::{self, Room};

/// `subscribed`.
pub async fn subscribe(
    ctx: ChannelContext<'_>,
    params: &Map<String, Value>,
) -> anyhow::Result<Outcome> {
    let Some(room) = member_room(ctx, params).await? else {
        return Ok(Outcome::Reject);
    };
    present(ctx, &room).await?;
    let stream = crate::streams::presence(ctx.broadcaster.gid_app(), &room);
    Ok(Outcome::Confirm(Subscribed {
        channel: Channel::Presence(room),
        streams: vec![stream],
    }))
}

async fn present(ctx: ChannelContext<'_>, room: &Room) -> anyhow::Result<()> {
    rooms::present(ctx.pool, room.id, ctx.user.id).await?;
    crate::broadcasts::room_read(ctx.broadcaster, room.id, ctx.user.id);
    Ok(())
}

/// `unsubscribed`.
pub async fn unsubscribed(ctx: ChannelContext<'_>, room: &Room) -> anyhow::Result<()> {
    rooms::absent(ctx.pool, room.id, ctx.user.id).await?;
    Ok(())
}

/// Actions `present`, `absent` and `refresh`.
pub async fn perform(ctx: ChannelContext<'_>, room: &Room, action: &str) -> anyhow::Result<bool> {
    match action {
        "present" => present(ctx, room).await?,
        "absent" => rooms::absent(ctx.pool, room.id, ctx.user.id).await?,
        "refresh" => rooms::refresh_connection(ctx.pool, room.id, ctx.user.id).await?,
        _ => return Ok(false),
    }
    Ok(true)
}
