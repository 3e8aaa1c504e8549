//! The admin API and the CLI helpers that drive it.

use opd_testkit::app::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::assert_error;

#[tokio::test]
async fn admin_api_needs_the_token() {
    let app = TestApp::spawn().await;
    let url = format!("{}/wallet-addresses", app.admin);
    let resp = app.http.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    let resp = app
        .http
        .get(&url)
        .bearer_auth("wrong-token-of-some-length")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let (s, _) = app.admin(Method::GET, "/wallet-addresses", None).await;
    assert_eq!(s, StatusCode::OK);
}

#[tokio::test]
async fn admin_rejects_bad_wallet_addresses_and_keys() {
    let app = TestApp::spawn().await;
    app.create_wallet("dave", "USD", 2).await;
    let cases = [
        (
            json!({ "path": "dave", "assetCode": "USD", "assetScale": 2 }),
            409,
            "wallet_address_exists",
        ),
        (
            json!({ "path": "quotes", "assetCode": "USD", "assetScale": 2 }),
            400,
            "invalid_request",
        ),
        (
            json!({ "path": "a b", "assetCode": "USD", "assetScale": 2 }),
            400,
            "invalid_request",
        ),
        (
            json!({ "path": "erin", "assetCode": "USD", "assetScale": 256 }),
            400,
            "invalid_request",
        ),
        (
            json!({ "path": "erin", "assetCode": "", "assetScale": 2 }),
            400,
            "invalid_request",
        ),
        (
            json!({ "path": "erin", "assetCode": "USD", "assetScale": 2, "extra": 1 }),
            400,
            "invalid_request",
        ),
    ];
    for (body, status, code) in cases {
        let (s, v) = app
            .admin(Method::POST, "/wallet-addresses", Some(&body))
            .await;
        assert_error(s, &v, status, code);
    }
    let bad_jwk = json!({ "jwk": { "kid": "k", "kty": "RSA", "crv": "Ed25519", "x": "abc" } });
    let (s, v) = app
        .admin(Method::POST, "/wallet-addresses/dave/keys", Some(&bad_jwk))
        .await;
    assert_error(s, &v, 400, "invalid_request");
    let (s, v) = app
        .admin(Method::DELETE, "/wallet-addresses/dave/keys/nope", None)
        .await;
    assert_error(s, &v, 404, "not_found");
    let (s, v) = app
        .admin(Method::GET, "/wallet-addresses/nobody", None)
        .await;
    assert_error(s, &v, 404, "not_found");
}

// The CLI blocks its thread while the server answers on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_helpers_manage_wallet_addresses_and_keys() {
    let app = TestApp::spawn().await;
    let addr = app.admin.trim_start_matches("http://").to_owned();
    let opd = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
            .args(["--admin-listen", &addr, "--admin-token", &app.admin_token])
            .args(args)
            .env_remove("OPD_CONFIG")
            .output()
            .expect("run opd");
        assert!(
            out.status.success(),
            "opd {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let created = opd(&[
        "wallet-address",
        "create",
        "--path",
        "frank",
        "--asset-code",
        "EUR",
        "--asset-scale",
        "2",
    ]);
    let created: serde_json::Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["url"], app.url("frank"));
    let jwk = r#"{"kid":"cli-key","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    opd(&["key", "add", "--wallet-address", "frank", "--jwk", jwk]);
    let (_, keys) = app.get(&app.url("frank/jwks.json")).await;
    assert_eq!(keys["keys"][0]["kid"], "cli-key");
    opd(&[
        "key",
        "revoke",
        "--wallet-address",
        "frank",
        "--kid",
        "cli-key",
    ]);
    let (_, keys) = app.get(&app.url("frank/jwks.json")).await;
    assert!(keys["keys"].as_array().unwrap().is_empty());
    let list = opd(&["wallet-address", "list"]);
    assert!(list.contains("frank"));
    opd(&["wallet-address", "deactivate", "frank"]);
    let (s, _) = app.get(&app.url("frank")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
