//! Which Hearth rows become which Campfire rows: one [`Table`] per table of Campfire's
//! `db/schema.rb`, as a query over Hearth's database that gives Campfire's columns, in
//! Campfire's order and under Campfire's names.
//!
//! What changes on the way (Campfire's `app/models/`):
//!
//! - times: Hearth's integer milliseconds become Rails' `datetime(6)` text (the [`Table::times`]
//!   columns); Active Storage's tables already hold that text and are copied as they are;
//! - `users.role` and `users.status` become the integers of Rails' integer enums
//!   (`enum :role, %i[ member administrator bot ]`, `enum :status, %i[ active deactivated
//!   banned ]`); `memberships.involvement` stays a string (a string-valued enum);
//! - `rooms.kind` becomes the STI `type` (`Rooms::Open`, `Rooms::Closed`, `Rooms::Direct`);
//!   a room without a creator (Campfire requires one) is given the first administrator;
//! - `messages.body` becomes the Action Text row of the message (`record_type` `Message`,
//!   `name` `body`; its id is the message's, as Hearth's `action_text_rich_texts` view has it);
//! - `active_storage_blobs.service_name` becomes `local`: every file is written to the export's
//!   disk service (`storage/files`, Campfire's `local` service), whichever service held it;
//! - `accounts.singleton_guard`, which Hearth has not, gets Campfire's default 0;
//! - threads, which Campfire has not: a thread's replies become messages of its parent's
//!   room (where they sort after the parent, by time), and the thread's own room and its
//!   memberships (its followers) are left out.
//!
//! Hearth's columns and tables that Campfire has not are left out: `rooms.kind` (as `type`),
//! `messages.body` (as the Action Text row), `messages.plain_text` (as the search index),
//! the tables `message_changes`, `message_search_progress`, `_sqlx_migrations` and Hearth's
//! own `message_search_index` (Campfire's is written again with its tokenizer, see
//! `export::search`).

/// One table of the export.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// Campfire's table.
    pub campfire: &'static str,
    /// A `FROM` of Hearth's database whose row count the export's must equal (a table, a
    /// view or a parenthesized query).
    pub hearth: &'static str,
    /// The query over Hearth's database: Campfire's columns, aliased by their names.
    pub select: &'static str,
    /// Columns holding Hearth's milliseconds, written as Rails' `datetime(6)` text.
    pub times: &'static [&'static str],
    /// Hearth's `sqlite_sequence` entry that Campfire's table continues (the largest id ever
    /// handed out, so that a deleted row's id is not given again), if any.
    pub sequence: Option<&'static str>,
}

const STAMPS: &[&str] = &["created_at", "updated_at"];

/// The tables in the order they are written (a row's references before it).
pub const TABLES: &[Table] = &[
    Table {
        campfire: "accounts",
        hearth: "accounts",
        select: "SELECT id, created_at, custom_styles, join_code, name, settings, \
                 0 AS singleton_guard, updated_at FROM accounts ORDER BY id",
        times: STAMPS,
        sequence: None,
    },
    Table {
        campfire: "users",
        hearth: "users",
        select: "SELECT id, bio, bot_token, created_at, email_address, name, password_digest, \
                 CASE role WHEN 'member' THEN 0 WHEN 'administrator' THEN 1 WHEN 'bot' THEN 2 \
                 END AS role, \
                 CASE status WHEN 'active' THEN 0 WHEN 'deactivated' THEN 1 WHEN 'banned' THEN 2 \
                 END AS status, \
                 updated_at FROM users ORDER BY id",
        times: STAMPS,
        sequence: Some("users"),
    },
    Table {
        campfire: "rooms",
        hearth: "(SELECT id FROM rooms WHERE kind <> 'thread')",
        select: "SELECT id, created_at, \
                 COALESCE(creator_id, \
                   (SELECT MIN(id) FROM users WHERE role = 'administrator'), \
                   (SELECT MIN(id) FROM users)) AS creator_id, \
                 name, \
                 CASE kind WHEN 'open' THEN 'Rooms::Open' WHEN 'closed' THEN 'Rooms::Closed' \
                 WHEN 'direct' THEN 'Rooms::Direct' END AS type, \
                 updated_at FROM rooms WHERE kind <> 'thread' ORDER BY id",
        times: STAMPS,
        sequence: Some("rooms"),
    },
    Table {
        campfire: "memberships",
        hearth: "(SELECT id FROM memberships \
                 WHERE room_id IN (SELECT id FROM rooms WHERE kind <> 'thread'))",
        select: "SELECT id, connected_at, connections, created_at, involvement, room_id, \
                 unread_at, updated_at, user_id FROM memberships \
                 WHERE room_id IN (SELECT id FROM rooms WHERE kind <> 'thread') ORDER BY id",
        times: &["connected_at", "created_at", "unread_at", "updated_at"],
        sequence: None,
    },
    Table {
        campfire: "messages",
        hearth: "messages",
        select: "SELECT id, client_message_id, created_at, creator_id, \
                 COALESCE((SELECT parent_room_id FROM rooms WHERE rooms.id = messages.room_id), \
                   room_id) AS room_id, \
                 updated_at FROM messages ORDER BY id",
        times: STAMPS,
        sequence: Some("messages"),
    },
    Table {
        campfire: "action_text_rich_texts",
        hearth: "action_text_rich_texts",
        select: "SELECT id, body, created_at, 'body' AS name, id AS record_id, \
                 'Message' AS record_type, updated_at FROM messages ORDER BY id",
        times: STAMPS,
        sequence: Some("messages"),
    },
    Table {
        campfire: "boosts",
        hearth: "boosts",
        select: "SELECT id, booster_id, content, created_at, message_id, updated_at \
                 FROM boosts ORDER BY id",
        times: STAMPS,
        sequence: None,
    },
    Table {
        campfire: "sessions",
        hearth: "sessions",
        select: "SELECT id, created_at, ip_address, last_active_at, token, updated_at, \
                 user_agent, user_id FROM sessions ORDER BY id",
        times: &["created_at", "last_active_at", "updated_at"],
        sequence: None,
    },
    Table {
        campfire: "bans",
        hearth: "bans",
        select: "SELECT id, created_at, ip_address, updated_at, user_id FROM bans ORDER BY id",
        times: STAMPS,
        sequence: None,
    },
    Table {
        campfire: "searches",
        hearth: "searches",
        select: "SELECT id, created_at, query, updated_at, user_id FROM searches ORDER BY id",
        times: STAMPS,
        sequence: None,
    },
    Table {
        campfire: "webhooks",
        hearth: "webhooks",
        select: "SELECT id, created_at, updated_at, url, user_id FROM webhooks ORDER BY id",
        times: STAMPS,
        sequence: None,
    },
    Table {
        campfire: "push_subscriptions",
        hearth: "push_subscriptions",
        select: "SELECT id, auth_key, created_at, endpoint, p256dh_key, updated_at, \
                 user_agent, user_id FROM push_subscriptions ORDER BY id",
        times: STAMPS,
        sequence: None,
    },
    Table {
        campfire: "active_storage_blobs",
        hearth: "active_storage_blobs",
        select: "SELECT id, byte_size, checksum, content_type, created_at, filename, key, \
                 metadata, 'local' AS service_name FROM active_storage_blobs ORDER BY id",
        times: &[],
        sequence: Some("active_storage_blobs"),
    },
    Table {
        campfire: "active_storage_attachments",
        hearth: "active_storage_attachments",
        select: "SELECT id, blob_id, created_at, name, record_id, record_type \
                 FROM active_storage_attachments ORDER BY id",
        times: &[],
        sequence: Some("active_storage_attachments"),
    },
    Table {
        campfire: "active_storage_variant_records",
        hearth: "active_storage_variant_records",
        select: "SELECT id, blob_id, variation_digest FROM active_storage_variant_records \
                 ORDER BY id",
        times: &[],
        sequence: Some("active_storage_variant_records"),
    },
];

/// Campfire's full-text index, written from the messages (`export::search`): one row per
/// message, counted against Hearth's `messages`.
pub const SEARCH_INDEX: &str = "message_search_index";
