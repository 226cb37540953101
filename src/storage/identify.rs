//! The content type of an upload, from its bytes (Rails identifies blobs with Marcel; the
//! client's claim is only a hint and never makes bytes an image or a page), and how each type
//! may be served.
//!
//! Anything a browser could run — HTML, SVG, XML, JavaScript — is served as
//! `application/octet-stream` with `Content-Disposition: attachment` (Rails'
//! `ActiveStorage.content_types_to_serve_as_binary`); only the types of
//! [`INLINE`] (Rails' `content_types_allowed_inline`) are ever shown inline.

/// Types shown inline; everything else is a download.
pub const INLINE: &[&str] = &[
    "image/png",
    "image/gif",
    "image/jpeg",
    "image/webp",
    "image/bmp",
    "application/pdf",
];

/// Types served as `application/octet-stream`, whatever their name.
pub const AS_BINARY: &[&str] = &[
    "text/html",
    "text/javascript",
    "application/javascript",
    "image/svg+xml",
    "application/xml",
    "text/xml",
    "application/xhtml+xml",
    "application/mathml+xml",
    "text/cache-manifest",
];

/// The content type of bytes starting with `head`, named `filename`.
pub fn content_type(head: &[u8], filename: &str) -> &'static str {
    let magic: &[(&[u8], usize, &str)] = &[
        (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
        (b"\xff\xd8\xff", 0, "image/jpeg"),
        (b"GIF87a", 0, "image/gif"),
        (b"GIF89a", 0, "image/gif"),
        (b"%PDF-", 0, "application/pdf"),
        (b"\x1a\x45\xdf\xa3", 0, "video/webm"),
        (b"PK\x03\x04", 0, "application/zip"),
        (b"\x1f\x8b", 0, "application/gzip"),
        (b"ID3", 0, "audio/mpeg"),
        (b"OggS", 0, "audio/ogg"),
        (b"BM", 0, "image/bmp"),
    ];
    for (bytes, at, kind) in magic {
        if head.get(*at..*at + bytes.len()) == Some(*bytes) {
            return kind;
        }
    }
    if head.len() >= 12 && &head[0..4] == b"RIFF" {
        match &head[8..12] {
            b"WEBP" => return "image/webp",
            b"WAVE" => return "audio/wav",
            _ => {}
        }
    }
    if head.len() >= 12 && &head[4..8] == b"ftyp" {
        return if &head[8..10] == b"qt" {
            "video/quicktime"
        } else if head[8..12].starts_with(b"M4A") {
            "audio/mp4"
        } else {
            "video/mp4"
        };
    }
    let text = head.iter().all(|&b| b != 0) && std::str::from_utf8(head).is_ok()
        || (head.len() == super::disk::HEAD_BYTES && head.iter().all(|&b| b != 0));
    if !text {
        return "application/octet-stream";
    }
    let lower: String = String::from_utf8_lossy(head)
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .take(1024)
        .collect::<String>()
        .to_ascii_lowercase();
    if lower.contains("<svg") {
        return "image/svg+xml";
    }
    const HTML: &[&str] = &[
        "<!doctype html",
        "<html",
        "<head",
        "<body",
        "<script",
        "<iframe",
        "<h1",
        "<div",
        "<table",
        "<a ",
        "<img",
        "<style",
        "<title",
        "<p>",
        "<br",
        "<!--",
        "<meta",
        "<object",
        "<embed",
    ];
    if HTML.iter().any(|tag| lower.starts_with(tag)) {
        return "text/html";
    }
    if lower.starts_with("<?xml") {
        return if lower.contains("<html") {
            "application/xhtml+xml"
        } else {
            "application/xml"
        };
    }
    let ext = filename
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "html" | "htm" | "xhtml" | "shtml" => "text/html",
        "svg" => "image/svg+xml",
        "xml" | "xsl" | "xslt" => "application/xml",
        "js" | "mjs" => "text/javascript",
        "css" => "text/css",
        "json" => "application/json",
        "csv" => "text/csv",
        "md" | "markdown" => "text/markdown",
        _ => "text/plain",
    }
}

/// The `Content-Type` to serve a stored type with: [`AS_BINARY`] ones as
/// `application/octet-stream`, text with `charset=utf-8`.
pub fn served_content_type(stored: Option<&str>) -> &str {
    match stored {
        Some(t) if AS_BINARY.contains(&t) => "application/octet-stream",
        Some("text/plain") => "text/plain; charset=utf-8",
        Some(t) if !t.is_empty() => t,
        _ => "application/octet-stream",
    }
}

/// Whether a stored type may be shown inline ([`INLINE`]).
pub fn inline_allowed(stored: Option<&str>) -> bool {
    stored.is_some_and(|t| INLINE.contains(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_come_from_the_content() {
        assert_eq!(content_type(b"\x89PNG\r\n\x1a\nrest", "a.txt"), "image/png");
        assert_eq!(content_type(b"<!DOCTYPE html><p>hi", "a.png"), "text/html");
        assert_eq!(
            content_type(b"  <script>alert(1)</script>", "a.jpg"),
            "text/html"
        );
        assert_eq!(
            content_type(b"<?xml version=\"1.0\"?><svg/>", "a.gif"),
            "image/svg+xml"
        );
        assert_eq!(
            content_type(b"<?xml version=\"1.0\"?><a/>", "a"),
            "application/xml"
        );
        assert_eq!(content_type(b"alert(1)", "x.js"), "text/javascript");
        assert_eq!(content_type(b"hello", "notes"), "text/plain");
        assert_eq!(
            content_type(b"\x00\x01\x02", "a.png"),
            "application/octet-stream"
        );
        assert_eq!(content_type(b"RIFF\0\0\0\0WEBPVP8 ", "a"), "image/webp");
        assert_eq!(content_type(b"\0\0\0\x18ftypmp42", "a"), "video/mp4");
    }

    #[test]
    fn runnable_types_are_served_as_binary_downloads() {
        for t in [
            "text/html",
            "image/svg+xml",
            "application/xml",
            "text/javascript",
        ] {
            assert_eq!(served_content_type(Some(t)), "application/octet-stream");
            assert!(!inline_allowed(Some(t)));
        }
        assert!(inline_allowed(Some("image/png")));
        assert_eq!(served_content_type(None), "application/octet-stream");
    }
}
