//! The PostgreSQL store, for several opd nodes sharing one database.
//!
//! Amounts are `NUMERIC(20,0)`: bound as text and cast in SQL, read back
//! as text, so no value ever passes through a float or a signed integer.

use std::str::FromStr;
use std::time::Duration;

use opd_core::incoming_payment::IncomingPayment;
use opd_core::pagination::{Page, PageRequest};
use opd_core::quote::Quote;
use opd_core::wallet_address::{WalletAddress, WalletAddressKey, WalletAddressPath};
use opd_core::{
    Asset, AssetCode, Fee, GrantId, IncomingPaymentId, QuoteId, Rate, Timestamp, WalletAddressId,
};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::Row;

use crate::rows::{
    self, corrupt, grant_from_row, incoming_from_row, key_from_row, quote_from_row, token_from_row,
    wallet_from_row,
};
use crate::{
    AccessTokenRecord, ConnectOptions, FeeRow, GrantRecord, RateRow, StoreError, StoreResult,
};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The PostgreSQL store.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    /// Disabled: other nodes write the same database.
    payments_cache: std::sync::Arc<crate::payments::PaymentReadCache>,
}

fn connect_options(url: &str) -> StoreResult<PgConnectOptions> {
    PgConnectOptions::from_str(url)
        .map_err(|e| StoreError::Config(format!("invalid PostgreSQL URL: {e}")))
}

impl PgStore {
    pub async fn connect(options: &ConnectOptions) -> StoreResult<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(2))
            .acquire_timeout(Duration::from_secs(30))
            // No ping before each use of a pooled connection: sqlx already
            // tests each one when it goes back to the pool (and drops it if
            // broken), so a second test on the way out only added a round
            // trip to every query.
            .test_before_acquire(false)
            .connect_with(connect_options(&options.url)?)
            .await
            .map_err(|e| StoreError::Config(format!("cannot connect to PostgreSQL: {e}")))?;
        if options.migrate_postgres {
            MIGRATOR.run(&pool).await?;
        } else {
            Self::check_migrated(&pool).await?;
        }
        Ok(Self {
            pool,
            payments_cache: std::sync::Arc::new(crate::payments::PaymentReadCache::new(false)),
        })
    }

    /// `opd migrate`: applies pending migrations (an advisory lock makes
    /// concurrent runs from several nodes safe).
    pub async fn migrate_url(url: &str) -> StoreResult<()> {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_with(connect_options(url)?)
            .await
            .map_err(|e| StoreError::Config(format!("cannot connect to PostgreSQL: {e}")))?;
        MIGRATOR.run(&pool).await?;
        pool.close().await;
        Ok(())
    }

    async fn check_migrated(pool: &PgPool) -> StoreResult<()> {
        let latest = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
        let applied: Option<i64> =
            sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success")
                .fetch_one(pool)
                .await
                .unwrap_or(None);
        match applied {
            Some(v) if v >= latest => Ok(()),
            _ => Err(StoreError::Migration(
                "the PostgreSQL schema is not up to date: run `opd migrate` (or start with --migrate)".into(),
            )),
        }
    }

    /// Table name -> sorted column names, for the migration parity test.
    pub async fn schema_columns(&self) -> StoreResult<Vec<(String, Vec<String>)>> {
        let rows = sqlx::query(
            "SELECT table_name::text AS t, column_name::text AS c FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name NOT LIKE '\\_sqlx%'
             ORDER BY table_name, column_name",
        )
        .fetch_all(&self.pool)
        .await?;
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for row in rows {
            let t: String = row.try_get("t")?;
            let c: String = row.try_get("c")?;
            match out.last_mut() {
                Some((last, cols)) if *last == t => cols.push(c),
                _ => out.push((t, vec![c])),
            }
        }
        Ok(out)
    }
}

/// The ledger, outgoing payments, the webhook outbox and the authorization
/// server's records (`crate::payments`), written once for both backends.
mod payments_backend {
    use super::*;

    /// The driver calls `payments_impl!` makes, served by sqlx.
    mod db {
        pub use sqlx::{query, query_scalar};
        pub type Tx<'c> = sqlx::Transaction<'c, sqlx::Postgres>;
        pub type Row = sqlx::postgres::PgRow;
        pub type ReadPool = sqlx::PgPool;

        pub fn is_unique_violation(e: &sqlx::Error) -> bool {
            matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
        }
    }

    crate::payments::payments_impl!(PgStore, pool, pool, true, crate::Backend::Postgres);
}
