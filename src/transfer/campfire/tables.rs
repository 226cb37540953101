//! Campfire's rows as Hearth's: one [`Table`] per table Hearth has, each an `INSERT … SELECT`
//! from the attached Campfire database (schema [`SCHEMA`]) with every difference of the two
//! schemas written into its expressions, and the checks of the values it reads.
//!
//! What changes on the way (Campfire's `db/schema.rb` at 2025_12_12_154340 against Hearth's
//! `migrations/`):
//!
//! | Campfire | Hearth |
//! |---|---|
//! | `datetime(6)` text, UTC (`2025-11-03 09:30:00.123456`) | integer milliseconds since the epoch (rounded), but for Active Storage's tables, which keep Rails' text |
//! | `users.role`, `users.status`: integer enums (`member administrator bot`, `active deactivated banned`) | their names |
//! | `rooms.type`: STI class (`Rooms::Open`, `Rooms::Closed`, `Rooms::Direct`) | `rooms.kind` (`open`, `closed`, `direct`) |
//! | `rooms.creator_id` not null, no foreign key | null when that user is gone |
//! | `memberships.involvement` nullable | `mentions` when null |
//! | `memberships.connections`, `connected_at` (live presence) | 0 and null: a stopped server has no connection |
//! | `messages` without a body; `action_text_rich_texts` (`Message`/`body`) | `messages.body` (and `action_text_rich_texts` a view over it); `plain_text` derived |
//! | `messages.client_message_id` not unique | unique: a later duplicate gets `-<id>` (as migration 0008) |
//! | `accounts.settings` JSON, nullable; `custom_styles` as typed | `{}` when null; the styles sanitized as Hearth stores them |
//! | `accounts.singleton_guard` | no place (Hearth keeps one account by its queries) |
//! | `searches`, `webhooks`, `push_subscriptions`: no uniqueness, nullable keys | unique per user (and query, endpoint): the newest row kept; rows without url or keys, and push endpoints Hearth's form refuses (not https, internal addresses), have no place |
//! | `active_storage_attachments`: a blob may be attached twice | once (migration 0016): the first attachment kept |
//! | rows naming a user, room or message that is gone (no foreign key in Campfire) | no place (Hearth's foreign keys) |
//! | `action_text_rich_texts` other than a message's body; `schema_migrations`, `ar_internal_metadata` | no place |
//! | `message_search_index` (FTS5, porter) | rebuilt from the bodies (FTS5, unicode61) |

use rusqlite::Connection;

use super::source::SCHEMA;

/// One of Hearth's tables filled from Campfire's table of the same name.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// The table's name, in both databases.
    pub name: &'static str,
    /// Hearth's columns written, in order.
    pub columns: &'static str,
    /// Campfire's expressions over the row `s` (and `r` for messages), in the same order.
    pub values: &'static str,
    /// What the rows come from: `campfire.<name> AS s` unless given.
    pub from: Option<&'static str>,
    /// Which of Campfire's rows have a place in Hearth (over `s`).
    pub kept: &'static str,
    /// Why the others have none, for the report.
    pub skipped_because: &'static str,
    /// Campfire's datetime columns the row reads (checked before anything is written).
    pub datetimes: &'static [&'static str],
}

impl Table {
    /// `FROM … WHERE <kept>`.
    pub fn kept_rows(&self) -> String {
        format!("{} WHERE {}", self.source_rows(), self.kept)
    }

    fn source_rows(&self) -> String {
        match self.from {
            Some(from) => format!("FROM {from}"),
            None => format!("FROM {SCHEMA}.{} AS s", self.name),
        }
    }

    /// Copies the kept rows into Hearth's table (in the main schema); returns how many.
    ///
    /// # Errors
    /// An SQL error (a constraint of Hearth's schema the checks did not foresee).
    pub fn copy(&self, conn: &Connection) -> rusqlite::Result<usize> {
        let sql = format!(
            "INSERT INTO main.{} ({}) SELECT {} {} ORDER BY s.id",
            self.name,
            self.columns,
            self.values,
            self.kept_rows()
        );
        conn.execute(&sql, [])
    }
}

/// Milliseconds since the epoch of a Rails `datetime` column (UTC text), in SQL.
macro_rules! ms {
    ($col:literal) => {
        concat!(
            "CAST(round((julianday(",
            $col,
            ") - 2440587.5) * 86400000.0) AS INTEGER)"
        )
    };
}

/// Messages that have a place in Hearth: their room and creator exist.
macro_rules! kept_messages {
    () => {
        "SELECT id FROM campfire.messages WHERE room_id IN (SELECT id FROM campfire.rooms) \
         AND creator_id IN (SELECT id FROM campfire.users)"
    };
}

/// Hearth's tables in the order they are filled (parents before children).
pub const TABLES: &[Table] = &[
    Table {
        name: "accounts",
        columns: "id, name, join_code, settings, custom_styles, created_at, updated_at",
        values: concat!(
            "s.id, s.name, s.join_code, COALESCE(json(s.settings), '{}'), s.custom_styles, ",
            ms!("s.created_at"), ", ", ms!("s.updated_at")
        ),
        from: None,
        kept: "1",
        skipped_because: "",
        datetimes: &["created_at", "updated_at"],
    },
    Table {
        name: "users",
        columns: "id, name, email_address, password_digest, role, status, bio, bot_token, created_at, updated_at",
        values: concat!(
            "s.id, s.name, s.email_address, s.password_digest, ",
            "CASE s.role WHEN 0 THEN 'member' WHEN 1 THEN 'administrator' WHEN 2 THEN 'bot' END, ",
            "CASE s.status WHEN 0 THEN 'active' WHEN 1 THEN 'deactivated' WHEN 2 THEN 'banned' END, ",
            "s.bio, s.bot_token, ", ms!("s.created_at"), ", ", ms!("s.updated_at")
        ),
        from: None,
        kept: "1",
        skipped_because: "",
        datetimes: &["created_at", "updated_at"],
    },
    Table {
        name: "rooms",
        columns: "id, name, kind, creator_id, created_at, updated_at",
        values: concat!(
            "s.id, s.name, ",
            "CASE s.type WHEN 'Rooms::Open' THEN 'open' WHEN 'Rooms::Closed' THEN 'closed' WHEN 'Rooms::Direct' THEN 'direct' END, ",
            "CASE WHEN s.creator_id IN (SELECT id FROM campfire.users) THEN s.creator_id END, ",
            ms!("s.created_at"), ", ", ms!("s.updated_at")
        ),
        from: None,
        kept: "1",
        skipped_because: "",
        datetimes: &["created_at", "updated_at"],
    },
    Table {
        name: "sessions",
        columns: "id, user_id, token, ip_address, user_agent, last_active_at, created_at, updated_at",
        values: concat!(
            "s.id, s.user_id, s.token, s.ip_address, s.user_agent, ",
            ms!("s.last_active_at"), ", ", ms!("s.created_at"), ", ", ms!("s.updated_at")
        ),
        from: None,
        kept: "s.user_id IN (SELECT id FROM campfire.users)",
        skipped_because: "its user is gone",
        datetimes: &["last_active_at", "created_at", "updated_at"],
    },
    Table {
        name: "memberships",
        columns: "id, room_id, user_id, involvement, unread_at, connections, connected_at, created_at, updated_at",
        values: concat!(
            "s.id, s.room_id, s.user_id, COALESCE(s.involvement, 'mentions'), ",
            ms!("s.unread_at"), ", 0, NULL, ", ms!("s.created_at"), ", ", ms!("s.updated_at")
        ),
        from: None,
        kept: "s.room_id IN (SELECT id FROM campfire.rooms) AND s.user_id IN (SELECT id FROM campfire.users)",
        skipped_because: "its room or user is gone",
        datetimes: &["unread_at", "created_at", "updated_at"],
    },
    Table {
        name: "messages",
        columns: "id, room_id, creator_id, client_message_id, body, created_at, updated_at",
        values: concat!(
            "s.id, s.room_id, s.creator_id, ",
            "CASE WHEN s.copy = 1 THEN s.client_message_id ELSE s.client_message_id || '-' || s.id END, ",
            "COALESCE(r.body, ''), ", ms!("s.created_at"), ", ", ms!("s.updated_at")
        ),
        from: Some(
            "(SELECT m.*, ROW_NUMBER() OVER (PARTITION BY m.client_message_id ORDER BY m.id) AS copy \
               FROM campfire.messages AS m) AS s \
             LEFT JOIN campfire.action_text_rich_texts AS r \
               ON r.record_type = 'Message' AND r.record_id = s.id AND r.name = 'body'",
        ),
        kept: concat!("s.id IN (", kept_messages!(), ")"),
        skipped_because: "its room or creator is gone",
        datetimes: &["created_at", "updated_at"],
    },
    Table {
        name: "boosts",
        columns: "id, message_id, booster_id, content, created_at, updated_at",
        values: concat!(
            "s.id, s.message_id, s.booster_id, s.content, ",
            ms!("s.created_at"), ", ", ms!("s.updated_at")
        ),
        from: None,
        kept: concat!(
            "s.booster_id IN (SELECT id FROM campfire.users) AND s.message_id IN (",
            kept_messages!(),
            ")"
        ),
        skipped_because: "its message or booster is gone",
        datetimes: &["created_at", "updated_at"],
    },
    Table {
        name: "bans",
        columns: "id, user_id, ip_address, created_at, updated_at",
        values: concat!("s.id, s.user_id, s.ip_address, ", ms!("s.created_at"), ", ", ms!("s.updated_at")),
        from: None,
        kept: "s.user_id IN (SELECT id FROM campfire.users)",
        skipped_because: "its user is gone",
        datetimes: &["created_at", "updated_at"],
    },
    Table {
        name: "searches",
        columns: "id, user_id, query, created_at, updated_at",
        values: concat!("s.id, s.user_id, s.query, ", ms!("s.created_at"), ", ", ms!("s.updated_at")),
        from: None,
        kept: "s.user_id IN (SELECT id FROM campfire.users) AND s.id IN \
               (SELECT id FROM (SELECT id, ROW_NUMBER() OVER \
                  (PARTITION BY user_id, query ORDER BY updated_at DESC, id DESC) AS n \
                  FROM campfire.searches) WHERE n = 1)",
        skipped_because: "its user is gone, or a newer row has the same query",
        datetimes: &["created_at", "updated_at"],
    },
    Table {
        name: "webhooks",
        columns: "id, user_id, url, created_at, updated_at",
        values: concat!("s.id, s.user_id, s.url, ", ms!("s.created_at"), ", ", ms!("s.updated_at")),
        from: None,
        kept: "s.user_id IN (SELECT id FROM campfire.users) AND s.id IN \
               (SELECT id FROM (SELECT id, ROW_NUMBER() OVER \
                  (PARTITION BY user_id ORDER BY updated_at DESC, id DESC) AS n \
                  FROM campfire.webhooks WHERE url IS NOT NULL) WHERE n = 1)",
        skipped_because: "its bot is gone, it has no url, or the bot has a newer one",
        datetimes: &["created_at", "updated_at"],
    },
    Table {
        name: "push_subscriptions",
        columns: "id, user_id, endpoint, p256dh_key, auth_key, user_agent, created_at, updated_at",
        values: concat!(
            "s.id, s.user_id, s.endpoint, s.p256dh_key, s.auth_key, s.user_agent, ",
            ms!("s.created_at"), ", ", ms!("s.updated_at")
        ),
        from: None,
        kept: "s.user_id IN (SELECT id FROM campfire.users) AND s.id IN \
               (SELECT id FROM (SELECT id, ROW_NUMBER() OVER \
                  (PARTITION BY user_id, endpoint ORDER BY updated_at DESC, id DESC) AS n \
                  FROM campfire.push_subscriptions \
                  WHERE endpoint IS NOT NULL AND p256dh_key IS NOT NULL AND auth_key IS NOT NULL \
                    AND id NOT IN (SELECT id FROM temp.campfire_push_refused)) \
                WHERE n = 1)",
        skipped_because: "its user is gone, it lacks an endpoint or key, its endpoint or keys are \
                          ones Hearth refuses (not https, an internal address), or a newer row has \
                          the same endpoint",
        datetimes: &["created_at", "updated_at"],
    },
    Table {
        name: "active_storage_blobs",
        columns: "id, key, filename, content_type, metadata, service_name, byte_size, checksum, created_at",
        values: "s.id, s.key, s.filename, s.content_type, s.metadata, s.service_name, s.byte_size, s.checksum, s.created_at",
        from: None,
        kept: "1",
        skipped_because: "",
        datetimes: &["created_at"],
    },
    Table {
        name: "active_storage_attachments",
        columns: "id, name, record_type, record_id, blob_id, created_at",
        values: "s.id, s.name, s.record_type, s.record_id, s.blob_id, s.created_at",
        from: None,
        kept: "s.id IN (SELECT MIN(id) FROM campfire.active_storage_attachments GROUP BY blob_id)",
        skipped_because: "a second attachment of a blob (Hearth attaches a blob once)",
        datetimes: &["created_at"],
    },
    Table {
        name: "active_storage_variant_records",
        columns: "id, blob_id, variation_digest",
        values: "s.id, s.blob_id, s.variation_digest",
        from: None,
        kept: "1",
        skipped_because: "",
        datetimes: &[],
    },
];

/// The message bodies of `action_text_rich_texts` that have a place in Hearth (a kept
/// message's `body`), as `FROM … WHERE …`.
pub const RICH_TEXTS_KEPT: &str = concat!(
    "FROM campfire.action_text_rich_texts AS s WHERE s.record_type = 'Message' AND s.name = 'body' \
     AND COALESCE(s.body, '') <> '' AND s.record_id IN (",
    kept_messages!(),
    ")"
);

/// Why the other rich texts have none.
pub const RICH_TEXTS_SKIPPED_BECAUSE: &str =
    "not a message's body, an empty one, or its message is gone";

/// Campfire's tables and the columns this import reads of each.
pub const READ: &[(&str, &[&str])] = &[
    (
        "accounts",
        &[
            "id",
            "name",
            "join_code",
            "custom_styles",
            "settings",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "users",
        &[
            "id",
            "name",
            "email_address",
            "password_digest",
            "role",
            "status",
            "bio",
            "bot_token",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "rooms",
        &[
            "id",
            "name",
            "type",
            "creator_id",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "sessions",
        &[
            "id",
            "user_id",
            "token",
            "ip_address",
            "user_agent",
            "last_active_at",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "memberships",
        &[
            "id",
            "room_id",
            "user_id",
            "involvement",
            "unread_at",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "messages",
        &[
            "id",
            "room_id",
            "creator_id",
            "client_message_id",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "action_text_rich_texts",
        &["id", "name", "body", "record_type", "record_id"],
    ),
    (
        "boosts",
        &[
            "id",
            "message_id",
            "booster_id",
            "content",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "bans",
        &["id", "user_id", "ip_address", "created_at", "updated_at"],
    ),
    (
        "searches",
        &["id", "user_id", "query", "created_at", "updated_at"],
    ),
    (
        "webhooks",
        &["id", "user_id", "url", "created_at", "updated_at"],
    ),
    (
        "push_subscriptions",
        &[
            "id",
            "user_id",
            "endpoint",
            "p256dh_key",
            "auth_key",
            "user_agent",
            "created_at",
            "updated_at",
        ],
    ),
    (
        "active_storage_blobs",
        &[
            "id",
            "key",
            "filename",
            "content_type",
            "metadata",
            "service_name",
            "byte_size",
            "checksum",
            "created_at",
        ],
    ),
    (
        "active_storage_attachments",
        &[
            "id",
            "name",
            "record_type",
            "record_id",
            "blob_id",
            "created_at",
        ],
    ),
    (
        "active_storage_variant_records",
        &["id", "blob_id", "variation_digest"],
    ),
];

/// Values Hearth's schema would refuse or misread, as (table, column, condition over `s`,
/// what is wrong): each is checked on every row before anything is written.
pub const VALUE_CHECKS: &[(&str, &str, &str, &str)] = &[
    ("users", "role", "s.role IS NOT 0 AND s.role IS NOT 1 AND s.role IS NOT 2", "is not a role Campfire has (0 member, 1 administrator, 2 bot)"),
    ("users", "status", "s.status IS NOT 0 AND s.status IS NOT 1 AND s.status IS NOT 2", "is not a status Campfire has (0 active, 1 deactivated, 2 banned)"),
    ("rooms", "type", "s.type IS NULL OR s.type NOT IN ('Rooms::Open', 'Rooms::Closed', 'Rooms::Direct')", "is not a room type Campfire has (Rooms::Open, Rooms::Closed, Rooms::Direct)"),
    ("memberships", "involvement", "s.involvement NOT IN ('invisible', 'nothing', 'mentions', 'everything')", "is not an involvement Campfire has (invisible, nothing, mentions, everything)"),
    ("accounts", "settings", "s.settings IS NOT NULL AND (NOT json_valid(s.settings) OR json_type(s.settings) <> 'object')", "is not a JSON object"),
    ("boosts", "content", "s.content IS NULL OR length(s.content) > 16", "is not a boost of at most 16 characters"),
    ("active_storage_blobs", "service_name", "s.service_name IS NOT 'local'", "is not Campfire's disk service (local): its file is not in this directory"),
    ("messages", "client_message_id", "s.client_message_id IS NULL", "is missing"),
];

/// The condition that a Rails datetime column holds something else than Rails' text.
pub fn not_a_datetime(column: &str) -> String {
    format!(
        "s.{column} IS NOT NULL AND (typeof(s.{column}) <> 'text' OR julianday(s.{column}) IS NULL)"
    )
}
