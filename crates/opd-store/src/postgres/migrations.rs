//! The PostgreSQL schema's migrations (`opd migrate`, or `--migrate` at
//! start).
//!
//! The record is the `_sqlx_migrations` table, kept exactly as sqlx kept it
//! when it ran these (same columns, same SHA-384 checksums), so databases
//! migrated by earlier opd builds carry on as they are. An advisory lock
//! makes nodes that migrate at the same moment take turns; each migration
//! runs in one transaction with its record, so none is ever applied twice
//! or half.

use sha2::{Digest as _, Sha384};
use tokio_postgres::Client;

use crate::{StoreError, StoreResult};

/// A migration: its version, its description (the file name's words) and
/// its SQL.
struct Migration {
    version: i64,
    description: &'static str,
    sql: &'static str,
}

macro_rules! migration {
    ($version:literal, $description:literal, $file:literal) => {
        Migration {
            version: $version,
            description: $description,
            sql: include_str!(concat!("../../migrations/postgres/", $file)),
        }
    };
}

/// Every migration, in order; a test checks this list against the folder.
static MIGRATIONS: &[Migration] = &[
    migration!(1, "init", "0001_init.sql"),
    migration!(2, "gnap", "0002_gnap.sql"),
    migration!(3, "payments", "0003_payments.sql"),
    migration!(4, "signed requests", "0004_signed_requests.sql"),
    migration!(5, "peers", "0005_peers.sql"),
    migration!(6, "ilp holds", "0006_ilp_holds.sql"),
    migration!(7, "grants by client", "0007_grants_by_client.sql"),
    migration!(8, "incoming by client", "0008_incoming_by_client.sql"),
    migration!(9, "payment packets", "0009_payment_packets.sql"),
    migration!(10, "dashboard sessions", "0010_dashboard_sessions.sql"),
    migration!(11, "auto peering", "0011_auto_peering.sql"),
];

/// The latest migration this binary has.
pub(crate) fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

fn checksum(sql: &str) -> Vec<u8> {
    Sha384::digest(sql.as_bytes()).to_vec()
}

fn failed(e: impl std::fmt::Display) -> StoreError {
    StoreError::Migration(format!("migration failed: {e}"))
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
    for (version, success, sum) in &applied {
        if !success {
            return Err(failed(format!(
                "migration {version} failed earlier; restore a backup"
            )));
        }
        match MIGRATIONS.iter().find(|m| m.version == *version) {
            None => {
                return Err(failed(format!(
                    "the database has migration {version}, which this opd does not know (a newer opd made it)"
                )))
            }
            Some(m) if checksum(m.sql) != *sum => {
                return Err(failed(format!(
                    "migration {version} differs from the one applied to the database"
                )))
            }
            Some(_) => {}
        }
    }
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
    use super::*;

    /// The list names every file of the folder, in order, with the
    /// description sqlx derived from its name.
    #[test]
    fn the_list_is_the_folder() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        assert_eq!(files.len(), MIGRATIONS.len(), "{files:?}");
        for (file, m) in files.iter().zip(MIGRATIONS) {
            let (version, rest) = file.split_once('_').unwrap();
            assert_eq!(version.parse::<i64>().unwrap(), m.version, "{file}");
            assert_eq!(
                rest.trim_end_matches(".sql").replace('_', " "),
                m.description
            );
            let sql = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
            assert_eq!(sql, m.sql, "{file}");
        }
    }
}
