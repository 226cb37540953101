-- The catch-up log of the rooms' messages: every post, edit, boost and delete, in commit
-- order, for `GET /rooms/:id/refresh`. A page that comes back after a disconnect asks for the
-- changes after the last one it knew (its cursor) and gets an `append` for each message
-- posted, a `replace` for each message edited or boosted and a `remove` for each message
-- deleted, whichever path deleted it (a person, a bot, a ban, the room's deletion).
--
-- The id is the cursor: SQLite has one writer at a time, so ids grow in commit order and a
-- reader that sees a change sees every change before it. Unlike a message id (SQLite gives
-- the id of a deleted newest message to the next one) or a timestamp (several messages share
-- a millisecond), it can neither repeat nor tie. Rows are written by triggers, inside the
-- statement that changes the message. The log keeps the last 100,000 changes; a page whose
-- cursor is older than the oldest kept one reloads.
CREATE TABLE message_changes (
    id INTEGER PRIMARY KEY,
    room_id INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    client_message_id TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('append', 'replace', 'remove'))
);
CREATE INDEX index_message_changes_on_room_id_and_id ON message_changes (room_id, id);

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

-- A boost changes how its message looks. When the message itself is being deleted, the
-- SELECT finds nothing and no row is written.
CREATE TRIGGER message_changes_boost_insert AFTER INSERT ON boosts
BEGIN
    INSERT INTO message_changes (room_id, message_id, client_message_id, action)
    SELECT room_id, id, client_message_id, 'replace' FROM messages WHERE id = NEW.message_id;
END;

CREATE TRIGGER message_changes_boost_delete AFTER DELETE ON boosts
BEGIN
    INSERT INTO message_changes (room_id, message_id, client_message_id, action)
    SELECT room_id, id, client_message_id, 'replace' FROM messages WHERE id = OLD.message_id;
END;

CREATE TRIGGER message_changes_prune AFTER INSERT ON message_changes
BEGIN
    DELETE FROM message_changes WHERE id <= NEW.id - 100000;
END;
