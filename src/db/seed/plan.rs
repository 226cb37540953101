//! The plan: every message and boost, computed before the transaction.

use anyhow::{bail, Context as _};

use super::people::{named_user, GENERATED_AUTHORS, NAMED_AUTHORS, NAMED_USERS};
use super::rng::{SplitMix64, PRNG_SEED};
use super::rooms::{Members, ROOMS};
use super::{
    SeedOptions, BASE_EPOCH_MS, DAY, FIRST_GENERATED_USER_ID, MAIN_ROOM_FIRST_MESSAGE_MS,
    MAIN_ROOM_ID, MAIN_ROOM_MESSAGES, MINUTE, OTHER_ROOMS_FIRST_MESSAGE_MS, SECOND,
};

/// Message body templates for the main room, separated by blank lines (see `seed/README.md`).
const MESSAGE_TEMPLATES: &str = include_str!("../../../seed/messages.txt");

/// The other rooms' conversations: blocks of `<room> <author>` then a body line.
const OTHER_ROOM_MESSAGES: &str = include_str!("../../../seed/other_rooms.txt");

/// Boost contents to pick from (Campfire's `boosts.content` is at most 16 characters).
const BOOST_CONTENTS: [&str; 8] = ["👍", "🎉", "❤️", "😂", "🔥", "+1", "👀", "💯"];

/// How many boosts the seed puts on main-room messages.
const BOOSTS: usize = 8;

/// One message row (its id is its 1-based position in [`Plan::messages`]).
pub(super) struct MessageRow {
    pub(super) room_id: i64,
    pub(super) creator_id: i64,
    pub(super) client_message_id: String,
    pub(super) body: String,
    pub(super) created_at: i64,
}

/// One boost row.
pub(super) struct BoostRow {
    pub(super) message_id: i64,
    pub(super) booster_id: i64,
    pub(super) content: &'static str,
    pub(super) created_at: i64,
}

/// Everything a seed writes besides users and memberships.
pub(super) struct Plan {
    pub(super) generated_users: usize,
    pub(super) messages: Vec<MessageRow>,
    pub(super) boosts: Vec<BoostRow>,
}

impl Plan {
    pub(super) fn build(opts: &SeedOptions) -> anyhow::Result<Self> {
        let mut rng = SplitMix64(PRNG_SEED);
        let mut messages = main_room_messages(&mut rng, opts.users)?;
        messages.extend(other_room_messages(&mut rng)?);
        let boosts = boosts(&mut rng, &messages);
        Ok(Self {
            generated_users: opts.users,
            messages,
            boosts,
        })
    }

    /// Time of the newest message in `room_id`, if any.
    pub(super) fn last_message_at(&self, room_id: i64) -> Option<i64> {
        self.messages
            .iter()
            .filter(|m| m.room_id == room_id)
            .map(|m| m.created_at)
            .max()
    }
}

/// Splits a data file into records separated by blank lines, trimming each record.
fn records(text: &str) -> Vec<String> {
    text.replace("\r\n", "\n")
        .split("\n\n")
        .map(str::trim)
        .filter(|record| !record.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The main room's [`MAIN_ROOM_MESSAGES`] messages: the templates in file order, one pass per
/// day (each day from 10:00 UTC, 2–7 minutes between messages), with `{mention}` and `{n}`
/// filled in; authors drawn from the named people and the first few generated users.
fn main_room_messages(rng: &mut SplitMix64, generated: usize) -> anyhow::Result<Vec<MessageRow>> {
    let templates = records(MESSAGE_TEMPLATES);
    if templates.is_empty() {
        bail!("seed/messages.txt holds no message templates");
    }
    let mut authors: Vec<(i64, String)> = NAMED_AUTHORS
        .iter()
        .map(|&id| {
            let user = named_user(id).with_context(|| format!("no named user {id}"))?;
            anyhow::Ok((id, user.name.to_owned()))
        })
        .collect::<anyhow::Result<_>>()?;
    authors.extend((1..=generated.min(GENERATED_AUTHORS)).map(|i| {
        (
            FIRST_GENERATED_USER_ID + i as i64 - 1,
            super::people::generated_user_name(i),
        )
    }));

    let mut at = 0;
    let mut previous_author = usize::MAX;
    let mut rows = Vec::with_capacity(MAIN_ROOM_MESSAGES);
    for i in 0..MAIN_ROOM_MESSAGES {
        // Nobody posts twice in a row: pick again while the author repeats.
        let mut author = rng.index(authors.len());
        while author == previous_author {
            author = rng.index(authors.len());
        }
        previous_author = author;
        let mut mentioned = rng.index(authors.len() - 1);
        if mentioned >= author {
            mentioned += 1;
        }
        let number = rng.range(12, 1999).to_string();
        let body = templates[i % templates.len()]
            .replace("{mention}", &format!("@{}", authors[mentioned].1))
            .replace("{n}", &number);
        // One pass through the templates is one day's conversation, starting at 10:00.
        let day = (i / templates.len()) as i64;
        at = if i % templates.len() == 0 {
            BASE_EPOCH_MS + day * DAY + MAIN_ROOM_FIRST_MESSAGE_MS
        } else {
            at + rng.range(2 * MINUTE, 7 * MINUTE)
        };
        rows.push(MessageRow {
            room_id: MAIN_ROOM_ID,
            creator_id: authors[author].0,
            client_message_id: rng.uuid(),
            body,
            created_at: at,
        });
    }
    Ok(rows)
}

/// The conversations of `seed/other_rooms.txt`, in file order, 5–20 minutes apart per room.
fn other_room_messages(rng: &mut SplitMix64) -> anyhow::Result<Vec<MessageRow>> {
    let mut last_at: Vec<Option<i64>> = vec![None; ROOMS.len()];
    let mut rows = Vec::new();
    for record in records(OTHER_ROOM_MESSAGES) {
        let (header, body) = record
            .split_once('\n')
            .with_context(|| format!("seed/other_rooms.txt: record without a body: {record:?}"))?;
        let (room_key, author_key) = header.split_once(' ').with_context(|| {
            format!("seed/other_rooms.txt: header is not `<room> <author>`: {header:?}")
        })?;
        let room_index = ROOMS
            .iter()
            .position(|room| room.key == room_key)
            .with_context(|| format!("seed/other_rooms.txt: unknown room {room_key:?}"))?;
        let room = &ROOMS[room_index];
        let author = NAMED_USERS
            .iter()
            .find(|user| user.key == author_key.trim())
            .with_context(|| format!("seed/other_rooms.txt: unknown author {author_key:?}"))?;
        if let Members::Only(ids) = room.members {
            if !ids.contains(&author.id) {
                bail!("seed/other_rooms.txt: {author_key} is not a member of {room_key}");
            }
        }
        let at = match last_at[room_index] {
            None => BASE_EPOCH_MS + OTHER_ROOMS_FIRST_MESSAGE_MS + room.created_offset_ms,
            Some(previous) => previous + rng.range(5 * MINUTE, 20 * MINUTE),
        };
        last_at[room_index] = Some(at);
        rows.push(MessageRow {
            room_id: room.id,
            creator_id: author.id,
            client_message_id: rng.uuid(),
            body: body.trim().to_owned(),
            created_at: at,
        });
    }
    Ok(rows)
}

/// [`BOOSTS`] boosts on distinct main-room messages, each by a named person other than the
/// message's author, 30 seconds to 5 minutes after the message.
fn boosts(rng: &mut SplitMix64, messages: &[MessageRow]) -> Vec<BoostRow> {
    let main: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i].room_id == MAIN_ROOM_ID)
        .collect();
    let mut chosen: Vec<usize> = Vec::with_capacity(BOOSTS);
    while chosen.len() < BOOSTS.min(main.len()) {
        let candidate = main[rng.index(main.len())];
        if !chosen.contains(&candidate) {
            chosen.push(candidate);
        }
    }
    chosen.sort_unstable();
    chosen
        .into_iter()
        .map(|index| {
            let message = &messages[index];
            let mut booster = NAMED_AUTHORS[rng.index(NAMED_AUTHORS.len())];
            while booster == message.creator_id {
                booster = NAMED_AUTHORS[rng.index(NAMED_AUTHORS.len())];
            }
            BoostRow {
                message_id: index as i64 + 1,
                booster_id: booster,
                content: BOOST_CONTENTS[rng.index(BOOST_CONTENTS.len())],
                created_at: message.created_at + rng.range(30 * SECOND, 5 * MINUTE),
            }
        })
        .collect()
}
