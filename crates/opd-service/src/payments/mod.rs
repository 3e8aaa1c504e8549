//! Payments: incoming payments (what a wallet address receives), quotes,
//! receivers (local or on another server) and the whole life of an
//! outgoing payment. May call `access`'s results, `interledger` (to send),
//! `wallets`, `ledger`, `pricing`, `webhooks` and `platform`.

pub mod incoming;
pub mod outgoing;
pub mod quotes;
pub mod receivers;

use opd_core::quote::Quote;
use opd_core::QuoteId;

use crate::platform::cache::TtlCache;

/// What the payments area keeps between requests.
pub struct PaymentState {
    /// Quotes by id. A quote never changes once stored, so a cached copy is
    /// never stale, on any node; the bound only limits memory.
    pub quotes: TtlCache<QuoteId, Quote>,
    /// Signalled when a payment becomes due (created or funded here), so an
    /// idle payment worker starts on it at once instead of at its next poll.
    pub due: tokio::sync::Notify,
}

impl PaymentState {
    pub fn new() -> Self {
        Self {
            quotes: TtlCache::new(std::time::Duration::from_secs(600), 10_000),
            due: tokio::sync::Notify::new(),
        }
    }
}

impl Default for PaymentState {
    fn default() -> Self {
        Self::new()
    }
}
