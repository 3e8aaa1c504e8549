//! Crash safety: real `opd serve` processes are killed with SIGKILL at
//! random moments while clients create payments and the servers' workers
//! send them and deliver webhooks, then restarted, again and again; on one
//! node (SQLite and PostgreSQL) and on several nodes sharing one PostgreSQL
//! database. A second server, B, is never killed: it is peered with the
//! killed nodes over ILP-over-HTTP, and some of the payments go to its
//! incoming payments over Interledger, in packets small enough that kills
//! land between a packet's Fulfill and its record. At the end:
//!
//! * every payment is completed or failed, and every failure carries a
//!   reason a crash (or the test's own deliberate race) can explain, and
//!   the unexplained-by-the-test failures stay a small share;
//! * every incoming payment received exactly what completed payments to it
//!   delivered, and every wallet address's balance is its deposits minus
//!   what its completed payments debited (failed ones are refunded) plus
//!   what its incoming payments received, at A and (dave) at B;
//! * every incoming payment at B received exactly what the payments to it
//!   delivered by A's own record, a completed one exactly its quoted
//!   amount; each side's peer account moved exactly that; a payment to B
//!   debited what it sent, the rest of its quoted debit refunded;
//! * every webhook event the payments imply arrived, each event id exactly
//!   once, except that a node killed between the receiver's answer and its
//!   own record of the delivery may have it delivered again after the kill;
//! * any HTTP status the test does not expect, any connection error from a
//!   node that is up, and any panic in a load task fail the test;
//! * `opd check` finds both servers' ledgers balanced.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

use std::collections::{BTreeSet, HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opd_testkit::app::{grant_token_at, outgoing_token_at, IDP_SECRET};
use opd_testkit::client::{Reply, SigningClient};
use opd_testkit::spec::Server;
use opd_testkit::webhooks::WebhookReceiver;
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const ADMIN_TOKEN: &str = "crash-test-admin-token-0123456789";
const WEBHOOK_SECRET: &str = "crash-secret";

/// Concurrent clients creating payments, so that kills land while several
/// requests and several worker steps are in flight.
const LOAD_TASKS: u64 = 3;

/// Every `RACE_EVERY`-th payment's incoming payment is completed by the
/// client right after the outgoing payment was created, racing the worker:
/// either the payment completes first, or it fails and is refunded. This
/// makes failed payments (and their refunds) part of every run, so the
/// balance checks cover refunds too.
const RACE_EVERY: u64 = 8;

/// Every `REMOTE_EVERY`-th payment (not raced) goes to an incoming payment
/// at server B, over Interledger.
const REMOTE_EVERY: u64 = 3;

/// The largest packet B takes from A: a payment to B (1.00 to 1.49 USD)
/// goes in several packets and several rounds, so kills land mid-payment.
const REMOTE_MAX_PACKET: u64 = 30;

/// A's liquidity at B, in cents: more than the test can spend.
const REMOTE_LIQUIDITY: u64 = 100_000_000;

/// Why a payment that the test did not race may fail. The only one a crash
/// can explain: a payment claimed by a worker that was killed waits out its
/// lease (30 s) before another worker takes it, and its quote may have
/// expired by then. Every other reason of the worker (missing quote or
/// receiver, receiver already completed, overflow...) means lost or
/// doubled work.
const CRASH_REASONS: &[&str] = &["the quote expired before the payment was sent"];

/// Why a raced payment may fail: the client completed its receiver first
/// (plus what a crash can explain).
const RACE_REASONS: &[&str] = &[
    "the receiver no longer accepts payments",
    "the quote expired before the payment was sent",
];

/// At most this share (in percent) of the payments the test did not race
/// may fail. With the defaults (300 s quotes, 30 s leases, a run of well
/// under a minute) none should: a stranded payment is taken again long
/// before its quote expires. The bound leaves room for a machine so slow
/// that some quotes do run out, while still failing the test when payments
/// fail as a rule (the old test passed with every payment failed).
const MAX_FAILED_PERCENT: usize = 5;

// ---------------------------------------------------------------------------
// Nodes

/// What the load tasks know about one node: where it listens and whether
/// it is up. Shared between the test and its load tasks.
struct NodeState {
    /// Its Open Payments listener (`http://127.0.0.1:PORT`).
    base: String,
    /// Its admin listener.
    admin: String,
    /// Set before the node is killed and cleared once its successor
    /// answers `/healthz`: a connection error is expected only while set.
    down: AtomicBool,
    /// Which process this is: 1 for the first start, +1 per restart.
    incarnation: AtomicU64,
}

/// One `opd serve` process slot of a cluster (restarted in place).
struct Node {
    child: Option<Child>,
    /// Open Payments, authorization, admin, ILP-over-HTTP.
    ports: (u16, u16, u16, u16),
    dir: tempfile::TempDir,
    state: Arc<NodeState>,
}

/// N `opd serve` processes on one database, all serving the same public
/// URLs as they would behind a load balancer. Node 0's listeners double as
/// those public URLs, so setup (grants, consent) talks to node 0 with the
/// testkit helpers; the load sends each request to a node of its choice,
/// signed for the public URL (opd checks signatures against its configured
/// public URL, not against the address it was reached at).
struct Cluster {
    /// The test's name, for log files.
    name: String,
    nodes: Vec<Node>,
    states: Arc<Vec<Arc<NodeState>>>,
    public: String,
    auth_public: String,
    database_url: String,
    hooks: Arc<WebhookReceiver>,
}

impl Cluster {
    fn new(name: &str, database_url: String, size: usize, hooks: Arc<WebhookReceiver>) -> Self {
        let nodes: Vec<Node> = (0..size)
            .map(|_| {
                let ports = (
                    opd_testkit::free_port(),
                    opd_testkit::free_port(),
                    opd_testkit::free_port(),
                    opd_testkit::free_port(),
                );
                Node {
                    child: None,
                    ports,
                    dir: tempfile::tempdir().unwrap(),
                    state: Arc::new(NodeState {
                        base: format!("http://127.0.0.1:{}", ports.0),
                        admin: format!("http://127.0.0.1:{}", ports.2),
                        down: AtomicBool::new(true),
                        incarnation: AtomicU64::new(0),
                    }),
                }
            })
            .collect();
        let public = nodes[0].state.base.clone();
        let auth_public = format!("http://127.0.0.1:{}", nodes[0].ports.1);
        let states = Arc::new(nodes.iter().map(|n| n.state.clone()).collect());
        Self {
            name: name.to_owned(),
            nodes,
            states,
            public,
            auth_public,
            database_url,
            hooks,
        }
    }

    /// Starts node `i` (a new incarnation) and waits until it answers.
    async fn start(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        assert!(node.child.is_none(), "node {i} is running");
        let incarnation = node.state.incarnation.load(Ordering::SeqCst) + 1;
        let (op, auth, admin, ilp) = node.ports;
        let args = vec![
            "serve".to_owned(),
            format!("--listen=127.0.0.1:{op}"),
            format!("--auth-listen=127.0.0.1:{auth}"),
            format!("--admin-listen=127.0.0.1:{admin}"),
            format!("--ilp-listen=127.0.0.1:{ilp}"),
            "--ilp-address=test.a".to_owned(),
            // B, the other server, is on this machine.
            "--outbound-allow=127.0.0.1".to_owned(),
            format!("--public-url={}", self.public),
            format!("--auth-public-url={}", self.auth_public),
            format!("--admin-token={ADMIN_TOKEN}"),
            format!("--idp-secret={IDP_SECRET}"),
            format!("--data-dir={}", node.dir.path().display()),
            format!("--database-url={}", self.database_url),
            "--migrate".into(),
            // The receiver learns from the path which process delivered.
            format!("--webhook-url={}", self.hooks.url(i, incarnation)),
            format!("--webhook-secret={WEBHOOK_SECRET}"),
        ];
        let spawn = |attempt: u32| {
            Command::new(env!("CARGO_BIN_EXE_opd"))
                .args(&args)
                .current_dir(node.dir.path())
                .env_remove("OPD_CONFIG")
                // Every node of one database seals secrets with one key.
                .env(
                    "OPD_SECRETS_KEY",
                    "5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7",
                )
                .env("OPD_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(log_file(
                    &self.name,
                    &format!("{}-node-{i}-{incarnation}-{attempt}", self.name),
                ))
                .spawn()
                .expect("start opd")
        };
        // A node comes back on its old ports (the cluster's public URLs
        // and peers name them). The port may still be held for a moment
        // (an outgoing connection's ephemeral port, say): a process that
        // exits at start is started again, a bounded number of times.
        let mut attempt = 1;
        let mut child = spawn(attempt);
        let deadline = Instant::now() + Duration::from_secs(30);
        let http = reqwest::Client::new();
        loop {
            if let Ok(r) = http
                .get(format!("{}/healthz", node.state.base))
                .send()
                .await
            {
                if r.status() == StatusCode::OK {
                    break;
                }
            }
            if let Some(status) = child.try_wait().expect("poll opd") {
                assert!(
                    attempt < 10,
                    "node {i} exited at start {attempt} times (last: {status}); see its logs"
                );
                tokio::time::sleep(Duration::from_millis(500)).await;
                attempt += 1;
                child = spawn(attempt);
                continue;
            }
            assert!(Instant::now() < deadline, "node {i} did not become ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        node.child = Some(child);
        node.state.incarnation.store(incarnation, Ordering::SeqCst);
        node.state.down.store(false, Ordering::SeqCst);
    }

    /// SIGKILL: no shutdown code runs. The node is marked down first, so a
    /// request it breaks finds it marked.
    fn kill(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        node.state.down.store(true, Ordering::SeqCst);
        if let Some(mut c) = node.child.take() {
            c.kill().expect("kill");
            c.wait().expect("reap");
            self.hooks
                .killed(i, node.state.incarnation.load(Ordering::SeqCst));
        }
    }

    fn kill_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }

    async fn admin(&self, method: Method, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
        admin_at(&self.nodes[0].state.admin, method, path, body).await
    }

    async fn create_wallet(&self, path: &str) -> String {
        create_wallet_at(&self.nodes[0].state.admin, path).await
    }
}

/// A request to the admin API at `admin`.
async fn admin_at(
    admin: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> (StatusCode, Value) {
    opd_testkit::app::admin_at(admin, ADMIN_TOKEN, method, path, body).await
}

/// A USD wallet address at the server whose admin API is `admin`.
async fn create_wallet_at(admin: &str, path: &str) -> String {
    let (s, v) = admin_at(
        admin,
        Method::POST,
        "/wallet-addresses",
        Some(&json!({ "path": path, "assetCode": "USD", "assetScale": 2 })),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    v["url"].as_str().unwrap().to_owned()
}

/// The admin API's answer to `method path`, which must succeed.
async fn admin_ok(admin: &str, method: Method, path: &str, body: Value) -> Value {
    let (s, v) = admin_at(admin, method, path, Some(&body)).await;
    assert!(s.is_success(), "{path}: {s} {v}");
    v
}

// ---------------------------------------------------------------------------
// Server B

/// The other server: one `opd serve` on SQLite, never killed, serving
/// incoming payments of `dave` that the cluster's payments pay over
/// Interledger.
struct Remote {
    child: Child,
    /// Its data directory, removed when B is dropped.
    _dir: tempfile::TempDir,
    base: String,
    auth: String,
    admin: String,
    ilp: String,
}

impl Remote {
    async fn start(test: &str) -> Self {
        let ports = [(); 4].map(|()| opd_testkit::free_port());
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_opd"))
            .args([
                "serve".to_owned(),
                format!("--listen=127.0.0.1:{}", ports[0]),
                format!("--auth-listen=127.0.0.1:{}", ports[1]),
                format!("--admin-listen=127.0.0.1:{}", ports[2]),
                format!("--ilp-listen=127.0.0.1:{}", ports[3]),
                "--ilp-address=test.b".to_owned(),
                "--outbound-allow=127.0.0.1".to_owned(),
                format!("--admin-token={ADMIN_TOKEN}"),
                format!("--data-dir={}", dir.path().display()),
            ])
            .current_dir(dir.path())
            .env_remove("OPD_CONFIG")
            .env("OPD_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log_file(test, &format!("{test}-b")))
            .spawn()
            .expect("start opd B");
        let remote = Self {
            child,
            _dir: dir,
            base: format!("http://127.0.0.1:{}", ports[0]),
            auth: format!("http://127.0.0.1:{}", ports[1]),
            admin: format!("http://127.0.0.1:{}", ports[2]),
            ilp: format!("http://127.0.0.1:{}/ilp", ports[3]),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !reqwest::get(format!("{}/healthz", remote.base))
            .await
            .is_ok_and(|r| r.status() == StatusCode::OK)
        {
            assert!(Instant::now() < deadline, "B did not become ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        remote
    }

    /// Peers B with the cluster both ways (USD), routes `test.b` to B at
    /// the cluster, limits A's packets at B and funds A's liquidity at B.
    async fn peer_with(&self, cluster: &Cluster) {
        let usd = json!({ "code": "USD", "scale": 2 });
        let a_ilp = format!("http://127.0.0.1:{}/ilp", cluster.nodes[0].ports.3);
        admin_ok(
            &cluster.nodes[0].state.admin,
            Method::POST,
            "/peers",
            json!({ "name": "b", "staticIlpAddress": "test.b", "asset": usd, "routes": ["test.b"],
                    "http": { "outgoing": { "endpoint": self.ilp, "authToken": "a-to-b" },
                              "incoming": { "authTokens": ["b-to-a"] } } }),
        )
        .await;
        let a = admin_ok(
            &self.admin,
            Method::POST,
            "/peers",
            json!({ "name": "a", "staticIlpAddress": "test.a", "asset": usd, "routes": ["test.a"],
                    "maxPacketAmount": REMOTE_MAX_PACKET.to_string(),
                    "http": { "outgoing": { "endpoint": a_ilp, "authToken": "b-to-a" },
                              "incoming": { "authTokens": ["a-to-b"] } } }),
        )
        .await;
        let id = a["id"].as_str().unwrap();
        admin_ok(
            &self.admin,
            Method::POST,
            &format!("/peers/{id}/deposits"),
            json!({ "amount": REMOTE_LIQUIDITY.to_string(), "idempotencyKey": "a-liquidity" }),
        )
        .await;
    }

    /// The balance of the peer named `name` at the server whose admin API
    /// is `admin`.
    async fn peer_balance(admin: &str, name: &str) -> u64 {
        let (s, peers) = admin_at(admin, Method::GET, "/peers", None).await;
        assert_eq!(s, StatusCode::OK, "{peers}");
        let all = peers["peers"].as_array().or(peers.as_array()).unwrap();
        let peer = all.iter().find(|p| p["name"] == name).unwrap();
        let id = peer["id"].as_str().unwrap();
        let (s, v) = admin_at(admin, Method::GET, &format!("/peers/{id}/balance"), None).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        v["balance"].as_str().unwrap().parse().unwrap()
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the load needs to create incoming payments at B.
struct AtB {
    /// B's Open Payments listener.
    base: String,
    client: SigningClient,
    token: String,
    dave: String,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.state.down.store(true, Ordering::SeqCst);
            if let Some(mut c) = node.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// Where the logs of a test's processes go: `$OPD_CRASH_LOG_DIR` when that
/// is set (the server-side cause of a failure, say a database error behind
/// a 500, is only in the logs), else a directory of the test's own that
/// the test removes when it passes.
fn log_dir(test: &str) -> std::path::PathBuf {
    let dir = match std::env::var_os("OPD_CRASH_LOG_DIR") {
        Some(dir) => dir.into(),
        None => std::env::temp_dir().join(format!("opd-crash-{}-{test}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).expect("log directory");
    dir
}

/// A process's log file, `<name>.log` in the test's log directory. Nodes
/// are named `<test>-node-<i>-<incarnation>`, server B `<test>-b`.
fn log_file(test: &str, name: &str) -> Stdio {
    std::fs::File::create(log_dir(test).join(format!("{name}.log")))
        .expect("log file")
        .into()
}

/// How many lines of the test's node logs contain `needle`.
fn count_in_node_logs(test: &str, needle: &str) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(log_dir(test)).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(&format!("{test}-node-")) {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            n += text.lines().filter(|l| l.contains(needle)).count();
        }
    }
    n
}

// ---------------------------------------------------------------------------
// Load

/// A sending wallet address and the outgoing-payment token for it.
struct Sender {
    url: String,
    token: String,
}

/// Everything the load tasks share.
struct Load {
    payer: SigningClient,
    /// No connection pool: a pooled connection to a killed process would
    /// fail a request sent to its restarted successor, which is up.
    http: reqwest::Client,
    nodes: Arc<Vec<Arc<NodeState>>>,
    public: String,
    ip_token: String,
    senders: Vec<Sender>,
    bob: String,
    b: AtB,
    /// Incoming payments the load completed itself (see `RACE_EVERY`).
    raced: Mutex<HashSet<String>>,
    /// Outgoing payments created (answered 201), to pace the kills.
    created: AtomicU64,
    stop: AtomicBool,
}

impl Load {
    /// A node that is up, at random, and its incarnation; waits (bounded)
    /// while every node is down.
    async fn pick(&self, rng: &mut StdRng) -> (usize, u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let up: Vec<usize> = (0..self.nodes.len())
                .filter(|&i| !self.nodes[i].down.load(Ordering::SeqCst))
                .collect();
            if !up.is_empty() {
                let i = up[rng.gen_range(0..up.len())];
                return (i, self.nodes[i].incarnation.load(Ordering::SeqCst));
            }
            assert!(Instant::now() < deadline, "no node came back up");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Sends a signed request for `url` (a public URL) to a live node.
    /// `None`: the connection broke because that node was killed meanwhile.
    /// A connection error from a node that is still the one that was
    /// picked and not marked down fails the test.
    async fn call(
        &self,
        rng: &mut StdRng,
        method: Method,
        url: &str,
        token: &str,
        body: Option<&Value>,
    ) -> Option<Reply> {
        let (i, incarnation) = self.pick(rng).await;
        let node = &self.nodes[i];
        let path = url
            .strip_prefix(&self.public)
            .unwrap_or_else(|| panic!("{url} is not under {}", self.public));
        let bytes = body.map(|b| serde_json::to_vec(b).unwrap());
        let headers = self.payer.sign(&method, url, Some(token), bytes.as_deref());
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", node.base))
            .headers(headers);
        if let Some(b) = bytes {
            req = req.body(b);
        }
        let answer = async {
            let r = req.send().await?;
            let status = r.status();
            let headers = r.headers().clone();
            Ok::<_, reqwest::Error>((status, headers, r.text().await?))
        }
        .await;
        match answer {
            Ok((status, headers, text)) => {
                let body = if text.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(&text).unwrap_or_else(|_| {
                        panic!("{method} {url} on node {i}: {status}, not JSON: {text:?}")
                    })
                };
                // Sent by hand to the node of our choice, so validated here
                // (against the public URL the request is for) rather than
                // by the client.
                self.payer.servers.check(&method, url, status, &body);
                Some(Reply {
                    status,
                    headers,
                    body,
                })
            }
            Err(_)
                if node.down.load(Ordering::SeqCst)
                    || node.incarnation.load(Ordering::SeqCst) != incarnation =>
            {
                None
            }
            Err(e) => panic!("{method} {url} on node {i}, which is up: {e}"),
        }
    }

    /// `call` that must answer `want`; any other status fails the test.
    async fn expect(
        &self,
        rng: &mut StdRng,
        method: Method,
        url: &str,
        token: &str,
        body: Option<&Value>,
        want: StatusCode,
    ) -> Option<Value> {
        let r = self.call(rng, method.clone(), url, token, body).await?;
        assert_eq!(r.status, want, "{method} {url} {body:?}: {}", r.body);
        Some(r.body)
    }

    /// Incoming payment, quote, outgoing payment (and for every
    /// `RACE_EVERY`-th, completing the incoming payment at once). `None`
    /// when a node died under a step; the payment is then abandoned (what
    /// it left behind is found by listing).
    async fn one_payment(&self, rng: &mut StdRng, n: u64) -> Option<()> {
        let sender = &self.senders[usize::try_from(n).unwrap() % self.senders.len()];
        let amount =
            json!({ "value": (100 + n % 50).to_string(), "assetCode": "USD", "assetScale": 2 });
        let race = n.is_multiple_of(RACE_EVERY);
        let ip = if !race && n % REMOTE_EVERY == 1 {
            // B is never killed: its answer is always there.
            let r = self
                .b
                .client
                .send(
                    Method::POST,
                    &format!("{}/incoming-payments", self.b.base),
                    Some(&self.b.token),
                    Some(&json!({ "walletAddress": self.b.dave, "incomingAmount": amount, "metadata": { "n": n } })),
                )
                .await;
            assert_eq!(r.status, StatusCode::CREATED, "at B: {}", r.body);
            r.body
        } else {
            self.expect(
                rng,
                Method::POST,
                &format!("{}/incoming-payments", self.public),
                &self.ip_token,
                // `n` makes the body, and so the signature, unique: the
                // test client reuses `created` values within the freshness
                // window, and an identical signed request is a replay.
                Some(&json!({ "walletAddress": self.bob, "incomingAmount": amount, "metadata": { "n": n } })),
                StatusCode::CREATED,
            )
            .await?
        };
        let ip = ip["id"].as_str().unwrap().to_owned();
        let q = self
            .expect(
                rng,
                Method::POST,
                &format!("{}/quotes", self.public),
                &self.ip_token,
                Some(&json!({ "walletAddress": sender.url, "receiver": ip, "method": "ilp" })),
                StatusCode::CREATED,
            )
            .await?;
        self.expect(
            rng,
            Method::POST,
            &format!("{}/outgoing-payments", self.public),
            &sender.token,
            Some(&json!({ "walletAddress": sender.url, "quoteId": q["id"] })),
            StatusCode::CREATED,
        )
        .await?;
        self.created.fetch_add(1, Ordering::SeqCst);
        if race {
            // Recorded before the request: the completion may take effect
            // even if the answer is lost to a kill.
            self.raced.lock().unwrap().insert(ip.clone());
            let done = self
                .expect(
                    rng,
                    Method::POST,
                    &format!("{ip}/complete"),
                    &self.ip_token,
                    None,
                    StatusCode::OK,
                )
                .await?;
            assert_eq!(done["completed"], true, "{done}");
        }
        Some(())
    }

    /// Every page of a list; all nodes are up by now, so a broken
    /// connection fails the test.
    async fn all(&self, collection: &str, wallet: &str, token: &str) -> Vec<Value> {
        let mut rng = StdRng::seed_from_u64(0);
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!(
                "{}/{collection}?wallet-address={}&first=100",
                self.public,
                urlencode(wallet)
            );
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let page = self
                .expect(&mut rng, Method::GET, &url, token, None, StatusCode::OK)
                .await
                .expect("every node is up");
            out.extend(page["result"].as_array().unwrap().iter().cloned());
            if page["pagination"]["hasNextPage"] != true {
                return out;
            }
            cursor = page["pagination"]["endCursor"].as_str().map(str::to_owned);
        }
    }
}

impl AtB {
    /// Every incoming payment of dave at B.
    async fn all_incoming(&self) -> Vec<Value> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!(
                "{}/incoming-payments?wallet-address={}&first=100",
                self.base,
                urlencode(&self.dave)
            );
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let page = self
                .client
                .send(Method::GET, &url, Some(&self.token), None)
                .await;
            assert_eq!(page.status, StatusCode::OK, "{}", page.body);
            out.extend(page.body["result"].as_array().unwrap().iter().cloned());
            if page.body["pagination"]["hasNextPage"] != true {
                return out;
            }
            cursor = page.body["pagination"]["endCursor"]
                .as_str()
                .map(str::to_owned);
        }
    }
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn value_of(amount: &Value) -> u64 {
    amount["value"].as_str().unwrap().parse().unwrap()
}

// ---------------------------------------------------------------------------
// Tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_moments_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("crash.sqlite").display()
    );
    crash_test("sqlite", url, 1, 6, 11).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_random_moments_postgres() {
    crash_test(
        "postgres",
        opd_testkit::pg::fresh_schema_url().await,
        1,
        6,
        12,
    )
    .await;
}

/// Three nodes on one database, requests spread over them, a random one
/// killed each round: each webhook event is claimed by one node at a time,
/// payments and the receiver race are settled through the database, and a
/// killed node's leased payments and events come back to the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_killed_at_random_moments_postgres() {
    crash_test(
        "three-nodes",
        opd_testkit::pg::fresh_schema_url().await,
        3,
        9,
        13,
    )
    .await;
}

/// `nodes` processes on `database_url`, `kills` random kills, the rest
/// decided by `seed`; `name` names the log files.
async fn crash_test(name: &str, database_url: String, nodes: usize, kills: usize, seed: u64) {
    let hooks = WebhookReceiver::start(WEBHOOK_SECRET, 0).await;
    let mut cluster = Cluster::new(name, database_url, nodes, hooks.clone());
    for i in 0..nodes {
        cluster.start(i).await;
    }
    let remote = Remote::start(name).await;
    remote.peer_with(&cluster).await;

    // Setup (before any kill): two senders, a receiver, a client.
    let alice = cluster.create_wallet("alice").await;
    let carol = cluster.create_wallet("carol").await;
    let bob = cluster.create_wallet("bob").await;
    let payer_url = cluster.create_wallet("payer").await;
    // The clients validate the responses of the cluster (at its public
    // URLs) and of B.
    let servers = [
        Server::new(&cluster.public, &cluster.auth_public),
        Server::new(&remote.base, &remote.auth),
    ];
    let payer = SigningClient::new(&payer_url, "payer-key", 51)
        .knowing(servers[0].clone())
        .knowing(servers[1].clone());
    let (s, v) = cluster
        .admin(
            Method::POST,
            "/wallet-addresses/payer/keys",
            Some(&json!({ "jwk": serde_json::to_value(payer.jwk()).unwrap() })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let deposits: HashMap<&str, u64> = HashMap::from([
        ("alice", 100_000_000),
        ("carol", 50_000_000),
        ("bob", 0),
        ("payer", 0),
    ]);
    for (path, amount) in &deposits {
        if *amount > 0 {
            let (s, v) = cluster
                .admin(
                    Method::POST,
                    &format!("/wallet-addresses/{path}/deposits"),
                    Some(&json!({ "amount": amount.to_string(), "idempotencyKey": format!("seed-{path}") })),
                )
                .await;
            assert_eq!(s, StatusCode::CREATED, "{v}");
        }
    }
    let ip_token = grant_token_at(
        &cluster.auth_public,
        &payer,
        json!([
            { "type": "incoming-payment", "actions": ["create", "read", "list", "complete"] },
            { "type": "quote", "actions": ["create", "read"] }
        ]),
    )
    .await;
    // At B: dave, whom the remote payments pay, and a client creating his
    // incoming payments.
    let dave = create_wallet_at(&remote.admin, "dave").await;
    let shop = SigningClient::new(
        &create_wallet_at(&remote.admin, "shop").await,
        "shop-key",
        52,
    )
    .knowing(servers[0].clone())
    .knowing(servers[1].clone());
    admin_ok(
        &remote.admin,
        Method::POST,
        "/wallet-addresses/shop/keys",
        json!({ "jwk": serde_json::to_value(shop.jwk()).unwrap() }),
    )
    .await;
    let b_token = grant_token_at(
        &remote.auth,
        &shop,
        json!([{ "type": "incoming-payment", "actions": ["create", "read", "list"] }]),
    )
    .await;
    let mut senders = Vec::new();
    for url in [&alice, &carol] {
        let token = outgoing_token_at(&cluster.auth_public, &payer, url, Value::Null).await;
        senders.push(Sender {
            url: url.clone(),
            token,
        });
    }
    let load = Arc::new(Load {
        payer,
        http: reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap(),
        nodes: cluster.states.clone(),
        public: cluster.public.clone(),
        ip_token,
        senders,
        bob,
        b: AtB {
            base: remote.base.clone(),
            client: shop,
            token: b_token,
            dave,
        },
        raced: Mutex::default(),
        created: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });

    // Load, all along: each task creates payments one after another.
    let tasks: Vec<_> = (0..LOAD_TASKS)
        .map(|t| {
            let load = load.clone();
            tokio::spawn(async move {
                let mut rng = StdRng::seed_from_u64(seed * 100 + t);
                let mut n = t * 1_000_000;
                while !load.stop.load(Ordering::SeqCst) {
                    let _ = load.one_payment(&mut rng, n).await;
                    n += 1;
                }
            })
        })
        .collect();

    // Kill a random node at a random moment once the load is under way
    // (a few payments created since the last restart), restart it; again.
    let mut rng = StdRng::seed_from_u64(seed);
    'rounds: for _ in 0..kills {
        let before = load.created.load(Ordering::SeqCst);
        let deadline = Instant::now() + Duration::from_secs(30);
        while load.created.load(Ordering::SeqCst) < before + 2 {
            if tasks.iter().any(tokio::task::JoinHandle::is_finished) {
                // A load task panicked: stop and report its panic below.
                break 'rounds;
            }
            assert!(Instant::now() < deadline, "the load created no payments");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.gen_range(20..400))).await;
        let victim = rng.gen_range(0..nodes);
        cluster.kill(victim);
        cluster.start(victim).await;
    }
    load.stop.store(true, Ordering::SeqCst);
    // A failed assertion in a load task fails the test with its own
    // message; the other tasks are let finish first, so that the nodes
    // going away under them adds no noise.
    let mut first_panic = None;
    for task in tasks {
        match task.await {
            Ok(()) => {}
            Err(e) if e.is_panic() => {
                first_panic.get_or_insert(e.into_panic());
            }
            Err(e) => panic!("load task: {e}"),
        }
    }
    if let Some(p) = first_panic {
        std::panic::resume_unwind(p);
    }

    // Let the servers finish: no payment left to send, and every event the
    // payments imply delivered. A payment claimed by a killed worker waits
    // out its 30 s lease, hence the deadline.
    let deadline = Instant::now() + Duration::from_secs(90);
    let (payments, incoming, expected_events) = loop {
        let mut payments = Vec::new();
        for s in &load.senders {
            payments.extend(load.all("outgoing-payments", &s.url, &s.token).await);
        }
        let incoming = load
            .all("incoming-payments", &load.bob, &load.ip_token)
            .await;
        let pending = payments
            .iter()
            .filter(|p| p["failed"] == false && p["sentAmount"]["value"] == "0")
            .count();
        let mut expected: BTreeSet<(String, String)> = BTreeSet::new();
        for p in &payments {
            let id = p["id"].as_str().unwrap().to_owned();
            expected.insert(("outgoing_payment.created".into(), id.clone()));
            if p["failed"] == true {
                expected.insert(("outgoing_payment.failed".into(), id));
            } else if p["sentAmount"]["value"] != "0" {
                expected.insert(("outgoing_payment.completed".into(), id));
            }
        }
        for ip in &incoming {
            let id = ip["id"].as_str().unwrap().to_owned();
            expected.insert(("incoming_payment.created".into(), id.clone()));
            if ip["completed"] == true {
                expected.insert(("incoming_payment.completed".into(), id));
            }
        }
        let arrived = hooks.accepted();
        let missing = expected.difference(&arrived).count();
        if pending == 0 && missing == 0 {
            break (payments, incoming, expected);
        }
        assert!(
            Instant::now() < deadline,
            "{pending} payments still sending, {missing} webhook events missing"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let raced = load.raced.lock().unwrap().clone();
    let failed: Vec<&Value> = payments.iter().filter(|p| p["failed"] == true).collect();
    eprintln!(
        "crash test ({nodes} node(s), {kills} kills): {} payments ({} failed, {} raced), \
         {} incoming payments, {} webhook deliveries",
        payments.len(),
        failed.len(),
        payments
            .iter()
            .filter(|p| raced.contains(p["receiver"].as_str().unwrap()))
            .count(),
        incoming.len(),
        hooks.arrivals().len()
    );
    // Enough load that the kills hit work in flight (each kill waited for
    // two new payments).
    assert!(
        payments.len() >= 2 * kills,
        "the load created payments ({})",
        payments.len()
    );

    // Each incoming payment received exactly what completed payments to it
    // delivered: nothing twice, nothing lost. A failed payment sent nothing.
    // A payment to B may send less than its quoted debit (the rest is
    // refunded), and a failed one may have sent part.
    let is_remote = |p: &Value| p["receiver"].as_str().unwrap().starts_with(&remote.base);
    let mut delivered: HashMap<String, u64> = HashMap::new();
    let mut debited: HashMap<String, u64> = HashMap::new();
    for p in &payments {
        let sent = value_of(&p["sentAmount"]);
        *debited
            .entry(p["walletAddress"].as_str().unwrap().to_owned())
            .or_default() += sent;
        if is_remote(p) {
            assert!(
                sent <= value_of(&p["debitAmount"]),
                "sent within the debit: {p}"
            );
            continue;
        }
        if p["failed"] == true {
            assert_eq!(p["sentAmount"]["value"], "0", "a failed payment: {p}");
            continue;
        }
        assert_eq!(
            p["sentAmount"], p["debitAmount"],
            "no fee: everything debited was sent: {p}"
        );
        *delivered
            .entry(p["receiver"].as_str().unwrap().to_owned())
            .or_default() += value_of(&p["receiveAmount"]);
    }
    for ip in &incoming {
        let id = ip["id"].as_str().unwrap();
        assert_eq!(
            value_of(&ip["receivedAmount"]),
            delivered.get(id).copied().unwrap_or(0),
            "incoming payment {id}"
        );
    }

    // Every wallet address holds its deposits minus what its payments
    // debited plus what its incoming payments received (money received is
    // the receiver's at once); failed payments gave back what they had
    // not sent.
    let mut received: HashMap<String, u64> = HashMap::new();
    for ip in &incoming {
        *received
            .entry(ip["walletAddress"].as_str().unwrap().to_owned())
            .or_default() += value_of(&ip["receivedAmount"]);
    }
    for (path, deposited) in &deposits {
        let (s, v) = cluster
            .admin(
                Method::GET,
                &format!("/wallet-addresses/{path}/balance"),
                None,
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        let spent = debited
            .get(&format!("{}/{path}", cluster.public))
            .copied()
            .unwrap_or(0);
        let got = received
            .get(&format!("{}/{path}", cluster.public))
            .copied()
            .unwrap_or(0);
        assert_eq!(
            value_of(&v["balance"]),
            deposited - spent + got,
            "balance of {path}: deposited {deposited}, payments debited {spent}, \
             incoming payments received {got}"
        );
    }
    assert!(
        received.values().any(|v| *v > 0),
        "the balance check covered receipts: {received:?}"
    );

    // Over Interledger: what A sent went to its peer account for B, and
    // what B's incoming payments received came out of A's liquidity at B
    // (one currency, rate 1).
    let remote_payments: Vec<&Value> = payments.iter().filter(|p| is_remote(p)).collect();
    let remote_incoming = load.b.all_incoming().await;
    let sent_to_b: u64 = remote_payments
        .iter()
        .map(|p| value_of(&p["sentAmount"]))
        .sum();
    let received_at_b: u64 = remote_incoming
        .iter()
        .map(|ip| value_of(&ip["receivedAmount"]))
        .sum();
    eprintln!(
        "  {} payments to B ({} failed), {sent_to_b} sent, {received_at_b} received; \
         packets left in flight by kills: {} delivered, {} not",
        remote_payments.len(),
        remote_payments
            .iter()
            .filter(|p| p["failed"] == true)
            .count(),
        count_in_node_logs(name, "left pending by a crash was delivered"),
        count_in_node_logs(name, "left pending by a crash was not delivered"),
    );
    assert!(
        remote_payments.iter().any(|p| p["failed"] == false),
        "payments to B completed"
    );
    assert_eq!(
        Remote::peer_balance(&cluster.nodes[0].state.admin, "b").await,
        sent_to_b,
        "A's account for B holds what A's payments sent"
    );
    assert_eq!(
        Remote::peer_balance(&remote.admin, "a").await,
        REMOTE_LIQUIDITY - received_at_b,
        "A's liquidity at B lost what B's incoming payments received"
    );
    assert_eq!(sent_to_b, received_at_b, "one currency: sent is received");
    // Over Interledger too, received money is the receiver's: dave at B
    // (no deposits, no payments) holds exactly what he received.
    let (s, v) = admin_at(
        &remote.admin,
        Method::GET,
        "/wallet-addresses/dave/balance",
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        value_of(&v["balance"]),
        received_at_b,
        "dave's balance at B"
    );

    // Webhooks: exactly the events the payments imply, each delivered
    // once but for a repeat after its deliverer was killed.
    hooks.assert_each_once(Some(&expected_events));
    cluster.kill_all();

    let records = records(&cluster.database_url, &payments).await;
    assert_failure_reasons(&records, &payments, &raced);

    // Each incoming payment at B received exactly what A recorded its
    // payments to it delivered (after every kill, the worker settled what
    // was in flight from what B reported), a completed payment exactly its
    // quoted amount.
    let mut delivered_to_b: HashMap<&str, u64> = HashMap::new();
    for p in &remote_payments {
        let record = &records[p["id"].as_str().unwrap()];
        if p["failed"] == false {
            assert_eq!(record.delivered, value_of(&p["receiveAmount"]), "{p}");
        }
        *delivered_to_b
            .entry(p["receiver"].as_str().unwrap())
            .or_default() += record.delivered;
    }
    for ip in &remote_incoming {
        let id = ip["id"].as_str().unwrap();
        assert_eq!(
            value_of(&ip["receivedAmount"]),
            delivered_to_b.get(id).copied().unwrap_or(0),
            "incoming payment {id} at B"
        );
    }
    // Every packet, those the kills left in flight included, was settled
    // once: the posted ones add up to each payment's sent and delivered
    // totals, and none is pending.
    let settled = packets_settled(&cluster.database_url, &remote_payments, &records).await;
    eprintln!("  {settled} packets, all settled");

    // The ledger adds up, checked by the operator's command.
    let out = opd_testkit::output(
        Command::new(env!("CARGO_BIN_EXE_opd"))
            .args(["check", &format!("--database-url={}", cluster.database_url)])
            .current_dir(cluster.nodes[0].dir.path())
            .env_remove("OPD_CONFIG"),
    );
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("ledger balanced"));
    let (s, v) = admin_at(&remote.admin, Method::GET, "/ledger/check", None).await;
    assert_eq!(
        (s, &v["balanced"]),
        (StatusCode::OK, &json!(true)),
        "B: {v}"
    );
    drop(remote);
    if std::env::var_os("OPD_CRASH_LOG_DIR").is_none() {
        let _ = std::fs::remove_dir_all(log_dir(name));
    }
}

/// Every payment as the database holds it, by its URL, read once the
/// servers are gone (why a payment failed and what it delivered are not
/// in the API).
async fn records(
    database_url: &str,
    payments: &[Value],
) -> HashMap<String, opd_core::outgoing_payment::OutgoingPayment> {
    let store = opd_store::connect(&opd_store::ConnectOptions::new(database_url.to_owned()))
        .await
        .unwrap();
    let mut out = HashMap::new();
    for p in payments {
        let url = p["id"].as_str().unwrap();
        let id = opd_core::OutgoingPaymentId::parse(url.rsplit('/').next().unwrap()).unwrap();
        let record = store.get_outgoing_payment(id).await.unwrap().unwrap();
        out.insert(url.to_owned(), record);
    }
    out
}

/// Checks the packets of each payment in `payments` against its record:
/// none pending, the posted ones summing to its `sent` (source units) and
/// `delivered`; returns how many packets there were.
async fn packets_settled(
    database_url: &str,
    payments: &[&Value],
    records: &HashMap<String, opd_core::outgoing_payment::OutgoingPayment>,
) -> usize {
    use opd_store::PacketState;
    let store = opd_store::connect(&opd_store::ConnectOptions::new(database_url.to_owned()))
        .await
        .unwrap();
    let mut count = 0;
    for p in payments {
        let record = &records[p["id"].as_str().unwrap()];
        let packets = store.packets(record.id).await.unwrap();
        count += packets.len();
        let (mut sent, mut delivered) = (0u64, 0u64);
        for r in &packets {
            match r.state {
                PacketState::Pending => panic!("{p}: a packet still pending: {r:?}"),
                PacketState::Posted { delivered: d } => {
                    sent += r.packet.source_amount;
                    delivered += d;
                }
                PacketState::Voided => {}
            }
        }
        assert_eq!(
            (sent, delivered),
            (record.sent, record.delivered),
            "{p}: its posted packets against its totals"
        );
    }
    count
}

/// Why payments failed: the reason the worker recorded, which must be one
/// the test can explain; and the failures the test did not provoke stay
/// under `MAX_FAILED_PERCENT`.
fn assert_failure_reasons(
    records: &HashMap<String, opd_core::outgoing_payment::OutgoingPayment>,
    payments: &[Value],
    raced: &HashSet<String>,
) {
    let mut plain = (0usize, 0usize); // (payments, failed)
    for p in payments {
        let is_raced = raced.contains(p["receiver"].as_str().unwrap());
        if !is_raced {
            plain.0 += 1;
        }
        if p["failed"] != true {
            continue;
        }
        let url = p["id"].as_str().unwrap();
        let reason = records[url].error.clone().unwrap_or_default();
        let allowed = if is_raced {
            RACE_REASONS
        } else {
            CRASH_REASONS
        };
        assert!(
            allowed.contains(&reason.as_str()),
            "payment {url} failed with {reason:?} (raced: {is_raced}); expected one of {allowed:?}"
        );
        if !is_raced {
            plain.1 += 1;
        }
    }
    assert!(
        plain.1 * 100 <= plain.0 * MAX_FAILED_PERCENT,
        "{} of {} payments failed (at most {MAX_FAILED_PERCENT} % may)",
        plain.1,
        plain.0
    );
}
