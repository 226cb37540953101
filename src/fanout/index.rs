//! The subscriber index: stream → identifier variants → subscribed connections.
//!
//! A broadcast names a stream (Action Cable calls it a broadcasting); the index answers with
//! one lookup which connections listen to it and how each one wants the message wrapped (its
//! [`Variant`]). Subscribers of one stream are grouped by `Variant::key`, so a broadcast
//! encodes one frame per group and hands the same frame to every member of that group.
//!
//! Locking: the stream map is split into shards, each a `RwLock<HashMap>`. A broadcast holds a
//! shard's read lock only long enough to clone the stream's `Arc`, then takes that stream's own
//! read lock while it pushes frames. No lock covering more than one stream is held while
//! frames are handed out, and broadcasts to one stream run concurrently (read locks).
//! Subscribe and unsubscribe take the stream's write lock; lock order is always shard before
//! stream, and subscribe never holds both.
//!
//! Removal: when a stream loses its last subscriber its entry is marked dead and removed from
//! the shard. A subscribe that looked the entry up just before that finds it dead under the
//! stream lock and retries the lookup, so a subscription can never land in a removed entry.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::RandomState;
use parking_lot::RwLock;

use super::numbered::{Bits, Filter};
use super::queue::Outbox;
use super::Variant;
use crate::history::Numbered;

/// Number of shards of the stream map (a power of two).
const SHARDS: usize = 64;

/// One shard of the stream map. Stream names are hashed with foldhash (randomly seeded per
/// process, so not predictable from outside) rather than SipHash: a post looks up one stream
/// per member of its room (the unread notices), so the hash is on the post path a thousand
/// times per message in a room of a thousand.
type Shard = RwLock<HashMap<Arc<str>, Arc<StreamEntry>, RandomState>>;

/// Stream name → subscribers, sharded.
#[derive(Debug)]
pub(crate) struct Index {
    shards: Box<[Shard]>,
    hasher: RandomState,
    /// Which streams of the numbered families it was given it holds, by id.
    numbered: Filter,
}

/// The subscribers of one stream.
#[derive(Debug, Default)]
pub(crate) struct StreamEntry {
    groups: RwLock<Groups>,
}

/// The variant groups of one stream, plus the removal mark.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    dead: bool,
    list: Vec<Group>,
}

/// Members up to which a group finds a connection by scanning `members` (a few cache lines)
/// instead of keeping a position map: per-user and per-room streams with a handful of
/// subscribers then cost no map allocation (about 100 bytes each).
const SCAN_MEMBERS: usize = 16;

/// The subscribers of one stream that share an identifier variant.
#[derive(Debug)]
pub(crate) struct Group {
    variant: Variant,
    members: Vec<Arc<Outbox>>,
    /// Connection id → position in `members`, for O(1) removal. Kept only while the group has
    /// more than [`SCAN_MEMBERS`] members (empty, and unallocated, otherwise).
    positions: HashMap<u64, usize>,
}

impl Group {
    fn position(&self, id: u64) -> Option<usize> {
        if self.positions.is_empty() {
            self.members.iter().position(|m| m.id() == id)
        } else {
            self.positions.get(&id).copied()
        }
    }

    fn add(&mut self, member: &Arc<Outbox>) {
        self.members.push(member.clone());
        if !self.positions.is_empty() {
            self.positions.insert(member.id(), self.members.len() - 1);
        } else if self.members.len() > SCAN_MEMBERS {
            self.positions = self
                .members
                .iter()
                .enumerate()
                .map(|(i, m)| (m.id(), i))
                .collect();
        }
    }

    fn remove(&mut self, id: u64) -> Option<()> {
        let pos = self.position(id)?;
        self.members.swap_remove(pos);
        if self.positions.is_empty() {
            return Some(());
        }
        if self.members.len() <= SCAN_MEMBERS / 2 {
            // Small again: free the map (hysteresis avoids rebuilding it at the threshold).
            self.positions = HashMap::new();
            return Some(());
        }
        self.positions.remove(&id);
        if let Some(moved) = self.members.get(pos) {
            self.positions.insert(moved.id(), pos);
        }
        Some(())
    }
}

/// What a subscribe changed.
#[derive(Debug)]
pub(crate) enum Subscribed {
    /// A new (stream, variant key, connection) entry. `stream` is the index's shared copy of
    /// the stream name and `key` its group's copy of the variant key (a connection keeps these,
    /// not copies of its own: a compressed or extended-protocol subscription's key is built
    /// for each subscribe, and would otherwise be one string per connection); `new_stream`
    /// tells whether the stream had no subscribers before.
    Added {
        stream: Arc<str>,
        key: Arc<str>,
        new_stream: bool,
    },
    /// The connection was already subscribed to the stream under this variant key.
    Already,
}

impl Index {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::with_numbered(&[])
    }

    /// An empty index that keeps, for each of `families`, which of their streams it holds by
    /// id ([`Index::numbered`]).
    pub(crate) fn with_numbered(families: &[Numbered]) -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| RwLock::new(HashMap::with_hasher(RandomState::default())))
                .collect(),
            hasher: RandomState::default(),
            numbered: Filter::new(families),
        }
    }

    /// Which of `family`'s streams this index holds, by id; None when it was not given the
    /// family (then every stream must be looked up by name).
    #[inline]
    pub(crate) fn numbered(&self, family: &Numbered) -> Option<&Bits> {
        self.numbered.family(family)
    }

    fn shard(&self, stream: &str) -> &Shard {
        let h = self.hasher.hash_one(stream) as usize;
        &self.shards[h & (SHARDS - 1)]
    }

    /// The subscribers of `stream`, if it has any. The shard lock is released on return.
    #[inline]
    pub(crate) fn get(&self, stream: &str) -> Option<Arc<StreamEntry>> {
        self.shard(stream).read().get(stream).cloned()
    }

    /// Adds `member` to `stream` under `variant`. Idempotent per (stream, variant key,
    /// connection). When it returns, a broadcast that looks the stream up sees the member.
    pub(crate) fn subscribe(
        &self,
        stream: &str,
        variant: &Variant,
        member: &Arc<Outbox>,
    ) -> Subscribed {
        let shard = self.shard(stream);
        loop {
            let found = shard
                .read()
                .get_key_value(stream)
                .map(|(k, e)| (k.clone(), e.clone()));
            let (name, entry, created) = match found {
                Some((k, e)) => (k, e, false),
                None => {
                    let mut map = shard.write();
                    match map.get_key_value(stream) {
                        Some((k, e)) => (k.clone(), e.clone(), false),
                        None => {
                            let name: Arc<str> = Arc::from(stream);
                            let entry = Arc::new(StreamEntry::default());
                            self.numbered.added(stream);
                            map.insert(name.clone(), entry.clone());
                            (name, entry, true)
                        }
                    }
                }
            };
            let mut groups = entry.groups.write();
            if groups.dead {
                // Removed between the lookup and the lock; look it up again.
                continue;
            }
            let group = match groups
                .list
                .iter()
                .position(|g| g.variant.key == variant.key)
            {
                Some(i) => &mut groups.list[i],
                None => {
                    groups.list.push(Group {
                        variant: variant.clone(),
                        members: Vec::new(),
                        positions: HashMap::new(),
                    });
                    groups.list.last_mut().expect("just pushed")
                }
            };
            if group.position(member.id()).is_some() {
                return Subscribed::Already;
            }
            group.add(member);
            return Subscribed::Added {
                stream: name,
                key: group.variant.key.clone(),
                new_stream: created,
            };
        }
    }

    /// Removes connection `id` from `stream` under `variant_key`. Returns `None` when it was
    /// not subscribed, else whether the stream lost its last subscriber and was removed.
    pub(crate) fn unsubscribe(&self, stream: &str, variant_key: &str, id: u64) -> Option<bool> {
        let shard = self.shard(stream);
        let entry = shard.read().get(stream).cloned()?;
        {
            let mut groups = entry.groups.write();
            let gi = groups
                .list
                .iter()
                .position(|g| &*g.variant.key == variant_key)?;
            let group = &mut groups.list[gi];
            group.remove(id)?;
            if group.members.is_empty() {
                groups.list.swap_remove(gi);
            }
            if !groups.list.is_empty() {
                return Some(false);
            }
        }
        // The stream looks empty: remove it, re-checking under both locks (shard first).
        let mut map = shard.write();
        let mut groups = entry.groups.write();
        let current = map.get(stream).is_some_and(|e| Arc::ptr_eq(e, &entry));
        if groups.list.is_empty() && !groups.dead && current {
            groups.dead = true;
            map.remove(stream);
            self.numbered.removed(stream);
            return Some(true);
        }
        Some(false)
    }

    /// Number of streams with subscribers (walks every shard; for tests and diagnostics).
    #[cfg(test)]
    pub(crate) fn stream_count(&self) -> usize {
        self.shards.iter().map(|s| s.read().len()).sum()
    }
}

impl StreamEntry {
    /// Read access to the stream's variant groups while frames are handed out.
    #[inline]
    pub(crate) fn read(&self) -> parking_lot::RwLockReadGuard<'_, Groups> {
        self.groups.read()
    }
}

impl Groups {
    /// The variant groups of the stream.
    #[inline]
    pub(crate) fn groups(&self) -> &[Group] {
        &self.list
    }
}

impl Group {
    /// How this group's subscribers want the message wrapped.
    #[inline]
    pub(crate) fn variant(&self) -> &Variant {
        &self.variant
    }

    /// The outboxes of this group's subscribers.
    #[inline]
    pub(crate) fn members(&self) -> &[Arc<Outbox>] {
        &self.members
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fanout::QueueLimits;
    use bytes::Bytes;

    fn variant(key: &str) -> Variant {
        Variant {
            key: Arc::from(key),
            prefix: Bytes::from(format!("<{key}>")),
            suffix: Bytes::from_static(b"</>"),
            positioned: false,
            deflate: None,
        }
    }

    fn outbox(id: u64) -> Arc<Outbox> {
        Arc::new(Outbox::new(id, QueueLimits::default()))
    }

    fn member_ids(index: &Index, stream: &str) -> Vec<(String, Vec<u64>)> {
        let Some(entry) = index.get(stream) else {
            return Vec::new();
        };
        let groups = entry.read();
        let mut out: Vec<_> = groups
            .groups()
            .iter()
            .map(|g| {
                let mut ids: Vec<u64> = g.members().iter().map(|m| m.id()).collect();
                ids.sort_unstable();
                (g.variant().key.to_string(), ids)
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn subscribe_groups_by_variant_and_is_idempotent() {
        let index = Index::new();
        let (a, b, c) = (outbox(1), outbox(2), outbox(3));
        assert!(matches!(
            index.subscribe("room", &variant("x"), &a),
            Subscribed::Added {
                new_stream: true,
                ..
            }
        ));
        assert!(matches!(
            index.subscribe("room", &variant("x"), &b),
            Subscribed::Added {
                new_stream: false,
                ..
            }
        ));
        assert!(matches!(
            index.subscribe("room", &variant("y"), &c),
            Subscribed::Added { .. }
        ));
        // A later member of a group gets the group's own key, not its own copy.
        let (d, x) = (outbox(4), variant("x"));
        let Subscribed::Added { key, .. } = index.subscribe("room", &x, &d) else {
            panic!("added")
        };
        assert!(!Arc::ptr_eq(&key, &x.key) && *key == *x.key);
        assert!(matches!(
            index.subscribe("room", &variant("x"), &a),
            Subscribed::Already
        ));
        assert_eq!(
            member_ids(&index, "room"),
            vec![("x".into(), vec![1, 2, 4]), ("y".into(), vec![3])]
        );
    }

    #[test]
    fn unsubscribe_removes_members_groups_and_empty_streams() {
        let index = Index::new();
        let members: Vec<_> = (1..=4).map(outbox).collect();
        for m in &members {
            index.subscribe("s", &variant("x"), m);
        }
        index.subscribe("s", &variant("y"), &members[0]);
        assert_eq!(index.unsubscribe("s", "x", 2), Some(false));
        assert_eq!(index.unsubscribe("s", "x", 2), None);
        assert_eq!(index.unsubscribe("s", "nope", 1), None);
        assert_eq!(index.unsubscribe("other", "x", 1), None);
        assert_eq!(
            member_ids(&index, "s"),
            vec![("x".into(), vec![1, 3, 4]), ("y".into(), vec![1])]
        );
        // Removing from the middle keeps the position map right for the moved member.
        assert_eq!(index.unsubscribe("s", "x", 1), Some(false));
        assert_eq!(index.unsubscribe("s", "x", 4), Some(false));
        assert_eq!(index.unsubscribe("s", "x", 3), Some(false));
        assert_eq!(member_ids(&index, "s"), vec![("y".into(), vec![1])]);
        assert_eq!(index.unsubscribe("s", "y", 1), Some(true));
        assert!(index.get("s").is_none());
        assert_eq!(index.stream_count(), 0);
    }

    #[test]
    fn large_groups_keep_a_position_map_and_drop_it_when_small_again() {
        let index = Index::new();
        let members: Vec<_> = (1..=40).map(outbox).collect();
        for m in &members {
            index.subscribe("s", &variant("x"), m);
        }
        let map_len = |index: &Index| index.get("s").unwrap().read().list[0].positions.len();
        assert_eq!(map_len(&index), 40);
        assert!(matches!(
            index.subscribe("s", &variant("x"), &members[3]),
            Subscribed::Already
        ));
        // Remove from the front (swap_remove moves the last member into place each time).
        for id in 1..=31 {
            assert_eq!(index.unsubscribe("s", "x", id), Some(false));
        }
        assert_eq!(map_len(&index), 9, "kept down to half the scan size");
        assert_eq!(index.unsubscribe("s", "x", 32), Some(false));
        assert_eq!(map_len(&index), 0);
        assert_eq!(
            member_ids(&index, "s"),
            vec![("x".into(), (33..=40).collect::<Vec<_>>())]
        );
        for id in 33..=40 {
            assert_eq!(index.unsubscribe("s", "x", id), Some(id == 40));
        }
    }

    #[test]
    fn a_removed_entry_is_never_reused() {
        let index = Index::new();
        let a = outbox(1);
        index.subscribe("s", &variant("x"), &a);
        let stale = index.get("s").unwrap();
        index.unsubscribe("s", "x", 1);
        assert!(stale.read().dead);
        assert!(matches!(
            index.subscribe("s", &variant("x"), &a),
            Subscribed::Added {
                new_stream: true,
                ..
            }
        ));
        let fresh = index.get("s").unwrap();
        assert!(!Arc::ptr_eq(&stale, &fresh));
        assert_eq!(member_ids(&index, "s"), vec![("x".into(), vec![1])]);
    }
}
