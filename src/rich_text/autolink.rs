//! Finding URLs in text, as Rails' `auto_link` does (`rails_autolink`, `AUTO_LINK_RE`): a
//! scheme followed by `//`, or `www.`, up to whitespace, `<`, `"` or a no-break space, with
//! trailing punctuation and unbalanced closing brackets left out of the link.

/// The schemes that are linked: `rails_autolink`'s list less `ftp://`, which the sanitizer's
/// allowlist cuts (a typed `ftp://` link became an `<a>` without `href`) and browsers no
/// longer open.
const SCHEMES: &[&str] = &["http://", "https://", "mailto:"];

/// Whether `text` holds anything [`find`] could start a link at (a scheme of [`SCHEMES`] or
/// `www.`, in any case), however it is cut into pieces.
pub(super) fn may_link(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    SCHEMES.iter().any(|s| lower.contains(s)) || lower.contains("www.")
}

/// The byte ranges of the URLs in `text`, in order, not overlapping.
pub(super) fn find(text: &str) -> Vec<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let next = SCHEMES
            .iter()
            .chain(std::iter::once(&"www."))
            .filter_map(|s| lower[at..].find(s).map(|i| (at + i, s.len())))
            .min_by_key(|(i, _)| *i);
        let Some((start, prefix)) = next else { break };
        // A URL starts a word: `xhttp://` and `awww.` are not links.
        let starts_word = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        let mut end = start
            + text[start..]
                .find(|c: char| c.is_whitespace() || c == '<' || c == '"' || c == '\u{a0}')
                .unwrap_or(text.len() - start);
        end = trim_trailing(&text[start..end]) + start;
        if starts_word && end > start + prefix {
            found.push((start, end));
            at = end;
        } else {
            at = start + prefix;
        }
    }
    found
}

/// The length of `url` without trailing punctuation and unbalanced closing brackets.
fn trim_trailing(url: &str) -> usize {
    let mut end = url.len();
    loop {
        let Some(last) = url[..end].chars().next_back() else {
            return end;
        };
        let unbalanced = |open: char, close: char| {
            last == close && url[..end].matches(open).count() < url[..end].matches(close).count()
        };
        if ".,;:!?'*".contains(last)
            || unbalanced('(', ')')
            || unbalanced('[', ']')
            || unbalanced('{', '}')
        {
            end -= last.len_utf8();
        } else {
            return end;
        }
    }
}

/// The `href` of a found URL: `www.` ones get `http://`.
pub(super) fn href(url: &str) -> String {
    if url.len() >= 4 && url[..4].eq_ignore_ascii_case("www.") {
        format!("http://{url}")
    } else {
        url.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(text: &str) -> Vec<&str> {
        find(text).into_iter().map(|(s, e)| &text[s..e]).collect()
    }

    #[test]
    fn finds_urls_like_rails_auto_link() {
        assert_eq!(
            urls("see https://example.com/page."),
            ["https://example.com/page"]
        );
        assert_eq!(urls("(www.example.com/a_(b))!"), ["www.example.com/a_(b)"]);
        assert_eq!(urls("a http://x.io?q=1&r=2, b"), ["http://x.io?q=1&r=2"]);
        assert_eq!(urls("no link here, https:// alone"), Vec::<&str>::new());
        assert_eq!(urls("xhttp://evil.com"), Vec::<&str>::new());
        assert_eq!(urls("javascript:alert(1)"), Vec::<&str>::new());
        assert_eq!(href("www.a.com"), "http://www.a.com");
    }
}
