//! Replays answered idempotently: a byte-identical signed state-changing
//! request (what the official Node client sends when an application
//! repeats a create within one second) gets the first response, and
//! nothing is created, paid or changed again; sequentially and
//! concurrently, on SQLite and PostgreSQL. A `nonce` identifies the request
//! across new signatures. Replays with another body or after the window
//! are refused.

use opd_httpsig::{build_signature_base, content_digest, RequestParts};
use opd_testkit::app::{Db, TestApp};
use opd_testkit::client::{Reply, SigningClient};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::amount;

struct World {
    app: TestApp,
    alice: String,
    bob: String,
    payer: SigningClient,
}

async fn world(db: Db) -> World {
    let app = TestApp::spawn_with(db, |_| {}).await;
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

/// The test app's default client and its token (incoming payments and
/// quotes).
fn default_client(app: &TestApp) -> (&SigningClient, &str) {
    let (c, t) = app.client.as_ref().unwrap();
    (c, t.as_str())
}

/// One signed request, sent as often as asked with the very same bytes.
struct Signed<'a> {
    client: &'a SigningClient,
    method: Method,
    url: String,
    headers: HeaderMap,
    body: Option<Vec<u8>>,
}

impl<'a> Signed<'a> {
    fn new(
        client: &'a SigningClient,
        method: Method,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Self {
        let body = body.map(|b| serde_json::to_vec(b).unwrap());
        let headers = client.sign(&method, url, token, body.as_deref());
        Self {
            client,
            method,
            url: url.to_owned(),
            headers,
            body,
        }
    }

    async fn send(&self) -> Reply {
        self.client
            .send_raw(
                self.method.clone(),
                &self.url,
                self.headers.clone(),
                self.body.clone(),
            )
            .await
    }

    /// Sends it twice, one after the other; both replies must be equal.
    async fn twice(&self) -> Reply {
        let first = self.send().await;
        let second = self.send().await;
        assert_same(&first, &second);
        first
    }

    /// Sends it twice at once; both replies must be equal.
    async fn twice_at_once(&self) -> Reply {
        let (first, second) = tokio::join!(self.send(), self.send());
        assert_same(&first, &second);
        first
    }
}

#[track_caller]
fn assert_same(first: &Reply, second: &Reply) {
    assert_eq!(
        first.status, second.status,
        "{} / {}",
        first.body, second.body
    );
    assert_eq!(first.body, second.body);
    assert_eq!(
        first.headers.get("content-type"),
        second.headers.get("content-type")
    );
}

#[track_caller]
fn created(r: &Reply) -> String {
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["id"].as_str().unwrap().to_owned()
}

async fn list(
    app: &TestApp,
    client: &SigningClient,
    token: &str,
    kind: &str,
    wallet: &str,
) -> Vec<Value> {
    let url = format!("{}?wallet-address={wallet}&first=100", app.url(kind));
    let r = client.send(Method::GET, &url, Some(token), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["result"].as_array().unwrap().clone()
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

#[tokio::test]
async fn identical_creates_are_answered_once_on_sqlite() {
    identical_creates(Db::Sqlite).await;
}

#[tokio::test]
async fn identical_creates_are_answered_once_on_postgres() {
    identical_creates(Db::Postgres).await;
}

async fn identical_creates(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let (client, token) = default_client(app);
    let incoming_url = app.url("incoming-payments");
    let new_incoming = json!({ "walletAddress": w.bob, "incomingAmount": amount("300", "USD", 2) });

    // Incoming payments: one per signed request, whether the copies come
    // one after the other or at once.
    let seq = Signed::new(
        client,
        Method::POST,
        &incoming_url,
        Some(token),
        Some(&new_incoming),
    )
    .twice()
    .await;
    let ip1 = created(&seq);
    crate::spec_rs("create-incoming-payment", seq.status, &seq.body);
    let conc = Signed::new(
        client,
        Method::POST,
        &incoming_url,
        Some(token),
        Some(&new_incoming),
    )
    .twice_at_once()
    .await;
    let ip2 = created(&conc);
    assert_ne!(ip1, ip2, "a new signature is a new request");
    assert_eq!(
        list(app, client, token, "incoming-payments", &w.bob)
            .await
            .len(),
        2
    );

    // Quotes.
    let quote_url = app.url("quotes");
    let new_quote = |ip: &str| json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" });
    let q1 = created(
        &Signed::new(
            client,
            Method::POST,
            &quote_url,
            Some(token),
            Some(&new_quote(&ip1)),
        )
        .twice()
        .await,
    );
    let q2 = created(
        &Signed::new(
            client,
            Method::POST,
            &quote_url,
            Some(token),
            Some(&new_quote(&ip2)),
        )
        .twice_at_once()
        .await,
    );

    // Outgoing payments from a quote: the ledger moves once per payment.
    // Under a limit, so the response (and its replay) says what the grant
    // had spent before each (on PostgreSQL rendered in the payment's own
    // transaction, which reads it).
    let limit = json!({ "debitAmount": amount("100000", "USD", 2) });
    let pay_token = app.outgoing_token(&w.payer, &w.alice, limit).await;
    let out_url = app.url("outgoing-payments");
    let from_quote = |q: &str| json!({ "walletAddress": w.alice, "quoteId": q });
    let op1 = Signed::new(
        &w.payer,
        Method::POST,
        &out_url,
        Some(&pay_token),
        Some(&from_quote(&q1)),
    )
    .twice()
    .await;
    crate::spec_rs("create-outgoing-payment", op1.status, &op1.body);
    created(&op1);
    assert_eq!(balance(app, "alice").await, "9700");
    let op2 = Signed::new(
        &w.payer,
        Method::POST,
        &out_url,
        Some(&pay_token),
        Some(&from_quote(&q2)),
    )
    .twice_at_once()
    .await;
    created(&op2);
    assert_eq!(balance(app, "alice").await, "9400");
    assert_eq!(op1.body["grantSpentDebitAmount"], amount("0", "USD", 2));
    assert_eq!(op2.body["grantSpentDebitAmount"], amount("300", "USD", 2));

    // Outgoing payment from an incoming payment and a debit amount (what
    // the Web Monetization extension sends), at once.
    let ip3 = created(
        &Signed::new(
            client,
            Method::POST,
            &incoming_url,
            Some(token),
            Some(&json!({ "walletAddress": w.bob })),
        )
        .send()
        .await,
    );
    let wm = json!({
        "walletAddress": w.alice,
        "incomingPayment": ip3,
        "debitAmount": amount("150", "USD", 2),
        "metadata": { "source": "Web Monetization" }
    });
    let op3 = Signed::new(
        &w.payer,
        Method::POST,
        &out_url,
        Some(&pay_token),
        Some(&wm),
    )
    .twice_at_once()
    .await;
    created(&op3);
    assert_eq!(balance(app, "alice").await, "9250");
    assert_eq!(
        list(app, &w.payer, &pay_token, "outgoing-payments", &w.alice)
            .await
            .len(),
        3
    );

    // Grant requests: the same grant (and token) for both copies.
    let grant_body = json!({
        "access_token": { "access": [{ "type": "quote", "actions": ["create"] }] },
        "client": w.payer.wallet_address
    });
    let grant_url = format!("{}/", app.auth);
    let g = Signed::new(&w.payer, Method::POST, &grant_url, None, Some(&grant_body))
        .twice_at_once()
        .await;
    assert_eq!(g.status, StatusCode::OK, "{}", g.body);
    let g2 = Signed::new(&w.payer, Method::POST, &grant_url, None, Some(&grant_body))
        .send()
        .await;
    assert_ne!(
        g.body["access_token"]["value"], g2.body["access_token"]["value"],
        "a new signature is a new grant"
    );

    // The payments run once each.
    app.run_workers().await;
    assert!(app.run_workers().await.is_empty());
    let (_, check) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(check["balanced"], true, "{check}");
    w.app.stop().await;
}

#[tokio::test]
async fn error_responses_are_replayed_too() {
    let w = world(Db::Sqlite).await;
    let app = &w.app;
    let (client, token) = default_client(app);
    // Refused after authentication: the refusal is the answer.
    let bad = json!({ "walletAddress": w.alice, "receiver": "https://nowhere.invalid/x", "method": "btc" });
    let r = Signed::new(
        client,
        Method::POST,
        &app.url("quotes"),
        Some(token),
        Some(&bad),
    )
    .twice_at_once()
    .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    w.app.stop().await;
}

#[tokio::test]
async fn the_authorization_server_answers_replays_of_token_and_continuation_calls() {
    authorization_server_replays(Db::Sqlite).await;
}

/// On PostgreSQL each of these requests' claim rides with its own write.
#[tokio::test]
async fn the_authorization_server_answers_replays_on_postgres() {
    authorization_server_replays(Db::Postgres).await;
}

async fn authorization_server_replays(db: Db) {
    let w = world(db).await;
    let app = &w.app;
    let payer = &w.payer;
    // A pending grant, whose continuation is replayed.
    let body = json!({
        "access_token": { "access": [{ "type": "outgoing-payment", "actions": ["create", "read"], "identifier": w.alice }] },
        "client": payer.wallet_address,
        "interact": { "start": ["redirect"] }
    });
    let pending = Signed::new(
        payer,
        Method::POST,
        &format!("{}/", app.auth),
        None,
        Some(&body),
    )
    .twice()
    .await;
    assert_eq!(pending.status, StatusCode::OK, "{}", pending.body);
    let cont_uri = pending.body["continue"]["uri"].as_str().unwrap();
    let cont_token = pending.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap();
    // Polling (no body) rotates the continuation token: the replay of the
    // poll still gets the first answer, not `invalid_continuation`.
    app.clock.advance_millis(6_000);
    let poll = Signed::new(payer, Method::POST, cont_uri, Some(cont_token), None)
        .twice()
        .await;
    assert_eq!(poll.status, StatusCode::OK, "{}", poll.body);
    let next_token = poll.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap();
    assert_ne!(next_token, cont_token);
    // Cancelling deletes the grant: the replay still gets 204.
    let cancel = Signed::new(payer, Method::DELETE, cont_uri, Some(next_token), None)
        .twice()
        .await;
    assert_eq!(cancel.status, StatusCode::NO_CONTENT, "{}", cancel.body);

    // Token rotation: the replay gets the same new token.
    let granted = Signed::new(
        payer,
        Method::POST,
        &format!("{}/", app.auth),
        None,
        Some(&json!({ "access_token": { "access": [{ "type": "quote", "actions": ["create"] }] }, "client": payer.wallet_address })),
    )
    .send()
    .await;
    let manage = granted.body["access_token"]["manage"].as_str().unwrap();
    let value = granted.body["access_token"]["value"].as_str().unwrap();
    let rotated = Signed::new(payer, Method::POST, manage, Some(value), None)
        .twice_at_once()
        .await;
    assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.body);
    let new_manage = rotated.body["access_token"]["manage"].as_str().unwrap();
    let new_value = rotated.body["access_token"]["value"].as_str().unwrap();
    let revoked = Signed::new(payer, Method::DELETE, new_manage, Some(new_value), None)
        .twice()
        .await;
    assert_eq!(revoked.status, StatusCode::NO_CONTENT, "{}", revoked.body);
    w.app.stop().await;
}

#[tokio::test]
async fn replays_with_another_body_or_after_the_window_are_refused() {
    let w = world(Db::Sqlite).await;
    let app = &w.app;
    let (client, token) = default_client(app);
    let url = app.url("incoming-payments");
    let signed = Signed::new(
        client,
        Method::POST,
        &url,
        Some(token),
        Some(&json!({ "walletAddress": w.bob, "incomingAmount": amount("100", "USD", 2) })),
    );
    created(&signed.send().await);

    // The same signature over another body: the digest does not match.
    let other = serde_json::to_vec(
        &json!({ "walletAddress": w.bob, "incomingAmount": amount("999", "USD", 2) }),
    )
    .unwrap();
    let mut headers = signed.headers.clone();
    headers.insert(
        "content-length",
        HeaderValue::from_str(&other.len().to_string()).unwrap(),
    );
    let r = client
        .send_raw(Method::POST, &url, headers, Some(other))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "invalid_signature", "{}", r.body);

    // After the freshness window (300 s after `created`, which the client
    // set up to 200 s in the past) the replay is stale.
    app.clock.advance_millis(301_000);
    let r = signed.send().await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "invalid_signature", "{}", r.body);
    assert!(
        r.body["error"]["description"]
            .as_str()
            .unwrap()
            .contains("Signature validation error"),
        "{}",
        r.body
    );
    assert_eq!(
        list(app, client, token, "incoming-payments", &w.bob)
            .await
            .len(),
        1
    );
    w.app.stop().await;
}

/// Signs a POST with a `nonce` parameter and the given `created`.
fn sign_with_nonce(
    client: &SigningClient,
    url: &str,
    token: &str,
    body: &[u8],
    created: u64,
    nonce: &str,
) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        "authorization",
        HeaderValue::from_str(&format!("GNAP {token}")).unwrap(),
    );
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert(
        "content-length",
        HeaderValue::from_str(&body.len().to_string()).unwrap(),
    );
    headers.insert(
        "content-digest",
        HeaderValue::from_str(&content_digest(body)).unwrap(),
    );
    let components = [
        "@method",
        "@target-uri",
        "authorization",
        "content-digest",
        "content-length",
        "content-type",
    ];
    let list: Vec<String> = components.iter().map(|c| format!("\"{c}\"")).collect();
    let params = format!(
        "({});keyid=\"{}\";created={created};nonce=\"{nonce}\"",
        list.join(" "),
        client.kid
    );
    let parts = RequestParts::new(&Method::POST, url, &headers, Some(body));
    let base = build_signature_base(&parts, &components, &params).unwrap();
    use base64::Engine;
    use ed25519_dalek::Signer;
    let sig = base64::engine::general_purpose::STANDARD.encode(client.key.sign(&base).to_bytes());
    headers.insert(
        "signature-input",
        HeaderValue::from_str(&format!("sig1={params}")).unwrap(),
    );
    headers.insert(
        "signature",
        HeaderValue::from_str(&format!("sig1=:{sig}:")).unwrap(),
    );
    headers
}

#[tokio::test]
async fn a_repeated_nonce_is_the_same_request_and_a_new_one_is_not() {
    let w = world(Db::Sqlite).await;
    let app = &w.app;
    let (client, token) = default_client(app);
    let url = app.url("incoming-payments");
    let body = serde_json::to_vec(&json!({ "walletAddress": w.bob })).unwrap();
    let now = u64::try_from(opd_core::Clock::now(&app.clock).unix_seconds()).unwrap();
    let send = |created: u64, nonce: &'static str| {
        let headers = sign_with_nonce(client, &url, token, &body, created, nonce);
        client.send_raw(Method::POST, &url, headers, Some(body.clone()))
    };
    let first = send(now - 10, "nonce-1").await;
    let id = created(&first);
    // Signed anew (another `created`), same nonce: the same request.
    let again = send(now - 5, "nonce-1").await;
    assert_same(&first, &again);
    // Another nonce: another request.
    let other = send(now - 5, "nonce-2").await;
    assert_ne!(created(&other), id);
    assert_eq!(
        list(app, client, token, "incoming-payments", &w.bob)
            .await
            .len(),
        2
    );
    w.app.stop().await;
}

/// The SQL round trips of each kind of state-changing request on
/// PostgreSQL, where the replay log is shared in the database: the
/// request's claim rides with its own write (and a created
/// resource's response with the claim, or with the `COMMIT` for an
/// outgoing payment, whose response says what its grant had spent), so it
/// costs no round trip of its own, and none to record the response of a
/// create. Each kind is
/// measured at its best of three requests after a first one (the caches it
/// reads warm). A number that grows here is a round trip more on every
/// such request; one that shrinks may be a claim no write carried (its
/// response is then not recorded: a replay would run again).
#[tokio::test]
async fn each_request_s_replay_claim_rides_with_its_own_write_on_postgres() {
    let w = world(Db::Postgres).await;
    let app = &w.app;
    let (client, token) = default_client(app);
    let trips = || app.services().store.round_trips();
    let incoming_url = app.url("incoming-payments");
    let pay_token = app.outgoing_token(&w.payer, &w.alice, Value::Null).await;
    let mut costs: Vec<(&str, u64)> = Vec::new();
    for round in 0..4 {
        let mut cost = |what: &'static str, before: u64| {
            let spent = trips() - before;
            match costs.iter_mut().find(|(w, _)| *w == what) {
                _ if round == 0 => {}
                Some((_, best)) => *best = (*best).min(spent),
                None => costs.push((what, spent)),
            }
        };
        let before = trips();
        let new_incoming =
            json!({ "walletAddress": w.bob, "incomingAmount": amount("100", "USD", 2) });
        let r = Signed::new(
            client,
            Method::POST,
            &incoming_url,
            Some(token),
            Some(&new_incoming),
        );
        let ip = created(&r.send().await);
        cost("create incoming payment", before);

        let before = trips();
        let new_quote = json!({ "walletAddress": w.alice, "receiver": ip, "method": "ilp" });
        let r = Signed::new(
            client,
            Method::POST,
            &app.url("quotes"),
            Some(token),
            Some(&new_quote),
        );
        let quote = created(&r.send().await);
        cost("create quote", before);

        let before = trips();
        let from_quote = json!({ "walletAddress": w.alice, "quoteId": quote });
        let out_url = app.url("outgoing-payments");
        let r = Signed::new(
            &w.payer,
            Method::POST,
            &out_url,
            Some(&pay_token),
            Some(&from_quote),
        );
        created(&r.send().await);
        cost("create outgoing payment from a quote", before);

        let to_ip = json!({ "walletAddress": w.bob });
        let r = Signed::new(
            client,
            Method::POST,
            &incoming_url,
            Some(token),
            Some(&to_ip),
        );
        let ip2 = created(&r.send().await);
        let before = trips();
        let wm = json!({ "walletAddress": w.alice, "incomingPayment": ip2, "debitAmount": amount("10", "USD", 2) });
        let r = Signed::new(
            &w.payer,
            Method::POST,
            &out_url,
            Some(&pay_token),
            Some(&wm),
        );
        created(&r.send().await);
        cost("create outgoing payment from an incoming payment", before);

        let before = trips();
        let complete = format!("{ip}/complete");
        let r = Signed::new(client, Method::POST, &complete, Some(token), None)
            .send()
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        cost("complete incoming payment", before);

        let grant_url = format!("{}/", app.auth);
        let before = trips();
        let body = json!({ "access_token": { "access": [{ "type": "quote", "actions": ["create"] }] }, "client": w.payer.wallet_address });
        let granted = Signed::new(&w.payer, Method::POST, &grant_url, None, Some(&body))
            .send()
            .await;
        assert_eq!(granted.status, StatusCode::OK, "{}", granted.body);
        cost("grant request", before);

        let before = trips();
        let manage = granted.body["access_token"]["manage"].as_str().unwrap();
        let value = granted.body["access_token"]["value"].as_str().unwrap();
        let rotated = Signed::new(&w.payer, Method::POST, manage, Some(value), None)
            .send()
            .await;
        assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.body);
        cost("token rotation", before);

        let before = trips();
        let manage = rotated.body["access_token"]["manage"].as_str().unwrap();
        let value = rotated.body["access_token"]["value"].as_str().unwrap();
        let revoked = Signed::new(&w.payer, Method::DELETE, manage, Some(value), None)
            .send()
            .await;
        assert_eq!(revoked.status, StatusCode::NO_CONTENT, "{}", revoked.body);
        cost("token revocation", before);

        let before = trips();
        let body = json!({
            "access_token": { "access": [{ "type": "outgoing-payment", "actions": ["create", "read"], "identifier": w.alice }] },
            "client": w.payer.wallet_address,
            "interact": { "start": ["redirect"] }
        });
        let pending = Signed::new(&w.payer, Method::POST, &grant_url, None, Some(&body))
            .send()
            .await;
        assert_eq!(pending.status, StatusCode::OK, "{}", pending.body);
        cost("interactive grant request", before);

        app.clock.advance_millis(6_000);
        let before = trips();
        let cont_uri = pending.body["continue"]["uri"].as_str().unwrap();
        let cont_token = pending.body["continue"]["access_token"]["value"]
            .as_str()
            .unwrap();
        let poll = Signed::new(&w.payer, Method::POST, cont_uri, Some(cont_token), None)
            .send()
            .await;
        assert_eq!(poll.status, StatusCode::OK, "{}", poll.body);
        cost("grant continuation", before);

        let before = trips();
        let next_token = poll.body["continue"]["access_token"]["value"]
            .as_str()
            .unwrap();
        let cancel = Signed::new(&w.payer, Method::DELETE, cont_uri, Some(next_token), None)
            .send()
            .await;
        assert_eq!(cancel.status, StatusCode::NO_CONTENT, "{}", cancel.body);
        cost("grant cancellation", before);
    }
    let expected = [
        ("create incoming payment", 3),
        ("create quote", 2),
        ("create outgoing payment from a quote", 5),
        ("create outgoing payment from an incoming payment", 5),
        ("complete incoming payment", 6),
        ("grant request", 5),
        ("token rotation", 8),
        ("token revocation", 6),
        ("interactive grant request", 6),
        ("grant continuation", 5),
        ("grant cancellation", 7),
    ];
    assert_eq!(costs, expected, "SQL round trips per request");
    w.app.stop().await;
}
