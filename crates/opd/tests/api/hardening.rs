//! Hardening, round 2, each as an attacker would try it: password guesses
//! sent all at once, a stranger aiming the consent lockout at the owner,
//! a local process guessing the admin token, and secrets that must not
//! reach logs or pages.

use std::net::{IpAddr, Ipv4Addr};

use opd_testkit::app::Db;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::auth::{
    ask, consent_in_browser, location, open_consent, outgoing_grant, query, world, FINISH, PASSWORD,
};

/// A browser at 203.0.113.66 as the trusted proxy 127.0.0.1 forwards it
/// (see [`world_behind_a_proxy`]): a stranger in another network than the
/// owner's browser (loopback, as the proxy's own requests are).
fn stranger_browser() -> reqwest::Client {
    crate::auth::forwarded_browser(Ipv4Addr::new(203, 0, 113, 66))
}

/// [`world`] behind a trusted proxy at 127.0.0.1: every loopback address
/// is one client network, so strangers are told apart by the client the
/// proxy names.
async fn world_behind_a_proxy() -> crate::auth::World {
    crate::auth::world_with(Db::Sqlite, |s| {
        s.serve.trusted_proxies = vec!["127.0.0.1".into()];
    })
    .await
}

/// 200 wrong passwords sent at once by a stranger: only the free three are
/// checked, and the owner, in another client network, still approves
/// another client's grant at once.
#[tokio::test]
async fn concurrent_password_guesses_get_three_checks_and_cannot_lock_out_the_owner() {
    let w = world_behind_a_proxy().await;
    let target = ask(&w, &outgoing_grant(&w, Some(FINISH), "n1")).await;
    let redirect = target["interact"]["redirect"].as_str().unwrap();
    let stranger = stranger_browser();
    let form = open_consent(&stranger, redirect).await;
    let guesses = (0..200).map(|i| {
        let (form, stranger) = (&form, &stranger);
        async move {
            form.post(stranger, &format!("guess {i}"), "approve")
                .await
                .status()
        }
    });
    let statuses = futures_util::future::join_all(guesses).await;
    let checked = statuses
        .iter()
        .filter(|s| **s == StatusCode::UNAUTHORIZED)
        .count();
    let waited = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((checked, waited), (3, 197), "{statuses:?}");

    // The interaction guessed at waits for everyone, even its owner.
    let r = consent_in_browser(&w, redirect, PASSWORD, "approve").await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    // Another grant of the same wallet address, from the owner's network:
    // approved at once.
    let other = ask(&w, &outgoing_grant(&w, Some(FINISH), "n2")).await;
    let redirect = other["interact"]["redirect"].as_str().unwrap();
    let r = consent_in_browser(&w, redirect, PASSWORD, "approve").await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
}

/// Wrong admin tokens from the loopback address everyone shares are each
/// refused, and the right token keeps working: no lockout the operator
/// can be locked out by.
#[tokio::test]
async fn wrong_admin_tokens_never_lock_out_the_right_one() {
    let w = world(Db::Sqlite).await;
    let app = &w.app;
    let url = format!("{}/wallet-addresses", app.admin);
    let guesses = (0..8).map(|i| {
        let url = &url;
        async move {
            app.http
                .get(url)
                .bearer_auth(format!("a-wrong-guess-{i:032}"))
                .send()
                .await
                .unwrap()
                .status()
        }
    });
    for status in futures_util::future::join_all(guesses).await {
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let right = app
        .http
        .get(&url)
        .bearer_auth(&app.admin_token)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), StatusCode::OK);
}

/// A whole interactive grant: asked, approved on the consent page,
/// continued; its interaction URL and `interact_ref`.
async fn whole_grant(w: &crate::auth::World) -> (String, String) {
    let pending = ask(w, &outgoing_grant(w, Some(FINISH), "client-nonce")).await;
    let redirect = pending["interact"]["redirect"].as_str().unwrap().to_owned();
    let done = consent_in_browser(w, &redirect, PASSWORD, "approve").await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let interact_ref = query(&location(&done))["interact_ref"].clone();
    let granted = crate::auth::continue_grant(w, &pending, &interact_ref).await;
    assert_eq!(granted.status, StatusCode::OK, "{}", granted.body);
    (redirect, interact_ref)
}

/// A whole interactive grant with debug logging on: the requests are
/// logged, but not the interaction's id, its nonce or the `interact_ref`.
#[tokio::test]
async fn debug_logs_of_a_grant_carry_no_interaction_secrets() {
    let (captured, _logging) = crate::capture_logs(tracing::Level::DEBUG);

    let w = world(Db::Sqlite).await;
    let (redirect, interact_ref) = whole_grant(&w).await;

    let log = captured.text();
    let mut parts = redirect.rsplit('/');
    let (nonce, id) = (parts.next().unwrap(), parts.next().unwrap());
    assert!(
        log.contains("/interact/…"),
        "the requests are logged: {log}"
    );
    assert!(log.contains("/consent/…"), "{log}");
    for (what, secret) in [
        ("id", id),
        ("nonce", nonce),
        ("interact_ref", &interact_ref),
    ] {
        assert!(!secret.is_empty());
        assert!(
            !log.contains(secret),
            "the interaction's {what} is in the log:\n{log}"
        );
    }
}

/// A whole grant and a password change on PostgreSQL with debug logging
/// on, filtered as `opd serve` filters: neither the database driver (which
/// logs every statement's parameters at debug) nor anything else logs the
/// interaction's nonce, the `interact_ref` or a password hash.
#[tokio::test]
async fn debug_logs_on_postgres_carry_no_parameters() {
    let (captured, _logging) = crate::capture_served_logs(tracing::Level::DEBUG);

    let w = world(Db::Postgres).await;
    let (redirect, interact_ref) = whole_grant(&w).await;
    let (s, _) = w
        .app
        .admin(
            Method::PUT,
            "/wallet-addresses/alice/owner-password",
            Some(&json!({ "password": "a second long password" })),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);

    let log = captured.text();
    assert!(
        log.contains("/consent/…"),
        "debug lines are captured: {log}"
    );
    let nonce = redirect.rsplit('/').next().unwrap();
    for (what, secret) in [
        ("nonce", nonce),
        ("interact_ref", &interact_ref),
        ("password hash", "$argon2"),
    ] {
        assert!(!secret.is_empty());
        assert!(!log.contains(secret), "the {what} is in the log:\n{log}");
    }
}

/// A client whose public name carries a right-to-left override cannot
/// disguise itself on the consent page: the character is shown as its
/// code point.
#[tokio::test]
async fn bidi_overrides_in_a_client_name_are_shown_as_code_points() {
    let w = world(Db::Sqlite).await;
    let html =
        crate::auth::consent_page_of_named_client(&w, "spoof", "Shop\u{202E}knaB yM", 24).await;
    assert!(
        html.contains("<span class=\"client-name\">Shop[U+202E]knaB yM</span>"),
        "{html}"
    );
    assert!(!html.contains('\u{202E}'), "{html}");
}

/// Five fresh keys cannot create more incoming payments on one wallet
/// address than key-only clients may together, and the network address
/// they all come from has spent its own allowance meanwhile.
#[tokio::test]
async fn fresh_keys_stop_at_the_key_only_total() {
    let app = opd_testkit::app::TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.key_only_incoming_per_hour = 3;
        s.serve.key_only_incoming_per_hour_total = 10;
    })
    .await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let carol = app.create_wallet("carol", "USD", 2).await;
    let mut created = 0;
    let mut refused = Vec::new();
    let mut keys = Vec::new();
    for seed in 0..5u8 {
        let mut key = app.client_for("", &format!("fresh-{seed}"), 100 + seed);
        key.clock = Some(app.clock.clone());
        let grant = key
            .send(
                Method::POST,
                &format!("{}/", app.auth),
                None,
                Some(&json!({
                    "access_token": { "access": [{ "type": "incoming-payment", "actions": ["create"] }] },
                    "client": { "jwk": serde_json::to_value(key.jwk()).unwrap() }
                })),
            )
            .await;
        assert_eq!(grant.status, StatusCode::OK, "{}", grant.body);
        let token = grant.body["access_token"]["value"]
            .as_str()
            .unwrap()
            .to_owned();
        for _ in 0..3 {
            let body = json!({ "walletAddress": bob, "metadata": { "big": "x".repeat(8000) } });
            let r = key
                .send(
                    Method::POST,
                    &app.url("incoming-payments"),
                    Some(&token),
                    Some(&body),
                )
                .await;
            match r.status {
                StatusCode::CREATED => created += 1,
                StatusCode::TOO_MANY_REQUESTS => {
                    assert_eq!(r.body["error"]["code"], "too_many_requests");
                    refused.push(r.body["error"]["description"].as_str().unwrap().to_owned());
                }
                other => panic!("{other}: {}", r.body),
            }
        }
        keys.push((key, token));
    }
    // Three keys' worth fit in bob's total of 10; then every key is
    // refused, however fresh.
    assert_eq!(created, 10);
    assert_eq!(refused.len(), 5);
    assert!(
        refused
            .iter()
            .all(|d| d.contains("together") && d.contains("wallet address")),
        "{refused:?}"
    );
    // The client network they all came from spent its 10 meanwhile: carol,
    // who has none yet, gets none from it either.
    let (key, token) = &keys[4];
    let body = json!({ "walletAddress": carol });
    let r = key
        .send(
            Method::POST,
            &app.url("incoming-payments"),
            Some(token),
            Some(&body),
        )
        .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    assert!(
        r.body["error"]["description"]
            .as_str()
            .unwrap()
            .contains("from one client network (loopback)"),
        "{}",
        r.body
    );
    let services = app.services();
    let bob_id = opd_service::wallets::by_url(services, &bob)
        .await
        .unwrap()
        .id;
    let since = opd_core::Timestamp::from_unix_millis(0);
    let on_bob = services
        .store
        .key_only_incoming_payments_since(bob_id, since)
        .await
        .unwrap();
    assert_eq!(on_bob, 10);
}

/// A key-only client behind the trusted proxy 127.0.0.1, at `forwarded`,
/// with a fresh key from `seed`, holding a token to create incoming
/// payments.
async fn key_only_client_at(
    app: &opd_testkit::app::TestApp,
    forwarded: &str,
    seed: u8,
) -> (opd_testkit::client::SigningClient, String) {
    let mut key = app.client_for("", &format!("net-{seed}"), seed);
    key.clock = Some(app.clock.clone());
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-forwarded-for", forwarded.parse().unwrap());
    key.http = reqwest::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::LOCALHOST))
        .default_headers(headers)
        .build()
        .unwrap();
    let grant = key
        .send(
            Method::POST,
            &format!("{}/", app.auth),
            None,
            Some(&json!({
                "access_token": { "access": [{ "type": "incoming-payment", "actions": ["create"] }] },
                "client": { "jwk": serde_json::to_value(key.jwk()).unwrap() }
            })),
        )
        .await;
    assert_eq!(grant.status, StatusCode::OK, "{}", grant.body);
    let token = grant.body["access_token"]["value"].as_str().unwrap();
    (key, token.to_owned())
}

/// One source minting fresh keys spends only its network's share of a
/// wallet address's key-only budget: the wallet address stays open to a
/// key-only client from another network (the stranger closing a
/// wallet to everyone).
#[tokio::test]
async fn one_network_cannot_spend_a_wallet_addresss_key_only_budget_for_others() {
    let app = opd_testkit::app::TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.key_only_incoming_per_hour = 3;
        s.serve.key_only_incoming_per_hour_per_network = 4;
        s.serve.key_only_incoming_per_hour_total = 10;
        s.serve.trusted_proxies = vec!["127.0.0.1".into()];
    })
    .await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let body = json!({ "walletAddress": bob });
    let create = |(key, token): &(opd_testkit::client::SigningClient, String)| {
        let (url, body) = (app.url("incoming-payments"), body.clone());
        let (key, token) = (key.clone(), token.clone());
        async move {
            key.send(Method::POST, &url, Some(&token), Some(&body))
                .await
        }
    };
    // The attacker, at 203.0.113.66, with a fresh key whenever one is spent.
    let mut created = 0;
    let mut refusals = Vec::new();
    for seed in 0..4u8 {
        let attacker = key_only_client_at(&app, "203.0.113.66", 150 + seed).await;
        for _ in 0..3 {
            let r = create(&attacker).await;
            match r.status {
                StatusCode::CREATED => created += 1,
                StatusCode::TOO_MANY_REQUESTS => {
                    assert_eq!(r.body["error"]["code"], "too_many_requests");
                    refusals.push(r.body["error"]["description"].as_str().unwrap().to_owned());
                }
                other => panic!("{other}: {}", r.body),
            }
        }
    }
    assert_eq!(created, 4, "{refusals:?}");
    assert!(
        refusals
            .iter()
            .all(|d| d.contains("from one client network (203.0.113.66)")),
        "{refusals:?}"
    );
    // Another client, from another network, is still served on bob.
    let other = key_only_client_at(&app, "198.51.100.7", 170).await;
    let r = create(&other).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // The network is kept with the payment, so every node counts it.
    let services = app.services();
    let bob_id = opd_service::wallets::by_url(services, &bob)
        .await
        .unwrap()
        .id;
    let since = opd_core::Timestamp::from_unix_millis(0);
    let from = |n| {
        services
            .store
            .key_only_incoming_payments_from(bob_id, n, since)
    };
    assert_eq!(from("203.0.113.66").await.unwrap(), 4);
    assert_eq!(from("198.51.100.7").await.unwrap(), 1);
}

/// Metadata past its documented cap is refused with its own code.
#[tokio::test]
async fn metadata_over_its_cap_gets_its_own_error() {
    let app = opd_testkit::app::TestApp::spawn().await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let cap = opd_service::payments::incoming::MAX_METADATA_BYTES;
    let body = json!({ "walletAddress": bob, "metadata": { "m": "x".repeat(cap) } });
    let (s, _, v) = app
        .signed(Method::POST, &app.url("incoming-payments"), Some(&body))
        .await;
    crate::assert_error(s, &v, 400, "metadata_too_large");
    let body = json!({ "walletAddress": bob, "metadata": { "m": "x".repeat(cap - 100) } });
    let (s, _, v) = app
        .signed(Method::POST, &app.url("incoming-payments"), Some(&body))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
}
