//! Interledger receiving, end to end on both backends: a peer created and
//! funded through the admin API sends ILP Prepares (built here as a STREAM
//! sender would) to the ILP-over-HTTP listener; probes get F99 with an
//! authentic STREAM reply, money is credited to the incoming payment and
//! fulfilled (and lands on the wallet address's balance), and every
//! refusal credits nothing.

use base64::Engine as _;
use opd_core::webhook::EventKind;
use opd_core::Clock as _;
use opd_ilp::packet::{Packet, Prepare};
use opd_ilp::{
    condition_for, condition_of, AmountTooLarge, ErrorCode, Frame, IlpAddress, PacketType,
    StreamPacket,
};
use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{amount, assert_error};

pub(crate) const TOKEN: &str = "peer-to-opd-token";

pub(crate) struct World {
    pub(crate) app: TestApp,
    pub(crate) peer: String,
    /// Where its database is: the SQLite file, or the PostgreSQL URL.
    pub(crate) database: (Option<std::path::PathBuf>, Option<String>),
}

/// A server with bob (USD) and a peer `upstream` funded with 10.00.
pub(crate) async fn world(db: Db) -> World {
    world_with(db, |_| {}).await
}

/// [`world`] with settings adjusted.
pub(crate) async fn world_with(db: Db, adjust: impl FnOnce(&mut opd::config::Settings)) -> World {
    let mut database = (None, None);
    let app = TestApp::spawn_with(db, |s| {
        adjust(s);
        database = (
            Some(s.common.data_dir.join("opd.sqlite")),
            s.common.database_url.as_ref().map(|u| {
                use secrecy::ExposeSecret as _;
                u.expose_secret().to_owned()
            }),
        );
    })
    .await;
    app.create_wallet("bob", "USD", 2).await;
    let (s, peer) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&json!({
                "name": "upstream",
                "staticIlpAddress": "test.upstream",
                "asset": { "code": "USD", "scale": 2 },
                "maxPacketAmount": "100000",
                "http": { "incoming": { "authTokens": [TOKEN] } },
                "liquidityThreshold": { "low": "600" }
            })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{peer}");
    assert_eq!(peer["http"]["incoming"]["authTokens"], 1);
    assert!(!peer.to_string().contains(TOKEN), "tokens are never shown");
    assert_eq!(peer["routes"], json!(["test.upstream"]));
    let id = peer["id"].as_str().unwrap().to_owned();
    let (s, v) = app
        .admin(
            Method::POST,
            &format!("/peers/{id}/deposits"),
            Some(&json!({ "amount": "1000", "idempotencyKey": "fund-1" })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["balance"], "1000");
    World {
        app,
        peer: id,
        database,
    }
}

/// An incoming payment of bob's: its id, ILP address and shared secret.
pub(crate) async fn receiver(app: &TestApp, incoming: &str) -> (String, String, [u8; 32]) {
    let bob = app.url("bob");
    let (s, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": bob, "incomingAmount": amount(incoming, "USD", 2) }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let method = &ip["methods"][0];
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(method["sharedSecret"].as_str().unwrap())
        .unwrap();
    (
        ip["id"].as_str().unwrap().to_owned(),
        method["ilpAddress"].as_str().unwrap().to_owned(),
        secret.try_into().unwrap(),
    )
}

/// A STREAM Prepare as a sender builds it: money on stream 1, asking for
/// at least `min` to arrive; `fulfillable` false makes it a probe. It
/// expires in 30 s.
fn prepare(
    app: &TestApp,
    to: &str,
    secret: &[u8; 32],
    amount: u64,
    min: u64,
    fulfillable: bool,
) -> Vec<u8> {
    prepare_expiring(app, to, secret, (amount, min), fulfillable, 30_000)
}

/// [`prepare`], expiring in `ttl_ms`.
pub(crate) fn prepare_expiring(
    app: &TestApp,
    to: &str,
    secret: &[u8; 32],
    (amount, min): (u64, u64),
    fulfillable: bool,
    ttl_ms: i64,
) -> Vec<u8> {
    let request = StreamPacket {
        sequence: 1,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: min,
        frames: vec![
            Frame::ConnectionNewAddress {
                source_account: String::new(),
            },
            Frame::StreamMoney {
                stream_id: 1,
                shares: 1,
            },
        ],
    };
    carrying(app, to, secret, amount, &request, fulfillable, ttl_ms)
}

/// A Prepare of `amount` to `to` carrying `request`, expiring in `ttl_ms`.
fn carrying(
    app: &TestApp,
    to: &str,
    secret: &[u8; 32],
    amount: u64,
    request: &StreamPacket,
    fulfillable: bool,
    ttl_ms: i64,
) -> Vec<u8> {
    let data = request.encrypt_with(secret, [7; 12]).unwrap();
    let condition = if fulfillable {
        condition_for(secret, &data)
    } else {
        [9; 32]
    };
    let expires = app.clock.now().unix_millis() + ttl_ms;
    Prepare {
        amount,
        expires_at: opd_ilp::Timestamp::from_unix_millis(expires).unwrap(),
        execution_condition: condition,
        destination: IlpAddress::new(to).unwrap(),
        data,
    }
    .encode()
}

pub(crate) async fn send(app: &TestApp, token: &str, body: Vec<u8>) -> (StatusCode, Vec<u8>) {
    let resp = app
        .http
        .post(&app.ilp)
        .bearer_auth(token)
        .header("content-type", "application/octet-stream")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status();
    (status, resp.bytes().await.unwrap().to_vec())
}

pub(crate) async fn send_packet(app: &TestApp, body: Vec<u8>) -> Packet {
    send_packet_as(app, TOKEN, body).await
}

/// Sends `body` to the ILP listener with `token`; the ILP answer.
pub(crate) async fn send_packet_as(app: &TestApp, token: &str, body: Vec<u8>) -> Packet {
    let (status, bytes) = send(app, token, body).await;
    assert_eq!(status, StatusCode::OK);
    Packet::decode(&bytes).unwrap()
}

pub(crate) async fn received(app: &TestApp, id: &str) -> Value {
    let (s, ip) = app.get(id).await;
    assert_eq!(s, StatusCode::OK, "{ip}");
    ip
}

pub(crate) async fn liquidity(w: &World) -> String {
    let (_, v) = w
        .app
        .admin(Method::GET, &format!("/peers/{}/balance", w.peer), None)
        .await;
    v["balance"].as_str().unwrap().to_owned()
}

pub(crate) async fn ledger_balanced(app: &TestApp) {
    let (s, v) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["balanced"], true, "{v}");
}

#[tokio::test]
async fn packets_pay_an_incoming_payment() {
    pays(Db::Sqlite).await;
}

#[tokio::test]
async fn packets_pay_an_incoming_payment_on_postgres() {
    pays(Db::Postgres).await;
}

async fn pays(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let (id, address, secret) = receiver(app, "500").await;

    // A probe: F99, with the amount that arrived and the asset in the
    // authentic STREAM reply; nothing moves.
    let Packet::Reject(r) = send_packet(app, prepare(app, &address, &secret, 300, 0, false)).await
    else {
        panic!("a probe is rejected")
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);
    let reply = StreamPacket::decrypt_and_decode(&secret, &r.data).unwrap();
    assert_eq!(reply.ilp_packet_type, PacketType::Reject);
    assert_eq!(reply.prepare_amount, 300);
    assert!(reply.frames.contains(&Frame::ConnectionAssetDetails {
        source_asset_code: "USD".into(),
        source_asset_scale: 2,
    }));
    assert_eq!(
        received(app, &id).await["receivedAmount"],
        amount("0", "USD", 2)
    );

    // Money: fulfilled with the fulfillment of the condition, credited.
    let body = prepare(app, &address, &secret, 300, 300, true);
    let Packet::Prepare(sent) = Packet::decode(&body).unwrap() else {
        unreachable!()
    };
    let Packet::Fulfill(f) = send_packet(app, body).await else {
        panic!("money is fulfilled")
    };
    assert_eq!(condition_of(&f.fulfillment), sent.execution_condition);
    let reply = StreamPacket::decrypt_and_decode(&secret, &f.data).unwrap();
    assert_eq!(reply.ilp_packet_type, PacketType::Fulfill);
    assert_eq!(reply.prepare_amount, 300);
    let ip = received(app, &id).await;
    assert_eq!(ip["receivedAmount"], amount("300", "USD", 2));
    assert_eq!(ip["completed"], false);
    assert_eq!(liquidity(&w).await, "700");

    // More than the payment still takes: refused, nothing credited.
    let Packet::Reject(r) = send_packet(app, prepare(app, &address, &secret, 201, 0, true)).await
    else {
        panic!("an overpayment is refused")
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);
    assert_eq!(liquidity(&w).await, "700");

    // The rest completes it, with its webhook; the liquidity falls past
    // the low threshold (600) and says so once.
    let Packet::Fulfill(_) =
        send_packet(app, prepare(app, &address, &secret, 200, 200, true)).await
    else {
        panic!("the rest is fulfilled")
    };
    let ip = received(app, &id).await;
    assert_eq!(ip["receivedAmount"], amount("500", "USD", 2));
    assert_eq!(ip["completed"], true);
    assert_eq!(liquidity(&w).await, "500");
    let events = app
        .services()
        .store
        .due_webhook_events(app.clock.now(), 100)
        .await
        .unwrap();
    let completed: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::IncomingPaymentCompleted)
        .collect();
    assert_eq!(completed.len(), 1);
    let body: Value = serde_json::from_str(&completed[0].data).unwrap();
    assert_eq!(body["data"]["receivedAmount"], amount("500", "USD", 2));
    let low: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::PeerLiquidityLow)
        .collect();
    assert_eq!(low.len(), 1);
    let body: Value = serde_json::from_str(&low[0].data).unwrap();
    assert_eq!(body["data"]["balance"], "500");

    // A completed payment takes nothing more, and says the connection is
    // closed.
    let Packet::Reject(r) = send_packet(app, prepare(app, &address, &secret, 1, 0, true)).await
    else {
        panic!("a completed payment refuses money")
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);
    let reply = StreamPacket::decrypt_and_decode(&secret, &r.data).unwrap();
    assert!(reply
        .frames
        .iter()
        .any(|f| matches!(f, Frame::ConnectionClose { .. })));
    ledger_balanced(app).await;
}

#[tokio::test]
async fn received_money_lands_on_the_wallet() {
    lands_on_the_wallet(Db::Sqlite).await;
}

#[tokio::test]
async fn received_money_lands_on_the_wallet_on_postgres() {
    lands_on_the_wallet(Db::Postgres).await;
}

/// Money packets bring is bob's at once, to the unit: several packets from
/// two peers, and an incoming payment that expires having received part.
async fn lands_on_the_wallet(db: Db) {
    const SECOND: &str = "second-peer-token";
    let w = world(db).await;
    let app = &w.app;
    let (s, second) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&json!({
                "name": "second",
                "staticIlpAddress": "test.second",
                "asset": { "code": "USD", "scale": 2 },
                "http": { "incoming": { "authTokens": [SECOND] } }
            })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{second}");
    let (s, v) = app
        .admin(
            Method::POST,
            &format!("/peers/{}/deposits", second["id"].as_str().unwrap()),
            Some(&json!({ "amount": "1000", "idempotencyKey": "fund-2" })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");

    let (id, address, secret) = receiver(app, "500").await;
    for (token, amount) in [
        (TOKEN, 100),
        (SECOND, 60),
        (TOKEN, 37),
        (SECOND, 2),
        (TOKEN, 1),
    ] {
        let body = prepare(app, &address, &secret, amount, amount, true);
        let Packet::Fulfill(_) = send_packet_as(app, token, body).await else {
            panic!("{amount} is fulfilled")
        };
    }
    assert_eq!(
        received(app, &id).await["receivedAmount"],
        amount("200", "USD", 2)
    );
    assert_eq!(
        crate::remote::balance(app, "bob").await,
        "200",
        "bob has every unit"
    );

    // An incoming payment that expires having received part: bob keeps
    // the part, and the expiry event says nothing waits to be withdrawn.
    let expires = app.clock.now().plus_millis(60_000).to_rfc3339();
    let (s, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": app.url("bob"), "incomingAmount": amount("300", "USD", 2), "expiresAt": expires }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let partial = ip["id"].as_str().unwrap().to_owned();
    let method = &ip["methods"][0];
    let secret2: [u8; 32] = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(method["sharedSecret"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let address2 = method["ilpAddress"].as_str().unwrap().to_owned();
    let Packet::Fulfill(_) =
        send_packet_as(app, SECOND, prepare(app, &address2, &secret2, 45, 45, true)).await
    else {
        panic!("part is fulfilled")
    };
    app.clock.advance_millis(61_000);
    let Packet::Reject(_) =
        send_packet_as(app, TOKEN, prepare(app, &address2, &secret2, 5, 5, true)).await
    else {
        panic!("an expired payment takes nothing")
    };
    assert_eq!(
        opd_service::payments::incoming::expire_once(app.services())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        received(app, &partial).await["receivedAmount"],
        amount("45", "USD", 2)
    );
    assert_eq!(crate::remote::balance(app, "bob").await, "245");
    let events = app
        .services()
        .store
        .due_webhook_events(app.clock.now(), 100)
        .await
        .unwrap();
    let expired: Vec<Value> = events
        .iter()
        .filter(|e| e.kind == EventKind::IncomingPaymentExpired)
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0]["data"]["receivedAmount"], amount("45", "USD", 2));
    assert_eq!(
        expired[0]["data"]["amountToWithdraw"],
        amount("0", "USD", 2)
    );
    ledger_balanced(app).await;
}

/// Crediting the wallet address (balance mode) costs the same SQL round
/// trips per packet as crediting the incoming payment's own account
/// (external mode, which is how every release before did it): the
/// transfer goes to another account, nothing is added to the hot path.
#[tokio::test]
async fn a_credit_to_the_wallet_costs_no_extra_round_trip() {
    for db in [Db::Sqlite, Db::Postgres] {
        let mut costs = Vec::new();
        for external in [false, true] {
            let app = TestApp::spawn_with(db, |s| s.serve.external_funding = external).await;
            app.create_wallet("bob", "USD", 2).await;
            let (s, peer) = app
                .admin(
                    Method::POST,
                    "/peers",
                    Some(&json!({
                        "name": "upstream",
                        "staticIlpAddress": "test.upstream",
                        "asset": { "code": "USD", "scale": 2 },
                        "http": { "incoming": { "authTokens": [TOKEN] } }
                    })),
                )
                .await;
            assert_eq!(s, StatusCode::CREATED, "{peer}");
            let (s, v) = app
                .admin(
                    Method::POST,
                    &format!("/peers/{}/deposits", peer["id"].as_str().unwrap()),
                    Some(&json!({ "amount": "1000", "idempotencyKey": "fund" })),
                )
                .await;
            assert_eq!(s, StatusCode::CREATED, "{v}");
            let (_, address, secret) = receiver(&app, "500").await;
            // The first packet warms the caches (peer, wallet address).
            let Packet::Fulfill(_) =
                send_packet(&app, prepare(&app, &address, &secret, 10, 10, true)).await
            else {
                panic!("fulfilled")
            };
            let before = app.services().store.round_trips();
            let Packet::Fulfill(_) =
                send_packet(&app, prepare(&app, &address, &secret, 10, 10, true)).await
            else {
                panic!("fulfilled")
            };
            costs.push(app.services().store.round_trips() - before);
            app.stop().await;
        }
        assert!(costs[0] > 0, "{db:?}: round trips are counted");
        assert_eq!(costs[0], costs[1], "{db:?}: balance mode, external mode");
    }
}

#[tokio::test]
async fn refusals_credit_nothing() {
    refusals(Db::Sqlite).await;
}

#[tokio::test]
async fn refusals_credit_nothing_on_postgres() {
    refusals(Db::Postgres).await;
}

async fn refusals(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let (id, address, secret) = receiver(app, "500000").await;

    // More than the peer's liquidity (1000): T04.
    let Packet::Reject(r) = send_packet(app, prepare(app, &address, &secret, 1001, 0, true)).await
    else {
        panic!("beyond the liquidity")
    };
    assert_eq!(r.code, ErrorCode::T04_INSUFFICIENT_LIQUIDITY);

    // Exactly the peer's max packet amount is within it: refused only for
    // the liquidity.
    let Packet::Reject(r) =
        send_packet(app, prepare(app, &address, &secret, 100_000, 0, true)).await
    else {
        panic!("beyond the liquidity")
    };
    assert_eq!(r.code, ErrorCode::T04_INSUFFICIENT_LIQUIDITY);

    // Above the peer's max packet amount: F08 with the amounts.
    let Packet::Reject(r) =
        send_packet(app, prepare(app, &address, &secret, 100_001, 0, true)).await
    else {
        panic!("beyond the max packet amount")
    };
    assert_eq!(r.code, ErrorCode::F08_AMOUNT_TOO_LARGE);
    let data = AmountTooLarge::decode(&r.data).unwrap();
    assert_eq!(
        (data.received_amount, data.maximum_amount),
        (100_001, 100_000)
    );

    // Less arrives than the sender asks for: F99.
    let Packet::Reject(r) = send_packet(app, prepare(app, &address, &secret, 10, 11, true)).await
    else {
        panic!("below the minimum")
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);

    // Not a packet: F01. A token of another server: F06. An address that
    // is not ours: F02.
    let Packet::Reject(r) = send_packet(app, b"\x0c\x05garbage".to_vec()).await else {
        panic!("garbage")
    };
    assert_eq!(r.code, ErrorCode::F01_INVALID_PACKET);
    let tampered = format!("{}x", &address[..address.len() - 1]);
    let Packet::Reject(r) = send_packet(app, prepare(app, &tampered, &secret, 10, 0, true)).await
    else {
        panic!("tampered")
    };
    assert!(
        [
            ErrorCode::F06_UNEXPECTED_PAYMENT,
            ErrorCode::F02_UNREACHABLE
        ]
        .contains(&r.code),
        "{:?}",
        r.code
    );
    let Packet::Reject(r) = send_packet(
        app,
        prepare(app, "test.elsewhere.bob", &secret, 10, 0, true),
    )
    .await
    else {
        panic!("elsewhere")
    };
    assert_eq!(r.code, ErrorCode::F02_UNREACHABLE);

    // An expired payment takes nothing.
    app.clock.advance_millis(31 * 24 * 3600 * 1000);
    let Packet::Reject(r) = send_packet(app, prepare(app, &address, &secret, 10, 0, true)).await
    else {
        panic!("expired")
    };
    assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);

    // (The client's token expired with the clock: read the store.)
    let payment_id = opd_core::IncomingPaymentId::parse(id.rsplit('/').next().unwrap()).unwrap();
    let stored = app
        .services()
        .store
        .get_incoming_payment(payment_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.received_amount, 0);
    assert_eq!(liquidity(&w).await, "1000");
    ledger_balanced(app).await;

    // Without the right token: 401 JSON; with the wrong content type: 400.
    let (s, body) = send(app, "wrong", prepare(app, &address, &secret, 1, 0, true)).await;
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_error(s, &body, 401, "invalid_peer_token");
    let resp = app
        .http
        .post(&app.ilp)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    let s = resp.status();
    let body: Value = resp.json().await.unwrap();
    assert_error(s, &body, 400, "invalid_content_type");
}

#[tokio::test]
async fn ildcp_and_peer_management() {
    let w = world(Db::Sqlite).await;
    let app = &w.app;
    // IL-DCP: the peer's address and asset, in a Fulfill of zeros.
    let ildcp = Prepare {
        amount: 0,
        expires_at: opd_ilp::Timestamp::from_unix_millis(app.clock.now().unix_millis() + 30_000)
            .unwrap(),
        execution_condition: condition_of(&[0; 32]),
        destination: IlpAddress::new("peer.config").unwrap(),
        data: Vec::new(),
    };
    let Packet::Fulfill(f) = send_packet(app, ildcp.encode()).await else {
        panic!("IL-DCP is fulfilled")
    };
    assert_eq!(f.fulfillment, [0; 32]);
    let mut want = vec![13];
    want.extend_from_slice(b"test.upstream");
    want.push(2);
    want.push(3);
    want.extend_from_slice(b"USD");
    assert_eq!(f.data, want);

    // Update: a new token replaces the old one at once.
    let (s, v) = app
        .admin(
            Method::PATCH,
            &format!("/peers/{}", w.peer),
            Some(&json!({ "http": { "incoming": { "authTokens": ["rotated-token"] } }, "maxPacketAmount": null })),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v.get("maxPacketAmount").is_none(), "{v}");
    let (s, _) = send(app, TOKEN, ildcp.encode()).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = send(app, "rotated-token", ildcp.encode()).await;
    assert_eq!(s, StatusCode::OK);

    // Bad input: a clear 400, nothing created.
    let (s, v) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&json!({ "name": "x", "staticIlpAddress": "not an address", "asset": { "code": "USD", "scale": 2 } })),
        )
        .await;
    assert_error(s, &v, 400, "invalid_request");
    let (s, v) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&json!({ "name": "upstream", "staticIlpAddress": "test.other", "asset": { "code": "USD", "scale": 2 } })),
        )
        .await;
    assert_error(s, &v, 409, "peer_exists");

    // A peer holding liquidity cannot be deleted; once withdrawn it can.
    let path = format!("/peers/{}", w.peer);
    let (s, v) = app.admin(Method::DELETE, &path, None).await;
    assert_error(s, &v, 409, "peer_has_liquidity");
    let (s, v) = app
        .admin(
            Method::POST,
            &format!("{path}/withdrawals"),
            Some(&json!({ "amount": "1000", "idempotencyKey": "out-1" })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, _) = app
        .admin(
            Method::POST,
            &format!("{path}/withdrawals"),
            Some(&json!({ "amount": "1000", "idempotencyKey": "out-1" })),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "a repeated key gives the first result");
    // Its transfers, newest first: the withdrawal once, then the deposit.
    let (s, v) = app
        .admin(Method::GET, &format!("{path}/transfers"), None)
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let moved: Vec<_> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["kind"].as_str().unwrap(), t["amount"].as_str().unwrap()))
        .collect();
    assert_eq!(moved, [("withdrawal", "1000"), ("deposit", "1000")], "{v}");
    let (s, _) = app.admin(Method::DELETE, &path, None).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, v) = app.admin(Method::GET, "/peers", None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v, json!([]));
    ledger_balanced(app).await;
}

#[tokio::test]
async fn auto_peering_creates_a_peer_in_one_call() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.auto_peering_listen = Some("127.0.0.1:0".parse().unwrap());
        s.serve.auto_peering_liquidity = 5_000;
        s.serve.auto_peering_liquidity_total = 50_000;
    })
    .await;
    let addr = app.running.as_ref().unwrap().auto_peering_addr.unwrap();
    let request = json!({
        "staticIlpAddress": "test.rafiki",
        "ilpConnectorUrl": "http://127.0.0.1:9/ilp",
        "asset": { "code": "USD", "scale": 2 },
        "httpToken": "rafiki-to-opd",
        "maxPacketAmount": 100000,
        "name": "Rafiki"
    });
    let resp = app
        .http
        .post(format!("http://{addr}/"))
        .json(&request)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let answer: Value = resp.json().await.unwrap();
    assert_eq!(answer["staticIlpAddress"], "test.opd");
    assert_eq!(answer["ilpConnectorUrl"], app.ilp);
    assert_eq!(
        answer["ilpConnectorAddress"], app.ilp,
        "newer reference servers read this"
    );
    let ours = answer["httpToken"].as_str().unwrap().to_owned();
    assert!(ours.len() >= 32);

    let (_, peers) = app.admin(Method::GET, "/peers", None).await;
    let peer = &peers[0];
    assert_eq!(peer["name"], "Rafiki");
    assert_eq!(peer["staticIlpAddress"], "test.rafiki");
    assert_eq!(peer["maxPacketAmount"], "100000");
    assert_eq!(peer["liquidity"], "5000");
    assert_eq!(
        peer["http"]["outgoing"]["endpoint"],
        "http://127.0.0.1:9/ilp"
    );

    // The requester's token works at once: IL-DCP answers its address.
    let ildcp = Prepare {
        amount: 0,
        expires_at: opd_ilp::Timestamp::from_unix_millis(app.clock.now().unix_millis() + 30_000)
            .unwrap(),
        execution_condition: condition_of(&[0; 32]),
        destination: IlpAddress::new("peer.config").unwrap(),
        data: Vec::new(),
    };
    let (s, bytes) = send(&app, "rafiki-to-opd", ildcp.encode()).await;
    assert_eq!(s, StatusCode::OK);
    assert!(matches!(
        Packet::decode(&bytes).unwrap(),
        Packet::Fulfill(_)
    ));

    assert_eq!(peer["createdBy"], "auto-peering");

    // Asking again with the token we gave it renews the tokens of the same
    // peer (no second peer, no second deposit); the old incoming token
    // stops working. (Renewals without it: `auto_peering.rs`.)
    let again = json!({
        "staticIlpAddress": "test.rafiki",
        "ilpConnectorAddress": "http://127.0.0.1:9/ilp2",
        "asset": { "code": "USD", "scale": 2 },
        "httpToken": "rafiki-to-opd-2"
    });
    let resp = app
        .http
        .post(format!("http://{addr}/"))
        .bearer_auth(&ours)
        .json(&again)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let (_, peers) = app.admin(Method::GET, "/peers", None).await;
    assert_eq!(peers.as_array().unwrap().len(), 1);
    assert_eq!(peers[0]["liquidity"], "5000");
    assert_eq!(
        peers[0]["http"]["outgoing"]["endpoint"],
        "http://127.0.0.1:9/ilp2"
    );
    let (s, _) = send(&app, "rafiki-to-opd", ildcp.encode()).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);

    // A malformed request: a clear 400, nothing created.
    let resp = app
        .http
        .post(format!("http://{addr}/"))
        .json(
            &json!({ "staticIlpAddress": "bad address", "ilpConnectorUrl": "http://x/",
                       "asset": { "code": "USD", "scale": 2 }, "httpToken": "t" }),
        )
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let body: Value = resp.json().await.unwrap();
    assert_error(status, &body, 400, "invalid_request");
    let (_, peers) = app.admin(Method::GET, "/peers", None).await;
    assert_eq!(peers.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_peer_in_another_asset_pays_at_the_configured_rate() {
    cross_currency(Db::Sqlite).await;
}

#[tokio::test]
async fn a_peer_in_another_asset_pays_at_the_configured_rate_on_postgres() {
    cross_currency(Db::Postgres).await;
}

async fn cross_currency(db: Db) {
    let app = TestApp::spawn_with(db, |_| {}).await;
    app.create_wallet("bob", "USD", 2).await;
    let (s, v) = app
        .admin(
            Method::PUT,
            "/rates/EUR",
            Some(&json!({ "rates": { "USD": "1.1" } })),
        )
        .await;
    assert!(s.is_success(), "{v}");
    let (s, peer) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&json!({
                "name": "euro-bank", "staticIlpAddress": "test.euro",
                "asset": { "code": "EUR", "scale": 2 },
                "http": { "incoming": { "authTokens": [TOKEN] } }
            })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{peer}");
    let id = peer["id"].as_str().unwrap();
    let (s, v) = app
        .admin(
            Method::POST,
            &format!("/peers/{id}/deposits"),
            Some(&json!({ "amount": "1000", "idempotencyKey": "eur-1" })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (ip, address, secret) = receiver(&app, "500").await;

    // 101 euro cents arrive as floor(101 × 1.1) = 111 dollar cents: the
    // probe's reply says so, and the money packet credits exactly that.
    let Packet::Reject(r) =
        send_packet(&app, prepare(&app, &address, &secret, 101, 0, false)).await
    else {
        panic!("a probe is rejected")
    };
    let reply = StreamPacket::decrypt_and_decode(&secret, &r.data).unwrap();
    assert_eq!(reply.prepare_amount, 111);
    let Packet::Fulfill(_) =
        send_packet(&app, prepare(&app, &address, &secret, 101, 111, true)).await
    else {
        panic!("money is fulfilled")
    };
    assert_eq!(
        received(&app, &ip).await["receivedAmount"],
        amount("111", "USD", 2)
    );
    let (_, v) = app
        .admin(Method::GET, &format!("/peers/{id}/balance"), None)
        .await;
    assert_eq!(v["balance"], "899");
    assert_eq!(v["asset"]["code"], "EUR");
    ledger_balanced(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_packets_never_fill_an_incoming_payment_past_its_amount() {
    concurrent_fill(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_packets_never_fill_an_incoming_payment_past_its_amount_on_postgres() {
    concurrent_fill(Db::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn packets_credited_together_are_each_answered_for_their_own_amount() {
    own_answers(Db::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn packets_credited_together_are_each_answered_for_their_own_amount_on_postgres() {
    own_answers(Db::Postgres).await;
}

/// 30 packets of 0.01 to 0.30, all at once, to an incoming payment of
/// 1.00: they are credited in groups, some taken and some refused (more
/// than is left). Each packet must get its own answer: the Fulfills add up
/// to exactly what the payment received, what the peer paid and what the
/// wallet got.
async fn own_answers(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let (id, address, secret) = receiver(app, "100").await;
    let amounts: Vec<u64> = (1..=30).collect();
    let sends = amounts
        .iter()
        .map(|a| send_packet(app, prepare(app, &address, &secret, *a, 0, true)));
    let answers = futures_util::future::join_all(sends).await;
    let fulfilled: u64 = amounts
        .iter()
        .zip(&answers)
        .filter(|(_, p)| matches!(p, Packet::Fulfill(_)))
        .map(|(a, _)| *a)
        .sum();
    assert!(
        fulfilled > 0 && fulfilled <= 100,
        "{fulfilled}: {answers:?}"
    );
    let ip = received(app, &id).await;
    assert_eq!(ip["receivedAmount"]["value"], fulfilled.to_string(), "{ip}");
    assert_eq!(liquidity(&w).await, (1000 - fulfilled).to_string());
    let (_, balance) = app
        .admin(Method::GET, "/wallet-addresses/bob/balance", None)
        .await;
    assert_eq!(
        balance["balance"]["value"],
        fulfilled.to_string(),
        "{balance}"
    );
    ledger_balanced(app).await;
}

/// 40 packets of 0.03 at once to an incoming payment of 0.10: exactly
/// three are fulfilled (0.09; a fourth would pass 0.10), and the peer paid
/// exactly 0.09: the check that a packet fits and the credit are one
/// under concurrency.
async fn concurrent_fill(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let (id, address, secret) = receiver(app, "10").await;
    let sends = (0..40).map(|_| send_packet(app, prepare(app, &address, &secret, 3, 0, true)));
    let answers = futures_util::future::join_all(sends).await;
    let fulfilled = answers
        .iter()
        .filter(|p| matches!(p, Packet::Fulfill(_)))
        .count();
    assert_eq!(fulfilled, 3, "{answers:?}");
    let ip = received(app, &id).await;
    assert_eq!(ip["receivedAmount"]["value"], "9", "{ip}");
    assert_eq!(ip["completed"], false, "{ip}");
    assert_eq!(liquidity(&w).await, "991");
    let (_, balance) = app
        .admin(Method::GET, "/wallet-addresses/bob/balance", None)
        .await;
    assert_eq!(balance["balance"]["value"], "9", "{balance}");
    ledger_balanced(app).await;
}

/// A sender closing its connection gets its close echoed in the reject and
/// nothing is credited; a probe the receiver cannot fulfil is answered
/// with what arrived, and closes nothing.
#[tokio::test]
async fn a_sender_closing_gets_its_close_echoed_and_a_probe_does_not() {
    let w = world(Db::Sqlite).await;
    let app = &w.app;
    let (location, address, secret) = receiver(app, "500").await;
    let before = liquidity(&w).await;
    let closing = StreamPacket {
        sequence: 1,
        ilp_packet_type: PacketType::Prepare,
        prepare_amount: 0,
        frames: vec![Frame::ConnectionClose {
            code: opd_ilp::StreamErrorCode::NoError,
            message: String::new(),
        }],
    };
    let replies = [
        carrying(app, &address, &secret, 10, &closing, true, 30_000),
        prepare(app, &address, &secret, 10, 0, false),
    ];
    let mut closes = Vec::new();
    for packet in replies {
        let Packet::Reject(r) = send_packet(app, packet).await else {
            panic!("both are refused")
        };
        assert_eq!(r.code, ErrorCode::F99_APPLICATION_ERROR);
        let reply = StreamPacket::decrypt_and_decode(&secret, &r.data).unwrap();
        closes.push(
            reply
                .frames
                .iter()
                .any(|f| matches!(f, Frame::ConnectionClose { .. })),
        );
    }
    assert_eq!(closes, [true, false], "closing, probe");
    assert_eq!(
        received(app, &location).await["receivedAmount"],
        amount("0", "USD", 2)
    );
    assert_eq!(liquidity(&w).await, before, "the peer paid nothing");
    ledger_balanced(app).await;
}

/// External mode: an incoming payment its client completes with money on
/// it announces what the operator has to withdraw.
#[tokio::test]
async fn a_payment_completed_by_its_client_in_external_mode_says_what_waits() {
    let w = world_with(Db::Sqlite, |s| s.serve.external_funding = true).await;
    let app = &w.app;
    let (location, address, secret) = receiver(app, "500").await;
    let Packet::Fulfill(_) =
        send_packet(app, prepare(app, &address, &secret, 120, 120, true)).await
    else {
        panic!("120 is taken")
    };
    let (s, done) = app.post(&format!("{location}/complete"), &json!({})).await;
    assert_eq!(s, StatusCode::OK, "{done}");
    let events = app
        .services()
        .store
        .due_webhook_events(app.clock.now().plus_millis(1), 100)
        .await
        .unwrap();
    let completed: Vec<Value> = events
        .iter()
        .filter(|e| e.kind == EventKind::IncomingPaymentCompleted)
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    assert_eq!(completed.len(), 1);
    assert_eq!(
        completed[0]["data"]["amountToWithdraw"],
        amount("120", "USD", 2)
    );
    assert_eq!(crate::remote::balance(app, "bob").await, "0");
    ledger_balanced(app).await;
}
