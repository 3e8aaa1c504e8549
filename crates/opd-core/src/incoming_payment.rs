//! Incoming payments: what a receiver expects and what has arrived.

use crate::ids::{IncomingPaymentId, WalletAddressId};
use crate::money::{Amount, Asset};
use crate::time::Timestamp;

/// Free-form JSON metadata a client attaches to a payment.
pub type Metadata = serde_json::Map<String, serde_json::Value>;

/// An incoming payment into a wallet address of this server. Amounts are in
/// the wallet address's asset.
#[derive(Debug, Clone, PartialEq)]
pub struct IncomingPayment {
    pub id: IncomingPaymentId,
    pub wallet_address_id: WalletAddressId,
    pub asset: Asset,
    pub incoming_amount: Option<u64>,
    pub received_amount: u64,
    pub completed: bool,
    pub expires_at: Timestamp,
    pub metadata: Option<Metadata>,
    /// The client (its wallet address URL) that created it, when known.
    pub client: Option<String>,
    /// The client network it was created from (`ClientNetwork`'s key in
    /// `opd_service::platform::network`), kept for clients identified by
    /// a key alone: their quota per wallet address counts by it.
    pub client_network: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl IncomingPayment {
    pub fn is_expired(&self, now: Timestamp) -> bool {
        now >= self.expires_at
    }

    /// Whether payments may still arrive: not completed and not expired.
    /// Only active payments advertise payment methods.
    pub fn is_active(&self, now: Timestamp) -> bool {
        !self.completed && !self.is_expired(now)
    }

    pub fn incoming_amount(&self) -> Option<Amount> {
        self.incoming_amount
            .map(|v| Amount::new(v, self.asset.clone()))
    }

    pub fn received_amount(&self) -> Amount {
        Amount::new(self.received_amount, self.asset.clone())
    }

    /// What is still owed when there is an `incomingAmount`.
    pub fn remaining(&self) -> Option<u64> {
        self.incoming_amount
            .map(|i| i.saturating_sub(self.received_amount))
    }

    /// Whether `amount` more may arrive now (an ILP packet): never past
    /// `incomingAmount`, never once completed or expired.
    pub fn receive(&self, amount: u64, now: Timestamp) -> Receivable {
        if !self.is_active(now) {
            return Receivable::Closed;
        }
        if let Some(room) = self.remaining() {
            if amount > room {
                return Receivable::TooMuch { room };
            }
        }
        match self.received_amount.checked_add(amount) {
            Some(received) => Receivable::Yes {
                received,
                completes: self.incoming_amount.is_some_and(|i| received >= i),
            },
            None => Receivable::TooMuch {
                room: u64::MAX - self.received_amount,
            },
        }
    }
}

/// What an incoming payment can take of an arriving amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receivable {
    /// All of it; `received` is the new total.
    Yes { received: u64, completes: bool },
    /// Nothing: completed or expired.
    Closed,
    /// It would pass `incomingAmount` (or u64::MAX): only `room` fits.
    TooMuch { room: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SeededRandom;

    const NOW: Timestamp = Timestamp::from_unix_millis(1_000_000);

    fn payment(incoming: Option<u64>, received: u64) -> IncomingPayment {
        let random = SeededRandom::new(1);
        IncomingPayment {
            id: IncomingPaymentId::new(NOW, &random),
            wallet_address_id: WalletAddressId::new(NOW, &random),
            asset: Asset::parse("USD", 2).unwrap(),
            incoming_amount: incoming,
            received_amount: received,
            completed: false,
            expires_at: NOW.plus_millis(1),
            metadata: None,
            client: None,
            client_network: None,
            created_at: NOW,
            updated_at: NOW,
        }
    }

    #[test]
    fn active_until_completed_or_expired() {
        let p = payment(None, 0);
        assert!(p.is_active(NOW));
        assert!(!p.is_expired(NOW));
        // Expiry is inclusive: at `expires_at` nothing may arrive.
        assert!(p.is_expired(p.expires_at));
        assert!(!p.is_active(p.expires_at));
        assert_eq!(p.receive(1, p.expires_at), Receivable::Closed);
        let done = IncomingPayment {
            completed: true,
            ..payment(None, 0)
        };
        assert!(!done.is_active(NOW));
        assert_eq!(done.receive(1, NOW), Receivable::Closed);
    }

    #[test]
    fn amounts_carry_the_asset() {
        let p = payment(Some(500), 200);
        let usd = Asset::parse("USD", 2).unwrap();
        assert_eq!(p.incoming_amount(), Some(Amount::new(500, usd.clone())));
        assert_eq!(p.received_amount(), Amount::new(200, usd));
        assert_eq!(p.remaining(), Some(300));
        assert_eq!(payment(None, 200).remaining(), None);
        assert_eq!(payment(Some(100), 200).remaining(), Some(0));
    }

    #[test]
    fn never_past_the_incoming_amount() {
        let p = payment(Some(500), 200);
        assert_eq!(
            p.receive(299, NOW),
            Receivable::Yes {
                received: 499,
                completes: false
            }
        );
        // Exactly what is left completes it.
        assert_eq!(
            p.receive(300, NOW),
            Receivable::Yes {
                received: 500,
                completes: true
            }
        );
        assert_eq!(p.receive(301, NOW), Receivable::TooMuch { room: 300 });
    }

    #[test]
    fn without_an_incoming_amount_only_u64_limits() {
        let p = payment(None, u64::MAX - 10);
        assert_eq!(
            p.receive(10, NOW),
            Receivable::Yes {
                received: u64::MAX,
                completes: false
            }
        );
        assert_eq!(p.receive(11, NOW), Receivable::TooMuch { room: 10 });
    }
}
