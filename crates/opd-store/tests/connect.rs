//! Startup errors: an unknown scheme or a mistyped SQLite path is refused,
//! never silently turned into a new empty database.

use opd_store::{connect, ConnectOptions, StoreError};

#[tokio::test]
async fn unknown_scheme_is_a_clear_error() {
    let err = connect(&ConnectOptions::new("mysql://localhost/opd"))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, StoreError::Config(ref m) if m.contains("unsupported database URL scheme")),
        "{err}"
    );
}

#[tokio::test]
async fn missing_sqlite_file_is_not_created_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.sqlite");
    let err = connect(&ConnectOptions::new(format!("sqlite://{}", path.display())))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, StoreError::Config(ref m) if m.contains("does not exist")),
        "{err}"
    );
    assert!(!path.exists());
    let store = connect(&ConnectOptions::new(format!(
        "sqlite://{}?mode=rwc",
        path.display()
    )))
    .await
    .unwrap();
    store.ping().await.unwrap();
    assert!(path.exists());
}

#[tokio::test]
async fn missing_sqlite_directory_is_an_error_even_when_creating() {
    let dir = tempfile::tempdir().unwrap();
    let mut options =
        ConnectOptions::new(format!("sqlite://{}/nope/opd.sqlite", dir.path().display()));
    options.create_sqlite_file = true;
    let err = connect(&options).await.err().unwrap();
    assert!(
        matches!(err, StoreError::Config(ref m) if m.contains("does not exist")),
        "{err}"
    );
}

#[tokio::test]
async fn postgres_without_migrations_is_refused_until_migrated() {
    let url = opd_testkit::pg::fresh_schema_url().await;
    let err = connect(&ConnectOptions::new(url.clone()))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, StoreError::Migration(ref m) if m.contains("opd migrate")),
        "{err}"
    );
    opd_store::migrate(&url).await.unwrap();
    connect(&ConnectOptions::new(url))
        .await
        .unwrap()
        .ping()
        .await
        .unwrap();
}

#[tokio::test]
async fn an_exclusive_sqlite_database_refuses_a_second_server() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = ConnectOptions::new(format!("sqlite://{}/opd.sqlite", dir.path().display()));
    options.create_sqlite_file = true;
    options.exclusive_sqlite = true;
    let first = connect(&options).await.unwrap();
    let err = connect(&options).await.err().unwrap();
    assert!(
        matches!(err, StoreError::Config(ref m) if m.contains("in use by another opd process")),
        "{err}"
    );
    // A read-only tool (opd check) may still open it.
    let mut shared = options.clone();
    shared.exclusive_sqlite = false;
    connect(&shared).await.unwrap().ping().await.unwrap();
    // Once the first server is gone, the database is free again.
    drop(first);
    connect(&options).await.unwrap().ping().await.unwrap();
}
