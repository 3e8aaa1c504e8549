//! The Interledger timestamp of an ILP Prepare's `expiresAt`: exactly 17
//! ASCII digits `YYYYMMDDHHmmssSSS`, always UTC (RFC 27, `InterledgerTypes`
//! in the RFC repository's ASN.1).
//!
//! [`Timestamp`] is milliseconds since the Unix epoch, the same number a
//! JavaScript `Date` holds, so callers compare it with their own clock
//! without a date library. The conversion to and from the 17 digits is done
//! here by hand (proleptic Gregorian calendar, no leap seconds, as `Date`
//! does).
//!
//! Decoding is strict where `ilp-packet` is lenient: its reader feeds the
//! digit groups to `Date.UTC`, which rolls out-of-range fields over (month
//! 13 becomes January of the next year, second 60 the next minute) and maps
//! years 0–99 to 1900–1999. A conforming writer never produces those, so we
//! refuse them: every timestamp we accept re-encodes to the same 17 bytes.
//! Conversely `ilp-packet` refuses `19700101000000000` (the epoch is 0,
//! which its validity check takes for an invalid date); we accept it.

use std::fmt;

use crate::error::PacketError;

/// Length of the wire form.
pub const TIMESTAMP_LEN: usize = 17;

const MILLIS_PER_DAY: i64 = 86_400_000;

/// A point in time with millisecond precision, in the range the 17-digit
/// form can express: `0000-01-01T00:00:00.000Z` to
/// `9999-12-31T23:59:59.999Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The earliest expressible time, `0000-01-01T00:00:00.000Z`.
    pub const MIN: Timestamp = Timestamp(days_from_civil(0, 1, 1) * MILLIS_PER_DAY);
    /// The latest expressible time, `9999-12-31T23:59:59.999Z`.
    pub const MAX: Timestamp = Timestamp(days_from_civil(10_000, 1, 1) * MILLIS_PER_DAY - 1);

    /// The timestamp `millis` milliseconds after the Unix epoch (negative
    /// for earlier times); `None` outside [`Timestamp::MIN`]..=[`Timestamp::MAX`].
    pub fn from_unix_millis(millis: i64) -> Option<Self> {
        (Self::MIN.0..=Self::MAX.0)
            .contains(&millis)
            .then_some(Self(millis))
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_millis(self) -> i64 {
        self.0
    }

    /// This timestamp moved by `millis` (negative to go back), if the result
    /// is still expressible.
    pub fn checked_add_millis(self, millis: i64) -> Option<Self> {
        self.0.checked_add(millis).and_then(Self::from_unix_millis)
    }

    /// The 17-digit wire form, `YYYYMMDDHHmmssSSS`.
    pub fn to_ilp_bytes(self) -> [u8; TIMESTAMP_LEN] {
        let f = self.fields();
        let mut out = [0u8; TIMESTAMP_LEN];
        let groups: [(u32, usize); 7] = [
            (f.year, 4),
            (f.month, 2),
            (f.day, 2),
            (f.hour, 2),
            (f.minute, 2),
            (f.second, 2),
            (f.milli, 3),
        ];
        let mut at = 0;
        for (value, width) in groups {
            let mut v = value;
            for i in (at..at + width).rev() {
                // v % 10 < 10, so the cast cannot truncate.
                out[i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
            at += width;
        }
        out
    }

    /// Parses the 17-digit wire form. Fails unless `bytes` is exactly 17
    /// ASCII digits naming a real date and time (month 1–12, a day that
    /// exists in that month, hour 0–23, minute and second 0–59).
    pub fn from_ilp_bytes(bytes: &[u8]) -> Result<Self, PacketError> {
        let digits: &[u8; TIMESTAMP_LEN] = bytes
            .try_into()
            .map_err(|_| PacketError::InvalidTimestamp)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return Err(PacketError::InvalidTimestamp);
        }
        let num = |from: usize, to: usize| {
            digits[from..to]
                .iter()
                .fold(0u32, |acc, d| acc * 10 + u32::from(d - b'0'))
        };
        let (year, month, day) = (num(0, 4), num(4, 6), num(6, 8));
        let (hour, minute, second, milli) = (num(8, 10), num(10, 12), num(12, 14), num(14, 17));
        let valid = (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month)
            && hour < 24
            && minute < 60
            && second < 60;
        if !valid {
            return Err(PacketError::InvalidTimestamp);
        }
        let days = days_from_civil(i64::from(year), i64::from(month), i64::from(day));
        let millis_of_day = ((i64::from(hour) * 60 + i64::from(minute)) * 60 + i64::from(second))
            * 1000
            + i64::from(milli);
        Ok(Self(days * MILLIS_PER_DAY + millis_of_day))
    }

    fn fields(self) -> Fields {
        let days = self.0.div_euclid(MILLIS_PER_DAY);
        let ms = self.0.rem_euclid(MILLIS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        // The constructor keeps the year in 0..=9999 and ms < 86_400_000,
        // so every value below fits in a u32.
        let part = |v: i64| u32::try_from(v).unwrap_or(0);
        Fields {
            year: part(year),
            month: part(month),
            day: part(day),
            hour: part(ms / 3_600_000),
            minute: part(ms / 60_000 % 60),
            second: part(ms / 1000 % 60),
            milli: part(ms % 1000),
        }
    }
}

/// ISO 8601, as JavaScript's `Date.toISOString` prints it:
/// `2017-12-23T01:21:40.549Z`.
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.fields();
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year, t.month, t.day, t.hour, t.minute, t.second, t.milli
        )
    }
}

struct Fields {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    milli: u32,
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        // 28 or 29: let the calendar arithmetic below decide leap years.
        2 => (days_from_civil(i64::from(year), 3, 1) - days_from_civil(i64::from(year), 2, 1))
            .unsigned_abs() as u32,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given proleptic Gregorian date. The
/// calendar repeats every 400 years (146097 days); counting years from
/// March puts the leap day last, so the day of the year follows from the
/// month with one linear formula.
const fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y.rem_euclid(400);
    let march_month = (month + 9) % 12; // March = 0 ... February = 11
    let day_of_year = (153 * march_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    // 719468 days separate 0000-03-01 from 1970-01-01.
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`]: (year, month, day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 {
        march_month + 3
    } else {
        march_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(s: &str) -> Result<Timestamp, PacketError> {
        Timestamp::from_ilp_bytes(s.as_bytes())
    }

    #[test]
    fn known_instants() {
        // ilp-packet's Prepare fixture: 2017-12-23T01:21:40.549Z, which
        // JavaScript's Date.parse gives as 1513992100549.
        let t = parse("20171223012140549").unwrap();
        assert_eq!(t.unix_millis(), 1_513_992_100_549);
        assert_eq!(t.to_string(), "2017-12-23T01:21:40.549Z");
        // interledger-rs's fixture: 2018-06-07T20:48:42.483Z.
        assert_eq!(
            parse("20180607204842483").unwrap().unix_millis(),
            1_528_404_522_483
        );
        assert_eq!(parse("19700101000000000").unwrap().unix_millis(), 0);
        assert_eq!(parse("19691231235959999").unwrap().unix_millis(), -1);
        assert_eq!(
            parse("20000229120000000").unwrap().to_string(),
            "2000-02-29T12:00:00.000Z"
        );
        assert_eq!(&Timestamp::MIN.to_ilp_bytes(), b"00000101000000000");
        assert_eq!(&Timestamp::MAX.to_ilp_bytes(), b"99991231235959999");
        assert_eq!(parse("00000101000000000"), Ok(Timestamp::MIN));
        assert_eq!(parse("99991231235959999"), Ok(Timestamp::MAX));
    }

    #[test]
    fn range_and_arithmetic() {
        assert!(Timestamp::from_unix_millis(Timestamp::MAX.unix_millis() + 1).is_none());
        assert!(Timestamp::from_unix_millis(Timestamp::MIN.unix_millis() - 1).is_none());
        let t = Timestamp::from_unix_millis(1000).unwrap();
        assert_eq!(
            t.checked_add_millis(-1000).map(Timestamp::unix_millis),
            Some(0)
        );
        assert!(Timestamp::MAX.checked_add_millis(1).is_none());
        assert!(t.checked_add_millis(i64::MAX).is_none());
    }

    #[test]
    fn rejects_what_a_writer_never_produces() {
        for bad in [
            "2017122301214054",   // 16 digits
            "201712230121405490", // 18 digits
            "2017122301214054a",
            "2017-12-23T01:21:",
            "20171323012140549", // month 13
            "20170023012140549", // month 0
            "20171200012140549", // day 0
            "20170229012140549", // not a leap year
            "21000229012140549", // centuries are not leap years...
            "20171223242140549", // hour 24
            "20171223016040549", // minute 60
            "20171223012160549", // second 60 (interledger-rs fuzz finding)
            "20171131000000000", // 31 November
            "                 ",
        ] {
            assert_eq!(parse(bad), Err(PacketError::InvalidTimestamp), "{bad}");
        }
        // ...but multiples of 400 are.
        assert!(parse("20000229000000000").is_ok());
        assert!(parse("24000229000000000").is_ok());
    }

    proptest! {
        #[test]
        fn round_trips(ms in Timestamp::MIN.unix_millis()..=Timestamp::MAX.unix_millis()) {
            let t = Timestamp::from_unix_millis(ms).unwrap();
            let bytes = t.to_ilp_bytes();
            prop_assert!(bytes.iter().all(u8::is_ascii_digit));
            prop_assert_eq!(Timestamp::from_ilp_bytes(&bytes), Ok(t));
        }

        #[test]
        fn digits_that_parse_re_encode_identically(s in "[0-9]{17}") {
            if let Ok(t) = parse(&s) {
                prop_assert_eq!(&t.to_ilp_bytes()[..], s.as_bytes());
            }
        }

        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..20)) {
            let _ = Timestamp::from_ilp_bytes(&bytes);
        }
    }
}
