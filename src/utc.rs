//! UTC timestamps in the text forms the files and the wire carry, on the
//! `time` crate: the calendar (month lengths, leap years, days since the
//! epoch) is its, and so is refusing a date that does not exist.
//!
//! Each form is a compatibility contract, kept byte for byte:
//! - [`iso_at`]: Python's `datetime.isoformat()` of an aware UTC time with
//!   microseconds, `2026-11-30T04:56:02.135642+00:00` (the state-dir files);
//! - [`format_rfc3339_utc`]: RFC 3339 with milliseconds and `Z`,
//!   `2030-01-01T00:00:00.000Z` (GTL market messages, werewolf logs);
//! - [`parse_http_date`]: HTTP's IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`.
//!
//! Only years 0000 to 9999 have these forms; a time outside them is written
//! as the nearest end of that range.

use std::time::{SystemTime, UNIX_EPOCH};
use time::UtcDateTime;
use time::format_description::BorrowedFormatItem;
use time::macros::format_description;

/// `2026-11-30T04:56:02.135642+00:00`.
const ISO_MICROS: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]+00:00");

/// `2030-01-01T00:00:00.000Z`.
const RFC3339_MILLIS: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// `YYYY-MM-DDTHH:MM:SS[.1 to 9 digits]Z`.
const RFC3339_Z: &[BorrowedFormatItem<'_>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second][optional [.[subsecond]]]Z");

/// `YYYY-MM-DD(T| )HH:MM:SS[.1 to 9 digits][Z|±HH:MM]`.
const ISO_ANY_OFFSET: &[BorrowedFormatItem<'_>] = format_description!(
    "[year]-[month]-[day][first [T] [ ]][hour]:[minute]:[second][optional [.[subsecond]]]\
     [optional [[first [Z] [[offset_hour sign:mandatory]:[offset_minute]]]]]"
);

/// IMF-fixdate after its (redundant) weekday: `06 Nov 1994 08:49:37 GMT`.
const IMF_FIXDATE: &[BorrowedFormatItem<'_>] =
    format_description!("[day] [month repr:short] [year] [hour]:[minute]:[second] GMT");

/// The instant `nanos` after the epoch, or the nearest one the forms have.
fn at_unix_nanos(nanos: i128) -> UtcDateTime {
    UtcDateTime::from_unix_timestamp_nanos(nanos).unwrap_or(if nanos < 0 {
        UtcDateTime::MIN
    } else {
        UtcDateTime::MAX
    })
}

fn format(t: UtcDateTime, form: &[BorrowedFormatItem<'_>]) -> String {
    // Formatting a full date and time with literal text cannot fail (no
    // component is missing and a String takes every write).
    t.format(form).unwrap_or_default()
}

/// Now as Python's `datetime.now(timezone.utc).isoformat()`.
pub fn iso_now() -> String {
    iso_at(SystemTime::now())
}

/// A time as `YYYY-MM-DDTHH:MM:SS.ffffff+00:00` (microseconds cut, not
/// rounded; a time before the epoch is the epoch).
pub fn iso_at(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let nanos = i128::try_from(since.as_nanos()).unwrap_or(i128::MAX);
    format(at_unix_nanos(nanos), ISO_MICROS)
}

/// Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_rfc3339_utc(ms: i64) -> String {
    format(at_unix_nanos(i128::from(ms) * 1_000_000), RFC3339_MILLIS)
}

/// Unix milliseconds (the fraction cut to them) of exactly
/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, a date that exists and a time of day
/// up to 23:59:59; `None` for anything else (another offset, a sign before
/// the year, 31 February).
pub fn parse_rfc3339_utc(s: &str) -> Option<i64> {
    // `[year]` takes a sign and `[subsecond]` up to 32 digits (the rest
    // ignored); this form has no sign and at most nanoseconds.
    if !s.starts_with(|c: char| c.is_ascii_digit())
        || s.len() > "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ".len()
    {
        return None;
    }
    let t = UtcDateTime::parse(s, RFC3339_Z).ok()?;
    Some(t.unix_timestamp() * 1000 + i64::from(t.millisecond()))
}

/// Seconds since the epoch (with the fraction) of
/// `YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM]`, `T` or a space between date
/// and time, UTC when no offset is given: what the session files and the
/// reference write. `None` for anything else, 31 February included.
pub fn parse_iso_seconds(s: &str) -> Option<f64> {
    if !s.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let t = UtcDateTime::parse(s, ISO_ANY_OFFSET).ok()?;
    Some(t.unix_timestamp() as f64 + f64::from(t.nanosecond()) / 1e9)
}

/// Unix seconds of an HTTP date in its one modern form (IMF-fixdate, RFC
/// 9110 §5.6.7: `Sun, 06 Nov 1994 08:49:37 GMT`), years 1970 to 9999. The
/// weekday is not checked against the date.
pub fn parse_http_date(text: &str) -> Option<i64> {
    let (_, rest) = text.trim().split_once(", ")?;
    let t = UtcDateTime::parse(rest, IMF_FIXDATE).ok()?;
    (t.year() >= 1970).then(|| t.unix_timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn python_isoformat_with_microseconds() {
        let t = UNIX_EPOCH + Duration::from_micros(1_796_014_562_135_642);
        assert_eq!(iso_at(t), "2026-11-30T04:56:02.135642+00:00");
        assert_eq!(iso_at(UNIX_EPOCH), "1970-01-01T00:00:00.000000+00:00");
        // Microseconds are cut, as Python keeps them.
        let t = UNIX_EPOCH + Duration::from_nanos(1_999_999_999);
        assert_eq!(iso_at(t), "1970-01-01T00:00:01.999999+00:00");
        // Before the epoch reads as the epoch.
        assert_eq!(
            iso_at(UNIX_EPOCH - Duration::from_secs(5)),
            "1970-01-01T00:00:00.000000+00:00"
        );
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso_at(leap), "2000-02-29T00:00:00.000000+00:00");
        assert_eq!(
            iso_at(UNIX_EPOCH + Duration::from_secs(400_000_000_000)),
            "9999-12-31T23:59:59.999999+00:00"
        );
    }

    #[test]
    fn rfc3339_round_trips_and_refuses_non_utc() {
        let t = parse_rfc3339_utc("2030-01-01T00:00:00.000Z").unwrap();
        assert_eq!(t, 1_893_456_000_000);
        assert_eq!(format_rfc3339_utc(t), "2030-01-01T00:00:00.000Z");
        assert_eq!(parse_rfc3339_utc("2030-01-01T00:00:00Z"), Some(t));
        assert_eq!(parse_rfc3339_utc("2030-01-01T00:00:00.5Z"), Some(t + 500));
        assert_eq!(
            parse_rfc3339_utc("2030-01-01T00:00:00.123456789Z"),
            Some(t + 123)
        );
        assert_eq!(
            parse_rfc3339_utc("2024-02-29T12:34:56.789Z").map(format_rfc3339_utc),
            Some("2024-02-29T12:34:56.789Z".into())
        );
        assert_eq!(format_rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_rfc3339_utc(-1), "1969-12-31T23:59:59.999Z");
        // Before the epoch the fraction still counts forward from the second.
        assert_eq!(parse_rfc3339_utc("1969-12-31T23:59:59.5005Z"), Some(-500));
        assert_eq!(format_rfc3339_utc(i64::MAX), "9999-12-31T23:59:59.999Z");
        assert_eq!(format_rfc3339_utc(i64::MIN), "-9999-01-01T00:00:00.000Z");
        for bad in [
            "2030-01-01T00:00:00+01:00",
            "2030-01-01T00:00:00+00:00",
            "2030-02-30T00:00:00Z",
            "2030-01-01 00:00:00Z",
            "2030-01-01T24:00:00Z",
            "2030-01-01T23:60:00Z",
            "2030-01-01T23:59:60Z",
            "soon",
            "",
            "2030-01-01T00:00:00.Z",
            "2030-01-01T00:00:00.1234567890Z",
            "2030-01-01T00:00:00z",
            "+2030-01-01T00:00:00Z",
            "-2030-01-01T00:00:00Z",
            "2030-1-01T00:00:00Z",
            "2030-01-01T00:00:00Z ",
            "２030-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339_utc(bad), None, "{bad}");
        }
    }

    #[test]
    fn invalid_dates_are_refused_and_leap_years_kept() {
        for (y, leap) in [
            (2024, true),
            (2000, true),
            (2400, true),
            (2023, false),
            (1900, false),
            (2100, false),
        ] {
            let feb29 = format!("{y}-02-29T00:00:00Z");
            assert_eq!(parse_rfc3339_utc(&feb29).is_some(), leap, "{feb29}");
            assert_eq!(parse_iso_seconds(&feb29).is_some(), leap, "{feb29}");
            let http = format!("Xxx, 29 Feb {y} 00:00:00 GMT");
            assert_eq!(parse_http_date(&http).is_some(), leap, "{http}");
        }
        for (m, last) in [
            (1, 31),
            (3, 31),
            (4, 30),
            (5, 31),
            (6, 30),
            (7, 31),
            (8, 31),
            (9, 30),
            (10, 31),
            (11, 30),
            (12, 31),
        ] {
            let ok = format!("2026-{m:02}-{last}T00:00:00Z");
            let past = format!("2026-{m:02}-{}T00:00:00Z", last + 1);
            assert!(parse_rfc3339_utc(&ok).is_some(), "{ok}");
            assert_eq!(parse_rfc3339_utc(&past), None, "{past}");
            assert_eq!(parse_iso_seconds(&past), None, "{past}");
        }
        for bad in [
            "2026-02-31T00:00:00Z",
            "2026-02-30T00:00:00+00:00",
            "2026-04-31T12:00:00.5Z",
            "2026-00-10T00:00:00Z",
            "2026-13-10T00:00:00Z",
            "2026-01-00T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339_utc(bad), None, "{bad}");
            assert_eq!(parse_iso_seconds(bad), None, "{bad}");
        }
        assert_eq!(parse_http_date("Tue, 31 Feb 2026 00:00:00 GMT"), None);
        assert_eq!(parse_http_date("Tue, 31 Apr 2026 00:00:00 GMT"), None);
        // Days since the epoch across a leap day.
        let d = |s: &str| parse_rfc3339_utc(s).unwrap() / 86_400_000;
        assert_eq!(d("2024-03-01T00:00:00Z") - d("2024-02-28T00:00:00Z"), 2);
        assert_eq!(d("2023-03-01T00:00:00Z") - d("2023-02-28T00:00:00Z"), 1);
        assert_eq!(d("2100-03-01T00:00:00Z") - d("2100-02-28T00:00:00Z"), 1);
    }

    #[test]
    fn iso_with_any_offset_to_seconds() {
        assert_eq!(parse_iso_seconds("1970-01-01T00:00:00+00:00"), Some(0.0));
        let t = parse_iso_seconds("2026-12-02T12:30:31.301499+00:00").unwrap();
        assert_eq!(t, 1_796_214_631.0 + 0.301_499);
        assert_eq!(
            parse_iso_seconds("2026-12-02T12:30:31Z"),
            Some(1_796_214_631.0)
        );
        assert_eq!(
            parse_iso_seconds("2026-12-02T12:30:31"),
            Some(1_796_214_631.0)
        );
        assert_eq!(
            parse_iso_seconds("2026-12-02 12:30:31"),
            Some(1_796_214_631.0)
        );
        assert_eq!(
            parse_iso_seconds("2026-12-02T13:30:31+01:00"),
            Some(1_796_214_631.0)
        );
        assert_eq!(
            parse_iso_seconds("2026-12-02T07:00:31-05:30"),
            Some(1_796_214_631.0)
        );
        assert_eq!(parse_iso_seconds("1969-12-31T23:59:59.5Z"), Some(-0.5));
        for bad in [
            "",
            "x",
            "2026-13-02T12:30:31Z",
            "2026-12-02T12:30:31+0",
            "2026-12-02T12:30:31+01",
            "2026-12-02 12",
            "2026-12-02X12:30:31Z",
            "2026-12-02T12:30:31.+00:00",
            "2026-12-02T12:30:31+00:00 ",
            "+2026-12-02T12:30:31Z",
        ] {
            assert_eq!(parse_iso_seconds(bad), None, "{bad}");
        }
        // What iso_at writes reads back to the same microsecond.
        let t = UNIX_EPOCH + Duration::from_micros(1_796_014_562_135_642);
        let back = parse_iso_seconds(&iso_at(t)).unwrap();
        assert!((back - 1_796_014_562.135_642).abs() < 1e-6, "{back}");
    }

    #[test]
    fn http_dates_parse_to_unix_seconds() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date(" Wed, 02 Dec 2026 02:30:00 GMT\r\n"),
            Some(1_796_178_600)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"),
            Some(1_835_438_400)
        );
        for bad in [
            "",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nox 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Wed, 31 Dec 1969 23:59:59 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }
}
