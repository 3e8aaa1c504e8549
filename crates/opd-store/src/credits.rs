//! The transaction that credits an incoming payment for ILP packets a peer
//! sent: the payment's received amount and the ledger move together, or
//! nothing.
//!
//! Packets for one incoming payment from one peer that arrive together are
//! credited in one transaction (the service layer gathers them, see
//! `opd_service::interledger::credits`): the payment's row is locked once,
//! each packet is taken or refused by the payment's rule in arrival order,
//! and the taken ones move from the peer's liquidity in one transfer. When
//! that move is refused (the liquidity cannot cover the sum, or a balance
//! would overflow), the packets are credited one by one instead, so each
//! gets the answer it would have got alone.
//!
//! No credit outlives its packet: each packet carries its deadline (its
//! expiry less the margin its answer needs on the way back), and the
//! transaction reads the clock once every row it moves is locked, just
//! before it commits. A packet past its deadline then is refused
//! ([`IlpCredit::Expired`], R00 for the peer): the transaction is rolled
//! back and the others are credited without it. So a credit that waited
//! for a lock, or for its group, never lands after its packet expired.

use opd_core::incoming_payment::{IncomingPayment, Receivable};
use opd_core::ledger::{AccountKind, PostError, Receipts, TransferKind};
use opd_core::peer::Peer;
use opd_core::{Clock, IncomingPaymentId, Timestamp};

use crate::db::{num, params, Stmt, Tx, Want};
use crate::ledger::{across, post, AccountRef, Posting};
use crate::outbox::insert_events;
use crate::peers::{balance_in, has_thresholds, liquidity_event, LiquidityEvents};
use crate::{rows, SqlStore, StoreResult};

/// Builds the webhook events of an ILP credit, from facts only the
/// transaction knows (the payment as credited, the balance left).
pub trait ReceiveEvents: LiquidityEvents {
    /// `incoming_payment.completed` for the payment as it now stands, with
    /// what its account holds for the operator to withdraw (0 unless
    /// received money is held, external mode).
    fn completed(
        &self,
        payment: &IncomingPayment,
        to_withdraw: u64,
    ) -> opd_core::webhook::WebhookEvent;
    /// Itself, as the liquidity half.
    fn as_liquidity(&self) -> &dyn LiquidityEvents;
}

/// An ILP packet from a peer to credit to an incoming payment.
#[derive(Debug, Clone)]
pub struct IlpReceive {
    pub incoming: IncomingPaymentId,
    /// Taken from the peer's liquidity, in the peer's asset.
    pub amount: u64,
    /// Credited to the incoming payment, in its asset (the same as
    /// `amount` when the assets are equal).
    pub deliver: u64,
    /// Where the credit goes: the receiving wallet address or the
    /// incoming payment's own account.
    pub receipts: Receipts,
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

static INCOMING_FOR_UPDATE: Stmt = Stmt::new(&[
    "SELECT ",
    crate::incoming::INCOMING_COLUMNS,
    " FROM incoming_payments WHERE id = ?::uuid FOR UPDATE",
]);
static SET_RECEIVED: Stmt = Stmt::new(&[
    "UPDATE incoming_payments SET received_amount = ?::numeric, completed = ?, updated_at = ? \
     WHERE id = ?::uuid",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[&INCOMING_FOR_UPDATE, &SET_RECEIVED];

/// What one transaction did with a group of packets.
enum Group {
    Done(Vec<IlpCredit>),
    /// The summed move was refused: credit them one by one.
    OneByOne,
    /// These packets (indices into the group) were past their deadline
    /// when the transaction was ready to commit: it was rolled back.
    Late(Vec<usize>),
}

/// Credits `receives` (all to one incoming payment) from `peer`, none
/// after its deadline by `clock`; see the module doc.
pub(crate) async fn credit(
    store: &SqlStore,
    peer: &Peer,
    receives: &[IlpReceive],
    events: &dyn ReceiveEvents,
    clock: &dyn Clock,
) -> StoreResult<Vec<IlpCredit>> {
    let now = clock.now();
    let mut answers: Vec<Option<IlpCredit>> = receives
        .iter()
        .map(|r| (r.deadline <= now).then_some(IlpCredit::Expired))
        .collect();
    // Each round either answers every packet left or takes at least one
    // late packet out: at most one round per packet.
    loop {
        let live: Vec<usize> = (0..receives.len())
            .filter(|&i| answers[i].is_none())
            .collect();
        if live.is_empty() {
            break;
        }
        // Usually every packet: then the group is `receives` as it came.
        let group: std::borrow::Cow<'_, [IlpReceive]> = if live.len() == receives.len() {
            receives.into()
        } else {
            live.iter().map(|&i| receives[i].clone()).collect()
        };
        match credit_group(store, peer, &group, events, clock).await? {
            Group::Done(credits) => {
                for (i, credit) in live.into_iter().zip(credits) {
                    answers[i] = Some(credit);
                }
            }
            Group::Late(late) => {
                for j in late {
                    answers[live[j]] = Some(IlpCredit::Expired);
                }
            }
            Group::OneByOne => {
                for i in live {
                    answers[i] =
                        Some(credit_alone(store, peer, &receives[i], events, clock).await?);
                }
            }
        }
    }
    Ok(answers
        .into_iter()
        .map(|a| a.unwrap_or(IlpCredit::Expired))
        .collect())
}

/// Credits one packet in a transaction of its own.
async fn credit_alone(
    store: &SqlStore,
    peer: &Peer,
    receive: &IlpReceive,
    events: &dyn ReceiveEvents,
    clock: &dyn Clock,
) -> StoreResult<IlpCredit> {
    let one = std::slice::from_ref(receive);
    match credit_group(store, peer, one, events, clock).await? {
        Group::Done(mut credits) if credits.len() == 1 => Ok(credits.remove(0)),
        Group::Late(_) => Ok(IlpCredit::Expired),
        // A single packet's refusal is its answer (see `credit_group`).
        _ => Err(crate::rows::corrupt("a packet credited alone")),
    }
}

async fn credit_group(
    store: &SqlStore,
    peer: &Peer,
    receives: &[IlpReceive],
    events: &dyn ReceiveEvents,
    clock: &dyn Clock,
) -> StoreResult<Group> {
    let Some(first) = receives.first() else {
        return Ok(Group::Done(Vec::new()));
    };
    let incoming_id = first.incoming.to_string();
    let mut tx = store.db.begin().await?;
    let Some(row) = tx
        .fetch_opt(&INCOMING_FOR_UPDATE, params![&incoming_id])
        .await?
    else {
        return Ok(Group::Done(vec![IlpCredit::Unknown; receives.len()]));
    };
    let mut payment = rows::incoming_from_row(&row)?;
    // Each packet by the payment's rule, in arrival order.
    let mut credits = Vec::with_capacity(receives.len());
    let (mut amount, mut deliver) = (0u64, 0u64);
    for r in receives {
        match payment.receive(r.deliver, r.at) {
            Receivable::Yes {
                received,
                completes,
            } => {
                let (Some(a), Some(d)) =
                    (amount.checked_add(r.amount), deliver.checked_add(r.deliver))
                else {
                    return Ok(one_by_one(receives, IlpCredit::Overflow));
                };
                (amount, deliver) = (a, d);
                payment.received_amount = received;
                payment.completed = completes;
                payment.updated_at = r.at;
                credits.push(IlpCredit::Credited(payment.clone()));
            }
            refused => credits.push(IlpCredit::Refused(refused)),
        }
    }
    if !credits.iter().any(|c| matches!(c, IlpCredit::Credited(_))) {
        return Ok(Group::Done(credits));
    }
    let owner = peer.id.to_string();
    let source = AccountRef::new(AccountKind::Peer, &owner, &peer.asset);
    let before = match has_thresholds(peer) {
        true => Some(balance_in(&mut tx, &source.id()).await?),
        false => None,
    };
    // Balance mode credits the wallet address straight away: the incoming
    // payment's total is its row's `received_amount`.
    let wallet_id = payment.wallet_address_id.to_string();
    let receipts = first.receipts;
    let receiver = match receipts {
        Receipts::ToWallet => AccountRef::new(AccountKind::Wallet, &wallet_id, &payment.asset),
        Receipts::Held => AccountRef::new(AccountKind::Incoming, &incoming_id, &payment.asset),
    };
    let at = receives.last().map_or(first.at, |r| r.at);
    let moved = Move {
        amount,
        deliver,
        at,
    };
    match post_receive(&mut tx, source, receiver, &incoming_id, &moved).await? {
        Ok(()) => {}
        Err(e) => {
            let alone = match e {
                PostError::Insufficient { available } => {
                    IlpCredit::InsufficientLiquidity { available }
                }
                PostError::Overflow => IlpCredit::Overflow,
            };
            return Ok(one_by_one(receives, alone));
        }
    }
    let set = params![
        num(payment.received_amount),
        payment.completed,
        payment.updated_at,
        &incoming_id
    ];
    tx.send(&SET_RECEIVED, set, Want::Changed);
    let mut out = Vec::new();
    // A completed payment takes no packet, so one that reads completed now
    // was completed by this group.
    if payment.completed {
        // Read only when money is held and the payment completes: not on
        // the hot path of balance mode.
        let to_withdraw = match receipts {
            Receipts::ToWallet => 0,
            Receipts::Held => balance_in(&mut tx, &receiver.id()).await?,
        };
        out.push(events.completed(&payment, to_withdraw));
    }
    if let Some(e) = liquidity_event(&mut tx, peer, before, events.as_liquidity()).await? {
        out.push(e);
    }
    // Every row this credit moves is locked by now: the clock decides.
    let late = late_packets(receives, &credits, clock.now());
    if !late.is_empty() {
        // Dropped without a commit: rolled back, nothing moved.
        return Ok(Group::Late(late));
    }
    insert_events(&mut tx, &out);
    tx.commit().await?;
    Ok(Group::Done(credits))
}

/// The packets of a group that would be credited at `now`, past their
/// deadline (indices into the group).
fn late_packets(receives: &[IlpReceive], credits: &[IlpCredit], now: Timestamp) -> Vec<usize> {
    receives
        .iter()
        .zip(credits)
        .enumerate()
        .filter(|(_, (r, c))| matches!(c, IlpCredit::Credited(_)) && r.deadline <= now)
        .map(|(i, _)| i)
        .collect()
}

/// A group's refusal: a packet alone gets `alone` as its answer; a group
/// is credited one by one.
fn one_by_one(receives: &[IlpReceive], alone: IlpCredit) -> Group {
    match receives.len() {
        1 => Group::Done(vec![alone]),
        _ => Group::OneByOne,
    }
}

/// The sums a group moves.
struct Move {
    /// From the peer's liquidity, in its asset.
    amount: u64,
    /// To the receiver, in the payment's asset.
    deliver: u64,
    at: Timestamp,
}

/// The transfers of a credit: from the peer's liquidity to the receiver
/// (the wallet address or the incoming payment, see [`Receipts`]), through
/// the settlement accounts when the assets differ.
async fn post_receive(
    tx: &mut Tx<'_>,
    source: AccountRef<'_>,
    incoming: AccountRef<'_>,
    incoming_id: &str,
    m: &Move,
) -> StoreResult<Result<(), PostError>> {
    let moves = across(source, incoming, m.amount, m.deliver, TransferKind::Receive);
    for (debit, credit, amount, kind) in moves {
        let posting = Posting {
            debit,
            credit,
            amount,
            kind,
            reference: Some(incoming_id),
            key: None,
            at: m.at,
        };
        if let Err(e) = post(tx, posting).await? {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}
