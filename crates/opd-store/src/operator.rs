//! What the operator reads across the whole server, beyond any one wallet
//! address or area ([`OperatorStore`], the store side of
//! `opd_service::operator`): every payment and grant, filtered and newest
//! first with a cursor (ids are UUIDv7 or time-ordered, so "older than
//! this id" is the next page), the webhook outbox with each event's last
//! error and "retry now", and the dashboard's sessions (by digest, with an
//! expiry, shared by every node).

use async_trait::async_trait;
use opd_core::incoming_payment::IncomingPayment;
use opd_core::outgoing_payment::OutgoingPayment;
use opd_core::webhook::WebhookEvent;
use opd_core::{TenantId, Timestamp, WalletAddressId};

use crate::grants::GrantRecord;
use crate::platform::db::{params, Row, Stmt};
use crate::platform::rows::Columns;
use crate::{SqlStore, StoreResult};

/// Filters of the payment lists; `None` is "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PaymentFilter {
    pub wallet: Option<WalletAddressId>,
    /// An outgoing payment's state (`funding`, `sending`, ...); for
    /// incoming payments `completed` or `open`.
    pub state: Option<String>,
}

/// A webhook event with its delivery record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub event: WebhookEvent,
    pub last_error: Option<String>,
}

/// What the operator's screens (the dashboard, the admin API) read across
/// every wallet address, and the dashboard's sessions.
#[async_trait]
pub trait OperatorStore: Send + Sync {
    /// Stores a session by the digest of its cookie value, signed in with
    /// `tenant`'s token (`None`: the operator's).
    async fn create_dashboard_session(
        &self,
        digest: &str,
        now: Timestamp,
        expires_at: Timestamp,
        tenant: Option<&TenantId>,
    ) -> StoreResult<()>;
    /// The session, if it exists and has not expired at `now`: whose it is
    /// (`Some(None)`: the operator's).
    async fn dashboard_session(
        &self,
        digest: &str,
        now: Timestamp,
    ) -> StoreResult<Option<Option<TenantId>>>;
    /// Deletes the session (logout), and every session expired at `now`.
    async fn delete_dashboard_session(&self, digest: &str, now: Timestamp) -> StoreResult<()>;
    /// Outgoing payments of every wallet address, newest first, older than
    /// `before` (an id) when given; at most `limit`.
    async fn all_outgoing_payments(
        &self,
        filter: &PaymentFilter,
        before: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<OutgoingPayment>>;
    /// Incoming payments, likewise.
    async fn all_incoming_payments(
        &self,
        filter: &PaymentFilter,
        before: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<IncomingPayment>>;
    /// Grants, newest first, of one `state` (`pending`, `approved`,
    /// `finalized`) when given.
    async fn all_grants(
        &self,
        state: Option<&str>,
        before: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<GrantRecord>>;
    /// Webhook events, newest first; only the undelivered ones when
    /// `undelivered`.
    async fn webhook_events(
        &self,
        undelivered: bool,
        before: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<OutboxEntry>>;
    /// Makes an undelivered event due at `now`; `false` when it is unknown
    /// or delivered.
    async fn retry_webhook_event(&self, id: &str, now: Timestamp) -> StoreResult<bool>;
}

static CREATE_SESSION: Stmt = Stmt::new(&[
    "INSERT INTO dashboard_sessions (digest, created_at, expires_at, tenant_id) VALUES (?, ?, ?, ?)",
]);
static SESSION_VALID: Stmt =
    Stmt::new(&["SELECT tenant_id FROM dashboard_sessions WHERE digest = ? AND expires_at > ?"]);
static DELETE_SESSION: Stmt =
    Stmt::new(&["DELETE FROM dashboard_sessions WHERE digest = ? OR expires_at <= ?"]);
// The payment lists, newest first: every payment, or one wallet
// address's (a statement of its own, so that it reads the wallet address's
// index instead of every payment for the few that are its).
const OUTGOING_FILTERS: &str = " AND (?::text IS NULL OR state = ?) \
     AND (?::text IS NULL OR id < ?::uuid) ORDER BY id DESC LIMIT ?";
static OUTGOING: Stmt = Stmt::new(&[
    "SELECT ",
    crate::payments::outgoing::PAYMENT_COLUMNS,
    " FROM outgoing_payments WHERE TRUE",
    OUTGOING_FILTERS,
]);
static OUTGOING_OF_WALLET: Stmt = Stmt::new(&[
    "SELECT ",
    crate::payments::outgoing::PAYMENT_COLUMNS,
    " FROM outgoing_payments WHERE wallet_address_id = ?::uuid",
    OUTGOING_FILTERS,
]);
/// `state` is `completed` or `open`; anything else matches nothing.
const INCOMING_FILTERS: &str = " AND (?::text IS NULL OR (?::text = 'completed' AND completed) \
     OR (?::text = 'open' AND NOT completed)) \
     AND (?::text IS NULL OR id < ?::uuid) ORDER BY id DESC LIMIT ?";
static INCOMING: Stmt = Stmt::new(&[
    "SELECT ",
    crate::payments::incoming::INCOMING_COLUMNS,
    " FROM incoming_payments WHERE TRUE",
    INCOMING_FILTERS,
]);
static INCOMING_OF_WALLET: Stmt = Stmt::new(&[
    "SELECT ",
    crate::payments::incoming::INCOMING_COLUMNS,
    " FROM incoming_payments WHERE wallet_address_id = ?::uuid",
    INCOMING_FILTERS,
]);
static GRANTS: Stmt = Stmt::new(&[
    "SELECT ",
    crate::grants::GRANT_COLUMNS,
    " FROM grants WHERE (?::text IS NULL OR state = ?) AND (?::text IS NULL OR id < ?::uuid) \
     ORDER BY id DESC LIMIT ?",
]);
static EVENTS: Stmt = Stmt::new(&[
    "SELECT id, tenant_id, kind, data, attempts, next_attempt_at, delivered_at, last_error, \
     created_at FROM webhook_events WHERE (?::bigint = 0 OR delivered_at IS NULL) AND (?::text IS NULL OR id < ?) \
     ORDER BY id DESC LIMIT ?",
]);
static RETRY_EVENT: Stmt = Stmt::new(&[
    "UPDATE webhook_events SET next_attempt_at = ? WHERE id = ? AND delivered_at IS NULL",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &CREATE_SESSION,
    &SESSION_VALID,
    &DELETE_SESSION,
    &OUTGOING,
    &OUTGOING_OF_WALLET,
    &INCOMING,
    &INCOMING_OF_WALLET,
    &GRANTS,
    &EVENTS,
    &RETRY_EVENT,
];

fn entry_from_row(r: &Row) -> StoreResult<OutboxEntry> {
    Ok(OutboxEntry {
        event: crate::platform::outbox::event_from_row(r)?,
        last_error: r.opt_text("last_error")?,
    })
}

#[async_trait]
impl OperatorStore for SqlStore {
    async fn create_dashboard_session(
        &self,
        digest: &str,
        now: Timestamp,
        expires_at: Timestamp,
        tenant: Option<&TenantId>,
    ) -> StoreResult<()> {
        let tenant = tenant.map(TenantId::as_str);
        self.db
            .write(&CREATE_SESSION, params![digest, now, expires_at, tenant])
            .await?;
        Ok(())
    }

    async fn dashboard_session(
        &self,
        digest: &str,
        now: Timestamp,
    ) -> StoreResult<Option<Option<TenantId>>> {
        let Some(row) = self
            .db
            .read_opt(&SESSION_VALID, params![digest, now])
            .await?
        else {
            return Ok(None);
        };
        let tenant = row
            .opt_text("tenant_id")?
            .map(|t| TenantId::parse(&t).map_err(|_| crate::platform::rows::corrupt("tenant id")))
            .transpose()?;
        Ok(Some(tenant))
    }

    async fn delete_dashboard_session(&self, digest: &str, now: Timestamp) -> StoreResult<()> {
        self.db.write(&DELETE_SESSION, params![digest, now]).await?;
        Ok(())
    }

    async fn all_outgoing_payments(
        &self,
        filter: &PaymentFilter,
        before: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<OutgoingPayment>> {
        let state = filter.state.as_deref();
        let rows = match filter.wallet.map(|w| w.to_string()) {
            Some(wallet) => {
                let filters = params![wallet, state, state, before, before, limit];
                self.db.read(&OUTGOING_OF_WALLET, filters).await?
            }
            None => {
                let filters = params![state, state, before, before, limit];
                self.db.read(&OUTGOING, filters).await?
            }
        };
        rows.iter()
            .map(crate::payments::outgoing::payment_from_row)
            .collect()
    }

    async fn all_incoming_payments(
        &self,
        filter: &PaymentFilter,
        before: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<IncomingPayment>> {
        let state = filter.state.as_deref();
        let rows = match filter.wallet.map(|w| w.to_string()) {
            Some(wallet) => {
                let filters = params![wallet, state, state, state, before, before, limit];
                self.db.read(&INCOMING_OF_WALLET, filters).await?
            }
            None => {
                let filters = params![state, state, state, before, before, limit];
                self.db.read(&INCOMING, filters).await?
            }
        };
        rows.iter()
            .map(crate::payments::incoming::incoming_from_row)
            .collect()
    }

    async fn all_grants(
        &self,
        state: Option<&str>,
        before: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<GrantRecord>> {
        let rows = self
            .db
            .read(&GRANTS, params![state, state, before, before, limit])
            .await?;
        rows.iter().map(crate::grants::grant_from_row).collect()
    }

    async fn webhook_events(
        &self,
        undelivered: bool,
        before: Option<&str>,
        limit: i64,
    ) -> StoreResult<Vec<OutboxEntry>> {
        let only = i64::from(undelivered);
        let rows = self
            .db
            .read(&EVENTS, params![only, before, before, limit])
            .await?;
        rows.iter().map(entry_from_row).collect()
    }

    async fn retry_webhook_event(&self, id: &str, now: Timestamp) -> StoreResult<bool> {
        Ok(self.db.write(&RETRY_EVENT, params![now, id]).await? > 0)
    }
}
