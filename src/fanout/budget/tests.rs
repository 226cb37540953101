//! The budgets against real outboxes: what counts, who is cut first, what is given back.

use super::*;
use crate::fanout::queue::{Outbox, Push, State, RING_SLOTS};
use crate::fanout::QueueLimits;
use bytes::Bytes;

fn outbox(id: u64) -> Arc<Outbox> {
    Arc::new(Outbox::new(
        id,
        QueueLimits {
            max_frames: 1000,
            max_bytes: 1 << 30,
        },
    ))
}

#[test]
fn a_frame_shared_by_a_group_charges_each_member_its_share() {
    let ledger = ledger(6000, 6000);
    let members: Vec<Arc<Outbox>> = (1..=10).map(outbox).collect();
    for m in &members {
        ledger.enter(m, 7);
    }
    let frame = Bytes::from(vec![b'x'; 100]);
    for _ in 0..RING_SLOTS + 50 {
        for m in &members {
            assert!(matches!(m.push_shared_by(&frame, 10), Push::Queued { .. }));
        }
    }
    // 50 spilled frames, each a tenth charged to each of ten: 50 frames' worth.
    assert_eq!(ledger.used(), 5000);
    assert!(members.iter().all(|m| m.state() == State::Open));
}

fn ledger(user_bytes: usize, server_bytes: usize) -> Arc<Ledger> {
    Arc::new(Ledger::new(
        QueueBudgets {
            user_bytes,
            server_bytes,
        },
        Arc::default(),
    ))
}

#[test]
fn only_spilled_frames_count_and_the_users_heaviest_connection_is_cut_first() {
    let ledger = ledger(1000, 0);
    let (a, b) = (outbox(1), outbox(2));
    ledger.enter(&a, 7);
    ledger.enter(&b, 7);
    let frame = Bytes::from(vec![b'x'; 100]);
    for _ in 0..RING_SLOTS {
        assert!(matches!(a.push(&frame), Push::Queued { .. }));
        assert!(matches!(b.push(&frame), Push::Queued { .. }));
    }
    assert_eq!(
        ledger.used(),
        0,
        "a connection that keeps up holds no budget"
    );
    for _ in 0..6 {
        a.push(&frame);
    }
    for _ in 0..3 {
        b.push(&frame);
    }
    assert_eq!((a.charged(), b.charged(), ledger.used()), (600, 300, 900));
    // Past the user's budget: the heaviest (a) goes, b stays.
    a.push(&frame);
    assert_eq!(b.push(&frame), Push::Queued { bytes: 0 });
    assert_eq!(a.state(), State::TooSlow);
    assert_eq!(b.state(), State::Open);
    assert_eq!(ledger.used(), 400);
    // What b's writer writes gives its share back.
    while let Some(f) = b.pop() {
        b.release(f.len());
    }
    assert_eq!(ledger.used(), 0);
    ledger.leave(&*a);
    ledger.leave(&*b);
    assert!(ledger.accounts.lock().is_empty());
}

#[test]
fn the_server_budget_cuts_the_heaviest_connection_of_any_user() {
    let ledger = ledger(0, 1000);
    let (a, b, c) = (outbox(1), outbox(2), outbox(3));
    ledger.enter(&a, 1);
    ledger.enter(&b, 2);
    ledger.enter(&c, NO_OWNER);
    let frame = Bytes::from(vec![b'x'; 100]);
    for _ in 0..RING_SLOTS {
        for o in [&a, &b, &c] {
            o.push(&frame);
        }
    }
    for _ in 0..2 {
        a.push(&frame);
    }
    for _ in 0..5 {
        b.push(&frame);
    }
    for _ in 0..3 {
        c.push(&frame);
    }
    assert_eq!(ledger.used(), 1000);
    c.push(&frame);
    assert_eq!(b.state(), State::TooSlow);
    assert_eq!((a.state(), c.state()), (State::Open, State::Open));
    assert_eq!(ledger.used(), 600);
}

#[test]
fn long_frames_count_from_the_push_until_written() {
    let ledger = ledger(1 << 20, 0);
    let a = Arc::new(Outbox::new(
        1,
        QueueLimits {
            max_frames: 4,
            max_bytes: 4000,
        },
    ));
    ledger.enter(&a, 1);
    let long = Bytes::from(vec![b'x'; 1500]);
    a.push(&long);
    assert_eq!(ledger.used(), 1500);
    let f = a.pop().unwrap();
    assert_eq!(ledger.used(), 1500, "popped but not written yet");
    a.release(f.len());
    assert_eq!(ledger.used(), 0);
}

/// A writer's give-back can reach the ledger just before the charge it gives back (the
/// outbox counts a charge before the ledger does): for that instant the ledger reads below
/// zero. That must neither overflow (a panic in a debug build: it killed a cable node's
/// subscriber task and a connection's task in a chaos run) nor count as over budget (a
/// spurious cut-off in a release build).
#[test]
fn a_give_back_that_overtakes_its_charge_neither_overflows_nor_cuts_anyone_off() {
    let ledger = ledger(1000, 1000);
    let o = outbox(1);
    ledger.enter(&o, 7);
    let charge = o.charge_of().expect("charged");
    charge.sub(100);
    charge.add(100);
    assert_eq!(ledger.used(), 0);
    assert_eq!(o.state(), State::Open);
    charge.add(100);
    assert_eq!(ledger.used(), 100);
}

/// Plays the writer (another thread in the server) at the instant a push made its frame
/// reachable, before the push returned: takes every queued frame and gives it back as written.
fn write_everything(outbox: &Outbox) {
    while let Some(frame) = outbox.pop() {
        outbox.release(frame.len());
    }
}

#[test]
fn a_frame_written_before_its_push_returns_gives_its_whole_charge_back() {
    // Before, a push charged the budgets after the frame was in the ring or the overflow: a
    // writer that took and wrote it in between found nothing charged and gave nothing back,
    // and the charge stayed for the connection's life (one more frame's worth each time),
    // until the user's budget read as passed and cut a connection that keeps up.
    let ledger = ledger(1 << 20, 1 << 20);
    // 16 frames or 1,600 bytes: frames over 100 bytes are long (charged wherever they go).
    let a = Arc::new(Outbox::new(
        1,
        QueueLimits {
            max_frames: 16,
            max_bytes: 1600,
        },
    ));
    ledger.enter(&a, 7);
    crate::fanout::queue::AFTER_PUSH.with(|h| h.set(Some(write_everything)));
    let long = Bytes::from(vec![b'x'; 500]);
    for _ in 0..3 {
        assert!(matches!(a.push(&long), Push::Queued { .. }));
    }
    assert_eq!(
        (a.charged(), ledger.used()),
        (0, 0),
        "a long frame's charge"
    );
    // A short frame that spills (the ring full) is charged too: the same instant.
    crate::fanout::queue::AFTER_PUSH.with(|h| h.set(None));
    let short = Bytes::from(vec![b'y'; 50]);
    for _ in 0..RING_SLOTS {
        assert!(matches!(a.push(&short), Push::Queued { .. }));
    }
    assert_eq!(ledger.used(), 0, "frames in the ring are not charged");
    crate::fanout::queue::AFTER_PUSH.with(|h| h.set(Some(write_everything)));
    assert!(matches!(a.push(&short), Push::Queued { .. }));
    crate::fanout::queue::AFTER_PUSH.with(|h| h.set(None));
    assert_eq!(
        (a.charged(), ledger.used()),
        (0, 0),
        "a spilled frame's charge"
    );
    assert_eq!(a.state(), State::Open);
}
