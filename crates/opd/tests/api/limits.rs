//! Slow clients cannot hold connections: on every listener a request head
//! trickled in (slowloris) or never sent (an idle keep-alive connection)
//! is cut off after the header timeout, and a body that does not arrive
//! gets a JSON 408 after the request timeout. The bounds waited for here
//! are generous: the tests check that connections end, not how fast.

use std::time::Duration;

use opd_testkit::app::{Db, TestApp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn app() -> TestApp {
    TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.header_timeout_secs = 1;
        s.serve.request_timeout_secs = 2;
    })
    .await
}

fn host_port(url: &str) -> String {
    let rest = url.split("://").nth(1).unwrap();
    rest.split('/').next().unwrap().to_owned()
}

/// Reads until the server closes the connection; what it sent.
async fn until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let read_all = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read_all)
        .await
        .expect("the server closed the connection");
    got
}

/// Status and JSON body of a raw response.
fn json_answer(raw: &[u8]) -> (u16, serde_json::Value) {
    let text = String::from_utf8_lossy(raw);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"));
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    (status, serde_json::from_str(body).expect("a JSON body"))
}

#[tokio::test]
async fn requests_hyper_cannot_parse_get_json_errors_on_every_listener() {
    let app = app().await;
    let huge = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(600_000)
    );
    let cases: [(&[u8], u16, &str); 3] = [
        (b"GET / HTTP/1.1\r\nHost x\r\n\r\n", 400, "bad_request"),
        (b"\x01\x02 nonsense\r\n\r\n", 400, "bad_request"),
        (huge.as_bytes(), 431, "headers_too_large"),
    ];
    for url in [&app.base, &app.auth, &app.admin, &app.ilp] {
        for (request, status, code) in cases {
            let mut stream = TcpStream::connect(host_port(url)).await.unwrap();
            // The server may answer before it has read all of a huge head.
            let _ = stream.write_all(request).await;
            let (got, body) = json_answer(&until_closed(&mut stream).await);
            assert_eq!(
                (got, body["error"]["code"].as_str()),
                (status, Some(code)),
                "{url}"
            );
        }
    }
}

#[tokio::test]
async fn slow_and_idle_clients_are_cut_off_on_every_listener() {
    let app = app().await;
    for url in [&app.base, &app.auth, &app.admin, &app.ilp] {
        let addr = host_port(url);
        // Headers trickled in and never finished.
        let mut slow = TcpStream::connect(&addr).await.unwrap();
        slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            // The server may already have hung up: only its closing counts.
            let _ = slow.write_all(b"X-Slow: 1\r\n").await;
        }
        until_closed(&mut slow).await;
        // Connected, and nothing sent at all.
        let mut idle = TcpStream::connect(&addr).await.unwrap();
        until_closed(&mut idle).await;
    }
    // The server still answers.
    let (s, _) = app.get_public(&app.url("healthz")).await;
    assert!(s.is_success());
}

#[tokio::test]
async fn a_body_that_never_arrives_gets_a_json_408() {
    let app = app().await;
    let mut stream = TcpStream::connect(host_port(&app.base)).await.unwrap();
    let head = "POST /incoming-payments HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{\"";
    stream.write_all(head.as_bytes()).await.unwrap();
    let got = String::from_utf8_lossy(&until_closed(&mut stream).await).into_owned();
    assert!(got.starts_with("HTTP/1.1 408"), "{got}");
    assert!(got.contains("\"request_timeout\""), "{got}");
}

/// A declared body larger than the limit is refused with a JSON 413 as
/// soon as the head arrives, not after the request timeout: the body may
/// never come.
#[tokio::test]
async fn a_declared_body_over_the_limit_is_answered_413_at_once() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| s.serve.request_timeout_secs = 600).await;
    for url in [app.base.clone(), app.auth.clone()] {
        let mut stream = TcpStream::connect(host_port(&url)).await.unwrap();
        let head = "POST /incoming-payments HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: 1000000000000\r\n\r\n{\"";
        stream.write_all(head.as_bytes()).await.unwrap();
        // The answer, read as far as its JSON body goes (the connection
        // stays open meanwhile, for a client still sending).
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        let answered = async {
            while !String::from_utf8_lossy(&got).ends_with('}') {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(20), answered)
            .await
            .expect("an answer before the request timeout");
        let (status, body) = json_answer(&got);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (413, Some("payload_too_large")),
            "{url}"
        );
    }
}

#[tokio::test]
async fn a_body_over_the_limit_is_answered_413_and_the_client_reads_it() {
    let app = app().await;
    // 10 MB: the client is still sending long after the limit is reached;
    // it must get the JSON 413, not a broken pipe.
    let big = vec![b'a'; 10 * 1024 * 1024];
    for url in [app.url("incoming-payments"), format!("{}/", app.auth)] {
        // Unsigned raw bytes, which the test clients do not send: the
        // answer is validated explicitly.
        let resp = app
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(big.clone())
            .send()
            .await
            .expect("the answer is read, not a broken pipe");
        let status = resp.status();
        assert_eq!(status, reqwest::StatusCode::PAYLOAD_TOO_LARGE, "{url}");
        let v: serde_json::Value = resp.json().await.unwrap();
        assert!(app.servers.check(&reqwest::Method::POST, &url, status, &v));
        assert_eq!(v["error"]["code"], "payload_too_large", "{url}");
    }
}

#[tokio::test]
async fn a_key_only_client_has_an_hourly_quota_of_incoming_payments() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| s.serve.key_only_incoming_per_hour = 2).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let carol = app.create_wallet("carol", "USD", 2).await;
    let mut anonymous = app.client_for("", "anon", 88);
    // It signs by the server's clock, which the test moves on.
    anonymous.clock = Some(app.clock.clone());
    let token = || async {
        let grant = anonymous
            .send(
                reqwest::Method::POST,
                &format!("{}/", app.auth),
                None,
                Some(&serde_json::json!({
                    "access_token": { "access": [{ "type": "incoming-payment", "actions": ["create"] }] },
                    "client": { "jwk": serde_json::to_value(anonymous.jwk()).unwrap() }
                })),
            )
            .await;
        assert_eq!(grant.status, reqwest::StatusCode::OK, "{}", grant.body);
        grant.body["access_token"]["value"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let create = |token: String, wallet: String, n: u32| {
        let body = serde_json::json!({ "walletAddress": wallet, "metadata": { "n": n } });
        let (client, url) = (&anonymous, app.url("incoming-payments"));
        async move {
            client
                .send(reqwest::Method::POST, &url, Some(&token), Some(&body))
                .await
        }
    };
    let t = token().await;
    for n in 0..2 {
        let r = create(t.clone(), bob.clone(), n).await;
        assert_eq!(r.status, reqwest::StatusCode::CREATED, "{}", r.body);
    }
    let r = create(t.clone(), bob.clone(), 2).await;
    assert_eq!(
        r.status,
        reqwest::StatusCode::TOO_MANY_REQUESTS,
        "{}",
        r.body
    );
    assert_eq!(r.body["error"]["code"], "too_many_requests");
    assert!(r.headers.contains_key(reqwest::header::RETRY_AFTER));
    // The quota is per wallet address, and an hour later it is back.
    let r = create(t, carol.clone(), 3).await;
    assert_eq!(r.status, reqwest::StatusCode::CREATED, "{}", r.body);
    app.clock.advance_millis(3_600_001);
    let r = create(token().await, bob.clone(), 4).await;
    assert_eq!(r.status, reqwest::StatusCode::CREATED, "{}", r.body);
}

#[tokio::test]
async fn a_client_creating_too_fast_gets_429_with_retry_after() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| s.serve.create_requests_per_minute = 3).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let url = app.url("incoming-payments");
    let body = serde_json::json!({ "walletAddress": bob });
    for _ in 0..3 {
        let (status, _, v) = app.signed(reqwest::Method::POST, &url, Some(&body)).await;
        assert_eq!(status, reqwest::StatusCode::CREATED, "{v}");
    }
    let (status, headers, v) = app.signed(reqwest::Method::POST, &url, Some(&body)).await;
    assert_eq!(status, reqwest::StatusCode::TOO_MANY_REQUESTS, "{v}");
    assert_eq!(v["error"]["code"], "too_many_requests");
    let wait: u64 = headers[reqwest::header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=20).contains(&wait), "Retry-After: {wait}");
    // Reads are not limited.
    let (status, v) = app.get(&format!("{url}?wallet-address={bob}")).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{v}");
}
