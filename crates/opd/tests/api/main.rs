//! End-to-end tests of the HTTP API: the real server on port 0, real HTTP,
//! and every success body validated against the Open Payments OpenAPI
//! documents (error bodies too, where the spec documents their status).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod access;
mod admin;
mod auth;
mod auto_peering;
mod client;
mod connector;
mod dashboard;
mod hostile;
mod hostile_sim;
mod ilp;
mod incoming_payments;
mod limits;
mod metrics;
mod outage;
mod outbound;
mod payments;
mod quotes;
mod remote;
mod remote_money;
mod replays;
mod retention;
mod sdk;
mod wallet_addresses;

use opd_openapi::Api;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

pub fn amount(value: &str, code: &str, scale: u8) -> Value {
    json!({ "value": value, "assetCode": code, "assetScale": scale })
}

/// Asserts a resource-server response matches its operation in the spec.
pub fn spec_rs(operation: &str, status: reqwest::StatusCode, body: &Value) {
    opd_openapi::assert_response(Api::ResourceServer, operation, status.as_u16(), body);
}

/// Asserts a wallet-address-server response matches its operation.
pub fn spec_wa(operation: &str, status: reqwest::StatusCode, body: &Value) {
    opd_openapi::assert_response(Api::WalletAddressServer, operation, status.as_u16(), body);
}

/// Asserts an error body: status and code.
#[track_caller]
pub fn assert_error(status: reqwest::StatusCode, body: &Value, want_status: u16, want_code: &str) {
    assert_eq!(status.as_u16(), want_status, "{body}");
    assert_eq!(body["error"]["code"], want_code, "{body}");
    assert!(
        body["error"]["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty()),
        "{body}"
    );
}

/// The Open Payments operation a request is, found from its method and
/// URL: `base` is opd's public URL, `auth` its authorization server's.
/// `None` for what no spec covers (admin API, consent pages, the
/// identity-provider API, `/healthz`, `/readyz`).
pub fn operation_of(
    base: &str,
    auth: &str,
    method: &Method,
    url: &str,
) -> Option<(Api, &'static str)> {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    // A path under `prefix`, split into segments ("" at the root).
    let under = |prefix: &str| {
        let rest = url.strip_prefix(prefix.trim_end_matches('/'))?;
        (rest.is_empty() || rest.starts_with('/'))
            .then(|| rest.trim_matches('/').split('/').collect::<Vec<_>>())
    };
    if let Some(segments) = under(auth) {
        let op = match (method.as_str(), segments.as_slice()) {
            ("POST", [""]) => "post-request",
            ("POST", ["continue", _]) => "post-continue",
            ("DELETE", ["continue", _]) => "delete-continue",
            ("POST", ["token", _]) => "post-token",
            ("DELETE", ["token", _]) => "delete-token",
            _ => return None,
        };
        return Some((Api::AuthServer, op));
    }
    let segments = under(base)?;
    let op = match (method.as_str(), segments.as_slice()) {
        ("POST", ["incoming-payments"]) => "create-incoming-payment",
        ("GET", ["incoming-payments"]) => "list-incoming-payments",
        ("GET", ["incoming-payments", _]) => "get-incoming-payment",
        ("POST", ["incoming-payments", _, "complete"]) => "complete-incoming-payment",
        ("POST", ["outgoing-payments"]) => "create-outgoing-payment",
        ("GET", ["outgoing-payments"]) => "list-outgoing-payments",
        ("GET", ["outgoing-payments", _]) => "get-outgoing-payment",
        ("GET", ["outgoing-payment-grant"]) => "get-outgoing-payment-grant",
        ("POST", ["quotes"]) => "create-quote",
        ("GET", ["quotes", _]) => "get-quote",
        ("GET", ["healthz" | "readyz"]) => return None,
        ("GET", [.., "jwks.json"]) => {
            return Some((Api::WalletAddressServer, "get-wallet-address-keys"))
        }
        ("GET", [.., "did.json"]) => {
            return Some((Api::WalletAddressServer, "get-wallet-address-did-document"))
        }
        ("GET", [_, ..]) => return Some((Api::WalletAddressServer, "get-wallet-address")),
        _ => return None,
    };
    Some((Api::ResourceServer, op))
}

/// Validates a response to `method url` against the spec of its operation
/// (see `operation_of`). A 2xx must be a status the operation documents,
/// with a body its schema accepts. An error must be opd's error shape,
/// and is validated against the spec too where the operation documents
/// its status (the spec documents only some errors of each operation).
/// Fails for a request no spec covers, so that a wrong URL cannot skip the
/// check silently.
#[track_caller]
pub fn spec_reply(
    base: &str,
    auth: &str,
    method: &Method,
    url: &str,
    status: StatusCode,
    body: &Value,
) {
    let Some((api, operation)) = operation_of(base, auth, method, url) else {
        panic!("{method} {url}: no Open Payments operation to validate the response against");
    };
    let specs = opd_openapi::Specs::load().unwrap();
    if status == StatusCode::NO_CONTENT {
        // No body to validate (the client reads an empty body as `null`);
        // the status must still be one the operation documents.
        assert!(body.is_null(), "{method} {url}: 204 with a body: {body}");
        let documented = specs.documented_statuses(api, operation).unwrap();
        assert!(
            documented.iter().any(|d| d == "204"),
            "{method} {url}: `{operation}` does not document 204 (documented: {documented:?})"
        );
        return;
    }
    if !status.is_success() {
        assert!(
            body["error"]["code"].is_string() && body["error"]["description"].is_string(),
            "{method} {url}: {status}: error bodies are {{\"error\":{{code,description}}}}: {body}"
        );
        let documented = specs.documented_statuses(api, operation).unwrap();
        let code = status.as_u16().to_string();
        let range = format!("{}XX", status.as_u16() / 100);
        if !documented
            .iter()
            .any(|d| *d == code || d.eq_ignore_ascii_case(&range) || d == "default")
        {
            return;
        }
    }
    if operation == "get-outgoing-payment-grant" {
        // Its schema allows `null` (`spentDebitAmount: null`).
        opd_openapi::assert_response_allow_null(api, operation, status.as_u16(), body);
    } else {
        opd_openapi::assert_response(api, operation, status.as_u16(), body);
    }
}

#[test]
fn operations_are_found_by_method_and_url() {
    // Ports chosen so that one URL is a string prefix of the other.
    let (base, auth) = ("http://127.0.0.1:4000", "http://127.0.0.1:40001");
    let cases = [
        (
            Method::POST,
            "http://127.0.0.1:40001/",
            Some((Api::AuthServer, "post-request")),
        ),
        (
            Method::DELETE,
            "http://127.0.0.1:40001/continue/x",
            Some((Api::AuthServer, "delete-continue")),
        ),
        (
            Method::POST,
            "http://127.0.0.1:40001/token/x",
            Some((Api::AuthServer, "post-token")),
        ),
        (Method::GET, "http://127.0.0.1:40001/interact/x/y", None),
        (
            Method::GET,
            "http://127.0.0.1:4000/incoming-payments?wallet-address=x",
            Some((Api::ResourceServer, "list-incoming-payments")),
        ),
        (
            Method::POST,
            "http://127.0.0.1:4000/incoming-payments/x/complete",
            Some((Api::ResourceServer, "complete-incoming-payment")),
        ),
        (
            Method::GET,
            "http://127.0.0.1:4000/outgoing-payment-grant",
            Some((Api::ResourceServer, "get-outgoing-payment-grant")),
        ),
        (
            Method::GET,
            "http://127.0.0.1:4000/alice",
            Some((Api::WalletAddressServer, "get-wallet-address")),
        ),
        (
            Method::GET,
            "http://127.0.0.1:4000/shops/alice/jwks.json",
            Some((Api::WalletAddressServer, "get-wallet-address-keys")),
        ),
        (Method::GET, "http://127.0.0.1:4000/healthz", None),
        (Method::DELETE, "http://127.0.0.1:4000/quotes/x", None),
        (Method::GET, "http://elsewhere.example/alice", None),
    ];
    for (method, url, want) in cases {
        assert_eq!(
            operation_of(base, auth, &method, url),
            want,
            "{method} {url}"
        );
    }
}

#[test]
fn spec_reply_refuses_what_the_spec_does_not_allow() {
    let (base, auth) = ("http://127.0.0.1:4000", "http://127.0.0.1:4001");
    let fails = |method: Method, url: &str, status: u16, body: Value| {
        let status = StatusCode::from_u16(status).unwrap();
        std::panic::catch_unwind(|| spec_reply(base, auth, &method, url, status, &body)).is_err()
    };
    let quotes = "http://127.0.0.1:4000/quotes";
    let error = json!({ "error": { "code": "invalid_token", "description": "Invalid Token" } });
    assert!(
        !fails(Method::POST, quotes, 401, error.clone()),
        "a documented error"
    );
    assert!(
        !fails(Method::POST, quotes, 409, error.clone()),
        "an undocumented error of the right shape"
    );
    assert!(
        fails(Method::POST, quotes, 200, json!({})),
        "a success status the spec does not document"
    );
    assert!(
        fails(Method::POST, quotes, 201, json!({ "id": "x" })),
        "a body missing required fields"
    );
    assert!(
        fails(
            Method::POST,
            quotes,
            401,
            json!({ "error": { "code": "x" } })
        ),
        "a documented error without description"
    );
    assert!(
        fails(Method::POST, quotes, 409, json!({ "message": "no" })),
        "an error not in opd's shape"
    );
    assert!(
        fails(
            Method::POST,
            "http://127.0.0.1:4000/healthz",
            200,
            json!({})
        ),
        "a request no spec covers"
    );
    assert!(
        !fails(
            Method::DELETE,
            "http://127.0.0.1:4001/token/x",
            204,
            Value::Null
        ),
        "204 without a body"
    );
    assert!(
        fails(
            Method::DELETE,
            "http://127.0.0.1:4001/token/x",
            204,
            json!({})
        ),
        "204 with a body"
    );
}
