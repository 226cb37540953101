-- Full-text search over message bodies (Campfire's `message_search_index`, SQLite FTS5).
-- The rowid is the message id; the indexed text is the body with the markup that Hearth's
-- bodies carry (`<div>`, `<br>`, escaped entities) turned back into plain text, so that tag
-- and entity names are never search terms. Triggers keep it in step with posts, edits and
-- deletes, inside the statement that changes the message.
CREATE VIRTUAL TABLE message_search_index USING fts5 (body, tokenize = 'unicode61');

INSERT INTO message_search_index (rowid, body)
SELECT id,
       replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
           body, '<div>', ' '), '</div>', ' '), '<br>', ' '), '&lt;', '<'), '&gt;', '>'),
           '&quot;', '"'), '&#39;', ''''), '<p>', ' '), '</p>', ' '), '&amp;', '&')
  FROM messages;

CREATE TRIGGER message_search_index_insert AFTER INSERT ON messages
BEGIN
    INSERT INTO message_search_index (rowid, body) VALUES (NEW.id,
       replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
           NEW.body, '<div>', ' '), '</div>', ' '), '<br>', ' '), '&lt;', '<'), '&gt;', '>'),
           '&quot;', '"'), '&#39;', ''''), '<p>', ' '), '</p>', ' '), '&amp;', '&'));
END;

CREATE TRIGGER message_search_index_update AFTER UPDATE OF body ON messages
BEGIN
    DELETE FROM message_search_index WHERE rowid = OLD.id;
    INSERT INTO message_search_index (rowid, body) VALUES (NEW.id,
       replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
           NEW.body, '<div>', ' '), '</div>', ' '), '<br>', ' '), '&lt;', '<'), '&gt;', '>'),
           '&quot;', '"'), '&#39;', ''''), '<p>', ' '), '</p>', ' '), '&amp;', '&'));
END;

CREATE TRIGGER message_search_index_delete AFTER DELETE ON messages
BEGIN
    DELETE FROM message_search_index WHERE rowid = OLD.id;
END;
