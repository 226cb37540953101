//! Range requests of stored files (RFC 9110 §14, §13.1.5): which bytes of a file of a known
//! length a `GET` asks for, from its `Range` and `If-Range` headers. The header is parsed by
//! the `http-range-header` crate (as tower-http's `ServeFile` does); what a parsed range
//! selects follows RFC 9110 §14.1.2 and §14.2:
//!
//! | request | answer |
//! |---|---|
//! | no `Range`, a unit other than `bytes`, a malformed or invalid range (`bytes=5-3`) | the whole file (the header is ignored) |
//! | `If-Range` other than the file's strong entity tag (a date too: no `Last-Modified` is sent) | the whole file |
//! | more than one range (`bytes=0-1,5-6`) | the whole file (allowed: a server may ignore `Range`) |
//! | `bytes=a-b`, `bytes=a-` with `a` < length | bytes `a` to `min(b, length - 1)` (206) |
//! | `bytes=-n`, n > 0 | the last `min(n, length)` bytes (206); nothing of an empty file (416) |
//! | `bytes=a-` or `bytes=a-b` with `a` ≥ length, `bytes=-0` | 416 with `Content-Range: bytes */<length>` |

use std::ops::RangeInclusive;

use axum::http::{header, HeaderMap};
use http_range_header::{EndPosition, RangeUnsatisfiableError, StartPosition};

/// What a request selects of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selected {
    /// The whole file: 200 with `Accept-Ranges: bytes`.
    Full,
    /// Bytes `first..=last` (offsets from 0, `last` < length): 206 with `Content-Range`.
    Partial(RangeInclusive<u64>),
    /// No byte of the file: 416 with `Content-Range: bytes */<length>`.
    Unsatisfiable,
}

/// What `request` selects of a file of `len` bytes whose strong entity tag is `etag` (with its
/// quotes, as sent in `ETag`).
pub fn select(request: &HeaderMap, etag: &str, len: u64) -> Selected {
    let Some(range) = request.get(header::RANGE) else {
        return Selected::Full;
    };
    if let Some(if_range) = request.get(header::IF_RANGE) {
        // A strong comparison (RFC 9110 §8.8.3.2): a weak tag or a date never matches.
        if if_range.as_bytes() != etag.as_bytes() {
            return Selected::Full;
        }
    }
    let Ok(range) = range.to_str() else {
        return Selected::Full;
    };
    let parsed = match http_range_header::parse_range_header(range) {
        Ok(parsed) => parsed,
        // `bytes=-0`: a valid suffix of no bytes, which nothing satisfies (§14.1.1).
        Err(RangeUnsatisfiableError::ZeroSuffix) => return Selected::Unsatisfiable,
        Err(_) => return Selected::Full,
    };
    let [one] = parsed.ranges.as_slice() else {
        return Selected::Full;
    };
    match (one.start, one.end) {
        (StartPosition::Index(first), end) => {
            if let EndPosition::Index(last) = end {
                if last < first {
                    return Selected::Full;
                }
            }
            if first >= len {
                return Selected::Unsatisfiable;
            }
            let last = match end {
                EndPosition::Index(last) => last.min(len - 1),
                EndPosition::LastByte => len - 1,
            };
            Selected::Partial(first..=last)
        }
        (StartPosition::FromLast(n), _) => {
            if len == 0 {
                return Selected::Unsatisfiable;
            }
            Selected::Partial(len - n.min(len)..=len - 1)
        }
    }
}

/// The `Content-Range` of a partial answer: `bytes <first>-<last>/<len>`.
pub fn content_range(range: &RangeInclusive<u64>, len: u64) -> String {
    format!("bytes {}-{}/{len}", range.start(), range.end())
}

/// The `Content-Range` of a 416 answer: `bytes */<len>`.
pub fn unsatisfied_range(len: u64) -> String {
    format!("bytes */{len}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ask(range: &str, if_range: Option<&str>, len: u64) -> Selected {
        let mut h = HeaderMap::new();
        h.insert(header::RANGE, HeaderValue::from_str(range).unwrap());
        if let Some(v) = if_range {
            h.insert(header::IF_RANGE, HeaderValue::from_str(v).unwrap());
        }
        select(&h, "\"k\"", len)
    }

    #[test]
    fn ranges_of_rfc_9110() {
        use Selected::{Full, Partial, Unsatisfiable};
        assert_eq!(select(&HeaderMap::new(), "\"k\"", 10), Full);
        assert_eq!(ask("bytes=0-1", None, 200_000), Partial(0..=1));
        assert_eq!(ask("bytes=-500", None, 200_000), Partial(199_500..=199_999));
        assert_eq!(ask("bytes=-500", None, 10), Partial(0..=9));
        assert_eq!(ask("bytes=100-", None, 200_000), Partial(100..=199_999));
        assert_eq!(ask("bytes=0-", None, 200_000), Partial(0..=199_999));
        assert_eq!(ask("bytes=5-1000", None, 10), Partial(5..=9));
        assert_eq!(ask("bytes=200000-", None, 200_000), Unsatisfiable);
        assert_eq!(ask("bytes=300000-300001", None, 200_000), Unsatisfiable);
        assert_eq!(ask("bytes=-0", None, 10), Unsatisfiable);
        assert_eq!(ask("bytes=0-", None, 0), Unsatisfiable);
        assert_eq!(ask("bytes=-5", None, 0), Unsatisfiable);
        assert_eq!(ask("bytes=5-3", None, 10), Full);
        assert_eq!(ask("bytes=0-1,4-5", None, 10), Full);
        assert_eq!(ask("items=0-1", None, 10), Full);
        assert_eq!(ask("bytes=abc", None, 10), Full);
        assert_eq!(ask("bytes=0-1", Some("\"k\""), 10), Partial(0..=1));
        assert_eq!(ask("bytes=0-1", Some("\"other\""), 10), Full);
        assert_eq!(ask("bytes=0-1", Some("W/\"k\""), 10), Full);
        assert_eq!(
            ask("bytes=0-1", Some("Mon, 07 Dec 2026 08:00:00 GMT"), 10),
            Full
        );
        assert_eq!(content_range(&(0..=1), 200_000), "bytes 0-1/200000");
        assert_eq!(unsatisfied_range(200_000), "bytes */200000");
    }
}
