//! What one Slack message becomes: a Hearth message row and its boosts.
//!
//! - The body is the text's mrkdwn as Hearth's HTML ([`super::mrkdwn`]); when the text is empty,
//!   a bot's legacy attachments give it (their text, else their fallback).
//! - A thread's reply starts with what Hearth's own Reply writes: a quote of its parent's first
//!   line and a `<cite>` with the parent's author linking to the parent
//!   (`/rooms/:room/@:message`); a reply stamped earlier than it was written
//!   ([`super::threads`]) says its own time there.
//! - Each shared file is a link card to its original URL (`url_private`, else its
//!   `permalink`), titled with its title or name, captioned with its name, type and size: the
//!   export holds no file bytes, and an offline import cannot fetch them. A file Slack no
//!   longer has is a line naming it.
//! - Each reaction is one boost per person who reacted ([`super::emoji::boost_content`]).
//! - The time is the message's `ts`; an edited message's `updated_at` is its edit's time.

use super::emoji;
use super::mrkdwn::{self, Resolve};
use super::people::People;
use super::shapes::{ts_millis, File, Message};
use super::threads::Item;
use crate::rich_text::{html_escape, Body, OPENGRAPH_EMBED_CONTENT_TYPE};

/// The most characters of a parent quoted in its replies.
const SNIPPET_CHARS: usize = 80;

/// The most characters a boost holds (`boosts.content`, Hearth's `MAX_BOOST_CHARS`).
const BOOST_CHARS: usize = 16;

/// A message to write.
#[derive(Debug, Clone)]
pub struct Row {
    /// The author (an index into [`People::list`]).
    pub author: usize,
    /// `created_at`, ms.
    pub created_at: i64,
    /// `updated_at`, ms.
    pub updated_at: i64,
    /// The body.
    pub body: Body,
    /// The boosts: who (an index into [`People::list`]) and what.
    pub boosts: Vec<(usize, String)>,
}

/// A thread's parent as its replies quote it.
#[derive(Debug, Clone)]
pub struct Parent {
    /// The parent's message id.
    pub id: i64,
    /// Its author's name.
    pub author: String,
    /// Its text's first line, cut to `SNIPPET_CHARS` characters.
    pub snippet: String,
}

impl Parent {
    /// The parent of a reply: message `id` by `author`, whose body is `body`.
    pub fn new(id: i64, author: &str, body: &Body) -> Self {
        let first = body.plain_text.lines().next().unwrap_or("").trim();
        let mut snippet: String = first.chars().take(SNIPPET_CHARS).collect();
        if first.chars().count() > SNIPPET_CHARS {
            snippet.push('…');
        }
        Self {
            id,
            author: author.to_owned(),
            snippet,
        }
    }
}

/// Whether `message` has anything to show: text, a file, or a legacy attachment's text. One
/// without is skipped.
pub fn has_content(message: &Message) -> bool {
    !message.text.trim().is_empty()
        || !message.files.is_empty()
        || !attachments_text(message).is_empty()
}

/// The text of a message's legacy attachments, one per line.
fn attachments_text(message: &Message) -> String {
    message
        .attachments
        .iter()
        .filter_map(|a| {
            a.text
                .as_deref()
                .filter(|t| !t.trim().is_empty())
                .or(a.fallback.as_deref())
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The boosts of `message`'s reactions, found (or added as placeholders) in `people`.
pub fn boosts(message: &Message, people: &mut People) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for reaction in &message.reactions {
        if reaction.name.is_empty() {
            continue;
        }
        let content = emoji::boost_content(&reaction.name, BOOST_CHARS);
        for user in &reaction.users {
            out.push((people.user(user, None), content.clone()));
        }
    }
    out
}

/// The row of `message`, written as `item` says, in room `room_id`.
pub fn row(
    message: &Message,
    item: &Item,
    room_id: i64,
    parent: Option<&Parent>,
    people: &mut People,
    resolve: &dyn Resolve,
) -> Row {
    let author = people.author(message);
    let before = parent.map_or_else(String::new, |p| reply_marker(room_id, p, item.moved));
    let after: String = message.files.iter().map(file_html).collect();
    let text = if message.text.trim().is_empty() {
        attachments_text(message)
    } else {
        message.text.clone()
    };
    let body = mrkdwn::body(&before, &text, &after, resolve);
    let edited = message
        .edited
        .as_ref()
        .and_then(|e| ts_millis(e.ts.as_deref()?));
    Row {
        author,
        created_at: item.at,
        updated_at: edited.unwrap_or(item.at).max(item.at),
        body,
        boosts: boosts(message, people),
    }
}

/// The quote and link to a reply's parent, as Hearth's Reply writes them.
fn reply_marker(room_id: i64, parent: &Parent, moved: Option<i64>) -> String {
    let mut html = String::new();
    if !parent.snippet.is_empty() {
        html.push_str("<blockquote>");
        html.push_str(&html_escape(&parent.snippet));
        html.push_str("</blockquote>");
    }
    html.push_str("<cite>");
    html.push_str(&html_escape(&parent.author));
    html.push_str(&format!(
        " <a href=\"/rooms/{room_id}/@{}\">#</a>",
        parent.id
    ));
    if let Some(at) = moved {
        html.push_str(" · replied ");
        html.push_str(&html_escape(&utc_minute(at)));
    }
    html.push_str("</cite>");
    html
}

/// `2024-01-31 17:05 UTC`.
fn utc_minute(ms: i64) -> String {
    let iso = crate::render::iso8601(ms);
    let (date, time) = iso.split_once('T').unwrap_or((&iso, ""));
    format!("{date} {} UTC", time.get(..5).unwrap_or(time))
}

/// A shared file as a link card to its original URL, or a line naming a file Slack no longer
/// has.
fn file_html(file: &File) -> String {
    let name = file
        .name
        .as_deref()
        .or(file.title.as_deref())
        .or(file.id.as_deref())
        .unwrap_or("a file");
    let title = file
        .title
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or(name);
    let url = [file.url_private.as_deref(), file.permalink.as_deref()]
        .into_iter()
        .flatten()
        .find(|u| u.starts_with("https://") || u.starts_with("http://"));
    let Some(url) = url else {
        return format!("<div>📎 {} (not in the export)</div>", html_escape(name));
    };
    let mut caption: Vec<String> = Vec::new();
    if name != title {
        caption.push(name.to_owned());
    }
    if let Some(kind) = file.mimetype.as_deref().filter(|m| !m.is_empty()) {
        caption.push(kind.to_owned());
    }
    if let Some(size) = file.size {
        caption.push(human_size(size));
    }
    caption.push("on Slack".to_owned());
    format!(
        "<action-text-attachment content-type=\"{OPENGRAPH_EMBED_CONTENT_TYPE}\" href=\"{}\" \
         filename=\"{}\" caption=\"{}\"></action-text-attachment>",
        html_escape(url),
        html_escape(title),
        html_escape(&caption.join(" · "))
    )
}

/// `512 bytes`, `12 KB`, `3.4 MB`, `1.2 GB` (powers of 1024).
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KB", "MB", "GB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rich_text::Person;

    struct Nobody;

    impl Resolve for Nobody {
        fn person(&self, _: &str) -> Option<(String, Person)> {
            None
        }
        fn room(&self, _: &str) -> Option<(i64, String)> {
            None
        }
    }

    fn message(json: &str) -> Message {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn files_are_cards_linking_to_slack() {
        let m = message(
            r#"{"ts":"1.0","text":"","files":[{"id":"F1","name":"plan.pdf","title":"The plan","mimetype":"application/pdf","size":123456,"url_private":"https://files.slack.com/files-pri/T1-F1/plan.pdf","permalink":"https://x.slack.com/files/U1/F1/plan.pdf"},{"id":"F2","mode":"tombstone"}]}"#,
        );
        assert!(has_content(&m));
        let item = Item {
            index: 0,
            parent: None,
            at: 1000,
            moved: None,
        };
        let mut people = People::default();
        let row = row(&m, &item, 3, None, &mut people, &Nobody);
        let (shown, _) = crate::rich_text::render(&row.body.html);
        assert!(
            shown.contains("href=\"https://files.slack.com/files-pri/T1-F1/plan.pdf\""),
            "{shown}"
        );
        assert!(shown.contains(">The plan</a>"), "{shown}");
        assert!(
            shown.contains("plan.pdf · application/pdf · 121 KB · on Slack"),
            "{shown}"
        );
        assert!(shown.contains("📎 F2 (not in the export)"), "{shown}");
    }

    #[test]
    fn replies_quote_and_link_their_parent() {
        let parent = Parent::new(
            41,
            "Ann",
            &crate::rich_text::from_plain_text("first line\nsecond"),
        );
        assert_eq!(parent.snippet, "first line");
        let m = message(r#"{"ts":"5.0","text":"a reply","edited":{"ts":"9.0"}}"#);
        let item = Item {
            index: 1,
            parent: Some(0),
            at: 4000,
            moved: Some(5000),
        };
        let mut people = People::default();
        let row = row(&m, &item, 3, Some(&parent), &mut people, &Nobody);
        assert_eq!(
            row.body.html,
            "<blockquote>first line</blockquote><cite>Ann <a href=\"/rooms/3/@41\" \
             target=\"_blank\" rel=\"noopener noreferrer\">#</a> · replied 1970-01-01 00:00 \
             UTC</cite><div>a reply</div>"
        );
        assert_eq!(row.created_at, 4000);
        assert_eq!(row.updated_at, 9000);
    }

    #[test]
    fn attachments_speak_for_an_empty_text_and_reactions_are_boosts() {
        let m = message(
            r#"{"ts":"1.0","text":"","subtype":"bot_message","bot_id":"B1","username":"CI","attachments":[{"fallback":"Build *passed*"}],"reactions":[{"name":"tada","users":["U1","U2"],"count":2},{"name":"partyparrot","users":["U1"],"count":1}]}"#,
        );
        let mut people = People::default();
        let item = Item {
            index: 0,
            parent: None,
            at: 1000,
            moved: None,
        };
        let row = row(&m, &item, 3, None, &mut people, &Nobody);
        assert_eq!(row.body.html, "<div>Build <strong>passed</strong></div>");
        assert_eq!(people.list[row.author].name, "CI");
        let contents: Vec<&str> = row.boosts.iter().map(|(_, c)| c.as_str()).collect();
        assert_eq!(contents, ["🎉", "🎉", ":partyparrot:"]);
        assert!(!has_content(&message(r#"{"ts":"1.0","text":"  "}"#)));
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_size(512), "512 bytes");
        assert_eq!(human_size(2048), "2.0 KB");
        assert_eq!(human_size(123_456), "121 KB");
        assert_eq!(human_size(3 << 30), "3.0 GB");
    }
}
