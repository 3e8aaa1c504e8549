//! `opd backup` and `opd restore` as an operator uses them: a backup taken
//! from a real `opd serve` on its embedded SQLite database while payments
//! are being created and sent, restored into a fresh data directory, where
//! `opd check` balances, every payment acknowledged before the backup
//! began is there, and a server started on it finishes them, with the
//! money where it belongs to the cent. Restores that would overwrite a
//! running server's data, or a database, are refused.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opd_testkit::app::{grant_token_at, outgoing_token_at, IDP_SECRET};
use opd_testkit::client::SigningClient;
use opd_testkit::spec::Server;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const ADMIN_TOKEN: &str = "backup-test-admin-token-0123456789";
const SECRETS_KEY: &str = "5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7";
const DEPOSIT: u64 = 10_000_000;

/// One `opd serve` on the SQLite database of `data_dir`, on fixed ports so
/// that a server started on the restored data serves the same URLs.
struct Opd {
    child: Child,
}

struct Ports {
    op: u16,
    auth: u16,
    admin: u16,
}

impl Ports {
    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.op)
    }
    fn auth(&self) -> String {
        format!("http://127.0.0.1:{}", self.auth)
    }
    fn admin(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin)
    }
}

impl Opd {
    /// Starts a server and waits until it answers. A port held a moment
    /// longer by the previous server makes the start fail: it is retried,
    /// a bounded number of times.
    async fn start(ports: &Ports, data_dir: &Path) -> Self {
        for attempt in 1..=20 {
            let mut child = opd(&[
                "serve".to_owned(),
                format!("--listen=127.0.0.1:{}", ports.op),
                format!("--auth-listen=127.0.0.1:{}", ports.auth),
                format!("--admin-listen=127.0.0.1:{}", ports.admin),
                format!("--ilp-listen=127.0.0.1:{}", opd_testkit::free_port()),
                format!("--admin-token={ADMIN_TOKEN}"),
                format!("--idp-secret={IDP_SECRET}"),
                format!("--data-dir={}", data_dir.display()),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start opd");
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if reqwest::get(format!("{}/healthz", ports.base()))
                    .await
                    .is_ok_and(|r| r.status() == StatusCode::OK)
                {
                    return Self { child };
                }
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                assert!(Instant::now() < deadline, "opd did not become ready");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(attempt < 20, "opd exited at start {attempt} times");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        unreachable!()
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Opd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `opd` binary with `args`, without the developer's configuration.
fn opd(args: &[String]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_opd"));
    command
        .args(args)
        .env_remove("OPD_CONFIG")
        .env_remove("OPD_DATABASE_URL")
        .env("OPD_SECRETS_KEY", SECRETS_KEY)
        .env("OPD_LOG", "warn");
    command
}

/// Runs an `opd` command to its end, off the async runtime's threads.
async fn run(args: &[&str], data_dir: &Path) -> Output {
    let mut args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    args.push(format!("--data-dir={}", data_dir.display()));
    tokio::task::spawn_blocking(move || opd(&args).output().expect("run opd"))
        .await
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn admin(ports: &Ports, method: Method, path: &str, body: Option<&Value>) -> Value {
    let (s, v) = opd_testkit::app::admin_at(&ports.admin(), ADMIN_TOKEN, method, path, body).await;
    assert!(s.is_success(), "{path}: {s} {v}");
    v
}

async fn balance(ports: &Ports, wallet: &str) -> u64 {
    let v = admin(
        ports,
        Method::GET,
        &format!("/wallet-addresses/{wallet}/balance"),
        None,
    )
    .await;
    amount(&v["balance"])
}

/// What the load needs: who pays whom, with which tokens.
struct Load {
    client: SigningClient,
    base: String,
    alice: String,
    bob: String,
    ip_token: String,
    op_token: String,
    /// Outgoing payments answered 201, in order.
    acknowledged: Mutex<Vec<String>>,
    stop: AtomicBool,
}

impl Load {
    /// Incoming payment at bob, quote, outgoing payment from alice.
    async fn one_payment(&self, n: u64) {
        let amount =
            json!({ "value": (100 + n % 50).to_string(), "assetCode": "USD", "assetScale": 2 });
        let ip = self
            .client
            .send(
                Method::POST,
                &format!("{}/incoming-payments", self.base),
                Some(&self.ip_token),
                Some(&json!({ "walletAddress": self.bob, "incomingAmount": amount, "metadata": { "n": n } })),
            )
            .await;
        assert_eq!(ip.status, StatusCode::CREATED, "{}", ip.body);
        let quote = self
            .client
            .send(
                Method::POST,
                &format!("{}/quotes", self.base),
                Some(&self.ip_token),
                Some(&json!({ "walletAddress": self.alice, "receiver": ip.body["id"], "method": "ilp" })),
            )
            .await;
        assert_eq!(quote.status, StatusCode::CREATED, "{}", quote.body);
        let payment = self
            .client
            .send(
                Method::POST,
                &format!("{}/outgoing-payments", self.base),
                Some(&self.op_token),
                Some(&json!({ "walletAddress": self.alice, "quoteId": quote.body["id"] })),
            )
            .await;
        assert_eq!(payment.status, StatusCode::CREATED, "{}", payment.body);
        let id = payment.body["id"].as_str().unwrap().to_owned();
        self.acknowledged.lock().unwrap().push(id);
    }

    async fn run(self: Arc<Self>) {
        // At most one page of outgoing payments (see `list_outgoing`).
        let mut n = 0;
        while !self.stop.load(Ordering::SeqCst) && n < 90 {
            self.one_payment(n).await;
            n += 1;
        }
    }

    fn count(&self) -> usize {
        self.acknowledged.lock().unwrap().len()
    }

    /// Waits until at least `n` payments were acknowledged (bounded).
    async fn until(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.count() < n {
            assert!(
                Instant::now() < deadline,
                "the load stalled at {}",
                self.count()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Wallets, a key and tokens at the server on `ports`.
async fn set_up(ports: &Ports) -> Load {
    for path in ["alice", "bob", "payer"] {
        admin(
            ports,
            Method::POST,
            "/wallet-addresses",
            Some(&json!({ "path": path, "assetCode": "USD", "assetScale": 2 })),
        )
        .await;
    }
    let base = ports.base();
    let client = SigningClient::new(&format!("{base}/payer"), "payer-key", 61)
        .knowing(Server::new(&base, &ports.auth()));
    let jwk = json!({ "jwk": serde_json::to_value(client.jwk()).unwrap() });
    admin(
        ports,
        Method::POST,
        "/wallet-addresses/payer/keys",
        Some(&jwk),
    )
    .await;
    let deposit = json!({ "amount": DEPOSIT.to_string(), "idempotencyKey": "seed" });
    admin(
        ports,
        Method::POST,
        "/wallet-addresses/alice/deposits",
        Some(&deposit),
    )
    .await;
    let ip_token = grant_token_at(
        &ports.auth(),
        &client,
        json!([
            { "type": "incoming-payment", "actions": ["create", "read", "list"] },
            { "type": "quote", "actions": ["create", "read"] }
        ]),
    )
    .await;
    let alice = format!("{base}/alice");
    let op_token = outgoing_token_at(&ports.auth(), &client, &alice, Value::Null).await;
    Load {
        client,
        alice,
        bob: format!("{base}/bob"),
        base,
        ip_token,
        op_token,
        acknowledged: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
    }
}

/// Takes a backup while the load runs; returns the payments acknowledged
/// before it began.
async fn backup_under_load(load: &Arc<Load>, data: &Path, file: &Path) -> Vec<String> {
    load.until(20).await;
    let before = load.acknowledged.lock().unwrap().clone();
    let out = run(&["backup", file.to_str().unwrap()], data).await;
    assert!(out.status.success(), "backup: {}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.starts_with("backup: "), "{said}");
    assert!(
        said.contains("secrets-key"),
        "the backup names what it leaves out: {said}"
    );
    // The load went on during the backup and goes on after it.
    load.until(before.len() + 10).await;
    let again = run(&["backup", file.to_str().unwrap()], data).await;
    assert!(!again.status.success());
    assert!(
        text(&again.stderr).contains("already exists"),
        "{}",
        text(&again.stderr)
    );
    before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_load_restores_with_every_acknowledged_payment() {
    let dir = tempfile::tempdir().unwrap();
    let (data, fresh) = (dir.path().join("data"), dir.path().join("fresh"));
    let file: PathBuf = dir.path().join("opd-backup.sqlite");
    let ports = Ports {
        op: opd_testkit::free_port(),
        auth: opd_testkit::free_port(),
        admin: opd_testkit::free_port(),
    };
    let server = Opd::start(&ports, &data).await;
    let load = Arc::new(set_up(&ports).await);
    let task = tokio::spawn(load.clone().run());
    let before = backup_under_load(&load, &data, &file).await;

    // The running server's data is never overwritten.
    let refused = run(&["restore", file.to_str().unwrap(), "--replace"], &data).await;
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("in use by a running opd"),
        "{}",
        text(&refused.stderr)
    );
    load.stop.store(true, Ordering::SeqCst);
    task.await.unwrap();
    server.stop();

    let restored = run(&["restore", file.to_str().unwrap()], &fresh).await;
    assert!(restored.status.success(), "{}", text(&restored.stderr));
    let twice = run(&["restore", file.to_str().unwrap()], &fresh).await;
    assert!(
        !twice.status.success(),
        "a restore never overwrites by default"
    );
    assert!(
        text(&twice.stderr).contains("--replace"),
        "{}",
        text(&twice.stderr)
    );
    let check = run(&["check"], &fresh).await;
    assert!(check.status.success(), "{}", text(&check.stdout));
    assert!(text(&check.stdout).contains("ledger balanced"));

    let server = Opd::start(&ports, &fresh).await;
    let debited = settled_payments(&load, &before).await;
    assert_eq!(balance(&ports, "alice").await, DEPOSIT - debited);
    assert_eq!(balance(&ports, "bob").await, debited);
    server.stop();
}

/// Every payment acknowledged before the backup is in the restored data;
/// waits (bounded) until every payment there has sent all it owes, and
/// returns what they debited in all.
async fn settled_payments(load: &Load, before: &[String]) -> u64 {
    for id in before {
        let r = load
            .client
            .send(Method::GET, id, Some(&load.op_token), None)
            .await;
        assert_eq!(
            r.status,
            StatusCode::OK,
            "{id} is in the backup: {}",
            r.body
        );
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed = list_outgoing(load).await;
        assert!(listed.len() >= before.len(), "{} listed", listed.len());
        assert!(listed.iter().all(|p| p["failed"] != true), "{listed:?}");
        if listed.iter().all(sent_all) {
            return listed.iter().map(|p| amount(&p["debitAmount"])).sum();
        }
        assert!(
            Instant::now() < deadline,
            "payments never completed: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn list_outgoing(load: &Load) -> Vec<Value> {
    let url = format!(
        "{}/outgoing-payments?wallet-address={}&first=100",
        load.base,
        url::form_urlencoded::byte_serialize(load.alice.as_bytes()).collect::<String>()
    );
    let page = load
        .client
        .send(Method::GET, &url, Some(&load.op_token), None)
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    assert_ne!(
        page.body["pagination"]["hasNextPage"], true,
        "one page holds them"
    );
    page.body["result"].as_array().unwrap().clone()
}

fn amount(v: &Value) -> u64 {
    v["value"].as_str().unwrap().parse().unwrap()
}

fn sent_all(p: &Value) -> bool {
    amount(&p["sentAmount"]) == amount(&p["debitAmount"])
}

#[tokio::test]
async fn what_cannot_be_backed_up_or_restored_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b.sqlite");
    let pg = run(
        &[
            "backup",
            file.to_str().unwrap(),
            "--database-url=postgres://opd@localhost/opd",
        ],
        dir.path(),
    )
    .await;
    assert!(!pg.status.success());
    assert!(text(&pg.stderr).contains("pg_dump"), "{}", text(&pg.stderr));
    let missing = run(
        &["backup", file.to_str().unwrap()],
        &dir.path().join("none"),
    )
    .await;
    assert!(!missing.status.success());
    assert!(
        text(&missing.stderr).contains("does not exist"),
        "{}",
        text(&missing.stderr)
    );
    assert!(!file.exists(), "a failed backup leaves no file");
    std::fs::write(&file, b"not a database").unwrap();
    let fresh = dir.path().join("fresh");
    let garbage = run(&["restore", file.to_str().unwrap()], &fresh).await;
    assert!(!garbage.status.success());
    assert!(
        text(&garbage.stderr).contains("not an opd SQLite database"),
        "{}",
        text(&garbage.stderr)
    );
    assert!(!fresh.join("opd.sqlite").exists(), "nothing restored");
}
