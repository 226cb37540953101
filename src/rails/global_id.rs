//! GlobalID: how Rails names a record in stream names and connection identifiers.
//!
//! `gid://<app>/<Model>/<id>` is a record's global id (`rails/globalid`,
//! `lib/global_id/uri/gid.rb`). `<app>` is `GlobalID.app`, by default the application module
//! name dasherized (`MyApp` → `my-app`, `lib/global_id/railtie.rb`); `<Model>` is the class
//! name; `<id>` the primary key.
//!
//! Its *param* is `Base64.urlsafe_encode64(gid, padding: false)` (`GlobalID#to_param`). Rails
//! uses the param wherever a record appears in a name:
//! - Turbo stream names: `turbo_stream_from(@room, :messages)` for Room 1 of `MyApp` streams
//!   `Z2lkOi8vbXktYXBwL1Jvb20vMQ:messages` (`turbo-rails`, `streams/stream_name.rb`);
//! - `stream_for` / `broadcast_to`: `chat:Z2lk...` (`actioncable`, `channel/broadcasting.rb`);
//! - connection identifiers: `identified_by :current_user` gives the user's param
//!   (`actioncable`, `connection/identification.rb`).
//!
//! Hearth only needs integer ids; composite ids and gid query parameters are not supported.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use super::message_verifier::urlsafe_decode64;

/// The global id of a record: `gid://{app}/{model}/{id}`.
///
/// `app` should be a host-like name (`my-app`) and `model` a Ruby class name (`Room`,
/// `Admin::User`); they are written as given. Source: `GlobalID#to_s` /
/// `URI::GID.build` (`rails/globalid`, `lib/global_id/uri/gid.rb`).
pub fn gid(app: &str, model: &str, id: i64) -> String {
    format!("gid://{app}/{model}/{id}")
}

/// The record's GlobalID param: unpadded URL-safe base64 of [`gid`].
///
/// `("my-app", "Room", 1)` → `Z2lkOi8vbXktYXBwL1Jvb20vMQ`. Source: `GlobalID#to_param`
/// (`Base64.urlsafe_encode64(to_s, padding: false)`).
pub fn to_gid_param(app: &str, model: &str, id: i64) -> String {
    URL_SAFE_NO_PAD.encode(gid(app, model, id))
}

/// Decodes a GlobalID param into `(app, model, id)`.
///
/// Decoding is Ruby's `Base64.urlsafe_decode64` (padding optional), as `GlobalID.parse` does
/// for params. Returns `None` unless the text is exactly `gid://<app>/<model>/<id>` with:
/// `app` non-empty ASCII letters, digits, `-` and `.`; `model` non-empty ASCII letters,
/// digits, `_` and `:`; `id` a canonical decimal `i64` (no sign `+`, no leading zeros, as
/// [`gid`] writes it). Query strings and composite ids are rejected.
pub fn parse_gid_param(param: &str) -> Option<(String, String, i64)> {
    let decoded = urlsafe_decode64(param.as_bytes())?;
    let text = std::str::from_utf8(&decoded).ok()?;
    let rest = text.strip_prefix("gid://")?;
    let mut parts = rest.split('/');
    let (app, model, id_text) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let app_ok = !app.is_empty()
        && app
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    let model_ok = !model.is_empty()
        && model
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':');
    if !app_ok || !model_ok {
        return None;
    }
    let id: i64 = id_text.parse().ok()?;
    if id.to_string() != id_text {
        return None;
    }
    Some((app.to_owned(), model.to_owned(), id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_vector() {
        assert_eq!(gid("my-app", "Room", 1), "gid://my-app/Room/1");
        assert_eq!(
            to_gid_param("my-app", "Room", 1),
            "Z2lkOi8vbXktYXBwL1Jvb20vMQ"
        );
        assert_eq!(
            parse_gid_param("Z2lkOi8vbXktYXBwL1Jvb20vMQ"),
            Some(("my-app".to_owned(), "Room".to_owned(), 1))
        );
    }

    #[test]
    fn param_uses_url_safe_alphabet_without_padding() {
        for id in [0, 1, 62, 63, 999, 123_456_789, i64::MAX, -1, i64::MIN] {
            for (app, model) in [
                ("my-app", "Room"),
                ("campfire", "Admin::User"),
                ("a.b", "M_1"),
            ] {
                let param = to_gid_param(app, model, id);
                assert!(!param.contains(['=', '+', '/']), "{param}");
                assert_eq!(
                    parse_gid_param(&param),
                    Some((app.to_owned(), model.to_owned(), id))
                );
            }
        }
    }

    #[test]
    fn padded_param_is_accepted_like_ruby() {
        // Ruby's urlsafe_decode64 accepts the padded form too.
        assert_eq!(
            parse_gid_param("Z2lkOi8vbXktYXBwL1Jvb20vMQ=="),
            Some(("my-app".to_owned(), "Room".to_owned(), 1))
        );
    }

    #[test]
    fn rejects_malformed() {
        let enc = |s: &str| URL_SAFE_NO_PAD.encode(s);
        for text in [
            "gid://my-app/Room",
            "gid://my-app/Room/",
            "gid://my-app//1",
            "gid:///Room/1",
            "gid://my-app/Room/1/2",
            "gid://my-app/Room/1?x=y",
            "gid://my-app/Room/01",
            "gid://my-app/Room/+1",
            "gid://my-app/Room/-0",
            "gid://my-app/Room/1.0",
            "gid://my-app/Room/abc",
            "gid://my-app/Room/99999999999999999999",
            "gid://my app/Room/1",
            "gid://my-app/Ro om/1",
            "gid://my-app/Room/ 1",
            "http://my-app/Room/1",
            "gid:/my-app/Room/1",
            "",
        ] {
            assert_eq!(parse_gid_param(&enc(text)), None, "{text}");
        }
        for param in ["", "!!!", "Z", "Z2lkOi8vbXktYXBwL1Jvb20vMQ=", "Z2lk Oi8v"] {
            assert_eq!(parse_gid_param(param), None, "{param}");
        }
        // Invalid UTF-8 after decoding.
        assert_eq!(parse_gid_param(&URL_SAFE_NO_PAD.encode([0xFF, 0xFE])), None);
    }
}
