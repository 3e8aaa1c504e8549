//! A recording forward HTTP proxy, for clients the tests do not write: the
//! crates.io Rust SDK and `opd client` (in process and as a command) send
//! their requests through it, and it records every answer, so that the
//! responses those clients received are validated against the spec like
//! the test clients' (see `crate::spec`), which their typed results alone
//! could not show.
//!
//! The proxy passes each request on unchanged (the signature covers it) to
//! the absolute URL a proxied request carries, and hands the answer back
//! unchanged. `ValidatingProxy::validate` then checks every recorded
//! exchange that is an operation of a known server, and that the traffic
//! did go through the proxy (the operations seen include those expected).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::spec::Servers;

/// One request a client made through the proxy and the answer it got.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub method: Method,
    pub url: String,
    pub status: StatusCode,
    /// The body as JSON (`Null` when empty); `None` when it was not JSON
    /// (a consent page, say), which fails validation if the request was an
    /// Open Payments operation.
    pub body: Option<Value>,
}

/// A forward proxy on a loopback port, recording what passes through.
pub struct ValidatingProxy {
    /// The proxy's URL, for `reqwest::Proxy::http` or `HTTP_PROXY`.
    pub url: String,
    log: Arc<Mutex<Vec<Exchange>>>,
}

impl ValidatingProxy {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let log: Arc<Mutex<Vec<Exchange>>> = Arc::default();
        let upstream = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        let record = log.clone();
        // A proxied request carries the absolute URL as its target, so one
        // fallback route sees every request.
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let (upstream, record) = (upstream.clone(), record.clone());
            async move { forward(&upstream, &record, req).await }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.expect("proxy serves") });
        Self { url, log }
    }

    /// A reqwest client that goes through this proxy.
    pub fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .proxy(reqwest::Proxy::http(&self.url).expect("proxy URL"))
            .build()
            .expect("client")
    }

    /// Everything recorded so far.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().expect("log").clone()
    }

    /// Validates every recorded response to an operation of `servers`
    /// against the spec, and checks that the traffic did go through the
    /// proxy: the operations seen include `expected` (operation ids).
    ///
    /// # Panics
    ///
    /// When a response is not valid, or an expected operation was not seen.
    #[track_caller]
    pub fn validate(&self, servers: &Servers, expected: &[&str]) {
        let mut seen = BTreeSet::new();
        for e in self.exchanges() {
            let Some((_, _, operation)) = servers.operation_of(&e.method, &e.url) else {
                continue;
            };
            let Some(body) = &e.body else {
                panic!("{} {}: {}: the body is not JSON", e.method, e.url, e.status);
            };
            servers.check(&e.method, &e.url, e.status, body);
            seen.insert(operation);
        }
        let missing: Vec<_> = expected.iter().filter(|op| !seen.contains(*op)).collect();
        assert!(
            missing.is_empty(),
            "no {missing:?} request went through the proxy; saw {seen:?}"
        );
    }
}

async fn forward(
    upstream: &reqwest::Client,
    record: &Mutex<Vec<Exchange>>,
    req: axum::extract::Request,
) -> axum::response::Response {
    let (parts, body) = req.into_parts();
    let url = parts.uri.to_string();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("request body");
    let mut headers = parts.headers.clone();
    // Hop-by-hop headers; reqwest sets `host` and `content-length` again
    // from the URL and body (the same values the client signed).
    for name in [
        "host",
        "connection",
        "proxy-connection",
        "keep-alive",
        "content-length",
        "transfer-encoding",
    ] {
        headers.remove(name);
    }
    let mut out = upstream
        .request(parts.method.clone(), &url)
        .headers(headers);
    if !bytes.is_empty() {
        out = out.body(bytes.to_vec());
    }
    let resp = out.send().await.expect("the upstream answers");
    let status = resp.status();
    let mut headers = resp.headers().clone();
    headers.remove("transfer-encoding");
    headers.remove("connection");
    headers.remove("content-length");
    let text = resp.bytes().await.expect("upstream body");
    let body = if text.is_empty() {
        Some(Value::Null)
    } else {
        serde_json::from_slice(&text).ok()
    };
    record.lock().expect("log").push(Exchange {
        method: parts.method,
        url,
        status,
        body,
    });
    let mut answer = axum::response::Response::new(axum::body::Body::from(text));
    *answer.status_mut() = status;
    *answer.headers_mut() = headers;
    answer
}
