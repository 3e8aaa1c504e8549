//! Bounded in-memory caches for the hot path (tokens, wallet addresses,
//! quotes, peers), on `quick_cache`: entries live for a TTL, the least
//! useful go first when the bound is reached (instead of all at once), and
//! readers of different keys rarely share a lock (the cache is sharded).
//!
//! Changes made on this node clear the affected cache at once; other nodes
//! sharing the database drop theirs when they hear of the change, or at
//! the latest after the TTL (documented as `cache_ttl`).

use std::hash::Hash;
use std::time::{Duration, Instant};

/// A bounded map whose entries expire after a TTL; a TTL of zero caches
/// nothing.
pub struct TtlCache<K, V> {
    ttl: Duration,
    cache: quick_cache::sync::Cache<K, (Instant, V)>,
}

impl<K, V> std::fmt::Debug for TtlCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlCache")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl<K, V> TtlCache<K, V>
where
    K: Eq + Hash + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        let cache = quick_cache::sync::Cache::new(capacity.max(1));
        Self { ttl, cache }
    }

    /// The cached value, if fresh.
    pub fn get(&self, key: &K) -> Option<V> {
        if self.ttl.is_zero() {
            return None;
        }
        let (at, value) = self.cache.get(key)?;
        if at.elapsed() < self.ttl {
            Some(value)
        } else {
            self.cache.remove(key);
            None
        }
    }

    pub fn insert(&self, key: K, value: V) {
        if !self.ttl.is_zero() {
            self.cache.insert(key, (Instant::now(), value));
        }
    }

    pub fn remove(&self, key: &K) {
        self.cache.remove(key);
    }

    pub fn clear(&self) {
        self.cache.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::TtlCache;
    use std::time::Duration;

    #[test]
    fn values_come_back_until_cleared_and_a_zero_ttl_keeps_nothing() {
        let c = TtlCache::new(Duration::from_secs(60), 10);
        c.insert(1, "one");
        assert_eq!(c.get(&1), Some("one"));
        c.clear();
        assert_eq!(c.get(&1), None);
        let off = TtlCache::new(Duration::ZERO, 10);
        off.insert(1, "one");
        assert_eq!(off.get(&1), None);
    }
}
