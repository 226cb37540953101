//! The owner's drain loop: the only code that writes a connection's socket.
//!
//! Each attached connection gets one writer task. It sleeps until its outbox wakes it, then
//! takes everything queued and writes it with as few syscalls as possible:
//!
//! 1. **Batch**: pop up to [`MAX_WRITE_SLICES`] frames into a retained `VecDeque` (no
//!    allocation once it has grown to what the connection needs; freed together with the
//!    outbox's overflow once the connection has been idle for `queue::SHRINK_AFTER`).
//! 2. **Vectored write**: one `try_write_vectored` with one `IoSlice` per frame, pointing
//!    straight into the shared frame bytes — no copy into a per-connection buffer. The kernel
//!    cost is per call, nearly independent of size, so coalescing is the main lever.
//! 3. **Resume**: a short write leaves the first unfinished frame at an offset; the next call
//!    starts from there. Completed frames give their bytes back to the outbox bound.
//! 4. When the socket is full, wait for writability (`writable().await`), but also wake on
//!    outbox state changes, so a connection cut off while its peer stopped reading is noticed.
//!
//! The loop ends in one of four ways: a graceful close (flush everything queued, then the final
//! frames, then shut the write side down), a too-slow cut-off (finish the partially written
//! frame so the stream stays parseable, drop the rest, write the Action Cable `disconnect`
//! notice and a close frame, shut down — under a short timeout since the peer may not be
//! reading), an abort (stop at once), or a write error.

use std::collections::VecDeque;
use std::io::{self, IoSlice};

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;

use super::frame::Frame;
use super::queue::{Outbox, State};
use super::stats::Stats;
use super::{CLOSE_FLUSH_TIMEOUT, MAX_WRITE_SLICES, SLOW_CLOSE_TIMEOUT, TOO_SLOW_MESSAGE};

/// Frames popped from the outbox and not yet completely written, with the write offset into
/// the first one. Its storage is retained across drains.
#[derive(Debug)]
pub(crate) struct Batch {
    frames: VecDeque<Bytes>,
    offset: usize,
}

impl Batch {
    pub(crate) fn new() -> Self {
        Self {
            // Grows on demand (an idle connection never needs 64 slots) and keeps its
            // capacity afterwards, so a busy connection's drains do not allocate.
            frames: VecDeque::new(),
            offset: 0,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Tops the batch up from `outbox` to at most [`MAX_WRITE_SLICES`] frames.
    pub(crate) fn fill(&mut self, outbox: &Outbox) {
        let room = MAX_WRITE_SLICES.saturating_sub(self.frames.len());
        if room > 0 {
            let frames = &mut self.frames;
            outbox.take(room, |frame| frames.push_back(frame));
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
        self.frames.push_back(frame);
    }

    /// Drops everything (the connection is gone), passing each frame's length to `dropped`.
    pub(crate) fn clear(&mut self, mut dropped: impl FnMut(usize)) {
        for frame in self.frames.drain(..) {
            dropped(frame.len());
        }
        self.offset = 0;
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

/// One connection's writer: the socket, the batch, and where to report.
struct Writer<'a> {
    outbox: &'a Outbox,
    stats: &'a Stats,
    sock: OwnedWriteHalf,
    batch: Batch,
}

/// Runs the writer of one connection until it closes, is cut off, is aborted or fails. The
/// caller then detaches the connection from the engine.
pub(crate) async fn drive(outbox: &Outbox, stats: &Stats, sock: OwnedWriteHalf) {
    let mut writer = Writer {
        outbox,
        stats,
        sock,
        batch: Batch::new(),
    };
    match writer.serve().await {
        End::Closing => {
            let _ = tokio::time::timeout(CLOSE_FLUSH_TIMEOUT, writer.flush_and_close()).await;
        }
        End::TooSlow => {
            let _ = tokio::time::timeout(SLOW_CLOSE_TIMEOUT, writer.cut_off()).await;
        }
        End::Stopped | End::Failed => {}
    }
    outbox.mark_ended();
    writer.batch.clear(|len| outbox.release(len));
    outbox.discard();
}

impl Writer<'_> {
    /// The open phase: drain on every wake-up until the state leaves `Open`.
    async fn serve(&mut self) -> End {
        loop {
            match self.outbox.state() {
                State::Open => {}
                State::Closing => return End::Closing,
                State::TooSlow => return End::TooSlow,
                State::Aborted | State::Ended => return End::Stopped,
            }
            if self.batch.is_empty() {
                // New drain epoch: disarm first, then look, so no push is missed.
                self.outbox.disarm();
                self.stats.depth_seen(self.outbox.queued_frames());
                self.batch.fill(self.outbox);
                if self.batch.is_empty() {
                    // Drained and idle: give back backlog storage that has gone unused.
                    if self.outbox.shrink_if_idle() {
                        self.batch.trim();
                    }
                    self.outbox.notified().await;
                    continue;
                }
            } else {
                self.batch.fill(self.outbox);
            }
            match self.write_once() {
                Ok(true) => tokio::task::consume_budget().await,
                Ok(false) => {
                    tokio::select! {
                        ready = self.sock.writable() => {
                            if ready.is_err() {
                                return End::Failed;
                            }
                        }
                        _ = self.outbox.notified() => {}
                    }
                }
                Err(_) => return End::Failed,
            }
        }
    }

    /// One vectored write of the batch. `Ok(false)` when the socket is full.
    fn write_once(&mut self) -> io::Result<bool> {
        let result = {
            let mut slices = [IoSlice::new(&[]); MAX_WRITE_SLICES];
            let n = self.batch.slices(&mut slices);
            self.sock.try_write_vectored(&slices[..n])
        };
        match result {
            Ok(0) => Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => {
                let outbox = self.outbox;
                let frames = self.batch.advance(written, |len| outbox.release(len));
                self.stats.written(frames as u64, written as u64);
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Adds a frame that bypassed the outbox, charging its bytes so that every frame in the
    /// batch is accounted the same way.
    fn push_final(&mut self, frame: Bytes) {
        self.outbox.charge(frame.len());
        self.batch.push(frame);
    }

    /// Writes the whole batch, waiting for writability as needed.
    async fn write_batch(&mut self) -> io::Result<()> {
        while !self.batch.is_empty() {
            if !self.write_once()? {
                self.sock.writable().await?;
            }
        }
        Ok(())
    }

    /// Graceful close: everything queued before `close`, then its frames, then FIN.
    async fn flush_and_close(&mut self) -> io::Result<()> {
        loop {
            self.batch.fill(self.outbox);
            if self.batch.is_empty() {
                break;
            }
            self.write_batch().await?;
        }
        for frame in self.outbox.final_frames() {
            self.push_final(frame.clone());
        }
        self.write_batch().await?;
        self.sock.shutdown().await
    }

    /// Too-slow cut-off: finish the partial frame, drop the rest, send the notice and a close
    /// frame, then FIN.
    async fn cut_off(&mut self) -> io::Result<()> {
        let outbox = self.outbox;
        self.batch.keep_partial(|len| outbox.release(len));
        outbox.discard();
        self.write_batch().await?;
        self.push_final(Frame::text(TOO_SLOW_MESSAGE).0);
        self.push_final(Frame::close(1000, "").0);
        self.write_batch().await?;
        self.sock.shutdown().await
    }
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
    fn slices_stop_at_the_iovec_limit() {
        let mut b = Batch::new();
        for _ in 0..MAX_WRITE_SLICES + 5 {
            b.push(Bytes::from_static(b"x"));
        }
        let mut slices = [IoSlice::new(&[]); MAX_WRITE_SLICES];
        assert_eq!(b.slices(&mut slices), MAX_WRITE_SLICES);
    }
}
