//! Exponential backoff: the delay before a retry doubles with each failure,
//! up to a cap. Webhook deliveries, remote payments and the login throttle
//! each keep their own schedule, but compute it here, so "doubling up to a
//! cap" is written (and tested) once.
//!
//! These schedules are persisted (`next_attempt_at` in the database) or
//! kept per key, never slept on in a loop, which is why this is a plain
//! function of the retry number rather than a retry helper.

/// One schedule: `base_ms` before the first retry, doubled for each retry
/// after it, at most `max_doublings` times, and never more than `cap_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The first delay, in milliseconds.
    pub base_ms: i64,
    /// The longest delay, in milliseconds.
    pub cap_ms: i64,
    /// Doublings beyond this count as this many. Besides ending the growth,
    /// it keeps the shift far from overflowing.
    pub max_doublings: u32,
}

impl Backoff {
    /// The delay after `doublings` doublings (0 gives `base_ms`; a negative
    /// count is 0).
    pub fn delay_ms(&self, doublings: i64) -> i64 {
        // 62 is the largest shift of 1 an i64 holds.
        let most = i64::from(self.max_doublings.min(62));
        let exp = u32::try_from(doublings.clamp(0, most)).unwrap_or(0);
        self.base_ms.saturating_mul(1i64 << exp).min(self.cap_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::Backoff;

    const ONE_SECOND_TO_AN_HOUR: Backoff = Backoff {
        base_ms: 1000,
        cap_ms: 3_600_000,
        max_doublings: 12,
    };

    #[test]
    fn doubles_from_the_base() {
        let delays: Vec<i64> = (0..5).map(|n| ONE_SECOND_TO_AN_HOUR.delay_ms(n)).collect();
        assert_eq!(delays, [1000, 2000, 4000, 8000, 16_000]);
    }

    #[test]
    fn a_negative_count_is_the_base() {
        assert_eq!(ONE_SECOND_TO_AN_HOUR.delay_ms(-3), 1000);
    }

    #[test]
    fn stops_at_the_cap() {
        // 1000 << 11 = 2_048_000 is under the hour; 1000 << 12 is over it.
        assert_eq!(ONE_SECOND_TO_AN_HOUR.delay_ms(11), 2_048_000);
        assert_eq!(ONE_SECOND_TO_AN_HOUR.delay_ms(12), 3_600_000);
        assert_eq!(ONE_SECOND_TO_AN_HOUR.delay_ms(i64::MAX), 3_600_000);
    }

    #[test]
    fn stops_doubling_at_max_doublings_even_under_the_cap() {
        let b = Backoff {
            base_ms: 500,
            cap_ms: i64::MAX,
            max_doublings: 3,
        };
        assert_eq!(b.delay_ms(3), 4000);
        assert_eq!(b.delay_ms(50), 4000);
    }

    #[test]
    fn never_overflows() {
        let b = Backoff {
            base_ms: i64::MAX / 2,
            cap_ms: i64::MAX,
            max_doublings: u32::MAX,
        };
        assert_eq!(b.delay_ms(i64::MAX), i64::MAX);
    }
}
