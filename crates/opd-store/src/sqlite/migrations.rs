//! The SQLite schema's migrations, applied at start on a connection of
//! their own before the driver's pools open.
//!
//! The record is the `_sqlx_migrations` table, kept exactly as sqlx keeps
//! it when it ran them (PostgreSQL's record is the same): databases made by
//! earlier opd builds carry on as they are, the readiness check reads the
//! same table on both backends, and an earlier build accepts a database
//! this one migrated. Each migration runs in one transaction with its
//! record, so none is ever applied twice or half.

use rusqlite::{Connection, OptionalExtension as _};
use sha2::{Digest as _, Sha384};

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
            sql: include_str!(concat!("../../migrations/sqlite/", $file)),
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
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
)";

/// Applies every migration `conn`'s database lacks. Refuses a database
/// whose applied migrations differ from this binary's (edited, or made by
/// a newer opd) or that a failed migration left behind.
pub(crate) fn run(conn: &mut Connection) -> StoreResult<()> {
    conn.execute_batch(RECORD).map_err(failed)?;
    let dirty: Option<i64> = conn
        .query_row(
            "SELECT version FROM _sqlx_migrations WHERE NOT success ORDER BY version LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(failed)?;
    if let Some(v) = dirty {
        return Err(failed(format!(
            "migration {v} failed earlier; restore a backup"
        )));
    }
    let applied: Vec<(i64, Vec<u8>)> = conn
        .prepare("SELECT version, checksum FROM _sqlx_migrations ORDER BY version")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()
        })
        .map_err(failed)?;
    for (version, sum) in &applied {
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
        if applied.iter().any(|(v, _)| *v == m.version) {
            continue;
        }
        let started = std::time::Instant::now();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(failed)?;
        tx.execute_batch(m.sql)
            .map_err(|e| failed(format!("migration {}: {e}", m.version)))?;
        tx.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (?1, ?2, TRUE, ?3, ?4)",
            rusqlite::params![
                m.version,
                m.description,
                checksum(m.sql),
                i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX)
            ],
        )
        .map_err(failed)?;
        tx.commit().map_err(failed)?;
        tracing::info!(
            version = m.version,
            description = m.description,
            "SQLite migration applied"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The list names every file of the folder, in order, with the
    /// description sqlx would derive from its name.
    #[test]
    fn the_list_is_the_folder() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite");
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

    /// The checksum sqlx recorded for the first migration in a database an
    /// earlier opd made (read from its `_sqlx_migrations`): databases made
    /// before and after agree.
    #[test]
    fn checksums_are_the_ones_sqlx_recorded() {
        let hex: String = checksum(MIGRATIONS[0].sql)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        assert_eq!(
            hex,
            "89E6D90525FFD59AB193E41164471E95F688D7EFE1442455E83C40FF6DC750880E2F484C6B1104DC79E8554A386934AB"
        );
    }

    fn open() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("m.sqlite")).unwrap();
        (dir, conn)
    }

    #[test]
    fn migrates_once_and_refuses_what_it_does_not_know() {
        let (_dir, mut conn) = open();
        run(&mut conn).unwrap();
        run(&mut conn).unwrap();
        let count: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM _sqlx_migrations WHERE success",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(count, latest());

        // A migration edited after it was applied.
        conn.execute(
            "UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 2",
            [],
        )
        .unwrap();
        assert!(run(&mut conn).unwrap_err().to_string().contains("differs"));
        conn.execute(
            "UPDATE _sqlx_migrations SET checksum = ?1 WHERE version = 2",
            [checksum(MIGRATIONS[1].sql)],
        )
        .unwrap();
        // A database a newer opd migrated further.
        conn.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (9999, 'future', TRUE, x'00', 0)",
            [],
        )
        .unwrap();
        assert!(run(&mut conn)
            .unwrap_err()
            .to_string()
            .contains("newer opd"));
        conn.execute(
            "UPDATE _sqlx_migrations SET success = FALSE WHERE version = 9999",
            [],
        )
        .unwrap();
        assert!(run(&mut conn)
            .unwrap_err()
            .to_string()
            .contains("failed earlier"));
    }

    /// A migration that fails leaves neither its changes nor its record.
    #[test]
    fn a_failing_migration_is_not_recorded() {
        let (_dir, mut conn) = open();
        conn.execute_batch("CREATE TABLE wallet_addresses (x INTEGER)")
            .unwrap();
        assert!(run(&mut conn).is_err());
        let recorded: i64 = conn
            .query_row("SELECT COUNT(*) FROM _sqlx_migrations", [], |r| r.get(0))
            .unwrap();
        assert_eq!(recorded, 0);
    }
}
