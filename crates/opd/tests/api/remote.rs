//! Receivers on other Open Payments servers: two opd servers, A in USD and
//! B in EUR, peered over ILP-over-HTTP through their admin APIs. A quotes
//! an incoming payment of bob@B: it resolves the receiver as an Open
//! Payments client (a grant at B's authorization server, then the signed
//! GET), probes the Interledger path to learn its rate, and quotes at the
//! configured rate less the slippage allowance.

use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use opd_service::payments::outgoing::lifecycle::Step;

use crate::amount;

pub(crate) struct Pair {
    pub(crate) a: TestApp,
    pub(crate) b: TestApp,
}

pub(crate) async fn node(db: Db, address: &str) -> TestApp {
    let address = address.to_owned();
    TestApp::spawn_with(db, move |s| s.serve.ilp_address = address).await
}

pub(crate) async fn admin_ok(app: &TestApp, method: Method, path: &str, body: Value) -> Value {
    let (s, v) = app.admin(method, path, Some(&body)).await;
    assert!(s.is_success(), "{path}: {s} {v}");
    v
}

pub(crate) async fn set_rate(app: &TestApp, rate: &str) {
    admin_ok(
        app,
        Method::PUT,
        "/rates/USD",
        json!({ "rates": { "EUR": rate } }),
    )
    .await;
}

/// A (USD) and B (EUR), peered in USD: A sends to B everything under
/// `test.b`; B credits what A sends from A's liquidity at B.
async fn pair() -> Pair {
    pair_with(1_000_000, None).await
}

/// [`pair`] with both servers on `db`.
async fn pair_on(db: Db) -> Pair {
    pair_of(
        node(db, "test.a").await,
        node(db, "test.b").await,
        1_000_000,
        None,
    )
    .await
}

/// [`pair`], with A's liquidity at B and the largest packet B takes from A.
pub(crate) async fn pair_with(liquidity: u64, max_packet: Option<u64>) -> Pair {
    let (a, b) = (
        node(Db::Sqlite, "test.a").await,
        node(Db::Sqlite, "test.b").await,
    );
    pair_of(a, b, liquidity, max_packet).await
}

pub(crate) async fn pair_of(
    mut a: TestApp,
    mut b: TestApp,
    liquidity: u64,
    max_packet: Option<u64>,
) -> Pair {
    // Each side's clients validate the responses of both servers.
    a.know(&b);
    b.know(&a);
    let usd = json!({ "code": "USD", "scale": 2 });
    admin_ok(
        &a,
        Method::POST,
        "/peers",
        json!({ "name": "b", "staticIlpAddress": "test.b", "asset": usd, "routes": ["test.b"],
                "http": { "outgoing": { "endpoint": b.ilp, "authToken": "a-to-b" },
                          "incoming": { "authTokens": ["b-to-a"] } } }),
    )
    .await;
    let mut a_at_b = json!({ "name": "a", "staticIlpAddress": "test.a", "asset": usd, "routes": ["test.a"],
            "http": { "outgoing": { "endpoint": a.ilp, "authToken": "b-to-a" },
                      "incoming": { "authTokens": ["a-to-b"] } } });
    if let Some(max) = max_packet {
        a_at_b["maxPacketAmount"] = json!(max.to_string());
    }
    let a_at_b = admin_ok(&b, Method::POST, "/peers", a_at_b).await;
    let id = a_at_b["id"].as_str().unwrap();
    admin_ok(
        &b,
        Method::POST,
        &format!("/peers/{id}/deposits"),
        json!({ "amount": liquidity.to_string(), "idempotencyKey": "a-liquidity" }),
    )
    .await;
    set_rate(&a, "0.9").await;
    set_rate(&b, "0.9").await;
    Pair { a, b }
}

pub(crate) async fn incoming_at_b(b: &TestApp, value: &str) -> String {
    let bob = b.create_wallet("bob", "EUR", 2).await;
    let (s, ip) = b
        .post(
            &b.url("incoming-payments"),
            &json!({ "walletAddress": bob, "incomingAmount": amount(value, "EUR", 2) }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    ip["id"].as_str().unwrap().to_owned()
}

pub(crate) async fn quote(
    a: &TestApp,
    alice: &str,
    receiver: &str,
    target: Value,
) -> (StatusCode, Value) {
    let mut body = json!({ "walletAddress": alice, "receiver": receiver, "method": "ilp" });
    for (k, v) in target.as_object().unwrap() {
        body[k] = v.clone();
    }
    a.post(&a.url("quotes"), &body).await
}

#[tokio::test]
async fn a_quote_to_another_servers_receiver_probes_the_path() {
    let Pair { a, b } = pair().await;
    let alice = a.create_wallet("alice", "USD", 2).await;
    let receiver = incoming_at_b(&b, "1000").await;

    // Fixed delivery: 1000 EUR cents at 0.9 less 1 % (0.891) cost
    // ceil(1000 / 0.891) = 1123 USD cents.
    let (s, q) = quote(
        &a,
        &alice,
        &receiver,
        json!({ "receiveAmount": amount("1000", "EUR", 2) }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    assert_eq!(q["receiveAmount"], amount("1000", "EUR", 2));
    assert_eq!(q["debitAmount"], amount("1123", "USD", 2));
    assert_eq!(q["receiver"], receiver);

    // Fixed send: 500 USD cents deliver at least floor(500 × 0.891) = 445.
    let (s, q) = quote(
        &a,
        &alice,
        &receiver,
        json!({ "debitAmount": amount("500", "USD", 2) }),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    assert_eq!(q["receiveAmount"], amount("445", "EUR", 2));

    // The grant at B is kept (sealed) and reused: another quote asks for
    // no new one.
    let store = a.services().store.clone();
    let (_, public) = a.get_public(&receiver).await;
    let setting = kept_grant_setting(&public, &receiver);
    let kept = store
        .get_setting(&setting)
        .await
        .unwrap()
        .expect("grant kept");
    assert!(!kept.contains("GNAP") && kept.starts_with("v1:"));
    let (s, q) = quote(&a, &alice, &receiver, json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    assert_eq!(q["receiveAmount"], amount("1000", "EUR", 2));
    assert_eq!(
        store.get_setting(&setting).await.unwrap(),
        Some(kept.clone())
    );

    // A token B no longer accepts is replaced by a new grant, once.
    let services = a.services();
    let bogus = json!({ "value": "revoked-token", "manage": format!("{}/token/x", b.auth), "expires_at": null });
    opd_service::platform::secrets::put_sealed(
        store.as_ref(),
        services.random.as_ref(),
        &services.config.secrets_key,
        &setting,
        bogus.to_string().as_bytes(),
    )
    .await
    .unwrap();
    let (s, q) = quote(&a, &alice, &receiver, json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    let renewed = store.get_setting(&setting).await.unwrap().unwrap();
    assert_ne!(renewed, kept);
}

#[tokio::test]
async fn a_path_converting_below_the_slippage_allowance_is_refused() {
    let Pair { a, b } = pair().await;
    let alice = a.create_wallet("alice", "USD", 2).await;
    let receiver = incoming_at_b(&b, "1000").await;
    // B now converts at 0.85: under 0.9 less 1 %.
    set_rate(&b, "0.85").await;
    let (s, q) = quote(
        &a,
        &alice,
        &receiver,
        json!({ "debitAmount": amount("500", "USD", 2) }),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
    assert_eq!(q["error"]["code"], "insufficient_exchange_rate");
}

#[tokio::test]
async fn unreachable_unknown_and_completed_receivers_are_invalid() {
    let Pair { a, b } = pair().await;
    let alice = a.create_wallet("alice", "USD", 2).await;
    let target = json!({ "debitAmount": amount("500", "USD", 2) });
    let invalid = |(s, q): (StatusCode, Value)| {
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
        assert_eq!(q["error"]["code"], "invalid_receiver");
        assert_eq!(q["error"]["description"], "invalid receiver");
    };
    // Nobody listens there.
    let nowhere = "http://127.0.0.1:9/incoming-payments/0190a1b2-0000-7000-8000-000000000000";
    invalid(quote(&a, &alice, nowhere, target.clone()).await);
    // B does not know this one.
    let unknown = b.url("incoming-payments/0190a1b2-0000-7000-8000-000000000000");
    invalid(quote(&a, &alice, &unknown, target.clone()).await);
    // Completed at B.
    let receiver = incoming_at_b(&b, "1000").await;
    let (s, v) = b.post(&format!("{receiver}/complete"), &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    invalid(quote(&a, &alice, &receiver, target).await);
}

pub(crate) async fn balance(app: &TestApp, path: &str) -> String {
    let (s, v) = app
        .admin(
            Method::GET,
            &format!("/wallet-addresses/{path}/balance"),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["balance"]["value"].as_str().unwrap().to_owned()
}

/// The id of the peer named `name` at `app`.
pub(crate) async fn peer_id(app: &TestApp, name: &str) -> String {
    let (_, peers) = app.admin(Method::GET, "/peers", None).await;
    let all = peers["peers"].as_array().or(peers.as_array()).unwrap();
    let peer = all.iter().find(|p| p["name"] == name).unwrap();
    peer["id"].as_str().unwrap().to_owned()
}

/// The balance of the peer named `name` at `app`.
pub(crate) async fn peer_balance(app: &TestApp, name: &str) -> u64 {
    let id = peer_id(app, name).await;
    let (_, v) = app
        .admin(Method::GET, &format!("/peers/{id}/balance"), None)
        .await;
    v["balance"].as_str().unwrap().parse().unwrap()
}

pub(crate) async fn balanced(app: &TestApp) {
    let (s, v) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!((s, &v["balanced"]), (StatusCode::OK, &json!(true)), "{v}");
}

/// alice@A (10 000 USD cents) paying bob@B's incoming payment of 1000 EUR
/// cents: the quote made, the outgoing payment created, nothing sent yet.
pub(crate) struct Paying {
    pub(crate) a: TestApp,
    pub(crate) b: TestApp,
    pub(crate) receiver: String,
    pub(crate) id: String,
    pub(crate) payer: opd_testkit::client::SigningClient,
    pub(crate) token: String,
}

pub(crate) async fn paying(Pair { a, b }: Pair) -> Paying {
    let alice = a.create_wallet("alice", "USD", 2).await;
    a.deposit("alice", 10_000).await;
    let receiver = incoming_at_b(&b, "1000").await;
    let (s, q) = quote(&a, &alice, &receiver, json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    assert_eq!(q["debitAmount"], amount("1123", "USD", 2));
    let payer = a.signing_client("payer", 41).await;
    let token = a.outgoing_token(&payer, &alice, Value::Null).await;
    let r = payer
        .send(
            Method::POST,
            &a.url("outgoing-payments"),
            Some(&token),
            Some(&json!({ "walletAddress": alice, "quoteId": q["id"] })),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["sentAmount"], amount("0", "USD", 2));
    assert_eq!(balance(&a, "alice").await, "8877", "funded at creation");
    Paying {
        a,
        b,
        receiver,
        id: r.body["id"].as_str().unwrap().to_owned(),
        payer,
        token,
    }
}

impl Paying {
    /// The payment as alice's client reads it at A.
    pub(crate) async fn read(&self) -> Value {
        let r = self
            .payer
            .send(Method::GET, &self.id, Some(&self.token), None)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body
    }

    /// The payer's listing of alice's outgoing payments reads, whatever
    /// the payments hold.
    pub(crate) async fn listing_reads(&self) {
        let url = format!(
            "{}?wallet-address={}&first=100",
            self.a.url("outgoing-payments"),
            self.a.url("alice")
        );
        let list = self
            .payer
            .send(Method::GET, &url, Some(&self.token), None)
            .await;
        assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    }

    /// Its `sentAmount` value.
    pub(crate) async fn sent(&self) -> u64 {
        let p = self.read().await;
        p["sentAmount"]["value"].as_str().unwrap().parse().unwrap()
    }

    /// Runs A's worker until nothing is due; the one step it took.
    pub(crate) async fn step(&self) -> Step {
        let steps = self.a.run_workers().await;
        match steps.as_slice() {
            [one] => one.clone(),
            other => panic!("expected one step: {other:?}"),
        }
    }

    /// bob at B has exactly what his incoming payment says it received,
    /// on his balance (B credits received money to the wallet address).
    pub(crate) async fn bob_has(&self, value: &str) {
        let (_, got) = self.b.get(&self.receiver).await;
        assert_eq!(got["receivedAmount"], amount(value, "EUR", 2), "{got}");
        assert_eq!(balance(&self.b, "bob").await, value, "bob's balance at B");
        balanced(&self.b).await;
    }

    /// It failed and alice has all her money back; bob got nothing.
    pub(crate) async fn failed_with_money_back(&self) {
        assert_eq!(self.read().await["failed"], true);
        assert_eq!(balance(&self.a, "alice").await, "10000");
        balanced(&self.a).await;
        self.bob_has("0").await;
    }
}

#[tokio::test]
async fn alice_at_a_pays_bob_at_b_over_interledger() {
    alice_pays_bob_across_servers(Db::Sqlite).await;
}

#[tokio::test]
async fn alice_at_a_pays_bob_at_b_over_interledger_on_postgres() {
    alice_pays_bob_across_servers(Db::Postgres).await;
}

async fn alice_pays_bob_across_servers(db: Db) {
    let w = paying(pair_on(db).await).await;
    assert!(matches!(w.step().await, Step::Completed(_)));
    // B's incoming payment has exactly the quoted amount, and completed.
    let (_, got) = w.b.get(&w.receiver).await;
    assert_eq!(got["receivedAmount"], amount("1000", "EUR", 2));
    assert_eq!(got["completed"], true);
    w.bob_has("1000").await;
    // A's payment: sent what 1000 EUR cents cost at B's rate (0.9, rounded
    // down per packet), at most the quoted debit; the rest back to alice.
    assert_eq!(w.read().await["failed"], false);
    let sent = w.sent().await;
    assert!((1112..=1123).contains(&sent), "sent {sent}");
    assert_eq!(balance(&w.a, "alice").await, (10_000 - sent).to_string());
    // The grant counts what alice paid (no fee here), not the quoted debit.
    let spent = w
        .payer
        .send(
            Method::GET,
            &w.a.url("outgoing-payment-grant"),
            Some(&w.token),
            None,
        )
        .await;
    assert_eq!(spent.status, StatusCode::OK, "{}", spent.body);
    assert_eq!(
        spent.body["spentDebitAmount"],
        amount(&sent.to_string(), "USD", 2)
    );
    // Each fulfilled packet moved its amount to the peer that carried it,
    // at A, and out of A's liquidity at B.
    assert_eq!(peer_balance(&w.a, "b").await, sent);
    assert_eq!(peer_balance(&w.b, "a").await, 1_000_000 - sent);
    let events =
        w.a.services()
            .store
            .due_webhook_events(opd_core::Timestamp::from_unix_millis(i64::MAX / 2), 100)
            .await
            .unwrap();
    let completed: Vec<_> = events
        .iter()
        .filter(|e| e.kind.as_str() == "outgoing_payment.completed")
        .collect();
    assert_eq!(completed.len(), 1, "{events:?}");
    assert!(completed[0].data.contains(&format!("\"value\":\"{sent}\"")));
    balanced(&w.a).await;
    balanced(&w.b).await;
    assert!(w.a.run_workers().await.is_empty(), "sent exactly once");
}

#[tokio::test]
async fn a_peer_out_of_liquidity_pauses_the_payment_until_it_is_funded() {
    // B takes packets of at most 300 from A, and holds 500 of A's money.
    let w = paying(pair_with(500, Some(300)).await).await;
    // Packets of 300 go until B answers T04: the payment pauses, part sent.
    assert!(matches!(w.step().await, Step::Waiting(_)));
    assert_eq!(w.read().await["failed"], false);
    let sent = w.sent().await;
    assert!(
        sent > 0 && sent <= 500,
        "sent {sent} before the liquidity ran out"
    );
    let (_, got) = w.b.get(&w.receiver).await;
    assert_eq!(got["completed"], false);
    // What arrived so far is on bob's balance already.
    w.bob_has(got["receivedAmount"]["value"].as_str().unwrap())
        .await;

    // The operator at B adds liquidity; A retries after its delay and the
    // payment completes with exactly the quoted delivery.
    let a_at_b = peer_id(&w.b, "a").await;
    admin_ok(
        &w.b,
        Method::POST,
        &format!("/peers/{a_at_b}/deposits"),
        json!({ "amount": "100000", "idempotencyKey": "more" }),
    )
    .await;
    w.a.clock.advance_millis(1_000);
    assert!(matches!(w.step().await, Step::Completed(_)));
    w.bob_has("1000").await;
    let sent = w.sent().await;
    assert_eq!(balance(&w.a, "alice").await, (10_000 - sent).to_string());
    balanced(&w.a).await;
    balanced(&w.b).await;
}

#[tokio::test]
async fn a_rate_moved_beyond_the_quote_fails_the_payment_with_the_money_back() {
    let w = paying(pair().await).await;
    set_rate(&w.b, "0.85").await;
    assert!(matches!(w.step().await, Step::Failed(..)));
    assert_eq!(w.sent().await, 0);
    w.failed_with_money_back().await;
}

/// What a probe found is kept a few seconds per path: a quote in that time
/// does not probe again. A kept rate never weakens a payment (its packets
/// still ask the receiver for the quoted rate), and a step that learns
/// the path changed forgets it, so the next quote probes anew.
#[tokio::test]
async fn a_kept_path_serves_quotes_for_a_few_seconds_until_a_payment_finds_it_changed() {
    let w = paying(pair().await).await;
    set_rate(&w.b, "0.85").await;
    let alice = w.a.url("alice");
    let debit = json!({ "debitAmount": amount("500", "USD", 2) });
    let (s, q) = quote(&w.a, &alice, &w.receiver, debit.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "kept path, no new probe: {q}");
    assert_eq!(q["receiveAmount"], amount("445", "EUR", 2));
    // The payment's packets ask B for the quoted rate; B converts at 0.85
    // now and refuses them: nothing delivered, the money back.
    assert!(matches!(w.step().await, Step::Failed(..)));
    assert_eq!(w.sent().await, 0);
    w.failed_with_money_back().await;
    // That step forgot the path: a new quote probes, and is refused.
    let (s, q) = quote(&w.a, &alice, &w.receiver, debit).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
    assert_eq!(q["error"]["code"], "insufficient_exchange_rate");
}

/// A kept rate below the quote's is probed again before a payment gives up
/// on it: a kept probe may be older than the rate now.
#[tokio::test]
async fn a_kept_rate_below_the_quotes_is_probed_again_before_the_payment_fails() {
    let w = paying(pair().await).await;
    // The kept path lapses; B converts at 0.85 when the next quote probes
    // it. That quote is refused, and what its probe found is kept.
    set_rate(&w.b, "0.85").await;
    w.a.clock.advance_millis(6_000);
    crate::hostile::sync_clocks(&w.a, &w.b);
    let alice = w.a.url("alice");
    let debit = json!({ "debitAmount": amount("500", "USD", 2) });
    let (s, q) = quote(&w.a, &alice, &w.receiver, debit).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
    assert_eq!(q["error"]["code"], "insufficient_exchange_rate");
    // B converts at 0.9 again: the payment's quote holds.
    set_rate(&w.b, "0.9").await;
    let step = w.step().await;
    assert!(matches!(step, Step::Completed(_)), "{step:?}");
    w.bob_has("1000").await;
}

#[tokio::test]
async fn a_receiver_completed_meanwhile_fails_the_payment_with_the_money_back() {
    let w = paying(pair().await).await;
    let (s, v) =
        w.b.post(&format!("{}/complete", w.receiver), &json!({}))
            .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(matches!(w.step().await, Step::Failed(..)));
    w.failed_with_money_back().await;
}

#[tokio::test]
async fn an_unreachable_peer_pauses_then_fails_at_the_quotes_expiry_with_the_money_back() {
    let w = paying(pair().await).await;
    // A's route to B now leads nowhere.
    let b_at_a = peer_id(&w.a, "b").await;
    admin_ok(
        &w.a,
        Method::PATCH,
        &format!("/peers/{b_at_a}"),
        json!({ "http": { "outgoing": { "endpoint": "http://127.0.0.1:9/ilp", "authToken": "a-to-b" } } }),
    )
    .await;
    assert!(matches!(w.step().await, Step::Waiting(_)));
    assert_eq!(w.read().await["failed"], false);
    // Past the quote's expiry (5 minutes), it fails; nothing was sent.
    w.a.clock.advance_millis(301_000);
    assert!(matches!(w.step().await, Step::Failed(..)));
    w.failed_with_money_back().await;
}

/// A receiver that cannot be read (its server gone) while the quote holds
/// pauses the payment, which keeps its money; past the quote's expiry,
/// with no packet in flight, it fails with the money back.
#[tokio::test]
async fn an_unreadable_receiver_pauses_the_payment_until_its_quote_expires() {
    let Paying {
        a,
        b,
        receiver,
        id,
        payer,
        token,
    } = paying(pair().await).await;
    b.stop().await;
    let one_step = || async {
        let steps = a.run_workers().await;
        assert_eq!(steps.len(), 1, "{steps:?}");
        steps[0].clone()
    };
    let read = || async {
        let r = payer.send(Method::GET, &id, Some(&token), None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body
    };
    let step = one_step().await;
    assert!(matches!(step, Step::Waiting(_)), "{step:?}");
    assert_eq!(read().await["failed"], false);
    assert_eq!(balance(&a, "alice").await, "8877", "still held");
    a.clock.advance_millis(301_000);
    let step = one_step().await;
    assert!(
        matches!(&step, Step::Failed(_, why) if why == "the quote expired before the payment was sent"),
        "{step:?} ({receiver})"
    );
    assert_eq!(read().await["failed"], true);
    assert_eq!(balance(&a, "alice").await, "10000", "all of it back");
}

#[tokio::test]
async fn after_a_crash_sending_resumes_from_what_the_receiver_reports() {
    use base64::Engine as _;
    use opd_core::Clock as _;
    let w = paying(pair().await).await;
    // A first step that cannot reach B's ILP side: the receiver's total
    // before the payment is recorded, nothing is sent.
    let b_at_a = peer_id(&w.a, "b").await;
    let route = |endpoint: &str| json!({ "http": { "outgoing": { "endpoint": endpoint, "authToken": "a-to-b" } } });
    let path = format!("/peers/{b_at_a}");
    admin_ok(&w.a, Method::PATCH, &path, route("http://127.0.0.1:9/ilp")).await;
    assert!(matches!(w.step().await, Step::Waiting(_)));
    admin_ok(&w.a, Method::PATCH, &path, route(&w.b.ilp)).await;

    // A crash right after a packet of 300 USD cents was fulfilled: B has
    // its 270 EUR cents; A has only the packet's pending record.
    let (_, ip) = w.b.get(&w.receiver).await;
    let to = ip["methods"][0]["ilpAddress"].as_str().unwrap();
    let secret: [u8; 32] = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(ip["methods"][0]["sharedSecret"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let body = crate::ilp::prepare_expiring(&w.b, to, &secret, (300, 270), true, 30_000);
    let answer = crate::ilp::send_packet_as(&w.b, "a-to-b", body).await;
    assert!(
        matches!(answer, opd_ilp::packet::Packet::Fulfill(_)),
        "{answer:?}"
    );
    let usd = opd_core::Asset::parse("USD", 2).unwrap();
    let now = w.a.clock.now();
    let packet = opd_store::PaymentPacket {
        id: "fulfilled-before-the-crash".into(),
        payment: opd_core::OutgoingPaymentId::parse(w.id.rsplit('/').next().unwrap()).unwrap(),
        peer: opd_core::PeerId::parse(&b_at_a).unwrap(),
        source_asset: usd.clone(),
        source_amount: 300,
        peer_asset: usd,
        peer_amount: 300,
        min_delivery: 270,
        expires_at: now.plus_millis(-1),
        created_at: now.plus_millis(-10_000),
    };
    assert!(w.a.services().store.packet_sending(&packet).await.unwrap());

    // The next step posts that packet from B's report and sends only the
    // rest: B gets exactly 1000, and A's books count the packet once.
    w.a.clock.advance_millis(1_000);
    assert!(matches!(w.step().await, Step::Completed(_)));
    w.bob_has("1000").await;
    let sent = w.sent().await;
    assert!((1112..=1123).contains(&sent), "sent {sent}");
    assert_eq!(peer_balance(&w.a, "b").await, sent);
    assert_eq!(peer_balance(&w.b, "a").await, 1_000_000 - sent);
    assert_eq!(balance(&w.a, "alice").await, (10_000 - sent).to_string());
    balanced(&w.a).await;
    balanced(&w.b).await;
}

/// The setting A keeps its grant for reading `receiver` under: per
/// authorization server and resource server.
pub(crate) fn kept_grant_setting(public: &Value, receiver: &str) -> String {
    let origin = url::Url::parse(receiver)
        .unwrap()
        .origin()
        .ascii_serialization();
    opd_service::payments::receivers::grant_setting(public["authServer"].as_str().unwrap(), &origin)
}

/// The grant A keeps for `setting`, opened.
pub(crate) async fn kept_grant(a: &TestApp, setting: &str) -> Value {
    let services = a.services();
    let bytes = opd_service::platform::secrets::get_sealed(
        services.store.as_ref(),
        &services.config.secrets_key,
        setting,
    )
    .await
    .unwrap()
    .expect("a grant kept");
    serde_json::from_slice(&bytes).unwrap()
}

/// B's record of an access token.
pub(crate) async fn token_at(b: &TestApp, token: &Value) -> opd_store::AccessTokenRecord {
    use sha2::Digest as _;
    let digest = opd_core::hex::lower(&sha2::Sha256::digest(token.as_str().unwrap().as_bytes()));
    b.services()
        .store
        .get_access_token(&digest)
        .await
        .unwrap()
        .expect("B knows the token")
}

#[tokio::test]
async fn a_grant_token_about_to_expire_is_rotated_and_kept() {
    let b = TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.ilp_address = "test.b".into();
        s.serve.access_token_ttl_secs = 60;
    })
    .await;
    let Pair { a, b } = pair_of(node(Db::Sqlite, "test.a").await, b, 1_000_000, None).await;
    let alice = a.create_wallet("alice", "USD", 2).await;
    let receiver = incoming_at_b(&b, "1000").await;
    let target = json!({ "debitAmount": amount("500", "USD", 2) });
    let (s, q) = quote(&a, &alice, &receiver, target.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    let (_, public) = a.get_public(&receiver).await;
    let setting = kept_grant_setting(&public, &receiver);
    let first = kept_grant(&a, &setting).await;

    // 40 s later the token has 20 s left: A rotates it at B before use.
    a.clock.advance_millis(40_000);
    let (s, q) = quote(&a, &alice, &receiver, target.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    let rotated = kept_grant(&a, &setting).await;
    assert_ne!(rotated["value"], first["value"], "a new token kept");
    let (old, new) = (
        token_at(&b, &first["value"]).await,
        token_at(&b, &rotated["value"]).await,
    );
    assert_eq!(old.grant_id, new.grant_id, "rotated, not a new grant");

    // The rotated token is good for another minute: reused as it is.
    let (s, q) = quote(&a, &alice, &receiver, target).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    assert_eq!(kept_grant(&a, &setting).await, rotated);
}

#[tokio::test]
async fn a_token_is_only_sent_to_the_resource_server_it_was_asked_for() {
    use axum::extract::State;
    use axum::http::HeaderMap;
    use std::sync::{Arc, Mutex};

    let Pair { a, b } = pair().await;
    let alice = a.create_wallet("alice", "USD", 2).await;
    let receiver = incoming_at_b(&b, "1000").await;
    let target = json!({ "debitAmount": amount("500", "USD", 2) });
    let (s, q) = quote(&a, &alice, &receiver, target.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    let (_, public) = a.get_public(&receiver).await;
    let kept = kept_grant(&a, &kept_grant_setting(&public, &receiver)).await;

    // Another server whose receivers name B's authorization server: it
    // records the tokens it is sent.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let auth_server = public["authServer"].as_str().unwrap().to_owned();
    let router = axum::Router::new()
        .route(
            "/incoming-payments/{id}",
            axum::routing::get(
                |State((auth_server, seen)): State<(String, Arc<Mutex<Vec<String>>>)>,
                 headers: HeaderMap| async move {
                    if let Some(v) = headers.get("authorization") {
                        seen.lock().unwrap().push(v.to_str().unwrap().to_owned());
                    }
                    axum::Json(json!({ "authServer": auth_server }))
                },
            ),
        )
        .with_state((auth_server, seen.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let evil = format!(
        "http://{}/incoming-payments/0190a1b2-0000-7000-8000-000000000000",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, router).await });

    // A second later (an opd authorization server answers a byte-identical
    // signed request of the same second with its first answer).
    a.clock.advance_millis(1_000);
    b.clock.advance_millis(1_000);
    let (s, q) = quote(&a, &alice, &evil, target).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the other server was asked with a token");
    let kept_token = format!("GNAP {}", kept["value"].as_str().unwrap());
    assert!(
        !seen.contains(&kept_token),
        "B's token went to another server: {seen:?}"
    );
}

/// A receivers' collection whose authorization server is kept: the next
/// receiver there is read with the signed GET alone; when no token from
/// the kept one is taken, the receiver's server is asked again, and any
/// other failure is the answer.
#[tokio::test]
async fn the_authorization_server_of_a_receivers_collection_is_kept_until_a_read_fails() {
    use axum::extract::State;
    use axum::http::HeaderMap;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    #[derive(Default)]
    struct Seen {
        public: AtomicUsize,
        reads: AtomicUsize,
        refusing: AtomicBool,
        missing: AtomicBool,
    }
    let Pair { a, b } = pair().await;
    let receiver = incoming_at_b(&b, "1000").await;
    let (_, public) = a.get_public(&receiver).await;
    let auth_server = public["authServer"].as_str().unwrap().to_owned();
    // A receiver's server that names B's authorization server and takes
    // any token; it counts what it is asked.
    let seen: Arc<Seen> = Arc::default();
    let answer = |State((auth_server, seen)): State<(String, Arc<Seen>)>, headers: HeaderMap| async move {
        if headers.get("authorization").is_none() {
            seen.public.fetch_add(1, Ordering::SeqCst);
            return (
                StatusCode::OK,
                axum::Json(json!({ "authServer": auth_server })),
            );
        }
        seen.reads.fetch_add(1, Ordering::SeqCst);
        if seen.refusing.load(Ordering::SeqCst) {
            return (StatusCode::UNAUTHORIZED, axum::Json(json!({})));
        }
        if seen.missing.load(Ordering::SeqCst) {
            return (StatusCode::NOT_FOUND, axum::Json(json!({})));
        }
        let doc = json!({
            "receivedAmount": amount("0", "EUR", 2),
            "incomingAmount": amount("1000", "EUR", 2),
            "completed": false,
            "methods": [{ "type": "ilp", "ilpAddress": "test.b.x",
                          "sharedSecret": "A".repeat(43) }],
        });
        (StatusCode::OK, axum::Json(doc))
    };
    let router = axum::Router::new()
        .route("/incoming-payments/{id}", axum::routing::get(answer))
        .with_state((auth_server, seen.clone()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!(
        "http://{}/incoming-payments",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    let resolve = |n: u32| {
        let (services, url) = (
            a.services(),
            format!("{base}/0190a1b2-0000-7000-8000-00000000000{n}"),
        );
        async move { opd_service::payments::receivers::resolve(services, &url).await }
    };
    let counts = || {
        (
            seen.public.load(Ordering::SeqCst),
            seen.reads.load(Ordering::SeqCst),
        )
    };

    resolve(1).await.unwrap();
    assert_eq!(
        counts(),
        (1, 1),
        "the public view names the authorization server"
    );
    resolve(2).await.unwrap();
    assert_eq!(counts(), (1, 2), "kept: the signed GET alone");

    // The server refuses our tokens: the kept grant is replaced once, and
    // then the receiver is asked again for its authorization server.
    seen.refusing.store(true, Ordering::SeqCst);
    assert!(resolve(3).await.is_err());
    assert_eq!(
        counts(),
        (2, 6),
        "two reads with the kept one, two after asking again"
    );
    seen.refusing.store(false, Ordering::SeqCst);
    resolve(4).await.unwrap();
    assert_eq!(counts(), (3, 7), "a failed read keeps nothing");
    resolve(5).await.unwrap();
    assert_eq!(counts(), (3, 8));

    // A receiver that is not there is the answer: asking again for the
    // authorization server would get the same (and doubles the wait on a
    // server that does not answer).
    seen.missing.store(true, Ordering::SeqCst);
    assert!(resolve(6).await.is_err());
    assert_eq!(counts(), (3, 9), "one read, no asking again");
}

/// B receives in two assets: a quote to bob's EUR receiver and, within the
/// kept-path lifetime, one to carol's GBP receiver on the same server each
/// get their own path (their own rate): the second is not priced at the
/// first's.
#[tokio::test]
async fn receivers_of_two_assets_on_one_server_get_their_own_quotes() {
    let Pair { a, b } = pair().await;
    admin_ok(
        &b,
        Method::PUT,
        "/rates/USD",
        json!({ "rates": { "EUR": "0.9", "GBP": "0.8" } }),
    )
    .await;
    admin_ok(
        &a,
        Method::PUT,
        "/rates/USD",
        json!({ "rates": { "EUR": "0.9", "GBP": "0.8" } }),
    )
    .await;
    let alice = a.create_wallet("alice", "USD", 2).await;
    a.deposit("alice", 10_000).await;
    let to_bob = incoming_at_b(&b, "1000").await;
    let carol = b.create_wallet("carol", "GBP", 2).await;
    let (s, ip) = b
        .post(
            &b.url("incoming-payments"),
            &json!({ "walletAddress": carol, "incomingAmount": amount("1000", "GBP", 2) }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let to_carol = ip["id"].as_str().unwrap().to_owned();
    let (s, eur) = quote(&a, &alice, &to_bob, json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{eur}");
    let (s, gbp) = quote(&a, &alice, &to_carol, json!({})).await;
    assert_eq!(s, StatusCode::CREATED, "{gbp}");
    assert_eq!(eur["receiveAmount"], amount("1000", "EUR", 2));
    assert_eq!(eur["debitAmount"], amount("1123", "USD", 2));
    assert_eq!(gbp["receiveAmount"], amount("1000", "GBP", 2));
    assert_eq!(
        gbp["debitAmount"],
        amount("1263", "USD", 2),
        "at 0.8, not at 0.9"
    );
}
