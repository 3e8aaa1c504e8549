//! Every route, tenant against tenant. The routes are read from opd-api's
//! source (each `.route("…", get(…).post(…))` of the Open Payments and
//! admin listeners), and each (method, route) must have a row in
//! [`op_requests`] or [`admin_requests`]: a route added without one fails
//! this test. Each row is tenant `a`'s credential (a client of `a` with a
//! token for `a`'s wallet address, at `a`'s URLs; or `a`'s admin token)
//! against tenant `b`'s resources, and is refused as if they did not
//! exist: 404 (or 401), and nothing of `b`'s in the body.

use std::collections::BTreeSet;
use std::path::Path;

use opd_testkit::app::Db;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::amount;
use crate::tenants::tenants;

/// (method, route template) of every `.route(` call in `files`.
fn routes_in(files: &[&str]) -> BTreeSet<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../opd-api/src");
    let mut found = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        for call in text.split(".route(").skip(1) {
            let call = call.split([';']).next().unwrap();
            let call = call.split(".route_layer(").next().unwrap();
            let call = call.split(".with_state(").next().unwrap();
            let template = call.split('"').nth(1).unwrap().to_owned();
            for method in ["get", "post", "put", "patch", "delete"] {
                let calls = [
                    format!(" {method}("),
                    format!("({method}("),
                    format!(".{method}("),
                ];
                if calls.iter().any(|c| call.contains(c.as_str())) {
                    found.insert((method.to_uppercase(), template.clone()));
                }
            }
        }
    }
    found
}

/// A route's row: its method and template, and the request that tries it
/// (`None`: a route naming no tenant's resources).
type Row = (
    &'static str,
    &'static str,
    Option<(Method, String, Option<Value>)>,
);

/// What tenant `b` has that `a` tries to reach.
struct Theirs {
    wallet: String,
    wallet_id: String,
    incoming: String,
    quote: String,
    outgoing: String,
}

/// Open Payments: (method, template) → requests at `a`'s URLs naming `b`'s
/// resources. `None`: a route that names no tenant's resource.
fn op_requests(a: &str, b: &Theirs) -> Vec<Row> {
    let uuid = |url: &str| url.rsplit('/').next().unwrap().to_owned();
    let (ip, q, op) = (uuid(&b.incoming), uuid(&b.quote), uuid(&b.outgoing));
    let wallet = b.wallet.clone();
    let path = wallet.rsplit('/').next().unwrap().to_owned();
    vec![
        ("GET", "/healthz", None),
        ("GET", "/readyz", None),
        // The caller's own grant's spending: no wallet address is named.
        ("GET", "/outgoing-payment-grant", None),
        (
            "POST",
            "/incoming-payments",
            Some((
                Method::POST,
                format!("{a}/incoming-payments"),
                Some(json!({ "walletAddress": wallet, "incomingAmount": amount("1", "USD", 2) })),
            )),
        ),
        (
            "GET",
            "/incoming-payments",
            Some((
                Method::GET,
                format!("{a}/incoming-payments?wallet-address={wallet}"),
                None,
            )),
        ),
        (
            "GET",
            "/incoming-payments/{id}",
            Some((Method::GET, format!("{a}/incoming-payments/{ip}"), None)),
        ),
        (
            "POST",
            "/incoming-payments/{id}/complete",
            Some((
                Method::POST,
                format!("{a}/incoming-payments/{ip}/complete"),
                None,
            )),
        ),
        (
            "POST",
            "/outgoing-payments",
            Some((
                Method::POST,
                format!("{a}/outgoing-payments"),
                Some(json!({ "walletAddress": wallet, "quoteId": b.quote })),
            )),
        ),
        (
            "GET",
            "/outgoing-payments",
            Some((
                Method::GET,
                format!("{a}/outgoing-payments?wallet-address={wallet}"),
                None,
            )),
        ),
        (
            "GET",
            "/outgoing-payments/{id}",
            Some((Method::GET, format!("{a}/outgoing-payments/{op}"), None)),
        ),
        (
            "POST",
            "/quotes",
            Some((
                Method::POST,
                format!("{a}/quotes"),
                Some(json!({ "walletAddress": wallet, "receiver": b.incoming, "method": "ilp" })),
            )),
        ),
        (
            "GET",
            "/quotes/{id}",
            Some((Method::GET, format!("{a}/quotes/{q}"), None)),
        ),
        (
            "GET",
            "/{*path}",
            Some((Method::GET, format!("{a}/{path}"), None)),
        ),
    ]
}

/// The admin API with `a`'s token: (method, template) → a request naming
/// `b`'s resources (or any, for the operator's routes). `None`: a route
/// without the token (`/metrics`).
fn admin_requests(b: &Theirs) -> Vec<Row> {
    let w = &b.wallet_id;
    let ip = b.incoming.rsplit('/').next().unwrap().to_owned();
    let op = b.outgoing.rsplit('/').next().unwrap().to_owned();
    let money = json!({ "amount": "1", "idempotencyKey": "k" });
    let jwk = json!({ "jwk": { "kid": "x", "kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" } });
    let r = |m: Method, p: String, body: Option<Value>| Some((m, p, body));
    vec![
        ("GET", "/metrics", None),
        (
            "POST",
            "/wallet-addresses",
            r(
                Method::POST,
                "/wallet-addresses".into(),
                Some(json!({ "tenant": "b", "path": "x", "assetCode": "USD", "assetScale": 2 })),
            ),
        ),
        (
            "GET",
            "/wallet-addresses",
            r(Method::GET, "/wallet-addresses?tenant=b".into(), None),
        ),
        (
            "GET",
            "/wallet-addresses/{wallet}",
            r(Method::GET, format!("/wallet-addresses/{w}"), None),
        ),
        (
            "POST",
            "/wallet-addresses/{wallet}/deactivate",
            r(
                Method::POST,
                format!("/wallet-addresses/{w}/deactivate"),
                None,
            ),
        ),
        (
            "GET",
            "/wallet-addresses/{wallet}/keys",
            r(Method::GET, "/wallet-addresses/b:bob/keys".into(), None),
        ),
        (
            "POST",
            "/wallet-addresses/{wallet}/keys",
            r(
                Method::POST,
                format!("/wallet-addresses/{w}/keys"),
                Some(jwk),
            ),
        ),
        (
            "DELETE",
            "/wallet-addresses/{wallet}/keys/{kid}",
            r(
                Method::DELETE,
                format!("/wallet-addresses/{w}/keys/key-1"),
                None,
            ),
        ),
        (
            "PUT",
            "/wallet-addresses/{wallet}/owner-password",
            r(
                Method::PUT,
                format!("/wallet-addresses/{w}/owner-password"),
                Some(json!({ "password": "correct horse battery" })),
            ),
        ),
        (
            "POST",
            "/wallet-addresses/{wallet}/deposits",
            r(
                Method::POST,
                format!("/wallet-addresses/{w}/deposits"),
                Some(money.clone()),
            ),
        ),
        (
            "POST",
            "/wallet-addresses/{wallet}/withdrawals",
            r(
                Method::POST,
                format!("/wallet-addresses/{w}/withdrawals"),
                Some(money.clone()),
            ),
        ),
        (
            "GET",
            "/wallet-addresses/{wallet}/balance",
            r(Method::GET, format!("/wallet-addresses/{w}/balance"), None),
        ),
        (
            "GET",
            "/wallet-addresses/{wallet}/transfers",
            r(
                Method::GET,
                format!("/wallet-addresses/{w}/transfers"),
                None,
            ),
        ),
        (
            "POST",
            "/outgoing-payments/{id}/cancel",
            r(
                Method::POST,
                format!("/outgoing-payments/{op}/cancel"),
                None,
            ),
        ),
        (
            "POST",
            "/outgoing-payments/{id}/fund",
            r(Method::POST, format!("/outgoing-payments/{op}/fund"), None),
        ),
        (
            "POST",
            "/incoming-payments/{id}/withdrawals",
            r(
                Method::POST,
                format!("/incoming-payments/{ip}/withdrawals"),
                Some(json!({ "idempotencyKey": "k" })),
            ),
        ),
        (
            "POST",
            "/wallet-addresses/{wallet}/spsp-withdrawals",
            r(
                Method::POST,
                format!("/wallet-addresses/{w}/spsp-withdrawals"),
                Some(json!({ "idempotencyKey": "k" })),
            ),
        ),
        // The operator's alone: a tenant's token does not reach them.
        (
            "POST",
            "/introspect",
            r(
                Method::POST,
                "/introspect".into(),
                Some(json!({ "access_token": "x" })),
            ),
        ),
        (
            "GET",
            "/ledger/check",
            r(Method::GET, "/ledger/check".into(), None),
        ),
        ("GET", "/stats", r(Method::GET, "/stats".into(), None)),
        (
            "GET",
            "/fees",
            r(Method::GET, "/fees?tenant=b".into(), None),
        ),
        (
            "PUT",
            "/fees/{code}/{scale}",
            r(
                Method::PUT,
                "/fees/USD/2?tenant=b".into(),
                Some(json!({ "fixed": "0", "basisPoints": 0 })),
            ),
        ),
        (
            "DELETE",
            "/fees/{code}/{scale}",
            r(Method::DELETE, "/fees/USD/2?tenant=b".into(), None),
        ),
        ("GET", "/rates", r(Method::GET, "/rates".into(), None)),
        (
            "PUT",
            "/rates/{base}",
            r(
                Method::PUT,
                "/rates/USD".into(),
                Some(json!({ "EUR": "0.9" })),
            ),
        ),
        (
            "PUT",
            "/rates/{base}/{counter}",
            r(
                Method::PUT,
                "/rates/USD/EUR".into(),
                Some(json!({ "rate": "0.9" })),
            ),
        ),
        (
            "DELETE",
            "/rates/{base}/{counter}",
            r(Method::DELETE, "/rates/USD/EUR".into(), None),
        ),
        (
            "PUT",
            "/rates-url",
            r(
                Method::PUT,
                "/rates-url".into(),
                Some(json!({ "url": null })),
            ),
        ),
        (
            "POST",
            "/peers",
            r(Method::POST, "/peers".into(), Some(json!({}))),
        ),
        ("GET", "/peers", r(Method::GET, "/peers".into(), None)),
        (
            "POST",
            "/peers/auto-peer",
            r(Method::POST, "/peers/auto-peer".into(), Some(json!({}))),
        ),
        (
            "GET",
            "/peers/{id}",
            r(Method::GET, "/peers/x".into(), None),
        ),
        (
            "PATCH",
            "/peers/{id}",
            r(Method::PATCH, "/peers/x".into(), Some(json!({}))),
        ),
        (
            "DELETE",
            "/peers/{id}",
            r(Method::DELETE, "/peers/x".into(), None),
        ),
        (
            "POST",
            "/peers/{id}/deposits",
            r(
                Method::POST,
                "/peers/x/deposits".into(),
                Some(money.clone()),
            ),
        ),
        (
            "POST",
            "/peers/{id}/withdrawals",
            r(Method::POST, "/peers/x/withdrawals".into(), Some(money)),
        ),
        (
            "GET",
            "/peers/{id}/balance",
            r(Method::GET, "/peers/x/balance".into(), None),
        ),
        (
            "GET",
            "/peers/{id}/transfers",
            r(Method::GET, "/peers/x/transfers".into(), None),
        ),
        (
            "POST",
            "/tenants",
            r(
                Method::POST,
                "/tenants".into(),
                Some(json!({ "id": "c", "publicName": "C", "publicUrl": "http://c.test" })),
            ),
        ),
        ("GET", "/tenants", r(Method::GET, "/tenants".into(), None)),
        (
            "GET",
            "/tenants/{tenant}",
            r(Method::GET, "/tenants/b".into(), None),
        ),
        (
            "PATCH",
            "/tenants/{tenant}",
            r(
                Method::PATCH,
                "/tenants/b".into(),
                Some(json!({ "publicName": "mine" })),
            ),
        ),
        (
            "DELETE",
            "/tenants/{tenant}",
            r(Method::DELETE, "/tenants/b".into(), None),
        ),
        (
            "POST",
            "/tenants/{tenant}/token",
            r(Method::POST, "/tenants/b/token".into(), None),
        ),
    ]
}

fn covered(rows: &[Row]) -> BTreeSet<(String, String)> {
    rows.iter()
        .map(|(m, t, _)| ((*m).to_owned(), (*t).to_owned()))
        .collect()
}

#[test]
fn every_route_has_a_row() {
    let b = Theirs {
        wallet: "w".into(),
        wallet_id: "i".into(),
        incoming: "x/1".into(),
        quote: "x/2".into(),
        outgoing: "x/3".into(),
    };
    let op = routes_in(&["resource_server/mod.rs"]);
    assert!(op.len() >= 12, "{op:?}");
    assert_eq!(
        op,
        covered(&op_requests("a", &b)),
        "Open Payments routes and their rows"
    );
    let admin = routes_in(&[
        "admin/mod.rs",
        "admin/wallets.rs",
        "admin/money.rs",
        "admin/pricing.rs",
        "admin/peers.rs",
        "admin/tenants.rs",
    ]);
    assert!(admin.len() >= 40, "{admin:?}");
    assert_eq!(
        admin,
        covered(&admin_requests(&b)),
        "admin routes and their rows"
    );
}

#[tokio::test]
async fn no_route_lets_one_tenant_reach_another_s_resources() {
    let t = tenants(Db::Sqlite).await;
    let alice = t.wallet(Some("a"), "alice", "USD").await;
    let carol = t.wallet(Some("a"), "carol", "USD").await;
    let bob = t.wallet(Some("b"), "bob", "USD").await;
    let dave = t.wallet(Some("b"), "dave", "USD").await;
    // b's resources: bob pays dave (an incoming payment, a quote, an
    // outgoing payment), all at b's URLs.
    let paid = t
        .pay(("b:bob", &bob, &t.b), ("b:dave", &dave, &t.b), "100")
        .await;
    let (_, v) = t
        .app
        .admin(Method::GET, "/wallet-addresses/b:bob", None)
        .await;
    let theirs = Theirs {
        wallet: bob.clone(),
        wallet_id: v["id"].as_str().unwrap().to_owned(),
        incoming: paid.receiver.clone(),
        quote: paid.quote.clone(),
        outgoing: paid.payment.clone(),
    };
    let secrets = [
        theirs.wallet_id.clone(),
        paid.receiver.rsplit('/').next().unwrap().to_owned(),
        paid.payment.rsplit('/').next().unwrap().to_owned(),
        "dave".to_owned(),
    ];

    // a's client, with every Open Payments access to a's alice.
    let client = t.client("a:alice", &alice, 91).await;
    let all = ["create", "read", "list", "complete"];
    let access = json!([
        { "type": "incoming-payment", "actions": all, "identifier": alice },
        { "type": "quote", "actions": ["create", "read"], "identifier": alice },
    ]);
    let token = opd_testkit::app::grant_token_at(&t.auth_of("a:alice"), &client, access).await;
    let outgoing =
        opd_testkit::app::outgoing_token_at(&t.auth_of("a:alice"), &client, &alice, Value::Null)
            .await;
    for (method, template, request) in op_requests(&t.a, &theirs) {
        let Some((m, url, body)) = request else {
            continue;
        };
        let token = if template.starts_with("/outgoing") {
            &outgoing
        } else {
            &token
        };
        let r = client.send(m, &url, Some(token), body.as_ref()).await;
        assert!(
            matches!(r.status, StatusCode::NOT_FOUND | StatusCode::UNAUTHORIZED),
            "{method} {template} ({url}): {} {}",
            r.status,
            r.body
        );
        for s in &secrets {
            assert!(
                !r.body.to_string().contains(s.as_str()),
                "{template} shows {s}: {}",
                r.body
            );
        }
    }

    // a's admin token.
    let admin = |m: Method, p: String, body: Option<Value>| {
        let token = t.tokens.0.clone();
        let base = t.app.admin.clone();
        async move { opd_testkit::app::admin_at(&base, &token, m, &p, body.as_ref()).await }
    };
    for (method, template, request) in admin_requests(&theirs) {
        let Some((m, path, body)) = request else {
            continue;
        };
        let (status, v) = admin(m, path.clone(), body).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "{method} {template} ({path}): {v}"
        );
        for s in &secrets {
            assert!(
                !v.to_string().contains(s.as_str()),
                "{template} shows {s}: {v}"
            );
        }
    }
    // Nothing of b's changed: bob's money and dave's receipt are as paid.
    let (_, v) = t
        .app
        .admin(Method::GET, "/wallet-addresses/b:bob/balance", None)
        .await;
    assert_eq!(v["balance"]["value"], "9900", "{v}");
    let (_, v) = t
        .app
        .admin(Method::GET, "/wallet-addresses/b:dave/balance", None)
        .await;
    assert_eq!(v["balance"]["value"], "100", "{v}");

    // What a's token may do, it does for a: its own wallet addresses only.
    let (s, v) = admin(Method::GET, "/wallet-addresses".into(), None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let urls: BTreeSet<_> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["url"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(urls, BTreeSet::from([alice.clone(), carol.clone()]));
    let body = json!({ "path": "erin", "assetCode": "USD", "assetScale": 2 });
    let (s, v) = admin(Method::POST, "/wallet-addresses".into(), Some(body)).await;
    assert_eq!(
        (s, v["tenant"].as_str()),
        (StatusCode::CREATED, Some("a")),
        "{v}"
    );
    let money = json!({ "amount": "700", "idempotencyKey": "own" });
    let (s, v) = admin(
        Method::POST,
        "/wallet-addresses/carol/deposits".into(),
        Some(money),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    assert_eq!(v["balance"]["value"], "700");

    // A rotated token replaces the old one at once.
    let (_, v) = t.app.admin(Method::POST, "/tenants/a/token", None).await;
    let new = v["adminToken"].as_str().unwrap().to_owned();
    let (s, _) = admin(Method::GET, "/wallet-addresses".into(), None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) =
        opd_testkit::app::admin_at(&t.app.admin, &new, Method::GET, "/wallet-addresses", None)
            .await;
    assert_eq!(s, StatusCode::OK);
    t.app.stop().await;
}
