//! Limits on how fast one client or one address may ask for things:
//! - [`Throttle`]: token buckets by key (grant requests per client and per
//!   address), answered 429 with `Retry-After` when empty;
//! - [`Lockout`]: growing delays after failed password attempts, by key
//!   (per wallet address and per address), reset by a success.
//!
//! Both are kept per node, in memory: a cluster of N nodes allows up to N
//! times the rate. They bound abuse rather than enforce a contract (the
//! limits that must hold across nodes, such as pending interactions per
//! client, are counted in the database).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use opd_core::Backoff;

/// Keys kept at most; past it, keys at rest are forgotten.
const MAX_KEYS: usize = 100_000;

/// Token buckets: `burst` requests at once, refilled at `per_minute`.
#[derive(Debug)]
pub struct Throttle {
    per_minute: u32,
    burst: u32,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl Throttle {
    /// `per_minute` 0 turns the limit off.
    pub fn new(per_minute: u32, burst: u32) -> Self {
        Self {
            per_minute,
            burst: burst.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request for `key`; `Err` with how long to wait when the
    /// bucket is empty.
    pub fn take(&self, key: &str) -> Result<(), Duration> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let rate = f64::from(self.per_minute) / 60.0;
        let burst = f64::from(self.burst);
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= MAX_KEYS {
            // Forget the keys whose bucket has refilled: they are at rest.
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * rate < burst
            });
        }
        let (tokens, at) = buckets.entry(key.to_owned()).or_insert((burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * rate).min(burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - *tokens) / rate).max(Duration::from_secs(1)))
        }
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
