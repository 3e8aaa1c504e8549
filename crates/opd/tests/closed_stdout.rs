//! `opd serve` outlives whoever reads its standard output: with the pipe
//! closed before it prints its first line (a supervisor or terminal gone),
//! it drops its own lines and keeps serving, instead of panicking on the
//! first `println!`. And when it cannot start (its port is taken), it says
//! so in two lines, without a backtrace whatever `RUST_BACKTRACE` says, and
//! leaves no data directory behind.

use std::process::{Command, Stdio};
use std::time::Duration;

#[tokio::test]
async fn serve_keeps_serving_when_its_standard_output_closes() {
    let dir = tempfile::tempdir().unwrap();
    let (op, auth, admin) = (
        opd_testkit::free_port(),
        opd_testkit::free_port(),
        opd_testkit::free_port(),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_opd"))
        .args([
            "serve",
            "--demo",
            &format!("--listen=127.0.0.1:{op}"),
            &format!("--auth-listen=127.0.0.1:{auth}"),
            &format!("--admin-listen=127.0.0.1:{admin}"),
            "--ilp-listen=127.0.0.1:0",
            &format!("--data-dir={}", dir.path().display()),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Closed at once: every line the server prints meets a closed pipe.
    drop(child.stdout.take());
    let healthz = format!("http://127.0.0.1:{op}/healthz");
    let http = reqwest::Client::new();
    // Up within 30 s; then it answers for a while after its start-up
    // lines (the admin token's file, the dashboard, the demo), and has
    // not exited.
    let mut answered = 0;
    for _ in 0..300 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("opd serve exited ({status}) when its standard output closed");
        }
        let up = http
            .get(&healthz)
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        answered += usize::from(up);
        if answered >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answered >= 10, "opd serve did not come up");
    assert!(child.try_wait().unwrap().is_none(), "still running");
    // The demo was made all the same.
    let alice = http
        .get(format!("http://127.0.0.1:{op}/alice"))
        .send()
        .await
        .unwrap();
    assert!(alice.status().is_success());
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_server_that_cannot_listen_says_why_in_two_lines_and_writes_nothing() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("new-data");
    let out = Command::new(env!("CARGO_BIN_EXE_opd"))
        .args([
            "serve",
            &format!("--listen=127.0.0.1:{port}"),
            &format!("--data-dir={}", data.display()),
        ])
        .current_dir(dir.path())
        .env_remove("OPD_CONFIG")
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Log lines (the open-file budget) aside, what a person reads.
    let said: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("node=")).collect();
    assert_eq!(
        said,
        [
            format!("error: cannot listen on 127.0.0.1:{port} (Open Payments)").as_str(),
            "  cause: Address already in use (os error 98)",
        ],
        "{stderr}"
    );
    assert!(
        !data.exists(),
        "no data directory for a server that never ran"
    );
    drop(taken);
}
