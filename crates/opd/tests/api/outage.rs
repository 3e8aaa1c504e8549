//! PostgreSQL stopped under load: while the database is down, every
//! request that needs it is answered 503 JSON `service_unavailable` with
//! `Retry-After` (never a hang, a panic or another error); when it comes
//! back, the same opd process serves again without a restart, and the
//! deposits retried with their idempotency keys add up exactly once.
//! Meanwhile `/readyz` answers 503 at once and `/healthz` 200.
//!
//! The test runs its own PostgreSQL cluster (`scripts/pg-throwaway`), since
//! it stops it: the shared test cluster stays up for the other tests.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::json;

/// A PostgreSQL cluster of this test's own, removed when dropped.
struct Cluster {
    dir: String,
    url: String,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-throwaway")
}

fn run_script(args: &[&str]) -> String {
    let out = opd_testkit::output(Command::new(script()).args(args));
    assert!(
        out.status.success(),
        "pg-throwaway {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

impl Cluster {
    fn start() -> Self {
        let out = run_script(&["start"]);
        let value = |name: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("pg-throwaway printed no {name}: {out}"))
                .to_owned()
        };
        Self {
            dir: value("OPD_PG_DIR"),
            url: value("OPD_TEST_DATABASE_URL"),
        }
    }

    fn pause(&self) {
        run_script(&["pause", &self.dir]);
    }

    fn resume(&self) {
        run_script(&["resume", &self.dir]);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script()).args(["stop", &self.dir]).output();
    }
}

/// One deposit; its status, `Retry-After` and error code.
async fn deposit(
    http: &reqwest::Client,
    app: &TestApp,
    key: &str,
    amount: u64,
) -> (StatusCode, Option<String>, Option<String>) {
    let sent = http
        .request(
            Method::POST,
            format!("{}/wallet-addresses/alice/deposits", app.admin),
        )
        .bearer_auth(&app.admin_token)
        .json(&json!({"amount": amount.to_string(), "idempotencyKey": key}))
        .timeout(Duration::from_secs(20))
        .send()
        .await
        .expect("opd answers while the database is down");
    let status = sent.status();
    let retry = sent
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body: serde_json::Value = sent.json().await.expect("a JSON answer");
    let code = body["error"]["code"].as_str().map(str::to_owned);
    (status, retry, code)
}

#[tokio::test]
async fn postgres_stopped_under_load_gives_503_and_opd_recovers_without_restart() {
    let cluster = Cluster::start();
    let url = cluster.url.clone();
    let app = TestApp::spawn_with(Db::Sqlite, move |s| {
        s.common.database_url = Some(url.into());
        s.serve.migrate = true;
    })
    .await;
    app.create_wallet("alice", "USD", 2).await;
    let http = reqwest::Client::new();
    // Deposits: (key, amount), each sent until it succeeds.
    let sent = Arc::new(Mutex::new(Vec::<(String, u64)>::new()));
    let mut n = 0u64;
    let mut next = |sent: &Mutex<Vec<(String, u64)>>| {
        n += 1;
        let key = format!("load-{n}");
        sent.lock().unwrap().push((key.clone(), n));
        (key, n)
    };
    for _ in 0..20 {
        let (key, amount) = next(&sent);
        assert_eq!(
            deposit(&http, &app, &key, amount).await.0,
            StatusCode::CREATED
        );
    }

    cluster.pause();
    // Load keeps coming, 30 requests at once: every answer is a success (a
    // connection that raced the stop) or a 503 that says to come back.
    let batch: Vec<(String, u64)> = (0..30).map(|_| next(&sent)).collect();
    let answers = futures_util::future::join_all(
        batch
            .iter()
            .map(|(key, amount)| deposit(&http, &app, key, *amount)),
    )
    .await;
    let mut unavailable = 0;
    for (status, retry, code) in answers {
        match status {
            StatusCode::CREATED => {}
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(code.as_deref(), Some("service_unavailable"));
                assert_eq!(retry.as_deref(), Some("1"));
                unavailable += 1;
            }
            other => panic!("during the outage: {other} {code:?}"),
        }
    }
    assert!(unavailable >= 25, "only {unavailable} of 30 answered 503");
    // The Open Payments listener too, for what needs the database.
    let (status, body) = app.get_public(&format!("{}/nobody", app.base)).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "service_unavailable");
    // Readiness says so from its own short check (0.9 s), not after the
    // pool's 5 s wait. The bound is loose on purpose (a loaded machine
    // must not fail it): only a readiness check that waits on the pool
    // passes 4 s. Liveness does not ask the database.
    let asked = std::time::Instant::now();
    let (status, body) = app.get_public(&app.url("readyz")).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "service_unavailable");
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "{:?}",
        asked.elapsed()
    );
    let (status, body) = app.get_public(&app.url("healthz")).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    cluster.resume();
    // The same process serves again once the database is back.
    let mut recovered = false;
    for _ in 0..60 {
        let (key, amount) = next(&sent);
        if deposit(&http, &app, &key, amount).await.0 == StatusCode::CREATED {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        recovered,
        "opd did not serve again within 30 s of the database's return"
    );
    let (status, body) = app.get_public(&app.url("readyz")).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Every deposit, retried with its key, counts exactly once.
    let all = sent.lock().unwrap().clone();
    for (key, amount) in &all {
        let (status, _, code) = deposit(&http, &app, key, *amount).await;
        assert!(
            status == StatusCode::CREATED || status == StatusCode::OK,
            "{key}: {status} {code:?}"
        );
    }
    let expected: u64 = all.iter().map(|(_, a)| a).sum();
    let (status, balance) = app
        .admin(Method::GET, "/wallet-addresses/alice/balance", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{balance}");
    assert_eq!(
        balance["balance"]["value"],
        expected.to_string(),
        "{balance}"
    );
    let (status, check) = app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(status, StatusCode::OK, "{check}");
    assert_eq!(check["balanced"], true, "{check}");
}
