-- Campfire's `Room#receive`, run by SQLite inside the statement that inserts a message: the
-- room's `updated_at` touch (`belongs_to :room, touch: true`) and the unread mark on every
-- visible membership other than the creator's whose member is not connected (`connected_at`
-- older than Campfire's 60-second CONNECTION_TTL) and has no unread mark yet.
--
-- Being part of the INSERT, these updates commit or roll back with the message itself, and a
-- post costs one statement (one round trip to SQLite's worker thread) instead of a
-- transaction of four.
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
