//! The PostgreSQL schema's migrations (`opd migrate`, or `--migrate` at
//! start).
//!
//! The record is the `_sqlx_migrations` table, kept exactly as sqlx kept it
//! when it ran these (same columns, same SHA-384 checksums), so databases
//! migrated by earlier opd builds carry on as they are. An advisory lock
//! makes nodes that migrate at the same moment take turns; each migration
//! runs in one transaction with its record, so none is ever applied twice
//! or half.

use tokio_postgres::Client;

use crate::platform::migrations::{check_applied, checksum, failed, migrations_of, Migration};
use crate::StoreResult;

/// Every migration, in order.
static MIGRATIONS: &[Migration] = migrations_of!("postgres");

/// The latest migration this binary has.
pub(crate) fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

const RECORD: &str = "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMPTZ NOT NULL DEFAULT now(),
    success BOOLEAN NOT NULL,
    checksum BYTEA NOT NULL,
    execution_time BIGINT NOT NULL
)";

/// The advisory lock migrating nodes take turns on.
const LOCK: i64 = 0x6f70_645f_6d69_6772; // "opd_migr"

/// Applies every migration the database lacks, under the advisory lock.
/// Refuses a database whose applied migrations differ from this binary's
/// (edited, or made by a newer opd) or that a failed migration left behind.
pub(crate) async fn run(client: &mut Client) -> StoreResult<()> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK])
        .await
        .map_err(failed)?;
    let result = apply(client).await;
    // Released whatever happened (the session's end would release it too).
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK])
        .await;
    result
}

async fn apply(client: &mut Client) -> StoreResult<()> {
    client.batch_execute(RECORD).await.map_err(failed)?;
    let applied: Vec<(i64, bool, Vec<u8>)> = client
        .query(
            "SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version",
            &[],
        )
        .await
        .map_err(failed)?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    check_applied(MIGRATIONS, &applied)?;
    for m in MIGRATIONS {
        if applied.iter().any(|(v, _, _)| *v == m.version) {
            continue;
        }
        let started = std::time::Instant::now();
        let tx = client.transaction().await.map_err(failed)?;
        tx.batch_execute(m.sql)
            .await
            .map_err(|e| failed(format!("migration {}: {e}", m.version)))?;
        let took = i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX);
        tx.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ($1, $2, TRUE, $3, $4)",
            &[&m.version, &m.description, &checksum(m.sql), &took],
        )
        .await
        .map_err(failed)?;
        tx.commit().await.map_err(failed)?;
        tracing::info!(
            version = m.version,
            description = m.description,
            "PostgreSQL migration applied"
        );
    }
    Ok(())
}

/// The latest migration applied, or `None` when there is no record.
pub(crate) async fn applied(client: &Client) -> StoreResult<Option<i64>> {
    let exists: bool = client
        .query_one("SELECT to_regclass('_sqlx_migrations') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        return Ok(None);
    }
    Ok(client
        .query_one(
            "SELECT max(version) FROM _sqlx_migrations WHERE success",
            &[],
        )
        .await?
        .get(0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_list_is_the_folder() {
        crate::platform::migrations::tests::the_list_is_the_folder("postgres", super::MIGRATIONS);
    }
}
