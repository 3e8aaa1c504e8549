//! Requests made by the crates.io `open-payments` 0.2.0 Rust SDK, which signs
//! in its own non-RFC format (unquoted component names, a bare base64
//! `Signature`), verify; and its strict deserialization accepts every
//! response.

use opd_testkit::app::TestApp;
use open_payments::client::{
    AuthenticatedClient, AuthenticatedResources, ClientConfig, UnauthenticatedResources,
};
use open_payments::types::{
    AccessItem, AccessTokenRequest, Amount, CreateIncomingPaymentRequest, CreateQuoteRequest,
    GrantRequest, GrantResponse, IncomingPaymentAction, PaymentMethodType, QuoteAction, Receiver,
};
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_signed_by_the_rust_sdk_verify() {
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let client_wallet = app.create_wallet("sdkclient", "USD", 2).await;
    let sdk = AuthenticatedClient::new(ClientConfig {
        key_id: "sdk-key".into(),
        private_key_path: dir.path().join("key.pem"),
        jwks_path: Some(dir.path().join("jwks.json")),
        wallet_address_url: client_wallet.clone(),
    })
    .unwrap();
    let jwk = serde_json::to_value(sdk.public_jwk()).unwrap();
    let (s, v) = app
        .admin(
            Method::POST,
            "/wallet-addresses/sdkclient/keys",
            Some(&json!({ "jwk": jwk })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let alice_url = app.create_wallet("alice", "USD", 2).await;
    let bob_url = app.create_wallet("bob", "USD", 2).await;

    let bob = sdk.wallet_address().get(&bob_url).await.unwrap();
    let alice = sdk.wallet_address().get(&alice_url).await.unwrap();
    let keys = sdk
        .wallet_address()
        .get_keys(&sdk.wallet_address().get(&client_wallet).await.unwrap())
        .await
        .unwrap();
    assert_eq!(keys.keys.len(), 1);

    let grant = GrantRequest::new(
        AccessTokenRequest {
            access: vec![
                AccessItem::IncomingPayment {
                    actions: vec![
                        IncomingPaymentAction::Create,
                        IncomingPaymentAction::Read,
                        IncomingPaymentAction::List,
                        IncomingPaymentAction::Complete,
                    ],
                    identifier: None,
                },
                AccessItem::Quote {
                    actions: vec![QuoteAction::Create, QuoteAction::Read],
                },
            ],
        },
        None,
    );
    let GrantResponse::WithToken { access_token, .. } = sdk
        .grant()
        .request(&bob.auth_server, &grant, None)
        .await
        .unwrap()
    else {
        panic!("a non-interactive grant is issued at once");
    };
    let token = access_token.value.clone();

    let ip = sdk
        .incoming_payments()
        .create(
            &bob.resource_server,
            &CreateIncomingPaymentRequest {
                wallet_address: bob.id.clone(),
                incoming_amount: Some(Amount {
                    value: "1000".into(),
                    asset_code: "USD".into(),
                    asset_scale: 2,
                }),
                expires_at: None,
                metadata: Some(json!({ "from": "sdk" })),
            },
            Some(&token),
        )
        .await
        .unwrap();
    assert_eq!(ip.received_amount.value, "0");
    let got = sdk
        .incoming_payments()
        .get(&ip.id, Some(&token))
        .await
        .unwrap();
    assert_eq!(got.id, ip.id);
    let listed = sdk
        .incoming_payments()
        .list(
            &bob.resource_server,
            &bob.id,
            None,
            Some(10),
            None,
            Some(&token),
        )
        .await
        .unwrap();
    assert_eq!(listed.result.len(), 1);
    let public = sdk.public_incoming_payments().get(&ip.id).await.unwrap();
    assert_eq!(public.auth_server, bob.auth_server);

    let quote = sdk
        .quotes()
        .create(
            &alice.resource_server,
            &CreateQuoteRequest::NoAmountQuote {
                wallet_address: alice.id.clone(),
                receiver: Receiver(ip.id.clone()),
                method: PaymentMethodType::Ilp,
            },
            Some(&token),
        )
        .await
        .unwrap();
    assert_eq!(quote.debit_amount.value, "1000");
    let again = sdk.quotes().get(&quote.id, Some(&token)).await.unwrap();
    assert_eq!(again.id, quote.id);
    let done = sdk
        .incoming_payments()
        .complete(&ip.id, Some(&token))
        .await
        .unwrap();
    assert!(done.completed);

    let rotated = sdk
        .token()
        .rotate(&access_token.manage, Some(&token))
        .await
        .unwrap();
    let new_token = rotated.access_token.value;
    sdk.incoming_payments()
        .get(&ip.id, Some(&new_token))
        .await
        .unwrap();
    assert!(
        sdk.incoming_payments()
            .get(&ip.id, Some(&token))
            .await
            .is_err(),
        "the rotated-away token is refused"
    );
    sdk.token()
        .revoke(&rotated.access_token.manage, Some(&new_token))
        .await
        .unwrap();
    assert!(sdk
        .incoming_payments()
        .get(&ip.id, Some(&new_token))
        .await
        .is_err());
}
