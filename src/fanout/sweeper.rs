//! A writer thread's sweeper: one task that writes every woken connection's socket in turn.
//!
//! A pass that reaches a thousand connections used to wake a thousand writer tasks, each
//! scheduled, polled and re-registered on its `Notify` around one `writev`. The sweeper
//! takes the pass's wake-ups as one list ([`WakeList`]) and walks it: for each outbox it finds
//! the connection's [`Slot`](super::writer::Slot) on this thread and drains it inline with one vectored write, so
//! the per-connection cost is a hash lookup and the syscall. A connection with more queued
//! than one write takes goes to the back of the round (every connection gets its first bytes
//! before any gets its second write). Only the exceptions go to the connection's own task:
//! a full socket (the task waits for writability and drains until it has caught up), a failed
//! write, a state change (close, cut-off, abort: the task already got its own wake-up), or a
//! connection whose task has not listed its slot yet.

use std::collections::VecDeque;
use std::sync::Arc;

use super::queue::{Outbox, State, WakeList};
use super::writer::{self, Step};

/// Connections visited between two checks of the task budget, so a long round lets the
/// runtime's timers, I/O events and the connections' own tasks in.
const VISITS_PER_BUDGET_CHECK: usize = 32;

/// Slots of round storage kept while the sweeper sleeps (8 bytes each): enough for a pass to
/// 16,384 connections without reallocating on every post; a bigger round's storage is given
/// back.
const KEPT_SLOTS: usize = 16_384;

/// Runs the sweeper of `list` until the runtime stops (the writer thread is dropped).
pub(crate) async fn sweep(list: Arc<WakeList>) {
    let mut round: VecDeque<Arc<Outbox>> = VecDeque::new();
    let mut arrived: Vec<Arc<Outbox>> = Vec::new();
    loop {
        list.take(&mut arrived);
        round.extend(arrived.drain(..));
        if round.is_empty() {
            // Give back a big round's storage before sleeping.
            round.shrink_to(KEPT_SLOTS);
            arrived.shrink_to(KEPT_SLOTS);
            list.notified().await;
            continue;
        }
        for visit in 0..round.len() {
            let Some(outbox) = round.pop_front() else {
                break;
            };
            if visit_one(&outbox) {
                round.push_back(outbox);
            }
            if visit % VISITS_PER_BUDGET_CHECK == VISITS_PER_BUDGET_CHECK - 1 {
                tokio::task::consume_budget().await;
            }
        }
        tokio::task::consume_budget().await;
    }
}

/// Drains one woken outbox with one vectored write. Returns true when it has more queued
/// (the caller visits it again later in the round).
fn visit_one(outbox: &Arc<Outbox>) -> bool {
    if outbox.state() != State::Open {
        // Close, cut-off and abort wake the connection's own task themselves.
        return false;
    }
    let Some(slot) = writer::slot(outbox.id()) else {
        // The connection's task has not started (or has just ended): it drains itself first
        // thing when it starts, so this wake-up is its.
        outbox.wake_owner();
        return false;
    };
    if slot.is_parked() {
        // The task owns the drain while the socket is full; it will find this frame.
        return false;
    }
    match slot.drain(outbox, 1) {
        Step::Idle => false,
        Step::More => true,
        Step::Blocked | Step::Failed => {
            outbox.wake_owner();
            false
        }
    }
}
