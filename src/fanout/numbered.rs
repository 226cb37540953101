//! Which streams of a numbered family ([`Numbered`]: `user_<id>_unreads`, one per user) the
//! stream index holds, by id: one bit per id, so a broadcast to the family's stream of every
//! member of a room (a post's unread notices) looks up by name only the streams that have a
//! subscriber on this node, and skips the others with one load.
//!
//! A bit is set under the index's shard write lock before the stream's entry is inserted, and
//! cleared under the same lock after it is removed, so a subscribe that has returned is never
//! skipped; a bit set for a stream whose last subscriber just left costs one lookup that finds
//! nothing. Ids past the table (or negative) are always looked up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::history::Numbered;

/// Ids per chunk of a family's bits (8 KiB, allocated on the chunk's first subscriber).
const CHUNK_IDS: usize = 1 << 16;
/// Chunks per family: ids below 2²⁰ are in the table, as in the history's heads.
const CHUNKS: usize = 16;

/// One family's bits, by id.
#[derive(Debug)]
pub(crate) struct Bits {
    family: Numbered,
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl Bits {
    fn new(family: Numbered) -> Self {
        Self {
            family,
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Where `id`'s bit is.
    fn place(&self, id: u64, create: bool) -> Place<'_> {
        let Some(chunk) = usize::try_from(id)
            .ok()
            .and_then(|id| self.chunks.get(id / CHUNK_IDS))
        else {
            return Place::PastTable;
        };
        let words = if create {
            chunk.get_or_init(|| (0..CHUNK_IDS / 64).map(|_| AtomicU64::new(0)).collect())
        } else {
            match chunk.get() {
                Some(words) => words,
                None => return Place::Unset,
            }
        };
        let within = id as usize % CHUNK_IDS;
        Place::Bit(&words[within / 64], 1u64 << (within % 64))
    }

    /// Whether the index may hold the family's stream of `id`: false only when it surely does
    /// not.
    #[inline]
    pub(crate) fn may_hold(&self, id: i64) -> bool {
        let Ok(id) = u64::try_from(id) else {
            return true;
        };
        match self.place(id, false) {
            Place::PastTable => true,
            Place::Unset => false,
            Place::Bit(word, bit) => word.load(Ordering::Acquire) & bit != 0,
        }
    }
}

/// Where an id's bit is.
enum Place<'a> {
    /// Past the table (or not an index on this platform): no bit, always looked up.
    PastTable,
    /// In a chunk not allocated yet: no stream of its ids was ever held.
    Unset,
    /// The word and the bit within it.
    Bit(&'a AtomicU64, u64),
}

/// The bits of every family the index was given ([`Filter::new`]).
#[derive(Debug, Default)]
pub(crate) struct Filter {
    families: Box<[Bits]>,
}

impl Filter {
    /// A filter of `families` (none: every stream is looked up by name).
    pub(crate) fn new(families: &[Numbered]) -> Self {
        Self {
            families: families.iter().map(|&f| Bits::new(f)).collect(),
        }
    }

    /// The bits of `family`, if the index keeps them.
    #[inline]
    pub(crate) fn family(&self, family: &Numbered) -> Option<&Bits> {
        self.families.iter().find(|b| b.family == *family)
    }

    /// Notes that the index now holds `stream` (call before inserting its entry).
    pub(crate) fn added(&self, stream: &str) {
        if let Some((word, bit)) = self.bit_of(stream) {
            word.fetch_or(bit, Ordering::Release);
        }
    }

    /// Notes that the index no longer holds `stream` (call after removing its entry).
    pub(crate) fn removed(&self, stream: &str) {
        if let Some((word, bit)) = self.bit_of(stream) {
            word.fetch_and(!bit, Ordering::Release);
        }
    }

    /// The bit of `stream`, when it is of a family here and its id is in the table.
    fn bit_of(&self, stream: &str) -> Option<(&AtomicU64, u64)> {
        self.families.iter().find_map(|bits| {
            let id = bits.family.id(stream)?;
            match bits.place(id, true) {
                Place::Bit(word, bit) => Some((word, bit)),
                Place::PastTable | Place::Unset => None,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNREADS: Numbered = Numbered {
        prefix: "user_",
        suffix: "_unreads",
    };
    const READS: Numbered = Numbered {
        prefix: "user_",
        suffix: "_reads",
    };

    #[test]
    fn a_bit_follows_its_stream_and_ids_off_the_table_are_always_looked_up() {
        let filter = Filter::new(&[UNREADS]);
        let bits = filter.family(&UNREADS).expect("kept");
        assert!(filter.family(&READS).is_none());
        for id in [0, 5, 63, 64, 65_535, 65_536, (1 << 20) - 1] {
            assert!(!bits.may_hold(id), "{id}");
            filter.added(&format!("user_{id}_unreads"));
            assert!(bits.may_hold(id), "{id}");
            if id + 1 < 1 << 20 {
                assert!(!bits.may_hold(id + 1), "{id} + 1");
            }
            filter.removed(&format!("user_{id}_unreads"));
            assert!(!bits.may_hold(id), "{id}");
        }
        // Past the table, negative: always looked up; another family or spelling: no bit.
        assert!(bits.may_hold(1 << 20));
        assert!(bits.may_hold(-3));
        for other in [
            "user_7_reads",
            "user_07_unreads",
            "user_7_unreads_x",
            "rooms",
        ] {
            filter.added(other);
        }
        assert!(!bits.may_hold(7));
        // Neighbours in one word stay apart.
        filter.added("user_64_unreads");
        filter.added("user_65_unreads");
        filter.removed("user_64_unreads");
        assert!(!bits.may_hold(64));
        assert!(bits.may_hold(65));
    }
}
