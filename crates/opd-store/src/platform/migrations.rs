//! What the two backends' migrations share: the list of migrations (one
//! folder per backend, the same files by name), their record's checksums
//! (SHA-384 of the SQL, as sqlx recorded them when it ran these), and the
//! check of what a database says was applied.

use sha2::{Digest as _, Sha384};

use crate::{StoreError, StoreResult};

/// A migration: its version, its description (the file name's words) and
/// its SQL.
pub(crate) struct Migration {
    pub(crate) version: i64,
    pub(crate) description: &'static str,
    pub(crate) sql: &'static str,
}

/// Every migration of the backend folder `$folder`, in order; a test
/// checks each list against its folder.
macro_rules! migrations_of {
    ($folder:literal) => {
        &[
            $crate::platform::migrations::migration!($folder, 1, "init", "0001_init.sql"),
            $crate::platform::migrations::migration!($folder, 2, "gnap", "0002_gnap.sql"),
            $crate::platform::migrations::migration!($folder, 3, "payments", "0003_payments.sql"),
            $crate::platform::migrations::migration!(
                $folder,
                4,
                "signed requests",
                "0004_signed_requests.sql"
            ),
            $crate::platform::migrations::migration!($folder, 5, "peers", "0005_peers.sql"),
            $crate::platform::migrations::migration!($folder, 6, "ilp holds", "0006_ilp_holds.sql"),
            $crate::platform::migrations::migration!(
                $folder,
                7,
                "grants by client",
                "0007_grants_by_client.sql"
            ),
            $crate::platform::migrations::migration!(
                $folder,
                8,
                "incoming by client",
                "0008_incoming_by_client.sql"
            ),
            $crate::platform::migrations::migration!(
                $folder,
                9,
                "payment packets",
                "0009_payment_packets.sql"
            ),
            $crate::platform::migrations::migration!(
                $folder,
                10,
                "dashboard sessions",
                "0010_dashboard_sessions.sql"
            ),
            $crate::platform::migrations::migration!(
                $folder,
                11,
                "auto peering",
                "0011_auto_peering.sql"
            ),
            $crate::platform::migrations::migration!(
                $folder,
                12,
                "incoming expiring",
                "0012_incoming_expiring.sql"
            ),
            $crate::platform::migrations::migration!(
                $folder,
                13,
                "incoming by network",
                "0013_incoming_by_network.sql"
            ),
            $crate::platform::migrations::migration!(
                $folder,
                14,
                "owner login budget",
                "0014_owner_login_budget.sql"
            ),
            $crate::platform::migrations::migration!($folder, 15, "tenants", "0015_tenants.sql"),
            $crate::platform::migrations::migration!(
                $folder,
                16,
                "owner pages",
                "0016_owner_pages.sql"
            ),
            $crate::platform::migrations::migration!($folder, 17, "spsp", "0017_spsp.sql"),
            $crate::platform::migrations::migration!(
                $folder,
                18,
                "transfer keys",
                "0018_transfer_keys.sql"
            ),
        ]
    };
}

macro_rules! migration {
    ($folder:literal, $version:literal, $description:literal, $file:literal) => {
        $crate::platform::migrations::Migration {
            version: $version,
            description: $description,
            sql: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/migrations/",
                $folder,
                "/",
                $file
            )),
        }
    };
}

pub(crate) use {migration, migrations_of};

pub(crate) fn checksum(sql: &str) -> Vec<u8> {
    Sha384::digest(sql.as_bytes()).to_vec()
}

pub(crate) fn failed(e: impl std::fmt::Display) -> StoreError {
    StoreError::Migration(format!("migration failed: {e}"))
}

/// Refuses a database whose record (version, success, checksum) differs
/// from `known`: a migration that failed earlier, one this opd does not
/// know (a newer opd made it), or one edited after it was applied.
pub(crate) fn check_applied(
    known: &[Migration],
    applied: &[(i64, bool, Vec<u8>)],
) -> StoreResult<()> {
    for (version, success, sum) in applied {
        if !success {
            return Err(failed(format!(
                "migration {version} failed earlier; restore a backup"
            )));
        }
        match known.iter().find(|m| m.version == *version) {
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
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::Migration;

    /// The list names every file of the folder, in order, with the
    /// description sqlx derived from its name.
    pub(crate) fn the_list_is_the_folder(folder: &str, list: &[Migration]) {
        let dir = format!("{}/migrations/{folder}", env!("CARGO_MANIFEST_DIR"));
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        assert_eq!(files.len(), list.len(), "{files:?}");
        for (file, m) in files.iter().zip(list) {
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
