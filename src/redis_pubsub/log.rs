//! The broadcast log every node can read: what lets a node whose link to Redis was down, or
//! silent, replay to its clients what they missed, in order and once.
//!
//! Every broadcast a Hearth node publishes goes out as one Lua script ([`PUBLISH_SCRIPT`]),
//! atomic on the Redis server:
//!
//! 1. For a stream that keeps history, its stream position (epoch and offset) and its
//!    history entry ([`super::history`]).
//! 2. `XADD <prefix>:hearth/log MAXLEN ~ <limit> * c <channel> p <payload> s <skip> e <epoch>
//!    o <offset>`: the log, a Redis Stream of every broadcast, capped at about [`LOG_LIMIT`]
//!    entries; its id (`<ms>-<seq>`) orders the broadcasts of every stream.
//! 3. `PUBLISH <prefix>:hearth/marks "<id> <skip> <epoch> <offset> <channel>"`: a marker,
//!    heard by every node (offset 0: no position).
//! 4. `PUBLISH <channel> <payload>`: the broadcast itself, byte for byte in Rails' redis
//!    adapter format, so Rails processes (and Rails' own adapter) see no change.
//!
//! `<skip>` is the publishing node's id when it already delivered the broadcast to its own
//! clients (it published while its link was down), else `-`.
//!
//! Because the script is atomic and Redis writes a subscriber's messages in order, a node
//! subscribed to `<channel>` reads the marker immediately followed by the payload. So each
//! node keeps a **watermark**, the id of the last marker it has settled ([`Tracker`]): every
//! entry up to it was either delivered here or is on a channel this node did not listen to.
//! When its subscriber link comes back (after an outage, or after the heartbeat found it
//! silent), the node subscribes again, reads the log after its watermark ([`Tracker::backfill`]),
//! delivers the entries of the channels it listens to, and then drops every live payload whose
//! marker is not past the watermark: each broadcast reaches a client once, in log order.
//!
//! A payload without a marker in front of it is a plain `PUBLISH` (a Rails process, a console,
//! anycable-rails): delivered as received, and not in the log.

use std::collections::{HashSet, VecDeque};

use super::RedisPubSub;
use crate::history::Position;

/// Entries the log keeps by default (about: `XADD … MAXLEN ~`; `--redis-log-limit`). A node
/// that was cut off for longer than this many broadcasts counts a gap and tells its clients
/// to reconnect and catch up ([`crate::pubsub::Control::Resync`]).
pub const LOG_LIMIT: usize = crate::config::DEFAULT_REDIS_LOG_LIMIT;

/// Entries read per `XRANGE` when replaying.
const REPLAY_PAGE: usize = 512;

/// Ids of broadcasts this node delivered to its own clients after publishing them (their
/// `PUBLISH` reached no subscriber) that a replay must skip: at most this many, the newest.
const DELIVERED_HERE_LIMIT: usize = 4096;

/// KEYS: the log, the epoch, the offsets hash. `ARGV[1]` = the marker channel, `ARGV[2]` = the
/// log's cap, `ARGV[3]` = an epoch to start with when there is none, `ARGV[4]` = the history keys'
/// prefix, `ARGV[5]` = the history's cap per stream (0: no history), `ARGV[6]` = its time to live
/// in seconds; then (channel, payload, skip, stream, kept) per broadcast, `stream` empty for
/// one without a position, `kept` `1` when its entry is kept and `0` for a position only
/// ([`crate::streams::Retention`]). Returns `{id, receivers}` per broadcast.
pub const PUBLISH_SCRIPT: &str = r"
local epoch = redis.call('GET', KEYS[2])
if not epoch then
  epoch = ARGV[3]
  redis.call('SET', KEYS[2], epoch)
end
local now = redis.call('TIME')[1]
local keep = tonumber(ARGV[5])
local out = {}
for i = 7, #ARGV, 5 do
  local channel, payload, skip, stream, kept = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local offset = 0
  if stream ~= '' and keep > 0 then
    offset = redis.call('HINCRBY', KEYS[3], stream, 1)
    if kept == '1' then
      local key = ARGV[4] .. stream
      redis.call('XADD', key, 'MAXLEN', keep, offset .. '-0', 't', now, 'p', payload)
      redis.call('EXPIRE', key, ARGV[6])
    end
  end
  local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'c', channel, 'p', payload, 's', skip, 'e', epoch, 'o', offset)
  redis.call('PUBLISH', ARGV[1], id .. ' ' .. skip .. ' ' .. epoch .. ' ' .. offset .. ' ' .. channel)
  out[#out + 1] = {id, redis.call('PUBLISH', channel, payload)}
end
return out
";

/// A Redis Stream entry id, `<milliseconds>-<sequence>`, ordered as Redis orders them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(pub u64, pub u64);

impl EntryId {
    /// Parses `<ms>-<seq>`; None for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let (ms, seq) = text.split_once('-')?;
        Some(Self(ms.parse().ok()?, seq.parse().ok()?))
    }
}

impl std::fmt::Display for EntryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

/// A marker (`"<id> <skip> <epoch> <offset> <channel>"` on the marker channel).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// The log entry's id.
    pub id: EntryId,
    /// The node that already delivered it to its own clients, or `-`.
    pub skip: String,
    /// The broadcast's stream position; None for a stream without history.
    pub position: Option<Position>,
    /// The (prefixed) channel its payload goes to.
    pub channel: String,
}

impl Marker {
    /// Parses a marker's payload; None for anything else.
    pub fn parse(payload: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(payload).ok()?;
        let mut parts = text.splitn(5, ' ');
        let id = EntryId::parse(parts.next()?)?;
        let skip = parts.next()?.to_owned();
        let epoch = parts.next()?;
        let offset: u64 = parts.next()?.parse().ok()?;
        let channel = parts.next()?.to_owned();
        Some(Self {
            id,
            skip,
            position: position(epoch, offset),
            channel,
        })
    }
}

/// A position from a marker's or a log entry's epoch and offset (offset 0: none).
fn position(epoch: &str, offset: u64) -> Option<Position> {
    (offset > 0).then(|| Position {
        epoch: epoch.into(),
        offset,
    })
}

/// What a node's subscriber knows of the log (kept across reconnects of the link).
#[derive(Debug, Default)]
pub struct Tracker {
    /// Every entry up to this one was delivered here or is on a channel not listened to.
    /// None until the first connection read the log's end.
    pub watermark: Option<EntryId>,
    /// A marker whose payload may come next.
    pending: Option<Marker>,
}

/// What [`Tracker::on_message`] made of a message.
#[derive(Debug, PartialEq, Eq)]
pub enum Seen {
    /// Deliver the payload to this node's clients, at this position (when it has one).
    Deliver(Option<Position>),
    /// A marker, or a payload delivered already (replayed, or by its own publisher).
    Drop,
}

impl Tracker {
    /// The log is read from here on: a pending marker from a lost connection is forgotten
    /// (its entry is after the watermark, so the replay covers it).
    pub fn reconnected(&mut self) {
        self.pending = None;
    }

    fn advance(&mut self, id: EntryId) {
        if self.watermark.is_none_or(|w| id > w) {
            self.watermark = Some(id);
        }
    }

    /// A marker's payload did not follow: its channel is not listened to here.
    fn settle(&mut self) {
        if let Some(m) = self.pending.take() {
            self.advance(m.id);
        }
    }

    /// Sorts a message read on the subscriber link: the marker channel's, or a payload on
    /// `channel`. `node` is this node's id.
    ///
    /// A marker is returned as well (`Some`), so the caller can note its stream's position.
    pub fn on_message(
        &mut self,
        marks: &str,
        node: &str,
        channel: &str,
        payload: &[u8],
    ) -> (Seen, Option<&Marker>) {
        if channel == marks {
            self.settle();
            self.pending = Marker::parse(payload);
            return (Seen::Drop, self.pending.as_ref());
        }
        let seen = match self.pending.take() {
            Some(m) if m.channel == channel => {
                let seen = self.watermark.is_some_and(|w| m.id <= w);
                self.advance(m.id);
                if seen || m.skip == node {
                    Seen::Drop
                } else {
                    Seen::Deliver(m.position)
                }
            }
            Some(m) => {
                self.advance(m.id);
                Seen::Deliver(None)
            }
            None => Seen::Deliver(None),
        };
        (seen, None)
    }

    /// Any other message (the heartbeat): a pending marker's payload is not coming.
    pub fn on_other(&mut self) {
        self.settle();
    }

    /// On a (re)connected link, after every `SUBSCRIBE` was confirmed: reads the log after the
    /// watermark and delivers, in order, the entries on `listened` channels not already
    /// delivered here. Returns how many were delivered. On the first connection it only
    /// takes the log's end as the watermark.
    ///
    /// # Errors
    /// A Redis command failed.
    pub async fn backfill(
        &mut self,
        adapter: &RedisPubSub,
        conn: &mut redis::aio::MultiplexedConnection,
        listened: &HashSet<String>,
    ) -> redis::RedisResult<Backfill> {
        let Some(mut from) = self.watermark else {
            let last: Vec<(String, redis::Value)> = redis::cmd("XREVRANGE")
                .arg(&adapter.log_key)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1)
                .query_async(conn)
                .await?;
            self.watermark = Some(
                last.first()
                    .and_then(|(id, _)| EntryId::parse(id))
                    .unwrap_or_default(),
            );
            return Ok(Backfill::default());
        };
        let mut done = Backfill::default();
        // An entry after the watermark was deleted or trimmed away: some broadcasts are lost
        // here.
        let info: redis::RedisResult<Vec<redis::Value>> = redis::cmd("XINFO")
            .arg("STREAM")
            .arg(&adapter.log_key)
            .query_async(conn)
            .await;
        if let Ok(info) = info {
            let id = |name| field(&info, name).and_then(|v| EntryId::parse(&v));
            let number = |name| field(&info, name).and_then(|v| v.parse::<u64>().ok());
            // `XDEL` records what it deleted; `MAXLEN` trimming does not (Redis 7: it only
            // moves `recorded-first-entry-id`).
            if id("max-deleted-entry-id").is_some_and(|d| d > from) {
                done.gap = true;
            }
            // Something was trimmed (a log that Redis lost with a restart starts again with
            // nothing trimmed: what was published meanwhile is all in it), and past the
            // watermark: the log was empty when this node first read it, or the watermark's
            // own entry is gone, so what followed it may be too.
            let trimmed = number("entries-added") > number("length");
            if let (true, Some(first)) = (trimmed, id("recorded-first-entry-id")) {
                if from == EntryId::default()
                    || (first > from && !still_holds(adapter, conn, from).await?)
                {
                    done.gap = true;
                }
            }
        }
        loop {
            let page: Vec<(String, Vec<Vec<u8>>)> = redis::cmd("XRANGE")
                .arg(&adapter.log_key)
                .arg(format!("({from}"))
                .arg("+")
                .arg("COUNT")
                .arg(REPLAY_PAGE)
                .query_async(conn)
                .await?;
            let n = page.len();
            for (id, fields) in page {
                let Some(id) = EntryId::parse(&id) else {
                    continue;
                };
                from = id;
                self.advance(id);
                let (mut channel, mut payload, mut skip) = (None, None, None);
                let (mut epoch, mut offset) = ("", 0);
                for pair in fields.chunks_exact(2) {
                    match &pair[0][..] {
                        b"c" => channel = std::str::from_utf8(&pair[1]).ok(),
                        b"p" => payload = Some(&pair[1][..]),
                        b"s" => skip = Some(&pair[1][..]),
                        b"e" => epoch = std::str::from_utf8(&pair[1]).unwrap_or(""),
                        b"o" => {
                            offset = std::str::from_utf8(&pair[1])
                                .ok()
                                .and_then(|o| o.parse().ok())
                                .unwrap_or(0);
                        }
                        _ => {}
                    }
                }
                let (Some(channel), Some(payload)) = (channel, payload) else {
                    continue;
                };
                if skip == Some(adapter.node.as_bytes())
                    || !listened.contains(channel)
                    || adapter.delivered_here.lock().contains(&id)
                {
                    continue;
                }
                adapter.receive(channel, payload, position(epoch, offset).as_ref());
                done.replayed += 1;
            }
            if n < REPLAY_PAGE {
                return Ok(done);
            }
        }
    }
}

/// Whether the log at `adapter` still holds the entry `id`.
async fn still_holds(
    adapter: &RedisPubSub,
    conn: &mut redis::aio::MultiplexedConnection,
    id: EntryId,
) -> redis::RedisResult<bool> {
    let found: Vec<(String, redis::Value)> = redis::cmd("XRANGE")
        .arg(&adapter.log_key)
        .arg(id.to_string())
        .arg(id.to_string())
        .query_async(conn)
        .await?;
    Ok(!found.is_empty())
}

/// What a replay did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backfill {
    /// Entries delivered to this node's clients.
    pub replayed: u64,
    /// Entries after the watermark had been trimmed from the log.
    pub gap: bool,
}

/// The value after `name` in a flat `XINFO` reply, as text.
fn field(info: &[redis::Value], name: &str) -> Option<String> {
    let mut it = info.iter();
    while let Some(key) = it.next() {
        let value = it.next()?;
        let key: Option<String> = redis::from_redis_value(key.clone()).ok();
        if key.as_deref() == Some(name) {
            return redis::from_redis_value(value.clone()).ok();
        }
    }
    None
}

/// The newest ids of broadcasts this node delivered itself after publishing them.
#[derive(Debug, Default)]
pub struct DeliveredHere {
    order: VecDeque<EntryId>,
    set: HashSet<EntryId>,
}

impl DeliveredHere {
    /// Remembers `id` (forgetting the oldest past `DELIVERED_HERE_LIMIT`).
    pub fn insert(&mut self, id: EntryId) {
        if self.set.insert(id) {
            self.order.push_back(id);
            if self.order.len() > DELIVERED_HERE_LIMIT {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }

    /// Whether `id` was delivered here.
    pub fn contains(&self, id: &EntryId) -> bool {
        self.set.contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKS: &str = "p:hearth/marks";

    fn marker(id: &str, skip: &str, channel: &str) -> Vec<u8> {
        format!("{id} {skip} ep 0 {channel}").into_bytes()
    }

    fn seen(t: &mut Tracker, channel: &str, payload: &[u8]) -> Seen {
        t.on_message(MARKS, "me", channel, payload).0
    }

    #[test]
    fn entry_ids_order_as_redis_orders_them() {
        assert!(EntryId::parse("10-0") < EntryId::parse("10-1"));
        assert!(EntryId::parse("9-99") < EntryId::parse("10-0"));
        assert_eq!(EntryId::parse("nope"), None);
        assert_eq!(EntryId::parse("1-x"), None);
        assert_eq!(EntryId(5, 2).to_string(), "5-2");
    }

    #[test]
    fn a_payload_after_its_marker_is_delivered_once_and_advances_the_watermark() {
        let mut t = Tracker {
            watermark: Some(EntryId(1, 0)),
            pending: None,
        };
        assert_eq!(seen(&mut t, MARKS, &marker("2-0", "-", "p:a")), Seen::Drop);
        assert_eq!(seen(&mut t, "p:a", b"{}"), Seen::Deliver(None));
        assert_eq!(t.watermark, Some(EntryId(2, 0)));
        // A marker not past the watermark (replayed already): its payload is dropped.
        seen(&mut t, MARKS, &marker("2-0", "-", "p:a"));
        assert_eq!(seen(&mut t, "p:a", b"{}"), Seen::Drop);
        // Our own broadcast, delivered here already.
        seen(&mut t, MARKS, &marker("3-0", "me", "p:a"));
        assert_eq!(seen(&mut t, "p:a", b"{}"), Seen::Drop);
        assert_eq!(t.watermark, Some(EntryId(3, 0)));
    }

    #[test]
    fn markers_of_channels_not_listened_to_settle_and_plain_publishes_pass() {
        let mut t = Tracker::default();
        seen(&mut t, MARKS, &marker("4-0", "-", "p:other"));
        seen(&mut t, MARKS, &marker("5-0", "-", "p:other"));
        assert_eq!(t.watermark, Some(EntryId(4, 0)));
        // A Rails publish on a listened channel, right after an unrelated marker.
        assert_eq!(seen(&mut t, "p:a", b"[1]"), Seen::Deliver(None));
        assert_eq!(t.watermark, Some(EntryId(5, 0)));
        assert_eq!(seen(&mut t, "p:a", b"[2]"), Seen::Deliver(None));
        seen(&mut t, MARKS, &marker("6-0", "-", "p:other"));
        t.on_other();
        assert_eq!(t.watermark, Some(EntryId(6, 0)));
        assert_eq!(Marker::parse(b"garbage"), None);
    }

    #[test]
    fn delivered_here_forgets_the_oldest() {
        let mut d = DeliveredHere::default();
        for i in 0..=DELIVERED_HERE_LIMIT as u64 {
            d.insert(EntryId(i, 0));
        }
        assert!(!d.contains(&EntryId(0, 0)));
        assert!(d.contains(&EntryId(1, 0)));
    }
}
