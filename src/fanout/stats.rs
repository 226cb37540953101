//! Counters of the fan-out engine.
//!
//! Producers (broadcast calls) and writers (the writer threads) update different groups of
//! atomics, each group on its own cache line, so a writer finishing a syscall does not steal the
//! line a broadcasting thread is incrementing. A broadcast adds its totals once, after it has
//! queued to every subscriber, never once per subscriber.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A point-in-time copy of the engine's counters.
///
/// Gauges (`connections`, `subscriptions`, `streams`) are current values; everything else counts
/// since the engine was created. Counters are read one by one without a common lock, so a
/// snapshot taken during traffic may mix values from slightly different instants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Attached connections whose writer has not ended yet (gauge).
    pub connections: u64,
    /// (connection, stream, identifier variant) subscriptions currently attached (gauge).
    pub subscriptions: u64,
    /// Streams with at least one subscriber (gauge).
    pub streams: u64,
    /// Calls to `Fanout::broadcast`, whether or not the stream had subscribers.
    pub broadcasts: u64,
    /// Frames accepted into connection outboxes (broadcast, `send_all` and `send`).
    pub frames_queued: u64,
    /// Bytes of the frames counted in `frames_queued` (header + payload).
    pub bytes_queued: u64,
    /// Frames completely written to sockets.
    pub frames_written: u64,
    /// Bytes written to sockets.
    pub bytes_written: u64,
    /// Write calls that wrote at least one byte: vectored `writev` syscalls for the queue
    /// engine, `write_frame` calls of the WebSocket library for the reference engine.
    pub write_syscalls: u64,
    /// Connections cut off because their outbox passed its bound (queue engine) or their
    /// broadcast receiver lagged (reference engine).
    pub slow_disconnects: u64,
    /// Deepest outbox seen, in frames: sampled by each writer when it wakes up to drain, and
    /// when a push overflows (for the reference engine: messages retained by a stream's
    /// broadcast channel after a send).
    pub queue_depth_high_water: u64,
    /// Most bytes seen queued in one outbox (queue engine only; 0 for the reference engine,
    /// whose channels do not account bytes).
    pub queue_bytes_high_water: u64,
    /// Frames compressed for permessage-deflate subscribers (RFC 7692): one per broadcast,
    /// stream and compressed variant group whose payload was long enough, however many
    /// subscribers the group has (queue engine only; the reference engine sends every frame
    /// uncompressed).
    pub frames_compressed: u64,
    /// Payload bytes of the frames counted in `frames_compressed`, before compression.
    pub compressed_bytes_in: u64,
    /// Payload bytes of the frames counted in `frames_compressed`, after compression (what a
    /// subscriber is sent of each, less the 2 to 10 header bytes).
    pub compressed_bytes_out: u64,
}

/// Counters touched by whoever enqueues (broadcasts, sends, subscribe bookkeeping).
#[derive(Debug, Default)]
#[repr(align(64))]
struct ProducerSide {
    connections: AtomicU64,
    subscriptions: AtomicU64,
    streams: AtomicU64,
    broadcasts: AtomicU64,
    frames_queued: AtomicU64,
    bytes_queued: AtomicU64,
    queue_depth_high_water: AtomicU64,
    queue_bytes_high_water: AtomicU64,
    frames_compressed: AtomicU64,
    compressed_bytes_in: AtomicU64,
    compressed_bytes_out: AtomicU64,
}

/// Counters touched by the connections' writers (the writer threads).
#[derive(Debug, Default)]
#[repr(align(64))]
struct WriterSide {
    frames_written: AtomicU64,
    bytes_written: AtomicU64,
    write_syscalls: AtomicU64,
    slow_disconnects: AtomicU64,
}

/// The live counters behind [`StatsSnapshot`].
#[derive(Debug, Default)]
pub(crate) struct Stats {
    producer: ProducerSide,
    writer: WriterSide,
}

/// What one broadcast (or `send_all`) queued, summed locally and added to [`Stats`] once.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Enqueued {
    pub(crate) frames: u64,
    pub(crate) bytes: u64,
    pub(crate) max_depth: u64,
    pub(crate) max_bytes: u64,
}

impl Enqueued {
    /// Records one frame of `len` bytes after which its outbox accounted `queued_bytes`.
    #[inline]
    pub(crate) fn add(&mut self, len: usize, queued_bytes: usize) {
        self.frames += 1;
        self.bytes += len as u64;
        self.max_bytes = self.max_bytes.max(queued_bytes as u64);
    }
}

impl Stats {
    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        let p = &self.producer;
        let w = &self.writer;
        StatsSnapshot {
            connections: p.connections.load(Relaxed),
            subscriptions: p.subscriptions.load(Relaxed),
            streams: p.streams.load(Relaxed),
            broadcasts: p.broadcasts.load(Relaxed),
            frames_queued: p.frames_queued.load(Relaxed),
            bytes_queued: p.bytes_queued.load(Relaxed),
            frames_written: w.frames_written.load(Relaxed),
            bytes_written: w.bytes_written.load(Relaxed),
            write_syscalls: w.write_syscalls.load(Relaxed),
            slow_disconnects: w.slow_disconnects.load(Relaxed),
            queue_depth_high_water: p.queue_depth_high_water.load(Relaxed),
            queue_bytes_high_water: p.queue_bytes_high_water.load(Relaxed),
            frames_compressed: p.frames_compressed.load(Relaxed),
            compressed_bytes_in: p.compressed_bytes_in.load(Relaxed),
            compressed_bytes_out: p.compressed_bytes_out.load(Relaxed),
        }
    }

    pub(crate) fn connection_opened(&self) {
        self.producer.connections.fetch_add(1, Relaxed);
    }

    pub(crate) fn connection_closed(&self) {
        self.producer.connections.fetch_sub(1, Relaxed);
    }

    pub(crate) fn subscription_added(&self, new_stream: bool) {
        self.producer.subscriptions.fetch_add(1, Relaxed);
        if new_stream {
            self.producer.streams.fetch_add(1, Relaxed);
        }
    }

    pub(crate) fn subscription_removed(&self, stream_removed: bool) {
        self.producer.subscriptions.fetch_sub(1, Relaxed);
        if stream_removed {
            self.producer.streams.fetch_sub(1, Relaxed);
        }
    }

    /// Adds `added` to and takes `removed` from the stream gauge (the reference engine counts
    /// its channel map directly).
    #[cfg(feature = "reference-engine")]
    pub(crate) fn streams_changed(&self, added: u64, removed: u64) {
        if added > 0 {
            self.producer.streams.fetch_add(added, Relaxed);
        }
        if removed > 0 {
            self.producer.streams.fetch_sub(removed, Relaxed);
        }
    }

    pub(crate) fn broadcast(&self) {
        self.producer.broadcasts.fetch_add(1, Relaxed);
    }

    /// Counts `n` broadcasts at once (one pass over several streams).
    pub(crate) fn broadcasts(&self, n: u64) {
        if n > 0 {
            self.producer.broadcasts.fetch_add(n, Relaxed);
        }
    }

    /// Records one frame compressed for a permessage-deflate group: `before` payload bytes
    /// became `after`.
    pub(crate) fn compressed(&self, before: usize, after: usize) {
        let p = &self.producer;
        p.frames_compressed.fetch_add(1, Relaxed);
        p.compressed_bytes_in.fetch_add(before as u64, Relaxed);
        p.compressed_bytes_out.fetch_add(after as u64, Relaxed);
    }

    /// Adds the totals of one enqueue pass.
    pub(crate) fn enqueued(&self, e: &Enqueued) {
        if e.frames == 0 {
            return;
        }
        let p = &self.producer;
        p.frames_queued.fetch_add(e.frames, Relaxed);
        p.bytes_queued.fetch_add(e.bytes, Relaxed);
        if e.max_depth > p.queue_depth_high_water.load(Relaxed) {
            p.queue_depth_high_water.fetch_max(e.max_depth, Relaxed);
        }
        if e.max_bytes > p.queue_bytes_high_water.load(Relaxed) {
            p.queue_bytes_high_water.fetch_max(e.max_bytes, Relaxed);
        }
    }

    /// Records an outbox seen `depth` frames deep (sampled by writers once per drain, and
    /// when a push overflows).
    pub(crate) fn depth_seen(&self, depth: usize) {
        let depth = depth as u64;
        let p = &self.producer;
        if depth > p.queue_depth_high_water.load(Relaxed) {
            p.queue_depth_high_water.fetch_max(depth, Relaxed);
        }
    }

    /// Records one write call that completed `frames` frames and wrote `bytes` bytes.
    pub(crate) fn written(&self, frames: u64, bytes: u64) {
        let w = &self.writer;
        w.write_syscalls.fetch_add(1, Relaxed);
        w.bytes_written.fetch_add(bytes, Relaxed);
        if frames > 0 {
            w.frames_written.fetch_add(frames, Relaxed);
        }
    }

    pub(crate) fn slow_disconnect(&self) {
        self.writer.slow_disconnects.fetch_add(1, Relaxed);
    }
}
