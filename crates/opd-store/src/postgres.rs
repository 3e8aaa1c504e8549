//! Connecting to PostgreSQL, for several opd nodes sharing one database,
//! and its migrations.
//!
//! Amounts are `NUMERIC(20,0)`: bound as text and cast in SQL, read back
//! as text, so no value ever passes through a float or a signed integer.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::Row;

use crate::db::Pools;
use crate::{ConnectOptions, SqlStore, StoreError, StoreResult};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The latest migration this binary has.
pub(crate) fn latest_migration() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

fn connect_options(url: &str) -> StoreResult<PgConnectOptions> {
    PgConnectOptions::from_str(url)
        .map_err(|e| StoreError::Config(format!("invalid PostgreSQL URL: {e}")))
}

/// How long a statement waits for a connection before the database is
/// reported unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the database (applying or checking its migrations).
pub async fn connect(options: &ConnectOptions) -> StoreResult<SqlStore> {
    let pool = PgPoolOptions::new()
        .max_connections(options.max_connections.max(2))
        // While the database is down, sqlx keeps retrying a refused
        // connection until this deadline: it is how long a request waits
        // before it is answered 503 (with `Retry-After`). Long enough to
        // ride out a restart's first seconds or a burst that takes every
        // connection, short enough that clients are not held for the
        // whole request timeout.
        .acquire_timeout(ACQUIRE_TIMEOUT)
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
        check_migrated(&pool).await?;
    }
    // No read cache: other nodes write the same database.
    Ok(SqlStore::new(Pools::Postgres(pool), None))
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
    let latest = latest_migration();
    let applied: Option<i64> =
        match sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success")
            .fetch_one(pool)
            .await
        {
            Ok(v) => v,
            // No migrations table: never migrated.
            Err(sqlx::Error::Database(_)) => None,
            Err(e) => return Err(e.into()),
        };
    match applied {
        Some(v) if v >= latest => Ok(()),
        _ => Err(StoreError::Migration(
            "the PostgreSQL schema is not up to date: run `opd migrate` (or start with --migrate)"
                .into(),
        )),
    }
}

/// Table name -> sorted column names, for the migration parity test.
pub(crate) async fn schema_columns(pool: &PgPool) -> StoreResult<Vec<(String, Vec<String>)>> {
    let rows = sqlx::query(
        "SELECT table_name::text AS t, column_name::text AS c FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name NOT LIKE '\\_sqlx%'
             ORDER BY table_name, column_name",
    )
    .fetch_all(pool)
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
