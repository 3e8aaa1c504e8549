//! Incoming payments: creation (with its webhook event), reads, pages,
//! completion, and the expiry announcements.

use async_trait::async_trait;
use opd_core::incoming_payment::IncomingPayment;
use opd_core::pagination::{Page, PageRequest};
use opd_core::webhook::WebhookEvent;
use opd_core::{IncomingPaymentId, Timestamp, WalletAddressId};

use crate::access::claim::{self, RequestClaim};
use crate::platform::db::{num, params, Stmt, Want};
use crate::platform::outbox::insert_events;
use crate::platform::pages::{page_statements, read_page, PageStatements};
use crate::platform::rows::{
    self, asset, id, metadata_from_text, opt_u64_from_text, time, u64_from_text, Columns,
};
use crate::{SqlStore, StoreResult};

/// Incoming payments.
#[async_trait]
pub trait IncomingPaymentStore: Send + Sync {
    /// Stores a new incoming payment and queues its webhook events.
    /// Stores a new incoming payment with its events; `claim` (the
    /// request's replay claim, see [`crate::claim`]) is written with it.
    async fn create_incoming_payment(
        &self,
        payment: &IncomingPayment,
        events: &[WebhookEvent],
        claim: Option<&RequestClaim>,
    ) -> StoreResult<()>;
    async fn get_incoming_payment(
        &self,
        id: IncomingPaymentId,
    ) -> StoreResult<Option<IncomingPayment>>;
    /// A page of the wallet address's incoming payments, newest first; only
    /// those created by `client` when it is given.
    async fn list_incoming_payments(
        &self,
        wallet: WalletAddressId,
        client: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Page<IncomingPayment>>;
    /// Marks the payment completed unless it already is (queueing `events`
    /// only when this call completed it), and returns it; `claim` is
    /// written with the change.
    async fn complete_incoming_payment(
        &self,
        id: IncomingPaymentId,
        at: Timestamp,
        events: &[WebhookEvent],
        claim: Option<&RequestClaim>,
    ) -> StoreResult<Option<IncomingPayment>>;
    /// How many incoming payments `client` created on `wallet` since `since`.
    async fn incoming_payments_created_by(
        &self,
        wallet: WalletAddressId,
        client: &str,
        since: Timestamp,
    ) -> StoreResult<u64>;
    /// How many incoming payments clients identified by a key alone
    /// (`client` starting `jwk:`) created on `wallet` since `since`.
    async fn key_only_incoming_payments_since(
        &self,
        wallet: WalletAddressId,
        since: Timestamp,
    ) -> StoreResult<u64>;
    /// How many of those came from the client network `network`
    /// (`IncomingPayment::client_network`).
    async fn key_only_incoming_payments_from(
        &self,
        wallet: WalletAddressId,
        network: &str,
        since: Timestamp,
    ) -> StoreResult<u64>;
    /// Unfinished incoming payments expired at `now` and not announced yet.
    async fn due_expired_incoming_payments(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Vec<IncomingPaymentId>>;
    /// Marks an expired incoming payment notified and queues its event;
    /// `false` when it was already (or completed meanwhile).
    async fn mark_incoming_payment_expired(
        &self,
        id: IncomingPaymentId,
        event: &WebhookEvent,
    ) -> StoreResult<bool>;
}

pub(crate) const INCOMING_COLUMNS: &str = "CAST(id AS TEXT) AS id, \
    CAST(wallet_address_id AS TEXT) AS wallet_address_id, asset_code, \
    CAST(asset_scale AS BIGINT) AS asset_scale, CAST(incoming_amount AS TEXT) AS incoming_amount, \
    CAST(received_amount AS TEXT) AS received_amount, completed, expires_at, metadata, client, \
    client_network, created_at, updated_at";

static INSERT_INCOMING: Stmt = Stmt::new(&[
    "INSERT INTO incoming_payments (id, wallet_address_id, asset_code, asset_scale, \
     incoming_amount, received_amount, completed, expires_at, metadata, client, client_network, \
     created_at, updated_at) \
     VALUES (?::uuid, ?::uuid, ?, ?, ?::numeric, ?::numeric, ?, ?, ?, ?, ?, ?, ?)",
]);
static INCOMING_BY_ID: Stmt = Stmt::new(&[
    "SELECT ",
    INCOMING_COLUMNS,
    " FROM incoming_payments WHERE id = ?::uuid",
]);
static COMPLETE: Stmt = Stmt::new(&[
    "UPDATE incoming_payments SET completed = TRUE, updated_at = ? \
     WHERE id = ?::uuid AND NOT completed",
]);
/// Written as `incoming_payments_expiring`'s condition, so both backends
/// read that index.
static DUE_EXPIRED: Stmt = Stmt::new(&["SELECT CAST(id AS TEXT) AS id FROM incoming_payments \
     WHERE NOT completed AND NOT expiry_notified AND expires_at <= ? ORDER BY expires_at LIMIT ?"]);
static MARK_EXPIRED: Stmt = Stmt::new(&["UPDATE incoming_payments SET expiry_notified = ? \
     WHERE id = ?::uuid AND expiry_notified = ? AND completed = ?"]);

/// The pages of `incoming_payments`.
static PAGES: PageStatements = page_statements!("incoming_payments", INCOMING_COLUMNS);

static CREATED_BY: Stmt = Stmt::new(&[
    "SELECT COUNT(*) AS n FROM incoming_payments WHERE wallet_address_id = ?::uuid \
     AND client = ? AND created_at >= ?",
]);
/// `jwk:` clients as a range (`;` follows `:`), which an index serves
/// where `LIKE` would not on SQLite.
static CREATED_BY_KEYS: Stmt = Stmt::new(&[
    "SELECT COUNT(*) AS n FROM incoming_payments WHERE wallet_address_id = ?::uuid \
     AND client >= 'jwk:' AND client < 'jwk;' AND created_at >= ?",
]);
/// The same, from one client network.
static CREATED_BY_KEYS_FROM: Stmt = Stmt::new(&[
    "SELECT COUNT(*) AS n FROM incoming_payments WHERE wallet_address_id = ?::uuid \
     AND client_network = ? AND client >= 'jwk:' AND client < 'jwk;' AND created_at >= ?",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &CREATED_BY,
    &CREATED_BY_KEYS,
    &CREATED_BY_KEYS_FROM,
    &INSERT_INCOMING,
    &INCOMING_BY_ID,
    &COMPLETE,
    &DUE_EXPIRED,
    &MARK_EXPIRED,
    &PAGES.forward,
    &PAGES.backward,
    &PAGES.count_newer,
    &PAGES.count_older,
];

/// The `n` of a `SELECT COUNT(*) AS n`.
async fn count(
    db: &crate::platform::db::Db,
    stmt: &'static Stmt,
    at: &[crate::platform::db::Param],
) -> StoreResult<u64> {
    use crate::platform::rows::Columns;
    let n = match db.read_opt(stmt, at).await? {
        Some(r) => r.int("n")?,
        None => 0,
    };
    Ok(u64::try_from(n).unwrap_or(0))
}

pub(crate) fn incoming_from_row(row: &impl Columns) -> StoreResult<IncomingPayment> {
    Ok(IncomingPayment {
        id: IncomingPaymentId::from_uuid(id(row, "id")?),
        wallet_address_id: WalletAddressId::from_uuid(id(row, "wallet_address_id")?),
        asset: asset(&row.text("asset_code")?, row.int("asset_scale")?)?,
        incoming_amount: opt_u64_from_text(row.opt_text("incoming_amount")?, "incoming_amount")?,
        received_amount: u64_from_text(&row.text("received_amount")?, "received_amount")?,
        completed: row.flag("completed")?,
        expires_at: time(row, "expires_at")?,
        metadata: metadata_from_text(row.opt_text("metadata")?)?,
        client: row.opt_text("client")?,
        client_network: row.opt_text("client_network")?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
    })
}

#[async_trait]
impl IncomingPaymentStore for SqlStore {
    async fn create_incoming_payment(
        &self,
        p: &IncomingPayment,
        events: &[WebhookEvent],
        claim: Option<&RequestClaim>,
    ) -> StoreResult<()> {
        let params = params![
            p.id.to_string(),
            p.wallet_address_id.to_string(),
            p.asset.code.as_str(),
            p.asset.scale,
            p.incoming_amount.map(|v| v.to_string()),
            num(p.received_amount),
            p.completed,
            p.expires_at,
            rows::metadata_to_text(&p.metadata),
            &p.client,
            &p.client_network,
            p.created_at,
            p.updated_at,
        ];
        // One round trip: the claim, the payment, its events and the
        // `COMMIT` travel together.
        let mut tx = claim::begin(&self.db, claim).await?;
        tx.send(&INSERT_INCOMING, params, Want::Changed);
        insert_events(&mut tx, events);
        tx.commit().await
    }

    async fn get_incoming_payment(
        &self,
        id: IncomingPaymentId,
    ) -> StoreResult<Option<IncomingPayment>> {
        let row = self
            .db
            .read_opt(&INCOMING_BY_ID, params![id.to_string()])
            .await?;
        row.as_ref().map(incoming_from_row).transpose()
    }

    async fn list_incoming_payments(
        &self,
        wallet: WalletAddressId,
        client: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Page<IncomingPayment>> {
        read_page(&self.db, &PAGES, wallet, client, page, incoming_from_row).await
    }

    async fn complete_incoming_payment(
        &self,
        id: IncomingPaymentId,
        at: Timestamp,
        events: &[WebhookEvent],
        claim: Option<&RequestClaim>,
    ) -> StoreResult<Option<IncomingPayment>> {
        let mut tx = claim::begin(&self.db, claim).await?;
        if tx.execute(&COMPLETE, params![at, id.to_string()]).await? > 0 {
            insert_events(&mut tx, events);
        }
        tx.commit().await?;
        self.get_incoming_payment(id).await
    }

    async fn incoming_payments_created_by(
        &self,
        wallet: WalletAddressId,
        client: &str,
        since: Timestamp,
    ) -> StoreResult<u64> {
        let at = params![wallet.to_string(), client, since];
        count(&self.db, &CREATED_BY, at).await
    }

    async fn key_only_incoming_payments_since(
        &self,
        wallet: WalletAddressId,
        since: Timestamp,
    ) -> StoreResult<u64> {
        count(
            &self.db,
            &CREATED_BY_KEYS,
            params![wallet.to_string(), since],
        )
        .await
    }

    async fn key_only_incoming_payments_from(
        &self,
        wallet: WalletAddressId,
        network: &str,
        since: Timestamp,
    ) -> StoreResult<u64> {
        let at = params![wallet.to_string(), network, since];
        count(&self.db, &CREATED_BY_KEYS_FROM, at).await
    }

    async fn due_expired_incoming_payments(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Vec<IncomingPaymentId>> {
        use crate::platform::rows::Columns;
        let rows = self.db.read(&DUE_EXPIRED, params![now, limit]).await?;
        rows.iter()
            .map(|r| {
                Ok(IncomingPaymentId::from_uuid(rows::uuid_from_text(
                    &r.text("id")?,
                )?))
            })
            .collect()
    }

    async fn mark_incoming_payment_expired(
        &self,
        id: IncomingPaymentId,
        event: &WebhookEvent,
    ) -> StoreResult<bool> {
        let mut tx = self.db.begin().await?;
        let marked = tx
            .execute(&MARK_EXPIRED, params![true, id.to_string(), false, false])
            .await?;
        if marked == 0 {
            return Ok(false);
        }
        insert_events(&mut tx, std::slice::from_ref(event));
        tx.commit().await?;
        Ok(true)
    }
}
