//! The inbound half of a cable connection: client frames in, whole messages out, bounded.
//!
//! Frames are parsed here (RFC 6455 §5.2): reserved bits must be clear (no extension is ever
//! negotiated), opcodes must be defined, client frames must be masked (§5.1), control frames
//! must be final and carry at most 125 bytes (§5.5), and a close frame's status code and
//! reason are validated (§7.4: 1000–1003, 1007–1013 and 3000–4999 are accepted; a 1-byte close
//! payload is refused; the reason must be UTF-8). A message sent as many small fragments is
//! assembled here, and the running total is checked against the limit before each fragment is
//! read: no message grows past `max_message_bytes` in memory, however it is split. Text is
//! checked for UTF-8 as the fragments arrive (each byte once), so a bad sequence is refused at
//! the fragment that carries it.
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

use super::protocol::close_code;

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
            Self::InvalidUtf8 => Some(close_code::INVALID_PAYLOAD),
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
    opcode: OpCode,
    len: usize,
    mask: [u8; 4],
}

/// A message being assembled from fragments.
#[derive(Debug)]
struct Partial {
    text: bool,
    bytes: Vec<u8>,
    /// For text: the prefix of `bytes` already known to be valid UTF-8 (an incomplete
    /// sequence of at most 3 bytes may follow it).
    checked: usize,
}

impl Partial {
    /// Checks the bytes appended since the last call; an incomplete trailing sequence is left
    /// for the next fragment. Each byte is examined a bounded number of times.
    fn check_utf8(&mut self) -> Result<(), ReadError> {
        if !self.text {
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
}

impl<S> std::fmt::Debug for MessageReader<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageReader")
            .field("max_message_bytes", &self.max_message_bytes)
            .field(
                "partial_bytes",
                &self.partial.as_ref().map(|p| p.bytes.len()),
            )
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
        }
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
                        return finish(text, bytes);
                    }
                    let mut partial = Partial {
                        text,
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
                        return finish(partial.text, partial.bytes);
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
        if head[0] & 0x70 != 0 {
            return Err(ReadError::Protocol("reserved bits set".into()));
        }
        let fin = head[0] & 0x80 != 0;
        let opcode = OpCode::from_bits(head[0] & 0x0F)?;
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

    async fn read_all(bytes: Vec<u8>, limit: usize) -> (Vec<Inbound>, Option<ReadError>) {
        let mut reader = MessageReader::new(std::io::Cursor::new(bytes), limit);
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
}
