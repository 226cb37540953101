//! The seeded rooms, who belongs to them, and which memberships start unread.

use super::{MAIN_ROOM_ID, MINUTE};
use crate::db::{Involvement, RoomKind};

/// How members of a room are chosen.
#[derive(Clone, Copy)]
pub(super) enum Members {
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
pub(super) struct RoomSeed {
    pub(super) id: i64,
    /// Key used by `seed/other_rooms.txt`.
    pub(super) key: &'static str,
    pub(super) name: Option<&'static str>,
    pub(super) kind: RoomKind,
    pub(super) members: Members,
    /// Campfire: rooms default to `mentions`, direct rooms to `everything`.
    pub(super) involvement: Involvement,
    /// Offset of `created_at` from [`BASE_EPOCH_MS`](super::BASE_EPOCH_MS).
    pub(super) created_offset_ms: i64,
}

pub(super) const ROOMS: [RoomSeed; 6] = [
    RoomSeed {
        id: MAIN_ROOM_ID,
        key: "all-talk",
        name: Some("All Talk"),
        kind: RoomKind::Open,
        members: Members::Everyone,
        involvement: Involvement::Mentions,
        created_offset_ms: 0,
    },
    RoomSeed {
        id: 2,
        key: "pets",
        name: Some("Pets"),
        kind: RoomKind::Open,
        members: Members::NotDeactivated,
        involvement: Involvement::Mentions,
        created_offset_ms: 5 * MINUTE,
    },
    RoomSeed {
        id: 3,
        key: "hq",
        name: Some("HQ"),
        kind: RoomKind::Open,
        members: Members::NotDeactivated,
        involvement: Involvement::Mentions,
        created_offset_ms: 6 * MINUTE,
    },
    RoomSeed {
        id: 4,
        key: "designers",
        name: Some("Designers"),
        kind: RoomKind::Closed,
        members: Members::Only(&[1, 2, 3, 4]),
        involvement: Involvement::Mentions,
        created_offset_ms: 7 * MINUTE,
    },
    RoomSeed {
        id: 5,
        key: "direct-jason",
        name: None,
        kind: RoomKind::Direct,
        members: Members::Only(&[1, 2]),
        involvement: Involvement::Everything,
        created_offset_ms: 8 * MINUTE,
    },
    RoomSeed {
        id: 6,
        key: "direct-jz",
        name: None,
        kind: RoomKind::Direct,
        members: Members::Only(&[1, 3]),
        involvement: Involvement::Everything,
        created_offset_ms: 9 * MINUTE,
    },
];

/// The creator of every seeded room (David, the administrator).
pub(super) const ROOM_CREATOR_ID: i64 = 1;

/// Memberships left unread: `(room id, user id)`. `unread_at` becomes the time of the room's
/// last message not written by that user, as Campfire's `Room#receive` would have set it.
/// Every other membership is read (`unread_at` NULL).
pub(super) const UNREAD: [(i64, i64); 3] = [(3, 2), (4, 4), (6, 3)];
