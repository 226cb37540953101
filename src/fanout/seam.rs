//! The seam between the fan-out API (`Fanout`, `Connection` in `engine.rs`) and the engines
//! behind it: the default queue engine (`engine.rs`) and, with the `reference-engine`
//! feature, the `tokio::sync::broadcast` reference engine (`reference.rs`). Every public
//! method makes one dynamic call through these traits, per broadcast or per send, never per
//! subscriber.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::Notify;

use super::frame::Frame;
use super::stats::StatsSnapshot;
use super::{EngineKind, Variant};
use crate::history::Numbered;

/// What an engine does behind `Fanout`; each method is the `Fanout` method of the same name.
pub(super) trait Engine: Send + Sync {
    /// Which engine this is.
    fn kind(&self) -> EngineKind;

    /// Starts the engine's own threads now, if it has any. Idempotent.
    fn start(&self);

    /// Takes over `write` and spawns the connection's task(s); `owner` is the user whose
    /// budget its queued frames count against (None: no user's).
    fn attach(self: Arc<Self>, write: OwnedWriteHalf, owner: Option<u64>) -> Arc<dyn Conn>;

    /// Delivers `message` to every subscriber of `stream`; returns how many it reached.
    fn broadcast(&self, stream: &str, message: &[u8]) -> usize;

    /// Delivers `message` to every subscriber of each stream `next` names (see
    /// `Fanout::broadcast_each`); returns how many it reached in all.
    fn broadcast_each(&self, next: &mut dyn FnMut(&mut String) -> bool, message: &[u8]) -> usize {
        let mut stream = String::new();
        let mut reached = 0;
        while next(&mut stream) {
            reached += self.broadcast(&stream, message);
        }
        reached
    }

    /// [`Engine::broadcast`] with a positioned suffix for positioned variants (see
    /// `Fanout::broadcast_at`). By default the suffix is ignored.
    fn broadcast_at(
        &self,
        stream: &str,
        message: &[u8],
        _positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        self.broadcast(stream, message)
    }

    /// [`Engine::broadcast_each`] with a positioned suffix per stream (see
    /// `Fanout::broadcast_each_at`). By default the suffix is ignored.
    fn broadcast_each_at(
        &self,
        next: &mut dyn FnMut(&mut String) -> bool,
        message: &[u8],
        _positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        self.broadcast_each(next, message)
    }

    /// [`Engine::broadcast_each_at`] to the stream of `family` for each id `next` gives (see
    /// `Fanout::broadcast_numbered_at`). By default each stream is named and looked up.
    fn broadcast_numbered_at(
        &self,
        family: &Numbered,
        next: &mut dyn FnMut() -> Option<i64>,
        message: &[u8],
        positioned: super::PositionedSuffix<'_>,
    ) -> usize {
        self.broadcast_each_at(&mut family.names(next), message, positioned)
    }

    /// Keeps, for each of `families`, which of their streams the index holds, by id (see
    /// `Fanout::with_numbered`). By default nothing is kept.
    fn numbered(&mut self, _families: &[Numbered]) {}

    /// Queues `frame` to every attached connection; returns how many it reached.
    fn send_all(&self, frame: &Frame) -> usize;

    /// The engine's counters.
    fn stats(&self) -> StatsSnapshot;

    /// A connection with no socket and no task (see `Fanout::attach_detached`).
    #[cfg(feature = "test-support")]
    fn attach_detached(self: Arc<Self>) -> Arc<dyn Conn>;

    /// Runs later writers on the attaching runtime (see `Fanout::new_inline_writers`).
    #[cfg(feature = "test-support")]
    fn run_writers_inline(&self);
}

/// What one engine's connection does behind `Connection`; each method is the `Connection`
/// method of the same name.
pub(super) trait Conn: Send + Sync {
    /// The connection's id, unique in the process.
    fn id(&self) -> u64;

    /// Queues one frame for this connection only; false if it was not queued.
    fn send(&self, frame: Frame) -> bool;

    /// [`Conn::send`] keeping the writer's wake-up for [`Conn::wake_deferred`]. By default the
    /// same as `send`.
    fn send_deferred(&self, frame: Frame) -> bool {
        self.send(frame)
    }

    /// Wakes the writer for what `send_deferred` queued. By default nothing is deferred.
    fn wake_deferred(&self) {}

    /// Attaches the connection to `stream` under `variant`.
    fn subscribe(&self, stream: &str, variant: &Variant);

    /// Detaches from `stream` for `variant_key`.
    fn unsubscribe(&self, stream: &str, variant_key: &str);

    /// Holds `stream`'s frames for `variant_key` (see `Connection::hold`) and returns the last
    /// position sent. By default nothing is held and no position is known.
    fn hold(&self, _stream: &str, _variant_key: &str) -> Option<(Arc<str>, u64)> {
        None
    }

    /// Notes the last position sent for `variant_key` (see `Connection::track`). By default
    /// nothing is noted.
    fn track(&self, _stream: &str, _variant_key: &str) {}

    /// Ends a hold (see `Connection::release`). By default nothing was held.
    fn release(&self, _stream: &str, _variant_key: &str, _last: Option<(Arc<str>, u64)>) {}

    /// Queues `frames` last, flushes and shuts the write side down.
    fn close(&self, frames: &[Frame]);

    /// Stops at once without flushing.
    fn abort(&self);

    /// True once the connection no longer accepts frames.
    fn is_closed(&self) -> bool;

    /// The flag set when the connection's writer has ended, and the `Notify` woken then.
    fn done_signal(&self) -> (&AtomicBool, &Notify);

    /// Takes every frame queued to a detached connection (see `Fanout::drain_detached`).
    #[cfg(feature = "test-support")]
    fn drain_detached(&self) -> usize;
}
