//! A read cache of outgoing payments for a database only this process
//! writes (SQLite served exclusively): `GET /outgoing-payments/{id}` is
//! polled far more often than a payment changes. Every write bumps an epoch
//! and drops the payment, before its transaction and after its commit; a
//! read caches its row only if no write began since the read started, so a
//! stale row can never be cached. Disabled for PostgreSQL, where other
//! nodes write too.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use opd_core::outgoing_payment::OutgoingPayment;
use opd_core::OutgoingPaymentId;

/// Most payments kept; the cache is emptied when it is full.
const CAPACITY: usize = 10_000;

#[derive(Debug, Default)]
pub(crate) struct PaymentReadCache {
    enabled: bool,
    inner: Mutex<(u64, HashMap<OutgoingPaymentId, OutgoingPayment>)>,
}

impl PaymentReadCache {
    pub(crate) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            inner: Mutex::default(),
        }
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, (u64, HashMap<OutgoingPaymentId, OutgoingPayment>)> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The epoch to pass to `put` after reading.
    pub(crate) fn epoch(&self) -> u64 {
        if !self.enabled {
            return 0;
        }
        self.lock().0
    }

    pub(crate) fn get(&self, id: OutgoingPaymentId) -> Option<OutgoingPayment> {
        if !self.enabled {
            return None;
        }
        self.lock().1.get(&id).cloned()
    }

    pub(crate) fn put(&self, read_epoch: u64, payment: &OutgoingPayment) {
        if !self.enabled {
            return;
        }
        let mut g = self.lock();
        if g.0 == read_epoch {
            if g.1.len() >= CAPACITY {
                g.1.clear();
            }
            g.1.insert(payment.id, payment.clone());
        }
    }

    pub(crate) fn invalidate(&self, id: OutgoingPaymentId) {
        if !self.enabled {
            return;
        }
        let mut g = self.lock();
        g.0 = g.0.wrapping_add(1);
        g.1.remove(&id);
    }

    /// Drops every payment (after a write whose outcome is unknown).
    pub(crate) fn invalidate_all(&self) {
        if !self.enabled {
            return;
        }
        let mut g = self.lock();
        g.0 = g.0.wrapping_add(1);
        g.1.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::outgoing_payment::OutgoingPaymentState;
    use opd_core::{Amount, Asset, QuoteId, SeededRandom, Timestamp, WalletAddressId};

    fn payment(n: u64) -> OutgoingPayment {
        let at = Timestamp::from_unix_millis(1_790_000_000_000);
        let random = SeededRandom::new(n);
        let quote = QuoteId::new(at, &random);
        let usd = Asset::parse("USD", 2).unwrap_or_else(|e| panic!("{e}"));
        OutgoingPayment {
            id: OutgoingPaymentId::from_uuid(*quote.as_uuid()),
            wallet_address_id: WalletAddressId::new(at, &random),
            quote_id: quote,
            receiver: "https://elsewhere.example/incoming-payments/x".into(),
            debit: Amount::new(100, usd.clone()),
            receive: Amount::new(90, usd),
            sent: 0,
            delivered: 0,
            receiver_baseline: None,
            state: OutgoingPaymentState::Sending,
            error: None,
            metadata: None,
            client: None,
            grant_id: None,
            grant_interval_start: None,
            attempts: 0,
            next_attempt_at: at,
            created_at: at,
            updated_at: at,
        }
    }

    #[test]
    fn a_read_is_kept_unless_a_write_began_since_it_started() {
        let cache = PaymentReadCache::new(true);
        let (a, b) = (payment(1), payment(2));
        let read = cache.epoch();
        cache.put(read, &a);
        cache.put(read, &b);
        assert_eq!(cache.get(a.id), Some(a.clone()));
        assert_eq!(cache.get(b.id), Some(b.clone()), "both kept");
        // A write to `a` while `b` was read again: `b`'s row may be stale.
        let read = cache.epoch();
        cache.invalidate(a.id);
        assert_eq!(cache.get(a.id), None, "the written payment is dropped");
        let b_later = b.completed(100);
        cache.put(read, &b_later);
        assert_eq!(
            cache.get(b.id),
            Some(b.clone()),
            "a read from before the write is not kept"
        );
        // Reads that start after the writes are kept again.
        cache.invalidate(b.id);
        let read = cache.epoch();
        cache.put(read, &b_later);
        assert_eq!(cache.get(b_later.id), Some(b_later.clone()));
        cache.invalidate_all();
        assert_eq!((cache.get(a.id), cache.get(b_later.id)), (None, None));
        let read = cache.epoch();
        cache.put(read, &a);
        assert_eq!(cache.get(a.id), Some(a));
    }

    #[test]
    fn a_full_cache_is_emptied_before_it_grows() {
        let cache = PaymentReadCache::new(true);
        let first = payment(0);
        let read = cache.epoch();
        cache.put(read, &first);
        let mut other = first.clone();
        for n in 1..CAPACITY as u128 {
            other.id = OutgoingPaymentId::from_uuid(uuid::Uuid::from_u128(n));
            cache.put(read, &other);
        }
        assert_eq!(cache.lock().1.len(), CAPACITY);
        assert_eq!(cache.get(first.id), Some(first.clone()), "full, not over");
        let last = payment(1);
        cache.put(read, &last);
        assert_eq!(cache.lock().1.len(), 1);
        assert_eq!(
            (cache.get(first.id), cache.get(last.id)),
            (None, Some(last))
        );
    }

    #[test]
    fn a_disabled_cache_keeps_nothing() {
        let cache = PaymentReadCache::new(false);
        let a = payment(1);
        cache.put(cache.epoch(), &a);
        assert_eq!(cache.get(a.id), None);
        cache.invalidate(a.id);
        cache.invalidate_all();
        assert_eq!(cache.epoch(), 0);
        assert_eq!(cache.lock().0, 0, "writes are not counted either");
    }
}
