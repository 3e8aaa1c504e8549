//! End-to-end tests of the HTTP API: the real server on port 0, real HTTP,
//! and every success body validated against the Open Payments OpenAPI
//! documents.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

mod access;
mod admin;
mod auth;
mod incoming_payments;
mod payments;
mod quotes;
mod replays;
mod sdk;
mod wallet_addresses;

use opd_openapi::Api;
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
