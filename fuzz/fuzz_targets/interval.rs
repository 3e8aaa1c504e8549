//! ISO 8601 repeating intervals and durations (grant limits): no panic,
//! and what parses behaves as documented:
//!
//! - `interval_at(t)`, when it finds an interval, returns a non-empty
//!   half-open `[start, end)` that contains `t`; the first interval's start
//!   lies in the first interval;
//! - the text shown is the text parsed, and it parses to the same value;
//! - the first interval's ends survive an RFC 3339 round trip (years 0
//!   to 9999);
//! - an exact duration (no years or months) moves an instant by exactly
//!   `exact_millis`, both ways.
#![no_main]

use libfuzzer_sys::fuzz_target;
use opd_core::Timestamp;
use opd_gnap::{IsoDuration, RepeatingInterval};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(duration) = IsoDuration::parse(&text) {
        let t = Timestamp::from_unix_millis(1_767_225_600_000); // 2026-01-01
        if duration.is_exact() {
            if let Some(later) = duration.add_to(t, 1) {
                assert_eq!(
                    later.unix_millis() - t.unix_millis(),
                    duration.exact_millis()
                );
            }
            if let Some(earlier) = duration.add_to(t, -1) {
                assert_eq!(
                    t.unix_millis() - earlier.unix_millis(),
                    duration.exact_millis()
                );
            }
        }
    }
    let Ok(interval) = RepeatingInterval::parse(&text) else {
        return;
    };
    assert_eq!(interval.to_string(), text);
    assert_eq!(
        RepeatingInterval::parse(&interval.to_string()),
        Ok(interval.clone())
    );
    let (start, end) = interval.first_interval();
    assert!(start < end);
    assert_eq!(interval.interval_at(start), Some((start, end)));
    // RFC 3339 has four-digit years: 0000-01-01 to 9999-12-31 (a
    // `duration/end` start may lie before year 0, which has no text form).
    let writable = -62_167_219_200_000..=253_402_300_799_999;
    for ts in [start, end] {
        if !writable.contains(&ts.unix_millis()) {
            continue;
        }
        assert_eq!(Timestamp::parse_rfc3339(&ts.to_rfc3339()), Ok(ts));
    }
    // Some instants around and far from the first interval.
    let offset = data
        .iter()
        .rev()
        .take(8)
        .fold(0i64, |acc, b| (acc << 8) | i64::from(*b));
    for t in [
        end.unix_millis() - 1,
        end.unix_millis(),
        start.unix_millis() - 1,
        start
            .unix_millis()
            .wrapping_add(offset % 400_000_000_000_000),
    ] {
        let t = Timestamp::from_unix_millis(t);
        if let Some((s, e)) = interval.interval_at(t) {
            assert!(s <= t && t < e, "{text}: {t:?} not in [{s:?}, {e:?})");
        }
    }
});
