//! Ruby's ISO 8601 time forms, on top of the `time` crate's proleptic Gregorian calendar.
//!
//! Three forms appear in Hearth:
//!
//! - [`format_iso8601_millis`]: `Time#utc.iso8601(3)`, `2046-11-30T03:08:15.123Z`, the `exp`
//!   of a signed cookie's metadata envelope (`activesupport`, `messages/metadata.rb`).
//! - [`parse_iso8601`]: `Time.iso8601`, which reads that `exp` back and accepts more than RFC
//!   3339 does (4 to 9 digit years, `t`/`z` in lower case, `±HHMM` and `±HH` offsets, a leap
//!   second, any number of fraction digits), so it is a hand-written scanner over the crate's
//!   calendar.
//! - [`format_iso8601_seconds`]: `Time#utc.iso8601`, `2026-11-30T02:05:00Z`, the `datetime`
//!   attribute of a message's `<time>` element; and [`utc_from_millis`] for the other fields
//!   a page shows.
//!
//! Instants are counted from 1970-01-01T00:00:00Z and may be negative. The crate's calendar
//! covers the years −9999 to 9999; every function here also handles years outside that
//! range (a 9-digit year in a cookie, a corrupt timestamp in the database) by shifting the
//! instant by whole 400-year Gregorian cycles, which repeat exactly, into the covered range
//! and shifting the year back. No input panics.

use std::time::{SystemTime, UNIX_EPOCH};

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

/// Nanoseconds in a second.
pub const NANOS_PER_SEC: i128 = 1_000_000_000;

/// Seconds in one 400-year Gregorian cycle (146 097 days); the calendar repeats after it.
const CYCLE_SECS: i64 = 146_097 * 86_400;

/// Nanoseconds since 1970-01-01T00:00:00Z, negative before it.
pub fn unix_nanos(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

/// A UTC calendar date and time of day whose year may lie outside the `time` crate's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcDateTime {
    year: i64,
    /// The same instant shifted by whole 400-year cycles into the crate's range: its month,
    /// day and time fields are right, its year is not.
    within_cycle: OffsetDateTime,
}

impl UtcDateTime {
    /// Proleptic Gregorian year (astronomical numbering: 0 is 1 BC, −1 is 2 BC).
    pub fn year(&self) -> i64 {
        self.year
    }

    /// Month, 1–12.
    pub fn month(&self) -> u8 {
        u8::from(self.within_cycle.month())
    }

    /// Day of the month, 1–31.
    pub fn day(&self) -> u8 {
        self.within_cycle.day()
    }

    /// Hour, 0–23.
    pub fn hour(&self) -> u8 {
        self.within_cycle.hour()
    }

    /// Minute, 0–59.
    pub fn minute(&self) -> u8 {
        self.within_cycle.minute()
    }

    /// Second, 0–59.
    pub fn second(&self) -> u8 {
        self.within_cycle.second()
    }

    /// Millisecond within the second, 0–999 (truncated).
    pub fn millisecond(&self) -> u16 {
        self.within_cycle.millisecond()
    }

    /// The year as Ruby prints it: at least 4 digits, `-` before a negative one.
    fn year_text(&self) -> String {
        if self.year < 0 {
            format!("-{:04}", self.year.unsigned_abs())
        } else {
            format!("{:04}", self.year)
        }
    }
}

/// Splits nanoseconds since the Unix epoch into the UTC calendar.
pub fn utc_from_nanos(nanos: i128) -> UtcDateTime {
    let secs = nanos.div_euclid(NANOS_PER_SEC);
    let subsec = nanos.rem_euclid(NANOS_PER_SEC) as i64;
    let cycles = secs.div_euclid(i128::from(CYCLE_SECS));
    // 0 ≤ inner < CYCLE_SECS: an instant between 1970 and 2370, always in the crate's range.
    let inner = (secs - cycles * i128::from(CYCLE_SECS)) as i64;
    let within_cycle = OffsetDateTime::from_unix_timestamp(inner)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        + time::Duration::nanoseconds(subsec);
    // i128 nanoseconds span about 5.4e21 years / 400: the product fits an i64 year comfortably
    // only up to i64::MAX; saturate instead of wrapping for the absurd extremes.
    let cycle_years = i64::try_from(cycles)
        .ok()
        .and_then(|c| c.checked_mul(400))
        .unwrap_or(if cycles < 0 {
            i64::MIN / 2
        } else {
            i64::MAX / 2
        });
    UtcDateTime {
        year: i64::from(within_cycle.year()).saturating_add(cycle_years),
        within_cycle,
    }
}

/// Splits milliseconds since the Unix epoch into the UTC calendar.
pub fn utc_from_millis(ms: i64) -> UtcDateTime {
    utc_from_nanos(i128::from(ms) * 1_000_000)
}

/// Ruby's `time.utc.iso8601(3)`: `YYYY-MM-DDTHH:MM:SS.mmmZ`, the fraction truncated, for
/// nanoseconds since the Unix epoch. A year before 0 prints as `-YYYY`.
pub fn format_iso8601_millis(nanos: i128) -> String {
    let t = utc_from_nanos(nanos);
    format!(
        "{}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year_text(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// Ruby's `time.utc.iso8601`: `YYYY-MM-DDTHH:MM:SSZ`, for milliseconds since the Unix epoch
/// (the fraction is dropped).
pub fn format_iso8601_seconds(ms: i64) -> String {
    let t = utc_from_millis(ms);
    format!(
        "{}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year_text(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// A cursor over ASCII text for the ISO 8601 parser.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl Cursor<'_> {
    fn eat(&mut self, byte: u8) -> bool {
        match self.rest.split_first() {
            Some((&b, rest)) if b == byte => {
                self.rest = rest;
                true
            }
            _ => false,
        }
    }

    fn eat_any(&mut self, choices: &[u8]) -> Option<u8> {
        let (&b, rest) = self.rest.split_first()?;
        if choices.contains(&b) {
            self.rest = rest;
            Some(b)
        } else {
            None
        }
    }

    /// Exactly `n` ASCII digits as a number.
    fn digits(&mut self, n: usize) -> Option<i64> {
        let (head, rest) = self.rest.split_at_checked(n)?;
        let value = number(head)?;
        self.rest = rest;
        Some(value)
    }

    /// A run of at least `min` and at most `max` ASCII digits, as the digit bytes.
    fn digit_run(&mut self, min: usize, max: usize) -> Option<&[u8]> {
        let len = self.rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if len < min || len > max {
            return None;
        }
        let (head, rest) = self.rest.split_at(len);
        self.rest = rest;
        Some(head)
    }
}

/// ASCII digits (at most 18) as a number; `None` on any other byte.
fn number(digits: &[u8]) -> Option<i64> {
    digits.iter().try_fold(0i64, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + i64::from(b - b'0'))
    })
}

/// Parses Ruby's `Time.iso8601` text into nanoseconds since the Unix epoch.
///
/// Accepts `[-]YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH[[:]MM])`: a year of 4 to 9 digits, `T`/`Z`
/// in either case, seconds up to 60 (a leap second counts as the next second's start), any
/// number of fraction digits (nanoseconds kept, the rest truncated), offsets up to ±23:59.
/// Returns `None` for anything else, including text without a zone (local time in Ruby), an
/// impossible date such as February 30, and surrounding spaces.
pub fn parse_iso8601(text: &str) -> Option<i128> {
    let mut c = Cursor {
        rest: text.as_bytes(),
    };
    let negative = c.eat(b'-');
    let year = number(c.digit_run(4, 9)?)?;
    let year = if negative { -year } else { year };
    c.eat(b'-').then_some(())?;
    let month = c.digits(2)?;
    c.eat(b'-').then_some(())?;
    let day = c.digits(2)?;
    c.eat_any(b"Tt")?;
    let hour = c.digits(2)?;
    c.eat(b':').then_some(())?;
    let minute = c.digits(2)?;
    c.eat(b':').then_some(())?;
    let second = c.digits(2)?;
    if second > 60 {
        return None;
    }
    let mut nanos: i128 = 0;
    if c.eat(b'.') {
        let fraction = c.digit_run(1, usize::MAX)?;
        for i in 0..9 {
            let digit = fraction.get(i).map_or(0, |b| b - b'0');
            nanos = nanos * 10 + i128::from(digit);
        }
    }
    let offset_secs: i64 = match c.eat_any(b"Zz+-")? {
        b'Z' | b'z' => 0,
        sign => {
            let hours = c.digits(2)?;
            let minutes = if c.rest.is_empty() {
                0
            } else {
                let _ = c.eat(b':');
                c.digits(2)?
            };
            if hours > 23 || minutes > 59 {
                return None;
            }
            let offset = hours * 3600 + minutes * 60;
            if sign == b'-' {
                -offset
            } else {
                offset
            }
        }
    };
    if !c.rest.is_empty() {
        return None;
    }

    // Move the year into 2000..=2399 by whole cycles (leap years fall the same way), let the
    // crate validate the date and count the seconds, then move back.
    let cycles = year.div_euclid(400) - 5;
    let year_in_range = i32::try_from(year - cycles * 400).ok()?;
    let date = Date::from_calendar_date(
        year_in_range,
        Month::try_from(u8::try_from(month).ok()?).ok()?,
        u8::try_from(day).ok()?,
    )
    .ok()?;
    // A leap second (:60) is read as :59 plus one second.
    let time = Time::from_hms(
        u8::try_from(hour).ok()?,
        u8::try_from(minute).ok()?,
        u8::try_from(second.min(59)).ok()?,
    )
    .ok()?;
    let local_secs = PrimitiveDateTime::new(date, time)
        .assume_utc()
        .unix_timestamp()
        + (second - second.min(59));
    let secs = i128::from(local_secs) - i128::from(offset_secs)
        + i128::from(cycles) * i128::from(CYCLE_SECS);
    Some(secs * NANOS_PER_SEC + nanos)
}

/// `years` calendar years after `t`, in UTC, as ActiveSupport's `years.from_now` advances a
/// time (`Time#advance(years:)`): the same month, day and time of day, with 29 February
/// becoming 28 February in a year that has none. Rails' `cookies.permanent` sets
/// `expires: 20.years.from_now`. A result outside the calendar's years (−9999 to 9999) falls
/// back to `years` × 365.2425 days.
pub fn years_later(t: SystemTime, years: i32) -> SystemTime {
    let average = std::time::Duration::from_secs(31_556_952 * u64::from(years.unsigned_abs()));
    let fallback = if years >= 0 {
        t.checked_add(average)
    } else {
        t.checked_sub(average)
    }
    .unwrap_or(t);
    let Ok(at) = OffsetDateTime::from_unix_timestamp_nanos(unix_nanos(t)) else {
        return fallback;
    };
    let Some(year) = at.year().checked_add(years) else {
        return fallback;
    };
    let day = if at.month() == Month::February && at.day() == 29 && !time::util::is_leap_year(year)
    {
        28
    } else {
        at.day()
    };
    let Ok(date) = Date::from_calendar_date(year, at.month(), day) else {
        return fallback;
    };
    let nanos = at.replace_date(date).unix_timestamp_nanos();
    match u64::try_from(nanos) {
        Ok(n) => UNIX_EPOCH + std::time::Duration::from_nanos(n),
        Err(_) => u64::try_from(-nanos)
            .ok()
            .and_then(|n| UNIX_EPOCH.checked_sub(std::time::Duration::from_nanos(n)))
            .unwrap_or(fallback),
    }
}

/// Whether the `exp` of a Rails metadata envelope (`_rails`, as `MessageVerifier` and signed
/// ids write it) lets it be used at `now`: `Some(())` when there is none (or it is `null`) or
/// when it is an ISO 8601 time later than `now`; `None` when it has passed or is malformed.
pub fn unexpired(
    meta: &serde_json::Map<String, serde_json::Value>,
    now: std::time::SystemTime,
) -> Option<()> {
    match meta.get("exp") {
        None | Some(serde_json::Value::Null) => Some(()),
        Some(serde_json::Value::String(exp)) => {
            (unix_nanos(now) < parse_iso8601(exp)?).then_some(())
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn years_later_is_calendar_years() {
        let at = |s: &str| {
            UNIX_EPOCH + std::time::Duration::from_nanos(parse_iso8601(s).unwrap() as u64)
        };
        let shown = |t: SystemTime| format_iso8601_millis(unix_nanos(t));
        assert_eq!(
            shown(years_later(at("2027-01-15T08:00:00.123Z"), 20)),
            "2047-01-15T08:00:00.123Z"
        );
        assert_eq!(
            shown(years_later(at("2028-02-29T23:59:59.999Z"), 20)),
            "2048-02-29T23:59:59.999Z"
        );
        assert_eq!(
            shown(years_later(at("2028-02-29T12:00:00Z"), 1)),
            "2029-02-28T12:00:00.000Z"
        );
        assert_eq!(
            shown(years_later(at("2027-03-01T00:00:00Z"), -1)),
            "2026-03-01T00:00:00.000Z"
        );
        // Past the calendar: the average year.
        let far = at("9990-01-01T00:00:00Z");
        assert!(years_later(far, 20) > far);
    }

    #[test]
    fn millis_format() {
        let ns = |s: i128, ms: i128| s * NANOS_PER_SEC + ms * 1_000_000;
        assert_eq!(format_iso8601_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_iso8601_millis(ns(2_427_160_095, 123) + 999_999),
            "2046-11-30T03:08:15.123Z"
        );
        assert_eq!(format_iso8601_millis(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            format_iso8601_millis(ns(951_782_400, 0)),
            "2000-02-29T00:00:00.000Z"
        );
        // Outside the crate's own range, both ways.
        assert_eq!(
            format_iso8601_millis(ns(253_402_300_800, 0)),
            "10000-01-01T00:00:00.000Z"
        );
        assert_eq!(
            format_iso8601_millis(ns(-62_167_219_201, 0)),
            "-0001-12-31T23:59:59.000Z"
        );
        assert_eq!(
            format_iso8601_millis(ns(-377_705_116_801, 0)),
            "-10000-12-31T23:59:59.000Z"
        );
    }

    #[test]
    fn seconds_format() {
        assert_eq!(format_iso8601_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_iso8601_seconds(1_796_004_300_999),
            "2026-11-30T02:05:00Z"
        );
        assert_eq!(format_iso8601_seconds(-1), "1969-12-31T23:59:59Z");
        // Any i64 is accepted.
        for ms in [i64::MIN, i64::MAX] {
            assert!(format_iso8601_seconds(ms).ends_with('Z'));
        }
    }

    #[test]
    fn civil_fields_agree_with_a_day_count() {
        // Every 97th day over about ±2200 years: the fields are in range, and parsing the
        // printed date gives the day back.
        for days in (-800_000i64..800_000).step_by(97) {
            let t = utc_from_millis(days * 86_400_000);
            assert!((1..=12).contains(&t.month()) && (1..=31).contains(&t.day()));
            let text = format!(
                "{}-{:02}-{:02}T00:00:00Z",
                t.year_text(),
                t.month(),
                t.day()
            );
            assert_eq!(
                parse_iso8601(&text),
                Some(i128::from(days) * 86_400 * NANOS_PER_SEC),
                "{text}"
            );
        }
    }

    #[test]
    fn parse_accepts_ruby_forms() {
        let ns = |s: i128, ms: i128| s * NANOS_PER_SEC + ms * 1_000_000;
        assert_eq!(
            parse_iso8601("2046-11-30T03:08:15.123Z"),
            Some(ns(2_427_160_095, 123))
        );
        assert_eq!(
            parse_iso8601("2046-11-30t03:08:15z"),
            Some(ns(2_427_160_095, 0))
        );
        assert_eq!(
            parse_iso8601("2046-11-30T03:08:15.123456789123Z"),
            Some(ns(2_427_160_095, 123) + 456_789)
        );
        assert_eq!(
            parse_iso8601("2046-11-30T12:08:15+09:00"),
            Some(ns(2_427_160_095, 0))
        );
        assert_eq!(
            parse_iso8601("2046-11-29T22:08:15-0500"),
            Some(ns(2_427_160_095, 0))
        );
        assert_eq!(
            parse_iso8601("2046-11-30T04:08:15+01"),
            Some(ns(2_427_160_095, 0))
        );
        assert_eq!(
            parse_iso8601("1969-12-31T23:59:59.5Z"),
            Some(-NANOS_PER_SEC / 2)
        );
        assert_eq!(
            parse_iso8601("2000-02-29T00:00:00Z"),
            Some(ns(951_782_400, 0))
        );
        assert_eq!(
            parse_iso8601("2016-12-31T23:59:60Z"),
            Some(ns(1_483_228_800, 0))
        );
        // Years beyond the crate's range: 5 to 9 digits, and negative ones.
        assert_eq!(
            parse_iso8601("10000-01-01T00:00:00Z"),
            Some(ns(253_402_300_800, 0))
        );
        assert_eq!(
            parse_iso8601("-10000-12-31T23:59:59Z"),
            Some(ns(-377_705_116_801, 0))
        );
        assert_eq!(
            parse_iso8601("-0001-12-31T23:59:59Z"),
            Some(ns(-62_167_219_201, 0))
        );
        assert_eq!(
            parse_iso8601("0000-01-01T00:00:00Z"),
            Some(ns(-62_167_219_200, 0))
        );
        let far = parse_iso8601("999999999-12-31T23:59:59Z");
        assert_eq!(
            far.map(format_iso8601_millis).as_deref(),
            Some("999999999-12-31T23:59:59.000Z")
        );
        assert_eq!(
            parse_iso8601("12000-02-29T00:00:00Z")
                .map(format_iso8601_millis)
                .as_deref(),
            Some("12000-02-29T00:00:00.000Z")
        );
        assert_eq!(parse_iso8601("11900-02-29T00:00:00Z"), None);
    }

    #[test]
    fn parse_rejects_everything_else() {
        for bad in [
            "",
            "2046-11-30",
            "2046-11-30T03:08:15",
            "2046-11-30T03:08:15.Z",
            "2046-11-30T03:08:15.123",
            "2046-11-30 03:08:15Z",
            " 2046-11-30T03:08:15Z",
            "2046-11-30T03:08:15Z ",
            "2046-13-30T03:08:15Z",
            "2046-00-30T03:08:15Z",
            "2046-11-31T03:08:15Z",
            "2001-02-29T03:08:15Z",
            "1900-02-29T03:08:15Z",
            "2046-11-00T03:08:15Z",
            "2046-11-30T24:00:00Z",
            "2046-11-30T03:60:15Z",
            "2046-11-30T03:08:61Z",
            "2046-11-30T03:08:15+24:00",
            "2046-11-30T03:08:15+09:60",
            "2046-11-30T03:08:15+9",
            "2046-11-30T03:08:15+09:0",
            "2046-11-30T03:08:15+0900x",
            "046-11-30T03:08:15Z",
            "2046-1-30T03:08:15Z",
            "2046-11-30T03:08:15ZZ",
            "２０４６-11-30T03:08:15Z",
            "12345678901-11-30T03:08:15Z",
            "+2046-11-30T03:08:15Z",
            "2046-11-30T03:08:1aZ",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn round_trip() {
        // Millisecond instants from 1811 to 3554.
        let mut t: i128 = -5_000_000_000 * NANOS_PER_SEC;
        while t < 50_000_000_000 * NANOS_PER_SEC {
            let text = format_iso8601_millis(t);
            assert_eq!(parse_iso8601(&text), Some(t), "{text}");
            t += 7_777_777_123_000_000;
        }
    }

    #[test]
    fn unix_nanos_both_sides_of_the_epoch() {
        use std::time::Duration;
        assert_eq!(unix_nanos(UNIX_EPOCH + Duration::from_nanos(5)), 5);
        assert_eq!(unix_nanos(UNIX_EPOCH - Duration::from_nanos(5)), -5);
    }
}
