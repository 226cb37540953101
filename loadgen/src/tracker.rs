//! Message accounting: which post reached which client, when, in what order.
//!
//! Every post carries a unique `client_message_id` token `lg<run>x<seq>`, where `<run>` is a
//! random tag per cell and `<seq>` is the post's sequence number in exactly [`SEQ_WIDTH`]
//! decimal digits. Campfire renders that id into the broadcast
//! (`<div id="message_<client_message_id>" ...>` in `messages/_message.html.erb`), so a client
//! recognises its messages with one substring search of the frame payload for `lg<run>x`
//! followed by a fixed-width number: no JSON or HTML parsing.
//!
//! The [`Tracker`] keeps, per message, the send instant, the poster, the receipt count and the
//! first receipt; per client, a bitset of sequence numbers seen (duplicates), the last sequence
//! per poster (order: a poster sends its next message only after the previous response, so its
//! messages must reach each client in its own order) and its position in a reference order
//! (the first client to reach position k fixes what every client's k-th message is expected
//! to be; a client that differs is *divergent*, which is informational: posts sent at the
//! same moment by different posters may interleave differently per client).
//!
//! A message is *complete* when every client that was ready when posting began received it
//! exactly once. The number of registered-but-incomplete messages drives the posters' window.

use crate::stats::{Latency, LatencySummary};
use std::time::{Duration, Instant};

/// Digits of the sequence number in a token.
pub const SEQ_WIDTH: usize = 8;

/// The token scheme of one cell: `lg<run>x` plus a zero-padded sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenScheme {
    prefix: String,
}

impl TokenScheme {
    /// A scheme for run tag `run` (ASCII letters and digits).
    pub fn new(run: &str) -> Self {
        Self {
            prefix: format!("lg{run}x"),
        }
    }

    /// A scheme with a random 6-character lowercase run tag, so tokens from an earlier run
    /// (still in the seed database or a server's cache) never match.
    pub fn random() -> Self {
        const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwyz23456789";
        let bytes: [u8; 6] = rand::random();
        let run: String = bytes
            .iter()
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
            .collect();
        Self::new(&run)
    }

    /// The run tag, `<run>` of `lg<run>x`.
    pub fn run_tag(&self) -> &str {
        &self.prefix[2..self.prefix.len() - 1]
    }

    /// The searched prefix, `lg<run>x`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The token for `seq`, e.g. `lgab12cdx00000042`.
    pub fn token(&self, seq: u32) -> String {
        format!("{}{seq:0width$}", self.prefix, width = SEQ_WIDTH)
    }

    /// Reads the sequence number from the [`SEQ_WIDTH`] bytes that follow a prefix match;
    /// `None` if they are not all digits.
    #[inline]
    pub fn parse_seq(after_prefix: &[u8]) -> Option<u32> {
        let digits = after_prefix.get(..SEQ_WIDTH)?;
        let mut v: u32 = 0;
        for &d in digits {
            if !d.is_ascii_digit() {
                return None;
            }
            v = v.wrapping_mul(10).wrapping_add((d - b'0') as u32);
        }
        Some(v)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PostState {
    InFlight,
    Posted,
    Failed,
}

#[derive(Debug, Clone)]
struct Message {
    sent: Instant,
    poster: u32,
    receipts: u32,
    state: PostState,
    complete: bool,
    last: Option<Instant>,
    first: Option<Instant>,
    answered: Option<Instant>,
    wire: Wire,
}

/// When a post's request left and its answer came back, as its HTTP connection saw them
/// ([`crate::http::Response::wrote`], [`crate::http::Response::first_byte`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wire {
    /// The request's last write to the socket.
    pub wrote: Option<Instant>,
    /// The first read of the answer.
    pub first_byte: Option<Instant>,
}

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Default)]
struct ClientRecv {
    seen: Vec<u64>,
    last_by_poster: Vec<u32>,
    position: usize,
    divergent: bool,
    receipts: u64,
}

/// What one receipt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receipt {
    /// A first receipt by this client.
    Counted,
    /// A first receipt that completed the message (every expected client has it).
    Completed,
    /// This client already had this message.
    Duplicate,
    /// No such message was registered (a stale token or a corrupt frame).
    Unknown,
}

/// Message and receipt accounting for one cell; see the module docs.
#[derive(Debug)]
pub struct Tracker {
    expected: u32,
    posters: usize,
    messages: Vec<Message>,
    clients: Vec<ClientRecv>,
    reference: Vec<u32>,
    undelivered: usize,
    posted: u64,
    post_errors: u64,
    receipts: u64,
    duplicates: u64,
    out_of_order: u64,
    divergent_clients: u64,
    unknown: u64,
    matched_bytes: u64,
    first_sent: Option<Instant>,
    last_receipt: Option<Instant>,
    post: Latency,
    first: Latency,
    all: Latency,
    each: Latency,
}

/// One message of a [`Tracker`], as [`Tracker::messages`] lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageRecord {
    /// Its sequence number.
    pub seq: u32,
    /// When its post was sent.
    pub sent: Instant,
    /// Whether its post was answered with a valid response.
    pub posted: bool,
    /// Clients that received it (first receipts).
    pub receipts: u32,
    /// The latest first receipt by any client.
    pub last_receipt: Option<Instant>,
    /// The first client's receipt.
    pub first_receipt: Option<Instant>,
    /// When its valid answer was read and checked.
    pub answered: Option<Instant>,
    /// When the request's last write to the socket returned.
    pub wrote: Option<Instant>,
    /// When the first bytes of its answer were read.
    pub first_byte: Option<Instant>,
}

/// A snapshot of a [`Tracker`]'s counters and latencies.
#[derive(Debug, Clone)]
pub struct TrackerSummary {
    /// Clients every message must reach.
    pub expected_clients: u32,
    /// Messages whose post was sent.
    pub registered: u64,
    /// Posts answered with a valid response.
    pub posted: u64,
    /// Posts that failed (transport error or invalid response).
    pub post_errors: u64,
    /// Posted messages that reached every expected client.
    pub complete: u64,
    /// First receipts of any message by any client (duplicates excluded).
    pub receipts: u64,
    /// Receipts of a message a client already had.
    pub duplicates: u64,
    /// Receipts that arrived before a message the same poster sent earlier.
    pub out_of_order: u64,
    /// Clients whose receive order differs from the reference order.
    pub divergent_clients: u64,
    /// Frames with the run's prefix but an unregistered sequence number.
    pub unknown: u64,
    /// Sum of payload bytes of matched frames.
    pub matched_bytes: u64,
    /// When the first post was sent.
    pub first_sent: Option<Instant>,
    /// When the last first-receipt arrived.
    pub last_receipt: Option<Instant>,
    /// HTTP round trip of successful posts.
    pub post: LatencySummary,
    /// Post sent → first client received.
    pub to_first: LatencySummary,
    /// Post sent → every expected client received.
    pub to_all: LatencySummary,
    /// Post sent → each receipt (one sample per client per message).
    pub to_each: LatencySummary,
}

impl Tracker {
    /// A tracker for `clients` client slots and `posters` posters; messages must reach
    /// `expected` clients (the ones ready when posting starts).
    pub fn new(clients: usize, expected: u32, posters: usize) -> Self {
        Self {
            expected,
            posters,
            messages: Vec::new(),
            clients: vec![ClientRecv::default(); clients],
            reference: Vec::new(),
            undelivered: 0,
            posted: 0,
            post_errors: 0,
            receipts: 0,
            duplicates: 0,
            out_of_order: 0,
            divergent_clients: 0,
            unknown: 0,
            matched_bytes: 0,
            first_sent: None,
            last_receipt: None,
            post: Latency::new(),
            first: Latency::new(),
            all: Latency::new(),
            each: Latency::new(),
        }
    }

    /// Sets the number of clients every message must reach.
    pub fn set_expected(&mut self, expected: u32) {
        self.expected = expected;
    }

    /// Registers a message about to be sent by `poster` at `now`; returns its sequence number.
    pub fn register(&mut self, poster: usize, now: Instant) -> u32 {
        let seq = self.messages.len() as u32;
        self.messages.push(Message {
            sent: now,
            poster: poster as u32,
            receipts: 0,
            state: PostState::InFlight,
            complete: false,
            last: None,
            first: None,
            answered: None,
            wire: Wire::default(),
        });
        self.first_sent.get_or_insert(now);
        self.undelivered += 1;
        seq
    }

    /// Records a post's outcome: `Ok(round trip)` for a valid response, `Err(())` for a failure
    /// (the message then no longer counts as undelivered).
    pub fn post_result(&mut self, seq: u32, result: Result<Duration, ()>) {
        self.post_result_on_wire(seq, result, Wire::default());
    }

    /// [`Tracker::post_result`], with when the request left and its answer came back.
    pub fn post_result_on_wire(&mut self, seq: u32, result: Result<Duration, ()>, wire: Wire) {
        let Some(m) = self.messages.get_mut(seq as usize) else {
            return;
        };
        m.wire = wire;
        match result {
            Ok(rtt) => {
                m.answered = Some(m.sent + rtt);
                m.state = PostState::Posted;
                self.posted += 1;
                self.post.record(rtt);
            }
            Err(()) => {
                m.state = PostState::Failed;
                self.post_errors += 1;
                if !m.complete {
                    self.undelivered -= 1;
                }
            }
        }
    }

    /// Records that `client` received message `seq` at `at` in a frame of `bytes` bytes.
    #[inline]
    pub fn receipt(&mut self, client: usize, seq: u32, at: Instant, bytes: usize) -> Receipt {
        let Some(m) = self.messages.get_mut(seq as usize) else {
            self.unknown += 1;
            return Receipt::Unknown;
        };
        let Some(c) = self.clients.get_mut(client) else {
            self.unknown += 1;
            return Receipt::Unknown;
        };
        let word = seq as usize / 64;
        let bit = 1u64 << (seq % 64);
        if c.seen.len() <= word {
            c.seen.resize(word + 1, 0);
        }
        if c.seen[word] & bit != 0 {
            self.duplicates += 1;
            return Receipt::Duplicate;
        }
        c.seen[word] |= bit;
        c.receipts += 1;

        if c.last_by_poster.is_empty() {
            c.last_by_poster = vec![NONE; self.posters.max(1)];
        }
        let p = (m.poster as usize).min(c.last_by_poster.len() - 1);
        let last = c.last_by_poster[p];
        if last != NONE && seq < last {
            self.out_of_order += 1;
        } else {
            c.last_by_poster[p] = seq;
        }

        if c.position == self.reference.len() {
            self.reference.push(seq);
        } else if !c.divergent && self.reference[c.position] != seq {
            c.divergent = true;
            self.divergent_clients += 1;
        }
        c.position += 1;

        self.receipts += 1;
        self.matched_bytes += bytes as u64;
        self.last_receipt = Some(at);
        let latency = at.saturating_duration_since(m.sent);
        self.each.record(latency);
        m.receipts += 1;
        m.last = Some(at);
        if m.receipts == 1 {
            m.first = Some(at);
            self.first.record(latency);
        }
        if m.receipts == self.expected && !m.complete {
            m.complete = true;
            self.all.record(latency);
            if m.state != PostState::Failed {
                self.undelivered -= 1;
            }
            return Receipt::Completed;
        }
        Receipt::Counted
    }

    /// Messages registered and not failed that have not yet reached every expected client.
    pub fn undelivered(&self) -> usize {
        self.undelivered
    }

    /// Messages registered so far.
    pub fn registered(&self) -> usize {
        self.messages.len()
    }

    /// Posts still waiting for their HTTP response.
    pub fn in_flight_posts(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| m.state == PostState::InFlight)
            .count()
    }

    /// Every registered message in sequence order: when it was sent, whether its post was
    /// answered with a valid response, how many clients have it, its first and last receipt
    /// so far, and when its request was written, its answer's first byte read and its answer
    /// checked ([`MessageRecord`]).
    pub fn messages(&self) -> impl Iterator<Item = MessageRecord> + '_ {
        self.messages
            .iter()
            .enumerate()
            .map(|(seq, m)| MessageRecord {
                seq: seq as u32,
                sent: m.sent,
                posted: m.state == PostState::Posted,
                receipts: m.receipts,
                last_receipt: m.last,
                first_receipt: m.first,
                answered: m.answered,
                wrote: m.wire.wrote,
                first_byte: m.wire.first_byte,
            })
    }

    /// The counters and latency summaries so far.
    pub fn summary(&self) -> TrackerSummary {
        let complete = self
            .messages
            .iter()
            .filter(|m| m.complete && m.state == PostState::Posted)
            .count() as u64;
        TrackerSummary {
            expected_clients: self.expected,
            registered: self.messages.len() as u64,
            posted: self.posted,
            post_errors: self.post_errors,
            complete,
            receipts: self.receipts,
            duplicates: self.duplicates,
            out_of_order: self.out_of_order,
            divergent_clients: self.divergent_clients,
            unknown: self.unknown,
            matched_bytes: self.matched_bytes,
            first_sent: self.first_sent,
            last_receipt: self.last_receipt,
            post: self.post.summary(),
            to_first: self.first.summary(),
            to_all: self.all.summary(),
            to_each: self.each.summary(),
        }
    }
}

/// Receipt accounting of a listen-only process (`loadgen run --listen-only`): its clients
/// receive the posts another process makes, so no message is registered here. Per client, a
/// bitset of the sequence numbers seen and one of those seen more than once; per sequence number, how many
/// clients have it and its first and last receipt. Which posts every client must hold is
/// learnt only at the end (the poster's posts file), and [`ListenTracker::check`] then counts
/// each of them once per client: held, missing or duplicated.
#[derive(Debug)]
pub struct ListenTracker {
    clients: Vec<ListenClient>,
    seqs: Vec<SeqRecv>,
    max_seq: u32,
    unknown: u64,
}

#[derive(Debug, Clone, Default)]
struct ListenClient {
    seen: Vec<u64>,
    /// Sequence numbers received more than once (allocated on the first duplicate).
    repeated: Vec<u64>,
}

#[derive(Debug, Clone, Copy, Default)]
struct SeqRecv {
    receipts: u32,
    duplicates: u32,
    first: Option<Instant>,
    last: Option<Instant>,
}

/// What every client of a listen-only process holds of a list of posts
/// ([`ListenTracker::check`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListenCheck {
    /// Posts checked.
    pub posts: u64,
    /// Client slots (connected or not).
    pub clients: u64,
    /// posts × clients.
    pub expected: u64,
    /// Client × post pairs held (first receipts of the listed posts).
    pub delivered: u64,
    /// expected − delivered.
    pub missing: u64,
    /// Receipts of a listed post by a client that already had it.
    pub duplicated: u64,
    /// Clients that hold every listed post, each exactly once.
    pub clients_complete: u64,
    /// First receipts of sequence numbers that are not in the list (failed posts, or posts
    /// the list does not name), and tokens past the tracker's range.
    pub extra: u64,
    /// Per listed post, in list order: its first and last receipt by any client here.
    pub times: Vec<(Option<Instant>, Option<Instant>)>,
}

impl ListenTracker {
    /// A tracker for `clients` client slots; sequence numbers at or above `max_seq` are
    /// counted as unknown and not kept (memory stays bounded whatever a server sends).
    pub fn new(clients: usize, max_seq: u32) -> Self {
        Self {
            clients: vec![ListenClient::default(); clients],
            seqs: Vec::new(),
            max_seq,
            unknown: 0,
        }
    }

    /// Records that `client` received post `seq` at `at`: [`Receipt::Counted`] for its first
    /// receipt, [`Receipt::Duplicate`] for a repeat, [`Receipt::Unknown`] for a client slot or
    /// sequence number out of range. (Never [`Receipt::Completed`]: completion is only known
    /// against the list of posts.)
    #[inline]
    pub fn receipt(&mut self, client: usize, seq: u32, at: Instant) -> Receipt {
        if seq >= self.max_seq {
            self.unknown += 1;
            return Receipt::Unknown;
        }
        let Some(c) = self.clients.get_mut(client) else {
            self.unknown += 1;
            return Receipt::Unknown;
        };
        let s = seq as usize;
        if self.seqs.len() <= s {
            self.seqs.resize(s + 1, SeqRecv::default());
        }
        let r = &mut self.seqs[s];
        let (word, bit) = (s / 64, 1u64 << (s % 64));
        if c.seen.len() <= word {
            c.seen.resize(word + 1, 0);
        }
        if c.seen[word] & bit != 0 {
            if c.repeated.len() <= word {
                c.repeated.resize(word + 1, 0);
            }
            c.repeated[word] |= bit;
            r.duplicates += 1;
            return Receipt::Duplicate;
        }
        c.seen[word] |= bit;
        r.receipts += 1;
        r.first.get_or_insert(at);
        r.last = Some(at);
        Receipt::Counted
    }

    /// Client × post pairs of `posts` not yet held (0: every client has every post).
    pub fn missing(&self, posts: &[u32]) -> u64 {
        let n = self.clients.len() as u64;
        posts
            .iter()
            .map(|&s| n - self.seqs.get(s as usize).map_or(0, |r| r.receipts as u64))
            .sum()
    }

    /// Counts, for every client and every post of `posts` (sequence numbers, each listed
    /// once), whether the client holds it once, not at all, or more than once.
    pub fn check(&self, posts: &[u32]) -> ListenCheck {
        let listed: std::collections::HashSet<u32> = posts.iter().copied().collect();
        let mut out = ListenCheck {
            posts: posts.len() as u64,
            clients: self.clients.len() as u64,
            expected: posts.len() as u64 * self.clients.len() as u64,
            extra: self.unknown,
            ..Default::default()
        };
        for &s in posts {
            let r = self.seqs.get(s as usize).copied().unwrap_or_default();
            out.delivered += r.receipts as u64;
            out.duplicated += r.duplicates as u64;
            out.times.push((r.first, r.last));
        }
        for (s, r) in self.seqs.iter().enumerate() {
            if !listed.contains(&(s as u32)) {
                out.extra += r.receipts as u64;
            }
        }
        out.missing = out.expected - out.delivered;
        out.clients_complete = self
            .clients
            .iter()
            .filter(|c| {
                posts
                    .iter()
                    .all(|&s| has_bit(&c.seen, s) && !has_bit(&c.repeated, s))
            })
            .count() as u64;
        out
    }
}

/// Whether bit `s` is set in `bits`.
fn has_bit(bits: &[u64], s: u32) -> bool {
    bits.get(s as usize / 64)
        .is_some_and(|w| w & (1u64 << (s % 64)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fixed_width_and_parse_back() {
        let t = TokenScheme::new("ab12");
        assert_eq!(t.token(42), "lgab12x00000042");
        assert_eq!(t.run_tag(), "ab12");
        let tok = t.token(12_345_678);
        let after = &tok.as_bytes()[t.prefix().len()..];
        assert_eq!(TokenScheme::parse_seq(after), Some(12_345_678));
        assert_eq!(TokenScheme::parse_seq(b"0000004"), None, "too short");
        assert_eq!(TokenScheme::parse_seq(b"0000004a"), None);
        let r = TokenScheme::random();
        assert!(r.prefix().starts_with("lg") && r.prefix().ends_with('x'));
        assert_eq!(r.prefix().len(), 9);
    }

    #[test]
    fn complete_duplicates_and_window_accounting() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, 2, 1);
        let a = t.register(0, t0);
        let b = t.register(0, t0);
        assert_eq!(t.undelivered(), 2);
        assert_eq!(
            t.receipt(0, a, t0 + Duration::from_millis(1), 100),
            Receipt::Counted
        );
        // Delivery may precede the HTTP response.
        assert_eq!(
            t.receipt(1, a, t0 + Duration::from_millis(3), 100),
            Receipt::Completed
        );
        assert_eq!(t.undelivered(), 1);
        assert_eq!(t.receipt(1, a, t0, 100), Receipt::Duplicate);
        t.post_result(a, Ok(Duration::from_millis(2)));
        t.post_result(b, Err(()));
        assert_eq!(t.undelivered(), 0, "a failed post is no longer awaited");
        assert_eq!(t.receipt(0, 99, t0, 1), Receipt::Unknown);
        let s = t.summary();
        assert_eq!((s.posted, s.post_errors, s.complete), (1, 1, 1));
        assert_eq!((s.receipts, s.duplicates, s.unknown), (2, 1, 1));
        assert_eq!(s.to_all.count, 1);
        assert!((s.to_all.p50_ms - 3.0).abs() < 0.01);
        assert!((s.to_first.p50_ms - 1.0).abs() < 0.01);
        assert_eq!(s.matched_bytes, 200);
    }

    #[test]
    fn per_poster_order_and_reference_order() {
        let t0 = Instant::now();
        let mut t = Tracker::new(3, 3, 2);
        let m0 = t.register(0, t0); // poster 0
        let m1 = t.register(1, t0); // poster 1
        let m2 = t.register(0, t0); // poster 0
                                    // Client 0 sets the reference order m1, m0, m2 (legal: different posters interleave).
        for m in [m1, m0, m2] {
            t.receipt(0, m, t0, 1);
        }
        // Client 1 sees the same order.
        for m in [m1, m0, m2] {
            t.receipt(1, m, t0, 1);
        }
        // Client 2 sees poster 0's messages reversed.
        for m in [m1, m2, m0] {
            t.receipt(2, m, t0, 1);
        }
        let s = t.summary();
        assert_eq!(s.out_of_order, 1);
        assert_eq!(s.divergent_clients, 1);
        assert_eq!(s.duplicates, 0);
    }

    #[test]
    fn a_listener_counts_each_listed_post_once_per_client() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut t = ListenTracker::new(3, 1000);
        // Posts 0 and 2 are listed; 1 failed (its frame still arrived once); 5000 is out of range.
        for c in 0..3 {
            assert_eq!(t.receipt(c, 0, at(1 + c as u64)), Receipt::Counted);
        }
        assert_eq!(t.receipt(0, 2, at(10)), Receipt::Counted);
        assert_eq!(t.receipt(1, 2, at(12)), Receipt::Counted);
        assert_eq!(t.missing(&[0, 2]), 1, "client 2 lacks post 2");
        assert_eq!(t.receipt(1, 2, at(13)), Receipt::Duplicate);
        assert_eq!(t.receipt(0, 1, at(5)), Receipt::Counted);
        assert_eq!(t.receipt(0, 5000, at(5)), Receipt::Unknown);
        assert_eq!(t.receipt(7, 0, at(5)), Receipt::Unknown, "no such client");
        let c = t.check(&[0, 2]);
        assert_eq!((c.posts, c.clients, c.expected), (2, 3, 6));
        assert_eq!((c.delivered, c.missing, c.duplicated), (5, 1, 1));
        assert_eq!(
            c.clients_complete, 1,
            "client 0 only: 1 repeated post 2, 2 lacks it"
        );
        assert_eq!(c.extra, 3, "post 1's receipt, seq 5000, client 7");
        assert_eq!(
            c.times,
            vec![(Some(at(1)), Some(at(3))), (Some(at(10)), Some(at(12)))]
        );
        assert_eq!(t.receipt(2, 2, at(20)), Receipt::Counted);
        assert_eq!(t.missing(&[0, 2]), 0);
        let c = t.check(&[0, 2]);
        assert_eq!((c.missing, c.clients_complete), (0, 2));
    }

    #[test]
    fn a_listener_with_no_receipts_misses_everything() {
        let t = ListenTracker::new(4, 1000);
        let c = t.check(&[0, 1, 2]);
        assert_eq!((c.expected, c.delivered, c.missing), (12, 0, 12));
        assert_eq!(c.clients_complete, 0);
        assert_eq!(t.check(&[]).clients_complete, 4, "nothing to hold");
        assert_eq!(c.times, vec![(None, None); 3]);
    }

    #[test]
    fn messages_list_send_times_and_last_receipts() {
        let t0 = Instant::now();
        let mut t = Tracker::new(2, 2, 1);
        let a = t.register(0, t0);
        let b = t.register(0, t0);
        t.post_result(a, Ok(Duration::from_millis(1)));
        t.post_result(b, Err(()));
        t.receipt(0, a, t0 + Duration::from_millis(2), 1);
        t.receipt(1, a, t0 + Duration::from_millis(4), 1);
        t.receipt(1, a, t0 + Duration::from_millis(9), 1);
        let m: Vec<_> = t.messages().collect();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].seq, m[0].posted, m[0].receipts), (0, true, 2));
        assert_eq!(
            m[0].last_receipt,
            Some(t0 + Duration::from_millis(4)),
            "a duplicate is not a receipt"
        );
        assert_eq!((m[1].posted, m[1].last_receipt), (false, None));
    }
}
