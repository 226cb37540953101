//! Browsers too old to run the room (Rails 8's `allow_browser`, as Campfire's `AllowBrowser`
//! concern sets it): a page request from Safari before 17.2, Chrome before 120, Firefox before
//! 121, Opera before 104 or any Internet Explorer gets 406 Not Acceptable with a page that
//! names the browsers that work. Only HTML page requests are judged (`GET`/`HEAD` whose
//! `Accept` asks for `text/html`): not the API, the scripts, images and files, `/up` or the
//! cable (those are routed apart, or do not ask for HTML), and never a request without a
//! User-Agent, without a version in it, or from a bot. Browsers not in the list (Edge, Samsung
//! Internet, …) pass, as Rails lets them.

use askama::Template;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};

/// The oldest version of each judged browser (`None`: no version is enough).
pub const MINIMUM_VERSIONS: [(Browser, Option<(u32, u32)>); 5] = [
    (Browser::Safari, Some((17, 2))),
    (Browser::Chrome, Some((120, 0))),
    (Browser::Firefox, Some((121, 0))),
    (Browser::Opera, Some((104, 0))),
    (Browser::InternetExplorer, None),
];

/// A browser family the gate knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Browser {
    /// Apple's Safari (the `Version/x.y … Safari/` form).
    Safari,
    /// Google Chrome and Chromium (`Chrome/`, `CriOS/`).
    Chrome,
    /// Mozilla Firefox (`Firefox/`).
    Firefox,
    /// Opera (`OPR/`, `Opera/`).
    Opera,
    /// Internet Explorer (`MSIE`, `Trident/`).
    InternetExplorer,
}

impl Browser {
    /// The browser's name as the page shows it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Safari => "Safari",
            Self::Chrome => "Chrome",
            Self::Firefox => "Firefox",
            Self::Opera => "Opera",
            Self::InternetExplorer => "Internet Explorer",
        }
    }
}

/// The version after `marker` in `ua` (`Chrome/120.0.1` → 120.0), if any.
fn version_after(ua: &str, marker: &str) -> Option<(u32, u32)> {
    let rest = &ua[ua.find(marker)? + marker.len()..];
    let mut numbers = rest
        .split(|c: char| !c.is_ascii_digit())
        .take(2)
        .map(|n| n.parse::<u32>().ok());
    let major = numbers.next().flatten()?;
    let minor = if rest[major.to_string().len()..].starts_with('.') {
        numbers.next().flatten().unwrap_or(0)
    } else {
        0
    };
    Some((major, minor))
}

/// Whether `ua` names a crawler or a link previewer (never judged).
fn is_bot(ua: &str) -> bool {
    let lower = ua.to_ascii_lowercase();
    [
        "bot",
        "crawl",
        "spider",
        "slurp",
        "facebookexternalhit",
        "preview",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The judged browser and version `ua` names, or `None` for one the gate lets through
/// (unknown, unversioned, a bot, Edge and the other browsers not in the list).
pub fn parse(ua: &str) -> Option<(Browser, Option<(u32, u32)>)> {
    if is_bot(ua) {
        return None;
    }
    if ua.contains("MSIE ") || ua.contains("Trident/") {
        return Some((Browser::InternetExplorer, version_after(ua, "MSIE ")));
    }
    if [
        "Edg/",
        "Edge/",
        "EdgA/",
        "EdgiOS/",
        "SamsungBrowser/",
        "FxiOS/",
        "YaBrowser/",
    ]
    .iter()
    .any(|m| ua.contains(m))
    {
        return None;
    }
    if let Some(v) = version_after(ua, "OPR/").or_else(|| version_after(ua, "Opera/")) {
        return Some((Browser::Opera, Some(v)));
    }
    if let Some(v) = version_after(ua, "Firefox/") {
        return Some((Browser::Firefox, Some(v)));
    }
    if let Some(v) = version_after(ua, "CriOS/").or_else(|| version_after(ua, "Chrome/")) {
        return Some((Browser::Chrome, Some(v)));
    }
    if ua.contains("Safari/") {
        return version_after(ua, "Version/").map(|v| (Browser::Safari, Some(v)));
    }
    None
}

/// Whether a request with the User-Agent `ua` is from a browser too old for the room.
pub fn is_too_old(ua: &str) -> bool {
    let Some((browser, version)) = parse(ua) else {
        return false;
    };
    let Some((_, minimum)) = MINIMUM_VERSIONS.iter().find(|(b, _)| *b == browser) else {
        return false;
    };
    match (minimum, version) {
        (None, _) => true,
        (Some(minimum), Some(version)) => version < *minimum,
        (Some(_), None) => false,
    }
}

/// The page (`templates/errors/unsupported_browser.html`).
#[derive(Template, Debug)]
#[template(path = "errors/unsupported_browser.html")]
pub struct UnsupportedBrowserPage {
    /// Empty: the page has no form.
    pub csrf_token: &'static str,
    /// The browsers that work, each with its oldest version (`17.2`, `120`).
    pub browsers: Vec<(&'static str, String)>,
}

/// The page's list of the browsers that work.
fn supported() -> Vec<(&'static str, String)> {
    MINIMUM_VERSIONS
        .iter()
        .filter_map(|(browser, minimum)| {
            minimum.map(|(major, minor)| {
                let version = if minor == 0 {
                    major.to_string()
                } else {
                    format!("{major}.{minor}")
                };
                (browser.name(), version)
            })
        })
        .collect()
}

/// The middleware: 406 with the page for an HTML page request from a browser too old.
pub async fn allow_browser(request: Request, next: Next) -> Response {
    let page_request = matches!(*request.method(), Method::GET | Method::HEAD)
        && request
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"));
    let too_old = page_request
        && request
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(is_too_old);
    if !too_old {
        return next.run(request).await;
    }
    let page = UnsupportedBrowserPage {
        csrf_token: "",
        browsers: supported(),
    };
    match page.render() {
        Ok(body) => (StatusCode::NOT_ACCEPTABLE, Html(body)).into_response(),
        Err(_) => StatusCode::NOT_ACCEPTABLE.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::is_too_old;

    #[test]
    fn old_browsers_are_judged_by_their_versions() {
        let old = [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/109.0.0.0 Safari/537.36",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 15_8 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.6 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/119.0.0.0 Safari/537.36 OPR/103.0.0.0",
            "Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko",
        ];
        for ua in old {
            assert!(is_too_old(ua), "{ua}");
        }
        let fine = [
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
            "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/100.0.0.0 Safari/537.36 Edg/100.0.1185.29",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "curl/8.5.0",
            "",
        ];
        for ua in fine {
            assert!(!is_too_old(ua), "{ua}");
        }
    }
}
