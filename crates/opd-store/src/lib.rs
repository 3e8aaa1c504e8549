#![doc = include_str!("../README.md")]

mod error;
pub mod gnap;
pub mod payments;
pub mod postgres;
mod rows;
pub mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;
use opd_core::incoming_payment::IncomingPayment;
use opd_core::pagination::{Page, PageRequest};
use opd_core::quote::Quote;
use opd_core::wallet_address::{WalletAddress, WalletAddressKey, WalletAddressPath};
use opd_core::{
    Asset, AssetCode, Fee, GrantId, IncomingPaymentId, OutgoingPaymentId, QuoteId, Rate, Timestamp,
    WalletAddressId,
};

pub use error::StoreError;
pub use gnap::{AccessTokenRecord, GrantRecord};

/// The result of every store operation.
pub type StoreResult<T> = Result<T, StoreError>;

/// A fee row as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeeRow {
    pub asset: Asset,
    pub fee: Fee,
    pub updated_at: Timestamp,
}

/// One exchange rate: `rate` units of `counter` per unit of `base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateRow {
    pub base: AssetCode,
    pub counter: AssetCode,
    pub rate: Rate,
    pub updated_at: Timestamp,
}

/// Everything opd persists. Each method is one transaction.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Which backend this is, for logs and errors.
    fn backend(&self) -> Backend;

    // Settings and server secrets.

    async fn get_setting(&self, key: &str) -> StoreResult<Option<String>>;
    async fn set_setting(&self, key: &str, value: &str) -> StoreResult<()>;
    /// Stores `value` under `key` unless a value is there already, and
    /// returns the value that is stored. Safe when several nodes start at
    /// once: all of them end up with the same value.
    async fn setting_or_insert(&self, key: &str, value: &str) -> StoreResult<String>;

    // Wallet addresses and keys.

    /// Fails with `Conflict` when the path is taken.
    async fn create_wallet_address(&self, wallet: &WalletAddress) -> StoreResult<()>;
    async fn get_wallet_address(&self, id: WalletAddressId) -> StoreResult<Option<WalletAddress>>;
    async fn get_wallet_address_by_path(
        &self,
        path: &WalletAddressPath,
    ) -> StoreResult<Option<WalletAddress>>;
    async fn list_wallet_addresses(&self) -> StoreResult<Vec<WalletAddress>>;
    /// Sets `deactivated_at` if it is not set; returns the wallet address.
    async fn deactivate_wallet_address(
        &self,
        id: WalletAddressId,
        at: Timestamp,
    ) -> StoreResult<Option<WalletAddress>>;
    /// Fails with `Conflict` when the wallet address has a key with that kid.
    async fn add_key(&self, key: &WalletAddressKey) -> StoreResult<()>;
    /// Marks a key revoked; `false` when there is no such unrevoked key.
    async fn revoke_key(
        &self,
        wallet: WalletAddressId,
        kid: &str,
        at: Timestamp,
    ) -> StoreResult<bool>;
    /// The wallet address's keys, oldest first; revoked ones only on request.
    async fn list_keys(
        &self,
        wallet: WalletAddressId,
        include_revoked: bool,
    ) -> StoreResult<Vec<WalletAddressKey>>;

    // Incoming payments.

    /// Stores a new incoming payment and queues its webhook events.
    async fn create_incoming_payment(
        &self,
        payment: &IncomingPayment,
        events: &[payments::WebhookEventRecord],
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
    /// only when this call completed it), and returns it.
    async fn complete_incoming_payment(
        &self,
        id: IncomingPaymentId,
        at: Timestamp,
        events: &[payments::WebhookEventRecord],
    ) -> StoreResult<Option<IncomingPayment>>;

    // Quotes.

    async fn create_quote(&self, quote: &Quote) -> StoreResult<()>;
    async fn get_quote(&self, id: QuoteId) -> StoreResult<Option<Quote>>;

    // Fees and exchange rates set through the admin API.

    async fn set_fee(&self, asset: &Asset, fee: Fee, at: Timestamp) -> StoreResult<()>;
    /// `false` when there was no fee for the asset.
    async fn delete_fee(&self, asset: &Asset) -> StoreResult<bool>;
    async fn list_fees(&self) -> StoreResult<Vec<FeeRow>>;
    /// Replaces every rate of `base` with `rates`.
    async fn set_rates(
        &self,
        base: &AssetCode,
        rates: &[(AssetCode, Rate)],
        at: Timestamp,
    ) -> StoreResult<()>;
    async fn list_rates(&self) -> StoreResult<Vec<RateRow>>;

    // Authorization server.

    /// Stores a new grant, with its first access token when it is issued
    /// at once (non-interactive grants).
    async fn create_grant(
        &self,
        grant: &GrantRecord,
        token: Option<&AccessTokenRecord>,
    ) -> StoreResult<()>;
    async fn get_grant(&self, id: GrantId) -> StoreResult<Option<GrantRecord>>;
    async fn get_grant_by_continue_id(&self, continue_id: &str)
        -> StoreResult<Option<GrantRecord>>;
    async fn get_grant_by_interaction(&self, interact_id: &str)
        -> StoreResult<Option<GrantRecord>>;
    /// Writes the grant's changing fields (state, finalization,
    /// interaction state and ref, continuation token, last continued,
    /// updated) if it is still at
    /// `grant.version`, bumping the version, and stores `token` in the same
    /// transaction. `false` when another request changed it first.
    async fn update_grant(
        &self,
        grant: &GrantRecord,
        token: Option<&AccessTokenRecord>,
    ) -> StoreResult<bool>;
    async fn get_access_token(&self, digest: &str) -> StoreResult<Option<AccessTokenRecord>>;
    async fn get_access_token_by_management_id(
        &self,
        management_id: &str,
    ) -> StoreResult<Option<AccessTokenRecord>>;
    /// Revokes the token at `old_management_id` and stores `new`, in one
    /// transaction; `false` (and nothing stored) when the old one was
    /// already revoked or does not exist.
    async fn rotate_access_token(
        &self,
        old_management_id: &str,
        new: &AccessTokenRecord,
        at: Timestamp,
    ) -> StoreResult<bool>;
    /// `false` when there is no such unrevoked token.
    async fn revoke_access_token(&self, management_id: &str, at: Timestamp) -> StoreResult<bool>;
    /// Finalizes the grant as revoked and revokes all its tokens; `false`
    /// when it was already finalized as revoked or does not exist.
    async fn revoke_grant(&self, id: GrantId, at: Timestamp) -> StoreResult<bool>;
    /// Sets the password hash the wallet address owner logs in with on the
    /// consent page.
    async fn set_owner_password(
        &self,
        wallet: WalletAddressId,
        hash: &str,
        at: Timestamp,
    ) -> StoreResult<()>;
    async fn get_owner_password(&self, wallet: WalletAddressId) -> StoreResult<Option<String>>;

    // Ledger.

    /// Moves `amount` into (`deposit`) or out of a wallet address's
    /// account, once per idempotency key: a repeat with the same request
    /// digest returns the first result, a different one `KeyReused`.
    #[allow(clippy::too_many_arguments)]
    async fn ledger_move(
        &self,
        wallet: WalletAddressId,
        asset: &Asset,
        amount: u64,
        deposit: bool,
        idempotency_key: &str,
        request_digest: &str,
        at: Timestamp,
    ) -> StoreResult<payments::LedgerOutcome>;
    async fn ledger_accounts(&self) -> StoreResult<Vec<payments::AccountRow>>;
    /// The newest transfers in or out of an account.
    async fn ledger_transfers_of(
        &self,
        account: &str,
        limit: i64,
    ) -> StoreResult<Vec<payments::TransferRow>>;
    async fn ledger_all_transfers(&self) -> StoreResult<Vec<payments::TransferRow>>;

    // Outgoing payments.

    /// Stores a payment, reserving its amounts against the grant's limits
    /// and (state `sending`) funding it from the wallet address's balance,
    /// all or nothing.
    async fn create_outgoing_payment(
        &self,
        payment: &payments::OutgoingPaymentRecord,
        grant: Option<&payments::GrantReservation>,
        events: &[payments::WebhookEventRecord],
    ) -> StoreResult<payments::CreateOutgoing>;
    async fn get_outgoing_payment(
        &self,
        id: OutgoingPaymentId,
    ) -> StoreResult<Option<payments::OutgoingPaymentRecord>>;
    async fn list_outgoing_payments(
        &self,
        wallet: WalletAddressId,
        client: Option<&str>,
        page: &PageRequest,
    ) -> StoreResult<Page<payments::OutgoingPaymentRecord>>;
    /// Takes the next payment due for sending and leases it for `lease_ms`
    /// (a worker that dies lets it come back after that); several workers
    /// never take the same one at once.
    async fn claim_due_outgoing_payment(
        &self,
        now: Timestamp,
        lease_ms: i64,
    ) -> StoreResult<Option<payments::OutgoingPaymentRecord>>;
    /// Applies a local delivery; `false` (nothing changed) when the payment
    /// is no longer sending or the receiver changed since the plan.
    async fn deliver_locally(&self, delivery: &payments::LocalDelivery) -> StoreResult<bool>;
    /// Fails or cancels a payment still funding or sending, refunds what it
    /// holds and releases its grant reservation; `false` when it is not.
    async fn fail_outgoing_payment(&self, failure: &payments::PaymentFailure) -> StoreResult<bool>;
    async fn grant_spent(
        &self,
        grant: &str,
        interval_start: Timestamp,
    ) -> StoreResult<Option<payments::GrantSpent>>;

    /// Funds a payment waiting in `funding` from outside (the settlement
    /// account) and lets it be sent; `false` when it is not waiting.
    async fn fund_outgoing_payment(
        &self,
        id: OutgoingPaymentId,
        at: Timestamp,
        events: &[payments::WebhookEventRecord],
    ) -> StoreResult<bool>;
    /// Payments still waiting for funds whose quote expired.
    async fn unfunded_expired_outgoing_payments(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Vec<OutgoingPaymentId>>;

    // Webhooks and incoming payment expiry.

    async fn insert_webhook_events(
        &self,
        events: &[payments::WebhookEventRecord],
    ) -> StoreResult<()>;
    async fn due_webhook_events(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> StoreResult<Vec<payments::WebhookEventRecord>>;
    /// Records a delivery attempt: delivered, or to retry at `next_attempt_at`.
    async fn webhook_attempted(
        &self,
        id: &str,
        delivered_at: Option<Timestamp>,
        next_attempt_at: Timestamp,
        error: Option<&str>,
    ) -> StoreResult<()>;
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
        event: &payments::WebhookEventRecord,
    ) -> StoreResult<bool>;

    /// Checks the database answers (for health checks).
    async fn ping(&self) -> StoreResult<()>;
}

/// The storage backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// How to open the database.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// `sqlite://path`, `sqlite::memory:` or `postgres://...`.
    pub url: String,
    /// Create the SQLite file when it does not exist. Only the default
    /// database in the data directory sets this, so a mistyped explicit
    /// path is an error instead of a new empty database.
    pub create_sqlite_file: bool,
    /// Apply pending PostgreSQL migrations at start (SQLite always does).
    pub migrate_postgres: bool,
    /// Connections in the (reader) pool.
    pub max_connections: u32,
    /// Take the SQLite database for this process alone (`opd serve`): a
    /// second process asking for it is refused, which lets the store cache
    /// what it writes. Read-only tools (`opd check`) leave it unset.
    pub exclusive_sqlite: bool,
}

impl ConnectOptions {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            create_sqlite_file: false,
            migrate_postgres: false,
            max_connections: 16,
            exclusive_sqlite: false,
        }
    }
}

/// Which backend a database URL names, or why it names none.
pub fn backend_of(url: &str) -> StoreResult<Backend> {
    if url.starts_with("sqlite:") {
        Ok(Backend::Sqlite)
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Backend::Postgres)
    } else {
        let scheme = url.split(':').next().unwrap_or_default();
        Err(StoreError::Config(format!(
            "unsupported database URL scheme {scheme:?}: use sqlite://PATH or postgres://USER@HOST/DB"
        )))
    }
}

/// Opens the database the URL names, checks or applies its migrations, and
/// returns it as a shared store.
pub async fn connect(options: &ConnectOptions) -> StoreResult<Arc<dyn Store>> {
    match backend_of(&options.url)? {
        Backend::Sqlite => Ok(Arc::new(sqlite::SqliteStore::connect(options).await?)),
        Backend::Postgres => Ok(Arc::new(postgres::PgStore::connect(options).await?)),
    }
}

/// Applies pending migrations to the database the URL names (`opd migrate`).
pub async fn migrate(url: &str) -> StoreResult<()> {
    match backend_of(url)? {
        Backend::Sqlite => {
            let mut options = ConnectOptions::new(url);
            options.create_sqlite_file = true;
            sqlite::SqliteStore::connect(&options).await.map(|_| ())
        }
        Backend::Postgres => postgres::PgStore::migrate_url(url).await,
    }
}
