#![doc = include_str!("../README.md")]

mod ilp_load;
mod plain;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use ilp_load::{IlpTarget, PEER_TOKEN};
use opd_testkit::app::{grant_token_at, outgoing_token_at, IDP_SECRET};
use opd_testkit::client::SigningClient;
use reqwest::Method;
use serde::Serialize;
use serde_json::{json, Value};

#[global_allocator]
static ALLOCATOR: opd::Allocator = opd::Allocator {};

const ADMIN_TOKEN: &str = "opd-bench-admin-token-0123456789";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum Scenario {
    GetOutgoingPayment,
    CreateQuote,
    CreateIncomingPayment,
    Pay,
    /// ILP Prepares of 1 unit to one incoming payment, over ILP-over-HTTP
    /// from a peer (each a fresh STREAM packet, fulfilled).
    IlpReceive,
    /// Payments to incoming payments on a second opd server, peered over
    /// ILP-over-HTTP: incoming payment at B, quote and outgoing payment at
    /// A (which resolves and probes the receiver), sent as STREAM packets.
    PayRemote,
}

/// Whom `ilp-receive`'s packets pay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
enum IlpReceiver {
    /// One incoming payment with a large `incomingAmount`.
    IncomingPayment,
    /// bob, by his payment pointer (SPSP credentials).
    PaymentPointer,
    /// bob, by his payment pointer, with STREAM receipts (a verifier's
    /// nonce and secret on the SPSP query).
    PaymentPointerWithReceipts,
}

impl Scenario {
    /// Whether it makes payments (and measures their completion).
    fn pays(self) -> bool {
        matches!(self, Scenario::Pay | Scenario::PayRemote)
    }
}

/// Load generator for opd.
#[derive(Debug, Parser)]
#[command(name = "opd-bench", about)]
struct Args {
    #[arg(long, value_enum, default_value = "get-outgoing-payment")]
    scenario: Scenario,
    /// Keep-alive connections (each a client loop).
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// How long the measured run lasts.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Database of the server the bench starts [default: a fresh SQLite file].
    #[arg(long)]
    database_url: Option<String>,
    /// Target a running opd instead (its Open Payments base URL); needs
    /// --auth-url, --admin-url and --admin-token. Server CPU and memory are
    /// then not measured.
    #[arg(long, requires_all = ["auth_url", "admin_url", "admin_token"])]
    target: Option<String>,
    #[arg(long)]
    auth_url: Option<String>,
    #[arg(long)]
    admin_url: Option<String>,
    #[arg(long)]
    admin_token: Option<String>,
    /// The running opd's ILP-over-HTTP endpoint (for `ilp-receive`).
    #[arg(long)]
    ilp_url: Option<String>,
    /// What `ilp-receive` pays: an incoming payment's credentials, or bob's
    /// payment pointer (SPSP credentials, with STREAM receipts or not).
    #[arg(long, value_enum, default_value = "incoming-payment")]
    ilp_receiver: IlpReceiver,
    /// Nodes to start on the one PostgreSQL database of --database-url,
    /// with one public URL; requests are spread over them in turn.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Internal: run the server (the same code as `opd serve`).
    #[arg(long, hide = true, num_args = 1.., allow_hyphen_values = true)]
    serve_internal: Option<Vec<String>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    scenario: Scenario,
    /// For `ilp-receive`: whom the packets paid.
    #[serde(skip_serializing_if = "Option::is_none")]
    ilp_receiver: Option<IlpReceiver>,
    backend: String,
    connections: usize,
    seconds: f64,
    requests: u64,
    non_2xx: u64,
    requests_per_second: f64,
    /// For `pay`: completed payments per second and time to completion.
    #[serde(skip_serializing_if = "Option::is_none")]
    payments_per_second: Option<f64>,
    latency_ms: Percentiles,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_ms: Option<Percentiles>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_cpu_us_per_request: Option<f64>,
    /// For `pay-remote`: the second server's (B's) CPU per request.
    #[serde(skip_serializing_if = "Option::is_none")]
    second_server_cpu_us_per_request: Option<f64>,
    /// The load generator's own CPU per request (this process: building,
    /// signing and sending requests on the cores the servers use).
    #[serde(skip_serializing_if = "Option::is_none")]
    generator_cpu_us_per_request: Option<f64>,
    /// PostgreSQL's own CPU per request: every `postgres` process of this
    /// machine over the run (so only meaningful with the database on this
    /// machine and nothing else using it).
    #[serde(skip_serializing_if = "Option::is_none")]
    database_cpu_us_per_request: Option<f64>,
    /// Nodes serving the run (on one database).
    nodes: usize,
    /// SQL round trips (statements, begins, commits) the server made per
    /// request of the run, from its own counter (`GET /stats`).
    sql_round_trips_per_request: Option<f64>,
    /// For `pay`: round trips per completed payment, polls included.
    sql_round_trips_per_payment: Option<f64>,
    /// For `pay`: round trips of each step of one payment made alone.
    round_trip_profile: Option<Vec<(String, u64)>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_peak_rss_mb: Option<f64>,
    ed25519_verify_us: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu_per_request_over_verify: Option<f64>,
}

#[derive(Debug, Serialize, Default)]
struct Percentiles {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

fn percentiles(mut v: Vec<f64>) -> Percentiles {
    if v.is_empty() {
        return Percentiles::default();
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    Percentiles {
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
        max: v[v.len() - 1],
    }
}

/// The server the bench runs against.
struct Server {
    child: Option<Child>,
    base: String,
    auth: String,
    admin: String,
    admin_token: String,
    /// The ILP-over-HTTP endpoint.
    ilp: String,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Server {
    /// Starts one node; `public` gives the (Open Payments, authorization)
    /// URLs it publishes when it is not the first of several.
    async fn start(
        database_url: Option<&str>,
        public: Option<(&str, &str)>,
        extra: &[String],
    ) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let (op, auth, admin, ilp) = (free_port()?, free_port()?, free_port()?, free_port()?);
        let db = match database_url {
            Some(u) => u.to_owned(),
            None => format!(
                "sqlite://{}?mode=rwc",
                dir.path().join("bench.sqlite").display()
            ),
        };
        let args = vec![
            "opd".to_owned(),
            "serve".into(),
            format!("--listen=127.0.0.1:{op}"),
            format!("--auth-listen=127.0.0.1:{auth}"),
            format!("--admin-listen=127.0.0.1:{admin}"),
            format!("--ilp-listen=127.0.0.1:{ilp}"),
            format!("--admin-token={ADMIN_TOKEN}"),
            format!("--idp-secret={IDP_SECRET}"),
            format!("--data-dir={}", dir.path().display()),
            format!("--database-url={db}"),
            "--migrate".into(),
            // The bench's few clients create far more than any real client
            // may; the limit itself costs a map lookup per creation.
            "--create-requests-per-minute=0".into(),
        ];
        let mut args = args;
        args.extend(extra.iter().cloned());
        if let Some((op_url, auth_url)) = public {
            args.push(format!("--public-url={op_url}"));
            args.push(format!("--auth-public-url={auth_url}"));
        }
        let child = Command::new(std::env::current_exe()?)
            .arg("--serve-internal")
            .args(&args)
            .current_dir(dir.path())
            .env_remove("OPD_CONFIG")
            .env("OPD_LOG", "warn")
            // Every node of one database seals secrets with one key.
            .env(
                "OPD_SECRETS_KEY",
                "5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7",
            )
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start the server")?;
        let server = Self {
            child: Some(child),
            base: format!("http://127.0.0.1:{op}"),
            auth: format!("http://127.0.0.1:{auth}"),
            admin: format!("http://127.0.0.1:{admin}"),
            admin_token: ADMIN_TOKEN.into(),
            ilp: format!("http://127.0.0.1:{ilp}/ilp"),
            _dir: Some(dir),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let http = reqwest::Client::new();
        loop {
            if let Ok(r) = http.get(format!("{}/healthz", server.base)).send().await {
                if r.status().is_success() {
                    return Ok(server);
                }
            }
            if Instant::now() > deadline {
                bail!("the server did not start");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    async fn admin_get(&self, path: &str) -> anyhow::Result<Value> {
        let r = reqwest::Client::new()
            .get(format!("{}{path}", self.admin))
            .bearer_auth(&self.admin_token)
            .send()
            .await?;
        Ok(r.json().await?)
    }

    async fn admin(&self, method: Method, path: &str, body: Value) -> anyhow::Result<Value> {
        let r = reqwest::Client::new()
            .request(method, format!("{}{path}", self.admin))
            .bearer_auth(&self.admin_token)
            .json(&body)
            .send()
            .await?;
        let status = r.status();
        let v: Value = r.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("admin {path}: {status} {v}");
        }
        Ok(v)
    }
}

/// utime + stime of a process, in microseconds.
fn cpu_us(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // Linux reports clock ticks of 1/100 s.
    Some((utime + stime) * 10_000.0)
}

/// utime + stime of every process named `postgres` on this machine, in
/// microseconds.
fn postgres_cpu_us() -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "postgres")
        })
        .filter_map(cpu_us)
        .sum()
}

/// Peak resident memory of a process, in MB.
fn peak_rss_mb(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The cost of one Ed25519 verification on this machine, now.
fn ed25519_verify_us() -> f64 {
    use ed25519_dalek::{Signer, SigningKey};
    let key = SigningKey::from_bytes(&[7; 32]);
    let msg = b"\"@method\": GET\n\"@target-uri\": http://127.0.0.1/outgoing-payments/x\n\"authorization\": GNAP token\n\"@signature-params\": (\"@method\" \"@target-uri\" \"authorization\");keyid=\"k\";created=1";
    let sig = key.sign(msg);
    let vk = key.verifying_key();
    let n = 3000;
    let start = Instant::now();
    for _ in 0..n {
        let _ = std::hint::black_box(vk.verify_strict(std::hint::black_box(msg), &sig));
    }
    start.elapsed().as_secs_f64() * 1e6 / f64::from(n)
}

/// Everything a scenario needs.
struct Setup {
    base: String,
    /// Every node's own base URL (requests to `base` are sent to one of
    /// them in turn, signed for `base`, as through a load balancer).
    nodes: Vec<String>,
    client: SigningClient,
    ip_token: String,
    pay_token: String,
    alice: String,
    bob: String,
    outgoing_payment: String,
    /// For `ilp-receive`: where and what to send.
    ilp: Option<IlpTarget>,
    /// The plain connections the signed requests go on.
    origins: plain::Origins,
    /// For `pay-remote`: the second server's setup (its bob receives).
    remote: Option<Box<Setup>>,
}

async fn setup(server: &Server) -> anyhow::Result<Setup> {
    let suffix = std::process::id();
    let mut urls = Vec::new();
    for path in ["alice", "bob", "benchclient"] {
        let path = format!("{path}{suffix}");
        let v = server
            .admin(
                Method::POST,
                "/wallet-addresses",
                json!({ "path": path, "assetCode": "USD", "assetScale": 2 }),
            )
            .await?;
        urls.push((path, v["url"].as_str().unwrap_or_default().to_owned()));
    }
    let (alice_path, alice) = urls[0].clone();
    let bob = urls[1].1.clone();
    let (client_path, client_url) = urls[2].clone();
    let client = SigningClient::new(&client_url, "bench-key", 42);
    server
        .admin(
            Method::POST,
            &format!("/wallet-addresses/{client_path}/keys"),
            json!({ "jwk": serde_json::to_value(client.jwk())? }),
        )
        .await?;
    server
        .admin(
            Method::POST,
            &format!("/wallet-addresses/{alice_path}/deposits"),
            json!({ "amount": "9000000000000000000", "idempotencyKey": format!("bench-{suffix}") }),
        )
        .await?;
    let ip_token = grant_token_at(
        &server.auth,
        &client,
        json!([
            { "type": "incoming-payment", "actions": ["create", "read", "list"] },
            { "type": "quote", "actions": ["create", "read"] }
        ]),
    )
    .await;
    let pay_token = outgoing_token_at(&server.auth, &client, &alice, Value::Null).await;
    let origins = plain::Origins::new(client.http.clone());
    let mut s = Setup {
        base: server.base.clone(),
        nodes: vec![server.base.clone()],
        client,
        ip_token,
        pay_token,
        alice,
        bob,
        outgoing_payment: String::new(),
        ilp: None,
        origins,
        remote: None,
    };
    let (op, _) = pay_once(&s, 0).await?;
    s.outgoing_payment = op;
    Ok(s)
}

/// A response of a signed request.
struct Reply {
    status: reqwest::StatusCode,
    body: Value,
}

impl Setup {
    /// A signed request for `url` (a public URL), sent to node `n` of the
    /// cluster (in turn).
    async fn send(
        &self,
        n: u64,
        method: Method,
        url: &str,
        token: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<Reply> {
        let bytes = body.map(serde_json::to_vec).transpose()?;
        let headers = self
            .client
            .sign(&method, url, Some(token), bytes.as_deref());
        let node = &self.nodes[usize::try_from(n).unwrap_or(0) % self.nodes.len()];
        let target = match url.strip_prefix(&self.base) {
            Some(rest) => format!("{node}{rest}"),
            None => url.to_owned(),
        };
        let body = bytes::Bytes::from(bytes.unwrap_or_default());
        let (status, text) = self.origins.send(method, &target, &headers, body).await?;
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&text)
                .with_context(|| format!("{status}: {}", String::from_utf8_lossy(&text)))?
        };
        Ok(Reply { status, body })
    }
}

async fn post(s: &Setup, n: u64, path: &str, token: &str, body: Value) -> anyhow::Result<Value> {
    let url = format!("{}/{path}", s.base);
    let r = s.send(n, Method::POST, &url, token, Some(&body)).await?;
    if !r.status.is_success() {
        bail!("POST {path}: {} {}", r.status, r.body);
    }
    Ok(r.body)
}

/// Incoming payment → quote → outgoing payment; returns the payment's URL
/// and the number of requests made.
async fn pay_once(s: &Setup, n: u64) -> anyhow::Result<(String, u64)> {
    let amount =
        json!({ "value": (100 + n % 1000).to_string(), "assetCode": "USD", "assetScale": 2 });
    // The receiver: bob here, or bob on the second server.
    let at = s.remote.as_deref().unwrap_or(s);
    let ip = post(
        at,
        n,
        "incoming-payments",
        &at.ip_token,
        // A distinct body per payment: identical signed POSTs within one
        // second would be answered with the first response (no new work).
        json!({ "walletAddress": at.bob, "incomingAmount": amount, "metadata": { "n": n } }),
    )
    .await?;
    let q = post(
        s,
        n,
        "quotes",
        &s.ip_token,
        json!({ "walletAddress": s.alice, "receiver": ip["id"], "method": "ilp" }),
    )
    .await?;
    let p = post(
        s,
        n,
        "outgoing-payments",
        &s.pay_token,
        json!({ "walletAddress": s.alice, "quoteId": q["id"] }),
    )
    .await?;
    Ok((p["id"].as_str().unwrap_or_default().to_owned(), 3))
}

/// The `opd serve` arguments a scenario needs besides the bench's own.
fn server_args(scenario: Scenario, ilp_address: &str) -> Vec<String> {
    match scenario {
        // The two servers reach each other on loopback.
        Scenario::PayRemote => vec![
            format!("--ilp-address={ilp_address}"),
            "--outbound-allow=127.0.0.1".into(),
        ],
        _ => Vec::new(),
    }
}

/// Peers `a` and `b` both ways (USD/2), `b` holding ample liquidity for
/// `a`.
async fn peer_servers(a: &Server, b: &Server) -> anyhow::Result<()> {
    let usd = json!({ "code": "USD", "scale": 2 });
    a.admin(
        Method::POST,
        "/peers",
        json!({ "name": "b", "staticIlpAddress": "test.b", "asset": usd, "routes": ["test.b"],
                "http": { "outgoing": { "endpoint": b.ilp, "authToken": "bench-a-to-b" },
                          "incoming": { "authTokens": ["bench-b-to-a"] } } }),
    )
    .await?;
    let a_at_b = b
        .admin(
            Method::POST,
            "/peers",
            json!({ "name": "a", "staticIlpAddress": "test.a", "asset": usd, "routes": ["test.a"],
                    "http": { "outgoing": { "endpoint": a.ilp, "authToken": "bench-b-to-a" },
                              "incoming": { "authTokens": ["bench-a-to-b"] } } }),
        )
        .await?;
    let id = a_at_b["id"].as_str().unwrap_or_default();
    b.admin(
        Method::POST,
        &format!("/peers/{id}/deposits"),
        json!({ "amount": "9000000000000000000", "idempotencyKey": "bench-liquidity" }),
    )
    .await?;
    Ok(())
}

/// Every node's SQL round trips so far, added up.
async fn total_round_trips(nodes: &[&Server]) -> Option<u64> {
    let mut total = 0;
    for n in nodes {
        total += round_trips(n).await?;
    }
    Some(total)
}

/// Every node's CPU time so far, added up (µs).
fn total_cpu_us(nodes: &[&Server]) -> Option<f64> {
    nodes.iter().map(|n| n.pid().and_then(cpu_us)).sum()
}

/// The server's SQL round trips so far, when it reports them.
async fn round_trips(server: &Server) -> Option<u64> {
    let stats = server.admin_get("/stats").await.ok()?;
    stats["sqlRoundTrips"].as_u64()
}

/// How many payments [`profile_payments`] makes.
const PROFILED: usize = 15;

/// [`profile_payment`] several times; for each step the fewest round trips
/// seen. The server's background work (idle payment loops looking for
/// payments created elsewhere, housekeeping, webhook deliveries) only ever
/// adds to a step's count, and some payments see none of it.
async fn profile_payments(server: &Server, s: &Setup) -> anyhow::Result<Vec<(String, u64)>> {
    let mut seen = Vec::with_capacity(PROFILED);
    for _ in 0..PROFILED {
        seen.push(profile_payment(server, s).await?);
    }
    let fewest = |f: fn(&Profiled) -> u64| seen.iter().map(f).min().unwrap_or(0);
    let per_poll = fewest(|p| p.per_poll);
    // The polls that watched the payment are reads of one poll's cost.
    let paid = seen
        .iter()
        .map(|p| p.paid_and_polls.saturating_sub(p.polls * per_poll))
        .min()
        .unwrap_or(0);
    Ok(vec![
        ("create-incoming-payment".to_owned(), fewest(|p| p.incoming)),
        ("create-quote".to_owned(), fewest(|p| p.quote)),
        ("outgoing payment: create + send".to_owned(), paid),
        ("get-outgoing-payment".to_owned(), per_poll),
    ])
}

/// The round trips of one payment made alone.
struct Profiled {
    incoming: u64,
    quote: u64,
    /// The outgoing payment created and sent (the worker sends it as soon
    /// as it is created, often before the creation's response arrives, so
    /// the two are counted together), with the polls that watched for it.
    paid_and_polls: u64,
    polls: u64,
    /// One more poll, of the completed payment.
    per_poll: u64,
}

/// One payment made alone, step by step, with the server's round trips of
/// each step: what a payment costs the database.
async fn profile_payment(server: &Server, s: &Setup) -> anyhow::Result<Profiled> {
    let trips = || async {
        round_trips(server)
            .await
            .context("the server reports no round trips")
    };
    let amount = json!({ "value": "1", "assetCode": "USD", "assetScale": 2 });
    let t0 = trips().await?;
    let ip = post(s, 0, "incoming-payments", &s.ip_token,
        json!({ "walletAddress": s.bob, "incomingAmount": amount, "metadata": { "profile": true } })).await?;
    let t1 = trips().await?;
    let q = post(
        s,
        0,
        "quotes",
        &s.ip_token,
        json!({ "walletAddress": s.alice, "receiver": ip["id"], "method": "ilp" }),
    )
    .await?;
    let t2 = trips().await?;
    let p = post(
        s,
        0,
        "outgoing-payments",
        &s.pay_token,
        json!({ "walletAddress": s.alice, "quoteId": q["id"] }),
    )
    .await?;
    let payment = p["id"].as_str().unwrap_or_default().to_owned();
    let get = |url: String| async move { s.send(0, Method::GET, &url, &s.pay_token, None).await };
    let mut polls = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        polls += 1;
        let r = get(payment.clone()).await?;
        if r.body["sentAmount"]["value"] != "0" {
            break;
        }
        if Instant::now() > deadline {
            bail!("the profiled payment did not complete");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let t3 = trips().await?;
    get(payment.clone()).await?;
    let t4 = trips().await?;
    Ok(Profiled {
        incoming: t1 - t0,
        quote: t2 - t1,
        paid_and_polls: t3 - t2,
        polls,
        per_poll: t4 - t3,
    })
}

/// One request of a scenario; `Ok(true)` for a 2xx.
async fn one_request(s: &Setup, scenario: Scenario, n: u64) -> anyhow::Result<bool> {
    let (method, url, token, body) = match scenario {
        Scenario::GetOutgoingPayment => {
            (Method::GET, s.outgoing_payment.clone(), &s.pay_token, None)
        }
        Scenario::CreateQuote => {
            // Distinct bodies: identical signed POSTs within one second
            // would be answered with the first response (no new work).
            let debit = json!({ "value": (1 + n % 100_000).to_string(), "assetCode": "USD", "assetScale": 2 });
            (
                Method::POST,
                format!("{}/quotes", s.base),
                &s.ip_token,
                Some(
                    json!({ "walletAddress": s.alice, "receiver": receiver_for(s).await?, "method": "ilp", "debitAmount": debit }),
                ),
            )
        }
        Scenario::CreateIncomingPayment => (
            Method::POST,
            format!("{}/incoming-payments", s.base),
            &s.ip_token,
            Some(json!({ "walletAddress": s.bob, "metadata": { "n": n } })),
        ),
        // `pay` runs its own loop (see `run`).
        Scenario::Pay | Scenario::PayRemote => return Ok(false),
        Scenario::IlpReceive => {
            let Some(target) = &s.ilp else {
                bail!("ilp-receive was not set up");
            };
            return target.send(n).await;
        }
    };
    let r = s.send(n, method, &url, token, body.as_ref()).await?;
    Ok(r.status.is_success())
}

/// Sets up `ilp-receive`: a peer with ample liquidity and the receiver's
/// STREAM credentials: one incoming payment that takes far more than the
/// run sends, or bob's payment pointer.
async fn ilp_setup(server: &Server, s: &Setup, receiver: IlpReceiver) -> anyhow::Result<IlpTarget> {
    let peer = server
        .admin(
            Method::POST,
            "/peers",
            json!({ "name": "bench-peer", "staticIlpAddress": "test.bench-peer",
                    "asset": { "code": "USD", "scale": 2 },
                    "http": { "incoming": { "authTokens": [PEER_TOKEN] } } }),
        )
        .await?;
    let id = peer["id"].as_str().unwrap_or_default();
    server
        .admin(
            Method::POST,
            &format!("/peers/{id}/deposits"),
            json!({ "amount": "9000000000000000000", "idempotencyKey": "bench-liquidity" }),
        )
        .await?;
    if receiver != IlpReceiver::IncomingPayment {
        let (address, secret) = spsp_credentials(s, receiver).await?;
        return IlpTarget::new(&server.ilp, s.client.http.clone(), address, secret);
    }
    let amount = json!({ "value": "9000000000000000000", "assetCode": "USD", "assetScale": 2 });
    let ip = post(
        s,
        0,
        "incoming-payments",
        &s.ip_token,
        json!({ "walletAddress": s.bob, "incomingAmount": amount }),
    )
    .await?;
    let method = &ip["methods"][0];
    let secret = base64::Engine::decode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        method["sharedSecret"].as_str().unwrap_or_default(),
    )?;
    let secret = secret
        .try_into()
        .map_err(|_| anyhow::anyhow!("the shared secret is not 32 bytes"))?;
    let address = method["ilpAddress"].as_str().unwrap_or_default().to_owned();
    IlpTarget::new(&server.ilp, s.client.http.clone(), address, secret)
}

/// bob's SPSP credentials, with receipts for a verifier when asked.
async fn spsp_credentials(s: &Setup, receiver: IlpReceiver) -> anyhow::Result<(String, [u8; 32])> {
    use base64::Engine as _;
    let mut query = s
        .client
        .http
        .get(&s.bob)
        .header(reqwest::header::ACCEPT, "application/spsp4+json");
    if receiver == IlpReceiver::PaymentPointerWithReceipts {
        let b64 = base64::engine::general_purpose::STANDARD;
        query = query
            .header("Receipt-Nonce", b64.encode(rand::random::<[u8; 16]>()))
            .header("Receipt-Secret", b64.encode(rand::random::<[u8; 32]>()));
    }
    let body: Value = query.send().await?.error_for_status()?.json().await?;
    let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body["shared_secret"].as_str().unwrap_or_default())?;
    let secret = secret
        .try_into()
        .map_err(|_| anyhow::anyhow!("the shared secret is not 32 bytes"))?;
    let address = body["destination_account"].as_str().unwrap_or_default();
    Ok((address.to_owned(), secret))
}

/// The receiver used by `create-quote`: one open incoming payment.
async fn receiver_for(s: &Setup) -> anyhow::Result<String> {
    static RECEIVER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(r) = RECEIVER.get() {
        return Ok(r.clone());
    }
    let ip = post(
        s,
        0,
        "incoming-payments",
        &s.ip_token,
        json!({ "walletAddress": s.bob }),
    )
    .await?;
    let id = ip["id"].as_str().unwrap_or_default().to_owned();
    Ok(RECEIVER.get_or_init(|| id).clone())
}

async fn run(args: Args) -> anyhow::Result<Report> {
    let (server, backend) = match &args.target {
        Some(base) => (
            Server {
                child: None,
                base: base.clone(),
                auth: args.auth_url.clone().unwrap_or_default(),
                admin: args.admin_url.clone().unwrap_or_default(),
                admin_token: args.admin_token.clone().unwrap_or_default(),
                ilp: args.ilp_url.clone().unwrap_or_default(),
                _dir: None,
            },
            "external".to_owned(),
        ),
        None => {
            let backend = if args
                .database_url
                .as_deref()
                .is_some_and(|u| u.starts_with("postgres"))
            {
                "postgres"
            } else {
                "sqlite"
            };
            (
                Server::start(
                    args.database_url.as_deref(),
                    None,
                    &server_args(args.scenario, "test.a"),
                )
                .await?,
                backend.to_owned(),
            )
        }
    };
    // More nodes on the same database, publishing the first one's URLs.
    let mut others = Vec::new();
    if args.nodes > 1 {
        let Some(url) = args
            .database_url
            .as_deref()
            .filter(|u| u.starts_with("postgres"))
        else {
            bail!("--nodes needs a PostgreSQL --database-url");
        };
        for _ in 1..args.nodes {
            others.push(
                Server::start(
                    Some(url),
                    Some((&server.base, &server.auth)),
                    &server_args(args.scenario, "test.a"),
                )
                .await?,
            );
        }
    }
    // `pay-remote`: a second server, peered, whose bob receives.
    let second = match args.scenario {
        Scenario::PayRemote => {
            let b = Server::start(None, None, &server_args(args.scenario, "test.b")).await?;
            peer_servers(&server, &b).await?;
            Some(b)
        }
        _ => None,
    };
    let mut setup = match &second {
        Some(b) => {
            let remote = setup(b).await?;
            let mut s = setup(&server).await?;
            s.remote = Some(Box::new(remote));
            s
        }
        None => setup(&server).await?,
    };
    setup.nodes.extend(others.iter().map(|o| o.base.clone()));
    if args.scenario == Scenario::IlpReceive {
        setup.ilp = Some(ilp_setup(&server, &setup, args.ilp_receiver).await?);
    }
    let setup = Arc::new(setup);
    let all: Vec<&Server> = std::iter::once(&server).chain(&others).collect();
    if args.scenario == Scenario::CreateQuote {
        receiver_for(&setup).await?;
    }
    let verify_us = ed25519_verify_us();
    let profile = match args.scenario {
        Scenario::Pay => Some(profile_payments(&server, &setup).await?),
        _ => None,
    };
    let trips_before = total_round_trips(&all).await;
    let cpu_before = total_cpu_us(&all);
    let second_pid = second.as_ref().and_then(Server::pid);
    let second_cpu_before = second_pid.and_then(cpu_us);
    let generator_cpu_before = cpu_us(std::process::id());
    let postgres = backend == "postgres";
    let database_cpu_before = postgres.then(postgres_cpu_us);
    let stop = Arc::new(AtomicBool::new(false));
    let counter = Arc::new(AtomicU64::new(1));
    let requests = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(AtomicU64::new(0));
    let completed = Arc::new(AtomicU64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let completions = Arc::new(Mutex::new(Vec::<f64>::new()));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..args.connections {
        let (setup, stop, counter, requests, failures, completed, latencies, completions) = (
            setup.clone(),
            stop.clone(),
            counter.clone(),
            requests.clone(),
            failures.clone(),
            completed.clone(),
            latencies.clone(),
            completions.clone(),
        );
        let scenario = args.scenario;
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            let mut done_times = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                let t0 = Instant::now();
                if scenario.pays() {
                    match pay_once(&setup, n).await {
                        Ok((payment, made)) => {
                            requests.fetch_add(made, Ordering::Relaxed);
                            mine.push(t0.elapsed().as_secs_f64() * 1000.0);
                            // Wait for the worker to complete it: a first look
                            // after 5 ms (a payment is seldom done sooner, and
                            // each look is a signed request both sides pay for),
                            // then as below.
                            let deadline = Instant::now() + Duration::from_secs(30);
                            tokio::time::sleep(Duration::from_millis(5)).await;
                            loop {
                                requests.fetch_add(1, Ordering::Relaxed);
                                let r = setup
                                    .send(n, Method::GET, &payment, &setup.pay_token, None)
                                    .await;
                                match r {
                                    Ok(r)
                                        if r.status.is_success()
                                            && r.body["sentAmount"]["value"] != "0" =>
                                    {
                                        completed.fetch_add(1, Ordering::Relaxed);
                                        done_times.push(t0.elapsed().as_secs_f64() * 1000.0);
                                        break;
                                    }
                                    Ok(r) if r.status.is_success() && Instant::now() < deadline => {
                                        // Every 2 ms while a payment is young (most complete
                                        // within 30 ms: polls 10 ms apart put up to 10 ms of
                                        // waiting on each, and on 8 connections that, not the
                                        // servers, bounded `pay-remote`), then gently: the
                                        // polls share the server with the payments.
                                        let young = t0.elapsed() < Duration::from_millis(50);
                                        let pause = if young { 2 } else { 10 };
                                        tokio::time::sleep(Duration::from_millis(pause)).await;
                                    }
                                    _ => {
                                        failures.fetch_add(1, Ordering::Relaxed);
                                        break;
                                    }
                                }
                            }
                        }
                        Err(e) => {
                            eprintln!("pay failed: {e}");
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    continue;
                }
                let ok = one_request(&setup, scenario, n).await.unwrap_or(false);
                requests.fetch_add(1, Ordering::Relaxed);
                if !ok {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
                mine.push(t0.elapsed().as_secs_f64() * 1000.0);
            }
            if let Ok(mut l) = latencies.lock() {
                l.extend(mine);
            }
            if let Ok(mut c) = completions.lock() {
                c.extend(done_times);
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = total_cpu_us(&all);
    let second_cpu_after = second_pid.and_then(cpu_us);
    let generator_cpu_after = cpu_us(std::process::id());
    let database_cpu = database_cpu_before.map(|b| postgres_cpu_us() - b);
    let trips = match (trips_before, total_round_trips(&all).await) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b) as f64),
        _ => None,
    };
    let requests = requests.load(Ordering::Relaxed);
    let payments = completed.load(Ordering::Relaxed);
    let per_request = |before: Option<f64>, after: Option<f64>| match (before, after) {
        (Some(b), Some(a)) if requests > 0 => Some((a - b) / requests as f64),
        _ => None,
    };
    let cpu_per_request = per_request(cpu_before, cpu_after);
    let latency = percentiles(latencies.lock().map(|l| l.clone()).unwrap_or_default());
    let completion = args
        .scenario
        .pays()
        .then(|| percentiles(completions.lock().map(|c| c.clone()).unwrap_or_default()));
    Ok(Report {
        scenario: args.scenario,
        ilp_receiver: (args.scenario == Scenario::IlpReceive).then_some(args.ilp_receiver),
        backend,
        connections: args.connections,
        seconds: elapsed,
        requests,
        non_2xx: failures.load(Ordering::Relaxed),
        requests_per_second: requests as f64 / elapsed,
        payments_per_second: args.scenario.pays().then(|| payments as f64 / elapsed),
        latency_ms: latency,
        completion_ms: completion,
        server_cpu_us_per_request: cpu_per_request,
        second_server_cpu_us_per_request: per_request(second_cpu_before, second_cpu_after),
        generator_cpu_us_per_request: per_request(generator_cpu_before, generator_cpu_after),
        database_cpu_us_per_request: database_cpu
            .filter(|_| requests > 0)
            .map(|c| c / requests as f64),
        nodes: args.nodes,
        sql_round_trips_per_request: trips.filter(|_| requests > 0).map(|t| t / requests as f64),
        sql_round_trips_per_payment: trips
            .filter(|_| args.scenario.pays() && payments > 0)
            .map(|t| t / payments as f64),
        round_trip_profile: profile,
        server_peak_rss_mb: all
            .iter()
            .filter_map(|n| n.pid().and_then(peak_rss_mb))
            .reduce(f64::max),
        ed25519_verify_us: verify_us,
        cpu_per_request_over_verify: cpu_per_request.map(|c| c / verify_us),
    })
}

fn print_table(r: &Report) {
    println!("scenario                 {:?} ({})", r.scenario, r.backend);
    if let Some(receiver) = r.ilp_receiver {
        println!("paying                   {receiver:?}");
    }
    println!("connections              {}", r.connections);
    println!("nodes                    {}", r.nodes);
    println!("duration                 {:.1} s", r.seconds);
    println!("requests                 {}", r.requests);
    println!("non-2xx                  {}", r.non_2xx);
    println!("requests/s               {:.0}", r.requests_per_second);
    if let Some(p) = r.payments_per_second {
        println!("completed payments/s     {p:.0}");
    }
    let l = &r.latency_ms;
    println!(
        "latency ms p50/p90/p99/max  {:.2} / {:.2} / {:.2} / {:.2}",
        l.p50, l.p90, l.p99, l.max
    );
    if let Some(c) = &r.completion_ms {
        println!(
            "time to completion ms p50/p90/p99/max  {:.1} / {:.1} / {:.1} / {:.1}",
            c.p50, c.p90, c.p99, c.max
        );
    }
    if let Some(c) = r.server_cpu_us_per_request {
        println!("server CPU per request   {c:.1} µs");
    }
    if let Some(c) = r.second_server_cpu_us_per_request {
        println!("second server CPU/request {c:.1} µs");
    }
    if let Some(c) = r.generator_cpu_us_per_request {
        println!("load generator CPU/request {c:.1} µs (this process)");
    }
    if let Some(c) = r.database_cpu_us_per_request {
        println!("PostgreSQL CPU per request {c:.1} µs (every postgres process here)");
    }
    if let Some(m) = r.server_peak_rss_mb {
        println!("server peak RSS          {m:.1} MB");
    }
    if let Some(t) = r.sql_round_trips_per_request {
        println!("SQL round trips/request  {t:.1}");
    }
    if let Some(t) = r.sql_round_trips_per_payment {
        println!("SQL round trips/payment  {t:.1} (3 API creates, the worker, the polls)");
    }
    for (step, trips) in r.round_trip_profile.iter().flatten() {
        println!("  one payment alone (fewest of {PROFILED}): {step:<26} {trips} round trips");
    }
    println!("one Ed25519 verification {:.1} µs", r.ed25519_verify_us);
    if let Some(x) = r.cpu_per_request_over_verify {
        println!("server CPU / verification {x:.2}");
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(server_args) = args.serve_internal {
        return serve_internal(server_args);
    }
    let json = args.json;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = runtime.block_on(run(args))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_table(&report);
    }
    if report.non_2xx > 0 {
        bail!("{} requests did not succeed", report.non_2xx);
    }
    Ok(())
}

/// The server side: exactly what `opd serve` runs.
fn serve_internal(args: Vec<String>) -> anyhow::Result<()> {
    use opd::cli::{Cli, Command};
    let cli = Cli::parse_from(&args);
    let Command::Serve(_) = cli.command else {
        bail!("only serve is supported")
    };
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let settings =
            opd::config::Settings::from_command_line(args, opd::config::ConfigFile::default())?;
        let running = opd::app::start(
            settings,
            Arc::new(opd_core::SystemClock),
            Arc::new(opd_core::OsRandom),
        )
        .await?;
        running.serve_until(std::future::pending()).await
    })
}
