//! Timestamps: milliseconds since the Unix epoch, shown as RFC 3339 UTC with
//! milliseconds (`2026-11-21T05:55:49.123Z`), as Open Payments clients expect.

use std::fmt;
use std::time::Duration;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// An instant with millisecond precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "timestamp must be an RFC 3339 date-time with a time zone, such as 2026-01-31T12:00:00.000Z"
)]
pub struct TimestampError;

impl Timestamp {
    pub fn now_utc() -> Self {
        let now = OffsetDateTime::now_utc();
        Self((now.unix_timestamp_nanos() / 1_000_000) as i64)
    }

    pub const fn from_unix_millis(ms: i64) -> Self {
        Self(ms)
    }

    pub const fn unix_millis(self) -> i64 {
        self.0
    }

    pub const fn unix_seconds(self) -> i64 {
        self.0.div_euclid(1000)
    }

    /// `d` later (saturating: a duration past `i64` milliseconds is
    /// forever).
    pub fn plus(self, d: Duration) -> Self {
        self.plus_millis(millis(d))
    }

    /// `d` earlier (saturating).
    pub fn minus(self, d: Duration) -> Self {
        Self(self.0.saturating_sub(millis(d)))
    }

    pub fn plus_millis(self, ms: i64) -> Self {
        Self(self.0.saturating_add(ms))
    }

    pub fn plus_seconds(self, s: i64) -> Self {
        self.plus_millis(s.saturating_mul(1000))
    }

    /// Parses any RFC 3339 date-time (any offset); sub-millisecond digits
    /// are truncated.
    pub fn parse_rfc3339(s: &str) -> Result<Self, TimestampError> {
        let t = OffsetDateTime::parse(s, &Rfc3339).map_err(|_| TimestampError)?;
        let ms = t.unix_timestamp_nanos().div_euclid(1_000_000);
        i64::try_from(ms).map(Self).map_err(|_| TimestampError)
    }

    /// RFC 3339 in UTC with exactly three fractional digits.
    pub fn to_rfc3339(self) -> String {
        match OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0) * 1_000_000) {
            Ok(t) => format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second(),
                t.millisecond()
            ),
            // Out of the calendar's range; unreachable for parsed or clock
            // values, but never panic.
            Err(_) => "9999-12-31T23:59:59.999Z".to_owned(),
        }
    }
}

/// `d` in milliseconds, as timestamps count them; a duration past `i64`
/// milliseconds (about 292 million years) counts as the largest.
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_and_seconds() {
        let t = Timestamp::from_unix_millis(1_700_000_000_999);
        assert_eq!(t.unix_millis(), 1_700_000_000_999);
        assert_eq!(t.unix_seconds(), 1_700_000_000);
        // Before 1970 the second is floored, not truncated.
        assert_eq!(Timestamp::from_unix_millis(-1).unix_seconds(), -1);
        assert_eq!(t.to_string(), "2023-11-14T22:13:20.999Z");
        // The system clock reads in milliseconds: after 2020, before 2200.
        let now = Timestamp::now_utc().unix_millis();
        assert!(
            (1_577_836_800_000..7_258_118_400_000).contains(&now),
            "{now}"
        );
    }

    #[test]
    fn durations_move_a_timestamp_and_saturate() {
        let t = Timestamp::from_unix_millis(1_000);
        assert_eq!(t.plus(Duration::from_millis(1_500)).unix_millis(), 2_500);
        assert_eq!(t.minus(Duration::from_secs(2)).unix_millis(), -1_000);
        assert_eq!(millis(Duration::MAX), i64::MAX);
        assert_eq!(t.plus(Duration::MAX).unix_millis(), i64::MAX);
        assert_eq!(t.minus(Duration::MAX).unix_millis(), 1_000 - i64::MAX);
    }

    #[test]
    fn formats_with_milliseconds_in_utc() {
        let t = Timestamp::parse_rfc3339("2022-03-12T23:20:50.52Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2022-03-12T23:20:50.520Z");
        let t = Timestamp::parse_rfc3339("2022-03-13T01:20:50+02:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2022-03-12T23:20:50.000Z");
        assert_eq!(
            Timestamp::from_unix_millis(0).to_rfc3339(),
            "1970-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn rejects_non_rfc3339() {
        for bad in [
            "",
            "2022-03-12",
            "2022-03-12T23:20:50",
            "yesterday",
            "1647127250",
        ] {
            assert!(Timestamp::parse_rfc3339(bad).is_err(), "{bad}");
        }
    }
}
