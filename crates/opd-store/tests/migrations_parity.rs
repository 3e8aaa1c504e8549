//! Both migration sets must yield the same tables and columns, so the two
//! backends can never drift apart.

#[tokio::test]
async fn sqlite_and_postgres_schemas_have_the_same_tables_and_columns() {
    let (lite, _dir) = opd_testkit::stores::sqlite().await;
    let pg = opd_testkit::stores::postgres().await;
    let lite_cols = lite.schema_columns().await.unwrap();
    let pg_cols = pg.schema_columns().await.unwrap();
    assert!(!lite_cols.is_empty());
    assert_eq!(lite_cols, pg_cols);
}
