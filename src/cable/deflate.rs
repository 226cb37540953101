//! permessage-deflate (RFC 7692) on `/cable`: the negotiation in the opening handshake, and the
//! inflating of compressed client messages.
//!
//! **Negotiation** ([`negotiate`], RFC 7692 §5 and §7.1). The client lists its offers in
//! `Sec-WebSocket-Extensions`, most preferred first; the first `permessage-deflate` offer this
//! server can accept is agreed, and the answer always carries `server_no_context_takeover` and
//! `client_no_context_takeover`:
//!
//! - `server_no_context_takeover` (§7.1.1.1: a server may include it whether or not it was
//!   offered) is what lets one compressed frame go to every subscriber
//!   (`crate::fanout::deflate`): each message is compressed on its own.
//! - `client_no_context_takeover` (§7.1.1.2: a server may include it whether or not it was
//!   offered; the client must then compress each message on its own) means the server keeps
//!   no inflater between a client's messages, so an idle connection holds no zlib state in
//!   either direction. Action Cable's client messages are short commands that gain little
//!   from a shared window anyway. A client that refers back into an earlier message all the
//!   same sends a distance from before its message's first byte, which a fresh inflater
//!   cannot resolve: the connection is closed with 1007.
//! - `server_max_window_bits=N` offered: frames are compressed with a window of `2^N` bytes
//!   and the answer says so (§7.1.2.1). N = 8 is declined (zlib cannot compress raw DEFLATE
//!   with a 256-byte window); the client's next offer, if any, is tried.
//! - `client_max_window_bits`, with or without a value, is accepted and left out of the
//!   answer: "Absence of this extension parameter in an extension negotiation response
//!   indicates that the server can receive messages compressed using an LZ77 sliding window
//!   of up to 32,768 bytes" (§7.1.2.2), and a value in the offer is a hint the server "may
//!   either ignore […] or use" to limit the client. It is ignored because limiting the client
//!   would buy nothing and could not be held: the parameter exists so that a server keeping a
//!   client's context can reserve a smaller window, and this one keeps none; and zlib-rs
//!   always inflates with a 32 KiB window whatever it is told, so a narrower limit would be a
//!   promise the server could not check. So a client that offers `client_max_window_bits=8`
//!   and then compresses with a 15-bit window breaks nothing it agreed to: its messages are
//!   inflated (within `--max-message-bytes`) like any other.
//!
//! An offer with a parameter RFC 7692 does not define for offers, a parameter twice, or a value
//! out of range (`server_max_window_bits` without a value, window bits outside 8 to 15, a value
//! on a `*_no_context_takeover`) is declined, as §7.1 requires; the connection then goes on
//! without compression.
//!
//! **Inflating** ([`Inflater`], §7.2.2): a message whose first frame has RSV1 set is
//! decompressed after its last frame, `00 00 ff ff` appended, into at most
//! `--max-message-bytes` bytes: the limit applies to what the message inflates to, so a small
//! compressed message that would inflate past it (a deflate bomb) is refused with 1009 as soon
//! as the limit is passed, without inflating the rest.

use axum::http::{header, HeaderMap, HeaderValue};
use flate2::{Decompress, FlushDecompress, Status};

use crate::fanout::deflate::{Deflate, SYNC_TRAILER};

/// The extension's registered name (RFC 7692 §7).
pub const EXTENSION: &str = "permessage-deflate";

/// What a connection agreed to in its handshake (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Agreed {
    /// The parameter set broadcasts are compressed with for this connection (its window size,
    /// `server_max_window_bits`, 9 to 15).
    pub server: Deflate,
    /// Whether the client keeps its LZ77 window from one message to the next (no
    /// `client_no_context_takeover` agreed), and so the server must keep an inflater for the
    /// connection. [`negotiate`] always agrees to `client_no_context_takeover`: false.
    pub client_context_takeover: bool,
}

/// The first `permessage-deflate` offer of `headers`' `Sec-WebSocket-Extensions` (all its
/// lines, in order) that this server accepts, and the header value that answers it (e.g.
/// `permessage-deflate; server_no_context_takeover; client_no_context_takeover`); None when
/// the client offers none or none is acceptable (see the module docs). RFC 7692 §5, §7.1.
pub fn negotiate(headers: &HeaderMap) -> Option<(Agreed, HeaderValue)> {
    headers
        .get_all(header::SEC_WEBSOCKET_EXTENSIONS)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(accept_offer)
}

/// One offer (`name; param; param=value`): its agreement and answer when it is a
/// `permessage-deflate` offer this server accepts.
fn accept_offer(offer: &str) -> Option<(Agreed, HeaderValue)> {
    let mut items = offer.split(';').map(str::trim);
    if !items.next()?.eq_ignore_ascii_case(EXTENSION) {
        return None;
    }
    let mut seen = [false; 4];
    let mut server_bits: Option<u8> = None;
    for item in items {
        let (name, value) = match item.split_once('=') {
            Some((name, value)) => (name.trim(), Some(unquote(value.trim())?)),
            None => (item, None),
        };
        let index = PARAMS.iter().position(|p| p.eq_ignore_ascii_case(name))?;
        if std::mem::replace(&mut seen[index], true) {
            return None;
        }
        match (index, value) {
            // The `*_no_context_takeover` ones never have a value; `client_max_window_bits`
            // may go without one.
            (0 | 1 | 3, None) => {}
            (2, Some(v)) => server_bits = Some(window_bits(v)?),
            // Checked, then left out of the answer (see the module docs).
            (3, Some(v)) => {
                window_bits(v)?;
            }
            _ => return None,
        }
    }
    let server = match server_bits {
        Some(bits) => Deflate::new(bits)?,
        None => Deflate::new(Deflate::MAX_WINDOW_BITS)?,
    };
    let mut answer = format!("{EXTENSION}; server_no_context_takeover; client_no_context_takeover");
    if let Some(bits) = server_bits {
        answer.push_str(&format!("; server_max_window_bits={bits}"));
    }
    let agreed = Agreed {
        server,
        client_context_takeover: false,
    };
    Some((agreed, HeaderValue::from_str(&answer).ok()?))
}

/// The parameters RFC 7692 defines for an offer (§7.1), in the order `seen` tracks them.
const PARAMS: [&str; 4] = [
    "server_no_context_takeover",
    "client_no_context_takeover",
    "server_max_window_bits",
    "client_max_window_bits",
];

/// A parameter's value without the quotes of a quoted-string (RFC 6455 §9.1 allows either form;
/// the unquoted text must still be a token); None for an unterminated quote.
fn unquote(value: &str) -> Option<&str> {
    match value.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"'),
        None => Some(value),
    }
}

/// A window-bits value: a decimal integer from 8 to 15 without leading zeroes (§7.1.2.1).
fn window_bits(value: &str) -> Option<u8> {
    if value.starts_with('0') || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok().filter(|bits| (8..=15).contains(bits))
}

/// Why a compressed message could not be inflated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InflateError {
    /// It inflates to more than the limit (close 1009).
    #[error("the message inflates to more than {limit} bytes")]
    TooBig {
        /// The limit, in bytes.
        limit: usize,
    },
    /// It is not valid DEFLATE data for what was agreed (close 1007): a corrupt stream, or
    /// (without context takeover) a distance back past the message's first byte.
    #[error("invalid compressed data")]
    Invalid,
}

/// Inflates one connection's compressed messages (RFC 7692 §7.2.2) with a 32 KiB window (the
/// largest, which RFC 7692 lets every client use unless the server limits it, and this one
/// does not). Holds a zlib inflater between messages only when the client keeps its context
/// ([`Agreed::client_context_takeover`]); otherwise one is made for each compressed message
/// and dropped after it, so an idle connection holds none.
pub struct Inflater {
    context_takeover: bool,
    /// Boxed: a zlib-rs `Decompress` is 152 bytes, which every connection's reader would
    /// carry inline (the reader lives in the connection task's future) though only a client
    /// that keeps its context ever fills it.
    kept: Option<Box<Decompress>>,
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflater")
            .field("context_takeover", &self.context_takeover)
            .field("kept", &self.kept.is_some())
            .finish()
    }
}

impl Inflater {
    /// The inflater of a connection that agreed to `agreed`. Allocates nothing.
    pub fn new(agreed: &Agreed) -> Self {
        Self {
            context_takeover: agreed.client_context_takeover,
            kept: None,
        }
    }

    /// The message `payload` (the compressed bytes of all its frames, in order) inflates to,
    /// at most `limit` bytes. Past the limit it stops and answers [`InflateError::TooBig`];
    /// data that is not DEFLATE, or (without context takeover) refers back past the message's
    /// first byte, gives [`InflateError::Invalid`]. After an error the connection must be
    /// closed.
    pub fn inflate(&mut self, payload: &[u8], limit: usize) -> Result<Vec<u8>, InflateError> {
        let mut inflater = self
            .kept
            .take()
            .unwrap_or_else(|| Box::new(Decompress::new(false)));
        // A guess at what it inflates to; grown as needed, never past `limit + 1` (one byte
        // past the limit tells that it was passed).
        let cap = limit.saturating_add(1);
        let mut out = Vec::with_capacity(payload.len().saturating_mul(4).max(256).min(cap));
        let mut ended = false;
        for input in [payload, &SYNC_TRAILER[..]] {
            if !ended {
                ended = inflate_into(&mut inflater, input, &mut out, cap)?;
            }
        }
        if out.len() > limit {
            return Err(InflateError::TooBig { limit });
        }
        // A message that ended its DEFLATE stream (a final block) leaves nothing to take over.
        if self.context_takeover && !ended {
            self.kept = Some(inflater);
        }
        Ok(out)
    }
}

/// Output bytes one call of the inflater may write: the output grows by at most this much past
/// what it holds, so a message that passes the limit is stopped within this of it.
const CHUNK: usize = 16 * 1024;

/// Feeds `input` to `inflater`, appending the output to `out` without letting it grow past
/// `cap` bytes, [`CHUNK`] bytes per call at most. Returns whether the DEFLATE stream ended (a
/// final block).
fn inflate_into(
    inflater: &mut Decompress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    cap: usize,
) -> Result<bool, InflateError> {
    loop {
        let start = out.len();
        if start >= cap {
            // Full at one byte past the limit: passed.
            return Err(InflateError::TooBig { limit: cap - 1 });
        }
        let room = CHUNK.min(cap - start);
        if out.capacity() < start + room {
            let want = out.capacity().saturating_mul(2).max(start + room).min(cap);
            out.reserve_exact(want - start);
        }
        out.resize(start + room, 0);
        let (in_before, out_before) = (inflater.total_in(), inflater.total_out());
        let status = inflater.decompress(input, &mut out[start..], FlushDecompress::Sync);
        let produced = usize::try_from(inflater.total_out() - out_before).unwrap_or(room);
        out.truncate(start + produced.min(room));
        let status = status.map_err(|_| InflateError::Invalid)?;
        let used = usize::try_from(inflater.total_in() - in_before).unwrap_or(input.len());
        input = &input[used.min(input.len())..];
        match status {
            Status::StreamEnd => return Ok(true),
            // All of it in, and room left over: nothing is pending.
            _ if input.is_empty() && produced < room => return Ok(false),
            // No progress with input left: nothing more will come of it.
            _ if used == 0 && produced == 0 => return Err(InflateError::Invalid),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compress, Compression, FlushCompress};

    fn offered(values: &[&'static str]) -> Option<(Agreed, String)> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(
                header::SEC_WEBSOCKET_EXTENSIONS,
                HeaderValue::from_static(v),
            );
        }
        negotiate(&headers).map(|(agreed, answer)| (agreed, answer.to_str().unwrap().to_owned()))
    }

    const BASE: &str = "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

    #[test]
    fn what_browsers_and_ws_offer_is_answered_without_context_takeover() {
        // Chromium, Firefox and `ws` all offer this.
        let (agreed, answer) = offered(&["permessage-deflate; client_max_window_bits"]).unwrap();
        assert_eq!(answer, BASE);
        assert_eq!(agreed.server.window_bits(), 15);
        assert!(!agreed.client_context_takeover);
        let (_, answer) = offered(&["permessage-deflate"]).unwrap();
        assert_eq!(answer, BASE);
        let (_, answer) = offered(&[
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
        ])
        .unwrap();
        assert_eq!(answer, BASE);
    }

    #[test]
    fn the_servers_window_is_honoured_and_the_clients_left_unlimited() {
        let (agreed, answer) =
            offered(&["permessage-deflate; server_max_window_bits=10; client_max_window_bits=12"])
                .unwrap();
        assert_eq!(answer, format!("{BASE}; server_max_window_bits=10"));
        assert_eq!(agreed.server.window_bits(), 10);
        let (agreed, answer) =
            offered(&["permessage-deflate; client_max_window_bits=\"8\""]).unwrap();
        assert_eq!(answer, BASE);
        assert_eq!(agreed.server.window_bits(), 15);
    }

    #[test]
    fn offers_that_break_rfc_7692_are_declined_and_the_next_one_tried() {
        for bad in [
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; client_max_window_bits=7",
            "permessage-deflate; client_max_window_bits=010",
            "permessage-deflate; server_no_context_takeover=1",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; mystery",
            "permessage-deflate; client_max_window_bits=\"10",
            // 8 is valid, but not a window zlib compresses with.
            "permessage-deflate; server_max_window_bits=8",
            "x-webkit-deflate-frame",
        ] {
            assert_eq!(offered(&[bad]), None, "{bad}");
        }
        // The first acceptable offer wins, across commas and header lines.
        let (agreed, _) = offered(&[
            "foo, permessage-deflate; server_max_window_bits=8",
            "permessage-deflate; server_max_window_bits=11, permessage-deflate",
        ])
        .unwrap();
        assert_eq!(agreed.server.window_bits(), 11);
        assert_eq!(offered(&[]), None);
    }

    /// `text` compressed as a client would with `bits` of window (sync flush, trailer cut).
    fn client_compressed(text: &[u8], bits: u8) -> Vec<u8> {
        let mut c = Compress::new_with_window_bits(Compression::default(), false, bits);
        let mut out = Vec::with_capacity(text.len() + 64);
        c.compress_vec(text, &mut out, FlushCompress::Sync).unwrap();
        assert!(out.ends_with(&SYNC_TRAILER));
        out.truncate(out.len() - 4);
        out
    }

    fn inflater(takeover: bool) -> Inflater {
        Inflater::new(&Agreed {
            server: Deflate::new(15).unwrap(),
            client_context_takeover: takeover,
        })
    }

    #[test]
    fn an_idle_inflater_is_small() {
        // It sits in every compressed connection's reader, inside the connection's task.
        assert!(std::mem::size_of::<Option<Inflater>>() <= 16);
    }

    #[test]
    fn a_message_inflates_to_its_text_and_keeps_no_state() {
        let text = br#"{"command":"message","identifier":"{}","data":"{\"action\":\"present\"}"}"#;
        let mut i = inflater(false);
        assert_eq!(i.inflate(&client_compressed(text, 15), 1000).unwrap(), text);
        assert!(i.kept.is_none());
        assert_eq!(i.inflate(&client_compressed(text, 15), 1000).unwrap(), text);
        // Exactly at the limit passes; a byte less does not.
        assert_eq!(
            i.inflate(&client_compressed(text, 15), text.len()).unwrap(),
            text
        );
        assert_eq!(
            i.inflate(&client_compressed(text, 15), text.len() - 1),
            Err(InflateError::TooBig {
                limit: text.len() - 1
            })
        );
    }

    #[test]
    fn a_bomb_stops_at_the_limit() {
        let zeros = vec![0u8; 8 << 20];
        let bomb = client_compressed(&zeros, 15);
        assert!(bomb.len() < 16 * 1024, "{}", bomb.len());
        let mut i = inflater(false);
        assert_eq!(
            i.inflate(&bomb, 1 << 20),
            Err(InflateError::TooBig { limit: 1 << 20 })
        );
    }

    #[test]
    fn wide_windows_inflate_and_garbage_is_invalid() {
        // Repeats 20,000 bytes apart: a 15-bit window, whatever the client offered.
        let block: Vec<u8> = (0..20_000u32)
            .flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes())
            .map(|b| b'a' + b % 26)
            .take(20_000)
            .collect();
        let repeated = [&block[..], &block[..]].concat();
        let wide = client_compressed(&repeated, 15);
        assert!(wide.len() < repeated.len() * 3 / 4, "{}", wide.len());
        assert!(inflater(false).inflate(&wide, 1 << 20).unwrap() == repeated);
        assert!(matches!(
            inflater(false).inflate(&[0xff, 0xff, 0xff, 0xff], 1 << 20),
            Err(InflateError::Invalid)
        ));
    }

    #[test]
    fn a_client_that_keeps_its_context_gets_a_kept_inflater() {
        let text = b"hello hello hello hello hello";
        let mut c = Compress::new_with_window_bits(Compression::default(), false, 15);
        let mut messages = Vec::new();
        for _ in 0..2 {
            let mut out = Vec::with_capacity(256);
            c.compress_vec(text, &mut out, FlushCompress::Sync).unwrap();
            out.truncate(out.len() - 4);
            messages.push(out);
        }
        // The second message refers back into the first.
        assert!(messages[1].len() < messages[0].len());
        let mut keeping = inflater(true);
        assert_eq!(keeping.inflate(&messages[0], 100).unwrap(), text);
        assert!(keeping.kept.is_some());
        assert_eq!(keeping.inflate(&messages[1], 100).unwrap(), text);
        // Without the kept window the second one refers back past its own start: invalid.
        assert_eq!(
            inflater(false).inflate(&messages[1], 100),
            Err(InflateError::Invalid)
        );
    }
}
