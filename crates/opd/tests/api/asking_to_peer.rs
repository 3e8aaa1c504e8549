//! Asking to be peered, the requesting side of the reference server's
//! auto-peering protocol: two opd servers peer in one command
//! (`opd peer auto-peer`) and pay each other, the command renews the
//! peering when run again, and the request is exactly what the reference
//! server's acceptor reads (checked against a double answering as it
//! does). A hostile acceptor cannot take packets routed elsewhere: an
//! answer under or above our own address or another peer's address or
//! route is refused, and a renewal keeps the peer's address.

use std::sync::{Arc, Mutex};

use axum::routing::post;
use axum::{Json, Router};
use opd_service::payments::outgoing::lifecycle::Step;
use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::amount;
use crate::remote::{admin_ok, balanced, paying, peer_id, set_rate, Pair};

/// `opd peer auto-peer <url> --json` against `app`'s admin API: its JSON
/// output.
fn auto_peer_command(app: &TestApp, url: &str) -> Value {
    let addr = app.admin.trim_start_matches("http://").to_owned();
    let out = opd_testkit::output(
        std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
            .args(["--admin-listen", &addr, "--admin-token", &app.admin_token])
            .args(["peer", "auto-peer", url, "--asset-code", "USD"])
            .args([
                "--asset-scale",
                "2",
                "--max-packet-amount",
                "1000.00",
                "--json",
            ])
            .env_remove("OPD_CONFIG"),
    );
    assert!(
        out.status.success(),
        "opd peer auto-peer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

// The command blocks its thread while the servers answer on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_peer_in_one_command_and_pay_each_other() {
    let mut a = TestApp::spawn_with(Db::Sqlite, |s| s.serve.ilp_address = "test.a".into()).await;
    let mut b = TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.ilp_address = "test.b".into();
        s.serve.auto_peering_listen = Some("127.0.0.1:0".parse().unwrap());
        s.serve.auto_peering_liquidity = 1_000_000;
        s.serve.auto_peering_liquidity_total = 1_000_000;
    })
    .await;
    a.know(&b);
    b.know(&a);
    let acceptor = format!(
        "http://{}/",
        b.running.as_ref().unwrap().auto_peering_addr.unwrap()
    );
    let peer = auto_peer_command(&a, &acceptor);
    assert_eq!(peer["staticIlpAddress"], "test.b", "{peer}");
    assert_eq!(peer["routes"], json!(["test.b"]), "{peer}");
    // A holds B's liquidity too, so that B can pay A.
    let b_at_a = peer_id(&a, "opd").await;
    admin_ok(
        &a,
        Method::POST,
        &format!("/peers/{b_at_a}/deposits"),
        json!({ "amount": "1000000", "idempotencyKey": "b-liquidity" }),
    )
    .await;
    set_rate(&a, "0.9").await;
    set_rate(&b, "0.9").await;

    // A pays B.
    let w = paying(Pair { a, b }).await;
    assert!(matches!(w.step().await, Step::Completed(_)));
    let (_, got) = w.b.get(&w.receiver).await;
    assert_eq!(got["receivedAmount"], amount("1000", "EUR", 2));
    let Pair { a, b } = Pair { a: w.a, b: w.b };

    // Asked again: the same peer, renewed (new tokens both ways), and
    // the peering still carries payments, now from B to A.
    let renewed = auto_peer_command(&a, &acceptor);
    assert_eq!(renewed["id"].as_str(), Some(b_at_a.as_str()), "{renewed}");
    let w = paying(Pair { a: b, b: a }).await;
    assert!(matches!(w.step().await, Step::Completed(_)));
    let (_, got) = w.b.get(&w.receiver).await;
    assert_eq!(got["receivedAmount"], amount("1000", "EUR", 2));
    balanced(&w.a).await;
    balanced(&w.b).await;
}

/// What the double received.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// An acceptor answering as the reference server's does, with `address`
/// as its static address.
async fn reference_acceptor(seen: Seen, address: &'static str) -> String {
    let app = Router::new().route(
        "/",
        post(
            move |headers: axum::http::HeaderMap, Json(body): Json<Value>| {
                let seen = seen.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    seen.lock().unwrap().push((auth, body));
                    Json(json!({
                        "staticIlpAddress": address,
                        "ilpConnectorUrl": "http://127.0.0.1:9/rafiki-ilp",
                        "httpToken": "rafiki-to-opd",
                        "name": "Rafiki Money"
                    }))
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/")
}

#[tokio::test]
async fn the_request_is_what_the_reference_servers_acceptor_reads() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| s.serve.ilp_address = "test.opd".into()).await;
    let seen: Seen = Arc::default();
    let url = reference_acceptor(seen.clone(), "test.rafiki").await;
    let ask =
        json!({ "url": url, "asset": { "code": "USD", "scale": 2 }, "maxPacketAmount": "50000" });
    let (s, peer) = app
        .admin(Method::POST, "/peers/auto-peer", Some(&ask))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{peer}");
    assert_eq!(peer["name"], "Rafiki Money");
    assert_eq!(peer["staticIlpAddress"], "test.rafiki");
    assert_eq!(peer["maxPacketAmount"], "50000", "{peer}");

    let (auth, sent) = seen.lock().unwrap()[0].clone();
    assert_eq!(auth, None, "a first request proves nothing");
    assert_eq!(sent["staticIlpAddress"], "test.opd");
    assert_eq!(sent["ilpConnectorUrl"], app.ilp.as_str(), "{sent}");
    assert_eq!(sent["asset"], json!({ "code": "USD", "scale": 2 }));
    assert_eq!(sent["maxPacketAmount"], json!(50000), "a JSON number");
    let token = sent["httpToken"].as_str().unwrap().to_owned();
    assert!(token.len() >= 32, "{sent}");

    // The token the double answered is the one opd accepts packets with;
    // the one opd sent is the one it presents there.
    assert_eq!(
        ilp_status(&app, "rafiki-to-opd").await,
        StatusCode::OK,
        "the peer's token is accepted"
    );
    assert_eq!(
        ilp_status(&app, &token).await,
        StatusCode::UNAUTHORIZED,
        "ours is not theirs"
    );

    // Asked again: renewed, proving with the token the other side gave.
    let (s, renewed) = app
        .admin(Method::POST, "/peers/auto-peer", Some(&ask))
        .await;
    assert_eq!(s, StatusCode::OK, "{renewed}");
    assert_eq!(renewed["id"], peer["id"]);
    let (auth, _) = seen.lock().unwrap()[1].clone();
    assert_eq!(auth.as_deref(), Some("Bearer rafiki-to-opd"));

    // An answer that is no peering changes nothing.
    let (s, v) = app
        .admin(
            Method::POST,
            "/peers/auto-peer",
            Some(
                &json!({ "url": format!("{}/", app.base), "asset": { "code": "USD", "scale": 2 } }),
            ),
        )
        .await;
    crate::assert_error(s, &v, 502, "peering_failed");
    // Nor does an answer claiming an address under ours (it would take
    // our own packets).
    let under_ours = reference_acceptor(Arc::default(), "test.opd.evil").await;
    let (s, v) = app
        .admin(
            Method::POST,
            "/peers/auto-peer",
            Some(&json!({ "url": under_ours, "asset": { "code": "USD", "scale": 2 } })),
        )
        .await;
    crate::assert_error(s, &v, 502, "peering_failed");
    let (_, all) = app.admin(Method::GET, "/peers", None).await;
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
}

/// An acceptor answering whatever it is told to (changed between
/// requests), and the `Authorization` headers it received.
#[derive(Clone, Default)]
struct Hostile {
    answer: Arc<Mutex<Value>>,
    auth: Arc<Mutex<Vec<Option<String>>>>,
}

impl Hostile {
    /// From now on, answers `address` and the token `token`.
    fn answers(&self, address: &str, token: &str) {
        *self.answer.lock().unwrap() = json!({
            "staticIlpAddress": address,
            "ilpConnectorUrl": "http://127.0.0.1:9/hostile-ilp",
            "httpToken": token,
            "name": "hostile"
        });
    }

    fn last_auth(&self) -> Option<String> {
        self.auth.lock().unwrap().last().cloned().flatten()
    }

    /// Serves it; its URL.
    async fn serve(&self) -> String {
        let me = self.clone();
        let app = Router::new().route(
            "/",
            post(move |headers: axum::http::HeaderMap| {
                let me = me.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    me.auth.lock().unwrap().push(auth);
                    Json(me.answer.lock().unwrap().clone())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}/")
    }
}

/// A node at `test.opd` with an operator's peer `hub` at `test.hub.one`
/// that also routes `test.s2`, and a hostile acceptor: its URL.
async fn node_with_hub() -> (TestApp, Hostile, String) {
    let app = TestApp::spawn_with(Db::Sqlite, |s| s.serve.ilp_address = "test.opd".into()).await;
    admin_ok(
        &app,
        Method::POST,
        "/peers",
        json!({
            "name": "hub", "staticIlpAddress": "test.hub.one", "routes": ["test.s2"],
            "asset": { "code": "USD", "scale": 2 },
            "http": { "outgoing": { "endpoint": "http://127.0.0.1:9/hub", "authToken": "opd-to-hub" } }
        }),
    )
    .await;
    let hostile = Hostile::default();
    let url = hostile.serve().await;
    (app, hostile, url)
}

async fn ask_to_peer(app: &TestApp, url: &str) -> (StatusCode, Value) {
    let ask = json!({ "url": url, "asset": { "code": "USD", "scale": 2 } });
    app.admin(Method::POST, "/peers/auto-peer", Some(&ask))
        .await
}

/// The name of the peer packets to `destination` go to.
async fn routed_to(app: &TestApp, destination: &str) -> Option<String> {
    opd_service::interledger::connector::route_except(app.services(), destination, None)
        .await
        .unwrap()
        .map(|p| p.name)
}

/// The status opd answers an ILP packet sent with `bearer`: 200 for a
/// peer's incoming token, 401 for any other.
async fn ilp_status(app: &TestApp, bearer: &str) -> StatusCode {
    let prepare = opd_ilp::packet::Prepare {
        amount: 0,
        expires_at: opd_ilp::Timestamp::from_unix_millis(
            opd_core::Clock::now(&app.clock).unix_millis() + 30_000,
        )
        .unwrap(),
        execution_condition: [0; 32],
        destination: "test.opd.nowhere".parse().unwrap(),
        data: Vec::new(),
    };
    let reply = app
        .http
        .post(&app.ilp)
        .bearer_auth(bearer)
        .header("content-type", "application/octet-stream")
        .body(prepare.encode())
        .send()
        .await
        .unwrap();
    reply.status()
}

#[tokio::test]
async fn an_answer_taking_what_is_routed_elsewhere_is_refused() {
    let (app, hostile, url) = node_with_hub().await;
    let (_, before) = app.admin(Method::GET, "/peers", None).await;
    let refusals = [
        // Under another peer's route, the same route, above its address.
        (
            "test.s2.x",
            "test.s2.x is under the route test.s2 of the peer \"hub\"",
        ),
        (
            "test.s2",
            "test.s2 is the route test.s2 of the peer \"hub\"",
        ),
        (
            "test.hub",
            "test.hub is above the address test.hub.one of the peer \"hub\"",
        ),
        // Our own address, under it, above it.
        ("test.opd", "test.opd is our own address test.opd"),
        ("test.opd.x", "test.opd.x is under our own address test.opd"),
        ("test", "test is above our own address test.opd"),
    ];
    for (i, (address, named)) in refusals.iter().enumerate() {
        hostile.answers(address, &format!("hostile-{i}"));
        let (s, v) = ask_to_peer(&app, &url).await;
        crate::assert_error(s, &v, 502, "peering_failed");
        let description = v["error"]["description"].as_str().unwrap();
        assert!(description.contains(named), "{address}: {v}");
        // Nothing changed: no peer, no token taken, the same routing.
        assert_eq!(app.admin(Method::GET, "/peers", None).await.1, before);
        assert_eq!(
            ilp_status(&app, &format!("hostile-{i}")).await,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            routed_to(&app, "test.s2.x.bob").await.as_deref(),
            Some("hub")
        );
    }

    // Segment by segment: `test.s20` is not under `test.s2`. A first
    // peering: nothing was kept of the refused ones (no proof sent).
    hostile.answers("test.s20", "hostile-ok");
    let (s, peer) = ask_to_peer(&app, &url).await;
    assert_eq!(s, StatusCode::CREATED, "{peer}");
    assert_eq!(peer["routes"], json!(["test.s20"]), "{peer}");
    assert_eq!(hostile.last_auth(), None);
    assert_eq!(ilp_status(&app, "hostile-ok").await, StatusCode::OK);
    assert_eq!(
        routed_to(&app, "test.s20.bob").await.as_deref(),
        Some("hostile")
    );
    assert_eq!(routed_to(&app, "test.s2.bob").await.as_deref(), Some("hub"));
}

#[tokio::test]
async fn a_renewal_keeps_the_peers_address_and_routes() {
    let (app, hostile, url) = node_with_hub().await;
    hostile.answers("test.evilry", "evil-1");
    let (s, peer) = ask_to_peer(&app, &url).await;
    assert_eq!(s, StatusCode::CREATED, "{peer}");
    let id = peer["id"].as_str().unwrap().to_owned();
    // The operator routes more through it.
    let routes = json!({ "routes": ["test.evilry", "test.more"] });
    admin_ok(&app, Method::PATCH, &format!("/peers/{id}"), routes).await;
    let (_, before) = app.admin(Method::GET, &format!("/peers/{id}"), None).await;

    // A renewal answering another address, under another peer's route or
    // free: refused, both addresses named, nothing changed.
    for (i, address) in ["test.s2.y", "test.elsewhere"].into_iter().enumerate() {
        let token = format!("evil-moved-{i}");
        hostile.answers(address, &token);
        let (s, v) = ask_to_peer(&app, &url).await;
        crate::assert_error(s, &v, 502, "peering_failed");
        let description = v["error"]["description"].as_str().unwrap();
        assert!(description.contains(address), "{v}");
        assert!(description.contains("test.evilry"), "{v}");
        assert_eq!(hostile.last_auth().as_deref(), Some("Bearer evil-1"));
        let (_, after) = app.admin(Method::GET, &format!("/peers/{id}"), None).await;
        assert_eq!(after, before);
        assert_eq!(ilp_status(&app, "evil-1").await, StatusCode::OK);
        assert_eq!(ilp_status(&app, &token).await, StatusCode::UNAUTHORIZED);
        assert_eq!(routed_to(&app, "test.s2.y").await.as_deref(), Some("hub"));
    }

    // A renewal at the same address works, proven with the token kept
    // from the first peering, and keeps the operator's routes.
    hostile.answers("test.evilry", "evil-3");
    let (s, renewed) = ask_to_peer(&app, &url).await;
    assert_eq!(s, StatusCode::OK, "{renewed}");
    assert_eq!(renewed["id"], peer["id"]);
    assert_eq!(renewed["staticIlpAddress"], "test.evilry");
    assert_eq!(renewed["routes"], json!(["test.evilry", "test.more"]));
    assert_eq!(hostile.last_auth().as_deref(), Some("Bearer evil-1"));
    assert_eq!(ilp_status(&app, "evil-3").await, StatusCode::OK);
    assert_eq!(ilp_status(&app, "evil-1").await, StatusCode::UNAUTHORIZED);
}
