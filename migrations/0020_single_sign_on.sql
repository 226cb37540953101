-- Single sign-on with OpenID Connect (docs/sso.md).
--
-- The account's settings that are not secrets (the issuer, client id and secret are flags):
-- one row, made on first save. `allowed_domains` is a comma-separated list of lower-case
-- e-mail domains (empty: any domain); `passwords_for_administrators_only` refuses password
-- sign-ins of everyone but administrators while single sign-on is configured.
CREATE TABLE sso_settings (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    provider_name TEXT NOT NULL DEFAULT '',
    allowed_domains TEXT NOT NULL DEFAULT '',
    passwords_for_administrators_only INTEGER NOT NULL DEFAULT 0
        CHECK (passwords_for_administrators_only IN (0, 1)),
    updated_at INTEGER NOT NULL
);

-- Who a provider's person (`iss`, `sub`) is here: written at their first single sign-on,
-- whether the account was made then or matched by its verified e-mail address.
CREATE TABLE sso_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (issuer, subject)
) WITHOUT ROWID;

CREATE INDEX index_sso_identities_on_user_id ON sso_identities (user_id);
