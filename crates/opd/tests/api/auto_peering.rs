//! The auto-peering listener against a requester trying to take what is
//! not its own: an operator's peer, routes under our address, under
//! `peer.config` or over another peer's, a token in use, a renewal without
//! proof, more peers or more liquidity than the operator allowed. Every
//! refusal is the same answer; what a requester may do (create a peer,
//! renew its own with the token opd gave it) still works, and the
//! outgoing tokens opd keeps are stored sealed.

use opd_core::Clock as _;
use opd_ilp::packet::{Packet, Prepare};
use opd_ilp::{condition_of, IlpAddress};
use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::assert_error;

const BANK_TOKEN: &str = "bank-to-opd-token";

/// A node with the listener on (no rate limit unless `adjust` sets one),
/// and an operator's peer `test.bank` funded with 1000.
async fn node(db: Db, adjust: impl FnOnce(&mut opd::config::Settings)) -> (TestApp, String) {
    let app = TestApp::spawn_with(db, |s| {
        s.serve.auto_peering_listen = Some("127.0.0.1:0".parse().unwrap());
        s.serve.auto_peering_requests_per_minute = 0;
        adjust(s);
    })
    .await;
    let (s, peer) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&json!({
                "name": "bank",
                "staticIlpAddress": "test.bank",
                "asset": { "code": "USD", "scale": 2 },
                "maxPacketAmount": "100000",
                "http": {
                    "incoming": { "authTokens": [BANK_TOKEN] },
                    "outgoing": { "endpoint": "http://127.0.0.1:9/bank", "authToken": "opd-to-bank" }
                }
            })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{peer}");
    let id = peer["id"].as_str().unwrap().to_owned();
    let (s, v) = app
        .admin(
            Method::POST,
            &format!("/peers/{id}/deposits"),
            Some(&json!({ "amount": "1000", "idempotencyKey": "fund" })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    (app, id)
}

fn request(address: &str, token: &str) -> Value {
    json!({
        "staticIlpAddress": address,
        "ilpConnectorUrl": "http://127.0.0.1:9/attacker",
        "asset": { "code": "USD", "scale": 2 },
        "httpToken": token,
        "maxPacketAmount": 1,
        "name": format!("requester {address}")
    })
}

/// Sends a peering request, with `Authorization: Bearer <proof>` if given:
/// the status, `Retry-After`, and the body.
async fn ask(
    app: &TestApp,
    body: &Value,
    proof: Option<&str>,
) -> (StatusCode, Option<String>, Value) {
    let addr = app.running.as_ref().unwrap().auto_peering_addr.unwrap();
    let mut req = app.http.post(format!("http://{addr}/")).json(body);
    if let Some(p) = proof {
        req = req.bearer_auth(p);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let retry = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, retry, resp.json().await.unwrap())
}

/// The token of a peering just created or renewed.
async fn peered(app: &TestApp, body: &Value, proof: Option<&str>) -> String {
    let (s, _, v) = ask(app, body, proof).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["httpToken"].as_str().unwrap().to_owned()
}

async fn peers(app: &TestApp) -> Vec<Value> {
    let (s, v) = app.admin(Method::GET, "/peers", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v.as_array().unwrap().clone()
}

async fn peer_at(app: &TestApp, address: &str) -> Value {
    peers(app)
        .await
        .into_iter()
        .find(|p| p["staticIlpAddress"] == address)
        .unwrap_or_else(|| panic!("no peer at {address}"))
}

/// Whether an IL-DCP request with `token` is fulfilled (`None`: 401).
async fn ildcp(app: &TestApp, token: &str) -> Option<bool> {
    let prepare = Prepare {
        amount: 0,
        expires_at: opd_ilp::Timestamp::from_unix_millis(app.clock.now().unix_millis() + 30_000)
            .unwrap(),
        execution_condition: condition_of(&[0; 32]),
        destination: IlpAddress::new("peer.config").unwrap(),
        data: Vec::new(),
    };
    let resp = app
        .http
        .post(&app.ilp)
        .bearer_auth(token)
        .header("content-type", "application/octet-stream")
        .body(prepare.encode())
        .send()
        .await
        .unwrap();
    if resp.status() == StatusCode::UNAUTHORIZED {
        return None;
    }
    assert_eq!(resp.status(), StatusCode::OK);
    let bytes = resp.bytes().await.unwrap();
    Some(matches!(
        Packet::decode(&bytes).unwrap(),
        Packet::Fulfill(_)
    ))
}

/// The one refusal every attempt below must get.
fn assert_refused(status: StatusCode, body: &Value) {
    assert_error(status, body, 403, "peering_refused");
    assert_eq!(
        body,
        &json!({ "error": { "code": "peering_refused", "description": "the peering request was refused" } })
    );
}

async fn ledger_balanced(app: &TestApp) {
    let (s, v) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["balanced"], true, "{v}");
}

#[tokio::test]
async fn an_operators_peer_cannot_be_taken_over() {
    let (app, id) = node(Db::Sqlite, |s| {
        s.serve.auto_peering_liquidity = 5_000;
        s.serve.auto_peering_liquidity_total = 100_000;
    })
    .await;
    let (_, before) = app.admin(Method::GET, &format!("/peers/{id}"), None).await;
    assert_eq!(before["createdBy"], "operator");

    // Its address, with or without a guessed proof: refused.
    for proof in [None, Some("opd-to-bank"), Some("guess")] {
        let (s, _, v) = ask(&app, &request("test.bank", "attacker-token"), proof).await;
        assert_refused(s, &v);
    }
    // Nothing of it changed: tokens, endpoint, max packet, liquidity.
    let (_, after) = app.admin(Method::GET, &format!("/peers/{id}"), None).await;
    assert_eq!(after, before);
    assert_eq!(after["liquidity"], "1000");
    assert_eq!(after["maxPacketAmount"], "100000");
    assert_eq!(
        after["http"]["outgoing"]["endpoint"],
        "http://127.0.0.1:9/bank"
    );
    assert_eq!(peers(&app).await.len(), 1);
    // Its own token still works; the requester's never did.
    assert_eq!(ildcp(&app, BANK_TOKEN).await, Some(true));
    assert_eq!(ildcp(&app, "attacker-token").await, None);
    // Its outgoing token is still the operator's (opened from its seal).
    let peer =
        opd_service::interledger::peers::get(app.services(), opd_core::PeerId::parse(&id).unwrap())
            .await
            .unwrap();
    assert_eq!(peer.outgoing.unwrap().auth_token, "opd-to-bank");
    ledger_balanced(&app).await;
}

#[tokio::test]
async fn overlapping_reserved_or_taken_requests_get_one_refusal() {
    let (app, _) = node(Db::Sqlite, |_| {}).await;
    // Another operator's peer whose route is below its address's scheme.
    let (s, v) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&json!({
                "name": "region", "staticIlpAddress": "test.hub",
                "asset": { "code": "USD", "scale": 2 }, "routes": ["test.region.east"]
            })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let attempts = [
        // Our own address, under it, above it.
        request("test.opd", "t1"),
        request("test.opd.wallets", "t2"),
        // IL-DCP and the other reserved schemes.
        request("peer.config", "t3"),
        request("peer.other", "t4"),
        request("self.x", "t5"),
        // Under another peer's route or address, above a route.
        request("test.bank.sub", "t6"),
        request("test.region.east.x", "t7"),
        request("test.region", "t8"),
        request("test.hub.a", "t9"),
        // An operator's peer.
        request("test.bank", "t10"),
        // A token already in use by a peer.
        request("test.fresh", BANK_TOKEN),
        // A name a peer has.
        {
            let mut r = request("test.fresh", "t15");
            r["name"] = json!("bank");
            r
        },
    ];
    let mut answers = Vec::new();
    for body in &attempts {
        let (s, _, v) = ask(&app, body, None).await;
        assert_refused(s, &v);
        answers.push((s, v));
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    assert_eq!(peers(&app).await.len(), 2, "nothing was created");
    assert_eq!(ildcp(&app, BANK_TOKEN).await, Some(true));

    // Prefixes are compared segment by segment: `test.banker` is not
    // under `test.bank`, nor `test.opdx` under `test.opd`.
    peered(&app, &request("test.banker", "t11"), None).await;
    peered(&app, &request("test.opdx", "t12"), None).await;
    // And a requester cannot take the one it has not created either.
    let (s, _, v) = ask(&app, &request("test.banker.sub", "t13"), None).await;
    assert_refused(s, &v);
    // A malformed request is still told apart.
    let (s, _, v) = ask(&app, &request("not an address", "t14"), None).await;
    assert_error(s, &v, 400, "invalid_request");
}

#[tokio::test]
async fn a_renewal_needs_the_token_opd_gave_the_requester() {
    let (app, _) = node(Db::Sqlite, |s| {
        s.serve.auto_peering_liquidity = 5_000;
        s.serve.auto_peering_liquidity_total = 100_000;
    })
    .await;
    let first = peered(&app, &request("test.rafiki", "rafiki-1"), None).await;
    let created = peer_at(&app, "test.rafiki").await;
    assert_eq!(created["createdBy"], "auto-peering");
    assert_eq!(created["liquidity"], "5000");
    assert_eq!(ildcp(&app, "rafiki-1").await, Some(true));

    // Without proof, with a wrong one, or with the requester's own token:
    // the same refusal, nothing changed.
    for proof in [None, Some("wrong"), Some("rafiki-1")] {
        let (s, _, v) = ask(&app, &request("test.rafiki", "thief"), proof).await;
        assert_refused(s, &v);
    }
    assert_eq!(peer_at(&app, "test.rafiki").await, created);
    assert_eq!(ildcp(&app, "rafiki-1").await, Some(true));
    assert_eq!(ildcp(&app, "thief").await, None);
    // The proof is no use in another asset.
    let mut eur = request("test.rafiki", "rafiki-eur");
    eur["asset"] = json!({ "code": "EUR", "scale": 2 });
    let (s, _, v) = ask(&app, &eur, Some(&first)).await;
    assert_refused(s, &v);

    // With it: renewed (tokens and endpoint), no second deposit; the name
    // the operator sees stays, whatever the renewal calls itself.
    let mut again = request("test.rafiki", "rafiki-2");
    again["ilpConnectorUrl"] = json!("http://127.0.0.1:9/renewed");
    again["name"] = json!("renamed by the requester");
    let second = peered(&app, &again, Some(&first)).await;
    assert_ne!(second, first);
    let renewed = peer_at(&app, "test.rafiki").await;
    assert_eq!(peers(&app).await.len(), 2);
    assert_eq!(renewed["liquidity"], "5000");
    assert_eq!(
        renewed["http"]["outgoing"]["endpoint"],
        "http://127.0.0.1:9/renewed"
    );
    assert_eq!(renewed["createdBy"], "auto-peering");
    assert_eq!(renewed["name"], created["name"]);
    assert_eq!(ildcp(&app, "rafiki-1").await, None);
    assert_eq!(ildcp(&app, "rafiki-2").await, Some(true));
    assert_eq!(
        app.services().store.auto_peering_granted().await.unwrap(),
        5_000
    );
    // The old proof is spent; the new one works.
    let (s, _, v) = ask(&app, &request("test.rafiki", "rafiki-3"), Some(&first)).await;
    assert_refused(s, &v);
    peered(&app, &request("test.rafiki", "rafiki-3"), Some(&second)).await;
    ledger_balanced(&app).await;
}

#[tokio::test]
async fn auto_peered_peers_are_limited_in_number() {
    let (app, _) = node(Db::Sqlite, |s| s.serve.auto_peering_max_peers = 2).await;
    peered(&app, &request("test.a", "ta"), None).await;
    let b = peered(&app, &request("test.b", "tb"), None).await;
    let (s, _, v) = ask(&app, &request("test.c", "tc"), None).await;
    assert_error(s, &v, 403, "peering_quota_reached");
    assert_eq!(
        peers(&app).await.len(),
        3,
        "the operator's peer is not counted"
    );
    // A renewal is no new peer: allowed at the quota. Once the operator
    // deletes one, a new one may come.
    peered(&app, &request("test.b", "tb2"), Some(&b)).await;
    let a = peer_at(&app, "test.a").await;
    let (s, _) = app
        .admin(
            Method::DELETE,
            &format!("/peers/{}", a["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    peered(&app, &request("test.c", "tc"), None).await;
    let (s, _, v) = ask(&app, &request("test.d", "td"), None).await;
    assert_error(s, &v, 403, "peering_quota_reached");
}

#[tokio::test]
async fn requests_are_limited_per_address() {
    let (app, _) = node(Db::Sqlite, |s| s.serve.auto_peering_requests_per_minute = 2).await;
    peered(&app, &request("test.a", "ta"), None).await;
    let (s, _, v) = ask(&app, &request("test.bank", "tb"), None).await;
    assert_refused(s, &v);
    let (s, retry, v) = ask(&app, &request("test.c", "tc"), None).await;
    assert_error(s, &v, 429, "too_many_requests");
    assert!(retry.is_some_and(|r| r.parse::<u32>().unwrap() >= 1));
    assert_eq!(peers(&app).await.len(), 2);
}

#[tokio::test]
async fn liquidity_is_granted_within_the_total() {
    liquidity_total(Db::Sqlite).await;
}

#[tokio::test]
async fn liquidity_is_granted_within_the_total_on_postgres() {
    liquidity_total(Db::Postgres).await;
}

async fn liquidity_total(db: Db) {
    let (app, _) = node(db, |s| {
        s.serve.auto_peering_liquidity = 5_000;
        s.serve.auto_peering_liquidity_total = 8_000;
    })
    .await;
    for (address, want) in [("test.a", "5000"), ("test.b", "3000"), ("test.c", "0")] {
        peered(&app, &request(address, address), None).await;
        assert_eq!(peer_at(&app, address).await["liquidity"], want, "{address}");
    }
    assert_eq!(
        app.services().store.auto_peering_granted().await.unwrap(),
        8_000
    );
    ledger_balanced(&app).await;
}

#[tokio::test]
async fn concurrent_requests_stay_within_the_quota_and_the_total_on_postgres() {
    let (app, _) = node(Db::Postgres, |s| {
        s.serve.auto_peering_liquidity = 5_000;
        s.serve.auto_peering_liquidity_total = 12_000;
        s.serve.auto_peering_max_peers = 4;
    })
    .await;
    let bodies: Vec<Value> = (0..10)
        .map(|i| request(&format!("test.n{i}"), &format!("token-{i}")))
        .collect();
    let answers = futures_util::future::join_all(bodies.iter().map(|b| ask(&app, b, None))).await;
    let created = answers
        .iter()
        .filter(|(s, _, _)| *s == StatusCode::OK)
        .count();
    assert_eq!(created, 4, "{answers:?}");
    let all = peers(&app).await;
    let granted: u64 = all
        .iter()
        .filter(|p| p["createdBy"] == "auto-peering")
        .map(|p| p["liquidity"].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(granted, 12_000);
    assert_eq!(
        app.services().store.auto_peering_granted().await.unwrap(),
        12_000
    );
    ledger_balanced(&app).await;
}

#[tokio::test]
async fn outgoing_tokens_are_stored_sealed() {
    let (app, bank) = node(Db::Sqlite, |_| {}).await;
    let ours = peered(&app, &request("test.rafiki", "rafiki-1"), None).await;
    let store = &app.services().store;
    let rafiki = peer_at(&app, "test.rafiki").await;
    for (id, clear) in [
        (bank.as_str(), "opd-to-bank"),
        (rafiki["id"].as_str().unwrap(), ours.as_str()),
    ] {
        let id = opd_core::PeerId::parse(id).unwrap();
        let raw = store.get_peer(id).await.unwrap().unwrap();
        let stored = raw.outgoing.unwrap().auth_token;
        assert!(stored.starts_with("v1:"), "{stored}");
        assert!(!stored.contains(clear), "{stored}");
        // The service layer opens it; the admin API never shows it.
        let opened = opd_service::interledger::peers::get(app.services(), id)
            .await
            .unwrap();
        assert_eq!(opened.outgoing.unwrap().auth_token, clear);
    }
    let (_, shown) = app.admin(Method::GET, "/peers", None).await;
    assert!(!shown.to_string().contains(&ours) && !shown.to_string().contains("opd-to-bank"));

    // A token an earlier version stored in clear is sealed at start.
    let mut legacy = store
        .get_peer(opd_core::PeerId::parse(&bank).unwrap())
        .await
        .unwrap()
        .unwrap();
    legacy.outgoing.as_mut().unwrap().auth_token = "legacy-clear-token".into();
    assert!(store.update_peer(&legacy, None).await.unwrap());
    let services = app.services();
    let opened = opd_service::interledger::peers::get(services, legacy.id)
        .await
        .unwrap();
    assert_eq!(
        opened.outgoing.unwrap().auth_token,
        "legacy-clear-token",
        "read as clear until sealed"
    );
    let sealed = opd_service::interledger::peers::seal_stored_outgoing_tokens(
        store.as_ref(),
        services.random.as_ref(),
        &services.config.secrets_key,
    )
    .await
    .unwrap();
    assert_eq!(sealed, 1, "only the clear one");
    let raw = store.get_peer(legacy.id).await.unwrap().unwrap();
    assert!(!raw
        .outgoing
        .unwrap()
        .auth_token
        .contains("legacy-clear-token"));
    let opened = opd_service::interledger::peers::get(services, legacy.id)
        .await
        .unwrap();
    assert_eq!(opened.outgoing.unwrap().auth_token, "legacy-clear-token");
}
