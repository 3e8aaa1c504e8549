//! Fresh stores of both backends for tests.

use std::sync::Arc;

use opd_store::postgres::PgStore;
use opd_store::sqlite::SqliteStore;
use opd_store::{ConnectOptions, Store};

/// A fresh SQLite store in a temporary directory (kept alive by the
/// returned guard).
pub async fn sqlite() -> (SqliteStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("opd.sqlite").display());
    let mut options = ConnectOptions::new(url);
    options.create_sqlite_file = true;
    options.exclusive_sqlite = true;
    (
        SqliteStore::connect(&options).await.expect("open sqlite"),
        dir,
    )
}

/// A fresh, migrated PostgreSQL store in a schema of its own.
pub async fn postgres() -> PgStore {
    let mut options = ConnectOptions::new(crate::pg::fresh_schema_url().await);
    options.migrate_postgres = true;
    options.max_connections = 4;
    PgStore::connect(&options).await.expect("open postgres")
}

/// Both backends, for tests written once: `for (name, store) in both().await`.
pub async fn both() -> Vec<(&'static str, Arc<dyn Store>, Option<tempfile::TempDir>)> {
    let (lite, dir) = sqlite().await;
    vec![
        ("sqlite", Arc::new(lite), Some(dir)),
        ("postgres", Arc::new(postgres().await), None),
    ]
}
