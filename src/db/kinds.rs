//! The closed sets of words the schema's `CHECK` constraints hold (`migrations/0001_schema.sql`),
//! as enums: a user's [`Role`] and [`Status`], a room's [`RoomKind`] and a membership's
//! [`Involvement`] (Campfire's `User.role`, `User.status`, the `Room` subclasses and
//! `Membership.involvement`). Each is stored, serialized and shown as its lower-case word
//! (`administrator`, `deactivated`, `direct`, `everything`) and parsed back from it with
//! [`std::str::FromStr`], whose error is an [`UnknownWord`].

/// A word outside an enum's set: which set, and the word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownWord {
    /// The set: `role`, `status`, `room kind` or `involvement`.
    pub set: &'static str,
    /// The word given.
    pub word: String,
}

impl std::fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown {} {:?}", self.set, self.word)
    }
}

impl std::error::Error for UnknownWord {}

/// An enum of words: stored by sqlx as `TEXT`, by serde as a string, shown with `Display`.
macro_rules! words {
    ($(#[$meta:meta])* $name:ident ($set:literal) { $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, sqlx::Type, serde::Serialize, serde::Deserialize)]
        #[sqlx(rename_all = "lowercase")]
        #[serde(rename_all = "lowercase")]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every value, in the schema's order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The stored word.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $word,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownWord;

            fn from_str(word: &str) -> Result<Self, UnknownWord> {
                match word {
                    $($word => Ok(Self::$variant),)+
                    _ => Err(UnknownWord { set: $set, word: word.to_owned() }),
                }
            }
        }
    };
}

words! {
    /// A user's role (`users.role`).
    Role ("role") {
        /// A person.
        Member = "member",
        /// A person who administers the account.
        Administrator = "administrator",
        /// A bot (posts through its key; has no e-mail address).
        Bot = "bot",
    }
}

words! {
    /// A user's status (`users.status`): only active users sign in, post or stay connected.
    Status ("status") {
        /// Signs in and posts.
        Active = "active",
        /// Removed by an administrator (sessions deleted).
        Deactivated = "deactivated",
        /// Banned: deactivated, messages deleted, addresses blocked.
        Banned = "banned",
    }
}

words! {
    /// A room's kind (`rooms.kind`): Campfire's `Rooms::Open`, `Rooms::Closed`, `Rooms::Direct`,
    /// and the forks' `Rooms::Thread`.
    RoomKind ("room kind") {
        /// Everyone is a member.
        Open = "open",
        /// Members chosen by its creator.
        Closed = "closed",
        /// A direct conversation, named by its members.
        Direct = "direct",
        /// A thread: a side conversation whose parent is a message of another room
        /// (`rooms.parent_message_id`), seen by that room's members (see `crate::db::threads`).
        Thread = "thread",
    }
}

words! {
    /// A member's notification level in a room (`memberships.involvement`).
    Involvement ("involvement") {
        /// Hidden from the sidebar, no notifications (how a member leaves an open room).
        Invisible = "invisible",
        /// No notifications.
        Nothing = "nothing",
        /// Notified of @mentions.
        Mentions = "mentions",
        /// Notified of every message.
        Everything = "everything",
    }
}

impl RoomKind {
    /// Whether this is a direct room.
    pub fn is_direct(self) -> bool {
        self == Self::Direct
    }

    /// Whether this is a thread (a room whose parent is a message).
    pub fn is_thread(self) -> bool {
        self == Self::Thread
    }
}

impl Involvement {
    /// The level a new member starts at: everything in a direct room, else mentions
    /// (Campfire's `Membership` default and `Rooms::Direct#default_involvement`).
    pub fn default_for(kind: RoomKind) -> Self {
        if kind.is_direct() {
            Self::Everything
        } else {
            Self::Mentions
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Involvement, Role, RoomKind, Status};

    #[test]
    fn each_word_parses_back_to_its_value_and_others_are_refused() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>(), Ok(*role));
        }
        for status in Status::ALL {
            assert_eq!(status.to_string().parse::<Status>(), Ok(*status));
        }
        for kind in RoomKind::ALL {
            assert_eq!(kind.as_str().parse::<RoomKind>(), Ok(*kind));
        }
        for involvement in Involvement::ALL {
            assert_eq!(
                involvement.as_str().parse::<Involvement>(),
                Ok(*involvement)
            );
        }
        let refused = "Administrator".parse::<Role>().unwrap_err();
        assert_eq!(refused.to_string(), "unknown role \"Administrator\"");
        assert!("".parse::<Involvement>().is_err());
        assert_eq!(
            serde_json::to_string(&RoomKind::Direct).unwrap(),
            "\"direct\""
        );
    }
}
