//! What every page's layout shows of the account: its name (in the title and the nav) and its
//! custom stylesheet (Campfire's `Current.account.name` and `custom_styles_tag`).
//!
//! [`super::context::prepare`] runs each request inside [`scope`] with the account's
//! [`Settings`] (cached per server for [`crate::db::accounts::SETTINGS_TTL`], refreshed at once after a change made through
//! this server); the layout reads them through [`account_name`] and [`custom_styles`], so no
//! page struct has to carry them. Outside a request (a broadcast's partial), the defaults
//! apply.

use std::sync::Arc;

use crate::db::accounts::{Settings, FIRST_RUN_ACCOUNT_NAME};

tokio::task_local! {
    static PAGE: Arc<Settings>;
}

/// Runs `fut` (a request) with `settings` as the page globals.
pub async fn scope<F: std::future::Future>(settings: Arc<Settings>, fut: F) -> F::Output {
    PAGE.scope(settings, fut).await
}

/// The account's name, for the layout and page titles (`Hearth` outside a request).
pub fn account_name() -> String {
    PAGE.try_with(|s| s.name.clone())
        .unwrap_or_else(|_| FIRST_RUN_ACCOUNT_NAME.to_owned())
}

/// The account's sanitized stylesheet (empty when none or outside a request), for a
/// `<style>` element in the layout.
pub fn custom_styles() -> String {
    PAGE.try_with(|s| s.custom_styles.clone())
        .unwrap_or_default()
}

/// The sign-in page's help contact: the first active administrator's e-mail address, if any.
pub fn help_contact() -> Option<String> {
    PAGE.try_with(|s| s.help_contact.clone()).ok().flatten()
}

/// The account logo's version (its blob id), None when it has none (or outside a request).
pub fn logo_version() -> Option<i64> {
    PAGE.try_with(|s| s.logo).ok().flatten()
}

/// The favicon's URL and type: the logo's small PNG when the account has a logo, else the
/// app icon (SVG).
pub fn favicon() -> (String, &'static str) {
    match logo_version() {
        Some(v) => (crate::storage::logo_path(Some(v), true), "image/png"),
        None => ("/favicon.svg".to_owned(), "image/svg+xml"),
    }
}

/// The version shown on the sign-in page (the crate's).
pub fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The most bytes of custom CSS an account may store.
pub const MAX_CUSTOM_STYLES_BYTES: usize = 64 * 1024;

/// Makes `css` safe to place inside a `<style>` element: the only way out of that element is
/// its end tag `</style`, so every `<` becomes the CSS escape `\3c ` (the same character inside
/// a CSS string; never markup), NUL characters are dropped and line endings are normalised.
/// What remains is the author's stylesheet, unchanged otherwise.
pub fn sanitize_css(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    for c in css.chars() {
        match c {
            '<' => out.push_str("\\3c "),
            '\0' | '\r' => {}
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitized_css_cannot_close_the_style_element() {
        let hostile = "body{color:red}</style><script>alert(1)</script><STYLE>";
        let safe = sanitize_css(hostile);
        assert!(!safe.contains('<'), "{safe}");
        assert!(safe.starts_with("body{color:red}"));
        assert_eq!(sanitize_css(" a > b { x: 1 }\r\n"), "a > b { x: 1 }");
        assert_eq!(sanitize_css("a\0b"), "ab");
    }

    #[tokio::test]
    async fn the_globals_apply_inside_the_scope_only() {
        assert_eq!(account_name(), "Hearth");
        let settings = Arc::new(Settings {
            name: "Acme".into(),
            restrict_room_creation_to_administrators: false,
            custom_styles: "p{}".into(),
            help_contact: None,
            logo: None,
        });
        scope(settings, async {
            assert_eq!(account_name(), "Acme");
            assert_eq!(custom_styles(), "p{}");
        })
        .await;
    }
}
