//! Every SQL statement the store sends compiles on both backends: each is
//! declared once, and a statement that one dialect rejects fails here
//! instead of on the first request that reaches it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

#[tokio::test]
async fn every_statement_prepares_on_both_backends() {
    let (lite, _dir) = opd_testkit::stores::sqlite().await;
    let pg = opd_testkit::stores::postgres().await;
    let on_sqlite = lite.prepare_all_statements().await.unwrap();
    let on_postgres = pg.prepare_all_statements().await.unwrap();
    assert!(
        on_postgres > on_sqlite,
        "PostgreSQL runs a few statements of its own"
    );
    assert!(on_sqlite > 60, "only {on_sqlite} statements checked");
}
