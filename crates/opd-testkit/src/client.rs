//! A test client that signs requests exactly like the official Node client
//! (`@interledger/open-payments`): label `sig1`, `@method @target-uri
//! [authorization] [content-digest content-length content-type]`,
//! `;keyid="...";created=...`, `sha-512` digest over compact JSON.
//!
//! Every response that passes through `send`, `try_send` or `send_raw` is
//! validated against the Open Payments OpenAPI documents when its request
//! went to a server the client knows (`servers`) and is an Open Payments
//! or GNAP operation; see `crate::spec` for exactly what is checked and
//! what is not. A client made with `SigningClient::new` knows no server
//! (the benchmark uses it that way); the clients a `TestApp` hands out know
//! its server(s).

use opd_httpsig::{Jwk, SigningKey};
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::spec::{Server, Servers};

/// A client identified by a wallet address and an Ed25519 key.
#[derive(Clone)]
pub struct SigningClient {
    pub key: SigningKey,
    pub kid: String,
    /// The client's wallet address URL.
    pub wallet_address: String,
    pub http: reqwest::Client,
    /// The `created` time to sign with; `None` picks a fresh one per
    /// request (see `sign`).
    pub created: Option<u64>,
    sequence: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The server's test clock, when the client should sign with its time
    /// (tests that move the clock forward).
    pub clock: Option<opd_core::ManualClock>,
    /// The opd servers whose responses this client validates.
    pub servers: Servers,
}

impl std::fmt::Debug for SigningClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningClient")
            .field("kid", &self.kid)
            .field("wallet_address", &self.wallet_address)
            .finish()
    }
}

/// A response: status, headers and JSON body (`Null` when empty).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl SigningClient {
    /// A client with a key made from `seed`.
    pub fn new(wallet_address: &str, kid: &str, seed: u8) -> Self {
        Self {
            key: SigningKey::from_bytes(&[seed; 32]),
            kid: kid.to_owned(),
            wallet_address: wallet_address.to_owned(),
            http: crate::tls::client(),
            created: None,
            sequence: Default::default(),
            clock: None,
            servers: Servers::default(),
        }
    }

    /// This client, validating the responses of `server` too.
    #[must_use]
    pub fn knowing(mut self, server: Server) -> Self {
        self.servers.add(server);
        self
    }

    /// This client, validating the responses of every server in `servers`
    /// too.
    #[must_use]
    pub fn knowing_all(mut self, servers: &Servers) -> Self {
        for server in servers.iter() {
            self.servers.add(server.clone());
        }
        self
    }

    /// The public JWK to register for this client.
    pub fn jwk(&self) -> Jwk {
        Jwk::from_signing_key(&self.key, self.kid.clone())
    }

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }

    /// A `created` no other request of this client used recently.
    fn next_created(&self) -> u64 {
        use std::sync::atomic::Ordering;
        let now = match &self.clock {
            Some(c) => {
                use opd_core::Clock;
                u64::try_from(c.now().unix_seconds()).unwrap_or(0)
            }
            None => Self::now(),
        };
        let floor = now.saturating_sub(200);
        let mut last = self.sequence.load(Ordering::Relaxed);
        loop {
            let mut next = (last + 1).max(floor);
            if next > now + 30 {
                next = floor;
            }
            match self
                .sequence
                .compare_exchange(last, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(actual) => last = actual,
            }
        }
    }

    /// The headers a signed request carries, for tests that tamper with them.
    ///
    /// Unlike the Node client, each request of one client gets a distinct
    /// `created` (counting up from 200 s ago, within the freshness window),
    /// so tests that send identical requests in quick succession get two
    /// requests, not one answered twice (opd answers a byte-identical
    /// state-changing request with the first one's response).
    pub fn sign(
        &self,
        method: &Method,
        url: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> HeaderMap {
        let created = self.created.unwrap_or_else(|| self.next_created());
        opd_httpsig::signed_request_headers(method, url, token, body, &self.key, &self.kid, created)
            .expect("sign")
    }

    /// Sends a signed request with the given headers (as `sign` made them,
    /// possibly altered) and body bytes.
    pub async fn send_raw(
        &self,
        method: Method,
        url: &str,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Reply {
        let mut req = self.http.request(method.clone(), url).headers(headers);
        if let Some(b) = body {
            req = req.body(b);
        }
        let resp = req.send().await.expect("request");
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{status}: not JSON: {text:?}"))
        };
        self.servers.check(&method, url, status, &body);
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Like `send`, but a transport failure (the server died) is an error
    /// instead of a panic, and so is a body that is not JSON. A response
    /// that arrived whole is validated like `send`'s: an invalid one panics.
    pub async fn try_send(
        &self,
        method: Method,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Reply, String> {
        let bytes = body.map(|b| serde_json::to_vec(b).expect("json"));
        let headers = self.sign(&method, url, token, bytes.as_deref());
        let mut req = self.http.request(method.clone(), url).headers(headers);
        if let Some(b) = bytes {
            req = req.body(b);
        }
        let resp = req.send().await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await.map_err(|e| e.to_string())?;
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).map_err(|e| e.to_string())?
        };
        self.servers.check(&method, url, status, &body);
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    /// Sends a signed request, with `Authorization: GNAP <token>` when a
    /// token is given and the body as compact JSON.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Reply {
        let bytes = body.map(|b| serde_json::to_vec(b).expect("json"));
        let headers = self.sign(&method, url, token, bytes.as_deref());
        self.send_raw(method, url, headers, bytes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode as AxumStatus;
    use axum::routing::post;
    use serde_json::json;

    /// A fake opd whose quote endpoint answers `status` with `body`.
    async fn fake_server(status: u16, body: Value) -> Server {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().route(
            "/quotes",
            post(move || {
                let body = body.clone();
                async move { (AxumStatus::from_u16(status).unwrap(), axum::Json(body)) }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        // An authorization server URL nothing is sent to in these tests.
        Server::new(&base, "http://127.0.0.1:9/auth")
    }

    /// Whether `client` panics while sending a quote request to `server`.
    async fn quote_panics(client: SigningClient, server: &Server) -> bool {
        let url = format!("{}/quotes", server.base);
        let sent = tokio::spawn(async move {
            client
                .send(Method::POST, &url, Some("token"), Some(&json!({})))
                .await
        })
        .await;
        match sent {
            Ok(_) => false,
            Err(e) => e.is_panic(),
        }
    }

    #[tokio::test]
    async fn an_invalid_response_of_a_known_server_fails_the_request() {
        let server = fake_server(201, json!({ "id": "missing every other field" })).await;
        let client = SigningClient::new("http://127.0.0.1:9/me", "k", 1).knowing(server.clone());
        assert!(
            quote_panics(client, &server).await,
            "a 201 the schema refuses"
        );

        let server = fake_server(409, json!({ "message": "not opd's error shape" })).await;
        let client = SigningClient::new("http://127.0.0.1:9/me", "k", 1).knowing(server.clone());
        assert!(
            quote_panics(client, &server).await,
            "an error of the wrong shape"
        );
    }

    #[tokio::test]
    async fn errors_are_checked_for_shape_only_where_the_spec_is_silent() {
        // 409 is not documented for `create-quote`: the shape is enough.
        let error = json!({ "error": { "code": "conflict", "description": "no" } });
        let server = fake_server(409, error).await;
        let client = SigningClient::new("http://127.0.0.1:9/me", "k", 1).knowing(server.clone());
        assert!(!quote_panics(client, &server).await);
    }

    #[tokio::test]
    async fn only_the_known_servers_are_validated() {
        let server = fake_server(201, json!({ "id": "x" })).await;
        let stranger = SigningClient::new("http://127.0.0.1:9/me", "k", 1);
        assert!(
            !quote_panics(stranger, &server).await,
            "a server the client does not know is not validated"
        );
    }
}
