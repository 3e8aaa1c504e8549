//! Wallet address documents and JWKS.

use opd_testkit::app::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::{assert_error, spec_wa};

const X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";

#[tokio::test]
async fn wallet_address_document_and_jwks_follow_the_spec() {
    let app = TestApp::spawn().await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    let (s, doc) = app.get(&alice).await;
    spec_wa("get-wallet-address", s, &doc);
    assert_eq!(doc["id"], alice);
    assert_eq!(doc["assetCode"], "USD");
    assert_eq!(doc["assetScale"], 2);
    assert_eq!(doc["resourceServer"], app.base);
    assert!(doc["authServer"]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));

    let jwk = json!({ "kid": "k1", "kty": "OKP", "crv": "Ed25519", "x": X, "alg": "EdDSA", "use": "sig" });
    let (s, v) = app
        .admin(
            Method::POST,
            "/wallet-addresses/alice/keys",
            Some(&json!({ "jwk": jwk })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, keys) = app.get(&format!("{alice}/jwks.json")).await;
    spec_wa("get-wallet-address-keys", s, &keys);
    assert_eq!(keys["keys"][0]["kid"], "k1");
    assert_eq!(keys["keys"][0]["x"], X);

    let (s, _) = app
        .admin(Method::DELETE, "/wallet-addresses/alice/keys/k1", None)
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (_, keys) = app.get(&format!("{alice}/jwks.json")).await;
    assert_eq!(
        keys["keys"].as_array().unwrap().len(),
        0,
        "revoked keys leave the JWKS"
    );
}

#[tokio::test]
async fn urls_match_case_insensitively_and_unknown_ones_are_json_404s() {
    let app = TestApp::spawn().await;
    app.create_wallet("accounts/Bob", "EUR", 2).await;
    let (s, doc) = app.get(&app.url("ACCOUNTS/bob")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(doc["id"], app.url("accounts/bob"));
    let (s, v) = app.get(&app.url("Accounts/BOB/jwks.json")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, v) = app.get(&app.url("nobody")).await;
    assert_error(s, &v, 404, "unknown_wallet_address");
    let (s, v) = app.get(&app.url("nobody/jwks.json")).await;
    assert_error(s, &v, 404, "unknown_wallet_address");
}

#[tokio::test]
async fn deactivated_wallet_addresses_disappear() {
    let app = TestApp::spawn().await;
    let carol = app.create_wallet("carol", "USD", 2).await;
    let (s, v) = app
        .admin(Method::POST, "/wallet-addresses/carol/deactivate", None)
        .await;
    assert_eq!(s, StatusCode::OK);
    assert!(v["deactivatedAt"].is_string());
    let (s, v) = app.get(&carol).await;
    assert_error(s, &v, 404, "unknown_wallet_address");
    let (s, v) = app.get(&format!("{carol}/jwks.json")).await;
    assert_error(s, &v, 404, "unknown_wallet_address");
}

#[tokio::test]
async fn the_server_has_its_own_wallet_address_and_key() {
    let app = TestApp::spawn().await;
    let (s, keys) = app.get(&app.url(".well-known/pay/jwks.json")).await;
    spec_wa("get-wallet-address-keys", s, &keys);
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1);
    let (s, doc) = app.get(&app.url(".well-known/pay")).await;
    spec_wa("get-wallet-address", s, &doc);
}
