//! `TestApp`: the real opd server (all three listeners) on port 0 with a
//! fresh database, a manual clock and a seeded random source, plus a small
//! JSON client.

use std::sync::Arc;

use opd::app::Running;
use opd::config::Settings;
use opd_core::{ManualClock, SeededRandom, Timestamp};
use reqwest::{Method, StatusCode};

use crate::client::SigningClient;
use serde_json::Value;

/// A running opd for one test.
pub struct TestApp {
    pub running: Option<Running>,
    /// The public URL (`http://127.0.0.1:PORT`).
    pub base: String,
    /// The admin API base URL.
    pub admin: String,
    pub admin_token: String,
    pub clock: ManualClock,
    pub http: reqwest::Client,
    /// The authorization server's URL.
    pub auth: String,
    /// A client (wallet address `testclient` on this server) holding a token
    /// for incoming payments (create, read-all, list, complete) and quotes
    /// (create, read-all); `get` and `post` sign with it.
    pub client: Option<(SigningClient, String)>,
    _dir: tempfile::TempDir,
}

/// Which database a `TestApp` runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Sqlite,
    Postgres,
}

impl TestApp {
    /// opd on a fresh SQLite database.
    pub async fn spawn() -> Self {
        Self::spawn_with(Db::Sqlite, |_| {}).await
    }

    /// opd on a fresh database of the given kind, with settings adjusted.
    pub async fn spawn_with(db: Db, adjust: impl FnOnce(&mut Settings)) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut settings = Settings::for_data_dir(dir.path());
        let any_port = "127.0.0.1:0".parse().expect("address");
        settings.listen = any_port;
        settings.auth_listen = any_port;
        settings.admin_listen = any_port;
        if db == Db::Postgres {
            settings.database_url = crate::pg::fresh_schema_url().await;
            settings.database_is_default = false;
            settings.migrate = true;
        }
        adjust(&mut settings);
        let clock = ManualClock::new(Timestamp::now_utc());
        let running = opd::app::start(
            settings,
            Arc::new(clock.clone()),
            Arc::new(SeededRandom::new(42)),
        )
        .await
        .expect("opd starts");
        let mut app = Self {
            base: running.public_url.clone(),
            admin: format!("http://{}", running.admin_addr),
            admin_token: running.admin_token.clone(),
            auth: running.auth_public_url.clone(),
            running: Some(running),
            clock,
            http: reqwest::Client::new(),
            client: None,
            _dir: dir,
        };
        let client = app.signing_client("testclient", 7).await;
        let token = app
            .grant_token(
                &client,
                serde_json::json!([
                    { "type": "incoming-payment", "actions": ["create", "read-all", "list", "complete"] },
                    { "type": "quote", "actions": ["create", "read-all"] }
                ]),
            )
            .await;
        app.client = Some((client, token));
        app
    }

    /// Creates a wallet address at `path` (USD, scale 2) with a key made
    /// from `seed`, and returns a client that signs with that key.
    pub async fn signing_client(&self, path: &str, seed: u8) -> SigningClient {
        let url = self.create_wallet(path, "USD", 2).await;
        let client = SigningClient::new(&url, &format!("{path}-key"), seed);
        let jwk = serde_json::to_value(client.jwk()).expect("jwk");
        let (status, v) = self
            .admin(
                Method::POST,
                &format!("/wallet-addresses/{path}/keys"),
                Some(&serde_json::json!({ "jwk": jwk })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        client
    }

    /// Requests a non-interactive grant for `access` and returns the token.
    pub async fn grant_token(&self, client: &SigningClient, access: Value) -> String {
        let body = serde_json::json!({ "access_token": { "access": access }, "client": client.wallet_address });
        let reply = client
            .send(Method::POST, &format!("{}/", self.auth), None, Some(&body))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body["access_token"]["value"]
            .as_str()
            .expect("token")
            .to_owned()
    }

    /// The URL of a path on the Open Payments listener.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }

    /// Sends a request and returns the status, the headers and the body
    /// parsed as JSON (every opd response is JSON; a non-JSON body fails
    /// the test).
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut req = self.http.request(method, url);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.expect("request");
        into_parts(resp).await
    }

    /// POSTs raw bytes (for malformed bodies), signed by the default client.
    pub async fn post_raw(&self, url: &str, body: &'static str) -> (StatusCode, Value) {
        let (client, token) = self.client.as_ref().expect("default client");
        let headers = client.sign(&Method::POST, url, Some(token), Some(body.as_bytes()));
        let reply = client
            .send_raw(Method::POST, url, headers, Some(body.as_bytes().to_vec()))
            .await;
        (reply.status, reply.body)
    }

    /// A signed GET with the default client's token.
    pub async fn get(&self, url: &str) -> (StatusCode, Value) {
        let (s, _, v) = self.signed(Method::GET, url, None).await;
        (s, v)
    }

    /// A GET without authorization (public resources).
    pub async fn get_public(&self, url: &str) -> (StatusCode, Value) {
        let (s, _, v) = self.send(Method::GET, url, None).await;
        (s, v)
    }

    /// A signed POST with the default client's token.
    pub async fn post(&self, url: &str, body: &Value) -> (StatusCode, Value) {
        let (s, _, v) = self.signed(Method::POST, url, Some(body)).await;
        (s, v)
    }

    /// A request signed by the default client with its token.
    pub async fn signed(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let (client, token) = self.client.as_ref().expect("default client");
        let reply = client.send(method, url, Some(token), body).await;
        (reply.status, reply.headers, reply.body)
    }

    /// Calls the admin API with the admin token.
    pub async fn admin(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.admin))
            .bearer_auth(&self.admin_token);
        if let Some(b) = body {
            req = req.json(b);
        }
        let (s, _, v) = into_parts(req.send().await.expect("admin request")).await;
        (s, v)
    }

    /// Creates a wallet address through the admin API; returns its URL.
    pub async fn create_wallet(&self, path: &str, asset_code: &str, asset_scale: u8) -> String {
        let body =
            serde_json::json!({ "path": path, "assetCode": asset_code, "assetScale": asset_scale });
        let (status, v) = self
            .admin(Method::POST, "/wallet-addresses", Some(&body))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
        v["url"].as_str().expect("url").to_owned()
    }

    /// Stops the server.
    pub async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await.expect("clean shutdown");
        }
    }
}

async fn into_parts(resp: reqwest::Response) -> (StatusCode, reqwest::header::HeaderMap, Value) {
    let status = resp.status();
    let headers = resp.headers().clone();
    let text = resp.text().await.expect("body");
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{status}: body is not JSON: {text:?}"))
    };
    if !text.is_empty() && !status.is_success() {
        assert!(
            value["error"]["code"].is_string() && value["error"]["description"].is_string(),
            "error bodies are {{\"error\":{{code,description}}}}: {text}"
        );
    }
    (status, headers, value)
}
