//! Message bodies: the one home of their codec.
//!
//! A body is stored as Action Text stores it (`has_rich_text :body`): HTML, in Trix's shape
//! (`<div>…</div>` blocks, `<strong>`, `<em>`, `<a href>`, `<pre>`, `<blockquote>`, lists), with
//! mentions as Action Text attachments of the user:
//!
//! ```text
//! <action-text-attachment sgid="eyJfcmFpbHMi…--4f1c…" content-type="application/vnd.campfire.mention"
//!   content="&lt;span class=&quot;mention&quot;&gt;@Jason&lt;/span&gt;"></action-text-attachment>
//! ```
//!
//! (Campfire's `User::Mentionable`, `rich_autocomplete_controller.js`; the sgid is a Rails
//! signed GlobalID, [`crate::rails::SignedGlobalIds`]).
//!
//! The ways in:
//! - [`from_plain_text`]: typed text (a bot's post, a form without the editor): escaped as
//!   Rails' `html_escape`, lines joined with `<br>`, URLs linked.
//! - [`sanitize`] then [`Draft::finish`]: the editor's HTML. [`sanitize`] keeps only Action
//!   Text's allowlist as Campfire narrows it (`ContentFilters::SanitizeTags`,
//!   `SanitizeAttributes`) through `ammonia`: scripts, styles, event handlers, `javascript:`
//!   links, images and foreign attachments are cut (a link preview's card is kept in its
//!   checked form: an `http(s)` link, text, and only an image this server stored, see
//!   [`crate::link_previews`]). The draft lists the mentions' sgids; the
//!   caller resolves them to people of the room ([`Person`]) and [`Draft::finish`] writes the
//!   body with only those mentions (each with its `content` written by the server), URLs linked.
//!
//! The ways out: [`render`] (the HTML inside a message's `.trix-content`, mentions drawn as
//! chips, as Action Text renders `users/_mention`), [`plain_text`] (search, bots, the edit form
//! of old bodies; a mention reads `@Name`, Campfire's `attachable_plain_text_representation`),
//! [`to_trix_html`] (the edit form's editor) and [`mentioned_user_ids`] (who a body mentions).

mod autolink;
pub mod card;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

/// The content type of a mention attachment (Campfire's `User#attachable_content_type`).
pub const MENTION_CONTENT_TYPE: &str = "application/vnd.campfire.mention";

/// The content type of a link preview's card (Action Text's `OpengraphEmbed`, Campfire's
/// `actiontext_opengraph_embeds.rb`): an attachment with the page's `href`, its title as
/// `filename`, its description as `caption` and its image as `url`.
pub const OPENGRAPH_EMBED_CONTENT_TYPE: &str = "application/vnd.actiontext.opengraph-embed";

/// The longest body accepted, in bytes of the submitted text or HTML, before sanitizing: longer
/// posts and edits answer 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The deepest element nesting a submitted body may have. An HTML parser's work grows much
/// faster than the depth (thousands of unclosed `<i>` or `<div>` in 64 KiB took seconds to
/// sanitize and again to render), and Trix writes a few levels at most (lists in quotes).
pub const MAX_NESTING: usize = 64;

/// Whether `html` nests elements deeper than `limit`, counted the way a parser opens them: a
/// start tag opens an element unless it is void (`br`, `img`, …); a trailing `/` closes
/// nothing (`<div/>` opens a `div`: HTML ignores the self-closing flag on its own elements,
/// <https://html.spec.whatwg.org/#start-tags>); an end tag
/// closes the innermost open element of its name (and those inside it), and one naming no open
/// element closes nothing. Comments are skipped. A cheap scan (it stops at the first level past
/// `limit`), run before the sanitizer.
pub fn nests_deeper_than(html: &str, limit: usize) -> bool {
    const VOID: &[&str] = &[
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr",
    ];
    let bytes = html.as_bytes();
    let mut open: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(at) = bytes[i..].iter().position(|&b| b == b'<') {
        let rest = &bytes[i + at + 1..];
        if rest.starts_with(b"!--") {
            let Some(end) = rest.windows(3).position(|w| w == b"-->") else {
                return false;
            };
            i += at + 1 + end + 3;
            continue;
        }
        let closing = rest.first() == Some(&b'/');
        let name: String = rest[usize::from(closing)..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric())
            .map(|b| char::from(b.to_ascii_lowercase()))
            .collect();
        let end = rest.iter().position(|&b| b == b'>');
        i += at + 1 + end.map_or(rest.len(), |e| e + 1);
        if name.is_empty() {
            continue;
        }
        if closing {
            if let Some(k) = open.iter().rposition(|n| *n == name) {
                open.truncate(k);
            }
        } else if !VOID.contains(&name.as_str()) {
            open.push(name);
            if open.len() > limit {
                return true;
            }
        }
    }
    false
}

/// The heading elements, `h1` to `h6`: allowed ([`ALLOWED_TAGS`]) and blocks ([`BLOCKS`]).
const HEADINGS: &[&str] = &["h1", "h2", "h3", "h4", "h5", "h6"];

/// The tags a body may hold besides the [`HEADINGS`]: Campfire's `ContentFilters::SanitizeTags::ALLOWED_TAGS` (Rails'
/// safe list without `img`, plus Action Text's attachment, `figure` and `figcaption`).
const ALLOWED_TAGS: &[&str] = &[
    "a",
    "abbr",
    "acronym",
    "address",
    "b",
    "big",
    "blockquote",
    "br",
    "cite",
    "code",
    "dd",
    "del",
    "dfn",
    "div",
    "dl",
    "dt",
    "em",
    "hr",
    "i",
    "ins",
    "kbd",
    "li",
    "ol",
    "p",
    "pre",
    "samp",
    "small",
    "span",
    "strong",
    "sub",
    "sup",
    "time",
    "tt",
    "ul",
    "var",
    "action-text-attachment",
    "figure",
    "figcaption",
];

/// Block elements besides the [`HEADINGS`]: their end is a line break in the plain text.
const BLOCKS: &[&str] = &[
    "div",
    "p",
    "li",
    "blockquote",
    "pre",
    "dd",
    "dt",
    "figcaption",
    "address",
];

/// Whether `tag` ends with a line break in the plain text: a heading or one of [`BLOCKS`].
fn is_block(tag: &str) -> bool {
    HEADINGS.contains(&tag) || BLOCKS.contains(&tag)
}

/// Elements without an end tag.
const VOID: &[&str] = &["br", "hr"];

/// A person a body may mention: a member of the room, as the server knows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// User id.
    pub id: i64,
    /// Name, as the chip shows it.
    pub name: String,
}

/// A body ready to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// The Action Text HTML (the `body` of `action_text_rich_texts`).
    pub html: String,
    /// Its plain text (for search and bots): block ends and `<br>` as line breaks, mentions as
    /// `@Name`, trimmed.
    pub plain_text: String,
    /// The ids of the people it mentions, in order of first mention, each once.
    pub mentionee_ids: Vec<i64>,
    /// Whether [`from_plain_text`] built it from text without a link: escaped text and `<br>`
    /// in one `<div>`, which the sanitizer keeps as it is, so [`Body::shown`] draws it without
    /// a second pass.
    typed: bool,
    /// The link previews [`render`] drew: each card's `href` and where it is in `html`.
    embeds: Vec<(String, std::ops::Range<usize>)>,
}

impl Body {
    /// A body with nothing in it (a file's message without text).
    pub fn empty() -> Self {
        Self {
            html: String::new(),
            plain_text: String::new(),
            mentionee_ids: Vec::new(),
            typed: false,
            embeds: Vec::new(),
        }
    }

    /// This body as a message shows it, as [`render`] draws it from the database: its HTML
    /// and the ids of the people it mentions. A typed body without links ([`from_plain_text`])
    /// is only walked: escaped text and `<br>` hold nothing the sanitizer would cut or reshape,
    /// and nothing the walk could link (held equal to [`render`] by
    /// `rich_text::tests::a_typed_body_is_shown_as_render_draws_it`). Every other body, the
    /// editor's HTML included, goes through the sanitizer again, whose output is the shape a
    /// browser keeps (`docs/bench/journal.md`, "The post's body drawn without a second
    /// sanitize").
    pub fn shown(&self) -> (String, Vec<i64>) {
        if self.typed {
            let shown = walk(&self.html, &mut Mode::Render);
            (shown.html, shown.mentionee_ids)
        } else {
            render(&self.html)
        }
    }

    /// Whether nothing is left to show: no text and no mention (refused like an empty post).
    pub fn is_blank(&self) -> bool {
        self.plain_text.trim().is_empty() && self.mentionee_ids.is_empty()
    }
}

/// Rails' `ERB::Util.html_escape` of `text`: `&amp; &lt; &gt; &quot; &#39;`.
pub fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    push_escaped(&mut out, text);
    out
}

fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// Escaped `text` with its URLs as links (`<a href="…" target="_blank" rel="noopener noreferrer">`).
/// A URL the sanitizer would take the `href` off ([`keeps_href`]) stays text.
fn push_linked(out: &mut String, text: &str) {
    let mut at = 0;
    for (start, end) in autolink::find(text) {
        let url = &text[start..end];
        let href = autolink::href(url);
        if !keeps_href(&href) {
            continue;
        }
        push_escaped(out, &text[at..start]);
        out.push_str("<a href=\"");
        push_escaped(out, &href);
        out.push_str("\" target=\"_blank\" rel=\"noopener noreferrer\">");
        push_escaped(out, url);
        out.push_str("</a>");
        at = end;
    }
    push_escaped(out, &text[at..]);
}

/// Typed plain text as a body: escaped as Rails' `html_escape` (so its bytes are the ones
/// Rails would store), lines joined with `<br>`, inside one `<div>` (the shape of an Action
/// Text body), URLs linked. Holds no mentions.
pub fn from_plain_text(text: &str) -> Body {
    // An HTML parser drops NUL from text (the page would not show what was stored).
    let text = if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', ""))
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    let text = text.trim();
    let mut html = String::with_capacity(text.len() + 16);
    html.push_str("<div>");
    let mut plain = String::with_capacity(text.len());
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            html.push_str("<br>");
            plain.push('\n');
        }
        push_linked(&mut html, line);
        plain.push_str(line);
    }
    html.push_str("</div>");
    Body {
        html,
        plain_text: plain,
        mentionee_ids: Vec::new(),
        typed: !autolink::may_link(text),
        embeds: Vec::new(),
    }
}

/// Whether the sanitizer keeps `href` on a link: an absolute URL of an allowed scheme, as the
/// `url` crate parses it (ammonia's test). A URL it fails (`http://a.example:99999`, say)
/// would become a link without a target.
fn keeps_href(href: &str) -> bool {
    ammonia::Url::parse(href).is_ok_and(|u| LINK_SCHEMES.contains(&u.scheme()))
}

/// The URL schemes a link may have (the sanitizer's allowlist).
const LINK_SCHEMES: [&str; 3] = ["http", "https", "mailto"];

/// A relative URL as kept in a link: as given, unless a browser would read it as another host's
/// (`//host`, and `/\host` or `\\host` since browsers read `\` as `/` and drop tabs and
/// newlines inside URLs, and surrounding spaces): then the `href` is cut.
fn same_host_relative(url: &str) -> Option<std::borrow::Cow<'_, str>> {
    let mut seen = url
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .map(|c| if c == '\\' { '/' } else { c });
    let host_relative = seen.next() == Some('/') && seen.next() == Some('/');
    (!host_relative && !url.contains('\\')).then_some(std::borrow::Cow::Borrowed(url))
}

/// The sanitizer of submitted and rendered HTML: the allowlist of [`ALLOWED_TAGS`] with Action
/// Text's attachment attributes, `http`/`https`/`mailto` links (relative ones kept when they
/// stay on this host, [`same_host_relative`]), every
/// link `rel="noopener noreferrer"` and `target="_blank"`, comments dropped, the contents of
/// `script` and `style` dropped with them.
fn sanitizer() -> &'static ammonia::Builder<'static> {
    static BUILDER: std::sync::LazyLock<ammonia::Builder<'static>> =
        std::sync::LazyLock::new(|| {
            let mut b = ammonia::Builder::empty();
            b.tags(ALLOWED_TAGS.iter().chain(HEADINGS).copied().collect())
                .clean_content_tags(["script", "style"].into_iter().collect())
                .generic_attributes(["title", "lang"].into_iter().collect())
                .tag_attributes(HashMap::from([
                    ("a", HashSet::from(["href"])),
                    ("abbr", HashSet::from(["abbr"])),
                    ("blockquote", HashSet::from(["cite"])),
                    ("del", HashSet::from(["cite", "datetime"])),
                    ("ins", HashSet::from(["cite", "datetime"])),
                    ("time", HashSet::from(["datetime"])),
                    (
                        "action-text-attachment",
                        HashSet::from([
                            "sgid",
                            "content-type",
                            "content",
                            "href",
                            "url",
                            "filename",
                            "caption",
                        ]),
                    ),
                    (
                        "figure",
                        HashSet::from(["data-trix-attachment", "data-trix-content-type"]),
                    ),
                ]))
                .url_schemes(LINK_SCHEMES.into_iter().collect())
                .url_relative(ammonia::UrlRelative::Custom(Box::new(same_host_relative)))
                .link_rel(Some("noopener noreferrer"))
                .set_tag_attribute_value("a", "target", "_blank")
                .strip_comments(true);
            b
        });
    &BUILDER
}

/// A submitted body after the sanitizer, with the mentions it asks for still to be resolved.
#[derive(Clone, Debug)]
pub struct Draft {
    cleaned: String,
    sgids: Vec<String>,
}

/// Sanitizes the editor's HTML (Trix's: mentions as `<figure data-trix-attachment=…>`; or
/// Action Text's: `<action-text-attachment>`) into a [`Draft`].
pub fn sanitize(html: &str) -> Draft {
    let cleaned = sanitizer().clean(html).to_string();
    let mut sgids = Vec::new();
    walk(&cleaned, &mut Mode::Collect(&mut sgids));
    let mut seen = HashSet::new();
    sgids.retain(|s| seen.insert(s.clone()));
    Draft { cleaned, sgids }
}

impl Draft {
    /// The sgids of the mention attachments it holds, each once: resolve them to the people of
    /// the room they name (verify each with [`crate::rails::SignedGlobalIds::verify`], then keep
    /// the room's active members) and pass those to [`Self::finish`].
    pub fn sgids(&self) -> &[String] {
        &self.sgids
    }

    /// The body to store: the mentions of `people` (by sgid) as Action Text attachments whose
    /// `content` is the server's chip, every other attachment and figure cut, URLs linked.
    pub fn finish(&self, people: &HashMap<String, Person>) -> Body {
        let mut body = walk(&self.cleaned, &mut Mode::Store(people));
        body.mentionee_ids.dedup();
        let mut seen = HashSet::new();
        body.mentionee_ids.retain(|id| seen.insert(*id));
        body
    }
}

/// The chip of a mention: `<span class="mention" data-user-id="3">@Jason</span>` (what
/// Campfire's `users/_mention` draws, without the avatar image).
pub fn mention_chip(id: i64, name: &str) -> String {
    let mut out = format!("<span class=\"mention\" data-user-id=\"{id}\">@");
    push_escaped(&mut out, name);
    out.push_str("</span>");
    out
}

/// A stored body as the page shows it inside `.trix-content`: sanitized again (a body written
/// by another writer of the database gets the same allowlist), URLs not yet linked linked, each
/// mention attachment filled with its chip (as Action Text renders the attachable's partial
/// inside `<action-text-attachment>`). Returns the HTML and the ids of the people it
/// mentions (for the page's per-reader highlight).
pub fn render(html: &str) -> (String, Vec<i64>) {
    let cleaned = sanitizer().clean(html).to_string();
    let mut body = walk(&cleaned, &mut Mode::Render);
    // A message that is only a link and its preview shows the card alone (Campfire's
    // `RemoveSoloUnfurledLinkText`).
    if let [(href, range)] = body.embeds.as_slice() {
        if body.plain_text.trim() == href.trim() {
            body.html = format!("<div>{}</div>", &body.html[range.clone()]);
        }
    }
    let mut seen = HashSet::new();
    let mut ids = body.mentionee_ids;
    ids.retain(|id| seen.insert(*id));
    (body.html, ids)
}

/// The plain text of a stored body: text with block ends and `<br>` as line breaks, mentions
/// as `@Name`, character references decoded, trimmed (Action Text's `to_plain_text`, roughly).
pub fn plain_text(html: &str) -> String {
    let cleaned = sanitizer().clean(html).to_string();
    walk(&cleaned, &mut Mode::Render).plain_text
}

/// A stored body as the editor loads it: each mention attachment as the Trix attachment
/// Action Text's `to_trix_html` writes (`<figure data-trix-attachment="{…}">`).
pub fn to_trix_html(html: &str) -> String {
    let cleaned = sanitizer().clean(html).to_string();
    walk(&cleaned, &mut Mode::Trix).html
}

/// The ids of the users a stored body mentions, in order of first mention, each once: every
/// mention attachment's sgid, read without checking its signature (bodies are checked when
/// stored). For notifications and bot webhooks use `db::messages::mentionees`, which keeps only
/// the room's members.
pub fn mentioned_user_ids(html: &str) -> Vec<i64> {
    render(html).1
}

/// The user id a mention's sgid names, read without checking the signature (as Campfire draws
/// a mention whose signature no longer verifies): the `gid://<app>/User/<id>` inside either of
/// Rails' envelopes, in either base64 alphabet ([`crate::rails::signed_global_id::peek_id`]).
fn peek_user_id(sgid: &str) -> Option<i64> {
    crate::rails::signed_global_id::peek_id(sgid, "User")
}

/// The name a stored mention's `content` shows: its text, without a leading `@`.
fn name_in_content(content: &str) -> String {
    let text = walk(&sanitizer().clean(content).to_string(), &mut Mode::Render).plain_text;
    text.trim().trim_start_matches('@').trim().to_owned()
}

enum Mode<'a> {
    /// List the sgids of mention attachments.
    Collect(&'a mut Vec<String>),
    /// Write the stored form: only the given people's mentions, with the server's content.
    Store(&'a HashMap<String, Person>),
    /// Write the page's form: mentions with their chips.
    Render,
    /// Write the editor's form.
    Trix,
}

/// One pass over sanitized HTML (balanced, allowlisted: ammonia's output), writing the chosen
/// form and the plain text.
fn walk(html: &str, mode: &mut Mode<'_>) -> Body {
    let sink = Sink(RefCell::new(Writer::default()));
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let queue = BufferQueue::default();
    queue.push_back(html.into());
    let tokens = {
        let _ = tokenizer.feed(&queue);
        tokenizer.end();
        std::mem::take(&mut tokenizer.sink.0.borrow_mut().tokens)
    };
    let mut w = Writer::default();
    for token in tokens {
        w.token(token, mode);
    }
    Body {
        plain_text: w.plain.trim().to_owned(),
        html: w.html,
        mentionee_ids: w.mentions,
        typed: false,
        embeds: w.embeds,
    }
}

struct Sink(RefCell<Writer>);

impl TokenSink for Sink {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        self.0.borrow_mut().tokens.push(token);
        TokenSinkResult::Continue
    }
}

#[derive(Default)]
struct Writer {
    tokens: Vec<Token>,
    html: String,
    plain: String,
    mentions: Vec<i64>,
    /// The link previews written ([`Body::embeds`]).
    embeds: Vec<(String, std::ops::Range<usize>)>,
    /// Open elements.
    open: Vec<String>,
    /// While inside a subtree being dropped or replaced: the depth of `open` at its root.
    skip_to: Option<usize>,
}

fn attr<'t>(tag: &'t Tag, name: &str) -> Option<&'t str> {
    tag.attrs
        .iter()
        .find(|a| &*a.name.local == name)
        .map(|a| &*a.value)
}

impl Writer {
    fn token(&mut self, token: Token, mode: &mut Mode<'_>) {
        match token {
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag => self.start(&tag, mode),
                TagKind::EndTag => self.end(&tag.name),
            },
            Token::CharacterTokens(text) => {
                if self.skip_to.is_some() {
                    return;
                }
                let linkable = matches!(mode, Mode::Store(_) | Mode::Render)
                    && !self
                        .open
                        .iter()
                        .any(|t| matches!(t.as_str(), "a" | "pre" | "code"));
                if linkable {
                    push_linked(&mut self.html, &text);
                } else {
                    push_escaped(&mut self.html, &text);
                }
                self.plain.push_str(&text);
            }
            _ => {}
        }
    }

    fn start(&mut self, tag: &Tag, mode: &mut Mode<'_>) {
        let name: &str = &tag.name;
        let void = VOID.contains(&name) || tag.self_closing;
        if self.skip_to.is_some() {
            if !void {
                self.open.push(name.to_owned());
            }
            return;
        }
        if name == "br" {
            self.plain.push('\n');
        }
        if name == "figure" || name == "action-text-attachment" {
            self.attachment(tag, mode);
            if !void {
                self.skip_to = Some(self.open.len());
                self.open.push(name.to_owned());
            }
            return;
        }
        self.html.push('<');
        self.html.push_str(name);
        for a in &tag.attrs {
            self.html.push(' ');
            self.html.push_str(&a.name.local);
            self.html.push_str("=\"");
            push_escaped(&mut self.html, &a.value);
            self.html.push('"');
        }
        self.html.push('>');
        if !void {
            self.open.push(name.to_owned());
        }
    }

    fn end(&mut self, name: &str) {
        let Some(at) = self.open.iter().rposition(|t| t == name) else {
            return;
        };
        while self.open.len() > at {
            let depth = self.open.len() - 1;
            let Some(t) = self.open.pop() else { break };
            if let Some(root) = self.skip_to {
                if depth == root {
                    self.skip_to = None;
                }
                continue;
            }
            self.html.push_str("</");
            self.html.push_str(&t);
            self.html.push('>');
            if is_block(&t) && !self.plain.is_empty() && !self.plain.ends_with('\n') {
                self.plain.push('\n');
            }
        }
    }

    /// An attachment (`action-text-attachment`, or Trix's `figure`): written in the mode's
    /// form when it is a mention the mode keeps, else cut. Its children are skipped either way.
    fn attachment(&mut self, tag: &Tag, mode: &mut Mode<'_>) {
        let json: Option<serde_json::Value> = (&*tag.name == "figure")
            .then(|| attr(tag, "data-trix-attachment").and_then(|j| serde_json::from_str(j).ok()))
            .flatten();
        let field = |k: &str, attribute: &str| {
            if &*tag.name == "figure" {
                json.as_ref()
                    .and_then(|j| j.get(k))
                    .and_then(|v| v.as_str())
                    .map(str::to_owned)
            } else {
                attr(tag, attribute).map(str::to_owned)
            }
        };
        let (sgid, content_type, content) = (
            field("sgid", "sgid"),
            field("contentType", "content-type"),
            field("content", "content"),
        );
        if content_type.as_deref() == Some(OPENGRAPH_EMBED_CONTENT_TYPE) {
            if let Some(embed) = Embed::checked(
                field("href", "href"),
                field("filename", "filename"),
                field("caption", "caption").as_deref(),
                field("url", "url"),
            ) {
                self.embed(&embed, mode);
            }
            return;
        }
        let Some(sgid) = sgid.filter(|_| content_type.as_deref() == Some(MENTION_CONTENT_TYPE))
        else {
            return;
        };
        match mode {
            Mode::Collect(list) => list.push(sgid),
            Mode::Store(people) => {
                let Some(person) = people.get(&sgid) else {
                    return;
                };
                let chip = mention_chip(person.id, &person.name);
                self.write_attachment(&sgid, &chip, None);
                self.plain.push('@');
                self.plain.push_str(&person.name);
                self.mentions.push(person.id);
            }
            Mode::Render => {
                let Some(id) = peek_user_id(&sgid) else {
                    return;
                };
                let name = name_in_content(content.as_deref().unwrap_or(""));
                let chip = mention_chip(id, &name);
                let content = content.unwrap_or_default();
                self.write_attachment(&sgid, &content, Some(&chip));
                self.plain.push('@');
                self.plain.push_str(&name);
                self.mentions.push(id);
            }
            Mode::Trix => {
                let content = content.unwrap_or_default();
                let json = serde_json::json!({
                    "contentType": MENTION_CONTENT_TYPE,
                    "content": content,
                    "sgid": sgid,
                });
                self.html.push_str("<figure data-trix-attachment=\"");
                push_escaped(&mut self.html, &json.to_string());
                self.html.push_str("\" data-trix-content-type=\"");
                self.html.push_str(MENTION_CONTENT_TYPE);
                self.html
                    .push_str("\" class=\"attachment attachment--content\">");
                self.html.push_str("</figure>");
            }
        }
    }

    /// A link preview, in the mode's form (nothing to collect; the stored attachment; the
    /// attachment with its card; Trix's figure).
    fn embed(&mut self, embed: &Embed, mode: &Mode<'_>) {
        match mode {
            Mode::Collect(_) => {}
            Mode::Store(_) => {
                embed.write_attachment(&mut self.html);
                self.html.push_str("</action-text-attachment>");
            }
            Mode::Render => {
                let start = self.html.len();
                embed.write_attachment(&mut self.html);
                embed.write_card(&mut self.html);
                self.html.push_str("</action-text-attachment>");
                self.embeds
                    .push((embed.href.clone(), start..self.html.len()));
            }
            Mode::Trix => {
                let mut card = String::new();
                embed.write_card(&mut card);
                let json = serde_json::json!({
                    "contentType": OPENGRAPH_EMBED_CONTENT_TYPE,
                    "content": card,
                    "href": embed.href,
                    "filename": embed.title,
                    "caption": embed.description,
                    "url": embed.image,
                });
                self.html.push_str("<figure data-trix-attachment=\"");
                push_escaped(&mut self.html, &json.to_string());
                self.html.push_str("\" data-trix-content-type=\"");
                self.html.push_str(OPENGRAPH_EMBED_CONTENT_TYPE);
                self.html
                    .push_str("\" class=\"attachment attachment--content\"></figure>");
            }
        }
    }

    fn write_attachment(&mut self, sgid: &str, content: &str, inner: Option<&str>) {
        self.html.push_str("<action-text-attachment sgid=\"");
        push_escaped(&mut self.html, sgid);
        self.html.push_str("\" content-type=\"");
        self.html.push_str(MENTION_CONTENT_TYPE);
        self.html.push_str("\" content=\"");
        push_escaped(&mut self.html, content);
        self.html.push_str("\">");
        if let Some(inner) = inner {
            self.html.push_str(inner);
        }
        self.html.push_str("</action-text-attachment>");
    }
}

#[cfg(test)]
mod tests;

/// A link preview's card as a body holds it: the page's link, title and description, and its
/// image when it is one this server stored ([`card::image_key`]).
struct Embed {
    href: String,
    title: String,
    description: String,
    image: Option<String>,
}

impl Embed {
    /// The card of these attributes: None unless `href` is an `http(s)` URL and there is a
    /// title; an image anywhere but this server's preview images is dropped.
    fn checked(
        href: Option<String>,
        title: Option<String>,
        description: Option<&str>,
        image: Option<String>,
    ) -> Option<Self> {
        let href = href?.trim().to_owned();
        let parsed = ammonia::Url::parse(&href).ok()?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return None;
        }
        let title = card::one_line(&title?, card::MAX_TITLE_CHARS);
        if title.is_empty() {
            return None;
        }
        let description = card::one_line(description.unwrap_or(""), card::MAX_DESCRIPTION_CHARS);
        let image = image.filter(|i| card::image_key(i).is_some());
        Some(Self {
            href,
            title,
            description,
            image,
        })
    }

    /// `<action-text-attachment content-type=… href=… filename=… caption=… url=…>`, unclosed.
    fn write_attachment(&self, out: &mut String) {
        out.push_str("<action-text-attachment content-type=\"");
        out.push_str(OPENGRAPH_EMBED_CONTENT_TYPE);
        out.push_str("\" href=\"");
        push_escaped(out, &self.href);
        out.push_str("\" filename=\"");
        push_escaped(out, &self.title);
        out.push_str("\" caption=\"");
        push_escaped(out, &self.description);
        if let Some(image) = &self.image {
            out.push_str("\" url=\"");
            push_escaped(out, image);
        }
        out.push_str("\">");
    }

    /// The card (Campfire's `action_text/attachables/_opengraph_embed`): the title linking to
    /// the page, the description, the image.
    fn write_card(&self, out: &mut String) {
        out.push_str("<figure class=\"attachment attachment--content attachment--og\"><div class=\"og-embed\"><div class=\"og-embed__content\"><div class=\"og-embed__title\"><a href=\"");
        push_escaped(out, &self.href);
        out.push_str("\" target=\"_blank\" rel=\"noopener noreferrer\">");
        push_escaped(out, &self.title);
        out.push_str("</a></div><div class=\"og-embed__description\">");
        push_escaped(out, &self.description);
        out.push_str("</div></div>");
        if let Some(image) = &self.image {
            out.push_str("<div class=\"og-embed__image\"><img src=\"");
            push_escaped(out, image);
            out.push_str("\" alt=\"\" loading=\"lazy\"></div>");
        }
        out.push_str("</div></figure>");
    }
}
