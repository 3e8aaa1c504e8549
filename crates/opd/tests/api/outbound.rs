//! Outbound requests cannot be turned against the operator: a grant
//! request naming a client on an internal address makes opd connect
//! nowhere, a client key set of 300 MB is not read past its cap, and a
//! redirect to another origin is not followed.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server on loopback that counts the connections it gets and answers
/// each with `respond` (given the connection's stream).
async fn server<F, Fut>(respond: F) -> (u16, Arc<AtomicUsize>)
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    let respond = Arc::new(respond);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            let respond = respond.clone();
            tokio::spawn(async move {
                // Read the request head before answering.
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                respond(stream).await;
            });
        }
    });
    (port, count)
}

fn quote_grant(client: &str) -> serde_json::Value {
    json!({
        "access_token": { "access": [{ "type": "quote", "actions": ["create", "read"] }] },
        "client": client
    })
}

/// Asks for a grant as the client at `url`; the answer's status and
/// error description.
async fn ask(app: &TestApp, url: &str) -> (StatusCode, String) {
    let client = app.client_for(url, "k", 5);
    let r = client
        .send(
            Method::POST,
            &format!("{}/", app.auth),
            None,
            Some(&quote_grant(url)),
        )
        .await;
    let description = r.body["error"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (r.status, description)
}

#[tokio::test]
async fn clients_on_internal_addresses_are_never_contacted() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| s.serve.outbound_allow = Vec::new()).await;
    let (port, connections) = server(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 14\r\n\r\n{\"secret\":\"x\"}")
            .await;
    })
    .await;
    // opd's own admin listener, another loopback service, a name that
    // resolves to loopback, the cloud metadata address.
    let admin_port = app.admin.rsplit(':').next().unwrap().to_owned();
    for client in [
        format!("http://127.0.0.1:{admin_port}/wallet-addresses"),
        format!("http://127.0.0.1:{port}/alice"),
        format!("http://localhost:{port}/alice"),
        format!("http://[::1]:{port}/alice"),
        "http://169.254.169.254/latest".to_owned(),
    ] {
        let (status, description) = ask(&app, &client).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{client}: {description}");
        assert!(
            description.contains("not allowed") && !description.contains("secret"),
            "{client}: {description}"
        );
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "no connection was made"
    );
    // User-info in the client URL is refused outright.
    let (status, _) = ask(&app, &format!("http://a@127.0.0.1:{port}/alice")).await;
    assert!(status.is_client_error());
    assert_eq!(connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_huge_key_set_is_not_read_past_its_cap() {
    let app = TestApp::spawn().await;
    let written = Arc::new(AtomicU64::new(0));
    let counter = written.clone();
    let (port, _) = server(move |mut s| {
        let written = counter.clone();
        async move {
            // 300 MB of a JSON array that never ends in time.
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
            if s.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let chunk = vec![b' '; 1 << 20];
            let framed = [format!("{:x}\r\n", chunk.len()).into_bytes(), chunk, b"\r\n".to_vec()].concat();
            for _ in 0..300 {
                if s.write_all(&framed).await.is_err() {
                    return;
                }
                written.fetch_add(1 << 20, Ordering::SeqCst);
            }
        }
    })
    .await;
    let (status, description) = ask(&app, &format!("http://127.0.0.1:{port}/alice")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{description}");
    assert!(
        description.contains("larger than 65536 bytes"),
        "{description}"
    );
    // opd hung up after 64 KiB; what the server managed to write meanwhile
    // went into socket buffers, far from 300 MB.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(written.load(Ordering::SeqCst) < 64 << 20, "{written:?}");
}

#[tokio::test]
async fn redirects_to_another_origin_are_not_followed() {
    let app = TestApp::spawn().await;
    let (elsewhere, connections) = server(|mut s| async move {
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n{\"keys\":[]}")
            .await;
    })
    .await;
    let (port, _) = server(move |mut s| async move {
        let answer = format!(
            "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{elsewhere}/alice/jwks.json\r\ncontent-length: 0\r\n\r\n"
        );
        let _ = s.write_all(answer.as_bytes()).await;
    })
    .await;
    let (status, description) = ask(&app, &format!("http://127.0.0.1:{port}/alice")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{description}");
    assert!(description.contains("HTTP 302"), "{description}");
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "the redirect was not followed"
    );
}
