//! The notice after a saved change (Rails' `redirect_to …, notice: "✓"` and the layout's
//! `flash[:notice]`): the redirect of a settings form ([`found_with`]) sets a short-lived
//! `flash` cookie naming a [`Notice`]; the next page the layout draws shows it once
//! ([`take`]) and that answer deletes the cookie, so the page after that has none.
//!
//! [`super::context::prepare`] runs a request that carries the cookie inside [`scope`]; a
//! request without it costs nothing. Only known notices are shown: the cookie names one, it
//! never carries text.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::http::{header, HeaderMap};
use axum::response::Response;

use super::cookies::{delete_cookie, parse_cookies, set_cookie};
use super::respond::found;

/// The cookie naming the notice to show on the next page.
pub const FLASH_COOKIE: &str = "flash";

/// How long a notice waits for the page after its redirect, in seconds.
const FLASH_SECS: u64 = 60;

/// A notice a redirect can leave for the next page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// A settings form was saved (Campfire's "✓").
    Saved,
    /// The SMTP server took the administrator's test letter.
    TestMailSent,
}

impl Notice {
    /// The cookie's value for the notice.
    const fn code(self) -> &'static str {
        match self {
            Self::Saved => "saved",
            Self::TestMailSent => "test_mail_sent",
        }
    }

    /// The notice named by a cookie's value.
    fn from_code(code: &str) -> Option<Self> {
        match code {
            "saved" => Some(Self::Saved),
            "test_mail_sent" => Some(Self::TestMailSent),
            _ => None,
        }
    }

    /// What the notice says (shown and announced).
    pub const fn text(self) -> &'static str {
        match self {
            Self::Saved => "Saved",
            Self::TestMailSent => "Test e-mail sent",
        }
    }
}

/// `302 Found` to `to`, leaving `notice` for the page there.
pub fn found_with(to: &str, notice: Notice, secure: bool) -> Response {
    let mut response = found(to);
    response.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(FLASH_COOKIE, notice.code(), Some(FLASH_SECS), secure),
    );
    response
}

/// A notice waiting for the page being drawn, and whether the layout showed it.
#[derive(Debug)]
struct Pending {
    notice: Notice,
    shown: Arc<AtomicBool>,
}

tokio::task_local! {
    static PENDING: Pending;
}

/// The notice a request's `flash` cookie names, if any.
pub fn pending(headers: &HeaderMap) -> Option<Notice> {
    parse_cookies(headers)
        .iter()
        .find(|(name, _)| name == FLASH_COOKIE)
        .and_then(|(_, value)| Notice::from_code(value))
}

/// Runs `fut` (a request) with `notice` waiting for the layout; when the layout showed it, the
/// answer deletes the cookie.
pub async fn scope<F>(notice: Notice, fut: F) -> Response
where
    F: std::future::Future<Output = Response>,
{
    let shown = Arc::new(AtomicBool::new(false));
    let pending = Pending {
        notice,
        shown: Arc::clone(&shown),
    };
    let mut response = PENDING.scope(pending, fut).await;
    if shown.load(Ordering::Relaxed) {
        response
            .headers_mut()
            .append(header::SET_COOKIE, delete_cookie(FLASH_COOKIE));
    }
    response
}

/// The notice to show on the page being drawn (the layout calls it once), marking it shown.
/// None outside a request that carries one.
pub fn take() -> Option<Notice> {
    PENDING
        .try_with(|p| {
            p.shown.store(true, Ordering::Relaxed);
            p.notice
        })
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_notices_are_read_from_the_cookie() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, "a=b; flash=saved".parse().unwrap());
        assert_eq!(pending(&headers), Some(Notice::Saved));
        headers.insert(header::COOKIE, "flash=%3Cscript%3E".parse().unwrap());
        assert_eq!(pending(&headers), None);
    }

    #[tokio::test]
    async fn a_notice_is_taken_once_per_scope_and_not_outside() {
        assert_eq!(take(), None);
        let r = scope(Notice::Saved, async {
            assert_eq!(take(), Some(Notice::Saved));
            Response::default()
        })
        .await;
        assert!(r.headers()[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .starts_with("flash=;"));
        let r = scope(Notice::Saved, async { Response::default() }).await;
        assert!(r.headers().get(header::SET_COOKIE).is_none());
    }
}
