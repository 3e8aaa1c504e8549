//! TLS as operators deploy it: two opd servers whose every listener
//! serves `https://` with certificates from a private authority (made in
//! the test), trusting it through `--ca-file`, pay each other over
//! `https://` only; a server not given the authority refuses the other's
//! certificate and says so.

use opd_service::payments::outgoing::lifecycle::Step;
use opd_testkit::app::{Db, TestApp};
use opd_testkit::tls::{test_ca, trust_test_ca};
use reqwest::StatusCode;
use serde_json::json;

use crate::amount;
use crate::remote::{balanced, incoming_at_b, pair_of, paying, quote};

/// A server on `address` serving TLS with a certificate of the test
/// authority; trusting the authority for its own requests when `trust`.
async fn tls_node(address: &str, dir: &std::path::Path, trust: bool) -> TestApp {
    let ca = test_ca();
    let (cert, key) = ca.issue(dir);
    let ca_file = ca.write_ca(dir);
    let address = address.to_owned();
    TestApp::spawn_with(Db::Sqlite, move |s| {
        s.serve.ilp_address = address;
        s.serve.tls_cert = Some(cert);
        s.serve.tls_key = Some(key);
        if trust {
            s.serve.ca_file = Some(ca_file);
        }
    })
    .await
}

#[tokio::test]
async fn two_servers_with_a_private_ca_pay_each_other_over_https() {
    trust_test_ca();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = tls_node("test.a", dir_a.path(), true).await;
    let b = tls_node("test.b", dir_b.path(), true).await;
    for url in [&a.base, &a.auth, &a.ilp, &b.base, &b.auth, &b.ilp] {
        assert!(url.starts_with("https://"), "{url}");
    }
    // The admin listener on loopback stays plain, for the admin helpers.
    assert!(a.admin.starts_with("http://"), "{}", a.admin);
    let w = paying(pair_of(a, b, 1_000_000, None).await).await;
    assert!(w.receiver.starts_with("https://"), "{}", w.receiver);
    assert!(matches!(w.step().await, Step::Completed(_)));
    let (_, got) = w.b.get(&w.receiver).await;
    assert_eq!(got["receivedAmount"], amount("1000", "EUR", 2));
    balanced(&w.a).await;
    balanced(&w.b).await;
    // Plain HTTP to a TLS listener gets nothing.
    let plain = w.a.base.replacen("https://", "http://", 1);
    let answer = reqwest::get(format!("{plain}/healthz")).await;
    assert!(answer.is_err() || !answer.unwrap().status().is_success());
}

#[tokio::test]
async fn without_the_ca_file_a_quote_fails_on_the_certificate_and_says_so() {
    trust_test_ca();
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = tls_node("test.a", dir_a.path(), false).await;
    let b = tls_node("test.b", dir_b.path(), true).await;
    let pair = pair_of(a, b, 1_000_000, None).await;
    let alice = pair.a.create_wallet("alice", "USD", 2).await;
    let receiver = incoming_at_b(&pair.b, "1000").await;
    let (s, q) = quote(&pair.a, &alice, &receiver, json!({})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
    assert_eq!(q["error"]["code"], "invalid_receiver", "{q}");
    let reason = q["error"]["details"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("certificate is not trusted"), "{q}");
    assert!(!reason.contains("127.0.0.1"), "no internal address: {q}");
}

/// `opd client` reads a payment pointer as the https URL it stands for,
/// and trusts a private CA through the platform's `SSL_CERT_FILE`.
#[tokio::test]
async fn opd_client_takes_a_payment_pointer() {
    trust_test_ca();
    let dir = tempfile::tempdir().unwrap();
    let app = tls_node("test.opd", dir.path(), true).await;
    let shop = app.signing_client("shop", 64).await;
    app.create_wallet("bob", "USD", 2).await;
    let profile = dir.path().join("client.json");
    opd_client::profile::Profile::with_key(&shop.wallet_address, &shop.kid, shop.key.clone())
        .save_new(&profile)
        .unwrap();
    let host = app.base.trim_start_matches("https://").to_owned();
    let pointer = format!("${host}/bob");
    let ca = test_ca().write_ca(dir.path());
    let out = tokio::task::spawn_blocking(move || {
        opd_testkit::output(
            std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
                .args(["client", &format!("--profile={}", profile.display())])
                .args([
                    "--json",
                    "incoming-payment",
                    "create",
                    "--wallet-address",
                    &pointer,
                ])
                .args(["--amount", "1.50"])
                .env_remove("OPD_CLIENT_PROFILE")
                .env("SSL_CERT_FILE", &ca),
        )
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ip: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ip["walletAddress"], app.url("bob"), "{ip}");
    assert_eq!(ip["incomingAmount"], amount("150", "USD", 2));
}

/// Runs `opd client --profile <profile> <args>` off the runtime, with
/// `env` and without the platform trust store's extra authorities
/// (`SSL_CERT_FILE`, `SSL_CERT_DIR`): it trusts the test authority only
/// when told.
async fn client_run(
    profile: &std::path::Path,
    args: &[&str],
    env: &[(&str, &std::path::Path)],
) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_opd"));
    cmd.args(["client", &format!("--profile={}", profile.display())])
        .args(args)
        .env_remove("OPD_CLIENT_PROFILE")
        .env_remove("OPD_CA_FILE")
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    tokio::task::spawn_blocking(move || opd_testkit::output(&mut cmd))
        .await
        .unwrap()
}

/// A profile file in `dir` (any key: reading a wallet address is not signed).
fn any_profile(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("client.json");
    opd_client::profile::Profile::generate("https://wallet.example/me", "me-1")
        .save_new(&path)
        .unwrap();
    path
}

/// `opd client` trusts a private authority given with `--ca-file` or
/// `OPD_CA_FILE`; without it, it says the certificate is not trusted and
/// how to trust it, not "cannot connect".
#[tokio::test]
async fn opd_client_trusts_a_private_ca_given_with_ca_file_or_opd_ca_file() {
    trust_test_ca();
    let dir = tempfile::tempdir().unwrap();
    let app = tls_node("test.opd", dir.path(), true).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let profile = any_profile(dir.path());
    let ca = test_ca().write_ca(dir.path());

    let refused = client_run(&profile, &["wallet-address", &bob], &[]).await;
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("certificate is not trusted"), "{err}");
    assert!(
        err.contains("--ca-file") && err.contains("OPD_CA_FILE"),
        "{err}"
    );
    assert!(!err.contains("cannot connect"), "{err}");

    let flag = format!("--ca-file={}", ca.display());
    let by_flag = client_run(&profile, &[&flag, "wallet-address", &bob], &[]).await;
    let shown = String::from_utf8_lossy(&by_flag.stdout);
    assert!(
        by_flag.status.success(),
        "{}",
        String::from_utf8_lossy(&by_flag.stderr)
    );
    assert!(
        shown.starts_with(&format!("Wallet address  {bob}\n")),
        "{shown}"
    );

    let by_env = client_run(&profile, &["wallet-address", &bob], &[("OPD_CA_FILE", &ca)]).await;
    assert!(
        by_env.status.success(),
        "{}",
        String::from_utf8_lossy(&by_env.stderr)
    );

    // A CA file that cannot be used is said before any request.
    let missing = dir.path().join("missing.pem");
    let flag = format!("--ca-file={}", missing.display());
    let bad = client_run(&profile, &[&flag, "wallet-address", &bob], &[]).await;
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("cannot read the CA file"), "{err}");
}

/// A listener that only completes TLS handshakes with `cert` (a client
/// refusing the certificate never gets further): its `https://` URL on
/// 127.0.0.1.
async fn handshake_only(cert: &std::path::Path, key: &std::path::Path) -> String {
    let (acceptor, _) = opd::tls::acceptor(cert, key).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move { drop(acceptor.accept(stream).await) });
        }
    });
    format!("https://127.0.0.1:{port}")
}

/// A certificate of a trusted authority, but for another host name, or
/// expired: `opd client` names which, as the server does.
#[tokio::test]
async fn opd_client_names_a_certificate_for_another_host_or_expired() {
    let dir = tempfile::tempdir().unwrap();
    let profile = any_profile(dir.path());
    let ca = test_ca().write_ca(dir.path());
    let flag = format!("--ca-file={}", ca.display());
    for (names, expired, said) in [
        (
            &["other.example"][..],
            false,
            "certificate does not match the host name",
        ),
        (
            &["localhost", "127.0.0.1"][..],
            true,
            "certificate is expired or not valid yet",
        ),
    ] {
        let at = tempfile::tempdir().unwrap();
        let (cert, key) = test_ca().issue_for(at.path(), names, expired);
        let url = handshake_only(&cert, &key).await;
        let out = client_run(
            &profile,
            &[&flag, "wallet-address", &format!("{url}/bob")],
            &[],
        )
        .await;
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(said), "{names:?}: {err}");
        assert!(!err.contains("cannot connect"), "{err}");
    }
}
