//! The named people (Campfire's fixture names), the generated users' times, and every
//! password digest.

use std::sync::{Arc, OnceLock};

use anyhow::Context as _;

use super::rng::{SplitMix64, PRNG_SEED};
use super::{
    BASE_EPOCH_MS, BENDER_BOT_TOKEN, GENERATED_PASSWORD, GENERATED_USERS_OFFSET_MS,
    NAMED_BCRYPT_COST, NAMED_PASSWORD,
};
use crate::db::{Role, Status};

/// Salt seed of the generated users' shared digest (see [`fixed_salt`]).
const GENERATED_SALT_SEED: u64 = u64::MAX;
/// One named user row.
pub(super) struct NamedUser {
    pub(super) id: i64,
    /// Key used by `seed/other_rooms.txt` (the Campfire fixture name).
    pub(super) key: &'static str,
    pub(super) name: &'static str,
    pub(super) email: Option<&'static str>,
    pub(super) role: Role,
    pub(super) status: Status,
    pub(super) bio: Option<&'static str>,
    pub(super) bot_token: Option<&'static str>,
    /// Whether the user has a password (bots have none: they post with their bot key).
    pub(super) has_password: bool,
}

pub(super) const NAMED_USERS: [NamedUser; 7] = [
    NamedUser {
        id: 1,
        key: "david",
        name: "David",
        email: Some("david@example.com"),
        role: Role::Administrator,
        status: Status::Active,
        bio: Some("Runs the place. Mostly harmless."),
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 2,
        key: "jason",
        name: "Jason",
        email: Some("jason@example.com"),
        role: Role::Member,
        status: Status::Active,
        bio: Some("Ships on Fridays."),
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 3,
        key: "jz",
        name: "JZ",
        email: Some("jz@example.com"),
        role: Role::Member,
        status: Status::Active,
        bio: Some("Pixels and coffee."),
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 4,
        key: "kevin",
        name: "Kevin",
        email: Some("kevin@example.com"),
        role: Role::Member,
        status: Status::Active,
        bio: None,
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 5,
        key: "bender",
        name: "Bender",
        email: None,
        role: Role::Bot,
        status: Status::Active,
        bio: Some("Bite my shiny metal webhook."),
        bot_token: Some(BENDER_BOT_TOKEN),
        has_password: false,
    },
    NamedUser {
        id: 6,
        key: "ralph",
        name: "Ralph",
        email: Some("ralph-deactivated-0c2f5e8a-3b1d-4f6e-9a7c-5d8e2b4f1a63@example.com"),
        role: Role::Member,
        status: Status::Deactivated,
        bio: None,
        bot_token: None,
        has_password: true,
    },
    NamedUser {
        id: 7,
        key: "mallory",
        name: "Mallory",
        email: Some("mallory@example.com"),
        role: Role::Member,
        status: Status::Banned,
        bio: None,
        bot_token: None,
        has_password: true,
    },
];

/// Named people who write messages and boosts, by user id.
pub(super) const NAMED_AUTHORS: [i64; 4] = [1, 2, 3, 4];

/// How many generated users (at most) join the named authors of the main room.
pub(super) const GENERATED_AUTHORS: usize = 4;

/// `created_at` of generated user `index` (1-based): 100 ms apart from
/// [`GENERATED_USERS_OFFSET_MS`] on.
pub(super) fn generated_user_created_at(index: usize) -> i64 {
    BASE_EPOCH_MS + GENERATED_USERS_OFFSET_MS + (index as i64 - 1) * 100
}

/// The named user with this id.
pub(super) fn named_user(id: i64) -> Option<&'static NamedUser> {
    NAMED_USERS.iter().find(|user| user.id == id)
}

/// Digests of the named users' [`NAMED_PASSWORD`], in [`NAMED_USERS`] order (`None` for bots).
///
/// The inputs are constants, so the result is computed once per process and reused.
pub(super) fn named_digests() -> anyhow::Result<Arc<Vec<Option<String>>>> {
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
pub(super) fn generated_digest(cost: u32) -> anyhow::Result<Arc<str>> {
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

/// First names of the generated people (a list of our own; [`generated_user_name`]).
const FIRST_NAMES: [&str; 40] = [
    "Ada", "Bilal", "Carmen", "Dmitri", "Esther", "Farid", "Greta", "Hiroshi", "Ines", "Jonas",
    "Keiko", "Luis", "Maren", "Nikhil", "Olga", "Pedro", "Quinn", "Rosa", "Samir", "Tamsin",
    "Umar", "Vera", "Wendell", "Ximena", "Yusuf", "Zara", "Anton", "Beatriz", "Caleb", "Dalia",
    "Emeka", "Freya", "Gustavo", "Hana", "Ivo", "Julia", "Kofi", "Lena", "Mateo", "Noor",
];

/// Last names of the generated people (a list of our own; [`generated_user_name`]).
const LAST_NAMES: [&str; 50] = [
    "Abara",
    "Berg",
    "Castillo",
    "Dubois",
    "Eriksen",
    "Fontaine",
    "Garcia",
    "Haddad",
    "Ito",
    "Jensen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Petrov",
    "Quintero",
    "Rossi",
    "Sato",
    "Tanaka",
    "Ulloa",
    "Varga",
    "Weber",
    "Xu",
    "Yamada",
    "Zielinski",
    "Ahmed",
    "Bianchi",
    "Chen",
    "Dlamini",
    "Esposito",
    "Fischer",
    "Gomez",
    "Horvat",
    "Iqbal",
    "Johansson",
    "Kim",
    "Lopez",
    "Mensah",
    "Novak",
    "Oliveira",
    "Park",
    "Reyes",
    "Silva",
    "Torres",
    "Usman",
    "Vogel",
    "Walsh",
    "Yilmaz",
    "Zhou",
];

/// The name of generated user `index` (1-based): a first and a last name from the lists
/// above, the same for the same index on every run, and distinct for every index. The first
/// name cycles fastest and the last name jumps seven places with it, so neighbours share
/// neither; past the 2,000 pairs the lists make, a number is added (`Ada Abara 2`).
pub fn generated_user_name(index: usize) -> String {
    let i = index.saturating_sub(1);
    let pairs = FIRST_NAMES.len() * LAST_NAMES.len();
    let (round, within) = (i / pairs, i % pairs);
    let (q, r) = (within / FIRST_NAMES.len(), within % FIRST_NAMES.len());
    let name = format!(
        "{} {}",
        FIRST_NAMES[r],
        LAST_NAMES[(q + 7 * r) % LAST_NAMES.len()]
    );
    if round == 0 {
        name
    } else {
        format!("{name} {}", round + 1)
    }
}
