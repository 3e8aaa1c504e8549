//! Crash safety: the real `opd serve` process is killed with SIGKILL at
//! random moments while clients create payments and its workers send them
//! and deliver webhooks, then restarted, again and again. At the end every
//! payment is completed or failed, each exactly once; no incoming payment
//! is credited twice; every completed payment's webhook arrived; and
//! `opd check` finds the ledger balanced. On SQLite and on PostgreSQL.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly by design

use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opd_testkit::app::{grant_token_at, outgoing_token_at, IDP_SECRET};
use opd_testkit::client::SigningClient;
use rand::Rng as _;
use rand::SeedableRng;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const ADMIN_TOKEN: &str = "crash-test-admin-token-0123456789";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server {
    child: Option<Child>,
    args: Vec<String>,
    dir: tempfile::TempDir,
    base: String,
    auth: String,
    admin: String,
    database_url: String,
}

impl Server {
    fn new(database_url: String, webhook: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (op, auth, admin) = (free_port(), free_port(), free_port());
        let base = format!("http://127.0.0.1:{op}");
        let auth_url = format!("http://127.0.0.1:{auth}");
        let args = vec![
            "serve".into(),
            format!("--listen=127.0.0.1:{op}"),
            format!("--auth-listen=127.0.0.1:{auth}"),
            format!("--admin-listen=127.0.0.1:{admin}"),
            format!("--public-url={base}"),
            format!("--auth-public-url={auth_url}"),
            format!("--admin-token={ADMIN_TOKEN}"),
            format!("--idp-secret={IDP_SECRET}"),
            format!("--data-dir={}", dir.path().display()),
            format!("--database-url={database_url}"),
            "--migrate".into(),
            format!("--webhook-url={webhook}"),
            "--webhook-secret=crash-secret".into(),
        ];
        Self {
            child: None,
            args,
            dir,
            base,
            auth: auth_url,
            admin: format!("http://127.0.0.1:{admin}"),
            database_url,
        }
    }

    async fn start(&mut self) {
        let child = Command::new(env!("CARGO_BIN_EXE_opd"))
            .args(&self.args)
            .current_dir(self.dir.path())
            .env_remove("OPD_CONFIG")
            .env("OPD_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start opd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        let http = reqwest::Client::new();
        loop {
            if let Ok(r) = http.get(format!("{}/healthz", self.base)).send().await {
                if r.status() == StatusCode::OK {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "opd did not become ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGKILL: no shutdown code runs.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().expect("kill");
            c.wait().expect("reap");
        }
    }

    async fn admin(&self, method: Method, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
        let mut req = reqwest::Client::new()
            .request(method, format!("{}{path}", self.admin))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(b) = body {
            req = req.json(b);
        }
        let r = req.send().await.unwrap();
        let status = r.status();
        (status, r.json().await.unwrap_or(Value::Null))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Everything one payment attempt needs.
struct Client {
    payer: SigningClient,
    ip_token: String,
    pay_token: String,
    alice: String,
    bob: String,
    base: String,
}

impl Client {
    /// A request that yields its body on a 2xx, and `None` when it fails,
    /// typically because the server was killed under it.
    async fn ok(&self, method: Method, path: &str, token: &str, body: Value) -> Option<Value> {
        let url = format!("{}/{path}", self.base);
        match self
            .payer
            .try_send(method, &url, Some(token), Some(&body))
            .await
        {
            Ok(r) if r.status.is_success() => Some(r.body),
            _ => None,
        }
    }

    /// Incoming payment, quote, outgoing payment; any step may fail.
    async fn one_payment(&self, n: u64) -> Option<String> {
        let amount =
            json!({ "value": (100 + n % 50).to_string(), "assetCode": "USD", "assetScale": 2 });
        let ip = self
            .ok(
                Method::POST,
                "incoming-payments",
                &self.ip_token,
                json!({ "walletAddress": self.bob, "incomingAmount": amount }),
            )
            .await?;
        let q = self
            .ok(
                Method::POST,
                "quotes",
                &self.ip_token,
                json!({ "walletAddress": self.alice, "receiver": ip["id"], "method": "ilp" }),
            )
            .await?;
        let p = self
            .ok(
                Method::POST,
                "outgoing-payments",
                &self.pay_token,
                json!({ "walletAddress": self.alice, "quoteId": q["id"] }),
            )
            .await?;
        p["id"].as_str().map(str::to_owned)
    }

    /// Every page of a list.
    async fn all(&self, collection: &str, token: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!(
                "{collection}?wallet-address={}&first=100",
                urlencode(if collection == "incoming-payments" {
                    &self.bob
                } else {
                    &self.alice
                })
            );
            if let Some(c) = &cursor {
                path.push_str(&format!("&cursor={c}"));
            }
            let url = format!("{}/{path}", self.base);
            let r = self
                .payer
                .try_send(Method::GET, &url, Some(token), None)
                .await
                .expect("list");
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            out.extend(r.body["result"].as_array().unwrap().iter().cloned());
            if r.body["pagination"]["hasNextPage"] != true {
                return out;
            }
            cursor = r.body["pagination"]["endCursor"]
                .as_str()
                .map(str::to_owned);
        }
    }
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A webhook receiver recording the events it got.
async fn hook_receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let store = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let store = store.clone();
            async move {
                if let Ok(v) = serde_json::from_str::<Value>(&body) {
                    store.lock().unwrap().push(v);
                }
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_moments_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("crash.sqlite").display()
    );
    crash_test(url, 11).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_moments_postgres() {
    crash_test(opd_testkit::pg::fresh_schema_url().await, 12).await;
}

async fn crash_test(database_url: String, seed: u64) {
    let (hook, events) = hook_receiver().await;
    let mut server = Server::new(database_url, &hook);
    server.start().await;

    // Setup (before any kill).
    let mut wallet = |path: &'static str| {
        let s = &server;
        async move {
            let (status, v) = s
                .admin(
                    Method::POST,
                    "/wallet-addresses",
                    Some(&json!({ "path": path, "assetCode": "USD", "assetScale": 2 })),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{v}");
            v["url"].as_str().unwrap().to_owned()
        }
    };
    let alice = wallet("alice").await;
    let bob = wallet("bob").await;
    let payer_url = wallet("payer").await;
    let _ = &mut wallet;
    let payer = SigningClient::new(&payer_url, "payer-key", 51);
    let (s, v) = server
        .admin(
            Method::POST,
            "/wallet-addresses/payer/keys",
            Some(&json!({ "jwk": serde_json::to_value(payer.jwk()).unwrap() })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let (s, v) = server
        .admin(
            Method::POST,
            "/wallet-addresses/alice/deposits",
            Some(&json!({ "amount": "100000000", "idempotencyKey": "seed" })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let ip_token = grant_token_at(
        &server.auth,
        &payer,
        json!([
            { "type": "incoming-payment", "actions": ["create", "read", "list"] },
            { "type": "quote", "actions": ["create", "read"] }
        ]),
    )
    .await;
    let pay_token = outgoing_token_at(&server.auth, &payer, &alice, Value::Null).await;
    let client = Arc::new(Client {
        payer,
        ip_token,
        pay_token,
        alice,
        bob,
        base: server.base.clone(),
    });

    // Rounds: load, kill at a random moment, restart.
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut n = 0u64;
    for _round in 0..6 {
        let load = {
            let client = client.clone();
            let first = n;
            tokio::spawn(async move {
                // Until the server dies under it.
                for i in first..first + 100_000 {
                    if client.one_payment(i).await.is_none() {
                        // The server is down: wait for the next round.
                        return;
                    }
                }
            })
        };
        n += 100_000;
        tokio::time::sleep(Duration::from_millis(rng.gen_range(20..400))).await;
        server.kill();
        let _ = load.await;
        server.start().await;
    }

    // Let the restarted server finish: no payment left sending, every
    // completion's webhook delivered.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (payments, incoming) = loop {
        let payments = client.all("outgoing-payments", &client.pay_token).await;
        let pending = payments
            .iter()
            .filter(|p| p["failed"] == false && p["sentAmount"]["value"] == "0")
            .count();
        let completed: HashSet<String> = payments
            .iter()
            .filter(|p| p["failed"] == false && p["sentAmount"]["value"] != "0")
            .map(|p| p["id"].as_str().unwrap().to_owned())
            .collect();
        let notified: HashSet<String> = events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "outgoing_payment.completed")
            .map(|e| e["data"]["id"].as_str().unwrap().to_owned())
            .collect();
        if pending == 0 && completed.is_subset(&notified) {
            break (
                payments,
                client.all("incoming-payments", &client.ip_token).await,
            );
        }
        assert!(
            Instant::now() < deadline,
            "{pending} payments still sending, {} webhooks missing",
            completed.difference(&notified).count()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        payments.len() >= 12,
        "the load created payments ({})",
        payments.len()
    );
    let failed = payments.iter().filter(|p| p["failed"] == true).count();
    eprintln!(
        "crash test: {} payments ({failed} failed), {} incoming payments, {} webhook deliveries",
        payments.len(),
        incoming.len(),
        events.lock().unwrap().len()
    );

    // Each incoming payment received exactly what completed payments to it
    // delivered: nothing twice, nothing lost.
    let mut delivered: HashMap<String, u64> = HashMap::new();
    for p in &payments {
        if p["failed"] == false {
            assert_eq!(
                p["sentAmount"], p["debitAmount"],
                "no fee: everything debited was sent"
            );
            *delivered
                .entry(p["receiver"].as_str().unwrap().to_owned())
                .or_default() += p["receiveAmount"]["value"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap();
        }
    }
    for ip in &incoming {
        let received: u64 = ip["receivedAmount"]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let expected = delivered
            .get(ip["id"].as_str().unwrap())
            .copied()
            .unwrap_or(0);
        assert_eq!(received, expected, "incoming payment {}", ip["id"]);
    }
    server.kill();

    // The ledger adds up, checked by the operator's command.
    let out = Command::new(env!("CARGO_BIN_EXE_opd"))
        .args(["check", &format!("--database-url={}", server.database_url)])
        .current_dir(server.dir.path())
        .env_remove("OPD_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ledger balanced"));
}
