//! The transactions that move an outgoing payment through its life:
//! creation (the payment stored, funded from the wallet address and
//! counted against its grant, all or nothing), failure with refund, and
//! funding from outside (local delivery is a credit:
//! `crate::payments::credits`). Each is one transaction; a refusal returns
//! without committing, which undoes everything it did. What ending a
//! payment takes (its row locked, the refund, the grant's spending given
//! back, whether packets are still pending) is here too, for the packets
//! of a payment ([`super::packets`]) to end it the same way.

use opd_core::ledger::{AccountKind, PostError, TransferKind};
use opd_core::outgoing_payment::{
    CreateOutgoing, GrantReservation, GrantSpent, OutgoingPayment, OutgoingPaymentState,
    PaymentFailure,
};
use opd_core::webhook::WebhookEvent;
use opd_core::{OutgoingPaymentId, Timestamp};

use super::spending;
use crate::access::claim::{self, RequestClaim};
use crate::ledger::{self, post, send_post, AccountRef, Posting, SentPost};
use crate::payments::outgoing::{payment_from_row, PAYMENT_COLUMNS};
use crate::platform::db::{num, params, Stmt, Ticket, Tx, Want};
use crate::platform::outbox::insert_events;
use crate::platform::rows::{self, corrupt};
use crate::{SqlStore, StoreError, StoreResult};

static INSERT_PAYMENT: Stmt = Stmt::new(&[
    "INSERT INTO outgoing_payments (id, wallet_address_id, quote_id, receiver, debit_value, \
     debit_asset_code, debit_asset_scale, receive_value, receive_asset_code, receive_asset_scale, \
     sent_value, state, error, metadata, client, grant_id, grant_interval_start, attempts, \
     next_attempt_at, created_at, updated_at) VALUES (?::uuid, ?::uuid, ?::uuid, ?, ?::numeric, \
     ?, ?, ?::numeric, ?, ?, ?::numeric, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
]);
static PAYMENT_IN: Stmt = Stmt::new(&[
    "SELECT ",
    PAYMENT_COLUMNS,
    " FROM outgoing_payments WHERE id = ?::uuid",
]);
static END_PAYMENT: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET state = ?, error = ?, updated_at = ? \
     WHERE id = ?::uuid AND state IN ('funding', 'sending') RETURNING ",
    PAYMENT_COLUMNS,
]);
static START_SENDING: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET state = 'sending', next_attempt_at = ?, updated_at = ? \
     WHERE id = ?::uuid AND state = 'funding' RETURNING ",
    PAYMENT_COLUMNS,
]);

/// A packet of the payment still waits for its answer.
static ANY_PENDING: Stmt = Stmt::new(&[
    "SELECT id FROM payment_packets WHERE payment_id = ? AND state = 'pending' LIMIT 1",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &INSERT_PAYMENT,
    &END_PAYMENT,
    &START_SENDING,
    &PAYMENT_IN,
    &ANY_PENDING,
];

/// Checks a new payment's reservation against its grant's limits in the
/// interval; returns what was spent before it, or the refusal (the caller
/// then does not commit).
fn check_reservation(
    added: Option<spending::Spent>,
    g: &GrantReservation,
    p: &OutgoingPayment,
) -> Result<GrantSpent, CreateOutgoing> {
    let Some(before) = added else {
        // A grant without a limit can still not total past u64::MAX.
        return Err(CreateOutgoing::Overflow);
    };
    if !g.allows(
        (before.debit, before.receive),
        p.debit.value,
        p.receive.value,
    ) {
        return Err(CreateOutgoing::LimitExceeded {
            spent_before: before.shown,
        });
    }
    Ok(before.shown)
}

fn insert_payment(tx: &mut Tx<'_>, p: &OutgoingPayment) -> Ticket {
    let params = params![
        p.id.to_string(),
        p.wallet_address_id.to_string(),
        p.quote_id.to_string(),
        &p.receiver,
        num(p.debit.value),
        p.debit.asset.code.as_str(),
        p.debit.asset.scale,
        num(p.receive.value),
        p.receive.asset.code.as_str(),
        p.receive.asset.scale,
        num(p.sent),
        p.state.as_str(),
        &p.error,
        rows::metadata_to_text(&p.metadata),
        &p.client,
        &p.grant_id,
        p.grant_interval_start,
        p.attempts,
        p.next_attempt_at,
        p.created_at,
        p.updated_at,
    ];
    tx.send(&INSERT_PAYMENT, params, Want::Changed)
}

/// Sends the move of the debit amount from the wallet address into the
/// payment.
async fn fund_from_wallet(tx: &mut Tx<'_>, p: &OutgoingPayment) -> StoreResult<SentPost> {
    let owner = p.wallet_address_id.to_string();
    let reference = p.id.to_string();
    let posting = Posting {
        debit: AccountRef::new(AccountKind::Wallet, &owner, &p.debit.asset),
        credit: AccountRef::new(AccountKind::Outgoing, &reference, &p.debit.asset),
        amount: p.debit.value,
        kind: TransferKind::Fund,
        reference: Some(&reference),
        key: None,
        at: p.created_at,
    };
    send_post(tx, posting).await
}

impl SqlStore {
    pub(crate) async fn create_tx(
        &self,
        p: &OutgoingPayment,
        grant: Option<&GrantReservation>,
        events: &[WebhookEvent],
        claim: Option<&RequestClaim>,
    ) -> StoreResult<CreateOutgoing> {
        // On PostgreSQL everything up to the `COMMIT` (the request's claim
        // first) travels in one round trip, and the `COMMIT` in a second.
        let mut tx = claim::begin(&self.db, claim).await?;
        // The payment first: a used quote (its unique key) refuses it, and
        // so the whole transaction.
        let inserted = insert_payment(&mut tx, p);
        insert_events(&mut tx, events);
        // The rows many payments share (the sender's balance, the grant's
        // spending) last, so each is locked for as short a time as possible:
        // until the commit that follows.
        let funded = match p.state {
            OutgoingPaymentState::Sending => Some(fund_from_wallet(&mut tx, p).await?),
            _ => None,
        };
        let reserved = match grant {
            Some(g) => {
                let (start, end, at) = (g.interval_start, g.interval_end, p.created_at);
                let sent =
                    spending::send_add(&mut tx, &g.grant_id, start, end, &p.debit, &p.receive, at);
                Some((g, sent.await?))
            }
            None => None,
        };
        match tx.take(inserted).await {
            Ok(_) => {}
            Err(StoreError::Conflict(_)) => return Ok(CreateOutgoing::QuoteUsed),
            Err(e) => return Err(e),
        }
        let funded = match funded {
            Some(sent) => sent.read(&mut tx).await?.map(|_| ()),
            None => Ok(()),
        };
        let mut spent_before = GrantSpent::default();
        if let Some((g, sent)) = reserved {
            match check_reservation(sent.read(&mut tx).await?, g, p) {
                Ok(before) => spent_before = before,
                // The grant's refusal first, whatever the balance.
                Err(refused) => return Ok(refused),
            }
        }
        match funded {
            Ok(()) => {}
            Err(PostError::Insufficient { available }) => {
                return Ok(CreateOutgoing::InsufficientBalance { available })
            }
            Err(PostError::Overflow) => return Ok(CreateOutgoing::Overflow),
        }
        match claim::answer_before_commit(&mut tx, claim, &spent_before) {
            Some(answered) => drop(tx.commit_with(answered).await?),
            None => tx.commit().await?,
        }
        Ok(CreateOutgoing::Created { spent_before })
    }

    pub(crate) async fn fail_tx(&self, f: &PaymentFailure) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let ended = params![f.state.as_str(), &f.reason, f.at, f.payment.to_string()];
        let Some(row) = tx.fetch_opt(&END_PAYMENT, ended).await? else {
            return Ok(false);
        };
        let p = payment_from_row(&row)?;
        // Packets in flight take money from the payment when fulfilled: it
        // ends only once they are settled (see `packets`).
        if has_pending(&mut tx, &p.id.to_string()).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        // The ledger accounts before the grant's spending row: the order a
        // create locks them in, so a failure and a create under one grant
        // cannot deadlock.
        refund(&mut tx, &p, f.at).await?;
        // The grant no longer counts what was not sent (all of it, unless
        // packets of a payment to another server went out first).
        let unsent = p.debit.value.saturating_sub(p.sent);
        let undelivered = p.receive.value.saturating_sub(p.delivered);
        release_spending(&mut tx, &p, unsent, undelivered, f.at).await?;
        insert_events(&mut tx, &f.events);
        tx.commit().await?;
        Ok(true)
    }

    pub(crate) async fn fund_tx(
        &self,
        id: OutgoingPaymentId,
        at: Timestamp,
        events: &[WebhookEvent],
    ) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let Some(row) = tx
            .fetch_opt(&START_SENDING, params![at, at, id.to_string()])
            .await?
        else {
            return Ok(false);
        };
        let p = payment_from_row(&row)?;
        // Funds held elsewhere arrive from the outside world.
        let asset = &p.debit.asset;
        let reference = p.id.to_string();
        let posting = Posting {
            debit: AccountRef::settlement(asset),
            credit: AccountRef::new(AccountKind::Outgoing, &reference, asset),
            amount: p.debit.value,
            kind: TransferKind::Fund,
            reference: Some(&reference),
            key: None,
            at,
        };
        if post(&mut tx, posting).await?.is_err() {
            return Err(corrupt("settlement funding"));
        }
        insert_events(&mut tx, events);
        tx.commit().await?;
        Ok(true)
    }
}

/// Takes `debit` and `receive` off what the payment's grant counts as
/// spent in its interval (money the payment gave back).
pub(crate) async fn release_spending(
    tx: &mut Tx<'_>,
    p: &OutgoingPayment,
    debit: u64,
    receive: u64,
    at: Timestamp,
) -> StoreResult<()> {
    if let (Some(g), Some(start)) = (p.grant_id.as_deref(), p.grant_interval_start) {
        if let Some(s) = spending::read(tx, g, start).await? {
            let d = s.debit.saturating_sub(debit);
            let r = s.receive.saturating_sub(receive);
            spending::write(tx, g, start, d, r, at).await?;
        }
    }
    Ok(())
}

/// Whether the payment has packets pending.
pub(crate) async fn has_pending(tx: &mut Tx<'_>, payment: &str) -> StoreResult<bool> {
    Ok(tx
        .fetch_opt(&ANY_PENDING, params![payment])
        .await?
        .is_some())
}

/// A payment as this transaction sees it.
pub(crate) async fn payment_in(tx: &mut Tx<'_>, id: &str) -> StoreResult<Option<OutgoingPayment>> {
    tx.fetch_opt(&PAYMENT_IN, params![id])
        .await?
        .as_ref()
        .map(payment_from_row)
        .transpose()
}

/// Gives back what an ended payment still holds: to the wallet address,
/// or to the outside world for payments the operator funded from
/// elsewhere.
pub(crate) async fn refund(tx: &mut Tx<'_>, p: &OutgoingPayment, at: Timestamp) -> StoreResult<()> {
    let payment = p.id.to_string();
    let asset = &p.debit.asset;
    let held = AccountRef::new(AccountKind::Outgoing, &payment, asset);
    if !ledger::account_exists(tx, &held.id()).await? {
        return Ok(());
    }
    let balance = ledger::balance_of(tx, &held.id()).await?;
    if balance <= 0 {
        return Ok(());
    }
    let source = ledger::funding_source(tx, &held.id()).await?;
    let owner = p.wallet_address_id.to_string();
    let back_to = match source {
        Some(s) if AccountKind::of_account(&s) == Some(AccountKind::Settlement) => {
            AccountRef::settlement(asset)
        }
        _ => AccountRef::new(AccountKind::Wallet, &owner, asset),
    };
    let amount = u64::try_from(balance).map_err(|_| corrupt("balance"))?;
    let posting = Posting {
        debit: held,
        credit: back_to,
        amount,
        kind: TransferKind::Refund,
        reference: Some(&payment),
        key: None,
        at,
    };
    if post(tx, posting).await?.is_err() {
        return Err(corrupt("refund"));
    }
    Ok(())
}
