//! Limits on how fast one client or one address may ask for things:
//! - [`Throttle`]: token buckets by key (grant requests per client and per
//!   address), answered 429 with `Retry-After` when empty, on `governor`;
//! - [`Lockout`]: growing delays after failed password attempts, by key
//!   (per wallet address and per address), reset by a success (no crate
//!   does this doubling lockout).
//!
//! Both are kept per node, in memory: a cluster of N nodes allows up to N
//! times the rate. They bound abuse rather than enforce a contract (the
//! limits that must hold across nodes, such as pending interactions per
//! client, are counted in the database).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use opd_core::Backoff;

/// Keys kept at most; past it, keys at rest are forgotten.
const MAX_KEYS: usize = 100_000;

/// Token buckets by key (`governor`'s GCRA): `burst` requests at once,
/// refilled at `per_minute`.
pub struct Throttle {
    limiter: Option<governor::DefaultKeyedRateLimiter<String>>,
}

impl std::fmt::Debug for Throttle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttle")
            .field("on", &self.limiter.is_some())
            .finish()
    }
}

impl Throttle {
    /// `per_minute` 0 turns the limit off.
    pub fn new(per_minute: u32, burst: u32) -> Self {
        let limiter = NonZeroU32::new(per_minute).map(|rate| {
            let burst = NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN);
            governor::RateLimiter::keyed(governor::Quota::per_minute(rate).allow_burst(burst))
        });
        Self { limiter }
    }

    /// Takes one request for `key`; `Err` with how long to wait (at least
    /// a second, as `Retry-After` counts) when the bucket is empty.
    pub fn take(&self, key: &str) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        if limiter.len() >= MAX_KEYS {
            // Forget the keys whose bucket has refilled: they are at rest.
            limiter.retain_recent();
        }
        let key = key.to_owned();
        limiter.check_key(&key).map_err(|not_until| {
            let wait = not_until.wait_time_from(governor::clock::Clock::now(limiter.clock()));
            wait.max(Duration::from_secs(1))
        })
    }
}

/// Growing delays after failures: the first `free` failures cost
/// nothing, each further one doubles the wait (1 s, 2 s, 4 s, ... up to
/// 15 minutes) before the key may try again.
#[derive(Debug)]
pub struct Lockout {
    free: u32,
    failures: Mutex<HashMap<String, (u32, Instant)>>,
}

/// The wait after each failure beyond the free ones: 1 s doubling to 15
/// minutes.
const LOCKOUT: Backoff = Backoff {
    base_ms: 1000,
    cap_ms: 15 * 60 * 1000,
    max_doublings: 20,
};

impl Lockout {
    pub fn new(free: u32) -> Self {
        Self {
            free,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// `Err` with how long `key` must still wait before trying.
    pub fn check(&self, key: &str) -> Result<(), Duration> {
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        match failures.get(key) {
            Some(&(_, until)) if until > Instant::now() => Err(until - Instant::now()),
            _ => Ok(()),
        }
    }

    /// Records a failed attempt of `key`.
    pub fn failed(&self, key: &str) {
        let now = Instant::now();
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if failures.len() >= MAX_KEYS {
            failures.retain(|_, (_, until)| *until > now);
        }
        let (count, until) = failures.entry(key.to_owned()).or_insert((0, now));
        *count = count.saturating_add(1);
        if *count > self.free {
            let wait = LOCKOUT.delay_ms(i64::from(*count - self.free - 1));
            let wait = Duration::from_millis(u64::try_from(wait).unwrap_or(0));
            *until = now + wait;
        }
    }

    /// A success: `key` starts afresh.
    pub fn succeeded(&self, key: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_asks_to_wait() {
        let t = Throttle::new(60, 3);
        for _ in 0..3 {
            assert!(t.take("a").is_ok());
        }
        let wait = t.take("a").err().unwrap_or_default();
        assert!(wait >= Duration::from_secs(1));
        assert!(t.take("b").is_ok(), "keys are apart");
        assert!(Throttle::new(0, 1).take("a").is_ok(), "0 turns it off");
    }

    #[test]
    fn failures_beyond_the_free_ones_lock_the_key_out_for_longer_each_time() {
        let l = Lockout::new(2);
        l.failed("w");
        l.failed("w");
        assert!(l.check("w").is_ok());
        l.failed("w");
        let first = l.check("w").err().unwrap_or_default();
        l.failed("w");
        let second = l.check("w").err().unwrap_or_default();
        assert!(second > first, "{first:?} {second:?}");
        l.succeeded("w");
        assert!(l.check("w").is_ok());
    }

    #[test]
    fn lockouts_double_from_one_second_to_fifteen_minutes() {
        assert_eq!(LOCKOUT.delay_ms(0), 1000);
        assert_eq!(LOCKOUT.delay_ms(9), 512_000);
        assert_eq!(LOCKOUT.delay_ms(10), 900_000);
        assert_eq!(LOCKOUT.delay_ms(i64::from(u32::MAX)), 900_000);
    }
}
