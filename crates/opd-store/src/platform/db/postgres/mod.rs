//! Connecting to PostgreSQL, for several opd nodes sharing one database,
//! and its migrations.
//!
//! The URL may name several hosts (`postgres://opd@db1,db2/opd?
//! target_session_attrs=read-write`): each new connection goes to the one
//! that takes writes, so after a failover the nodes reconnect to the new
//! primary by themselves.
//!
//! Amounts are `NUMERIC(20,0)`: bound as text and cast in SQL, read back
//! as text, so no value ever passes through a float or a signed integer.

pub(crate) mod driver;
mod migrations;

use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

use crate::platform::db::Pools;
use crate::{ConnectOptions, SqlStore, StoreError, StoreResult};

pub(crate) use driver::Pg;

/// The latest migration this binary has.
pub(crate) fn latest_migration() -> i64 {
    migrations::latest()
}

fn config(url: &str) -> StoreResult<tokio_postgres::Config> {
    let mut config = tokio_postgres::Config::from_str(url)
        .map_err(|e| StoreError::Config(format!("invalid PostgreSQL URL: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    Ok(config)
}

/// How long opening one connection may take (per host of the URL).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a statement waits for a connection before the database is
/// reported unavailable (503 with `Retry-After`): long enough to ride out a
/// burst that takes every connection, short enough that clients are not
/// held for the whole request timeout.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection of its own, outside the pool (migrations, listening).
pub(crate) async fn open_connection(
    config: &tokio_postgres::Config,
) -> StoreResult<tokio_postgres::Client> {
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "PostgreSQL connection ended");
        }
    });
    Ok(client)
}

/// Opens the database (applying or checking its migrations).
pub async fn connect(options: &ConnectOptions) -> StoreResult<SqlStore> {
    let config = config(&options.url)?;
    let mut client = open_connection(&config)
        .await
        .map_err(|e| StoreError::Config(format!("cannot connect to PostgreSQL: {e}")))?;
    if options.migrate_postgres {
        migrations::run(&mut client).await?;
    } else {
        check_migrated(&client).await?;
    }
    drop(client);
    let manager = Manager::from_config(
        config.clone(),
        NoTls,
        // A connection handed out is checked only by whether it is closed:
        // a ping per use would be a round trip more on every statement. A
        // connection broken meanwhile fails its statement with 503, and
        // the pool drops it.
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let pool = Pool::builder(manager)
        .max_size(options.max_connections.max(2) as usize)
        .wait_timeout(Some(ACQUIRE_TIMEOUT))
        .create_timeout(Some(ACQUIRE_TIMEOUT))
        .recycle_timeout(Some(ACQUIRE_TIMEOUT))
        .runtime(Runtime::Tokio1)
        .build()
        .map_err(|e| StoreError::Config(format!("PostgreSQL pool: {e}")))?;
    // No read cache: other nodes write the same database.
    Ok(SqlStore::new(
        Pools::Postgres(Box::new(Pg { pool, config })),
        None,
    ))
}

/// `opd migrate`: applies pending migrations (an advisory lock makes
/// concurrent runs from several nodes safe).
pub async fn migrate_url(url: &str) -> StoreResult<()> {
    let mut client = open_connection(&config(url)?)
        .await
        .map_err(|e| StoreError::Config(format!("cannot connect to PostgreSQL: {e}")))?;
    migrations::run(&mut client).await
}

async fn check_migrated(client: &tokio_postgres::Client) -> StoreResult<()> {
    match migrations::applied(client).await? {
        Some(v) if v >= latest_migration() => Ok(()),
        _ => Err(StoreError::Migration(
            "the PostgreSQL schema is not up to date: run `opd migrate` (or start with --migrate)"
                .into(),
        )),
    }
}

/// Table name -> sorted column names, for the migration parity test.
pub(crate) async fn schema_columns(pg: &Pg) -> StoreResult<Vec<(String, Vec<String>)>> {
    let conn = driver::connection(&pg.pool).await?;
    let rows = conn
        .query(
            "SELECT table_name::text AS t, column_name::text AS c FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name NOT LIKE '\\_sqlx%'
                 ORDER BY table_name, column_name",
            &[],
        )
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
