//! The broadcasting seam: where a payload for a stream goes.
//!
//! [`Broadcaster`] is the narrow interface that handlers, channels and [`crate::broadcasts`]
//! receive instead of the whole server state: "send these bytes to every subscriber of this
//! stream" (Action Cable's `ActionCable.server.broadcast(broadcasting, message)`), plus the two
//! settings an event needs to build its payload and stream name (ActiveSupport's JSON escaping
//! and the GlobalID app name). Where the bytes go is a [`Publish`] sink: the in-process
//! fan-out engine by default; a pub/sub adapter that shares broadcasts between nodes, or a
//! test's recorder, plugs in the same way.

use std::sync::Arc;
use std::time::Duration;

use crate::fanout::Fanout;
use crate::metrics::Metrics;
use crate::rails::json::{self, JsonEscaping};

/// Where a broadcast's bytes go: one call per broadcast (never per subscriber).
pub trait Publish: Send + Sync + std::fmt::Debug {
    /// Delivers `payload` (one JSON value, the `message` of the Action Cable frame) to the
    /// subscribers of `stream`. Returns how many local connections it was queued for. Must
    /// not wait for a socket.
    fn publish(&self, stream: &str, payload: &[u8]) -> usize;

    /// Delivers `payload` to each stream `next` names, in turn (`next` writes the next name
    /// into the buffer it is given and returns false when there is none; see
    /// [`Fanout::broadcast_each`]). Returns how many local connections it was queued for, in
    /// all. By default one [`Publish::publish`] per stream.
    fn publish_each(&self, next: &mut dyn FnMut(&mut String) -> bool, payload: &[u8]) -> usize {
        let mut stream = String::new();
        let mut reached = 0;
        while next(&mut stream) {
            reached += self.publish(&stream, payload);
        }
        reached
    }
}

/// The in-process engine: every subscriber is a connection of this process.
impl Publish for Fanout {
    fn publish(&self, stream: &str, payload: &[u8]) -> usize {
        self.broadcast(stream, payload)
    }

    fn publish_each(&self, next: &mut dyn FnMut(&mut String) -> bool, payload: &[u8]) -> usize {
        self.broadcast_each(next, payload)
    }
}

/// Sends already-encoded payloads to streams. Cheap to clone (two `Arc`s, an app name and a
/// flag pair).
#[derive(Clone, Debug)]
pub struct Broadcaster {
    sink: Arc<dyn Publish>,
    json: JsonEscaping,
    gid_app: Arc<str>,
    metrics: Arc<Metrics>,
}

impl Broadcaster {
    /// A broadcaster onto the in-process `fanout` engine. `gid_app` is the GlobalID app name
    /// of stream names (`gid://<app>/…`, `--gid-app`); `json` the escaping of every JSON
    /// string it encodes; `metrics` records each event's duration.
    pub fn new(fanout: Fanout, json: JsonEscaping, gid_app: &str, metrics: Arc<Metrics>) -> Self {
        Self::with_sink(Arc::new(fanout), json, gid_app, metrics)
    }

    /// A broadcaster onto any [`Publish`] sink (a pub/sub adapter, a test's recorder).
    pub fn with_sink(
        sink: Arc<dyn Publish>,
        json: JsonEscaping,
        gid_app: &str,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            sink,
            json,
            gid_app: gid_app.into(),
            metrics,
        }
    }

    /// Sends `payload` (one JSON value, the `message` of the Action Cable frame) to every
    /// subscriber of `stream`. Returns the number of local connections it was queued for;
    /// never waits for a socket.
    pub fn broadcast(&self, stream: &str, payload: &[u8]) -> usize {
        self.sink.publish(stream, payload)
    }

    /// Sends `payload` to each stream `next` names ([`Publish::publish_each`]): the same as one
    /// [`Self::broadcast`] per stream, with one frame built for all of them locally.
    pub fn broadcast_each(
        &self,
        next: &mut dyn FnMut(&mut String) -> bool,
        payload: &[u8],
    ) -> usize {
        self.sink.publish_each(next, payload)
    }

    /// Sends `text` as a JSON string (ActiveSupport escaping), as turbo-rails'
    /// `broadcast_*_to` does with rendered HTML. Returns what [`Self::broadcast`] returns.
    pub fn broadcast_string(&self, stream: &str, text: &str) -> usize {
        let payload = json::json_string(text, self.json);
        self.broadcast(stream, payload.as_bytes())
    }

    /// ActiveSupport's JSON escaping settings for payloads.
    pub fn json(&self) -> JsonEscaping {
        self.json
    }

    /// The GlobalID app name of stream names (`gid://<app>/…`).
    pub fn gid_app(&self) -> &str {
        &self.gid_app
    }

    /// Runs `f`'s broadcasts as one delivery pass of the local engine
    /// ([`crate::fanout::one_pass`]): each connection's writer wakes once, after all of them
    /// are queued. A sink that is not
    /// local (Redis) publishes as usual.
    pub fn one_pass<R>(&self, f: impl FnOnce() -> R) -> R {
        crate::fanout::one_pass(f)
    }

    /// Records how long one event's broadcasts took (`hearth_broadcast_duration_seconds`).
    pub fn record_duration(&self, elapsed: Duration) {
        self.metrics.broadcast_finished(elapsed);
    }
}
