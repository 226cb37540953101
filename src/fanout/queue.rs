//! The bounded per-connection outbox: producers push, the connection's writer drains.
//!
//! Every attached connection has one [`Outbox`]. Any thread may push a frame into it (a
//! broadcast, a `send_all` ping, a direct `send`); only the connection's writer pops (its
//! writer thread's sweeper, or its own writer task, never both at once: see `writer.rs`). The
//! handoff takes no lock that the writer also takes while nothing is backed up:
//!
//! - **Frames** go into a small `crossbeam_queue::ArrayQueue<Bytes>` of [`RING_SLOTS`] slots (a
//!   bounded lock-free ring, FIFO for all producers), allocated on the first push so an
//!   attached connection that never receives anything costs no ring. An idle or keeping-up
//!   connection never holds more than a few frames, so this is all it ever allocates.
//! - **Backlog** spills into an overflow deque behind a mutex, used only once the ring is full:
//!   its storage starts at [`RING_SLOTS`] slots and doubles as the backlog grows, up to the
//!   frame bound, and is freed again once the connection has drained and not spilled for
//!   [`SHRINK_AFTER`] (checked when the writer goes idle). While the overflow holds frames
//!   (`spilled` set), every push goes there, so frames stay in order; the writer takes the
//!   ring first, then the overflow, and clears `spilled` under the mutex when it empties it.
//!   Growth allocates (documented: a backed-up connection's pushes take the mutex and may
//!   resize the deque); a connection that keeps up never reaches this path.
//! - **The frame bound** is `max_frames` queued in ring and overflow together. **Bytes** are
//!   accounted in an `AtomicUsize`: a producer adds the frame's length before pushing, the
//!   writer subtracts it once the frame is completely written. Exceeding either bound cuts the
//!   connection off as too slow (see [`Outbox::push_shared_by`]). Only frames longer than
//!   `max_bytes / max_frames` (32 KiB with the defaults) are accounted: shorter ones cannot
//!   reach `max_bytes` within `max_frames` anyway, and skipping the atomic add saves one of the
//!   atomic read-modify-writes a push would otherwise cost. An outbox therefore holds at most
//!   `max_bytes` of long frames plus `max_frames` short ones: never more than `2 × max_bytes`.
//! - **Wake-ups** use an atomic `armed` flag and a `tokio::sync::Notify`. The first push of a
//!   drain epoch flips `armed` from false to true and notifies; later pushes see `armed` set and
//!   only enqueue. The writer clears `armed` *before* it pops, so a push that races with the
//!   end of a drain is either seen by that drain or re-arms and notifies again. A connection is
//!   therefore woken at most once per drain epoch, however many broadcasts hit it. On a writer
//!   thread the wake-up goes to the thread's sweeper instead ([`WakeList`]: the outbox is
//!   listed, and one pass hands all its listings over at once); the `Notify` then serves the
//!   connection's own task (state changes, a full socket handed over by the sweeper).
//!
//! Why no wake-up is lost: a producer's ring push (a `SeqCst` compare-exchange on the tail) or
//! its `SeqCst` store of `spilled` (before an overflow push, under the mutex) comes before its
//! `SeqCst` load of `armed`; the writer's `SeqCst` swap of `armed` comes before its pop (which
//! reads the ring's tail after a `SeqCst` fence, then loads `spilled` with `SeqCst` and takes
//! the mutex). In the single total order of those operations either the producer's load
//! follows the writer's swap — it sees `false` and notifies — or it precedes it, and then the
//! writer's pop sees the pushed frame (in the ring, or through `spilled` in the overflow, whose
//! mutex orders the push before the writer's look).
//!
//! Order: a push that starts after another push has returned (same thread, or ordered by any
//! synchronisation) is popped after it. A push that observed `spilled == false` and then found
//! the ring full retries under the mutex, where `spilled` only changes.
//!
//! The outbox also carries the connection's lifecycle [`State`], because producers must stop
//! pushing into a connection that is closing or cut off, and the writer must learn of it.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use crossbeam_queue::ArrayQueue;
use parking_lot::Mutex;
use tokio::sync::futures::Notified;
use tokio::sync::Notify;

use super::budget::{Charge, Holder};
use super::gate::Gates;
use super::QueueLimits;

/// Slots of the lock-free ring (40 bytes each: a `Bytes` and crossbeam's slot stamp), and the
/// overflow's first capacity. Capped at `max_frames`.
pub(crate) const RING_SLOTS: usize = 8;

/// How long the overflow must have gone unused before an idle writer frees its storage.
pub(crate) const SHRINK_AFTER: Duration = Duration::from_secs(1);

thread_local! {
    /// Nesting depth of [`defer_wakes`] on this thread; 0 outside any pass. A constant
    /// `Cell` without a destructor: reading it on every push is one thread-local load.
    static DEFER_DEPTH: Cell<usize> = const { Cell::new(0) };
    /// The outboxes whose writer a push of the pass armed and did not wake yet (see
    /// [`defer_wakes`]). Its storage is kept from pass to pass, so a pass allocates nothing
    /// per connection.
    static DEFERRED: RefCell<Vec<Arc<Outbox>>> = const { RefCell::new(Vec::new()) };
}

/// The outboxes whose writer a writer thread must run, in the order they were woken: one per
/// writer thread, drained by that thread's sweeper (`sweeper.rs`), which writes each one's
/// socket in turn instead of waking a task per connection. A pass hands all its wake-ups for
/// the thread over in one lock ([`WakeList::push_all`]) and wakes the sweeper once.
#[derive(Debug, Default)]
pub(crate) struct WakeList {
    armed: Mutex<Vec<Arc<Outbox>>>,
    notify: Notify,
}

impl WakeList {
    /// Appends `outboxes` and wakes the sweeper if the list was empty (a non-empty list has a
    /// sweeper wake-up pending already: the sweeper takes the list before it sleeps).
    pub(crate) fn push_all(&self, outboxes: impl IntoIterator<Item = Arc<Outbox>>) {
        let was_empty = {
            let mut armed = self.armed.lock();
            let was_empty = armed.is_empty();
            armed.extend(outboxes);
            was_empty
        };
        if was_empty {
            self.notify.notify_one();
        }
    }

    /// Moves everything listed into `into` (appended, oldest first).
    pub(crate) fn take(&self, into: &mut Vec<Arc<Outbox>>) {
        let mut armed = self.armed.lock();
        if into.is_empty() {
            std::mem::swap(&mut *armed, into);
        } else {
            into.append(&mut armed);
        }
    }

    /// A future that resolves once something is listed after the last [`WakeList::take`]
    /// that found the list empty (a `Notify` permit: no wake-up between the two is lost).
    pub(crate) fn notified(&self) -> Notified<'_> {
        self.notify.notified()
    }
}

/// Runs `f`, holding back the writer wake-ups of the pushes it makes on this thread
/// ([`Outbox::push_shared_by`]) until it returns (or unwinds): then each writer thread gets the
/// outboxes the pass armed as one [`WakeList::push_all`] (outboxes without a sweeper: one
/// `notify_one` each). A pass that queues several frames per connection (a message and its
/// unread notice) thus lets each connection's drain find them all and write them in one
/// vectored write, instead of the first one alone as soon as it is queued. Nested calls wake
/// at the end of the outermost.
///
/// No wake-up is lost: the push still arms (`armed` = true) as usual; only the hand-over
/// moves, and both the list and a `Notify` keep it for a writer that is not waiting yet.
pub(crate) fn defer_wakes<R>(f: impl FnOnce() -> R) -> R {
    /// Wakes what was deferred when the outermost [`defer_wakes`] ends, also on unwind.
    struct Flush;
    impl Drop for Flush {
        fn drop(&mut self) {
            let depth = DEFER_DEPTH.get() - 1;
            DEFER_DEPTH.set(depth);
            if depth > 0 {
                return;
            }
            DEFERRED.with_borrow_mut(|armed| {
                // One hand-over per writer thread (as many lists as writer threads).
                while let Some(list) = armed.iter().find_map(|o| o.wake_list.get().cloned()) {
                    let of_list = |o: &mut Arc<Outbox>| {
                        o.wake_list.get().is_some_and(|l| Arc::ptr_eq(l, &list))
                    };
                    list.push_all(armed.extract_if(.., of_list));
                }
                for outbox in armed.drain(..) {
                    outbox.notify.notify_one();
                }
            });
        }
    }
    DEFER_DEPTH.set(DEFER_DEPTH.get() + 1);
    let _flush = Flush;
    f()
}

/// Where a connection is in its life. Only `Open` accepts frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum State {
    /// Accepting frames.
    Open = 0,
    /// `close` was called: the writer flushes what was queued, then the final frames.
    Closing = 1,
    /// A push passed a bound: the writer sends the too-slow notice and shuts the socket.
    TooSlow = 2,
    /// `abort` was called: the writer stops without flushing.
    Aborted = 3,
    /// The writer has ended (or a detached connection was closed).
    Ended = 4,
}

impl State {
    /// Decodes a state stored as its `u8` discriminant (any unknown value reads as `Ended`).
    pub(super) fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Open,
            1 => Self::Closing,
            2 => Self::TooSlow,
            3 => Self::Aborted,
            _ => Self::Ended,
        }
    }
}

/// The result of one [`Outbox::push_shared_by`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Push {
    /// The frame was queued; the outbox now accounts `bytes` bytes. (The depth in frames is
    /// not read here: that would touch the consumer's cache line on every push. The writer
    /// samples it once per drain instead.)
    Queued { bytes: usize },
    /// The outbox no longer accepts frames (closing, closed, or already cut off).
    Refused,
    /// This push passed a bound and cut the connection off as too slow.
    CutOff,
}

/// The backlog past the ring (see the module docs).
#[derive(Debug, Default)]
struct Overflow {
    frames: VecDeque<Bytes>,
    /// When a push last spilled here.
    last_spill: Option<Instant>,
}

/// A connection's bounded outbox and lifecycle state. Shared (`Arc`) between the producers,
/// the stream index and the connection's writer.
#[derive(Debug)]
pub(crate) struct Outbox {
    id: u64,
    limits: QueueLimits,
    /// Frames up to this length are not byte-accounted (`max_bytes / max_frames`).
    short_frame: usize,
    ring: OnceLock<ArrayQueue<Bytes>>,
    /// Set (under `overflow`'s mutex, `SeqCst`) while the overflow holds frames: pushes go
    /// there. Cleared by the writer under the mutex when it empties the overflow.
    spilled: AtomicBool,
    /// Set (under the mutex) while the overflow owns storage; a hint for the idle writer,
    /// read `Relaxed` (a stale value only delays or needlessly attempts a shrink).
    has_storage: AtomicBool,
    overflow: Mutex<Overflow>,
    bytes: AtomicUsize,
    armed: AtomicBool,
    state: AtomicU8,
    /// Wakes the connection's own writer task: state changes always; pushes too unless the
    /// outbox has a `wake_list`.
    notify: Notify,
    /// Where a push's wake-up goes when the connection's writer thread has a sweeper (set
    /// once, at attach).
    wake_list: OnceLock<Arc<WakeList>>,
    final_frames: OnceLock<Box<[Bytes]>>,
    /// The user and server budgets this outbox charges (`budget.rs`), when they are on.
    budget: OnceLock<Charge>,
    /// Bytes charged to `budget` and not given back yet.
    charged: AtomicUsize,
    /// The gates of this connection's positioned subscriptions (`gate.rs`), made on the first
    /// hold: most connections never hold one.
    gates: OnceLock<Box<Gates>>,
}

#[cfg(test)]
thread_local! {
    /// Called by a push at the instant its frame became reachable by the writer (in the ring
    /// or the overflow), before the push returns: a test plays a writer on another thread
    /// there, deterministically.
    pub(crate) static AFTER_PUSH: std::cell::Cell<Option<fn(&Outbox)>> = const { std::cell::Cell::new(None) };
}

/// Where [`Outbox::spill`] put a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Spill {
    /// Into the ring after all (the writer had emptied the overflow).
    Ring,
    /// Into the overflow.
    Overflow,
    /// Into the overflow, and its charge passed a budget: shed (`budget.rs`).
    OverBudget,
    /// Nowhere: the frame bound is reached.
    Full,
}

impl Outbox {
    /// An empty, open outbox for connection `id`. Nothing is allocated until the first push.
    pub(crate) fn new(id: u64, limits: QueueLimits) -> Self {
        let max_frames = limits.max_frames.max(1);
        Self {
            id,
            limits: QueueLimits {
                max_frames,
                max_bytes: limits.max_bytes,
            },
            short_frame: limits.max_bytes / max_frames,
            ring: OnceLock::new(),
            spilled: AtomicBool::new(false),
            has_storage: AtomicBool::new(false),
            overflow: Mutex::default(),
            bytes: AtomicUsize::new(0),
            armed: AtomicBool::new(false),
            state: AtomicU8::new(State::Open as u8),
            notify: Notify::new(),
            wake_list: OnceLock::new(),
            final_frames: OnceLock::new(),
            budget: OnceLock::new(),
            charged: AtomicUsize::new(0),
            gates: OnceLock::new(),
        }
    }

    /// This connection's gates, made on first use (see `gate.rs`).
    pub(crate) fn gates(&self) -> &Gates {
        self.gates.get_or_init(Box::default)
    }

    /// Whether a gate is set on this connection: the one check a positioned push makes.
    #[inline]
    pub(crate) fn gated(&self) -> Option<&Gates> {
        self.gates.get().filter(|g| g.any()).map(|g| &**g)
    }

    /// The most frames this outbox queues (a gate holds no more).
    pub(crate) fn max_frames(&self) -> usize {
        self.limits.max_frames
    }

    /// The connection id this outbox belongs to.
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Current lifecycle state.
    #[inline]
    pub(crate) fn state(&self) -> State {
        State::from_u8(self.state.load(Ordering::Acquire))
    }

    fn ring(&self) -> &ArrayQueue<Bytes> {
        self.ring
            .get_or_init(|| ArrayQueue::new(RING_SLOTS.min(self.limits.max_frames)))
    }

    /// [`Outbox::push_shared_by`] without deferral, for an outbox not held in an `Arc` (tests).
    #[cfg(test)]
    pub(crate) fn push(&self, frame: &Bytes) -> Push {
        let (push, wake) = self.enqueue(frame, 1);
        if wake {
            self.notify.notify_one();
        }
        push
    }

    /// [`Outbox::push_shared_by`] of a frame given to this connection alone (tests).
    #[cfg(test)]
    pub(crate) fn push_shared(self: &Arc<Self>, frame: &Bytes) -> Push {
        self.push_shared_by(frame, 1)
    }

    /// Queues `frame` (a refcount clone) and wakes the writer if this is the first push of a
    /// drain epoch — inside [`defer_wakes`], at the end of the pass. Never blocks on the socket
    /// (a backed-up connection's push takes the overflow mutex, held for a deque push). Passing
    /// `max_frames` or `max_bytes` cuts the connection off: the frame is not queued, the state
    /// becomes [`State::TooSlow`] and the writer is told. `share` is how many connections are
    /// given the frame (a broadcast group's members): what it charges the byte budgets is its
    /// share of the frame's memory, `len / share` (`budget.rs`).
    #[inline(always)]
    pub(crate) fn push_shared_by(self: &Arc<Self>, frame: &Bytes, share: usize) -> Push {
        let share = share.max(1);
        let (push, wake) = self.enqueue(frame, share);
        if wake {
            self.wake();
        }
        push
    }

    /// [`Outbox::push_shared_by`] that leaves the writer asleep: the frame is queued as usual,
    /// but a wake-up this push owes (it armed the writer) is returned instead of made. The
    /// caller must then call [`Outbox::wake`] before it waits for anything: until then the
    /// writer sees neither this frame nor any frame pushed after it (those pushes find the
    /// writer armed and do not wake it either). Lets a connection's own task queue several
    /// replies and have them written together.
    pub(crate) fn push_unwoken(&self, frame: &Bytes) -> (Push, bool) {
        self.enqueue(frame, 1)
    }

    /// Wakes the writer for frames whose push armed it: inside [`defer_wakes`] at the end of
    /// the pass, else through the writer thread's sweeper, else the connection's own task.
    /// Always inline: it is on every broadcast push that arms a writer (left out of line, as
    /// the compiler chose once the crate grew, it cost `enqueue_1000` 27 % more instructions).
    #[inline(always)]
    pub(crate) fn wake(self: &Arc<Self>) {
        if DEFER_DEPTH.get() > 0 {
            DEFERRED.with_borrow_mut(|armed| armed.push(self.clone()));
            return;
        }
        match self.wake_list.get() {
            Some(list) => list.push_all([self.clone()]),
            None => self.notify.notify_one(),
        }
    }

    /// Sends this outbox's push wake-ups to `list` (its writer thread's sweeper) instead of
    /// its own writer task. Set once, before the first push; later calls are ignored.
    pub(crate) fn set_wake_list(&self, list: Arc<WakeList>) {
        let _ = self.wake_list.set(list);
    }

    /// Whether push wake-ups go to a sweeper ([`Outbox::set_wake_list`]).
    pub(crate) fn has_wake_list(&self) -> bool {
        self.wake_list.get().is_some()
    }

    /// Wakes the connection's own writer task (the sweeper hands it a full socket, a failed
    /// write, or a connection it does not know).
    pub(crate) fn wake_owner(&self) {
        self.notify.notify_one();
    }

    /// The push itself; the bool says whether the writer must be woken (this push armed it).
    ///
    /// Inline is only the common case, a short frame into the ring while nothing has spilled:
    /// no byte bound to count, no budget to charge. A long frame, a spill and the cut-offs go
    /// through [`Outbox::enqueue_slow`], kept out of line so that the broadcast loop stays small
    /// (benches/instructions.rs counts it per subscriber).
    #[inline]
    fn enqueue(&self, frame: &Bytes, share: usize) -> (Push, bool) {
        if self.state.load(Ordering::Acquire) != State::Open as u8 {
            return (Push::Refused, false);
        }
        if frame.len() <= self.short_frame
            && !self.spilled.load(Ordering::SeqCst)
            && self.ring().push(frame.clone()).is_ok()
        {
            let wake = self.arm();
            let bytes = self.bytes.load(Ordering::Relaxed);
            return (Push::Queued { bytes }, wake);
        }
        self.enqueue_slow(frame, share)
    }

    /// Arms the writer once a pushed frame is reachable by it; true when this push armed it
    /// (and so owes the wake-up). A plain load first: while the writer is busy (armed),
    /// pushes skip the swap.
    #[inline(always)]
    fn arm(&self) -> bool {
        #[cfg(test)]
        if let Some(hook) = AFTER_PUSH.with(std::cell::Cell::get) {
            hook(self);
        }
        !self.armed.load(Ordering::SeqCst) && !self.armed.swap(true, Ordering::SeqCst)
    }

    /// [`Outbox::enqueue`] of a long frame, or of a short one that found the ring full or the
    /// overflow in use (a push into the ring is tried again: the writer may have made room).
    #[cold]
    #[inline(never)]
    fn enqueue_slow(&self, frame: &Bytes, share: usize) -> (Push, bool) {
        let len = self.weigh(frame.len());
        let bytes = if len > 0 {
            let bytes = self.bytes.fetch_add(len, Ordering::AcqRel) + len;
            if bytes > self.limits.max_bytes {
                self.bytes.fetch_sub(len, Ordering::AcqRel);
                return (self.overflow(), false);
            }
            bytes
        } else {
            self.bytes.load(Ordering::Relaxed)
        };
        // A frame is charged to the budgets before the writer can reach it: a writer that
        // took and wrote it first would find nothing to give back, and the charge would stay
        // for the connection's life. A long frame here (lock-free ring or not); a short one
        // that spills in `spill`, under the overflow lock the writer takes to pop it.
        // Nothing of it on a short frame's push into the ring: no load, no division.
        let precharged = len > 0 && self.budget.get().is_some();
        if precharged && self.charge_budget(frame.len().div_ceil(share)) {
            // The budgets cut this very connection off: the frame is dropped with the rest.
            self.bytes.fetch_sub(len, Ordering::AcqRel);
            return (Push::Refused, false);
        }
        let spill_charge = if precharged { None } else { Some(share) };
        let ring = self.ring();
        let spilled = if self.spilled.load(Ordering::SeqCst) {
            self.spill(ring, frame.clone(), spill_charge)
        } else {
            match ring.push(frame.clone()) {
                Ok(()) => Spill::Ring,
                Err(frame) => self.spill(ring, frame, spill_charge),
            }
        };
        if spilled == Spill::Full {
            if len > 0 {
                self.bytes.fetch_sub(len, Ordering::AcqRel);
            }
            if precharged {
                self.uncharge(frame.len().div_ceil(share));
            }
            return (self.overflow(), false);
        }
        let wake = self.arm();
        if spilled == Spill::OverBudget && self.shed_budget() {
            // The budgets cut this very connection off: the frame is dropped with the rest.
            return (Push::Refused, wake);
        }
        (Push::Queued { bytes }, wake)
    }

    /// Charges `len` bytes (a long frame, before it is queued) to the user and server budgets,
    /// when they are on; true when that cut this connection off (see `budget.rs`).
    #[cold]
    fn charge_budget(&self, len: usize) -> bool {
        if self.count_charge(len) {
            self.shed_budget()
        } else {
            false
        }
    }

    /// Adds `len` bytes to this outbox's charge and its budgets without cutting anyone off;
    /// true when a budget is now passed (then [`Outbox::shed_budget`], outside any lock of
    /// this outbox: shedding may discard its frames).
    fn count_charge(&self, len: usize) -> bool {
        let Some(budget) = self.budget.get() else {
            return false;
        };
        self.charged.fetch_add(len, Ordering::Relaxed);
        budget.count(len)
    }

    /// Cuts the heaviest holders off until the budgets hold; true when that cut this
    /// connection off.
    #[cold]
    fn shed_budget(&self) -> bool {
        if let Some(budget) = self.budget.get() {
            budget.shed();
        }
        self.state.load(Ordering::Acquire) != State::Open as u8
    }

    /// Gives back up to `len` charged bytes (a frame has left the connection).
    #[cold]
    fn uncharge(&self, len: usize) {
        let Ok(before) = self
            .charged
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                Some(c - c.min(len))
            })
        else {
            return;
        };
        let given = before.min(len);
        if let Some(budget) = self.budget.get().filter(|_| given > 0) {
            budget.sub(given);
        }
    }

    /// Gives back everything still charged (the connection was cut off or has ended).
    pub(crate) fn settle(&self) {
        let held = self.charged.swap(0, Ordering::Relaxed);
        if let Some(budget) = self.budget.get().filter(|_| held > 0) {
            budget.sub(held);
        }
    }

    /// Bytes charged to the budgets now.
    pub(crate) fn charged(&self) -> usize {
        self.charged.load(Ordering::Relaxed)
    }

    /// Makes this outbox charge `charge`'s budgets (set once, at attach).
    pub(crate) fn set_charge(&self, charge: Charge) {
        let _ = self.budget.set(charge);
    }

    /// The budgets this outbox charges, if any.
    pub(crate) fn charge_of(&self) -> Option<&Charge> {
        self.budget.get()
    }

    /// Cuts the connection off as too slow (a budget was passed); true when it was open.
    pub(crate) fn cut_off_now(&self) -> bool {
        self.transition(State::Open, State::TooSlow)
    }

    /// The slow path of a push: the ring was full or the overflow is in use. A frame that
    /// goes into the overflow is charged its share (`len / share`; `None`: it was charged
    /// already) first, under the lock the writer takes to pop it.
    #[cold]
    fn spill(&self, ring: &ArrayQueue<Bytes>, frame: Bytes, share: Option<usize>) -> Spill {
        let mut over = self.overflow.lock();
        let frame = if self.spilled.load(Ordering::SeqCst) {
            frame
        } else {
            // The writer emptied the overflow meanwhile: the ring is the tail again.
            match ring.push(frame) {
                Ok(()) => return Spill::Ring,
                Err(frame) => frame,
            }
        };
        let queued = ring.len() + over.frames.len();
        if queued >= self.limits.max_frames {
            return Spill::Full;
        }
        if over.frames.len() == over.frames.capacity() {
            // Double (from RING_SLOTS), never past what the bound can use.
            let cap = over.frames.capacity();
            let room = self.limits.max_frames.saturating_sub(ring.capacity());
            let grow = cap.max(RING_SLOTS).min(room.saturating_sub(cap)).max(1);
            over.frames.reserve_exact(grow);
            self.has_storage.store(true, Ordering::Relaxed);
        }
        if !self.spilled.load(Ordering::SeqCst) {
            over.last_spill = Some(Instant::now());
            self.spilled.store(true, Ordering::SeqCst);
        }
        let over_budget = share.is_some_and(|share| self.count_charge(frame.len().div_ceil(share)));
        over.frames.push_back(frame);
        if over_budget {
            Spill::OverBudget
        } else {
            Spill::Overflow
        }
    }

    fn overflow(&self) -> Push {
        if self.transition(State::Open, State::TooSlow) {
            Push::CutOff
        } else {
            Push::Refused
        }
    }

    /// Compare-exchanges the state and, on success, wakes the writer to act on it.
    fn transition(&self, from: State, to: State) -> bool {
        let ok = self
            .state
            .compare_exchange(from as u8, to as u8, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if ok {
            self.notify.notify_one();
        }
        ok
    }

    /// Starts a graceful close: stores `frames` to be written after everything already queued,
    /// stops accepting pushes and wakes the writer. Returns false (and does nothing) unless the
    /// outbox was open.
    pub(crate) fn request_close(&self, frames: &[Bytes]) -> bool {
        if self.state() != State::Open {
            return false;
        }
        // Only the first close stores its frames; a racing second close finds them set.
        let stored = self.final_frames.set(frames.into()).is_ok();
        stored && self.transition(State::Open, State::Closing)
    }

    /// Stops the connection without flushing. Returns false if the writer had already ended.
    pub(crate) fn request_abort(&self) -> bool {
        let mut current = self.state.load(Ordering::Acquire);
        loop {
            if current == State::Ended as u8 || current == State::Aborted as u8 {
                return false;
            }
            match self.state.compare_exchange(
                current,
                State::Aborted as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    self.notify.notify_one();
                    return true;
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Marks the writer as ended. Returns true the first time.
    pub(crate) fn mark_ended(&self) -> bool {
        self.state.swap(State::Ended as u8, Ordering::AcqRel) != State::Ended as u8
    }

    /// The frames `close` asked to be written last (empty when none were given).
    pub(crate) fn final_frames(&self) -> &[Bytes] {
        self.final_frames.get().map(|f| &f[..]).unwrap_or(&[])
    }

    // ----- writer side -----

    /// Opens a new drain epoch: the next push will notify again. Call before popping.
    #[inline]
    pub(crate) fn disarm(&self) {
        self.armed.swap(false, Ordering::SeqCst);
    }

    /// Takes the oldest queued frame.
    #[inline]
    pub(crate) fn pop(&self) -> Option<Bytes> {
        let mut one = None;
        self.take(1, |frame| {
            one = Some(frame);
            false
        });
        one
    }

    /// Takes up to `max` of the oldest queued frames, oldest first, handing each to `out`,
    /// which answers whether it has room for another: the ring first, then (one lock) the
    /// overflow. Returns how many were taken.
    #[inline]
    pub(crate) fn take(&self, max: usize, mut out: impl FnMut(Bytes) -> bool) -> usize {
        let Some(ring) = self.ring.get() else {
            return 0;
        };
        let mut n = 0;
        let mut room = true;
        while room && n < max {
            match ring.pop() {
                Some(frame) => {
                    room = out(frame);
                    n += 1;
                }
                None => break,
            }
        }
        if room && n < max && self.spilled.load(Ordering::SeqCst) {
            let mut over = self.overflow.lock();
            // Frames a producer put in the ring after the pops above, before its ring filled up
            // and it spilled under this mutex, are older than its overflow frames: take the
            // ring again first (while `spilled` is set, no producer that saw it adds to the
            // ring, so what the ring holds now precedes the overflow).
            while room && n < max {
                match ring.pop() {
                    Some(frame) => {
                        room = out(frame);
                        n += 1;
                    }
                    None => break,
                }
            }
            while room && n < max {
                match over.frames.pop_front() {
                    Some(frame) => {
                        room = out(frame);
                        n += 1;
                    }
                    None => break,
                }
            }
            if over.frames.is_empty() {
                self.spilled.store(false, Ordering::SeqCst);
            }
        }
        n
    }

    /// Called by the writer when it has drained everything and is about to sleep: frees the
    /// overflow's storage if it has not been used for [`SHRINK_AFTER`]. Returns true when it
    /// freed something (the writer then trims its own batch too).
    pub(crate) fn shrink_if_idle(&self) -> bool {
        if !self.has_storage.load(Ordering::Relaxed) {
            return false;
        }
        let mut over = self.overflow.lock();
        let unused = match over.last_spill {
            Some(at) => at.elapsed() >= SHRINK_AFTER,
            None => true,
        };
        if !over.frames.is_empty() || !unused {
            return false;
        }
        over.frames = VecDeque::new();
        self.has_storage.store(false, Ordering::Relaxed);
        true
    }

    /// Slots of overflow storage currently allocated (for tests and diagnostics).
    #[cfg(test)]
    pub(crate) fn overflow_capacity(&self) -> usize {
        self.overflow.lock().frames.capacity()
    }

    /// The bytes a frame of `len` bytes counts against `max_bytes`: its length when it is
    /// longer than `max_bytes / max_frames`, else 0 (see the module docs).
    #[inline]
    fn weigh(&self, len: usize) -> usize {
        if len > self.short_frame {
            len
        } else {
            0
        }
    }

    /// Gives back the byte budget of a frame of `len` bytes that has left the connection
    /// (completely written or dropped).
    #[inline]
    pub(crate) fn release(&self, len: usize) {
        let weight = self.weigh(len);
        if weight > 0 {
            self.bytes.fetch_sub(weight, Ordering::AcqRel);
        }
        if self.charged.load(Ordering::Relaxed) != 0 {
            self.uncharge(len);
        }
    }

    /// Accounts a frame of `len` bytes that the writer adds itself (the final frames of a
    /// close or cut-off), so that [`Outbox::release`] balances when it is written.
    #[inline]
    pub(crate) fn charge(&self, len: usize) {
        let len = self.weigh(len);
        if len > 0 {
            self.bytes.fetch_add(len, Ordering::AcqRel);
        }
    }

    /// Bytes currently accounted to this outbox (long frames queued, or popped and not yet
    /// completely written).
    #[cfg(test)]
    pub(crate) fn queued_bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    /// Frames waiting in the ring and the overflow (not counting those the writer has popped).
    pub(crate) fn queued_frames(&self) -> usize {
        let ring = self.ring.get().map_or(0, ArrayQueue::len);
        if self.spilled.load(Ordering::SeqCst) {
            ring + self.overflow.lock().frames.len()
        } else {
            ring
        }
    }

    /// Drops every queued frame and releases its bytes. Returns how many were dropped.
    pub(crate) fn discard(&self) -> usize {
        let mut n = 0;
        while let Some(frame) = self.pop() {
            self.release(frame.len());
            n += 1;
        }
        n
    }

    /// A future that resolves on the next push-wake-up or state change (or at once if one
    /// arrived since the last wait).
    pub(crate) fn notified(&self) -> Notified<'_> {
        self.notify.notified()
    }
}

impl Holder for Outbox {
    fn id(&self) -> u64 {
        Self::id(self)
    }

    fn charged(&self) -> usize {
        Self::charged(self)
    }

    fn set_charge(&self, charge: Charge) {
        Self::set_charge(self, charge);
    }

    fn charge_of(&self) -> Option<&Charge> {
        Self::charge_of(self)
    }

    fn settle(&self) {
        Self::settle(self);
    }

    fn cut_off_now(&self) -> bool {
        Self::cut_off_now(self)
    }

    fn discard(&self) -> usize {
        Self::discard(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_frames: usize, max_bytes: usize) -> QueueLimits {
        QueueLimits {
            max_frames,
            max_bytes,
        }
    }

    #[test]
    fn push_and_pop_keep_fifo_order_and_account_bytes() {
        // max_bytes / max_frames = 5: 10-byte frames are long, so accounted.
        let outbox = Outbox::new(1, limits(8, 40));
        assert_eq!(outbox.queued_frames(), 0);
        for i in 0..3u8 {
            let pushed = outbox.push(&Bytes::from(vec![i; 10]));
            assert_eq!(
                pushed,
                Push::Queued {
                    bytes: 10 * (usize::from(i) + 1)
                }
            );
            assert_eq!(outbox.queued_frames(), usize::from(i) + 1);
        }
        for i in 0..3u8 {
            let frame = outbox.pop().unwrap();
            assert_eq!(frame[0], i);
            outbox.release(frame.len());
        }
        assert_eq!(outbox.pop(), None);
        assert_eq!(outbox.queued_bytes(), 0);
    }

    #[test]
    fn frame_bound_cuts_off_once_and_then_refuses() {
        let outbox = Outbox::new(1, limits(2, 1000));
        let frame = Bytes::from_static(b"ab");
        assert!(matches!(outbox.push(&frame), Push::Queued { .. }));
        assert!(matches!(outbox.push(&frame), Push::Queued { .. }));
        assert_eq!(outbox.push(&frame), Push::CutOff);
        assert_eq!(outbox.state(), State::TooSlow);
        assert_eq!(outbox.push(&frame), Push::Refused);
        // Short frames are bounded by count, not bytes.
        assert_eq!(outbox.queued_bytes(), 0);
    }

    #[test]
    fn only_frames_longer_than_the_average_budget_are_byte_accounted() {
        // max_bytes / max_frames = 100.
        let outbox = Outbox::new(1, limits(4, 400));
        assert_eq!(
            outbox.push(&Bytes::from(vec![0u8; 100])),
            Push::Queued { bytes: 0 }
        );
        assert_eq!(
            outbox.push(&Bytes::from(vec![0u8; 150])),
            Push::Queued { bytes: 150 }
        );
        assert_eq!(outbox.push(&Bytes::from(vec![0u8; 300])), Push::CutOff);
        assert_eq!(outbox.queued_bytes(), 150);
        assert_eq!(outbox.discard(), 2);
        assert_eq!(outbox.queued_bytes(), 0);
    }

    #[test]
    fn byte_bound_cuts_off() {
        let outbox = Outbox::new(1, limits(100, 25));
        let frame = Bytes::from(vec![0u8; 10]);
        assert!(matches!(outbox.push(&frame), Push::Queued { .. }));
        assert!(matches!(outbox.push(&frame), Push::Queued { .. }));
        assert_eq!(outbox.push(&frame), Push::CutOff);
        assert_eq!(outbox.queued_bytes(), 20);
        assert_eq!(outbox.discard(), 2);
        assert_eq!(outbox.queued_bytes(), 0);
    }

    fn numbered(i: u32) -> Bytes {
        Bytes::from(i.to_be_bytes().to_vec())
    }

    fn number(frame: &Bytes) -> u32 {
        u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]])
    }

    #[test]
    fn backlog_spills_in_order_and_storage_grows_by_doubling_to_the_bound() {
        let outbox = Outbox::new(1, limits(100, 1 << 20));
        for i in 0..RING_SLOTS as u32 {
            assert!(matches!(outbox.push(&numbered(i)), Push::Queued { .. }));
        }
        assert_eq!(
            outbox.overflow_capacity(),
            0,
            "the ring alone holds a short queue"
        );
        let mut caps = Vec::new();
        for i in RING_SLOTS as u32..100 {
            assert!(matches!(outbox.push(&numbered(i)), Push::Queued { .. }));
            let cap = outbox.overflow_capacity();
            if caps.last() != Some(&cap) {
                caps.push(cap);
            }
        }
        assert_eq!(caps.first(), Some(&RING_SLOTS));
        assert!(caps.windows(2).all(|w| w[1] <= 2 * w[0]), "{caps:?}");
        assert!(*caps.last().unwrap() <= 100, "{caps:?}");
        assert_eq!(outbox.queued_frames(), 100);
        assert_eq!(outbox.push(&numbered(100)), Push::CutOff);
        let mut seen = Vec::new();
        while let Some(f) = outbox.pop() {
            seen.push(number(&f));
        }
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn pushes_while_spilled_stay_behind_the_overflow() {
        let outbox = Outbox::new(1, limits(64, 1 << 20));
        for i in 0..12 {
            outbox.push(&numbered(i));
        }
        // Take part of the backlog: the ring empties, the overflow still holds frames.
        let mut seen = Vec::new();
        outbox.take(10, |f| {
            seen.push(number(&f));
            true
        });
        for i in 12..20 {
            outbox.push(&numbered(i));
        }
        outbox.take(64, |f| {
            seen.push(number(&f));
            true
        });
        assert_eq!(seen, (0..20).collect::<Vec<_>>());
        // Drained: the next pushes use the ring again.
        outbox.push(&numbered(20));
        assert_eq!(outbox.pop().map(|f| number(&f)), Some(20));
    }

    #[test]
    fn an_idle_outbox_frees_its_overflow_after_a_quiet_spell() {
        let outbox = Outbox::new(1, limits(64, 1 << 20));
        for i in 0..20 {
            outbox.push(&numbered(i));
        }
        assert!(!outbox.shrink_if_idle(), "not while frames are queued");
        assert_eq!(outbox.discard(), 20);
        assert!(outbox.overflow_capacity() > 0);
        assert!(!outbox.shrink_if_idle(), "not right after a spill");
        outbox.overflow.lock().last_spill = Some(Instant::now() - SHRINK_AFTER);
        assert!(outbox.shrink_if_idle());
        assert_eq!(outbox.overflow_capacity(), 0);
        assert!(!outbox.shrink_if_idle());
    }

    #[test]
    fn concurrent_producers_keep_each_producers_order_and_lose_nothing() {
        use std::sync::Arc;
        const PER: u32 = 5_000;
        let outbox = Arc::new(Outbox::new(1, limits(1 << 16, 1 << 30)));
        let producers: Vec<_> = (0..3u32)
            .map(|p| {
                let outbox = outbox.clone();
                std::thread::spawn(move || {
                    for i in 0..PER {
                        assert!(matches!(
                            outbox.push(&numbered(p << 24 | i)),
                            Push::Queued { .. }
                        ));
                    }
                })
            })
            .collect();
        let mut last = [None::<u32>; 3];
        let mut total = 0;
        while total < 3 * PER {
            outbox.disarm();
            outbox.take(37, |f| {
                let n = number(&f);
                let (p, i) = ((n >> 24) as usize, n & 0xFF_FFFF);
                assert!(
                    last[p].map(|prev| prev < i).unwrap_or(true),
                    "producer {p}: {i} after {last:?}"
                );
                last[p] = Some(i);
                total += 1;
                true
            });
        }
        for p in producers {
            p.join().unwrap();
        }
        assert_eq!(outbox.queued_frames(), 0);
    }

    #[test]
    fn close_stops_pushes_and_keeps_final_frames() {
        let outbox = Outbox::new(1, limits(8, 1000));
        assert!(outbox.request_close(&[Bytes::from_static(b"bye")]));
        assert_eq!(outbox.state(), State::Closing);
        assert_eq!(outbox.push(&Bytes::from_static(b"x")), Push::Refused);
        assert!(!outbox.request_close(&[]));
        assert_eq!(outbox.final_frames(), &[Bytes::from_static(b"bye")]);
        assert!(outbox.request_abort());
        assert!(outbox.mark_ended());
        assert!(!outbox.mark_ended());
        assert!(!outbox.request_abort());
    }

    #[tokio::test]
    async fn first_push_of_an_epoch_notifies_and_later_ones_do_not() {
        let outbox = Outbox::new(1, limits(8, 1000));
        let frame = Bytes::from_static(b"x");
        outbox.push(&frame);
        outbox.push(&frame);
        // One permit is stored by the first push: this resolves at once.
        outbox.notified().await;
        // The second push did not notify (still armed), so no permit is left.
        let mut second = std::pin::pin!(outbox.notified());
        assert!(futures_util::poll!(second.as_mut()).is_pending());
        // After the writer disarms, the next push wakes it again.
        outbox.disarm();
        outbox.push(&frame);
        assert!(futures_util::poll!(second.as_mut()).is_ready());
    }

    #[tokio::test]
    async fn a_pass_wakes_each_writer_once_at_its_end() {
        let a = Arc::new(Outbox::new(1, limits(8, 1000)));
        let b = Arc::new(Outbox::new(2, limits(8, 1000)));
        let frame = Bytes::from_static(b"x");
        let mut woken_a = std::pin::pin!(a.notified());
        let mut woken_b = std::pin::pin!(b.notified());
        assert!(futures_util::poll!(woken_a.as_mut()).is_pending());
        defer_wakes(|| {
            a.push_shared(&frame);
            defer_wakes(|| b.push_shared(&frame));
            a.push_shared(&frame);
            b.push_shared(&frame);
        });
        // After the pass nothing is left deferred and both writers are woken (the pass
        // itself is checked by the next test).
        assert!(DEFER_DEPTH.get() == 0 && DEFERRED.with_borrow(Vec::is_empty));
        assert!(futures_util::poll!(woken_a.as_mut()).is_ready());
        assert!(futures_util::poll!(woken_b.as_mut()).is_ready());
        assert_eq!(a.queued_frames(), 2);
        assert_eq!(b.queued_frames(), 2);
    }

    #[tokio::test]
    async fn inside_a_pass_the_wake_waits_for_its_end() {
        let a = Arc::new(Outbox::new(1, limits(8, 1000)));
        let frame = Bytes::from_static(b"x");
        defer_wakes(|| {
            a.push_shared(&frame);
            // Armed but not notified yet: no permit is stored.
            let armed = DEFERRED.with_borrow(Vec::len);
            assert_eq!(armed, 1);
            use std::future::Future as _;
            let mut woken = std::pin::pin!(a.notified());
            let waker = futures_util::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            assert!(woken.as_mut().poll(&mut cx).is_pending());
        });
        // The permit arrives at the end of the pass.
        a.notified().await;
    }
}
