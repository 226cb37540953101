//! permessage-deflate (RFC 7692) for broadcast frames: compressed once per broadcast, shared.
//!
//! Every server that offers WebSocket compression usually keeps a zlib context per socket, so a
//! shared frame is compressed again for each subscriber. With `server_no_context_takeover`
//! (RFC 7692 §7.1.1.1) every message is compressed on its own, with an empty LZ77 window, and
//! the compressed bytes no longer depend on what that connection was sent before: one
//! compressed frame is valid for every connection that agreed to the same parameters. So a
//! subscription that negotiated the extension joins its stream under its own
//! [`Variant`](super::Variant) key ([`Deflate::key`]), carrying the parameter set
//! ([`Variant::deflate`](super::Variant::deflate)); a broadcast encodes one frame per variant
//! group as it always did, and for such a group that one frame is
//! compressed: once per broadcast, identifier variant and parameter set, and only when a
//! subscriber that negotiated it exists (a group exists only while it has members). The
//! compressed frame is a [`Frame`] like any other, one `Bytes` buffer shared by refcount, and
//! no connection holds compression state: the compressor is the broadcasting thread's own
//! (one per window size used), reset before each message.
//!
//! Short payloads are sent uncompressed, RSV1 clear, which RFC 7692 §6 allows per message:
//! below [`MIN_COMPRESSED_PAYLOAD`] bytes compression saves too little to pay for its fixed cost
//! (see there for the measurement).
//!
//! The wire format (RFC 7692 §7.2.1): the payload is compressed as raw DEFLATE (no zlib
//! header) with a sync flush, and the four bytes `00 00 ff ff` the flush ends with are removed;
//! the frame is final, its opcode text, and its RSV1 bit (`0x40`) set on byte 0 (§6).

use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use flate2::{Compress, Compression, FlushCompress};

use super::frame::{header_len, Frame, OPCODE_TEXT};

/// RSV1, "Per-Message Compressed" once permessage-deflate is agreed (RFC 7692 §6): bit `0x40` of
/// a message's first frame header byte.
pub const RSV1: u8 = 0x40;

/// The 4 bytes a sync flush ends with, removed from a compressed payload (RFC 7692 §7.2.1)
/// and appended again by the receiver before inflating (§7.2.2).
pub const SYNC_TRAILER: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Smallest payload, in bytes (before compression), that a broadcast compresses for a
/// permessage-deflate subscriber; shorter ones go out uncompressed (RSV1 clear).
///
/// Measured with `tests/suite/deflate.rs`' `measure_the_compression_threshold` (ignored by
/// default; `-- --ignored --nocapture`) on this server's real frames, prefixes of a typical
/// post's 7.3 KB frame, at [`LEVEL`] with a 15-bit window, the fastest of 20 batches on a
/// shared 2-core machine:
///
/// | payload | compressed | saved | µs per compression |
/// |---|---|---|---|
/// | 64 B | 60 B | 6 % | 7 |
/// | 128 B | 120 B | 6 % | 9 |
/// | 192 B | 169 B | 12 % | 11 |
/// | 256 B | 216 B | 16 % | 12 |
/// | 512 B | 334 B | 35 % | 15 |
/// | 1 KiB | 561 B | 45 % | 20 |
/// | 7.3 KB (a post) | 2.1 KB | 71 % | 61 |
///
/// A compression costs about 7 µs whatever the size (the compressor's reset and state), once
/// per broadcast and variant; it pays back in bytes on every subscriber's socket. Below 256
/// bytes it saves under 12 %, 20 bytes a frame at most (an unread notice, 76 bytes, saves 4);
/// from 256 bytes on it saves 16 % and more, rising fast (35 % at 512), and a typing or
/// presence notice to a room (250 to 300 bytes with its identifier) goes to every member.
pub const MIN_COMPRESSED_PAYLOAD: usize = 256;

/// The zlib compression level of broadcast frames (1 fastest … 9 smallest). Measured on a
/// typical post's 7.3 KB frame (same test, two runs): level 1 gives 2,864 bytes in 22 µs, 2
/// gives 2,301 in 42 to 65 µs, 5 gives 2,113 in 61 µs, 6 (zlib's default) 2,109 in 69 to
/// 110 µs, 9 2,085 in 83 to 168 µs. Level 5 sends 26 % fewer bytes than level 1 to every
/// subscriber for about 40 µs more once per broadcast, and as few as level 6 in no more time.
/// No level reaches a quarter of the plain frame on this one (the signed stream name, the SVG
/// paths and the emoji leave 29 %).
pub const LEVEL: u32 = 5;

/// One permessage-deflate parameter set as far as the frames a server sends depend on it:
/// the size of the LZ77 window the receiving client decompresses with (RFC 7692 §7.1.2.1,
/// `server_max_window_bits`), as the base-2 logarithm of its size in bytes, 9 to 15.
/// `server_no_context_takeover` is always agreed, so it is not a parameter here.
///
/// A compressed frame is valid for every client whose window is at least as large as the one
/// it was compressed with; frames are compressed with exactly the agreed window, so two clients
/// share compressed frames when they agreed to the same window size (nearly every client
/// agrees to 15: Chromium, Firefox and `ws` offer no `server_max_window_bits`).
///
/// 8, which RFC 7692 allows, is not: zlib cannot compress raw DEFLATE with a 256-byte window
/// (it silently uses 512), so a server that agreed to 8 could send data its client cannot
/// inflate. The negotiation declines such an offer instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Deflate {
    window_bits: u8,
}

impl Deflate {
    /// The smallest window this server compresses with (2^9 = 512 bytes).
    pub const MIN_WINDOW_BITS: u8 = 9;
    /// The largest window RFC 7692 allows (2^15 = 32,768 bytes), and the default.
    pub const MAX_WINDOW_BITS: u8 = 15;

    /// The parameter set of a client that decompresses with a window of `2^window_bits` bytes;
    /// None outside [`Deflate::MIN_WINDOW_BITS`]`..=`[`Deflate::MAX_WINDOW_BITS`].
    pub fn new(window_bits: u8) -> Option<Self> {
        (Self::MIN_WINDOW_BITS..=Self::MAX_WINDOW_BITS)
            .contains(&window_bits)
            .then_some(Self { window_bits })
    }

    /// The window, as the base-2 logarithm of its size in bytes (9 to 15).
    pub fn window_bits(self) -> u8 {
        self.window_bits
    }

    /// The variant key of a subscription that negotiated this parameter set, from the key it
    /// would have without compression: `z<window bits>:<key>` (e.g.
    /// `z15:{"channel":"RoomMessagesChannel",…}`). Subscribers of one stream are grouped by
    /// key, so compressed and plain subscribers, and subscribers of different window sizes,
    /// get frames of their own.
    pub fn key(self, key: &str) -> Arc<str> {
        Arc::from(format!("z{}:{key}", self.window_bits))
    }

    /// A final text frame whose payload is `parts` concatenated, compressed for this parameter
    /// set when it is at least [`MIN_COMPRESSED_PAYLOAD`] bytes long ([`compressed_text`]),
    /// plain otherwise. Returns the frame and, when it was compressed, the payload's length
    /// before and after compression, in bytes.
    pub fn text(self, parts: &[&[u8]]) -> (Frame, Option<(usize, usize)>) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len < MIN_COMPRESSED_PAYLOAD {
            return (Frame::text_parts(parts), None);
        }
        let frame = compressed_text(parts, self);
        let after = frame.payload().map_or(0, <[u8]>::len);
        (frame, Some((len, after)))
    }
}

thread_local! {
    /// This thread's compressors, one per window size it has used (usually one), and the
    /// buffer a payload is compressed into before it is copied into its frame. A compressor
    /// takes zlib's `2^(windowBits + 2) + 2^(memLevel + 9)` bytes, 256 KiB for a 15-bit
    /// window: the process holds one per thread that has broadcast a compressed frame (the
    /// runtime's workers, mostly), not one per connection, and a blocking-pool thread's goes
    /// with the thread.
    static COMPRESSORS: RefCell<Compressors> = const {
        RefCell::new(Compressors { list: Vec::new(), scratch: Vec::new() })
    };
}

/// A thread's compression state (see `COMPRESSORS`): reused from message to message, so a
/// compression allocates only its frame once the thread has compressed once.
struct Compressors {
    list: Vec<(u8, Compress)>,
    scratch: Vec<u8>,
}

/// Most bytes the scratch buffer keeps between messages; a longer message's buffer is given
/// back after it.
const SCRATCH_KEPT: usize = 256 * 1024;

/// A final text frame with RSV1 set whose payload is `parts` concatenated and compressed as
/// RFC 7692 §7.2.1 says, with an empty window (`server_no_context_takeover`) of at most
/// `2^deflate.window_bits()` bytes: raw DEFLATE, sync flush, the trailing `00 00 ff ff` removed.
/// One allocation of exactly the frame's length once the thread's compressor exists.
///
/// # Panics
///
/// If zlib refuses its own stream, which it does only for misuse of its API (a bug here).
pub fn compressed_text(parts: &[&[u8]], deflate: Deflate) -> Frame {
    COMPRESSORS.with(|cell| {
        let mut state = cell.borrow_mut();
        let Compressors { list, scratch } = &mut *state;
        let bits = deflate.window_bits;
        let at = match list.iter().position(|(b, _)| *b == bits) {
            Some(at) => at,
            None => {
                list.push((
                    bits,
                    Compress::new_with_window_bits(Compression::new(LEVEL), false, bits),
                ));
                list.len() - 1
            }
        };
        let compress = &mut list[at].1;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        scratch.clear();
        // Deflate's worst case is a few bytes per 16 KiB stored block; the loop below grows the
        // buffer anyway should this ever be short.
        scratch.reserve(len + len / 16 + 64);
        let last = parts.len().saturating_sub(1);
        for (i, part) in parts.iter().enumerate() {
            let flush = if i == last {
                FlushCompress::Sync
            } else {
                FlushCompress::None
            };
            deflate_into(compress, part, scratch, flush);
        }
        if parts.is_empty() {
            deflate_into(compress, &[], scratch, FlushCompress::Sync);
        }
        compress.reset();
        debug_assert!(scratch.ends_with(&SYNC_TRAILER));
        let payload = &scratch[..scratch.len().saturating_sub(SYNC_TRAILER.len())];
        let frame = encode_compressed(payload);
        if scratch.capacity() > SCRATCH_KEPT {
            *scratch = Vec::new();
        }
        frame
    })
}

/// Feeds `input` to `compress` with `flush`, appending its output to `out` (grown as needed).
fn deflate_into(
    compress: &mut Compress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    flush: FlushCompress,
) {
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(input.len() / 2 + 256);
        }
        let before = compress.total_in();
        compress
            .compress_vec(input, out, flush)
            .expect("zlib accepts a stream it was given whole");
        let used = usize::try_from(compress.total_in() - before).unwrap_or(input.len());
        input = &input[used.min(input.len())..];
        // Done when the input is in and, for a flush, the output did not fill the buffer
        // (zlib's own loop condition: room left means nothing is pending).
        if input.is_empty() && (flush == FlushCompress::None || out.len() < out.capacity()) {
            return;
        }
    }
}

/// The frame of an already-compressed payload: FIN, RSV1 and the text opcode, then the
/// length as RFC 6455 §5.2 encodes it. One allocation of exactly header + payload bytes.
fn encode_compressed(payload: &[u8]) -> Frame {
    let len = payload.len();
    let mut buf = Vec::with_capacity(header_len(len) + len);
    buf.push(0x80 | RSV1 | OPCODE_TEXT);
    match len {
        0..=125 => buf.push(len as u8),
        126..=65535 => {
            buf.push(126);
            buf.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            buf.push(127);
            buf.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    buf.extend_from_slice(payload);
    Frame(Bytes::from(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Decompress, FlushDecompress};

    /// Inflates a compressed frame's payload as a client does (RFC 7692 §7.2.2).
    fn inflate(payload: &[u8]) -> Result<Vec<u8>, flate2::DecompressError> {
        let mut input = payload.to_vec();
        input.extend_from_slice(&SYNC_TRAILER);
        let mut inflater = Decompress::new(false);
        let mut out = Vec::with_capacity(1 << 20);
        inflater.decompress_vec(&input, &mut out, FlushDecompress::Sync)?;
        Ok(out)
    }

    /// Text with repeats `distance` bytes apart and nothing compressible nearer.
    fn far_repeats(distance: usize) -> Vec<u8> {
        let mut state = 0x1234_5678u32;
        let block: Vec<u8> = (0..distance)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                b'a' + (state % 26) as u8
            })
            .collect();
        [&block[..], &block[..], &block[..]].concat()
    }

    #[test]
    fn a_compressed_frame_is_final_text_with_rsv1_and_inflates_to_its_parts() {
        let parts: [&[u8]; 3] = [
            b"{\"identifier\":\"x\",\"message\":\"",
            &[b'a'; 5000],
            b"\"}",
        ];
        let frame = compressed_text(&parts, Deflate::new(15).unwrap());
        assert_eq!(frame.0[0], 0x80 | 0x40 | 0x1);
        assert_eq!(frame.opcode(), Some(OPCODE_TEXT));
        let payload = frame.payload().unwrap();
        assert!(payload.len() < 100, "{} bytes", payload.len());
        assert!(!payload.ends_with(&SYNC_TRAILER));
        assert!(inflate(payload).unwrap() == parts.concat());
    }

    #[test]
    fn each_message_stands_alone_so_a_fresh_inflater_reads_it() {
        // The second message repeats the first: with context takeover it would refer back to
        // it; compressed alone it does not.
        let deflate = Deflate::new(15).unwrap();
        let text = far_repeats(1000);
        let first = compressed_text(&[&text], deflate);
        let second = compressed_text(&[&text], deflate);
        assert_eq!(first, second, "the same input gives the same bytes");
        assert!(inflate(second.payload().unwrap()).unwrap() == text);
    }

    #[test]
    fn the_window_used_is_the_agreed_one() {
        // Repeats 4,000 bytes apart: a 15-bit window finds them, a 10-bit one (1 KiB) cannot,
        // so its frame is over twice as long. (zlib-rs inflates with 32 KiB whatever it is
        // told, so a narrow inflater cannot show it.)
        let text = far_repeats(4000);
        let wide = compressed_text(&[&text], Deflate::new(15).unwrap());
        let narrow = compressed_text(&[&text], Deflate::new(10).unwrap());
        assert!(
            wide.len() * 2 < narrow.len(),
            "{} vs {}",
            wide.len(),
            narrow.len()
        );
        assert!(inflate(narrow.payload().unwrap()).unwrap() == text);
        assert!(inflate(wide.payload().unwrap()).unwrap() == text);
    }

    #[test]
    fn short_payloads_stay_plain_and_long_ones_are_compressed() {
        let deflate = Deflate::new(15).unwrap();
        let short = [b'x'; MIN_COMPRESSED_PAYLOAD - 1];
        let (frame, sizes) = deflate.text(&[&short]);
        assert_eq!(frame, Frame::text(&short));
        assert_eq!(sizes, None);
        let long = [b'x'; MIN_COMPRESSED_PAYLOAD];
        let (frame, sizes) = deflate.text(&[&long]);
        assert_eq!(frame.0[0] & RSV1, RSV1);
        let (before, after) = sizes.unwrap();
        assert_eq!(before, MIN_COMPRESSED_PAYLOAD);
        assert_eq!(after, frame.payload().unwrap().len());
    }

    #[test]
    fn long_and_incompressible_payloads_use_the_long_length_forms() {
        let deflate = Deflate::new(15).unwrap();
        let noise = far_repeats(40_000);
        let frame = compressed_text(&[&noise[..40_000]], deflate);
        assert_eq!(frame.0[1], 126);
        assert!(inflate(frame.payload().unwrap()).unwrap() == noise[..40_000]);
        let big = far_repeats(30_000);
        let frame = compressed_text(&[&big, &big, &big], deflate);
        assert!(inflate(frame.payload().unwrap()).unwrap() == [&big[..], &big, &big].concat());
        let frame = compressed_text(&[&noise, &noise[..1]], Deflate::new(9).unwrap());
        assert_eq!(frame.0[1], 127, "over 64 KiB compressed");
        assert!(inflate(frame.payload().unwrap()).unwrap() == [&noise[..], &noise[..1]].concat());
    }

    #[test]
    fn window_bits_outside_9_to_15_are_refused_and_keys_name_the_window() {
        assert!(Deflate::new(8).is_none());
        assert!(Deflate::new(16).is_none());
        let d = Deflate::new(12).unwrap();
        assert_eq!(d.window_bits(), 12);
        assert_eq!(&*d.key("{\"channel\":\"C\"}"), "z12:{\"channel\":\"C\"}");
    }
}
