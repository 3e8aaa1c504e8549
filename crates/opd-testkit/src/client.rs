//! A test client that signs requests exactly like the official Node client
//! (`@interledger/open-payments`): label `sig1`, `@method @target-uri
//! [authorization] [content-digest content-length content-type]`,
//! `;keyid="...";created=...`, `sha-512` digest over compact JSON.

use opd_httpsig::{sign_request, Jwk, SigningKey};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::Value;

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
            http: reqwest::Client::new(),
            created: None,
            sequence: Default::default(),
            clock: None,
        }
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
        let mut headers = HeaderMap::new();
        if let Some(t) = token {
            headers.insert(
                reqwest::header::AUTHORIZATION,
                HeaderValue::from_str(&format!("GNAP {t}")).expect("token header"),
            );
        }
        let created = self.created.unwrap_or_else(|| self.next_created());
        let signed =
            sign_request(method, url, &headers, body, &self.key, &self.kid, created).expect("sign");
        for (name, value) in signed.pairs() {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_str(value).expect("header value"),
            );
        }
        headers
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
        let mut req = self.http.request(method, url).headers(headers);
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
        Reply {
            status,
            headers,
            body,
        }
    }

    /// Like `send`, but a transport failure (the server died) is an error
    /// instead of a panic, and so is a body that is not JSON.
    pub async fn try_send(
        &self,
        method: Method,
        url: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Reply, String> {
        let bytes = body.map(|b| serde_json::to_vec(b).expect("json"));
        let headers = self.sign(&method, url, token, bytes.as_deref());
        let mut req = self.http.request(method, url).headers(headers);
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
