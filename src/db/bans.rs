//! Queries on `bans` and the ban itself (Campfire's `Ban` and `User::Bannable`).
//!
//! Banning a user, in one transaction: every public IP address of the user's sessions becomes
//! a ban row, the user's status becomes `banned`, the sessions and web push subscriptions are
//! deleted (as deactivating does, `super::users::set_status`) and so are the user's messages (Campfire purges them after the ban); the caller broadcasts their removal
//! and closes the user's connections. Loopback, private, link-local and other non-public
//! addresses are never banned (Campfire's `Ban.public_ip_address?`), so a ban never locks out
//! a whole office network or the proxy in front of the server.

use std::net::IpAddr;

use sqlx::SqlitePool;

use super::users::{guard_last_administrator, Guard};

/// Whether any address is banned.
pub async fn any(pool: &SqlitePool) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM bans)")
        .fetch_one(pool)
        .await
}

/// Whether `ip_address` is banned (Campfire's `Ban.banned?`).
pub async fn is_banned(pool: &SqlitePool, ip_address: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM bans WHERE ip_address = ?)")
        .bind(ip_address)
        .fetch_one(pool)
        .await
}

/// Whether an address may be banned: a public unicast address (not loopback, private,
/// link-local, shared, documentation, unspecified or multicast; IPv6 unique-local and
/// link-local included). Unparsable text is not.
pub fn is_public_ip_address(text: &str) -> bool {
    match text.trim().parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)))
        }
        Ok(IpAddr::V6(v6)) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_ip_address(&v4.to_string());
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8)
        }
        Err(_) => false,
    }
}

/// A message deleted by a ban: what its removal broadcast needs.
#[derive(Clone, Debug, sqlx::FromRow, PartialEq, Eq)]
pub struct RemovedMessage {
    /// The message id.
    pub id: i64,
    /// Its room.
    pub room_id: i64,
    /// Its client id (`dom_id` is `message_<client_message_id>`).
    pub client_message_id: String,
}

/// The outcome of [`ban`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Banned {
    /// Banned: the addresses banned and the messages deleted.
    Done {
        /// Public addresses of the user's sessions, now banned.
        ips: Vec<String>,
        /// The user's messages, deleted.
        removed: Vec<RemovedMessage>,
    },
    /// No such user (or a bot: bots are removed, not banned).
    NotFound,
    /// The user is the last active administrator: nothing changed.
    LastAdministrator,
}

/// Bans `user_id` in one transaction (see the module docs).
pub async fn ban(pool: &SqlitePool, user_id: i64) -> sqlx::Result<Banned> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    match guard_last_administrator(&mut tx, user_id).await? {
        Guard::Missing => return Ok(Banned::NotFound),
        Guard::LastAdministrator => return Ok(Banned::LastAdministrator),
        Guard::Ok => {}
    }
    let now = super::now_ms();
    let session_ips: Vec<Option<String>> =
        sqlx::query_scalar("SELECT DISTINCT ip_address FROM sessions WHERE user_id = ?")
            .bind(user_id)
            .fetch_all(&mut *tx)
            .await?;
    let ips: Vec<String> = session_ips
        .into_iter()
        .flatten()
        .filter(|ip| is_public_ip_address(ip))
        .collect();
    for ip in &ips {
        sqlx::query(
            "INSERT INTO bans (user_id, ip_address, created_at, updated_at) VALUES (?, ?, ?, ?)",
        )
        .bind(user_id)
        .bind(ip)
        .bind(now)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query("UPDATE users SET status = 'banned', updated_at = ? WHERE id = ?")
        .bind(now)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    for sql in [
        "DELETE FROM sessions WHERE user_id = ?",
        "DELETE FROM push_subscriptions WHERE user_id = ?",
    ] {
        sqlx::query(sql).bind(user_id).execute(&mut *tx).await?;
    }
    let removed: Vec<RemovedMessage> = sqlx::query_as(
        "DELETE FROM messages WHERE creator_id = ? RETURNING id, room_id, client_message_id",
    )
    .bind(user_id)
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Banned::Done { ips, removed })
}

/// Lifts a ban (Campfire's `unban`): deletes the user's ban rows and makes the user active
/// again. Returns false, changing nothing, when the user is not banned.
pub async fn unban(pool: &SqlitePool, user_id: i64) -> sqlx::Result<bool> {
    let mut tx = super::Write::begin(pool, super::Access::Changed).await?;
    let changed = sqlx::query(
        "UPDATE users SET status = 'active', updated_at = ? WHERE id = ? AND status = 'banned'",
    )
    .bind(super::now_ms())
    .bind(user_id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if changed == 0 {
        return Ok(false);
    }
    sqlx::query("DELETE FROM bans WHERE user_id = ?")
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_banned() {
        for public in [
            "8.8.8.8",
            "151.101.1.1",
            "2a00:1450:4001::1",
            "::ffff:8.8.4.4",
        ] {
            assert!(is_public_ip_address(public), "{public}");
        }
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.9",
            "172.16.5.5",
            "169.254.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "203.0.113.7",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "nonsense",
        ] {
            assert!(!is_public_ip_address(private), "{private}");
        }
    }
}
