//! One credit, whatever its source: lock the incoming payment
//! ([`lock_incoming`]), take the packets by its rule, move the money from
//! the source, write the received amount and read the facts
//! ([`credit_incoming`]).

use opd_core::incoming_payment::IncomingPayment;
use opd_core::ledger::{AccountKind, PostError, Receipts, TransferKind};
use opd_core::outgoing_payment::LocalDelivery;
use opd_core::peer::Peer;
use opd_core::IncomingPaymentId;

use super::take::{take_in_order, Packet, Taken};
use crate::interledger::liquidity::{balance_before, liquidity_fact};
use crate::ledger::{self, across, post, send_post, AccountRef, Posting};
use crate::payments::incoming::incoming_from_row;
use crate::platform::db::{num, params, Stmt, Tx, Want};
use crate::platform::facts::Fact;
use crate::{StoreError, StoreResult};

pub(super) static INCOMING_FOR_UPDATE: Stmt = Stmt::new(&[
    "SELECT ",
    crate::payments::incoming::INCOMING_COLUMNS,
    " FROM incoming_payments WHERE id = ?::uuid FOR UPDATE",
]);
pub(super) static SET_RECEIVED: Stmt = Stmt::new(&[
    "UPDATE incoming_payments SET received_amount = ?::numeric, completed = ?, updated_at = ? \
     WHERE id = ?::uuid",
]);

/// Where a credit's money comes from.
#[derive(Clone, Copy)]
pub(super) enum Source<'a> {
    /// A peer's liquidity (ILP packets).
    Peer(&'a Peer),
    /// An outgoing payment of this server: its money, less the fee, which
    /// goes to the fee account.
    Local(&'a LocalDelivery),
}

/// What [`credit_incoming`] did; only `Credited` left work to commit.
pub(super) enum Credit {
    /// Each packet's answer; nothing taken, or the move refused by the
    /// ledger (`PostError`), or the sums overflowing (`None`).
    NotMoved(Taken, Option<PostError>),
    SumOverflow,
    /// Moved and written.
    Credited(Taken, Vec<Fact>),
}

/// The incoming payment, locked until the transaction ends; `None` when
/// there is no such payment. The first step of every credit.
pub(super) async fn lock_incoming(
    tx: &mut Tx<'_>,
    incoming: IncomingPaymentId,
) -> StoreResult<Option<IncomingPayment>> {
    let row = tx
        .fetch_opt(&INCOMING_FOR_UPDATE, params![incoming.to_string()])
        .await?;
    row.as_ref().map(incoming_from_row).transpose()
}

/// The credit of `payment` (locked, [`lock_incoming`]): takes the packets
/// by its rule, moves the money from `source`, writes the payment's
/// received amount and reads the facts (the payment completed, the peer's
/// liquidity crossing a threshold). A refusal returns before anything is
/// written that the caller would commit: it drops the transaction.
pub(super) async fn credit_incoming(
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
            Receipts::Held => ledger::balance_or_zero(tx, &receiver.id()).await?,
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
    let before = balance_before(tx, peer).await?;
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
