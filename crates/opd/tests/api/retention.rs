//! Retention: what served its purpose is deleted once past the retention
//! period (expired tokens, unused expired quotes, delivered webhook
//! events), on both backends, and nothing that is still needed goes.

use opd_core::Clock as _;
use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::amount;

#[tokio::test]
async fn what_is_past_its_retention_is_pruned() {
    prunes(Db::Sqlite).await;
}

#[tokio::test]
async fn what_is_past_its_retention_is_pruned_on_postgres() {
    prunes(Db::Postgres).await;
}

async fn prunes(db: Db) {
    let app = TestApp::spawn_with(db, |_| {}).await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let (s, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": bob, "incomingAmount": amount("100", "USD", 2) }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let (s, quote) = app
        .post(
            &app.url("quotes"),
            &json!({ "walletAddress": alice, "receiver": ip["id"], "method": "ilp" }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{quote}");
    let services = app.services();
    // The incoming payment's `created` event, delivered.
    let events = services
        .store
        .due_webhook_events(app.clock.now(), 10)
        .await
        .unwrap();
    assert!(!events.is_empty());
    for e in &events {
        let now = app.clock.now();
        services
            .store
            .webhook_attempted(&e.id, Some(now), now, None)
            .await
            .unwrap();
    }

    // Within the retention period nothing goes.
    let pruned = opd_service::jobs::retention_once(services).await.unwrap();
    assert_eq!(pruned.total(), 0, "{pruned:?}");

    // 31 days on: the client's token expired long ago, the quote expired
    // unused, the events were delivered. The incoming payment stays.
    app.clock.advance_millis(31 * 24 * 3600 * 1000);
    let pruned = opd_service::jobs::retention_once(services).await.unwrap();
    assert!(pruned.tokens >= 1, "{pruned:?}");
    assert_eq!(pruned.quotes, 1, "{pruned:?}");
    assert_eq!(pruned.webhook_events, events.len() as u64, "{pruned:?}");
    let quote_id =
        opd_core::QuoteId::parse(quote["id"].as_str().unwrap().rsplit('/').next().unwrap())
            .unwrap();
    assert!(services.store.get_quote(quote_id).await.unwrap().is_none());
    let ip_id =
        opd_core::IncomingPaymentId::parse(ip["id"].as_str().unwrap().rsplit('/').next().unwrap())
            .unwrap();
    assert!(services
        .store
        .get_incoming_payment(ip_id)
        .await
        .unwrap()
        .is_some());
    // A second pass finds nothing more.
    let again = opd_service::jobs::retention_once(services).await.unwrap();
    assert_eq!(again.total(), 0, "{again:?}");
    let (s, v) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!((s, &v["balanced"]), (StatusCode::OK, &json!(true)), "{v}");
}

/// An approved monthly grant whose client goes quiet for longer than the
/// retention period keeps its current token: the client rotates it and
/// pays on, without asking its owner again. What it rotated away goes.
#[tokio::test]
async fn a_quiet_monthly_grant_can_still_be_rotated_after_retention() {
    use crate::auth::{ask, consent_in_browser, location, outgoing_grant, query, world, FINISH};
    let w = world(Db::Sqlite).await;
    let pending = ask(&w, &outgoing_grant(&w, Some(FINISH), "n")).await;
    let redirect = pending["interact"]["redirect"].as_str().unwrap();
    let done = consent_in_browser(&w, redirect, crate::auth::PASSWORD, "approve").await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let interact_ref = query(&location(&done))["interact_ref"].clone();
    let granted = crate::auth::continue_grant(&w, &pending, &interact_ref).await;
    assert_eq!(granted.status, StatusCode::OK, "{}", granted.body);
    let token = &granted.body["access_token"];
    let rotate = |manage: &str, value: &str| {
        let (manage, value) = (manage.to_owned(), value.to_owned());
        let shop = &w.shop;
        async move { shop.send(Method::POST, &manage, Some(&value), None).await }
    };

    // Forty days without a payment: the token expired long before the
    // retention period ended, and a pass ran.
    let services = w.app.services();
    w.app.clock.advance_millis(40 * 24 * 3600 * 1000);
    opd_service::jobs::retention_once(services).await.unwrap();
    let rotated = rotate(
        token["manage"].as_str().unwrap(),
        token["value"].as_str().unwrap(),
    )
    .await;
    assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.body);
    let new = &rotated.body["access_token"];
    assert_ne!(new["value"], token["value"]);

    // Forty more days: the rotated-away token is gone, the current one
    // (expired again) still rotates.
    w.app.clock.advance_millis(40 * 24 * 3600 * 1000);
    let pruned = opd_service::jobs::retention_once(services).await.unwrap();
    assert!(pruned.tokens >= 1, "{pruned:?}");
    let again = rotate(
        new["manage"].as_str().unwrap(),
        new["value"].as_str().unwrap(),
    )
    .await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    let stale = rotate(
        token["manage"].as_str().unwrap(),
        token["value"].as_str().unwrap(),
    )
    .await;
    assert_ne!(stale.status, StatusCode::OK, "{}", stale.body);
}
