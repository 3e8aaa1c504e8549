//! The embedded SQLite store: one file, WAL journal, a single writer
//! connection (SQLite allows one writer at a time; queuing writers is
//! cheaper than retrying on `SQLITE_BUSY`) and a pool of readers, all
//! driven synchronously on the caller's thread by [`driver`], after
//! `migrations` brought the schema up to date.

mod backup;
pub mod driver;
mod migrations;

pub use backup::{backup, restore, Copied};

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use self::driver::{ReadPool, WritePool};

use crate::platform::db::Pools;
use crate::{ConnectOptions, SqlStore, StoreError, StoreResult};

/// The latest migration this binary has.
pub(crate) fn latest_migration() -> i64 {
    migrations::latest()
}

/// Opens (or creates) the database file in WAL mode and migrates it, on a
/// connection closed afterwards.
fn migrate(file: &Path, create: bool) -> StoreResult<()> {
    let open = || -> Result<Connection, rusqlite::Error> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags(file, flags)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        Ok(conn)
    };
    let mut conn = open()
        .map_err(|e| StoreError::Config(format!("cannot open SQLite database {file:?}: {e}")))?;
    migrations::run(&mut conn)
}

/// Locks `<database>.opd-lock` so that no other opd process serves the same
/// SQLite database.
fn lock_exclusively(path: &str) -> StoreResult<std::fs::File> {
    let lock_path = format!("{path}.opd-lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| StoreError::Config(format!("cannot open lock file {lock_path:?}: {e}")))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Config(format!(
            "SQLite database {path:?} is in use by another opd process; one database serves one process (use PostgreSQL for several nodes)"
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::Config(format!(
            "cannot lock {lock_path:?}: {e}"
        ))),
    }
}

/// The file path in a `sqlite:` URL (without query parameters).
fn sqlite_path(url: &str) -> &str {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    rest.split('?').next().unwrap_or(rest)
}

/// Opens (or, when allowed, creates) the database file and applies its
/// migrations. With `exclusive_sqlite` only this process writes it, so
/// payment reads can be cached coherently.
pub async fn connect(options: &ConnectOptions) -> StoreResult<SqlStore> {
    let path = sqlite_path(&options.url);
    if path.is_empty() || path.starts_with(":memory:") {
        return Err(StoreError::Config(
                "in-memory SQLite is not supported: give a file path, e.g. sqlite://opd-data/opd.sqlite".into(),
            ));
    }
    let file = Path::new(path);
    let create = options.create_sqlite_file || options.url.contains("mode=rwc");
    if !file.exists() {
        if !create {
            return Err(StoreError::Config(format!(
                    "SQLite database {path:?} does not exist; check the path, or add ?mode=rwc to the URL to create it"
                )));
        }
        match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() && !dir.is_dir() => {
                return Err(StoreError::Config(format!(
                    "directory {:?} for the SQLite database does not exist",
                    dir
                )))
            }
            _ => {}
        }
    }
    let exclusive_lock = if options.exclusive_sqlite {
        Some(lock_exclusively(path)?)
    } else {
        None
    };
    migrate(file, create)?;
    let cannot_open =
        |e: driver::Error| StoreError::Config(format!("cannot open SQLite database {path:?}: {e}"));
    let writer = WritePool::open(file, false).map_err(cannot_open)?;
    let reader = ReadPool::open(file, options.max_connections as usize).map_err(cannot_open)?;
    Ok(SqlStore::new(
        Pools::Sqlite { writer, reader },
        exclusive_lock,
    ))
}

/// Table name -> sorted column names, for the migration parity test.
pub(crate) fn schema_columns(reader: &ReadPool) -> StoreResult<Vec<(String, Vec<String>)>> {
    let names = |rows: Vec<driver::Row>| -> StoreResult<Vec<String>> {
        Ok(rows
            .iter()
            .map(|r| r.try_get::<String>("name"))
            .collect::<Result<_, _>>()?)
    };
    let tables = names(reader.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%' ORDER BY name",
        &[] as &[&str],
    )?)?;
    let mut out = Vec::new();
    for t in tables {
        let mut cols = names(reader.query("SELECT name FROM pragma_table_info(?)", &[&t])?)?;
        cols.sort();
        out.push((t, cols));
    }
    Ok(out)
}
