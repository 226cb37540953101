//! The drain of one connection: the only code that writes a connection's socket.
//!
//! Each attached connection has a [`Slot`] (its socket and batch) and one writer task. On a
//! writer thread, the thread's sweeper (`sweeper.rs`) drains the slot inline whenever a push
//! wakes the connection, and the task sleeps; the task takes over only when the socket is full
//! (it waits for writability and drains until it has caught up) and for the end of the
//! connection. Without a sweeper (writers on the caller's runtime) the task drains on every
//! wake-up itself. Either way one drain does this:
//!
//! 1. **Batch**: pop up to [`MAX_WRITE_SLICES`] frames, and past the first at most
//!    [`MAX_BATCH_BYTES`] bytes, into a retained `VecDeque` (no
//!    allocation once it has grown to what the connection needs; freed together with the
//!    outbox's overflow once the connection has been idle for `queue::SHRINK_AFTER`).
//! 2. **Vectored write**: one `try_write_vectored` with one `IoSlice` per frame, pointing
//!    straight into the shared frame bytes — no copy into a per-connection buffer. The kernel
//!    cost is per call, nearly independent of size, so coalescing is the main lever.
//! 3. **Resume**: a short write leaves the first unfinished frame at an offset; the next call
//!    starts from there. Completed frames give their bytes back to the outbox bound.
//! 4. When the socket is full, the task waits for writability (`writable().await`), but also
//!    wakes on outbox state changes, so a connection cut off while its peer stopped reading is
//!    noticed.
//!
//! The loop ends in one of four ways: a graceful close (flush everything queued, then the final
//! frames, then shut the write side down), a too-slow cut-off (finish the partially written
//! frame so the stream stays parseable, drop the rest, write the Action Cable `disconnect`
//! notice and a close frame, shut down — under a short timeout since the peer may not be
//! reading), an abort (stop at once), or a write error.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io::{self, IoSlice};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::net::tcp::OwnedWriteHalf;

use super::frame::Frame;
use super::queue::{Outbox, State};
use super::stats::Stats;
use super::{
    CLOSE_FLUSH_TIMEOUT, MAX_BATCH_BYTES, MAX_WRITE_SLICES, SLOW_CLOSE_TIMEOUT, TOO_SLOW_MESSAGE,
};

/// Frames popped from the outbox and not yet completely written, with the write offset into
/// the first one. Its storage is retained across drains.
#[derive(Debug)]
pub(crate) struct Batch {
    frames: VecDeque<Bytes>,
    offset: usize,
    /// The lengths of `frames` added up (whole frames, the first one's written part too).
    bytes: usize,
}

impl Batch {
    pub(crate) fn new() -> Self {
        Self {
            // Grows on demand (an idle connection never needs 64 slots) and keeps its
            // capacity afterwards, so a busy connection's drains do not allocate.
            frames: VecDeque::new(),
            offset: 0,
            bytes: 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Tops the batch up from `outbox` to at most [`MAX_WRITE_SLICES`] frames and, past its
    /// first frame, [`MAX_BATCH_BYTES`] bytes (the frame that reaches it is the last taken).
    pub(crate) fn fill(&mut self, outbox: &Outbox) {
        let room = MAX_WRITE_SLICES.saturating_sub(self.frames.len());
        if room > 0 && self.bytes < MAX_BATCH_BYTES {
            let Self { frames, bytes, .. } = self;
            outbox.take(room, |frame| {
                *bytes += frame.len();
                frames.push_back(frame);
                *bytes < MAX_BATCH_BYTES
            });
        }
    }

    /// Frees the batch's storage (it is empty and the connection idle); the next frame
    /// allocates it again.
    pub(crate) fn trim(&mut self) {
        if self.frames.is_empty() {
            self.frames = VecDeque::new();
        }
    }

    /// Appends one frame (used for the final frames of a close or cut-off).
    pub(crate) fn push(&mut self, frame: Bytes) {
        self.bytes += frame.len();
        self.frames.push_back(frame);
    }

    /// Drops everything (the connection is gone), passing each frame's length to `dropped`.
    pub(crate) fn clear(&mut self, mut dropped: impl FnMut(usize)) {
        for frame in self.frames.drain(..) {
            dropped(frame.len());
        }
        self.offset = 0;
        self.bytes = 0;
    }

    /// Points `out` at the unwritten bytes, first frame from its offset. Returns how many
    /// slices were filled.
    pub(crate) fn slices<'a>(&'a self, out: &mut [IoSlice<'a>; MAX_WRITE_SLICES]) -> usize {
        let mut n = 0;
        for (slot, frame) in out.iter_mut().zip(self.frames.iter()) {
            let start = if n == 0 { self.offset } else { 0 };
            *slot = IoSlice::new(&frame[start..]);
            n += 1;
        }
        n
    }

    /// Accounts `written` bytes: drops completed frames (passing each one's length to
    /// `done`) and moves the offset into the first unfinished one. Returns how many frames
    /// were completed.
    ///
    /// # Panics
    /// If `written` exceeds the unwritten bytes in the batch (the kernel never reports more
    /// than it was given).
    pub(crate) fn advance(&mut self, written: usize, mut done: impl FnMut(usize)) -> usize {
        let mut frames = 0;
        let mut left = written;
        while left > 0 {
            let front = self
                .frames
                .front()
                .expect("wrote more bytes than were queued");
            let remaining = front.len() - self.offset;
            if left >= remaining {
                left -= remaining;
                frames += 1;
                self.bytes -= front.len();
                done(front.len());
                self.frames.pop_front();
                self.offset = 0;
            } else {
                self.offset += left;
                left = 0;
            }
        }
        frames
    }

    /// Drops every frame except a partially written first one (whose rest must still go out
    /// to keep the byte stream parseable), passing each dropped frame's length to `dropped`.
    pub(crate) fn keep_partial(&mut self, mut dropped: impl FnMut(usize)) {
        let keep = usize::from(self.offset > 0);
        for frame in self.frames.drain(keep..) {
            self.bytes -= frame.len();
            dropped(frame.len());
        }
    }
}

/// How the open phase of a writer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Closing,
    TooSlow,
    Stopped,
    Failed,
}

/// What a [`Slot::drain`] left behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Everything queued is written; the outbox is disarmed, so the next push wakes again.
    Idle,
    /// The write budget of the call ran out with frames still queued (the outbox stays armed:
    /// the caller must come back).
    More,
    /// The socket is full: the connection's own task waits for writability.
    Blocked,
    /// A write failed: the connection is done.
    Failed,
}

thread_local! {
    /// The slots of the writers that run on this thread (a writer thread's sweeper finds a
    /// woken outbox's socket here), by connection id.
    static SLOTS: RefCell<HashMap<u64, Arc<Slot>, foldhash::fast::RandomState>> =
        RefCell::new(HashMap::default());
}

/// The slot of connection `id` if its writer runs on this thread.
pub(crate) fn slot(id: u64) -> Option<Arc<Slot>> {
    SLOTS.with(|slots| slots.borrow().get(&id).cloned())
}

/// One connection's write side: its socket and batch, shared by the connection's own writer
/// task and (while the socket takes everything) its writer thread's sweeper. Both run on the
/// same thread and only between `await`s, so the batch's lock is never contended there; it
/// still makes the slot safe to share wherever the task runs.
#[derive(Debug)]
pub(crate) struct Slot {
    sock: OwnedWriteHalf,
    batch: Mutex<Batch>,
    /// Set while the socket is full (or failed): the connection's own task owns the drain
    /// until it has written everything, and the sweeper leaves the connection alone.
    parked: AtomicBool,
    stats: Arc<Stats>,
}

impl Slot {
    /// Whether the connection's own task currently owns the drain (see `parked`).
    pub(crate) fn is_parked(&self) -> bool {
        self.parked.load(Ordering::Relaxed)
    }

    /// Writes what `outbox` holds with at most `max_writes` vectored writes, opening a new
    /// drain epoch whenever the batch is empty (disarm first, then look, so no push is missed).
    /// Never waits: a full socket returns [`Step::Blocked`].
    pub(crate) fn drain(&self, outbox: &Outbox, max_writes: usize) -> Step {
        let mut batch = self.batch.lock();
        let mut writes = 0;
        loop {
            if batch.is_empty() {
                outbox.disarm();
                self.stats.depth_seen(outbox.queued_frames());
                batch.fill(outbox);
                if batch.is_empty() {
                    // Drained and idle: give back backlog storage that has gone unused.
                    if outbox.shrink_if_idle() {
                        batch.trim();
                    }
                    self.parked.store(false, Ordering::Relaxed);
                    return Step::Idle;
                }
            } else {
                batch.fill(outbox);
            }
            if writes == max_writes {
                return Step::More;
            }
            match write_once(&self.sock, &mut batch, outbox, &self.stats) {
                Ok(true) => writes += 1,
                Ok(false) => {
                    self.parked.store(true, Ordering::Relaxed);
                    return Step::Blocked;
                }
                Err(_) => {
                    self.parked.store(true, Ordering::Relaxed);
                    return Step::Failed;
                }
            }
        }
    }

    /// One vectored write of the batch (see [`write_once`]), taking the batch's lock.
    fn write_some(&self, outbox: &Outbox) -> io::Result<bool> {
        write_once(&self.sock, &mut self.batch.lock(), outbox, &self.stats)
    }

    /// Writes the whole batch, waiting for writability as needed.
    async fn write_batch(&self, outbox: &Outbox) -> io::Result<()> {
        while !self.batch.lock().is_empty() {
            if !self.write_some(outbox)? {
                self.sock.writable().await?;
            }
        }
        Ok(())
    }

    /// Adds a frame that bypassed the outbox, charging its bytes so that every frame in the
    /// batch is accounted the same way.
    fn push_final(&self, outbox: &Outbox, frame: Bytes) {
        outbox.charge(frame.len());
        self.batch.lock().push(frame);
    }
}

/// One vectored write of `batch` to `sock`. `Ok(false)` when the socket is full.
fn write_once(
    sock: &OwnedWriteHalf,
    batch: &mut Batch,
    outbox: &Outbox,
    stats: &Stats,
) -> io::Result<bool> {
    let result = {
        let mut slices = [IoSlice::new(&[]); MAX_WRITE_SLICES];
        let n = batch.slices(&mut slices);
        sock.try_write_vectored(&slices[..n])
    };
    match result {
        Ok(0) => Err(io::ErrorKind::WriteZero.into()),
        Ok(written) => {
            let frames = batch.advance(written, |len| outbox.release(len));
            stats.written(frames as u64, written as u64);
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
        Err(e) => Err(e),
    }
}

/// Runs the writer of one connection until it closes, is cut off, is aborted or fails. The
/// caller then detaches the connection from the engine.
///
/// When the outbox sends its push wake-ups to a sweeper (`Outbox::set_wake_list`), this task
/// must run on that sweeper's thread: it lists its slot there, and the sweeper writes the
/// socket as long as it takes everything; the task itself sleeps until a state change, or
/// until the sweeper hands it a full socket to wait on. Without a sweeper, the task drains on
/// every wake-up itself.
pub(crate) async fn drive(outbox: Arc<Outbox>, stats: Arc<Stats>, sock: OwnedWriteHalf) {
    let slot = Arc::new(Slot {
        sock,
        batch: Mutex::new(Batch::new()),
        parked: AtomicBool::new(false),
        stats,
    });
    let listed = outbox.has_wake_list();
    if listed {
        SLOTS.with(|slots| slots.borrow_mut().insert(outbox.id(), slot.clone()));
    }
    let end = serve(&slot, &outbox).await;
    if listed {
        SLOTS.with(|slots| slots.borrow_mut().remove(&outbox.id()));
    }
    match end {
        End::Closing => {
            let _ =
                tokio::time::timeout(CLOSE_FLUSH_TIMEOUT, flush_and_close(&slot, &outbox)).await;
        }
        End::TooSlow => {
            let _ = tokio::time::timeout(SLOW_CLOSE_TIMEOUT, cut_off(&slot, &outbox)).await;
        }
        End::Stopped | End::Failed => {}
    }
    outbox.mark_ended();
    slot.batch.lock().clear(|len| outbox.release(len));
    outbox.discard();
    // The last reference: dropping the write half shuts the write side down (FIN).
    drop(slot);
}

/// The open phase: drain on every wake-up until the state leaves `Open`.
async fn serve(slot: &Slot, outbox: &Outbox) -> End {
    loop {
        match outbox.state() {
            State::Open => {}
            State::Closing => return End::Closing,
            State::TooSlow => return End::TooSlow,
            State::Aborted | State::Ended => return End::Stopped,
        }
        match slot.drain(outbox, MAX_WRITES_PER_DRAIN) {
            Step::Idle => outbox.notified().await,
            Step::More => tokio::task::consume_budget().await,
            Step::Blocked => {
                tokio::select! {
                    ready = slot.sock.writable() => {
                        if ready.is_err() {
                            return End::Failed;
                        }
                    }
                    _ = outbox.notified() => {}
                }
            }
            Step::Failed => return End::Failed,
        }
    }
}

/// Vectored writes per [`Slot::drain`] of the connection's own task before it yields.
const MAX_WRITES_PER_DRAIN: usize = 1;

/// Graceful close: everything queued before `close`, then its frames (FIN follows when the
/// slot is dropped).
async fn flush_and_close(slot: &Slot, outbox: &Outbox) -> io::Result<()> {
    loop {
        let empty = {
            let mut batch = slot.batch.lock();
            batch.fill(outbox);
            batch.is_empty()
        };
        if empty {
            break;
        }
        slot.write_batch(outbox).await?;
    }
    for frame in outbox.final_frames() {
        slot.push_final(outbox, frame.clone());
    }
    slot.write_batch(outbox).await
}

/// Too-slow cut-off: finish the partial frame, drop the rest, send the notice and a close
/// frame (FIN follows when the slot is dropped).
async fn cut_off(slot: &Slot, outbox: &Outbox) -> io::Result<()> {
    slot.batch.lock().keep_partial(|len| outbox.release(len));
    outbox.discard();
    slot.write_batch(outbox).await?;
    slot.push_final(outbox, Frame::text(TOO_SLOW_MESSAGE).0);
    slot.push_final(outbox, Frame::close(1000, "").0);
    slot.write_batch(outbox).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_of(frames: &[&'static [u8]]) -> Batch {
        let mut b = Batch::new();
        for f in frames {
            b.push(Bytes::from_static(f));
        }
        b
    }

    fn unwritten(b: &Batch) -> Vec<u8> {
        let mut slices = [IoSlice::new(&[]); MAX_WRITE_SLICES];
        let n = b.slices(&mut slices);
        slices[..n].iter().flat_map(|s| s.iter().copied()).collect()
    }

    #[test]
    fn advance_resumes_a_partial_write_at_its_offset() {
        let mut b = batch_of(&[b"aaaa", b"bbb", b"cc"]);
        let mut completed = Vec::new();
        assert_eq!(unwritten(&b), b"aaaabbbcc");
        assert_eq!(b.advance(2, |len| completed.push(len)), 0);
        assert_eq!(unwritten(&b), b"aabbbcc");
        assert_eq!(b.advance(4, |len| completed.push(len)), 1);
        assert_eq!(unwritten(&b), b"bcc");
        assert_eq!(b.advance(3, |len| completed.push(len)), 2);
        assert!(b.is_empty());
        assert_eq!(completed, [4, 3, 2]);
    }

    #[test]
    fn keep_partial_keeps_only_a_started_frame() {
        let mut dropped = Vec::new();
        let mut b = batch_of(&[b"aaaa", b"bbb", b"cc"]);
        b.keep_partial(|len| dropped.push(len));
        assert!(b.is_empty());
        assert_eq!(dropped, [4, 3, 2]);

        dropped.clear();
        let mut b = batch_of(&[b"aaaa", b"bbb", b"cc"]);
        b.advance(1, |_| {});
        b.keep_partial(|len| dropped.push(len));
        assert_eq!(dropped, [3, 2]);
        assert_eq!(unwritten(&b), b"aaa");
    }

    #[test]
    fn a_batch_takes_long_frames_up_to_its_byte_bound_and_short_ones_up_to_the_slices() {
        use crate::fanout::QueueLimits;
        let limits = QueueLimits {
            max_frames: 512,
            max_bytes: 1 << 30,
        };
        // 60 KiB frames (a post near the body limit): five reach 256 KiB, the rest stay in
        // the outbox, where the budgets count them.
        let outbox = Outbox::new(1, limits);
        for _ in 0..MAX_WRITE_SLICES {
            outbox.push(&Bytes::from(vec![b'x'; 60 * 1024]));
        }
        let mut b = Batch::new();
        b.fill(&outbox);
        assert_eq!(b.frames.len(), MAX_BATCH_BYTES.div_ceil(60 * 1024));
        assert_eq!(outbox.queued_frames(), MAX_WRITE_SLICES - b.frames.len());
        // Full: no more until some is written.
        b.fill(&outbox);
        assert_eq!(b.frames.len(), 5);
        b.advance(60 * 1024 + 1, |_| {});
        b.fill(&outbox);
        assert_eq!(b.frames.len(), 5);
        b.advance(2 * 60 * 1024, |_| {});
        b.fill(&outbox);
        assert_eq!(
            b.frames.len(),
            5,
            "the first frame's written part still counts"
        );
        // One frame longer than the bound is taken alone.
        let outbox = Outbox::new(2, limits);
        outbox.push(&Bytes::from(vec![b'x'; 2 * MAX_BATCH_BYTES]));
        outbox.push(&Bytes::from_static(b"x"));
        let mut b = Batch::new();
        b.fill(&outbox);
        assert_eq!(b.frames.len(), 1);
        // Short frames: as many as the write's slices.
        let outbox = Outbox::new(3, limits);
        for _ in 0..2 * MAX_WRITE_SLICES {
            outbox.push(&Bytes::from(vec![b'x'; 3 * 1024]));
        }
        let mut b = Batch::new();
        b.fill(&outbox);
        assert_eq!(b.frames.len(), MAX_WRITE_SLICES);
    }

    #[test]
    fn slices_stop_at_the_iovec_limit() {
        let mut b = Batch::new();
        for _ in 0..MAX_WRITE_SLICES + 5 {
            b.push(Bytes::from_static(b"x"));
        }
        let mut slices = [IoSlice::new(&[]); MAX_WRITE_SLICES];
        assert_eq!(b.slices(&mut slices), MAX_WRITE_SLICES);
    }
}
