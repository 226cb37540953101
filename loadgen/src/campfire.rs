//! Driving a Campfire-compatible server the way a browser does.
//!
//! 1. **Log in** (Campfire `SessionsController`, `app/views/sessions/new.html.erb`):
//!    `GET /session/new` sets the Rails session cookie (`_campfire_session`, Hearth:
//!    `_hearth_session`) and renders the form's `authenticity_token`; `POST /session` with
//!    `email_address`, `password` and that token answers **302** and sets `session_token`.
//!    Campfire allows 10 attempts per 3 minutes per IP (then 429); Hearth's
//!    `--login-rate-limit 0` turns its limit off.
//! 2. **Scrape** `GET /rooms/:id` (CSRF token, message container id, the room's message stream
//!    source) and `GET /users/me/sidebar` (the `rooms` and `<user>:rooms` sources).
//! 3. **Subscribe** like a room page: the room's message stream, plus `PresenceChannel`
//!    `{room_id}`, `HeartbeatChannel` and `UnreadRoomsChannel` by default (Campfire
//!    `app/channels/*`, `app/javascript/controllers/*`): 4 subscriptions per client.
//! 4. **Post** `POST /rooms/:id/messages` with `message[body]`, `message[client_message_id]` and
//!    `authenticity_token`, `Accept: text/vnd.turbo-stream.html, ...`; a valid answer is 200
//!    `text/vnd.turbo-stream.html` holding the `append` to the room's message container and the
//!    rendered `id="message_<client_message_id>"` (`messages/create.turbo_stream.erb`).

use crate::cookies::CookieJar;
use crate::endpoint::Endpoint;
use crate::html::{self, json_string, StreamSource};
use crate::http::{form_urlencode, HttpConnection, Response};
use anyhow::{anyhow, bail, Context, Result};
use std::fmt;
use std::rc::Rc;
use std::time::Instant;

/// `Accept` header of Turbo's form submissions.
pub const TURBO_STREAM_ACCEPT: &str =
    "text/vnd.turbo-stream.html, text/html, application/xhtml+xml";

/// `Accept` header of a page navigation.
pub const HTML_ACCEPT: &str = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8";

/// A fixed channel a client subscribes to besides the room's message stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraChannel {
    /// `{"channel":"PresenceChannel","room_id":ROOM}` (`presence`).
    Presence,
    /// `{"channel":"HeartbeatChannel"}` (`heartbeat`).
    Heartbeat,
    /// `{"channel":"UnreadRoomsChannel"}` (`unread`).
    UnreadRooms,
    /// `{"channel":"ReadRoomsChannel"}` (`reads`).
    ReadRooms,
    /// `{"channel":"TypingNotificationsChannel","room_id":ROOM}` (`typing`).
    Typing,
    /// Every sidebar stream source (`sidebar`): `Turbo::StreamsChannel` `rooms` and
    /// `<user gid>:rooms`.
    Sidebar,
}

impl ExtraChannel {
    /// Parses a comma-separated list of `presence`, `heartbeat`, `unread`, `reads`, `typing`,
    /// `sidebar` (or `none` for an empty list).
    ///
    /// Errors: an unknown name.
    pub fn parse_list(s: &str) -> Result<Vec<Self>> {
        let mut out = Vec::new();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let c = match name {
                "none" => continue,
                "presence" => Self::Presence,
                "heartbeat" => Self::Heartbeat,
                "unread" => Self::UnreadRooms,
                "reads" => Self::ReadRooms,
                "typing" => Self::Typing,
                "sidebar" => Self::Sidebar,
                other => bail!(
                    "unknown channel {other:?}; expected presence, heartbeat, unread, reads, \
                     typing, sidebar or none"
                ),
            };
            if !out.contains(&c) {
                out.push(c);
            }
        }
        Ok(out)
    }
}

/// How to log in and what to subscribe.
#[derive(Debug, Clone)]
pub struct PrepareOptions {
    /// Users to log in (user 1..=users).
    pub users: usize,
    /// Email template; `{i}` becomes the user number (default `user{i}@example.com`).
    pub email_template: String,
    /// Password of every seeded user.
    pub password: String,
    /// Room id to scrape, subscribe and post to.
    pub room: u32,
    /// Channels besides the room's message stream.
    pub channels: Vec<ExtraChannel>,
    /// Logins run concurrently (separate connections).
    pub login_concurrency: usize,
}

/// A logged-in user: cookies, CSRF token and the subscription identifiers of its clients.
#[derive(Debug, Clone)]
pub struct UserSession {
    /// Email address.
    pub email: String,
    /// Cookies (`session_token` and the Rails session cookie).
    pub jar: CookieJar,
    /// The `Cookie` header of `jar`.
    pub cookie_header: String,
    /// The room page's `csrf-token`.
    pub csrf_token: String,
    /// `current-user-id` of the room page.
    pub user_id: Option<String>,
    /// Identifier JSON strings to subscribe, in order; the room's message stream first.
    pub identifiers: Vec<String>,
}

/// Everything a cell needs from a Campfire target.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Logged-in users.
    pub users: Vec<UserSession>,
    /// The room's message stream source (from user 1's page).
    pub room_stream: StreamSource,
    /// The append target, e.g. `messages_rooms_open_1`.
    pub messages_target: String,
    /// `/rooms/<id>/messages`.
    pub post_path: String,
    /// Subscriptions each client makes.
    pub subscriptions_per_client: usize,
    /// Seconds spent logging in and scraping.
    pub prepare_secs: f64,
}

/// Why a login failed.
#[derive(Debug)]
pub enum LoginError {
    /// 401: wrong email or password.
    BadCredentials(String),
    /// 429: rate limited.
    RateLimited(String),
    /// 422: the CSRF token was rejected.
    Csrf(String),
    /// `GET /session/new` redirected to first-run setup: no users.
    NoUsers(String),
    /// Any other unexpected answer.
    Unexpected(String),
}

impl fmt::Display for LoginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadCredentials(e) => write!(
                f,
                "login as {e} answered 401 (bad credentials): seed the users first \
                 (`hearth seed --users N` creates user1..userN@example.com with password \
                 \"password\"), and check --users, --email and --password"
            ),
            Self::RateLimited(e) => write!(
                f,
                "login as {e} answered 429 (rate limited): start Hearth with \
                 `--login-rate-limit 0`; Rails Campfire allows 10 logins per 3 minutes per IP, \
                 so use --users 10 or fewer against it"
            ),
            Self::Csrf(e) => write!(
                f,
                "login as {e} answered 422: the authenticity_token was rejected (is the \
                 session cookie from GET /session/new being kept?)"
            ),
            Self::NoUsers(l) => write!(
                f,
                "GET /session/new redirected to {l}: the server has no users; seed it first"
            ),
            Self::Unexpected(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for LoginError {}

/// The email of user `i` (1-based) from a template with `{i}`.
pub fn email_for(template: &str, i: usize) -> String {
    template.replace("{i}", &i.to_string())
}

fn excerpt(resp: &Response) -> String {
    let t = resp.text();
    let t: String = t.chars().take(200).collect();
    t.replace('\n', " ")
}

/// Logs in as `email` over `conn`; returns the cookie jar holding `session_token`.
///
/// Errors: [`LoginError`] (401, 429, 422, first-run redirect, or anything but 302 with a
/// `session_token` cookie), or a transport error.
pub async fn login(conn: &mut HttpConnection, email: &str, password: &str) -> Result<CookieJar> {
    let mut jar = CookieJar::new();
    let page = conn.get("/session/new", &mut jar, HTML_ACCEPT).await?;
    match page.status {
        200 => {}
        301..=303 | 307 | 308 => {
            return Err(LoginError::NoUsers(page.location.unwrap_or_default()).into())
        }
        s => {
            return Err(LoginError::Unexpected(format!(
                "GET /session/new answered {s}: {}",
                excerpt(&page)
            ))
            .into())
        }
    }
    let text = page.text();
    let token = html::input_value(&text, "authenticity_token")
        .or_else(|| html::meta_content(&text, "csrf-token"));
    let mut form: Vec<(&str, &str)> = vec![("email_address", email), ("password", password)];
    if let Some(t) = token.as_deref() {
        form.push(("authenticity_token", t));
    }
    let resp = conn
        .post_form("/session", &mut jar, HTML_ACCEPT, form_urlencode(&form))
        .await?;
    match resp.status {
        302 | 303 if jar.get("session_token").is_some() => Ok(jar),
        302 | 303 => Err(LoginError::Unexpected(format!(
            "POST /session as {email} redirected to {:?} without setting session_token \
             (cookies now: {:?})",
            resp.location,
            jar.names()
        ))
        .into()),
        401 => Err(LoginError::BadCredentials(email.to_owned()).into()),
        429 => Err(LoginError::RateLimited(email.to_owned()).into()),
        422 => Err(LoginError::Csrf(email.to_owned()).into()),
        s => Err(LoginError::Unexpected(format!(
            "POST /session as {email} answered {s} (expected 302): {}",
            excerpt(&resp)
        ))
        .into()),
    }
}

/// Identifier JSON of a fixed channel (`JSON.stringify` order: `channel` first).
pub fn fixed_identifier(channel: ExtraChannel, room: u32) -> Option<String> {
    match channel {
        ExtraChannel::Presence => Some(format!(
            "{{\"channel\":\"PresenceChannel\",\"room_id\":{room}}}"
        )),
        ExtraChannel::Heartbeat => Some("{\"channel\":\"HeartbeatChannel\"}".to_owned()),
        ExtraChannel::UnreadRooms => Some("{\"channel\":\"UnreadRoomsChannel\"}".to_owned()),
        ExtraChannel::ReadRooms => Some("{\"channel\":\"ReadRoomsChannel\"}".to_owned()),
        ExtraChannel::Typing => Some(format!(
            "{{\"channel\":\"TypingNotificationsChannel\",\"room_id\":{room}}}"
        )),
        ExtraChannel::Sidebar => None,
    }
}

/// The Action Cable `subscribe` command for an identifier (`subscriptions.js#sendCommand`):
/// `{"command":"subscribe","identifier":"<identifier JSON as a string>"}`.
pub fn subscribe_command(identifier: &str) -> String {
    format!(
        "{{\"command\":\"subscribe\",\"identifier\":{}}}",
        json_string(identifier)
    )
}

async fn prepare_user(
    base: &Endpoint,
    opts: &PrepareOptions,
    i: usize,
) -> Result<(UserSession, html::RoomPage, Vec<StreamSource>)> {
    let email = email_for(&opts.email_template, i);
    let mut conn = HttpConnection::new(base);
    let mut jar = login(&mut conn, &email, &opts.password)
        .await
        .with_context(|| format!("logging in as {email}"))?;
    let room_path = format!("/rooms/{}", opts.room);
    let page = conn.get(&room_path, &mut jar, HTML_ACCEPT).await?;
    if page.status != 200 {
        bail!(
            "GET {room_path} as {email} answered {} (expected 200; is user {i} a member of room \
             {}?): {}",
            page.status,
            opts.room,
            excerpt(&page)
        );
    }
    let room = html::parse_room_page(&page.text())
        .with_context(|| format!("scraping {room_path} as {email}"))?;
    let sidebar = conn.get("/users/me/sidebar", &mut jar, HTML_ACCEPT).await?;
    let sidebar_sources = if sidebar.status == 200 {
        html::stream_sources(&sidebar.text())
    } else if opts.channels.contains(&ExtraChannel::Sidebar) {
        bail!(
            "GET /users/me/sidebar as {email} answered {} (needed for --channels sidebar)",
            sidebar.status
        );
    } else {
        Vec::new()
    };
    let cookie_header = jar.header().unwrap_or_default();
    let session = UserSession {
        email,
        cookie_header,
        jar,
        csrf_token: room.csrf_token.clone(),
        user_id: room.current_user_id.clone(),
        identifiers: Vec::new(),
    };
    Ok((session, room, sidebar_sources))
}

/// Logs in users 1..=`opts.users`, scrapes each one's room page and sidebar, and builds each
/// user's subscription identifiers.
///
/// Errors: a failed login or scrape, or a room page whose stream sources (plus the sidebar's)
/// do not include the room's message stream: such a cell would measure nothing.
pub async fn prepare(base: &Endpoint, opts: &PrepareOptions) -> Result<Prepared> {
    if opts.users == 0 {
        bail!("--users must be at least 1");
    }
    let started = Instant::now();
    let base = Rc::new(base.clone());
    let opts_rc = Rc::new(opts.clone());
    let mut results: Vec<Option<(UserSession, html::RoomPage, Vec<StreamSource>)>> =
        vec![None; opts.users];
    let mut next = 1usize;
    let mut set = tokio::task::JoinSet::new();
    let conc = opts.login_concurrency.max(1);
    loop {
        while set.len() < conc && next <= opts.users {
            let (b, o, i) = (base.clone(), opts_rc.clone(), next);
            set.spawn_local(async move { (i, prepare_user(&b, &o, i).await) });
            next += 1;
        }
        let Some(joined) = set.join_next().await else {
            break;
        };
        let (i, res) = joined.map_err(|e| anyhow!("login task failed: {e}"))?;
        results[i - 1] = Some(res?);
    }
    let mut users = Vec::with_capacity(opts.users);
    let mut first_room: Option<(StreamSource, String)> = None;
    for (session, room, sidebar) in results.into_iter().flatten() {
        let mut sources = room.sources.clone();
        for s in &sidebar {
            if !sources.contains(s) {
                sources.push(s.clone());
            }
        }
        let stream = html::room_message_stream(&sources)
            .with_context(|| {
                format!(
                    "room {} as {}: checked the room page and /users/me/sidebar",
                    opts.room, session.email
                )
            })?
            .clone();
        let mut identifiers = vec![stream.identifier()];
        for c in &opts.channels {
            if let Some(id) = fixed_identifier(*c, opts.room) {
                identifiers.push(id);
            } else {
                for s in &sidebar {
                    if !s.is_room_messages() {
                        let id = s.identifier();
                        if !identifiers.contains(&id) {
                            identifiers.push(id);
                        }
                    }
                }
            }
        }
        if first_room.is_none() {
            first_room = Some((stream, room.messages_target.clone()));
        }
        users.push(UserSession {
            identifiers,
            ..session
        });
    }
    let (room_stream, messages_target) =
        first_room.ok_or_else(|| anyhow!("no user could be prepared"))?;
    let subscriptions_per_client = users.iter().map(|u| u.identifiers.len()).max().unwrap_or(0);
    Ok(Prepared {
        users,
        room_stream,
        messages_target,
        post_path: format!("/rooms/{}/messages", opts.room),
        subscriptions_per_client,
        prepare_secs: started.elapsed().as_secs_f64(),
    })
}

/// The message body for a post: `loadgen <token>` padded with letters to `size` bytes.
pub fn message_body(token: &str, size: usize) -> String {
    let mut body = format!("loadgen {token}");
    const FILL: &[u8] = b" lorem ipsum dolor sit amet";
    let mut i = 0;
    while body.len() < size {
        body.push(FILL[i % FILL.len()] as char);
        i += 1;
    }
    body
}

/// The form body of a message post.
pub fn post_form(body: &str, client_message_id: &str, authenticity_token: &str) -> String {
    form_urlencode(&[
        ("message[body]", body),
        ("message[client_message_id]", client_message_id),
        ("authenticity_token", authenticity_token),
    ])
}

/// Checks a message post's response: 200, `text/vnd.turbo-stream.html`, an `append`
/// turbo-stream to `target`, and `id="message_<client_message_id>"` in the body.
///
/// Errors: a short description of the first check that failed.
pub fn validate_post_response(
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    target: &str,
    client_message_id: &str,
) -> Result<(), String> {
    if status != 200 {
        let head = String::from_utf8_lossy(&body[..body.len().min(160)]).replace('\n', " ");
        return Err(format!("status {status} (expected 200): {head}"));
    }
    let ct = content_type.unwrap_or("");
    if !ct.starts_with("text/vnd.turbo-stream.html") {
        return Err(format!(
            "content-type {ct:?} (expected text/vnd.turbo-stream.html)"
        ));
    }
    let find = |needle: &str| memchr::memmem::find(body, needle.as_bytes()).is_some();
    if !find("<turbo-stream") || !find("action=\"append\"") {
        return Err("body is not an append turbo-stream".to_owned());
    }
    if !find(&format!("target=\"{target}\"")) {
        return Err(format!("turbo-stream does not target {target}"));
    }
    if !find(&format!("id=\"message_{client_message_id}\"")) {
        return Err(format!(
            "body does not contain id=\"message_{client_message_id}\""
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_lists_parse() {
        assert_eq!(
            ExtraChannel::parse_list("presence, heartbeat,unread,presence").unwrap(),
            vec![
                ExtraChannel::Presence,
                ExtraChannel::Heartbeat,
                ExtraChannel::UnreadRooms
            ]
        );
        assert!(ExtraChannel::parse_list("none").unwrap().is_empty());
        assert!(ExtraChannel::parse_list("bogus").is_err());
    }

    #[test]
    fn identifiers_and_commands_match_the_js_client() {
        assert_eq!(
            fixed_identifier(ExtraChannel::Presence, 1).unwrap(),
            r#"{"channel":"PresenceChannel","room_id":1}"#
        );
        assert_eq!(
            subscribe_command(r#"{"channel":"HeartbeatChannel"}"#),
            r#"{"command":"subscribe","identifier":"{\"channel\":\"HeartbeatChannel\"}"}"#
        );
        assert_eq!(fixed_identifier(ExtraChannel::Sidebar, 1), None);
        assert_eq!(email_for("user{i}@example.com", 7), "user7@example.com");
    }

    #[test]
    fn bodies_and_forms() {
        let b = message_body("lgabx00000001", 64);
        assert_eq!(b.len(), 64);
        assert!(b.starts_with("loadgen lgabx00000001 "));
        assert_eq!(message_body("tok", 3), "loadgen tok");
        assert_eq!(
            post_form("a b", "lgx1", "t+/="),
            "message%5Bbody%5D=a+b&message%5Bclient_message_id%5D=lgx1&authenticity_token=t%2B%2F%3D"
        );
    }

    #[test]
    fn post_responses_are_validated() {
        let ok = br#"<turbo-stream action="append" target="messages_rooms_open_1"><template><div id="message_lgx00000001" class="message"></div></template></turbo-stream>"#;
        let ct = Some("text/vnd.turbo-stream.html; charset=utf-8");
        let t = "messages_rooms_open_1";
        assert_eq!(
            validate_post_response(200, ct, ok, t, "lgx00000001"),
            Ok(())
        );
        assert!(validate_post_response(422, ct, ok, t, "lgx00000001")
            .unwrap_err()
            .contains("422"));
        assert!(
            validate_post_response(200, Some("text/html"), ok, t, "lgx00000001")
                .unwrap_err()
                .contains("content-type")
        );
        assert!(
            validate_post_response(200, ct, ok, "messages_rooms_open_2", "lgx00000001")
                .unwrap_err()
                .contains("target")
        );
        assert!(validate_post_response(200, ct, ok, t, "lgx00000002")
            .unwrap_err()
            .contains("message_lgx00000002"));
        assert!(validate_post_response(200, ct, b"<html>", t, "x").is_err());
    }
}
