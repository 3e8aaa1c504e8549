#![doc = include_str!("../README.md")]

pub(crate) mod access;
pub(crate) mod grants;
pub(crate) mod interledger;
pub(crate) mod ledger;
pub(crate) mod operator;
pub(crate) mod payments;
pub(crate) mod platform;
pub(crate) mod tenants;
pub(crate) mod wallets;

pub use access::claim::{self, RequestClaim};
pub use platform::db::{postgres, sqlite};

use std::sync::Arc;

use async_trait::async_trait;

pub use access::replays::{FinishedRequest, ReplayStore, StoredRequest};
pub use grants::owners::OwnerStore;
pub use grants::{AccessTokenRecord, GrantRecord, GrantStore};
pub use interledger::holds::{HoldOutcome, HoldStore};
pub use interledger::peers::{AutoPeerOutcome, AutoPeeringLimits, PeerStore};
pub use ledger::LedgerStore;
pub use operator::{OperatorStore, OutboxEntry, PaymentFilter};
pub use payments::credits::rounds::{CreditRounds, RoundEnd};
pub use payments::credits::{CreditStore, CreditTo, IlpCredit, IlpReceive, IlpRound, SpspWallet};
pub use payments::incoming::IncomingPaymentStore;
pub use payments::outgoing::packets::{PacketRecord, PacketState, PacketStore, PaymentPacket};
pub use payments::outgoing::{Delivered, OutgoingPaymentStore};
pub use payments::quotes::QuoteStore;
pub use payments::receipts::ReceiptStore;
pub use payments::spsp::{SpspReport, SpspStore, SpspTotals};
pub use platform::changes::{ChangeFeed, Heard};
pub use platform::error::StoreError;
pub use platform::facts::{Fact, Uncommitted};
pub use platform::faults::Faults;
pub use platform::outbox::OutboxStore;
pub use platform::retention::{Pruned, RetentionStore, PRUNE_BATCH};
pub use platform::settings::{FeeRow, RateRow, SettingsStore};
pub use tenants::{TenantDeletion, TenantSecret, TenantStore};
pub use wallets::WalletStore;

/// The result of every store operation.
pub type StoreResult<T> = Result<T, StoreError>;

/// Everything opd persists, one trait per area; each method is one
/// transaction. Callers that need several areas take `dyn Store`.
#[async_trait]
pub trait Store:
    SettingsStore
    + TenantStore
    + WalletStore
    + IncomingPaymentStore
    + QuoteStore
    + GrantStore
    + LedgerStore
    + ReceiptStore
    + SpspStore
    + OutgoingPaymentStore
    + CreditStore
    + OutboxStore
    + ReplayStore
    + PeerStore
    + HoldStore
    + PacketStore
    + RetentionStore
    + OperatorStore
    + OwnerStore
    + Send
    + Sync
    + 'static
{
    /// Which backend this is, for logs and errors.
    fn backend(&self) -> Backend;

    /// SQL round trips made so far (statements, begins and commits): what
    /// an operation costs on PostgreSQL, where each is a network exchange.
    fn round_trips(&self) -> u64;

    /// Checks the database answers (for health checks).
    async fn ping(&self) -> StoreResult<()>;

    /// Whether the database answers and its schema has every migration
    /// this binary knows (`/readyz`). An error means it did not answer.
    async fn readiness(&self) -> StoreResult<Readiness>;

    /// The connections of each pool, now (for metrics; no I/O).
    fn pool_stats(&self) -> Vec<PoolStats>;

    /// Tells every node sharing the database that `topic` changed, after
    /// the change committed (PostgreSQL `NOTIFY`; nothing on SQLite, which
    /// has one node).
    async fn announce_change(&self, topic: &str) -> StoreResult<()>;

    /// The changes every node announces; `None` when this is the only node
    /// (SQLite).
    async fn listen_changes(&self) -> StoreResult<Option<ChangeFeed>>;
}

/// The store of both backends: the same SQL (see `platform::db`) over
/// PostgreSQL or SQLite connections.
#[derive(Debug)]
pub struct SqlStore {
    db: platform::db::Db,
    /// Outgoing payments read back without SQL; enabled only when this
    /// process is the database's only writer (SQLite served exclusively).
    payments_cache: payments::outgoing::read_cache::PaymentReadCache,
    /// The lock that makes a SQLite database this process's own, held while
    /// the store lives; the operating system releases it when the process
    /// dies.
    _exclusive_lock: Option<std::fs::File>,
}

impl SqlStore {
    fn new(pools: platform::db::Pools, exclusive_lock: Option<std::fs::File>) -> Self {
        let cache = matches!(pools, platform::db::Pools::Sqlite { .. }) && exclusive_lock.is_some();
        Self {
            db: platform::db::Db::new(pools),
            payments_cache: payments::outgoing::read_cache::PaymentReadCache::new(cache),
            _exclusive_lock: exclusive_lock,
        }
    }

    /// Fails statements as `faults` decides from now on (the simulation
    /// test; see [`Faults`]).
    pub fn inject_faults(&mut self, faults: Arc<Faults>) {
        self.db.inject_faults(faults);
    }

    /// Waits until every PostgreSQL connection is back in its pool. A
    /// transaction dropped without a commit (an error mid-way) is rolled
    /// back in a task of its own before its connection returns to the
    /// pool; until then its row locks stand, and a worker's `SKIP
    /// LOCKED` claim passes over the rows (a worker takes them at its next
    /// poll). Tests that must see every such rollback done call this;
    /// SQLite rolls back at once. Gives up after five seconds.
    pub async fn connections_returned(&self) {
        if let platform::db::Pools::Postgres(pg) = &self.db.pools {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            let busy = || {
                let status = pg.pool.status();
                status.available < status.size
            };
            while busy() && std::time::Instant::now() < deadline {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
    }

    /// Table name -> sorted column names, for the migration parity test.
    pub async fn schema_columns(&self) -> StoreResult<Vec<(String, Vec<String>)>> {
        match &self.db.pools {
            platform::db::Pools::Sqlite { reader, .. } => sqlite::schema_columns(reader),
            platform::db::Pools::Postgres(pg) => postgres::schema_columns(pg).await,
        }
    }

    /// Compiles every statement the store sends, without running any: a
    /// statement that does not parse on this backend fails here, not on
    /// the first request that reaches it. Returns how many were checked.
    pub async fn prepare_all_statements(&self) -> StoreResult<usize> {
        let all = all_statements(self.db.backend());
        for stmt in &all {
            self.db.prepare(stmt).await.map_err(|e| {
                StoreError::Config(format!(
                    "statement does not compile on {:?}: {e}\n{}",
                    self.db.backend(),
                    stmt.sql(self.db.backend())
                ))
            })?;
        }
        Ok(all.len())
    }

    /// SQLite's query plan of every statement the store sends: each
    /// statement's SQL with the plan's lines that read a whole table
    /// (`SCAN ...`), for the test that keeps such scans off the growing
    /// tables. Empty on PostgreSQL.
    pub fn sqlite_scans(&self) -> StoreResult<Vec<(String, Vec<String>)>> {
        let platform::db::Pools::Sqlite { reader, .. } = &self.db.pools else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for stmt in all_statements(Backend::Sqlite) {
            let sql = stmt.sql(Backend::Sqlite);
            let mut scans = reader.query_plan(sql)?;
            scans.retain(|detail| detail.starts_with("SCAN "));
            out.push((sql.to_owned(), scans));
        }
        Ok(out)
    }
}

/// Every statement the store sends on `backend`: each area's, gathered by
/// the area itself.
fn all_statements(backend: Backend) -> Vec<&'static platform::db::Stmt> {
    [
        platform::statements(backend),
        ledger::statements(backend),
        wallets::STATEMENTS.to_vec(),
        tenants::STATEMENTS.to_vec(),
        grants::STATEMENTS.to_vec(),
        grants::owners::STATEMENTS.to_vec(),
        access::statements(),
        interledger::statements(),
        payments::statements(backend),
        operator::STATEMENTS.to_vec(),
    ]
    .concat()
}

static PING: platform::db::Stmt = platform::db::Stmt::new(&["SELECT 1"]);
/// The latest migration applied (sqlx's table, on both backends).
static APPLIED_MIGRATION: platform::db::Stmt =
    platform::db::Stmt::new(&["SELECT max(version) AS v FROM _sqlx_migrations WHERE success"]);

#[async_trait]
impl Store for SqlStore {
    fn backend(&self) -> Backend {
        self.db.backend()
    }

    fn round_trips(&self) -> u64 {
        self.db.round_trips()
    }

    async fn ping(&self) -> StoreResult<()> {
        self.db.read(&PING, &[]).await?;
        Ok(())
    }

    async fn readiness(&self) -> StoreResult<Readiness> {
        let latest = match self.db.backend() {
            Backend::Sqlite => sqlite::latest_migration(),
            Backend::Postgres => postgres::latest_migration(),
        };
        let applied = match self.db.read(&APPLIED_MIGRATION, &[]).await {
            Ok(rows) => match rows.first() {
                Some(row) => platform::rows::Columns::opt_int(row, "v")?,
                None => None,
            },
            // The database answered, but has no migrations table: it was
            // never migrated.
            Err(StoreError::Database(_) | StoreError::Sqlite(_)) => None,
            Err(e) => return Err(e),
        };
        Ok(match applied {
            Some(v) if v >= latest => Readiness::Ready,
            _ => Readiness::MigrationsPending { applied, latest },
        })
    }

    fn pool_stats(&self) -> Vec<PoolStats> {
        self.db.pool_stats()
    }

    async fn announce_change(&self, topic: &str) -> StoreResult<()> {
        self.announce(topic).await
    }

    async fn listen_changes(&self) -> StoreResult<Option<ChangeFeed>> {
        self.listen().await
    }
}

/// What [`Store::readiness`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// The schema lacks migrations this binary needs (`applied` is the
    /// latest one applied, `None` when none is).
    MigrationsPending {
        applied: Option<i64>,
        latest: i64,
    },
}

/// The connections of one pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolStats {
    /// `postgres`, `sqlite_read` or `sqlite_write`.
    pub name: &'static str,
    pub idle: u64,
    pub used: u64,
    /// The most connections it opens, where it has a bound (SQLite
    /// readers open one per concurrent read, keeping `max_connections`).
    pub max: Option<u64>,
    /// Callers waiting for a connection, where the pool knows it.
    pub pending: Option<u64>,
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
    Ok(Arc::new(open(options).await?))
}

/// Opens the database the URL names, as the concrete store.
pub async fn open(options: &ConnectOptions) -> StoreResult<SqlStore> {
    match backend_of(&options.url)? {
        Backend::Sqlite => sqlite::connect(options).await,
        Backend::Postgres => postgres::connect(options).await,
    }
}

/// Applies pending migrations to the database the URL names (`opd migrate`).
pub async fn migrate(url: &str) -> StoreResult<()> {
    match backend_of(url)? {
        Backend::Sqlite => {
            let mut options = ConnectOptions::new(url);
            options.create_sqlite_file = true;
            sqlite::connect(&options).await.map(|_| ())
        }
        Backend::Postgres => postgres::migrate_url(url).await,
    }
}
