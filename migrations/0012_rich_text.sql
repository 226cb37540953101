-- Message bodies as Action Text holds them, and their plain text for search.
--
-- `messages.body` holds the Action Text HTML (sanitized to Campfire's allowlist, mentions as
-- `<action-text-attachment sgid=… content-type="application/vnd.campfire.mention">`, see
-- `src/rich_text/`). `action_text_rich_texts` is Campfire's table, with its columns and
-- names (record_type 'Message', name 'body'), as a view over `messages`: a reader written for
-- Rails finds every body where Action Text keeps it, and a post still writes one row in one
-- statement. Writes through the view (Rails updating or creating a message's body) land in
-- `messages.body`, by the INSTEAD OF triggers below.
--
-- `messages.plain_text` is the body's text (block ends as line breaks, mentions as @Name),
-- written with it; the search index reads it. Rows from before this migration, and bodies
-- written through the view, have none, and are indexed from the markup as migration 0009 did.

ALTER TABLE messages ADD COLUMN plain_text TEXT;

DROP VIEW message_search_texts;
CREATE VIEW message_search_texts (id, body) AS
SELECT id,
       COALESCE(plain_text,
       replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
           body, '<div>', ' '), '</div>', ' '), '<br>', ' '), '&lt;', '<'), '&gt;', '>'),
           '&quot;', '"'), '&#39;', ''''), '<p>', ' '), '</p>', ' '), '&amp;', '&'))
  FROM messages;

CREATE VIEW action_text_rich_texts (id, name, body, record_type, record_id, created_at, updated_at) AS
SELECT id, 'body', body, 'Message', id, created_at, updated_at FROM messages;

CREATE TRIGGER action_text_rich_texts_update INSTEAD OF UPDATE OF body ON action_text_rich_texts
WHEN NEW.record_type = 'Message' AND NEW.name = 'body'
BEGIN
    UPDATE messages SET body = COALESCE(NEW.body, ''), plain_text = NULL,
           updated_at = MAX(updated_at, COALESCE(NEW.updated_at, updated_at))
     WHERE id = NEW.record_id AND body IS NOT COALESCE(NEW.body, '');
END;

CREATE TRIGGER action_text_rich_texts_insert INSTEAD OF INSERT ON action_text_rich_texts
WHEN NEW.record_type = 'Message' AND NEW.name = 'body'
BEGIN
    UPDATE messages SET body = COALESCE(NEW.body, ''), plain_text = NULL
     WHERE id = NEW.record_id;
END;
