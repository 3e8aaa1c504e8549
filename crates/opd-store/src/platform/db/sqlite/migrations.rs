//! The SQLite schema's migrations, applied at start on a connection of
//! their own before the driver's pools open.
//!
//! The record is the `_sqlx_migrations` table, kept exactly as sqlx keeps
//! it when it ran them (PostgreSQL's record is the same): databases made by
//! earlier opd builds carry on as they are, the readiness check reads the
//! same table on both backends, and an earlier build accepts a database
//! this one migrated. Each migration runs in one transaction with its
//! record, so none is ever applied twice or half.

use rusqlite::Connection;

use crate::platform::migrations::{check_applied, checksum, failed, migrations_of, Migration};
use crate::StoreResult;

/// Every migration, in order.
static MIGRATIONS: &[Migration] = migrations_of!("sqlite");

/// The latest migration this binary has.
pub(crate) fn latest() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
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
///
/// Foreign keys are off while migrations run, as SQLite asks for a table
/// rebuilt under the same name (its documented twelve steps); each
/// migration checks them itself before it commits, so none can leave a
/// dangling reference.
pub(crate) fn run(conn: &mut Connection) -> StoreResult<()> {
    conn.pragma_update(None, "foreign_keys", "OFF")
        .map_err(failed)?;
    let result = run_these(conn, MIGRATIONS);
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(failed)?;
    result
}

fn run_these(conn: &mut Connection, migrations: &[Migration]) -> StoreResult<()> {
    conn.execute_batch(RECORD).map_err(failed)?;
    let applied: Vec<(i64, bool, Vec<u8>)> = conn
        .prepare("SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<_, _>>()
        })
        .map_err(failed)?;
    check_applied(migrations, &applied)?;
    for m in migrations {
        if applied.iter().any(|(v, _, _)| *v == m.version) {
            continue;
        }
        let started = std::time::Instant::now();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(failed)?;
        tx.execute_batch(m.sql)
            .map_err(|e| failed(format!("migration {}: {e}", m.version)))?;
        let dangling: i64 = tx
            .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
                r.get(0)
            })
            .map_err(failed)?;
        if dangling > 0 {
            return Err(failed(format!(
                "migration {}: {dangling} rows would reference rows that do not exist",
                m.version
            )));
        }
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
        // Each migration's pages go back into the database file at once:
        // a first start does not pile every migration up in the WAL (a disk
        // with room for the database alone would refuse the last ones).
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(failed)?;
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

    #[test]
    fn the_list_is_the_folder() {
        crate::platform::migrations::tests::the_list_is_the_folder("sqlite", MIGRATIONS);
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

    /// A database the release before tenants made (migrations 1 to 14,
    /// byte for byte what it ran) with a wallet address, its key, owner
    /// login, an incoming payment and a grant migrates into the operator's
    /// tenant with nothing lost, and another tenant may then use the same
    /// path.
    #[test]
    fn a_database_from_before_tenants_moves_into_the_operator_s_tenant() {
        let (_dir, mut conn) = open();
        conn.pragma_update(None, "foreign_keys", "ON").unwrap();
        let before = MIGRATIONS
            .iter()
            .position(|m| m.description == "tenants")
            .unwrap();
        run_these(&mut conn, &MIGRATIONS[..before]).unwrap();
        conn.execute_batch(
            "INSERT INTO wallet_addresses (id, path, asset_code, asset_scale, public_name, created_at, deactivated_at) \
               VALUES ('0190a000-0000-7000-8000-000000000001', 'alice', 'USD', 2, 'Alice', 1, NULL), \
                      ('0190a000-0000-7000-8000-000000000002', 'bob', 'EUR', 2, NULL, 2, 3);
             INSERT INTO wallet_address_keys (wallet_address_id, kid, x, created_at) \
               VALUES ('0190a000-0000-7000-8000-000000000001', 'k1', 'xx', 1);
             INSERT INTO wallet_owner_logins (wallet_address_id, password_hash, updated_at) \
               VALUES ('0190a000-0000-7000-8000-000000000001', 'hash', 1);
             INSERT INTO incoming_payments (id, wallet_address_id, asset_code, asset_scale, received_amount, expires_at, created_at, updated_at) \
               VALUES ('0190a000-0000-7000-8000-0000000000a1', '0190a000-0000-7000-8000-000000000001', 'USD', 2, '18446744073709551615', 9, 1, 1);
             INSERT INTO fees (asset_code, asset_scale, fixed, basis_points, updated_at) VALUES ('USD', 2, '30', 100, 1);",
        )
        .unwrap();
        run(&mut conn).unwrap();

        type WalletRow = (String, String, String, Option<String>, Option<i64>);
        let wallets: Vec<WalletRow> = conn
            .prepare("SELECT id, tenant_id, path, public_name, deactivated_at FROM wallet_addresses ORDER BY path")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            wallets,
            [
                (
                    "0190a000-0000-7000-8000-000000000001".into(),
                    "default".into(),
                    "alice".into(),
                    Some("Alice".into()),
                    None
                ),
                (
                    "0190a000-0000-7000-8000-000000000002".into(),
                    "default".into(),
                    "bob".into(),
                    None,
                    Some(3)
                ),
            ]
        );
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(count("SELECT COUNT(*) FROM wallet_address_keys"), 1);
        assert_eq!(count("SELECT COUNT(*) FROM wallet_owner_logins"), 1);
        let received: String = conn
            .query_row("SELECT received_amount FROM incoming_payments", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(received, "18446744073709551615");
        assert_eq!(count("SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
        assert_eq!(
            count("SELECT COUNT(*) FROM fees WHERE tenant_id = 'default' AND fixed = '30' AND basis_points = 100"),
            1
        );
        assert_eq!(
            count("SELECT COUNT(*) FROM tenants WHERE id = 'default'"),
            1
        );

        // References still hold: a key of a wallet address that does not
        // exist is refused, and a second tenant may have its own alice.
        assert!(conn
            .execute("INSERT INTO wallet_address_keys (wallet_address_id, kid, x, created_at) VALUES ('nope', 'k', 'x', 1)", [])
            .is_err());
        conn.execute_batch(
            "INSERT INTO tenants (id, public_name, public_url, created_at, updated_at) VALUES ('a', 'A', 'https://a.example', 1, 1);
             INSERT INTO wallet_addresses (id, tenant_id, path, asset_code, asset_scale, created_at) \
               VALUES ('0190a000-0000-7000-8000-000000000003', 'a', 'alice', 'USD', 2, 1);",
        )
        .unwrap();
        assert!(conn
            .execute("INSERT INTO wallet_addresses (id, tenant_id, path, asset_code, asset_scale, created_at) VALUES ('0190a000-0000-7000-8000-000000000004', 'a', 'alice', 'USD', 2, 1)", [])
            .is_err());
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
        // Every migration once (versions may skip a number: another
        // branch's migration may be merged under it later).
        assert_eq!(count, i64::try_from(MIGRATIONS.len()).unwrap());
        assert_eq!(latest(), MIGRATIONS.last().unwrap().version);

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
