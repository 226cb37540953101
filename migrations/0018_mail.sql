-- E-mail: sign-in codes, digests of what a person missed, and where their local hour is.
--
-- `sign_in_codes`: a 6-digit code e-mailed on request ("Email me a code"). Only its HMAC is
-- stored (`code_digest`, hex HMAC-SHA256 keyed from secret_key_base, over the user id and the
-- code); it expires 10 minutes after `created_at` (`expires_at`, milliseconds), is used once
-- (`used_at`), and dies after 5 wrong tries (`failed_attempts`).
CREATE TABLE sign_in_codes (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_digest TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER,
    failed_attempts INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE INDEX index_sign_in_codes_on_user_id ON sign_in_codes (user_id);

-- A person's IANA time zone (`Europe/Paris`), as their browser reports it on the profile
-- page; NULL reads as UTC. Daily digests go out at the account's digest hour in it.
ALTER TABLE users ADD COLUMN time_zone TEXT;
-- How often a person is e-mailed what they missed: never, hourly or daily (the default).
ALTER TABLE users ADD COLUMN digest_frequency TEXT NOT NULL DEFAULT 'daily'
    CHECK (digest_frequency IN ('never', 'hourly', 'daily'));

-- One row per digest built: at most one mail per person per period (`period_end`, the end of
-- the period in milliseconds since the epoch, UTC).
CREATE TABLE digest_deliveries (
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    period_end INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, period_end)
);
