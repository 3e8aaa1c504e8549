//! What the operator's screens read and change beyond the other areas: the
//! dashboard's sessions, its lists across every wallet address (filters and
//! a cursor), one payment with its ledger transfers, the webhook outbox and
//! "retry now", and the admin API's fee, rate and store figures.
//!
//! The HTTP layer reaches the database only through here (and the other
//! area modules), so `opd-api` does not depend on `opd-store`: these
//! functions answer with domain types from `opd-core`, or with the small
//! types below where a screen needs a row no domain type describes.

use opd_core::incoming_payment::IncomingPayment;
use opd_core::ledger::{Account, Transfer};
use opd_core::outgoing_payment::{OutgoingPayment, OutgoingPaymentState};
use opd_core::wallet_address::{WalletAddress, WalletAddressPath};
use opd_core::{GrantId, IncomingPaymentId, OutgoingPaymentId, Timestamp, WalletAddressId};

use crate::ledger::LedgerCheck;
use crate::{ServiceError, Services};

pub use opd_store::{FeeRow, OutboxEntry, RateRow};

/// Which outgoing payments a list shows; `None` is "any".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutgoingFilter {
    pub wallet: Option<WalletAddressId>,
    pub state: Option<OutgoingPaymentState>,
}

/// Which incoming payments a list shows; `None` is "any".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IncomingFilter {
    pub wallet: Option<WalletAddressId>,
    /// `Some(true)` for completed ones, `Some(false)` for open ones.
    pub completed: Option<bool>,
}

/// A grant as the dashboard lists it: what it is for and where it stands,
/// without its continuation and interaction secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantSummary {
    pub id: GrantId,
    /// `pending`, `approved` or `finalized`.
    pub state: String,
    /// With `finalized`: `issued`, `revoked` or `rejected`.
    pub finalization: Option<String>,
    /// The client, when it named its wallet address (else it is known by
    /// its key).
    pub client_wallet_address: Option<String>,
    /// The granted access items, as the JSON the grant request carried.
    pub access: String,
    pub created_at: Timestamp,
}

/// Which database the node runs on, and how busy it has been.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreStats {
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// SQL round trips since start.
    pub round_trips: u64,
}

/// Stores a new dashboard session (by the digest of its cookie) for
/// `lifetime_secs`, and sweeps the sessions nobody signed out of.
pub async fn open_session(
    services: &Services,
    digest: &str,
    lifetime_secs: i64,
    tenant: Option<&opd_core::TenantId>,
) -> Result<(), ServiceError> {
    let now = services.clock.now();
    let expires = now.plus_seconds(lifetime_secs);
    services
        .store
        .create_dashboard_session(digest, now, expires, tenant)
        .await?;
    // The sweep rides on sign-ins so no timer is needed; an empty digest
    // names no session, so only the expired ones go. Failing it costs
    // nothing but rows, so the sign-in stands.
    if let Err(e) = services.store.delete_dashboard_session("", now).await {
        tracing::warn!(error = %e, "expired dashboard sessions not swept");
    }
    Ok(())
}

/// The session with this cookie digest, if it exists and has not expired:
/// the tenant whose token opened it (`Some(None)`: the operator's).
pub async fn session(
    services: &Services,
    digest: &str,
) -> Result<Option<Option<opd_core::TenantId>>, ServiceError> {
    let now = services.clock.now();
    Ok(services.store.dashboard_session(digest, now).await?)
}

/// Ends a session (sign out), sweeping the expired ones with it.
pub async fn close_session(services: &Services, digest: &str) -> Result<(), ServiceError> {
    let now = services.clock.now();
    Ok(services.store.delete_dashboard_session(digest, now).await?)
}

/// Outgoing payments of every wallet address, newest first, older than
/// the payment `before` names when given; at most `limit`.
pub async fn outgoing_payments(
    services: &Services,
    filter: OutgoingFilter,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<OutgoingPayment>, ServiceError> {
    let filter = opd_store::PaymentFilter {
        wallet: filter.wallet,
        state: filter.state.map(|s| s.as_str().to_owned()),
    };
    Ok(services
        .store
        .all_outgoing_payments(&filter, before, limit)
        .await?)
}

/// Incoming payments, likewise.
pub async fn incoming_payments(
    services: &Services,
    filter: IncomingFilter,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<IncomingPayment>, ServiceError> {
    let state = filter
        .completed
        .map(|done| if done { "completed" } else { "open" }.to_owned());
    let filter = opd_store::PaymentFilter {
        wallet: filter.wallet,
        state,
    };
    Ok(services
        .store
        .all_incoming_payments(&filter, before, limit)
        .await?)
}

/// One outgoing payment, of any wallet address and in any state.
pub async fn outgoing_payment(
    services: &Services,
    id: OutgoingPaymentId,
) -> Result<Option<OutgoingPayment>, ServiceError> {
    Ok(services.store.get_outgoing_payment(id).await?)
}

/// One incoming payment, likewise.
pub async fn incoming_payment(
    services: &Services,
    id: IncomingPaymentId,
) -> Result<Option<IncomingPayment>, ServiceError> {
    Ok(services.store.get_incoming_payment(id).await?)
}

/// External mode: what the incoming payment received and the operator has
/// not withdrawn yet.
pub async fn unwithdrawn(services: &Services, id: IncomingPaymentId) -> Result<u64, ServiceError> {
    Ok(services.store.unwithdrawn(id).await?)
}

/// The newest `limit` transfers of a ledger account, by its id.
pub async fn transfers_of(
    services: &Services,
    account: &str,
    limit: i64,
) -> Result<Vec<Transfer>, ServiceError> {
    Ok(services.store.ledger_transfers_of(account, limit).await?)
}

/// Every ledger account with its balance.
pub async fn ledger_accounts(services: &Services) -> Result<Vec<Account>, ServiceError> {
    Ok(services.store.ledger_accounts().await?)
}

/// `opd check` on the running node's database, in its receipts mode.
pub async fn check_ledger(services: &Services) -> Result<LedgerCheck, ServiceError> {
    crate::ledger::check(services.store.as_ref(), services.config.receipts()).await
}

/// Grants, newest first, of one `state` (`pending`, `approved`,
/// `finalized`) when given, older than the grant `before` names.
pub async fn grants(
    services: &Services,
    state: Option<&str>,
    before: Option<&str>,
    limit: i64,
) -> Result<Vec<GrantSummary>, ServiceError> {
    let found = services.store.all_grants(state, before, limit).await?;
    Ok(found.into_iter().map(GrantSummary::from).collect())
}

impl From<opd_store::GrantRecord> for GrantSummary {
    fn from(g: opd_store::GrantRecord) -> Self {
        Self {
            id: g.id,
            state: g.state,
            finalization: g.finalization,
            client_wallet_address: g.client_wallet_address,
            access: g.access,
            created_at: g.created_at,
        }
    }
}

/// The newest `limit` webhook events with their last error; only the
/// undelivered ones when `undelivered`.
pub async fn webhook_events(
    services: &Services,
    undelivered: bool,
    limit: i64,
) -> Result<Vec<OutboxEntry>, ServiceError> {
    Ok(services
        .store
        .webhook_events(undelivered, None, limit)
        .await?)
}

/// Makes an undelivered webhook event due now; `false` when it is unknown
/// or delivered.
pub async fn retry_webhook_event(services: &Services, id: &str) -> Result<bool, ServiceError> {
    let now = services.clock.now();
    Ok(services.store.retry_webhook_event(id, now).await?)
}

/// The tenant's wallet address at a path, active or deactivated (the
/// operator sees both; the public only active ones).
pub async fn wallet_address_at(
    services: &Services,
    tenant: &opd_core::TenantId,
    path: &WalletAddressPath,
) -> Result<Option<WalletAddress>, ServiceError> {
    Ok(services
        .store
        .get_wallet_address_by_path(tenant, path)
        .await?)
}

/// The fees the operator set, per asset.
pub async fn fees(
    services: &Services,
    tenant: Option<&opd_core::TenantId>,
) -> Result<Vec<FeeRow>, ServiceError> {
    let all = services.store.list_fees().await?;
    Ok(all
        .into_iter()
        .filter(|f| tenant.is_none_or(|t| &f.tenant == t))
        .collect())
}

/// The exchange rates the operator set (or the rates URL last gave).
pub async fn rates(services: &Services) -> Result<Vec<RateRow>, ServiceError> {
    Ok(services.store.list_rates().await?)
}

/// The URL rates are fetched from, when one is set.
pub async fn rates_url(services: &Services) -> Result<Option<String>, ServiceError> {
    let url = services
        .store
        .get_setting(crate::pricing::RATES_URL_SETTING)
        .await?;
    // Unsetting stores an empty value.
    Ok(url.filter(|u| !u.is_empty()))
}

/// The database this node runs on, for people: which backend, and whether
/// other nodes can share it.
pub fn database(services: &Services) -> &'static str {
    match services.store.backend() {
        opd_store::Backend::Sqlite => "SQLite (embedded: this node only)",
        opd_store::Backend::Postgres => "PostgreSQL (shared by every node)",
    }
}

/// The store's figures for `GET /admin/stats`.
pub fn store_stats(services: &Services) -> StoreStats {
    StoreStats {
        backend: format!("{:?}", services.store.backend()).to_lowercase(),
        round_trips: services.store.round_trips(),
    }
}
