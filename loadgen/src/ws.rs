//! A lean WebSocket client codec (RFC 6455), written for receiving many large frames cheaply.
//!
//! - **Opening handshake** (RFC 6455 §4.1–4.2): the client sends an HTTP/1.1 `GET` with
//!   `Upgrade: websocket`, `Connection: Upgrade`, a random 16-byte `Sec-WebSocket-Key` in Base64
//!   and `Sec-WebSocket-Version: 13`; the server must answer `101` with
//!   `Sec-WebSocket-Accept = Base64(SHA-1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))`.
//!   Action Cable clients offer `Sec-WebSocket-Protocol: actioncable-v1-json,
//!   actioncable-unsupported` and expect `actioncable-v1-json` back (`@rails/actioncable`
//!   `connection.js`): a server that omits it is broken for real browsers, so the load generator
//!   treats that as an error. Bytes after the response head already belong to the first frames
//!   and are handed back to the caller.
//! - **Framing** (§5.2): `FIN RSV1-3 opcode | MASK len7 | [len16 | len64] | [mask key] | payload`.
//!   [`parse_frame`] reads one header from a byte slice without copying or allocating, so a
//!   reader can walk a large receive buffer frame by frame and look at each payload in place.
//!   Server frames must not be masked (§5.1) and, with no extension negotiated, the RSV bits
//!   must be zero (§5.2); control frames are at most 125 bytes and never fragmented (§5.5).
//! - **Client frames are masked** (§5.3): every byte `i` of the payload is XORed with
//!   `mask[i % 4]`; [`encode_client_frame`] does that with a fresh random key per frame.

use base64::Engine;
use sha1::{Digest, Sha1};
use std::fmt;

/// The GUID RFC 6455 §1.3 appends to the key before hashing.
pub const ACCEPT_GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The subprotocol offer of `@rails/actioncable` (`internal.js` `protocols`).
pub const ACTION_CABLE_PROTOCOLS: &str = "actioncable-v1-json, actioncable-unsupported";

/// Opcode of a continuation frame (§5.2).
pub const OP_CONTINUATION: u8 = 0x0;
/// Opcode of a text frame.
pub const OP_TEXT: u8 = 0x1;
/// Opcode of a binary frame.
pub const OP_BINARY: u8 = 0x2;
/// Opcode of a close frame.
pub const OP_CLOSE: u8 = 0x8;
/// Opcode of a ping frame.
pub const OP_PING: u8 = 0x9;
/// Opcode of a pong frame.
pub const OP_PONG: u8 = 0xA;

/// Largest frame payload accepted (64 MiB): a guard against a corrupt length field.
pub const MAX_PAYLOAD: u64 = 64 << 20;

/// `Sec-WebSocket-Accept` for a key: `Base64(SHA-1(key + ACCEPT_GUID))` (RFC 6455 §4.2.2).
pub fn accept_key(key: &str) -> String {
    let mut h = Sha1::new();
    h.update(key.as_bytes());
    h.update(ACCEPT_GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(h.finalize())
}

/// A fresh `Sec-WebSocket-Key`: Base64 of 16 random bytes (RFC 6455 §4.1).
pub fn new_key() -> String {
    let bytes: [u8; 16] = rand::random();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The upgrade request's variable parts.
#[derive(Debug, Clone, Copy)]
pub struct UpgradeRequest<'a> {
    /// `host:port` for the `Host` header.
    pub host: &'a str,
    /// Request target, e.g. `/cable`.
    pub path: &'a str,
    /// `Origin` header value, e.g. `http://127.0.0.1:3000`.
    pub origin: &'a str,
    /// `Cookie` header value, if any.
    pub cookie: Option<&'a str>,
    /// `Sec-WebSocket-Protocol` offer, e.g. [`ACTION_CABLE_PROTOCOLS`].
    pub protocols: &'a str,
    /// `Sec-WebSocket-Key`.
    pub key: &'a str,
    /// `Sec-WebSocket-Extensions` offer, e.g. [`crate::deflate::OFFER`].
    pub extensions: Option<&'a str>,
}

impl UpgradeRequest<'_> {
    /// The request bytes: request line, headers, blank line.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut s = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {}\r\nSec-WebSocket-Version: 13\r\nOrigin: {}\r\n",
            self.path, self.host, self.key, self.origin
        );
        if !self.protocols.is_empty() {
            s.push_str("Sec-WebSocket-Protocol: ");
            s.push_str(self.protocols);
            s.push_str("\r\n");
        }
        if let Some(e) = self.extensions {
            s.push_str("Sec-WebSocket-Extensions: ");
            s.push_str(e);
            s.push_str("\r\n");
        }
        if let Some(c) = self.cookie {
            s.push_str("Cookie: ");
            s.push_str(c);
            s.push_str("\r\n");
        }
        s.push_str("\r\n");
        s.into_bytes()
    }
}

/// Why an opening handshake failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandshakeError {
    /// The response head exceeded 16 KiB without a blank line.
    HeadTooLarge,
    /// The status line is not `HTTP/1.x NNN ...`.
    BadStatusLine(String),
    /// The status is not 101; holds the status and the start of the response.
    NotSwitching(u16, String),
    /// `Sec-WebSocket-Accept` is missing or wrong.
    BadAccept,
    /// `Upgrade: websocket` or `Connection: upgrade` is missing.
    MissingUpgradeHeaders,
    /// The server did not select `actioncable-v1-json` (or the required protocol).
    Protocol(Option<String>),
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HeadTooLarge => write!(f, "handshake response head larger than 16 KiB"),
            Self::BadStatusLine(l) => write!(f, "bad handshake status line {l:?}"),
            Self::NotSwitching(s, head) => write!(
                f,
                "handshake answered {s} instead of 101 (Action Cable answers 404 to a \
                 disallowed Origin; a rejected session may also redirect): {head:?}"
            ),
            Self::BadAccept => write!(f, "missing or wrong Sec-WebSocket-Accept"),
            Self::MissingUpgradeHeaders => {
                write!(f, "101 without Upgrade: websocket / Connection: Upgrade")
            }
            Self::Protocol(p) => write!(
                f,
                "server selected subprotocol {p:?}; an Action Cable server must answer \
                 actioncable-v1-json or real clients disconnect"
            ),
        }
    }
}

impl std::error::Error for HandshakeError {}

/// The value of header `name` (ASCII, lower case) in a response head `head` (the bytes before
/// the blank line), the first one if several; `None` when absent.
pub fn response_header(head: &[u8], name: &str) -> Option<String> {
    String::from_utf8_lossy(head)
        .split("\r\n")
        .skip(1)
        .find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
}

/// Parses the server's handshake response from the start of `buf`.
///
/// Returns `Ok(None)` while the head is incomplete, or `Ok(Some(head_len))` when it is complete
/// and valid (`buf[head_len..]` are the first frame bytes). `required_protocol` (e.g.
/// `actioncable-v1-json`) must be the selected `Sec-WebSocket-Protocol` when given.
///
/// Errors: [`HandshakeError`] for a non-101 status, a wrong accept key, missing upgrade headers
/// or the wrong subprotocol.
pub fn parse_upgrade_response(
    buf: &[u8],
    key: &str,
    required_protocol: Option<&str>,
) -> Result<Option<usize>, HandshakeError> {
    let Some(end) = memchr::memmem::find(buf, b"\r\n\r\n") else {
        if buf.len() > 16 * 1024 {
            return Err(HandshakeError::HeadTooLarge);
        }
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&buf[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| version.starts_with("HTTP/1."))
        .ok_or_else(|| HandshakeError::BadStatusLine(status_line.to_owned()))?;
    if status != 101 {
        let shown: String = String::from_utf8_lossy(&buf[..buf.len().min(300)]).into_owned();
        return Err(HandshakeError::NotSwitching(status, shown));
    }
    let (mut upgrade, mut connection, mut accept, mut protocol) = (false, false, None, None);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "upgrade" => upgrade = value.eq_ignore_ascii_case("websocket"),
            "connection" => {
                connection = value
                    .split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
            }
            "sec-websocket-accept" => accept = Some(value.to_owned()),
            "sec-websocket-protocol" => protocol = Some(value.to_owned()),
            _ => {}
        }
    }
    if !upgrade || !connection {
        return Err(HandshakeError::MissingUpgradeHeaders);
    }
    if accept.as_deref() != Some(accept_key(key).as_str()) {
        return Err(HandshakeError::BadAccept);
    }
    if let Some(required) = required_protocol {
        if protocol.as_deref() != Some(required) {
            return Err(HandshakeError::Protocol(protocol));
        }
    }
    Ok(Some(end + 4))
}

/// A parsed frame header; the payload is `buf[header_len .. header_len + payload_len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// FIN bit: last fragment of a message.
    pub fin: bool,
    /// Opcode (`OP_*`).
    pub opcode: u8,
    /// RSV1: the message this frame starts is compressed (RFC 7692 §6, only with
    /// permessage-deflate agreed, only on a message's first frame).
    pub compressed: bool,
    /// Bytes of header (2, 4 or 10; servers never mask).
    pub header_len: usize,
    /// Payload bytes.
    pub payload_len: usize,
}

impl FrameHeader {
    /// Header plus payload bytes.
    pub fn total_len(&self) -> usize {
        self.header_len + self.payload_len
    }
}

/// The result of looking at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parse {
    /// A whole frame is in the buffer.
    Frame(FrameHeader),
    /// More bytes are needed; `needed` is the total frame length when the header is complete,
    /// otherwise the header length needed so far (a lower bound).
    Incomplete {
        /// Minimum total bytes required from the start of the buffer.
        needed: usize,
    },
}

/// A protocol violation by the server (RFC 6455 §5, §7.4.1 close code 1002).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// An RSV bit is set though no extension defines it (§5.2; RFC 7692 §6: RSV1 only on the
    /// first frame of a data message, and only with permessage-deflate agreed).
    ReservedBits(u8),
    /// The server masked a frame (§5.1).
    MaskedServerFrame,
    /// Opcode 0x3–0x7 or 0xB–0xF (§5.2).
    UnknownOpcode(u8),
    /// A control frame longer than 125 bytes or fragmented (§5.5).
    BadControlFrame(u8),
    /// The 64-bit length has its top bit set, or exceeds [`MAX_PAYLOAD`].
    BadLength(u64),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReservedBits(b) => write!(f, "frame with RSV bits set (first byte {b:#04x})"),
            Self::MaskedServerFrame => write!(f, "server sent a masked frame (RFC 6455 §5.1)"),
            Self::UnknownOpcode(o) => write!(f, "unknown opcode {o:#x}"),
            Self::BadControlFrame(o) => {
                write!(f, "control frame {o:#x} fragmented or over 125 bytes")
            }
            Self::BadLength(l) => write!(f, "frame length {l} out of range"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Reads one server frame header at the start of `buf` (RFC 6455 §5.2), without copying.
///
/// Errors: [`FrameError`] for RSV bits, a masked server frame, an unknown opcode, a bad control
/// frame or a length over [`MAX_PAYLOAD`].
#[inline]
pub fn parse_frame(buf: &[u8]) -> Result<Parse, FrameError> {
    parse_frame_with(buf, false)
}

/// [`parse_frame`] on a connection where permessage-deflate was agreed when `deflate`: RSV1 is
/// then allowed on text and binary frames (RFC 7692 §6) and reported as
/// [`FrameHeader::compressed`]. RSV1 on a control frame is refused either way; on a
/// continuation frame the caller refuses it (it knows where a message starts).
#[inline]
pub fn parse_frame_with(buf: &[u8], deflate: bool) -> Result<Parse, FrameError> {
    if buf.len() < 2 {
        return Ok(Parse::Incomplete { needed: 2 });
    }
    let b0 = buf[0];
    let b1 = buf[1];
    let compressed = b0 & 0x40 != 0;
    if b0 & 0x30 != 0 || (compressed && (!deflate || b0 & 0x08 != 0)) {
        return Err(FrameError::ReservedBits(b0));
    }
    if b1 & 0x80 != 0 {
        return Err(FrameError::MaskedServerFrame);
    }
    let fin = b0 & 0x80 != 0;
    let opcode = b0 & 0x0F;
    match opcode {
        OP_CONTINUATION | OP_TEXT | OP_BINARY => {}
        OP_CLOSE | OP_PING | OP_PONG => {
            if !fin || (b1 & 0x7F) > 125 {
                return Err(FrameError::BadControlFrame(opcode));
            }
        }
        other => return Err(FrameError::UnknownOpcode(other)),
    }
    let (header_len, payload_len) = match b1 & 0x7F {
        126 => {
            if buf.len() < 4 {
                return Ok(Parse::Incomplete { needed: 4 });
            }
            (4, u16::from_be_bytes([buf[2], buf[3]]) as u64)
        }
        127 => {
            if buf.len() < 10 {
                return Ok(Parse::Incomplete { needed: 10 });
            }
            let mut len = [0u8; 8];
            len.copy_from_slice(&buf[2..10]);
            let len = u64::from_be_bytes(len);
            if len > MAX_PAYLOAD {
                return Err(FrameError::BadLength(len));
            }
            (10, len)
        }
        small => (2, small as u64),
    };
    let payload_len = payload_len as usize;
    let total = header_len + payload_len;
    if buf.len() < total {
        return Ok(Parse::Incomplete { needed: total });
    }
    Ok(Parse::Frame(FrameHeader {
        fin,
        opcode,
        compressed,
        header_len,
        payload_len,
    }))
}

/// Appends a frame header to `out`: the first byte (FIN and opcode), then the payload length
/// in its shortest form (7 bits, or 126 + 16 bits, or 127 + 64 bits), with the mask bit set
/// when `masked` (RFC 6455 §5.2).
fn push_header(out: &mut Vec<u8>, fin: bool, opcode: u8, masked: bool, len: usize) {
    out.push(if fin { 0x80 } else { 0 } | (opcode & 0x0F));
    let mask_bit = if masked { 0x80 } else { 0 };
    if len < 126 {
        out.push(mask_bit | len as u8);
    } else if let Ok(short) = u16::try_from(len) {
        out.push(mask_bit | 126);
        out.extend_from_slice(&short.to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// Appends one masked client frame to `out` (RFC 6455 §5.2–5.3): FIN set when `fin` (clear
/// for all but the last fragment of a message), the low 4 bits of `opcode`, the payload XORed
/// with `mask`. Servers must reject unmasked client frames, so this is what a client sends.
pub fn encode_client_frame(
    fin: bool,
    opcode: u8,
    payload: &[u8],
    mask: [u8; 4],
    out: &mut Vec<u8>,
) {
    push_header(out, fin, opcode, true, payload.len());
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i & 3]));
}

/// Appends one unmasked server frame to `out` (RFC 6455 §5.2): FIN set when `fin`, the low 4
/// bits of `opcode`, the payload as is. What a server (or a test standing in for one) sends.
pub fn encode_server_frame(fin: bool, opcode: u8, payload: &[u8], out: &mut Vec<u8>) {
    push_header(out, fin, opcode, false, payload.len());
    out.extend_from_slice(payload);
}

/// Appends a masked client text frame with a fresh random mask key.
pub fn encode_text(payload: &[u8], out: &mut Vec<u8>) {
    encode_client_frame(true, OP_TEXT, payload, rand::random(), out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        encode_server_frame(fin, opcode, payload, &mut v);
        v
    }

    #[test]
    fn accept_key_matches_rfc_example() {
        // RFC 6455 §1.3.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(new_key().len(), 24);
    }

    #[test]
    fn parses_7_16_and_64_bit_lengths() {
        for len in [0usize, 5, 125, 126, 9_400, 65_535, 65_536, 200_000] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let bytes = server_frame(true, OP_TEXT, &payload);
            let Parse::Frame(h) = parse_frame(&bytes).unwrap() else {
                panic!("incomplete at {len}")
            };
            assert_eq!(h.payload_len, len);
            assert_eq!(
                h.header_len,
                match len {
                    0..=125 => 2,
                    126..=65535 => 4,
                    _ => 10,
                }
            );
            assert_eq!(&bytes[h.header_len..h.total_len()], &payload[..]);
        }
    }

    #[test]
    fn frames_split_across_reads_are_reassembled_by_feeding_more_bytes() {
        let mut stream = Vec::new();
        let payloads: Vec<Vec<u8>> = vec![
            b"{\"type\":\"welcome\"}".to_vec(),
            vec![b'x'; 9_400],
            vec![b'y'; 70_000],
            b"{\"type\":\"ping\",\"message\":1}".to_vec(),
        ];
        for p in &payloads {
            stream.extend(server_frame(true, OP_TEXT, p));
        }
        // Feed the bytes in awkward chunk sizes, like short reads from a socket.
        for chunk in [1usize, 3, 7, 1000, 4096] {
            let mut buf: Vec<u8> = Vec::new();
            let mut got: Vec<Vec<u8>> = Vec::new();
            let mut fed = 0;
            let mut start = 0;
            while fed < stream.len() || start < buf.len() {
                loop {
                    match parse_frame(&buf[start..]).unwrap() {
                        Parse::Frame(h) => {
                            got.push(buf[start + h.header_len..start + h.total_len()].to_vec());
                            start += h.total_len();
                        }
                        Parse::Incomplete { needed } => {
                            assert!(needed > buf.len() - start);
                            break;
                        }
                    }
                }
                if fed == stream.len() {
                    break;
                }
                let n = chunk.min(stream.len() - fed);
                buf.extend_from_slice(&stream[fed..fed + n]);
                fed += n;
            }
            assert_eq!(got, payloads, "chunk size {chunk}");
        }
    }

    #[test]
    fn reports_needed_bytes_for_partial_headers() {
        let bytes = server_frame(true, OP_TEXT, &[0u8; 300]);
        assert_eq!(
            parse_frame(&bytes[..1]),
            Ok(Parse::Incomplete { needed: 2 })
        );
        assert_eq!(
            parse_frame(&bytes[..3]),
            Ok(Parse::Incomplete { needed: 4 })
        );
        assert_eq!(
            parse_frame(&bytes[..10]),
            Ok(Parse::Incomplete { needed: 304 })
        );
        let big = server_frame(true, OP_BINARY, &[0u8; 70_000]);
        assert_eq!(parse_frame(&big[..9]), Ok(Parse::Incomplete { needed: 10 }));
    }

    #[test]
    fn rejects_protocol_violations() {
        assert_eq!(
            parse_frame(&[0xC1, 0x00]),
            Err(FrameError::ReservedBits(0xC1))
        );
        assert_eq!(
            parse_frame(&[0x81, 0x80, 0, 0, 0, 0]),
            Err(FrameError::MaskedServerFrame)
        );
        assert_eq!(
            parse_frame(&[0x83, 0x00]),
            Err(FrameError::UnknownOpcode(3))
        );
        assert_eq!(
            parse_frame(&[0x09, 0x00]),
            Err(FrameError::BadControlFrame(OP_PING))
        );
        assert_eq!(
            parse_frame(&[0x89, 126, 0, 200]),
            Err(FrameError::BadControlFrame(OP_PING))
        );
        let mut huge = vec![0x82, 127];
        huge.extend_from_slice(&u64::MAX.to_be_bytes());
        assert!(matches!(parse_frame(&huge), Err(FrameError::BadLength(_))));
    }

    #[test]
    fn fragments_and_control_frames_parse() {
        let first = server_frame(false, OP_TEXT, b"hel");
        let Parse::Frame(h) = parse_frame(&first).unwrap() else {
            panic!()
        };
        assert!(!h.fin);
        let cont = server_frame(true, OP_CONTINUATION, b"lo");
        let Parse::Frame(h) = parse_frame(&cont).unwrap() else {
            panic!()
        };
        assert!(h.fin && h.opcode == OP_CONTINUATION);
        let ping = server_frame(true, OP_PING, b"p");
        assert!(matches!(
            parse_frame(&ping),
            Ok(Parse::Frame(FrameHeader {
                opcode: OP_PING,
                payload_len: 1,
                ..
            }))
        ));
    }

    #[test]
    fn length_forms_and_fin_bit() {
        for (len, header) in [(125usize, 2usize), (126, 4), (65_535, 4), (65_536, 10)] {
            let payload = vec![7u8; len];
            let server = server_frame(true, OP_BINARY, &payload);
            assert_eq!(server.len(), header + len, "{len}");
            assert_eq!(&server[header..], &payload[..]);
            let mut client = Vec::new();
            encode_client_frame(false, OP_CONTINUATION, &payload, [0; 4], &mut client);
            assert_eq!(client[0], 0x00, "FIN clear, continuation");
            assert_eq!(client.len(), header + 4 + len, "{len}");
        }
    }

    #[test]
    fn client_frames_are_masked() {
        let mask = [1, 2, 3, 4];
        for len in [3usize, 200, 70_000] {
            let payload: Vec<u8> = (0..len).map(|i| (i % 200) as u8).collect();
            let mut out = Vec::new();
            encode_client_frame(true, OP_TEXT, &payload, mask, &mut out);
            assert_eq!(out[0], 0x81);
            assert_eq!(out[1] & 0x80, 0x80, "mask bit set");
            let (hl, plen) = match out[1] & 0x7F {
                126 => (4, u16::from_be_bytes([out[2], out[3]]) as usize),
                127 => (
                    10,
                    u64::from_be_bytes(out[2..10].try_into().unwrap()) as usize,
                ),
                n => (2, n as usize),
            };
            assert_eq!(plen, len);
            assert_eq!(&out[hl..hl + 4], &mask);
            let unmasked: Vec<u8> = out[hl + 4..]
                .iter()
                .enumerate()
                .map(|(i, b)| b ^ mask[i % 4])
                .collect();
            assert_eq!(unmasked, payload);
        }
    }

    #[test]
    fn handshake_response_is_checked() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let ok = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: actioncable-v1-json\r\n\r\n\x81\x12{\"type\":\"welcome\"}";
        let head = parse_upgrade_response(ok, key, Some("actioncable-v1-json"))
            .unwrap()
            .unwrap();
        assert_eq!(&ok[head..head + 2], b"\x81\x12");
        assert_eq!(parse_upgrade_response(&ok[..40], key, None), Ok(None));
        assert_eq!(
            parse_upgrade_response(ok, "b3RoZXIga2V5IGhlcmUhIQ==", None),
            Err(HandshakeError::BadAccept)
        );
        let no_proto =
            b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\
Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        assert_eq!(
            parse_upgrade_response(no_proto, key, Some("actioncable-v1-json")),
            Err(HandshakeError::Protocol(None))
        );
        assert_eq!(
            parse_upgrade_response(no_proto, key, None),
            Ok(Some(no_proto.len()))
        );
        let denied = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\r\nPage not found";
        assert!(matches!(
            parse_upgrade_response(denied, key, None),
            Err(HandshakeError::NotSwitching(404, _))
        ));
    }

    #[test]
    fn upgrade_request_carries_origin_cookie_and_protocols() {
        let req = UpgradeRequest {
            host: "127.0.0.1:3000",
            path: "/cable",
            origin: "http://127.0.0.1:3000",
            cookie: Some("session_token=abc"),
            protocols: ACTION_CABLE_PROTOCOLS,
            key: "k",
            extensions: Some(crate::deflate::OFFER),
        }
        .to_bytes();
        let text = String::from_utf8(req).unwrap();
        assert!(text.starts_with("GET /cable HTTP/1.1\r\nHost: 127.0.0.1:3000\r\n"));
        assert!(text.contains("\r\nOrigin: http://127.0.0.1:3000\r\n"));
        assert!(text.contains("\r\nCookie: session_token=abc\r\n"));
        assert!(text.contains(
            "\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
        ));
        assert!(text.contains(
            "\r\nSec-WebSocket-Protocol: actioncable-v1-json, actioncable-unsupported\r\n"
        ));
        assert!(text.ends_with("\r\n\r\n"));
    }

    #[test]
    fn rsv1_only_with_deflate_and_only_on_data_frames() {
        // RSV1 + text: refused without deflate, a compressed first frame with it.
        assert_eq!(
            parse_frame(&[0xC1, 0x00]),
            Err(FrameError::ReservedBits(0xC1))
        );
        assert!(matches!(
            parse_frame_with(&[0xC1, 0x00], true),
            Ok(Parse::Frame(FrameHeader {
                compressed: true,
                opcode: OP_TEXT,
                ..
            }))
        ));
        // RSV1 on a ping, RSV2 and RSV3: refused even with deflate.
        for b0 in [0xC9, 0xA1, 0x91] {
            assert_eq!(
                parse_frame_with(&[b0, 0x00], true),
                Err(FrameError::ReservedBits(b0))
            );
        }
        let head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
                     sec-websocket-extensions: permessage-deflate; server_no_context_takeover";
        assert_eq!(
            response_header(head, "sec-websocket-extensions").as_deref(),
            Some("permessage-deflate; server_no_context_takeover")
        );
        assert_eq!(response_header(head, "cookie"), None);
    }
}
