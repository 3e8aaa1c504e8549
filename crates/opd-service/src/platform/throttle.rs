//! Limits on how fast one client or one address may ask for things:
//! - [`Throttle`]: token buckets by key (grant requests per client and per
//!   client network), answered 429 with `Retry-After` when empty, on `governor`;
//! - [`Lockout`]: growing delays after password attempts, by key (the
//!   consent page's: per wallet address and client network, and per
//!   interaction), counted before the password is checked and reset by a
//!   success (no crate does this doubling lockout).
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

    /// `per_hour` a key (also the burst); 0 turns the limit off.
    pub fn per_hour(per_hour: u32) -> Self {
        let limiter = NonZeroU32::new(per_hour).map(|rate| {
            governor::RateLimiter::keyed(governor::Quota::per_hour(rate).allow_burst(rate))
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

/// Growing delays after attempts: the first `free` attempts in a row
/// cost nothing more, then each further one waits twice as long as the
/// last (1 s, 2 s, 4 s, ... up to 15 minutes) before the keys may try
/// again; a success starts them afresh.
///
/// An attempt is counted when it is taken, before the password is
/// checked, so that concurrent guesses cannot all pass the check before
/// any of them is counted: however many arrive at once, at most `free` are
/// evaluated before the first wait.
#[derive(Debug)]
pub struct Lockout {
    free: u32,
    attempts: Mutex<HashMap<String, (u32, Instant)>>,
}

/// The wait after each attempt beyond the free ones: 1 s doubling to 15
/// minutes.
const LOCKOUT: Backoff = Backoff {
    base_ms: 1000,
    cap_ms: 15 * 60 * 1000,
    max_doublings: 20,
};

impl Lockout {
    /// `free` attempts in a row before the first wait (at least one).
    pub fn new(free: u32) -> Self {
        Self {
            free: free.max(1),
            attempts: Mutex::new(HashMap::new()),
        }
    }

    /// Takes an attempt for every one of `keys` at once: `Err` with how
    /// long to wait (and nothing counted) while any of them waits.
    pub fn attempt(&self, keys: &[&str]) -> Result<(), Duration> {
        let now = Instant::now();
        let mut attempts = self.attempts.lock().unwrap_or_else(|e| e.into_inner());
        let wait = keys
            .iter()
            .filter_map(|k| attempts.get(*k))
            .filter(|(_, until)| *until > now)
            .map(|(_, until)| *until - now)
            .max();
        if let Some(wait) = wait {
            return Err(wait);
        }
        if attempts.len() >= MAX_KEYS {
            attempts.retain(|_, (_, until)| *until > now);
        }
        for key in keys {
            let (count, until) = attempts.entry((*key).to_owned()).or_insert((0, now));
            *count = count.saturating_add(1);
            if *count >= self.free {
                // This attempt is the last before a wait: the next one
                // waits, whether or not this one turns out right.
                let wait = LOCKOUT.delay_ms(i64::from(*count - self.free));
                *until = now + Duration::from_millis(u64::try_from(wait).unwrap_or(0));
            }
        }
        Ok(())
    }

    /// A success: `keys` start afresh.
    pub fn succeeded(&self, keys: &[&str]) {
        let mut attempts = self.attempts.lock().unwrap_or_else(|e| e.into_inner());
        for key in keys {
            attempts.remove(*key);
        }
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
    fn attempts_beyond_the_free_ones_wait_and_are_not_counted_while_waiting() {
        let l = Lockout::new(3);
        assert!(l.attempt(&["w", "i"]).is_ok());
        assert!(l.attempt(&["w", "i"]).is_ok());
        // The third is taken, and makes the next ones wait.
        assert!(l.attempt(&["w", "i"]).is_ok());
        let first = l.attempt(&["w", "i"]).err().unwrap_or_default();
        assert!(first > Duration::from_millis(900), "{first:?}");
        // Either key waiting is enough; another key is free.
        assert!(l.attempt(&["w", "other"]).is_err());
        assert!(l.attempt(&["other"]).is_ok());
        l.succeeded(&["w", "i"]);
        assert!(l.attempt(&["w", "i"]).is_ok());
    }

    #[test]
    fn concurrent_attempts_get_only_the_free_ones() {
        let l = std::sync::Arc::new(Lockout::new(3));
        let taken: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..16)
                .map(|_| {
                    let l = l.clone();
                    scope.spawn(move || (0..50).filter(|_| l.attempt(&["w"]).is_ok()).count())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
        });
        assert_eq!(taken, 3);
    }

    #[test]
    fn lockouts_double_from_one_second_to_fifteen_minutes() {
        assert_eq!(LOCKOUT.delay_ms(0), 1000);
        assert_eq!(LOCKOUT.delay_ms(9), 512_000);
        assert_eq!(LOCKOUT.delay_ms(10), 900_000);
        assert_eq!(LOCKOUT.delay_ms(i64::from(u32::MAX)), 900_000);
    }
}
