-- A message's client_message_id names its element in every open page (`message_<id>`), so
-- two messages must never share one: a later post could otherwise make edits and deletes
-- of its own message act on another user's element. Older duplicates keep theirs; later
-- ones get their row id appended, then the index holds the rule.
UPDATE messages
   SET client_message_id = client_message_id || '-' || id
 WHERE id NOT IN (SELECT MIN(id) FROM messages GROUP BY client_message_id);

CREATE UNIQUE INDEX index_messages_on_client_message_id ON messages (client_message_id);
