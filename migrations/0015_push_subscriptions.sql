-- Web push subscriptions (Campfire's `push_subscriptions`): one row per browser a user has
-- turned notifications on in, with the push service's endpoint and the browser's keys
-- (RFC 8291: `p256dh` the P-256 public key, `auth` the 16-byte secret, both base64url).
CREATE TABLE push_subscriptions (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    endpoint TEXT NOT NULL,
    p256dh_key TEXT NOT NULL,
    auth_key TEXT NOT NULL,
    user_agent TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX index_push_subscriptions_on_user_id_and_endpoint
    ON push_subscriptions (user_id, endpoint);
