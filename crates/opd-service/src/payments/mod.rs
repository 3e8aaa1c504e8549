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
    /// The authorization server other servers named for their incoming
    /// payments, by the receivers' collection URL (`receivers::remote`).
    pub auth_servers: TtlCache<String, String>,
    /// Announced when a payment becomes due (created or funded here), so a
    /// payment worker starts on it at once instead of at its next poll.
    pub due: Due,
}

/// Payments announced due and not yet looked for: one worker wakes for
/// each (a count, not a flag, so payments created while every worker is
/// busy are each looked for once, and a worker that just finished one
/// does not look again on the chance that another is due: that look
/// found nothing most of the time, a round trip per payment).
#[derive(Debug)]
pub struct Due(tokio::sync::Semaphore);

impl Due {
    /// More announced than this are not counted: the workers' regular
    /// polls find them.
    const MAX_WAITING: usize = 10_000;

    fn new() -> Self {
        Self(tokio::sync::Semaphore::new(0))
    }

    /// A payment became due.
    pub fn announce(&self) {
        if self.0.available_permits() < Self::MAX_WAITING {
            self.0.add_permits(1);
        }
    }

    /// Waits until a payment is announced, and takes that announcement.
    pub async fn wait(&self) {
        if let Ok(permit) = self.0.acquire().await {
            permit.forget();
        }
    }
}

impl PaymentState {
    pub fn new() -> Self {
        Self {
            quotes: TtlCache::new(std::time::Duration::from_secs(600), 10_000),
            auth_servers: TtlCache::new(receivers::remote::AUTH_SERVER_TTL, 10_000),
            due: Due::new(),
        }
    }
}

impl Default for PaymentState {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Due;

    #[tokio::test]
    async fn each_announced_payment_wakes_one_wait() {
        let due = Due::new();
        for _ in 0..3 {
            due.announce();
        }
        // Each of the three is there at once (a lost announcement would
        // time out here rather than hang).
        for _ in 0..3 {
            let waited = tokio::time::timeout(std::time::Duration::from_secs(5), due.wait()).await;
            assert!(waited.is_ok(), "an announced payment did not wake a wait");
        }
        // All three taken: a fourth wait waits.
        let fourth = tokio::time::timeout(std::time::Duration::ZERO, due.wait()).await;
        assert!(fourth.is_err());
    }
}
