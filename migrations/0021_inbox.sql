-- The activity inbox (`GET /inbox`): what needs a person — mentions of them, replies in the
-- threads they follow, boosts on their messages, direct messages — is read from the tables
-- that hold it (messages, boosts, rooms, memberships). A message's item is read by the same
-- mark that says its room is read (`memberships.unread_at`, the first unread post). Two
-- tables hold what those do not:
--
-- `inbox_marks`: "Mark all read" — every item of a person up to `read_at` (ms) is read.
CREATE TABLE inbox_marks (
    user_id INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    read_at INTEGER NOT NULL
);

-- `inbox_visits`: the last time (ms) a person was present in a room, kept after they leave
-- (`memberships.connected_at` is cleared with their last connection). A boost, which marks no
-- room unread, is read once its person was present in its room at or after it. Written by the
-- trigger below whenever presence stamps or clears `connected_at` (connect, keep-alive,
-- leave), never by a post.
CREATE TABLE inbox_visits (
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    room_id INTEGER NOT NULL REFERENCES rooms (id) ON DELETE CASCADE,
    seen_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, room_id)
) WITHOUT ROWID;

CREATE TRIGGER memberships_inbox_visit AFTER UPDATE OF connected_at ON memberships
WHEN OLD.connected_at IS NOT NULL OR NEW.connected_at IS NOT NULL
BEGIN
    INSERT INTO inbox_visits (user_id, room_id, seen_at)
    VALUES (NEW.user_id, NEW.room_id, COALESCE(NEW.connected_at, NEW.updated_at))
    ON CONFLICT (user_id, room_id) DO UPDATE SET seen_at = max(seen_at, excluded.seen_at);
END;
