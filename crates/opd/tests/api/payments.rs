//! Outgoing payments end to end: alice pays bob on one server (incoming
//! payment → quote → outgoing payment → worker), in one currency and across
//! currencies with fees; funding from the ledger; grant limits (amounts,
//! receiver, intervals, races); expiry; webhooks; the ledger invariant.

use opd_core::Clock as _;
use opd_service::payments::outgoing::lifecycle::Step;
use opd_testkit::app::{Db, TestApp};
use opd_testkit::client::SigningClient;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{amount, spec_rs};

struct World {
    app: TestApp,
    alice: String,
    bob: String,
    payer: SigningClient,
}

async fn world(db: Db) -> World {
    world_with(db, |_| {}).await
}

async fn world_with(db: Db, adjust: impl FnOnce(&mut opd::config::Settings)) -> World {
    let app = TestApp::spawn_with(db, adjust).await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let payer = app.signing_client("payer", 41).await;
    app.deposit("alice", 10_000).await;
    World {
        app,
        alice,
        bob,
        payer,
    }
}

/// An incoming payment of `value` (scale 2) for `wallet` at `app`.
pub(crate) async fn incoming(app: &TestApp, wallet: &str, value: &str, code: &str) -> String {
    let (s, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": wallet, "incomingAmount": amount(value, code, 2) }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    ip["id"].as_str().unwrap().to_owned()
}

async fn quote(app: &TestApp, body: Value) -> Value {
    let (s, q) = app.post(&app.url("quotes"), &body).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    q
}

async fn pay(w: &World, token: &str, body: &Value) -> (StatusCode, Value) {
    let r = w
        .payer
        .send(
            Method::POST,
            &w.app.url("outgoing-payments"),
            Some(token),
            Some(body),
        )
        .await;
    (r.status, r.body)
}

/// An incoming payment of `value` (USD, scale 2) for bob, quoted and
/// paid from alice's wallet address with `token`: the created payment.
async fn pay_bob(w: &World, token: &str, value: &str) -> Value {
    let ip = incoming(&w.app, &w.bob, value, "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let (s, created) = pay(
        w,
        token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    created
}

async fn read(w: &World, token: &str, id: &str) -> Value {
    let r = w.payer.send(Method::GET, id, Some(token), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    spec_rs("get-outgoing-payment", r.status, &r.body);
    r.body
}

async fn balance(app: &TestApp, path: &str) -> String {
    let (_, v) = app
        .admin(
            Method::GET,
            &format!("/wallet-addresses/{path}/balance"),
            None,
        )
        .await;
    v["balance"]["value"].as_str().unwrap().to_owned()
}

async fn ledger_balanced(app: &TestApp) {
    let (_, v) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(v["balanced"], true, "{v}");
}

#[tokio::test]
async fn alice_pays_bob_in_one_currency() {
    alice_pays_bob(Db::Sqlite).await;
}

#[tokio::test]
async fn alice_pays_bob_on_postgres() {
    alice_pays_bob(Db::Postgres).await;
}

async fn alice_pays_bob(db: Db) {
    let w = world(db).await;
    let ip = incoming(&w.app, &w.bob, "2500", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let (s, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"], "metadata": { "order": 7 } }),
    )
    .await;
    spec_rs("create-outgoing-payment", s, &created);
    assert_eq!(created["sentAmount"], amount("0", "USD", 2));
    assert_eq!(created["failed"], false);
    assert_eq!(created["quoteId"], q["id"]);
    assert_eq!(created["debitAmount"], q["debitAmount"]);
    assert_eq!(balance(&w.app, "alice").await, "7500", "funded at creation");
    let id = created["id"].as_str().unwrap();

    // A quote pays once.
    let (s, again) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(
        (s, again["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_quote"))
    );

    let steps = w.app.run_workers().await;
    assert!(
        matches!(steps.as_slice(), [Step::Completed(_)]),
        "{steps:?}"
    );
    let done = read(&w, &token, id).await;
    assert_eq!(done["sentAmount"], amount("2500", "USD", 2));
    assert_eq!(done["failed"], false);
    assert_eq!(done["metadata"]["order"], 7);
    let (_, received) = w.app.get(&ip).await;
    assert_eq!(received["receivedAmount"], amount("2500", "USD", 2));
    assert_eq!(
        received["completed"], true,
        "an incomingAmount reached completes the payment"
    );
    assert!(w.app.run_workers().await.is_empty(), "sent exactly once");

    let listed = w
        .payer
        .send(
            Method::GET,
            &format!(
                "{}?wallet-address={}",
                w.app.url("outgoing-payments"),
                w.alice
            ),
            Some(&token),
            None,
        )
        .await;
    spec_rs("list-outgoing-payments", listed.status, &listed.body);
    assert_eq!(listed.body["result"].as_array().unwrap().len(), 1);
    ledger_balanced(&w.app).await;

    // What bob received is his at once: his balance, which funds his own
    // payment of all of it back to alice.
    assert_eq!(balance(&w.app, "bob").await, "2500", "received, spendable");
    let back = incoming(&w.app, &w.alice, "2500", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.bob, "receiver": back, "method": "ilp" }),
    )
    .await;
    let bob_token = w.app.outgoing_token(&w.payer, &w.bob, Value::Null).await;
    let (s, created) = pay(
        &w,
        &bob_token,
        &json!({ "walletAddress": w.bob, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(
        s,
        StatusCode::CREATED,
        "funded by what bob received: {created}"
    );
    assert_eq!(balance(&w.app, "bob").await, "0");
    let steps = w.app.run_workers().await;
    assert!(
        matches!(steps.as_slice(), [Step::Completed(_)]),
        "{steps:?}"
    );
    assert_eq!(
        balance(&w.app, "alice").await,
        "10000",
        "alice has it all back"
    );
    ledger_balanced(&w.app).await;
    w.app.stop().await;
}

#[tokio::test]
async fn cross_currency_with_fees_and_from_an_incoming_payment() {
    let w = world(Db::Sqlite).await;
    let claire = w.app.create_wallet("claire", "EUR", 2).await;
    w.app
        .admin(
            Method::PUT,
            "/rates/USD",
            Some(&json!({ "rates": { "EUR": "0.91" } })),
        )
        .await;
    w.app
        .admin(
            Method::PUT,
            "/fees/USD/2",
            Some(&json!({ "fixed": "10", "basisPoints": 100 })),
        )
        .await;
    let ip = incoming(&w.app, &claire, "500", "EUR").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    assert_eq!(q["debitAmount"], amount("566", "USD", 2));
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let (s, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    w.app.run_workers().await;
    let done = read(&w, &token, created["id"].as_str().unwrap()).await;
    assert_eq!(
        done["sentAmount"],
        amount("550", "USD", 2),
        "sent excludes the 16 fee"
    );
    let (_, received) = w.app.get(&ip).await;
    assert_eq!(received["receivedAmount"], amount("500", "EUR", 2));
    assert_eq!(balance(&w.app, "alice").await, "9434");
    let (_, claire_balance) = w.app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(claire_balance["balanced"], true, "{claire_balance}");

    // The Web Monetization style: an incoming payment plus a debit amount.
    let open = w
        .app
        .post(
            &w.app.url("incoming-payments"),
            &json!({ "walletAddress": w.bob }),
        )
        .await
        .1["id"]
        .clone();
    let (s, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "incomingPayment": open, "debitAmount": amount("100", "USD", 2), "metadata": { "source": "Web Monetization" } }),
    )
    .await;
    spec_rs("create-outgoing-payment", s, &created);
    assert_eq!(
        created["receiveAmount"],
        amount("89", "USD", 2),
        "100 minus the fee ceil(1) + 10"
    );
    w.app.run_workers().await;
    let done = read(&w, &token, created["id"].as_str().unwrap()).await;
    assert_eq!(done["sentAmount"], amount("89", "USD", 2));
    ledger_balanced(&w.app).await;
}

/// An operator tailing the log at the default level sees each payment
/// created, and completed or failed, with its amounts and why.
#[tokio::test]
async fn payments_are_logged_when_created_completed_and_failed() {
    let (captured, _logging) = crate::capture_logs(tracing::Level::INFO);
    let w = world(Db::Sqlite).await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let mut ids = Vec::new();
    for value in ["300", "200"] {
        let created = pay_bob(&w, &token, value).await;
        ids.push(
            created["id"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned(),
        );
        if value == "300" {
            w.app.run_workers().await;
        }
    }
    // The second one's quote expires before it is sent: it fails.
    w.app.clock.advance_millis(10 * 60 * 1000);
    w.app.run_workers().await;
    let log = captured.text();
    let line = |id: &str, what: &str| {
        log.lines()
            .find(|l| l.contains(what) && l.contains(id))
            .unwrap_or_else(|| panic!("no {what:?} line for {id}:\n{log}"))
            .to_owned()
    };
    let created = line(&ids[0], "outgoing payment created");
    assert!(
        created.contains(" INFO ") && created.contains("debit=300"),
        "{created}"
    );
    assert!(created.contains("wallet_address=alice"), "{created}");
    let completed = line(&ids[0], "outgoing payment completed");
    assert!(
        completed.contains("sent=300") && completed.contains("delivered=300"),
        "{completed}"
    );
    let failed = line(&ids[1], "outgoing payment ended unpaid");
    assert!(
        failed.contains("state=\"failed\"") && failed.contains("reason="),
        "{failed}"
    );
    assert!(!log.contains(&token), "no token in the log");
}

#[tokio::test]
async fn payments_fail_cleanly_and_give_the_money_back() {
    let w = world(Db::Sqlite).await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    // Not enough money: nothing is created.
    let ip = incoming(&w.app, &w.bob, "20000", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let (s, v) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(
        (
            s,
            v["error"]["code"].as_str(),
            v["error"]["description"].as_str()
        ),
        (
            StatusCode::FORBIDDEN,
            Some("insufficient_balance"),
            Some("unauthorized")
        )
    );
    assert_eq!(
        v["error"]["details"]["available"],
        amount("10000", "USD", 2)
    );

    // The quote expires before the worker sends: the payment fails, the
    // money comes back.
    let ip = incoming(&w.app, &w.bob, "300", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let (_, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(balance(&w.app, "alice").await, "9700");
    w.app.clock.advance_millis(301_000);
    let steps = w.app.run_workers().await;
    assert!(matches!(steps.as_slice(), [Step::Failed(..)]), "{steps:?}");
    // Tokens live 600 s; the clock moved 301 s.
    let failed = read(&w, &token, created["id"].as_str().unwrap()).await;
    assert_eq!(failed["failed"], true);
    assert_eq!(failed["sentAmount"], amount("0", "USD", 2));
    assert_eq!(balance(&w.app, "alice").await, "10000");
    // An expired quote cannot be paid either.
    let (s, v) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_quote"))
    );
    ledger_balanced(&w.app).await;
}

#[tokio::test]
async fn grant_limits_amounts_receiver_and_intervals() {
    let w = world(Db::Sqlite).await;
    // 1000 per day, starting today.
    let now = {
        use opd_core::Clock;
        w.app.clock.now()
    };
    let day_start =
        opd_core::Timestamp::from_unix_millis(now.unix_millis() - now.unix_millis() % 86_400_000);
    let limits = json!({ "debitAmount": amount("1000", "USD", 2), "interval": format!("R/{}/P1D", day_start.to_rfc3339()) });
    let token = w.app.outgoing_token(&w.payer, &w.alice, limits).await;
    let open = w
        .app
        .post(
            &w.app.url("incoming-payments"),
            &json!({ "walletAddress": w.bob }),
        )
        .await
        .1["id"]
        .clone();
    let send = |v: &str| json!({ "walletAddress": w.alice, "incomingPayment": open, "debitAmount": amount(v, "USD", 2) });
    let (s, first) = pay(&w, &token, &send("600")).await;
    assert_eq!(s, StatusCode::CREATED, "{first}");
    assert_eq!(
        first["grantSpentDebitAmount"],
        amount("0", "USD", 2),
        "spent before this payment"
    );
    let (s, second) = pay(&w, &token, &send("400")).await;
    assert_eq!(
        second["grantSpentDebitAmount"],
        amount("600", "USD", 2),
        "{second}"
    );
    assert_eq!(s, StatusCode::CREATED);
    let (s, over) = pay(&w, &token, &send("1")).await;
    assert_eq!(
        (
            s,
            over["error"]["code"].as_str(),
            over["error"]["description"].as_str()
        ),
        (
            StatusCode::FORBIDDEN,
            Some("insufficient_grant"),
            Some("unauthorized")
        )
    );
    let spent = w
        .payer
        .send(
            Method::GET,
            &w.app.url("outgoing-payment-grant"),
            Some(&token),
            None,
        )
        .await;
    opd_openapi::assert_response_allow_null(
        opd_openapi::Api::ResourceServer,
        "get-outgoing-payment-grant",
        spent.status.as_u16(),
        &spent.body,
    );
    assert_eq!(spent.body["spentDebitAmount"], amount("1000", "USD", 2));

    // A receiver limit.
    let other = w
        .app
        .post(
            &w.app.url("incoming-payments"),
            &json!({ "walletAddress": w.bob }),
        )
        .await
        .1["id"]
        .clone();
    let pinned = w
        .app
        .outgoing_token(&w.payer, &w.alice, json!({ "receiver": open }))
        .await;
    let (s, v) = pay(&w, &pinned, &json!({ "walletAddress": w.alice, "incomingPayment": other, "debitAmount": amount("5", "USD", 2) })).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("insufficient_grant"))
    );
    let (s, _) = pay(&w, &pinned, &send("5")).await;
    assert_eq!(s, StatusCode::CREATED);
    // A token for alice cannot pay from bob.
    let (s, _) = pay(&w, &pinned, &json!({ "walletAddress": w.bob, "incomingPayment": open, "debitAmount": amount("5", "USD", 2) })).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // The next day the limit is fresh (a new token: the old one expired).
    w.app.clock.advance_millis(86_400_000);
    let manage_token = w.app.outgoing_token(&w.payer, &w.alice, json!({ "debitAmount": amount("1000", "USD", 2), "interval": format!("R/{}/P1D", day_start.to_rfc3339()) })).await;
    let (s, next_day) = pay(&w, &manage_token, &send("1000")).await;
    assert_eq!(s, StatusCode::CREATED, "{next_day}");
}

#[tokio::test]
async fn concurrent_creates_race_for_the_last_unit_of_a_limit() {
    for db in [Db::Sqlite, Db::Postgres] {
        let w = world(db).await;
        let token = w
            .app
            .outgoing_token(
                &w.payer,
                &w.alice,
                json!({ "debitAmount": amount("1000", "USD", 2) }),
            )
            .await;
        let open = w
            .app
            .post(
                &w.app.url("incoming-payments"),
                &json!({ "walletAddress": w.bob }),
            )
            .await
            .1["id"]
            .clone();
        let body = json!({ "walletAddress": w.alice, "incomingPayment": open, "debitAmount": amount("300", "USD", 2) });
        let url = w.app.url("outgoing-payments");
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (payer, token, body, url) =
                    (w.payer.clone(), token.clone(), body.clone(), url.clone());
                tokio::spawn(async move {
                    payer
                        .send(Method::POST, &url, Some(&token), Some(&body))
                        .await
                        .status
                })
            })
            .collect();
        let mut created = 0;
        for t in tasks {
            match t.await.unwrap() {
                StatusCode::CREATED => created += 1,
                StatusCode::FORBIDDEN => {}
                other => panic!("unexpected {other}"),
            }
        }
        assert_eq!(created, 3, "exactly three 300s fit in 1000 ({db:?})");
        assert_eq!(balance(&w.app, "alice").await, "9100");
        ledger_balanced(&w.app).await;
    }
}

#[tokio::test]
async fn webhooks_are_signed_and_retried_until_accepted() {
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let fail_first = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let receiver = {
        let seen = seen.clone();
        let fail_first = fail_first.clone();
        axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
                let seen = seen.clone();
                let fail_first = fail_first.clone();
                async move {
                    if fail_first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                        return StatusCode::SERVICE_UNAVAILABLE;
                    }
                    let sig = headers
                        .get("opd-signature")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    seen.lock().unwrap().push((sig, body));
                    StatusCode::OK
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, receiver).await.unwrap() });

    let app = TestApp::spawn_with(Db::Sqlite, move |s| {
        s.serve.webhook_url = Some(hook);
        s.serve.webhook_secret = Some("whsec-test".into());
    })
    .await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let in_a_minute = {
        use opd_core::Clock;
        app.clock.now().plus_seconds(60).to_rfc3339()
    };
    let (_, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": bob, "expiresAt": in_a_minute }),
        )
        .await;
    app.clock.advance_millis(61_000);
    assert_eq!(
        opd_service::payments::incoming::expire_once(app.services())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        opd_service::payments::incoming::expire_once(app.services())
            .await
            .unwrap(),
        0,
        "announced once"
    );
    // Two events are due: incoming_payment.created (its delivery is refused
    // once) and incoming_payment.expired.
    assert_eq!(
        opd_service::webhooks::deliver_once(app.services())
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the first attempt was refused"
    );
    assert_eq!(
        opd_service::webhooks::deliver_once(app.services())
            .await
            .unwrap(),
        0,
        "backing off"
    );
    app.clock.advance_millis(1_000);
    assert_eq!(
        opd_service::webhooks::deliver_once(app.services())
            .await
            .unwrap(),
        1,
        "retried"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let kinds: Vec<String> = seen
        .iter()
        .map(|(_, b)| {
            serde_json::from_str::<Value>(b).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(
        kinds.iter().any(|k| k == "incoming_payment.created")
            && kinds.iter().any(|k| k == "incoming_payment.expired"),
        "{kinds:?}"
    );
    let (sig, body) = seen
        .iter()
        .find(|(_, b)| b.contains("incoming_payment.expired"))
        .unwrap();
    let event: Value = serde_json::from_str(body).unwrap();
    assert_eq!(event["type"], "incoming_payment.expired");
    assert_eq!(event["data"]["id"], ip["id"]);
    // The receiver checks the signature: HMAC-SHA256 over "<t>.<body>".
    let t: i64 = sig
        .split(", ")
        .next()
        .unwrap()
        .trim_start_matches("t=")
        .parse()
        .unwrap();
    assert_eq!(
        sig,
        &opd_service::webhooks::signature("whsec-test", t, body.as_bytes())
    );
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"whsec-test").unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(sig.ends_with(&format!("v1={hex}")));
}

#[tokio::test]
async fn a_receive_amount_limit_counts_what_receivers_get() {
    let w = world(Db::Sqlite).await;
    let token = w
        .app
        .outgoing_token(
            &w.payer,
            &w.alice,
            json!({ "receiveAmount": amount("500", "USD", 2) }),
        )
        .await;
    let open = w
        .app
        .post(
            &w.app.url("incoming-payments"),
            &json!({ "walletAddress": w.bob }),
        )
        .await
        .1["id"]
        .clone();
    let send = |v: &str| json!({ "walletAddress": w.alice, "incomingPayment": open, "debitAmount": amount(v, "USD", 2) });
    let (s, first) = pay(&w, &token, &send("300")).await;
    assert_eq!(s, StatusCode::CREATED, "{first}");
    let (s, over) = pay(&w, &token, &send("300")).await;
    assert_eq!(
        (s, over["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("insufficient_grant"))
    );
    let (s, fits) = pay(&w, &token, &send("200")).await;
    assert_eq!(s, StatusCode::CREATED, "{fits}");
    assert_eq!(fits["grantSpentReceiveAmount"], amount("300", "USD", 2));
    // A limit in another asset allows nothing.
    let euros = w
        .app
        .outgoing_token(
            &w.payer,
            &w.alice,
            json!({ "receiveAmount": amount("500", "EUR", 2) }),
        )
        .await;
    let (s, _) = pay(&w, &euros, &send("1")).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_workers_never_send_a_payment_twice() {
    for db in [Db::Sqlite, Db::Postgres] {
        let w = world(db).await;
        let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
        let mut receivers = Vec::new();
        for _ in 0..12 {
            let ip = incoming(&w.app, &w.bob, "100", "USD").await;
            let q = quote(
                &w.app,
                json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
            )
            .await;
            let (s, v) = pay(
                &w,
                &token,
                &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
            )
            .await;
            assert_eq!(s, StatusCode::CREATED, "{v}");
            receivers.push(ip);
        }
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let services = w.app.services_arc();
                tokio::spawn(async move {
                    let mut completed = 0;
                    for _ in 0..10_000 {
                        match opd_service::jobs::send_payment(&services).await.unwrap() {
                            Step::Idle => return completed,
                            Step::Completed(_) => completed += 1,
                            other => panic!("{other:?}"),
                        }
                    }
                    panic!("a worker never ran out of work")
                })
            })
            .collect();
        let mut total = 0;
        for t in workers {
            total += t.await.unwrap();
        }
        assert_eq!(
            total, 12,
            "each payment completed by exactly one worker ({db:?})"
        );
        for ip in receivers {
            let (_, v) = w.app.get(&ip).await;
            assert_eq!(v["receivedAmount"]["value"], "100");
        }
        assert_eq!(balance(&w.app, "alice").await, "8800");
        ledger_balanced(&w.app).await;
    }
}

// The CLI (`opd incoming-payment withdraw`) blocks its thread while the
// server answers on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn externally_funded_payments_wait_for_the_operator() {
    externally_funded(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn externally_funded_payments_wait_for_the_operator_on_postgres() {
    externally_funded(Db::Postgres).await;
}

/// External mode: payments are funded by the operator, and what incoming
/// payments receive waits on them until the operator withdraws it, once
/// per key.
async fn externally_funded(db: Db) {
    let w = world_with(db, |s| s.serve.external_funding = true).await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let ip = incoming(&w.app, &w.bob, "300", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let (s, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    assert_eq!(
        balance(&w.app, "alice").await,
        "10000",
        "not funded from the wallet address"
    );
    assert!(
        w.app.run_workers().await.is_empty(),
        "nothing is sent before funding"
    );
    let id = created["id"].as_str().unwrap();
    let uuid = id.rsplit('/').next().unwrap();
    let (s, _) = w
        .app
        .admin(
            Method::POST,
            &format!("/outgoing-payments/{uuid}/fund"),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, v) = w
        .app
        .admin(
            Method::POST,
            &format!("/outgoing-payments/{uuid}/fund"),
            None,
        )
        .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("payment_not_fundable"))
    );
    let steps = w.app.run_workers().await;
    assert!(
        matches!(steps.as_slice(), [Step::Completed(_)]),
        "{steps:?}"
    );
    assert_eq!(
        read(&w, &token, id).await["sentAmount"],
        amount("300", "USD", 2)
    );

    // Received money waits on the incoming payment, not on bob's balance;
    // the completed event and `opd check` say how much.
    assert_eq!(balance(&w.app, "bob").await, "0", "held for the operator");
    let events = w
        .app
        .services()
        .store
        .due_webhook_events(w.app.clock.now().plus_millis(1), 1000)
        .await
        .unwrap();
    let completed: Vec<Value> = events
        .iter()
        .filter(|e| e.kind == opd_core::webhook::EventKind::IncomingPaymentCompleted)
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    assert_eq!(completed.len(), 1);
    assert_eq!(
        completed[0]["data"]["receivedAmount"],
        amount("300", "USD", 2)
    );
    assert_eq!(
        completed[0]["data"]["amountToWithdraw"],
        amount("300", "USD", 2)
    );
    let (_, check) = w.app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(check["balanced"], true, "{check}");
    assert_eq!(
        check["awaitingWithdrawal"],
        json!([amount("300", "USD", 2)])
    );
    let ip_uuid = ip.rsplit('/').next().unwrap();
    let withdrawals = format!("/incoming-payments/{ip_uuid}/withdrawals");
    let key = json!({ "idempotencyKey": "take-1" });
    let (s, first) = w.app.admin(Method::POST, &withdrawals, Some(&key)).await;
    assert_eq!(s, StatusCode::CREATED, "{first}");
    assert_eq!(first["amount"], amount("300", "USD", 2));
    let (s, again) = w.app.admin(Method::POST, &withdrawals, Some(&key)).await;
    assert_eq!((s, &again), (StatusCode::OK, &first), "the first answer");
    // The same from the terminal: the amount in its asset's units, or
    // the first answer with --json.
    let withdraw = |extra: &[&str]| {
        let out = opd_testkit::output(
            std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
                .args(["--admin-listen", w.app.admin.trim_start_matches("http://")])
                .args(["--admin-token", &w.app.admin_token])
                .args([
                    "incoming-payment",
                    "withdraw",
                    ip_uuid,
                    "--idempotency-key",
                    "take-1",
                ])
                .args(extra)
                .env_remove("OPD_CONFIG"),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let printed: Value = serde_json::from_str(&withdraw(&["--json"])).unwrap();
    assert_eq!(printed, first, "the CLI prints the first answer");
    assert_eq!(
        withdraw(&[]),
        format!("withdrew 3.00 USD received by incoming payment {ip_uuid}\n")
    );
    let (s, more) = w
        .app
        .admin(
            Method::POST,
            &withdrawals,
            Some(&json!({ "idempotencyKey": "take-2" })),
        )
        .await;
    assert_eq!(
        (s, more["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("nothing_to_withdraw")),
        "nothing left: {more}"
    );
    let (s, v) = w
        .app
        .admin(
            Method::POST,
            "/incoming-payments/00000000-0000-7000-8000-000000000000/withdrawals",
            Some(&key),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{v}");
    let (_, check) = w.app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(check["balanced"], true, "{check}");
    assert_eq!(check["awaitingWithdrawal"], json!([]));
    assert_eq!(balance(&w.app, "bob").await, "0");

    // Funded, then failed (its receiver completed before it was sent):
    // the money goes back where it came from, the outside world, and never
    // to alice, who was not debited for it.
    let ip = incoming(&w.app, &w.bob, "150", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let (_, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    let id = created["id"].as_str().unwrap();
    let uuid = id.rsplit('/').next().unwrap();
    let fund = format!("/outgoing-payments/{uuid}/fund");
    let (s, _) = w.app.admin(Method::POST, &fund, None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, done) = w.app.post(&format!("{ip}/complete"), &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{done}");
    let steps = w.app.run_workers().await;
    assert!(matches!(steps.as_slice(), [Step::Failed(..)]), "{steps:?}");
    assert_eq!(read(&w, &token, id).await["failed"], true);
    assert_eq!(
        balance(&w.app, "alice").await,
        "10000",
        "refunded to the outside world"
    );
    assert_eq!(balance(&w.app, "bob").await, "0");
    let (_, check) = w.app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(check["balanced"], true, "{check}");
    assert_eq!(check["awaitingWithdrawal"], json!([]), "{check}");

    // Never funded: it fails when its quote expires.
    let ip = incoming(&w.app, &w.bob, "200", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let (_, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    w.app.clock.advance_millis(301_000);
    let steps = w.app.run_workers().await;
    assert!(matches!(steps.as_slice(), [Step::Failed(..)]), "{steps:?}");
    assert_eq!(
        read(&w, &token, created["id"].as_str().unwrap()).await["failed"],
        true
    );
    ledger_balanced(&w.app).await;
}

/// A payment due for sending is announced to the payment workers, so one
/// starts on it at once rather than at its next poll; one waiting for
/// outside funds is announced when it is funded, not before.
#[tokio::test]
async fn payments_are_announced_to_the_workers_when_they_become_due() {
    let w = world_with(Db::Sqlite, |s| s.serve.external_funding = true).await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let due = &w.app.services().payments.due;
    let announced = || async {
        tokio::time::timeout(std::time::Duration::ZERO, due.wait())
            .await
            .is_ok()
    };
    let created = pay_bob(&w, &token, "10").await;
    assert!(!announced().await, "waiting for funds: not due");
    let uuid = created["id"].as_str().unwrap().rsplit('/').next().unwrap();
    let fund = format!("/outgoing-payments/{uuid}/fund");
    let (s, _) = w.app.admin(Method::POST, &fund, None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    assert!(announced().await, "funded: due");
    assert!(!announced().await, "once");
}

/// The housekeeping job fails payments still waiting for outside funds
/// when their quote expires, at most 32 in a pass (it also catches payments
/// left from a time external mode was on, which the payments job no longer
/// looks at). Each fails with its reason and nothing was ever taken from
/// the payer.
#[tokio::test]
async fn housekeeping_fails_unfunded_payments_32_at_a_time() {
    use opd_service::jobs::{Job, Progress};
    let w = world_with(Db::Sqlite, |s| s.serve.external_funding = true).await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let mut ids = Vec::new();
    for _ in 0..33 {
        let created = pay_bob(&w, &token, "10").await;
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    let services = w.app.services();
    let failed = || async {
        let mut n = 0;
        for id in &ids {
            let p = read(&w, &token, id).await;
            if p["failed"] == true {
                n += 1;
            }
        }
        n
    };
    let step = || Job::Housekeeping.step(services);
    assert_eq!(
        step().await.unwrap(),
        Progress::Idle,
        "no quote expired yet"
    );
    assert_eq!(failed().await, 0);
    w.app.clock.advance_millis(301_000);
    assert_eq!(step().await.unwrap(), Progress::Busy);
    assert_eq!(failed().await, 32, "one pass fails 32");
    assert_eq!(step().await.unwrap(), Progress::Busy);
    assert_eq!(failed().await, 33, "the next pass the last one");
    assert_eq!(step().await.unwrap(), Progress::Idle);
    let one = services
        .store
        .get_outgoing_payment(
            opd_core::OutgoingPaymentId::parse(ids[0].rsplit('/').next().unwrap()).unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        one.error.as_deref(),
        Some("the payment was not funded before its quote expired")
    );
    assert_eq!(balance(&w.app, "alice").await, "10000", "never taken");
    assert_eq!(balance(&w.app, "bob").await, "0");
    ledger_balanced(&w.app).await;
}

/// Money a release before this one left on incoming payments' accounts (or
/// that external mode held) moves to the receiving wallet addresses when
/// opd starts in balance mode, exactly once: `opd check` sees the ledger
/// balanced before and after, and in balance mode reports the stranded
/// money until it has moved.
#[tokio::test]
async fn money_left_on_incoming_payments_moves_to_wallets_at_start_up() {
    use opd_core::ledger::Receipts;
    let url = opd_testkit::pg::fresh_schema_url().await;
    // One secrets key for every start: the server's secrets are sealed
    // with it in the database.
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("secrets-key");
    std::fs::write(&key_file, "11".repeat(32)).unwrap();
    let on_db = |s: &mut opd::config::Settings| {
        s.common.database_url = Some(url.clone().into());
        s.serve.migrate = true;
        s.serve.secrets_key_file = Some(key_file.clone());
        s.serve.idp_secret = Some(opd_testkit::app::IDP_SECRET.into());
    };
    // Money held on bob's incoming payment, the way older releases
    // credited every incoming payment.
    let w = world_with(Db::Sqlite, |s| {
        on_db(s);
        s.serve.external_funding = true;
    })
    .await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let ip = incoming(&w.app, &w.bob, "1234", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let (s, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    let uuid = created["id"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_owned();
    let (s, _) = w
        .app
        .admin(
            Method::POST,
            &format!("/outgoing-payments/{uuid}/fund"),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    assert!(matches!(
        w.app.run_workers().await.as_slice(),
        [Step::Completed(_)]
    ));
    assert_eq!(balance(&w.app, "bob").await, "0");
    let store = w.app.services().store.clone();
    let before = opd_service::ledger::check(store.as_ref(), Receipts::ToWallet)
        .await
        .unwrap();
    assert_eq!(before.problems.len(), 1, "{before:?}");
    assert!(
        before.problems[0].starts_with("incoming payment account"),
        "{before:?}"
    );
    let held = opd_service::ledger::check(store.as_ref(), Receipts::Held)
        .await
        .unwrap();
    assert!(held.problems.is_empty(), "balanced: {held:?}");
    w.app.stop().await;
    // The operator's command says the same.
    let cwd = tempfile::tempdir().unwrap();
    let check = |extra: &[&str]| {
        let out = opd_testkit::output(
            std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
                .args(["check", &format!("--database-url={url}")])
                .args(extra)
                .current_dir(cwd.path())
                .env_remove("OPD_CONFIG")
                .env_remove("OPD_EXTERNAL_FUNDING"),
        );
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (ok, text) = check(&[]);
    assert!(!ok && text.contains("incoming payment account"), "{text}");
    let (ok, text) = check(&["--external-funding"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("await the withdrawal of 1234") && text.contains("ledger balanced"),
        "{text}"
    );

    // A start of opd, on the database, in external-funding mode or not.
    let start = |external: bool| {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = opd::config::Settings::for_data_dir(dir.path());
        let any_port = "127.0.0.1:0".parse().unwrap();
        settings.serve.listen = any_port;
        settings.serve.auth_listen = any_port;
        settings.common.admin_listen = any_port;
        settings.serve.ilp_listen = any_port;
        settings.serve.workers = false;
        settings.serve.external_funding = external;
        on_db(&mut settings);
        async move {
            let running = opd::app::start(
                settings,
                std::sync::Arc::new(opd_core::ManualClock::new(opd_core::Timestamp::now_utc())),
                std::sync::Arc::new(opd_core::SeededRandom::new(43)),
            )
            .await
            .unwrap();
            (running, dir)
        }
    };
    let settles = |transfers: Vec<opd_core::ledger::Transfer>| {
        transfers
            .into_iter()
            .filter(|t| t.kind == opd_core::ledger::TransferKind::Settle)
            .count()
    };
    // Restarted in external-funding mode, opd moves nothing: the operator
    // may have paid the money out already.
    let (running, _dir) = start(true).await;
    let services = &running.services;
    let bob = opd_service::wallets::by_path(services, &opd_core::TenantId::operator(), "bob")
        .await
        .unwrap();
    let got = opd_service::ledger::balance(services, &bob).await.unwrap();
    assert_eq!(got.value, 0, "external mode: nothing moved to bob");
    let all = services.store.ledger_all_transfers().await.unwrap();
    assert_eq!(settles(all), 0, "external mode: no transfer moved it");
    let held = opd_service::ledger::check(services.store.as_ref(), Receipts::Held)
        .await
        .unwrap();
    assert!(held.problems.is_empty(), "balanced: {held:?}");
    running.shutdown().await.unwrap();
    let (ok, text) = check(&["--external-funding"]);
    assert!(
        ok && text.contains("await the withdrawal of 1234"),
        "{text}"
    );

    // opd starts again in balance mode, twice: the money moves once.
    for start_number in 0..2 {
        let (running, _dir) = start(false).await;
        let start = start_number;
        let services = &running.services;
        let after = opd_service::ledger::check(services.store.as_ref(), Receipts::ToWallet)
            .await
            .unwrap();
        assert!(after.problems.is_empty(), "start {start}: {after:?}");
        let bob = opd_service::wallets::by_path(services, &opd_core::TenantId::operator(), "bob")
            .await
            .unwrap();
        let got = opd_service::ledger::balance(services, &bob).await.unwrap();
        assert_eq!(
            got.value, 1234,
            "start {start}: bob has what he received, once"
        );
        let moved = settles(services.store.ledger_all_transfers().await.unwrap());
        assert_eq!(moved, 1, "start {start}: one transfer moved it");
        running.shutdown().await.unwrap();
    }
    let (ok, text) = check(&[]);
    assert!(ok && text.contains("ledger balanced"), "{text}");
}

#[tokio::test]
async fn one_grant_spends_its_limit_afresh_in_each_interval() {
    spends_afresh_in_each_interval(Db::Sqlite).await;
}

#[tokio::test]
async fn one_grant_spends_its_limit_afresh_in_each_interval_on_postgres() {
    spends_afresh_in_each_interval(Db::Postgres).await;
}

async fn spends_afresh_in_each_interval(db: Db) {
    // Tokens live three days here, so one grant (one token) spans two of
    // its daily intervals: what it spent yesterday does not count today.
    let w = world_with(db, |s| s.serve.access_token_ttl_secs = 3 * 86_400).await;
    let now = w.app.clock.now();
    let day_start =
        opd_core::Timestamp::from_unix_millis(now.unix_millis() - now.unix_millis() % 86_400_000);
    let limits = json!({ "debitAmount": amount("1000", "USD", 2), "interval": format!("R/{}/P1D", day_start.to_rfc3339()) });
    let token = w.app.outgoing_token(&w.payer, &w.alice, limits).await;
    let open = w
        .app
        .post(
            &w.app.url("incoming-payments"),
            &json!({ "walletAddress": w.bob }),
        )
        .await
        .1["id"]
        .clone();
    let send = |v: &str| json!({ "walletAddress": w.alice, "incomingPayment": open, "debitAmount": amount(v, "USD", 2) });
    let spent = || async {
        let r = w
            .payer
            .send(
                Method::GET,
                &w.app.url("outgoing-payment-grant"),
                Some(&token),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body["spentDebitAmount"].clone()
    };
    let refused = |(s, v): (StatusCode, Value)| {
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (StatusCode::FORBIDDEN, Some("insufficient_grant")),
            "{v}"
        );
    };

    // Day one: 700 of 1000; 400 more would pass the limit.
    let (s, first) = pay(&w, &token, &send("700")).await;
    assert_eq!(s, StatusCode::CREATED, "{first}");
    refused(pay(&w, &token, &send("400")).await);
    assert_eq!(spent().await, amount("700", "USD", 2));
    w.app.run_workers().await;

    // Day two, the same token: the limit is whole again, and counts only
    // today's payments.
    w.app.clock.advance_millis(86_400_000);
    let today = spent().await;
    assert!(
        today.is_null() || today == amount("0", "USD", 2),
        "nothing spent yet today: {today}"
    );
    let (s, second) = pay(&w, &token, &send("700")).await;
    assert_eq!(s, StatusCode::CREATED, "{second}");
    assert_eq!(
        second["grantSpentDebitAmount"],
        amount("0", "USD", 2),
        "spent today before this payment"
    );
    refused(pay(&w, &token, &send("400")).await);
    let (s, third) = pay(&w, &token, &send("300")).await;
    assert_eq!(s, StatusCode::CREATED, "{third}");
    assert_eq!(third["grantSpentDebitAmount"], amount("700", "USD", 2));
    assert_eq!(spent().await, amount("1000", "USD", 2));
    refused(pay(&w, &token, &send("1")).await);

    // The money: 1700 left alice, all of it reached bob.
    w.app.run_workers().await;
    for p in [&first, &second, &third] {
        let done = read(&w, &token, p["id"].as_str().unwrap()).await;
        assert_eq!(done["sentAmount"], p["debitAmount"], "{done}");
    }
    assert_eq!(balance(&w.app, "alice").await, "8300");
    assert_eq!(balance(&w.app, "bob").await, "1700");
    ledger_balanced(&w.app).await;
}

#[tokio::test]
async fn a_receiving_wallet_address_deactivated_after_the_quote_gets_nothing() {
    let w = world(Db::Sqlite).await;
    let ip = incoming(&w.app, &w.bob, "500", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let (s, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    assert_eq!(balance(&w.app, "alice").await, "9500", "funded at creation");

    // The operator closes bob's account before the payment is sent: as a
    // quote to it would be refused, the payment fails with the money back.
    let (s, v) = w
        .app
        .admin(Method::POST, "/wallet-addresses/bob/deactivate", None)
        .await;
    assert!(s.is_success(), "{s} {v}");
    let steps = w.app.run_workers().await;
    match steps.as_slice() {
        [Step::Failed(_, reason)] => assert_eq!(reason, "the receiving wallet address is inactive"),
        other => panic!("{other:?}"),
    }
    let done = read(&w, &token, created["id"].as_str().unwrap()).await;
    assert_eq!(done["failed"], true);
    assert_eq!(done["sentAmount"], amount("0", "USD", 2));
    assert_eq!(balance(&w.app, "alice").await, "10000");
    let received = w
        .app
        .services()
        .store
        .get_incoming_payment(
            opd_core::IncomingPaymentId::parse(ip.rsplit('/').next().unwrap()).unwrap(),
        )
        .await
        .unwrap()
        .unwrap()
        .received_amount;
    assert_eq!(received, 0);
    ledger_balanced(&w.app).await;

    // The same check answers a new quote to it up front.
    let (s, v) = w
        .app
        .post(
            &w.app.url("quotes"),
            &json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"]["code"], "invalid_receiver", "{v}");
    assert_eq!(
        v["error"]["details"]["reason"], "the receiving wallet address is inactive",
        "{v}"
    );
}

/// A webhook's `data` is the resource as a client reads it: the same Open
/// Payments view (`failed`, `metadata`, ...), plus opd's additions (an
/// outgoing payment's `state`, a finished incoming payment's
/// `amountToWithdraw`), and nothing else.
#[tokio::test]
async fn webhooks_carry_the_view_a_client_reads() {
    let w = world(Db::Sqlite).await;
    let ip = incoming(&w.app, &w.bob, "1200", "USD").await;
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let (s, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"], "metadata": { "order": 9 } }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap();
    let steps = w.app.run_workers().await;
    assert!(
        matches!(steps.as_slice(), [Step::Completed(_)]),
        "{steps:?}"
    );
    let events = w
        .app
        .services()
        .store
        .due_webhook_events(w.app.clock.now().plus_millis(1), 1000)
        .await
        .unwrap();
    let data_of = |kind: opd_core::webhook::EventKind| -> Value {
        let found: Vec<Value> = events
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| serde_json::from_str::<Value>(&e.data).unwrap()["data"].clone())
            .collect();
        assert_eq!(found.len(), 1, "{kind:?}: {found:?}");
        found[0].clone()
    };

    let mut expected = read(&w, &token, id).await;
    expected["state"] = json!("completed");
    let sent = data_of(opd_core::webhook::EventKind::OutgoingPaymentCompleted);
    assert_eq!(sent, expected);
    assert_eq!(sent["metadata"]["order"], 9);
    assert_eq!(sent["failed"], false);

    // Payment methods (STREAM credentials) are for payers: never in a
    // webhook (a completed payment offers none anyway).
    let (_, mut expected) = w.app.get(&ip).await;
    let methods = expected.as_object_mut().unwrap().remove("methods");
    assert_eq!(methods, Some(json!([])), "{expected}");
    expected["amountToWithdraw"] = amount("0", "USD", 2);
    assert_eq!(
        data_of(opd_core::webhook::EventKind::IncomingPaymentCompleted),
        expected
    );
}

/// `TestApp::run_jobs` drives the list of background jobs `opd serve` runs:
/// one call sends the due payment, announces the expired incoming payment
/// and delivers every webhook, each once, and then everything is idle.
#[tokio::test]
async fn the_background_jobs_do_everything_that_is_due_and_stop() {
    let hooks = opd_testkit::webhooks::WebhookReceiver::start("whsec-jobs", 0).await;
    let url = hooks.url(0, 0);
    let w = world_with(Db::Sqlite, move |s| {
        s.serve.webhook_url = Some(url);
        s.serve.webhook_secret = Some("whsec-jobs".into());
    })
    .await;
    let ip = incoming(&w.app, &w.bob, "500", "USD").await;
    let soon = {
        use opd_core::Clock;
        w.app.clock.now().plus_seconds(60).to_rfc3339()
    };
    let (s, lapsing) = w
        .app
        .post(
            &w.app.url("incoming-payments"),
            &json!({ "walletAddress": w.bob, "expiresAt": soon }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{lapsing}");
    let q = quote(
        &w.app,
        json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" }),
    )
    .await;
    let token = w.app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let (s, created) = pay(
        &w,
        &token,
        &json!({ "walletAddress": w.alice, "quoteId": q["id"] }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    w.app.clock.advance_millis(61_000);

    let steps = w.app.run_jobs().await;
    assert!(
        matches!(steps.as_slice(), [Step::Completed(_)]),
        "{steps:?}"
    );
    let change = |kind: &str, id: &Value| (kind.to_owned(), id.as_str().unwrap().to_owned());
    let expected: std::collections::BTreeSet<(String, String)> = [
        change("incoming_payment.created", &json!(ip)),
        change("incoming_payment.created", &lapsing["id"]),
        change("incoming_payment.completed", &json!(ip)),
        change("incoming_payment.expired", &lapsing["id"]),
        change("outgoing_payment.created", &created["id"]),
        change("outgoing_payment.completed", &created["id"]),
    ]
    .into();
    assert_eq!(hooks.accepted(), expected);
    hooks.assert_each_once(Some(&expected));
    assert_eq!(balance(&w.app, "bob").await, "500");
    assert!(w.app.run_jobs().await.is_empty(), "nothing left to do");
    assert_eq!(hooks.arrivals().len(), expected.len(), "nothing sent twice");
}

#[tokio::test]
async fn a_delivery_that_would_overflow_the_receivers_balance_fails_with_the_money_back() {
    overflowing_delivery(Db::Sqlite).await;
}

#[tokio::test]
async fn a_delivery_that_would_overflow_the_receivers_balance_fails_on_postgres() {
    overflowing_delivery(Db::Postgres).await;
}

/// With 18 decimals u64::MAX is about 18.4 units: dave holds all but 50
/// of it, and carol pays him 100. The ledger refuses the credit; the
/// payment fails with its reason and carol gets her money back, every
/// balance to the unit.
async fn overflowing_delivery(db: Db) {
    let app = TestApp::spawn_with(db, |_| {}).await;
    let carol = app.create_wallet("carol", "ETH", 18).await;
    let dave = app.create_wallet("dave", "ETH", 18).await;
    let payer = app.signing_client("payer", 41).await;
    app.deposit("carol", 1_000).await;
    let nearly_full = u64::MAX - 50;
    app.deposit("dave", nearly_full).await;
    let (s, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": dave, "incomingAmount": amount("100", "ETH", 18) }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let q = quote(
        &app,
        json!({ "walletAddress": carol, "receiver": ip["id"], "method": "ilp" }),
    )
    .await;
    let token = app.outgoing_token(&payer, &carol, Value::Null).await;
    let r = payer
        .send(
            Method::POST,
            &app.url("outgoing-payments"),
            Some(&token),
            Some(&json!({ "walletAddress": carol, "quoteId": q["id"] })),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(balance(&app, "carol").await, "900");
    let steps = app.run_workers().await;
    match steps.as_slice() {
        [Step::Failed(_, reason)] => assert!(reason.contains("cannot hold the amount"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let id = r.body["id"].as_str().unwrap();
    let done = payer.send(Method::GET, id, Some(&token), None).await;
    assert_eq!(done.body["failed"], true, "{}", done.body);
    assert_eq!(done.body["sentAmount"], amount("0", "ETH", 18));
    assert_eq!(balance(&app, "carol").await, "1000");
    assert_eq!(balance(&app, "dave").await, nearly_full.to_string());
    let (_, ip) = app.get(ip["id"].as_str().unwrap()).await;
    assert_eq!(ip["receivedAmount"]["value"], "0", "{ip}");
    ledger_balanced(&app).await;
    // Nothing is left to retry.
    assert!(app.run_workers().await.is_empty());
}
