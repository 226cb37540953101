//! The inbound half of a cable connection: client frames in, whole messages out, bounded.
//!
//! Frames are parsed here (RFC 6455 §5.2): reserved bits must be clear, but for RSV1 on the
//! first frame of a data message once permessage-deflate was agreed (RFC 7692 §6: the message
//! is compressed; RSV1 on a control or continuation frame, or without the agreement, is a
//! protocol error, 1002), opcodes must be defined, client frames must be masked (§5.1),
//! control frames must be final and carry at most 125 bytes (§5.5), and a close frame's status
//! code and reason are validated (§7.4: 1000–1003, 1007–1013 and 3000–4999 are accepted; a
//! 1-byte close payload is refused; the reason must be UTF-8). A message sent as many small
//! fragments is assembled here, and the running total is checked against the limit before each
//! fragment is read: no message grows past `max_message_bytes` in memory, however it is split.
//! Text is checked for UTF-8 as the fragments arrive (each byte once), so a bad sequence is
//! refused at the fragment that carries it.
//!
//! **Compressed messages** (RFC 7692 §7.2.2, [`super::deflate::Inflater`]): the compressed bytes
//! of all the fragments are gathered (no more than the limit of them either), then inflated
//! into at most `max_message_bytes` bytes: the limit bounds what a message inflates to, and a
//! message that would inflate past it closes the connection with 1009 once the limit is
//! passed. Data that does not inflate (corrupt, or referring back past the message's start
//! though the client agreed not to keep its context) closes it with 1007, as invalid UTF-8
//! once inflated does.
//!
//! **Memory.** An idle reader holds no buffer at all: it waits for a frame's first two bytes in
//! a 14-byte header array inside the read future. A payload buffer is allocated only once a
//! frame's length is known, sized to that frame (or grown by a continuation's length), and is
//! handed out with the message (a single-frame text message becomes its `String` without a
//! copy). The cost is two or three `read()` calls per client frame (header, extended length and
//! mask, payload), which is cheap for Action Cable's inbound traffic: a few commands per
//! connection, nothing per broadcast.
//!
//! RFC 6455 close codes for the errors: [`ReadError::close_code`].

use tokio::io::{AsyncRead, AsyncReadExt};

use super::deflate::{InflateError, Inflater};
use super::protocol::close_code;
use crate::fanout::deflate::RSV1;

/// One inbound message or control frame the connection must act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// A whole text message (all fragments), valid UTF-8.
    Text(String),
    /// A whole binary message; Action Cable ignores these, so only the length is kept.
    Binary(usize),
    /// A ping with its payload (at most 125 bytes); answer with a pong carrying it.
    Ping(Vec<u8>),
    /// The client's close frame, with its status code when it sent one (None: no code, 1005).
    Close(Option<u16>),
}

/// Why reading stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A frame, or the fragments of one message together, exceed the limit (close 1009).
    #[error("message larger than {limit} bytes")]
    TooBig {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A text message is not UTF-8, or a close reason is not (close 1007).
    #[error("invalid UTF-8 in a text message")]
    InvalidUtf8,
    /// A compressed message does not inflate: not DEFLATE data, or data that refers back past
    /// the message's first byte though the client agreed to `client_no_context_takeover`
    /// (RFC 7692 §7.1.1.2, §7.2.2; close 1007).
    #[error("invalid compressed message")]
    InvalidCompressed,
    /// Anything else RFC 6455 forbids: unmasked frames, reserved bits, bad opcodes, fragmented
    /// control frames, continuation without a start, a new message inside a fragmented one,
    /// bad close codes (close 1002).
    #[error("WebSocket protocol error: {0}")]
    Protocol(String),
    /// The peer went away (EOF or an I/O error) without a close frame: nothing more to send.
    #[error("connection lost")]
    Gone,
}

impl ReadError {
    /// The close code to answer with (RFC 6455 §7.4.1), or None when the socket is gone.
    pub fn close_code(&self) -> Option<u16> {
        match self {
            Self::TooBig { .. } => Some(close_code::MESSAGE_TOO_BIG),
            Self::InvalidUtf8 | Self::InvalidCompressed => Some(close_code::INVALID_PAYLOAD),
            Self::Protocol(_) => Some(close_code::PROTOCOL_ERROR),
            Self::Gone => None,
        }
    }
}

/// RFC 6455 §5.2 opcodes this reader accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpCode {
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl OpCode {
    fn from_bits(bits: u8) -> Result<Self, ReadError> {
        Ok(match bits {
            0x0 => Self::Continuation,
            0x1 => Self::Text,
            0x2 => Self::Binary,
            0x8 => Self::Close,
            0x9 => Self::Ping,
            0xA => Self::Pong,
            other => return Err(ReadError::Protocol(format!("reserved opcode {other:#x}"))),
        })
    }

    fn is_control(self) -> bool {
        matches!(self, Self::Close | Self::Ping | Self::Pong)
    }
}

/// A parsed frame header: everything but the payload.
#[derive(Clone, Copy, Debug)]
struct Head {
    fin: bool,
    /// RSV1 on a data message's first frame with permessage-deflate agreed.
    compressed: bool,
    opcode: OpCode,
    len: usize,
    mask: [u8; 4],
}

/// A message being assembled from fragments.
#[derive(Debug)]
struct Partial {
    text: bool,
    /// The fragments are compressed (RSV1 on the first): checked once inflated, at the end.
    compressed: bool,
    bytes: Vec<u8>,
    /// For text: the prefix of `bytes` already known to be valid UTF-8 (an incomplete
    /// sequence of at most 3 bytes may follow it).
    checked: usize,
}

impl Partial {
    /// Checks the bytes appended since the last call; an incomplete trailing sequence is left
    /// for the next fragment. Each byte is examined a bounded number of times.
    fn check_utf8(&mut self) -> Result<(), ReadError> {
        if !self.text || self.compressed {
            return Ok(());
        }
        match std::str::from_utf8(&self.bytes[self.checked..]) {
            Ok(_) => self.checked = self.bytes.len(),
            Err(e) if e.error_len().is_some() => return Err(ReadError::InvalidUtf8),
            Err(e) => self.checked += e.valid_up_to(),
        }
        Ok(())
    }
}

/// Reads whole messages from a server-side WebSocket stream (client frames are masked).
pub struct MessageReader<S> {
    stream: S,
    max_message_bytes: usize,
    partial: Option<Partial>,
    /// Some once permessage-deflate was agreed: RSV1 then marks a compressed message.
    inflater: Option<Inflater>,
}

impl<S> std::fmt::Debug for MessageReader<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageReader")
            .field("max_message_bytes", &self.max_message_bytes)
            .field(
                "partial_bytes",
                &self.partial.as_ref().map(|p| p.bytes.len()),
            )
            .field("inflater", &self.inflater)
            .finish()
    }
}

impl<S: AsyncRead + Unpin> MessageReader<S> {
    /// A reader over `stream` (positioned right after the handshake) that refuses messages
    /// of more than `max_message_bytes` bytes of payload. Allocates nothing until a frame
    /// arrives.
    pub fn new(stream: S, max_message_bytes: usize) -> Self {
        Self {
            stream,
            max_message_bytes,
            partial: None,
            inflater: None,
        }
    }

    /// This reader for a connection that agreed to permessage-deflate (RFC 7692): messages
    /// whose first frame has RSV1 set are inflated with `inflater` (None: no agreement, and
    /// RSV1 is a protocol error).
    #[must_use]
    pub fn inflating(self, inflater: Option<Inflater>) -> Self {
        Self { inflater, ..self }
    }

    /// The next whole message or control frame. Pongs are skipped. After an error the reader
    /// must not be used again. Not cancel-safe: a dropped read may have consumed part of a
    /// frame, so keep the future alive across other events.
    pub async fn read(&mut self) -> Result<Inbound, ReadError> {
        loop {
            let head = self.read_head().await?;
            match head.opcode {
                OpCode::Text | OpCode::Binary => {
                    if self.partial.is_some() {
                        return Err(ReadError::Protocol(
                            "a new message started inside a fragmented one".into(),
                        ));
                    }
                    let text = head.opcode == OpCode::Text;
                    let mut bytes = Vec::new();
                    self.read_payload(&head, &mut bytes).await?;
                    if head.fin {
                        return self.finish(text, head.compressed, bytes);
                    }
                    let mut partial = Partial {
                        text,
                        compressed: head.compressed,
                        bytes,
                        checked: 0,
                    };
                    partial.check_utf8()?;
                    self.partial = Some(partial);
                }
                OpCode::Continuation => {
                    let Some(mut partial) = self.partial.take() else {
                        return Err(ReadError::Protocol(
                            "continuation frame without a message".into(),
                        ));
                    };
                    if head.len > self.max_message_bytes - partial.bytes.len() {
                        return Err(ReadError::TooBig {
                            limit: self.max_message_bytes,
                        });
                    }
                    self.read_payload(&head, &mut partial.bytes).await?;
                    partial.check_utf8()?;
                    if head.fin {
                        return self.finish(partial.text, partial.compressed, partial.bytes);
                    }
                    self.partial = Some(partial);
                }
                OpCode::Ping => {
                    let mut payload = Vec::new();
                    self.read_payload(&head, &mut payload).await?;
                    return Ok(Inbound::Ping(payload));
                }
                OpCode::Pong => {
                    let mut payload = [0u8; 125];
                    self.read_exact(&mut payload[..head.len]).await?;
                }
                OpCode::Close => {
                    let mut payload = Vec::new();
                    self.read_payload(&head, &mut payload).await?;
                    return close(&payload);
                }
            }
        }
    }

    /// Reads and checks one frame header (2 to 14 bytes), with no heap buffer.
    async fn read_head(&mut self) -> Result<Head, ReadError> {
        let mut head = [0u8; 14];
        self.read_exact(&mut head[..2]).await?;
        let fin = head[0] & 0x80 != 0;
        let opcode = OpCode::from_bits(head[0] & 0x0F)?;
        let compressed = match head[0] & 0x70 {
            0 => false,
            // RFC 7692 §6: "Per-Message Compressed", on a data message's first frame only.
            RSV1 if self.inflater.is_some() => match opcode {
                OpCode::Text | OpCode::Binary => true,
                OpCode::Continuation => {
                    return Err(ReadError::Protocol("RSV1 on a continuation frame".into()))
                }
                _ => return Err(ReadError::Protocol("compressed control frame".into())),
            },
            _ => return Err(ReadError::Protocol("reserved bits set".into())),
        };
        // RFC 6455 §5.1: a server must fail the connection on an unmasked client frame.
        if head[1] & 0x80 == 0 {
            return Err(ReadError::Protocol("unmasked client frame".into()));
        }
        let extended = match head[1] & 0x7F {
            126 => 2,
            127 => 8,
            _ => 0,
        };
        self.read_exact(&mut head[2..2 + extended + 4]).await?;
        let len: u64 = match extended {
            2 => u64::from(u16::from_be_bytes([head[2], head[3]])),
            8 => u64::from_be_bytes([
                head[2], head[3], head[4], head[5], head[6], head[7], head[8], head[9],
            ]),
            _ => u64::from(head[1] & 0x7F),
        };
        let m = 2 + extended;
        let mask = [head[m], head[m + 1], head[m + 2], head[m + 3]];
        if opcode.is_control() {
            if !fin {
                return Err(ReadError::Protocol("fragmented control frame".into()));
            }
            if len > 125 {
                return Err(ReadError::Protocol(
                    "control frame longer than 125 bytes".into(),
                ));
            }
        }
        let len = match usize::try_from(len) {
            Ok(len) if len <= self.max_message_bytes => len,
            _ => {
                return Err(ReadError::TooBig {
                    limit: self.max_message_bytes,
                })
            }
        };
        Ok(Head {
            fin,
            compressed,
            opcode,
            len,
            mask,
        })
    }

    /// Appends the frame's unmasked payload to `out` (which grows by exactly its length).
    async fn read_payload(&mut self, head: &Head, out: &mut Vec<u8>) -> Result<(), ReadError> {
        let start = out.len();
        out.resize(start + head.len, 0);
        self.read_exact(&mut out[start..]).await?;
        for (i, byte) in out[start..].iter_mut().enumerate() {
            *byte ^= head.mask[i & 3];
        }
        Ok(())
    }

    async fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), ReadError> {
        if buf.is_empty() {
            return Ok(());
        }
        self.stream
            .read_exact(buf)
            .await
            .map(|_| ())
            .map_err(|_| ReadError::Gone)
    }
}

/// A close frame's payload: empty, or a status code and a UTF-8 reason (RFC 6455 §5.5.1,
/// §7.4).
fn close(payload: &[u8]) -> Result<Inbound, ReadError> {
    match payload {
        [] => Ok(Inbound::Close(None)),
        [_] => Err(ReadError::Protocol("close frame of 1 byte".into())),
        [hi, lo, reason @ ..] => {
            if std::str::from_utf8(reason).is_err() {
                return Err(ReadError::InvalidUtf8);
            }
            let code = u16::from_be_bytes([*hi, *lo]);
            if !matches!(code, 1000..=1003 | 1007..=1013 | 3000..=4999) {
                return Err(ReadError::Protocol(format!("close code {code}")));
            }
            Ok(Inbound::Close(Some(code)))
        }
    }
}

impl<S> MessageReader<S> {
    /// A whole message's bytes as its [`Inbound`]: inflated first when `compressed` (at most
    /// `max_message_bytes` of them), then checked as UTF-8 when `text`.
    fn finish(
        &mut self,
        text: bool,
        compressed: bool,
        bytes: Vec<u8>,
    ) -> Result<Inbound, ReadError> {
        if !compressed {
            return finish(text, bytes);
        }
        let Some(inflater) = self.inflater.as_mut() else {
            return Err(ReadError::Protocol(
                "compressed message without the extension".into(),
            ));
        };
        match inflater.inflate(&bytes, self.max_message_bytes) {
            Ok(inflated) => finish(text, inflated),
            Err(InflateError::TooBig { limit }) => Err(ReadError::TooBig { limit }),
            Err(InflateError::Invalid) => Err(ReadError::InvalidCompressed),
        }
    }
}

fn finish(text: bool, bytes: Vec<u8>) -> Result<Inbound, ReadError> {
    if text {
        String::from_utf8(bytes)
            .map(Inbound::Text)
            .map_err(|_| ReadError::InvalidUtf8)
    } else {
        Ok(Inbound::Binary(bytes.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A masked client frame.
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        loadgen::ws::encode_client_frame(fin, opcode, payload, [0xa1, 0x02, 0x7c, 0x40], &mut f);
        f
    }

    /// A masked client frame with RSV1 set (RFC 7692's "Per-Message Compressed").
    fn rsv1(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = frame(fin, opcode, payload);
        f[0] |= 0x40;
        f
    }

    /// `text` compressed as a client without context takeover does (RFC 7692 §7.2.1).
    fn deflated(text: &[u8]) -> Vec<u8> {
        let mut c = flate2::Compress::new(flate2::Compression::default(), false);
        let mut out = Vec::with_capacity(text.len() + 64);
        c.compress_vec(text, &mut out, flate2::FlushCompress::Sync)
            .unwrap();
        out.truncate(out.len() - 4);
        out
    }

    async fn read_all(bytes: Vec<u8>, limit: usize) -> (Vec<Inbound>, Option<ReadError>) {
        read_all_with(bytes, limit, false).await
    }

    /// [`read_all`] on a connection that agreed to permessage-deflate when `deflate`.
    async fn read_all_with(
        bytes: Vec<u8>,
        limit: usize,
        deflate: bool,
    ) -> (Vec<Inbound>, Option<ReadError>) {
        let agreed = crate::cable::deflate::Agreed {
            server: crate::fanout::deflate::Deflate::new(15).unwrap(),
            client_context_takeover: false,
        };
        let mut reader = MessageReader::new(std::io::Cursor::new(bytes), limit)
            .inflating(deflate.then(|| Inflater::new(&agreed)));
        let mut out = Vec::new();
        loop {
            match reader.read().await {
                Ok(m) => out.push(m),
                Err(ReadError::Gone) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[tokio::test]
    async fn fragments_interleaved_with_pings_make_one_message() {
        let mut bytes = frame(false, 0x1, b"{\"com");
        bytes.extend(frame(true, 0x9, b"hi"));
        bytes.extend(frame(false, 0x0, b"mand\":"));
        bytes.extend(frame(true, 0xA, b""));
        bytes.extend(frame(true, 0x0, b"1}"));
        bytes.extend(frame(true, 0x8, &1000u16.to_be_bytes()));
        let (out, err) = read_all(bytes, 64).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            out,
            vec![
                Inbound::Ping(b"hi".to_vec()),
                Inbound::Text("{\"command\":1}".into()),
                Inbound::Close(Some(1000)),
            ]
        );
    }

    #[tokio::test]
    async fn a_message_of_exactly_the_limit_passes_and_one_more_byte_does_not() {
        let (out, err) = read_all(frame(true, 0x1, &[b'a'; 100]), 100).await;
        assert!(err.is_none());
        assert_eq!(out, vec![Inbound::Text("a".repeat(100))]);
        let (_, err) = read_all(frame(true, 0x1, &[b'a'; 101]), 100).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1009));
    }

    #[tokio::test]
    async fn many_small_fragments_cannot_grow_past_the_limit() {
        let mut bytes = frame(false, 0x1, b"ab");
        for _ in 0..200 {
            bytes.extend(frame(false, 0x0, b"ab"));
        }
        bytes.extend(frame(true, 0x0, b"ab"));
        let (out, err) = read_all(bytes.clone(), 100).await;
        assert!(out.is_empty());
        assert_eq!(err.and_then(|e| e.close_code()), Some(1009));
        let (out, err) = read_all(bytes, 1000).await;
        assert!(err.is_none());
        assert_eq!(out, vec![Inbound::Text("ab".repeat(202))]);
    }

    #[tokio::test]
    async fn invalid_utf8_is_1007_even_split_across_fragments() {
        let (_, err) = read_all(frame(true, 0x1, b"a\xffb"), 100).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1007));
        // "é" split between two fragments is fine…
        let mut ok = frame(false, 0x1, b"caf\xc3");
        ok.extend(frame(true, 0x0, b"\xa9"));
        let (out, err) = read_all(ok, 100).await;
        assert!(err.is_none());
        assert_eq!(out, vec![Inbound::Text("café".into())]);
        // …a bad continuation byte is refused at its fragment, before the message ends.
        let mut bad = frame(false, 0x1, b"caf\xc3");
        bad.extend(frame(false, 0x0, b"("));
        let (_, err) = read_all(bad, 100).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1007));
        // A message ending inside a sequence is refused too.
        let mut cut = frame(false, 0x1, b"caf");
        cut.extend(frame(true, 0x0, b"\xc3"));
        let (_, err) = read_all(cut, 100).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1007));
    }

    #[tokio::test]
    async fn fragment_order_violations_are_protocol_errors() {
        let (_, err) = read_all(frame(true, 0x0, b"x"), 100).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1002));
        let mut nested = frame(false, 0x1, b"x");
        nested.extend(frame(true, 0x1, b"y"));
        let (_, err) = read_all(nested, 100).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1002));
        let (_, err) = read_all(frame(false, 0x9, b"x"), 100).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1002));
    }

    #[tokio::test]
    async fn unmasked_client_frames_are_protocol_errors() {
        let (out, err) = read_all(vec![0x81, 0x02, b'h', b'i'], 100).await;
        assert!(out.is_empty());
        assert_eq!(err.and_then(|e| e.close_code()), Some(1002));
    }

    #[tokio::test]
    async fn binary_messages_are_reported_by_length() {
        let mut bytes = frame(false, 0x2, &[0xff; 10]);
        bytes.extend(frame(true, 0x0, &[0xfe; 5]));
        let (out, err) = read_all(bytes, 100).await;
        assert!(err.is_none());
        assert_eq!(out, vec![Inbound::Binary(15)]);
    }

    #[tokio::test]
    async fn compressed_messages_are_inflated_whole_or_fragmented() {
        let command = br#"{"command":"subscribe","identifier":"{\"channel\":\"C\"}"}"#;
        let z = deflated(command);
        let mut bytes = rsv1(true, 0x1, &z);
        // Fragmented: RSV1 on the first frame only, a ping between.
        bytes.extend(rsv1(false, 0x1, &z[..3]));
        bytes.extend(frame(true, 0x9, b"p"));
        bytes.extend(frame(true, 0x0, &z[3..]));
        // Uncompressed messages still pass (RSV1 clear, RFC 7692 §6).
        bytes.extend(frame(true, 0x1, b"plain"));
        let (out, err) = read_all_with(bytes, 1000, true).await;
        assert!(err.is_none(), "{err:?}");
        let text = String::from_utf8(command.to_vec()).unwrap();
        assert_eq!(
            out,
            vec![
                Inbound::Text(text.clone()),
                Inbound::Ping(b"p".to_vec()),
                Inbound::Text(text),
                Inbound::Text("plain".into()),
            ]
        );
    }

    #[tokio::test]
    async fn rsv1_is_a_protocol_error_without_the_extension_on_control_and_continuation_frames() {
        let z = deflated(b"hello");
        let (_, err) = read_all_with(rsv1(true, 0x1, &z), 1000, false).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1002));
        for opcode in [0x8, 0x9, 0xA] {
            let (_, err) = read_all_with(rsv1(true, opcode, b""), 1000, true).await;
            assert_eq!(err.and_then(|e| e.close_code()), Some(1002), "{opcode:#x}");
        }
        let mut bytes = rsv1(false, 0x1, &z[..2]);
        bytes.extend(rsv1(true, 0x0, &z[2..]));
        let (_, err) = read_all_with(bytes, 1000, true).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1002));
        // RSV2 and RSV3 stay reserved.
        let mut f = frame(true, 0x1, b"x");
        f[0] |= 0x20;
        let (_, err) = read_all_with(f, 1000, true).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1002));
    }

    #[tokio::test]
    async fn the_limit_applies_to_what_a_message_inflates_to() {
        let z = deflated(&[b'a'; 100]);
        let (out, err) = read_all_with(rsv1(true, 0x1, &z), 100, true).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(out, vec![Inbound::Text("a".repeat(100))]);
        let z = deflated(&[b'a'; 101]);
        assert!(z.len() < 100);
        let (_, err) = read_all_with(rsv1(true, 0x1, &z), 100, true).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1009));
    }

    #[tokio::test]
    async fn bad_compressed_data_and_bad_utf8_inside_are_1007() {
        let (_, err) = read_all_with(rsv1(true, 0x1, &[0xff, 0xfe, 0xfd]), 100, true).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1007));
        let (_, err) = read_all_with(rsv1(true, 0x1, &deflated(b"a\xffb")), 100, true).await;
        assert_eq!(err.and_then(|e| e.close_code()), Some(1007));
        // Compressed binary messages are inflated too (and reported by length).
        let (out, err) = read_all_with(rsv1(true, 0x2, &deflated(&[7; 50])), 100, true).await;
        assert!(err.is_none(), "{err:?}");
        assert_eq!(out, vec![Inbound::Binary(50)]);
    }
}
