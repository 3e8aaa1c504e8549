//! Small in-memory caches for the hot path (tokens, wallet addresses).
//!
//! Entries live for a short TTL. Changes made on this node clear the
//! affected cache at once; other nodes sharing the database see them within
//! the TTL (documented as `cache_ttl`).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A bounded map whose entries expire after a TTL.
#[derive(Debug)]
pub struct TtlCache<K, V> {
    ttl: Duration,
    capacity: usize,
    map: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            map: Mutex::new(HashMap::new()),
        }
    }

    /// The cached value, if fresh.
    pub fn get(&self, key: &K) -> Option<V> {
        if self.ttl.is_zero() {
            return None;
        }
        let map = self.map.lock().ok()?;
        map.get(key)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, v)| v.clone())
    }

    pub fn insert(&self, key: K, value: V) {
        if self.ttl.is_zero() {
            return;
        }
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= self.capacity {
                // Cheap bound: drop everything rather than track recency.
                map.clear();
            }
            map.insert(key, (Instant::now(), value));
        }
    }

    pub fn clear(&self) {
        if let Ok(mut map) = self.map.lock() {
            map.clear();
        }
    }
}
