//! Stream positions and history with several nodes: assigned in Redis, read from Redis, so a
//! client that reconnects to another node is answered in the same numbering.
//!
//! The publish script ([`super::log::PUBLISH_SCRIPT`]) gives each broadcast on a stream that
//! keeps history its position, atomically with the broadcast:
//!
//! - the **epoch** is `<prefix>:hearth/epoch` (set once by the first publish; a Redis that
//!   lost its data starts a new one, so every older position reads as gone);
//! - the **offset** is `HINCRBY <prefix>:hearth/offsets <stream> 1`: 1, 2, 3… per stream;
//! - the **entry**, for a stream that keeps its entries ([`crate::streams::Retention`]), goes
//!   to the Redis Stream `<prefix>:hearth/h/<stream>` under id
//!   `<offset>-0` with its time (`t`, Unix seconds) and payload (`p`), capped at
//!   `--history-limit` entries and expiring `--history-ttl` seconds after the stream's last
//!   broadcast;
//! - the marker every node hears carries the epoch and offset, so each node stamps the same
//!   position on its subscribers' frames and keeps each stream's head ([`Heads`]) for
//!   [`History::head`], which must not wait.
//!
//! [`RedisHistory::read`] asks Redis; when Redis does not answer, the history is reported as
//! gone (the client is told it missed something), never as empty.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use parking_lot::Mutex;

use crate::history::{unix_now, Backlog, Entry, History, Position, Since};

/// The epoch and each stream's newest offset, as the markers tell them.
#[derive(Debug, Default)]
pub struct Heads {
    epoch: Mutex<Arc<str>>,
    heads: Mutex<HashMap<Box<str>, u64>>,
}

impl Heads {
    /// A marker said `stream` is at `offset` of `epoch`.
    pub fn saw(&self, epoch: &str, stream: &str, offset: u64) {
        {
            let mut current = self.epoch.lock();
            if **current != *epoch {
                *current = epoch.into();
                self.heads.lock().clear();
            }
        }
        let mut heads = self.heads.lock();
        match heads.get_mut(stream) {
            Some(head) => *head = (*head).max(offset),
            None => {
                heads.insert(stream.into(), offset);
            }
        }
    }
}

/// The Redis-backed [`History`] of `--pubsub redis` nodes (see the module docs).
#[derive(Clone)]
pub struct RedisHistory {
    pub(super) heads: Arc<Heads>,
    manager: redis::aio::ConnectionManager,
    epoch_key: String,
    offsets_key: String,
    /// `<prefix>:hearth/h/`: a stream's history key is this plus its name.
    key_prefix: String,
    ttl: Duration,
}

impl std::fmt::Debug for RedisHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisHistory")
            .field("key_prefix", &self.key_prefix)
            .finish_non_exhaustive()
    }
}

/// How long a history read may wait for Redis.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

impl RedisHistory {
    /// The history under `prefix` (`"<channel_prefix>:"` or empty) on `manager`'s Redis.
    pub(super) fn new(
        manager: redis::aio::ConnectionManager,
        prefix: &str,
        ttl: Duration,
        heads: Arc<Heads>,
    ) -> Self {
        Self {
            heads,
            manager,
            epoch_key: format!("{prefix}hearth/epoch"),
            offsets_key: format!("{prefix}hearth/offsets"),
            key_prefix: format!("{prefix}hearth/h/"),
            ttl,
        }
    }

    /// The keys the publish script needs: the epoch, the offsets and the history prefix.
    pub(super) fn keys(&self) -> (&str, &str, &str) {
        (&self.epoch_key, &self.offsets_key, &self.key_prefix)
    }

    async fn read_redis(&self, stream: &str, since: &Since) -> redis::RedisResult<Backlog> {
        let mut conn = self.manager.clone();
        let (epoch, head): (Option<String>, Option<u64>) = redis::pipe()
            .cmd("GET")
            .arg(&self.epoch_key)
            .cmd("HGET")
            .arg(&self.offsets_key)
            .arg(stream)
            .query_async(&mut conn)
            .await?;
        let epoch = epoch.unwrap_or_default();
        let head = head.unwrap_or(0);
        let key = format!("{}{stream}", self.key_prefix);
        let oldest = unix_now().saturating_sub(self.ttl.as_secs());
        let (start, after) = match since {
            Since::Offset {
                epoch: wanted,
                offset,
            } => {
                if *wanted != epoch || *offset > head {
                    return Ok(Backlog::Gone);
                }
                if *offset == head {
                    return Ok(Backlog::Entries(Vec::new()));
                }
                (format!("({offset}-0"), Some(*offset))
            }
            Since::Time(_) => ("-".to_owned(), None),
        };
        let raw: Vec<(String, Vec<Vec<u8>>)> = redis::cmd("XRANGE")
            .arg(&key)
            .arg(start)
            .arg("+")
            .query_async(&mut conn)
            .await?;
        let mut entries = Vec::with_capacity(raw.len());
        for (id, fields) in raw {
            let Some(offset) = id.split_once('-').and_then(|(o, _)| o.parse().ok()) else {
                continue;
            };
            let (mut at, mut payload) = (0, None);
            for pair in fields.chunks_exact(2) {
                match &pair[0][..] {
                    b"t" => {
                        at = std::str::from_utf8(&pair[1])
                            .ok()
                            .and_then(|t| t.parse().ok())
                            .unwrap_or(0);
                    }
                    b"p" => payload = Some(Bytes::copy_from_slice(&pair[1])),
                    _ => {}
                }
            }
            let Some(payload) = payload else { continue };
            entries.push(Entry {
                offset,
                at,
                payload,
            });
        }
        match (since, after) {
            (Since::Offset { .. }, Some(after)) => {
                // Every entry after the reader's offset must still be there, and fresh.
                let covered = entries
                    .first()
                    .is_some_and(|e| e.offset == after + 1 && e.at >= oldest);
                if !covered {
                    return Ok(Backlog::Gone);
                }
                Ok(Backlog::Entries(entries))
            }
            (Since::Time(t), _) => {
                entries.retain(|e| e.at >= *t && e.at >= oldest);
                Ok(Backlog::Entries(entries))
            }
            _ => Ok(Backlog::Gone),
        }
    }
}

impl History for RedisHistory {
    fn epoch(&self) -> Arc<str> {
        self.heads.epoch.lock().clone()
    }

    /// Positions are assigned in Redis, by the publish script: nothing here.
    fn append(&self, _stream: &str, _entry: Option<&Bytes>, _now: u64) -> Option<Position> {
        None
    }

    /// Redis holds the entry already (the publish script wrote it).
    fn record(&self, stream: &str, position: &Position, _payload: &Bytes) {
        self.heads.saw(&position.epoch, stream, position.offset);
    }

    fn head(&self, stream: &str) -> Position {
        let epoch = self.epoch();
        let offset = self.heads.heads.lock().get(stream).copied().unwrap_or(0);
        Position { epoch, offset }
    }

    fn read<'a>(&'a self, stream: &'a str, since: &'a Since) -> BoxFuture<'a, Backlog> {
        Box::pin(async move {
            match tokio::time::timeout(READ_TIMEOUT, self.read_redis(stream, since)).await {
                Ok(Ok(backlog)) => backlog,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, stream, "history read from Redis failed");
                    Backlog::Gone
                }
                Err(_) => {
                    tracing::warn!(stream, "history read from Redis timed out");
                    Backlog::Gone
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_follow_markers_and_a_new_epoch_forgets_them() {
        let heads = Heads::default();
        heads.saw("e1", "s", 3);
        heads.saw("e1", "s", 2);
        heads.saw("e1", "t", 1);
        assert_eq!(heads.heads.lock().get("s"), Some(&3));
        heads.saw("e2", "t", 1);
        assert_eq!(heads.heads.lock().get("s"), None);
        assert_eq!(&**heads.epoch.lock(), "e2");
    }
}
