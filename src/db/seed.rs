//! The deterministic seed: the rows a fresh Hearth database starts with.
//!
//! Campfire itself ships no `db/seeds.rb`: a fresh install goes through `/first_run`, which
//! creates the account, the open room "All Talk" and an administrator
//! (`app/models/first_run.rb`). Its test fixtures (`test/fixtures/*.yml`) name the people
//! `david`, `jason`, `jz`, `kevin` and the bot `bender`, with the password `secret123456`, and
//! its `RAILS_ENV=performance` boot seeds thousands of `user<i>@example.com` / `password` users
//! who all share room 1 (`config/environments/performance.rb`). Hearth's seed combines the two,
//! so that the same database serves both a person clicking around and a load generator:
//!
//! | id | name | email | role | status |
//! |---|---|---|---|---|
//! | 1 | David | `david@example.com` | administrator | active |
//! | 2 | Jason | `jason@example.com` | member | active |
//! | 3 | JZ | `jz@example.com` | member | active |
//! | 4 | Kevin | `kevin@example.com` | member | active |
//! | 5 | Bender | none (bot token [`BENDER_BOT_TOKEN`]) | bot | active |
//! | 6 | Ralph | `ralph-deactivated-<uuid>@example.com` | member | deactivated |
//! | 7 | Mallory | `mallory@example.com` | member | banned |
//! | 8… | User 1 … User N | `user1@example.com` … | member | active |
//!
//! Rooms, all created by David:
//!
//! | id | name | kind | members |
//! |---|---|---|---|
//! | 1 | All Talk | open | every user, whatever the status (the main room, see below) |
//! | 2 | Pets | open | every user but the deactivated one (as Campfire leaves them) |
//! | 3 | HQ | open | every user but the deactivated one |
//! | 4 | Designers | closed | David, Jason, JZ, Kevin |
//! | 5 | (none) | direct | David, Jason |
//! | 6 | (none) | direct | David, JZ |
//!
//! The main room keeps the deactivated user too, so that "every seeded user is a member of
//! room 1" holds without exceptions; Campfire's `User#deactivate` would have deleted that
//! membership. Ralph's email has the `-deactivated-<uuid>` suffix `User#deactivate` gives it.
//!
//! Room 1 holds exactly [`MAIN_ROOM_MESSAGES`] messages built from the body templates in
//! `seed/messages.txt`; the other rooms hold the short conversations of `seed/other_rooms.txt`.
//! `seed/README.md` describes both file formats.
//!
//! # Determinism
//!
//! The same [`SeedOptions`] always produce byte-identical rows. Every time is
//! [`BASE_EPOCH_MS`] (2026-11-01T09:00:00Z) plus an offset, every "random" choice comes from a
//! SplitMix64 generator with a fixed seed, and every bcrypt digest uses a fixed salt. Nothing
//! reads the clock or the operating system's random source.
//!
//! # Passwords
//!
//! Digests are written the way Rails' `has_secure_password` (bcrypt-ruby) writes them: the
//! modular-crypt string `$2a$<cost>$<22-char salt><31-char hash>`. Named people get cost
//! [`NAMED_BCRYPT_COST`] (10; Rails' production default is 12, which costs four times as much
//! for no gain in a seed). Generated users all share ONE digest of [`GENERATED_PASSWORD`], made
//! once per run at [`SeedOptions::generated_bcrypt_cost`] (default 4, the bcrypt minimum): that
//! is what lets 10,000 users seed in well under a few seconds. The shared digest and the low cost
//! are deliberate and only fit load-test accounts.
//!
//! # Speed
//!
//! The whole seed runs in one `BEGIN IMMEDIATE` transaction on one connection. Users go in with
//! multi-row `INSERT … VALUES` statements (each chunk reuses the connection's cached prepared
//! statement), and open-room memberships with one `INSERT … SELECT … FROM users` per room.

use std::sync::{Arc, OnceLock};

use anyhow::{bail, Context as _};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection, SqlitePool};

/// 2026-11-01T09:00:00Z in milliseconds since the Unix epoch: the time the seeded account was
/// created. Every seeded time is this plus a fixed or generated offset.
pub const BASE_EPOCH_MS: i64 = 1_793_523_600_000;

/// Name of the single seeded account (Campfire's `accounts.name`).
pub const ACCOUNT_NAME: &str = "Hearth";

/// The account's join code, fixed. Campfire formats its random 12-character code as three
/// dash-separated groups of four (`app/models/account/joinable.rb`); this one has that shape.
pub const JOIN_CODE: &str = "hRt7-Q2mK-9wXe";

/// Password of every named, human user (the Campfire fixtures' password).
pub const NAMED_PASSWORD: &str = "secret123456";

/// bcrypt cost of the named users' digests. Rails' default is 12; 10 keeps seeding quick.
pub const NAMED_BCRYPT_COST: u32 = 10;

/// Password of every generated user `user<i>@example.com` (as in Campfire's performance seed).
pub const GENERATED_PASSWORD: &str = "password";

/// Bot token of the bot user `bender`: 12 ASCII alphanumerics, unique in `users.bot_token`.
/// Campfire's bot key is `"<user id>-<bot_token>"` (`app/models/user/bot.rb`).
pub const BENDER_BOT_TOKEN: &str = "bNd3rB0tK3y7";

/// Id of the main room, the open room "All Talk" that every seeded user belongs to.
pub const MAIN_ROOM_ID: i64 = 1;

/// Number of messages the seed puts in the main room.
pub const MAIN_ROOM_MESSAGES: usize = 169;

/// Id of `user1@example.com`; generated user `i` (1-based) has id `FIRST_GENERATED_USER_ID + i - 1`.
pub const FIRST_GENERATED_USER_ID: i64 = 8;

/// Message body templates for the main room, separated by blank lines (see `seed/README.md`).
const MESSAGE_TEMPLATES: &str = include_str!("../../seed/messages.txt");

/// The other rooms' conversations: blocks of `<room> <author>` then a body line.
const OTHER_ROOM_MESSAGES: &str = include_str!("../../seed/other_rooms.txt");

/// Salt seed of the generated users' shared digest (see [`fixed_salt`]).
const GENERATED_SALT_SEED: u64 = u64::MAX;

/// Seed of the SplitMix64 generator behind every generated choice.
const PRNG_SEED: u64 = 0x4845_4152_5448_2026;

/// Boost contents to pick from (Campfire's `boosts.content` is at most 16 characters).
const BOOST_CONTENTS: [&str; 8] = ["👍", "🎉", "❤️", "😂", "🔥", "+1", "👀", "💯"];

/// How many boosts the seed puts on main-room messages.
const BOOSTS: usize = 8;

/// Largest number of bind parameters per statement. SQLite builds before 3.32 allowed 999;
/// staying under that keeps the seed portable.
const MAX_BIND_PARAMETERS: usize = 999;

/// Options of a seed run.
#[derive(Clone, Debug)]
pub struct SeedOptions {
    /// How many generated users (`user1@example.com` … `userN@example.com`) to create.
    /// Default 1000.
    pub users: usize,
    /// bcrypt cost (4..=31) of the generated users' shared digest. Default 4, the bcrypt
    /// minimum: deliberately low, because generated users exist only for load testing.
    pub generated_bcrypt_cost: u32,
}

impl Default for SeedOptions {
    /// 1000 generated users with a bcrypt cost of 4.
    fn default() -> Self {
        SeedOptions {
            users: 1000,
            generated_bcrypt_cost: 4,
        }
    }
}

/// What a seed run created (for logs and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedReport {
    /// Users created, named and generated (`7 + SeedOptions::users`).
    pub users: usize,
    /// Rooms created (6).
    pub rooms: usize,
    /// Messages created in all rooms.
    pub messages: usize,
    /// Id of the main room ([`MAIN_ROOM_ID`]).
    pub main_room_id: i64,
    /// Messages created in the main room ([`MAIN_ROOM_MESSAGES`]).
    pub main_room_messages: usize,
}

/// Builds the deterministic seed into an EMPTY, already-migrated database in ONE transaction.
///
/// The transaction starts with `BEGIN IMMEDIATE`, so two concurrent seeds cannot both see an
/// empty database.
///
/// # Errors
///
/// - the database already has users (it never seeds twice); nothing is written then;
/// - `opts.generated_bcrypt_cost` is outside bcrypt's 4..=31;
/// - any SQL error (for example, a database that was not migrated). The transaction is rolled
///   back, so a failed seed leaves the database as it was.
pub async fn seed(pool: &SqlitePool, opts: &SeedOptions) -> anyhow::Result<SeedReport> {
    let plan = Plan::build(opts)?;
    // bcrypt is CPU-bound: keep it off the async worker threads and out of the transaction.
    let cost = opts.generated_bcrypt_cost;
    let (named_digests, generated_digest) = tokio::task::spawn_blocking(move || {
        let named = named_digests()?;
        let generated = generated_digest(cost)?;
        anyhow::Ok((named, generated))
    })
    .await
    .context("the password hashing task failed")??;

    let mut tx = pool
        .begin_with("BEGIN IMMEDIATE")
        .await
        .context("cannot begin the seed transaction")?;
    let existing: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(&mut *tx)
        .await?;
    if existing > 0 {
        bail!("refusing to seed: the database already has {existing} users");
    }

    write(&mut tx, &plan, named_digests, generated_digest).await?;
    tx.commit().await.context("cannot commit the seed")?;

    Ok(SeedReport {
        users: NAMED_USERS.len() + opts.users,
        rooms: ROOMS.len(),
        messages: plan.messages.len(),
        main_room_id: MAIN_ROOM_ID,
        main_room_messages: plan
            .messages
            .iter()
            .filter(|m| m.room_id == MAIN_ROOM_ID)
            .count(),
    })
}

/// True when the database has no users yet (the first `serve` of an empty database seeds it).
///
/// # Errors
///
/// Any SQL error, for example when the `users` table does not exist (database not migrated).
pub async fn is_empty(pool: &SqlitePool) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT NOT EXISTS (SELECT 1 FROM users)")
        .fetch_one(pool)
        .await
}

// ---------------------------------------------------------------------------------------------
// Fixed data: people and rooms.

/// One named user row.
struct NamedUser {
    id: i64,
    /// Key used by `seed/other_rooms.txt` (the Campfire fixture name).
    key: &'static str,
    name: &'static str,
    email: Option<&'static str>,
    role: &'static str,
    status: &'static str,
    bio: Option<&'static str>,
    bot_token: Option<&'static str>,
    /// Whether the user has a password (bots have none: they post with their bot key).
    has_password: bool,
}

const NAMED_USERS: [NamedUser; 7] = [
    NamedUser {
        id: 1,
        key: "david",
        name: "David",
        email: Some("david@example.com"),
        role: "administrator",
        status: "active",
        bio: Some("Runs the place. Mostly harmless."),
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 2,
        key: "jason",
        name: "Jason",
        email: Some("jason@example.com"),
        role: "member",
        status: "active",
        bio: Some("Ships on Fridays."),
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 3,
        key: "jz",
        name: "JZ",
        email: Some("jz@example.com"),
        role: "member",
        status: "active",
        bio: Some("Pixels and coffee."),
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 4,
        key: "kevin",
        name: "Kevin",
        email: Some("kevin@example.com"),
        role: "member",
        status: "active",
        bio: None,
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 5,
        key: "bender",
        name: "Bender",
        email: None,
        role: "bot",
        status: "active",
        bio: Some("Bite my shiny metal webhook."),
        bot_token: Some(BENDER_BOT_TOKEN),
        has_password: false,
    },
    NamedUser {
        id: 6,
        key: "ralph",
        name: "Ralph",
        email: Some("ralph-deactivated-0c2f5e8a-3b1d-4f6e-9a7c-5d8e2b4f1a63@example.com"),
        role: "member",
        status: "deactivated",
        bio: None,
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 7,
        key: "mallory",
        name: "Mallory",
        email: Some("mallory@example.com"),
        role: "member",
        status: "banned",
        bio: None,
        bot_token: None,
        has_password: true,
    },
];

/// Named people who write messages and boosts, by user id.
const NAMED_AUTHORS: [i64; 4] = [1, 2, 3, 4];

/// How many generated users (at most) join the named authors of the main room.
const GENERATED_AUTHORS: usize = 4;

/// How members of a room are chosen.
#[derive(Clone, Copy)]
enum Members {
    /// Every user, whatever the status.
    Everyone,
    /// Every user but the deactivated ones. Campfire's open rooms take in every user
    /// (`User#grant_membership_to_open_rooms`); `User#deactivate` later deletes the user's
    /// memberships outside direct rooms, while banning keeps them (`app/models/user.rb`,
    /// `app/models/user/bannable.rb`).
    NotDeactivated,
    /// These user ids.
    Only(&'static [i64]),
}

/// One room row and its members.
struct RoomSeed {
    id: i64,
    /// Key used by `seed/other_rooms.txt`.
    key: &'static str,
    name: Option<&'static str>,
    kind: &'static str,
    members: Members,
    /// Campfire: rooms default to `mentions`, direct rooms to `everything`.
    involvement: &'static str,
    /// Offset of `created_at` from [`BASE_EPOCH_MS`].
    created_offset_ms: i64,
}

const ROOMS: [RoomSeed; 6] = [
    RoomSeed {
        id: MAIN_ROOM_ID,
        key: "all-talk",
        name: Some("All Talk"),
        kind: "open",
        members: Members::Everyone,
        involvement: "mentions",
        created_offset_ms: 0,
    },
    RoomSeed {
        id: 2,
        key: "pets",
        name: Some("Pets"),
        kind: "open",
        members: Members::NotDeactivated,
        involvement: "mentions",
        created_offset_ms: 5 * MINUTE,
    },
    RoomSeed {
        id: 3,
        key: "hq",
        name: Some("HQ"),
        kind: "open",
        members: Members::NotDeactivated,
        involvement: "mentions",
        created_offset_ms: 6 * MINUTE,
    },
    RoomSeed {
        id: 4,
        key: "designers",
        name: Some("Designers"),
        kind: "closed",
        members: Members::Only(&[1, 2, 3, 4]),
        involvement: "mentions",
        created_offset_ms: 7 * MINUTE,
    },
    RoomSeed {
        id: 5,
        key: "direct-jason",
        name: None,
        kind: "direct",
        members: Members::Only(&[1, 2]),
        involvement: "everything",
        created_offset_ms: 8 * MINUTE,
    },
    RoomSeed {
        id: 6,
        key: "direct-jz",
        name: None,
        kind: "direct",
        members: Members::Only(&[1, 3]),
        involvement: "everything",
        created_offset_ms: 9 * MINUTE,
    },
];

/// The creator of every seeded room (David, the administrator).
const ROOM_CREATOR_ID: i64 = 1;

/// Memberships left unread: `(room id, user id)`. `unread_at` becomes the time of the room's
/// last message not written by that user, as Campfire's `Room#receive` would have set it.
/// Every other membership is read (`unread_at` NULL).
const UNREAD: [(i64, i64); 3] = [(3, 2), (4, 4), (6, 3)];

const SECOND: i64 = 1000;
const MINUTE: i64 = 60 * SECOND;

/// Offset of the first named user's `created_at`; named user `id` is created `id` minutes later.
const NAMED_USERS_OFFSET_MS: i64 = MINUTE;
/// Offset of `user1`'s `created_at`; each next generated user is created 100 ms later.
const GENERATED_USERS_OFFSET_MS: i64 = 10 * MINUTE;
/// Offset of the main room's first message of each day (10:00 UTC).
const MAIN_ROOM_FIRST_MESSAGE_MS: i64 = 60 * MINUTE;
/// One day in milliseconds.
const DAY: i64 = 24 * 60 * MINUTE;
/// Offset of each other room's first message.
const OTHER_ROOMS_FIRST_MESSAGE_MS: i64 = 45 * MINUTE;

fn generated_user_created_at(index: usize) -> i64 {
    BASE_EPOCH_MS + GENERATED_USERS_OFFSET_MS + (index as i64 - 1) * 100
}

// ---------------------------------------------------------------------------------------------
// Deterministic randomness.

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
/// a 64-bit state advanced by a fixed odd constant and mixed by two multiply-xorshift rounds.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `lo..=hi`. The modulo bias is irrelevant for seed data.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }

    /// An index in `0..len` (`len > 0`).
    fn index(&mut self, len: usize) -> usize {
        (self.next_u64() % len as u64) as usize
    }

    /// A random-version UUID string (RFC 9562 §5.4 layout: version nibble 4, variant `10`),
    /// the shape of the `client_message_id` a Campfire client sends.
    fn uuid(&mut self) -> String {
        let hi = (self.next_u64() & !0xF000) | 0x4000;
        let lo = (self.next_u64() & !(0b11 << 62)) | (0b10 << 62);
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            hi >> 32,
            (hi >> 16) & 0xFFFF,
            hi & 0xFFFF,
            lo >> 48,
            lo & 0xFFFF_FFFF_FFFF
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Passwords.

/// Digests of the named users' [`NAMED_PASSWORD`], in [`NAMED_USERS`] order (`None` for bots).
///
/// The inputs are constants, so the result is computed once per process and reused.
fn named_digests() -> anyhow::Result<Arc<Vec<Option<String>>>> {
    static DIGESTS: OnceLock<Arc<Vec<Option<String>>>> = OnceLock::new();
    if let Some(digests) = DIGESTS.get() {
        return Ok(Arc::clone(digests));
    }
    let digests = NAMED_USERS
        .iter()
        .map(|user| {
            user.has_password
                .then(|| {
                    rails_digest(
                        NAMED_PASSWORD,
                        NAMED_BCRYPT_COST,
                        fixed_salt(user.id as u64),
                    )
                })
                .transpose()
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Arc::clone(DIGESTS.get_or_init(|| Arc::new(digests))))
}

/// The one digest of [`GENERATED_PASSWORD`] that every generated user shares.
fn generated_digest(cost: u32) -> anyhow::Result<Arc<str>> {
    Ok(rails_digest(GENERATED_PASSWORD, cost, fixed_salt(GENERATED_SALT_SEED))?.into())
}

/// A 16-byte bcrypt salt that looks random but is the same on every run: two SplitMix64 outputs
/// from a seed derived from `key` (a named user's id, or [`GENERATED_SALT_SEED`]).
fn fixed_salt(key: u64) -> [u8; 16] {
    let mut rng = SplitMix64(PRNG_SEED ^ key.wrapping_mul(0xA24B_AED4_963E_E407));
    let mut salt = [0; 16];
    salt[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
    salt[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
    salt
}

/// A bcrypt digest in the `$2a$` form bcrypt-ruby (Rails' `has_secure_password`) writes.
fn rails_digest(password: &str, cost: u32, salt: [u8; 16]) -> anyhow::Result<String> {
    let parts = bcrypt::hash_with_salt(password, cost, salt)
        .with_context(|| format!("cannot hash a seed password at bcrypt cost {cost}"))?;
    Ok(parts.format_for_version(bcrypt::Version::TwoA))
}

// ---------------------------------------------------------------------------------------------
// The plan: every message and boost, computed before the transaction.

/// One message row (its id is its 1-based position in [`Plan::messages`]).
struct MessageRow {
    room_id: i64,
    creator_id: i64,
    client_message_id: String,
    body: String,
    created_at: i64,
}

/// One boost row.
struct BoostRow {
    message_id: i64,
    booster_id: i64,
    content: &'static str,
    created_at: i64,
}

/// Everything a seed writes besides users and memberships.
struct Plan {
    generated_users: usize,
    messages: Vec<MessageRow>,
    boosts: Vec<BoostRow>,
}

impl Plan {
    fn build(opts: &SeedOptions) -> anyhow::Result<Plan> {
        let mut rng = SplitMix64(PRNG_SEED);
        let mut messages = main_room_messages(&mut rng, opts.users)?;
        messages.extend(other_room_messages(&mut rng)?);
        let boosts = boosts(&mut rng, &messages);
        Ok(Plan {
            generated_users: opts.users,
            messages,
            boosts,
        })
    }

    /// Time of the newest message in `room_id`, if any.
    fn last_message_at(&self, room_id: i64) -> Option<i64> {
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
        .map(|&id| (id, named_user(id).name.to_owned()))
        .collect();
    authors.extend(
        (1..=generated.min(GENERATED_AUTHORS))
            .map(|i| (FIRST_GENERATED_USER_ID + i as i64 - 1, format!("User {i}"))),
    );

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

fn named_user(id: i64) -> &'static NamedUser {
    NAMED_USERS
        .iter()
        .find(|user| user.id == id)
        .expect("named user ids are constants")
}

// ---------------------------------------------------------------------------------------------
// Writing.

/// Inserts every row of the plan, in id order, on the transaction's connection.
async fn write(
    conn: &mut SqliteConnection,
    plan: &Plan,
    named_digests: Arc<Vec<Option<String>>>,
    generated_digest: Arc<str>,
) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO accounts (id, name, join_code, created_at, updated_at) \
         VALUES (1, ?1, ?2, ?3, ?3)",
    )
    .bind(ACCOUNT_NAME)
    .bind(JOIN_CODE)
    .bind(BASE_EPOCH_MS)
    .execute(&mut *conn)
    .await
    .context("cannot insert the account")?;

    insert_users(conn, plan, &named_digests, &generated_digest).await?;
    insert_rooms(conn, plan).await?;
    // Messages before memberships: the `messages_receive` trigger (migration 0003) marks
    // memberships unread as each message arrives, and the seed sets its own unread marks.
    insert_messages(conn, plan).await?;
    insert_memberships(conn, plan).await?;
    insert_boosts(conn, plan).await?;
    Ok(())
}

/// Users in id order: the named people in one statement, then the generated users in chunks of
/// multi-row `VALUES` that all share [`GENERATED_PASSWORD`]'s one digest.
async fn insert_users(
    conn: &mut SqliteConnection,
    plan: &Plan,
    named_digests: &[Option<String>],
    generated_digest: &Arc<str>,
) -> anyhow::Result<()> {
    const COLUMNS: usize = 10;
    let mut query = users_insert();
    query.push_values(
        NAMED_USERS.iter().zip(named_digests),
        |mut row, (user, digest)| {
            let created_at = BASE_EPOCH_MS + NAMED_USERS_OFFSET_MS + user.id * MINUTE;
            row.push_bind(user.id)
                .push_bind(user.name)
                .push_bind(user.email)
                .push_bind(digest.as_deref())
                .push_bind(user.role)
                .push_bind(user.status)
                .push_bind(user.bio)
                .push_bind(user.bot_token)
                .push_bind(created_at)
                .push_bind(created_at);
        },
    );
    query
        .build()
        .execute(&mut *conn)
        .await
        .context("cannot insert the named users")?;

    let indexes: Vec<usize> = (1..=plan.generated_users).collect();
    for chunk in indexes.chunks(MAX_BIND_PARAMETERS / COLUMNS) {
        let mut query = users_insert();
        query.push_values(chunk, |mut row, &i| {
            let created_at = generated_user_created_at(i);
            row.push_bind(FIRST_GENERATED_USER_ID + i as i64 - 1)
                .push_bind(format!("User {i}"))
                .push_bind(format!("user{i}@example.com"))
                .push_bind(Arc::clone(generated_digest))
                .push_bind("member")
                .push_bind("active")
                .push_bind(None::<&str>)
                .push_bind(None::<&str>)
                .push_bind(created_at)
                .push_bind(created_at);
        });
        query
            .build()
            .execute(&mut *conn)
            .await
            .context("cannot insert the generated users")?;
    }
    Ok(())
}

fn users_insert() -> QueryBuilder<Sqlite> {
    QueryBuilder::new(
        "INSERT INTO users (id, name, email_address, password_digest, role, status, bio, \
         bot_token, created_at, updated_at) ",
    )
}

/// Rooms; `updated_at` is the newest message's time (Campfire's `belongs_to :room, touch: true`).
async fn insert_rooms(conn: &mut SqliteConnection, plan: &Plan) -> anyhow::Result<()> {
    for room in &ROOMS {
        let created_at = BASE_EPOCH_MS + room.created_offset_ms;
        let updated_at = plan.last_message_at(room.id).unwrap_or(created_at);
        sqlx::query(
            "INSERT INTO rooms (id, name, kind, creator_id, created_at, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .bind(room.id)
        .bind(room.name)
        .bind(room.kind)
        .bind(ROOM_CREATOR_ID)
        .bind(created_at)
        .bind(updated_at)
        .execute(&mut *conn)
        .await
        .with_context(|| format!("cannot insert room {}", room.id))?;
    }
    Ok(())
}

/// Memberships, room by room in user id order. A membership is created when both its room and
/// its user exist: `max(room.created_at, user.created_at)`.
async fn insert_memberships(conn: &mut SqliteConnection, plan: &Plan) -> anyhow::Result<()> {
    for room in &ROOMS {
        let room_created_at = BASE_EPOCH_MS + room.created_offset_ms;
        let result = match room.members {
            Members::Everyone => sqlx::query(
                "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
                     SELECT ?1, id, ?2, max(?3, created_at), max(?3, created_at) \
                     FROM users ORDER BY id",
            )
            .bind(room.id)
            .bind(room.involvement)
            .bind(room_created_at)
            .execute(&mut *conn)
            .await,
            Members::NotDeactivated => sqlx::query(
                "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) \
                     SELECT ?1, id, ?2, max(?3, created_at), max(?3, created_at) \
                     FROM users WHERE status <> 'deactivated' ORDER BY id",
            )
            .bind(room.id)
            .bind(room.involvement)
            .bind(room_created_at)
            .execute(&mut *conn)
            .await,
            Members::Only(ids) => {
                let mut query = QueryBuilder::<Sqlite>::new(
                    "INSERT INTO memberships (room_id, user_id, involvement, created_at, updated_at) ",
                );
                query.push_values(ids, |mut row, &user_id| {
                    let user_created_at = BASE_EPOCH_MS + NAMED_USERS_OFFSET_MS + user_id * MINUTE;
                    let created_at = room_created_at.max(user_created_at);
                    row.push_bind(room.id)
                        .push_bind(user_id)
                        .push_bind(room.involvement)
                        .push_bind(created_at)
                        .push_bind(created_at);
                });
                query.build().execute(&mut *conn).await
            }
        };
        result.with_context(|| format!("cannot insert the members of room {}", room.id))?;
    }

    for (room_id, user_id) in UNREAD {
        let unread_at = plan
            .messages
            .iter()
            .filter(|m| m.room_id == room_id && m.creator_id != user_id)
            .map(|m| m.created_at)
            .max();
        sqlx::query("UPDATE memberships SET unread_at = ?1 WHERE room_id = ?2 AND user_id = ?3")
            .bind(unread_at)
            .bind(room_id)
            .bind(user_id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

async fn insert_messages(conn: &mut SqliteConnection, plan: &Plan) -> anyhow::Result<()> {
    const COLUMNS: usize = 7;
    let numbered: Vec<(i64, &MessageRow)> = plan
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| (i as i64 + 1, m))
        .collect();
    for chunk in numbered.chunks(MAX_BIND_PARAMETERS / COLUMNS) {
        let mut query = QueryBuilder::<Sqlite>::new(
            "INSERT INTO messages (id, room_id, creator_id, client_message_id, body, created_at, \
             updated_at) ",
        );
        query.push_values(chunk, |mut row, (id, message)| {
            row.push_bind(*id)
                .push_bind(message.room_id)
                .push_bind(message.creator_id)
                .push_bind(message.client_message_id.as_str())
                .push_bind(message.body.as_str())
                .push_bind(message.created_at)
                .push_bind(message.created_at);
        });
        query
            .build()
            .execute(&mut *conn)
            .await
            .context("cannot insert the messages")?;
    }
    Ok(())
}

async fn insert_boosts(conn: &mut SqliteConnection, plan: &Plan) -> anyhow::Result<()> {
    if plan.boosts.is_empty() {
        return Ok(());
    }
    let mut query = QueryBuilder::<Sqlite>::new(
        "INSERT INTO boosts (id, message_id, booster_id, content, created_at, updated_at) ",
    );
    query.push_values(plan.boosts.iter().enumerate(), |mut row, (i, boost)| {
        row.push_bind(i as i64 + 1)
            .push_bind(boost.message_id)
            .push_bind(boost.booster_id)
            .push_bind(boost.content)
            .push_bind(boost.created_at)
            .push_bind(boost.created_at);
    });
    query
        .build()
        .execute(&mut *conn)
        .await
        .context("cannot insert the boosts")?;
    Ok(())
}
