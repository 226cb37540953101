//! Queries of single sign-on (migration 0020): the account's settings that are not secrets
//! (`sso_settings`) and the provider identities of people (`sso_identities`).

use sqlx::SqlitePool;

use super::users::{split_extra, User, UserRowWith};
use super::{Access, Role};

/// The account's single sign-on settings (`sso_settings`; the defaults while no row exists).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// The name on the sign-in button ("Sign in with *name*"); empty: the issuer's host.
    pub provider_name: String,
    /// Lower-case e-mail domains that may sign in through the provider; empty: any.
    pub allowed_domains: Vec<String>,
    /// Password sign-ins refused for everyone but administrators (while single sign-on is
    /// configured).
    pub passwords_for_administrators_only: bool,
}

impl Settings {
    /// Whether `email`'s domain (after its last `@`, any case) is allowed.
    pub fn allows(&self, email: &str) -> bool {
        let Some((_, domain)) = email.rsplit_once('@') else {
            return false;
        };
        self.allowed_domains.is_empty()
            || self
                .allowed_domains
                .iter()
                .any(|d| d.eq_ignore_ascii_case(domain))
    }
}

/// Splits a list of domains as typed (commas, spaces or new lines between them; a leading `@`
/// dropped), lower-cased, without duplicates, in order.
///
/// # Errors
/// The first entry that is not a domain name (letters, digits, `-` and `.`, with a dot, at
/// most 253 bytes).
pub fn parse_domains(text: &str) -> Result<Vec<String>, String> {
    let mut domains: Vec<String> = Vec::new();
    for entry in text.split(|c: char| c == ',' || c.is_whitespace()) {
        let entry = entry.trim().trim_start_matches('@').to_ascii_lowercase();
        if entry.is_empty() {
            continue;
        }
        let valid = entry.len() <= 253
            && entry.contains('.')
            && entry
                .split('.')
                .all(|label| !label.is_empty() && label.len() <= 63 && !label.starts_with('-'))
            && entry
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
        if !valid {
            return Err(entry);
        }
        if !domains.contains(&entry) {
            domains.push(entry);
        }
    }
    Ok(domains)
}

/// The settings (the defaults while none were saved).
pub async fn settings(pool: &SqlitePool) -> sqlx::Result<Settings> {
    let row: Option<(String, String, bool)> = sqlx::query_as(
        "SELECT provider_name, allowed_domains, passwords_for_administrators_only \
         FROM sso_settings WHERE id = 1",
    )
    .fetch_optional(pool)
    .await?;
    Ok(row
        .map(|(provider_name, domains, passwords)| Settings {
            provider_name,
            allowed_domains: domains
                .split(',')
                .filter(|d| !d.is_empty())
                .map(str::to_owned)
                .collect(),
            passwords_for_administrators_only: passwords,
        })
        .unwrap_or_default())
}

/// Saves the settings.
pub async fn save(pool: &SqlitePool, settings: &Settings) -> sqlx::Result<()> {
    let domains = settings.allowed_domains.join(",");
    super::One::execute(pool, Access::Kept, |now| {
        sqlx::query(
            "INSERT INTO sso_settings (id, provider_name, allowed_domains, \
             passwords_for_administrators_only, updated_at) VALUES (1, ?, ?, ?, ?) \
             ON CONFLICT (id) DO UPDATE SET provider_name = excluded.provider_name, \
             allowed_domains = excluded.allowed_domains, \
             passwords_for_administrators_only = excluded.passwords_for_administrators_only, \
             updated_at = excluded.updated_at",
        )
        .bind(&settings.provider_name)
        .bind(domains)
        .bind(settings.passwords_for_administrators_only)
        .bind(now)
    })
    .await?;
    Ok(())
}

/// Where a provider's person signs in here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Match {
    /// The person linked to this identity, or the active person holding the e-mail address
    /// (now linked to it).
    Existing(User),
    /// A new member, in every open room, linked to the identity.
    Created(i64),
    /// The person linked, or holding the address, is deactivated, banned or a bot.
    Inactive,
}

/// The person `(issuer, subject)` is, in one transaction: the one linked to it; else the one
/// holding `email` (any case of its ASCII letters; linked now); else a new member named
/// `name` with no password, in
/// every open room (as a join link makes one), linked now. The caller has checked that the
/// provider verified `email`.
pub async fn find_or_create(
    pool: &SqlitePool,
    issuer: &str,
    subject: &str,
    email: &str,
    name: &str,
) -> sqlx::Result<Match> {
    const COLUMNS: &str = "SELECT users.id, users.name, users.email_address, users.role, \
                           users.status, users.bot_token FROM users";
    // ASCII only: see `Identity::email`.
    let email = email.trim().to_ascii_lowercase();
    let mut tx = super::Write::begin(pool, Access::Changed).await?;
    let linked: Option<UserRowWith<Option<String>>> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{COLUMNS} JOIN sso_identities ON sso_identities.user_id = users.id \
             WHERE sso_identities.issuer = ? AND sso_identities.subject = ?"
    )))
    .bind(issuer)
    .bind(subject)
    .fetch_optional(&mut *tx)
    .await?;
    let found = match linked {
        Some(row) => Some(row),
        None => {
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "{COLUMNS} WHERE users.email_address = ?"
            )))
            .bind(&email)
            .fetch_optional(&mut *tx)
            .await?
        }
    };
    let user_id = match found.map(split_extra) {
        Some((user, _)) if user.status != super::Status::Active || user.role == Role::Bot => {
            return Ok(Match::Inactive);
        }
        Some((user, _)) => {
            link(&mut tx, issuer, subject, user.id).await?;
            tx.commit().await?;
            return Ok(Match::Existing(user));
        }
        None => {
            super::users::insert_with_open_rooms(
                &mut tx,
                name,
                Some(&email),
                None,
                Role::Member,
                None,
            )
            .await?
        }
    };
    link(&mut tx, issuer, subject, user_id).await?;
    tx.commit().await?;
    Ok(Match::Created(user_id))
}

async fn link(
    conn: &mut sqlx::SqliteConnection,
    issuer: &str,
    subject: &str,
    user_id: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO sso_identities (issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?) \
         ON CONFLICT (issuer, subject) DO NOTHING",
    )
    .bind(issuer)
    .bind(subject)
    .bind(user_id)
    .bind(super::now_ms())
    .execute(conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_are_parsed_and_checked() {
        assert_eq!(
            parse_domains(" Example.com, @corp.example.org\nexample.com ").unwrap(),
            vec!["example.com", "corp.example.org"]
        );
        assert_eq!(parse_domains("").unwrap(), Vec::<String>::new());
        assert_eq!(
            parse_domains("example.com, not a domain!").unwrap_err(),
            "not"
        );
        assert!(parse_domains("localhost").is_err());
        assert!(parse_domains("exa_mple.com").is_err());
        let settings = Settings {
            allowed_domains: vec!["example.com".into()],
            ..Settings::default()
        };
        assert!(settings.allows("ada@EXAMPLE.com"));
        assert!(!settings.allows("ada@example.com.evil.test"));
        assert!(!settings.allows("ada@sub.example.com"));
        assert!(!settings.allows("no-at-sign"));
        assert!(Settings::default().allows("any@where.test"));
    }
}
