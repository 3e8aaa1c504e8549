//! The reference server's (Rafiki's) quirks, absorbed: the requests it
//! really sends, byte for byte where it matters.

use opd_testkit::app::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::json;

/// Rafiki ignores the `manage` and `continue.uri` URLs and rebuilds them
/// as `${authServer}/token/<id>` and `${authServer}/continue/<id>`; opd
/// publishes `authServer` with a trailing `/`, so they arrive as
/// `//token/<id>` and `//continue/<id>`, signed as sent.
#[tokio::test]
async fn rotation_and_cancel_at_double_slash_paths_work_as_rafiki_sends_them() {
    let app = TestApp::spawn().await;
    let client = app.signing_client("rafiki-client", 31).await;
    let (_, doc) = app.get_public(&app.url("rafiki-client")).await;
    let auth_server = doc["authServer"].as_str().unwrap().to_owned();
    assert!(auth_server.ends_with('/'), "{auth_server}");
    let body = json!({
        "access_token": { "access": [{ "type": "incoming-payment", "actions": ["create", "read"] }] },
        "client": client.wallet_address,
    });
    let granted = client
        .send(Method::POST, &auth_server, None, Some(&body))
        .await;
    assert_eq!(granted.status, StatusCode::OK, "{}", granted.body);
    let token = &granted.body["access_token"];
    let id = token["manage"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    let rotate_at = format!("{auth_server}/token/{id}");
    assert!(rotate_at.contains("//token/"), "{rotate_at}");
    let rotated = client
        .send(Method::POST, &rotate_at, token["value"].as_str(), None)
        .await;
    assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.body);
    let new = &rotated.body["access_token"];
    assert_ne!(new["value"], token["value"]);
    // The new token works where a token is used.
    let created = client
        .send(
            Method::POST,
            &app.url("incoming-payments"),
            new["value"].as_str(),
            Some(&json!({ "walletAddress": app.url("rafiki-client") })),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);

    // Ending the grant at `//continue/<id>`.
    let continue_id = granted.body["continue"]["uri"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    let cancel_at = format!("{auth_server}/continue/{continue_id}");
    let cancelled = client
        .send(
            Method::DELETE,
            &cancel_at,
            granted.body["continue"]["access_token"]["value"].as_str(),
            None,
        )
        .await;
    assert_eq!(
        cancelled.status,
        StatusCode::NO_CONTENT,
        "{}",
        cancelled.body
    );
}
