-- A new message marks unread the room's memberships that have no unread mark yet. Once a room
-- has been busy, nearly every membership already has one, so this partial index holds only the
-- few rows that update can still change, instead of making it walk every member of the room.
CREATE INDEX index_memberships_on_room_id_without_unread ON memberships (room_id) WHERE unread_at IS NULL;
