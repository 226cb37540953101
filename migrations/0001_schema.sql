-- Hearth's schema, after Campfire's db/schema.rb. Times are INTEGER milliseconds since the Unix
-- epoch (UTC). Enums are stored as their Rails names (TEXT) for readability.

CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    join_code TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE users (
    id INTEGER PRIMARY KEY,
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
CREATE UNIQUE INDEX index_users_on_email_address ON users (email_address);
CREATE UNIQUE INDEX index_users_on_bot_token ON users (bot_token);

CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token TEXT NOT NULL,
    ip_address TEXT,
    user_agent TEXT,
    last_active_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX index_sessions_on_token ON sessions (token);
CREATE INDEX index_sessions_on_user_id ON sessions (user_id);

CREATE TABLE rooms (
    id INTEGER PRIMARY KEY,
    name TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('open', 'closed', 'direct')),
    creator_id INTEGER REFERENCES users (id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE memberships (
    id INTEGER PRIMARY KEY,
    room_id INTEGER NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    involvement TEXT NOT NULL DEFAULT 'mentions'
        CHECK (involvement IN ('invisible', 'nothing', 'mentions', 'everything')),
    unread_at INTEGER,
    connections INTEGER NOT NULL DEFAULT 0,
    connected_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX index_memberships_on_room_id_and_user_id ON memberships (room_id, user_id);
CREATE INDEX index_memberships_on_user_id ON memberships (user_id);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    room_id INTEGER NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
    creator_id INTEGER NOT NULL REFERENCES users (id),
    client_message_id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX index_messages_on_room_id_and_created_at ON messages (room_id, created_at);
CREATE INDEX index_messages_on_room_id_and_updated_at ON messages (room_id, updated_at);
CREATE INDEX index_messages_on_creator_id ON messages (creator_id);

CREATE TABLE boosts (
    id INTEGER PRIMARY KEY,
    message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    booster_id INTEGER NOT NULL REFERENCES users (id),
    content TEXT NOT NULL CHECK (length(content) <= 16),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX index_boosts_on_message_id ON boosts (message_id);
