//! Rendering: askama templates for pages and partials, and the `<turbo-stream>` wrapper.
//!
//! A message partial is rendered once per event and shared by everyone who receives it, so
//! it holds nothing specific to a viewer (no per-user CSRF token: Turbo sends the page's
//! `csrf-token` meta as `X-CSRF-Token`).

use askama::Template;

use crate::db::messages::{Boost, Message};
use crate::db::rooms::SidebarRoom;
use crate::db::users::User;
use crate::rails::ActiveStorageVerifier;

/// The `messages/_message` partial (Campfire: `app/views/messages/_message.html.erb`).
#[derive(Template)]
#[template(path = "messages/_message.html")]
struct MessagePartial<'a> {
    m: &'a Message,
    file: Option<FileView>,
    /// The body as [`crate::rich_text::render`] draws it.
    body: String,
    /// The ids of the people it mentions, space-separated (`data-mentionee-ids`: the page
    /// highlights a message that mentions its reader; the partial is the same for everyone).
    mentionee_ids: String,
    hue: u32,
    initials: String,
    /// The author's avatar URL, when they have one (else the initials are drawn).
    avatar: Option<String>,
    created_iso: String,
    created_time: String,
    created_date: String,
    emoji: bool,
    sound: Option<&'static Sound>,
    /// The thread summary's element ([`thread_summary`]).
    thread_summary: String,
}

/// The `messages/_thread_summary` partial: a parent's reply count, last repliers and last
/// reply time, linking to its thread; an empty element without replies.
#[derive(Template)]
#[template(path = "messages/_thread_summary.html")]
struct ThreadSummaryPartial<'a> {
    dom_id: &'a str,
    summary: Option<&'a crate::db::threads::Summary>,
}

/// Renders the thread summary of the message whose element id is `dom_id`
/// (`thread_summary_<dom_id>`, the target of its live `replace`).
///
/// # Errors
/// The template failed to render (askama's error).
pub fn thread_summary(
    dom_id: &str,
    summary: Option<&crate::db::threads::Summary>,
) -> Result<String, askama::Error> {
    ThreadSummaryPartial { dom_id, summary }.render()
}

pub use crate::sounds::{Sound, SOUNDS};

/// The text of a body without its tags (character references left as they are): enough to
/// tell a `/play` command or an emoji-only message.
fn plain_text(body: &str) -> String {
    let mut text = String::with_capacity(body.len());
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

/// The sound a body plays: its whole text is `/play <name>` with a known name (Campfire's
/// `Message#sound`).
pub fn sound_of(body: &str) -> Option<&'static Sound> {
    let text = plain_text(body);
    let name = text.trim().strip_prefix("/play ")?.trim();
    crate::sounds::find(name)
}

/// Whether a body is nothing but emoji (and spaces), at most 16 characters of them: such a
/// message is drawn large (Campfire's `message--emoji`).
pub fn is_emoji_only(body: &str) -> bool {
    let text = plain_text(body);
    let text = text.trim();
    let mut pictographs = 0;
    for c in text.chars() {
        match u32::from(c) {
            0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2B00..=0x2BFF | 0x2300..=0x23FF => {
                pictographs += 1;
            }
            // Joiners, variation selectors, keycaps, tags and spaces join or dress pictographs.
            0x200D | 0xFE0E | 0xFE0F | 0x20E3 | 0xE0020..=0xE007F => {}
            _ if c.is_whitespace() => {}
            _ => return false,
        }
    }
    pictographs > 0 && text.chars().count() <= 16
}

impl std::fmt::Debug for MessagePartial<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessagePartial")
            .field("id", &self.m.id)
            .finish()
    }
}

/// Renders one message partial: `<div id="message_<client_message_id>" class="message" …>`.
///
/// # Errors
/// The template failed to render (askama's error).
pub fn message(m: &Message, urls: &ActiveStorageVerifier) -> Result<String, askama::Error> {
    message_shown(m, crate::rich_text::render(&m.body), urls)
}

/// [`message`] with its body already drawn: `shown` is the body's HTML and the ids of the
/// people it mentions, as [`crate::rich_text::render`] returns them for `m.body` (or
/// [`crate::rich_text::Body::shown`] for the body a post has just built).
///
/// # Errors
/// The template failed to render (askama's error).
pub fn message_shown(
    m: &Message,
    shown: (String, Vec<i64>),
    urls: &ActiveStorageVerifier,
) -> Result<String, askama::Error> {
    let initials = initials(&m.creator_name);
    let (body, mentioned) = shown;
    let mentionee_ids = mentioned
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    let partial = MessagePartial {
        m,
        file: m.attachment.as_ref().map(|a| file_view(a, urls)),
        body,
        mentionee_ids,
        hue: (m.creator_id.unsigned_abs() * 47 % 360) as u32,
        initials,
        avatar: m
            .creator_avatar
            .map(|v| crate::storage::avatar_path(m.creator_id, Some(v))),
        created_iso: iso8601(m.created_at),
        created_time: clock_time(m.created_at),
        created_date: long_date(m.created_at),
        emoji: is_emoji_only(&m.body),
        sound: sound_of(&m.body),
        thread_summary: thread_summary(&m.dom_id(), m.thread.as_ref())?,
    };
    partial.render()
}

/// What the message partial shows of a file (Campfire's `Messages::AttachmentPresentation`).
#[derive(Clone, Debug)]
pub struct FileView {
    /// `image` (a thumbnail in a lightbox link), `video` (a player with a poster) or `file` (a chip).
    pub kind: &'static str,
    /// The thumbnail's or poster's URL (a representation URL, or the original's blob URL for an
    /// animated GIF).
    pub src: String,
    /// The original's blob URL (the lightbox's image, the video's source).
    pub href: String,
    /// The original's download URL (`?disposition=attachment`).
    pub download: String,
    /// The file name.
    pub filename: String,
    /// The size, for people (`1.5 MB`).
    pub size: String,
    /// The shown width in CSS pixels (0 when unknown).
    pub width: i64,
    /// The shown height in CSS pixels (0 when unknown).
    pub height: i64,
    /// Whether the file is still being processed (an image without its thumbnail yet).
    pub processing: bool,
}

/// The [`FileView`] of a message's file.
pub fn file_view(a: &crate::db::blobs::Attached, urls: &ActiveStorageVerifier) -> FileView {
    use crate::db::blobs::{resize_to_limit, THUMB_LIMIT};
    let blob = &a.blob;
    let thumb_src = crate::storage::representation_path(
        urls,
        blob,
        &resize_to_limit(THUMB_LIMIT.0, THUMB_LIMIT.1),
    );
    let analyzed = blob.metadata_json().get("analyzed").is_some();
    let (kind, src, dims, processing) = match &a.thumb {
        Some(t) if blob.is_video() => (
            "video",
            thumb_src,
            (t.metadata_int("width"), t.metadata_int("height")),
            false,
        ),
        Some(t) => (
            "image",
            thumb_src,
            (t.metadata_int("width"), t.metadata_int("height")),
            false,
        ),
        // An animated GIF is its own thumbnail.
        None if analyzed
            && blob.content_type.as_deref() == Some("image/gif")
            && blob.metadata_int("width").is_some() =>
        {
            (
                "image",
                crate::storage::blob_path(urls, blob, false),
                fit_within(blob.metadata_int("width"), blob.metadata_int("height")),
                false,
            )
        }
        None => (
            "file",
            String::new(),
            (None, None),
            !analyzed && (blob.is_image() || blob.is_video()),
        ),
    };
    FileView {
        kind,
        src,
        href: crate::storage::blob_path(urls, blob, false),
        download: crate::storage::blob_path(urls, blob, true),
        // Sanitized again on the way out, as Rails' `Filename#to_s` is: rows another app wrote.
        filename: crate::storage::sanitize_filename(&blob.filename),
        size: crate::storage::human_size(blob.byte_size),
        width: dims.0.unwrap_or(0),
        height: dims.1.unwrap_or(0),
        processing,
    }
}

/// Width and height scaled down to fit the thumbnail box.
fn fit_within(width: Option<i64>, height: Option<i64>) -> (Option<i64>, Option<i64>) {
    let (Some(w), Some(h)) = (width, height) else {
        return (None, None);
    };
    let (max_w, max_h) = crate::db::blobs::THUMB_LIMIT;
    let scale = (f64::from(max_w) / w as f64)
        .min(f64::from(max_h) / h as f64)
        .min(1.0);
    (
        Some((w as f64 * scale) as i64),
        Some((h as f64 * scale) as i64),
    )
}

/// The edit form of a message (Campfire's `messages/edit`): a page whose form sits in the
/// turbo frame `presentation_message_<client_message_id>` that the partial's Edit link
/// targets, and `PATCH`es `/rooms/<room id>/messages/<id>`.
#[derive(Template)]
#[template(path = "messages/edit.html")]
pub struct MessageEdit<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The message being edited.
    pub m: &'a Message,
    /// Its current text, already escaped for HTML (Rails' escaping), as the textarea holds it.
    pub text: &'a str,
    /// Its body as the editor loads it ([`crate::rich_text::to_trix_html`]): the page's
    /// script turns the textarea into an editor holding it.
    pub trix_html: &'a str,
}

impl std::fmt::Debug for MessageEdit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageEdit")
            .field("id", &self.m.id)
            .finish()
    }
}

/// The avatar initials of a name: the first letter of its first two words, upper-cased
/// (`"Ada Lovelace"` → `"AL"`), as Campfire's initials avatar shows them.
pub fn initials(name: &str) -> String {
    name.split_whitespace()
        .filter_map(|w| w.chars().next())
        .take(2)
        .flat_map(char::to_uppercase)
        .collect()
}

/// Renders several message partials, one after another, separated by newlines.
///
/// # Errors
/// A partial failed to render.
pub fn messages(list: &[Message], urls: &ActiveStorageVerifier) -> Result<String, askama::Error> {
    let mut out = String::with_capacity(list.len() * 6 * 1024);
    for m in list {
        out.push_str(&message(m, urls)?);
        out.push('\n');
    }
    Ok(out)
}

/// The HTML of one boost, as the boosts container of a message holds it (Campfire's
/// `messages/boosts/_boost`): `<span id="boost_<id>" class="boost" title="<booster>"
/// data-booster-id="<id>">` with the booster's initials avatar, the content and a delete form
/// (`DELETE /messages/<message>/boosts/<id>`, shown to the booster only by `assets/js/boosts.js`);
/// every text escaped.
pub fn boost(boost: &Boost) -> String {
    let name = escape_html(&boost.booster_name);
    format!(
        "<span id=\"boost_{id}\" class=\"boost\" title=\"{name}\" data-booster-id=\"{booster}\">\
<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 36 36\" width=\"18\" height=\"18\" class=\"boost__avatar\" role=\"img\" aria-label=\"{name}\">\
<rect width=\"36\" height=\"36\" rx=\"18\" fill=\"hsl({hue}, 55%, 45%)\"/>\
<text x=\"50%\" y=\"50%\" dy=\"0.35em\" text-anchor=\"middle\" fill=\"#ffffff\" font-family=\"-apple-system, BlinkMacSystemFont, sans-serif\" font-size=\"15\" font-weight=\"600\">{initials}</text></svg>\
<span class=\"boost__content\">{content}</span>\
<form action=\"/messages/{message}/boosts/{id}\" method=\"post\" class=\"boost__delete\" data-turbo-stream=\"true\">\
<input type=\"hidden\" name=\"_method\" value=\"delete\">\
<button type=\"submit\" class=\"btn btn--plain boost__delete-button\" title=\"Remove your boost\">\u{2212}</button></form></span>",
        id = boost.id,
        booster = boost.booster_id,
        message = boost.message_id,
        hue = boost.booster_id.unsigned_abs() * 47 % 360,
        initials = escape_html(&initials(&boost.booster_name)),
        content = escape_html(&boost.content),
    )
}

/// `text` escaped for HTML text and double-quoted attributes: Rails' `html_escape`
/// ([`crate::rich_text::html_escape`], the one escaper of message content).
pub fn escape_html(text: &str) -> String {
    crate::rich_text::html_escape(text)
}

/// A turbo-stream element, as turbo-rails' `turbo_stream_action_tag` writes it:
/// `<turbo-stream action="append" target="messages_rooms_open_1"><template>…</template></turbo-stream>`.
/// `remove` has no template. `target` is escaped as an attribute; `template` is trusted HTML.
pub fn turbo_stream(action: &str, target: &str, template: Option<&str>) -> String {
    let target = escape_html(target);
    match template {
        Some(html) => format!(
            "<turbo-stream action=\"{action}\" target=\"{target}\"><template>{html}</template></turbo-stream>"
        ),
        None => format!("<turbo-stream action=\"{action}\" target=\"{target}\"></turbo-stream>"),
    }
}

/// The `users/sidebars/rooms/_shared` partial: one open or closed room of the list.
#[derive(Template, Debug)]
#[template(path = "users/sidebars/rooms/_shared.html")]
struct SharedRoomEntry<'a> {
    r: &'a SidebarRoom,
}

/// The `users/sidebars/rooms/_direct` partial: one direct room, named by its other members.
#[derive(Template, Debug)]
#[template(path = "users/sidebars/rooms/_direct.html")]
struct DirectRoomEntry<'a> {
    r: &'a SidebarRoom,
}

/// The `users/sidebars/rooms/_thread` partial: one followed thread, named by its parent's text.
#[derive(Template, Debug)]
#[template(path = "users/sidebars/rooms/_thread.html")]
struct ThreadRoomEntry<'a> {
    r: &'a SidebarRoom,
}

/// The avatar paths of a sidebar entry's faces ([`SidebarRoom::faces`]), versioned as every
/// page links avatars ([`crate::storage::avatar_path`]).
pub fn face_paths(r: &SidebarRoom) -> Vec<String> {
    r.faces()
        .into_iter()
        .map(|(id, version)| crate::storage::avatar_path(id, version))
        .collect()
}

/// Renders one sidebar entry, `<li id="list_rooms_<kind>_<id>" …>`: the `_direct` partial for
/// direct rooms, `_shared` otherwise (Campfire's `users/sidebars/rooms/_shared` and `_direct`).
///
/// # Errors
/// The template failed to render.
pub fn sidebar_room(r: &SidebarRoom) -> Result<String, askama::Error> {
    if r.kind == crate::db::RoomKind::Direct {
        DirectRoomEntry { r }.render()
    } else if r.kind == crate::db::RoomKind::Thread {
        ThreadRoomEntry { r }.render()
    } else {
        SharedRoomEntry { r }.render()
    }
}

/// A person offered by a room form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// User id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Whether the box starts checked.
    pub selected: bool,
}

/// The new/edit form of an open, closed or direct room (Campfire's `rooms/opens/new`,
/// `rooms/closeds/edit`, `rooms/directs/new`, …).
#[derive(Template, Debug)]
#[template(path = "rooms/form.html")]
pub struct RoomForm<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The page heading.
    pub title: &'a str,
    /// Where the form posts.
    pub action: &'a str,
    /// `post`, `patch`: the method (other than post, sent as `_method`).
    pub method: &'a str,
    /// The room name field's value; `None` hides the field (direct rooms).
    pub name: Option<&'a str>,
    /// The longest name accepted, in characters.
    pub max_name_chars: usize,
    /// The room's kind: an open room holds everyone, the others offer people to pick.
    pub kind: crate::db::RoomKind,
    /// The people offered.
    pub people: Vec<Person>,
    /// The signed-in user (always a member; the box is shown checked and disabled).
    pub user_id: i64,
    /// Whether the viewer may submit (administrators and the creator, as `can_administer?`).
    pub editable: bool,
    /// The submit button's text.
    pub submit: &'a str,
    /// The delete form's action, for those who may delete the room.
    pub destroy_action: Option<String>,
    /// The "Everyone" switch's target, for those who may change who is in the room: the same
    /// page for the other kind (an open room's leads to its closed form, with its members
    /// checked; a closed room's to its open form). `None` hides the switch.
    pub kind_switch: Option<String>,
    /// The "Back" link.
    pub back: &'a str,
}

/// The involvement page of a room (`GET /rooms/{id}/involvement`).
#[derive(Template, Debug)]
#[template(path = "rooms/involvements/show.html")]
pub struct InvolvementPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The room id.
    pub room_id: i64,
    /// What the room is called for this viewer.
    pub room_name: &'a str,
    /// The current involvement.
    pub involvement: &'a str,
    /// Every involvement with its label and whether it is the current one.
    pub choices: Vec<(&'a str, &'a str, bool)>,
}

/// The sign-in page.
#[derive(Template, Debug)]
#[template(path = "sessions/new.html")]
pub struct SignInPage<'a> {
    /// The single sign-on provider's name on its button, when it is configured.
    pub sso_provider: Option<&'a str>,
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// An alert above the form (failed login, rate limit).
    pub alert: Option<&'a str>,
    /// The e-mail address typed before, kept on failure.
    pub email_address: &'a str,
    /// What of mail the page offers (`templates/sessions/_mail_sign_in.html`).
    pub mail: MailOnPage,
}

/// What of mail the sign-in page offers (`crate::web::mail_sign_in`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MailOnPage {
    /// "Email me a code".
    pub codes: bool,
    /// "Forgot password?".
    pub reset: bool,
}

/// The room page.
#[derive(Template, Debug)]
#[template(path = "rooms/show.html")]
pub struct RoomPage<'a> {
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// The signed-in user.
    pub user: &'a User,
    /// The room shown.
    pub room: &'a crate::db::rooms::Room,
    /// What the room is called for this viewer (a direct room: its other members' names).
    pub room_name: &'a str,
    /// Where the room's settings are (`/rooms/{opens|closeds|directs}/{id}/edit`).
    pub settings_path: &'a str,
    /// The signed name of `<room gid>:messages`.
    pub messages_stream: &'a str,
    /// The rendered partials of the latest page.
    pub messages_html: &'a str,
    /// Whether older messages exist than the first shown.
    pub has_older: bool,
    /// Whether newer messages exist than the last shown (a deep link's page).
    pub has_newer: bool,
    /// The ids of the first and last messages shown (0 when none): the pages before and
    /// after them are the permalinks of these (`/rooms/{id}/@{message_id}`), the plain links a
    /// page without JavaScript pages with.
    pub shown_ids: (i64, i64),
    /// The message a deep link names (`/rooms/{id}/@{message_id}`), to scroll to and
    /// highlight; 0 for none.
    pub highlight_message_id: i64,
    /// A fresh client_message_id for the composer (no-JS posts).
    pub client_message_id: &'a str,
    /// The catch-up cursor of the page: the newest change of the room log read before its
    /// messages ([`crate::db::messages::last_change`]), sent as `?cursor=` after a reconnect.
    pub refresh_cursor: i64,
    /// The import map and script tags of the page's JS.
    pub scripts: &'a str,
    /// The viewer's involvement in the room (the bell's state).
    pub involvement: &'a str,
    /// What the bell sets when clicked ([`crate::web::rooms::involvements::next_involvement`]).
    pub next_involvement: &'a str,
    /// The bell's title for the current involvement.
    pub involvement_label: &'a str,
    /// The bell's title for the next involvement.
    pub next_involvement_label: &'a str,
    /// The viewer's avatar hue.
    pub user_hue: u32,
    /// The viewer's avatar initials.
    pub user_initials: &'a str,
    /// The viewer's avatar URL, when they have one (else the initials are drawn).
    pub user_avatar: Option<String>,
    /// The VAPID public key the page subscribes to web push with (base64url).
    pub vapid_public_key: &'a str,
    /// The invite block of the first room's welcome, while that room holds no more than a
    /// page of messages (Campfire's `rooms/show/_invitation`): the join URL and the path of its
    /// QR code; `None` elsewhere.
    pub welcome: Option<(String, String)>,
    /// What a thread's page shows besides its messages; `None` for other rooms.
    pub thread: Option<ThreadView>,
    /// Drawn for the thread panel beside a room (`?panel=1`): no sidebar, no menu button.
    pub panel: bool,
}

/// The parts of a thread's page ([`RoomPage::thread`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadView {
    /// The parent message's partial, empty when it was deleted.
    pub parent_html: String,
    /// The parent's room.
    pub parent_room_id: i64,
    /// The parent's room's name as the viewer sees it.
    pub parent_room_name: String,
    /// The parent message's id.
    pub parent_message_id: i64,
    /// Whether the viewer follows the thread.
    pub following: bool,
    /// Why the thread takes no reply (closed by age, parent deleted); `None` while open.
    pub closed: Option<&'static str>,
}

/// The inbox badge (`<span id="inbox_badge">`): the count of unread inbox items beside the
/// sidebar's "Inbox" link and on the inbox page ("99+" above 99), hidden at 0. `data-count`
/// holds the exact count for the page's script.
pub fn inbox_badge(count: usize) -> String {
    if count == 0 {
        return "<span id=\"inbox_badge\" class=\"inbox-badge\" data-count=\"0\" hidden></span>"
            .to_owned();
    }
    let shown = if count > 99 {
        "99+".to_owned()
    } else {
        count.to_string()
    };
    format!(
        "<span id=\"inbox_badge\" class=\"inbox-badge\" data-count=\"{count}\">{shown}<span class=\"visually-hidden\"> unread</span></span>"
    )
}

/// The sidebar frame (`GET /users/me/sidebar`).
#[derive(Template, Debug)]
#[template(path = "users/sidebar.html")]
pub struct Sidebar<'a> {
    /// The signed name of `rooms`.
    pub rooms_stream: &'a str,
    /// The signed name of `<user gid>:rooms`.
    pub user_rooms_stream: &'a str,
    /// The signed name of `user_<id>_inbox` (the inbox badge).
    pub inbox_stream: &'a str,
    /// The room list inside the frame.
    pub nav: SidebarNav<'a>,
}

/// The sidebar's room list alone (`<nav id="sidebar_rooms">`, the `users/_sidebar_nav`
/// partial of the sidebar frame): what the sidebar's catch-up replaces when the history does
/// not cover what the page missed, leaving the frame's stream sources subscribed.
#[derive(Template, Debug)]
#[template(path = "users/_sidebar_nav.html")]
pub struct SidebarNav<'a> {
    /// The user's id.
    pub user_id: i64,
    /// The inbox badge ([`inbox_badge`]).
    pub inbox_badge: String,
    /// Open and closed rooms.
    pub shared: Vec<SidebarRoom>,
    /// Direct rooms.
    pub direct: Vec<SidebarRoom>,
    /// Followed threads still open, the latest reply first.
    pub threads: Vec<SidebarRoom>,
    /// The sidebar streams' positions when the list was read (`data-sidebar-history`, see
    /// `crate::web::sidebar_history`).
    pub history: &'a str,
    /// People without a direct room with the user yet, `(id, first name, avatar version)`: one
    /// click starts one (`db::users::direct_placeholders`).
    pub people: Vec<(i64, String, Option<i64>)>,
    /// The masked authenticity token of the people's forms.
    pub csrf_token: &'a str,
    /// Whether the user may create open and closed rooms (the "+" of Rooms and "New closed
    /// room" are left out otherwise).
    pub may_create_rooms: bool,
}

/// An error page.
#[derive(Template, Debug)]
#[template(path = "errors/page.html")]
pub struct ErrorPage<'a> {
    /// Empty: error pages carry no form.
    pub csrf_token: &'a str,
    /// Headline ("Not found").
    pub title: &'a str,
    /// One sentence for the reader.
    pub detail: &'a str,
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a time in ms since the epoch (UTC).
pub fn iso8601(ms: i64) -> String {
    crate::rails::time::format_iso8601_seconds(ms)
}

/// `3:04pm` for a time in ms since the epoch (UTC).
pub fn clock_time(ms: i64) -> String {
    let t = crate::rails::time::utc_from_millis(ms);
    let (h, mi) = (t.hour(), t.minute());
    let (h12, ampm) = match h {
        0 => (12, "am"),
        1..=11 => (h, "am"),
        12 => (12, "pm"),
        _ => (h - 12, "pm"),
    };
    format!("{h12}:{mi:02}{ampm}")
}

/// `December 21, 2026` for a time in ms since the epoch (UTC): the day separator's text until
/// the page writes it in the reader's time zone.
pub fn long_date(ms: i64) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let t = crate::rails::time::utc_from_millis(ms);
    let month = MONTHS[usize::from(t.month()).saturating_sub(1) % 12];
    format!("{month} {}, {}", t.day(), t.year())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sounds_and_emoji_are_told_from_the_body() {
        assert_eq!(
            sound_of("<div>/play tada</div>").map(|s| s.name),
            Some("tada")
        );
        assert_eq!(
            sound_of("<div> /play trombone </div>").map(|s| s.name),
            Some("trombone")
        );
        assert!(sound_of("<div>/play nosuchsound</div>").is_none());
        assert!(sound_of("<div>please /play tada</div>").is_none());
        assert!(is_emoji_only("<div>🎉</div>"));
        assert!(is_emoji_only("<div>👍🏽 ❤️ 👨‍👩‍👧</div>"));
        assert!(!is_emoji_only("<div>ok 👍</div>"));
        assert!(!is_emoji_only("<div></div>"));
        assert!(!is_emoji_only("<div>123</div>"));
        assert!(!is_emoji_only(&format!("<div>{}</div>", "🎉".repeat(17))));
        assert_eq!(long_date(1_796_004_300_000), "November 30, 2026");
    }

    #[test]
    fn times_format_in_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(1_796_004_300_000), "2026-11-30T02:05:00Z");
        assert_eq!(clock_time(1_796_004_300_000), "2:05am");
        assert_eq!(clock_time(1_796_047_500_000), "2:05pm");
    }

    #[test]
    fn turbo_stream_shapes() {
        assert_eq!(
            turbo_stream("append", "messages", Some("<p>x</p>")),
            "<turbo-stream action=\"append\" target=\"messages\"><template><p>x</p></template></turbo-stream>"
        );
        assert_eq!(
            turbo_stream("remove", "message_1", None),
            "<turbo-stream action=\"remove\" target=\"message_1\"></turbo-stream>"
        );
    }
}
