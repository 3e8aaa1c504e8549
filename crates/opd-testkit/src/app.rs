//! `TestApp`: the real opd server (all three listeners) on port 0 with a
//! fresh database, a manual clock and a seeded random source, plus a small
//! JSON client.
//!
//! The clients a `TestApp` hands out (`signing_client`, `client_for`, the
//! default one behind `get`/`post`/`signed`) and its unsigned `send` know
//! the app's server, so every Open Payments and GNAP response they get is
//! validated against the spec (see `crate::spec`). A test running a second
//! server calls `know` on each app before making its clients, so that the
//! responses of both are validated.

use std::sync::Arc;

use opd::app::Running;
use opd::config::Settings;
use opd_core::{ManualClock, SeededRandom, Timestamp};
use reqwest::{Method, StatusCode};
use secrecy::ExposeSecret;

use crate::client::SigningClient;
use crate::spec::{Server, Servers};
use serde_json::Value;

/// The identity-provider secret every `TestApp` is configured with.
pub const IDP_SECRET: &str = "test-idp-secret-0123456789";

/// A running opd for one test.
pub struct TestApp {
    pub running: Option<Running>,
    /// The public URL (`http://127.0.0.1:PORT`).
    pub base: String,
    /// The admin API base URL.
    pub admin: String,
    /// The ILP-over-HTTP endpoint (any path is accepted).
    pub ilp: String,
    pub admin_token: String,
    pub clock: ManualClock,
    pub http: reqwest::Client,
    /// The authorization server's URL (`http://127.0.0.1:PORT`, or with
    /// its path: `http://127.0.0.1:PORT/gnap`), without a trailing slash.
    pub auth: String,
    /// A client (wallet address `testclient` on this server) holding a token
    /// for incoming payments (create, read-all, list, complete) and quotes
    /// (create, read-all); `get` and `post` sign with it.
    pub client: Option<(SigningClient, String)>,
    /// The servers whose responses this app's clients validate: this one,
    /// plus those added with `know`.
    pub servers: Servers,
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
        let mut app = Self::start(db, adjust).await;
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

    /// Another node of a deployment whose database `adjust` names (the
    /// first node made the test client there): `client` is `None`.
    pub async fn spawn_node(db: Db, adjust: impl FnOnce(&mut Settings)) -> Self {
        Self::start(db, adjust).await
    }

    async fn start(db: Db, adjust: impl FnOnce(&mut Settings)) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut settings = Settings::for_data_dir(dir.path());
        let any_port = "127.0.0.1:0".parse().expect("address");
        settings.serve.listen = any_port;
        settings.serve.auth_listen = any_port;
        settings.common.admin_listen = any_port;
        settings.serve.ilp_listen = any_port;
        // The tests' other servers (client key sets, peers, webhook
        // receivers) listen on loopback; the SSRF tests clear this.
        settings.serve.outbound_allow = vec!["127.0.0.1".into(), "::1".into()];
        if db == Db::Postgres {
            settings.common.database_url = Some(crate::pg::fresh_schema_url().await.into());
            settings.serve.migrate = true;
        }
        // Tests drive the workers themselves (`run_workers`), so nothing
        // happens behind their back.
        settings.serve.workers = false;
        settings.serve.idp_secret = Some(IDP_SECRET.into());
        adjust(&mut settings);
        let clock = ManualClock::new(Timestamp::now_utc());
        let running = opd::app::start(
            settings,
            Arc::new(clock.clone()),
            Arc::new(SeededRandom::new(42)),
        )
        .await
        .expect("opd starts");
        let mut servers = Servers::default();
        servers.add(Server::new(&running.public_url, &running.auth_public_url));
        // With `--tls-cert`, every listener speaks TLS.
        let scheme = if running.public_url.starts_with("https://") {
            "https"
        } else {
            "http"
        };
        Self {
            base: running.public_url.clone(),
            admin: running.admin_url.clone(),
            ilp: format!("{scheme}://{}/ilp", running.ilp_addr),
            admin_token: running.admin_token.expose_secret().to_owned(),
            auth: running.auth_public_url.clone(),
            running: Some(running),
            clock,
            http: crate::tls::client(),
            client: None,
            servers,
            _dir: dir,
        }
    }

    /// [`TestApp::spawn_with`], with the authorization server's public URL
    /// under `path` (`http://127.0.0.1:PORT/gnap` for `/gnap`), as behind
    /// a proxy that forwards that path unchanged. Its port is picked
    /// before the server binds it (see [`crate::free_port`]).
    pub async fn spawn_with_auth_path(
        db: Db,
        path: &str,
        adjust: impl FnOnce(&mut Settings),
    ) -> Self {
        let port = crate::free_port();
        let url = format!("http://127.0.0.1:{port}{path}");
        Self::spawn_with(db, move |s| {
            s.serve.auth_listen = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            s.serve.auth_public_url = Some(url);
            adjust(s);
        })
        .await
    }

    /// This server as its clients see it.
    pub fn server(&self) -> Server {
        Server::new(&self.base, &self.auth)
    }

    /// Makes this app's clients (the default one, and those handed out
    /// from now on) validate the responses of `other`'s server too.
    pub fn know(&mut self, other: &TestApp) {
        self.servers.add(other.server());
        if let Some((client, _)) = &mut self.client {
            client.servers.add(other.server());
        }
    }

    /// A client of wallet address `wallet_address` signing with a key made
    /// from `seed` under `kid` (nothing is registered: for impostors and
    /// clients of other servers), validating the responses of the servers
    /// this app knows. It signs with the real time, not the app's clock.
    pub fn client_for(&self, wallet_address: &str, kid: &str, seed: u8) -> SigningClient {
        SigningClient::new(wallet_address, kid, seed).knowing_all(&self.servers)
    }

    /// Creates a wallet address at `path` (USD, scale 2) with a key made
    /// from `seed`, and returns a client that signs with that key.
    pub async fn signing_client(&self, path: &str, seed: u8) -> SigningClient {
        let url = self.create_wallet(path, "USD", 2).await;
        let mut client = self.client_for(&url, &format!("{path}-key"), seed);
        client.clock = Some(self.clock.clone());
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

    /// The services of the running server (to drive workers, read the clock).
    pub fn services(&self) -> &opd_service::Services {
        &self.running.as_ref().expect("running").services
    }

    /// The services, shared (for workers running in other tasks).
    pub fn services_arc(&self) -> std::sync::Arc<opd_service::Services> {
        self.running.as_ref().expect("running").services.clone()
    }

    /// Runs the payment worker until nothing is due; returns its steps.
    pub async fn run_workers(&self) -> Vec<opd_service::payments::outgoing::lifecycle::Step> {
        let mut steps = Vec::new();
        for _ in 0..10_000 {
            match opd_service::jobs::send_payment(self.services())
                .await
                .expect("worker step")
            {
                opd_service::payments::outgoing::lifecycle::Step::Idle => break,
                step => steps.push(step),
            }
        }
        steps
    }

    /// Runs every background job (`opd_service::jobs`: payments,
    /// housekeeping, retention, webhooks) until each is idle, as `opd
    /// serve` would before anything new arrives; returns the payment steps.
    pub async fn run_jobs(&self) -> Vec<opd_service::payments::outgoing::lifecycle::Step> {
        opd_service::jobs::drain(self.services())
            .await
            .expect("background jobs")
    }

    /// Deposits into a wallet address through the admin API.
    pub async fn deposit(&self, path: &str, amount: u64) {
        let key = format!("deposit-{path}-{amount}-{}", uuid::Uuid::new_v4());
        let body = serde_json::json!({ "amount": amount.to_string(), "idempotencyKey": key });
        let (status, v) = self
            .admin(
                Method::POST,
                &format!("/wallet-addresses/{path}/deposits"),
                Some(&body),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{v}");
    }

    /// An outgoing-payment token for `wallet` with `limits` (JSON, may be
    /// `null`), approved through the identity-provider API.
    pub async fn outgoing_token(
        &self,
        client: &SigningClient,
        wallet: &str,
        limits: Value,
    ) -> String {
        outgoing_token_at(&self.auth, client, wallet, limits).await
    }

    /// Requests a non-interactive grant for `access` and returns the token.
    pub async fn grant_token(&self, client: &SigningClient, access: Value) -> String {
        grant_token_at(&self.auth, client, access).await
    }

    /// The URL of a path on the Open Payments listener.
    pub fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base, path.trim_start_matches('/'))
    }

    /// Sends an unsigned request and returns the status, the headers and
    /// the body parsed as JSON (every opd response is JSON; a non-JSON body
    /// fails the test). The response is validated against the spec like a
    /// signing client's (see `crate::spec`).
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
    ) -> (StatusCode, reqwest::header::HeaderMap, Value) {
        let mut req = self.http.request(method.clone(), url);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.expect("request");
        let (status, headers, value) = into_parts(resp).await;
        self.servers.check(&method, url, status, &value);
        (status, headers, value)
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
        admin_at(&self.admin, &self.admin_token, method, path, body).await
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

/// An outgoing-payment token for `wallet` with `limits` (JSON, may be
/// `null`), approved through the identity-provider API and continued
/// with the finish redirect's `interact_ref`.
pub async fn outgoing_token_at(
    auth: &str,
    client: &SigningClient,
    wallet: &str,
    limits: Value,
) -> String {
    let mut item = serde_json::json!({ "type": "outgoing-payment", "actions": ["create", "read", "list"], "identifier": wallet });
    if !limits.is_null() {
        item["limits"] = limits;
    }
    let body = serde_json::json!({
        "access_token": { "access": [item] },
        "client": client.wallet_address,
        "interact": { "start": ["redirect"], "finish": { "method": "redirect", "uri": "http://localhost/finish", "nonce": "n" } }
    });
    let pending = client
        .send(Method::POST, &format!("{}/", auth), None, Some(&body))
        .await;
    assert_eq!(pending.status, StatusCode::OK, "{}", pending.body);
    let redirect = pending.body["interact"]["redirect"]
        .as_str()
        .expect("redirect");
    let mut parts = redirect.rsplit('/');
    let nonce = parts.next().expect("nonce");
    let id = parts.next().expect("id");
    let idp = format!("{}/idp/interactions/{id}/{nonce}/accept", auth);
    let accepted = crate::tls::client()
        .post(idp)
        .header("x-idp-secret", IDP_SECRET)
        .send()
        .await
        .expect("idp");
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let browser = crate::tls::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let finish = browser
        .get(format!("{}/interact/{id}/{nonce}/finish", auth))
        .send()
        .await
        .expect("finish");
    let location = finish.headers()[reqwest::header::LOCATION]
        .to_str()
        .expect("location")
        .to_owned();
    let interact_ref = url::Url::parse(&location)
        .expect("url")
        .query_pairs()
        .find(|(k, _)| k == "interact_ref")
        .map(|(_, v)| v.into_owned())
        .expect("interact_ref");
    let granted = client
        .send(
            Method::POST,
            pending.body["continue"]["uri"].as_str().expect("uri"),
            Some(
                pending.body["continue"]["access_token"]["value"]
                    .as_str()
                    .expect("token"),
            ),
            Some(&serde_json::json!({ "interact_ref": interact_ref })),
        )
        .await;
    assert_eq!(granted.status, StatusCode::OK, "{}", granted.body);
    granted.body["access_token"]["value"]
        .as_str()
        .expect("token")
        .to_owned()
}

/// Requests a non-interactive grant for `access` and returns the token.
pub async fn grant_token_at(auth: &str, client: &SigningClient, access: Value) -> String {
    let body = serde_json::json!({ "access_token": { "access": access }, "client": client.wallet_address });
    let reply = client
        .send(Method::POST, &format!("{}/", auth), None, Some(&body))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["access_token"]["value"]
        .as_str()
        .expect("token")
        .to_owned()
}

/// A request to the admin API at `admin` (its base URL) with `token`:
/// status and JSON body (`Null` when empty).
pub async fn admin_at(
    admin: &str,
    token: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> (StatusCode, Value) {
    let mut req = crate::tls::client()
        .request(method, format!("{admin}{path}"))
        .bearer_auth(token);
    if let Some(b) = body {
        req = req.json(b);
    }
    let (s, _, v) = into_parts(req.send().await.expect("admin request")).await;
    (s, v)
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

/// Plays the wallet owner deciding an interactive grant whose consent URL
/// (`{auth}/interact/{id}/{nonce}`) a client printed: the decision goes
/// through the identity-provider API, then the browser follows the finish
/// redirect to the client's finish URI, whose answer is returned.
pub async fn decide_interaction(redirect: &str, approve: bool) -> reqwest::Response {
    let (auth, rest) = redirect.split_once("/interact/").expect("a consent URL");
    let (id, nonce) = rest.split_once('/').expect("id/nonce");
    let decision = if approve { "accept" } else { "reject" };
    let decided = crate::tls::client()
        .post(format!("{auth}/idp/interactions/{id}/{nonce}/{decision}"))
        .header("x-idp-secret", IDP_SECRET)
        .send()
        .await
        .expect("idp");
    assert_eq!(decided.status(), StatusCode::ACCEPTED);
    let browser = crate::tls::client();
    browser
        .get(format!("{auth}/interact/{id}/{nonce}/finish"))
        .send()
        .await
        .expect("finish redirect")
}
