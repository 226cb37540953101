//! The Open Graph properties of an HTML page: its `<meta property="og:…" content="…">` tags
//! (or `name="og:…"`), the first of each kept.

use std::cell::RefCell;

use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

/// The properties a preview uses (Campfire's `Opengraph::Metadata::ATTRIBUTES`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Properties {
    /// `og:title`.
    pub title: Option<String>,
    /// `og:url`, the page's canonical URL.
    pub url: Option<String>,
    /// `og:image`.
    pub image: Option<String>,
    /// `og:description`.
    pub description: Option<String>,
}

struct Sink(RefCell<Properties>);

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let Token::TagToken(tag) = token else {
            return TokenSinkResult::Continue;
        };
        if tag.kind != TagKind::StartTag || &*tag.name != "meta" {
            return TokenSinkResult::Continue;
        }
        let value = |name: &str| {
            tag.attrs
                .iter()
                .find(|a| &*a.name.local == name)
                .map(|a| a.value.to_string())
        };
        let Some(key) = value("property").or_else(|| value("name")) else {
            return TokenSinkResult::Continue;
        };
        let Some(content) = value("content").filter(|c| !c.trim().is_empty()) else {
            return TokenSinkResult::Continue;
        };
        let mut found = self.0.borrow_mut();
        let slot = match key.trim().to_ascii_lowercase().as_str() {
            "og:title" => &mut found.title,
            "og:url" => &mut found.url,
            "og:image" | "og:image:url" | "og:image:secure_url" => &mut found.image,
            "og:description" => &mut found.description,
            _ => return TokenSinkResult::Continue,
        };
        if slot.is_none() {
            *slot = Some(content);
        }
        TokenSinkResult::Continue
    }
}

/// The Open Graph properties of `html`.
pub fn parse(html: &str) -> Properties {
    let tokenizer = Tokenizer::new(
        Sink(RefCell::new(Properties::default())),
        TokenizerOpts::default(),
    );
    let queue = BufferQueue::default();
    queue.push_back(html.into());
    let _ = tokenizer.feed(&queue);
    tokenizer.end();
    tokenizer.sink.0.take()
}

pub use crate::rich_text::card::one_line;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_of_each_property_is_read_by_property_or_name() {
        let html = r#"<html><head>
            <meta property="og:title" content="Mountains &amp; lakes">
            <meta property="og:title" content="second">
            <meta name="og:description" content="A walk.">
            <meta property="og:image" content="/cover.png">
            <meta property="og:url" content="https://example.com/walk">
            <meta name="description" content="not og">
            </head><body></body></html>"#;
        let found = parse(html);
        assert_eq!(found.title.as_deref(), Some("Mountains & lakes"));
        assert_eq!(found.description.as_deref(), Some("A walk."));
        assert_eq!(found.image.as_deref(), Some("/cover.png"));
        assert_eq!(found.url.as_deref(), Some("https://example.com/walk"));
    }

    #[test]
    fn one_line_drops_markup_and_cuts() {
        assert_eq!(one_line("  a <b>bold</b>\n step ", 100), "a bold step");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}
