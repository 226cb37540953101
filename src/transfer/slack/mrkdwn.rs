//! Slack's `mrkdwn` (a message's `text`) as the HTML Hearth stores: Trix's shape, then
//! Hearth's own sanitizer ([`crate::rich_text::sanitize`] and [`crate::rich_text::Draft::finish`]).
//!
//! What Slack's formatting reference defines, and what it becomes:
//!
//! | mrkdwn | HTML |
//! |---|---|
//! | `*bold*`, `_italic_`, `~strike~` | `<strong>`, `<em>`, `<del>` |
//! | `` `code` `` | `<code>` |
//! | ```` ```block``` ```` | `<pre>` |
//! | lines starting `>` (`&gt;` in the export), or `>>>` for the rest | `<blockquote>` |
//! | `<https://x>`, `<https://x\|label>`, `<mailto:a@b\|a@b>` | `<a href>` (http, https, mailto) |
//! | `<@U123>`, `<@U123\|name>` | a mention attachment of the person ([`Resolve::person`]) |
//! | `<#C123\|general>` | `<a href="/rooms/ID">#general</a>` ([`Resolve::room`]) |
//! | `<!here>`, `<!channel>`, `<!everyone>`, `<!subteam^S1\|@team>` | `@here`, …, `@team` |
//! | `<!date^…\|fallback>` | the fallback text |
//! | `:smile:` | the emoji (a standard name; others stay as typed) |
//! | `&amp;`, `&lt;`, `&gt;` | the characters, escaped again for HTML |
//!
//! Lines are joined with `<br>` inside a `<div>`; formatting never crosses a line. Markers
//! follow Slack's rule: an opening one follows the start of the line, a space or punctuation
//! and precedes a non-space; the closing one precedes the end, a space or punctuation
//! (`snake_case_name` stays as it is).

use std::collections::HashMap;

use crate::rich_text::{html_escape, Body, Person, MENTION_CONTENT_TYPE};

/// What a message's text names, as Hearth knows it.
pub trait Resolve {
    /// The Hearth user a Slack user id (`U123`) became: the mention's signed global id and
    /// the person.
    fn person(&self, slack_id: &str) -> Option<(String, Person)>;
    /// The Hearth room a Slack channel id (`C123`) became: its id and name.
    fn room(&self, slack_id: &str) -> Option<(i64, String)>;
}

/// `text` (mrkdwn) as a stored body, between the HTML `before` and `after` (a reply's quote of
/// its parent, a file's card): converted ([`to_html`]), then sanitized and finished by
/// [`crate::rich_text`] with the people it mentions.
pub fn body(before: &str, text: &str, after: &str, resolve: &dyn Resolve) -> Body {
    let mut people = HashMap::new();
    let mut html = before.to_owned();
    html.push_str(&to_html(text, resolve, &mut people));
    html.push_str(after);
    crate::rich_text::sanitize(&html).finish(&people)
}

/// `text` (mrkdwn) as HTML in Trix's shape, before sanitizing; the mentions it writes are added
/// to `people` (by signed global id).
pub fn to_html(text: &str, resolve: &dyn Resolve, people: &mut HashMap<String, Person>) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    let mut w = Inline {
        resolve,
        people,
        plain: false,
    };
    let parts: Vec<&str> = text.split("```").collect();
    // Fences pair up in order; an unpaired last one is text.
    let pairs = (parts.len() - 1) / 2;
    let mut prose = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 0 || i >= 2 * pairs {
            if i == 2 * pairs + 1 {
                prose.push_str("```");
            }
            prose.push_str(part);
            continue;
        }
        write_prose(&mut out, &prose, &mut w);
        prose.clear();
        let code = part.strip_prefix('\n').unwrap_or(part);
        let code = code.strip_suffix('\n').unwrap_or(code);
        out.push_str("<pre>");
        w.plain = true;
        w.line(&mut out, code);
        w.plain = false;
        out.push_str("</pre>");
    }
    write_prose(&mut out, &prose, &mut w);
    out
}

/// Text outside code blocks: runs of quoted lines as `<blockquote>`, other runs as `<div>`,
/// lines joined with `<br>`.
fn write_prose(out: &mut String, prose: &str, w: &mut Inline<'_>) {
    let prose = prose.trim_matches('\n');
    if prose.trim().is_empty() {
        return;
    }
    let mut run: Vec<&str> = Vec::new();
    let mut quoted_run = false;
    let mut lines = prose.split('\n');
    while let Some(line) = lines.next() {
        if let Some(rest) = strip_marker(line, &["&gt;&gt;&gt;", ">>>"]) {
            flush(out, &run, quoted_run, w);
            let mut all = vec![rest];
            all.extend(lines.by_ref());
            flush(out, &all, true, w);
            return;
        }
        let (quoted, content) = match strip_marker(line, &["&gt;", ">"]) {
            Some(rest) => (true, rest),
            None => (false, line),
        };
        if quoted != quoted_run && !run.is_empty() {
            flush(out, &run, quoted_run, w);
            run.clear();
        }
        quoted_run = quoted;
        run.push(content);
    }
    flush(out, &run, quoted_run, w);
}

/// The rest of `line` after one of `markers` at its start (and one space after it).
fn strip_marker<'a>(line: &'a str, markers: &[&str]) -> Option<&'a str> {
    let rest = markers.iter().find_map(|m| line.strip_prefix(m))?;
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

/// Writes `lines` as one block: `<blockquote>` when `quoted`, else `<div>`.
fn flush(out: &mut String, lines: &[&str], quoted: bool, w: &mut Inline<'_>) {
    if lines.is_empty() {
        return;
    }
    let tag = if quoted { "blockquote" } else { "div" };
    out.push('<');
    out.push_str(tag);
    out.push('>');
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push_str("<br>");
        }
        w.line(out, line);
    }
    out.push_str("</");
    out.push_str(tag);
    out.push('>');
}

/// The writer of one line's inline content.
struct Inline<'a> {
    resolve: &'a dyn Resolve,
    people: &'a mut HashMap<String, Person>,
    /// Inside code: entities decoded and `<…>` shown as their labels, nothing else.
    plain: bool,
}

/// The formatting markers and their elements.
fn element(marker: char) -> Option<&'static str> {
    match marker {
        '*' => Some("strong"),
        '_' => Some("em"),
        '~' => Some("del"),
        _ => None,
    }
}

/// Whether `c` (None: the line's edge) may stand beside a marker on its outer side.
fn is_boundary(c: Option<char>) -> bool {
    c.is_none_or(|c| !c.is_alphanumeric())
}

impl Inline<'_> {
    /// Writes one line (no `\n` in it, except inside a code block).
    fn line(&mut self, out: &mut String, line: &str) {
        let mut i = 0;
        let mut prev: Option<char> = None;
        while let Some(c) = line[i..].chars().next() {
            let next = i + c.len_utf8();
            let taken = match c {
                '<' => self.special(out, line, i),
                '&' => entity(out, line, i),
                '`' if !self.plain => self.code(out, line, i),
                ':' if !self.plain => emoji(out, line, i),
                c if !self.plain && element(c).is_some() && is_boundary(prev) => {
                    self.emphasis(out, line, i, c)
                }
                _ => None,
            };
            let end = taken.unwrap_or_else(|| {
                push_char(out, c);
                next
            });
            prev = line[..end].chars().next_back();
            i = end;
        }
    }

    /// `*…*`, `_…_`, `~…~` starting at `at`: the element around the inner text, or None when
    /// no closing marker follows on the line. Returns the index after the closing marker.
    fn emphasis(&mut self, out: &mut String, line: &str, at: usize, marker: char) -> Option<usize> {
        let inner_start = at + marker.len_utf8();
        let first = line[inner_start..].chars().next()?;
        if first.is_whitespace() || first == marker {
            return None;
        }
        let close = closing(line, inner_start, marker)?;
        let tag = element(marker)?;
        out.push('<');
        out.push_str(tag);
        out.push('>');
        self.line(out, &line[inner_start..close]);
        out.push_str("</");
        out.push_str(tag);
        out.push('>');
        Some(close + marker.len_utf8())
    }

    /// `` `code` `` at `at`: `<code>` with the text as it is, or None when unclosed.
    fn code(&mut self, out: &mut String, line: &str, at: usize) -> Option<usize> {
        let len = line[at + 1..].find('`')?;
        if len == 0 {
            return None;
        }
        out.push_str("<code>");
        self.plain = true;
        self.line(out, &line[at + 1..at + 1 + len]);
        self.plain = false;
        out.push_str("</code>");
        Some(at + 1 + len + 1)
    }

    /// `<…>` at `at`: a link, mention, channel or special word; None when unclosed.
    fn special(&mut self, out: &mut String, line: &str, at: usize) -> Option<usize> {
        let len = line[at + 1..].find('>')?;
        let inner = &line[at + 1..at + 1 + len];
        let (target, label) = match inner.split_once('|') {
            Some((t, l)) => (t, Some(l)),
            None => (inner, None),
        };
        if let Some(id) = target.strip_prefix('@') {
            self.mention(out, id, label);
        } else if let Some(id) = target.strip_prefix('#') {
            self.channel(out, id, label);
        } else if let Some(word) = target.strip_prefix('!') {
            let shown = special_word(word, label);
            push_decoded(out, &shown);
        } else {
            self.link(out, target, label);
        }
        Some(at + 1 + len + 1)
    }

    fn mention(&mut self, out: &mut String, id: &str, label: Option<&str>) {
        match self.resolve.person(id) {
            Some((sgid, person)) if !self.plain => {
                let chip = crate::rich_text::mention_chip(person.id, &person.name);
                out.push_str("<action-text-attachment sgid=\"");
                out.push_str(&html_escape(&sgid));
                out.push_str("\" content-type=\"");
                out.push_str(MENTION_CONTENT_TYPE);
                out.push_str("\" content=\"");
                out.push_str(&html_escape(&chip));
                out.push_str("\"></action-text-attachment>");
                self.people.insert(sgid, person);
            }
            Some((_, person)) => {
                out.push('@');
                out.push_str(&html_escape(&person.name));
            }
            None => {
                out.push('@');
                push_decoded(out, label.unwrap_or(id));
            }
        }
    }

    fn channel(&self, out: &mut String, id: &str, label: Option<&str>) {
        let room = self.resolve.room(id);
        let name = label
            .map(str::to_owned)
            .or_else(|| room.as_ref().map(|(_, n)| n.clone()))
            .unwrap_or_else(|| id.to_owned());
        match room.filter(|_| !self.plain) {
            Some((room_id, _)) => {
                out.push_str(&format!("<a href=\"/rooms/{room_id}\">#"));
                push_decoded(out, &name);
                out.push_str("</a>");
            }
            None => {
                out.push('#');
                push_decoded(out, &name);
            }
        }
    }

    fn link(&self, out: &mut String, target: &str, label: Option<&str>) {
        let url = decode(target);
        let shown = label
            .map(str::to_owned)
            .unwrap_or_else(|| url.strip_prefix("mailto:").unwrap_or(&url).to_owned());
        let linkable = ["http://", "https://", "mailto:"]
            .iter()
            .any(|s| url.to_ascii_lowercase().starts_with(s));
        if self.plain || !linkable {
            push_decoded(out, &shown);
            return;
        }
        out.push_str("<a href=\"");
        out.push_str(&html_escape(&url));
        out.push_str("\">");
        push_decoded(out, &shown);
        out.push_str("</a>");
    }
}

/// The index of the marker closing one opened just before `from`: the next `marker` on the
/// line after a non-space and before a boundary, outside `<…>` and `` `…` ``.
fn closing(line: &str, from: usize, marker: char) -> Option<usize> {
    let mut i = from;
    let mut prev: Option<char> = None;
    while let Some(c) = line[i..].chars().next() {
        let next = i + c.len_utf8();
        if c == marker && i > from && prev.is_some_and(|p| !p.is_whitespace()) {
            let after = line[next..].chars().next();
            if is_boundary(after) && after != Some(marker) {
                return Some(i);
            }
        }
        let skip = match c {
            '<' => line[next..].find('>').map(|n| next + n + 1),
            '`' => line[next..].find('`').map(|n| next + n + 1),
            _ => None,
        };
        let end = skip.unwrap_or(next);
        prev = line[..end].chars().next_back();
        i = end;
    }
    None
}

/// What `<!word|label>` shows: `@here`, `@channel`, `@everyone`, a user group's label, a
/// date's fallback text, else the label or `@word`.
fn special_word(word: &str, label: Option<&str>) -> String {
    let name = word.split('^').next().unwrap_or(word);
    let broadcast = matches!(name, "here" | "channel" | "everyone");
    match label.filter(|_| !broadcast) {
        Some(l) if name == "subteam" && !l.starts_with('@') => format!("@{l}"),
        Some(l) => l.to_owned(),
        None => format!("@{name}"),
    }
}

/// `&amp;`, `&lt;` or `&gt;` at `at` as its character (escaped for HTML); None for any other
/// `&`.
fn entity(out: &mut String, line: &str, at: usize) -> Option<usize> {
    let rest = &line[at..];
    let (c, len) = [("&amp;", '&'), ("&lt;", '<'), ("&gt;", '>')]
        .iter()
        .find(|(e, _)| rest.starts_with(e))
        .map(|(e, c)| (*c, e.len()))?;
    push_char(out, c);
    Some(at + len)
}

/// `:name:` at `at` as its emoji when `name` is a standard one (with its skin tone,
/// `:+1::skin-tone-2:`); None otherwise.
fn emoji(out: &mut String, line: &str, at: usize) -> Option<usize> {
    let rest = &line[at + 1..];
    let end = rest.find(':')?;
    let mut name = &rest[..end];
    let mut after = at + 1 + end + 1;
    if name.is_empty()
        || name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_+-'".contains(&b))
    {
        return None;
    }
    let toned;
    if let Some(tone) = line[after..]
        .strip_prefix(":skin-tone-")
        .and_then(|t| t.get(..2))
        .filter(|t| t.as_bytes()[0].is_ascii_digit() && t.as_bytes()[1] == b':')
    {
        toned = format!("{name}::skin-tone-{}", &tone[..1]);
        name = &toned;
        after += ":skin-tone-".len() + 2;
    }
    let c = super::emoji::character(name)?;
    out.push_str(&c);
    Some(after)
}

/// The export's entities decoded (`&amp;` `&lt;` `&gt;`).
fn decode(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// `text` (still holding the export's entities) decoded and escaped for HTML.
fn push_decoded(out: &mut String, text: &str) {
    out.push_str(&html_escape(&decode(text)));
}

fn push_char(out: &mut String, c: char) {
    match c {
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '&' => out.push_str("&amp;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&#39;"),
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests;
