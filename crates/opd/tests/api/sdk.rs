//! Requests made by the crates.io `open-payments` 0.2.0 Rust SDK, which signs
//! in its own non-RFC format (unquoted component names, a bare base64
//! `Signature`), verify; its strict deserialization accepts every response;
//! and every response it receives is valid against the spec (the SDK's
//! HTTP client goes through a recording proxy, `opd_testkit::proxy`).

use opd_testkit::app::TestApp;
use opd_testkit::proxy::ValidatingProxy;
use open_payments::client::{
    AuthenticatedClient, AuthenticatedResources, ClientConfig, UnauthenticatedResources,
};
use open_payments::types::{
    AccessItem, AccessTokenRequest, Amount, ContinueResponse, CreateIncomingPaymentRequest,
    CreateOutgoingPaymentRequest, CreateQuoteRequest, GrantRequest, GrantResponse,
    IncomingPaymentAction, InteractFinish, InteractRequest, LimitsOutgoing, OutgoingPaymentAction,
    PaymentMethodType, QuoteAction, Receiver,
};
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_signed_by_the_rust_sdk_verify() {
    let app = TestApp::spawn().await;
    let recorder = ValidatingProxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let client_wallet = app.create_wallet("sdkclient", "USD", 2).await;
    let mut sdk = AuthenticatedClient::new(ClientConfig {
        key_id: "sdk-key".into(),
        private_key_path: dir.path().join("key.pem"),
        jwks_path: Some(dir.path().join("jwks.json")),
        wallet_address_url: client_wallet.clone(),
    })
    .unwrap();
    sdk.http_client = recorder.client();
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
    recorder.validate(
        &app.servers,
        &[
            "get-wallet-address",
            "get-wallet-address-keys",
            "post-request",
            "create-incoming-payment",
            "get-incoming-payment",
            "list-incoming-payments",
            "create-quote",
            "get-quote",
            "complete-incoming-payment",
            "post-token",
            "delete-token",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_sdk_pays_with_an_interactive_grant() {
    let app = TestApp::spawn().await;
    let recorder = ValidatingProxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let client_wallet = app.create_wallet("sdkshop", "USD", 2).await;
    let mut sdk = AuthenticatedClient::new(ClientConfig {
        key_id: "sdk-shop-key".into(),
        private_key_path: dir.path().join("key.pem"),
        jwks_path: None,
        wallet_address_url: client_wallet,
    })
    .unwrap();
    sdk.http_client = recorder.client();
    let jwk = serde_json::to_value(sdk.public_jwk()).unwrap();
    let (s, _) = app
        .admin(
            Method::POST,
            "/wallet-addresses/sdkshop/keys",
            Some(&json!({ "jwk": jwk })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let alice_url = app.create_wallet("alice", "USD", 2).await;
    let bob_url = app.create_wallet("bob", "USD", 2).await;
    app.deposit("alice", 5000).await;
    let alice = sdk.wallet_address().get(&alice_url).await.unwrap();
    let bob = sdk.wallet_address().get(&bob_url).await.unwrap();

    // Incoming payment and quote, with a non-interactive grant.
    let grant = GrantRequest::new(
        AccessTokenRequest {
            access: vec![
                AccessItem::IncomingPayment {
                    actions: vec![IncomingPaymentAction::Create],
                    identifier: None,
                },
                AccessItem::Quote {
                    actions: vec![QuoteAction::Create],
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
        panic!("issued at once");
    };
    let ip = sdk
        .incoming_payments()
        .create(
            &bob.resource_server,
            &CreateIncomingPaymentRequest {
                wallet_address: bob.id.clone(),
                incoming_amount: Some(Amount {
                    value: "700".into(),
                    asset_code: "USD".into(),
                    asset_scale: 2,
                }),
                expires_at: None,
                metadata: None,
            },
            Some(&access_token.value),
        )
        .await
        .unwrap();
    let quote = sdk
        .quotes()
        .create(
            &alice.resource_server,
            &CreateQuoteRequest::NoAmountQuote {
                wallet_address: alice.id.clone(),
                receiver: Receiver(ip.id.clone()),
                method: PaymentMethodType::Ilp,
            },
            Some(&access_token.value),
        )
        .await
        .unwrap();

    // The interactive outgoing-payment grant, approved by the wallet owner
    // (through the identity-provider API), continued with the interact_ref.
    let grant = GrantRequest::new(
        AccessTokenRequest {
            access: vec![AccessItem::OutgoingPayment {
                actions: vec![
                    OutgoingPaymentAction::Create,
                    OutgoingPaymentAction::Read,
                    OutgoingPaymentAction::List,
                ],
                identifier: alice.id.clone(),
                limits: Some(LimitsOutgoing {
                    receiver: None,
                    debit_amount: Some(Amount {
                        value: "1000".into(),
                        asset_code: "USD".into(),
                        asset_scale: 2,
                    }),
                    receive_amount: None,
                    interval: None,
                }),
            }],
        },
        Some(InteractRequest {
            start: vec!["redirect".into()],
            finish: Some(InteractFinish {
                method: "redirect".into(),
                uri: "http://localhost/done".into(),
                nonce: "sdk-nonce".into(),
            }),
        }),
    );
    let GrantResponse::WithInteraction {
        interact,
        continue_,
    } = sdk
        .grant()
        .request(&alice.auth_server, &grant, None)
        .await
        .unwrap()
    else {
        panic!("an outgoing-payment grant needs interaction");
    };
    let mut parts = interact.redirect.rsplit('/');
    let (nonce, id) = (
        parts.next().unwrap().to_owned(),
        parts.next().unwrap().to_owned(),
    );
    let idp = format!("{}/idp/interactions/{id}/{nonce}/accept", app.auth);
    let accepted = app
        .http
        .post(idp)
        .header("x-idp-secret", opd_testkit::app::IDP_SECRET)
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let finish = browser
        .get(format!("{}/interact/{id}/{nonce}/finish", app.auth))
        .send()
        .await
        .unwrap();
    let location = finish.headers()["location"].to_str().unwrap().to_owned();
    let interact_ref = url::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "interact_ref")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    let ContinueResponse::WithToken { access_token, .. } = sdk
        .grant()
        .continue_grant(
            &continue_.uri,
            &interact_ref,
            Some(&continue_.access_token.value),
        )
        .await
        .unwrap()
    else {
        panic!("the continuation issues the token");
    };
    let token = access_token.value;

    let created = sdk
        .outgoing_payments()
        .create(
            &alice.resource_server,
            &CreateOutgoingPaymentRequest::FromQuote {
                wallet_address: alice.id.clone(),
                quote_id: quote.id.clone(),
                metadata: None,
            },
            Some(&token),
        )
        .await
        .unwrap();
    assert_eq!(
        created.grant_spent_debit_amount.map(|a| a.value).as_deref(),
        Some("0")
    );
    app.run_workers().await;
    let sent = sdk
        .outgoing_payments()
        .get(&created.id, Some(&token))
        .await
        .unwrap();
    assert_eq!(sent.sent_amount.value, "700");
    assert!(!sent.failed);
    let listed = sdk
        .outgoing_payments()
        .list(
            &alice.resource_server,
            &alice.id,
            None,
            Some(10),
            None,
            Some(&token),
        )
        .await
        .unwrap();
    assert_eq!(listed.result.len(), 1);
    let spent = sdk
        .outgoing_payments()
        .get_grant_spent_amounts(&alice.resource_server, Some(&token))
        .await
        .unwrap();
    assert_eq!(
        spent.spent_debit_amount.map(|a| a.value).as_deref(),
        Some("700")
    );

    // A second pending grant (another nonce: an identical signed request
    // within the same second would get the first grant back), cancelled.
    let mut second = grant.clone();
    if let Some(finish) = second.interact.as_mut().and_then(|i| i.finish.as_mut()) {
        finish.nonce = "sdk-nonce-2".into();
    }
    let GrantResponse::WithInteraction { continue_, .. } = sdk
        .grant()
        .request(&alice.auth_server, &second, None)
        .await
        .unwrap()
    else {
        panic!("interactive");
    };
    sdk.grant()
        .cancel(&continue_.uri, Some(&continue_.access_token.value))
        .await
        .unwrap();
    recorder.validate(
        &app.servers,
        &[
            "get-wallet-address",
            "post-request",
            "post-continue",
            "delete-continue",
            "create-incoming-payment",
            "create-quote",
            "create-outgoing-payment",
            "get-outgoing-payment",
            "list-outgoing-payments",
            "get-outgoing-payment-grant",
        ],
    );
}
