//! What arrives by payment pointer, reported and held: the
//! `wallet_address.web_monetization` events (at most one per wallet
//! address per interval, each with what arrived since the last, summing
//! to what arrived), shown on the dashboard's webhooks page; and, in
//! external mode, the money waiting on the wallet address's SPSP account
//! until the operator withdraws it, once.

use opd_core::webhook::EventKind;
use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::amount;
use crate::ilp::{ledger_balanced, world, world_with};
use crate::spsp::{fulfilled, spsp};

/// The `wallet_address.web_monetization` events in the outbox, oldest
/// first: (wallet address URL, amount received, amount to withdraw).
async fn reports(app: &TestApp) -> Vec<(String, String, String)> {
    let far = opd_core::Timestamp::from_unix_millis(i64::MAX / 2);
    let mut events = app
        .services()
        .store
        .due_webhook_events(far, 1000)
        .await
        .unwrap();
    events.sort_by_key(|e| (e.created_at, e.id.clone()));
    events
        .iter()
        .filter(|e| e.kind == EventKind::WalletAddressWebMonetization)
        .map(|e| {
            let body: Value = serde_json::from_str(&e.data).unwrap();
            assert_eq!(body["type"], "wallet_address.web_monetization");
            let data = &body["data"];
            let wallet = &data["walletAddress"];
            assert!(wallet["createdAt"].is_string(), "{body}");
            let value = |a: &Value| {
                assert_eq!(
                    (&a["assetCode"], &a["assetScale"]),
                    (&json!("USD"), &json!(2))
                );
                a["value"].as_str().unwrap().to_owned()
            };
            (
                wallet["id"].as_str().unwrap().to_owned(),
                value(&wallet["receivedAmount"]),
                value(&data["amountToWithdraw"]),
            )
        })
        .collect()
}

#[tokio::test]
async fn web_monetization_events_say_what_arrived_once_per_interval() {
    events_per_interval(Db::Sqlite).await;
}

#[tokio::test]
async fn web_monetization_events_say_what_arrived_once_per_interval_on_postgres() {
    events_per_interval(Db::Postgres).await;
}

async fn events_per_interval(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    app.create_wallet("carol", "USD", 2).await;
    let (bob, carol) = (spsp(app, "bob", None).await, spsp(app, "carol", None).await);
    fulfilled(app, &bob, 10).await;
    fulfilled(app, &carol, 7).await;
    app.run_jobs().await;
    assert!(reports(app).await.is_empty(), "not before the interval");
    app.clock.advance_millis(30_000);
    fulfilled(app, &bob, 20).await;
    app.clock.advance_millis(29_999);
    app.run_jobs().await;
    assert!(
        reports(app).await.is_empty(),
        "a minute after the first payment"
    );
    app.clock.advance_millis(1);
    app.run_jobs().await;
    app.run_jobs().await;
    let (bob_url, carol_url) = (app.url("bob"), app.url("carol"));
    let mut first = reports(app).await;
    first.sort();
    let mut want = vec![
        (bob_url.clone(), "30".to_owned(), "0".to_owned()),
        (carol_url, "7".to_owned(), "0".to_owned()),
    ];
    want.sort();
    assert_eq!(first, want);
    // The next payment opens the next interval.
    app.clock.advance_millis(1_000);
    fulfilled(app, &bob, 5).await;
    app.clock.advance_millis(59_999);
    app.run_jobs().await;
    assert_eq!(reports(app).await.len(), 2);
    app.clock.advance_millis(1);
    app.run_jobs().await;
    let all = reports(app).await;
    assert_eq!(all.len(), 3);
    assert_eq!(all[2], (bob_url.clone(), "5".to_owned(), "0".to_owned()));
    // bob's events add up to what arrived, to the unit.
    let bobs: u64 = all
        .iter()
        .filter(|r| r.0 == bob_url)
        .map(|r| r.1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(bobs, 35);
    assert_eq!(crate::remote::balance(app, "bob").await, "35");
    ledger_balanced(app).await;
}

#[tokio::test]
async fn the_dashboards_webhooks_page_shows_web_monetization_events() {
    let w = world_with(Db::Sqlite, |s| s.serve.web_monetization_event_secs = 0).await;
    fulfilled(&w.app, &spsp(&w.app, "bob", None).await, 12).await;
    w.app.run_jobs().await;
    let d = crate::dashboard::signed_in(w.app).await;
    let (s, page) = d.get("/dashboard/webhooks").await;
    assert_eq!(s, StatusCode::OK);
    assert!(page.contains("wallet_address.web_monetization"), "{page}");
}

#[tokio::test]
async fn money_paid_by_pointer_waits_for_the_operator_in_external_mode() {
    held(Db::Sqlite).await;
}

#[tokio::test]
async fn money_paid_by_pointer_waits_for_the_operator_in_external_mode_on_postgres() {
    held(Db::Postgres).await;
}

async fn held(db: Db) {
    let w = world_with(db, |s| {
        s.serve.external_funding = true;
        s.serve.web_monetization_event_secs = 0;
    })
    .await;
    let app = &w.app;
    let bob = spsp(app, "bob", None).await;
    fulfilled(app, &bob, 100).await;
    fulfilled(app, &bob, 20).await;
    assert_eq!(crate::remote::balance(app, "bob").await, "0");
    let (s, check) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(check["balanced"], true, "{check}");
    assert_eq!(
        check["awaitingWithdrawal"],
        json!([amount("120", "USD", 2)])
    );
    app.run_jobs().await;
    let url = app.url("bob");
    assert_eq!(
        reports(app).await,
        [(url, "120".to_owned(), "120".to_owned())]
    );
    let withdraw = |key: &'static str| async move {
        let body = json!({ "idempotencyKey": key });
        let path = "/wallet-addresses/bob/spsp-withdrawals";
        app.admin(Method::POST, path, Some(&body)).await
    };
    let (s, first) = withdraw("w1").await;
    assert_eq!(s, StatusCode::CREATED, "{first}");
    assert_eq!(first["amount"], amount("120", "USD", 2));
    let (s, again) = withdraw("w1").await;
    assert_eq!(s, StatusCode::OK, "{again}");
    assert_eq!(again["transfer"], first["transfer"]);
    let (s, nothing) = withdraw("w2").await;
    crate::assert_error(s, &nothing, 409, "nothing_to_withdraw");
    let (_, check) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(check["awaitingWithdrawal"], json!([]), "{check}");
    ledger_balanced(app).await;
}
