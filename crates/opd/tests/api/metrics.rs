//! Metrics and health: `GET /metrics` on the admin listener (no token)
//! after a payment and a badly signed request, after ILP packets both
//! ways, and through webhook deliveries; `/healthz` and `/readyz` (ready,
//! then migrations missing); `--log-format json` and `/metrics` from a
//! real `opd serve` process.
//!
//! Every server of this test binary records into the one recorder of the
//! process (see `opd_api::metrics`), and tests run in parallel: payment
//! metrics are asserted on an asset code no other test uses, and shared
//! counters (signature failures) by how much they grew.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use opd_service::payments::outgoing::lifecycle::Step;
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
    // bob's side: received from a wallet address here, and completed.
    assert_eq!(
        sample(
            &before,
            "opd_incoming_payments_received_amount_total",
            &[asset[0], asset[1], ("via", "local")]
        ),
        Some(2500.0)
    );
    assert_eq!(
        sample(&before, "opd_incoming_payments_completed_total", &asset),
        Some(1.0)
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
        db_file = Some(s.common.data_dir.join("opd.sqlite"));
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
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("opd starts"),
    );
    let stdout = child.0.stdout.take().unwrap();
    let printed = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
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
    // Nor on standard output, which says where the token is instead.
    let printed = printed.join().unwrap();
    assert!(
        printed.iter().all(|l| !l.contains(token)),
        "the admin token printed: {printed:?}"
    );
    let file = dir.path().join("admin-token");
    assert!(
        printed
            .iter()
            .any(|l| l.contains("admin token") && l.contains(&*file.to_string_lossy())),
        "{printed:?}"
    );
}

/// Creates a peer through the admin API, funded with `deposit`.
async fn peer(app: &TestApp, body: Value, deposit: u64) {
    let (s, v) = app.admin(Method::POST, "/peers", Some(&body)).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    if deposit == 0 {
        return;
    }
    let id = v["id"].as_str().unwrap();
    let (s, v) = app
        .admin(
            Method::POST,
            &format!("/peers/{id}/deposits"),
            Some(&json!({ "amount": deposit.to_string(), "idempotencyKey": format!("fund-{id}") })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}

/// POSTs `body` to the ILP-over-HTTP listener as the peer of `token`; the
/// answer's bytes.
async fn post_packet(app: &TestApp, token: &str, body: Vec<u8>) -> Vec<u8> {
    let resp = reqwest::Client::new()
        .post(&app.ilp)
        .bearer_auth(token)
        .header("content-type", "application/octet-stream")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    resp.bytes().await.unwrap().to_vec()
}

#[tokio::test]
async fn metrics_count_ilp_packets_both_ways_by_outcome_and_code() {
    let app = TestApp::spawn().await;
    let usd = json!({ "code": "USD", "scale": 2 });
    peer(
        &app,
        json!({ "name": "sender", "staticIlpAddress": "test.sender", "asset": usd,
                "http": { "incoming": { "authTokens": ["sender-to-opd"] } } }),
        1000,
    )
    .await;
    // A next hop where nothing listens (the discard port).
    peer(
        &app,
        json!({ "name": "down", "staticIlpAddress": "test.down", "asset": usd, "routes": ["test.down"],
                "http": { "outgoing": { "endpoint": "http://127.0.0.1:9/ilp", "authToken": "x" } } }),
        0,
    )
    .await;
    let before = scrape(&app.admin).await;
    let count = |text: &str, labels: &[(&str, &str)]| {
        sample(text, "opd_ilp_packets_total", labels).unwrap_or(0.0)
    };
    let incoming_f01 = [
        ("direction", "incoming"),
        ("outcome", "reject"),
        ("code", "F01"),
    ];
    let incoming_t01 = [
        ("direction", "incoming"),
        ("outcome", "reject"),
        ("code", "T01"),
    ];
    let outgoing = [("direction", "outgoing"), ("outcome", "unreachable")];

    // Not a Prepare: F01.
    let reply = post_packet(&app, "sender-to-opd", b"not a packet".to_vec()).await;
    assert_eq!(reply.first(), Some(&14), "a Reject");
    // A Prepare for the next hop, which cannot be reached: T01.
    let expires = {
        use opd_core::Clock as _;
        app.clock.now().unix_millis() + 30_000
    };
    let prepare = opd_ilp::packet::Prepare {
        amount: 10,
        expires_at: opd_ilp::Timestamp::from_unix_millis(expires).unwrap(),
        execution_condition: [7; 32],
        destination: opd_ilp::IlpAddress::new("test.down.somebody").unwrap(),
        data: Vec::new(),
    };
    let reply = post_packet(&app, "sender-to-opd", prepare.encode()).await;
    match opd_ilp::packet::Packet::decode(&reply).unwrap() {
        opd_ilp::packet::Packet::Reject(r) => {
            assert_eq!(r.code, opd_ilp::ErrorCode::T01_PEER_UNREACHABLE)
        }
        other => panic!("{other:?}"),
    }

    let after = scrape(&app.admin).await;
    for labels in [&incoming_f01[..], &incoming_t01, &outgoing] {
        assert!(
            count(&after, labels) >= count(&before, labels) + 1.0,
            "{labels:?}: {after}"
        );
    }
    let round_trips = |text: &str| {
        sample(
            text,
            "opd_ilp_packet_duration_seconds_count",
            &[("direction", "outgoing")],
        )
        .unwrap_or(0.0)
    };
    assert!(round_trips(&after) >= round_trips(&before) + 1.0);
    // The ILP listener's requests are measured like any other.
    assert!(after.contains(r#"listener="ilp""#), "{after}");
    app.stop().await;
}

#[tokio::test]
async fn metrics_count_webhook_deliveries_and_the_backlog() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    // A receiver that refuses its first delivery.
    let refuse = Arc::new(AtomicBool::new(true));
    let receiver = {
        let refuse = refuse.clone();
        axum::Router::new().route(
            "/hook",
            axum::routing::post(move || {
                let refuse = refuse.clone();
                async move {
                    if refuse.swap(false, Ordering::SeqCst) {
                        StatusCode::SERVICE_UNAVAILABLE
                    } else {
                        StatusCode::OK
                    }
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, receiver).await.unwrap() });
    let app = TestApp::spawn_with(Db::Sqlite, move |s| s.serve.webhook_url = Some(hook)).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let (s, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": bob }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");

    let event = "incoming_payment.created";
    let deliveries = |text: &str, result: &str| {
        sample(
            text,
            "opd_webhook_deliveries_total",
            &[("event_type", event), ("result", result)],
        )
        .unwrap_or(0.0)
    };
    let backlog = |text: &str| sample(text, "opd_webhook_backlog", &[]);
    let first = scrape(&app.admin).await;
    let waiting = backlog(&first).unwrap();
    assert!(waiting >= 1.0, "{first}");

    // The first attempt is refused: counted, and the event still waits.
    let services = app.services();
    assert!(opd_service::webhooks::deliver_once(services).await.unwrap() >= 1);
    let second = scrape(&app.admin).await;
    assert!(deliveries(&second, "failed") >= deliveries(&first, "failed") + 1.0);
    assert_eq!(backlog(&second), Some(1.0), "{second}");

    // Retried after its backoff: delivered, nothing left.
    app.clock.advance_millis(1_000);
    assert_eq!(
        opd_service::webhooks::deliver_once(services).await.unwrap(),
        1
    );
    let third = scrape(&app.admin).await;
    assert!(deliveries(&third, "delivered") >= deliveries(&first, "delivered") + 1.0);
    assert_eq!(backlog(&third), Some(0.0), "{third}");
    app.stop().await;
}

#[tokio::test]
async fn payments_sending_are_sampled_by_age() {
    // The values are the store's (its conformance test); the recorder is
    // shared by every test of this process, so only the series are
    // checked here.
    let app = TestApp::spawn().await;
    let text = scrape(&app.admin).await;
    for age in ["under_1m", "1m_to_5m", "5m_to_1h", "over_1h"] {
        let n = sample(&text, "opd_outgoing_payments_sending", &[("age", age)]);
        assert!(n.is_some(), "{age}: {text}");
    }
    app.stop().await;
}

#[test]
fn every_metric_is_documented_and_the_dashboard_uses_only_metrics_opd_has() {
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let listing = std::fs::read_to_string(docs.join("metrics.md")).unwrap();
    for name in opd_service::platform::metrics::ALL {
        assert!(
            listing.contains(&format!("| `{name}` |")),
            "{name} is not in docs/metrics.md"
        );
    }
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(docs.join("grafana-dashboard.json")).unwrap(),
    )
    .expect("the dashboard is JSON");
    let mut exprs = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x.as_str()) {
                        ("expr", Some(e)) => out.push(e.to_owned()),
                        _ => walk(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(&dashboard, &mut exprs);
    assert!(exprs.len() >= 10, "{exprs:?}");
    // Every series name a query reads (a word before `{`) is one of ours,
    // with a histogram's suffixes.
    let ours = |name: &str| {
        let all = opd_service::platform::metrics::ALL;
        all.contains(&name)
            || ["_bucket", "_count", "_sum"]
                .iter()
                .filter_map(|s| name.strip_suffix(s))
                .any(|base| all.contains(&base))
    };
    for e in &exprs {
        let mut rest = e.as_str();
        while let Some(open) = rest.find('{') {
            let name: String = rest[..open]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            assert!(
                ours(&name),
                "the dashboard reads {name:?}, which opd does not export: {e}"
            );
            rest = &rest[open + 1..];
        }
    }
    // Every metric is on the dashboard.
    for name in opd_service::platform::metrics::ALL {
        assert!(
            exprs.iter().any(|e| e.contains(name)),
            "{name} is on no dashboard panel"
        );
    }
}

/// Money received over Interledger is counted by the way it came: to an
/// incoming payment (which it completes here), or to a wallet address by
/// its payment pointer. Other tests receive dollars too, so each counter
/// must have grown by at least this test's amounts.
#[tokio::test]
async fn metrics_count_money_received_by_packets_and_by_payment_pointer() {
    use crate::spsp::{fulfilled, spsp, Spsp};
    use opd_service::platform::metrics::{INCOMING_COMPLETED, INCOMING_RECEIVED_AMOUNT};
    let w = crate::ilp::world(Db::Sqlite).await;
    let app = &w.app;
    let before = scrape(&app.admin).await;
    let (_, address, secret) = crate::ilp::receiver(app, "500").await;
    let incoming = Spsp {
        address,
        secret,
        receipts_enabled: false,
    };
    fulfilled(app, &incoming, 500).await;
    let pointer = spsp(app, "bob", None).await;
    fulfilled(app, &pointer, 70).await;
    let after = scrape(&app.admin).await;
    let received = |text: &str, via: &str| {
        let labels = [("asset_code", "USD"), ("asset_scale", "2"), ("via", via)];
        sample(text, INCOMING_RECEIVED_AMOUNT, &labels).unwrap_or(0.0)
    };
    for (via, amount) in [("interledger", 500.0), ("spsp", 70.0)] {
        assert!(
            received(&after, via) >= received(&before, via) + amount,
            "{via}: {after}"
        );
    }
    let completed =
        |text: &str| sample(text, INCOMING_COMPLETED, &[("asset_code", "USD")]).unwrap_or(0.0);
    assert!(completed(&after) >= completed(&before) + 1.0, "{after}");
    w.app.stop().await;
}
