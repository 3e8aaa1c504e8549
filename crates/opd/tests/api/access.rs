//! Resource server access control: every way a request can fail to be
//! authorized, each with its status, JSON code and (for 401s) the
//! `WWW-Authenticate` challenge. Every response is validated against the
//! spec (`World::send*`).

use opd_httpsig::{build_signature_base, content_digest, RequestParts};
use opd_testkit::app::TestApp;
use opd_testkit::client::{Reply, SigningClient};
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{amount, spec_reply};

struct World {
    app: TestApp,
    bob: String,
    client: SigningClient,
    token: String,
}

async fn world() -> World {
    let app = TestApp::spawn().await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let client = app.signing_client("merchant", 31).await;
    let token = app
        .grant_token(&client, json!([{ "type": "incoming-payment", "actions": ["create", "read", "list", "complete"] }]))
        .await;
    World {
        app,
        bob,
        client,
        token,
    }
}

impl World {
    /// A request signed by the world's client, its reply validated
    /// against the spec.
    async fn send(
        &self,
        method: Method,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Reply {
        self.send_as(&self.client, method, url, token, body).await
    }

    /// A request signed by `client`, its reply validated against the spec.
    async fn send_as(
        &self,
        client: &SigningClient,
        method: Method,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Reply {
        let r = client.send(method.clone(), url, token, body).await;
        self.check(&method, url, &r);
        r
    }

    /// A request with the given (possibly tampered) headers and body, its
    /// reply validated against the spec.
    async fn send_raw(
        &self,
        method: Method,
        url: &str,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Reply {
        let r = self
            .client
            .send_raw(method.clone(), url, headers, body)
            .await;
        self.check(&method, url, &r);
        r
    }

    #[track_caller]
    fn check(&self, method: &Method, url: &str, r: &Reply) {
        spec_reply(
            &self.app.base,
            &self.app.auth,
            method,
            url,
            r.status,
            &r.body,
        );
    }
}

#[track_caller]
fn assert_401(r: &Reply, app: &TestApp, code: &str) {
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert_eq!(r.body["error"]["code"], code, "{}", r.body);
    let challenge = r
        .headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok());
    assert_eq!(
        challenge,
        Some(format!("GNAP as_uri={}/", app.auth).as_str())
    );
}

fn create_body(w: &World) -> Value {
    json!({ "walletAddress": w.bob, "incomingAmount": amount("500", "USD", 2) })
}

fn url(w: &World) -> String {
    w.app.url("incoming-payments")
}

/// Signs `body` for a POST with a chosen list of covered components.
fn sign_covering(w: &World, components: &[&str], body: &[u8], created: u64) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        "authorization",
        HeaderValue::from_str(&format!("GNAP {}", w.token)).unwrap(),
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
    let list: Vec<String> = components.iter().map(|c| format!("\"{c}\"")).collect();
    let params = format!(
        "({});keyid=\"{}\";created={created}",
        list.join(" "),
        w.client.kid
    );
    let target = url(w);
    let parts = RequestParts::new(&Method::POST, &target, &headers, Some(body));
    let base = build_signature_base(&parts, components, &params).unwrap();
    use ed25519_dalek::Signer;
    let sig = w.client.key.sign(&base);
    use base64::Engine;
    let sig = base64::engine::general_purpose::STANDARD.encode(sig.to_bytes());
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

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn a_properly_signed_request_works() {
    let w = world().await;
    let r = w
        .send(
            Method::POST,
            &url(&w),
            Some(&w.token),
            Some(&create_body(&w)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let all = [
        "@method",
        "@target-uri",
        "authorization",
        "content-digest",
        "content-length",
        "content-type",
    ];
    let body = serde_json::to_vec(&create_body(&w)).unwrap();
    let r = w
        .send_raw(
            Method::POST,
            &url(&w),
            sign_covering(&w, &all, &body, now()),
            Some(body),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

#[tokio::test]
async fn missing_or_malformed_signatures_are_401() {
    let w = world().await;
    let body = serde_json::to_vec(&create_body(&w)).unwrap();

    // No headers at all.
    let r = w
        .send_raw(Method::POST, &url(&w), HeaderMap::new(), Some(body.clone()))
        .await;
    assert_401(&r, &w.app, "missing_token");

    // Signature without Signature-Input.
    let mut h = w
        .client
        .sign(&Method::POST, &url(&w), Some(&w.token), Some(&body));
    h.remove("signature-input");
    let r = w
        .send_raw(Method::POST, &url(&w), h, Some(body.clone()))
        .await;
    assert_401(&r, &w.app, "invalid_signature");
    assert!(r.body["error"]["description"]
        .as_str()
        .unwrap()
        .contains("Signature validation error"));

    // Each required component left out in turn.
    for missing in ["@method", "@target-uri", "authorization", "content-digest"] {
        let components: Vec<&str> = [
            "@method",
            "@target-uri",
            "authorization",
            "content-digest",
            "content-length",
            "content-type",
        ]
        .into_iter()
        .filter(|c| *c != missing)
        .collect();
        let r = w
            .send_raw(
                Method::POST,
                &url(&w),
                sign_covering(&w, &components, &body, now()),
                Some(body.clone()),
            )
            .await;
        assert_401(&r, &w.app, "invalid_signature");
    }

    // The body changed after signing.
    let h = w
        .client
        .sign(&Method::POST, &url(&w), Some(&w.token), Some(&body));
    let mut tampered = body.clone();
    tampered[10] ^= 1;
    let r = w.send_raw(Method::POST, &url(&w), h, Some(tampered)).await;
    assert_401(&r, &w.app, "invalid_signature");

    // The digest (and signature) of another body.
    let other = serde_json::to_vec(&json!({ "walletAddress": w.bob })).unwrap();
    let h = w
        .client
        .sign(&Method::POST, &url(&w), Some(&w.token), Some(&other));
    let r = w
        .send_raw(Method::POST, &url(&w), h, Some(body.clone()))
        .await;
    assert_401(&r, &w.app, "invalid_signature");

    // The client's kid, another key.
    let forger = w
        .app
        .client_for(&w.client.wallet_address, &w.client.kid, 200);
    let r = w
        .send_as(
            &forger,
            Method::POST,
            &url(&w),
            Some(&w.token),
            Some(&create_body(&w)),
        )
        .await;
    assert_401(&r, &w.app, "invalid_signature");

    // A kid the client does not have.
    let stranger = w
        .app
        .client_for(&w.client.wallet_address, "no-such-kid", 31);
    let r = w
        .send_as(
            &stranger,
            Method::POST,
            &url(&w),
            Some(&w.token),
            Some(&create_body(&w)),
        )
        .await;
    assert_401(&r, &w.app, "invalid_signature");
}

#[tokio::test]
async fn stale_and_future_signatures_are_refused_and_replays_answered() {
    let w = world().await;
    let body = serde_json::to_vec(&create_body(&w)).unwrap();
    let all = [
        "@method",
        "@target-uri",
        "authorization",
        "content-digest",
        "content-length",
        "content-type",
    ];
    let r = w
        .send_raw(
            Method::POST,
            &url(&w),
            sign_covering(&w, &all, &body, now() - 400),
            Some(body.clone()),
        )
        .await;
    assert_401(&r, &w.app, "invalid_signature");
    let r = w
        .send_raw(
            Method::POST,
            &url(&w),
            sign_covering(&w, &all, &body, now() + 120),
            Some(body.clone()),
        )
        .await;
    assert_401(&r, &w.app, "invalid_signature");

    let h = sign_covering(&w, &all, &body, now());
    let first = w
        .send_raw(Method::POST, &url(&w), h.clone(), Some(body.clone()))
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    // A byte-identical replay is answered with the first response (see
    // `replays.rs`), not refused.
    let replay = w.send_raw(Method::POST, &url(&w), h, Some(body)).await;
    assert_eq!(replay.status, StatusCode::CREATED, "{}", replay.body);
    assert_eq!(replay.body, first.body);
}

#[tokio::test]
async fn revoked_keys_stop_working() {
    let w = world().await;
    let ok = w
        .send(
            Method::POST,
            &url(&w),
            Some(&w.token),
            Some(&create_body(&w)),
        )
        .await;
    assert_eq!(ok.status, StatusCode::CREATED);
    let (s, _) = w
        .app
        .admin(
            Method::DELETE,
            "/wallet-addresses/merchant/keys/merchant-key",
            None,
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let r = w
        .send(
            Method::POST,
            &url(&w),
            Some(&w.token),
            Some(&create_body(&w)),
        )
        .await;
    assert_401(&r, &w.app, "invalid_signature");
    assert!(r.body["error"]["description"]
        .as_str()
        .unwrap()
        .contains("Signature validation error"));
}

#[tokio::test]
async fn expired_revoked_and_rotated_tokens_are_invalid() {
    let w = world().await;
    let send = |token: String| {
        let w = &w;
        async move {
            w.send(Method::POST, &url(w), Some(&token), Some(&create_body(w)))
                .await
        }
    };
    // Unknown.
    assert_invalid_token(&send("NOT-A-TOKEN".into()).await, &w.app);
    let r = w.send(Method::GET, &url(&w), Some("two words"), None).await;
    assert_401(&r, &w.app, "invalid_token");

    // Rotated away, then revoked.
    let grant = w.send(Method::POST, &format!("{}/", w.app.auth), None, Some(&json!({
        "access_token": { "access": [{ "type": "incoming-payment", "actions": ["create"] }] },
        "client": w.client.wallet_address
    }))).await;
    let token = grant.body["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let manage = grant.body["access_token"]["manage"]
        .as_str()
        .unwrap()
        .to_owned();
    let rotated = w.send(Method::POST, &manage, Some(&token), None).await;
    let new_token = rotated.body["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let new_manage = rotated.body["access_token"]["manage"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_invalid_token(&send(token).await, &w.app);
    assert_eq!(send(new_token.clone()).await.status, StatusCode::CREATED);
    w.send(Method::DELETE, &new_manage, Some(&new_token), None)
        .await;
    assert_invalid_token(&send(new_token).await, &w.app);

    // Expired: tokens live 600 s.
    w.app.clock.advance_millis(601_000);
    assert_invalid_token(&send(w.token.clone()).await, &w.app);
}

#[track_caller]
fn assert_invalid_token(r: &Reply, app: &TestApp) {
    assert_401(r, app, "invalid_token");
    // Deployed clients rotate their token on exactly this description.
    assert_eq!(r.body["error"]["description"], "Invalid Token");
}

#[tokio::test]
async fn tokens_only_allow_what_they_grant() {
    let w = world().await;
    let alice = w.app.create_wallet("alice", "USD", 2).await;
    // A token for alice's wallet address used on bob's.
    let for_alice = w
        .app
        .grant_token(
            &w.client,
            json!([{ "type": "incoming-payment", "actions": ["create"], "identifier": alice }]),
        )
        .await;
    let r = w
        .send(
            Method::POST,
            &url(&w),
            Some(&for_alice),
            Some(&create_body(&w)),
        )
        .await;
    assert_eq!(
        (r.status, r.body["error"]["code"].as_str()),
        (StatusCode::FORBIDDEN, Some("insufficient_access"))
    );
    let r = w
        .send(
            Method::POST,
            &url(&w),
            Some(&for_alice),
            Some(&json!({ "walletAddress": alice })),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    // A quote token used for incoming payments.
    let quote_token = w
        .app
        .grant_token(
            &w.client,
            json!([{ "type": "quote", "actions": ["create", "read"] }]),
        )
        .await;
    let r = w
        .send(
            Method::POST,
            &url(&w),
            Some(&quote_token),
            Some(&create_body(&w)),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);

    // `read` sees only the client's own resources; another client's are 404.
    let mine = w
        .send(
            Method::POST,
            &url(&w),
            Some(&w.token),
            Some(&create_body(&w)),
        )
        .await;
    let (other, other_token) = w.app.client.as_ref().unwrap();
    let theirs = w
        .send_as(
            other,
            Method::POST,
            &url(&w),
            Some(other_token),
            Some(&create_body(&w)),
        )
        .await;
    let id_mine = mine.body["id"].as_str().unwrap();
    let id_theirs = theirs.body["id"].as_str().unwrap();
    assert_eq!(
        w.send(Method::GET, id_mine, Some(&w.token), None)
            .await
            .status,
        StatusCode::OK
    );
    let hidden = w.send(Method::GET, id_theirs, Some(&w.token), None).await;
    assert_eq!(
        (hidden.status, hidden.body["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
    // The default client's token has read-all: it sees both.
    assert_eq!(
        w.send_as(other, Method::GET, id_mine, Some(other_token), None)
            .await
            .status,
        StatusCode::OK
    );
    // `list` lists only the client's own.
    let listed = w
        .send(
            Method::GET,
            &format!("{}?wallet-address={}", url(&w), w.bob),
            Some(&w.token),
            None,
        )
        .await;
    let ids: Vec<&str> = listed.body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&id_mine) && !ids.contains(&id_theirs),
        "{ids:?}"
    );

    // Completing needs a token, and a `read` client completes only its own.
    let r = w
        .send_raw(
            Method::POST,
            &format!("{id_mine}/complete"),
            HeaderMap::new(),
            None,
        )
        .await;
    assert_401(&r, &w.app, "missing_token");
    let r = w
        .send(
            Method::POST,
            &format!("{id_theirs}/complete"),
            Some(&w.token),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = w
        .send(
            Method::POST,
            &format!("{id_mine}/complete"),
            Some(&w.token),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    // The public view needs nothing.
    let (s, public) = w.app.get_public(id_theirs).await;
    spec_reply(
        &w.app.base,
        &w.app.auth,
        &Method::GET,
        id_theirs,
        s,
        &public,
    );
    assert_eq!(s, StatusCode::OK);
    assert!(public.get("id").is_none());
}
