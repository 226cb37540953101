//! Digests of what a person missed: at the end of each period (hourly, or daily at the
//! account's digest hour in the person's time zone), one mail with exactly the unread
//! mentions and direct messages posted in that period, each with its text and a link.
//!
//! - Who: active people with an address and a frequency other than `never`; deactivated and
//!   banned people, and bots, never get one ([`crate::db::digests::recipients`]).
//! - What: the messages of the period still unread when the digest is built (the room's
//!   unread mark at or before them; a room read since has no mark), by others, that mention
//!   the person or sit in one of their direct rooms. Nothing read is in it.
//! - At most one mail per person per period: the period is recorded
//!   ([`crate::db::digests::record`]) before the mail is queued, and a period already recorded
//!   is skipped. A period with nothing missed is recorded too and sends nothing. Records older
//!   than [`REMEMBERED`] are pruned (no period that old is due again).
//! - A digest the mail queue had no room for is not lost: its record is taken back
//!   ([`crate::db::digests::forget`]), so the next run (a minute later) builds and queues it
//!   again, with what is still unread then.
//! - Every digest carries `List-Unsubscribe` with RFC 8058's one-click `POST`
//!   (`crate::web::mail_pages`), whose signed token names the person.
//! - The clock is injected: [`Digests::run_as_of`] builds the digests due at any instant, and
//!   the scheduler ([`Digests::spawn`]) calls it once a minute with the system clock.
//!
//! Nothing runs without mail (`--smtp-url`) or without the account's site address (links
//! need it, `crate::db::mail_settings`).

use crate::db::Db;
use crate::outbox::Outbox;
use crate::rails::Keys;
use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};
use sqlx::SqlitePool;

use crate::db::digests::{Frequency, Missed, Recipient};
use crate::letters::{DigestItem, To};
use crate::mail::{Mailer, NotQueued};
use crate::rails::SignedIdVerifier;

/// How often the scheduler looks for periods that ended.
pub const TICK: Duration = Duration::from_secs(60);
/// The signed-id purpose of unsubscribe tokens (`user/digest_unsubscribe`).
pub const UNSUBSCRIBE_PURPOSE: &str = "digest_unsubscribe";
/// How long an unsubscribe link works, in seconds (a year).
pub const UNSUBSCRIBE_TTL_SECS: u64 = 365 * 24 * 3600;
/// How long a built period is remembered (two days: longer than any period).
pub const REMEMBERED: jiff::SignedDuration = jiff::SignedDuration::from_hours(48);
/// The most characters of a message's text a digest shows.
pub const TEXT_CHARS: usize = 400;

/// The handles digests need: the database, the mailer and the signer of unsubscribe links.
#[derive(Clone, Debug)]
pub struct Digests {
    pool: SqlitePool,
    mailer: Mailer,
    signed_ids: SignedIdVerifier,
}

/// The period `[start, end)` that ended last at or before `now` for `frequency` in `tz`:
/// hourly, the last whole local hour; daily, the 24 local hours up to the last `hour:00`.
/// `None` for `never` (or a time jiff cannot place).
pub fn period(
    frequency: Frequency,
    tz: &TimeZone,
    hour: u8,
    now: Timestamp,
) -> Option<(Zoned, Zoned)> {
    let here = now.to_zoned(tz.clone());
    match frequency {
        Frequency::Never => None,
        Frequency::Hourly => {
            let end = here
                .date()
                .at(here.hour(), 0, 0, 0)
                .to_zoned(tz.clone())
                .ok()?;
            let start = end
                .timestamp()
                .checked_sub(jiff::SignedDuration::from_hours(1))
                .ok()?;
            Some((start.to_zoned(tz.clone()), end))
        }
        Frequency::Daily => {
            let hour = i8::try_from(hour.min(23)).ok()?;
            let mut day = here.date();
            if here.hour() < hour {
                day = day.yesterday().ok()?;
            }
            let end = day.at(hour, 0, 0, 0).to_zoned(tz.clone()).ok()?;
            let start = day
                .yesterday()
                .ok()?
                .at(hour, 0, 0, 0)
                .to_zoned(tz.clone())
                .ok()?;
            Some((start, end))
        }
    }
}

/// A person's time zone: their IANA name, UTC when unset or unknown.
pub fn time_zone(name: Option<&str>) -> TimeZone {
    name.and_then(|n| TimeZone::get(n).ok())
        .unwrap_or(TimeZone::UTC)
}

/// Whether `item` belongs in `user_id`'s digest: a direct message, or a mention of them.
pub fn belongs(item: &Missed, user_id: i64) -> bool {
    item.direct || crate::rich_text::mentioned_user_ids(&item.body).contains(&user_id)
}

fn shown(at: &Zoned) -> String {
    at.strftime("%a %d %b, %H:%M").to_string()
}

fn cut(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(TEXT_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

impl Digests {
    /// The handles of `state`.
    pub fn of(db: &Db, keys: &Keys, outbox: &Outbox) -> Self {
        Self {
            pool: db.pool.clone(),
            mailer: outbox.mailer.clone(),
            signed_ids: keys.signed_ids.clone(),
        }
    }

    /// Runs [`Self::run_as_of`] with the system clock every [`TICK`], for as long as the
    /// returned task is not aborted.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(TICK);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticker.tick().await;
                if let Err(e) = self.run_as_of(Timestamp::now()).await {
                    tracing::warn!(error = %e, "digests not built");
                }
            }
        })
    }

    /// Builds and queues every digest due at `now` (see the [module docs](self)): the number
    /// of mails queued.
    ///
    /// # Errors
    /// A database failure (the digests of that run stop there; the next run goes on).
    pub async fn run_as_of(&self, now: Timestamp) -> anyhow::Result<usize> {
        if !self.mailer.is_on() {
            return Ok(0);
        }
        let settings = crate::db::mail_settings::get(&self.pool).await?;
        if settings.site_url.is_empty() {
            return Ok(0);
        }
        let account = crate::db::accounts::settings(&self.pool).await?;
        let forget = now.checked_sub(REMEMBERED)?.as_millisecond();
        crate::db::digests::prune(&self.pool, forget).await?;
        let mut sent = 0;
        for person in crate::db::digests::recipients(&self.pool).await? {
            let tz = time_zone(person.time_zone.as_deref());
            let Some((start, end)) =
                period(person.digest_frequency, &tz, settings.digest_hour, now)
            else {
                continue;
            };
            let end_ms = end.timestamp().as_millisecond();
            if crate::db::digests::recorded(&self.pool, person.id, end_ms).await? {
                continue;
            }
            let start_ms = start.timestamp().as_millisecond();
            let missed =
                crate::db::digests::unread_between(&self.pool, person.id, start_ms, end_ms).await?;
            let items: Vec<Missed> = missed
                .into_iter()
                .filter(|m| belongs(m, person.id))
                .collect();
            if !crate::db::digests::record(&self.pool, person.id, end_ms, items.len()).await?
                || items.is_empty()
            {
                continue;
            }
            let letter = self.letter(
                &person,
                &tz,
                (&start, &end),
                &items,
                &settings.site_url,
                &account.name,
            )?;
            match self.mailer.send(letter) {
                Ok(()) => sent += 1,
                Err(NotQueued::Full) => {
                    crate::db::digests::forget(&self.pool, person.id, end_ms).await?;
                    tracing::warn!(
                        user_id = person.id,
                        "digest not queued (the mail queue is full): built again at the next run"
                    );
                }
                Err(e) => tracing::warn!(error = %e, user_id = person.id, "digest not queued"),
            }
        }
        Ok(sent)
    }

    fn letter(
        &self,
        person: &Recipient,
        tz: &TimeZone,
        (start, end): (&Zoned, &Zoned),
        items: &[Missed],
        site: &str,
        account_name: &str,
    ) -> anyhow::Result<crate::mail::Letter> {
        let shown_items: Vec<DigestItem> = items
            .iter()
            .map(|m| DigestItem {
                author: m.creator_name.clone(),
                room: m.room_name.clone().unwrap_or_default(),
                direct: m.direct,
                at: Timestamp::from_millisecond(m.created_at)
                    .map(|t| shown(&t.to_zoned(tz.clone())))
                    .unwrap_or_default(),
                text: cut(&m.text),
                url: format!("{site}/rooms/{}/@{}", m.room_id, m.id),
            })
            .collect();
        let expires = std::time::SystemTime::now() + Duration::from_secs(UNSUBSCRIBE_TTL_SECS);
        let token = self
            .signed_ids
            .generate("user", UNSUBSCRIBE_PURPOSE, person.id, expires);
        let unsubscribe_url = format!("{site}/digests/unsubscribe/{token}");
        let period = format!(
            "{} to {} ({})",
            shown(start),
            shown(end),
            tz.iana_name().unwrap_or("UTC")
        );
        let digest = crate::letters::Digest {
            account_name,
            period: &period,
            frequency: person.digest_frequency.as_str(),
            items: &shown_items,
            unsubscribe_url: &unsubscribe_url,
        };
        let to = To {
            address: &person.email_address,
            name: &person.name,
        };
        Ok(crate::letters::digest(to, &digest)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_daily_period_ends_at_the_local_hour() {
        let paris = TimeZone::get("Europe/Paris").unwrap();
        // 07:30 UTC is 08:30 in Paris (winter): the period ended at 08:00 Paris today.
        let (start, end) = period(Frequency::Daily, &paris, 8, at("2026-12-07T07:30:00Z")).unwrap();
        assert_eq!(end.timestamp(), at("2026-12-07T07:00:00Z"));
        assert_eq!(start.timestamp(), at("2026-12-06T07:00:00Z"));
        // 06:59 UTC is 07:59 in Paris: yesterday's period.
        let (_, end) = period(Frequency::Daily, &paris, 8, at("2026-12-07T06:59:00Z")).unwrap();
        assert_eq!(end.timestamp(), at("2026-12-06T07:00:00Z"));
        // Across the spring change the day is 23 hours long.
        let (start, end) = period(Frequency::Daily, &paris, 8, at("2026-03-29T12:00:00Z")).unwrap();
        assert_eq!(
            end.timestamp().as_second() - start.timestamp().as_second(),
            23 * 3600
        );
    }

    #[test]
    fn an_hourly_period_is_the_last_whole_local_hour() {
        let kolkata = TimeZone::get("Asia/Kolkata").unwrap();
        let (start, end) =
            period(Frequency::Hourly, &kolkata, 8, at("2026-12-07T10:10:00Z")).unwrap();
        // 15:40 in Kolkata: the hour from 14:00 to 15:00 local (08:30 to 09:30 UTC).
        assert_eq!(end.timestamp(), at("2026-12-07T09:30:00Z"));
        assert_eq!(start.timestamp(), at("2026-12-07T08:30:00Z"));
        assert!(period(Frequency::Never, &kolkata, 8, at("2026-12-07T10:10:00Z")).is_none());
        assert_eq!(time_zone(Some("Not/AZone")), TimeZone::UTC);
    }
}
