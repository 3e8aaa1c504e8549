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
