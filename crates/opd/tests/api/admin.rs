//! The admin API and the CLI helpers that drive it.

use opd_testkit::app::TestApp;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::assert_error;

#[tokio::test]
async fn admin_api_needs_the_token() {
    let app = TestApp::spawn().await;
    let url = format!("{}/wallet-addresses", app.admin);
    let resp = app.http.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unauthorized");
    let resp = app
        .http
        .get(&url)
        .bearer_auth("wrong-token-of-some-length")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    // Unknown paths and methods too: the token is checked before routing.
    for (method, path) in [
        (Method::GET, "/no-such-route"),
        (Method::DELETE, "/wallet-addresses"),
    ] {
        let resp = app
            .http
            .request(method, format!("{}{path}", app.admin))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    let (s, _) = app.admin(Method::GET, "/wallet-addresses", None).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = app.admin(Method::GET, "/no-such-route", None).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn admin_rejects_bad_wallet_addresses_and_keys() {
    let app = TestApp::spawn().await;
    app.create_wallet("dave", "USD", 2).await;
    let cases = [
        (
            json!({ "path": "dave", "assetCode": "USD", "assetScale": 2 }),
            409,
            "wallet_address_exists",
        ),
        (
            json!({ "path": "quotes", "assetCode": "USD", "assetScale": 2 }),
            400,
            "invalid_request",
        ),
        (
            json!({ "path": "a b", "assetCode": "USD", "assetScale": 2 }),
            400,
            "invalid_request",
        ),
        (
            json!({ "path": "erin", "assetCode": "USD", "assetScale": 256 }),
            400,
            "invalid_request",
        ),
        (
            json!({ "path": "erin", "assetCode": "", "assetScale": 2 }),
            400,
            "invalid_request",
        ),
        (
            json!({ "path": "erin", "assetCode": "USD", "assetScale": 2, "extra": 1 }),
            400,
            "invalid_request",
        ),
    ];
    for (body, status, code) in cases {
        let (s, v) = app
            .admin(Method::POST, "/wallet-addresses", Some(&body))
            .await;
        assert_error(s, &v, status, code);
    }
    let bad_jwk = json!({ "jwk": { "kid": "k", "kty": "RSA", "crv": "Ed25519", "x": "abc" } });
    let (s, v) = app
        .admin(Method::POST, "/wallet-addresses/dave/keys", Some(&bad_jwk))
        .await;
    assert_error(s, &v, 400, "invalid_request");
    let (s, v) = app
        .admin(Method::DELETE, "/wallet-addresses/dave/keys/nope", None)
        .await;
    assert_error(s, &v, 404, "not_found");
    let (s, v) = app
        .admin(Method::GET, "/wallet-addresses/nobody", None)
        .await;
    assert_error(s, &v, 404, "not_found");
}

/// The admin helpers against any server (`--admin-url`), peers named by
/// name, and errors as one line that says what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_helpers_take_a_url_names_and_say_what_went_wrong() {
    let app = TestApp::spawn().await;
    let run = |args: &[&str], token: &str| {
        opd_testkit::output(
            std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
                .args(["--admin-url", &app.admin, "--admin-token", token])
                .args(args)
                .env_remove("OPD_CONFIG")
                .env_remove("RUST_BACKTRACE")
                .env("OPD_DATA_DIR", "/nonexistent"),
        )
    };
    let created = run(
        &[
            "peer",
            "create",
            "--name",
            "bank",
            "--static-ilp-address",
            "test.bank",
            "--asset-code",
            "USD",
            "--asset-scale",
            "2",
            "--incoming-token",
            "bank-to-us-token",
        ],
        &app.admin_token,
    );
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    // By name, where an id is taken.
    let got = run(&["peer", "get", "bank", "--json"], &app.admin_token);
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    let peer: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap();
    assert_eq!(peer["staticIlpAddress"], "test.bank");
    // Liquidity in the peering's units, or in minor units when asked.
    let deposited = run(
        &["peer", "deposit", "bank", "--amount", "1.50"],
        &app.admin_token,
    );
    assert!(
        deposited.status.success(),
        "{}",
        String::from_utf8_lossy(&deposited.stderr)
    );
    let deposited = run(
        &["peer", "deposit", "bank", "--amount", "25", "--minor-units"],
        &app.admin_token,
    );
    assert!(
        deposited.status.success(),
        "{}",
        String::from_utf8_lossy(&deposited.stderr)
    );
    let balance = run(&["peer", "balance", "bank"], &app.admin_token);
    assert_eq!(String::from_utf8_lossy(&balance.stdout), "bank: 1.75 USD\n");
    let negative = run(
        &["peer", "deposit", "bank", "--amount", "-1"],
        &app.admin_token,
    );
    let err = String::from_utf8_lossy(&negative.stderr).into_owned();
    assert!(err.contains("is negative"), "{err}");
    // A wrong token: one line, saying what to pass.
    let refused = run(&["peer", "list"], "a-wrong-token-0123456789abcdef0123");
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: the admin API at ") && err.contains("--admin-token"),
        "{err}"
    );
    // An error of the API: its code and description on one line.
    let missing = run(&["peer", "get", "nobody"], &app.admin_token);
    let err = String::from_utf8_lossy(&missing.stderr).into_owned();
    assert!(
        err.starts_with("error: no peer has the id or name \"nobody\""),
        "{err}"
    );
}

// The CLI blocks its thread while the server answers on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_helpers_manage_wallet_addresses_and_keys() {
    let app = TestApp::spawn().await;
    let addr = app.admin.trim_start_matches("http://").to_owned();
    let opd = |args: &[&str]| {
        let out = opd_testkit::output(
            std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
                .args(["--admin-listen", &addr, "--admin-token", &app.admin_token])
                .args(args)
                .env_remove("OPD_CONFIG"),
        );
        assert!(
            out.status.success(),
            "opd {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let created = opd(&[
        "wallet-address",
        "create",
        "--path",
        "frank",
        "--asset-code",
        "EUR",
        "--asset-scale",
        "2",
        "--json",
    ]);
    let created: serde_json::Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["url"], app.url("frank"));
    let jwk = r#"{"kid":"cli-key","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    opd(&["key", "add", "frank", "--jwk", jwk]);
    let (_, keys) = app.get(&app.url("frank/jwks.json")).await;
    assert_eq!(keys["keys"][0]["kid"], "cli-key");
    opd(&["key", "revoke", "frank", "cli-key"]);
    let (_, keys) = app.get(&app.url("frank/jwks.json")).await;
    assert!(keys["keys"].as_array().unwrap().is_empty());
    let list = opd(&["wallet-address", "list"]);
    assert!(list.contains("frank"));
    opd(&["wallet-address", "deactivate", "frank"]);
    let (s, _) = app.get(&app.url("frank")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

/// A deposit that would take a balance past u64::MAX is refused with a
/// clear 400 and saves nothing: the balance, withdrawals and `opd check`
/// keep working (the smallest unit of an asset with scale 18 makes 18.4
/// units enough to get there).
#[tokio::test]
async fn deposits_past_the_largest_balance_are_refused_and_nothing_breaks() {
    for db in [opd_testkit::app::Db::Sqlite, opd_testkit::app::Db::Postgres] {
        let app = TestApp::spawn_with(db, |_| {}).await;
        app.create_wallet("rich", "ETH", 18).await;
        let deposit = |amount: &str, key: &str| json!({ "amount": amount, "idempotencyKey": key });
        let path = "/wallet-addresses/rich/deposits";
        let (s, v) = app
            .admin(
                Method::POST,
                path,
                Some(&deposit("18446744073709551615", "a")),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        let (s, v) = app
            .admin(Method::POST, path, Some(&deposit("1", "b")))
            .await;
        assert_error(s, &v, 400, "amount_overflow");
        let (s, v) = app
            .admin(Method::GET, "/wallet-addresses/rich/balance", None)
            .await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["balance"]["value"], "18446744073709551615", "{v}");
        let withdrawal = json!({ "amount": "15", "idempotencyKey": "w" });
        let (s, v) = app
            .admin(
                Method::POST,
                "/wallet-addresses/rich/withdrawals",
                Some(&withdrawal),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        // The refused key was not spent: it can be used for a deposit that fits.
        let (s, v) = app
            .admin(Method::POST, path, Some(&deposit("15", "b")))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        let (s, v) = app.admin(Method::GET, "/ledger/check", None).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["balanced"], true, "{v}");
    }
}

#[tokio::test]
async fn the_data_directory_and_database_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("fresh").join("opd-data");
    let mut settings = opd::config::Settings::for_data_dir(&data);
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    settings.serve.listen = any;
    settings.serve.auth_listen = any;
    settings.common.admin_listen = any;
    settings.serve.ilp_listen = any;
    settings.serve.workers = false;
    let running = opd::app::start(
        settings,
        std::sync::Arc::new(opd_core::SystemClock),
        std::sync::Arc::new(opd_core::OsRandom),
    )
    .await
    .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700, "the data directory");
    assert_eq!(mode(&data.join("opd.sqlite")), 0o600, "the database");
    assert_eq!(mode(&data.join("admin-token")), 0o600, "the admin token");
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn server_secrets_are_sealed_and_the_key_can_be_rotated() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("opd-data");
    let start = |key_file: Option<std::path::PathBuf>, previous: Option<std::path::PathBuf>| {
        let mut settings = opd::config::Settings::for_data_dir(&data);
        let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        settings.serve.listen = any;
        settings.serve.auth_listen = any;
        settings.common.admin_listen = any;
        settings.serve.ilp_listen = any;
        settings.serve.workers = false;
        settings.serve.secrets_key_file = key_file;
        settings.serve.secrets_key_previous_file = previous;
        opd::app::start(
            settings,
            std::sync::Arc::new(opd_core::SystemClock),
            std::sync::Arc::new(opd_core::OsRandom),
        )
    };
    // First start: a key file is made, and the secrets are stored sealed.
    let running = start(None, None).await.unwrap();
    let stored = running
        .services
        .store
        .get_setting("stream_secret")
        .await
        .unwrap()
        .unwrap();
    assert!(stored.starts_with("v1:"), "{stored}");
    let secret_before = running
        .services
        .store
        .get_setting("server_signing_key")
        .await
        .unwrap();
    running.shutdown().await.unwrap();
    let old_key = data.join("secrets-key");
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&old_key).unwrap().permissions()
        ) & 0o777,
        0o600
    );

    // Another key cannot open them: a clear startup error, nothing changed.
    let new_key = root.path().join("new-key");
    std::fs::write(&new_key, "ab".repeat(32)).unwrap();
    let refused = start(Some(new_key.clone()), None).await.err().unwrap();
    assert!(format!("{refused:#}").contains("same key"), "{refused:#}");

    // Rotation: the new key with the old as previous seals them again.
    let running = start(Some(new_key.clone()), Some(old_key.clone()))
        .await
        .unwrap();
    let resealed = running
        .services
        .store
        .get_setting("server_signing_key")
        .await
        .unwrap();
    assert_ne!(resealed, secret_before);
    running.shutdown().await.unwrap();
    // From then on the new key alone opens them.
    let running = start(Some(new_key), None).await.unwrap();
    running.shutdown().await.unwrap();
}

/// Money movements of nothing, or with no usable idempotency key, are
/// refused for wallet addresses and peers alike (one check for both).
#[tokio::test]
async fn empty_movements_and_bad_keys_are_refused() {
    let app = TestApp::spawn().await;
    app.create_wallet("frank", "USD", 2).await;
    let (s, peer) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&serde_json::json!({
                "name": "bank", "staticIlpAddress": "test.bank",
                "asset": { "code": "USD", "scale": 2 },
                "http": { "incoming": { "authTokens": ["bank-token"] } }
            })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{peer}");
    let peer = peer["id"].as_str().unwrap();
    let long_key = "k".repeat(201);
    for path in [
        "/wallet-addresses/frank/deposits".to_owned(),
        "/wallet-addresses/frank/withdrawals".to_owned(),
        format!("/peers/{peer}/deposits"),
        format!("/peers/{peer}/withdrawals"),
    ] {
        for (amount, key, code) in [
            ("0", "a-key", "invalid_amount"),
            ("100", "", "invalid_request"),
            ("100", long_key.as_str(), "invalid_request"),
        ] {
            let body = serde_json::json!({ "amount": amount, "idempotencyKey": key });
            let (s, v) = app.admin(Method::POST, &path, Some(&body)).await;
            assert_eq!(
                (s.as_u16(), v["error"]["code"].as_str()),
                (400, Some(code)),
                "{path} {amount} {key}: {v}"
            );
        }
    }
}

// The CLI blocks its thread while the server answers on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_helpers_move_money_and_set_peers_in_the_assets_units() {
    let app = TestApp::spawn().await;
    let opd = |args: &[&str]| {
        opd_testkit::output(
            std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
                .args(["--admin-url", &app.admin, "--admin-token", &app.admin_token])
                .args(args)
                .env_remove("OPD_CONFIG"),
        )
    };
    // The admin API's JSON, which --json prints.
    let ok = |args: &[&str]| {
        let out = opd(&[args, &["--json"]].concat());
        assert!(
            out.status.success(),
            "opd {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()
    };
    ok(&[
        "wallet-address",
        "create",
        "--path",
        "gina",
        "--asset-code",
        "EUR",
        "--asset-scale",
        "2",
    ]);
    // Decimals in the wallet address's asset, or minor units when asked.
    ok(&["wallet-address", "deposit", "gina", "--amount", "12.50"]);
    ok(&[
        "wallet-address",
        "withdraw",
        "gina",
        "--amount",
        "250",
        "--minor-units",
    ]);
    let balance = ok(&["wallet-address", "balance", "gina"]);
    assert_eq!(balance["balance"]["value"], "1000", "{balance}");
    let (_, v) = app
        .admin(Method::GET, "/wallet-addresses/gina/balance", None)
        .await;
    assert_eq!(v["balance"]["value"], "1000");
    // More than the balance: refused, the balance unchanged.
    let refused = opd(&["wallet-address", "withdraw", "gina", "--amount", "10.01"]);
    assert!(!refused.status.success());
    let balance = ok(&["wallet-address", "balance", "gina"]);
    assert_eq!(balance["balance"]["value"], "1000", "{balance}");
    let precise = opd(&["wallet-address", "deposit", "gina", "--amount", "0.001"]);
    let err = String::from_utf8_lossy(&precise.stderr).into_owned();
    assert!(
        !precise.status.success() && err.lines().count() == 1,
        "{err}"
    );

    // Rates and fees: `crate::cli_helpers`.

    // A peer's amounts in the peering's asset (scale 3 here), or in minor
    // units when asked.
    let peer = ok(&[
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
        "--liquidity-low",
        "5",
    ]);
    assert_eq!(peer["maxPacketAmount"], "12500", "{peer}");
    assert_eq!(peer["liquidityThreshold"]["low"], "5000", "{peer}");
    let peer = ok(&["peer", "update", "bank", "--liquidity-high", "1000.000"]);
    assert_eq!(peer["liquidityThreshold"]["high"], "1000000", "{peer}");
    let peer = ok(&[
        "peer",
        "update",
        "bank",
        "--minor-units",
        "--max-packet-amount",
        "99",
    ]);
    assert_eq!(peer["maxPacketAmount"], "99", "{peer}");
    let bad = opd(&["peer", "update", "bank", "--max-packet-amount", "1.0001"]);
    let err = String::from_utf8_lossy(&bad.stderr).into_owned();
    assert!(
        !bad.status.success() && err.contains("--max-packet-amount"),
        "{err}"
    );
}

/// What the admin helpers print of a server's answer stays inert on a
/// terminal: its JSON keeps the exact text (bidirectional and C1 controls
/// as JSON escapes, which read back the same), and its errors show
/// controls as their code points.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_helpers_print_server_text_inert() {
    let app = TestApp::spawn().await;
    let name = "Bob\u{202e}kcab\u{9b}2J\u{1b}[8m\u{7f}";
    let body = json!({ "path": "bob", "assetCode": "USD", "assetScale": 2, "publicName": name });
    let (s, v) = app
        .admin(Method::POST, "/wallet-addresses", Some(&body))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let run = |admin: &str, args: &[&str]| {
        opd_testkit::output(
            std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
                .args(["--admin-url", admin, "--admin-token", &app.admin_token])
                .args(args)
                .env_remove("OPD_CONFIG"),
        )
    };
    let inert = |text: &str| {
        !text
            .chars()
            .any(|c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
    };
    let got = run(&app.admin, &["wallet-address", "get", "bob", "--json"]);
    let out = String::from_utf8(got.stdout).unwrap();
    assert!(got.status.success() && inert(&out), "{out:?}");
    let wallet: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(wallet["publicName"], name);
    // As text, every value on its line, its controls shown as code points.
    let got = run(&app.admin, &["wallet-address", "get", "bob"]);
    let out = String::from_utf8(got.stdout).unwrap();
    assert!(got.status.success() && inert(&out), "{out:?}");
    assert!(
        out.contains("public name: Bob[U+202E]kcab[U+009B]2J[U+001B][8m[U+007F]\n"),
        "{out}"
    );

    // An admin API (here a hostile one) refusing with controls in its error.
    let hostile = crate::client::answering(
        StatusCode::CONFLICT,
        json!({ "error": {
            "code": "conflict\u{1b}[2J",
            "description": "taken\u{1b}[8m\nerror: fine\u{202e}",
            "details": { "why\u{1b}[1A": "x\u{9b}y" },
        } }),
    )
    .await;
    let refused = run(&hostile, &["peer", "list"]);
    let err = String::from_utf8(refused.stderr).unwrap();
    assert!(!refused.status.success() && inert(&err), "{err:?}");
    assert!(
        err.contains(
            "409 conflict[U+001B][2J: taken[U+001B][8m[U+000A]error: fine[U+202E]\n  why[U+001B][1A: x[U+009B]y"
        ),
        "{err}"
    );
}

/// `opd wallet-address create --owner-password-file` and `opd
/// wallet-address password` give a wallet address's owner a password to
/// approve grants with (checked here as the consent page checks it).
// The CLI blocks its thread while the server answers on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_helpers_set_the_owner_password() {
    use opd_service::grants::{check_owner_password, has_owner_password, PasswordCheck};
    let app = TestApp::spawn().await;
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let second = dir.path().join("second");
    std::fs::write(&first, "hana's first password\n").unwrap();
    std::fs::write(&second, "hana's second password\n").unwrap();
    let opd = |args: &[&str]| {
        let out = opd_testkit::output(
            std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
                .args(["--admin-url", &app.admin, "--admin-token", &app.admin_token])
                .args(args)
                .arg("--json")
                .env_remove("OPD_CONFIG"),
        );
        assert!(
            out.status.success(),
            "opd {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()
    };
    let first_arg = first.to_str().unwrap();
    let made = opd(&[
        "wallet-address",
        "create",
        "--path",
        "hana",
        "--asset-code",
        "USD",
        "--asset-scale",
        "2",
        "--owner-password-file",
        first_arg,
    ]);
    let id = opd_core::WalletAddressId::parse(made["id"].as_str().unwrap()).unwrap();
    let services = app.services();
    assert!(has_owner_password(services, id).await.unwrap());
    let check = |pw: &'static str| check_owner_password(services, id, pw);
    assert!(matches!(
        check("hana's first password").await.unwrap(),
        PasswordCheck::Right
    ));
    opd(&[
        "wallet-address",
        "password",
        "hana",
        "--password-file",
        second.to_str().unwrap(),
    ]);
    assert!(matches!(
        check("hana's first password").await.unwrap(),
        PasswordCheck::Wrong
    ));
    assert!(matches!(
        check("hana's second password").await.unwrap(),
        PasswordCheck::Right
    ));
    // Without the flag, no password: the consent page says so.
    let bare = opd(&[
        "wallet-address",
        "create",
        "--path",
        "ines",
        "--asset-code",
        "USD",
        "--asset-scale",
        "2",
    ]);
    let ines = opd_core::WalletAddressId::parse(bare["id"].as_str().unwrap()).unwrap();
    assert!(!has_owner_password(services, ines).await.unwrap());
    assert!(matches!(
        check_owner_password(services, ines, "anything")
            .await
            .unwrap(),
        PasswordCheck::NotSet
    ));
    // Typed at a terminal (a pseudo-terminal of `script`): asked twice,
    // never echoed; two that differ change nothing.
    let command = format!(
        "{} --admin-url {} --admin-token {} wallet-address password ines --prompt",
        env!("CARGO_BIN_EXE_opd"),
        app.admin,
        app.admin_token
    );
    fn typed(command: String, answers: &'static str) -> std::process::Output {
        let mut child = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env_remove("OPD_CONFIG")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("script (util-linux) runs opd on a pseudo-terminal");
        // Each answer once its question is up: a terminal discards what
        // was typed before echo went off.
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            for line in answers.split_inclusive('\n') {
                std::thread::sleep(std::time::Duration::from_millis(300));
                let _ = std::io::Write::write_all(&mut stdin, line.as_bytes());
            }
        });
        child.wait_with_output().unwrap()
    }
    let again = command.clone();
    let mistyped = tokio::task::spawn_blocking(move || typed(again, "ines one\nines two\n"));
    let out = mistyped.await.unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("The same again:") && said.contains("the two passwords differ"),
        "{said}"
    );
    assert!(!has_owner_password(services, ines).await.unwrap());
    let out =
        tokio::task::spawn_blocking(move || typed(command, "ines typed this\nines typed this\n"))
            .await
            .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("owner password set: ines"), "{said}");
    assert!(!said.contains("ines typed this"), "never echoed: {said}");
    assert!(matches!(
        check_owner_password(services, ines, "ines typed this")
            .await
            .unwrap(),
        PasswordCheck::Right
    ));
    app.stop().await;
}

/// A deposit or a withdrawal sent again with its idempotency key gets the
/// first answer and moves the money once; the key with other parameters is
/// refused. The balance and the transfers say so to the unit.
#[tokio::test]
async fn a_repeated_deposit_or_withdrawal_key_moves_money_once() {
    let app = TestApp::spawn().await;
    app.create_wallet("gina", "USD", 2).await;
    let post = |path: &'static str, amount: &'static str, key: &'static str| {
        let app = &app;
        async move {
            let body = serde_json::json!({ "amount": amount, "idempotencyKey": key });
            app.admin(
                Method::POST,
                &format!("/wallet-addresses/gina/{path}"),
                Some(&body),
            )
            .await
        }
    };
    let balance = || async {
        let (_, v) = app
            .admin(Method::GET, "/wallet-addresses/gina/balance", None)
            .await;
        v["balance"]["value"].as_str().unwrap().to_owned()
    };
    let (s, first) = post("deposits", "500", "dep-1").await;
    assert_eq!(s, StatusCode::CREATED, "{first}");
    let (s, again) = post("deposits", "500", "dep-1").await;
    assert_eq!(s, StatusCode::OK, "{again}");
    assert_eq!(again, first, "the first answer");
    let (s, other) = post("deposits", "501", "dep-1").await;
    assert_eq!(
        (s, other["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("idempotency_key_reused"))
    );
    assert_eq!(balance().await, "500");
    let (s, out) = post("withdrawals", "200", "wd-1").await;
    assert_eq!(s, StatusCode::CREATED, "{out}");
    let (s, out_again) = post("withdrawals", "200", "wd-1").await;
    assert_eq!((s, &out_again), (StatusCode::OK, &out));
    assert_eq!(balance().await, "300");
    let (_, transfers) = app
        .admin(Method::GET, "/wallet-addresses/gina/transfers", None)
        .await;
    assert_eq!(transfers.as_array().unwrap().len(), 2, "{transfers}");
}
