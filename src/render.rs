//! Rendering: askama templates for pages and partials, and the `<turbo-stream>` wrapper.
//!
//! A message partial is rendered once per event and shared by everyone who receives it, so
//! it holds nothing specific to a viewer (no per-user CSRF token: Turbo sends the page's
//! `csrf-token` meta as `X-CSRF-Token`).

use askama::Template;

use crate::db::messages::{Boost, Message};
use crate::db::rooms::SidebarRoom;
use crate::db::users::User;

/// The `messages/_message` partial (Campfire: `app/views/messages/_message.html.erb`).
#[derive(Template)]
#[template(path = "messages/_message.html")]
struct MessagePartial<'a> {
    m: &'a Message,
    file: Option<FileView>,
    hue: u32,
    initials: String,
    created_iso: String,
    created_time: String,
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
pub fn message(m: &Message) -> Result<String, askama::Error> {
    let initials = initials(&m.creator_name);
    let partial = MessagePartial {
        m,
        file: m.attachment.as_ref().map(file_view),
        hue: (m.creator_id.unsigned_abs() * 47 % 360) as u32,
        initials,
        created_iso: iso8601(m.created_at),
        created_time: clock_time(m.created_at),
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
pub fn file_view(a: &crate::db::blobs::Attached) -> FileView {
    use crate::db::blobs::{resize_to_limit, THUMB_LIMIT};
    let blob = &a.blob;
    let thumb_src =
        crate::storage::representation_path(blob, &resize_to_limit(THUMB_LIMIT.0, THUMB_LIMIT.1));
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
                crate::storage::blob_path(blob, false),
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
        href: crate::storage::blob_path(blob, false),
        download: crate::storage::blob_path(blob, true),
        filename: blob.filename.clone(),
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
pub fn messages(list: &[Message]) -> Result<String, askama::Error> {
    let mut out = String::with_capacity(list.len() * 6 * 1024);
    for m in list {
        out.push_str(&message(m)?);
        out.push('\n');
    }
    Ok(out)
}

/// The HTML of one boost, as the boosts container of a message holds it:
/// `<span id="boost_<id>" class="boost" title="<booster>">content</span>`, both texts escaped.
pub fn boost(boost: &Boost) -> String {
    format!(
        "<span id=\"boost_{}\" class=\"boost\" title=\"{}\">{}</span>",
        boost.id,
        escape_html(&boost.booster_name),
        escape_html(&boost.content)
    )
}

/// `text` escaped for HTML text and double-quoted attributes (askama's HTML escaper).
pub fn escape_html(text: &str) -> String {
    askama::filters::escape(text, askama::filters::Html)
        .map(|s| s.to_string())
        .unwrap_or_default()
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

/// Renders one sidebar entry, `<li id="list_rooms_<kind>_<id>" …>`: the `_direct` partial for
/// direct rooms, `_shared` otherwise (Campfire's `users/sidebars/rooms/_shared` and `_direct`).
///
/// # Errors
/// The template failed to render.
pub fn sidebar_room(r: &SidebarRoom) -> Result<String, askama::Error> {
    if r.kind == "direct" {
        DirectRoomEntry { r }.render()
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
    /// Whether the form offers people to pick (closed and direct rooms).
    pub pick_people: bool,
    /// Whether the room holds everyone (open rooms).
    pub everyone: bool,
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
    /// The masked authenticity token.
    pub csrf_token: &'a str,
    /// An alert above the form (failed login, rate limit).
    pub alert: Option<&'a str>,
    /// The e-mail address typed before, kept on failure.
    pub email_address: &'a str,
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
    /// Whether older messages exist.
    pub has_older: bool,
    /// Id of the first message shown (for the "older" link).
    pub first_message_id: i64,
    /// A fresh client_message_id for the composer (no-JS posts).
    pub client_message_id: &'a str,
    /// The catch-up cursor of the page: the newest change of the room log read before its
    /// messages ([`crate::db::messages::last_change`]), sent as `?cursor=` after a reconnect.
    pub refresh_cursor: i64,
    /// The import map and script tags of the page's JS.
    pub scripts: &'a str,
}

/// The sidebar frame (`GET /users/me/sidebar`).
#[derive(Template, Debug)]
#[template(path = "users/sidebar.html")]
pub struct Sidebar<'a> {
    /// The signed name of `rooms`.
    pub rooms_stream: &'a str,
    /// The signed name of `<user gid>:rooms`.
    pub user_rooms_stream: &'a str,
    /// The user's id.
    pub user_id: i64,
    /// Open and closed rooms.
    pub shared: Vec<SidebarRoom>,
    /// Direct rooms.
    pub direct: Vec<SidebarRoom>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
