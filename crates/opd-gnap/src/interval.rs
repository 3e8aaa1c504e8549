//! ISO 8601 repeating intervals, as used by the `interval` of outgoing
//! payment limits: `R12/2019-08-24T14:15:22Z/P1M`.
//!
//! # Accepted forms
//!
//! `R[n]/<start>/<duration>`, `R[n]/<start>/<end>` and
//! `R[n]/<duration>/<end>`, where
//!
//! - `R` and `R-1` repeat forever, `Rn` (decimal, `n >= 0`) means the first
//!   interval **plus `n` repetitions** (so `R0` is just the first interval);
//!   other forms such as `R-5` are rejected;
//! - `<start>`/`<end>` are RFC 3339 date-times with `Z` or an offset
//!   (see [`Timestamp::parse_rfc3339`]); they are converted to UTC and all
//!   arithmetic happens in UTC, as in the reference server;
//! - `<duration>` is `P[nY][nM][nW][nD][T[nH][nM][n[.f]S]]` with unsigned
//!   integer components in that order (at least one), a fraction only on
//!   seconds (`.` or `,`, kept to the millisecond). It must be positive.
//!
//! # Semantics of [`RepeatingInterval::interval_at`]
//!
//! Intervals are half-open, `[start, end)`. The first interval is the one
//! the string spells out. Later ones are reached by stepping from the
//! previous boundary:
//!
//! - `start/duration`: forwards, each next end = previous end + duration by
//!   **calendar addition**. Calendar addition adds years and months first,
//!   clamping the day to the month's length, then weeks and days, then the
//!   time part. Clamping is not undone later, so month ends drift:
//!   `2021-01-31 + P1M = 2021-02-28`, and the next boundary is
//!   `2021-03-28`, not `2021-03-31`. This matches the reference server
//!   (Luxon `plus`), which is what grants already in use were written
//!   against.
//! - `start/end`: forwards, by the first interval's exact length in
//!   milliseconds.
//! - `duration/end`: the first interval is `[end - duration, end)`, and
//!   the others go **backwards** from it (calendar subtraction, drifting the
//!   same way). Instants at or after `end` are in no interval.
//!
//! Instants before the first interval of a forwards form are in no
//! interval, and neither are instants past the last repetition of `Rn`.

use std::fmt;

use opd_core::Timestamp;
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime};

/// Why a repeating interval or duration could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid ISO 8601 repeating interval: {0}")]
pub struct IntervalError(&'static str);

impl IntervalError {
    /// The reason, without the prefix.
    pub fn reason(&self) -> &'static str {
        self.0
    }
}

/// An ISO 8601 duration with unsigned components.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IsoDuration {
    /// `Y`.
    pub years: u32,
    /// `M` before `T`.
    pub months: u32,
    /// `W`.
    pub weeks: u32,
    /// `D`.
    pub days: u32,
    /// `H`.
    pub hours: u32,
    /// `M` after `T`.
    pub minutes: u32,
    /// Whole seconds of `S`.
    pub seconds: u32,
    /// Milliseconds of the fraction of `S` (0..=999).
    pub millis: u32,
}

impl IsoDuration {
    /// Parses `P…`, e.g. `P1M`, `P1Y2M10DT2H30M`, `PT0.5S`, `P2W`.
    pub fn parse(s: &str) -> Result<Self, IntervalError> {
        let body = s
            .strip_prefix('P')
            .ok_or(IntervalError("a duration starts with P"))?;
        let (date_part, time_part) = match body.split_once('T') {
            Some((d, t)) => {
                if t.is_empty() {
                    return Err(IntervalError("T must be followed by a time component"));
                }
                (d, Some(t))
            }
            None => (body, None),
        };
        let mut d = IsoDuration::default();
        let mut any = false;
        for (value, _, designator) in components(date_part, b"YMWD", false)? {
            any = true;
            match designator {
                b'Y' => d.years = value,
                b'M' => d.months = value,
                b'W' => d.weeks = value,
                _ => d.days = value,
            }
        }
        if let Some(t) = time_part {
            for (value, millis, designator) in components(t, b"HMS", true)? {
                any = true;
                match designator {
                    b'H' => d.hours = value,
                    b'M' => d.minutes = value,
                    _ => {
                        d.seconds = value;
                        d.millis = millis;
                    }
                }
            }
        }
        if !any {
            return Err(IntervalError("a duration needs at least one component"));
        }
        Ok(d)
    }

    /// True when all components are zero.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    /// True when the duration has a fixed length (no years or months).
    /// Days and weeks are fixed because arithmetic happens in UTC.
    pub fn is_exact(&self) -> bool {
        self.years == 0 && self.months == 0
    }

    /// The length of weeks, days and the time part in milliseconds
    /// (ignoring years and months).
    pub fn exact_millis(&self) -> i64 {
        let days = i64::from(self.weeks) * 7 + i64::from(self.days);
        days * 86_400_000 + self.time_millis()
    }

    fn time_millis(&self) -> i64 {
        ((i64::from(self.hours) * 60 + i64::from(self.minutes)) * 60 + i64::from(self.seconds))
            * 1000
            + i64::from(self.millis)
    }

    /// `t` plus (`sign` = 1) or minus (`sign` = -1) this duration by
    /// calendar arithmetic in UTC; `None` outside years -9999..=9999.
    pub fn add_to(&self, t: Timestamp, sign: i8) -> Option<Timestamp> {
        let sign = i64::from(sign.signum());
        let odt = to_odt(t)?;
        let date = odt.date();
        let months = i64::from(date.year()) * 12 + i64::from(u8::from(date.month())) - 1
            + sign * (i64::from(self.years) * 12 + i64::from(self.months));
        let year = i32::try_from(months.div_euclid(12)).ok()?;
        let month = Month::try_from(u8::try_from(months.rem_euclid(12) + 1).ok()?).ok()?;
        let day = date.day().min(month.length(year));
        let date = Date::from_calendar_date(year, month, day).ok()?;
        let days = sign * (i64::from(self.weeks) * 7 + i64::from(self.days));
        let date = date.checked_add(time::Duration::days(days))?;
        let odt = PrimitiveDateTime::new(date, odt.time()).assume_utc();
        let odt = odt.checked_add(time::Duration::milliseconds(sign * self.time_millis()))?;
        from_odt(odt)
    }
}

/// Splits `s` into `<digits>[fraction]<designator>` components whose
/// designators appear in `order` in that order, each at most once.
fn components(
    s: &str,
    order: &[u8],
    fraction_on_last: bool,
) -> Result<Vec<(u32, u32, u8)>, IntervalError> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut next_allowed = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return Err(IntervalError(
                "a duration component must start with a digit",
            ));
        }
        let value: u32 = s[start..i]
            .parse()
            .map_err(|_| IntervalError("a duration component is too large"))?;
        let mut millis = 0;
        let mut has_fraction = false;
        if i < bytes.len() && (bytes[i] == b'.' || bytes[i] == b',') {
            i += 1;
            let fstart = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let digits = &bytes[fstart..i];
            if digits.is_empty() || digits.len() > 9 {
                return Err(IntervalError("a fraction needs 1 to 9 digits"));
            }
            millis = digits
                .iter()
                .chain(std::iter::repeat(&b'0'))
                .take(3)
                .fold(0u32, |acc, b| acc * 10 + u32::from(b - b'0'));
            has_fraction = true;
        }
        let designator = *bytes
            .get(i)
            .ok_or(IntervalError("a duration component needs a designator"))?;
        i += 1;
        let pos = order[next_allowed..]
            .iter()
            .position(|&d| d == designator)
            .ok_or(IntervalError(
                "duration designators must be Y M W D, then T H M S, in order and once each",
            ))?
            + next_allowed;
        if has_fraction && !(fraction_on_last && designator == b'S') {
            return Err(IntervalError("only seconds may have a fraction"));
        }
        next_allowed = pos + 1;
        out.push((value, millis, designator));
    }
    Ok(out)
}

fn to_odt(t: Timestamp) -> Option<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(t.unix_millis()) * 1_000_000).ok()
}

fn from_odt(t: OffsetDateTime) -> Option<Timestamp> {
    i64::try_from(t.unix_timestamp_nanos().div_euclid(1_000_000))
        .ok()
        .map(Timestamp::from_unix_millis)
}

/// How many times the first interval repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repetitions {
    /// `Rn`: the first interval and `n` more.
    Finite(u64),
    /// `R` or `R-1`.
    Infinite,
}

/// The two parts after `R[n]/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntervalSpec {
    /// `start/duration`: steps forwards by calendar addition.
    StartDuration {
        /// First start.
        start: Timestamp,
        /// Step.
        duration: IsoDuration,
    },
    /// `start/end`: steps forwards by the exact length `end - start`.
    StartEnd {
        /// First start.
        start: Timestamp,
        /// First end.
        end: Timestamp,
    },
    /// `duration/end`: steps backwards by calendar subtraction.
    DurationEnd {
        /// Step.
        duration: IsoDuration,
        /// First (latest) end.
        end: Timestamp,
    },
}

/// A parsed ISO 8601 repeating interval. See the [module docs](self) for
/// the accepted forms and the stepping rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RepeatingInterval {
    source: String,
    repetitions: Repetitions,
    spec: IntervalSpec,
    first: (Timestamp, Timestamp),
}

impl RepeatingInterval {
    /// Parses `R[n]/start/duration`, `R[n]/start/end` or `R[n]/duration/end`.
    /// Never panics.
    pub fn parse(s: &str) -> Result<Self, IntervalError> {
        let mut parts = s.split('/');
        let (Some(r), Some(a), Some(b), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(IntervalError(
                "expected R[n]/<start or duration>/<end or duration>",
            ));
        };
        let repetitions = parse_repetitions(r)?;
        let spec = if a.starts_with('P') {
            IntervalSpec::DurationEnd {
                duration: IsoDuration::parse(a)?,
                end: parse_datetime(b)?,
            }
        } else {
            let start = parse_datetime(a)?;
            if b.starts_with('P') {
                IntervalSpec::StartDuration {
                    start,
                    duration: IsoDuration::parse(b)?,
                }
            } else {
                IntervalSpec::StartEnd {
                    start,
                    end: parse_datetime(b)?,
                }
            }
        };
        let first = match spec {
            IntervalSpec::StartDuration { start, duration } => (
                start,
                duration
                    .add_to(start, 1)
                    .ok_or(IntervalError("the first interval is out of range"))?,
            ),
            IntervalSpec::StartEnd { start, end } => (start, end),
            IntervalSpec::DurationEnd { duration, end } => (
                duration
                    .add_to(end, -1)
                    .ok_or(IntervalError("the first interval is out of range"))?,
                end,
            ),
        };
        if first.0 >= first.1 {
            return Err(IntervalError("the interval must have a positive length"));
        }
        Ok(Self {
            source: s.to_owned(),
            repetitions,
            spec,
            first,
        })
    }

    /// The string exactly as parsed (what goes back on the wire).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The repetition count.
    pub fn repetitions(&self) -> Repetitions {
        self.repetitions
    }

    /// The form and its parts.
    pub fn spec(&self) -> IntervalSpec {
        self.spec
    }

    /// The interval the string spells out, `[start, end)`.
    pub fn first_interval(&self) -> (Timestamp, Timestamp) {
        self.first
    }

    /// The half-open interval `[start, end)` containing `t`, or `None` when
    /// `t` is before the first interval (forwards forms), at or after its
    /// end (`duration/end`), or beyond the last repetition.
    pub fn interval_at(&self, t: Timestamp) -> Option<(Timestamp, Timestamp)> {
        let (s, e) = self.first;
        if s <= t && t < e {
            return Some(self.first);
        }
        let exact_len = match self.spec {
            IntervalSpec::StartEnd { .. } => Some(e.unix_millis() - s.unix_millis()),
            IntervalSpec::StartDuration { duration, .. }
            | IntervalSpec::DurationEnd { duration, .. } => {
                duration.is_exact().then(|| duration.exact_millis())
            }
        };
        let forwards = !matches!(self.spec, IntervalSpec::DurationEnd { .. });
        if (forwards && t < s) || (!forwards && t >= e) {
            return None;
        }
        match exact_len {
            Some(len) => self.exact_step(t, len, forwards),
            None => self.calendar_step(t, forwards),
        }
    }

    fn allows(&self, repetition: u64) -> bool {
        match self.repetitions {
            Repetitions::Infinite => true,
            Repetitions::Finite(n) => repetition <= n,
        }
    }

    /// Jumps straight to the interval for fixed-length steps (same result as
    /// stepping one by one, since UTC days have a fixed length).
    fn exact_step(&self, t: Timestamp, len: i64, forwards: bool) -> Option<(Timestamp, Timestamp)> {
        let s = self.first.0.unix_millis();
        let t = t.unix_millis();
        if forwards {
            let k = (t - s).div_euclid(len);
            let k_u = u64::try_from(k).ok()?;
            if !self.allows(k_u) {
                return None;
            }
            let start = s.checked_add(k.checked_mul(len)?)?;
            Some((
                Timestamp::from_unix_millis(start),
                Timestamp::from_unix_millis(start.checked_add(len)?),
            ))
        } else {
            // Interval k (k >= 1) before the first is [s - k·len, s - (k-1)·len).
            let k = (s - t + len - 1).div_euclid(len);
            let k_u = u64::try_from(k).ok()?;
            if !self.allows(k_u) {
                return None;
            }
            let end = s.checked_sub((k - 1).checked_mul(len)?)?;
            Some((
                Timestamp::from_unix_millis(end.checked_sub(len)?),
                Timestamp::from_unix_millis(end),
            ))
        }
    }

    /// Steps one interval at a time (calendar durations with years or
    /// months: at least a month per step, so this is bounded by the
    /// calendar's range).
    fn calendar_step(&self, t: Timestamp, forwards: bool) -> Option<(Timestamp, Timestamp)> {
        let duration = match self.spec {
            IntervalSpec::StartDuration { duration, .. }
            | IntervalSpec::DurationEnd { duration, .. } => duration,
            IntervalSpec::StartEnd { .. } => return None,
        };
        let (mut s, mut e) = self.first;
        let mut repetition: u64 = 0;
        loop {
            repetition += 1;
            if !self.allows(repetition) {
                return None;
            }
            if forwards {
                s = e;
                e = duration.add_to(s, 1)?;
            } else {
                e = s;
                s = duration.add_to(e, -1)?;
            }
            if s <= t && t < e {
                return Some((s, e));
            }
            if (forwards && t < s) || (!forwards && t >= e) {
                // Unreachable with positive steps; never loop forever.
                return None;
            }
        }
    }
}

impl fmt::Display for RepeatingInterval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

fn parse_repetitions(r: &str) -> Result<Repetitions, IntervalError> {
    let n = r
        .strip_prefix('R')
        .ok_or(IntervalError("a repeating interval starts with R"))?;
    match n {
        "" | "-1" => Ok(Repetitions::Infinite),
        _ if n.bytes().all(|b| b.is_ascii_digit()) => n
            .parse()
            .map(Repetitions::Finite)
            .map_err(|_| IntervalError("the repetition count must be R, R-1 or Rn with n >= 0")),
        _ => Err(IntervalError(
            "the repetition count must be R, R-1 or Rn with n >= 0",
        )),
    }
}

fn parse_datetime(s: &str) -> Result<Timestamp, IntervalError> {
    Timestamp::parse_rfc3339(s)
        .map_err(|_| IntervalError("dates must be RFC 3339 date-times with Z or an offset"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    fn at(interval: &str, t: &str) -> Option<(String, String)> {
        RepeatingInterval::parse(interval)
            .unwrap()
            .interval_at(ts(t))
            .map(|(a, b)| (a.to_rfc3339(), b.to_rfc3339()))
    }

    fn some(a: &str, b: &str) -> Option<(String, String)> {
        Some((ts(a).to_rfc3339(), ts(b).to_rfc3339()))
    }

    #[test]
    fn parses_durations() {
        let d = IsoDuration::parse("P1Y2M10DT2H30M").unwrap();
        assert_eq!(
            d,
            IsoDuration {
                years: 1,
                months: 2,
                days: 10,
                hours: 2,
                minutes: 30,
                ..Default::default()
            }
        );
        assert_eq!(IsoDuration::parse("P2W").unwrap().weeks, 2);
        let d = IsoDuration::parse("PT1.5S").unwrap();
        assert_eq!((d.seconds, d.millis), (1, 500));
        assert_eq!(IsoDuration::parse("PT0,001S").unwrap().millis, 1);
        assert_eq!(IsoDuration::parse("PT0.123456789S").unwrap().millis, 123);
        assert_eq!(
            IsoDuration::parse("PT36H").unwrap().exact_millis(),
            36 * 3_600_000
        );
        assert!(IsoDuration::parse("P0D").unwrap().is_zero());
        assert!(!IsoDuration::parse("PT0.001S").unwrap().is_zero());
        // The fraction of a second counts in the exact length.
        assert_eq!(
            IsoDuration::parse("PT1M1.5S").unwrap().exact_millis(),
            61_500
        );
        // The reason is the message without its prefix.
        let e = RepeatingInterval::parse("R/x").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("invalid ISO 8601 repeating interval: {}", e.reason())
        );
        assert_eq!(
            e.reason(),
            "expected R[n]/<start or duration>/<end or duration>"
        );
        for bad in [
            "",
            "P",
            "PT",
            // A fraction that runs to the end: no designator.
            "PT1.5",
            "1D",
            "P1",
            "PD",
            "P1M1Y",
            "P1D1D",
            "P1H",
            "PT1D",
            "P1.5D",
            "PT1.5M",
            "P-1D",
            "P+1D",
            "PT1.S",
            "PT.5S",
            "P1DT",
            "P99999999999D",
            "PT1.1234567891S",
            "p1d",
            "P1DT1H1M1S1",
        ] {
            assert!(
                IsoDuration::parse(bad).is_err(),
                "{bad:?} should be rejected"
            );
        }
    }

    #[test]
    fn parses_the_spec_examples() {
        let r = RepeatingInterval::parse("R12/2019-08-24T14:15:22Z/P1M").unwrap();
        assert_eq!(r.repetitions(), Repetitions::Finite(12));
        assert_eq!(r.as_str(), "R12/2019-08-24T14:15:22Z/P1M");
        assert_eq!(r.to_string(), "R12/2019-08-24T14:15:22Z/P1M");
        assert_eq!(
            r.first_interval(),
            (ts("2019-08-24T14:15:22Z"), ts("2019-09-24T14:15:22Z"))
        );
        let r = RepeatingInterval::parse("R11/2022-08-24T14:15:22Z/P1M").unwrap();
        assert!(matches!(r.spec(), IntervalSpec::StartDuration { .. }));
        let r = RepeatingInterval::parse("R/2017-03-01T13:00:00Z/2018-05-11T15:30:00Z").unwrap();
        assert_eq!(r.repetitions(), Repetitions::Infinite);
        assert!(matches!(r.spec(), IntervalSpec::StartEnd { .. }));
        let r = RepeatingInterval::parse("R-1/P1Y2M10DT2H30M/2022-05-11T15:30:00Z").unwrap();
        assert_eq!(r.repetitions(), Repetitions::Infinite);
        assert_eq!(
            r.first_interval(),
            (ts("2021-03-01T13:00:00Z"), ts("2022-05-11T15:30:00Z"))
        );
    }

    #[test]
    fn rejects_invalid_intervals() {
        for bad in [
            "",
            "R",
            "R12",
            "R12/2019-08-24T14:15:22Z",
            "R12/2019-08-24T14:15:22Z/P1M/",
            "12/2019-08-24T14:15:22Z/P1M",
            "R-5/2019-08-24T14:15:22Z/P1M",
            "R-0/2019-08-24T14:15:22Z/P1M",
            "R+1/2019-08-24T14:15:22Z/P1M",
            "R1.5/2019-08-24T14:15:22Z/P1M",
            "R99999999999999999999999/2019-08-24T14:15:22Z/P1M",
            "R1/2019-08-24/P1M",
            "R1/2019-08-24T14:15:22/P1M",
            "R1/P1M/P1M",
            "R1/2019-08-24T14:15:22Z/P0D",
            "R1/2019-08-24T14:15:22Z/2019-08-24T14:15:22Z",
            "R1/2019-08-24T14:15:22Z/2019-08-23T14:15:22Z",
            "R1/P20000Y/2000-01-01T00:00:00Z",
            "R1/9999-12-01T00:00:00Z/P1M",
            "r1/2019-08-24T14:15:22Z/P1M",
        ] {
            assert!(
                RepeatingInterval::parse(bad).is_err(),
                "{bad:?} should be rejected"
            );
        }
        let e = RepeatingInterval::parse("R-5/2019-08-24T14:15:22Z/P1M").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("invalid ISO 8601 repeating interval"));
    }

    #[test]
    fn offsets_are_converted_to_utc() {
        let r = RepeatingInterval::parse("R/2021-01-31T23:00:00-02:00/P1M").unwrap();
        // 2021-02-01T01:00Z + P1M in UTC.
        assert_eq!(
            r.first_interval(),
            (ts("2021-02-01T01:00:00Z"), ts("2021-03-01T01:00:00Z"))
        );
    }

    #[test]
    fn month_end_drift_is_kept() {
        let i = "R/2021-01-31T00:00:00Z/P1M";
        assert_eq!(
            at(i, "2021-02-10T00:00:00Z"),
            some("2021-01-31T00:00:00Z", "2021-02-28T00:00:00Z")
        );
        assert_eq!(
            at(i, "2021-03-01T00:00:00Z"),
            some("2021-02-28T00:00:00Z", "2021-03-28T00:00:00Z")
        );
        // Drifted: Mar 28 -> Apr 28, not Mar 31 -> Apr 30.
        assert_eq!(
            at(i, "2021-03-30T00:00:00Z"),
            some("2021-03-28T00:00:00Z", "2021-04-28T00:00:00Z")
        );
        // The boundary belongs to the next interval (half-open).
        assert_eq!(
            at(i, "2021-02-28T00:00:00Z"),
            some("2021-02-28T00:00:00Z", "2021-03-28T00:00:00Z")
        );
        assert_eq!(
            at(i, "2021-02-27T23:59:59.999Z"),
            some("2021-01-31T00:00:00Z", "2021-02-28T00:00:00Z")
        );
    }

    #[test]
    fn leap_years() {
        // Jan 31 + P1M in a leap year is Feb 29.
        assert_eq!(
            at("R/2020-01-31T00:00:00Z/P1M", "2020-03-01T00:00:00Z"),
            some("2020-02-29T00:00:00Z", "2020-03-29T00:00:00Z")
        );
        // Feb 29 + P1Y = Feb 28, and it stays on the 28th.
        let i = "R/2020-02-29T12:00:00Z/P1Y";
        assert_eq!(
            at(i, "2021-03-01T00:00:00Z"),
            some("2021-02-28T12:00:00Z", "2022-02-28T12:00:00Z")
        );
        assert_eq!(
            at(i, "2024-02-28T13:00:00Z"),
            some("2024-02-28T12:00:00Z", "2025-02-28T12:00:00Z")
        );
        assert_eq!(
            at(i, "2024-02-28T11:00:00Z"),
            some("2023-02-28T12:00:00Z", "2024-02-28T12:00:00Z")
        );
        // P1D over Feb 29 is exact.
        assert_eq!(
            at("R/2020-02-27T00:00:00Z/P1D", "2020-02-29T05:00:00Z"),
            some("2020-02-29T00:00:00Z", "2020-03-01T00:00:00Z")
        );
    }

    #[test]
    fn finite_repetitions_bound_the_intervals() {
        let i = "R2/2020-01-01T00:00:00Z/P1D";
        assert!(at(i, "2020-01-01T00:00:00Z").is_some());
        assert_eq!(
            at(i, "2020-01-03T12:00:00Z"),
            some("2020-01-03T00:00:00Z", "2020-01-04T00:00:00Z")
        );
        assert_eq!(at(i, "2020-01-04T00:00:00Z"), None);
        let i = "R0/2020-01-01T00:00:00Z/P1D";
        assert!(at(i, "2020-01-01T23:59:59.999Z").is_some());
        assert_eq!(at(i, "2020-01-02T00:00:00Z"), None);
        // Calendar form, same bound: R1 = Jan + Feb.
        let i = "R1/2021-01-01T00:00:00Z/P1M";
        assert_eq!(
            at(i, "2021-02-15T00:00:00Z"),
            some("2021-02-01T00:00:00Z", "2021-03-01T00:00:00Z")
        );
        assert_eq!(at(i, "2021-03-01T00:00:00Z"), None);
        // The spec example: 13 months from 2019-08-24.
        let i = "R12/2019-08-24T14:15:22Z/P1M";
        assert_eq!(
            at(i, "2020-09-01T00:00:00Z"),
            some("2020-08-24T14:15:22Z", "2020-09-24T14:15:22Z")
        );
        assert_eq!(at(i, "2020-09-24T14:15:22Z"), None);
    }

    #[test]
    fn before_the_start_is_in_no_interval() {
        assert_eq!(
            at("R/2020-01-01T00:00:00Z/P1M", "2019-12-31T23:59:59.999Z"),
            None
        );
        assert_eq!(
            at("R/2020-01-01T00:00:00Z/PT1H", "1970-01-01T00:00:00Z"),
            None
        );
        assert_eq!(
            at(
                "R/2017-03-01T13:00:00Z/2018-05-11T15:30:00Z",
                "2017-03-01T12:59:59Z"
            ),
            None
        );
    }

    #[test]
    fn start_end_steps_by_exact_length() {
        // 10 days (1 h of it is not a DST thing: UTC).
        let i = "R/2021-01-25T00:00:00Z/2021-02-04T00:00:00Z";
        assert_eq!(
            at(i, "2021-02-20T00:00:00Z"),
            some("2021-02-14T00:00:00Z", "2021-02-24T00:00:00Z")
        );
        let i = "R1/2021-01-25T00:00:00Z/2021-02-04T00:00:00Z";
        assert_eq!(at(i, "2021-02-20T00:00:00Z"), None);
    }

    #[test]
    fn duration_end_steps_backwards() {
        let i = "R/P1M/2021-03-31T00:00:00Z";
        assert_eq!(
            at(i, "2021-03-01T00:00:00Z"),
            some("2021-02-28T00:00:00Z", "2021-03-31T00:00:00Z")
        );
        // Drift backwards: Feb 28 - P1M = Jan 28.
        assert_eq!(
            at(i, "2021-02-01T00:00:00Z"),
            some("2021-01-28T00:00:00Z", "2021-02-28T00:00:00Z")
        );
        assert_eq!(
            at(i, "2021-01-27T00:00:00Z"),
            some("2020-12-28T00:00:00Z", "2021-01-28T00:00:00Z")
        );
        assert_eq!(at(i, "2021-03-31T00:00:00Z"), None);
        assert_eq!(at(i, "2022-01-01T00:00:00Z"), None);
        let i = "R1/PT1H/2021-01-01T00:00:00Z";
        assert_eq!(
            at(i, "2020-12-31T22:00:00Z"),
            some("2020-12-31T22:00:00Z", "2020-12-31T23:00:00Z")
        );
        assert_eq!(at(i, "2020-12-31T21:59:59.999Z"), None);
    }

    #[test]
    fn fast_path_handles_far_instants() {
        let r = RepeatingInterval::parse("R/2000-01-01T00:00:00Z/PT1S").unwrap();
        let t = ts("2999-06-01T10:20:30.400Z");
        assert_eq!(
            r.interval_at(t),
            Some((ts("2999-06-01T10:20:30Z"), ts("2999-06-01T10:20:31Z")))
        );
        let r = RepeatingInterval::parse("R/2000-01-01T00:00:00Z/P1M").unwrap();
        let t = ts("9999-06-15T00:00:00Z");
        assert_eq!(
            r.interval_at(t),
            Some((ts("9999-06-01T00:00:00Z"), ts("9999-07-01T00:00:00Z")))
        );
    }

    /// Stepping one interval at a time, for comparison with the fast path.
    fn naive(r: &RepeatingInterval, t: Timestamp) -> Option<(Timestamp, Timestamp)> {
        let (mut s, mut e) = r.first_interval();
        type Step = Box<dyn Fn(Timestamp, i8) -> Option<Timestamp>>;
        let (step, forwards): (Step, bool) = match r.spec() {
            IntervalSpec::StartDuration { duration, .. } => {
                (Box::new(move |x, sg| duration.add_to(x, sg)), true)
            }
            IntervalSpec::DurationEnd { duration, .. } => {
                (Box::new(move |x, sg| duration.add_to(x, sg)), false)
            }
            IntervalSpec::StartEnd { start, end } => {
                let len = end.unix_millis() - start.unix_millis();
                (
                    Box::new(move |x: Timestamp, sg| Some(x.plus_millis(len * i64::from(sg)))),
                    true,
                )
            }
        };
        for k in 0..100_000u64 {
            if let Repetitions::Finite(n) = r.repetitions() {
                if k > n {
                    return None;
                }
            }
            if s <= t && t < e {
                return Some((s, e));
            }
            if forwards {
                s = e;
                e = step(s, 1)?;
            } else {
                e = s;
                s = step(e, -1)?;
            }
        }
        None
    }

    fn interval_strategy() -> impl Strategy<Value = String> {
        let reps = prop_oneof![
            Just("R".to_owned()),
            Just("R-1".to_owned()),
            (0u32..20).prop_map(|n| format!("R{n}"))
        ];
        let date = (1990i32..2030, 1u8..13, 1u8..32, 0u8..24).prop_map(|(y, m, d, h)| {
            let d = d.min(28 + (m != 2) as u8 * 2);
            format!("{y:04}-{m:02}-{d:02}T{h:02}:00:00Z")
        });
        let dur = (0u32..3, 0u32..3, 0u32..2, 0u32..5, 0u32..30).prop_filter_map(
            "non-zero",
            |(y, m, w, d, h)| {
                // At least a day per step keeps the naive stepping short.
                if y + m + w + d == 0 {
                    return None;
                }
                let mut s = "P".to_owned();
                for (v, c) in [(y, 'Y'), (m, 'M'), (w, 'W'), (d, 'D')] {
                    if v > 0 {
                        s.push_str(&format!("{v}{c}"));
                    }
                }
                if h > 0 {
                    s.push_str(&format!("T{h}H"));
                }
                Some(s)
            },
        );
        (reps, date.clone(), date, dur, 0u8..3).prop_map(|(r, a, b, d, form)| match form {
            0 => format!("{r}/{a}/{d}"),
            1 => format!("{r}/{a}/{b}"),
            _ => format!("{r}/{d}/{b}"),
        })
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_input(s in "\\PC*") {
            let _ = RepeatingInterval::parse(&s);
            let _ = IsoDuration::parse(&s);
        }

        #[test]
        fn never_panics_on_near_valid_input(s in "R[-0-9]{0,3}/[0-9PTYMWDHS:Z.+-]{0,25}/[0-9PTYMWDHS:Z.+-]{0,25}") {
            if let Ok(r) = RepeatingInterval::parse(&s) {
                let _ = r.interval_at(Timestamp::from_unix_millis(0));
            }
        }

        #[test]
        fn interval_at_contains_t_and_agrees_with_stepping(
            s in interval_strategy(),
            t in 631_152_000_000i64..1_956_528_000_000i64,
        ) {
            if let Ok(r) = RepeatingInterval::parse(&s) {
                let t = Timestamp::from_unix_millis(t);
                let got = r.interval_at(t);
                if let Some((a, b)) = got {
                    prop_assert!(a <= t && t < b);
                }
                prop_assert_eq!(got, naive(&r, t));
            }
        }
    }
}
