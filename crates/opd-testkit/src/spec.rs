//! Validation of opd's responses against the Open Payments OpenAPI
//! documents (`spec/`, loaded by `opd-openapi`), done by the test clients
//! of this crate on every response, so that no test has to remember it.
//!
//! What is validated. A response is checked when its request went to a
//! server the client knows (a [`Server`]: opd's public URL and its
//! authorization server's URL) and maps to an Open Payments or GNAP
//! operation by method and URL ([`operation_of`]):
//!
//! * a 2xx must be a status the operation documents, with a body its schema
//!   accepts (a 204 must have no body);
//! * an error must be opd's error shape `{"error":{"code","description"}}`,
//!   and is validated against the spec too where the operation documents
//!   its status (the spec documents only some errors of each operation, and
//!   tests that send garbage get statuses it does not list).
//!
//! What is not. A request under a known server that is no Open Payments or
//! GNAP operation (`/healthz`, `/readyz`, the consent pages under
//! `/interact/`, the identity-provider API under `/idp/`, a method the
//! spec does not define for the path) is not checked: no document describes
//! it. Neither is a request to a URL under no known server (the tests' own
//! fake peers, key sets and webhook receivers), nor anything on the admin
//! and ILP-over-HTTP listeners, which have their own ports and so are never
//! under a known server's URLs. A test that talks to two opd servers must
//! make its client know both ([`Servers::add`]); `TestApp::know` does it
//! for the clients a `TestApp` hands out.

use std::collections::BTreeSet;

use opd_openapi::Api;
use reqwest::{Method, StatusCode};
use serde_json::Value;

/// One opd server as its clients see it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Server {
    /// The public URL of the Open Payments listener (resource server and
    /// wallet addresses), e.g. `http://127.0.0.1:4000`.
    pub base: String,
    /// The authorization server's URL (its grant endpoint is `{auth}/`).
    pub auth: String,
}

impl Server {
    pub fn new(base: &str, auth: &str) -> Self {
        Self {
            base: base.to_owned(),
            auth: auth.to_owned(),
        }
    }
}

/// The servers a client knows: the responses of requests to them are
/// validated. A set, because the remote-payment tests run two servers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Servers(BTreeSet<Server>);

impl Servers {
    /// Adds a server (adding one twice changes nothing).
    pub fn add(&mut self, server: Server) {
        self.0.insert(server);
    }

    /// Every server known.
    pub fn iter(&self) -> impl Iterator<Item = &Server> {
        self.0.iter()
    }

    /// The operation a request is, if it goes to a known server and maps to
    /// one. Of servers under one another (a tenant on a path prefix of the
    /// server's host) the one with the longest base is meant.
    pub fn operation_of(&self, method: &Method, url: &str) -> Option<(&Server, Api, &'static str)> {
        let bare = url.split(['?', '#']).next().unwrap_or(url);
        self.0
            .iter()
            .filter(|server| {
                let base = server.base.trim_end_matches('/');
                let auth = server.auth.trim_end_matches('/');
                [base, auth].iter().any(|b| {
                    bare.strip_prefix(b)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                })
            })
            .max_by_key(|server| server.base.len())
            .and_then(|server| {
                operation_of(&server.base, &server.auth, method, url)
                    .map(|(api, operation)| (server, api, operation))
            })
    }

    /// Validates the response to `method url` (see the module doc) when the
    /// request is an operation of a known server; returns whether it was.
    ///
    /// # Panics
    ///
    /// When the response is not valid.
    #[track_caller]
    pub fn check(&self, method: &Method, url: &str, status: StatusCode, body: &Value) -> bool {
        match self.operation_of(method, url) {
            Some((server, _, _)) => {
                spec_reply(&server.base, &server.auth, method, url, status, body);
                true
            }
            None => false,
        }
    }
}

/// The Open Payments operation a request is, found from its method and
/// URL: `base` is opd's public URL, `auth` its authorization server's.
/// `None` for what no spec covers (a URL under neither, consent pages, the
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
        // Every other GET path is a wallet address (opd serves them at any
        // depth, `/shops/alice`).
        ("GET", [_, ..]) => return Some((Api::WalletAddressServer, "get-wallet-address")),
        _ => return None,
    };
    Some((Api::ResourceServer, op))
}

/// Validates a response to `method url` against the spec of its operation
/// (see `operation_of` and the module doc). Fails for a request no spec
/// covers, so that a caller who means to validate cannot skip the check
/// with a wrong URL (the clients use [`Servers::check`], which validates
/// only what maps to an operation).
///
/// # Panics
///
/// When the request is no operation, or the response is not valid.
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
    let specs = opd_openapi::Specs::load().unwrap_or_else(|e| panic!("{e}"));
    let documented = specs
        .documented_statuses(api, operation)
        .unwrap_or_else(|e| panic!("{e}"));
    if status == StatusCode::NO_CONTENT {
        // No body to validate (the clients read an empty body as `null`);
        // the status must still be one the operation documents.
        assert!(body.is_null(), "{method} {url}: 204 with a body: {body}");
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
        let code = status.as_u16().to_string();
        let range = format!("{}XX", status.as_u16() / 100);
        if !documented
            .iter()
            .any(|d| *d == code || d.eq_ignore_ascii_case(&range) || d == "default")
        {
            return;
        }
    }
    let (status, body) = (status.as_u16(), body);
    if let Err(err) = if operation == "get-outgoing-payment-grant" {
        // Its schema allows `null` (`spentDebitAmount: null`).
        specs.validate_response_allow_null(api, operation, status, body)
    } else {
        specs.validate_response(api, operation, status, body)
    } {
        panic!("{method} {url}: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn a_set_of_servers_finds_each_ones_operations() {
        let mut servers = Servers::default();
        servers.add(Server::new(
            "http://127.0.0.1:4000",
            "http://127.0.0.1:4001",
        ));
        servers.add(Server::new(
            "http://127.0.0.1:5000",
            "http://127.0.0.1:5001",
        ));
        let op =
            |method: Method, url: &str| servers.operation_of(&method, url).map(|(_, _, op)| op);
        assert_eq!(
            op(Method::POST, "http://127.0.0.1:4001/"),
            Some("post-request")
        );
        assert_eq!(
            op(Method::POST, "http://127.0.0.1:5000/quotes"),
            Some("create-quote")
        );
        assert_eq!(op(Method::GET, "http://127.0.0.1:6000/alice"), None);
        assert_eq!(op(Method::GET, "http://127.0.0.1:5001/interact/x/y"), None);
    }

    #[test]
    fn spec_reply_refuses_what_the_spec_does_not_allow() {
        let (base, auth) = ("http://127.0.0.1:4000", "http://127.0.0.1:4001");
        let fails = |method: Method, url: &str, status: u16, body: Value| {
            let status = StatusCode::from_u16(status).unwrap();
            std::panic::catch_unwind(|| spec_reply(base, auth, &method, url, status, &body))
                .is_err()
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
}
