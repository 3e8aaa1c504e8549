//! No ILP credit outlives its packet, on both backends: a credit held up
//! past its packet's expiry (a row another transaction holds) is refused
//! with R00 and moves nothing, and a packet queued behind such a credit
//! leaves the queue with R00 at its expiry, never both answered late and
//! credited. Every balance is checked to the unit: the incoming payment,
//! the peer's liquidity, bob's wallet.

use std::time::Duration;

use opd_ilp::packet::Packet;
use opd_ilp::ErrorCode;
use opd_testkit::app::Db;
use reqwest::Method;

use crate::ilp::{
    ledger_balanced, liquidity, prepare_expiring, received, receiver, send_packet, world, World,
};

/// bob's wallet balance, in minor units.
async fn bob_balance(w: &World) -> String {
    let (_, balance) = w
        .app
        .admin(Method::GET, "/wallet-addresses/bob/balance", None)
        .await;
    balance["balance"]["value"].as_str().unwrap().to_owned()
}

/// Another connection holding what a credit to `incoming` must lock: the
/// SQLite database's write lock, or the incoming payment's row on
/// PostgreSQL. `release` ends its transaction.
enum Held {
    Sqlite(rusqlite::Connection),
    Postgres(tokio_postgres::Client),
}

impl Held {
    async fn take(w: &World, incoming: &str) -> Self {
        match &w.database {
            (_, Some(url)) => {
                let client = opd_testkit::pg::connect(url).await;
                let id = incoming.rsplit('/').next().unwrap();
                let lock = format!(
                    "BEGIN; SELECT id FROM incoming_payments WHERE id = '{id}'::uuid FOR UPDATE"
                );
                client.batch_execute(&lock).await.unwrap();
                Held::Postgres(client)
            }
            (Some(file), None) => {
                let conn = rusqlite::Connection::open(file).unwrap();
                conn.execute_batch("BEGIN IMMEDIATE").unwrap();
                Held::Sqlite(conn)
            }
            (None, None) => unreachable!("a world has a database"),
        }
    }

    /// Waits (at most 10 s) until a credit waits for what is held.
    async fn until_waited_on(&self, w: &World) {
        for _ in 0..1_000 {
            let waiting = match self {
                Held::Postgres(_) => {
                    let url = w.database.1.as_ref().unwrap();
                    let other = opd_testkit::pg::connect(url).await;
                    let row = other
                        .query_one(
                            "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
                            &[],
                        )
                        .await
                        .unwrap();
                    row.get::<_, i64>("n") > 0
                }
                Held::Sqlite(_) => {
                    let stats = w.app.services().store.pool_stats();
                    stats.iter().any(|p| p.name == "sqlite_write" && p.used > 0)
                }
            };
            if waiting {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no credit waited for the held lock");
    }

    async fn release(self) {
        match self {
            Held::Postgres(client) => client.batch_execute("ROLLBACK").await.unwrap(),
            Held::Sqlite(conn) => conn.execute_batch("ROLLBACK").unwrap(),
        }
    }
}

// Two threads: on SQLite the credit waits for the lock inside SQLite's
// busy handler, on its thread, while the test goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credit_held_past_its_packets_expiry_is_refused_and_moves_nothing() {
    held_past_expiry(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credit_held_past_its_packets_expiry_is_refused_on_postgres() {
    held_past_expiry(Db::Postgres).await;
}

/// A packet of 0.25 expiring in 1.5 s; its credit waits for a lock held
/// elsewhere while 2 s pass; then the lock goes.
async fn held_past_expiry(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let (id, address, secret) = receiver(app, "100").await;
    let held = Held::take(&w, &id).await;
    let body = prepare_expiring(app, &address, &secret, (25, 0), true, 1_500);
    let sent = spawn_send(&w, body);
    held.until_waited_on(&w).await;
    app.clock.advance_millis(2_000);
    held.release().await;
    match sent.await.unwrap() {
        Packet::Reject(r) => assert_eq!(r.code, ErrorCode::R00_TRANSFER_TIMED_OUT, "{r:?}"),
        other => panic!("credited after its expiry: {other:?}"),
    }
    let ip = received(app, &id).await;
    assert_eq!(ip["receivedAmount"]["value"], "0", "{ip}");
    assert_eq!(liquidity(&w).await, "1000");
    assert_eq!(bob_balance(&w).await, "0");
    ledger_balanced(app).await;
    // The lock gone, a packet in time is credited as ever.
    let body = prepare_expiring(app, &address, &secret, (25, 0), true, 1_500);
    assert!(matches!(send_packet(app, body).await, Packet::Fulfill(_)));
    assert_eq!(liquidity(&w).await, "975");
    assert_eq!(bob_balance(&w).await, "25");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packet_queued_past_its_expiry_leaves_the_queue_with_r00() {
    queued_past_expiry(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packet_queued_past_its_expiry_leaves_the_queue_with_r00_on_postgres() {
    queued_past_expiry(Db::Postgres).await;
}

/// Sends `body` from a task of its own; its ILP answer.
fn spawn_send(w: &World, body: Vec<u8>) -> tokio::task::JoinHandle<Packet> {
    let (ilp, http) = (w.app.ilp.clone(), w.app.http.clone());
    tokio::spawn(async move {
        let resp = http
            .post(&ilp)
            .bearer_auth("peer-to-opd-token")
            .header("content-type", "application/octet-stream")
            .body(body)
            .send()
            .await
            .unwrap();
        Packet::decode(&resp.bytes().await.unwrap()).unwrap()
    })
}

/// A packet of 0.30 expiring in 30 s leads a credit that waits for a held
/// lock; a packet of 0.25 expiring in 1.5 s queues behind it, and the
/// clock passes its expiry. It is answered R00 while the lock is still
/// held (it left the queue at its deadline); then the first is credited,
/// alone.
async fn queued_past_expiry(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let (id, address, secret) = receiver(app, "100").await;
    let held = Held::take(&w, &id).await;
    let first = spawn_send(
        &w,
        prepare_expiring(app, &address, &secret, (30, 0), true, 30_000),
    );
    held.until_waited_on(&w).await;
    let second = spawn_send(
        &w,
        prepare_expiring(app, &address, &secret, (25, 0), true, 1_500),
    );
    for _ in 0..1_000 {
        if app.services().interledger.credits_waiting() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(app.services().interledger.credits_waiting(), 1, "queued");
    app.clock.advance_millis(2_000);
    let answer = tokio::time::timeout(Duration::from_secs(10), second).await;
    match answer.expect("answered while the lock is held").unwrap() {
        Packet::Reject(r) => assert_eq!(r.code, ErrorCode::R00_TRANSFER_TIMED_OUT, "{r:?}"),
        other => panic!("{other:?}"),
    }
    held.release().await;
    assert!(matches!(first.await.unwrap(), Packet::Fulfill(_)));
    let ip = received(app, &id).await;
    assert_eq!(ip["receivedAmount"]["value"], "30", "{ip}");
    assert_eq!(liquidity(&w).await, "970");
    assert_eq!(bob_balance(&w).await, "30");
    ledger_balanced(app).await;
}
