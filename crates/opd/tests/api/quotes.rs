//! Quotes: the three variants, fees, cross-currency conversion with exact
//! rounding, rates from a rates URL, expiry, and every documented error.

use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{amount, assert_error, spec_rs};

struct Parties {
    alice: String,
    bob: String,
}

async fn parties(app: &TestApp) -> Parties {
    Parties {
        alice: app.create_wallet("alice", "USD", 2).await,
        bob: app.create_wallet("bob", "USD", 2).await,
    }
}

async fn incoming(app: &TestApp, wallet: &str, incoming_amount: Option<Value>) -> String {
    let mut body = json!({ "walletAddress": wallet });
    if let Some(a) = incoming_amount {
        body["incomingAmount"] = a;
    }
    let (s, ip) = app.post(&app.url("incoming-payments"), &body).await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    ip["id"].as_str().unwrap().to_owned()
}

async fn quote(app: &TestApp, body: Value) -> (StatusCode, Value) {
    app.post(&app.url("quotes"), &body).await
}

async fn set_fee(app: &TestApp, code: &str, scale: u8, fixed: &str, bp: u32) {
    let (s, v) = app
        .admin(
            Method::PUT,
            &format!("/fees/{code}/{scale}"),
            Some(&json!({ "fixed": fixed, "basisPoints": bp })),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{v}");
}

#[tokio::test]
async fn three_variants_without_fees() {
    three_variants(Db::Sqlite).await;
}

#[tokio::test]
async fn three_variants_on_postgres() {
    three_variants(Db::Postgres).await;
}

async fn three_variants(db: Db) {
    let app = TestApp::spawn_with(db, |_| {}).await;
    let p = parties(&app).await;
    let receiver = incoming(&app, &p.bob, Some(amount("1000", "USD", 2))).await;

    let (s, q) = quote(
        &app,
        json!({ "walletAddress": p.alice, "receiver": receiver, "method": "ilp" }),
    )
    .await;
    spec_rs("create-quote", s, &q);
    assert_eq!(
        (
            q["debitAmount"]["value"].as_str(),
            q["receiveAmount"]["value"].as_str()
        ),
        (Some("1000"), Some("1000"))
    );
    assert_eq!(q["walletAddress"], p.alice);
    assert_eq!(q["receiver"], receiver);
    assert_eq!(q["method"], "ilp");

    let (s, q) = quote(&app, json!({ "walletAddress": p.alice, "receiver": receiver, "method": "ilp", "receiveAmount": amount("400", "USD", 2) })).await;
    spec_rs("create-quote", s, &q);
    assert_eq!(q["debitAmount"], amount("400", "USD", 2));

    let (s, q) = quote(&app, json!({ "walletAddress": p.alice, "receiver": receiver, "method": "ilp", "debitAmount": amount("300", "USD", 2) })).await;
    spec_rs("create-quote", s, &q);
    assert_eq!(q["receiveAmount"], amount("300", "USD", 2));

    let (s, got) = app.get(q["id"].as_str().unwrap()).await;
    spec_rs("get-quote", s, &got);
    assert_eq!(got, q);
    app.stop().await;
}

#[tokio::test]
async fn fees_are_added_to_fixed_delivery_and_taken_from_fixed_send() {
    let app = TestApp::spawn().await;
    let p = parties(&app).await;
    set_fee(&app, "USD", 2, "150", 200).await;
    let receiver = incoming(&app, &p.bob, Some(amount("1000", "USD", 2))).await;
    // Fixed delivery of 1000: fee = ceil(1000 * 2%) + 150 = 170.
    let (s, q) = quote(
        &app,
        json!({ "walletAddress": p.alice, "receiver": receiver, "method": "ilp" }),
    )
    .await;
    spec_rs("create-quote", s, &q);
    assert_eq!(q["debitAmount"]["value"], "1170");
    assert_eq!(q["receiveAmount"]["value"], "1000");
    // Fixed send of 1000: fee 170 comes off, 830 is delivered.
    let (_, q) = quote(&app, json!({ "walletAddress": p.alice, "receiver": receiver, "method": "ilp", "debitAmount": amount("1000", "USD", 2) })).await;
    assert_eq!(q["debitAmount"]["value"], "1000");
    assert_eq!(q["receiveAmount"]["value"], "830");
}

#[tokio::test]
async fn cross_currency_with_a_fee_floors_delivery_and_ceils_debit() {
    let app = TestApp::spawn().await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    let claire = app.create_wallet("claire", "EUR", 2).await;
    set_fee(&app, "USD", 2, "10", 100).await;
    let (s, v) = app
        .admin(
            Method::PUT,
            "/rates/USD",
            Some(&json!({ "rates": { "EUR": "0.91" } })),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{v}");
    let receiver = incoming(&app, &claire, None).await;
    // 500 EUR cents need ceil(500 / 0.91) = 550 USD cents; fee ceil(5.5) + 10 = 16.
    let (s, q) = quote(&app, json!({ "walletAddress": alice, "receiver": receiver, "method": "ilp", "receiveAmount": amount("500", "EUR", 2) })).await;
    spec_rs("create-quote", s, &q);
    assert_eq!(q["debitAmount"], amount("566", "USD", 2));
    assert_eq!(q["receiveAmount"], amount("500", "EUR", 2));
    // 1000 USD cents: fee 10 + 10 = 20; 980 * 0.91 = 891.8 -> 891 EUR cents.
    let (s, q) = quote(&app, json!({ "walletAddress": alice, "receiver": receiver, "method": "ilp", "debitAmount": amount("1000", "USD", 2) })).await;
    spec_rs("create-quote", s, &q);
    assert_eq!(q["receiveAmount"], amount("891", "EUR", 2));
    // No rate from EUR to USD was given: rates are directional.
    let back = incoming(&app, &alice, None).await;
    let (s, v) = quote(&app, json!({ "walletAddress": claire, "receiver": back, "method": "ilp", "debitAmount": amount("100", "EUR", 2) })).await;
    assert_error(s, &v, 400, "no_exchange_rate");
}

#[tokio::test]
async fn rates_come_from_the_rates_url_when_not_set() {
    use axum::routing::get;
    let rates = axum::Router::new().route(
        "/rates",
        get(
            |q: axum::extract::Query<std::collections::HashMap<String, String>>| async move {
                let base = q.get("base").cloned().unwrap_or_default();
                // A raw body: the rate must be read from its exact text.
                format!(
                    "{{\"base\":\"{base}\",\"rates\":{{\"JPY\":151.123456789012345,\"EUR\":0.5}}}}"
                )
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let rates_url = format!("http://{}/rates", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, rates).await.unwrap() });

    let app = TestApp::spawn().await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    let kenji = app.create_wallet("kenji", "JPY", 0).await;
    let (s, v) = app
        .admin(
            Method::PUT,
            "/rates-url",
            Some(&json!({ "url": rates_url })),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{v}");
    let receiver = incoming(&app, &kenji, None).await;
    // 10000 cents = 100 USD -> 15112.3456789012345 JPY -> 15112.
    let (s, q) = quote(&app, json!({ "walletAddress": alice, "receiver": receiver, "method": "ilp", "debitAmount": amount("10000", "USD", 2) })).await;
    spec_rs("create-quote", s, &q);
    assert_eq!(q["receiveAmount"], amount("15112", "JPY", 0));
    // 1 cent delivers 0.5 EUR cents: nothing; 2 cents is the least that delivers.
    let emma = app.create_wallet("emma", "EUR", 2).await;
    let receiver = incoming(&app, &emma, None).await;
    let (s, v) = quote(&app, json!({ "walletAddress": alice, "receiver": receiver, "method": "ilp", "debitAmount": amount("1", "USD", 2) })).await;
    assert_error(s, &v, 400, "non_positive_receive_amount");
    assert_eq!(
        v["error"]["details"]["minSendAmount"],
        amount("2", "USD", 2)
    );
}

#[tokio::test]
async fn non_positive_receive_amount_reports_the_least_debit() {
    let app = TestApp::spawn().await;
    let p = parties(&app).await;
    set_fee(&app, "USD", 2, "50", 0).await;
    let receiver = incoming(&app, &p.bob, None).await;
    let (s, v) = quote(&app, json!({ "walletAddress": p.alice, "receiver": receiver, "method": "ilp", "debitAmount": amount("30", "USD", 2) })).await;
    assert_error(s, &v, 400, "non_positive_receive_amount");
    // Deployed clients match on this description and read minSendAmount.
    assert!(v["error"]["description"]
        .as_str()
        .unwrap()
        .to_lowercase()
        .contains("non-positive receive amount"));
    assert_eq!(
        v["error"]["details"]["minSendAmount"],
        amount("51", "USD", 2)
    );
    let (s, q) = quote(&app, json!({ "walletAddress": p.alice, "receiver": receiver, "method": "ilp", "debitAmount": amount("51", "USD", 2) })).await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(q["receiveAmount"]["value"], "1");
}

#[tokio::test]
async fn quotes_expire_with_their_receiver_at_the_latest() {
    let app = TestApp::spawn().await;
    let p = parties(&app).await;
    let now = {
        use opd_core::Clock;
        app.clock.now()
    };
    let soon = now.plus_seconds(60).to_rfc3339();
    let (_, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": p.bob, "expiresAt": soon }),
        )
        .await;
    let (_, q) = quote(&app, json!({ "walletAddress": p.alice, "receiver": ip["id"], "method": "ilp", "debitAmount": amount("5", "USD", 2) })).await;
    assert_eq!(q["expiresAt"], soon);
    let later = incoming(&app, &p.bob, None).await;
    let (_, q) = quote(&app, json!({ "walletAddress": p.alice, "receiver": later, "method": "ilp", "debitAmount": amount("5", "USD", 2) })).await;
    assert_eq!(
        q["expiresAt"],
        now.plus_seconds(300).to_rfc3339(),
        "5 minutes by default"
    );
}

#[tokio::test]
async fn every_documented_error() {
    let app = TestApp::spawn().await;
    let p = parties(&app).await;
    let gone = app.create_wallet("gone", "USD", 2).await;
    app.admin(Method::POST, "/wallet-addresses/gone/deactivate", None)
        .await;
    let open = incoming(&app, &p.bob, None).await;
    let owed = incoming(&app, &p.bob, Some(amount("1000", "USD", 2))).await;
    let done = incoming(&app, &p.bob, None).await;
    app.post(&format!("{done}/complete"), &json!({})).await;
    let remote = "https://elsewhere.example/incoming-payments/0190a1b2-0000-7000-8000-000000000000";
    let missing = app.url("incoming-payments/0190a1b2-0000-7000-8000-000000000000");
    let q = |receiver: &str, extra: Value| {
        let mut body = json!({ "walletAddress": p.alice, "receiver": receiver, "method": "ilp" });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        body
    };
    let d = |v: &str| json!({ "debitAmount": amount(v, "USD", 2) });
    let r = |v: &str| json!({ "receiveAmount": amount(v, "USD", 2) });
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            q(
                &owed,
                json!({ "debitAmount": amount("1", "USD", 2), "receiveAmount": amount("1", "USD", 2) }),
            ),
            400,
            "invalid_amount",
        ),
        (q(&open, json!({})), 400, "invalid_amount"),
        (q(&owed, d("1001")), 400, "invalid_amount"),
        (q(&owed, r("1001")), 400, "invalid_amount"),
        (
            q(&owed, json!({ "debitAmount": amount("10", "EUR", 2) })),
            400,
            "invalid_amount",
        ),
        (
            q(&owed, json!({ "receiveAmount": amount("10", "USD", 3) })),
            400,
            "invalid_amount",
        ),
        (q(&owed, d("0")), 400, "invalid_amount"),
        (q(&owed, d("1.0")), 400, "invalid_amount"),
        (q(&open, r("18446744073709551614")), 201, ""),
        (
            q(&open, json!({ "method": "card" })),
            400,
            "invalid_request",
        ),
        (q(remote, d("10")), 400, "invalid_receiver"),
        (q(&missing, d("10")), 400, "invalid_receiver"),
        (q(&done, d("10")), 400, "invalid_receiver"),
        (
            q("https://x.example/not-a-receiver", d("10")),
            400,
            "invalid_receiver",
        ),
        (
            json!({ "walletAddress": app.url("nobody"), "receiver": open, "method": "ilp" }),
            404,
            "unknown_wallet_address",
        ),
        (
            json!({ "walletAddress": gone, "receiver": open, "method": "ilp", "debitAmount": amount("1", "USD", 2) }),
            400,
            "inactive_wallet_address",
        ),
        (
            json!({ "walletAddress": p.alice, "method": "ilp" }),
            400,
            "invalid_request",
        ),
        (q(&open, json!({ "extra": 1 })), 400, "invalid_request"),
    ];
    for (body, status, code) in cases {
        let (s, v) = quote(&app, body.clone()).await;
        assert_eq!(s.as_u16(), status, "{body} -> {v}");
        if status != 201 {
            assert_eq!(v["error"]["code"], code, "{body} -> {v}");
        }
        if code == "invalid_receiver" {
            assert_eq!(
                v["error"]["description"], "invalid receiver",
                "deployed clients match this exactly"
            );
            assert!(v["error"]["details"]["reason"].is_string());
        }
    }
    // A receiver on another server that cannot be reached: the reason
    // says so (never what the address answered).
    let (_, v) = quote(&app, q(remote, d("10"))).await;
    assert!(v["error"]["details"]["reason"]
        .as_str()
        .unwrap()
        .contains("could not be read"));
    // A fee that overflows a u64 is a clear 400, never a wrap.
    set_fee(&app, "USD", 2, "1", 0).await;
    let (s, v) = quote(&app, q(&open, r("18446744073709551615"))).await;
    assert_error(s, &v, 400, "amount_overflow");
    let (s, v) = app
        .get(&app.url("quotes/0190a1b2-0000-7000-8000-000000000000"))
        .await;
    assert_error(s, &v, 404, "not_found");
}
