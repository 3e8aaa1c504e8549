//! Throwaway PostgreSQL schemas for tests.

/// The environment variable naming the test cluster.
pub const TEST_DATABASE_URL: &str = "OPD_TEST_DATABASE_URL";

/// The URL of the test PostgreSQL server. Panics, loudly, when it is not
/// set: PostgreSQL tests are never skipped.
pub fn server_url() -> String {
    std::env::var(TEST_DATABASE_URL).unwrap_or_else(|_| {
        panic!(
            "{TEST_DATABASE_URL} is not set. Run the tests with ./scripts/test, which starts a throwaway \
             PostgreSQL, or point {TEST_DATABASE_URL} at a disposable PostgreSQL database."
        )
    })
}

/// Creates a new empty schema and returns a URL whose connections use it
/// (through `search_path`), so each test sees a database of its own.
pub async fn fresh_schema_url() -> String {
    let base = server_url();
    let schema = format!("opd_test_{}", uuid::Uuid::new_v4().simple());
    let client = connect(&base).await;
    client
        .batch_execute(&format!("CREATE SCHEMA {schema}"))
        .await
        .expect("create schema");
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options=-c%20search_path%3D{schema}")
}

/// A connection to `url` (its connection driven by a task of its own);
/// panics, naming the variable, when it cannot be opened.
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| {
            panic!("cannot connect to the test PostgreSQL at {TEST_DATABASE_URL}: {e}")
        });
    tokio::spawn(connection);
    client
}
