//! What the admin helpers print: text for people by default, amounts in
//! their asset's units (`gina: 10.00 EUR`), one line per item of a list,
//! and at least one line for every success (`fee set`, `rate set`, `key
//! revoke` too); with `--json`, the admin API's JSON. A fee's share and a
//! rate mean the same from the terminal and on the dashboard: set in one,
//! read in the other; `opd rate set` sets one pair and keeps the base's
//! others.
//!
//! The helpers run as child processes and block their thread while the
//! server answers on another: every test here runs on two workers.

use opd_testkit::app::TestApp;
use reqwest::header::COOKIE;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::dashboard::{csrf_of, signed_in, Dash};

/// `opd <args>` against `app`'s admin API.
fn run(app: &TestApp, args: &[&str]) -> std::process::Output {
    opd_testkit::output(
        std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
            .args(["--admin-url", &app.admin, "--admin-token", &app.admin_token])
            .args(args)
            .env_remove("OPD_CONFIG")
            .env_remove("RUST_BACKTRACE"),
    )
}

/// `opd <args>`, which must succeed and say so in at least one line: its
/// standard output.
#[track_caller]
fn ok(app: &TestApp, args: &[&str]) -> String {
    let out = run(app, args);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "opd {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.lines().next().is_some_and(|l| !l.trim().is_empty()),
        "opd {args:?} printed nothing: {text:?}"
    );
    text
}

/// `opd <args>`, which must fail: its standard error.
#[track_caller]
fn refused(app: &TestApp, args: &[&str]) -> String {
    let out = run(app, args);
    assert!(!out.status.success(), "opd {args:?} succeeded");
    String::from_utf8(out.stderr).unwrap()
}

/// `opd <args> --json`: what it printed, as JSON.
#[track_caller]
fn json_of(app: &TestApp, args: &[&str]) -> Value {
    let text = ok(app, &[args, &["--json"]].concat());
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wallet_address_helpers_speak_in_the_assets_units() {
    let app = TestApp::spawn().await;
    let url = app.url("gina");
    let line = format!("gina  {url}  EUR (scale 2)");
    let made = ok(
        &app,
        &[
            "wallet-address",
            "create",
            "--path",
            "gina",
            "--asset-code",
            "EUR",
            "--asset-scale",
            "2",
            "--public-name",
            "Gina",
        ],
    );
    assert_eq!(made, format!("wallet address created: {line}\n"));
    let dir = tempfile::tempdir().unwrap();
    let password = dir.path().join("password");
    std::fs::write(&password, "gina's password\n").unwrap();
    let set = ok(
        &app,
        &[
            "wallet-address",
            "password",
            "gina",
            "--password-file",
            password.to_str().unwrap(),
        ],
    );
    assert_eq!(set, "owner password set: gina\n");
    let deposit = ["wallet-address", "deposit", "gina", "--amount", "12.50"];
    assert_eq!(
        ok(&app, &deposit),
        "deposited 12.50 EUR to gina; balance 12.50 EUR\n"
    );
    let withdraw = ["wallet-address", "withdraw", "gina", "--amount", "250"];
    assert_eq!(
        ok(&app, &[&withdraw[..], &["--minor-units"]].concat()),
        "withdrew 2.50 EUR from gina; balance 10.00 EUR\n"
    );
    assert_eq!(
        ok(&app, &["wallet-address", "balance", "gina"]),
        "gina: 10.00 EUR\n"
    );
    // One line each (the test server's own wallet addresses too).
    let list = ok(&app, &["wallet-address", "list"]);
    assert!(list.lines().any(|l| l == line), "{list}");
    let got = ok(&app, &["wallet-address", "get", "gina"]);
    assert!(
        got.starts_with(&format!("{line}\n")) && got.contains("\npublic name: Gina\n"),
        "{got}"
    );
    let jwk = r#"{"kid":"k1","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    let added = ok(&app, &["key", "add", "gina", "--jwk", jwk]);
    assert!(
        added.starts_with("key added to gina: k1  Ed25519  added "),
        "{added}"
    );
    let keys = ok(&app, &["key", "list", "gina"]);
    assert!(keys.starts_with("k1  Ed25519  added ") && keys.lines().count() == 1);
    assert_eq!(
        ok(&app, &["key", "revoke", "gina", "k1"]),
        "key revoked: k1 of gina\n"
    );
    assert!(ok(&app, &["key", "list", "gina"]).contains("  revoked "));
    let gone = ok(&app, &["wallet-address", "deactivate", "gina"]);
    assert_eq!(
        gone,
        format!("wallet address deactivated: {line}  deactivated\n")
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_helpers_speak_in_the_peerings_units() {
    let app = TestApp::spawn().await;
    assert_eq!(ok(&app, &["peer", "list"]), "no peers\n");
    let made = ok(
        &app,
        &[
            "peer",
            "create",
            "--name",
            "bank",
            "--static-ilp-address",
            "test.bank",
            "--asset-code",
            "EUR",
            "--asset-scale",
            "3",
            "--max-packet-amount",
            "12.5",
        ],
    );
    let line = "bank  test.bank  EUR (scale 3)";
    assert_eq!(made, format!("peer created: {line}  liquidity 0.000 EUR\n"));
    assert_eq!(
        ok(&app, &["peer", "deposit", "bank", "--amount", "1.5"]),
        "deposited 1.500 EUR to peer bank; liquidity 1.500 EUR\n"
    );
    assert_eq!(
        ok(&app, &["peer", "withdraw", "bank", "--amount", "0.25"]),
        "withdrew 0.250 EUR from peer bank; liquidity 1.250 EUR\n"
    );
    assert_eq!(ok(&app, &["peer", "balance", "bank"]), "bank: 1.250 EUR\n");
    assert_eq!(
        ok(&app, &["peer", "list"]),
        format!("{line}  liquidity 1.250 EUR\n")
    );
    let got = ok(&app, &["peer", "get", "bank"]);
    assert!(got.contains("\nmax packet amount: 12.500 EUR\n"), "{got}");
    let updated = ok(&app, &["peer", "update", "bank", "--liquidity-low", "1"]);
    assert!(updated.starts_with("peer updated: bank  "), "{updated}");
    assert!(ok(&app, &["peer", "get", "bank"]).contains("\nliquidity low: 1.000 EUR\n"));
    ok(&app, &["peer", "withdraw", "bank", "--amount", "1.25"]);
    assert_eq!(
        ok(&app, &["peer", "delete", "bank"]),
        "peer deleted: bank\n"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fee_rate_and_tenant_helpers_say_what_they_did() {
    let app = TestApp::spawn().await;
    let usd = ["--asset-code", "USD", "--asset-scale", "2"];
    let set = ["fee", "set", "--fixed", "0.30", "--percent", "1.5"];
    assert_eq!(
        ok(&app, &[&set[..], &usd].concat()),
        "fee set: USD 0.30 + 1.5 %\n"
    );
    assert_eq!(ok(&app, &["fee", "list"]), "default  USD 0.30 + 1.5 %\n");
    assert_eq!(
        ok(&app, &[&["fee", "delete"][..], &usd].concat()),
        "fee removed: USD (scale 2)\n"
    );
    assert_eq!(ok(&app, &["fee", "list"]), "no fees set\n");

    assert_eq!(ok(&app, &["rate", "list"]), "no rates set\n");
    assert_eq!(
        ok(&app, &["rate", "set", "USD", "EUR", "0.90"]),
        "rate set: 1 USD = 0.9 EUR\n"
    );
    assert_eq!(ok(&app, &["rate", "list"]), "1 USD = 0.9 EUR\n");
    assert_eq!(
        ok(&app, &["rate", "delete", "USD", "EUR"]),
        "rate removed: USD to EUR\n"
    );

    let public = format!("{}/shop", app.base);
    let made = ok(
        &app,
        &[
            "tenant",
            "create",
            "shop",
            "--public-name",
            "Shop",
            "--public-url",
            &public,
        ],
    );
    let lines: Vec<&str> = made.lines().collect();
    assert_eq!(lines[0], format!("tenant created: shop  Shop  {public}"));
    assert!(
        lines[1].starts_with("admin token of shop (shown once; opd keeps only its digest): "),
        "{made}"
    );
    assert_eq!(ok(&app, &["tenant", "list"]).lines().count(), 2);
    assert!(ok(&app, &["tenant", "get", "shop"]).starts_with(&format!("shop  Shop  {public}\n")));
    let renamed = ok(
        &app,
        &["tenant", "update", "shop", "--public-name", "Shop & Co"],
    );
    assert_eq!(
        renamed,
        format!("tenant updated: shop  Shop & Co  {public}\n")
    );
    let rotated = ok(&app, &["tenant", "rotate-token", "shop"]);
    assert!(
        rotated.starts_with("admin token of shop (shown once"),
        "{rotated}"
    );
    assert_eq!(
        ok(&app, &["tenant", "delete", "shop"]),
        "tenant deleted: shop\n"
    );
    app.stop().await;
}

/// `--json` prints what the admin API answers, written after the helper
/// or after its command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_prints_the_admin_apis_answer() {
    let app = TestApp::spawn().await;
    app.create_wallet("gina", "EUR", 2).await;
    ok(
        &app,
        &["wallet-address", "deposit", "gina", "--amount", "1"],
    );
    ok(&app, &["rate", "set", "USD", "EUR", "0.9"]);
    let usd = ["--asset-code", "USD", "--asset-scale", "2"];
    ok(
        &app,
        &[&["fee", "set", "--percent", "0.5"][..], &usd].concat(),
    );
    for (args, path) in [
        (
            &["wallet-address", "get", "gina"][..],
            "/wallet-addresses/gina",
        ),
        (&["wallet-address", "list"], "/wallet-addresses"),
        (
            &["wallet-address", "balance", "gina"],
            "/wallet-addresses/gina/balance",
        ),
        (&["key", "list", "gina"], "/wallet-addresses/gina/keys"),
        (&["rate", "list"], "/rates"),
        (&["fee", "list"], "/fees"),
        (&["peer", "list"], "/peers"),
        (&["tenant", "list"], "/tenants"),
    ] {
        let (s, api) = app.admin(Method::GET, path, None).await;
        assert_eq!(s, StatusCode::OK, "{api}");
        assert_eq!(json_of(&app, args), api, "opd {args:?} --json");
    }
    let before = ok(&app, &["wallet-address", "--json", "balance", "gina"]);
    let before: Value = serde_json::from_str(&before).unwrap();
    assert_eq!(before["balance"]["value"], "100", "{before}");
    // An answer without a body (204): what was done.
    let set = json_of(&app, &["rate", "set", "USD", "GBP", "0.8"]);
    assert_eq!(
        set,
        json!({ "base": "USD", "counter": "GBP", "rate": "0.8" })
    );
    let fee = json_of(
        &app,
        &[&["fee", "set", "--percent", "1.5"][..], &usd].concat(),
    );
    assert_eq!(fee["basisPoints"], 150, "{fee}");
    app.stop().await;
}

/// A form of the dashboard, posted with its page's token.
async fn dashboard_post(d: &Dash, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
    let (_, page) = d.get("/dashboard/pricing").await;
    let mut form: Vec<(&str, String)> = form.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    form.push(("csrf", csrf_of(&page)));
    d.browser
        .post(format!("{}{path}", d.app.admin))
        .header(COOKIE, &d.cookie)
        .form(&form)
        .send()
        .await
        .unwrap()
}

/// A fee's share is a percentage in both: set from the terminal, the
/// dashboard shows it; set on the dashboard, the terminal shows it; both
/// store basis points and refuse more than 100 %.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fee_shares_mean_the_same_in_the_terminal_and_on_the_dashboard() {
    let d = signed_in(TestApp::spawn().await).await;
    let usd = ["--asset-code", "USD", "--asset-scale", "2"];
    let set = ["fee", "set", "--fixed", "0.10", "--percent", "1.5"];
    ok(&d.app, &[&set[..], &usd].concat());
    let (_, page) = d.get("/dashboard/pricing").await;
    assert!(page.contains("1.5 %") && page.contains("$0.10"), "{page}");
    let (_, fees) = d.app.admin(Method::GET, "/fees", None).await;
    assert_eq!(fees[0]["basisPoints"], 150, "{fees}");

    let form = [
        ("asset_code", "EUR"),
        ("asset_scale", "2"),
        ("fixed", "1"),
        ("percent", "0.25"),
    ];
    let r = dashboard_post(&d, "/dashboard/fees", &form).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        ok(&d.app, &["fee", "list"]),
        "default  EUR 1.00 + 0.25 %\ndefault  USD 0.10 + 1.5 %\n"
    );

    let too_much = ["fee", "set", "--percent", "100.01"];
    let err = refused(&d.app, &[&too_much[..], &usd].concat());
    assert!(err.contains("a percentage from 0 to 100"), "{err}");
    let r = dashboard_post(
        &d,
        "/dashboard/fees",
        &[
            ("asset_code", "USD"),
            ("asset_scale", "2"),
            ("percent", "100.01"),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let (_, fees) = d.app.admin(Method::GET, "/fees?tenant=default", None).await;
    assert_eq!(fees[1]["basisPoints"], 150, "unchanged: {fees}");
    d.app.stop().await;
}

/// `opd rate set` sets one pair as the dashboard's form does: the base's
/// other rates, set from either, are kept; `opd rate delete` removes one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_set_keeps_the_other_pairs_of_the_base() {
    let d = signed_in(TestApp::spawn().await).await;
    let rates = || async { d.app.admin(Method::GET, "/rates", None).await.1["rates"].clone() };
    ok(&d.app, &["rate", "set", "USD", "EUR", "0.9"]);
    ok(&d.app, &["rate", "set", "USD", "GBP", "0.8"]);
    assert_eq!(rates().await["USD"], json!({ "EUR": "0.9", "GBP": "0.8" }));
    let form = [("base", "USD"), ("counter", "JPY"), ("rate", "150")];
    let r = dashboard_post(&d, "/dashboard/rates", &form).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    ok(&d.app, &["rate", "set", "USD", "EUR", "0.95"]);
    assert_eq!(
        rates().await["USD"],
        json!({ "EUR": "0.95", "GBP": "0.8", "JPY": "150" })
    );
    assert_eq!(
        ok(&d.app, &["rate", "list"]),
        "1 USD = 0.95 EUR\n1 USD = 0.8 GBP\n1 USD = 150 JPY\n"
    );
    ok(&d.app, &["rate", "delete", "USD", "GBP"]);
    assert_eq!(rates().await["USD"], json!({ "EUR": "0.95", "JPY": "150" }));
    let (_, page) = d.get("/dashboard/pricing").await;
    assert!(page.contains("data-rate=\"USD-EUR\""), "{page}");
    assert!(!page.contains("data-rate=\"USD-GBP\""), "{page}");
    let err = refused(&d.app, &["rate", "delete", "USD", "GBP"]);
    assert!(err.contains("404 not_found"), "{err}");
    let err = refused(&d.app, &["rate", "set", "USD", "EUR", "cheap"]);
    assert!(err.contains("is not a rate"), "{err}");
    d.app.stop().await;
}
