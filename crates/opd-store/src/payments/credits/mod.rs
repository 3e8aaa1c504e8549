//! The credit of an incoming payment: the one way money reaches a
//! receiver on this server, whether it comes from a peer in ILP packets
//! or from an outgoing payment of this server delivered locally.
//!
//! One transaction locks the incoming payment's row, takes each packet by
//! the payment's rule (`IncomingPayment::receive`, in arrival order,
//! [`take`]), moves the money in the ledger, writes the payment's new
//! received amount and, when this credit completed it, reads what its
//! account holds for the operator to withdraw ([`credit`]). An ILP round
//! reads the locked row first; a local delivery sends its statements with
//! the lock, computed from the receiver as planned, and keeps them only if
//! the locked row is that receiver ([`local`]). What only
//! the transaction knows comes back as typed [`Fact`]s; the service
//! renders them into webhook events that commit with it
//! ([`Uncommitted`]). The sources: a round of ILP packets ([`ilp`]; the
//! service plans the rounds of a group with [`rounds`]) and the local
//! delivery of an outgoing payment ([`local`]).
//!
//! Money paid to a wallet address by its payment pointer (SPSP, no
//! incoming payment) is credited the same way, by [`spsp`]: the packets of
//! one wallet address from one peer that arrive together, in one
//! transaction, to the wallet address's balance (or, in external mode, to
//! its SPSP account for the operator), with the running totals its
//! `wallet_address.web_monetization` events and STREAM receipts report.
//!
//! ILP packets for one incoming payment from one peer that arrive together
//! are credited in one transaction (the service gathers them and drives
//! the rounds, see `opd_service::interledger::credits`). When the summed
//! move is refused (the liquidity cannot cover the sum, or a balance would
//! overflow), the round answers [`IlpRound::OneByOne`] and the packets are
//! credited one by one, so each gets the answer it would have got alone.
//!
//! No credit outlives its packet: each ILP packet carries its deadline (its
//! expiry less the margin its answer needs on the way back), and the
//! round reads the clock once every row it moves is locked. A packet past
//! its deadline then is refused ([`IlpCredit::Expired`], R00 for the peer):
//! the round is rolled back ([`IlpRound::Late`]) and the others are
//! credited without it. What remains between that reading and the commit
//! is rendering the events, with no I/O.

mod credit;
mod ilp;
mod local;
pub(crate) mod rounds;
mod spsp;
mod take;

use async_trait::async_trait;
use opd_core::incoming_payment::{IncomingPayment, Receivable};
use opd_core::ledger::Receipts;
use opd_core::outgoing_payment::LocalDelivery;
use opd_core::peer::Peer;
use opd_core::webhook::WebhookEvent;
use opd_core::{Asset, Clock, IncomingPaymentId, Timestamp, WalletAddressId};

use crate::payments::credits::rounds::RoundEnd;
use crate::payments::outgoing::Delivered;
use crate::platform::db::Stmt;
use crate::platform::facts::{Fact, Uncommitted};
use crate::{SqlStore, StoreError, StoreResult};

/// The statements of credits, for the statement tests.
pub(crate) static STATEMENTS: &[&Stmt] = &[
    &credit::INCOMING_FOR_UPDATE,
    &credit::SET_RECEIVED,
    &local::COMPLETE_OUTGOING,
    &spsp::RECEIVED_TOTAL,
    &spsp::SET_RECEIVED_TOTAL,
    &spsp::RECEIPT_TOTAL,
    &spsp::SET_RECEIPT_TOTAL,
];

/// The statements only PostgreSQL runs.
pub(crate) static PG_STATEMENTS: &[&Stmt] = &[&spsp::ADD_RECEIVED_PG, &spsp::ADD_RECEIPT_PG];

/// Credits of incoming payments: by ILP packets from peers, and by local
/// delivery of outgoing payments.
#[async_trait]
pub trait CreditStore: Send + Sync {
    /// Credits one receiver for packets from `peer` that arrived together
    /// (all naming `receives[0].to`), in one transaction. An incoming
    /// payment:
    /// the payment's received amount and the ledger move together, or
    /// nothing. Each packet is taken or refused by the payment's rule as
    /// if the packets came one after the other. A wallet address paid over
    /// SPSP takes every packet the ledger lets through, and its totals
    /// (what arrived, what each receipt connection received) rise with its
    /// balance. See [`IlpRound`] for the rounds that end without a commit.
    async fn credit_round<'s>(
        &'s self,
        peer: &Peer,
        receives: &[IlpReceive],
        clock: &dyn Clock,
    ) -> StoreResult<IlpRound<'s>>;
    /// Delivers an outgoing payment to an incoming payment of this server
    /// in one transaction: the payment completes, the receiver is credited
    /// by the same rule as an ILP packet, the fee is taken, and
    /// `delivery.events` are queued. Only `Delivered::Done` is left to
    /// commit.
    async fn deliver_locally<'s>(
        &'s self,
        delivery: &LocalDelivery,
    ) -> StoreResult<Uncommitted<'s, Delivered>>;
}

/// Whom an ILP packet pays: what its destination's connection token names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CreditTo {
    /// An incoming payment (credentials of its `methods`).
    Incoming(IncomingPaymentId),
    /// A wallet address paid by its payment pointer (SPSP credentials).
    Wallet(SpspWallet),
}

/// A wallet address paid over SPSP, as a credit needs it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpspWallet {
    pub id: WalletAddressId,
    pub asset: Asset,
    /// How long after the first credit since its last
    /// `wallet_address.web_monetization` event the next one is due.
    pub report_after_ms: i64,
}

/// An ILP packet from a peer to credit to an incoming payment or a wallet
/// address.
#[derive(Debug, Clone)]
pub struct IlpReceive {
    pub to: CreditTo,
    /// Taken from the peer's liquidity, in the peer's asset.
    pub amount: u64,
    /// Credited to the incoming payment, in its asset (the same as
    /// `amount` when the assets are equal).
    pub deliver: u64,
    /// Where the credit goes: the receiving wallet address or the
    /// incoming payment's own account (the wallet address's SPSP account
    /// for SPSP).
    pub receipts: Receipts,
    /// SPSP with STREAM receipts: the connection (SHA-256 of its token)
    /// whose running total this packet adds to.
    pub receipt_connection: Option<[u8; 32]>,
    pub at: Timestamp,
    /// The last moment its money may move: the packet's expiry less the
    /// margin its answer needs on the way back.
    pub deadline: Timestamp,
}

/// What became of an [`IlpReceive`]. Only `Credited` changed anything.
#[derive(Debug, Clone, PartialEq)]
pub enum IlpCredit {
    /// Taken; the payment as this packet left it.
    Credited(IncomingPayment),
    /// Taken by a wallet address paid over SPSP; with receipts, what its
    /// connection has received in all, this packet included.
    ToWallet { receipt_total: Option<u128> },
    /// No such incoming payment.
    Unknown,
    /// The payment cannot take it (see [`Receivable`]).
    Refused(Receivable),
    /// The peer's liquidity holds only `available`.
    InsufficientLiquidity { available: u64 },
    /// A balance would pass u64::MAX.
    Overflow,
    /// Its deadline passed before its credit could commit: nothing moved.
    Expired,
}

/// What one transaction did with a group of ILP packets.
#[derive(Debug)]
pub enum IlpRound<'s> {
    /// Nothing was credited: one answer per packet, final.
    Answered(Vec<IlpCredit>),
    /// Credited (one answer per packet), waiting for the events of its
    /// facts to commit.
    Open(Uncommitted<'s, Vec<IlpCredit>>),
    /// The summed move was refused (rolled back): credit the packets one
    /// by one. Never for a single packet, which gets its refusal.
    OneByOne,
    /// These packets (indices into the group) were past their deadline
    /// once the transaction held its locks: rolled back, nothing moved.
    Late(Vec<usize>),
}

impl IlpRound<'_> {
    /// What the round learned, for its events (nothing unless it is open).
    pub fn facts(&self) -> &[Fact] {
        match self {
            IlpRound::Open(open) => open.facts(),
            _ => &[],
        }
    }

    /// Ends the round: an open one commits with `events` (its facts
    /// rendered). Fails when the store answered another number of packets
    /// than `packets`, which leaves nothing committed.
    pub async fn end(self, packets: usize, events: &[WebhookEvent]) -> StoreResult<RoundEnd> {
        let answered = |credits: &Vec<IlpCredit>| credits.len() == packets;
        match self {
            IlpRound::Answered(credits) if answered(&credits) => Ok(RoundEnd::Answered(credits)),
            IlpRound::Open(open) if answered(open.outcome()) => {
                Ok(RoundEnd::Answered(open.commit(events).await?))
            }
            IlpRound::Answered(_) | IlpRound::Open(_) => Err(StoreError::Corrupt(
                "a round answered another number of packets".into(),
            )),
            IlpRound::OneByOne => Ok(RoundEnd::OneByOne),
            IlpRound::Late(late) => Ok(RoundEnd::Late(late)),
        }
    }
}

#[async_trait]
impl CreditStore for SqlStore {
    async fn credit_round<'s>(
        &'s self,
        peer: &Peer,
        receives: &[IlpReceive],
        clock: &dyn Clock,
    ) -> StoreResult<IlpRound<'s>> {
        let Some(first) = receives.first() else {
            return Ok(IlpRound::Answered(Vec::new()));
        };
        if receives.iter().any(|r| r.to != first.to) {
            return Err(StoreError::Corrupt(
                "a round of packets for several receivers".into(),
            ));
        }
        match &first.to {
            CreditTo::Incoming(incoming) => self.ilp_round(peer, *incoming, receives, clock).await,
            CreditTo::Wallet(wallet) => self.spsp_round(peer, wallet, receives, clock).await,
        }
    }

    async fn deliver_locally<'s>(
        &'s self,
        d: &LocalDelivery,
    ) -> StoreResult<Uncommitted<'s, Delivered>> {
        self.payments_cache.invalidate(d.payment);
        let done = self.local_delivery(d).await?;
        let (cache, id) = (&self.payments_cache, d.payment);
        // Read again after the commit, so no reader keeps the old state.
        Ok(done.then(move || cache.invalidate(id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_round_answering_another_number_of_packets_is_refused() {
        let answered = || IlpRound::Answered(vec![IlpCredit::Unknown, IlpCredit::Expired]);
        assert_eq!(
            answered().end(2, &[]).await.unwrap(),
            RoundEnd::Answered(vec![IlpCredit::Unknown, IlpCredit::Expired])
        );
        for wrong in [1, 3] {
            let ended = answered().end(wrong, &[]).await;
            assert!(matches!(ended, Err(StoreError::Corrupt(_))), "{ended:?}");
        }
    }
}
