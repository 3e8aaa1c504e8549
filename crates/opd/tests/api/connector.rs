//! The connector, between three opd servers: a packet sent to A for an
//! incoming payment on C goes A → B → C by routes; each hop holds the
//! amount from its incoming peer and posts it to the next when the
//! fulfillment comes back, or voids it when it does not.

use base64::Engine as _;
use opd_core::Clock as _;
use opd_ilp::packet::Packet;
use opd_ilp::{ErrorCode, StreamPacket};
use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::amount;

async fn node(db: Db, address: &str) -> TestApp {
    let address = address.to_owned();
    TestApp::spawn_with(db, move |s| s.serve.ilp_address = address).await
}

/// Creates a peer on `app`; returns its id. `deposit` funds its liquidity.
async fn peer(app: &TestApp, body: Value, deposit: u64) -> String {
    let (s, v) = app.admin(Method::POST, "/peers", Some(&body)).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let id = v["id"].as_str().unwrap().to_owned();
    if deposit > 0 {
        let (s, v) = app
            .admin(
                Method::POST,
                &format!("/peers/{id}/deposits"),
                Some(&json!({ "amount": deposit.to_string(), "idempotencyKey": format!("fund-{id}") })),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
    }
    id
}

async fn liquidity(app: &TestApp, id: &str) -> u64 {
    let (_, v) = app
        .admin(Method::GET, &format!("/peers/{id}/balance"), None)
        .await;
    v["balance"].as_str().unwrap().parse().unwrap()
}

async fn balanced(app: &TestApp) {
    let (s, v) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!((s, &v["balanced"]), (StatusCode::OK, &json!(true)), "{v}");
}

fn usd() -> Value {
    json!({ "code": "USD", "scale": 2 })
}

/// A STREAM Prepare from the sender at A (see `crate::ilp`).
fn stream_prepare(
    app: &TestApp,
    to: &str,
    secret: &[u8; 32],
    amount: u64,
    probe: bool,
    ttl_ms: i64,
) -> Vec<u8> {
    crate::ilp::prepare_expiring(app, to, secret, (amount, 0), !probe, ttl_ms)
}

async fn send(app: &TestApp, token: &str, body: Vec<u8>) -> Packet {
    crate::ilp::send_packet_as(app, token, body).await
}

#[tokio::test]
async fn packets_are_forwarded_across_three_servers() {
    forwards(Db::Sqlite).await;
}

#[tokio::test]
async fn packets_are_forwarded_across_three_servers_on_postgres() {
    forwards(Db::Postgres).await;
}

async fn forwards(db: Db) {
    let (a, b, c) = (
        node(db, "test.a").await,
        node(db, "test.b").await,
        node(db, "test.c").await,
    );
    // C: B may send it 10 000.
    let b_at_c = peer(
        &c,
        json!({ "name": "b", "staticIlpAddress": "test.b", "asset": usd(),
                "http": { "incoming": { "authTokens": ["b-to-c"] } } }),
        10_000,
    )
    .await;
    // B: A may send it 10 000; C is reached for test.c.
    let a_at_b = peer(
        &b,
        json!({ "name": "a", "staticIlpAddress": "test.a", "asset": usd(),
                "http": { "incoming": { "authTokens": ["a-to-b"] } } }),
        10_000,
    )
    .await;
    let c_at_b = peer(
        &b,
        json!({ "name": "c", "staticIlpAddress": "test.c", "asset": usd(), "routes": ["test.c"],
                "http": { "outgoing": { "endpoint": c.ilp, "authToken": "b-to-c" } } }),
        0,
    )
    .await;
    // A: a sender may send it 10 000; everything under `test` goes to B.
    let sender_at_a = peer(
        &a,
        json!({ "name": "sender", "staticIlpAddress": "test.sender", "asset": usd(),
                "http": { "incoming": { "authTokens": ["s-to-a"] } } }),
        10_000,
    )
    .await;
    let b_at_a = peer(
        &a,
        json!({ "name": "b", "staticIlpAddress": "test.b", "asset": usd(), "routes": ["test"],
                "http": { "outgoing": { "endpoint": b.ilp, "authToken": "a-to-b" } } }),
        0,
    )
    .await;

    let bob = c.create_wallet("bob", "USD", 2).await;
    let (s, ip) = c
        .post(
            &c.url("incoming-payments"),
            &json!({ "walletAddress": bob, "incomingAmount": amount("500", "USD", 2) }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let to = ip["methods"][0]["ilpAddress"].as_str().unwrap().to_owned();
    assert!(to.starts_with("test.c."));
    let secret: [u8; 32] = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(ip["methods"][0]["sharedSecret"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();

    // A probe travels to C and C's F99 comes back untouched.
    let Packet::Reject(r) = send(
        &a,
        "s-to-a",
        stream_prepare(&a, &to, &secret, 300, true, 30_000),
    )
    .await
    else {
        panic!("a probe is rejected")
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);
    assert_eq!(r.triggered_by.as_ref().map(|a| a.as_str()), Some("test.c"));
    let reply = StreamPacket::decrypt_and_decode(&secret, &r.data).unwrap();
    assert_eq!(reply.prepare_amount, 300);

    // Money: fulfilled end to end, and every hop's ledger moved once.
    let Packet::Fulfill(_) = send(
        &a,
        "s-to-a",
        stream_prepare(&a, &to, &secret, 300, false, 30_000),
    )
    .await
    else {
        panic!("money is fulfilled")
    };
    let (s, got) = c.get(ip["id"].as_str().unwrap()).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(got["receivedAmount"], amount("300", "USD", 2));
    assert_eq!(liquidity(&a, &sender_at_a).await, 9_700);
    assert_eq!(liquidity(&a, &b_at_a).await, 300);
    assert_eq!(liquidity(&b, &a_at_b).await, 9_700);
    assert_eq!(liquidity(&b, &c_at_b).await, 300);
    assert_eq!(liquidity(&c, &b_at_c).await, 9_700);

    // No route: F02 from A. Too little time: R02.
    let Packet::Reject(r) = send(
        &a,
        "s-to-a",
        stream_prepare(&a, "example.nowhere", &secret, 1, false, 30_000),
    )
    .await
    else {
        panic!("no route")
    };
    assert_eq!(r.code, ErrorCode::F02_UNREACHABLE);
    let Packet::Reject(r) = send(
        &a,
        "s-to-a",
        stream_prepare(&a, &to, &secret, 1, false, 500),
    )
    .await
    else {
        panic!("too little time")
    };
    assert_eq!(r.code, ErrorCode::R02_INSUFFICIENT_TIMEOUT);

    // C gone: B answers T01, A passes it back; both holds are voided.
    c.stop().await;
    let Packet::Reject(r) = send(
        &a,
        "s-to-a",
        stream_prepare(&a, &to, &secret, 100, false, 30_000),
    )
    .await
    else {
        panic!("C is down")
    };
    assert_eq!(r.code, ErrorCode::T01_PEER_UNREACHABLE);
    assert_eq!(r.triggered_by.as_ref().map(|a| a.as_str()), Some("test.b"));
    assert_eq!(liquidity(&a, &sender_at_a).await, 9_700);
    assert_eq!(liquidity(&a, &b_at_a).await, 300);
    assert_eq!(liquidity(&b, &a_at_b).await, 9_700);
    assert_eq!(liquidity(&b, &c_at_b).await, 300);
    balanced(&a).await;
    balanced(&b).await;
}

/// B with peers a (1 000 of liquidity) and c, and a hold of 400 from a
/// to c expiring 5 s from now: what a node leaves when it dies between
/// taking a packet's money and any answer. Returns a's and c's ids.
async fn holding(app: &TestApp, id: &str) -> (String, String) {
    let from = peer(
        app,
        json!({ "name": "a", "staticIlpAddress": "test.a", "asset": usd(),
                "http": { "incoming": { "authTokens": ["a-to-b"] } } }),
        1_000,
    )
    .await;
    let to = peer(
        app,
        json!({ "name": "c", "staticIlpAddress": "test.c", "asset": usd(),
                "http": { "outgoing": { "endpoint": "http://127.0.0.1:9/ilp", "authToken": "x" } } }),
        0,
    )
    .await;
    let now = app.clock.now();
    let asset = opd_core::Asset::parse("USD", 2).unwrap();
    let hold = opd_core::peer::Hold {
        id: id.into(),
        incoming_peer: opd_core::PeerId::parse(&from).unwrap(),
        incoming_asset: asset.clone(),
        outgoing_peer: opd_core::PeerId::parse(&to).unwrap(),
        outgoing_asset: asset,
        amount_in: 400,
        amount_out: 400,
        expires_at: now.plus_millis(5_000),
        created_at: now,
    };
    assert_eq!(
        app.services().store.ilp_hold(&hold).await.unwrap(),
        opd_store::HoldOutcome::Held
    );
    assert_eq!(liquidity(app, &from).await, 600);
    (from, to)
}

#[tokio::test]
async fn a_hold_left_by_a_crash_is_voided_after_its_expiry() {
    let app = node(Db::Sqlite, "test.b").await;
    let (from, to) = holding(&app, "hold-1").await;
    let services = app.services();
    assert_eq!(
        opd_service::interledger::connector::void_expired_once(services)
            .await
            .unwrap(),
        0
    );
    app.clock.advance_millis(10_000);
    assert_eq!(
        opd_service::interledger::connector::void_expired_once(services)
            .await
            .unwrap(),
        1
    );
    assert_eq!(liquidity(&app, &from).await, 1_000);
    assert_eq!(liquidity(&app, &to).await, 0);
    // Settled once: a late answer changes nothing.
    assert!(!services
        .store
        .ilp_settle("hold-1", true, app.clock.now())
        .await
        .unwrap());
    assert_eq!(liquidity(&app, &to).await, 0);
    balanced(&app).await;
}

/// B between sender A and a hostile next hop C that answers every packet
/// with a Fulfill whose fulfillment does not hash to the condition: A gets
/// F05 and its liquidity at B is what it was, to the unit; C's is
/// untouched; B's ledger balances.
#[tokio::test]
async fn a_forged_fulfill_from_the_next_hop_moves_nothing_upstream() {
    use opd_testkit::hostile::{Behaviour, HostileHop};
    let b = node(Db::Sqlite, "test.b").await;
    let hop = HostileHop::start().await;
    hop.always(Behaviour::ForgeFulfill);
    let a_at_b = peer(
        &b,
        json!({ "name": "a", "staticIlpAddress": "test.a", "asset": usd(),
                "http": { "incoming": { "authTokens": ["a-to-b"] } } }),
        10_000,
    )
    .await;
    let c_at_b = peer(
        &b,
        json!({ "name": "c", "staticIlpAddress": "test.c", "asset": usd(), "routes": ["test.c"],
                "http": { "outgoing": { "endpoint": hop.url, "authToken": "b-to-c" } } }),
        0,
    )
    .await;
    let secret = [7u8; 32];
    let Packet::Reject(r) = send(
        &b,
        "a-to-b",
        stream_prepare(&b, "test.c.bob", &secret, 700, false, 30_000),
    )
    .await
    else {
        panic!("a forged fulfillment is no proof: the packet is rejected")
    };
    assert_eq!(r.code, ErrorCode::F05_WRONG_CONDITION);
    assert_eq!(hop.packets_seen(), 1, "the packet did reach the next hop");
    assert_eq!(liquidity(&b, &a_at_b).await, 10_000, "A's liquidity at B");
    assert_eq!(liquidity(&b, &c_at_b).await, 0, "C's liquidity at B");
    balanced(&b).await;
}

/// A packet goes to the peer whose route matches its destination (the
/// route itself, or a prefix of it followed by a dot), never back to the
/// peer it came from, nor to a peer with no outgoing endpoint: with only
/// such routes it is rejected as unreachable, and nothing is held or sent.
#[tokio::test]
async fn a_packet_is_not_routed_back_to_its_sender_nor_where_nothing_goes_out() {
    use opd_testkit::hostile::{Behaviour, HostileHop};
    let b = node(Db::Sqlite, "test.b").await;
    let hop = HostileHop::start().await;
    hop.always(Behaviour::Reject(ErrorCode::F99_APPLICATION_ERROR));
    // A sends to B and is B's route to test.a; C is reached through the
    // hop; D has a route but no way out.
    let a_at_b = peer(
        &b,
        json!({ "name": "a", "staticIlpAddress": "test.a", "asset": usd(), "routes": ["test.a"],
                "http": { "outgoing": { "endpoint": hop.url, "authToken": "b-to-a" },
                          "incoming": { "authTokens": ["a-to-b"] } } }),
        10_000,
    )
    .await;
    peer(
        &b,
        json!({ "name": "c", "staticIlpAddress": "test.c", "asset": usd(), "routes": ["test.c"],
                "http": { "outgoing": { "endpoint": hop.url, "authToken": "b-to-c" } } }),
        0,
    )
    .await;
    peer(
        &b,
        json!({ "name": "d", "staticIlpAddress": "test.d", "asset": usd(), "routes": ["test.d"],
                "http": { "incoming": { "authTokens": ["d-to-b"] } } }),
        0,
    )
    .await;
    let secret = [7u8; 32];
    let from_a = |to: &str| {
        send(
            &b,
            "a-to-b",
            stream_prepare(&b, to, &secret, 700, false, 30_000),
        )
    };
    for to in ["test.a.alice", "test.d.dan", "test.cc.carol"] {
        let Packet::Reject(r) = from_a(to).await else {
            panic!("{to}: no route")
        };
        assert_eq!(r.code, ErrorCode::F02_UNREACHABLE, "{to}");
    }
    assert_eq!(hop.packets_seen(), 0, "nothing went out");
    // The route itself is a destination: C's answer comes back.
    let Packet::Reject(r) = from_a("test.c").await else {
        panic!("the hop rejects")
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);
    assert_eq!(hop.packets_seen(), 1, "sent to C");
    // A large answer (a Reject's data may be up to 32 KiB) comes back whole.
    hop.always(Behaviour::RejectWithData(
        ErrorCode::F99_APPLICATION_ERROR,
        30_000,
    ));
    let Packet::Reject(r) = from_a("test.c.carol").await else {
        panic!("the hop rejects")
    };
    assert_eq!(
        (r.code, r.data.len()),
        (ErrorCode::F99_APPLICATION_ERROR, 30_000)
    );
    // The longest matching route wins: E's `test.c.deep` over C's `test.c`.
    let deep = HostileHop::start().await;
    deep.always(Behaviour::Reject(ErrorCode::F99_APPLICATION_ERROR));
    peer(
        &b,
        json!({ "name": "e", "staticIlpAddress": "test.e", "asset": usd(), "routes": ["test.c.deep"],
                "http": { "outgoing": { "endpoint": deep.url, "authToken": "b-to-e" } } }),
        0,
    )
    .await;
    let seen = hop.packets_seen();
    assert!(matches!(from_a("test.c.deep.x").await, Packet::Reject(_)));
    assert!(matches!(from_a("test.c.shallow").await, Packet::Reject(_)));
    assert_eq!(deep.packets_seen(), 1, "test.c.deep.x went to E");
    assert_eq!(hop.packets_seen(), seen + 1, "test.c.shallow went to C");
    assert_eq!(liquidity(&b, &a_at_b).await, 10_000, "A's liquidity at B");
    balanced(&b).await;
}

/// A hold left by a crash is voided a margin (1 s) after its expiry, not
/// before: at expiry + 999 ms and + 1000 ms it still holds (an answer
/// arriving in time may still post it), at + 1001 ms it is voided.
#[tokio::test]
async fn a_hold_is_voided_only_a_margin_after_its_expiry() {
    let app = node(Db::Sqlite, "test.b").await;
    let (from, to) = holding(&app, "hold-boundary").await;
    let services = app.services();
    let void = || opd_service::interledger::connector::void_expired_once(services);
    app.clock.advance_millis(5_999);
    assert_eq!(void().await.unwrap(), 0, "expiry + 999 ms: still held");
    app.clock.advance_millis(1);
    assert_eq!(void().await.unwrap(), 0, "expiry + 1000 ms: still held");
    assert_eq!(liquidity(&app, &from).await, 600);
    app.clock.advance_millis(1);
    assert_eq!(void().await.unwrap(), 1, "expiry + 1001 ms: voided");
    assert_eq!(liquidity(&app, &from).await, 1_000);
    assert_eq!(liquidity(&app, &to).await, 0);
    balanced(&app).await;
}
