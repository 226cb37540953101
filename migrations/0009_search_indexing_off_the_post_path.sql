-- Search indexing and the catch-up log's upkeep leave the post's transaction.
--
-- A post used to index its body into `message_search_index` (FTS5) and prune the
-- `message_changes` log inside its own INSERT, by trigger: each commit wrote about twice the
-- pages of a bare insert (a new FTS5 segment, its structure record, the stored text, the
-- document size; the log's secondary index; the pruning seek). Now `db::upkeep` indexes new
-- messages in batches, one FTS5 segment per batch, about once a second and before every
-- search, and prunes the log on the same tick.
--
-- `message_search_progress.indexed_through` is the largest message id already indexed: every
-- message with an id at or below it is in the index, no message above it is. Edits and deletes
-- of indexed messages still reach the index by trigger; a message above the mark is indexed
-- as it is when its batch comes.

DROP TRIGGER message_search_index_insert;
DROP TRIGGER message_search_index_update;
DROP TRIGGER message_search_index_delete;

-- The text indexed for each message: the body with Hearth's markup (`<div>`, `<p>`, `<br>`,
-- escaped entities) turned back into plain text, so that tag and entity names are never search
-- terms (as in migration 0006).
CREATE VIEW message_search_texts (id, body) AS
SELECT id,
       replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
           body, '<div>', ' '), '</div>', ' '), '<br>', ' '), '&lt;', '<'), '&gt;', '>'),
           '&quot;', '"'), '&#39;', ''''), '<p>', ' '), '</p>', ' '), '&amp;', '&')
  FROM messages;

CREATE TABLE message_search_progress (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_through INTEGER NOT NULL
);
-- Until now the triggers kept the index complete.
INSERT INTO message_search_progress (id, indexed_through)
SELECT 1, COALESCE(MAX(id), 0) FROM messages;

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
    -- SQLite gives the ids above the newest message left to the next posts: bring the mark
    -- back down to it, so that those posts are indexed in their turn.
    UPDATE message_search_progress
       SET indexed_through = (SELECT COALESCE(MAX(id), 0) FROM messages)
     WHERE indexed_through > (SELECT COALESCE(MAX(id), 0) FROM messages);
END;

-- The log is read by a range of ids (newest changes, a page's cursor onwards) and filtered by
-- room there; the per-room index cost every post a second page. Pruning moves to the upkeep.
DROP INDEX index_message_changes_on_room_id_and_id;
DROP TRIGGER message_changes_prune;
