//! Who the export's people become: one Hearth user per Slack user of `users.json`, one bot
//! user per bot that posted (by its bot id, else its name), and one deactivated placeholder per
//! author or reactor the export names but does not describe.
//!
//! - A person keeps their name (the full name, else the display name, else the handle), their
//!   e-mail address (lower-cased; the second holder of an address gets none) and their title
//!   as bio. No password: they sign in through a transfer link.
//! - Workspace owners and administrators are administrators; if none is active, the primary
//!   owner, else the first active person, is made one (Hearth needs one).
//! - A deleted Slack user is deactivated; bot users and Slackbot are bots.

use std::collections::{HashMap, HashSet};

use super::shapes::{Message, User};
use crate::db::{Role, Status};

/// A user to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// The Slack id (`U…`), the bot key (`bot:B…`, `bot-name:…`) or `unknown`.
    pub key: String,
    /// The name Hearth shows.
    pub name: String,
    /// The sign-in address, lower-cased.
    pub email: Option<String>,
    /// Member, administrator or bot.
    pub role: Role,
    /// Active, or deactivated for a deleted Slack user and a placeholder.
    pub status: Status,
    /// The Slack title.
    pub bio: Option<String>,
}

/// Everyone the import writes, in order, found by Slack id or bot key.
#[derive(Debug, Clone, Default)]
pub struct People {
    /// Every user, in the order written.
    pub list: Vec<Person>,
    by_key: HashMap<String, usize>,
    /// Bot ids (`B…`) of the bot users of `users.json`.
    by_bot_id: HashMap<String, usize>,
    emails: HashSet<String>,
    /// What was decided that the report should say.
    pub notes: Vec<String>,
}

/// Slackbot's user id.
const SLACKBOT: &str = "USLACKBOT";

/// The name a Slack user shows: the full name, the display name or the handle, trimmed;
/// `fallback` when all are empty.
fn display_name(user: &User, fallback: &str) -> String {
    [
        user.profile.real_name.as_deref(),
        user.real_name.as_deref(),
        user.profile.display_name.as_deref(),
        Some(user.name.as_str()),
    ]
    .into_iter()
    .flatten()
    .map(str::trim)
    .find(|n| !n.is_empty())
    .unwrap_or(fallback)
    .to_owned()
}

impl People {
    /// The people of `users.json`, with an active administrator guaranteed.
    pub fn from_users(users: &[User]) -> Self {
        let mut people = Self::default();
        for user in users {
            if user.id.is_empty() || people.by_key.contains_key(&user.id) {
                continue;
            }
            people.add_user(user);
        }
        people.ensure_administrator(users);
        people
    }

    fn add_user(&mut self, user: &User) {
        let bot = user.is_bot || user.is_app_user || user.id == SLACKBOT;
        let role = if bot {
            Role::Bot
        } else if user.is_admin || user.is_owner || user.is_primary_owner {
            Role::Administrator
        } else {
            Role::Member
        };
        let email = if bot { None } else { self.claim_email(user) };
        let status = if user.deleted {
            Status::Deactivated
        } else {
            Status::Active
        };
        let bio = user
            .profile
            .title
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned);
        let index = self.push(Person {
            key: user.id.clone(),
            name: display_name(user, &user.id),
            email,
            role,
            status,
            bio,
        });
        if let Some(bot_id) = user.profile.bot_id.as_deref().filter(|_| bot) {
            self.by_bot_id.insert(bot_id.to_owned(), index);
        }
    }

    /// The user's address, lower-cased, unless another user has it already (noted).
    fn claim_email(&mut self, user: &User) -> Option<String> {
        let email = user.profile.email.as_deref()?.trim().to_lowercase();
        if email.is_empty() {
            return None;
        }
        if !self.emails.insert(email.clone()) {
            self.notes.push(format!(
                "{} ({}) shares the address {email} with another user: imported without it",
                display_name(user, &user.id),
                user.id
            ));
            return None;
        }
        Some(email)
    }

    fn push(&mut self, person: Person) -> usize {
        let index = self.list.len();
        self.by_key.insert(person.key.clone(), index);
        self.list.push(person);
        index
    }

    /// Makes the primary owner, else the first active person, an administrator when no
    /// active person is one.
    fn ensure_administrator(&mut self, users: &[User]) {
        let active_admin = self
            .list
            .iter()
            .any(|p| p.role == Role::Administrator && p.status == Status::Active);
        if active_admin {
            return;
        }
        let owner = users
            .iter()
            .find(|u| u.is_primary_owner && !u.deleted)
            .and_then(|u| self.by_key.get(&u.id).copied());
        let first = self
            .list
            .iter()
            .position(|p| p.role == Role::Member && p.status == Status::Active);
        if let Some(i) = owner.or(first) {
            let person = &mut self.list[i];
            person.role = Role::Administrator;
            self.notes.push(format!(
                "no active administrator in the export: {} is made one",
                person.name
            ));
        }
    }

    /// The index of the user of Slack id `id`, adding a deactivated placeholder (named
    /// `shown`, else after the id) when the export does not describe them.
    pub fn user(&mut self, id: &str, shown: Option<&str>) -> usize {
        if let Some(&i) = self.by_key.get(id) {
            return i;
        }
        if id == SLACKBOT {
            return self.push(Person {
                key: id.to_owned(),
                name: "Slackbot".to_owned(),
                email: None,
                role: Role::Bot,
                status: Status::Active,
                bio: None,
            });
        }
        let name = shown
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map_or_else(|| format!("Slack user {id}"), str::to_owned);
        self.push(Person {
            key: id.to_owned(),
            name,
            email: None,
            role: Role::Member,
            status: Status::Deactivated,
            bio: None,
        })
    }

    /// The index of the bot that posted under `bot_id` (`B…`) or `username`: the bot user of
    /// `users.json` with that bot id, else a bot user made for it.
    pub fn bot(&mut self, bot_id: Option<&str>, username: Option<&str>) -> usize {
        let bot_id = bot_id.filter(|b| !b.is_empty());
        if let Some(&i) = bot_id.and_then(|b| self.by_bot_id.get(b)) {
            return i;
        }
        let username = username.map(str::trim).filter(|n| !n.is_empty());
        let key = match (bot_id, username) {
            (Some(b), _) => format!("bot:{b}"),
            (None, Some(n)) => format!("bot-name:{n}"),
            (None, None) => "bot:unknown".to_owned(),
        };
        if let Some(&i) = self.by_key.get(&key) {
            return i;
        }
        let name = username.or(bot_id).unwrap_or("Bot").to_owned();
        self.push(Person {
            key,
            name,
            email: None,
            role: Role::Bot,
            status: Status::Active,
            bio: None,
        })
    }

    /// The author of `message`: its user when the export describes them (a person or a bot
    /// user); the bot for a `bot_message` or a message without a user; a placeholder for an
    /// undescribed user.
    pub fn author(&mut self, message: &Message) -> usize {
        let user = message.user.as_deref().filter(|u| !u.is_empty());
        if let Some(&i) = user.and_then(|u| self.by_key.get(u)) {
            return i;
        }
        let bot_name = message
            .username
            .as_deref()
            .or_else(|| message.bot_profile.as_ref()?.name.as_deref());
        let is_bot = message.subtype.as_deref() == Some("bot_message") || user.is_none();
        if is_bot && (message.bot_id.is_some() || bot_name.is_some()) {
            return self.bot(message.bot_id.as_deref(), bot_name);
        }
        match user {
            Some(u) => {
                let shown = message.user_profile.as_ref().and_then(|p| {
                    p.real_name
                        .as_deref()
                        .filter(|n| !n.trim().is_empty())
                        .or(p.display_name.as_deref())
                });
                self.user(u, shown)
            }
            None => self.user("unknown", Some("Unknown Slack user")),
        }
    }

    /// The index of the user of Slack id `id`, when known (no placeholder is made).
    pub fn find(&self, id: &str) -> Option<usize> {
        self.by_key.get(id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(json: &str) -> User {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn people_bots_and_placeholders() {
        let users = vec![
            user(
                r#"{"id":"U1","name":"ann","profile":{"real_name":"Ann Lee","email":"Ann@X.example","title":"Boss"},"is_admin":true}"#,
            ),
            user(
                r#"{"id":"U2","name":"bo","deleted":true,"profile":{"display_name":"Bo","email":"ann@x.example"}}"#,
            ),
            user(
                r#"{"id":"U3","name":"helper","is_bot":true,"profile":{"real_name":"Helper","bot_id":"B3"}}"#,
            ),
        ];
        let mut p = People::from_users(&users);
        assert_eq!(p.list[0].name, "Ann Lee");
        assert_eq!(p.list[0].email.as_deref(), Some("ann@x.example"));
        assert_eq!(p.list[0].role, Role::Administrator);
        assert_eq!(p.list[0].bio.as_deref(), Some("Boss"));
        assert_eq!(p.list[1].status, Status::Deactivated);
        assert_eq!(p.list[1].email, None, "the address is Ann's already");
        assert_eq!(p.notes.len(), 1);
        assert_eq!(p.list[2].role, Role::Bot);
        assert_eq!(p.bot(Some("B3"), Some("whatever")), 2);
        let hook = p.bot(Some("B9"), Some("deploys"));
        assert_eq!(p.list[hook].name, "deploys");
        assert_eq!(p.bot(Some("B9"), Some("other name")), hook);
        let named = p.bot(None, Some("cron"));
        assert_ne!(named, hook);
        let ghost = p.user("U77", Some("Old Timer"));
        assert_eq!(p.list[ghost].name, "Old Timer");
        assert_eq!(p.list[ghost].status, Status::Deactivated);
        assert_eq!(p.user("U77", None), ghost);
        let slackbot = p.user("USLACKBOT", None);
        assert_eq!(p.list[slackbot].role, Role::Bot);
    }

    #[test]
    fn someone_administers() {
        let users = vec![
            user(r#"{"id":"U1","name":"a","deleted":true,"is_admin":true}"#),
            user(r#"{"id":"U2","name":"b"}"#),
            user(r#"{"id":"U3","name":"c","is_primary_owner":true}"#),
        ];
        let p = People::from_users(&users);
        assert_eq!(p.list[2].role, Role::Administrator);
        let users = vec![user(r#"{"id":"U2","name":"b"}"#)];
        assert_eq!(People::from_users(&users).list[0].role, Role::Administrator);
    }

    #[test]
    fn authors() {
        let mut p = People::from_users(&[user(r#"{"id":"U1","name":"a"}"#)]);
        let m = |json: &str| -> Message { serde_json::from_str(json).unwrap() };
        assert_eq!(p.author(&m(r#"{"user":"U1","ts":"1.0"}"#)), 0);
        let hook = p.author(&m(
            r#"{"subtype":"bot_message","bot_id":"B1","username":"CI","ts":"1.0"}"#,
        ));
        assert_eq!(p.list[hook].name, "CI");
        assert_eq!(p.list[hook].role, Role::Bot);
        let profiled = p.author(&m(
            r#"{"bot_id":"B2","bot_profile":{"name":"Giphy"},"ts":"1.0"}"#,
        ));
        assert_eq!(p.list[profiled].name, "Giphy");
        let ghost = p.author(&m(
            r#"{"user":"U5","user_profile":{"real_name":"Gone"},"ts":"1.0"}"#,
        ));
        assert_eq!(p.list[ghost].name, "Gone");
    }
}
