//! An authorization server under a path (`--auth-public-url
//! http://host/gnap`, as behind a proxy that forwards `/gnap` unchanged):
//! another opd server and `opd client` take grants there, rotate and
//! revoke their tokens (the interactive grant and the consent page under
//! a path are in `auth.rs`); public URLs it cannot serve are refused at
//! start with the reason.

use std::sync::Arc;

use opd::config::Settings;
use opd_client::gnap;
use opd_client::http::Client;
use opd_client::profile::Profile;
use opd_testkit::app::{Db, TestApp};
use opd_testkit::proxy::ValidatingProxy;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::amount;
use crate::remote::{
    incoming_at_b, kept_grant, kept_grant_setting, pair_of, quote, token_at, Pair,
};

/// A (auth server under `/as/gnap`) and B (under `/gnap`, tokens good for
/// a minute), peered.
async fn pair_under_paths() -> Pair {
    let a = TestApp::spawn_with_auth_path(Db::Sqlite, "/as/gnap", |s| {
        s.serve.ilp_address = "test.a".into();
    })
    .await;
    let b = TestApp::spawn_with_auth_path(Db::Sqlite, "/gnap", |s| {
        s.serve.ilp_address = "test.b".into();
        s.serve.access_token_ttl_secs = 60;
    })
    .await;
    pair_of(a, b, 1_000_000, None).await
}

#[tokio::test]
async fn opd_client_and_another_server_take_grants_at_an_authorization_server_under_a_path() {
    let Pair { a, b } = pair_under_paths().await;
    let receiver = incoming_at_b(&b, "1000").await;
    // bob's wallet address and his incoming payment name B's
    // authorization server with its path, which is the grant endpoint.
    assert!(b.auth.ends_with("/gnap"), "{}", b.auth);
    let (_, bob) = b.get_public(&b.url("bob")).await;
    assert_eq!(bob["authServer"], b.auth.as_str());
    let (_, public) = a.get_public(&receiver).await;
    assert_eq!(public["authServer"], b.auth.as_str());
    opd_client_at(&a, &b).await;

    // A's server as a client of B: a non-interactive incoming-payment
    // grant for the receiver, then its token rotated before it expires.
    let alice = a.create_wallet("alice", "USD", 2).await;
    let target = json!({ "debitAmount": amount("500", "USD", 2) });
    let (s, q) = quote(&a, &alice, &receiver, target.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    let setting = kept_grant_setting(&public, &receiver);
    let first = kept_grant(&a, &setting).await;
    let manage = first["manage"].as_str().unwrap();
    assert!(
        manage.starts_with(&format!("{}/token/", b.auth)),
        "{manage}"
    );
    a.clock.advance_millis(40_000);
    let (s, q) = quote(&a, &alice, &receiver, target).await;
    assert_eq!(s, StatusCode::CREATED, "{q}");
    let again = kept_grant(&a, &setting).await;
    assert_ne!(again["value"], first["value"], "a new token kept");
    let (old, new) = (
        token_at(&b, &first["value"]).await,
        token_at(&b, &again["value"]).await,
    );
    assert_eq!(old.grant_id, new.grant_id, "rotated, not a new grant");
}

/// `opd client` (shop at A) at B's authorization server: a grant POSTed
/// to `authServer` as published, its token used, rotated and revoked, all
/// under the path.
async fn opd_client_at(a: &TestApp, b: &TestApp) {
    let proxy = ValidatingProxy::start().await;
    let shop = a.signing_client("shop", 61).await;
    let profile = Profile::with_key(&shop.wallet_address, &shop.kid, shop.key.clone());
    let client = Client::with_http(profile, proxy.client());
    let access = json!([{ "type": "incoming-payment", "actions": ["create", "read"] }]);
    let token = gnap::request(&client, &b.auth, access).await.unwrap();
    let under = format!("{}/token/", b.auth);
    assert!(token.manage.starts_with(&under), "{}", token.manage);
    let body = json!({ "walletAddress": b.url("bob") });
    let url = b.url("incoming-payments");
    let created = client
        .signed(Method::POST, &url, Some(&token.value), Some(&body))
        .await
        .unwrap();
    let ip = created["id"].as_str().unwrap();
    let rotated = gnap::rotate(&client, &token.manage, &token.value)
        .await
        .unwrap();
    assert_ne!(rotated.value, token.value);
    let read = client
        .signed(Method::GET, ip, Some(&rotated.value), None)
        .await;
    assert!(read.is_ok(), "{read:?}");
    gnap::revoke(&client, &rotated.manage, &rotated.value)
        .await
        .unwrap();
    // Both tokens are refused now, with B's grant endpoint as `as_uri`.
    for old in [&token.value, &rotated.value] {
        let r = shop.send(Method::GET, ip, Some(old), None).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
        assert_eq!(
            r.headers["www-authenticate"].to_str().unwrap(),
            format!("GNAP as_uri={}", b.auth)
        );
    }
    proxy.validate(
        &a.servers,
        &[
            "post-request",
            "create-incoming-payment",
            "get-incoming-payment",
            "post-token",
            "delete-token",
        ],
    );
}

/// Settings on port 0 with `--auth-public-url url`.
fn with_auth_url(dir: &std::path::Path, url: &str) -> Settings {
    let mut settings = Settings::for_data_dir(dir);
    let any_port = "127.0.0.1:0".parse().unwrap();
    settings.serve.listen = any_port;
    settings.serve.auth_listen = any_port;
    settings.common.admin_listen = any_port;
    settings.serve.ilp_listen = any_port;
    settings.serve.auth_public_url = Some(url.into());
    settings
}

const QUERY: &str =
    "it has a query or a fragment, which the URLs clients build from it cannot keep";

#[tokio::test]
async fn authorization_server_urls_that_cannot_be_served_are_refused_at_start() {
    for (url, reason) in [
        ("https://example.com/gnap?tenant=1", QUERY),
        ("https://example.com/gnap#top", QUERY),
        (
            "ftp://example.com/gnap",
            "the scheme is ftp, not http or https",
        ),
        (
            "https://example.com/a//b",
            "its path \"/a//b\" has an empty segment",
        ),
        (
            "https://me:secret@example.com/gnap",
            "it carries user information",
        ),
        (
            "example.com/gnap",
            "not an absolute URL (relative URL without a base)",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let started = opd::app::start(
            with_auth_url(dir.path(), url),
            Arc::new(opd_core::SystemClock),
            Arc::new(opd_core::OsRandom),
        )
        .await;
        let Err(e) = started else {
            panic!("{url} was accepted");
        };
        let text = format!("{e:#}");
        assert_eq!(
            text,
            format!("--auth-public-url {url:?} cannot be served: {reason}")
        );
        // Refused before anything was opened.
        assert!(!dir.path().join("opd.sqlite").exists(), "{url}");
    }
    refused_by_the_command().await;
}

/// The refusal as an operator sees it: `opd serve` exits with the reason.
async fn refused_by_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = format!("--data-dir={}", dir.path().display());
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_opd"));
    cmd.args([
        "serve",
        &data_dir,
        "--auth-public-url=https://example.com/gnap?tenant=1",
    ])
    .args(["--listen=127.0.0.1:0", "--auth-listen=127.0.0.1:0"])
    .args(["--admin-listen=127.0.0.1:0", "--ilp-listen=127.0.0.1:0"]);
    for (k, _) in std::env::vars() {
        if k.starts_with("OPD_") {
            cmd.env_remove(k);
        }
    }
    let out = tokio::task::spawn_blocking(move || opd_testkit::output(&mut cmd))
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "--auth-public-url \"https://example.com/gnap?tenant=1\" cannot be served: \
             it has a query or a fragment"
        ),
        "{stderr}"
    );
}
