//! The examples of `auth-server.yaml` and `token-introspection.yaml`,
//! copied as JSON, deserialize, validate and serialize back unchanged; and
//! every grant-level validation rule.
#![expect(clippy::expect_used, reason = "tests fail loudly by design")]

use opd_gnap::*;
use serde_json::{json, Value};

fn grant_request(v: Value) -> GrantRequest {
    serde_json::from_value(v).expect("deserializes")
}

fn validate(v: Value) -> Result<ValidatedGrantRequest, GnapError> {
    ValidatedGrantRequest::parse(&grant_request(v))
}

fn round_trips<T: serde::Serialize + serde::de::DeserializeOwned>(v: Value) -> T {
    let t: T = serde_json::from_value(v.clone()).expect("deserializes");
    assert_eq!(serde_json::to_value(&t).expect("serializes"), v);
    t
}

const RFC8037_X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";

fn outgoing_example() -> Value {
    json!({
        "access_token": {"access": [{
            "type": "outgoing-payment",
            "actions": ["create", "read"],
            "identifier": "https://ilp.interledger-test.dev/alice",
            "limits": {
                "receiver": "https://ilp.interledger-test.dev/incoming-payments/45a0d0ee-26dc-4c66-89e0-01fbf93156f7",
                "interval": "R12/2019-08-24T14:15:22Z/P1M",
                "debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}
            }
        }]},
        "client": "https://webmonize.com/.well-known/pay",
        "interact": {
            "start": ["redirect"],
            "finish": {
                "method": "redirect",
                "uri": "https://webmonize.com/return/876FGRD8VC",
                "nonce": "4edb2194-dbdf-46bb-9397-d5fd57b7c8a7"
            }
        }
    })
}

fn incoming_example() -> Value {
    json!({
        "access_token": {"access": [{
            "type": "incoming-payment",
            "actions": ["create", "read"],
            "identifier": "http://ilp.interledger-test.dev/bob"
        }]},
        "client": "https://webmonize.com/.well-known/pay"
    })
}

#[test]
fn spec_grant_request_outgoing_with_limits() {
    round_trips::<GrantRequest>(outgoing_example());
    let g = validate(outgoing_example()).expect("valid");
    assert!(g.requires_interaction());
    assert_eq!(
        g.client,
        ClientIdent::WalletAddress("https://webmonize.com/.well-known/pay".into())
    );
    let item = &g.access[0];
    assert_eq!(item.kind, AccessType::OutgoingPayment);
    let limits = item.limits.as_ref().expect("limits");
    assert_eq!(limits.debit_amount.as_ref().map(|a| a.value), Some(500));
    assert_eq!(
        limits.interval.as_ref().map(|i| i.repetitions()),
        Some(Repetitions::Finite(12))
    );
    let finish = g.finish().expect("finish");
    assert_eq!(finish.nonce, "4edb2194-dbdf-46bb-9397-d5fd57b7c8a7");
    assert_eq!(finish.uri, "https://webmonize.com/return/876FGRD8VC");
}

#[test]
fn spec_grant_request_incoming() {
    round_trips::<GrantRequest>(incoming_example());
    let g = validate(incoming_example()).expect("valid");
    assert!(!g.requires_interaction());
    assert_eq!(g.interact, None);
    assert_eq!(g.access.len(), 1);
}

#[test]
fn spec_grant_request_directed_identity() {
    let v = json!({
        "access_token": {"access": [{
            "type": "incoming-payment",
            "actions": ["create", "read"],
            "identifier": "http://ilp.interledger-test.dev/bob"
        }]},
        "client": {"jwk": {
            "kid": "example-key-1", "alg": "EdDSA", "use": "sig",
            "kty": "OKP", "crv": "Ed25519", "x": RFC8037_X
        }}
    });
    round_trips::<GrantRequest>(v.clone());
    let g = validate(v).expect("valid");
    assert!(matches!(&g.client, ClientIdent::Jwk(j) if j.kid == "example-key-1"));
    assert_eq!(g.client.wallet_address(), None);
    assert!(!g.requires_interaction());
}

#[test]
fn spec_grant_request_subject() {
    let v = json!({
        "subject": {"sub_ids": [{"id": "https://ilp.interledger-test.dev/alice", "format": "uri"}]},
        "client": "https://webmonize.com/.well-known/pay",
        "interact": {
            "start": ["redirect"],
            "finish": {
                "method": "redirect",
                "uri": "https://webmonize.com/return/876FGRD8VC",
                "nonce": "4edb2194-dbdf-46bb-9397-d5fd57b7c8a7"
            }
        }
    });
    round_trips::<GrantRequest>(v.clone());
    let g = validate(v).expect("valid");
    assert!(g.requires_interaction());
    assert!(g.access.is_empty());
}

#[test]
fn client_forms() {
    let mut v = incoming_example();
    v["client"] = json!({"walletAddress": "https://wallet.example/alice"});
    let g = validate(v.clone()).expect("valid");
    assert_eq!(
        g.client.wallet_address(),
        Some("https://wallet.example/alice")
    );
    assert_eq!(
        serde_json::to_value(g.client.to_wire()).ok(),
        Some(json!({"walletAddress": "https://wallet.example/alice"}))
    );
    // Object forms are closed and mutually exclusive.
    for bad in [
        json!({"walletAddress": "https://w/a", "extra": 1}),
        json!({"walletAddress": "https://w/a", "jwk": {"kid": "k", "kty": "OKP", "crv": "Ed25519", "x": RFC8037_X}}),
        json!({}),
        json!(42),
    ] {
        v["client"] = bad.clone();
        assert!(
            serde_json::from_value::<GrantRequest>(v.clone()).is_err(),
            "{bad}"
        );
    }
    // Missing client.
    let mut no_client = incoming_example();
    no_client.as_object_mut().map(|o| o.remove("client"));
    assert!(serde_json::from_value::<GrantRequest>(no_client).is_err());
}

fn expect_err(v: Value, code: GnapErrorCode, status: u16, needle: &str) {
    let e = validate(v).expect_err("invalid");
    assert_eq!((e.code, e.status), (code, status), "{e}");
    assert!(
        e.description.contains(needle),
        "{:?} lacks {needle:?}",
        e.description
    );
}

#[test]
fn grant_validation_errors() {
    use GnapErrorCode::{InvalidClient, InvalidRequest};

    // Neither access_token nor subject.
    expect_err(
        json!({"client": "https://w/a"}),
        InvalidRequest,
        400,
        "access_token or subject",
    );
    // Empty access without subject.
    expect_err(
        json!({"access_token": {"access": []}, "client": "https://w/a"}),
        InvalidRequest,
        400,
        "must not be empty",
    );
    // Bad item inside.
    let mut v = incoming_example();
    v["access_token"]["access"][0]["actions"] = json!([]);
    expect_err(v, InvalidRequest, 400, "at least one action");
    // Duplicates and too many.
    let mut v = incoming_example();
    let item = v["access_token"]["access"][0].clone();
    v["access_token"]["access"] = json!([item.clone(), item.clone()]);
    expect_err(v.clone(), InvalidRequest, 400, "unique");
    v["access_token"]["access"] = json!([
        item,
        {"type": "quote", "actions": ["create"]},
        {"type": "quote", "actions": ["read"]},
        {"type": "incoming-payment", "actions": ["read"]}
    ]);
    expect_err(v, InvalidRequest, 400, "at most 3");
    // Client wallet address must be a URL; JWK must be valid.
    let mut v = incoming_example();
    v["client"] = json!("alice");
    expect_err(v.clone(), InvalidClient, 400, "http(s) URL");
    v["client"] = json!({"jwk": {"kid": "k", "kty": "OKP", "crv": "Ed25519", "x": "AAAA"}});
    expect_err(v, InvalidClient, 400, "client jwk");
    // Outgoing payment without interact.
    let mut v = outgoing_example();
    v.as_object_mut().map(|o| o.remove("interact"));
    expect_err(
        v,
        InvalidRequest,
        400,
        "interact.start must contain \"redirect\"",
    );
    // interact with an empty start list.
    let mut v = outgoing_example();
    v["interact"]["start"] = json!([]);
    expect_err(
        v,
        InvalidRequest,
        400,
        "interact.start must contain \"redirect\"",
    );
    // Unsupported start mode / finish method / hash method / bad finish uri / empty nonce.
    let mut v = outgoing_example();
    v["interact"]["start"] = json!(["redirect", "user_code"]);
    expect_err(v, InvalidRequest, 400, "start mode");
    let mut v = outgoing_example();
    v["interact"]["finish"]["method"] = json!("push");
    expect_err(v, InvalidRequest, 400, "finish method");
    let mut v = outgoing_example();
    v["interact"]["finish"]["hash_method"] = json!("sha-512");
    expect_err(v, InvalidRequest, 400, "hash_method");
    let mut v = outgoing_example();
    v["interact"]["finish"]["uri"] = json!("/return");
    expect_err(v, InvalidRequest, 400, "absolute URI");
    let mut v = outgoing_example();
    v["interact"]["finish"]["nonce"] = json!("");
    expect_err(v, InvalidRequest, 400, "nonce");
    // Interactive grant with a JWK client.
    let mut v = outgoing_example();
    v["client"] = json!({"jwk": {"kid": "k", "alg": "EdDSA", "kty": "OKP", "crv": "Ed25519", "x": RFC8037_X}});
    expect_err(v, InvalidClient, 400, "non-interactive");
    // list-all needs interaction, and then an identifier.
    let v = json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["list-all"]}]},
        "client": "https://w/a",
        "interact": {"start": ["redirect"]}
    });
    expect_err(v, InvalidRequest, 400, "requires an identifier");
    let v = json!({
        "access_token": {"access": [{"type": "incoming-payment", "actions": ["list-all"]}]},
        "client": "https://w/a"
    });
    expect_err(v, InvalidRequest, 400, "needs interaction");
    // Subject rules.
    let subject = |sub: Value, interact: bool| {
        let mut v = json!({"subject": sub, "client": "https://w/a"});
        if interact {
            v["interact"] = json!({"start": ["redirect"]});
        }
        v
    };
    let ok = json!({"sub_ids": [{"id": "https://w/a", "format": "uri"}]});
    assert!(validate(subject(ok.clone(), true)).is_ok());
    expect_err(subject(ok, false), InvalidRequest, 400, "needs interact");
    expect_err(
        subject(json!({"sub_ids": []}), true),
        InvalidRequest,
        400,
        "exactly one",
    );
    expect_err(
        subject(
            json!({"sub_ids": [{"id": "a", "format": "uri"}, {"id": "b", "format": "uri"}]}),
            true,
        ),
        InvalidRequest,
        400,
        "exactly one",
    );
    expect_err(
        subject(json!({"sub_ids": [{"id": "a", "format": "email"}]}), true),
        InvalidRequest,
        400,
        "format",
    );
}

#[test]
fn interaction_rules() {
    // Incoming + quote without list-all: no interaction, interact ignored.
    let mut v = incoming_example();
    v["interact"] = json!({"start": ["redirect"], "finish": null});
    let g = validate(v).expect("valid");
    assert!(!g.requires_interaction());
    assert_eq!(g.finish(), None);
    // A subject makes an otherwise non-interactive grant interactive; the
    // incoming item itself needs no identifier then.
    let v = json!({
        "access_token": {"access": [{"type": "quote", "actions": ["create"]}]},
        "subject": {"sub_ids": [{"id": "https://w/a", "format": "uri"}]},
        "client": "https://w/a",
        "interact": {"start": ["redirect"]}
    });
    assert!(validate(v).expect("valid").requires_interaction());
    // Policy: incoming payments may be made interactive.
    let policy = InteractionPolicy {
        incoming_payment: true,
        ..InteractionPolicy::default()
    };
    let e = ValidatedGrantRequest::parse_with_policy(&grant_request(incoming_example()), &policy)
        .expect_err("needs interact");
    assert_eq!(e.code, GnapErrorCode::InvalidRequest);
}

#[test]
fn finish_null_is_absent() {
    let v = json!({"start": ["redirect"], "finish": null});
    let i: InteractRequest = serde_json::from_value(v).expect("deserializes");
    assert_eq!(i.finish, None);
    assert_eq!(
        serde_json::to_value(&i).ok(),
        Some(json!({"start": ["redirect"]}))
    );
}

#[test]
fn spec_grant_responses() {
    let pending = json!({
        "interact": {
            "redirect": "https://auth.interledger-test.dev/4CF492MLVMSW9MKMXKHQ",
            "finish": "4105340a-05eb-4290-8739-f9e2b463bfa7"
        },
        "continue": {
            "access_token": {"value": "33OMUKMKSKU80UPRY5NM"},
            "uri": "https://auth.interledger-test.dev/continue/4CF492MLVMSW9MKMXKHQ",
            "wait": 30
        }
    });
    assert!(matches!(
        round_trips::<GrantResponse>(pending),
        GrantResponse::Pending(_)
    ));
    let approved = json!({
        "access_token": {
            "value": "OS9M2PMHKUR64TB8N6BW7OZB8CDFONP219RP1LT0",
            "manage": "https://auth.interledger-test.dev/token/dd17a202-9982-4ed9-ae31-564947fb6379",
            "expires_in": 3600,
            "access": [{
                "type": "incoming-payment",
                "actions": ["create", "read"],
                "identifier": "https://ilp.interledger-test.dev/bob"
            }]
        },
        "continue": {
            "access_token": {"value": "33OMUKMKSKU80UPRY5NM"},
            "uri": "https://auth.interledger-test.dev/continue/4CF492MLVMSW9MKMXKHQ"
        }
    });
    let r = round_trips::<GrantResponse>(approved);
    let GrantResponse::Approved(a) = r else {
        panic!("approved expected")
    };
    assert_eq!(a.continue_.wait, None);
    // Built from the domain, the response has no nulls.
    let item = AccessItem::parse(&a.access_token.access[0]).expect("valid item");
    let built = ContinueGrantResponse {
        access_token: None,
        subject: None,
        continue_: ContinueResponse {
            access_token: ContinueToken { value: "c".into() },
            uri: "https://auth.example/continue/1".into(),
            wait: Some(5),
        },
    };
    assert_eq!(
        serde_json::to_value(&built).ok(),
        Some(
            json!({"continue": {"access_token": {"value": "c"}, "uri": "https://auth.example/continue/1", "wait": 5}})
        )
    );
    assert_eq!(item.to_wire(), a.access_token.access[0]);
}

fn outgoing_token() -> Value {
    json!({
        "value": "OS9M2PMHKUR64TB8N6BW7OZB8CDFONP219RP1LT0",
        "manage": "https://auth.interledger-test.dev/token/dd17a202-9982-4ed9-ae31-564947fb6379",
        "expires_in": 3600,
        "access": [{
            "type": "outgoing-payment",
            "actions": ["create", "read"],
            "identifier": "https://ilp.interledger-test.dev/alice",
            "limits": {
                "receiver": "https://ilp.interledger-test.dev/bob/incoming-payments/48884225-b393-4872-90de-1b737e2491c2",
                "interval": "R12/2019-08-24T14:15:22Z/P1M",
                "debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}
            }
        }]
    })
}

#[test]
fn spec_continue_and_rotate_responses() {
    let continue_ = json!({
        "access_token": {"value": "33OMUKMKSKU80UPRY5NM"},
        "uri": "https://auth.interledger-test.dev/continue/4CF492MLVMSW9MKMXKHQ",
        "wait": 30
    });
    let with_token = round_trips::<ContinueGrantResponse>(
        json!({"access_token": outgoing_token(), "continue": continue_.clone()}),
    );
    let token = with_token.access_token.expect("token");
    let item = AccessItem::parse(&token.access[0]).expect("valid item");
    assert_eq!(item.to_wire(), token.access[0]);
    round_trips::<ContinueGrantResponse>(json!({
        "subject": {"sub_ids": [{"id": "https://ilp.interledger-test.dev/alice", "format": "uri"}]},
        "continue": continue_.clone()
    }));
    round_trips::<ContinueGrantResponse>(json!({"continue": continue_}));
    let mut rotated = outgoing_token();
    rotated["value"] = json!("OZB8CDFONP219RP1LT0OS9M2PMHKUR64TB8N6BW7");
    round_trips::<RotateTokenResponse>(json!({"access_token": rotated}));
    // The issued token object is closed.
    let mut extra = outgoing_token();
    extra["extra"] = json!(1);
    assert!(serde_json::from_value::<AccessTokenResponse>(extra).is_err());
    // Continue request: interact_ref or empty.
    let r: ContinueRequest =
        serde_json::from_value(json!({"interact_ref": "ad82597c-bbfa-4eb0-b72e-328e005b8689"}))
            .expect("deserializes");
    assert_eq!(
        r.interact_ref.as_deref(),
        Some("ad82597c-bbfa-4eb0-b72e-328e005b8689")
    );
    let r: ContinueRequest = serde_json::from_value(json!({})).expect("deserializes");
    assert_eq!(r, ContinueRequest::default());
}

#[test]
fn spec_introspection() {
    let req = round_trips::<IntrospectionRequest>(
        json!({"access_token": "OS9M2PMHKUR64TB8N6BW7OZB8CDFONP219RP1LT0"}),
    );
    assert_eq!(req.access, None);
    let req = round_trips::<IntrospectionRequest>(json!({
        "access_token": "T",
        "access": [{"type": "outgoing-payment", "actions": ["create"], "identifier": "https://openpayments.guide/alice"}]
    }));

    let active = json!({
        "active": true,
        "grant": "1ee48d97-8fa1-4ab4-b89d-95284b665517",
        "access": [{
            "type": "outgoing-payment",
            "actions": ["create", "read"],
            "identifier": "https://openpayments.guide/alice",
            "limits": {
                "interval": "R12/2019-08-24T14:15:22Z/P1M",
                "receiver": "https://openpayments.guide/bob/incoming-payments/48884225-b393-4872-90de-1b737e2491c2",
                "debitAmount": {"value": "500", "assetCode": "USD", "assetScale": 2}
            }
        }],
        "client": {"walletAddress": "https://webmonize.com/.well-known/pay"}
    });
    let r = round_trips::<IntrospectionResponse>(active.clone());
    let IntrospectionResponse::Active(info) = r else {
        panic!("active expected")
    };
    // The AS side: granted items matched against the request.
    let granted = info
        .access
        .iter()
        .map(AccessItem::parse)
        .collect::<Result<Vec<_>, _>>()
        .expect("valid items");
    let matched = introspection_matches(&granted, req.access.as_deref().unwrap_or_default())
        .expect("known types");
    assert_eq!(matched, vec![&granted[0]]);
    // The RS side: the effective action.
    assert_eq!(
        find_access(
            &granted,
            AccessType::OutgoingPayment,
            Action::Read,
            Some("https://openpayments.guide/alice")
        )
        .map(|m| m.1),
        Some(Action::Read)
    );

    let mut jwk_form = active;
    jwk_form["client"] = json!({"jwk": {
        "kid": "key-1", "alg": "EdDSA", "kty": "OKP", "crv": "Ed25519", "x": "test-public-key-base64url"
    }});
    round_trips::<IntrospectionResponse>(jwk_form.clone());
    // The AS builds the client object from a validated identity.
    let ident = ClientIdent::WalletAddress("https://webmonize.com/.well-known/pay".into());
    let built = IntrospectionResponse::Active(TokenInfo {
        grant: "g".into(),
        access: vec![],
        client: ident.to_wire(),
    });
    assert_eq!(
        serde_json::to_value(built).ok(),
        Some(
            json!({"active": true, "grant": "g", "access": [], "client": {"walletAddress": "https://webmonize.com/.well-known/pay"}})
        )
    );

    assert_eq!(
        round_trips::<IntrospectionResponse>(json!({"active": false})),
        IntrospectionResponse::Inactive
    );
    // active:true without the required members is not a valid response.
    assert!(serde_json::from_value::<IntrospectionResponse>(json!({"active": true})).is_err());
    let mut no_client = jwk_form;
    no_client.as_object_mut().map(|o| o.remove("client"));
    assert!(serde_json::from_value::<IntrospectionResponse>(no_client).is_err());
}

#[test]
fn spec_error_bodies() {
    for code in GnapErrorCode::ALL {
        let body = GnapError::new(code, "d").to_response();
        let v = serde_json::to_value(&body).expect("serializes");
        assert_eq!(
            v,
            json!({"error": {"code": code.as_str(), "description": "d"}})
        );
    }
}
