//! Outgoing payments: their lifecycle as an enum, the grant limits a new
//! payment is counted against, and the transitions the store applies
//! atomically (local delivery, failure).
//!
//! ```text
//! funding ──fund──▶ sending ──deliver──▶ completed
//!    │                 │
//!    └──fail/cancel────┴──────────────▶ failed | cancelled (money back)
//! ```

use std::fmt;

use crate::ids::{IncomingPaymentId, OutgoingPaymentId, QuoteId, WalletAddressId};
use crate::incoming_payment::Metadata;
use crate::money::{Amount, Asset};
use crate::time::Timestamp;
use crate::webhook::WebhookEvent;

/// Where an outgoing payment is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutgoingPaymentState {
    /// Waiting for the operator to fund it (external funding mode).
    Funding,
    /// Funded; a worker sends it.
    Sending,
    /// Sent and delivered.
    Completed,
    /// Could not be sent; its money went back.
    Failed,
    /// Cancelled by the operator before it was sent; its money went back.
    Cancelled,
}

impl OutgoingPaymentState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Funding => "funding",
            Self::Sending => "sending",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// The state named by `s`, as stored.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "funding" => Self::Funding,
            "sending" => Self::Sending,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            _ => return None,
        })
    }

    /// What the Open Payments `failed` flag shows: the payment ended
    /// without being sent.
    pub fn is_failed(self) -> bool {
        matches!(self, Self::Failed | Self::Cancelled)
    }

    /// Whether the payment may still fail or be cancelled (its money is
    /// still held or not yet taken).
    pub fn is_open(self) -> bool {
        matches!(self, Self::Funding | Self::Sending)
    }
}

impl fmt::Display for OutgoingPaymentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An outgoing payment from a wallet address of this server.
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingPayment {
    pub id: OutgoingPaymentId,
    pub wallet_address_id: WalletAddressId,
    pub quote_id: QuoteId,
    /// The incoming payment URL paid.
    pub receiver: String,
    pub debit: Amount,
    pub receive: Amount,
    /// What was sent towards the receiver, in the debit asset.
    pub sent: u64,
    /// What reached the receiver, in its asset, for a payment sent over
    /// Interledger (packet by packet); 0 for one paid on this server.
    pub delivered: u64,
    /// For a payment sent over Interledger: what the receiver had received
    /// before its first packet (set once, when sending starts).
    pub receiver_baseline: Option<u64>,
    pub state: OutgoingPaymentState,
    /// Why it failed, for failed and cancelled payments.
    pub error: Option<String>,
    pub metadata: Option<Metadata>,
    /// The client that created it, when known.
    pub client: Option<String>,
    pub grant_id: Option<String>,
    /// The start of the grant interval the payment's amounts were counted
    /// in (0 for a grant without interval).
    pub grant_interval_start: Option<Timestamp>,
    /// Worker steps since the payment last moved money (each claim counts
    /// one; a posted packet starts again from 0): what its backoff and its
    /// stall bound count.
    pub attempts: i64,
    pub next_attempt_at: Timestamp,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl OutgoingPayment {
    /// The payment as it reads once completed with `sent`.
    pub fn completed(&self, sent: u64) -> Self {
        Self {
            state: OutgoingPaymentState::Completed,
            sent,
            ..self.clone()
        }
    }

    /// The payment as it reads once it ended in `state` (failed or
    /// cancelled) for `reason`.
    pub fn ended(&self, state: OutgoingPaymentState, reason: &str) -> Self {
        Self {
            state,
            error: Some(reason.to_owned()),
            ..self.clone()
        }
    }

    /// The amount sent so far, in the debit asset.
    pub fn sent_amount(&self) -> Amount {
        Amount::new(self.sent, self.debit.asset.clone())
    }
}

/// A grant's limits as they apply to one new payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantReservation {
    pub grant_id: String,
    /// Start of the interval containing the payment (0: the grant's life).
    pub interval_start: Timestamp,
    pub interval_end: Option<Timestamp>,
    pub debit_limit: Option<u64>,
    pub receive_limit: Option<u64>,
}

impl GrantReservation {
    /// Whether adding `debit` and `receive` to what was spent before stays
    /// within the limits (an overflowing sum never does).
    pub fn allows(&self, before: (u64, u64), debit: u64, receive: u64) -> bool {
        let within = |limit: Option<u64>, spent: u64, add: u64| match limit {
            None => true,
            Some(l) => spent.checked_add(add).is_some_and(|total| total <= l),
        };
        within(self.debit_limit, before.0, debit) && within(self.receive_limit, before.1, receive)
    }
}

/// What a grant spent in one interval.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GrantSpent {
    pub debit: Option<Amount>,
    pub receive: Option<Amount>,
}

/// The result of creating an outgoing payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateOutgoing {
    /// Stored and funded; the grant's spending before this payment.
    Created { spent_before: GrantSpent },
    /// The quote already has a payment.
    QuoteUsed,
    /// The wallet address's balance is too low; nothing was stored.
    InsufficientBalance { available: u64 },
    /// The grant's limit would be exceeded; nothing was stored.
    LimitExceeded { spent_before: GrantSpent },
    /// A balance or a grant total would pass the largest amount opd
    /// represents (u64); nothing was stored.
    Overflow,
}

/// Delivery of an outgoing payment to an incoming payment on this server,
/// applied atomically: the payment completes, the receiver's account and
/// `receivedAmount` rise by its rule (if the receiver, locked, is still as
/// planned), the fee goes to the fee account.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalDelivery {
    pub payment: OutgoingPaymentId,
    pub incoming: IncomingPaymentId,
    /// The incoming payment as the delivery was planned against it (read
    /// just before): the store credits it by its rule and keeps the
    /// delivery only if the row it locks is still this.
    pub receiver: crate::incoming_payment::IncomingPayment,
    /// Where the delivered amount goes.
    pub receipts: crate::ledger::Receipts,
    pub sender_asset: Asset,
    pub receiver_asset: Asset,
    /// Converted and sent (debit − fee).
    pub send: u64,
    pub fee: u64,
    pub deliver: u64,
    pub at: Timestamp,
    pub events: Vec<WebhookEvent>,
}

/// A failure or cancellation of an outgoing payment: the money held goes
/// back where it came from and the grant's reservation is released.
#[derive(Debug, Clone, PartialEq)]
pub struct PaymentFailure {
    pub payment: OutgoingPaymentId,
    /// `Failed` or `Cancelled`.
    pub state: OutgoingPaymentState,
    pub reason: String,
    pub at: Timestamp,
    pub events: Vec<WebhookEvent>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_classify() {
        use OutgoingPaymentState as S;
        for s in [
            S::Funding,
            S::Sending,
            S::Completed,
            S::Failed,
            S::Cancelled,
        ] {
            assert_eq!(S::parse(s.as_str()), Some(s));
            assert_eq!(s.to_string(), s.as_str());
        }
        assert_eq!(S::parse("sent"), None);
        assert!(S::Failed.is_failed() && S::Cancelled.is_failed());
        assert!(!S::Completed.is_failed() && !S::Sending.is_failed());
        assert!(S::Funding.is_open() && S::Sending.is_open() && !S::Completed.is_open());
    }

    fn sending() -> OutgoingPayment {
        let now = Timestamp::from_unix_millis(1_000_000);
        let random = crate::clock::SeededRandom::new(1);
        let usd = crate::money::Asset::parse("USD", 2).unwrap();
        OutgoingPayment {
            id: OutgoingPaymentId::new(now, &random),
            wallet_address_id: WalletAddressId::new(now, &random),
            quote_id: QuoteId::new(now, &random),
            receiver: "https://rs.example/incoming-payments/1".into(),
            debit: Amount::new(500, usd.clone()),
            receive: Amount::new(450, usd),
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
            next_attempt_at: now,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn completing_and_ending_change_only_their_fields() {
        let p = sending();
        let done = p.completed(500);
        assert_eq!(done.state, OutgoingPaymentState::Completed);
        assert_eq!(done.sent, 500);
        assert_eq!(done.sent_amount(), Amount::new(500, p.debit.asset.clone()));
        assert_eq!(
            OutgoingPayment {
                state: p.state,
                sent: p.sent,
                ..done
            },
            p
        );
        let failed = p.ended(OutgoingPaymentState::Failed, "no route");
        assert_eq!(failed.state, OutgoingPaymentState::Failed);
        assert_eq!(failed.error.as_deref(), Some("no route"));
        assert_eq!(
            OutgoingPayment {
                state: p.state,
                error: None,
                ..failed
            },
            p
        );
    }

    #[test]
    fn reservations_refuse_overflow_and_excess() {
        let r = GrantReservation {
            grant_id: "g".into(),
            interval_start: Timestamp::from_unix_millis(0),
            interval_end: None,
            debit_limit: Some(100),
            receive_limit: None,
        };
        assert!(r.allows((60, 0), 40, u64::MAX));
        assert!(!r.allows((60, 0), 41, 0));
        assert!(!r.allows((u64::MAX, 0), 1, 0));
    }
}
