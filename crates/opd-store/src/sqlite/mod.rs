//! The embedded SQLite store: one file, WAL journal, a single writer
//! connection (SQLite allows one writer at a time; queuing writers is
//! cheaper than retrying on `SQLITE_BUSY`) and a pool of readers, all
//! driven synchronously on the caller's thread by [`driver`]. sqlx only
//! applies the migrations.

pub mod driver;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use self::driver::{ReadPool, WritePool};

use crate::db::Pools;
use crate::{ConnectOptions, SqlStore, StoreError, StoreResult};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The latest migration this binary has.
pub(crate) fn latest_migration() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
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
    let base = SqliteConnectOptions::from_str(&format!("sqlite://{path}"))
        .map_err(|e| StoreError::Config(format!("invalid SQLite URL: {e}")))?
        .create_if_missing(create)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(5))
        .foreign_keys(true);
    // sqlx creates the file and applies the migrations, then steps
    // aside for the synchronous driver.
    let migrating = SqlitePoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(base)
        .await
        .map_err(|e| StoreError::Config(format!("cannot open SQLite database {path:?}: {e}")))?;
    MIGRATOR.run(&migrating).await?;
    migrating.close().await;
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
pub(crate) async fn schema_columns(reader: &ReadPool) -> StoreResult<Vec<(String, Vec<String>)>> {
    let tables: Vec<String> = driver::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%' ORDER BY name",
        )
        .fetch_all(reader)
        .await?;
    let mut out = Vec::new();
    for t in tables {
        let mut cols: Vec<String> = driver::query_scalar("SELECT name FROM pragma_table_info(?)")
            .bind(&t)
            .fetch_all(reader)
            .await?;
        cols.sort();
        out.push((t, cols));
    }
    Ok(out)
}
