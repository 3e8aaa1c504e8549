//! One credit, whatever its source: lock the incoming payment
//! ([`lock_incoming`]), take the packets by its rule, move the money from
//! the source, write the received amount ([`send_received`]) and read the
//! facts ([`completed_fact`]). An ILP credit does it in that order
//! ([`credit_incoming`]); a local delivery sends the same statements
//! together, computed from the receiver as planned, and keeps them only if
//! the locked row is that receiver (`super::local`).

use opd_core::incoming_payment::IncomingPayment;
use opd_core::ledger::{AccountKind, PostError, Receipts, TransferKind};
use opd_core::peer::Peer;
use opd_core::IncomingPaymentId;

use super::take::{take_in_order, Packet, Taken};
use crate::interledger::liquidity::{balance_before, liquidity_fact};
use crate::ledger::{self, across, post, AccountRef, Posting};
use crate::payments::incoming::incoming_from_row;
use crate::platform::db::{num, params, Stmt, Tx, Want};
use crate::platform::facts::Fact;
use crate::StoreResult;

pub(super) static INCOMING_FOR_UPDATE: Stmt = Stmt::new(&[
    "SELECT ",
    crate::payments::incoming::INCOMING_COLUMNS,
    " FROM incoming_payments WHERE id = ?::uuid FOR UPDATE",
]);
pub(super) static SET_RECEIVED: Stmt = Stmt::new(&[
    "UPDATE incoming_payments SET received_amount = ?::numeric, completed = ?, updated_at = ? \
     WHERE id = ?::uuid",
]);

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

/// The ILP credit of `payment` (locked, [`lock_incoming`]): takes the
/// packets by its rule, moves the money from `peer`'s liquidity, writes the payment's
/// received amount and reads the facts (the payment completed, the peer's
/// liquidity crossing a threshold). A refusal returns before anything is
/// written that the caller would commit: it drops the transaction.
pub(super) async fn credit_incoming(
    tx: &mut Tx<'_>,
    peer: &Peer,
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
    let mut facts = match from_peer(tx, peer, receiver, &incoming_id, &taken).await? {
        Ok(facts) => facts,
        Err(refused) => return Ok(Credit::NotMoved(taken, Some(refused))),
    };
    send_received(tx, &payment);
    if let Some(fact) = completed_fact(tx, &payment, receiver).await? {
        facts.insert(0, fact);
    }
    Ok(Credit::Credited(taken, facts))
}

/// Sends the payment's new received amount (as `payment` now stands).
pub(super) fn send_received(tx: &mut Tx<'_>, payment: &IncomingPayment) {
    let set = params![
        num(payment.received_amount),
        payment.completed,
        payment.updated_at,
        payment.id.to_string()
    ];
    tx.send(&SET_RECEIVED, set, Want::Changed);
}

/// `IncomingCompleted` when `payment` (as this credit left it) reads
/// completed: a completed payment takes no packet, so this credit completed
/// it. What waits to be withdrawn is read only when money is held on
/// `receiver` (not on the hot path of balance mode).
pub(super) async fn completed_fact(
    tx: &mut Tx<'_>,
    payment: &IncomingPayment,
    receiver: AccountRef<'_>,
) -> StoreResult<Option<Fact>> {
    if !payment.completed {
        return Ok(None);
    }
    let to_withdraw = match receiver.kind {
        AccountKind::Incoming => ledger::balance_or_zero(tx, &receiver.id()).await?,
        _ => 0,
    };
    Ok(Some(Fact::IncomingCompleted {
        payment: payment.clone(),
        to_withdraw,
    }))
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
