//! Metrics and health: `GET /metrics` on the admin listener (no token)
//! after a payment and a badly signed request; `/healthz` and `/readyz`
//! (ready, then migrations missing); `--log-format json` and `/metrics`
//! from a real `opd serve` process.
//!
//! Every server of this test binary records into the one recorder of the
//! process (see `opd_api::metrics`), and tests run in parallel: payment
//! metrics are asserted on an asset code no other test uses, and shared
//! counters (signature failures) by how much they grew.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use opd_service::worker::Step;
use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::amount;

/// The sum of the samples of `name` whose labels include `labels`
/// (Prometheus text format); `None` when there is none.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (series_name, series_labels) = match series.split_once('{') {
            Some((n, rest)) => (n, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        if series_name != name {
            continue;
        }
        let all = labels
            .iter()
            .all(|(k, v)| series_labels.contains(&format!("{k}=\"{v}\"")));
        if all {
            *found.get_or_insert(0.0) += value.parse::<f64>().expect("a sample value");
        }
    }
    found
}

/// `GET /metrics` on the admin listener, without the admin token.
async fn scrape(admin: &str) -> String {
    let resp = reqwest::get(format!("{admin}/metrics"))
        .await
        .expect("scrape");
    assert_eq!(resp.status(), StatusCode::OK);
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    resp.text().await.unwrap()
}

/// An asset code no other test uses, so its counters are this test's.
const ASSET: &str = "MTX";

#[tokio::test]
async fn metrics_show_a_payment_its_requests_and_a_bad_signature() {
    let app = TestApp::spawn().await;
    let alice = app.create_wallet("alice", ASSET, 2).await;
    let bob = app.create_wallet("bob", ASSET, 2).await;
    let payer = app.signing_client("payer", 41).await;
    app.deposit("alice", 10_000).await;

    // bob's incoming payment, a quote, the payment, the worker.
    let (s, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": bob, "incomingAmount": amount("2500", ASSET, 2) }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let ip = ip["id"].as_str().unwrap().to_owned();
    let (s, read) = app.get(&ip).await;
    assert_eq!(s, StatusCode::OK, "{read}");
    let (s, q) = app
        .post(
            &app.url("quotes"),
            &json!({ "walletAddress": alice, "receiver": ip, "method": "ilp" }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    let token = app.outgoing_token(&payer, &alice, Value::Null).await;
    let created = payer
        .send(
            Method::POST,
            &app.url("outgoing-payments"),
            Some(&token),
            Some(&json!({ "walletAddress": alice, "quoteId": q["id"] })),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let steps = app.run_workers().await;
    assert!(
        matches!(steps.as_slice(), [Step::Completed(_)]),
        "{steps:?}"
    );

    let before = scrape(&app.admin).await;
    let asset = [("asset_code", ASSET), ("asset_scale", "2")];
    assert_eq!(
        sample(&before, "opd_outgoing_payments_created_total", &asset),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &before,
            "opd_outgoing_payments_created_amount_total",
            &asset
        ),
        Some(2500.0)
    );
    assert_eq!(
        sample(&before, "opd_outgoing_payments_completed_total", &asset),
        Some(1.0)
    );
    assert_eq!(
        sample(&before, "opd_outgoing_payments_sent_amount_total", &asset),
        Some(2500.0)
    );
    assert_eq!(
        sample(
            &before,
            "opd_outgoing_payment_duration_seconds_count",
            &asset
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&before, "opd_outgoing_payments_failed_total", &asset),
        None
    );

    // Requests by route template, never by raw path: the incoming
    // payment's id appears nowhere.
    let created_ip = [
        ("listener", "open_payments"),
        ("http_request_method", "POST"),
        ("http_route", "/incoming-payments"),
        ("http_response_status_code", "201"),
    ];
    assert!(
        sample(
            &before,
            "http_server_request_duration_seconds_count",
            &created_ip
        )
        .is_some_and(|n| n >= 1.0),
        "{before}"
    );
    let read_ip = [
        ("http_request_method", "GET"),
        ("http_route", "/incoming-payments/{id}"),
        ("http_response_status_code", "200"),
    ];
    assert!(
        sample(
            &before,
            "http_server_request_duration_seconds_bucket",
            &[read_ip.as_slice(), &[("le", "+Inf")]].concat()
        )
        .is_some_and(|n| n >= 1.0),
        "{before}"
    );
    let id = ip.rsplit('/').next().unwrap();
    assert!(!before.contains(id), "a raw path in the metrics: {id}");
    // The admin requests were measured too, by their templates.
    assert!(before.contains(r#"http_route="/wallet-addresses/{wallet}/deposits""#));

    // A request signed for another URL: refused, and counted by reason.
    let refused = [("reason", "bad_signature")];
    let n_before = sample(&before, "opd_http_signature_failures_total", &refused).unwrap_or(0.0);
    let (client, client_token) = app.client.as_ref().unwrap();
    let headers = client.sign(&Method::GET, &app.url("quotes/x"), Some(client_token), None);
    let reply = client.send_raw(Method::GET, &ip, headers, None).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], "invalid_signature");
    let after = scrape(&app.admin).await;
    let n_after = sample(&after, "opd_http_signature_failures_total", &refused).unwrap_or(0.0);
    assert!(n_after >= n_before + 1.0, "{n_before} -> {n_after}");
    assert!(
        sample(
            &after,
            "http_server_request_duration_seconds_count",
            &[read_ip[0], read_ip[1], ("http_response_status_code", "401")]
        )
        .is_some_and(|n| n >= 1.0),
        "{after}"
    );

    // The database pools are sampled at the scrape.
    assert!(
        sample(
            &after,
            "db_client_connection_max",
            &[("db_client_connection_pool_name", "sqlite_write")]
        ) == Some(1.0),
        "{after}"
    );
    assert!(after.contains("# TYPE http_server_request_duration_seconds histogram"));

    // Every other admin path still needs the token.
    let resp = reqwest::get(format!("{}/stats", app.admin)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    app.stop().await;
}

#[tokio::test]
async fn readyz_needs_the_database_migrated_and_healthz_only_the_process() {
    let mut db_file = None;
    let app = TestApp::spawn_with(Db::Sqlite, |s| {
        db_file = Some(s.data_dir.join("opd.sqlite"));
    })
    .await;
    let (s, body) = app.get_public(&app.url("healthz")).await;
    assert_eq!((s, &body), (StatusCode::OK, &json!({ "status": "ok" })));
    let (s, body) = app.get_public(&app.url("readyz")).await;
    assert_eq!((s, &body), (StatusCode::OK, &json!({ "status": "ready" })));

    // The latest migration disappears, as if an older opd made the schema.
    let conn = rusqlite::Connection::open(db_file.unwrap()).unwrap();
    conn.execute(
        "DELETE FROM _sqlx_migrations WHERE version = (SELECT max(version) FROM _sqlx_migrations)",
        [],
    )
    .unwrap();
    let (s, headers, body) = app.send(Method::GET, &app.url("readyz"), None).await;
    crate::assert_error(s, &body, 503, "migrations_pending");
    assert!(headers.contains_key("retry-after"));
    let (s, _) = app.get_public(&app.url("healthz")).await;
    assert_eq!(s, StatusCode::OK, "liveness does not ask the database");
    app.stop().await;
}

/// A child process killed when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn opd_serve_logs_json_lines_and_serves_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let any = "127.0.0.1:0";
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_opd"))
            .args(["serve", "--log-format", "json"])
            .args(["--listen", any, "--auth-listen", any, "--admin-listen", any])
            .args(["--ilp-listen", any, "--data-dir"])
            .arg(dir.path())
            .env("OPD_NODE_ID", "metrics-test-node")
            .env_remove("OPD_LOG")
            .env_remove("OPD_LOG_FORMAT")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("opd starts"),
    );
    // The first lines: JSON objects, one of them saying where it serves.
    let stderr = child.0.stderr.take().unwrap();
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let serving = loop {
        let line = lines_rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no \"opd is serving\" line; saw {seen:#?}"));
        let parsed: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        assert_eq!(parsed["node"], "metrics-test-node", "{line}");
        assert!(parsed["level"].is_string() && parsed["timestamp"].is_string());
        seen.push(line);
        if parsed["fields"]["message"] == "opd is serving" {
            break parsed;
        }
    };
    let admin = format!("http://{}", serving["fields"]["admin"].as_str().unwrap());
    let op = serving["fields"]["open_payments"].as_str().unwrap();

    let resp = reqwest::get(format!("{op}/readyz")).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let text = scrape(&admin).await;
    assert_eq!(
        sample(
            &text,
            "opd_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "http_server_request_duration_seconds_count",
            &[("listener", "open_payments"), ("http_route", "/readyz")]
        ),
        Some(1.0),
        "{text}"
    );

    // No line carries the admin token generated at this start.
    let token = std::fs::read_to_string(dir.path().join("admin-token")).unwrap();
    let token = token.trim();
    assert!(!token.is_empty());
    drop(child);
    while let Ok(line) = lines_rx.recv_timeout(Duration::from_secs(5)) {
        seen.push(line);
    }
    for line in &seen {
        assert!(
            !line.contains(token),
            "the admin token in a log line: {line}"
        );
    }
}
