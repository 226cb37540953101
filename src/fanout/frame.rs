//! Pre-encoded server→client WebSocket frames.
//!
//! A [`Frame`] holds the complete bytes a server puts on the wire for one WebSocket frame:
//! the RFC 6455 §5.2 header followed by the payload, in one contiguous [`Bytes`] buffer.
//! Because the buffer is reference-counted, one frame built for a broadcast can sit in the
//! outbox of every subscriber at once: each queue holds a pointer and a count, never a copy.
//!
//! The header a server writes is short because a server never masks (RFC 6455 §5.1):
//!
//! ```text
//!  byte 0: FIN (0x80) | opcode      text 0x1, close 0x8, ping 0x9, pong 0xA
//!  byte 1: MASK = 0 | payload length, or 126 / 127 to announce an extended length
//!  then:   nothing        when the length is 0..=125
//!          u16 big-endian when the length is 126..=65535
//!          u64 big-endian when the length is 65536 or more
//! ```
//!
//! Every frame built here is final (FIN set): Action Cable sends each message as one
//! unfragmented text frame.

use bytes::Bytes;

/// Opcode of a text frame (RFC 6455 §5.6).
pub const OPCODE_TEXT: u8 = 0x1;
/// Opcode of a close frame (RFC 6455 §5.5.1).
pub const OPCODE_CLOSE: u8 = 0x8;
/// Opcode of a ping frame (RFC 6455 §5.5.2).
pub const OPCODE_PING: u8 = 0x9;
/// Opcode of a pong frame (RFC 6455 §5.5.3).
pub const OPCODE_PONG: u8 = 0xA;

/// Largest payload a control frame (close, ping, pong) may carry, in bytes (RFC 6455 §5.5).
pub const MAX_CONTROL_PAYLOAD: usize = 125;

/// A complete, pre-encoded server→client WebSocket frame (header + payload), shared by refcount.
///
/// `Frame.0` is exactly the byte sequence written to the socket. Cloning a frame clones the
/// [`Bytes`] handle (an atomic increment), so one frame can be queued to any number of
/// connections without copying its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame(pub Bytes);

impl Frame {
    /// A final text frame carrying `payload` (which the caller guarantees is UTF-8, as RFC 6455
    /// §5.6 requires of text frames). One allocation.
    pub fn text(payload: &[u8]) -> Self {
        Self::text_parts(&[payload])
    }

    /// A final text frame whose payload is the concatenation of `parts`, e.g.
    /// `[prefix, message, suffix]`. The header is computed from the total length and the frame
    /// is built in one allocation of exactly header + payload bytes.
    pub fn text_parts(parts: &[&[u8]]) -> Self {
        encode(OPCODE_TEXT, parts)
    }

    /// A close frame (RFC 6455 §5.5.1): a two-byte big-endian status `code` (e.g. 1000, normal
    /// closure, §7.4.1) followed by the UTF-8 `reason`. A control frame's payload is limited to
    /// 125 bytes, so a reason longer than 123 bytes is cut at the last character boundary that
    /// fits.
    pub fn close(code: u16, reason: &str) -> Self {
        let mut end = reason.len().min(MAX_CONTROL_PAYLOAD - 2);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        encode(
            OPCODE_CLOSE,
            &[&code.to_be_bytes(), &reason.as_bytes()[..end]],
        )
    }

    /// A pong frame (RFC 6455 §5.5.3) echoing `payload`, the application data of the ping it
    /// answers. Control frames carry at most 125 bytes, so a longer payload is truncated (a
    /// conforming peer never sends a longer ping).
    pub fn pong(payload: &[u8]) -> Self {
        encode(
            OPCODE_PONG,
            &[&payload[..payload.len().min(MAX_CONTROL_PAYLOAD)]],
        )
    }

    /// Length of the whole encoded frame (header + payload) in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the frame has no bytes at all. Never true for a frame built by this module (the
    /// header alone is at least two bytes); present for the `len`/`is_empty` convention.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The frame's opcode (the low four bits of byte 0, RFC 6455 §5.2), or `None` when the
    /// bytes are too short to hold a header.
    pub fn opcode(&self) -> Option<u8> {
        self.0.first().map(|b| b & 0x0F)
    }

    /// The frame's payload: the bytes after the header, or `None` when the bytes are not one
    /// complete unmasked frame (shorter than the header announces, or masked).
    pub fn payload(&self) -> Option<&[u8]> {
        let (header, len) = parse_header(&self.0)?;
        self.0.get(header..header.checked_add(len)?)
    }
}

/// Number of header bytes a server frame with a payload of `payload_len` bytes needs:
/// 2, 4 or 10 (RFC 6455 §5.2, no masking key).
pub fn header_len(payload_len: usize) -> usize {
    match payload_len {
        0..=125 => 2,
        126..=65535 => 4,
        _ => 10,
    }
}

/// Encodes one final, unmasked frame with `opcode` whose payload is `parts` concatenated.
fn encode(opcode: u8, parts: &[&[u8]]) -> Frame {
    let payload_len: usize = parts.iter().map(|p| p.len()).sum();
    let mut buf = Vec::with_capacity(header_len(payload_len) + payload_len);
    buf.push(0x80 | opcode);
    match payload_len {
        0..=125 => buf.push(payload_len as u8),
        126..=65535 => {
            buf.push(126);
            buf.extend_from_slice(&(payload_len as u16).to_be_bytes());
        }
        _ => {
            buf.push(127);
            buf.extend_from_slice(&(payload_len as u64).to_be_bytes());
        }
    }
    for part in parts {
        buf.extend_from_slice(part);
    }
    Frame(Bytes::from(buf))
}

/// Parses an unmasked frame header: returns (header length, payload length), or `None` when
/// `bytes` is too short for the header it announces or the frame is masked.
fn parse_header(bytes: &[u8]) -> Option<(usize, usize)> {
    let second = *bytes.get(1)?;
    if second & 0x80 != 0 {
        return None;
    }
    match second & 0x7F {
        126 => {
            let len = u16::from_be_bytes(bytes.get(2..4)?.try_into().ok()?);
            Some((4, usize::from(len)))
        }
        127 => {
            let len = u64::from_be_bytes(bytes.get(2..10)?.try_into().ok()?);
            Some((10, usize::try_from(len).ok()?))
        }
        len => Some((2, usize::from(len))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(frame: &Frame) -> &[u8] {
        &frame.0[..frame.len() - frame.payload().unwrap().len()]
    }

    #[test]
    fn lengths_pick_the_7_16_and_64_bit_forms() {
        let cases: [(usize, &[u8]); 5] = [
            (0, &[0x81, 0]),
            (125, &[0x81, 125]),
            (126, &[0x81, 126, 0x00, 0x7E]),
            (65535, &[0x81, 126, 0xFF, 0xFF]),
            (65536, &[0x81, 127, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00]),
        ];
        for (len, expected) in cases {
            let payload = vec![b'x'; len];
            let frame = Frame::text(&payload);
            assert_eq!(header(&frame), expected, "header for a {len}-byte payload");
            assert_eq!(frame.len(), expected.len() + len);
            assert_eq!(frame.payload().unwrap(), &payload[..]);
            assert_eq!(header_len(len), expected.len());
        }
    }

    #[test]
    fn text_parts_concatenates_in_order() {
        let frame = Frame::text_parts(&[b"{\"identifier\":\"x\",\"message\":", b"42", b"}"]);
        assert_eq!(
            &frame.0[..],
            b"\x81\x1f{\"identifier\":\"x\",\"message\":42}" as &[u8]
        );
        assert_eq!(frame.opcode(), Some(OPCODE_TEXT));
    }

    #[test]
    fn text_parts_allocates_exactly_the_frame() {
        let parts: [&[u8]; 3] = [&[b'a'; 100], &[b'b'; 30], &[b'c'; 2]];
        let frame = Frame::text_parts(&parts);
        assert_eq!(frame.len(), 4 + 132);
        assert_eq!(&frame.0[..4], &[0x81, 126, 0, 132]);
        assert!(frame.0[4..104].iter().all(|&b| b == b'a'));
        assert!(frame.0[134..].iter().all(|&b| b == b'c'));
    }

    #[test]
    fn close_frame_carries_code_and_reason() {
        let frame = Frame::close(1000, "");
        assert_eq!(&frame.0[..], &[0x88, 0x02, 0x03, 0xE8]);
        let frame = Frame::close(1001, "bye");
        assert_eq!(&frame.0[..], b"\x88\x05\x03\xE9bye" as &[u8]);
        assert_eq!(frame.opcode(), Some(OPCODE_CLOSE));
    }

    #[test]
    fn close_reason_is_cut_to_a_control_frame_at_a_char_boundary() {
        // 61 two-byte characters = 122 bytes fits; 62 = 124 bytes does not.
        let reason = "é".repeat(62);
        let frame = Frame::close(1000, &reason);
        let payload = frame.payload().unwrap();
        assert_eq!(payload.len(), 2 + 122);
        assert!(std::str::from_utf8(&payload[2..]).is_ok());
    }

    #[test]
    fn pong_echoes_and_truncates_to_125() {
        assert_eq!(&Frame::pong(b"hi").0[..], b"\x8A\x02hi" as &[u8]);
        let long = [7u8; 200];
        let frame = Frame::pong(&long);
        assert_eq!(frame.payload().unwrap().len(), 125);
        assert_eq!(frame.opcode(), Some(OPCODE_PONG));
    }

    #[test]
    fn payload_rejects_truncated_and_masked_bytes() {
        assert_eq!(Frame(Bytes::from_static(&[0x81, 5, b'a'])).payload(), None);
        assert_eq!(
            Frame(Bytes::from_static(&[0x81, 0x81, 1, 2, 3, 4, b'a'])).payload(),
            None
        );
        assert_eq!(Frame(Bytes::new()).opcode(), None);
        assert!(Frame(Bytes::new()).is_empty());
    }
}
