//! Open files as an attacker spends them: under a low open-file limit
//! (`prlimit`), a client holding every connection it can get on every
//! public listener leaves the admin API and `/healthz` answering, and
//! explicit caps that cannot fit are refused at start.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

/// A child process killed when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `opd serve` on free loopback ports under an open-file limit of `files`
/// (soft and hard), with `extra` arguments.
fn serve_limited(dir: &std::path::Path, files: u32, extra: &[&str]) -> Command {
    let any = "127.0.0.1:0";
    let mut command = Command::new("prlimit");
    command
        .arg(format!("--nofile={files}:{files}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_opd"))
        .args(["serve", "--log-format", "json"])
        .args(["--listen", any, "--auth-listen", any, "--admin-listen", any])
        .args(["--ilp-listen", any, "--header-timeout-secs", "120"])
        .args(extra)
        .arg("--data-dir")
        .arg(dir)
        .env_remove("OPD_LOG")
        .env_remove("OPD_LOG_FORMAT")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// The addresses of the listeners, from the "opd is serving" log line;
/// `Err` with what it printed when it stopped first.
fn serving(child: &mut Child) -> Result<Value, Vec<String>> {
    let stderr = child.0.stderr.take().unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if let Ok(parsed) = serde_json::from_str::<Value>(&line) {
            if parsed["fields"]["message"] == "opd is serving" {
                return Ok(parsed["fields"].clone());
            }
        }
        seen.push(line);
    }
    Err(seen)
}

fn address(field: &Value) -> SocketAddr {
    let text = field.as_str().unwrap();
    let text = text.split("://").last().unwrap().trim_end_matches('/');
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// One full HTTP answer on `stream`, or `None` when the server closed it
/// (or gave no answer within a few seconds: the connection is waiting in
/// the kernel's backlog).
pub(crate) async fn answer(stream: &mut TcpStream) -> Option<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            let text = String::from_utf8_lossy(&got).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().to_owned())
                    })
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(0);
                if body.len() >= length {
                    return Some(text);
                }
            }
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(3), read)
        .await
        .ok()
        .flatten()
}

/// Opens connections from 127.0.0.2 to `to`, each answered once and then
/// held, until the server gives no more (at most `most`).
async fn hold_all(to: SocketAddr, most: usize) -> Vec<TcpStream> {
    let mut held = Vec::new();
    while held.len() < most {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let Ok(mut stream) = socket.connect(to).await else {
            break;
        };
        if stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .is_err()
        {
            break;
        }
        match answer(&mut stream).await {
            Some(_) => held.push(stream),
            None => break,
        }
    }
    held
}

#[tokio::test]
async fn a_client_holding_every_public_connection_leaves_admin_and_healthz_answering() {
    let dir = tempfile::tempdir().unwrap();
    // Every loopback address is one client network, so the rest of the
    // world (127.0.0.1, below) is a trusted proxy here: its connections are
    // not counted against 127.0.0.2's network.
    let mut child = Child(
        serve_limited(dir.path(), 256, &["--trusted-proxies", "127.0.0.1"])
            .spawn()
            .expect("prlimit runs opd (util-linux must be installed)"),
    );
    let fields = serving(&mut child).unwrap_or_else(|seen| panic!("opd did not start: {seen:#?}"));
    let public = [
        address(&fields["open_payments"]),
        address(&fields["auth_server"]),
        address(&fields["ilp"]),
    ];
    let mut held = Vec::new();
    for to in public {
        let got = hold_all(to, 250).await;
        assert!(!got.is_empty(), "{to}: no connection at all");
        // Fewer than the listener's share of 256 open files: the cap held.
        assert!(got.len() < 100, "{to}: {} connections held", got.len());
        held.push(got);
    }

    // Meanwhile, through the proxy: the admin API and /healthz answer.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let token = std::fs::read_to_string(dir.path().join("admin-token")).unwrap();
    let admin = format!("http://{}/wallet-addresses", address(&fields["admin"]));
    let r = http
        .get(&admin)
        .bearer_auth(token.trim())
        .send()
        .await
        .expect("the admin API answers");
    assert_eq!(r.status(), reqwest::StatusCode::OK);
    let healthz = format!("http://{}/healthz", public[0]);
    let r = http.get(&healthz).send().await.expect("/healthz answers");
    assert_eq!(r.status(), reqwest::StatusCode::OK);
    drop(held);
}

#[tokio::test]
async fn caps_that_cannot_fit_in_the_open_file_limit_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = serve_limited(dir.path(), 1024, &["--max-connections", "4096"])
        .stderr(Stdio::piped())
        .output()
        .expect("prlimit runs opd (util-linux must be installed)");
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("--max-connections 4096") && text.contains("open-file limit is 1024"),
        "{text}"
    );
}
