-- Campfire's `searches`: a user's recent search queries, the newest `updated_at` first.
CREATE TABLE searches (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    query TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX index_searches_on_user_id_and_query ON searches (user_id, query);
CREATE INDEX index_searches_on_user_id_and_updated_at ON searches (user_id, updated_at);
