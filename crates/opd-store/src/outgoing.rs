//! Outgoing payments: creation (grant reservation and funding in the same
//! transaction), reads and pages, the worker's claim with a lease, local
//! delivery, failure with refund, and external funding.

use async_trait::async_trait;
use opd_core::ledger::{AccountKind, PostError, TransferKind};
use opd_core::outgoing_payment::{
    CreateOutgoing, GrantReservation, GrantSpent, LocalDelivery, OutgoingPayment,
    OutgoingPaymentState, PaymentFailure,
};
use opd_core::pagination::{Page, PageRequest};
use opd_core::webhook::WebhookEvent;
use opd_core::{Amount, OutgoingPaymentId, QuoteId, Timestamp, WalletAddressId};

use crate::db::{num, params, Stmt, Tx};
use crate::ledger::{self, post, AccountRef, Posting};
use crate::outbox::insert_events;
use crate::pages::{page_statements, read_page, PageStatements};
use crate::rows::{self, corrupt, Columns};
use crate::{spending, SqlStore, StoreError, StoreResult};

/// Outgoing payments.
#[async_trait]
pub trait OutgoingPaymentStore: Send + Sync {
    /// Stores a payment, reserving its amounts against the grant's limits
    /// and (state `sending`) funding it from the wallet address's balance,
    /// all or nothing.
    async fn create_outgoing_payment(
        &self,
        payment: &OutgoingPayment,
        grant: Option<&GrantReservation>,
        events: &[WebhookEvent],
    ) -> StoreResult<CreateOutgoing>;
    async fn get_outgoing_payment(
        &self,
        id: OutgoingPaymentId,
    ) -> StoreResult<Option<OutgoingPayment>>;
    async fn list_outgoing_payments(
        &self,
        wallet: WalletAddressId,
        client: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Page<OutgoingPayment>>;
    /// Takes the next payment due for sending and leases it for `lease_ms`
    /// (a worker that dies lets it come back after that); several workers
    /// never take the same one at once.
    async fn claim_due_outgoing_payment(
        &self,
        now: Timestamp,
        lease_ms: i64,
    ) -> StoreResult<Option<OutgoingPayment>>;
    /// Gives back the lease of a payment still sending, so that any worker
    /// may take it again at `at` (a payment that lost a race for its
    /// receiver is planned again at once, not after its lease).
    async fn release_outgoing_payment(
        &self,
        id: OutgoingPaymentId,
        at: Timestamp,
    ) -> StoreResult<()>;
    /// Applies a local delivery; `false` (nothing changed) when the payment
    /// is no longer sending or the receiver changed since the plan.
    async fn deliver_locally(&self, delivery: &LocalDelivery) -> StoreResult<bool>;
    /// Fails or cancels a payment still funding or sending, refunds what it
    /// holds and releases its grant reservation; `false` when it is not.
    async fn fail_outgoing_payment(&self, failure: &PaymentFailure) -> StoreResult<bool>;
    /// What a grant spent in the interval starting at `interval_start`.
    async fn grant_spent(
        &self,
        grant: &str,
        interval_start: Timestamp,
    ) -> StoreResult<Option<GrantSpent>>;
    /// Funds a payment waiting in `funding` from outside (the settlement
    /// account) and lets it be sent; `false` when it is not waiting.
    async fn fund_outgoing_payment(
        &self,
        id: OutgoingPaymentId,
        at: Timestamp,
        events: &[WebhookEvent],
    ) -> StoreResult<bool>;
    /// Payments still waiting for funds whose quote expired.
    async fn unfunded_expired_outgoing_payments(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Vec<OutgoingPaymentId>>;
}

const PAYMENT_COLUMNS: &str = "CAST(id AS TEXT) AS id, \
    CAST(wallet_address_id AS TEXT) AS wallet_address_id, CAST(quote_id AS TEXT) AS quote_id, \
    receiver, CAST(debit_value AS TEXT) AS debit_value, debit_asset_code, \
    CAST(debit_asset_scale AS BIGINT) AS debit_asset_scale, \
    CAST(receive_value AS TEXT) AS receive_value, receive_asset_code, \
    CAST(receive_asset_scale AS BIGINT) AS receive_asset_scale, \
    CAST(sent_value AS TEXT) AS sent_value, state, error, metadata, client, grant_id, \
    grant_interval_start, attempts, next_attempt_at, created_at, updated_at";

static INSERT_PAYMENT: Stmt = Stmt::new(&[
    "INSERT INTO outgoing_payments (id, wallet_address_id, quote_id, receiver, debit_value, \
     debit_asset_code, debit_asset_scale, receive_value, receive_asset_code, receive_asset_scale, \
     sent_value, state, error, metadata, client, grant_id, grant_interval_start, attempts, \
     next_attempt_at, created_at, updated_at) VALUES (?::uuid, ?::uuid, ?::uuid, ?, ?::numeric, \
     ?, ?, ?::numeric, ?, ?, ?::numeric, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
]);
static PAYMENT_BY_ID: Stmt = Stmt::new(&[
    "SELECT ",
    PAYMENT_COLUMNS,
    " FROM outgoing_payments WHERE id = ?::uuid",
]);
/// One statement: the next due payment is found, locked (other nodes skip
/// it) and leased.
static CLAIM_NEXT_DUE: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET next_attempt_at = ?, attempts = attempts + 1 \
     WHERE id = (SELECT id FROM outgoing_payments WHERE state = 'sending' AND next_attempt_at <= ? \
     ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING ",
    PAYMENT_COLUMNS,
]);
static RELEASE: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET next_attempt_at = ? WHERE id = ?::uuid AND state = 'sending'",
]);
static COMPLETE: Stmt = Stmt::new(&[
    "UPDATE outgoing_payments SET state = 'completed', sent_value = ?::numeric, updated_at = ? \
     WHERE id = ?::uuid AND state = 'sending'",
]);
static CREDIT_RECEIVER: Stmt = Stmt::new(&[
    "UPDATE incoming_payments SET received_amount = ?::numeric, completed = ?, updated_at = ? \
     WHERE id = ?::uuid AND received_amount = ?::numeric AND completed = ?",
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
static UNFUNDED_EXPIRED: Stmt = Stmt::new(&[
    "SELECT CAST(p.id AS TEXT) AS id FROM outgoing_payments p JOIN quotes q ON q.id = p.quote_id \
     WHERE p.state = 'funding' AND q.expires_at <= ? ORDER BY q.expires_at LIMIT ?",
]);

/// The pages of `outgoing_payments`.
pub(crate) static PAGES: PageStatements = page_statements!("outgoing_payments", PAYMENT_COLUMNS);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &INSERT_PAYMENT,
    &PAYMENT_BY_ID,
    &CLAIM_NEXT_DUE,
    &RELEASE,
    &COMPLETE,
    &CREDIT_RECEIVER,
    &END_PAYMENT,
    &START_SENDING,
    &UNFUNDED_EXPIRED,
];

fn payment_from_row(row: &impl Columns) -> StoreResult<OutgoingPayment> {
    let amount = |value: &str, code: &str, scale: &str| -> StoreResult<Amount> {
        Ok(Amount::new(
            rows::u64_from_text(&row.text(value)?, value)?,
            rows::asset(&row.text(code)?, row.int(scale)?)?,
        ))
    };
    let id = |col: &str| -> StoreResult<uuid::Uuid> { rows::uuid_from_text(&row.text(col)?) };
    Ok(OutgoingPayment {
        id: OutgoingPaymentId::from_uuid(id("id")?),
        wallet_address_id: WalletAddressId::from_uuid(id("wallet_address_id")?),
        quote_id: QuoteId::from_uuid(id("quote_id")?),
        receiver: row.text("receiver")?,
        debit: amount("debit_value", "debit_asset_code", "debit_asset_scale")?,
        receive: amount("receive_value", "receive_asset_code", "receive_asset_scale")?,
        sent: rows::u64_from_text(&row.text("sent_value")?, "sent")?,
        state: OutgoingPaymentState::parse(&row.text("state")?)
            .ok_or_else(|| corrupt("payment state"))?,
        error: row.opt_text("error")?,
        metadata: rows::metadata_from_text(row.opt_text("metadata")?)?,
        client: row.opt_text("client")?,
        grant_id: row.opt_text("grant_id")?,
        grant_interval_start: row
            .opt_int("grant_interval_start")?
            .map(Timestamp::from_unix_millis),
        attempts: row.int("attempts")?,
        next_attempt_at: Timestamp::from_unix_millis(row.int("next_attempt_at")?),
        created_at: Timestamp::from_unix_millis(row.int("created_at")?),
        updated_at: Timestamp::from_unix_millis(row.int("updated_at")?),
    })
}

fn payment_id_from_row(row: &impl Columns) -> StoreResult<OutgoingPaymentId> {
    Ok(OutgoingPaymentId::from_uuid(rows::uuid_from_text(
        &row.text("id")?,
    )?))
}

/// Counts a new payment against its grant's limits in the interval;
/// returns what was spent before it, or the refusal (the caller then does
/// not commit).
async fn reserve(
    tx: &mut Tx<'_>,
    g: &GrantReservation,
    p: &OutgoingPayment,
) -> StoreResult<Result<GrantSpent, CreateOutgoing>> {
    // The spending row is the grant's lock: concurrent creates under one
    // grant queue on it.
    let (start, end, at) = (g.interval_start, g.interval_end, p.created_at);
    let added = spending::add(tx, &g.grant_id, start, end, &p.debit, &p.receive, at).await?;
    let Some(before) = added else {
        // A grant without a limit can still not total past u64::MAX.
        return Ok(Err(CreateOutgoing::Overflow));
    };
    if !g.allows(
        (before.debit, before.receive),
        p.debit.value,
        p.receive.value,
    ) {
        return Ok(Err(CreateOutgoing::LimitExceeded {
            spent_before: before.shown,
        }));
    }
    Ok(Ok(before.shown))
}

async fn insert_payment(tx: &mut Tx<'_>, p: &OutgoingPayment) -> StoreResult<u64> {
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
    tx.execute(&INSERT_PAYMENT, params).await
}

/// Moves the debit amount from the wallet address into the payment.
async fn fund_from_wallet(
    tx: &mut Tx<'_>,
    p: &OutgoingPayment,
) -> StoreResult<Result<(), PostError>> {
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
    Ok(post(tx, posting).await?.map(|_| ()))
}

impl SqlStore {
    async fn create_tx(
        &self,
        p: &OutgoingPayment,
        grant: Option<&GrantReservation>,
        events: &[WebhookEvent],
    ) -> StoreResult<CreateOutgoing> {
        let mut tx = self.db.begin().await?;
        // The payment first: a used quote (its unique key) refuses it before
        // anything else is done.
        match insert_payment(&mut tx, p).await {
            Ok(_) => {}
            Err(StoreError::Conflict(_)) => return Ok(CreateOutgoing::QuoteUsed),
            Err(e) => return Err(e),
        }
        insert_events(&mut tx, events).await?;
        // The rows many payments share (the sender's balance, the grant's
        // spending) last, so each is locked for as short a time as possible:
        // until the commit that follows.
        let funded = match p.state {
            OutgoingPaymentState::Sending => fund_from_wallet(&mut tx, p).await?,
            _ => Ok(()),
        };
        let mut spent_before = GrantSpent::default();
        if let Some(g) = grant {
            match reserve(&mut tx, g, p).await? {
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
        tx.commit().await?;
        Ok(CreateOutgoing::Created { spent_before })
    }

    async fn claim_next(
        &self,
        now: Timestamp,
        lease_ms: i64,
    ) -> StoreResult<Option<OutgoingPayment>> {
        let until = Timestamp::from_unix_millis(now.unix_millis().saturating_add(lease_ms));
        let claimed = self
            .db
            .write_returning(&CLAIM_NEXT_DUE, params![until, now])
            .await?;
        let Some(row) = claimed else {
            return Ok(None);
        };
        let payment = payment_from_row(&row)?;
        // Readers take the cache's epoch before they read, so dropping the
        // payment after the commit is enough to keep a stale copy out.
        self.payments_cache.invalidate(payment.id);
        Ok(Some(payment))
    }

    async fn deliver_tx(&self, d: &LocalDelivery) -> StoreResult<bool> {
        let payment = d.payment.to_string();
        let mut tx = self.db.begin().await?;
        if tx
            .execute(&COMPLETE, params![num(d.send), d.at, &payment])
            .await?
            == 0
        {
            return Ok(false);
        }
        let received = d
            .expected_received
            .checked_add(d.deliver)
            .ok_or_else(|| corrupt("received amount"))?;
        let credit = params![
            num(received),
            d.completes_incoming,
            d.at,
            d.incoming.to_string(),
            num(d.expected_received),
            false,
        ];
        if tx.execute(&CREDIT_RECEIVER, credit).await? == 0 {
            // The receiver changed since the plan was made: nothing
            // happened; the worker plans again.
            return Ok(false);
        }
        post_delivery(&mut tx, d, &payment).await?;
        insert_events(&mut tx, &d.events).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn fail_tx(&self, f: &PaymentFailure) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let ended = params![f.state.as_str(), &f.reason, f.at, f.payment.to_string()];
        let Some(row) = tx.fetch_opt(&END_PAYMENT, ended).await? else {
            return Ok(false);
        };
        let p = payment_from_row(&row)?;
        // The ledger accounts before the grant's spending row: the order a
        // create locks them in, so a failure and a create under one grant
        // cannot deadlock.
        refund(&mut tx, &p, f.at).await?;
        if let (Some(g), Some(start)) = (p.grant_id.as_deref(), p.grant_interval_start) {
            if let Some(s) = spending::read(&mut tx, g, start).await? {
                let debit = s.debit.saturating_sub(p.debit.value);
                let receive = s.receive.saturating_sub(p.receive.value);
                spending::write(&mut tx, g, start, debit, receive, f.at).await?;
            }
        }
        insert_events(&mut tx, &f.events).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn fund_tx(
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
        insert_events(&mut tx, events).await?;
        tx.commit().await?;
        Ok(true)
    }
}

/// The transfers of a local delivery: the delivered amount to the
/// receiver (through the settlement accounts when the assets differ) and
/// the fee to the fee account.
async fn post_delivery(tx: &mut Tx<'_>, d: &LocalDelivery, payment: &str) -> StoreResult<()> {
    let held = AccountRef::new(AccountKind::Outgoing, payment, &d.sender_asset);
    let incoming_owner = d.incoming.to_string();
    let incoming = AccountRef::new(AccountKind::Incoming, &incoming_owner, &d.receiver_asset);
    let fees = AccountRef::new(AccountKind::Fees, "fees", &d.sender_asset);
    let mut moves = Vec::with_capacity(3);
    if d.sender_asset == d.receiver_asset {
        moves.push((held, incoming, d.deliver, TransferKind::Deliver));
    } else {
        let out = AccountRef::settlement(&d.sender_asset);
        let inn = AccountRef::settlement(&d.receiver_asset);
        moves.push((held, out, d.send, TransferKind::Send));
        moves.push((inn, incoming, d.deliver, TransferKind::Deliver));
    }
    moves.push((held, fees, d.fee, TransferKind::Fee));
    for (debit, credit, amount, kind) in moves {
        let posting = Posting {
            debit,
            credit,
            amount,
            kind,
            reference: Some(payment),
            key: None,
            at: d.at,
        };
        if let Err(e) = post(tx, posting).await? {
            return Err(StoreError::Corrupt(format!(
                "outgoing payment {payment} cannot post its {kind} transfer: {e:?}"
            )));
        }
    }
    Ok(())
}

/// Gives back what an ended payment still holds: to the wallet address,
/// or to the outside world for payments the operator funded from
/// elsewhere.
async fn refund(tx: &mut Tx<'_>, p: &OutgoingPayment, at: Timestamp) -> StoreResult<()> {
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
    let source = ledger::funding_source(tx, &payment).await?;
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

#[async_trait]
impl OutgoingPaymentStore for SqlStore {
    async fn create_outgoing_payment(
        &self,
        p: &OutgoingPayment,
        grant: Option<&GrantReservation>,
        events: &[WebhookEvent],
    ) -> StoreResult<CreateOutgoing> {
        self.create_tx(p, grant, events).await
    }

    async fn get_outgoing_payment(
        &self,
        id: OutgoingPaymentId,
    ) -> StoreResult<Option<OutgoingPayment>> {
        if let Some(p) = self.payments_cache.get(id) {
            return Ok(Some(p));
        }
        let epoch = self.payments_cache.epoch();
        let row = self
            .db
            .read_opt(&PAYMENT_BY_ID, params![id.to_string()])
            .await?;
        let found = row.as_ref().map(payment_from_row).transpose()?;
        if let Some(p) = &found {
            self.payments_cache.put(epoch, p);
        }
        Ok(found)
    }

    async fn list_outgoing_payments(
        &self,
        wallet: WalletAddressId,
        client: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Page<OutgoingPayment>> {
        read_page(&self.db, &PAGES, wallet, client, page, payment_from_row).await
    }

    async fn claim_due_outgoing_payment(
        &self,
        now: Timestamp,
        lease_ms: i64,
    ) -> StoreResult<Option<OutgoingPayment>> {
        self.claim_next(now, lease_ms).await
    }

    async fn release_outgoing_payment(
        &self,
        id: OutgoingPaymentId,
        at: Timestamp,
    ) -> StoreResult<()> {
        self.db.write(&RELEASE, params![at, id.to_string()]).await?;
        self.payments_cache.invalidate(id);
        Ok(())
    }

    async fn deliver_locally(&self, d: &LocalDelivery) -> StoreResult<bool> {
        self.payments_cache.invalidate(d.payment);
        let done = self.deliver_tx(d).await;
        self.payments_cache.invalidate(d.payment);
        done
    }

    async fn fail_outgoing_payment(&self, f: &PaymentFailure) -> StoreResult<bool> {
        self.payments_cache.invalidate(f.payment);
        let done = self.fail_tx(f).await;
        self.payments_cache.invalidate(f.payment);
        done
    }

    async fn grant_spent(&self, grant: &str, start: Timestamp) -> StoreResult<Option<GrantSpent>> {
        // `spending::read` locks the row on PostgreSQL, so it runs in a
        // short transaction, rolled back.
        let mut tx = self.db.begin().await?;
        let found = spending::read(&mut tx, grant, start)
            .await?
            .map(|s| s.shown);
        tx.rollback().await?;
        Ok(found)
    }

    async fn fund_outgoing_payment(
        &self,
        id: OutgoingPaymentId,
        at: Timestamp,
        events: &[WebhookEvent],
    ) -> StoreResult<bool> {
        self.payments_cache.invalidate(id);
        let done = self.fund_tx(id, at, events).await;
        self.payments_cache.invalidate(id);
        done
    }

    async fn unfunded_expired_outgoing_payments(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Vec<OutgoingPaymentId>> {
        let rows = self.db.read(&UNFUNDED_EXPIRED, params![now, limit]).await?;
        rows.iter().map(payment_id_from_row).collect()
    }
}
