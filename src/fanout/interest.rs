//! Which broadcastings this node has local subscribers for, and the moments that changes.
//!
//! A pub/sub adapter shared between nodes (Rails' Redis adapter does the same with
//! `SUBSCRIBE`/`UNSUBSCRIBE` in `subscription_adapter/redis.rb`) listens to a broadcasting only
//! while at least one local subscription wants it. [`Interest`] counts subscriptions per name
//! and reports [`InterestChange::Gained`] when a name's count goes from 0 to 1 and
//! [`InterestChange::Lost`] when it goes back to 0, in the order they happened, on an
//! unbounded channel (sending never waits). The broadcast path does not touch it.
//!
//! Names are broadcastings (stream names) and, for remote disconnects, a connection's
//! internal channel (`action_cable/<connection identifier>`).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::{Connection, Variant};

/// A change of this node's interest in a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InterestChange {
    /// The first local subscription to the name arrived.
    Gained(Arc<str>),
    /// The last local subscription to the name left.
    Lost(Arc<str>),
}

/// Subscription counts by name, with an optional listener for first/last changes.
#[derive(Debug, Default)]
pub struct Interest {
    counts: Mutex<HashMap<Arc<str>, usize>>,
    listener: Option<mpsc::UnboundedSender<InterestChange>>,
}

impl Interest {
    /// Neither counts nor tells anyone (one process holds every subscriber).
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts and reports every first/last change on the returned receiver.
    pub fn with_listener() -> (Self, mpsc::UnboundedReceiver<InterestChange>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self {
                counts: Mutex::new(HashMap::new()),
                listener: Some(tx),
            },
            rx,
        )
    }

    /// Whether first/last changes are reported to a listener.
    pub fn is_listened(&self) -> bool {
        self.listener.is_some()
    }

    /// One more local subscription to `name` (nothing is counted without a listener).
    pub fn add(&self, name: &str) {
        if self.listener.is_none() {
            return;
        }
        let mut counts = self.counts.lock();
        if let Some(n) = counts.get_mut(name) {
            *n += 1;
            return;
        }
        let name: Arc<str> = name.into();
        counts.insert(name.clone(), 1);
        if let Some(tx) = &self.listener {
            // Sent under the lock so that changes of one name arrive in order.
            let _ = tx.send(InterestChange::Gained(name));
        }
    }

    /// One local subscription to `name` fewer (a name never added is ignored).
    pub fn remove(&self, name: &str) {
        if self.listener.is_none() {
            return;
        }
        let mut counts = self.counts.lock();
        let Some(n) = counts.get_mut(name) else {
            return;
        };
        *n -= 1;
        if *n > 0 {
            return;
        }
        if let Some((name, _)) = counts.remove_entry(name) {
            if let Some(tx) = &self.listener {
                let _ = tx.send(InterestChange::Lost(name));
            }
        }
    }

    /// Local subscriptions to `name` right now (0 without a listener).
    pub fn count(&self, name: &str) -> usize {
        self.counts.lock().get(name).copied().unwrap_or(0)
    }

    /// Subscribes `conn` to `stream` in the engine and counts it.
    pub fn subscribe(&self, conn: &Connection, stream: &str, variant: &Variant) {
        conn.subscribe(stream, variant);
        self.add(stream);
    }

    /// Unsubscribes `conn`'s `variant_key` from `stream` in the engine and counts it.
    pub fn unsubscribe(&self, conn: &Connection, stream: &str, variant_key: &str) {
        conn.unsubscribe(stream, variant_key);
        self.remove(stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_first_and_last_only_in_order() {
        let (interest, mut rx) = Interest::with_listener();
        interest.add("a");
        interest.add("a");
        interest.add("b");
        interest.remove("a");
        interest.remove("a");
        interest.remove("a");
        interest.remove("never");
        let mut seen = Vec::new();
        while let Ok(change) = rx.try_recv() {
            seen.push(change);
        }
        assert_eq!(
            seen,
            vec![
                InterestChange::Gained("a".into()),
                InterestChange::Gained("b".into()),
                InterestChange::Lost("a".into()),
            ]
        );
        assert_eq!(interest.count("b"), 1);
        assert_eq!(interest.count("a"), 0);
    }
}
