//! What the health and metrics endpoints ask of the store, on both
//! backends: readiness (ready, then a migration missing), the webhook
//! backlog (counted up to a cap) and the pools' connections.

#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_core::webhook::{EventKind, WebhookEvent};
use opd_core::Timestamp;
use opd_store::{Readiness, Store};

fn event(n: i64) -> WebhookEvent {
    WebhookEvent {
        id: format!("event-{n}"),
        tenant: opd_core::TenantId::operator(),
        kind: EventKind::IncomingPaymentCreated,
        data: "{}".into(),
        attempts: 0,
        next_attempt_at: Timestamp::from_unix_millis(1_000),
        delivered_at: None,
        created_at: Timestamp::from_unix_millis(1_000 + n),
    }
}

/// Ready; three events waiting, counted under caps; one delivered.
async fn ready_and_backlog(s: &dyn Store) {
    assert_eq!(s.readiness().await.unwrap(), Readiness::Ready);
    assert_eq!(s.webhook_backlog(100).await.unwrap(), 0);
    s.insert_webhook_events(&[event(1), event(2), event(3)])
        .await
        .unwrap();
    assert_eq!(s.webhook_backlog(100).await.unwrap(), 3);
    assert_eq!(s.webhook_backlog(2).await.unwrap(), 2, "capped");
    let at = Timestamp::from_unix_millis(5_000);
    s.webhook_attempted("event-2", Some(at), at, None)
        .await
        .unwrap();
    assert_eq!(s.webhook_backlog(100).await.unwrap(), 2);
    s.webhook_attempted("event-3", None, at, Some("503"))
        .await
        .unwrap();
    assert_eq!(s.webhook_backlog(100).await.unwrap(), 2, "a failure waits");
}

#[tokio::test]
async fn sqlite_readiness_backlog_and_pools() {
    let (s, dir) = opd_testkit::stores::sqlite().await;
    ready_and_backlog(&s).await;
    let pools = s.pool_stats();
    let names: Vec<_> = pools.iter().map(|p| p.name).collect();
    assert_eq!(names, ["sqlite_read", "sqlite_write"]);
    let writer = &pools[1];
    assert_eq!((writer.idle, writer.used, writer.max), (1, 0, Some(1)));
    assert_eq!(writer.pending, Some(0));
    assert!(pools[0].idle >= 1, "{pools:?}");

    // The latest migration gone: the schema is behind this binary.
    let conn = rusqlite::Connection::open(dir.path().join("opd.sqlite")).unwrap();
    conn.execute(DELETE_LATEST, []).unwrap();
    match s.readiness().await.unwrap() {
        Readiness::MigrationsPending { applied, latest } => {
            assert!(applied.is_some_and(|a| a < latest), "{applied:?} {latest}")
        }
        other => panic!("{other:?}"),
    }
}

const DELETE_LATEST: &str =
    "DELETE FROM _sqlx_migrations WHERE version = (SELECT max(version) FROM _sqlx_migrations)";

#[tokio::test]
async fn postgres_readiness_backlog_and_pools() {
    let url = opd_testkit::pg::fresh_schema_url().await;
    let mut options = opd_store::ConnectOptions::new(url.clone());
    options.migrate_postgres = true;
    options.max_connections = 4;
    let s = opd_store::postgres::connect(&options).await.unwrap();
    ready_and_backlog(&s).await;
    let pools = s.pool_stats();
    assert_eq!(pools.len(), 1);
    assert_eq!(pools[0].name, "postgres");
    assert_eq!(pools[0].max, Some(4));
    assert!(pools[0].idle + pools[0].used >= 1, "{pools:?}");

    let client = opd_testkit::pg::connect(&url).await;
    client.batch_execute(DELETE_LATEST).await.unwrap();
    assert!(matches!(
        s.readiness().await.unwrap(),
        Readiness::MigrationsPending {
            applied: Some(_),
            ..
        }
    ));
    // No migrations table at all: never migrated.
    client
        .batch_execute("DROP TABLE _sqlx_migrations")
        .await
        .unwrap();
    assert!(matches!(
        s.readiness().await.unwrap(),
        Readiness::MigrationsPending { applied: None, .. }
    ));
}
