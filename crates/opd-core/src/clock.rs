//! Injected time and randomness, so tests are deterministic and never sleep.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use rand::{RngCore, SeedableRng};

use crate::time::Timestamp;

/// The source of "now" for everything that depends on time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The machine's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now_utc()
    }
}

/// A clock that moves only when told to; for tests.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self(Arc::new(AtomicI64::new(start.unix_millis())))
    }

    pub fn advance_millis(&self, millis: i64) {
        self.0.fetch_add(millis, Ordering::SeqCst);
    }

    pub fn set(&self, t: Timestamp) {
        self.0.store(t.unix_millis(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_millis(self.0.load(Ordering::SeqCst))
    }
}

/// The source of randomness for identifiers and secrets.
pub trait Random: Send + Sync + 'static {
    fn fill(&self, dest: &mut [u8]);
}

/// The operating system's CSPRNG.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsRandom;

impl Random for OsRandom {
    fn fill(&self, dest: &mut [u8]) {
        rand::rngs::OsRng.fill_bytes(dest);
    }
}

/// A seeded generator; for tests that replay exactly.
#[derive(Debug)]
pub struct SeededRandom(Mutex<rand::rngs::StdRng>);

impl SeededRandom {
    pub fn new(seed: u64) -> Self {
        Self(Mutex::new(rand::rngs::StdRng::seed_from_u64(seed)))
    }
}

impl Random for SeededRandom {
    fn fill(&self, dest: &mut [u8]) {
        // A poisoned lock only means another test thread panicked mid-fill;
        // the generator state is still usable.
        let mut rng = self.0.lock().unwrap_or_else(|e| e.into_inner());
        rng.fill_bytes(dest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_unix_millis(1_000));
        assert_eq!(clock.now(), Timestamp::from_unix_millis(1_000));
        clock.advance_millis(250);
        assert_eq!(clock.now(), Timestamp::from_unix_millis(1_250));
        clock.set(Timestamp::from_unix_millis(7));
        assert_eq!(clock.now(), Timestamp::from_unix_millis(7));
    }

    #[test]
    fn random_sources_fill_and_seeds_replay() {
        // 32 zero bytes from a working generator: chance 2^-256.
        let mut os = [0u8; 32];
        OsRandom.fill(&mut os);
        assert_ne!(os, [0u8; 32]);
        let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
        SeededRandom::new(5).fill(&mut a);
        SeededRandom::new(5).fill(&mut b);
        assert_ne!(a, [0u8; 32]);
        assert_eq!(a, b);
    }
}
