//! SQLite on a full disk: a real `opd serve` whose files may not grow past
//! a few megabytes (the process's file size limit, which the kernel
//! enforces like a full disk: writes come back short) takes deposits until
//! the database cannot grow. Then:
//! - every write is answered 507 JSON `insufficient_storage`, never a
//!   500, a hang or a crash, and reads still work;
//! - after a restart without the limit the database passes SQLite's
//!   integrity check, holds exactly the deposits that were acknowledged
//!   (each refused one, retried with its key, is new), and the ledger
//!   balances.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly by design"
)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const ADMIN_TOKEN: &str = "disk-full-admin-token-0123456789abcdef";
/// The largest file opd may write, in bytes.
const FILE_LIMIT: u64 = 700_000;

struct Server {
    child: Child,
    admin: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts opd on the data directory, with the file size limit when asked.
async fn start(dir: &Path, limited: bool) -> Server {
    let (op, auth, admin) = (
        opd_testkit::free_port(),
        opd_testkit::free_port(),
        opd_testkit::free_port(),
    );
    let opd = env!("CARGO_BIN_EXE_opd");
    let args = format!(
        "serve --listen=127.0.0.1:{op} --auth-listen=127.0.0.1:{auth} \
         --admin-listen=127.0.0.1:{admin} --ilp-listen=127.0.0.1:0 \
         --admin-token={ADMIN_TOKEN} --data-dir={}",
        dir.display()
    );
    // The limit applies to opd alone; SIGXFSZ is ignored (an ignored
    // signal stays ignored across exec) so an over-long write fails
    // instead of killing the process, as on a full disk.
    let script = if limited {
        format!("trap '' XFSZ; exec prlimit --fsize={FILE_LIMIT} -- {opd} {args}")
    } else {
        format!("exec {opd} {args}")
    };
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .env_remove("OPD_CONFIG")
        .env("OPD_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start opd (needs sh and prlimit from util-linux)");
    let server = Server {
        child,
        admin: format!("http://127.0.0.1:{admin}"),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(r) = reqwest::get(format!("http://127.0.0.1:{op}/healthz")).await {
            if r.status() == StatusCode::OK {
                return server;
            }
        }
        assert!(Instant::now() < deadline, "opd did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

impl Server {
    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut req = reqwest::Client::new()
            .request(method, format!("{}{path}", self.admin))
            .bearer_auth(ADMIN_TOKEN)
            .timeout(Duration::from_secs(20));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("opd answers");
        let status = r.status();
        (status, r.json().await.expect("a JSON answer"))
    }

    async fn deposit(&self, key: &str, amount: u64) -> (StatusCode, Value) {
        let body = json!({"amount": amount.to_string(), "idempotencyKey": key});
        self.admin(Method::POST, "/wallet-addresses/alice/deposits", Some(body))
            .await
    }

    async fn balance(&self) -> u64 {
        let (status, v) = self
            .admin(Method::GET, "/wallet-addresses/alice/balance", None)
            .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        v["balance"]["value"].as_str().unwrap().parse().unwrap()
    }
}

#[tokio::test]
async fn a_full_disk_refuses_writes_clearly_and_corrupts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), true).await;
    let (status, v) = server
        .admin(
            Method::POST,
            "/wallet-addresses",
            Some(json!({"path": "alice", "assetCode": "USD", "assetScale": 2})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{v}");

    // Deposits, 8 at a time, until the files cannot grow; long keys fill
    // the database faster.
    let mut acknowledged = 0u64;
    let mut refused = Vec::new();
    let mut next = 1u64;
    while refused.len() < 20 && next < 20_000 {
        let batch: Vec<(String, u64)> = (next..next + 8)
            .map(|i| (format!("{i:0>150}"), i))
            .collect();
        next += 8;
        let answers =
            futures_util::future::join_all(batch.iter().map(|(key, i)| server.deposit(key, *i)))
                .await;
        for ((key, i), (status, v)) in batch.into_iter().zip(answers) {
            match status {
                StatusCode::CREATED => acknowledged += i,
                StatusCode::INSUFFICIENT_STORAGE => {
                    assert_eq!(v["error"]["code"], "insufficient_storage", "{v}");
                    refused.push((key, i));
                }
                other => panic!("deposit {i}: {other} {v}"),
            }
        }
    }
    assert!(refused.len() >= 20, "the database never filled up");
    // Reads still work, and show only what was acknowledged.
    assert_eq!(server.balance().await, acknowledged);
    drop(server);

    // The database is whole, and the refused deposits were never saved.
    let db = dir.path().join("opd.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let server = start(dir.path(), false).await;
    assert_eq!(server.balance().await, acknowledged);
    for (key, amount) in &refused {
        let (status, v) = server.deposit(key, *amount).await;
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{key} was saved after all: {v}"
        );
        acknowledged += amount;
    }
    assert_eq!(server.balance().await, acknowledged);
    let (status, check) = server.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(status, StatusCode::OK, "{check}");
    assert_eq!(check["balanced"], true, "{check}");
}
