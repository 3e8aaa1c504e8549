//! The credit of an incoming payment: the one way money reaches a
//! receiver on this server, whether it comes from a peer in ILP packets
//! or from an outgoing payment of this server delivered locally.
//!
//! One transaction locks the incoming payment's row ([`lock_incoming`])
//! and ([`credit_incoming`]) takes each packet by the payment's rule (`IncomingPayment::receive`, in
//! arrival order, [`take_in_order`]), moves the money in the ledger,
//! writes the payment's new received amount and, when this credit
//! completed it, reads what its account holds for the operator to
//! withdraw. What only the transaction knows comes back as typed
//! [`Fact`]s; the service renders them into webhook events that commit
//! with it ([`Uncommitted`]).
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

pub(crate) mod rounds;

use async_trait::async_trait;
use opd_core::incoming_payment::{IncomingPayment, Receivable};
use opd_core::ledger::{AccountKind, PostError, Receipts, TransferKind};
use opd_core::outgoing_payment::LocalDelivery;
use opd_core::peer::{liquidity_crossing, Peer};
use opd_core::webhook::WebhookEvent;
use opd_core::{Clock, IncomingPaymentId, Timestamp};

use crate::interledger::peers::{balance_in, has_thresholds, liquidity_account};
use crate::ledger::{across, post, send_post, AccountRef, Posting};
use crate::payments::credits::rounds::RoundEnd;
use crate::payments::outgoing::Delivered;
use crate::platform::db::{num, params, Stmt, Tx, Want};
use crate::platform::facts::{Fact, Uncommitted};
use crate::platform::outbox::insert_events;
use crate::platform::rows;
use crate::{SqlStore, StoreError, StoreResult};

/// Credits of incoming payments: by ILP packets from peers, and by local
/// delivery of outgoing payments.
#[async_trait]
pub trait CreditStore: Send + Sync {
    /// Credits one incoming payment for packets from `peer` that arrived
    /// together (all naming `receives[0].incoming`), in one transaction:
    /// the payment's received amount and the ledger move together, or
    /// nothing. Each packet is taken or refused by the payment's rule as
    /// if the packets came one after the other; see [`IlpRound`] for the
    /// rounds that end without a commit.
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

static INCOMING_FOR_UPDATE: Stmt = Stmt::new(&[
    "SELECT ",
    crate::payments::incoming::INCOMING_COLUMNS,
    " FROM incoming_payments WHERE id = ?::uuid FOR UPDATE",
]);
static SET_RECEIVED: Stmt = Stmt::new(&[
    "UPDATE incoming_payments SET received_amount = ?::numeric, completed = ?, updated_at = ? \
     WHERE id = ?::uuid",
]);
/// A local delivery delivers everything at once: `delivered_value` too,
/// which the dashboard shows (it grows packet by packet for payments to
/// other servers).
static COMPLETE_OUTGOING: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET state = 'completed', sent_value = ?::numeric, \
     delivered_value = ?::numeric, updated_at = ? WHERE id = ?::uuid AND state = 'sending'",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[&INCOMING_FOR_UPDATE, &SET_RECEIVED, &COMPLETE_OUTGOING];

/// One arrival of money for an incoming payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packet {
    /// Taken from the source, in its asset.
    pub(crate) amount: u64,
    /// Credited to the incoming payment, in its asset.
    pub(crate) deliver: u64,
    pub(crate) at: Timestamp,
}

/// Where a credit's money comes from.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// A peer's liquidity (ILP packets).
    Peer(&'a Peer),
    /// An outgoing payment of this server: its money, less the fee, which
    /// goes to the fee account.
    Local(&'a LocalDelivery),
}

/// Each packet's answer by the payment's rule, and the sums taken.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Taken {
    /// The payment as each taken packet left it, or why it was refused.
    pub(crate) answers: Vec<Result<IncomingPayment, Receivable>>,
    /// From the source, in its asset.
    pub(crate) amount: u64,
    /// To the receiver, in the payment's asset.
    pub(crate) deliver: u64,
    /// When the last taken packet arrived.
    pub(crate) at: Timestamp,
}

impl Taken {
    fn any(&self) -> bool {
        self.answers.iter().any(Result::is_ok)
    }
}

/// Takes each packet by `payment`'s rule, in arrival order, leaving
/// `payment` as the last taken one left it. `None` when the sums taken
/// would pass u64::MAX.
pub(crate) fn take_in_order(payment: &mut IncomingPayment, packets: &[Packet]) -> Option<Taken> {
    let mut taken = Taken {
        answers: Vec::with_capacity(packets.len()),
        amount: 0,
        deliver: 0,
        at: payment.updated_at,
    };
    for p in packets {
        match payment.receive(p.deliver, p.at) {
            Receivable::Yes {
                received,
                completes,
            } => {
                taken.amount = taken.amount.checked_add(p.amount)?;
                taken.deliver = taken.deliver.checked_add(p.deliver)?;
                taken.at = p.at;
                payment.received_amount = received;
                payment.completed = completes;
                payment.updated_at = p.at;
                taken.answers.push(Ok(payment.clone()));
            }
            refused => taken.answers.push(Err(refused)),
        }
    }
    Some(taken)
}

/// What [`credit_incoming`] did; only `Credited` left work to commit.
enum Credit {
    /// Each packet's answer; nothing taken, or the move refused by the
    /// ledger (`PostError`), or the sums overflowing (`None`).
    NotMoved(Taken, Option<PostError>),
    SumOverflow,
    /// Moved and written.
    Credited(Taken, Vec<Fact>),
}

/// The incoming payment, locked until the transaction ends; `None` when
/// there is no such payment. The first step of every credit.
async fn lock_incoming(
    tx: &mut Tx<'_>,
    incoming: IncomingPaymentId,
) -> StoreResult<Option<IncomingPayment>> {
    let row = tx
        .fetch_opt(&INCOMING_FOR_UPDATE, params![incoming.to_string()])
        .await?;
    row.as_ref().map(rows::incoming_from_row).transpose()
}

/// The credit of `payment` (locked, [`lock_incoming`]): takes the packets
/// by its rule, moves the money from `source`, writes the payment's
/// received amount and reads the facts (the payment completed, the peer's
/// liquidity crossing a threshold). A refusal returns before anything is
/// written that the caller would commit: it drops the transaction.
async fn credit_incoming(
    tx: &mut Tx<'_>,
    source: Source<'_>,
    mut payment: IncomingPayment,
    receipts: Receipts,
    packets: &[Packet],
) -> StoreResult<Credit> {
    let incoming_id = payment.id.to_string();
    let Some(taken) = take_in_order(&mut payment, packets) else {
        return Ok(Credit::SumOverflow);
    };
    if !taken.any() {
        return Ok(Credit::NotMoved(taken, None));
    }
    // Balance mode credits the wallet address straight away: the incoming
    // payment's total is its row's `received_amount`.
    let wallet_id = payment.wallet_address_id.to_string();
    let receiver = match receipts {
        Receipts::ToWallet => AccountRef::new(AccountKind::Wallet, &wallet_id, &payment.asset),
        Receipts::Held => AccountRef::new(AccountKind::Incoming, &incoming_id, &payment.asset),
    };
    let mut facts = match move_money(tx, source, receiver, &incoming_id, &taken).await? {
        Ok(facts) => facts,
        Err(refused) => return Ok(Credit::NotMoved(taken, Some(refused))),
    };
    let set = params![
        num(payment.received_amount),
        payment.completed,
        payment.updated_at,
        &incoming_id
    ];
    tx.send(&SET_RECEIVED, set, Want::Changed);
    // A completed payment takes no packet, so one that reads completed now
    // was completed by this credit.
    if payment.completed {
        // Read only when money is held and the payment completes: not on
        // the hot path of balance mode.
        let to_withdraw = match receipts {
            Receipts::ToWallet => 0,
            Receipts::Held => balance_in(tx, &receiver.id()).await?,
        };
        facts.insert(
            0,
            Fact::IncomingCompleted {
                payment,
                to_withdraw,
            },
        );
    }
    Ok(Credit::Credited(taken, facts))
}

/// Moves what `taken` sums from `source` to `receiver`; the facts of the
/// move (a peer's liquidity crossing a threshold), or the ledger's refusal.
async fn move_money(
    tx: &mut Tx<'_>,
    source: Source<'_>,
    receiver: AccountRef<'_>,
    incoming_id: &str,
    taken: &Taken,
) -> StoreResult<Result<Vec<Fact>, PostError>> {
    match source {
        Source::Peer(peer) => from_peer(tx, peer, receiver, incoming_id, taken).await,
        Source::Local(d) => Ok(from_outgoing(tx, d, receiver).await?.map(|()| Vec::new())),
    }
}

/// The transfers of an ILP credit: from the peer's liquidity to the
/// receiver, through the settlement accounts when the assets differ.
async fn from_peer(
    tx: &mut Tx<'_>,
    peer: &Peer,
    receiver: AccountRef<'_>,
    incoming_id: &str,
    taken: &Taken,
) -> StoreResult<Result<Vec<Fact>, PostError>> {
    let owner = peer.id.to_string();
    let source = AccountRef::new(AccountKind::Peer, &owner, &peer.asset);
    // The balance before is read only when the peer has thresholds: it
    // costs a statement.
    let before = match has_thresholds(peer) {
        true => Some(balance_in(tx, &source.id()).await?),
        false => None,
    };
    let moves = across(
        source,
        receiver,
        taken.amount,
        taken.deliver,
        TransferKind::Receive,
    );
    for (debit, credit, amount, kind) in moves {
        let posting = Posting {
            debit,
            credit,
            amount,
            kind,
            reference: Some(incoming_id),
            key: None,
            at: taken.at,
        };
        if let Err(e) = post(tx, posting).await? {
            return Ok(Err(e));
        }
    }
    Ok(Ok(liquidity_fact(tx, peer, before)
        .await?
        .into_iter()
        .collect()))
}

/// The `peer.liquidity_*` fact when the peer's balance crossed a threshold
/// since `before` (`None`: the peer has no thresholds).
pub(crate) async fn liquidity_fact(
    tx: &mut Tx<'_>,
    peer: &Peer,
    before: Option<u64>,
) -> StoreResult<Option<Fact>> {
    let Some(before) = before else {
        return Ok(None);
    };
    let balance = balance_in(tx, &liquidity_account(peer)).await?;
    Ok(
        liquidity_crossing(peer, before, balance).map(|zone| Fact::LiquidityCrossed {
            peer: peer.clone(),
            zone,
            balance,
        }),
    )
}

/// The transfers of a local delivery: the delivered amount from the
/// payment to the receiver (through the settlement accounts when the
/// assets differ) and the fee to the fee account. In balance mode the
/// receiver is the receiving wallet address's account, so the money is
/// spendable at once without a second transfer.
async fn from_outgoing(
    tx: &mut Tx<'_>,
    d: &LocalDelivery,
    receiver: AccountRef<'_>,
) -> StoreResult<Result<(), PostError>> {
    let payment = d.payment.to_string();
    let held = AccountRef::new(AccountKind::Outgoing, &payment, &d.sender_asset);
    let fees = AccountRef::new(AccountKind::Fees, "fees", &d.sender_asset);
    let mut moves = across(held, receiver, d.send, d.deliver, TransferKind::Deliver);
    moves.push((held, fees, d.fee, TransferKind::Fee));
    let mut sent = Vec::with_capacity(moves.len());
    for (debit, credit, amount, kind) in moves {
        let posting = Posting {
            debit,
            credit,
            amount,
            kind,
            reference: Some(&payment),
            key: None,
            at: d.at,
        };
        sent.push((kind, send_post(tx, posting).await?));
    }
    for (kind, sent) in sent {
        match sent.read(tx).await? {
            Ok(_) => {}
            // A credit that would pass u64::MAX: refused, not corrupt.
            Err(PostError::Overflow) => return Ok(Err(PostError::Overflow)),
            // The payment holds its debit: it cannot be short.
            Err(e) => {
                return Err(StoreError::Corrupt(format!(
                    "outgoing payment {payment} cannot post its {kind} transfer: {e:?}"
                )))
            }
        }
    }
    Ok(Ok(()))
}

impl SqlStore {
    /// One round of ILP credits; see [`CreditStore::credit_round`].
    async fn ilp_round(
        &self,
        peer: &Peer,
        receives: &[IlpReceive],
        clock: &dyn Clock,
    ) -> StoreResult<IlpRound<'_>> {
        let Some(first) = receives.first() else {
            return Ok(IlpRound::Answered(Vec::new()));
        };
        let packets: Vec<Packet> = receives
            .iter()
            .map(|r| Packet {
                amount: r.amount,
                deliver: r.deliver,
                at: r.at,
            })
            .collect();
        let mut tx = self.db.begin().await?;
        let Some(payment) = lock_incoming(&mut tx, first.incoming).await? else {
            return Ok(IlpRound::Answered(vec![IlpCredit::Unknown; receives.len()]));
        };
        let source = Source::Peer(peer);
        let credit = credit_incoming(&mut tx, source, payment, first.receipts, &packets);
        let (taken, facts) = match credit.await? {
            Credit::SumOverflow => return Ok(refused_group(receives, IlpCredit::Overflow)),
            Credit::NotMoved(taken, None) => return Ok(IlpRound::Answered(answers(taken))),
            Credit::NotMoved(_, Some(refused)) => {
                let alone = match refused {
                    PostError::Insufficient { available } => {
                        IlpCredit::InsufficientLiquidity { available }
                    }
                    PostError::Overflow => IlpCredit::Overflow,
                };
                return Ok(refused_group(receives, alone));
            }
            Credit::Credited(taken, facts) => (taken, facts),
        };
        // Every row this credit moves is locked by now: the clock decides.
        let late = late_packets(receives, &taken, clock.now());
        if !late.is_empty() {
            // Dropped without a commit: rolled back, nothing moved.
            return Ok(IlpRound::Late(late));
        }
        Ok(IlpRound::Open(Uncommitted::open(tx, answers(taken), facts)))
    }

    /// A local delivery; see [`CreditStore::deliver_locally`].
    async fn local_delivery(&self, d: &LocalDelivery) -> StoreResult<Uncommitted<'_, Delivered>> {
        let mut tx = self.db.begin().await?;
        let payment = d.payment.to_string();
        // Sent with the incoming payment's lock, in one round trip on
        // PostgreSQL.
        let completed = tx.send(
            &COMPLETE_OUTGOING,
            params![num(d.send), num(d.deliver), d.at, &payment],
            Want::Changed,
        );
        let receiver = lock_incoming(&mut tx, d.incoming).await?;
        if tx.take(completed).await?.changed() == 0 {
            // Not sending any more (completed or failed meanwhile): it
            // holds nothing to deliver.
            return Ok(Uncommitted::settled(Delivered::Changed));
        }
        let Some(receiver) = receiver else {
            return Ok(Uncommitted::settled(Delivered::Changed));
        };
        let packets = [Packet {
            amount: d.send,
            deliver: d.deliver,
            at: d.at,
        }];
        let credit = credit_incoming(&mut tx, Source::Local(d), receiver, d.receipts, &packets);
        match credit.await? {
            Credit::Credited(taken, facts) => {
                let completes = taken
                    .answers
                    .iter()
                    .any(|a| a.as_ref().is_ok_and(|p| p.completed));
                insert_events(&mut tx, &d.events);
                Ok(Uncommitted::open(tx, Delivered::Done { completes }, facts))
            }
            Credit::NotMoved(_, Some(PostError::Overflow)) | Credit::SumOverflow => {
                Ok(Uncommitted::settled(Delivered::Overflow))
            }
            // The receiver changed since the plan was made: nothing
            // happened; the worker plans again.
            Credit::NotMoved(..) => Ok(Uncommitted::settled(Delivered::Changed)),
        }
    }
}

/// Each packet's answer from what the payment's rule took.
fn answers(taken: Taken) -> Vec<IlpCredit> {
    taken
        .answers
        .into_iter()
        .map(|a| match a {
            Ok(payment) => IlpCredit::Credited(payment),
            Err(refused) => IlpCredit::Refused(refused),
        })
        .collect()
}

/// The packets of a group that would be credited at `now`, past their
/// deadline (indices into the group).
fn late_packets(receives: &[IlpReceive], taken: &Taken, now: Timestamp) -> Vec<usize> {
    receives
        .iter()
        .zip(&taken.answers)
        .enumerate()
        .filter(|(_, (r, a))| a.is_ok() && r.deadline <= now)
        .map(|(i, _)| i)
        .collect()
}

/// A group's refusal: a packet alone gets `alone` as its answer; a group
/// is credited one by one.
fn refused_group<'s>(receives: &[IlpReceive], alone: IlpCredit) -> IlpRound<'s> {
    match receives.len() {
        1 => IlpRound::Answered(vec![alone]),
        _ => IlpRound::OneByOne,
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
        self.ilp_round(peer, receives, clock).await
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
    use opd_core::clock::SeededRandom;
    use opd_core::{Asset, WalletAddressId};

    const AT: Timestamp = Timestamp::from_unix_millis(1_000_000);

    fn payment(incoming: Option<u64>, received: u64) -> IncomingPayment {
        let random = SeededRandom::new(7);
        IncomingPayment {
            id: IncomingPaymentId::new(AT, &random),
            wallet_address_id: WalletAddressId::new(AT, &random),
            asset: Asset::parse("USD", 2).expect("asset"),
            incoming_amount: incoming,
            received_amount: received,
            completed: false,
            expires_at: AT.plus_millis(60_000),
            metadata: None,
            client: None,
            client_network: None,
            created_at: AT,
            updated_at: AT,
        }
    }

    fn packet(amount: u64, ms: i64) -> Packet {
        Packet {
            amount: amount + 1,
            deliver: amount,
            at: AT.plus_millis(ms),
        }
    }

    #[test]
    fn packets_are_taken_in_order_until_the_payment_is_full() {
        let mut p = payment(Some(100), 10);
        let taken = take_in_order(&mut p, &[packet(50, 1), packet(50, 2), packet(40, 3)])
            .expect("no overflow");
        assert!(taken.answers[0]
            .as_ref()
            .is_ok_and(|p| p.received_amount == 60));
        assert_eq!(taken.answers[1], Err(Receivable::TooMuch { room: 40 }));
        let last = taken.answers[2].as_ref().expect("taken");
        assert!(last.completed && last.received_amount == 100);
        // The sums are of the taken packets only, in each asset.
        assert_eq!((taken.amount, taken.deliver), (92, 90));
        assert_eq!(taken.at, packet(40, 3).at);
        assert!(p.completed && p.received_amount == 100 && p.updated_at == taken.at);
    }

    #[test]
    fn a_completed_payment_takes_nothing() {
        let mut p = payment(Some(100), 100);
        p.completed = true;
        let taken = take_in_order(&mut p, &[packet(1, 1)]).expect("no overflow");
        assert_eq!(taken.answers, vec![Err(Receivable::Closed)]);
        assert!(!taken.any());
        assert_eq!((taken.amount, taken.deliver), (0, 0));
    }

    #[test]
    fn sums_past_u64_max_are_refused_as_a_whole() {
        let mut p = payment(None, 0);
        let big = Packet {
            amount: u64::MAX,
            deliver: 1,
            at: AT,
        };
        assert_eq!(take_in_order(&mut p, &[big, big]), None);
    }
}
