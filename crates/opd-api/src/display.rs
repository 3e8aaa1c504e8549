//! Amounts, dates and repeating intervals in words, for the pages people
//! read (the consent page, the dashboard). Pure functions, no I/O.
//!
//! Amounts are formatted exactly from their integer minor units and scale
//! (never through floating point): `2500` at scale 2 in USD is `$25.00`,
//! in EUR `25.00 EUR`. Intervals are ISO 8601 repeating intervals
//! (`R/2026-11-01T00:00:00Z/P1M` → "every month, from 1 November 2026");
//! anything that does not parse is shown as it is, labelled, rather than
//! guessed at.

use opd_core::Timestamp;
use opd_gnap::{IntervalSpec, IsoDuration, RepeatingInterval, Repetitions};
use time::OffsetDateTime;

/// `value` minor units at `scale` as a decimal string with thousands
/// separators: `(123456, 2)` → `1,234.56`, `(5, 3)` → `0.005`,
/// `(25, 0)` → `25`.
pub fn decimal(value: u64, scale: u8) -> String {
    let plain = opd_core::decimal::format_decimal(value, scale);
    let (int, frac) = plain.split_once('.').unwrap_or((&plain, ""));
    let mut out = String::with_capacity(plain.len() + int.len() / 3);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// Minor units from a decimal an operator typed, at `scale`: at scale 2,
/// `25` is `2500`, `25.5` and `25.50` are `2550`.
/// Thousands separators (`1,000.00`) and surrounding spaces are allowed; a
/// sign, more significant fraction digits than the scale, or a value
/// beyond a u64 are not (`None`).
pub fn parse_decimal(s: &str, scale: u8) -> Option<u64> {
    opd_core::decimal::parse_decimal(&s.trim().replace(',', ""), scale).ok()
}

/// An amount with its asset: `$25.00` for US dollars, `25.00 EUR`
/// otherwise (the code is the asset's own, which may be any string).
pub fn amount(value: u64, code: &str, scale: u8) -> String {
    let number = decimal(value, scale);
    match code {
        "USD" => format!("${number}"),
        _ => format!("{number} {code}"),
    }
}

/// A date in words, `1 November 2026`, with the time of day in UTC when it
/// is not midnight: `1 November 2026, 14:15 UTC`.
pub fn date(t: Timestamp) -> String {
    let Ok(odt) =
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(t.unix_millis()) * 1_000_000)
    else {
        return t.to_rfc3339();
    };
    let day = format!("{} {} {}", odt.day(), odt.month(), odt.year());
    let (h, m, s) = (odt.hour(), odt.minute(), odt.second());
    match (h, m, s, odt.millisecond()) {
        (0, 0, 0, 0) => day,
        (_, _, 0, 0) => format!("{day}, {h:02}:{m:02} UTC"),
        _ => format!("{day}, {h:02}:{m:02}:{s:02} UTC"),
    }
}

/// A date and time for tables: `2026-11-01 14:15:22 UTC`.
pub fn datetime(t: Timestamp) -> String {
    let s = t.to_rfc3339();
    match (s.get(..10), s.get(11..19)) {
        (Some(d), Some(tm)) => format!("{d} {tm} UTC"),
        _ => s,
    }
}

/// `n` of a unit, in words: `month`, `2 months`.
fn count(n: u64, unit: &str, one_alone: bool) -> String {
    match n {
        1 if one_alone => unit.to_owned(),
        1 => format!("1 {unit}"),
        _ => format!("{n} {unit}s"),
    }
}

/// The components of a duration in words: `[("month", 1)]` → `month`;
/// `P1Y2M` → `1 year and 2 months`; `PT0.5S` → `0.5 seconds`.
pub fn duration(d: &IsoDuration) -> String {
    let mut parts: Vec<(u64, &str)> = [
        (d.years, "year"),
        (d.months, "month"),
        (d.weeks, "week"),
        (d.days, "day"),
        (d.hours, "hour"),
        (d.minutes, "minute"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, u)| (u64::from(n), u))
    .collect();
    let seconds = if d.millis > 0 {
        let frac = format!("{:03}", d.millis);
        Some(format!(
            "{}.{} seconds",
            d.seconds,
            frac.trim_end_matches('0')
        ))
    } else if d.seconds > 0 {
        parts.push((u64::from(d.seconds), "second"));
        None
    } else {
        None
    };
    let alone = parts.len() == 1 && seconds.is_none();
    let mut words: Vec<String> = parts.into_iter().map(|(n, u)| count(n, u, alone)).collect();
    words.extend(seconds);
    join_and(&words)
}

/// An exact length in milliseconds in the largest whole unit that fits:
/// `86_400_000` → `day`, `7_200_000` → `2 hours`, `1500` → `1500
/// milliseconds`.
fn exact_length(ms: i64) -> String {
    let units = [
        (604_800_000, "week"),
        (86_400_000, "day"),
        (3_600_000, "hour"),
        (60_000, "minute"),
        (1000, "second"),
    ];
    let ms = u64::try_from(ms).unwrap_or(0);
    for (size, unit) in units {
        if ms >= size && ms.is_multiple_of(size) {
            return count(ms / size, unit, true);
        }
    }
    count(ms, "millisecond", false)
}

/// A length of time in the largest whole unit: `2_592_000` s is `30 days`,
/// `600` is `10 minutes`, `90` is `90 seconds`, `0` is `0 seconds`.
pub fn seconds(secs: u64) -> String {
    for (size, unit) in [(86_400, "day"), (3600, "hour"), (60, "minute")] {
        if secs >= size && secs.is_multiple_of(size) {
            return count(secs / size, unit, false);
        }
    }
    match secs {
        1 => "1 second".into(),
        n => format!("{n} seconds"),
    }
}

fn join_and(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// How often, from the repetitions: `every month`, `every month, 3 times`.
fn how_often(repetitions: Repetitions, step: &str) -> String {
    match repetitions {
        Repetitions::Infinite => format!("every {step}"),
        Repetitions::Finite(n) => {
            let times = n.saturating_add(1);
            format!("every {step}, {times} times")
        }
    }
}

/// A repeating interval in words: `R/2026-11-01T00:00:00Z/P1M` → "every
/// month, from 1 November 2026"; `R0/…/P1W` → "once, for a week from …";
/// `R3/…/P2W` → "every 2 weeks, 4 times, from …". A string that does not
/// parse is shown as it is.
pub fn interval(s: &str) -> String {
    let Ok(parsed) = RepeatingInterval::parse(s) else {
        return format!("the period {s}");
    };
    let reps = parsed.repetitions();
    let once = reps == Repetitions::Finite(0);
    match parsed.spec() {
        IntervalSpec::StartDuration { start, duration: d } => {
            let step = duration(&d);
            if once {
                format!("once, for {} from {}", with_article(&step), date(start))
            } else {
                format!("{}, from {}", how_often(reps, &step), date(start))
            }
        }
        IntervalSpec::StartEnd { start, end } => {
            if once {
                format!("once, from {} until {}", date(start), date(end))
            } else {
                let step = exact_length(end.unix_millis() - start.unix_millis());
                format!("{}, from {}", how_often(reps, &step), date(start))
            }
        }
        IntervalSpec::DurationEnd { duration: d, end } => {
            let step = duration(&d);
            if once {
                format!("once, for {} until {}", with_article(&step), date(end))
            } else {
                format!("{}, until {}", how_often(reps, &step), date(end))
            }
        }
    }
}

/// `month` → `a month`, `hour` → `an hour`; counted forms stay as they are.
fn with_article(step: &str) -> String {
    if step.starts_with(|c: char| c.is_ascii_digit()) {
        step.to_owned()
    } else if step.starts_with('h') {
        // "hour" is the only unit with a silent h.
        format!("an {step}")
    } else {
        format!("a {step}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_exact_at_any_scale() {
        assert_eq!(decimal(2500, 2), "25.00");
        assert_eq!(decimal(0, 2), "0.00");
        assert_eq!(decimal(0, 0), "0");
        assert_eq!(decimal(25, 0), "25");
        assert_eq!(decimal(5, 3), "0.005");
        assert_eq!(decimal(1, 9), "0.000000001");
        assert_eq!(decimal(1_234_567_890, 9), "1.234567890");
        assert_eq!(decimal(123_456, 2), "1,234.56");
        assert_eq!(decimal(100_000, 0), "100,000");
        assert_eq!(decimal(u64::MAX, 0), "18,446,744,073,709,551,615");
        assert_eq!(decimal(u64::MAX, 2), "184,467,440,737,095,516.15");
        assert_eq!(decimal(u64::MAX, 19), "1.8446744073709551615");
        assert_eq!(decimal(u64::MAX, 20), "0.18446744073709551615");
        assert_eq!(decimal(7, 25), format!("0.{}7", "0".repeat(24)));
    }

    #[test]
    fn decimals_typed_by_people_are_parsed_exactly() {
        assert_eq!(parse_decimal("25", 2), Some(2500));
        assert_eq!(parse_decimal("25.5", 2), Some(2550));
        assert_eq!(parse_decimal(" 1,234.56 ", 2), Some(123_456));
        assert_eq!(parse_decimal(".5", 2), Some(50));
        assert_eq!(parse_decimal("0", 0), Some(0));
        assert_eq!(parse_decimal("0.000000001", 9), Some(1));
        assert_eq!(parse_decimal("18446744073709551615", 0), Some(u64::MAX));
        assert_eq!(parse_decimal("184467440737095516.16", 2), None);
        assert_eq!(parse_decimal("1.005", 2), None);
        assert_eq!(parse_decimal("-1", 2), None);
        assert_eq!(parse_decimal("1e3", 2), None);
        assert_eq!(parse_decimal("", 2), None);
        assert_eq!(parse_decimal(".", 2), None);
        assert_eq!(parse_decimal("1.2.3", 2), None);
        assert_eq!(parse_decimal("5", 40), None);
    }

    #[test]
    fn amounts_name_their_asset() {
        assert_eq!(amount(2500, "USD", 2), "$25.00");
        assert_eq!(amount(2500, "EUR", 2), "25.00 EUR");
        assert_eq!(amount(0, "USD", 2), "$0.00");
        assert_eq!(amount(1, "XRP", 9), "0.000000001 XRP");
        assert_eq!(amount(5000, "JPY", 0), "5,000 JPY");
    }

    #[test]
    fn durations_in_words() {
        let d = |s: &str| duration(&IsoDuration::parse(s).unwrap());
        assert_eq!(d("P1D"), "day");
        assert_eq!(d("P1W"), "week");
        assert_eq!(d("P1M"), "month");
        assert_eq!(d("P1Y"), "year");
        assert_eq!(d("PT1H"), "hour");
        assert_eq!(d("P2W"), "2 weeks");
        assert_eq!(d("P1Y2M"), "1 year and 2 months");
        assert_eq!(d("P1DT12H30M"), "1 day, 12 hours and 30 minutes");
        assert_eq!(d("PT0.5S"), "0.5 seconds");
        assert_eq!(d("PT90S"), "90 seconds");
    }

    #[test]
    fn intervals_in_words() {
        assert_eq!(
            interval("R/2026-11-01T00:00:00Z/P1M"),
            "every month, from 1 November 2026"
        );
        assert_eq!(
            interval("R/2026-11-01T00:00:00Z/P2W"),
            "every 2 weeks, from 1 November 2026"
        );
        assert_eq!(
            interval("R0/2026-11-01T00:00:00Z/P1M"),
            "once, for a month from 1 November 2026"
        );
        assert_eq!(
            interval("R0/2026-11-01T00:00:00Z/PT1H"),
            "once, for an hour from 1 November 2026"
        );
        assert_eq!(
            interval("R3/2026-01-05T14:15:00Z/P1D"),
            "every day, 4 times, from 5 January 2026, 14:15 UTC"
        );
        assert_eq!(
            interval("R-1/2026-11-01T00:00:00+02:00/P1Y"),
            "every year, from 31 October 2026, 22:00 UTC"
        );
        assert_eq!(
            interval("R/2026-11-01T00:00:00Z/2026-11-08T00:00:00Z"),
            "every week, from 1 November 2026"
        );
        assert_eq!(
            interval("R0/2026-11-01T00:00:00Z/2026-11-03T00:00:00Z"),
            "once, from 1 November 2026 until 3 November 2026"
        );
        assert_eq!(
            interval("R/P1M/2026-12-01T00:00:00Z"),
            "every month, until 1 December 2026"
        );
        assert_eq!(
            interval("R/2026-11-01T00:00:00Z/2026-11-01T00:00:01.500Z"),
            "every 1500 milliseconds, from 1 November 2026"
        );
    }

    #[test]
    fn unknown_intervals_are_shown_as_they_are() {
        assert_eq!(interval("every tuesday"), "the period every tuesday");
        assert_eq!(interval("R/2026-11-01/P1M"), "the period R/2026-11-01/P1M");
    }

    #[test]
    fn lengths_of_time() {
        assert_eq!(seconds(2_592_000), "30 days");
        assert_eq!(seconds(86_400), "1 day");
        assert_eq!(seconds(600), "10 minutes");
        assert_eq!(seconds(7200), "2 hours");
        assert_eq!(seconds(90), "90 seconds");
        assert_eq!(seconds(1), "1 second");
        assert_eq!(seconds(0), "0 seconds");
    }

    #[test]
    fn dates_and_times() {
        let t = Timestamp::parse_rfc3339("2026-11-01T14:15:22.123Z").unwrap();
        assert_eq!(date(t), "1 November 2026, 14:15:22 UTC");
        assert_eq!(datetime(t), "2026-11-01 14:15:22 UTC");
    }
}
