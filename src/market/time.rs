//! RFC 3339 UTC timestamps (`2030-01-01T00:00:00.000Z`) as unix
//! milliseconds, and the clock the market reads (replaceable in tests).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Days from 1970-01-01 to a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Parses `YYYY-MM-DDTHH:MM:SS[.fraction]Z` (UTC only) to unix
/// milliseconds; `None` when the text is not exactly that.
pub fn parse_rfc3339_utc(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || !s.is_ascii() || b[b.len() - 1] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let dim = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo)
        || d < 1
        || d > dim[(mo - 1) as usize]
        || h > 23
        || mi > 59
        || sec > 59
    {
        return None;
    }
    let mut ms = 0;
    let rest = &s[19..s.len() - 1];
    if !rest.is_empty() {
        let frac = rest.strip_prefix('.')?;
        if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        let padded = format!("{frac:0<3}");
        ms = padded[..3].parse().ok()?;
    }
    Some(((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000 + sec * 1000 + ms)
}

/// Formats unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_rfc3339_utc(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// Where the market reads the time: the system clock, or a manual one a
/// test moves forward.
#[derive(Clone, Default)]
pub enum Clock {
    #[default]
    System,
    Manual(Arc<AtomicI64>),
}

impl Clock {
    /// A manual clock starting at `ms`, and the handle that moves it.
    pub fn manual(ms: i64) -> (Clock, Arc<AtomicI64>) {
        let a = Arc::new(AtomicI64::new(ms));
        (Clock::Manual(a.clone()), a)
    }

    /// Now, in unix milliseconds.
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => system_ms(),
            Clock::Manual(a) => a.load(Ordering::SeqCst),
        }
    }
}

/// The system clock in unix milliseconds.
pub fn system_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_non_utc() {
        let t = parse_rfc3339_utc("2030-01-01T00:00:00.000Z").unwrap();
        assert_eq!(t, 1_893_456_000_000);
        assert_eq!(format_rfc3339_utc(t), "2030-01-01T00:00:00.000Z");
        assert_eq!(parse_rfc3339_utc("2030-01-01T00:00:00Z"), Some(t));
        assert_eq!(parse_rfc3339_utc("2030-01-01T00:00:00.5Z"), Some(t + 500));
        assert_eq!(
            parse_rfc3339_utc("2024-02-29T12:34:56.789Z").map(format_rfc3339_utc),
            Some("2024-02-29T12:34:56.789Z".into())
        );
        for bad in [
            "2030-01-01T00:00:00+01:00",
            "2030-02-30T00:00:00Z",
            "2030-01-01 00:00:00Z",
            "2030-01-01T24:00:00Z",
            "soon",
            "2030-01-01T00:00:00.Z",
        ] {
            assert_eq!(parse_rfc3339_utc(bad), None, "{bad}");
        }
    }
}
