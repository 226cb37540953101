-- Campfire's `bans`: the IP addresses of a banned user's sessions, refused on every
-- state-changing request (`User::Bannable`, `BlockBannedRequests`).
CREATE TABLE bans (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    ip_address TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX index_bans_on_ip_address ON bans (ip_address);
CREATE INDEX index_bans_on_user_id ON bans (user_id);
