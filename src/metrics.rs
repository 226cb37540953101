//! Operational metrics, scraped at `GET /metrics` in Prometheus' text exposition format
//! (version 0.0.4), through the `metrics` facade and `metrics-exporter-prometheus`.
//!
//! Each server owns its recorder (none is installed globally), so several servers in one
//! process (the tests) keep separate counts. Handlers hold pre-registered handles: recording is
//! an atomic add. The fan-out engine keeps its own counters ([`crate::fanout::StatsSnapshot`]);
//! they are copied into the exporter when a scrape arrives, not counted twice on the hot path.
//!
//! | metric | type | what |
//! |---|---|---|
//! | `hearth_build_info{version}` | gauge | always 1 |
//! | `hearth_cable_connections` | gauge | open Action Cable connections attached to the fan-out engine |
//! | `hearth_cable_subscriptions` | gauge | (connection, stream, identifier) subscriptions attached |
//! | `hearth_cable_connections_opened_total` | counter | connections welcomed |
//! | `hearth_cable_connections_rejected_total` | counter | upgrades refused as unauthorized (no signed-in user) |
//! | `hearth_cable_sessions_restored_total` | counter | `actioncable-v1-ext-json` sessions restored by `sid` (no identification, no re-subscription) |
//! | `hearth_history_replayed_total` | counter | broadcasts sent again from the history (`history` requests, the room page's catch-up) |
//! | `hearth_history_rejected_total` | counter | history requests the history no longer covered (`reject_history`, a sidebar reload) |
//! | `hearth_fanout_streams` | gauge | streams with at least one subscriber |
//! | `hearth_fanout_broadcasts_total` | counter | calls to `Fanout::broadcast` |
//! | `hearth_fanout_frames_queued_total`, `hearth_fanout_queued_bytes_total` | counter | frames (and their bytes) put into connection queues |
//! | `hearth_fanout_frames_sent_total`, `hearth_fanout_sent_bytes_total` | counter | frames completely written to sockets, bytes written |
//! | `hearth_fanout_write_calls_total` | counter | socket write calls that wrote at least one byte |
//! | `hearth_fanout_frames_compressed_total` | counter | broadcast frames compressed for permessage-deflate subscribers: one per broadcast and compressed variant, however many subscribers share it |
//! | `hearth_fanout_compressed_in_bytes_total`, `hearth_fanout_compressed_out_bytes_total` | counter | payload bytes of those frames before and after compression |
//! | `hearth_fanout_queue_depth_high_water_frames` | gauge | deepest connection queue seen, in frames |
//! | `hearth_fanout_queue_high_water_bytes` | gauge | most bytes seen accounted in one connection's queue (frames longer than `queue-bytes / queue-frames` only) |
//! | `hearth_fanout_slow_consumer_disconnects_total` | counter | connections cut off for falling behind |
//! | `hearth_messages_posted_total{source}` | counter | messages stored, `source` = `web` or `bot` |
//! | `hearth_post_duration_seconds{source}` | histogram | post handler duration (see [`Metrics::post_finished`]) |
//! | `hearth_broadcast_duration_seconds` | histogram | duration of a post's broadcast call (see [`Metrics::broadcast_finished`]) |
//! | `hearth_sqlite_wal_bytes` | gauge | size of the SQLite `-wal` file at the last checkpoint, in bytes |
//! | `hearth_sqlite_checkpoint_lag_frames` | gauge | WAL frames the last passive checkpoint could not copy back (pinned by a reader's snapshot, or written since) |
//! | `hearth_sqlite_checkpoint_age_seconds` | gauge | seconds since a checkpoint last copied the whole WAL |
//! | `hearth_sqlite_wal_truncations_total` | counter | `-wal` files truncated after a complete checkpoint (only past `db::WAL_TRUNCATE_BYTES`) |
//! | `hearth_sqlite_wal_restarts_total` | counter | blocking checkpoints that left the `-wal` file to be written over from its start (`db::RESTART_FRAMES`) |
//! | `hearth_webhook_deliveries_total{outcome}` | counter | bot webhook deliveries: `delivered` (answered 2xx), `failed` (no answer after the retries, or a non-2xx answer), `timed_out`, `dropped` (queue full) |
//! | `hearth_push_deliveries_total{result}` | counter | web push requests by outcome (`crate::push`): `sent` (2xx), `retried` (429/5xx/no answer, tried again), `gone` (404/410: the subscription deleted), `failed` (given up), `dropped` (the push queue was full) |
//! | `hearth_mail_deliveries_total{outcome}` | counter | outgoing mail (`crate::mail`, with `--smtp-url` only): `sent`, `retried` (an attempt failed, another follows), `failed` (given up, or refused for good), `dropped` (the mail queue was full) |
//! | `hearth_webhook_retries_total` | counter | webhook attempts repeated after a connection failure or a 5xx answer |
//! | `hearth_rpc_calls_total{result}` | counter | (`--rpc-url`) calls to the app's RPC: `ok`, `error` (no answer, a timeout, another status than 200, a malformed answer), `refused` (not made: the breaker is open) |
//! | `hearth_rpc_call_duration_seconds` | histogram | (`--rpc-url`) duration of each RPC call, answered or not |
//! | `hearth_rpc_breaker_state` | gauge | (`--rpc-url`) the RPC circuit breaker: 0 closed, 1 half-open, 2 open |
//! | `hearth_rpc_disconnects_dropped_total` | counter | (`--rpc-url`) disconnect calls dropped because their queue was full |
//! | `hearth_redis_link_up` | gauge | 1 while a Redis link is up, 0 while down; absent when no Redis link is configured |
//! | `hearth_redis_link_lag_seconds` | gauge | (Redis) the last heartbeat's trip from this node's publishing connection through Redis to its subscriber |
//! | `hearth_redis_publish_pending` | gauge | (Redis) broadcasts kept while Redis cannot take them, published when it can (at most `crate::redis_pubsub::PENDING_LIMIT`) |
//! | `hearth_redis_publish_dropped_total` | counter | (Redis) kept broadcasts dropped, the oldest first, past that bound |
//! | `hearth_redis_publish_retries_total` | counter | (Redis) publish attempts that failed and were tried again |
//! | `hearth_redis_reconnects_total` | counter | (Redis) subscriber links lost (closed, failed, or silent past the heartbeat's limit) |
//! | `hearth_redis_replayed_total` | counter | (Redis) broadcasts this node read back from the log after its link was down, delivered to its clients |
//! | `hearth_redis_replay_gaps_total` | counter | (Redis) replays that found entries after this node's position already trimmed from the log (lost here) |

use std::time::Duration;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Level, Metadata, Recorder, Unit};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};
use parking_lot::Mutex;

use crate::fanout::StatsSnapshot;

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How often histogram samples are folded into their buckets between scrapes.
pub const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Bucket bounds of `hearth_post_duration_seconds`, in seconds (0.5 ms to 2.5 s).
pub const POST_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Bucket bounds of `hearth_broadcast_duration_seconds`, in seconds (10 µs to 100 ms).
pub const BROADCAST_BUCKETS: &[f64] = &[
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1,
];

const POST_DURATION: &str = "hearth_post_duration_seconds";
const BROADCAST_DURATION: &str = "hearth_broadcast_duration_seconds";
const RPC_DURATION: &str = "hearth_rpc_call_duration_seconds";
/// Bucket bounds of `hearth_rpc_call_duration_seconds`, in seconds (1 ms to the 3 s timeout).
const RPC_BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 3.0];
const REDIS_LINK_UP: &str = "hearth_redis_link_up";

/// Where a post came from, as the `source` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostSource {
    /// A signed-in person (`POST /rooms/:id/messages`).
    Web,
    /// A bot (`POST /rooms/:id/:bot_key/messages`).
    Bot,
}

/// The copies of the fan-out engine's counters, refreshed at scrape time.
#[derive(Debug)]
struct FanoutMirror {
    connections: Gauge,
    subscriptions: Gauge,
    streams: Gauge,
    broadcasts: Counter,
    frames_queued: Counter,
    bytes_queued: Counter,
    frames_sent: Counter,
    bytes_sent: Counter,
    write_calls: Counter,
    frames_compressed: Counter,
    compressed_in: Counter,
    compressed_out: Counter,
    slow_disconnects: Counter,
    queue_depth_high_water: Gauge,
    queue_bytes_high_water: Gauge,
}

/// A server's metrics: its own Prometheus recorder and the handles the code records into.
#[derive(Debug)]
pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    fanout: FanoutMirror,
    connections_opened: Counter,
    connections_rejected: Counter,
    sessions_restored: Counter,
    history_replayed: Counter,
    history_rejected: Counter,
    posted_web: Counter,
    posted_bot: Counter,
    post_duration_web: Histogram,
    post_duration_bot: Histogram,
    broadcast_duration: Histogram,
    redis_link: Mutex<Option<Gauge>>,
    wal: std::sync::Arc<crate::db::WalStats>,
    wal_bytes: Gauge,
    checkpoint_lag: Gauge,
    checkpoint_age: Gauge,
    wal_truncations: Counter,
    wal_restarts: Counter,
}

fn metadata() -> Metadata<'static> {
    Metadata::new(module_path!(), Level::INFO, Some(module_path!()))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// A series' type, for its `# TYPE` line.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// Every series a server shows from its first scrape: name, type, unit and `# HELP` text.
/// [`Metrics::new`] describes each from here and registers its handles by name;
/// `hearth_redis_link_up` is described only when a Redis link first reports.
const SERIES: &[(&str, Kind, Option<Unit>, &str)] = &[
    (
        "hearth_build_info",
        Kind::Gauge,
        None,
        "Always 1; the label gives the version.",
    ),
    (
        "hearth_cable_connections",
        Kind::Gauge,
        None,
        "Open Action Cable connections attached to the fan-out engine.",
    ),
    (
        "hearth_cable_subscriptions",
        Kind::Gauge,
        None,
        "Attached (connection, stream, identifier) subscriptions.",
    ),
    (
        "hearth_cable_connections_opened_total",
        Kind::Counter,
        None,
        "Action Cable connections welcomed.",
    ),
    (
        "hearth_cable_connections_rejected_total",
        Kind::Counter,
        None,
        "Action Cable upgrades refused as unauthorized.",
    ),
    (
        "hearth_cable_sessions_restored_total",
        Kind::Counter,
        None,
        "Extended-protocol sessions restored by sid.",
    ),
    (
        "hearth_history_replayed_total",
        Kind::Counter,
        None,
        "Broadcasts sent again from the stream history.",
    ),
    (
        "hearth_history_rejected_total",
        Kind::Counter,
        None,
        "History requests the history no longer covered.",
    ),
    (
        "hearth_fanout_streams",
        Kind::Gauge,
        None,
        "Streams with at least one subscriber.",
    ),
    (
        "hearth_fanout_broadcasts_total",
        Kind::Counter,
        None,
        "Broadcast calls, whether or not the stream had subscribers.",
    ),
    (
        "hearth_fanout_frames_queued_total",
        Kind::Counter,
        None,
        "Frames accepted into connection queues (broadcasts, pings and direct sends).",
    ),
    (
        "hearth_fanout_queued_bytes_total",
        Kind::Counter,
        None,
        "Bytes (WebSocket header and payload) of the frames queued.",
    ),
    (
        "hearth_fanout_frames_sent_total",
        Kind::Counter,
        None,
        "Frames completely written to sockets.",
    ),
    (
        "hearth_fanout_sent_bytes_total",
        Kind::Counter,
        None,
        "Bytes written to sockets.",
    ),
    (
        "hearth_fanout_frames_compressed_total",
        Kind::Counter,
        None,
        "Broadcast frames compressed for permessage-deflate subscribers \
         (one per broadcast and compressed variant).",
    ),
    (
        "hearth_fanout_compressed_in_bytes_total",
        Kind::Counter,
        None,
        "Payload bytes of the compressed broadcast frames before compression.",
    ),
    (
        "hearth_fanout_compressed_out_bytes_total",
        Kind::Counter,
        None,
        "Payload bytes of the compressed broadcast frames after compression.",
    ),
    (
        "hearth_fanout_write_calls_total",
        Kind::Counter,
        None,
        "Socket write calls that wrote at least one byte.",
    ),
    (
        "hearth_fanout_slow_consumer_disconnects_total",
        Kind::Counter,
        None,
        "Connections cut off because their queue passed its bound.",
    ),
    (
        "hearth_fanout_queue_depth_high_water_frames",
        Kind::Gauge,
        Some(Unit::Count),
        "Deepest connection queue seen since start, in frames.",
    ),
    (
        "hearth_fanout_queue_high_water_bytes",
        Kind::Gauge,
        Some(Unit::Bytes),
        "Most bytes seen accounted in one connection's queue since start (only frames longer \
         than queue-bytes / queue-frames are accounted; 0 for the reference engine).",
    ),
    (
        "hearth_messages_posted_total",
        Kind::Counter,
        None,
        "Messages stored, by source (web or bot).",
    ),
    (
        POST_DURATION,
        Kind::Histogram,
        Some(Unit::Seconds),
        "Post handler duration, from the handler's start to its response (successful posts).",
    ),
    (
        BROADCAST_DURATION,
        Kind::Histogram,
        Some(Unit::Seconds),
        "Duration of a post's broadcast call: encoding and queueing its frames for every \
         subscriber of the room stream and every member's unread stream; socket writes happen \
         after, in each connection's writer.",
    ),
    (
        "hearth_sqlite_wal_bytes",
        Kind::Gauge,
        Some(Unit::Bytes),
        "Size of the SQLite -wal file at the last checkpoint.",
    ),
    (
        "hearth_sqlite_checkpoint_lag_frames",
        Kind::Gauge,
        Some(Unit::Count),
        "WAL frames the last passive checkpoint could not copy into the database file (pinned \
         by a reader's snapshot, or written since).",
    ),
    (
        "hearth_sqlite_checkpoint_age_seconds",
        Kind::Gauge,
        Some(Unit::Seconds),
        "Seconds since a checkpoint last copied the whole WAL.",
    ),
    (
        "hearth_sqlite_wal_truncations_total",
        Kind::Counter,
        None,
        "WAL files truncated after a checkpoint copied every frame (only those grown past \
         64 MiB, as a long reader lets them).",
    ),
    (
        "hearth_sqlite_wal_restarts_total",
        Kind::Counter,
        None,
        "Blocking checkpoints that left the WAL to be written over from its start (under \
         steady writes, about one a second).",
    ),
    (
        "hearth_webhook_deliveries_total",
        Kind::Counter,
        None,
        "Bot webhook deliveries, by outcome.",
    ),
    (
        "hearth_webhook_retries_total",
        Kind::Counter,
        None,
        "Webhook attempts repeated after a connection failure or a 5xx answer.",
    ),
];

/// The label values of the labelled counters of [`SERIES`], registered by [`Metrics::new`] so
/// that each shows at 0 from the first scrape (the part of the server that counts takes its
/// handles with [`Metrics::series_counter`]).
const LABELLED: &[(&str, &str, &[&str])] = &[(
    "hearth_webhook_deliveries_total",
    "outcome",
    &["delivered", "failed", "timed_out", "dropped"],
)];

impl Metrics {
    /// A recorder with every metric of the series table described (`# HELP` lines) and
    /// registered, so each shows from the first scrape, at 0.
    pub fn new() -> Self {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(POST_DURATION.into()), POST_BUCKETS)
            .and_then(|b| {
                b.set_buckets_for_metric(
                    Matcher::Full(BROADCAST_DURATION.into()),
                    BROADCAST_BUCKETS,
                )
            })
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full(RPC_DURATION.into()), RPC_BUCKETS))
            .expect("bucket lists are not empty")
            .build_recorder();
        for &(name, kind, unit, help) in SERIES {
            let key = KeyName::from_const_str(name);
            match kind {
                Kind::Counter => recorder.describe_counter(key, unit, help.into()),
                Kind::Gauge => recorder.describe_gauge(key, unit, help.into()),
                Kind::Histogram => recorder.describe_histogram(key, unit, help.into()),
            }
        }
        let counter = |name: &'static str| {
            recorder.register_counter(&Key::from_static_name(name), &metadata())
        };
        let gauge =
            |name: &'static str| recorder.register_gauge(&Key::from_static_name(name), &metadata());
        let labelled = |name: &'static str, label: &'static str, value: &'static str| {
            Key::from_parts(name, vec![Label::from_static_parts(label, value)])
        };
        let posted = |source| {
            recorder.register_counter(
                &labelled("hearth_messages_posted_total", "source", source),
                &metadata(),
            )
        };
        let post_duration = |source| {
            recorder.register_histogram(&labelled(POST_DURATION, "source", source), &metadata())
        };
        let fanout = FanoutMirror {
            connections: gauge("hearth_cable_connections"),
            subscriptions: gauge("hearth_cable_subscriptions"),
            streams: gauge("hearth_fanout_streams"),
            broadcasts: counter("hearth_fanout_broadcasts_total"),
            frames_queued: counter("hearth_fanout_frames_queued_total"),
            bytes_queued: counter("hearth_fanout_queued_bytes_total"),
            frames_sent: counter("hearth_fanout_frames_sent_total"),
            bytes_sent: counter("hearth_fanout_sent_bytes_total"),
            write_calls: counter("hearth_fanout_write_calls_total"),
            frames_compressed: counter("hearth_fanout_frames_compressed_total"),
            compressed_in: counter("hearth_fanout_compressed_in_bytes_total"),
            compressed_out: counter("hearth_fanout_compressed_out_bytes_total"),
            slow_disconnects: counter("hearth_fanout_slow_consumer_disconnects_total"),
            queue_depth_high_water: gauge("hearth_fanout_queue_depth_high_water_frames"),
            queue_bytes_high_water: gauge("hearth_fanout_queue_high_water_bytes"),
        };
        recorder
            .register_gauge(
                &labelled("hearth_build_info", "version", env!("CARGO_PKG_VERSION")),
                &metadata(),
            )
            .set(1.0);
        for &(name, label, values) in LABELLED {
            for &value in values {
                let _ = recorder.register_counter(&labelled(name, label, value), &metadata());
            }
        }
        let _ = counter("hearth_webhook_retries_total");
        let handle = recorder.handle();
        Self {
            fanout,
            connections_opened: counter("hearth_cable_connections_opened_total"),
            connections_rejected: counter("hearth_cable_connections_rejected_total"),
            sessions_restored: counter("hearth_cable_sessions_restored_total"),
            history_replayed: counter("hearth_history_replayed_total"),
            history_rejected: counter("hearth_history_rejected_total"),
            posted_web: posted("web"),
            posted_bot: posted("bot"),
            post_duration_web: post_duration("web"),
            post_duration_bot: post_duration("bot"),
            broadcast_duration: recorder
                .register_histogram(&Key::from_static_name(BROADCAST_DURATION), &metadata()),
            redis_link: Mutex::new(None),
            wal: std::sync::Arc::default(),
            wal_bytes: gauge("hearth_sqlite_wal_bytes"),
            checkpoint_lag: gauge("hearth_sqlite_checkpoint_lag_frames"),
            checkpoint_age: gauge("hearth_sqlite_checkpoint_age_seconds"),
            wal_truncations: counter("hearth_sqlite_wal_truncations_total"),
            wal_restarts: counter("hearth_sqlite_wal_restarts_total"),
            handle,
            recorder,
        }
    }

    /// Registers (and describes) a counter with one label, for a part of the server that
    /// counts its own events (the webhook deliveries); the handle records with an atomic add.
    pub fn labelled_counter(
        &self,
        name: &'static str,
        label: (&'static str, &'static str),
        help: &'static str,
    ) -> Counter {
        self.recorder
            .describe_counter(KeyName::from_const_str(name), None, help.into());
        let key = Key::from_parts(name, vec![Label::from_static_parts(label.0, label.1)]);
        self.recorder.register_counter(&key, &metadata())
    }

    /// The handle of counter `name` of the series table, with `label` when it has one (the
    /// same handle however often it is asked for). Panics when `name` is not a counter of the
    /// table: a new series gets its row there.
    pub fn series_counter(
        &self,
        name: &'static str,
        label: Option<(&'static str, &'static str)>,
    ) -> Counter {
        assert!(
            SERIES
                .iter()
                .any(|&(n, kind, _, _)| n == name && matches!(kind, Kind::Counter)),
            "{name} is not a counter of the series table"
        );
        let labels = label
            .map(|(k, v)| vec![Label::from_static_parts(k, v)])
            .unwrap_or_default();
        self.recorder
            .register_counter(&Key::from_parts(name, labels), &metadata())
    }

    /// Registers (and describes) a counter without labels, for a series shown only while the
    /// part of the server that counts it runs (the Redis link's): not in the series table.
    pub fn plain_counter(&self, name: &'static str, help: &'static str) -> Counter {
        self.recorder
            .describe_counter(KeyName::from_const_str(name), None, help.into());
        self.recorder
            .register_counter(&Key::from_static_name(name), &metadata())
    }

    /// Registers (and describes) a gauge without labels, for a part of the server that keeps
    /// its own level (the Redis link's queue and lag).
    pub fn plain_gauge(&self, name: &'static str, help: &'static str) -> Gauge {
        self.recorder
            .describe_gauge(KeyName::from_const_str(name), None, help.into());
        self.recorder
            .register_gauge(&Key::from_static_name(name), &metadata())
    }

    /// Registers (and describes) `hearth_rpc_call_duration_seconds`, the histogram of AnyCable
    /// RPC calls' durations (`crate::rpc`), shown only while an RPC app is configured.
    pub fn rpc_duration(&self) -> Histogram {
        self.recorder.describe_histogram(
            KeyName::from_const_str(RPC_DURATION),
            Some(Unit::Seconds),
            "Duration of RPC calls to the app, answered or not (the 3 s timeout included)".into(),
        );
        self.recorder
            .register_histogram(&Key::from_static_name(RPC_DURATION), &metadata())
    }

    /// Counts a welcomed Action Cable connection.
    pub fn connection_opened(&self) {
        self.connections_opened.increment(1);
    }

    /// Counts an Action Cable upgrade refused as unauthorized.
    pub fn connection_rejected(&self) {
        self.connections_rejected.increment(1);
    }

    /// Counts a restored extended-protocol session.
    pub fn session_restored(&self) {
        self.sessions_restored.increment(1);
    }

    /// Counts `n` broadcasts sent again from the history.
    pub fn history_replayed(&self, n: usize) {
        self.history_replayed.increment(n as u64);
    }

    /// Counts a history request the history no longer covered.
    pub fn history_rejected(&self) {
        self.history_rejected.increment(1);
    }

    /// Records a stored post: counts it and observes `elapsed`, the post handler's duration
    /// from its start (after the request context is built: body read, session resumed, CSRF
    /// checked) until its response is built. That span holds the membership check, the
    /// insert transaction, rendering the partial once and the broadcast call; it does not wait
    /// for any socket write.
    pub fn post_finished(&self, source: PostSource, elapsed: Duration) {
        let (count, histogram) = match source {
            PostSource::Web => (&self.posted_web, &self.post_duration_web),
            PostSource::Bot => (&self.posted_bot, &self.post_duration_bot),
        };
        count.increment(1);
        histogram.record(elapsed.as_secs_f64());
    }

    /// Observes the duration of a post's broadcast call
    /// (the new-message event of `broadcasts`): JSON-encoding the append once, looking up
    /// the room stream, encoding one frame per identifier variant and queueing it for every
    /// subscriber, then the same for each member's unread stream. It is the fan-out latency up
    /// to the queues; the writes to sockets follow on the writer threads and are not
    /// included.
    pub fn broadcast_finished(&self, elapsed: Duration) {
        self.broadcast_duration.record(elapsed.as_secs_f64());
    }

    /// Sets `hearth_redis_link_up` (1 up, 0 down). The gauge appears from its first call on,
    /// so a server without a Redis link never shows it.
    pub fn set_redis_link_up(&self, up: bool) {
        let mut slot = self.redis_link.lock();
        let gauge = slot.get_or_insert_with(|| {
            self.recorder.describe_gauge(
                KeyName::from_const_str(REDIS_LINK_UP),
                None,
                "1 while the Redis link is up, 0 while it is down.".into(),
            );
            self.recorder
                .register_gauge(&Key::from_static_name(REDIS_LINK_UP), &metadata())
        });
        gauge.set(if up { 1.0 } else { 0.0 });
    }

    /// The checkpointer's statistics behind the `hearth_sqlite_*` gauges; hand them to
    /// [`crate::db::spawn_checkpointer_with`].
    pub fn wal_stats(&self) -> std::sync::Arc<crate::db::WalStats> {
        self.wal.clone()
    }

    /// Folds recorded histogram samples into their buckets (run every [`UPKEEP_INTERVAL`] and
    /// before each scrape).
    pub fn upkeep(&self) {
        self.handle.run_upkeep();
    }

    /// The text exposition of every metric, after copying the fan-out engine's counters in.
    pub fn render(&self, fanout: &StatsSnapshot) -> String {
        let m = &self.fanout;
        m.connections.set(fanout.connections as f64);
        m.subscriptions.set(fanout.subscriptions as f64);
        m.streams.set(fanout.streams as f64);
        m.broadcasts.absolute(fanout.broadcasts);
        m.frames_queued.absolute(fanout.frames_queued);
        m.bytes_queued.absolute(fanout.bytes_queued);
        m.frames_sent.absolute(fanout.frames_written);
        m.bytes_sent.absolute(fanout.bytes_written);
        m.write_calls.absolute(fanout.write_syscalls);
        m.frames_compressed.absolute(fanout.frames_compressed);
        m.compressed_in.absolute(fanout.compressed_bytes_in);
        m.compressed_out.absolute(fanout.compressed_bytes_out);
        m.slow_disconnects.absolute(fanout.slow_disconnects);
        m.queue_depth_high_water
            .set(fanout.queue_depth_high_water as f64);
        m.queue_bytes_high_water
            .set(fanout.queue_bytes_high_water as f64);
        self.wal_bytes.set(self.wal.wal_bytes() as f64);
        self.checkpoint_lag.set(self.wal.lag_frames() as f64);
        self.checkpoint_age.set(self.wal.seconds_since_complete());
        self.wal_truncations.absolute(self.wal.truncations());
        self.wal_restarts.absolute(self.wal.restarts());
        self.upkeep();
        self.handle.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find(|l| l.split_once(' ').is_some_and(|(name, _)| name == series))
            .and_then(|l| l.rsplit_once(' '))
            .and_then(|(_, v)| v.parse().ok())
    }

    #[test]
    fn every_metric_shows_from_the_start_and_counts() {
        let m = Metrics::new();
        let text = m.render(&StatsSnapshot::default());
        assert_eq!(value(&text, "hearth_fanout_broadcasts_total"), Some(0.0));
        assert_eq!(
            value(&text, "hearth_messages_posted_total{source=\"web\"}"),
            Some(0.0)
        );
        assert!(
            text.contains("# TYPE hearth_post_duration_seconds histogram"),
            "{text}"
        );
        assert!(!text.contains(REDIS_LINK_UP), "{text}");

        m.post_finished(PostSource::Web, Duration::from_millis(3));
        m.broadcast_finished(Duration::from_micros(40));
        m.set_redis_link_up(true);
        let stats = StatsSnapshot {
            broadcasts: 7,
            frames_written: 5,
            frames_compressed: 3,
            compressed_bytes_in: 21_000,
            compressed_bytes_out: 6_000,
            ..Default::default()
        };
        let text = m.render(&stats);
        assert_eq!(
            value(&text, "hearth_fanout_frames_compressed_total"),
            Some(3.0)
        );
        assert_eq!(
            value(&text, "hearth_fanout_compressed_out_bytes_total"),
            Some(6000.0)
        );
        assert_eq!(value(&text, "hearth_fanout_broadcasts_total"), Some(7.0));
        assert_eq!(value(&text, "hearth_fanout_frames_sent_total"), Some(5.0));
        assert_eq!(
            value(&text, "hearth_messages_posted_total{source=\"web\"}"),
            Some(1.0)
        );
        assert_eq!(
            value(
                &text,
                "hearth_post_duration_seconds_bucket{source=\"web\",le=\"0.005\"}"
            ),
            Some(1.0)
        );
        assert_eq!(
            value(
                &text,
                "hearth_post_duration_seconds_bucket{source=\"web\",le=\"0.0025\"}"
            ),
            Some(0.0)
        );
        assert_eq!(
            value(&text, "hearth_broadcast_duration_seconds_count"),
            Some(1.0)
        );
        assert_eq!(value(&text, REDIS_LINK_UP), Some(1.0));
    }

    #[test]
    fn every_series_of_the_table_is_described_shown_and_documented() {
        let text = Metrics::new().render(&StatsSnapshot::default());
        let module_doc = include_str!("metrics.rs");
        for &(name, kind, _, help) in SERIES {
            let kind = format!("{kind:?}").to_lowercase();
            assert!(
                text.contains(&format!("# TYPE {name} {kind}\n")),
                "{name}:\n{text}"
            );
            assert!(
                text.contains(&format!("# HELP {name} {help}")),
                "{name}:\n{text}"
            );
            assert!(
                module_doc.lines().any(|l| l.starts_with("//! |")
                    && (l.contains(&format!("`{name}`")) || l.contains(&format!("`{name}{{")))),
                "{name} is missing from the module doc's table"
            );
        }
    }

    #[test]
    fn servers_keep_separate_counts() {
        let a = Metrics::new();
        let b = Metrics::new();
        a.connection_opened();
        let name = "hearth_cable_connections_opened_total";
        assert_eq!(value(&a.render(&StatsSnapshot::default()), name), Some(1.0));
        assert_eq!(value(&b.render(&StatsSnapshot::default()), name), Some(0.0));
    }
}
