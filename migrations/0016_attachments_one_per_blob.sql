-- A blob is attached at most once: one message's file, one avatar, the logo or one variant's
-- image. Two attachments of one blob let removing one of them purge the bytes the other still
-- showed (the same direct upload posted at once as a message's file and as an avatar).
--
-- Rows written before this index: of the attachments of one blob the first (lowest id) is
-- kept and the others are deleted. The records that lose theirs show no file: a message
-- shows its text alone, a user their initials, the account the stock icon. Their blob and its
-- bytes stay, with the record that keeps them.
DELETE FROM active_storage_attachments
WHERE id NOT IN (SELECT MIN(id) FROM active_storage_attachments GROUP BY blob_id);

CREATE UNIQUE INDEX index_active_storage_attachments_one_per_blob
    ON active_storage_attachments (blob_id);
