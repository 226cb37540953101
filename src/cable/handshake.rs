//! Validation of the client's opening handshake (RFC 6455 §4.1, §4.2.1), before any `101`.
//!
//! [`check`] sorts a request at `/cable` into one [`Outcome`]:
//!
//! | request | outcome | answer |
//! |---|---|---|
//! | not a `GET`, or no `Upgrade: websocket` / `Connection: upgrade` | [`Outcome::NotWebSocket`] | 404 `Page not found` (Rails' `respond_to_invalid_request`) |
//! | an upgrade over HTTP/1.0 (§4.1: "HTTP/1.1 or higher"), without `Host`, or with a missing or malformed `Sec-WebSocket-Key` (§4.2.1 item 5: base64 of 16 bytes) | [`Outcome::BadRequest`] | 400 |
//! | `Sec-WebSocket-Version` missing or other than exactly `13` (`8`, `14`, `13, 8`) | [`Outcome::UpgradeRequired`] | 426 with `Sec-WebSocket-Version: 13` (§4.2.2 item 4) |
//! | anything else | [`Outcome::Accept`] | the caller's further checks (Origin, limits), then 101 |

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Version};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;

/// The verdict on an opening handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A valid RFC 6455 handshake; carries the `Sec-WebSocket-Key` as sent.
    Accept {
        /// The client's key, for `Sec-WebSocket-Accept`.
        key: HeaderValue,
    },
    /// Not a WebSocket upgrade at all: Rails' 404.
    NotWebSocket,
    /// A WebSocket upgrade that breaks §4.1/§4.2.1: 400; the reason is for the log.
    BadRequest(&'static str),
    /// A WebSocket version other than 13: 426 naming the supported version.
    UpgradeRequired,
}

/// Classifies a request at the Action Cable mount (see the module docs for the table).
pub fn check(method: &Method, version: Version, headers: &HeaderMap) -> Outcome {
    let is_upgrade = method == Method::GET
        && header_has_token(headers, header::CONNECTION, "upgrade")
        && header_has_token(headers, header::UPGRADE, "websocket");
    if !is_upgrade {
        return Outcome::NotWebSocket;
    }
    if version < Version::HTTP_11 {
        return Outcome::BadRequest("WebSocket upgrade over HTTP/1.0");
    }
    if !headers.contains_key(header::HOST) {
        return Outcome::BadRequest("no Host header");
    }
    let versions: Vec<&HeaderValue> = headers
        .get_all(header::SEC_WEBSOCKET_VERSION)
        .iter()
        .collect();
    if !matches!(versions.as_slice(), [v] if v.as_bytes().trim_ascii() == b"13") {
        return Outcome::UpgradeRequired;
    }
    let keys: Vec<&HeaderValue> = headers.get_all(header::SEC_WEBSOCKET_KEY).iter().collect();
    match keys.as_slice() {
        [key] if key_is_valid(key.as_bytes()) => Outcome::Accept {
            key: (*key).clone(),
        },
        [] => Outcome::BadRequest("no Sec-WebSocket-Key"),
        _ => Outcome::BadRequest("malformed Sec-WebSocket-Key"),
    }
}

/// §4.2.1 item 5: the key is the base64 encoding of 16 bytes (24 characters).
fn key_is_valid(key: &[u8]) -> bool {
    let key = key.trim_ascii();
    key.len() == 24
        && base64::engine::general_purpose::STANDARD
            .decode(key)
            .is_ok_and(|raw| raw.len() == 16)
}

/// Whether a comma-separated header (any of its lines) lists `token`, ignoring case.
pub(crate) fn header_has_token(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

/// The 400 answer to a broken handshake (`text/plain`, `Bad Request`).
pub fn bad_request() -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "text/plain")],
        "Bad Request",
    )
        .into_response()
}

/// The 426 answer to an unsupported version, with `Sec-WebSocket-Version: 13` (§4.2.2).
pub fn upgrade_required() -> Response {
    let mut response = Response::new(Body::from("Upgrade Required"));
    *response.status_mut() = StatusCode::UPGRADE_REQUIRED;
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    h.insert(
        header::SEC_WEBSOCKET_VERSION,
        HeaderValue::from_static("13"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upgrade_headers(version: &'static str, key: Option<&'static str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("example.com"));
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        h.insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static(version),
        );
        if let Some(k) = key {
            h.insert(header::SEC_WEBSOCKET_KEY, HeaderValue::from_static(k));
        }
        h
    }

    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    #[test]
    fn outcomes() {
        let ok = upgrade_headers("13", Some(KEY));
        assert!(matches!(
            check(&Method::GET, Version::HTTP_11, &ok),
            Outcome::Accept { .. }
        ));
        assert_eq!(
            check(&Method::POST, Version::HTTP_11, &ok),
            Outcome::NotWebSocket
        );
        assert_eq!(
            check(&Method::GET, Version::HTTP_11, &HeaderMap::new()),
            Outcome::NotWebSocket
        );
        assert!(matches!(
            check(&Method::GET, Version::HTTP_10, &ok),
            Outcome::BadRequest(_)
        ));
        for v in ["8", "14", "13, 8", ""] {
            assert_eq!(
                check(
                    &Method::GET,
                    Version::HTTP_11,
                    &upgrade_headers(v, Some(KEY))
                ),
                Outcome::UpgradeRequired,
                "version {v:?}"
            );
        }
        for k in [
            None,
            Some("short"),
            Some("dGhlIHNhbXBsZSBub25jZQ"),
            Some("!!!!!!!!!!!!!!!!!!!!!!!="),
        ] {
            assert!(
                matches!(
                    check(&Method::GET, Version::HTTP_11, &upgrade_headers("13", k)),
                    Outcome::BadRequest(_)
                ),
                "key {k:?}"
            );
        }
    }
}
