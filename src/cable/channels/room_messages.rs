//! `RoomMessagesChannel` (Campfire `app/channels/room_messages_channel.rb`): verifies
//! `signed_stream_name`, derives the room from the `<room gid param>:messages` name, and
//! streams from it only when the user is a member of that room.

use serde_json::{Map, Value};

use super::{Channel, ChannelContext, Outcome, Subscribed};
use crate::rails::global_id;

/// `subscribed`.
pub async fn subscribe(
    ctx: ChannelContext<'_>,
    params: &Map<String, Value>,
) -> anyhow::Result<Outcome> {
    let Some(signed) = params.get("signed_stream_name").and_then(Value::as_str) else {
        return Ok(Outcome::Reject);
    };
    let Some(name) = ctx.signer.verify(signed) else {
        return Ok(Outcome::Reject);
    };
    let Some(param) = name.strip_suffix(":messages") else {
        return Ok(Outcome::Reject);
    };
    let Some((app, model, id)) = global_id::parse_gid_param(param) else {
        return Ok(Outcome::Reject);
    };
    if app != ctx.broadcaster.gid_app() || !model.starts_with("Rooms::") {
        return Ok(Outcome::Reject);
    }
    match ctx
        .auth_cache
        .find_for_member(ctx.pool, id, ctx.user.id)
        .await?
    {
        Some(room) if room.model_name() == model => Ok(Outcome::Confirm(Subscribed {
            channel: Channel::RoomMessages(room),
            streams: vec![name],
        })),
        _ => Ok(Outcome::Reject),
    }
}
