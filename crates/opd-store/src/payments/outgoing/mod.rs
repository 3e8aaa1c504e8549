//! Outgoing payments: the trait, reads and pages, and the worker's claim
//! with a lease. The transactions that change a payment's state (creation
//! with funding and grant reservation, failure with refund, external
//! funding) are in [`transitions`]; the packets of a payment sent over ILP
//! in [`packets`]; a grant's spending in [`spending`]; the payments read
//! back without SQL in [`read_cache`].

pub(crate) mod packets;
pub(crate) mod read_cache;
pub(crate) mod spending;
pub(crate) mod transitions;

use async_trait::async_trait;
use opd_core::outgoing_payment::{
    CreateOutgoing, GrantReservation, GrantSpent, OutgoingPayment, OutgoingPaymentState,
    PaymentFailure,
};
use opd_core::pagination::{Page, PageRequest};
use opd_core::webhook::WebhookEvent;
use opd_core::{Amount, OutgoingPaymentId, QuoteId, Timestamp, WalletAddressId};

use crate::access::claim::RequestClaim;
use crate::platform::db::{params, Stmt};
use crate::platform::pages::{page_statements, read_page, PageStatements};
use crate::platform::rows::{self, corrupt, Columns};
use crate::{Backend, SqlStore, StoreResult};

/// Outgoing payments.
#[async_trait]
pub trait OutgoingPaymentStore: Send + Sync {
    /// Stores a payment, reserving its amounts against the grant's limits
    /// and (state `sending`) funding it from the wallet address's balance,
    /// all or nothing; `claim` (the request's replay claim, see
    /// [`crate::claim`]) is written with it.
    async fn create_outgoing_payment(
        &self,
        payment: &OutgoingPayment,
        grant: Option<&GrantReservation>,
        events: &[WebhookEvent],
        claim: Option<&RequestClaim>,
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
    /// How many payments are `sending`, by how long before `now` they
    /// were created: less than each of `ages` (in milliseconds, rising),
    /// then older than the last. One count more than `ages`.
    async fn sending_payments_by_age(
        &self,
        now: Timestamp,
        ages: [i64; 3],
    ) -> StoreResult<[u64; 4]>;
}

/// What became of a local delivery. Only `Done` changed anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// The payment completed, the receiver was credited, the fee taken;
    /// `completes`: this delivery completed the receiver.
    Done { completes: bool },
    /// The payment is no longer sending, or the receiver changed since the
    /// plan.
    Changed,
    /// The ledger refused it: a balance it credits (the receiving wallet
    /// address's or incoming payment's, a settlement account, the fees)
    /// would pass the largest amount it can hold (u64::MAX).
    Overflow,
}

pub(crate) const PAYMENT_COLUMNS: &str = "CAST(id AS TEXT) AS id, \
    CAST(wallet_address_id AS TEXT) AS wallet_address_id, CAST(quote_id AS TEXT) AS quote_id, \
    receiver, CAST(debit_value AS TEXT) AS debit_value, debit_asset_code, \
    CAST(debit_asset_scale AS BIGINT) AS debit_asset_scale, \
    CAST(receive_value AS TEXT) AS receive_value, receive_asset_code, \
    CAST(receive_asset_scale AS BIGINT) AS receive_asset_scale, \
    CAST(sent_value AS TEXT) AS sent_value, \
    CAST(delivered_value AS TEXT) AS delivered_value, \
    CAST(receiver_baseline AS TEXT) AS receiver_baseline, state, error, metadata, client, grant_id, \
    grant_interval_start, attempts, next_attempt_at, created_at, updated_at";

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
static UNFUNDED_EXPIRED: Stmt = Stmt::new(&[
    "SELECT CAST(p.id AS TEXT) AS id FROM outgoing_payments p JOIN quotes q ON q.id = p.quote_id \
     WHERE p.state = 'funding' AND q.expires_at <= ? ORDER BY q.expires_at LIMIT ?",
]);

/// Cumulative counts of the payments in `sending` created after each of
/// three moments, and all of them (read through `outgoing_payments_due`).
static SENDING_BY_AGE: Stmt = Stmt::new(&[
    "SELECT COALESCE(SUM(CASE WHEN created_at > ? THEN 1 ELSE 0 END), 0) AS a, \
     COALESCE(SUM(CASE WHEN created_at > ? THEN 1 ELSE 0 END), 0) AS b, \
     COALESCE(SUM(CASE WHEN created_at > ? THEN 1 ELSE 0 END), 0) AS c, COUNT(*) AS n \
     FROM outgoing_payments WHERE state = 'sending'",
]);

/// The pages of `outgoing_payments`.
static PAGES: PageStatements = page_statements!("outgoing_payments", PAYMENT_COLUMNS);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &PAYMENT_BY_ID,
    &CLAIM_NEXT_DUE,
    &RELEASE,
    &UNFUNDED_EXPIRED,
    &SENDING_BY_AGE,
    &PAGES.forward,
    &PAGES.backward,
    &PAGES.count_newer,
    &PAGES.count_older,
];

pub(crate) fn payment_from_row(row: &impl Columns) -> StoreResult<OutgoingPayment> {
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
        delivered: rows::u64_from_text(&row.text("delivered_value")?, "delivered")?,
        receiver_baseline: row
            .opt_text("receiver_baseline")?
            .map(|v| rows::u64_from_text(&v, "receiver baseline"))
            .transpose()?,
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

impl SqlStore {
    async fn claim_next(
        &self,
        now: Timestamp,
        lease_ms: i64,
    ) -> StoreResult<Option<OutgoingPayment>> {
        let until = Timestamp::from_unix_millis(now.unix_millis().saturating_add(lease_ms));
        let claimed = self
            .db
            .write_returning(&CLAIM_NEXT_DUE, params![until, now])
            .await
            .inspect_err(|_| {
                // The claim may have committed before the failure was
                // reported, on a payment we cannot name.
                self.payments_cache.invalidate_all();
            })?;
        let Some(row) = claimed else {
            return Ok(None);
        };
        let payment = payment_from_row(&row)?;
        // Readers take the cache's epoch before they read, so dropping the
        // payment after the commit is enough to keep a stale copy out.
        self.payments_cache.invalidate(payment.id);
        Ok(Some(payment))
    }
}

#[async_trait]
impl OutgoingPaymentStore for SqlStore {
    async fn create_outgoing_payment(
        &self,
        p: &OutgoingPayment,
        grant: Option<&GrantReservation>,
        events: &[WebhookEvent],
        claim: Option<&RequestClaim>,
    ) -> StoreResult<CreateOutgoing> {
        self.create_tx(p, grant, events, claim).await
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
        let released = self.db.write(&RELEASE, params![at, id.to_string()]).await;
        self.payments_cache.invalidate(id);
        released.map(|_| ())
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

    async fn sending_payments_by_age(
        &self,
        now: Timestamp,
        ages: [i64; 3],
    ) -> StoreResult<[u64; 4]> {
        let [a, b, c] = ages.map(|ms| now.plus_millis(-ms));
        let rows = self.db.read(&SENDING_BY_AGE, params![a, b, c]).await?;
        let Some(row) = rows.first() else {
            return Ok([0; 4]);
        };
        let count =
            |col: &str| -> StoreResult<u64> { Ok(u64::try_from(row.int(col)?).unwrap_or(0)) };
        // Created after a (youngest), after b, after c, and all of them.
        let (a, b, c, n) = (count("a")?, count("b")?, count("c")?, count("n")?);
        Ok([
            a,
            b.saturating_sub(a),
            c.saturating_sub(b),
            n.saturating_sub(c),
        ])
    }
}

/// The statements of outgoing payments on `backend`, for the statement
/// tests.
pub(crate) fn statements(backend: Backend) -> Vec<&'static Stmt> {
    let mut all = [
        STATEMENTS,
        packets::STATEMENTS,
        spending::STATEMENTS,
        transitions::STATEMENTS,
    ]
    .concat();
    if backend == Backend::Postgres {
        all.extend_from_slice(spending::PG_STATEMENTS);
    }
    all
}
