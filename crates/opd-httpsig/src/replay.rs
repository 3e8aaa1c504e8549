//! Replay protection for accepted signatures.
//!
//! [`ReplayCache`] remembers the SHA-256 of every signature it is shown,
//! together with the signature's `created` time, for as long as that
//! signature would still pass the freshness check (`window`, normally the
//! policy's `max_age`). A second presentation of the same signature inside
//! the window is reported as a replay. Older entries are evicted lazily on
//! every call.
//!
//! Memory is bounded by `capacity`. When the cache is full the entry with
//! the oldest `created` is evicted to make room. The trade-off: a client
//! that can produce more than `capacity` valid signatures within one window
//! (it must hold a registered key to do so) can push older entries out and
//! make *those* replayable until they go stale. The alternative, refusing
//! new signatures while full, would let the same client deny service to
//! everyone, so eviction was preferred. Size `capacity` above the expected
//! number of signed requests per `window`.
//!
//! Only insert signatures that passed
//! [`ParsedSignature::verify`](crate::ParsedSignature::verify), so that
//! forged requests cannot fill the cache.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use sha2::{Digest as _, Sha256};

use crate::verify::VerifyPolicy;

type Fingerprint = [u8; 32];

#[derive(Debug, Default)]
struct Inner {
    by_fingerprint: HashMap<Fingerprint, u64>,
    by_created: BTreeSet<(u64, Fingerprint)>,
}

impl Inner {
    fn remove_oldest(&mut self) {
        if let Some((created, fp)) = self.by_created.pop_first() {
            if self.by_fingerprint.get(&fp) == Some(&created) {
                self.by_fingerprint.remove(&fp);
            }
        }
    }
}

/// A bounded, thread-safe set of recently accepted signatures.
#[derive(Debug)]
pub struct ReplayCache {
    capacity: usize,
    window_secs: u64,
    inner: Mutex<Inner>,
}

impl ReplayCache {
    /// A cache holding at most `capacity` signatures (at least 1), each for
    /// `window` after its `created` time (whole seconds).
    pub fn new(capacity: usize, window: Duration) -> Self {
        ReplayCache {
            capacity: capacity.max(1),
            window_secs: window.as_secs(),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// A cache whose window is `policy.max_age`: a signature older than that
    /// is rejected as stale by [`parse_signature`](crate::parse_signature)
    /// anyway.
    pub fn for_policy(policy: &VerifyPolicy, capacity: usize) -> Self {
        Self::new(capacity, policy.max_age)
    }

    /// The maximum number of remembered signatures.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The number of signatures currently remembered (including any that
    /// would be evicted on the next call).
    pub fn len(&self) -> usize {
        self.lock().by_fingerprint.len()
    }

    /// True when nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The data stays consistent even if a holder panicked mid-way
        // (worst case: one extra or one missing entry), so ignore poisoning.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `signature` (created at `created`, unix seconds) and returns
    /// true if it was not seen before; returns false for a replay.
    ///
    /// Also returns false, without recording, when `created` is already
    /// older than the window at `now`: such a signature could not be
    /// tracked for its lifetime (and is stale anyway).
    pub fn check_and_insert(&self, signature: &[u8], created: u64, now: u64) -> bool {
        let cutoff = now.saturating_sub(self.window_secs);
        let mut inner = self.lock();
        while let Some(&(oldest, _)) = inner.by_created.first() {
            if oldest >= cutoff {
                break;
            }
            inner.remove_oldest();
        }
        if created < cutoff {
            return false;
        }
        let fp: Fingerprint = Sha256::digest(signature).into();
        if inner.by_fingerprint.contains_key(&fp) {
            return false;
        }
        while inner.by_fingerprint.len() >= self.capacity {
            inner.remove_oldest();
        }
        inner.by_fingerprint.insert(fp, created);
        inner.by_created.insert((created, fp));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn detects_replays() {
        let c = ReplayCache::new(10, Duration::from_secs(300));
        assert!(c.check_and_insert(b"a", 1000, 1000));
        assert!(!c.check_and_insert(b"a", 1000, 1001));
        assert!(c.check_and_insert(b"b", 1000, 1001));
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn evicts_after_window() {
        let c = ReplayCache::new(10, Duration::from_secs(300));
        assert!(c.check_and_insert(b"a", 1000, 1000));
        assert!(!c.check_and_insert(b"a", 1000, 1300));
        // At 1301 the signature is outside the window: it is forgotten, and
        // re-presenting it is refused because it is too old to track.
        assert!(!c.check_and_insert(b"a", 1000, 1301));
        assert!(c.is_empty());
        assert!(c.check_and_insert(b"b", 1301, 1301));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn evicts_oldest_when_full() {
        let c = ReplayCache::new(2, Duration::from_secs(300));
        assert!(c.check_and_insert(b"old", 990, 1000));
        assert!(c.check_and_insert(b"mid", 995, 1000));
        assert!(c.check_and_insert(b"new", 999, 1000));
        assert_eq!(c.len(), 2);
        // "old" was evicted (documented trade-off), the others remain.
        assert!(!c.check_and_insert(b"mid", 995, 1000));
        assert!(!c.check_and_insert(b"new", 999, 1000));
        assert!(c.check_and_insert(b"old", 990, 1000));
    }

    #[test]
    fn zero_capacity_still_remembers_one() {
        let c = ReplayCache::new(0, Duration::from_secs(300));
        assert_eq!(c.capacity(), 1);
        assert!(c.check_and_insert(b"a", 1000, 1000));
        assert!(!c.check_and_insert(b"a", 1000, 1000));
    }

    #[test]
    fn for_policy_uses_max_age() {
        let c = ReplayCache::for_policy(&VerifyPolicy::default(), 4);
        assert!(c.check_and_insert(b"a", 1000, 1000));
        assert!(!c.check_and_insert(b"a", 1000, 1300));
        assert!(!c.check_and_insert(b"a", 1000, 1301));
    }

    #[test]
    fn concurrent_inserts_accept_each_signature_once() {
        let c = Arc::new(ReplayCache::new(1000, Duration::from_secs(300)));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = Arc::clone(&c);
                std::thread::spawn(move || {
                    (0u32..200)
                        .filter(|i| c.check_and_insert(&i.to_be_bytes(), 1000, 1000))
                        .count()
                })
            })
            .collect();
        let accepted: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(accepted, 200);
    }
}
