//! Gates: one connection's positioned subscription of a stream held back while its history
//! is sent, then let through without a position it already sent.
//!
//! A client that subscribes with a history request (or restores a session and asks for the
//! history) must get the history's entries first and then the live broadcasts, each position
//! once. The subscription has to be attached before the history is read (or what is broadcast
//! between the read and the attach is lost), so for a while two sources feed it: the live
//! fan-out and the history answer. A gate sits between the first one and the outbox:
//!
//! 1. [`Gates::hold`] (before the attach): every frame the fan-out gives the (stream, variant
//!    key) pair is kept aside with its position, in order, instead of being queued.
//! 2. The connection sends the history's entries itself.
//! 3. [`Gates::release`] with the last position sent: the kept frames after it are queued, in
//!    order, and the gate opens. It stays, as a floor: a frame at or before the last position
//!    sent (assigned before the history was read, but broadcast after; with several nodes, one
//!    the history's store had before this node's pub/sub link brought it) is dropped, never
//!    sent twice.
//!
//! An open gate notes the last position it let through, for as long as the subscription
//! lasts (a positioned subscription that holds nothing gets one at its attach,
//! [`Gates::track`]): a later history request on a live subscription starts after what the
//! fan-out already sent it ([`Gates::hold`] returns that position), so nothing comes twice.
//!
//! Cost: an outbox without gates pays one atomic load per positioned broadcast it is given
//! (`actioncable-v1-json` subscriptions, never positioned, pay nothing); an outbox with a
//! gate (every `actioncable-v1-ext-json` connection with a positioned subscription) takes its
//! mutex for its positioned frames and looks its gate up among its own. Only a held gate
//! allocates (the frames it keeps aside), and it keeps at most the outbox's frame bound: past
//! it the connection is cut off as too slow, as a full outbox would be. Noting a position
//! clones the broadcast's shared epoch (a reference count, no allocation).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::Stamp;

/// A position as a gate compares it: (epoch, offset).
pub(crate) type Mark = (Arc<str>, u64);

/// What a gate does with one frame ([`Gates::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Queue it.
    Through,
    /// It is at or before the last position the subscription was sent: drop it.
    Skip,
    /// Kept aside until the release.
    Held,
    /// The gate holds as many frames as the outbox may: cut the connection off.
    Full,
}

/// One gated (stream, variant key) of a connection.
#[derive(Debug)]
struct Gate {
    stream: Arc<str>,
    key: Arc<str>,
    /// While held: the frames kept aside, oldest first, with their positions.
    held: Option<Vec<(Bytes, Option<Mark>)>>,
    /// The last position sent to the subscription (kept after the release, as the floor).
    last: Option<Mark>,
}

impl Gate {
    fn is(&self, stream: &str, key: &str) -> bool {
        &*self.stream == stream && &*self.key == key
    }
}

/// Whether a frame at `at` is at or before `last` (the same epoch, an offset not past it).
fn seen(at: Option<(&str, u64)>, last: Option<&Mark>) -> bool {
    match (at, last) {
        (Some((epoch, offset)), Some((last_epoch, last_offset))) => {
            epoch == &**last_epoch && offset <= *last_offset
        }
        _ => false,
    }
}

/// The gates of one connection (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Gates {
    /// Whether `list` holds a gate: read without the lock on every positioned push.
    on: AtomicBool,
    list: Mutex<Vec<Gate>>,
}

impl Gates {
    /// Whether any gate is set (the push path's one check).
    #[inline]
    pub(crate) fn any(&self) -> bool {
        self.on.load(Ordering::Acquire)
    }

    /// Starts holding `stream`'s frames for `key` (again, if the gate was open). Returns the
    /// last position the subscription was sent (live or by an earlier release), if any: a
    /// history answer must start after it.
    pub(crate) fn hold(&self, stream: &str, key: &str) -> Option<Mark> {
        let mut list = self.list.lock();
        let last = match list.iter_mut().find(|g| g.is(stream, key)) {
            Some(gate) => {
                gate.held.get_or_insert_with(Vec::new);
                gate.last.clone()
            }
            None => {
                list.push(Gate {
                    stream: Arc::from(stream),
                    key: Arc::from(key),
                    held: Some(Vec::new()),
                    last: None,
                });
                None
            }
        };
        self.on.store(true, Ordering::Release);
        last
    }

    /// Sets an open gate on `stream`'s `key` (none held): it only notes the last position
    /// let through, so that a later history request sends nothing the subscription already
    /// got. Call it before the attach of a positioned subscription that holds nothing.
    pub(crate) fn track(&self, stream: &str, key: &str) {
        let mut list = self.list.lock();
        if !list.iter().any(|g| g.is(stream, key)) {
            list.push(Gate {
                stream: Arc::from(stream),
                key: Arc::from(key),
                held: None,
                last: None,
            });
        }
        self.on.store(true, Ordering::Release);
    }

    /// What to do with `frame` (at `stamp`'s position, if it has one) for `stream`'s `key`;
    /// a held frame is kept, up to `max_held`.
    pub(crate) fn check(
        &self,
        stream: &str,
        key: &str,
        frame: &Bytes,
        stamp: Option<&Stamp>,
        max_held: usize,
    ) -> Pass {
        let mut list = self.list.lock();
        let Some(i) = list.iter().position(|g| g.is(stream, key)) else {
            return Pass::Through;
        };
        let gate = &mut list[i];
        if let Some(held) = &mut gate.held {
            if held.len() >= max_held {
                return Pass::Full;
            }
            held.push((frame.clone(), stamp.map(|s| (s.epoch.clone(), s.offset))));
            return Pass::Held;
        }
        let Some(stamp) = stamp else {
            return Pass::Through;
        };
        if seen(Some((&stamp.epoch, stamp.offset)), gate.last.as_ref()) {
            return Pass::Skip;
        }
        // Past the floor (or in another epoch): noted as the last position sent (no
        // allocation: the epoch is shared).
        gate.last = Some((stamp.epoch.clone(), stamp.offset));
        Pass::Through
    }

    /// Ends the hold of `stream`'s `key`: gives `queue` the kept frames after `last` (the
    /// position the subscription has: the last history entry sent, or the client's own; None:
    /// the last the gate let through), in order, and leaves the last position given as the
    /// floor. Runs under the gates' lock, so
    /// a broadcast racing the release is queued after the kept frames.
    pub(crate) fn release(
        &self,
        stream: &str,
        key: &str,
        last: Option<Mark>,
        queue: impl FnMut(&Bytes),
    ) {
        let mut queue = queue;
        let mut list = self.list.lock();
        let Some(i) = list.iter().position(|g| g.is(stream, key)) else {
            return;
        };
        let gate = &mut list[i];
        let mut last = last.or_else(|| gate.last.take());
        for (frame, at) in gate.held.take().unwrap_or_default() {
            if seen(at.as_ref().map(|(e, o)| (&**e, *o)), last.as_ref()) {
                continue;
            }
            queue(&frame);
            if at.is_some() {
                last = at;
            }
        }
        gate.last = last;
    }

    /// Drops `stream`'s gate for `key`, held frames and all (the subscription is gone).
    pub(crate) fn forget(&self, stream: &str, key: &str) {
        let mut list = self.list.lock();
        list.retain(|g| !g.is(stream, key));
        self.on.store(!list.is_empty(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(epoch: &str, offset: u64) -> Stamp {
        Stamp {
            suffix: Bytes::new(),
            epoch: Arc::from(epoch),
            offset,
        }
    }

    fn frame(n: u64) -> Bytes {
        Bytes::from(n.to_string())
    }

    #[test]
    fn held_frames_after_the_last_sent_come_out_in_order_then_the_floor_drops_older_ones() {
        let gates = Gates::default();
        assert!(!gates.any());
        gates.hold("s", "k");
        assert!(gates.any());
        for n in 4..=7 {
            let pass = gates.check("s", "k", &frame(n), Some(&stamp("e", n)), 100);
            assert_eq!(pass, Pass::Held);
        }
        // Another stream, another key: not gated.
        assert_eq!(gates.check("t", "k", &frame(1), None, 100), Pass::Through);
        assert_eq!(gates.check("s", "j", &frame(1), None, 100), Pass::Through);
        // The history sent up to 5: 6 and 7 follow it.
        let mut out = Vec::new();
        gates.release("s", "k", Some((Arc::from("e"), 5)), |f| out.push(f.clone()));
        assert_eq!(out, [frame(6), frame(7)]);
        // 7 was sent: a late 7 is dropped; 8 goes through and ends the gate.
        assert_eq!(
            gates.check("s", "k", &frame(7), Some(&stamp("e", 7)), 100),
            Pass::Skip
        );
        assert!(gates.any());
        assert_eq!(
            gates.check("s", "k", &frame(8), Some(&stamp("e", 8)), 100),
            Pass::Through
        );
        // The gate stays open and notes what it let through: nothing older comes after it,
        // and a later hold says where a history answer must start.
        assert!(gates.any());
        assert_eq!(
            gates.check("s", "k", &frame(3), Some(&stamp("e", 3)), 100),
            Pass::Skip
        );
        assert_eq!(gates.hold("s", "k"), Some((Arc::from("e"), 8)));
    }

    #[test]
    fn a_tracking_gate_notes_the_last_position_let_through_and_drops_older_ones() {
        let gates = Gates::default();
        gates.track("s", "k");
        assert!(gates.any());
        assert_eq!(gates.check("s", "k", &frame(0), None, 1), Pass::Through);
        for n in 1..=3 {
            let pass = gates.check("s", "k", &frame(n), Some(&stamp("e", n)), 1);
            assert_eq!(pass, Pass::Through);
        }
        assert_eq!(
            gates.check("s", "k", &frame(2), Some(&stamp("e", 2)), 1),
            Pass::Skip
        );
        // Tracking again changes nothing; the hold starts after 3.
        gates.track("s", "k");
        assert_eq!(gates.hold("s", "k"), Some((Arc::from("e"), 3)));
        assert_eq!(
            gates.check("s", "k", &frame(4), Some(&stamp("e", 4)), 1),
            Pass::Held
        );
        let mut out = Vec::new();
        gates.release("s", "k", None, |f| out.push(f.clone()));
        assert_eq!(out, [frame(4)]);
        assert_eq!(gates.hold("s", "k"), Some((Arc::from("e"), 4)));
    }

    #[test]
    fn another_epoch_passes_a_full_gate_cuts_off_and_forget_clears() {
        let gates = Gates::default();
        gates.hold("s", "k");
        assert_eq!(gates.check("s", "k", &frame(1), None, 1), Pass::Held);
        assert_eq!(gates.check("s", "k", &frame(2), None, 1), Pass::Full);
        let mut out = Vec::new();
        gates.release("s", "k", Some((Arc::from("e"), 9)), |f| out.push(f.clone()));
        // An unpositioned frame cannot be compared: it is sent.
        assert_eq!(out, [frame(1)]);
        assert_eq!(
            gates.check("s", "k", &frame(2), Some(&stamp("f", 2)), 1),
            Pass::Through
        );
        assert_eq!(gates.hold("s", "k"), Some((Arc::from("f"), 2)));
        gates.forget("s", "k");
        assert!(!gates.any());
        // Released with nothing sent and nothing held: no floor, the gate stays open.
        assert_eq!(gates.hold("s", "k"), None);
        gates.release("s", "k", None, |_| panic!("nothing held"));
        assert_eq!(gates.check("s", "k", &frame(1), None, 1), Pass::Through);
        assert_eq!(gates.hold("s", "k"), None);
    }
}
