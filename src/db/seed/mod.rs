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
//! | 8… | generated first and last names ([`generated_user_name`]) | `user1@example.com` … | member | active |
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
//! [`NAMED_BCRYPT_COST`], the cost of every password Hearth hashes
//! ([`crate::db::users::PASSWORD_BCRYPT_COST`], 12, Rails' production cost), so signing in
//! with a wrong password takes as long for them as for anyone. Generated users all share ONE digest of [`GENERATED_PASSWORD`], made
//! once per run at [`SeedOptions::generated_bcrypt_cost`] (default 4, the bcrypt minimum): that
//! is what lets 10,000 users seed in well under a few seconds. The shared digest and the low cost
//! are deliberate and only fit load-test accounts.
//!
//! # Speed
//!
//! The whole seed runs in one `BEGIN IMMEDIATE` transaction on one connection. Users go in with
//! multi-row `INSERT … VALUES` statements (each chunk reuses the connection's cached prepared
//! statement), and open-room memberships with one `INSERT … SELECT … FROM users` per room.

mod people;
mod plan;
mod rng;
mod rooms;
mod write;

use anyhow::{bail, Context as _};
use sqlx::SqlitePool;

pub use people::generated_user_name;
use people::{generated_digest, named_digests, NAMED_USERS};
use plan::Plan;
use rooms::ROOMS;

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

/// bcrypt cost of the named users' digests: the one cost of every password digest
/// ([`crate::db::users::PASSWORD_BCRYPT_COST`]).
pub const NAMED_BCRYPT_COST: u32 = crate::db::users::PASSWORD_BCRYPT_COST;

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
        Self {
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

    write::write(&mut tx, &plan, named_digests, generated_digest).await?;
    tx.commit().await.context("cannot commit the seed")?;
    super::upkeep::index_messages(pool)
        .await
        .context("cannot index the seeded messages for search")?;

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

/// The seed's published credentials that still work in this database, each as a sentence
/// naming it: the join code [`JOIN_CODE`], Bender's bot token [`BENDER_BOT_TOKEN`], a named
/// person's [`NAMED_PASSWORD`] and a generated user's [`GENERATED_PASSWORD`]. Empty for a
/// database that never was seeded, or whose seeded credentials were all changed. A production
/// server refuses to start while any is left (`state::AppState::build`): they are printed in
/// the README and in this module.
///
/// # Errors
///
/// Any SQL error, or the password-checking task failing.
pub async fn demo_credentials(pool: &SqlitePool) -> anyhow::Result<Vec<String>> {
    let mut found = Vec::new();
    let join: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM accounts WHERE join_code = ?)")
            .bind(JOIN_CODE)
            .fetch_one(pool)
            .await?;
    if join {
        found.push(format!(
            "the demo join code {JOIN_CODE} (POST /account/join_code makes a new one)"
        ));
    }
    let bot: Option<i64> = sqlx::query_scalar("SELECT id FROM users WHERE bot_token = ?")
        .bind(BENDER_BOT_TOKEN)
        .fetch_optional(pool)
        .await?;
    if let Some(id) = bot {
        found.push(format!("the demo bot key {id}-{BENDER_BOT_TOKEN} (PATCH /account/bots/{id}/key makes a new one)"));
    }
    let named: Vec<&str> = NAMED_USERS
        .iter()
        .filter_map(|u| u.email.filter(|_| u.has_password))
        .collect();
    let mut candidates: Vec<(String, String, &'static str)> = Vec::new();
    for email in named {
        let digest: Option<String> = sqlx::query_scalar(
            "SELECT password_digest FROM users WHERE email_address = ? AND password_digest IS NOT NULL",
        )
        .bind(email)
        .fetch_optional(pool)
        .await?;
        if let Some(digest) = digest {
            candidates.push((email.to_owned(), digest, NAMED_PASSWORD));
        }
    }
    // Generated users share one digest per seed run: a few distinct ones cover them all.
    let generated: Vec<(String, String)> = sqlx::query_as(
        "SELECT MIN(email_address), password_digest FROM users \
         WHERE email_address LIKE 'user%@example.com' AND password_digest IS NOT NULL \
         GROUP BY password_digest LIMIT 4",
    )
    .fetch_all(pool)
    .await?;
    candidates.extend(
        generated
            .into_iter()
            .map(|(e, d)| (e, d, GENERATED_PASSWORD)),
    );
    let working = tokio::task::spawn_blocking(move || {
        candidates
            .into_iter()
            .filter(|(_, digest, password)| bcrypt::verify(password, digest).unwrap_or(false))
            .map(|(email, _, password)| (email, password))
            .collect::<Vec<_>>()
    })
    .await
    .context("the password checking task failed")?;
    for (email, password) in working {
        found.push(format!("the demo password {password:?} of {email}"));
    }
    Ok(found)
}

// ---------------------------------------------------------------------------------------------
// The seed's clock: offsets from [`BASE_EPOCH_MS`], in milliseconds.

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
