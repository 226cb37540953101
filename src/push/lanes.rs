//! Fair shares of the push sender's slots: one lane per user and one per push service
//! (origin), so that one user's or one push service's slow endpoints hold only their own
//! lane's slots and never the slots another user's pushes need.
//!
//! A delivery first [`Lanes::join`]s its user's and its origin's lanes (each lane bounds how
//! many deliveries may wait in it; a full lane refuses, and the caller drops the delivery), then,
//! for each request it sends, takes one slot of each lane and one of the sender's whole (in
//! that order, so a global slot is only ever held by a request being sent). Between tries it
//! holds no slot at all.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The lanes of one kind of key (user ids, origins).
#[derive(Debug)]
pub struct Lanes<K> {
    slots_per_lane: usize,
    waiting_per_lane: usize,
    lanes: Mutex<HashMap<K, Lane>>,
}

#[derive(Debug)]
struct Lane {
    slots: Arc<Semaphore>,
    members: usize,
}

/// A delivery's place in one lane, from [`Lanes::join`] until dropped.
#[derive(Debug)]
pub struct Place<K: Hash + Eq + Clone> {
    lanes: Arc<Lanes<K>>,
    key: K,
    slots: Arc<Semaphore>,
}

impl<K: Hash + Eq + Clone> Lanes<K> {
    /// Lanes of `slots_per_lane` requests in flight at once and at most `waiting_per_lane`
    /// deliveries (in flight, waiting for a slot, or between tries) each.
    pub fn new(slots_per_lane: usize, waiting_per_lane: usize) -> Arc<Self> {
        Arc::new(Self {
            slots_per_lane,
            waiting_per_lane,
            lanes: Mutex::new(HashMap::new()),
        })
    }

    /// A place in `key`'s lane; `None` when the lane has `waiting_per_lane` deliveries
    /// already.
    pub fn join(self: &Arc<Self>, key: K) -> Option<Place<K>> {
        let mut lanes = self.lanes.lock();
        let lane = lanes.entry(key.clone()).or_insert_with(|| Lane {
            slots: Arc::new(Semaphore::new(self.slots_per_lane)),
            members: 0,
        });
        if lane.members >= self.waiting_per_lane {
            return None;
        }
        lane.members += 1;
        Some(Place {
            lanes: self.clone(),
            key,
            slots: lane.slots.clone(),
        })
    }

    /// How many lanes have a delivery in them (for tests).
    pub fn busy(&self) -> usize {
        self.lanes.lock().len()
    }
}

impl<K: Hash + Eq + Clone> Place<K> {
    /// One of the lane's slots, waiting (first come, first served) while all are taken.
    pub async fn slot(&self) -> OwnedSemaphorePermit {
        self.slots
            .clone()
            .acquire_owned()
            .await
            .expect("a lane's semaphore is never closed")
    }
}

impl<K: Hash + Eq + Clone> Drop for Place<K> {
    fn drop(&mut self) {
        let mut lanes = self.lanes.lanes.lock();
        if let Some(lane) = lanes.get_mut(&self.key) {
            lane.members -= 1;
            if lane.members == 0 {
                lanes.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_lane_refuses_and_an_empty_one_is_forgotten() {
        let lanes = Lanes::new(2, 3);
        let places: Vec<_> = (0..3).map(|_| lanes.join(7).expect("room")).collect();
        assert!(lanes.join(7).is_none(), "the fourth waits in a full lane");
        let other = lanes.join(8).expect("another key has its own lane");
        assert_eq!(lanes.busy(), 2);
        drop(places);
        drop(other);
        assert_eq!(lanes.busy(), 0);
        assert!(lanes.join(7).is_some());
    }

    #[tokio::test]
    async fn a_lane_hands_out_its_slots_only() {
        let lanes = Lanes::new(2, 10);
        let (a, b, c) = (
            lanes.join(1).unwrap(),
            lanes.join(1).unwrap(),
            lanes.join(1).unwrap(),
        );
        let _one = a.slot().await;
        let _two = b.slot().await;
        let third = tokio::time::timeout(std::time::Duration::from_millis(50), c.slot()).await;
        assert!(third.is_err(), "a lane of 2 gave a third slot");
        let other = lanes.join(2).unwrap();
        let _free = tokio::time::timeout(std::time::Duration::from_millis(50), other.slot())
            .await
            .expect("another lane's slot is free");
    }
}
