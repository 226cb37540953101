-- The bytes each user's uploads take, for the per-user storage quota
-- (`--max-storage-bytes-per-user`): blobs by the uploader their metadata names
-- (`hearth_uploader_id`; NULL when the metadata is not JSON, so a row Rails or a console
-- wrote with other metadata is still accepted), with their sizes, so the sum before an upload
-- reads one user's index entries instead of every blob. `db::blobs` spells the expression
-- exactly so.
CREATE INDEX index_active_storage_blobs_on_uploader
    ON active_storage_blobs (
        (CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.hearth_uploader_id') END),
        byte_size
    );
