-- no-transaction
-- Threads and bookmarks.
--
-- Threads: a thread is a room of kind 'thread' whose parent is a message (the model of
-- Campfire's public forks, `Rooms::Thread`), so streams, catch-up, unread marks, presence,
-- typing, involvement, pushes, search, files, boosts, edits and bots work in it as in any room.
--
-- `rooms.parent_room_id` is the room of the parent message: the thread is deleted with it, and
-- only that room's members see or reply in the thread. `rooms.parent_message_id` is the parent
-- message, kept (no foreign key) after the message is deleted: the thread stays readable and
-- refuses new replies. One thread per message.
--
-- A thread's own memberships are its followers (the parent's author, everyone who replied, and
-- anyone who pressed "Follow"): involvement 'everything' while following, 'invisible' after
-- "Unfollow". Losing the parent room's membership deletes the thread memberships with it
-- (trigger `memberships_threads_revoke`), whatever the write path.
--
-- SQLite cannot change a CHECK constraint, so `rooms` is rebuilt as 0010 rebuilt it.
PRAGMA foreign_keys = OFF;
PRAGMA legacy_alter_table = ON;
BEGIN IMMEDIATE;

CREATE TABLE new_rooms (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT,
    kind TEXT NOT NULL CHECK (kind IN ('open', 'closed', 'direct', 'thread')),
    creator_id INTEGER REFERENCES users (id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    parent_room_id INTEGER REFERENCES rooms (id) ON DELETE CASCADE,
    parent_message_id INTEGER,
    CHECK ((kind = 'thread') = (parent_room_id IS NOT NULL AND parent_message_id IS NOT NULL))
);
INSERT INTO new_rooms (id, name, kind, creator_id, created_at, updated_at)
SELECT id, name, kind, creator_id, created_at, updated_at FROM rooms;
-- The ids handed out so far stay spent (0010): the new table's sequence starts where the old
-- one stood.
DELETE FROM sqlite_sequence WHERE name = 'new_rooms';
INSERT INTO sqlite_sequence (name, seq) SELECT 'new_rooms', seq FROM sqlite_sequence
 WHERE name = 'rooms';
DROP TABLE rooms;
ALTER TABLE new_rooms RENAME TO rooms;
CREATE UNIQUE INDEX index_rooms_on_parent_message_id ON rooms (parent_message_id)
    WHERE parent_message_id IS NOT NULL;
CREATE INDEX index_rooms_on_parent_room_id ON rooms (parent_room_id)
    WHERE parent_room_id IS NOT NULL;

CREATE TRIGGER memberships_threads_revoke AFTER DELETE ON memberships
BEGIN
    DELETE FROM memberships
     WHERE user_id = OLD.user_id
       AND room_id IN (SELECT id FROM rooms WHERE parent_room_id = OLD.room_id);
END;

-- Bookmarks: a message saved for later by a person (the list at /users/me/bookmarks). A
-- bookmark goes with its message or its user; one per person and message.
CREATE TABLE bookmarks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX index_bookmarks_on_user_id_and_message_id ON bookmarks (user_id, message_id);
CREATE INDEX index_bookmarks_on_message_id ON bookmarks (message_id);

COMMIT;
PRAGMA legacy_alter_table = OFF;
PRAGMA foreign_keys = ON;
