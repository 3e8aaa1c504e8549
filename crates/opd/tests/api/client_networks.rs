//! Per-address limits count client networks, not exact addresses: every
//! loopback address is one network (127.0.0.2 and 127.0.0.3 share a
//! connection cap, a grant allowance and a consent lockout), a direct
//! client cannot leave its network by sending `X-Forwarded-For`, and
//! behind a trusted proxy each forwarded client (an IPv6 one by its /64) is counted apart while the
//! proxy's own connections are not capped. The grouping itself (IPv6
//! prefixes, private ranges) is unit-tested in
//! `opd_service::platform::network`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use opd_testkit::app::{Db, TestApp};
use reqwest::StatusCode;
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpSocket, TcpStream};

use crate::descriptors::answer;

/// A plain HTTP client on `127.0.0.<last>`, sending `X-Forwarded-For:
/// <forwarded>` when given.
fn client_at(last: u8, forwarded: Option<&str>) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(f) = forwarded {
        headers.insert("x-forwarded-for", f.parse().unwrap());
    }
    reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)))
        .default_headers(headers)
        .build()
        .unwrap()
}

/// The status of an (unsigned, so refused) grant request: the client
/// address's allowance is taken before anything else is looked at.
async fn grant_status(app: &TestApp, client: &reqwest::Client) -> StatusCode {
    client
        .post(format!("{}/", app.auth))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .status()
}

/// Sends grant requests from `client` until one is refused 429 (at most
/// 20); how many were not.
async fn spend_grants(app: &TestApp, client: &reqwest::Client) -> usize {
    for n in 0..20 {
        if grant_status(app, client).await == StatusCode::TOO_MANY_REQUESTS {
            return n;
        }
    }
    panic!("20 grant requests and no 429");
}

#[tokio::test]
async fn loopback_addresses_share_one_grant_allowance() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| s.serve.grant_requests_per_minute = 3).await;
    spend_grants(&app, &client_at(2, None)).await;
    // Another loopback address is the same network: nothing left.
    let other = grant_status(&app, &client_at(3, None)).await;
    assert_eq!(other, StatusCode::TOO_MANY_REQUESTS);
    // Naming another client is not believed from a direct connection.
    let forged = grant_status(&app, &client_at(4, Some("203.0.113.9"))).await;
    assert_eq!(forged, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_allowance() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.grant_requests_per_minute = 3;
        s.serve.trusted_proxies = vec!["127.0.0.1".into()];
    })
    .await;
    let proxy = |client: &str| client_at(1, Some(client));
    assert_eq!(spend_grants(&app, &proxy("203.0.113.1")).await, 3);
    // The same client, through another proxy hop: still spent.
    let hop = grant_status(&app, &proxy("203.0.113.1, 127.0.0.1")).await;
    assert_eq!(hop, StatusCode::TOO_MANY_REQUESTS);
    // Another client of the proxy, even in the same forged header.
    assert_eq!(
        spend_grants(&app, &proxy("203.0.113.1, 203.0.113.2")).await,
        3
    );
    // IPv6 clients are counted by their /64.
    assert_eq!(spend_grants(&app, &proxy("2001:db8:1:2::1")).await, 3);
    let same = grant_status(&app, &proxy("2001:db8:1:2:ffff::9")).await;
    assert_eq!(same, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(spend_grants(&app, &proxy("2001:db8:1:3::1")).await, 3);
    // A direct client (not a trusted proxy) is its own network whatever
    // it says: loopback's allowance is shared by 127.0.0.2 and .3.
    spend_grants(&app, &client_at(2, Some("203.0.113.3"))).await;
    let other = grant_status(&app, &client_at(3, Some("203.0.113.4"))).await;
    assert_eq!(other, StatusCode::TOO_MANY_REQUESTS);
}

/// A connection from `127.0.0.<last>` to `to` once answered `/healthz`;
/// `None` when the server closed it instead.
async fn connect_from(last: u8, to: SocketAddr) -> Option<TcpStream> {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)),
            0,
        ))
        .unwrap();
    let mut stream = socket.connect(to).await.ok()?;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .ok()?;
    answer(&mut stream).await.map(|_| stream)
}

#[tokio::test]
async fn loopback_addresses_share_one_connection_cap_and_a_trusted_proxy_has_none() {
    // 127.0.0.1 is the proxy: the test kit's own connections (and opd's
    // to itself, fetching key sets) are not counted against loopback.
    let app = TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.max_connections_per_address = Some(2);
        s.serve.trusted_proxies = vec!["127.0.0.1".into()];
    })
    .await;
    let to: SocketAddr = app
        .base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(connect_from(2, to).await.expect("within the cap"));
    }
    assert!(
        connect_from(3, to).await.is_none(),
        "127.0.0.3 is the same network as 127.0.0.2, which holds its 2"
    );
    for _ in 0..3 {
        held.push(connect_from(1, to).await.expect("the proxy is not capped"));
    }
    // A connection given back makes room again.
    drop(held.remove(0));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(connect_from(3, to).await.is_some());
}

/// A browser on `127.0.0.<last>` that does not follow redirects.
fn browser_at(last: u8) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, last)))
        .build()
        .unwrap()
}

#[tokio::test]
async fn loopback_addresses_share_one_consent_lockout() {
    use crate::auth::{ask, open_consent, outgoing_grant, world, FINISH, PASSWORD};
    let w = world(Db::Sqlite).await;
    let guessed = ask(&w, &outgoing_grant(&w, Some(FINISH), "n1")).await;
    let guesser = browser_at(2);
    let form = open_consent(&guesser, guessed["interact"]["redirect"].as_str().unwrap()).await;
    for i in 0..3 {
        let r = form.post(&guesser, &format!("guess {i}"), "approve").await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    // Another interaction of the same wallet address, from 127.0.0.3: the
    // same network as the guesser, so it waits too (the right password
    // is not even checked).
    let other = ask(&w, &outgoing_grant(&w, Some(FINISH), "n2")).await;
    let browser = browser_at(3);
    let form = open_consent(&browser, other["interact"]["redirect"].as_str().unwrap()).await;
    let r = form.post(&browser, PASSWORD, "approve").await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
}
