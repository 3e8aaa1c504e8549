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
