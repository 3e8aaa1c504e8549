//! Hand-made bodies, valid and invalid, for the checks opd relies on.

// Test code: panicking on an unexpected outcome is the point.
#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_openapi::{Api, Specs, ValidationError, Violation, ViolationKind};
use serde_json::{json, Value};

const RS: Api = Api::ResourceServer;
const WA: Api = Api::WalletAddressServer;

fn specs() -> &'static Specs {
    Specs::load().unwrap()
}

fn amount(value: &str) -> Value {
    json!({"value": value, "assetCode": "USD", "assetScale": 2})
}

fn quote() -> Value {
    json!({
        "id": "https://opd.example/alice/quotes/0b1c",
        "walletAddress": "https://opd.example/alice",
        "receiver": "https://opd.example/bob/incoming-payments/9f1e",
        "receiveAmount": amount("2500"),
        "debitAmount": amount("2600"),
        "method": "ilp",
        "createdAt": "2025-01-02T03:04:05.678Z",
        "expiresAt": "2025-01-02T03:09:05.678Z"
    })
}

fn incoming_payment() -> Value {
    json!({
        "id": "https://opd.example/incoming-payments/6c2f",
        "walletAddress": "https://opd.example/bob",
        "completed": false,
        "incomingAmount": amount("2500"),
        "receivedAmount": amount("0"),
        "expiresAt": "2025-01-03T00:00:00Z",
        "metadata": {"description": "coffee"},
        "createdAt": "2025-01-02T00:00:00Z"
    })
}

fn incoming_payment_with_methods() -> Value {
    let mut body = incoming_payment();
    body["methods"] = json!([{
        "type": "ilp",
        "ilpAddress": "test.opd.bob.6c2f",
        "sharedSecret": "1c7eaXa4rd2fFOBl1iydvCT1tV5TbM3RW1WLCafu_JA"
    }]);
    body
}

fn wallet_address() -> Value {
    json!({
        "id": "https://opd.example/alice",
        "publicName": "Alice",
        "assetCode": "USD",
        "assetScale": 2,
        "authServer": "https://opd.example/auth",
        "resourceServer": "https://opd.example/op"
    })
}

fn jwks() -> Value {
    json!({"keys": [{
        "kid": "key-1",
        "alg": "EdDSA",
        "use": "sig",
        "kty": "OKP",
        "crv": "Ed25519",
        "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    }]})
}

/// The single violation of an `Invalid` error (fails the test otherwise).
fn only_violation(err: &ValidationError) -> &Violation {
    assert_eq!(err.violations().len(), 1, "expected one violation:\n{err}");
    &err.violations()[0]
}

#[test]
fn valid_quote_passes_everywhere_a_quote_is_returned() {
    specs()
        .validate_response(RS, "create-quote", 201, &quote())
        .unwrap();
    specs()
        .validate_response(RS, "get-quote", 200, &quote())
        .unwrap();
    specs().validate_component(RS, "quote", &quote()).unwrap();
    opd_openapi::assert_response(RS, "create-quote", 201, &quote());
    opd_openapi::assert_component(RS, "quote", &quote());
}

#[test]
fn quote_with_extra_field_fails() {
    let mut body = quote();
    body["sentAmount"] = amount("1");
    let err = specs()
        .validate_response(RS, "create-quote", 201, &body)
        .unwrap_err();
    let violation = only_violation(&err);
    assert_eq!(violation.kind, ViolationKind::Schema);
    assert!(
        violation.message.contains("'sentAmount' was unexpected"),
        "{err}"
    );
}

#[test]
fn quote_without_created_at_fails() {
    let mut body = quote();
    body.as_object_mut().unwrap().remove("createdAt");
    let err = specs()
        .validate_response(RS, "get-quote", 200, &body)
        .unwrap_err();
    let violation = only_violation(&err);
    assert!(
        violation
            .message
            .contains("\"createdAt\" is a required property"),
        "{err}"
    );
    assert_eq!(
        violation.keyword_location.as_deref(),
        Some("/components/schemas/quote/required")
    );
}

#[test]
fn asset_scale_256_fails_through_the_amount_ref() {
    let mut body = quote();
    body["debitAmount"]["assetScale"] = json!(256);
    let err = specs()
        .validate_response(RS, "create-quote", 201, &body)
        .unwrap_err();
    let violation = only_violation(&err);
    assert_eq!(violation.instance_path, "/debitAmount/assetScale");
    // The keyword lives in `#/components/schemas/amount`: the `$ref` was
    // resolved inside the document.
    assert_eq!(
        violation.keyword_location.as_deref(),
        Some("/components/schemas/amount/properties/assetScale/maximum")
    );
    body["debitAmount"]["assetScale"] = json!(255);
    specs()
        .validate_response(RS, "create-quote", 201, &body)
        .unwrap();
}

#[test]
fn formats_uri_and_date_time_are_asserted_but_uint64_is_not() {
    let mut body = quote();
    body["createdAt"] = json!("yesterday");
    let err = specs().validate_component(RS, "quote", &body).unwrap_err();
    assert!(
        only_violation(&err)
            .message
            .contains("is not a \"date-time\""),
        "{err}"
    );

    let mut body = quote();
    body["walletAddress"] = json!("alice");
    let err = specs().validate_component(RS, "quote", &body).unwrap_err();
    assert_eq!(only_violation(&err).instance_path, "/walletAddress");
    assert!(
        only_violation(&err).message.contains("is not a \"uri\""),
        "{err}"
    );

    // `format: uint64` is not a JSON Schema format: ignored, not an error.
    let mut body = quote();
    body["debitAmount"]["value"] = json!("not-a-number");
    specs().validate_component(RS, "quote", &body).unwrap();
}

#[test]
fn null_metadata_fails_with_a_path_to_the_null() {
    let mut body = incoming_payment_with_methods();
    body["metadata"] = Value::Null;
    let err = specs()
        .validate_response(RS, "create-incoming-payment", 201, &body)
        .unwrap_err();
    let kinds: Vec<_> = err
        .violations()
        .iter()
        .map(|v| (v.kind, v.instance_path.as_str()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (ViolationKind::Schema, "/metadata"),
            (ViolationKind::Null, "/metadata"),
        ],
        "{err}"
    );
    // A null where the schema has nothing to say is still caught.
    let mut body = incoming_payment_with_methods();
    body["metadata"] = json!({"note": null});
    let err = specs()
        .validate_response(RS, "create-incoming-payment", 201, &body)
        .unwrap_err();
    let violation = only_violation(&err);
    assert_eq!(violation.kind, ViolationKind::Null);
    assert_eq!(violation.instance_path, "/metadata/note");
    assert!(err
        .to_string()
        .contains("at /metadata/note: null is not allowed"));
}

#[test]
fn incoming_payment_with_methods_passes_and_bad_ilp_address_fails() {
    specs()
        .validate_response(
            RS,
            "create-incoming-payment",
            201,
            &incoming_payment_with_methods(),
        )
        .unwrap();
    specs()
        .validate_response(
            RS,
            "get-incoming-payment",
            200,
            &incoming_payment_with_methods(),
        )
        .unwrap();

    let mut body = incoming_payment_with_methods();
    body["methods"][0]["ilpAddress"] = json!("nowhere.opd.bob");
    let err = specs()
        .validate_response(RS, "create-incoming-payment", 201, &body)
        .unwrap_err();
    let violation = only_violation(&err);
    assert_eq!(violation.instance_path, "/methods/0");
    // `items: {anyOf: [ilp-payment-method]}`: the reason is nested.
    let reasons = &violation.alternatives[0];
    assert_eq!(reasons[0].instance_path, "/methods/0/ilpAddress");
    assert!(reasons[0].message.contains("does not match"), "{err}");
    assert!(
        err.to_string().contains("alternative #0 fails because"),
        "{err}"
    );
}

#[test]
fn create_incoming_payment_requires_methods() {
    let err = specs()
        .validate_response(RS, "create-incoming-payment", 201, &incoming_payment())
        .unwrap_err();
    assert!(only_violation(&err)
        .message
        .contains("\"methods\" is a required property"));
}

#[test]
fn public_incoming_payment_passes_get_incoming_payment() {
    let body = json!({"authServer": "https://opd.example/auth", "receivedAmount": amount("0")});
    specs()
        .validate_response(RS, "get-incoming-payment", 200, &body)
        .unwrap();
    // Neither alternative: explains both.
    let err = specs()
        .validate_response(
            RS,
            "get-incoming-payment",
            200,
            &json!({"receivedAmount": amount("0")}),
        )
        .unwrap_err();
    assert_eq!(only_violation(&err).alternatives.len(), 2, "{err}");
}

#[test]
fn list_incoming_payments_items_forbid_methods() {
    let list = |item: Value| {
        json!({
            "pagination": {"hasPreviousPage": false, "hasNextPage": false,
                           "startCursor": "a", "endCursor": "a"},
            "result": [item]
        })
    };
    specs()
        .validate_response(RS, "list-incoming-payments", 200, &list(incoming_payment()))
        .unwrap();
    let err = specs()
        .validate_response(
            RS,
            "list-incoming-payments",
            200,
            &list(incoming_payment_with_methods()),
        )
        .unwrap_err();
    let violation = only_violation(&err);
    assert_eq!(violation.instance_path, "/result/0");
    assert!(
        violation.message.contains("'methods' was unexpected"),
        "{err}"
    );
    // Same rule for complete-incoming-payment.
    specs()
        .validate_response(RS, "complete-incoming-payment", 200, &incoming_payment())
        .unwrap();
    specs()
        .validate_response(
            RS,
            "complete-incoming-payment",
            200,
            &incoming_payment_with_methods(),
        )
        .unwrap_err();
}

#[test]
fn only_the_two_bare_ref_siblings_are_normalized() {
    assert_eq!(
        specs().normalized_locations(RS),
        [
            "/paths/~1incoming-payments/get/responses/200/content/application~1json/schema/properties/result/items",
            "/paths/~1incoming-payments~1{id}~1complete/post/responses/200/content/application~1json/schema",
        ]
    );
    for api in [
        Api::WalletAddressServer,
        Api::AuthServer,
        Api::TokenIntrospection,
    ] {
        assert!(specs().normalized_locations(api).is_empty());
    }
}

#[test]
fn undocumented_status_fails() {
    let err = specs()
        .validate_response(
            RS,
            "create-incoming-payment",
            200,
            &incoming_payment_with_methods(),
        )
        .unwrap_err();
    match &err {
        ValidationError::UndocumentedStatus {
            status, documented, ..
        } => {
            assert_eq!(*status, 200);
            assert!(documented.contains(&"201".to_owned()));
        }
        other => panic!("wrong error: {other}"),
    }
    assert!(
        err.to_string().contains("does not document status 200"),
        "{err}"
    );
    assert_eq!(
        specs()
            .documented_statuses(RS, "create-incoming-payment")
            .unwrap(),
        ["201", "401", "403"]
    );
}

#[test]
fn unknown_operation_and_component_are_errors() {
    let err = specs()
        .validate_response(RS, "create-payment", 201, &json!({}))
        .unwrap_err();
    assert!(
        matches!(err, ValidationError::UnknownOperation { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("create-quote"),
        "lists known ids: {err}"
    );
    let err = specs()
        .validate_component(RS, "quotes", &json!({}))
        .unwrap_err();
    assert!(
        matches!(err, ValidationError::UnknownComponent { .. }),
        "{err}"
    );
}

#[test]
fn outgoing_payment_grant_nulls_pass_only_with_allow_null() {
    let body = json!({"spentReceiveAmount": null, "spentDebitAmount": null});
    let err = specs()
        .validate_response(RS, "get-outgoing-payment-grant", 200, &body)
        .unwrap_err();
    assert!(err
        .violations()
        .iter()
        .all(|v| v.kind == ViolationKind::Null));
    assert_eq!(err.violations().len(), 2);
    specs()
        .validate_response_allow_null(RS, "get-outgoing-payment-grant", 200, &body)
        .unwrap();
    opd_openapi::assert_response_allow_null(RS, "get-outgoing-payment-grant", 200, &body);

    // The schema still applies: both keys required, amounts must be amounts.
    let body = json!({"spentDebitAmount": null});
    specs()
        .validate_response_allow_null(RS, "get-outgoing-payment-grant", 200, &body)
        .unwrap_err();
    let body = json!({"spentReceiveAmount": amount("1"), "spentDebitAmount": "1"});
    specs()
        .validate_response_allow_null(RS, "get-outgoing-payment-grant", 200, &body)
        .unwrap_err();
    let body = json!({"spentReceiveAmount": amount("1"), "spentDebitAmount": amount("2")});
    specs()
        .validate_response(RS, "get-outgoing-payment-grant", 200, &body)
        .unwrap();
}

#[test]
fn outgoing_payment_bodies() {
    let payment = json!({
        "id": "https://opd.example/outgoing-payments/1",
        "walletAddress": "https://opd.example/alice",
        "quoteId": "https://opd.example/quotes/1",
        "failed": false,
        "receiver": "https://opd.example/incoming-payments/2",
        "receiveAmount": amount("2500"),
        "debitAmount": amount("2600"),
        "sentAmount": amount("0"),
        "createdAt": "2025-01-02T00:00:00Z"
    });
    specs()
        .validate_response(RS, "get-outgoing-payment", 200, &payment)
        .unwrap();
    let mut created = payment.clone();
    created["grantSpentDebitAmount"] = amount("2600");
    specs()
        .validate_response(RS, "create-outgoing-payment", 201, &created)
        .unwrap();
    // `outgoing-payment` (GET) forbids the grant-spent fields.
    let err = specs()
        .validate_response(RS, "get-outgoing-payment", 200, &created)
        .unwrap_err();
    assert!(only_violation(&err)
        .message
        .contains("grantSpentDebitAmount"));
}

#[test]
fn wallet_address_document() {
    specs()
        .validate_response(WA, "get-wallet-address", 200, &wallet_address())
        .unwrap();
    // additionalProperties: true
    let mut body = wallet_address();
    body["extra"] = json!("allowed");
    specs()
        .validate_response(WA, "get-wallet-address", 200, &body)
        .unwrap();

    let mut body = wallet_address();
    body.as_object_mut().unwrap().remove("authServer");
    specs()
        .validate_response(WA, "get-wallet-address", 200, &body)
        .unwrap_err();
    let mut body = wallet_address();
    body["assetScale"] = json!("2");
    let err = specs()
        .validate_response(WA, "get-wallet-address", 200, &body)
        .unwrap_err();
    assert_eq!(only_violation(&err).instance_path, "/assetScale");
}

#[test]
fn jwks_document() {
    specs()
        .validate_response(WA, "get-wallet-address-keys", 200, &jwks())
        .unwrap();
    specs()
        .validate_response(WA, "get-wallet-address-keys", 200, &json!({"keys": []}))
        .unwrap();
    // json-web-key-set: additionalProperties: false
    let mut body = jwks();
    body["extra"] = json!(1);
    let err = specs()
        .validate_response(WA, "get-wallet-address-keys", 200, &body)
        .unwrap_err();
    assert!(
        only_violation(&err)
            .message
            .contains("'extra' was unexpected"),
        "{err}"
    );
    let mut body = jwks();
    body["keys"][0].as_object_mut().unwrap().remove("alg");
    let err = specs()
        .validate_response(WA, "get-wallet-address-keys", 200, &body)
        .unwrap_err();
    assert_eq!(only_violation(&err).instance_path, "/keys/0");
    let mut body = jwks();
    body["keys"][0]["crv"] = json!("P-256");
    specs()
        .validate_response(WA, "get-wallet-address-keys", 200, &body)
        .unwrap_err();
    specs()
        .validate_component(WA, "json-web-key-set", &jwks())
        .unwrap();
}

#[test]
fn responses_without_a_schema_accept_any_body_but_no_null() {
    specs()
        .validate_response(Api::AuthServer, "delete-token", 204, &json!({}))
        .unwrap();
    specs()
        .validate_response(WA, "get-wallet-address", 404, &json!({"anything": 1}))
        .unwrap();
    let err = specs()
        .validate_response(Api::AuthServer, "delete-token", 204, &json!({"a": null}))
        .unwrap_err();
    assert_eq!(only_violation(&err).kind, ViolationKind::Null);
}

#[test]
fn grant_responses_and_one_of() {
    let continue_ = json!({
        "access_token": {"value": "33OMUKMKSKU80UPRY5NM"},
        "uri": "https://opd.example/auth/continue/4CF4",
        "wait": 5
    });
    let access_token = json!({
        "value": "OS9M2PMHKUR64TB8N6BW7OZB8CDFONP219RP1LT0",
        "manage": "https://opd.example/auth/token/dd17",
        "expires_in": 600,
        "access": [{"type": "incoming-payment", "actions": ["create", "read"],
                    "identifier": "https://opd.example/bob"}]
    });
    let interact = json!({"redirect": "https://opd.example/auth/interact/1", "finish": "n"});
    let auth = Api::AuthServer;
    specs()
        .validate_response(
            auth,
            "post-request",
            200,
            &json!({"access_token": access_token, "continue": continue_}),
        )
        .unwrap();
    specs()
        .validate_response(
            auth,
            "post-request",
            200,
            &json!({"interact": interact, "continue": continue_}),
        )
        .unwrap();
    // Both shapes at once matches both `oneOf` branches: invalid.
    let err = specs()
        .validate_response(
            auth,
            "post-request",
            200,
            &json!({"interact": interact, "access_token": access_token, "continue": continue_}),
        )
        .unwrap_err();
    assert!(only_violation(&err).message.contains("oneOf"), "{err}");
    // access_token: additionalProperties false; access items: unevaluatedProperties false.
    let mut token = access_token.clone();
    token["access"][0]["limits"] = json!({});
    let err = specs()
        .validate_response(auth, "post-token", 200, &json!({"access_token": token}))
        .unwrap_err();
    assert!(err.to_string().contains("limits"), "{err}");
}

#[test]
fn token_introspection() {
    let api = Api::TokenIntrospection;
    specs()
        .validate_response(api, "post-introspect", 200, &json!({"active": false}))
        .unwrap();
    specs()
        .validate_response(
            api,
            "post-introspect",
            200,
            &json!({
                "active": true,
                "grant": "1ee48d97",
                "access": [{"type": "quote", "actions": ["create", "read"]}],
                "client": {"walletAddress": "https://opd.example/client"}
            }),
        )
        .unwrap();
    specs()
        .validate_response(api, "post-introspect", 200, &json!({"active": true}))
        .unwrap_err();
}

#[test]
fn errors_are_readable_and_debug_matches_display() {
    let mut body = quote();
    body["debitAmount"]["assetScale"] = json!(-1);
    body["extra"] = json!(true);
    let err = specs()
        .validate_response(RS, "create-quote", 201, &body)
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(
            "resource-server.yaml: response 201 (spec key `201`) of `create-quote` does not \
             match the Open Payments spec (2 violations):"
        ),
        "{text}"
    );
    assert!(
        text.contains("at /debitAmount/assetScale: -1 is less than the minimum of 0"),
        "{text}"
    );
    assert!(
        text.contains("[spec: /components/schemas/quote/additionalProperties]"),
        "{text}"
    );
    assert!(text.contains("body: {"), "{text}");
    assert_eq!(format!("{err:?}"), text);
}

#[test]
fn load_is_shared_and_names_its_directory() {
    let first = Specs::load().unwrap();
    let second = Specs::load().unwrap();
    assert!(std::ptr::eq(first, second));
    assert!(first.dir().join("resource-server.yaml").is_file());
    assert_eq!(
        first.path(RS),
        Some(first.dir().join("resource-server.yaml").as_path())
    );
    assert!(first
        .operation_ids(RS)
        .contains(&"get-outgoing-payment-grant".to_owned()));
    assert!(first
        .component_names(WA)
        .contains(&"json-web-key-set".to_owned()));
}
