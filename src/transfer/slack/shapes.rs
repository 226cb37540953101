//! The JSON of Slack's workspace export, as far as the import reads it (Slack's help article
//! "How to read Slack data exports" and the API's user, conversation and message objects).
//! Every field the import does not use is ignored, and every field it does use may be missing:
//! exports differ by plan, age and export type.
//!
//! - `users.json` (`org_users.json` in an Enterprise Grid export): [`User`]s.
//! - `channels.json` (public), `groups.json` (private), `dms.json` (direct messages) and
//!   `mpims.json` (group direct messages): [`Conversation`]s.
//! - one folder per conversation (named by the channel's `name`; by its `id` for a direct
//!   message; an MPIM's by its `name`, some tools use its `id`) of `YYYY-MM-DD.json` files,
//!   each an array of [`Message`]s.

use serde::Deserialize;

/// A member of the workspace (`users.json`): a person, a bot user or Slackbot.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct User {
    /// `U…` (or `W…` in Enterprise Grid); `USLACKBOT` for Slackbot.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    /// The handle (`@name`).
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The full name, when set.
    pub real_name: Option<String>,
    /// Deactivated in Slack.
    #[serde(deserialize_with = "nullable")]
    pub deleted: bool,
    /// A workspace administrator.
    #[serde(deserialize_with = "nullable")]
    pub is_admin: bool,
    /// A workspace owner.
    #[serde(deserialize_with = "nullable")]
    pub is_owner: bool,
    /// The primary owner.
    #[serde(deserialize_with = "nullable")]
    pub is_primary_owner: bool,
    /// A bot user (an app's bot).
    #[serde(deserialize_with = "nullable")]
    pub is_bot: bool,
    /// An app user.
    #[serde(deserialize_with = "nullable")]
    pub is_app_user: bool,
    /// Names, title and e-mail address.
    #[serde(deserialize_with = "nullable")]
    pub profile: Profile,
}

/// A user's `profile`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Profile {
    /// The full name.
    pub real_name: Option<String>,
    /// The name shown in messages, when the person chose one.
    pub display_name: Option<String>,
    /// The e-mail address (absent for bots, and in exports without that permission).
    pub email: Option<String>,
    /// The job title (Hearth's bio).
    pub title: Option<String>,
    /// A bot user's bot id (`B…`).
    pub bot_id: Option<String>,
}

/// A channel, private channel, direct message or group direct message.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Conversation {
    /// `C…` for channels, `G…` for private channels and MPIMs, `D…` for direct messages.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    /// The channel's name (`general`); an MPIM's is `mpdm-a--b--c-1`; a DM has none.
    pub name: Option<String>,
    /// Unix seconds.
    pub created: Option<i64>,
    /// Who created it (`U…`).
    pub creator: Option<String>,
    /// The workspace's default channel (`#general`).
    #[serde(deserialize_with = "nullable")]
    pub is_general: bool,
    /// The member ids (`U…`).
    #[serde(deserialize_with = "nullable")]
    pub members: Vec<String>,
    /// A direct message's other person (`dms.json` of some exports name it so).
    pub user: Option<String>,
}

/// One message of a conversation's day file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Message {
    /// `message` (other types are skipped).
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// None for a plain message; `bot_message`, `file_share`, `thread_broadcast`,
    /// `me_message`, `channel_join`, …
    pub subtype: Option<String>,
    /// The author (`U…`), absent on some bot messages.
    pub user: Option<String>,
    /// The bot that posted it (`B…`).
    pub bot_id: Option<String>,
    /// The name a bot or integration posted under.
    pub username: Option<String>,
    /// The posting bot's profile.
    pub bot_profile: Option<BotProfile>,
    /// The author's names as they were when it was posted.
    pub user_profile: Option<Profile>,
    /// The text, in mrkdwn.
    #[serde(deserialize_with = "nullable")]
    pub text: String,
    /// Unix seconds with microseconds, as text (`1546300800.000200`): the message's id within
    /// its conversation.
    #[serde(deserialize_with = "nullable")]
    pub ts: String,
    /// The `ts` of the thread's parent (equal to `ts` on the parent itself).
    pub thread_ts: Option<String>,
    /// Reactions, each with who reacted.
    #[serde(deserialize_with = "nullable")]
    pub reactions: Vec<Reaction>,
    /// Files shared with it.
    #[serde(deserialize_with = "nullable")]
    pub files: Vec<File>,
    /// Legacy attachments (a bot's cards): their fallback text is kept when `text` is empty.
    #[serde(deserialize_with = "nullable")]
    pub attachments: Vec<Attachment>,
    /// Set when the message was edited.
    pub edited: Option<Edited>,
}

/// A posting bot's `bot_profile`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct BotProfile {
    /// `B…`.
    pub id: Option<String>,
    /// The bot's name.
    pub name: Option<String>,
}

/// A reaction: the emoji's name (`thumbsup`, `+1::skin-tone-2`, a custom name) and who used it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Reaction {
    /// The emoji's name, without colons.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Who reacted (`U…`); may be fewer than `count`.
    #[serde(deserialize_with = "nullable")]
    pub users: Vec<String>,
    /// How many reacted.
    pub count: Option<u64>,
}

/// A file shared in a message. Its bytes are not in the export; `url_private` needs a Slack
/// sign-in. A deleted file is a tombstone (`mode: "tombstone"`), one past the plan's limit
/// `hidden_by_limit`: neither has a name or a URL.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct File {
    /// `F…`.
    pub id: Option<String>,
    /// The file name.
    pub name: Option<String>,
    /// Its title.
    pub title: Option<String>,
    /// Its MIME type.
    pub mimetype: Option<String>,
    /// Its size in bytes.
    pub size: Option<u64>,
    /// The file itself, on Slack.
    pub url_private: Option<String>,
    /// The file's page, on Slack.
    pub permalink: Option<String>,
    /// `tombstone`, `hidden_by_limit`, `hosted`, …
    pub mode: Option<String>,
}

/// A legacy attachment.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Attachment {
    /// A plain-text summary.
    pub fallback: Option<String>,
    /// Its text (mrkdwn).
    pub text: Option<String>,
}

/// A message's `edited`: who and when.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Edited {
    /// The editor (`U…`).
    pub user: Option<String>,
    /// When, as a `ts`.
    pub ts: Option<String>,
}

/// A field that may be `null` in the export: read as its default (empty, false).
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Milliseconds since the Unix epoch of a Slack `ts` (`1546300800.000200`: seconds, a dot and
/// microseconds), read as text so no precision is lost; None when it is not one.
pub fn ts_millis(ts: &str) -> Option<i64> {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, ""));
    if secs.is_empty() || !secs.bytes().all(|b| b.is_ascii_digit()) || secs.len() > 12 {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let millis = frac.bytes().chain(std::iter::repeat(b'0')).take(3);
    let millis = millis.fold(0i64, |n, b| n * 10 + i64::from(b - b'0'));
    Some(secs.parse::<i64>().ok()? * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ts_is_read_to_the_millisecond() {
        assert_eq!(ts_millis("1546300800.000200"), Some(1_546_300_800_000));
        assert_eq!(ts_millis("1546300800.123456"), Some(1_546_300_800_123));
        assert_eq!(ts_millis("1546300800.5"), Some(1_546_300_800_500));
        assert_eq!(ts_millis("1546300800"), Some(1_546_300_800_000));
        assert_eq!(ts_millis(""), None);
        assert_eq!(ts_millis("-1.0"), None);
        assert_eq!(ts_millis("12x.0"), None);
        assert_eq!(ts_millis("1.2e3"), None);
    }

    #[test]
    fn unknown_fields_and_missing_ones_are_fine() {
        let m: Message = serde_json::from_str(
            r#"{"type":"message","ts":"1.000001","text":"hi","blocks":[{"x":1}],"client_msg_id":"a"}"#,
        )
        .unwrap();
        assert_eq!(m.text, "hi");
        assert!(m.reactions.is_empty());
        let u: User =
            serde_json::from_str(r#"{"id":"U1","deleted":null,"profile":{"email":"a@b.c"}}"#)
                .unwrap();
        assert_eq!(u.profile.email.as_deref(), Some("a@b.c"));
    }
}
