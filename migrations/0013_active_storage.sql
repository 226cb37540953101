-- Active Storage's tables, as Rails' `active_storage:install` migration creates them on SQLite
-- (activestorage/db/migrate/20170806125915_create_active_storage_tables.rb, Rails 6.1–8.1):
-- a Rails app sharing this database reads and writes the same rows. Times here are Rails'
-- datetime(6) text ('YYYY-MM-DD HH:MM:SS.ffffff', UTC), not Hearth's integer milliseconds.
-- A message's file is the attachment named 'attachment' of record_type 'Message'
-- (Campfire's `has_one_attached :attachment`); an avatar is 'avatar' of 'User'; the account
-- logo 'logo' of 'Account'; a variant's image 'image' of 'ActiveStorage::VariantRecord'.

CREATE TABLE active_storage_blobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    key varchar NOT NULL,
    filename varchar NOT NULL,
    content_type varchar,
    metadata text,
    service_name varchar NOT NULL,
    byte_size bigint NOT NULL,
    checksum varchar,
    created_at datetime(6) NOT NULL
);
CREATE UNIQUE INDEX index_active_storage_blobs_on_key ON active_storage_blobs (key);

CREATE TABLE active_storage_attachments (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    name varchar NOT NULL,
    record_type varchar NOT NULL,
    record_id bigint NOT NULL,
    blob_id bigint NOT NULL,
    created_at datetime(6) NOT NULL,
    CONSTRAINT fk_rails_c3b3935057 FOREIGN KEY (blob_id) REFERENCES active_storage_blobs (id)
);
CREATE INDEX index_active_storage_attachments_on_blob_id ON active_storage_attachments (blob_id);
CREATE UNIQUE INDEX index_active_storage_attachments_uniqueness
    ON active_storage_attachments (record_type, record_id, name, blob_id);

CREATE TABLE active_storage_variant_records (
    id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    blob_id bigint NOT NULL,
    variation_digest varchar NOT NULL,
    CONSTRAINT fk_rails_993965df05 FOREIGN KEY (blob_id) REFERENCES active_storage_blobs (id)
);
CREATE UNIQUE INDEX index_active_storage_variant_records_uniqueness
    ON active_storage_variant_records (blob_id, variation_digest);
