//! Incoming payments: create, read (full and public), list, complete, and
//! every rejected input.

use opd_core::Timestamp;
use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{amount, assert_error, spec_rs};

async fn create(app: &TestApp, body: Value) -> (StatusCode, Value) {
    app.post(&app.url("incoming-payments"), &body).await
}

async fn authed_get(app: &TestApp, url: &str) -> (StatusCode, Value) {
    app.get(url).await
}

fn ilp_address_ok(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|a| a.starts_with("test.opd.") && a.len() <= 1023)
}

#[tokio::test]
async fn create_read_complete_follow_the_spec() {
    create_read_complete(Db::Sqlite).await;
}

#[tokio::test]
async fn create_read_complete_on_postgres() {
    create_read_complete(Db::Postgres).await;
}

async fn create_read_complete(db: Db) {
    let app = TestApp::spawn_with(db, |_| {}).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let (s, ip) = create(
        &app,
        json!({ "walletAddress": bob, "incomingAmount": amount("2500", "USD", 2), "metadata": { "externalRef": "INV-1" } }),
    )
    .await;
    spec_rs("create-incoming-payment", s, &ip);
    assert_eq!(ip["walletAddress"], bob);
    assert_eq!(ip["receivedAmount"], amount("0", "USD", 2));
    assert_eq!(ip["completed"], false);
    assert_eq!(ip["metadata"]["externalRef"], "INV-1");
    let methods = ip["methods"].as_array().unwrap();
    assert_eq!(methods.len(), 1);
    assert!(ilp_address_ok(&methods[0]["ilpAddress"]));
    let created = Timestamp::parse_rfc3339(ip["createdAt"].as_str().unwrap()).unwrap();
    let expires = Timestamp::parse_rfc3339(ip["expiresAt"].as_str().unwrap()).unwrap();
    assert_eq!(
        expires.unix_millis() - created.unix_millis(),
        30 * 24 * 3600 * 1000,
        "default expiry is 30 days"
    );
    assert!(
        ip["createdAt"].as_str().unwrap().ends_with('Z')
            && ip["createdAt"].as_str().unwrap().len() == 24
    );

    let id = ip["id"].as_str().unwrap();
    let (s, full) = authed_get(&app, id).await;
    spec_rs("get-incoming-payment", s, &full);
    assert_eq!(full["id"], id);
    assert_eq!(full["methods"].as_array().unwrap().len(), 1);
    assert_ne!(
        full["methods"][0]["ilpAddress"], methods[0]["ilpAddress"],
        "each read mints fresh credentials"
    );

    let (s, public) = app.get_public(id).await;
    spec_rs("get-incoming-payment", s, &public);
    assert_eq!(
        public,
        json!({ "receivedAmount": amount("0", "USD", 2), "authServer": ip_auth(&app).await })
    );

    let (s, done) = app.post(&format!("{id}/complete"), &json!({})).await;
    spec_rs("complete-incoming-payment", s, &done);
    assert_eq!(done["completed"], true);
    assert!(done.get("methods").is_none());
    let (_, again) = app.post(&format!("{id}/complete"), &json!({})).await;
    assert_eq!(again["completed"], true, "completing twice is harmless");
    let (_, full) = authed_get(&app, id).await;
    assert_eq!(
        full["methods"],
        json!([]),
        "a completed payment advertises no methods"
    );
    app.stop().await;
}

async fn ip_auth(app: &TestApp) -> Value {
    let (_, doc) = app.get(&app.url("bob")).await;
    doc["authServer"].clone()
}

#[tokio::test]
async fn lists_paginate_forward_and_backward() {
    let app = TestApp::spawn().await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let carol = app.create_wallet("carol", "USD", 2).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let (_, ip) = create(&app, json!({ "walletAddress": bob })).await;
        ids.push(ip["id"].as_str().unwrap().to_owned());
    }
    create(&app, json!({ "walletAddress": carol })).await;
    ids.reverse();
    let list = |q: String| {
        let app = &app;
        async move { app.get(&app.url(&format!("incoming-payments?{q}"))).await }
    };
    let enc = |s: &str| s.replace(':', "%3A").replace('/', "%2F");
    let (s, p1) = list(format!("wallet-address={}&first=2", enc(&bob))).await;
    spec_rs("list-incoming-payments", s, &p1);
    let got = |p: &Value| {
        p["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(got(&p1), ids[0..2]);
    assert_eq!(p1["pagination"]["hasNextPage"], true);
    assert_eq!(p1["pagination"]["hasPreviousPage"], false);
    let cursor = p1["pagination"]["endCursor"].as_str().unwrap();
    let (s, p2) = list(format!(
        "wallet-address={}&first=2&cursor={cursor}",
        enc(&bob)
    ))
    .await;
    spec_rs("list-incoming-payments", s, &p2);
    assert_eq!(got(&p2), ids[2..4]);
    assert_eq!(p2["pagination"]["hasPreviousPage"], true);
    let start = p2["pagination"]["startCursor"].as_str().unwrap();
    let (s, back) = list(format!(
        "wallet-address={}&last=2&cursor={start}",
        enc(&bob)
    ))
    .await;
    spec_rs("list-incoming-payments", s, &back);
    assert_eq!(got(&back), ids[0..2]);
    let (s, all) = list(format!("wallet-address={}", enc(&bob))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(got(&all), ids);
    assert!(
        all["result"][0].get("methods").is_none(),
        "list items carry no methods"
    );

    for (q, code) in [
        (String::new(), "invalid_request"),
        (
            format!("wallet-address={}&first=0", enc(&bob)),
            "invalid_request",
        ),
        (
            format!("wallet-address={}&first=101", enc(&bob)),
            "invalid_request",
        ),
        (
            format!("wallet-address={}&first=1&last=1", enc(&bob)),
            "invalid_request",
        ),
        (
            format!("wallet-address={}&cursor=nope", enc(&bob)),
            "invalid_request",
        ),
    ] {
        let (s, v) = list(q).await;
        assert_error(s, &v, 400, code);
    }
    let (s, v) = list(format!("wallet-address={}", enc(&app.url("nobody")))).await;
    assert_error(s, &v, 404, "unknown_wallet_address");
}

/// `expiresAt` may be as late as the longest expiry (a year by default),
/// to the millisecond, and no later.
#[tokio::test]
async fn an_expiry_at_the_longest_allowed_is_accepted_and_a_moment_later_refused() {
    let app = TestApp::spawn().await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let longest = app.clock_now().plus_seconds(365 * 24 * 3600);
    let (s, ip) = create(
        &app,
        json!({ "walletAddress": bob, "expiresAt": longest.to_rfc3339() }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    assert_eq!(ip["expiresAt"], longest.to_rfc3339());
    let (s, v) = create(
        &app,
        json!({ "walletAddress": bob, "expiresAt": longest.plus_millis(1).to_rfc3339() }),
    )
    .await;
    assert_error(s, &v, 400, "invalid_expiry");
}

#[tokio::test]
async fn expired_payments_keep_their_data_but_lose_their_methods() {
    let app = TestApp::spawn().await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let in_a_minute = app.clock_now().plus_seconds(60).to_rfc3339();
    let (s, ip) = create(
        &app,
        json!({ "walletAddress": bob, "expiresAt": in_a_minute }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    assert_eq!(ip["expiresAt"], in_a_minute);
    app.clock.advance_millis(61_000);
    let id = ip["id"].as_str().unwrap();
    let (s, full) = authed_get(&app, id).await;
    spec_rs("get-incoming-payment", s, &full);
    assert_eq!(full["methods"], json!([]));
    assert_eq!(full["expiresAt"], in_a_minute);
    let (s, v) = app.post(&format!("{id}/complete"), &json!({})).await;
    assert_error(s, &v, 409, "incoming_payment_expired");
}

trait ClockNow {
    fn clock_now(&self) -> Timestamp;
}

impl ClockNow for TestApp {
    fn clock_now(&self) -> Timestamp {
        use opd_core::Clock;
        self.clock.now()
    }
}

#[tokio::test]
async fn bad_input_gets_a_clear_error() {
    let app = TestApp::spawn().await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let gone = app.create_wallet("gone", "USD", 2).await;
    app.admin(Method::POST, "/wallet-addresses/gone/deactivate", None)
        .await;
    let far = app.clock_now().plus_seconds(400 * 24 * 3600).to_rfc3339();
    let past = app.clock_now().plus_seconds(-1).to_rfc3339();
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!({ "walletAddress": bob, "incomingAmount": amount("100", "EUR", 2) }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": amount("100", "USD", 3) }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": amount("0", "USD", 2) }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": amount("-1", "USD", 2) }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": amount("1.5", "USD", 2) }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": amount("1e3", "USD", 2) }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": amount("", "USD", 2) }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": amount(" 1", "USD", 2) }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": amount("18446744073709551616", "USD", 2) }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": { "value": "1", "assetCode": "USD", "assetScale": 256 } }),
            400,
            "invalid_amount",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": { "value": 1, "assetCode": "USD", "assetScale": 2 } }),
            400,
            "invalid_request",
        ),
        (
            json!({ "walletAddress": bob, "incomingAmount": { "value": "1", "assetCode": "USD" } }),
            400,
            "invalid_request",
        ),
        (
            json!({ "walletAddress": bob, "expiresAt": past }),
            400,
            "invalid_expiry",
        ),
        (
            json!({ "walletAddress": bob, "expiresAt": far }),
            400,
            "invalid_expiry",
        ),
        (
            json!({ "walletAddress": bob, "expiresAt": "tomorrow" }),
            400,
            "invalid_expiry",
        ),
        (
            json!({ "walletAddress": bob, "metadata": null }),
            400,
            "invalid_request",
        ),
        (
            json!({ "walletAddress": bob, "metadata": "text" }),
            400,
            "invalid_request",
        ),
        (
            json!({ "walletAddress": bob, "surprise": true }),
            400,
            "invalid_request",
        ),
        (
            json!({ "incomingAmount": amount("1", "USD", 2) }),
            400,
            "invalid_request",
        ),
        (
            json!({ "walletAddress": app.url("nobody") }),
            404,
            "unknown_wallet_address",
        ),
        (
            json!({ "walletAddress": "https://elsewhere.example/alice" }),
            404,
            "unknown_wallet_address",
        ),
        (
            json!({ "walletAddress": gone }),
            400,
            "inactive_wallet_address",
        ),
    ];
    for (body, status, code) in cases {
        let (s, v) = create(&app, body.clone()).await;
        assert!(
            s.as_u16() == status && v["error"]["code"] == code,
            "{body} -> {s} {v}"
        );
    }
    let (s, v) = app
        .post_raw(&app.url("incoming-payments"), "{not json")
        .await;
    assert_error(s, &v, 400, "invalid_json");
    let (s, v) = app.post_raw(&app.url("incoming-payments"), "[]").await;
    assert_error(s, &v, 400, "invalid_request");
    let big = format!(
        "{{\"walletAddress\":\"{bob}\",\"metadata\":{{\"x\":\"{}\"}}}}",
        "a".repeat(70_000)
    );
    // Raw bytes, which the test clients do not send: validated explicitly.
    let resp = app
        .http
        .post(app.url("incoming-payments"))
        .body(big)
        .send()
        .await
        .unwrap();
    let s = resp.status();
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE);
    let v: Value = resp.json().await.unwrap();
    assert!(app
        .servers
        .check(&Method::POST, &app.url("incoming-payments"), s, &v));
    assert_eq!(v["error"]["code"], "payload_too_large");
    let (s, v) = app.get(&app.url("incoming-payments/not-an-id")).await;
    assert_error(s, &v, 404, "not_found");
    let (s, v) = app
        .get(&app.url("incoming-payments/01a1fcbb-474c-71b3-8c13-599134842331"))
        .await;
    assert_error(s, &v, 404, "not_found");
    let (s, _, v) = app
        .send(Method::DELETE, &app.url("incoming-payments"), None)
        .await;
    assert_error(s, &v, 405, "method_not_allowed");
}
