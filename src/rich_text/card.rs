//! A link preview's card as a body stores it (an Action Text attachment of
//! [`super::OPENGRAPH_EMBED_CONTENT_TYPE`]): the limits and checks a card's fields pass when
//! it is stored and shown, shared by the sanitizer here and the fetcher
//! (`crate::link_previews`), which builds cards in this checked form.

/// Where preview images are served: `IMAGE_PATH` + the SHA-256 of the bytes in hex + `.jpg`
/// or `.png`.
pub const IMAGE_PATH: &str = "/unfurl_link/images/";
/// The longest title kept, in characters (Campfire's card cuts it at 280).
pub const MAX_TITLE_CHARS: usize = 280;
/// The longest description kept, in characters (Campfire's card cuts it at 560).
pub const MAX_DESCRIPTION_CHARS: usize = 560;

/// Whether `path` is one of the preview image paths this server writes (`IMAGE_PATH`, 64 hex
/// digits, `.jpg` or `.png`): the storage key and content type when it is.
pub fn image_key(path: &str) -> Option<(&str, &'static str)> {
    let name = path.strip_prefix(IMAGE_PATH)?;
    let (key, extension) = name.split_once('.')?;
    let content_type = match extension {
        "jpg" => "image/jpeg",
        "png" => "image/png",
        _ => return None,
    };
    (key.len() == 64 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then_some((key, content_type))
}

/// `text` as one line of plain text: any markup in it dropped (as Campfire's `strip_tags`),
/// whitespace runs as one space, cut at `max` characters with an ellipsis.
pub fn one_line(text: &str, max: usize) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => plain.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = plain.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let mut cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}
