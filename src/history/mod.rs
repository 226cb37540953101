//! Stream positions and history: every broadcast on a stream gets a [`Position`] (AnyCable's
//! `epoch` + `offset`), and what was broadcast since a position (or since a time) can be read
//! back, or the reader learns that the history no longer covers it ([`Backlog::Gone`]), so it
//! can tell its client to reload (`reject_history`).
//!
//! This module knows nothing of HTTP, SQL or Action Cable: a stream is a name, a payload is the
//! already-encoded JSON value of a broadcast (the `message` of the Action Cable frame).
//!
//! ## Where positions are assigned
//!
//! - **One node** (`--pubsub inprocess`): [`crate::pubsub::LocalBus`] calls
//!   [`History::append`] for each broadcast before handing it to the fan-out engine, and the
//!   engine stamps the position on the frames of the subscribers that asked for positions
//!   (`actioncable-v1-ext-json`). The default implementation is [`MemoryHistory`]: bounded by
//!   `--history-limit` entries per stream and `--history-ttl`, with a random epoch drawn at
//!   start, so after a restart every old position is in another epoch and reads as
//!   [`Backlog::Gone`] (never as a wrong offset).
//! - **Several nodes** (`--pubsub redis`): positions must come from one authority every node
//!   agrees on, or a client that reconnects to another node would be answered in another
//!   node's numbering. A Redis-backed implementation must:
//!   - assign offsets in Redis, per stream, strictly increasing by one (e.g. a Redis Stream per
//!     Hearth stream with `XADD … MAXLEN ~ <limit>`, or `INCR` of a per-stream counter beside
//!     it), with one epoch for the whole store (kept in Redis; a new one whenever the store
//!     lost its data, e.g. a Redis restart without persistence);
//!   - carry the position with the publication, so every node stamps the same position on its
//!     subscribers' frames and records it with [`History::record`] (not `append`);
//!   - answer [`History::read`] from Redis (`XRANGE` after the offset), `Gone` when the epoch
//!     differs or the oldest kept entry is past the offset the reader had plus one;
//!   - never block the publish path: `append` and `record` must not wait for Redis (queue the
//!     write; a node that cannot write keeps it bounded and counted).
//!
//! Durable positions for what a post changes live in SQLite (the `message_changes` log,
//! migrations 0007 and 0018): the room page's catch-up reads them after a restart, when this
//! in-memory history is gone.
//!
//! ## Offsets
//!
//! Offsets start at 1 on each stream and grow by one per broadcast; 0 means "nothing yet", so
//! a reader that knew a stream at offset 0 (rendered before its first broadcast) is covered as
//! long as the history still holds offset 1.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use parking_lot::Mutex;

use crate::rails::json::{write_json_string, JsonEscaping};

/// AnyCable's default most entries kept per stream (`--history-limit`).
pub const DEFAULT_LIMIT: usize = 100;
/// AnyCable's default longest time an entry is kept (`--history-ttl`), in seconds.
pub const DEFAULT_TTL_SECONDS: u64 = 300;

/// Where a broadcast sits in its stream: AnyCable's `{"epoch":…,"offset":…}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Position {
    /// The history's epoch: which numbering `offset` belongs to (a short URL-safe string; a
    /// new one whenever the history lost what it held).
    pub epoch: Arc<str>,
    /// 1 for a stream's first broadcast, then one more for each.
    pub offset: u64,
}

/// One kept broadcast.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its offset in the stream.
    pub offset: u64,
    /// When it was appended, Unix seconds.
    pub at: u64,
    /// The broadcast's payload (one encoded JSON value), shared with every other copy.
    pub payload: Bytes,
}

/// What a reader asks for ([`History::read`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Since {
    /// Every entry after `offset` (exclusive) of epoch `epoch`.
    Offset {
        /// The epoch the reader's offset belongs to.
        epoch: String,
        /// The last offset the reader had.
        offset: u64,
    },
    /// Every entry appended at or after this Unix time, in seconds (AnyCable's `since`).
    Time(u64),
}

/// What a read finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backlog {
    /// Every entry the reader lacks, oldest first (possibly none).
    Entries(Vec<Entry>),
    /// The history no longer covers the request (another epoch, or entries past it were
    /// dropped): the reader missed something and must start over (`reject_history`, a page
    /// reload).
    Gone,
}

/// A stream history (see the module docs for where positions are assigned).
///
/// Every method is called once per broadcast or per read, never per subscriber.
pub trait History: Send + Sync + std::fmt::Debug {
    /// The current epoch.
    fn epoch(&self) -> Arc<str>;

    /// Gives `stream`'s next broadcast its position and keeps `entry` (its payload) under it;
    /// `entry` None gives the position only ([`crate::streams::Retention::Position`]: a later
    /// read from before it answers [`Backlog::Gone`]). `now` is the broadcast's time, Unix
    /// seconds ([`unix_now`], read once for the streams of one broadcast). None when the
    /// history is off (`--history-limit 0`) or the stream's head is at `u64::MAX` (no offset
    /// after it). Called by the node that assigns positions (one node: every broadcast). Must
    /// not wait.
    fn append(&self, stream: &str, entry: Option<&Bytes>, now: u64) -> Option<Position>;

    /// [`History::append`] of a position only (no entry) to the stream of `family` for each
    /// of `ids`, in turn, without their names where the history can (one post gives one to
    /// each member of its room): pushes each stream's offset to `offsets` (0: none given),
    /// in the epoch [`History::epoch`] answers (a history whose epoch can change under a call
    /// must override this to keep the two together). By default each name is written
    /// ([`Numbered::write`]) and appended to.
    fn append_numbered(&self, family: &Numbered, ids: &[i64], now: u64, offsets: &mut Vec<u64>) {
        let mut stream = String::new();
        offsets.extend(ids.iter().map(|&id| {
            family.write(&mut stream, id);
            self.append(&stream, None, now).map_or(0, |p| p.offset)
        }));
    }

    /// Keeps `payload` under a position assigned elsewhere (several nodes: the publication
    /// carried it). An entry at or before the stream's newest kept offset is ignored. Must not
    /// wait.
    fn record(&self, stream: &str, position: &Position, payload: &Bytes);

    /// The position of `stream`'s newest entry (offset 0 when it has none): what a page
    /// rendered now has seen of the stream.
    fn head(&self, stream: &str) -> Position;

    /// What `stream` holds after `since`, or [`Backlog::Gone`] when the history no longer
    /// covers it. A stream with nothing kept answers `Entries([])` for a time and for an offset
    /// of the current epoch that is not past its head; an offset past the head is `Gone`.
    fn read<'a>(&'a self, stream: &'a str, since: &'a Since) -> BoxFuture<'a, Backlog>;
}

/// The end of an `actioncable-v1-ext-json` broadcast frame at `position` on `stream`, after
/// the message: `,"stream_id":"<stream>","epoch":"<epoch>","offset":<offset>}` (AnyCable's
/// `Reply` fields, in its order; the stream name escaped with `json`).
pub fn ext_suffix(stream: &str, position: &Position, json: JsonEscaping) -> Bytes {
    let mut out = Vec::with_capacity(stream.len() + position.epoch.len() + 48);
    out.extend_from_slice(br#","stream_id":"#);
    write_json_string(&mut out, stream, json);
    out.extend_from_slice(br#","epoch":"#);
    write_json_string(&mut out, &position.epoch, json);
    out.extend_from_slice(format!(r#","offset":{}}}"#, position.offset).as_bytes());
    Bytes::from(out)
}

/// Unix time now, in seconds.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A fresh epoch: 8 URL-safe characters from 48 random bits.
pub fn new_epoch() -> Arc<str> {
    let bits: u64 = rand::random::<u64>() & 0xFFFF_FFFF_FFFF;
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let s: String = (0..8)
        .map(|i| ALPHABET[((bits >> (i * 6)) & 63) as usize] as char)
        .collect();
    s.into()
}

/// Number of shards of [`MemoryHistory`]'s stream map.
const SHARDS: usize = 32;

/// A family of numbered streams, `<prefix><id><suffix>` with `id` in decimal (a user's unread
/// marks, `user_<id>_unreads`), that a [`MemoryHistory`] built [`MemoryHistory::with_numbered`]
/// gives positions only: it never keeps an entry of their broadcasts, so a reader that missed
/// one reads [`Backlog::Gone`]. Their heads live in a table indexed by the id (8 bytes each, no
/// lock, no name kept), since one post gives one to each member of its room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Numbered {
    /// What the name begins with (`user_`).
    pub prefix: &'static str,
    /// What the name ends with (`_unreads`).
    pub suffix: &'static str,
}

impl Numbered {
    /// The id of `stream` when it is of this family and spells its id the one way
    /// [`itoa`]/`to_string` do (ASCII digits, no sign, no leading zero): `user_05_unreads` is
    /// another stream than `user_5_unreads`, so it is not given id 5.
    pub fn id(&self, stream: &str) -> Option<u64> {
        let digits = stream
            .strip_prefix(self.prefix)?
            .strip_suffix(self.suffix)?;
        let canonical = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        canonical.then(|| digits.parse().ok()).flatten()
    }

    /// Writes the stream of `id`, `<prefix><id><suffix>`, into `name`, replacing what it
    /// held (the one spelling [`Numbered::id`] reads back). A loop over a room's members
    /// reuses one buffer: no allocation per member on the post path.
    pub fn write(&self, name: &mut String, id: i64) {
        name.clear();
        name.push_str(self.prefix);
        // itoa: the post path writes one of these per member of the room (a thousand for a
        // big room), and `fmt`'s machinery cost more than the rest of the name.
        name.push_str(itoa::Buffer::new().format(id));
        name.push_str(self.suffix);
    }

    /// The `next` of a broadcast to several streams by name (`Fanout::broadcast_each`,
    /// `Bus::publish_each`): writes the stream of each id `ids` gives ([`Numbered::write`])
    /// into the buffer it is handed and answers true, or false once `ids` gives None.
    pub fn names<'a>(
        &'a self,
        mut ids: impl FnMut() -> Option<i64> + 'a,
    ) -> impl FnMut(&mut String) -> bool + 'a {
        move |name| match ids() {
            Some(id) => {
                self.write(name, id);
                true
            }
            None => false,
        }
    }
}

/// The offset after `head`'s, taken (None at `u64::MAX`: the stream gives no more positions).
fn next_offset(head: &AtomicU64) -> Option<u64> {
    head.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| h.checked_add(1))
        .ok()
        .map(|h| h + 1)
}

/// Ids per chunk of a numbered family's table (8 KiB of heads, allocated on its first id).
const NUMBERED_CHUNK: usize = 1024;
/// Chunks of a numbered family's table: ids below `NUMBERED_CHUNK × NUMBERED_CHUNKS` (2²⁰) are
/// in it; a stream of a larger id is kept in the stream map as any other.
const NUMBERED_CHUNKS: usize = 1024;

/// One numbered family's heads, by id.
#[derive(Debug)]
struct NumberedHeads {
    family: Numbered,
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl NumberedHeads {
    /// The head of the family's stream of `id` (its chunk allocated), or None when the id is
    /// past the table (or negative).
    #[inline]
    fn head(&self, id: i64) -> Option<&AtomicU64> {
        let id = usize::try_from(id).ok()?;
        let chunk = self.chunks.get(id / NUMBERED_CHUNK)?;
        let chunk = chunk.get_or_init(|| (0..NUMBERED_CHUNK).map(|_| AtomicU64::new(0)).collect());
        Some(&chunk[id % NUMBERED_CHUNK])
    }
}

/// Where a stream's head is.
enum Slot<'a> {
    /// In the stream map (not of a numbered family, or its id is past the table).
    Map,
    /// In a numbered table chunk not allocated yet: offset 0, nothing given.
    Unset,
    /// In a numbered table.
    Head(&'a AtomicU64),
}

/// One stream's kept entries.
#[derive(Debug, Default)]
struct Kept {
    /// The newest offset given (kept when the entries expire, so offsets never repeat).
    head: u64,
    /// When the newest offset was given, Unix seconds: a stream idle past the time to live
    /// is forgotten by [`MemoryHistory::sweep`].
    last_at: u64,
    entries: VecDeque<Entry>,
}

/// One lock's share of the streams' histories.
#[derive(Debug, Default)]
struct Streams {
    /// By stream name.
    kept: HashMap<Arc<str>, Kept, foldhash::fast::RandomState>,
    /// The highest head of a stream of this share that [`MemoryHistory::sweep`] forgot: a
    /// stream begins its offsets after it, so a stream forgotten and broadcast to again never
    /// gives an offset twice (a reader's old offset reads as [`Backlog::Gone`]), and
    /// [`History::head`] of a stream not kept is this.
    floor: u64,
}

type Shard = Mutex<Streams>;

/// The in-memory history of one node: at most `limit` entries per stream, each for at most
/// `ttl`; a random epoch drawn at start (a restart loses everything, and every position of
/// before reads as [`Backlog::Gone`]).
#[derive(Debug)]
pub struct MemoryHistory {
    epoch: Arc<str>,
    limit: usize,
    ttl: Duration,
    shards: Box<[Shard]>,
    hasher: foldhash::fast::RandomState,
    numbered: Box<[NumberedHeads]>,
}

impl MemoryHistory {
    /// A history keeping at most `limit` entries per stream (0: off, nothing kept and no
    /// positions given), each for at most `ttl`.
    pub fn new(limit: usize, ttl: Duration) -> Self {
        Self {
            epoch: new_epoch(),
            limit,
            ttl,
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: foldhash::fast::RandomState::default(),
            numbered: Box::default(),
        }
    }

    /// This history with `families` of numbered streams kept as positions only, in tables
    /// by id (see [`Numbered`]). A family's streams are never forgotten by [`Self::sweep`]:
    /// a head costs 8 bytes, and up to 2²⁰ ids per family are in the table.
    #[must_use]
    pub fn with_numbered(mut self, families: &[Numbered]) -> Self {
        self.numbered = families
            .iter()
            .map(|&family| NumberedHeads {
                family,
                chunks: (0..NUMBERED_CHUNKS).map(|_| OnceLock::new()).collect(),
            })
            .collect();
        self
    }

    /// Where `stream`'s head is; a numbered table's chunk is allocated when `create`.
    fn slot(&self, stream: &str, create: bool) -> Slot<'_> {
        for heads in self.numbered.iter() {
            let Some(id) = heads.family.id(stream) else {
                continue;
            };
            let Ok(id) = usize::try_from(id) else {
                return Slot::Map;
            };
            let Some(chunk) = heads.chunks.get(id / NUMBERED_CHUNK) else {
                return Slot::Map;
            };
            let chunk = if create {
                chunk.get_or_init(|| (0..NUMBERED_CHUNK).map(|_| AtomicU64::new(0)).collect())
            } else {
                match chunk.get() {
                    Some(chunk) => chunk,
                    None => return Slot::Unset,
                }
            };
            return Slot::Head(&chunk[id % NUMBERED_CHUNK]);
        }
        Slot::Map
    }

    fn shard(&self, stream: &str) -> &Shard {
        use std::hash::BuildHasher;
        let i = (self.hasher.hash_one(stream) as usize) % SHARDS;
        &self.shards[i]
    }

    /// Drops `kept`'s entries older than the time to live, and those past the limit.
    fn trim(&self, kept: &mut Kept, now: u64) {
        let oldest = now.saturating_sub(self.ttl.as_secs());
        while kept
            .entries
            .front()
            .is_some_and(|e| e.at < oldest || kept.entries.len() > self.limit)
        {
            kept.entries.pop_front();
        }
    }

    /// Forgets the streams with no entry left and no broadcast within the time to live
    /// (their shard's floor rises to their head, so their offsets never repeat: a later read
    /// of an old offset answers `Gone`, as it must). Run now and then.
    pub fn sweep(&self) {
        self.sweep_at(unix_now());
    }

    /// [`Self::sweep`] at `now`, Unix seconds.
    fn sweep_at(&self, now: u64) {
        let oldest = now.saturating_sub(self.ttl.as_secs());
        for shard in self.shards.iter() {
            let mut streams = shard.lock();
            let mut floor = streams.floor;
            streams.kept.retain(|_, kept| {
                self.trim(kept, now);
                let keep = !kept.entries.is_empty() || kept.last_at >= oldest;
                if !keep {
                    floor = floor.max(kept.head);
                }
                keep
            });
            streams.floor = floor;
        }
    }

    /// Gives `stream` its next offset (or `offset`, assigned elsewhere, when it is past the
    /// head) and keeps `payload` under it when there is one.
    fn keep(
        &self,
        stream: &str,
        offset: Option<u64>,
        payload: Option<&Bytes>,
        now: u64,
    ) -> Option<u64> {
        if self.limit == 0 {
            return None;
        }
        if let Slot::Head(head) = self.slot(stream, true) {
            // A position only, whatever the payload.
            return match offset {
                None => next_offset(head),
                Some(offset) => {
                    (head.fetch_max(offset, Ordering::Relaxed) < offset).then_some(offset)
                }
            };
        }
        let mut guard = self.shard(stream).lock();
        let streams = &mut *guard;
        // Looked up first: the name is allocated only for a new stream, which begins after
        // its shard's floor.
        let kept = match streams.kept.get_mut(stream) {
            Some(kept) => kept,
            None => streams.kept.entry(Arc::from(stream)).or_insert(Kept {
                head: streams.floor,
                ..Kept::default()
            }),
        };
        let offset = match offset {
            Some(offset) if offset <= kept.head => return None,
            Some(offset) => offset,
            None => kept.head.checked_add(1)?,
        };
        if offset != kept.head + 1 {
            // A gap (several nodes: this one missed some): what is kept no longer joins up.
            kept.entries.clear();
        }
        kept.head = offset;
        kept.last_at = now;
        if let Some(payload) = payload {
            kept.entries.push_back(Entry {
                offset,
                at: now,
                payload: payload.clone(),
            });
            self.trim(kept, now);
        }
        Some(offset)
    }

    fn read_now(&self, stream: &str, since: &Since) -> Backlog {
        self.read_at(stream, since, unix_now())
    }

    /// [`Self::read_now`] at `now`, Unix seconds.
    fn read_at(&self, stream: &str, since: &Since, now: u64) -> Backlog {
        let head = match self.slot(stream, false) {
            Slot::Map => None,
            Slot::Unset => Some(0),
            Slot::Head(head) => Some(head.load(Ordering::Relaxed)),
        };
        if let Some(head) = head {
            // Positions only: nothing is behind the head.
            return match since {
                Since::Time(_) => Backlog::Entries(Vec::new()),
                Since::Offset { epoch, offset } if **epoch == *self.epoch && *offset == head => {
                    Backlog::Entries(Vec::new())
                }
                Since::Offset { .. } => Backlog::Gone,
            };
        }
        let mut streams = self.shard(stream).lock();
        let floor = streams.floor;
        let kept = streams.kept.get_mut(stream);
        match since {
            Since::Time(at) => {
                let Some(kept) = kept else {
                    return Backlog::Entries(Vec::new());
                };
                self.trim(kept, now);
                let entries = kept.entries.iter().filter(|e| e.at >= *at).cloned();
                Backlog::Entries(entries.collect())
            }
            Since::Offset { epoch, offset } => {
                if **epoch != *self.epoch {
                    return Backlog::Gone;
                }
                let Some(kept) = kept else {
                    // Not kept: never broadcast to since start, or forgotten by a sweep. A
                    // reader at the floor (what `head` answered) lacks nothing; any other
                    // offset cannot be checked.
                    return if *offset == floor {
                        Backlog::Entries(Vec::new())
                    } else {
                        Backlog::Gone
                    };
                };
                self.trim(kept, now);
                if *offset > kept.head {
                    return Backlog::Gone;
                }
                if *offset == kept.head {
                    return Backlog::Entries(Vec::new());
                }
                match kept.entries.front() {
                    Some(first) if first.offset <= offset + 1 => Backlog::Entries(
                        kept.entries
                            .iter()
                            .filter(|e| e.offset > *offset)
                            .cloned()
                            .collect(),
                    ),
                    _ => Backlog::Gone,
                }
            }
        }
    }
}

impl History for MemoryHistory {
    fn epoch(&self) -> Arc<str> {
        self.epoch.clone()
    }

    fn append(&self, stream: &str, entry: Option<&Bytes>, now: u64) -> Option<Position> {
        let offset = self.keep(stream, None, entry, now)?;
        Some(Position {
            epoch: self.epoch.clone(),
            offset,
        })
    }

    /// The family's table looked up once; then an atomic add per id in it (no name, no lock),
    /// [`History::append`] by name for the rest.
    fn append_numbered(&self, family: &Numbered, ids: &[i64], now: u64, offsets: &mut Vec<u64>) {
        if self.limit == 0 {
            offsets.resize(offsets.len() + ids.len(), 0);
            return;
        }
        let heads = self.numbered.iter().find(|h| h.family == *family);
        let mut stream = String::new();
        offsets.extend(ids.iter().map(|&id| {
            let offset = match heads.and_then(|heads| heads.head(id)) {
                Some(head) => next_offset(head),
                None => {
                    family.write(&mut stream, id);
                    self.keep(&stream, None, None, now)
                }
            };
            offset.unwrap_or(0)
        }));
    }

    fn record(&self, stream: &str, position: &Position, payload: &Bytes) {
        if *position.epoch == *self.epoch {
            self.keep(stream, Some(position.offset), Some(payload), unix_now());
        }
    }

    fn head(&self, stream: &str) -> Position {
        let head = match self.slot(stream, false) {
            Slot::Unset => 0,
            Slot::Head(head) => head.load(Ordering::Relaxed),
            Slot::Map => {
                let streams = self.shard(stream).lock();
                streams.kept.get(stream).map_or(streams.floor, |k| k.head)
            }
        };
        Position {
            epoch: self.epoch.clone(),
            offset: head,
        }
    }

    fn read<'a>(&'a self, stream: &'a str, since: &'a Since) -> BoxFuture<'a, Backlog> {
        Box::pin(std::future::ready(self.read_now(stream, since)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::needless_pass_by_value)] // the calls read better with the value
    fn read(h: &MemoryHistory, stream: &str, since: Since) -> Backlog {
        h.read_now(stream, &since)
    }

    fn offsets(b: &Backlog) -> Vec<u64> {
        match b {
            Backlog::Entries(e) => e.iter().map(|e| e.offset).collect(),
            Backlog::Gone => panic!("gone"),
        }
    }

    #[test]
    fn offsets_grow_by_one_per_stream_and_reads_start_after_the_offset() {
        let h = MemoryHistory::new(100, Duration::from_secs(300));
        let p = Bytes::from_static(b"1");
        assert_eq!(
            h.append("a", Some(&p), unix_now()).map(|p| p.offset),
            Some(1)
        );
        assert_eq!(
            h.append("a", Some(&p), unix_now()).map(|p| p.offset),
            Some(2)
        );
        assert_eq!(
            h.append("b", Some(&p), unix_now()).map(|p| p.offset),
            Some(1)
        );
        assert_eq!(h.head("a").offset, 2);
        let epoch = h.epoch().to_string();
        let since = |offset| Since::Offset {
            epoch: epoch.clone(),
            offset,
        };
        assert_eq!(offsets(&read(&h, "a", since(0))), [1, 2]);
        assert_eq!(offsets(&read(&h, "a", since(1))), [2]);
        assert_eq!(offsets(&read(&h, "a", since(2))), Vec::<u64>::new());
        assert_eq!(read(&h, "a", since(3)), Backlog::Gone);
        assert_eq!(offsets(&read(&h, "new", since(0))), Vec::<u64>::new());
        assert_eq!(read(&h, "new", since(4)), Backlog::Gone);
        let other = Since::Offset {
            epoch: "other".into(),
            offset: 1,
        };
        assert_eq!(read(&h, "a", other), Backlog::Gone);
        assert_eq!(offsets(&read(&h, "a", Since::Time(0))), [1, 2]);
    }

    #[test]
    fn past_the_limit_an_old_offset_is_gone() {
        let h = MemoryHistory::new(3, Duration::from_secs(300));
        let p = Bytes::from_static(b"1");
        for _ in 0..5 {
            h.append("a", Some(&p), unix_now());
        }
        let epoch = h.epoch().to_string();
        let since = |offset| Since::Offset {
            epoch: epoch.clone(),
            offset,
        };
        assert_eq!(read(&h, "a", since(1)), Backlog::Gone);
        assert_eq!(offsets(&read(&h, "a", since(2))), [3, 4, 5]);
        h.sweep();
        assert_eq!(offsets(&read(&h, "a", since(4))), [5]);
    }

    #[test]
    fn off_gives_no_positions_and_records_follow_the_given_offsets() {
        let off = MemoryHistory::new(0, Duration::from_secs(300));
        assert_eq!(off.append("a", Some(&Bytes::new()), unix_now()), None);
        let h = MemoryHistory::new(10, Duration::from_secs(300));
        let at = |offset| Position {
            epoch: h.epoch(),
            offset,
        };
        h.record("a", &at(5), &Bytes::new());
        h.record("a", &at(5), &Bytes::new());
        h.record("a", &at(6), &Bytes::new());
        let since = Since::Offset {
            epoch: h.epoch().to_string(),
            offset: 4,
        };
        assert_eq!(offsets(&read(&h, "a", since)), [5, 6]);
        assert_eq!(
            h.append("a", Some(&Bytes::new()), unix_now())
                .map(|p| p.offset),
            Some(7)
        );
    }

    #[test]
    fn a_stream_forgotten_by_a_sweep_never_gives_an_offset_twice() {
        let h = MemoryHistory::new(100, Duration::from_secs(300));
        let p = Bytes::from_static(b"1");
        for _ in 0..3 {
            h.append("a", Some(&p), 1_000);
        }
        let since = |offset| Since::Offset {
            epoch: h.epoch().to_string(),
            offset,
        };
        // Within the time to live the stream stays; past it, it is forgotten.
        h.sweep_at(1_200);
        assert_eq!(h.head("a").offset, 3);
        h.sweep_at(1_301);
        assert!(!h.shard("a").lock().kept.contains_key("a"), "forgotten");
        // What `head` answers now is where the next offsets begin.
        assert_eq!(h.head("a").offset, 3);
        assert_eq!(h.append("a", Some(&p), 1_302).map(|p| p.offset), Some(4));
        assert_eq!(h.read_at("a", &since(1), 1_302), Backlog::Gone);
        assert_eq!(offsets(&h.read_at("a", &since(3), 1_302)), [4]);
    }

    #[test]
    fn a_position_only_stream_counts_and_answers_gone_to_a_reader_that_missed_one() {
        let h = MemoryHistory::new(100, Duration::from_secs(300));
        assert_eq!(h.append("m", None, 1_000).map(|p| p.offset), Some(1));
        assert_eq!(h.append("m", None, 1_000).map(|p| p.offset), Some(2));
        assert_eq!(h.head("m").offset, 2);
        let since = |offset| Since::Offset {
            epoch: h.epoch().to_string(),
            offset,
        };
        assert_eq!(
            offsets(&h.read_at("m", &since(2), 1_000)),
            Vec::<u64>::new()
        );
        assert_eq!(h.read_at("m", &since(1), 1_000), Backlog::Gone);
        assert_eq!(h.read_at("m", &since(0), 1_000), Backlog::Gone);
        assert_eq!(h.read_at("m", &since(3), 1_000), Backlog::Gone);
        // Swept only once idle past the time to live, though it never holds an entry.
        h.sweep_at(1_100);
        assert_eq!(
            offsets(&h.read_at("m", &since(2), 1_100)),
            Vec::<u64>::new()
        );
        h.sweep_at(1_301);
        assert_eq!(h.append("m", None, 1_302).map(|p| p.offset), Some(3));
    }

    const UNREADS: Numbered = Numbered {
        prefix: "user_",
        suffix: "_unreads",
    };

    #[test]
    fn numbered_ids_are_spelled_one_way() {
        assert_eq!(UNREADS.id("user_5_unreads"), Some(5));
        assert_eq!(UNREADS.id("user_0_unreads"), Some(0));
        assert_eq!(UNREADS.id("user_1048576_unreads"), Some(1 << 20));
        for other in [
            "user_05_unreads",
            "user_-3_unreads",
            "user_+3_unreads",
            "user__unreads",
            "user_5_reads",
            "user_5x_unreads",
            "user_99999999999999999999_unreads",
            "Z2lk:messages",
        ] {
            assert_eq!(UNREADS.id(other), None, "{other}");
        }
    }

    /// The answers of `h` to one script of position-only appends, heads and reads on `stream`.
    fn script(h: &MemoryHistory, stream: &str) -> Vec<String> {
        let mut seen = Vec::new();
        let epoch = h.epoch();
        let since = |offset| Since::Offset {
            epoch: epoch.to_string(),
            offset,
        };
        let look = |seen: &mut Vec<String>| {
            seen.push(format!("head {}", h.head(stream).offset));
            for offset in 0..5 {
                let read = h.read_at(stream, &since(offset), 1_000);
                seen.push(format!("{offset}: {read:?}"));
            }
            seen.push(format!(
                "time {:?}",
                h.read_at(stream, &Since::Time(0), 1_000)
            ));
            let other = Since::Offset {
                epoch: "other".into(),
                offset: h.head(stream).offset,
            };
            seen.push(format!("other {:?}", h.read_at(stream, &other, 1_000)));
        };
        look(&mut seen);
        for _ in 0..3 {
            let given = h.append(stream, None, 1_000).map(|p| p.offset);
            seen.push(format!("{given:?}"));
            look(&mut seen);
        }
        seen
    }

    #[test]
    fn a_numbered_stream_answers_as_a_position_only_stream_of_the_map() {
        let by_name = MemoryHistory::new(100, Duration::from_secs(300));
        let numbered = MemoryHistory::new(100, Duration::from_secs(300)).with_numbered(&[UNREADS]);
        let stream = "user_1025_unreads";
        let answers = script(&numbered, stream);
        assert_eq!(answers, script(&by_name, stream));
        assert!(
            answers.contains(&"2: Entries([])".to_owned()),
            "{answers:?}"
        );
        // It is in the table, not the map.
        assert!(numbered.shards.iter().all(|s| s.lock().kept.is_empty()));
        // Positions given elsewhere move the head forward only; a payload is never kept.
        let at = |offset| Position {
            epoch: numbered.epoch(),
            offset,
        };
        let p = Bytes::from_static(b"1");
        let mut heads = Vec::new();
        for offset in [2, 5, 5, 4] {
            numbered.record(stream, &at(offset), &p);
            heads.push(numbered.head(stream).offset);
        }
        assert_eq!(heads, [3, 5, 5, 5]);
        assert_eq!(
            numbered.append(stream, Some(&p), 1_000).map(|p| p.offset),
            Some(6)
        );
        let since = |offset| Since::Offset {
            epoch: numbered.epoch().to_string(),
            offset,
        };
        assert_eq!(numbered.read_at(stream, &since(5), 1_000), Backlog::Gone);
        assert_eq!(
            numbered.read_at(stream, &since(6), 1_000),
            Backlog::Entries(Vec::new())
        );
    }

    #[test]
    fn appends_by_id_and_by_name_share_one_head() {
        let numbered = MemoryHistory::new(100, Duration::from_secs(300)).with_numbered(&[UNREADS]);
        let by_name = MemoryHistory::new(100, Duration::from_secs(300));
        let mut name = String::from("left over");
        // In the table, past it, and negative (spelt with its sign, so by name only).
        for id in [0, 5, 1025, 1 << 20, -3] {
            UNREADS.write(&mut name, id);
            assert_eq!(name, format!("user_{id}_unreads"));
            for h in [&numbered, &by_name] {
                let mut given = Vec::new();
                for turn in 0..4 {
                    match turn % 2 {
                        0 => h.append_numbered(&UNREADS, &[id], 1_000, &mut given),
                        _ => given.extend(h.append(&name, None, 1_000).map(|p| p.offset)),
                    }
                }
                assert_eq!(given, [1, 2, 3, 4], "{name}");
                assert_eq!(h.head(&name).offset, 4, "{name}");
            }
        }
        // Several ids in one call, each its own stream, in order.
        let mut given = vec![9];
        numbered.append_numbered(&UNREADS, &[5, 6, 5, 1 << 20], 1_000, &mut given);
        assert_eq!(given, [9, 5, 1, 6, 5]);
        // The table holds the ids it covers, the map the rest.
        let mapped: usize = numbered.shards.iter().map(|s| s.lock().kept.len()).sum();
        assert_eq!(mapped, 2);
        // At the last offset: no more; history off: none at all.
        let last = Position {
            epoch: numbered.epoch(),
            offset: u64::MAX,
        };
        numbered.record("user_9_unreads", &last, &Bytes::new());
        let mut given = Vec::new();
        numbered.append_numbered(&UNREADS, &[9], 1_000, &mut given);
        let off = MemoryHistory::new(0, Duration::from_secs(300)).with_numbered(&[UNREADS]);
        off.append_numbered(&UNREADS, &[9, 10], 1_000, &mut given);
        assert_eq!(given, [0, 0, 0]);
        assert_eq!(off.head("user_9_unreads").offset, 0);
    }

    #[test]
    fn a_stream_at_the_last_offset_gives_no_more_positions() {
        let numbered = MemoryHistory::new(100, Duration::from_secs(300)).with_numbered(&[UNREADS]);
        let by_name = MemoryHistory::new(100, Duration::from_secs(300));
        for h in [&numbered, &by_name] {
            let last = Position {
                epoch: h.epoch(),
                offset: u64::MAX,
            };
            h.record("user_5_unreads", &last, &Bytes::new());
            assert_eq!(h.append("user_5_unreads", None, 1_000), None);
            assert_eq!(h.head("user_5_unreads").offset, u64::MAX);
        }
    }

    #[test]
    fn numbered_heads_outlive_a_sweep_and_concurrent_appends_share_out_the_offsets() {
        let h = MemoryHistory::new(100, Duration::from_secs(300)).with_numbered(&[UNREADS]);
        h.append("user_5_unreads", None, 1_000);
        h.append("Z2lk:messages", None, 1_000);
        h.sweep_at(1_301);
        assert_eq!(h.head("user_5_unreads").offset, 1);
        let since = Since::Offset {
            epoch: h.epoch().to_string(),
            offset: 1,
        };
        assert_eq!(
            h.read_at("user_5_unreads", &since, 1_301),
            Backlog::Entries(Vec::new())
        );
        let mut given: Vec<u64> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        (0..10_000)
                            .filter_map(|_| h.append("user_7_unreads", None, 1_000))
                            .map(|p| p.offset)
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            threads
                .into_iter()
                .flat_map(|t| t.join().unwrap())
                .collect()
        });
        given.sort_unstable();
        assert_eq!(given, (1..=80_000).collect::<Vec<u64>>());
        assert_eq!(h.head("user_7_unreads").offset, 80_000);
    }

    #[test]
    fn numbered_streams_off_the_table_or_misspelt_are_kept_by_name() {
        let h = MemoryHistory::new(100, Duration::from_secs(300)).with_numbered(&[UNREADS]);
        let p = Bytes::from_static(b"1");
        for stream in ["user_1048576_unreads", "user_05_unreads"] {
            assert_eq!(h.append(stream, Some(&p), 1_000).map(|p| p.offset), Some(1));
            assert_eq!(h.head(stream).offset, 1);
        }
        assert_eq!(h.head("user_5_unreads").offset, 0, "not user_05's");
        assert_eq!(
            h.append("user_5_unreads", None, 1_000).map(|p| p.offset),
            Some(1)
        );
        let kept: usize = h.shards.iter().map(|s| s.lock().kept.len()).sum();
        assert_eq!(kept, 2);
        let off = MemoryHistory::new(0, Duration::from_secs(300)).with_numbered(&[UNREADS]);
        assert_eq!(off.append("user_5_unreads", None, 1_000), None);
    }

    #[test]
    fn epochs_are_eight_url_safe_characters() {
        let e = new_epoch();
        assert_eq!(e.len(), 8);
        assert!(e
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
    }
}
