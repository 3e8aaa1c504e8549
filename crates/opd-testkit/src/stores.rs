//! Fresh stores of both backends for tests.

use std::sync::Arc;

use opd_store::{ConnectOptions, SqlStore, Store};

/// A fresh SQLite store in a temporary directory (kept alive by the
/// returned guard).
pub async fn sqlite() -> (SqlStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("opd.sqlite").display());
    let mut options = ConnectOptions::new(url);
    options.create_sqlite_file = true;
    options.exclusive_sqlite = true;
    (
        opd_store::sqlite::connect(&options)
            .await
            .expect("open sqlite"),
        dir,
    )
}

/// A fresh, migrated PostgreSQL store in a schema of its own.
pub async fn postgres() -> SqlStore {
    let mut options = ConnectOptions::new(crate::pg::fresh_schema_url().await);
    options.migrate_postgres = true;
    options.max_connections = 4;
    opd_store::postgres::connect(&options)
        .await
        .expect("open postgres")
}

/// Both backends, for tests written once: `for (name, store) in both().await`.
pub async fn both() -> Vec<(&'static str, Arc<dyn Store>, Option<tempfile::TempDir>)> {
    let (lite, dir) = sqlite().await;
    vec![
        ("sqlite", Arc::new(lite), Some(dir)),
        ("postgres", Arc::new(postgres().await), None),
    ]
}

/// One test per case, run on both backends: `conformance!(case_a, case_b)`
/// makes `sqlite::case_a` and `postgres::case_a`, each calling
/// `case_a(&store)` with a fresh store of that kind.
#[macro_export]
macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test] async fn $case() { let (s, _dir) = $crate::stores::sqlite().await; super::$case(&s).await; })*
        }
        mod postgres {
            $(#[tokio::test] async fn $case() { let s = $crate::stores::postgres().await; super::$case(&s).await; })*
        }
    };
}
