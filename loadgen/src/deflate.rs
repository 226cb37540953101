//! permessage-deflate (RFC 7692) on the client side: the offer, the check of the server's
//! answer, and the inflating of compressed server messages.
//!
//! - **Offer** ([`OFFER`], §5.1): what Chromium sends, `permessage-deflate;
//!   client_max_window_bits`. The loadgen sends no compressed messages of its own (its
//!   commands are a few dozen bytes), so it needs nothing from the server for its direction.
//! - **Answer** ([`Negotiated::from_response`], §5.1, §7.1): the server's
//!   `Sec-WebSocket-Extensions` must name `permessage-deflate` (or nothing: the connection
//!   then goes on uncompressed); a parameter the RFC does not define for answers, or one
//!   twice, fails the connection, as §5.1 requires of a client. `server_no_context_takeover`
//!   says each server message is compressed on its own, so the inflater is reset after each.
//! - **Inflating** ([`Inflater`], §7.2.2): a message whose first frame has RSV1 set is
//!   decompressed after its last frame with `00 00 ff ff` appended, into at most
//!   [`crate::ws::MAX_PAYLOAD`] bytes. The inflater always uses a 32 KiB window, which reads
//!   a message compressed with any smaller `server_max_window_bits` too.
//!
//! The wire bytes the loadgen counts are the compressed ones (what a socket reads), so
//! `wire_bytes_per_receipt` in a report compares compressed and plain runs directly.

use flate2::{Decompress, FlushDecompress, Status};

/// The `Sec-WebSocket-Extensions` offer of `--deflate`: Chromium's (RFC 7692 §7.1.2.2).
pub const OFFER: &str = "permessage-deflate; client_max_window_bits";

/// The trailer a sender strips from every compressed message (RFC 7692 §7.2.1) and a
/// receiver appends before inflating (§7.2.2).
const TRAILER: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// What the server agreed to, read from its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// The server compresses each message on its own (`server_no_context_takeover`).
    pub server_no_context_takeover: bool,
    /// `server_max_window_bits`, when the server named one (8 to 15).
    pub server_max_window_bits: Option<u8>,
}

impl Negotiated {
    /// Reads the server's `Sec-WebSocket-Extensions` answer (`None`: no header).
    ///
    /// Returns `Ok(None)` when the server agreed to no extension, `Ok(Some(_))` for
    /// `permessage-deflate` with its parameters. Errors: another extension (none was
    /// offered), more than one, an unknown or repeated parameter, a window size outside 8 to
    /// 15 (RFC 7692 §5.1: the client must fail the connection).
    pub fn from_response(header: Option<&str>) -> Result<Option<Self>, String> {
        let Some(header) = header.map(str::trim).filter(|h| !h.is_empty()) else {
            return Ok(None);
        };
        if header.contains(',') {
            return Err(format!(
                "server agreed to more than one extension: {header:?}"
            ));
        }
        let mut parts = header.split(';').map(str::trim);
        if parts.next() != Some("permessage-deflate") {
            return Err(format!(
                "server agreed to an extension not offered: {header:?}"
            ));
        }
        let mut agreed = Self {
            server_no_context_takeover: false,
            server_max_window_bits: None,
        };
        let (mut seen_client_bits, mut seen_client_nct) = (false, false);
        for param in parts {
            let (name, value) = match param.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
                None => (param, None),
            };
            let repeated = match (name, value) {
                ("server_no_context_takeover", None) => {
                    std::mem::replace(&mut agreed.server_no_context_takeover, true)
                }
                ("client_no_context_takeover", None) => {
                    std::mem::replace(&mut seen_client_nct, true)
                }
                ("server_max_window_bits", Some(v)) => agreed
                    .server_max_window_bits
                    .replace(window_bits(v)?)
                    .is_some(),
                ("client_max_window_bits", Some(v)) => {
                    window_bits(v)?;
                    std::mem::replace(&mut seen_client_bits, true)
                }
                _ => return Err(format!("bad permessage-deflate parameter {param:?}")),
            };
            if repeated {
                return Err(format!("permessage-deflate parameter {name} twice"));
            }
        }
        Ok(Some(agreed))
    }
}

/// A window size parameter's value: 8 to 15 (RFC 7692 §7.1.2).
fn window_bits(v: &str) -> Result<u8, String> {
    v.parse::<u8>()
        .ok()
        .filter(|b| (8..=15).contains(b))
        .ok_or_else(|| format!("window bits {v:?} outside 8 to 15"))
}

/// The inflater of one connection's compressed server messages.
pub struct Inflater {
    z: Decompress,
    reset_each: bool,
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflater")
            .field("reset_each", &self.reset_each)
            .finish()
    }
}

impl Inflater {
    /// An inflater for what `agreed` says: reset after every message when the server keeps
    /// no context, otherwise one window carried across messages (§7.2.2).
    pub fn new(agreed: Negotiated) -> Self {
        Self {
            z: Decompress::new(false),
            reset_each: agreed.server_no_context_takeover,
        }
    }

    /// Inflates one message's compressed payload (its frames joined) into `out`, replacing
    /// what `out` held.
    ///
    /// Errors: the payload is not raw DEFLATE, or inflates past [`crate::ws::MAX_PAYLOAD`]
    /// bytes (the connection is then failed, as a client would with 1007 or 1009).
    pub fn inflate(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        out.clear();
        let r = self
            .feed(payload, out)
            .and_then(|()| self.feed(&TRAILER, out));
        if self.reset_each || r.is_err() {
            self.z.reset(false);
        }
        r
    }

    fn feed(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        loop {
            if out.capacity() - out.len() < 4096 {
                if out.len() as u64 >= crate::ws::MAX_PAYLOAD {
                    return Err("compressed message inflates past the payload limit".into());
                }
                out.reserve(out.len().max(16 * 1024));
            }
            let before = self.z.total_in();
            let status = self
                .z
                .decompress_vec(input, out, FlushDecompress::Sync)
                .map_err(|e| format!("inflating a compressed message: {e}"))?;
            input = &input[(self.z.total_in() - before) as usize..];
            match status {
                Status::StreamEnd => return Ok(()),
                _ if input.is_empty() && out.capacity() > out.len() => return Ok(()),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compress, Compression, FlushCompress};

    fn compress(data: &[u8], z: &mut Compress) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len() + 64);
        z.compress_vec(data, &mut out, FlushCompress::Sync).unwrap();
        assert!(out.ends_with(&TRAILER));
        out.truncate(out.len() - 4);
        out
    }

    #[test]
    fn answers_are_read_or_refused_as_rfc_7692_says() {
        assert_eq!(Negotiated::from_response(None), Ok(None));
        assert_eq!(
            Negotiated::from_response(Some(
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover"
            )),
            Ok(Some(Negotiated {
                server_no_context_takeover: true,
                server_max_window_bits: None
            }))
        );
        assert_eq!(
            Negotiated::from_response(Some("permessage-deflate; server_max_window_bits=10")),
            Ok(Some(Negotiated {
                server_no_context_takeover: false,
                server_max_window_bits: Some(10)
            }))
        );
        for bad in [
            "x-webkit-deflate-frame",
            "permessage-deflate, permessage-deflate",
            "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; mystery",
        ] {
            assert!(Negotiated::from_response(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn messages_inflate_with_and_without_context_takeover() {
        let msg = b"{\"identifier\":\"x\",\"message\":\"<turbo-stream>hello hello hello</turbo-stream>\"}";
        // No context takeover: each message compressed by a fresh compressor.
        let agreed = Negotiated {
            server_no_context_takeover: true,
            server_max_window_bits: None,
        };
        let mut inflater = Inflater::new(agreed);
        let mut out = Vec::new();
        for _ in 0..3 {
            let wire = compress(msg, &mut Compress::new(Compression::new(5), false));
            inflater.inflate(&wire, &mut out).unwrap();
            assert_eq!(out, msg);
        }
        // Context takeover: one compressor, later messages refer back into earlier ones.
        let mut inflater = Inflater::new(Negotiated {
            server_no_context_takeover: false,
            ..agreed
        });
        let mut z = Compress::new(Compression::new(5), false);
        let first = compress(msg, &mut z);
        let second = compress(msg, &mut z);
        assert!(second.len() < first.len(), "the second refers back");
        for wire in [first, second] {
            inflater.inflate(&wire, &mut out).unwrap();
            assert_eq!(out, msg);
        }
    }

    #[test]
    fn large_messages_and_garbage() {
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let wire = compress(&big, &mut Compress::new(Compression::new(5), false));
        let mut inflater = Inflater::new(Negotiated {
            server_no_context_takeover: true,
            server_max_window_bits: None,
        });
        let mut out = Vec::new();
        inflater.inflate(&wire, &mut out).unwrap();
        assert_eq!(out, big);
        assert!(inflater.inflate(&[0xff; 40], &mut out).is_err());
        // The inflater is usable again after an error.
        inflater.inflate(&wire, &mut out).unwrap();
        assert_eq!(out, big);
    }
}
