//! The answers handlers share: Rails' `302 Found` redirect and the turbo-stream-or-redirect
//! answer of a state change (`respond_to { |f| f.turbo_stream; f.html { redirect_to … } }`).

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The content type of turbo-stream answers (`Mime[:turbo_stream]`).
pub const TURBO_STREAM: &str = "text/vnd.turbo-stream.html; charset=utf-8";

/// `302 Found` with `Location: to`, as Rails' `redirect_to` answers (axum's `Redirect::to`
/// answers 303).
pub fn found(to: &str) -> Response {
    match HeaderValue::try_from(to) {
        Ok(location) => (StatusCode::FOUND, [(header::LOCATION, location)]).into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Whether the client asked for a turbo-stream answer (`Accept: text/vnd.turbo-stream.html`).
pub fn wants_turbo_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/vnd.turbo-stream.html"))
}

/// A turbo-stream body with `status`.
pub fn turbo_stream(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, HeaderValue::from_static(TURBO_STREAM))],
        body,
    )
        .into_response()
}

/// The answer to a state change in a room: its turbo-stream (200) when the client asked for
/// one, else a 302 back to the room.
pub fn stream_or_back(headers: &HeaderMap, html: String, room_id: i64) -> Response {
    if wants_turbo_stream(headers) {
        turbo_stream(StatusCode::OK, html)
    } else {
        found(&format!("/rooms/{room_id}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_is_a_302_with_location() {
        let r = found("/rooms/1");
        assert_eq!(r.status(), StatusCode::FOUND);
        assert_eq!(r.headers()[header::LOCATION], "/rooms/1");
    }
}
