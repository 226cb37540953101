-- no-transaction
-- Ids of users, rooms and messages are never handed out twice (SQLite's AUTOINCREMENT): a
-- deleted room's id must not name the next room, or a subscription, cache entry or link kept
-- for the old room would reach the new one. SQLite cannot add AUTOINCREMENT to a table, so
-- each table is rebuilt (SQLite's "making other kinds of table schema changes" procedure),
-- keeping every row, index and trigger. Foreign keys are off while the old tables are dropped
-- (a drop would otherwise cascade into memberships, boosts and sessions); legacy renaming
-- keeps the other tables' references, triggers and views pointing at the names they use.
PRAGMA foreign_keys = OFF;
PRAGMA legacy_alter_table = ON;
BEGIN IMMEDIATE;

CREATE TABLE new_users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    email_address TEXT,
    password_digest TEXT,
    role TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('member', 'administrator', 'bot')),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deactivated', 'banned')),
    bio TEXT,
    bot_token TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
INSERT INTO new_users (id, name, email_address, password_digest, role, status, bio, bot_token,
                       created_at, updated_at)
SELECT id, name, email_address, password_digest, role, status, bio, bot_token, created_at,
       updated_at
  FROM users;
DROP TABLE users;
ALTER TABLE new_users RENAME TO users;
CREATE UNIQUE INDEX index_users_on_email_address ON users (email_address);
CREATE UNIQUE INDEX index_users_on_bot_token ON users (bot_token);

CREATE TABLE new_rooms (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('open', 'closed', 'direct')),
    creator_id INTEGER REFERENCES users (id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
INSERT INTO new_rooms (id, name, kind, creator_id, created_at, updated_at)
SELECT id, name, kind, creator_id, created_at, updated_at FROM rooms;
DROP TABLE rooms;
ALTER TABLE new_rooms RENAME TO rooms;

CREATE TABLE new_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    room_id INTEGER NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
    creator_id INTEGER NOT NULL REFERENCES users (id),
    client_message_id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
INSERT INTO new_messages (id, room_id, creator_id, client_message_id, body, created_at,
                          updated_at)
SELECT id, room_id, creator_id, client_message_id, body, created_at, updated_at FROM messages;
DROP TABLE messages;
ALTER TABLE new_messages RENAME TO messages;
CREATE INDEX index_messages_on_room_id_and_created_at ON messages (room_id, created_at);
CREATE INDEX index_messages_on_room_id_and_updated_at ON messages (room_id, updated_at);
CREATE INDEX index_messages_on_creator_id ON messages (creator_id);
CREATE UNIQUE INDEX index_messages_on_client_message_id ON messages (client_message_id);

-- The triggers on messages went with the old table (as 0003, 0007 and 0009 left them).
CREATE TRIGGER messages_receive AFTER INSERT ON messages
BEGIN
    -- MAX: a post whose timestamp is older than the last touch never moves the room back.
    UPDATE rooms SET updated_at = MAX(updated_at, NEW.created_at) WHERE id = NEW.room_id;
    UPDATE memberships SET unread_at = NEW.created_at, updated_at = NEW.created_at
     WHERE room_id = NEW.room_id
       AND user_id != NEW.creator_id
       AND involvement != 'invisible'
       AND unread_at IS NULL
       AND (connected_at IS NULL OR connected_at < NEW.created_at - 60000);
END;

CREATE TRIGGER message_changes_insert AFTER INSERT ON messages
BEGIN
    INSERT INTO message_changes (room_id, message_id, client_message_id, action)
    VALUES (NEW.room_id, NEW.id, NEW.client_message_id, 'append');
END;

CREATE TRIGGER message_changes_update AFTER UPDATE ON messages
BEGIN
    INSERT INTO message_changes (room_id, message_id, client_message_id, action)
    VALUES (NEW.room_id, NEW.id, NEW.client_message_id, 'replace');
END;

CREATE TRIGGER message_changes_delete AFTER DELETE ON messages
BEGIN
    INSERT INTO message_changes (room_id, message_id, client_message_id, action)
    VALUES (OLD.room_id, OLD.id, OLD.client_message_id, 'remove');
END;

CREATE TRIGGER message_search_index_update AFTER UPDATE OF body ON messages
WHEN NEW.id <= (SELECT indexed_through FROM message_search_progress)
BEGIN
    DELETE FROM message_search_index WHERE rowid = OLD.id;
    INSERT INTO message_search_index (rowid, body)
    SELECT id, body FROM message_search_texts WHERE id = NEW.id;
END;

CREATE TRIGGER message_search_index_delete AFTER DELETE ON messages
WHEN OLD.id <= (SELECT indexed_through FROM message_search_progress)
BEGIN
    DELETE FROM message_search_index WHERE rowid = OLD.id;
    -- Ids are not reused any more; the mark still follows the newest message down, as
    -- before, which indexes nothing twice.
    UPDATE message_search_progress
       SET indexed_through = (SELECT COALESCE(MAX(id), 0) FROM messages)
     WHERE indexed_through > (SELECT COALESCE(MAX(id), 0) FROM messages);
END;

COMMIT;
PRAGMA legacy_alter_table = OFF;
PRAGMA foreign_keys = ON;
