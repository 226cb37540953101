-- Account settings and bot webhooks (Campfire's `accounts.settings`, `accounts.custom_styles`
-- and `webhooks`).
--
-- `settings` is a JSON object, as Campfire's `Account#settings` (a JSON column); the one key read
-- today is `restrict_room_creation_to_administrators` (boolean). `custom_styles` is the account's
-- stylesheet, stored as sanitized when saved.
ALTER TABLE accounts ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
ALTER TABLE accounts ADD COLUMN custom_styles TEXT;

-- One webhook per bot: where Hearth posts the messages that mention the bot or reach it in a
-- direct room (Campfire's `Webhook`, `has_one :webhook`).
CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX index_webhooks_on_user_id ON webhooks (user_id);
