//! The fan-out core: delivering one broadcast to every subscribed WebSocket connection.
//!
//! This module knows nothing of HTTP, SQL or Action Cable channels. It takes a stream name and
//! an already-encoded message and puts WebSocket frames on sockets. The Action Cable layer
//! reads client frames itself and uses this module only to send.
//!
//! ## How a broadcast travels (the default, [`EngineKind::Queue`])
//!
//! 1. [`Fanout::broadcast`] looks the stream up in the subscriber **index** (one hash lookup,
//!    no scan of connections) and takes that stream's read lock.
//! 2. For each identifier [`Variant`] among the stream's subscribers it encodes **one frame**:
//!    the RFC 6455 header plus `prefix + message + suffix`, in one [`bytes::Bytes`] buffer
//!    ([`frame::Frame`]); for a variant of permessage-deflate subscribers that frame is
//!    compressed, still once for the whole group ([`deflate`]).
//! 3. It pushes a refcount clone of that frame into the bounded **outbox** of every subscriber
//!    of the variant, and wakes a connection only if its outbox was idle. It never waits for a
//!    socket and allocates nothing per subscriber (the one exception: a backed-up
//!    connection's overflow doubling its storage, see `queue.rs`).
//! 4. Each writer thread's **sweeper** takes the pass's woken connections as one list and
//!    writes each one's outbox with one vectored write (`writev`) per up to
//!    [`MAX_WRITE_SLICES`] frames, resuming partial writes at their offset; a connection whose
//!    socket is full goes to its own **writer** task, which waits for writability.
//! 5. A connection whose outbox passes its [`QueueLimits`] is cut off alone: it gets the
//!    `too_slow` disconnect notice and a close frame, its queue is dropped, others carry on.
//!    Beyond each connection's own bound, a user's connections together and the whole server
//!    have byte budgets ([`QueueBudgets`]); passing one cuts the heaviest holder off the same
//!    way.
//!
//! ## Files
//!
//! - `engine.rs`: [`Fanout`] and [`Connection`], the API the cable layer calls, and the
//!   default engine, which reads straight through from `Fanout::broadcast` to the pushes.
//! - `index.rs`: stream → variants → subscribers.
//! - `frame.rs`: encoding a server frame once, to be shared.
//! - `deflate.rs`: the same frame compressed once for a permessage-deflate variant (RFC 7692
//!   with `server_no_context_takeover`: no compression state per connection), above
//!   [`deflate::MIN_COMPRESSED_PAYLOAD`] bytes.
//! - `gate.rs`: a positioned subscription held back while its history is sent, then let
//!   through without a position it already sent ([`Connection::hold`]).
//! - `budget.rs`: the user and server byte budgets of queued frames ([`QueueBudgets`]): once
//!   one is passed, the heaviest holder is cut off as too slow first.
//! - `queue.rs`: the per-connection outbox (a small lock-free ring, an overflow that grows
//!   under backlog and shrinks when idle, byte bound, armed wake-up flag)
//!   and the connection lifecycle `State`.
//! - `writer.rs`: one connection's drain (vectored writes, offsets) and its writer task
//!   (full sockets, close and cut-off).
//! - `sweeper.rs`: a writer thread's walk over the connections a pass woke.
//! - `seam.rs`: the private traits `Engine` and `Conn` every engine implements behind
//!   `Fanout` (one dynamic call per API call, none per subscriber).
//! - `runtime.rs`: the writers' own threads (each with its sweeper), so requests never queue
//!   behind drains.
//! - `stats.rs`: counters ([`StatsSnapshot`]).
//! - `reference.rs` (feature `reference-engine`): the `tokio::sync::broadcast` reference
//!   engine (`EngineKind::TokioBroadcast`), the design most Rust servers start with, kept to
//!   measure the default against. It implements the same seam.
//! - `interest.rs`: which streams have local subscribers, with first/last events for a
//!   pub/sub adapter shared between nodes ([`interest::Interest`]).
//!
//! ## Cargo features
//!
//! - `reference-engine`: builds the reference engine and accepts `--fanout tokio-broadcast`
//!   (`HEARTH_FANOUT=tokio-broadcast`). Without it that value is rejected when the flags are
//!   parsed, and only [`EngineKind::Queue`] exists.
//! - `test-support`: bench and test hooks on [`Fanout`] (`new_inline_writers`,
//!   `attach_detached`, `drain_detached`), not part of the production API. The fan-out tests
//!   and benches require it; `scripts/test` turns both features on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

mod budget;
pub mod deflate;
mod engine;
pub mod frame;
mod gate;
mod index;
pub mod interest;
mod numbered;
mod queue;
#[cfg(feature = "reference-engine")]
mod reference;
mod runtime;
mod seam;
mod stats;
mod sweeper;
mod writer;

pub use budget::QueueBudgets;
pub use engine::{Connection, Fanout};
pub use stats::StatsSnapshot;

/// Which engine delivers frames, chosen at start (`--fanout queue|tokio-broadcast`).
///
/// Both engines put the same bytes on the wire; they differ in how frames reach the socket.
/// [`EngineKind::TokioBroadcast`] exists only with the cargo feature `reference-engine`;
/// without it `--fanout` accepts `queue` alone (clap rejects other values and lists the
/// possible ones).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// The default: an index lookup, one shared frame per variant, a bounded lock-free outbox
    /// per connection drained by the connection's own task with vectored writes.
    #[default]
    Queue,
    /// The reference design: a `tokio::sync::broadcast` channel per stream, one forwarding
    /// task per subscription writing each message through the WebSocket library's sink
    /// (`fastwebsockets::WebSocketWrite` behind a `tokio::sync::Mutex`), and an unbounded mpsc
    /// per connection for direct sends. A lagged receiver is disconnected as too slow.
    /// Needs the cargo feature `reference-engine`.
    #[cfg(feature = "reference-engine")]
    TokioBroadcast,
}

/// Runs `f` as one delivery pass: the queue engine wakes the writers of the connections that
/// `f`'s broadcasts reach once, when `f` returns, rather than at each connection's first frame,
/// so a connection that gets several frames in the pass (a new message and its unread notice)
/// writes them together in one vectored write. The first delivery waits for the whole pass
/// to be queued; the reference engine is unaffected. Nested passes end with the outermost.
pub fn one_pass<R>(f: impl FnOnce() -> R) -> R {
    queue::defer_wakes(f)
}

/// Connection ids are unique across every engine in the process.
static NEXT_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh connection id (both engines draw from it).
fn next_connection_id() -> u64 {
    NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed)
}

/// Bounds of one connection's outbox. Passing either cuts the connection off as too slow.
///
/// Defaults: 512 frames and 16 MiB. Only frames longer than `max_bytes / max_frames`
/// (32 KiB by default) count against `max_bytes`; shorter ones are bounded by `max_frames`
/// alone, so an outbox holds at most `2 × max_bytes` (see `queue.rs`). The bound is not
/// allocated up front: a connection holds an 8-slot lock-free ring (40 bytes a slot) and only
/// a backed-up one grows an overflow, doubling up to `max_frames` slots and freed once it has
/// drained and stayed unused for a second, so the bound costs memory only while it is used
/// (`scripts/idle-cost --n 2000`: 7.2 KiB RSS per idle connection with 4 subscriptions at the
/// default bounds, was 32.7 KiB with the whole ring allocated). 128 frames proved too tight:
/// under a full sweep's load (64 posts in flight, each a message and an unread notice per client) the
/// writer thread falls that far behind in bursts and healthy clients were cut off; 512 leaves
/// four times that headroom. For the reference engine `max_frames` is the capacity of each
/// broadcast channel and `max_bytes` is not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLimits {
    /// Most frames queued and not yet taken by the writer (at least 1).
    pub max_frames: usize,
    /// Most bytes (headers included) queued and not yet completely written, counting frames
    /// longer than `max_bytes / max_frames`.
    pub max_bytes: usize,
}

impl Default for QueueLimits {
    fn default() -> Self {
        Self {
            max_frames: 512,
            max_bytes: 16 * 1024 * 1024,
        }
    }
}

/// How a subscription wraps a broadcast message: the frame payload is
/// `prefix + message + suffix`.
///
/// For Action Cable the prefix is `{"identifier":"<escaped identifier JSON>","message":` and
/// the suffix is `}` (the transmit shape of `ActionCable::Channel::Base#transmit`, see
/// `actioncable/lib/action_cable/channel/base.rb`). Subscribers of one stream with equal `key`
/// (normally the identifier string) share one encoded frame per broadcast, so the key must
/// determine prefix, suffix and `positioned`.
///
/// A `positioned` variant (an `actioncable-v1-ext-json` subscription) ends a broadcast that
/// carries a position ([`Fanout::broadcast_at`]) with that broadcast's positioned suffix
/// instead of its own `suffix` (`,"stream_id":…,"epoch":…,"offset":…}`); that suffix is built
/// once per broadcast, and only when the stream has a positioned group.
///
/// A variant with [`Variant::deflate`] (a connection that negotiated permessage-deflate,
/// [`Variant::deflated`]) gets its broadcasts' frames compressed, once per broadcast for the
/// whole group (`deflate.rs`); its key names the parameter set, so it never shares a group
/// with plain subscribers.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Groups subscribers that receive identical frames (e.g. the channel identifier).
    pub key: Arc<str>,
    /// Bytes placed before the message in the frame payload.
    pub prefix: Bytes,
    /// Bytes placed after the message in the frame payload.
    pub suffix: Bytes,
    /// Whether broadcasts with a position end with the positioned suffix instead.
    pub positioned: bool,
    /// The permessage-deflate parameter set the group's frames are compressed for (RFC 7692;
    /// payloads of at least [`deflate::MIN_COMPRESSED_PAYLOAD`] bytes), or None for plain
    /// frames. Set with [`Variant::deflated`], which also gives the variant its own key.
    pub deflate: Option<deflate::Deflate>,
}

impl Variant {
    /// A variant from its key and wrapping bytes.
    pub fn new(
        key: impl Into<Arc<str>>,
        prefix: impl Into<Bytes>,
        suffix: impl Into<Bytes>,
    ) -> Self {
        Self {
            key: key.into(),
            prefix: prefix.into(),
            suffix: suffix.into(),
            positioned: false,
            deflate: None,
        }
    }

    /// This variant for a connection that negotiated permessage-deflate with `params`: the
    /// same wrapping, frames compressed for `params`, and the key
    /// [`deflate::Deflate::key`] makes of this one (the key [`Connection::unsubscribe`],
    /// [`Connection::hold`] and the like must then be given). `None` leaves it as it is.
    #[must_use]
    pub fn deflated(self, params: Option<deflate::Deflate>) -> Self {
        match params {
            Some(params) => Self {
                key: params.key(&self.key),
                deflate: Some(params),
                ..self
            },
            None => self,
        }
    }
}

/// The suffix of a positioned broadcast's frames for [`Variant::positioned`] subscribers,
/// built on first use (at most once per stream of a broadcast): `None` from the builder
/// means the broadcast has no position, and those subscribers get their own suffix.
pub type PositionedSuffix<'a> = &'a mut dyn FnMut(&str) -> Option<Stamp>;

/// A positioned broadcast's suffix and the position it carries, for
/// [`Variant::positioned`] subscribers ([`PositionedSuffix`]). The position is opaque here
/// (an epoch string and an offset within it, growing by one per broadcast of a stream): a
/// held subscription ([`Connection::hold`]) compares it with the last one it was sent.
#[derive(Clone, Debug)]
pub struct Stamp {
    /// The bytes after the message (ending the frame's JSON object).
    pub suffix: Bytes,
    /// The numbering `offset` belongs to.
    pub epoch: Arc<str>,
    /// The broadcast's offset in its stream.
    pub offset: u64,
}

/// Most frames one vectored write carries (one `IoSlice` each; Linux allows 1,024).
pub const MAX_WRITE_SLICES: usize = 64;

/// Most bytes of frames a connection's writer takes from its outbox into one batch (at least
/// one frame, however long): a write takes no more than [`SOCKET_UNSENT_BYTES`] and a socket
/// buffer's segment anyway, and frames past it are better left in the outbox, where the
/// budgets see them until they are written and a cut-off frees them at once. Frames in a
/// batch are freed only when the writer next runs, so without this bound a connection cut off
/// as too slow kept up to [`MAX_WRITE_SLICES`] long frames (4 MiB of 64 KiB posts) after its
/// budget charge was given back. Batches of short frames (64 of the usual 3 KiB) are not cut.
pub const MAX_BATCH_BYTES: usize = 256 * 1024;

/// Most bytes the kernel keeps unsent in one cable socket's send buffer
/// (`TCP_NOTSENT_LOWAT`, Linux's `tcp(7)`; a write may pass it by one segment). Frames past it
/// wait in the outbox, where the per-connection bound and the budgets count them. Without it
/// the kernel's send-buffer autotuning (`net.ipv4.tcp_wmem`, 4 MiB by default) took about
/// 2.7 MiB of written frames from each non-reading socket on loopback: written, so no budget
/// counted them, and 40 such sockets held 101 MiB of kernel memory on top of the budgets. It
/// bounds unsent bytes only, not those in flight, so a reader on a long, fast path is not
/// slowed: the writer tops the buffer up as it drains (the socket reads as writable again once
/// half of it has been sent). 128 KiB is the figure the option's author gives as enough for
/// most workloads.
pub const SOCKET_UNSENT_BYTES: u32 = 128 * 1024;

/// The text payload sent to a connection cut off for falling behind. The shape is Action
/// Cable's `disconnect` message (`ActionCable::Connection::Base#close`, which the JS client
/// handles in `connection.js`); `too_slow` is AnyCable's reason for the same event, and
/// `reconnect: true` lets the client come back at once.
pub const TOO_SLOW_MESSAGE: &[u8] =
    br#"{"type":"disconnect","reason":"too_slow","reconnect":true}"#;

/// How long a writer keeps trying to deliver the too-slow notice and close frame to a peer
/// that may not be reading before it drops the socket.
pub const SLOW_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long [`Connection::close`] may spend flushing queued frames and its final frames
/// before the socket is dropped.
pub const CLOSE_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn engine_kind_flag_values() {
        assert_eq!(EngineKind::from_str("queue", false), Ok(EngineKind::Queue));
        #[cfg(feature = "reference-engine")]
        assert_eq!(
            EngineKind::from_str("tokio-broadcast", false),
            Ok(EngineKind::TokioBroadcast)
        );
        #[cfg(not(feature = "reference-engine"))]
        assert!(EngineKind::from_str("tokio-broadcast", false).is_err());
        assert!(EngineKind::from_str("broadcast", false).is_err());
        assert_eq!(EngineKind::default(), EngineKind::Queue);
    }

    #[test]
    fn default_limits_are_the_documented_ones() {
        let limits = QueueLimits::default();
        assert_eq!((limits.max_frames, limits.max_bytes), (512, 16 << 20));
    }
}
