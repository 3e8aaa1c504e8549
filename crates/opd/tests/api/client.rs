//! `opd client` against real servers: the payment command end to end
//! (to a receiver on another opd server over Interledger, and on the same
//! server with a fixed debit), a refused consent, and the command line
//! itself (human and JSON output, exit codes, the server's errors shown).
//! Consent is given through the identity-provider API and the browser's
//! finish redirect to the client's loopback port (the consent page itself
//! has its own browser tests). The client's traffic goes through a
//! recording proxy (`opd_testkit::proxy`), so that every Open Payments and
//! GNAP response it received is validated against the spec. The grants
//! a payment leaves behind are counted in [`grants`].

use std::process::Output;

use opd_client::http::Client;
use opd_client::pay::{self, Payment, Progress};
use opd_client::profile::Profile;
use opd_testkit::app::{decide_interaction, Db, TestApp};
use opd_testkit::proxy::ValidatingProxy;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::amount;
use crate::remote::{admin_ok, balance, balanced, pair_of, Pair};

mod grants;

/// Records the steps and answers the consent page as the owner would.
struct Owner {
    approve: bool,
    lines: Vec<String>,
    decided: Option<tokio::task::JoinHandle<StatusCode>>,
}

impl Owner {
    fn new(approve: bool) -> Self {
        Self {
            approve,
            lines: Vec::new(),
            decided: None,
        }
    }
}

impl Progress for Owner {
    fn step(&mut self, line: &str) {
        self.lines.push(line.to_owned());
    }
    fn consent(&mut self, url: &str) {
        let (url, approve) = (url.to_owned(), self.approve);
        self.decided = Some(tokio::spawn(async move {
            decide_interaction(&url, approve).await.status()
        }));
    }
    fn sent(&mut self, sent: &opd_client::amount::Amount, of: &opd_client::amount::Amount) {
        self.lines.push(format!("sent {sent} of {of}"));
    }
}

/// A server with its workers running (the client waits for them), on
/// the ILP address `address`.
async fn node(address: &str) -> TestApp {
    let address = address.to_owned();
    TestApp::spawn_with(Db::Sqlite, move |s| {
        s.serve.ilp_address = address;
        s.serve.workers = true;
    })
    .await
}

/// The client `shop` at `app` (its key registered there), sending through
/// `proxy`, and alice with 100.00 USD and an owner password.
async fn shop_and_alice(app: &TestApp, proxy: &ValidatingProxy) -> (Client, String) {
    let shop = app.signing_client("shop", 61).await;
    let profile = Profile::with_key(&shop.wallet_address, &shop.kid, shop.key.clone());
    let alice = app.create_wallet("alice", "USD", 2).await;
    app.deposit("alice", 10_000).await;
    admin_ok(
        app,
        Method::PUT,
        "/wallet-addresses/alice/owner-password",
        json!({ "password": "alice-password" }),
    )
    .await;
    (Client::with_http(profile, proxy.client()), alice)
}

fn payment(receiver: &str, from: &str) -> Payment {
    Payment {
        receiver: receiver.to_owned(),
        from: from.to_owned(),
        amount: None,
        debit_amount: None,
        consent_wait: std::time::Duration::from_secs(30),
        timeout: std::time::Duration::from_secs(60),
    }
}

#[tokio::test]
async fn opd_client_pays_a_wallet_address_on_another_server() {
    let Pair { a, b } = pair_of(node("test.a").await, node("test.b").await, 1_000_000, None).await;
    let proxy = ValidatingProxy::start().await;
    let (client, alice) = shop_and_alice(&a, &proxy).await;
    let bob = b.create_wallet("bob", "EUR", 2).await;

    let mut owner = Owner::new(true);
    let p = Payment {
        amount: Some("10.00".into()),
        ..payment(&bob, &alice)
    };
    let paid = pay::pay(&client, &p, &mut owner).await.unwrap();
    assert_eq!(owner.decided.take().unwrap().await.unwrap(), StatusCode::OK);

    // bob@B got exactly 10.00 EUR, on an incoming payment now completed.
    let ip = &paid.incoming_payment;
    assert!(ip["id"].as_str().unwrap().starts_with(&b.base), "{ip}");
    assert_eq!(ip["receivedAmount"], amount("1000", "EUR", 2));
    assert_eq!(ip["completed"], true);
    // alice paid what was sent (at most the quoted debit), not more.
    assert_eq!(paid.quote["receiveAmount"], amount("1000", "EUR", 2));
    let out = &paid.outgoing_payment;
    assert_eq!(out["failed"], false);
    let sent: u64 = out["sentAmount"]["value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let debit: u64 = paid.quote["debitAmount"]["value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(sent > 0 && sent <= debit, "sent {sent} of {debit}");
    // The client followed the payment to its end on the paying server: A
    // recorded it completed, with the sent total the client shows, and
    // alice's money is settled (what was sent, no more).
    let recorded = recorded(&a, out).await;
    assert_eq!(
        recorded.state,
        opd_core::outgoing_payment::OutgoingPaymentState::Completed
    );
    assert_eq!(recorded.sent, sent);
    let shown = paid.summary();
    let sent_text = opd_client::amount::Amount {
        value: recorded.sent,
        asset_code: "USD".into(),
        asset_scale: 2,
    };
    assert!(
        shown.contains(&format!("  sent              {sent_text} (quoted debit ")),
        "{shown}"
    );
    assert!(shown.contains("  delivered         10.00 EUR\n"), "{shown}");
    assert_eq!(balance(&a, "alice").await, (10_000 - sent).to_string());
    balanced(&a).await;
    balanced(&b).await;
    // The progress a person sees (alice has no public name here).
    assert!(
        owner.lines.contains(&format!(
            "Quoted: {alice} pays 11.23 USD, the receiver gets 10.00 EUR."
        )),
        "{:?}",
        owner.lines
    );
    assert!(owner.lines.iter().any(|l| l.starts_with("sent ")));
    proxy.validate(
        &a.servers,
        &[
            "get-wallet-address",
            "post-request",
            "post-continue",
            "create-incoming-payment",
            "create-quote",
            "create-outgoing-payment",
            "get-outgoing-payment",
        ],
    );
}

/// Over a slow link the receiver has the money well before the paying
/// server hears of it: the client still shows what the paying server
/// recorded once the payment ended, not a figure read on the way.
#[tokio::test]
async fn over_a_slow_link_the_client_shows_what_the_paying_server_recorded() {
    let Pair { a, b } = pair_of(node("test.a").await, node("test.b").await, 1_000_000, None).await;
    let hop = opd_testkit::hostile::HostileHop::start().await;
    hop.forward_to(&b.ilp, "a-to-b");
    hop.always(opd_testkit::hostile::Behaviour::Slow(
        std::time::Duration::from_millis(1500),
    ));
    let b_at_a = crate::remote::peer_id(&a, "b").await;
    admin_ok(
        &a,
        Method::PATCH,
        &format!("/peers/{b_at_a}"),
        json!({ "http": { "outgoing": { "endpoint": hop.url, "authToken": "a-to-b" } } }),
    )
    .await;
    let proxy = ValidatingProxy::start().await;
    let (client, alice) = shop_and_alice(&a, &proxy).await;
    let bob = b.create_wallet("bob", "EUR", 2).await;
    let mut owner = Owner::new(true);
    let p = Payment {
        amount: Some("10.00".into()),
        ..payment(&bob, &alice)
    };
    let paid = pay::pay(&client, &p, &mut owner).await.unwrap();
    let out = &paid.outgoing_payment;
    let recorded = recorded(&a, out).await;
    assert_eq!(
        recorded.state,
        opd_core::outgoing_payment::OutgoingPaymentState::Completed
    );
    assert!(recorded.sent > 0);
    assert_eq!(out["sentAmount"]["value"], recorded.sent.to_string());
    let sent = opd_client::amount::Amount {
        value: recorded.sent,
        asset_code: "USD".into(),
        asset_scale: 2,
    };
    let shown = paid.summary();
    assert!(
        shown.contains(&format!("  sent              {sent} (")),
        "{shown}"
    );
    assert!(shown.contains("  delivered         10.00 EUR\n"), "{shown}");
}

#[tokio::test]
async fn opd_client_pays_an_incoming_payment_a_fixed_debit() {
    let app = node("test.opd").await;
    let proxy = ValidatingProxy::start().await;
    let (client, alice) = shop_and_alice(&app, &proxy).await;
    app.create_wallet("bob", "USD", 2).await;
    // An incoming payment without an amount, made by someone else.
    let (s, ip) = app
        .post(
            &app.url("incoming-payments"),
            &json!({ "walletAddress": app.url("bob") }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let receiver = ip["id"].as_str().unwrap();

    let mut owner = Owner::new(true);
    let p = Payment {
        debit_amount: Some("5".into()),
        ..payment(receiver, &alice)
    };
    let paid = pay::pay(&client, &p, &mut owner).await.unwrap();
    // Without a token for it, the client shows its public view.
    assert_eq!(
        paid.incoming_payment["receivedAmount"],
        amount("500", "USD", 2)
    );
    assert_eq!(paid.outgoing_payment["sentAmount"], amount("500", "USD", 2));
    assert_eq!(balance(&app, "alice").await, "9500");
    proxy.validate(
        &app.servers,
        &[
            "get-incoming-payment",
            "create-quote",
            "create-outgoing-payment",
        ],
    );
}

#[tokio::test]
async fn a_refused_consent_sends_nothing() {
    let app = node("test.opd").await;
    let proxy = ValidatingProxy::start().await;
    let (client, alice) = shop_and_alice(&app, &proxy).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let mut owner = Owner::new(false);
    let p = Payment {
        amount: Some("1.00".into()),
        ..payment(&bob, &alice)
    };
    let e = pay::pay(&client, &p, &mut owner).await.unwrap_err();
    assert!(
        e.to_string().contains("not approved (grant_rejected)"),
        "{e:#}"
    );
    assert_eq!(owner.decided.take().unwrap().await.unwrap(), StatusCode::OK);
    assert_eq!(balance(&app, "alice").await, "10000");
    // The incoming payment made for it is closed: it waits for nothing.
    assert!(
        e.to_string()
            .contains("incoming payment made for it was closed"),
        "{e:#}"
    );
    let url = owner
        .lines
        .iter()
        .find_map(|l| l.strip_prefix("Incoming payment for "))
        .and_then(|l| l.split(": ").nth(1))
        .unwrap()
        .to_owned();
    let (s, ip) = app.get(&url).await;
    assert_eq!(s, StatusCode::OK, "{ip}");
    assert_eq!(ip["completed"], true, "{ip}");
    proxy.validate(&app.servers, &["post-request", "create-quote"]);
}

/// What a person is told when something is refused: the server's reason
/// (with the flag that would allow it), a negative amount, something that
/// is no address; and payment pointers read as the URLs they stand for.
#[tokio::test]
async fn the_command_line_says_why_and_reads_addresses_as_people_write_them() {
    let app = node("test.opd").await;
    let proxy = ValidatingProxy::start().await;
    let shop = app.signing_client("shop", 63).await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("client.json");
    Profile::with_key(&shop.wallet_address, &shop.kid, shop.key.clone())
        .save_new(&profile)
        .unwrap();
    let stderr = |o: &Output| {
        assert!(
            !o.status.success(),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    // A receiver on an internal address: the reason, and how to allow it.
    let refused = stderr(
        &opd_client(
            &profile,
            &proxy,
            &[
                "quote",
                "create",
                "--wallet-address",
                &alice,
                "--receiver",
                "http://10.255.255.1/incoming-payments/0193a3a8-0000-7000-8000-000000000000",
                "--debit-amount",
                "1.00",
            ],
        )
        .await,
    );
    assert!(
        refused.contains("invalid_receiver: invalid receiver\n  reason: ")
            && refused.contains("--outbound-allow"),
        "{refused}"
    );
    // A negative amount, and something that is no address.
    let negative = stderr(
        &opd_client(
            &profile,
            &proxy,
            &[
                "incoming-payment",
                "create",
                "--wallet-address",
                &alice,
                "--amount",
                "-1",
            ],
        )
        .await,
    );
    assert!(negative.contains("\"-1\" is negative"), "{negative}");
    let no_address = stderr(
        &opd_client(
            &profile,
            &proxy,
            &[
                "incoming-payment",
                "create",
                "--wallet-address",
                "ftp://w.example/a",
            ],
        )
        .await,
    );
    assert!(no_address.contains("is not an address"), "{no_address}");
    // A payment pointer at a plain-http server: https was assumed.
    let pointer = format!("${}", alice.strip_prefix("http://").unwrap());
    let assumed = stderr(
        &opd_client(
            &profile,
            &proxy,
            &["incoming-payment", "create", "--wallet-address", &pointer],
        )
        .await,
    );
    assert!(
        assumed.contains(&format!(
            "https was assumed for {}; use {alice} for a plain-http server",
            app.base.strip_prefix("http://").unwrap()
        )),
        "{assumed}"
    );
}

/// The outgoing payment `out` (as a client read it) as the paying server
/// `a` recorded it.
async fn recorded(a: &TestApp, out: &Value) -> opd_core::outgoing_payment::OutgoingPayment {
    let id = out["id"].as_str().unwrap().rsplit('/').next().unwrap();
    let id = opd_core::OutgoingPaymentId::parse(id).unwrap();
    a.services()
        .store
        .get_outgoing_payment(id)
        .await
        .unwrap()
        .unwrap()
}

/// Runs `opd client --profile <profile> <args>` (off the runtime, which
/// serves the requests), its HTTP going through `proxy` (which its HTTP
/// client, like any reqwest client, takes from `HTTP_PROXY`).
async fn opd_client(profile: &std::path::Path, proxy: &ValidatingProxy, args: &[&str]) -> Output {
    let mut command = client_command(profile, proxy, args);
    tokio::task::spawn_blocking(move || opd_testkit::output(&mut command))
        .await
        .unwrap()
}

/// The command `opd client --profile <profile> <args>`, its HTTP going
/// through `proxy`.
fn client_command(
    profile: &std::path::Path,
    proxy: &ValidatingProxy,
    args: &[&str],
) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_opd"));
    command
        .arg("client")
        .arg(format!("--profile={}", profile.display()))
        .args(args)
        .env_remove("OPD_CLIENT_PROFILE")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env("HTTP_PROXY", &proxy.url)
        .env("http_proxy", &proxy.url);
    command
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[tokio::test]
async fn the_command_line_shows_resources_for_people_and_json_for_scripts() {
    let app = node("test.opd").await;
    let proxy = ValidatingProxy::start().await;
    let shop = app.signing_client("shop", 62).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("client.json");
    Profile::with_key(&shop.wallet_address, &shop.kid, shop.key.clone())
        .save_new(&profile)
        .unwrap();

    // JSON for scripts: the server's resource.
    let created = stdout(
        &opd_client(
            &profile,
            &proxy,
            &[
                "--json",
                "incoming-payment",
                "create",
                "--wallet-address",
                &bob,
                "--amount",
                "1.5",
            ],
        )
        .await,
    );
    let ip: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(ip["incomingAmount"], amount("150", "USD", 2));
    let id = ip["id"].as_str().unwrap();

    // Text for people: decimals and asset, never minor units.
    let shown = stdout(&opd_client(&profile, &proxy, &["incoming-payment", "get", id]).await);
    assert!(
        shown.starts_with(&format!("Incoming payment  {id}\n")),
        "{shown}"
    );
    assert!(shown.contains("  amount          1.50 USD\n"), "{shown}");
    assert!(shown.contains("  completed       no\n"), "{shown}");
    let done = stdout(&opd_client(&profile, &proxy, &["incoming-payment", "complete", id]).await);
    assert!(done.contains("  completed       yes\n"), "{done}");
    let listed = stdout(
        &opd_client(
            &profile,
            &proxy,
            &["incoming-payment", "list", "--wallet-address", &bob],
        )
        .await,
    );
    assert!(listed.contains(id), "{listed}");

    // Grants and tokens: a grant, rotated, then revoked.
    let granted: Value = serde_json::from_str(&stdout(
        &opd_client(
            &profile,
            &proxy,
            &[
                "--json",
                "grant",
                "--wallet-address",
                &bob,
                "--type",
                "incoming-payment",
                "--actions",
                "create,read",
            ],
        )
        .await,
    ))
    .unwrap();
    let (manage, token) = (
        granted["manage"].as_str().unwrap(),
        granted["value"].as_str().unwrap(),
    );
    let rotated: Value = serde_json::from_str(&stdout(
        &opd_client(
            &profile,
            &proxy,
            &[
                "--json", "token", "rotate", "--manage", manage, "--token", token,
            ],
        )
        .await,
    ))
    .unwrap();
    let new_token = rotated["value"].as_str().unwrap();
    assert_ne!(new_token, token);
    let revoked = stdout(
        &opd_client(
            &profile,
            &proxy,
            &[
                "token",
                "revoke",
                "--manage",
                rotated["manage"].as_str().unwrap(),
                "--token",
                new_token,
            ],
        )
        .await,
    );
    assert_eq!(revoked, "Revoked.\n");
    let refused = opd_client(
        &profile,
        &proxy,
        &["incoming-payment", "get", id, "--token", new_token],
    )
    .await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("401"));

    // The server's refusal, with its status, code and description; exit 1.
    let unknown = opd_client(
        &profile,
        &proxy,
        &[
            "incoming-payment",
            "create",
            "--wallet-address",
            &app.url("nobody"),
        ],
    )
    .await;
    assert_eq!(unknown.status.code(), Some(1));
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(err.starts_with("error: GET "), "{err}");
    assert!(err.contains("404"), "{err}");
    assert!(!err.contains("backtrace"), "{err}");
    // And its own refusals, before any request.
    let precise = opd_client(
        &profile,
        &proxy,
        &[
            "incoming-payment",
            "create",
            "--wallet-address",
            &bob,
            "--amount",
            "1.234",
        ],
    )
    .await;
    assert_eq!(precise.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&precise.stderr).contains("more decimals than the asset allows")
    );
    proxy.validate(
        &app.servers,
        &[
            "post-request",
            "create-incoming-payment",
            "get-incoming-payment",
            "complete-incoming-payment",
            "list-incoming-payments",
            "post-token",
            "delete-token",
        ],
    );
}

#[tokio::test]
async fn keys_generate_writes_a_profile_once_and_shows_its_public_key() {
    // These commands make no request; the proxy only satisfies `opd_client`.
    let proxy = ValidatingProxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("me.json");
    let made = stdout(
        &opd_client(
            &profile,
            &proxy,
            &[
                "--json",
                "keys",
                "generate",
                "--wallet-address",
                "https://wallet.example/me",
                "--key-id",
                "me-1",
            ],
        )
        .await,
    );
    let made: Value = serde_json::from_str(&made).unwrap();
    assert_eq!(made["jwk"]["kid"], "me-1");
    assert_eq!(made["jwk"]["kty"], "OKP");
    let shown: Value = serde_json::from_str(&stdout(
        &opd_client(&profile, &proxy, &["--json", "keys", "show"]).await,
    ))
    .unwrap();
    assert_eq!(shown, made["jwk"]);
    // A key is never overwritten.
    let again = opd_client(
        &profile,
        &proxy,
        &[
            "keys",
            "generate",
            "--wallet-address",
            "https://wallet.example/me",
        ],
    )
    .await;
    assert_eq!(again.status.code(), Some(1));
}

/// Text a hostile server controls: terminal escapes (hide what follows,
/// clear the screen, move the cursor up, set the window title), a newline
/// faking a line of its own, a right-to-left override and an 8-bit CSI.
const HOSTILE: &str = "Alice\u{1b}[8m\u{1b}[2J\u{1b}[3A\nPaid.\u{202e}dlrow\u{9b}2J\u{1b}]0;x\u{7}";

/// The same, as the terminal shows it: every such character as its code
/// point, as the pages do.
const SHOWN: &str = "Alice[U+001B][8m[U+001B][2J[U+001B][3A[U+000A]Paid.[U+202E]dlrow[U+009B]2J[U+001B]]0;x[U+0007]";

/// Fails unless `text` holds no terminal control and no bidirectional
/// formatting character (line breaks aside).
fn assert_inert(text: &str) {
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c))
        .collect();
    assert!(raw.is_empty(), "raw {raw:?} in {text:?}");
}

/// Names a server controls (its wallet addresses' public names) reach the
/// terminal as their code points: the "Quoted: … pays …" line is whole,
/// nothing is hidden or faked, and `--json` still gives scripts the exact
/// name.
#[tokio::test]
async fn hostile_names_never_reach_the_terminal_raw() {
    let app = node("test.opd").await;
    let proxy = ValidatingProxy::start().await;
    let shop = app.signing_client("shop", 65).await;
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("client.json");
    Profile::with_key(&shop.wallet_address, &shop.kid, shop.key.clone())
        .save_new(&profile)
        .unwrap();
    for (path, name) in [("alice", HOSTILE), ("bob", "Bob\u{202e}\n")] {
        let body = json!({ "path": path, "assetCode": "USD", "assetScale": 2, "publicName": name });
        admin_ok(&app, Method::POST, "/wallet-addresses", body).await;
    }
    app.deposit("alice", 10_000).await;
    let (alice, bob) = (app.url("alice"), app.url("bob"));

    // Nobody consents: the command stops after the quote.
    let paying = opd_client(
        &profile,
        &proxy,
        &[
            "pay",
            &bob,
            "--from",
            &alice,
            "--amount",
            "1.00",
            "--consent-wait-secs",
            "1",
        ],
    )
    .await;
    let err = String::from_utf8_lossy(&paying.stderr);
    assert_inert(&err);
    assert_inert(&String::from_utf8_lossy(&paying.stdout));
    let quoted = err
        .lines()
        .find(|l| l.starts_with("Quoted: "))
        .unwrap_or("");
    assert!(
        quoted.starts_with(&format!("Quoted: {SHOWN} pays "))
            && quoted.ends_with(", the receiver gets 1.00 USD."),
        "{err}"
    );
    assert!(
        err.contains("Incoming payment for Bob[U+202E][U+000A]: "),
        "{err}"
    );
    assert!(!err.lines().any(|l| l.starts_with("Paid.")), "{err}");

    // Shown for people, and exact in JSON.
    let shown = stdout(&opd_client(&profile, &proxy, &["wallet-address", &alice]).await);
    assert_inert(&shown);
    assert!(
        shown.contains(&format!("  name            {SHOWN}\n")),
        "{shown}"
    );
    let json = stdout(&opd_client(&profile, &proxy, &["--json", "wallet-address", &alice]).await);
    assert_inert(&json);
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["publicName"], HOSTILE);
}

/// A server that answers every request with `status` and `body`: its URL.
pub(crate) async fn answering(status: StatusCode, body: Value) -> String {
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move { (status, axum::Json(body)) }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A hostile server's error (code, description and details) is printed
/// with its controls as code points: one `error:` line, nothing faked.
#[tokio::test]
async fn a_hostile_servers_error_is_printed_inert() {
    let proxy = ValidatingProxy::start().await;
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("client.json");
    Profile::generate("https://wallet.example/me", "me-1")
        .save_new(&profile)
        .unwrap();
    let url = answering(
        StatusCode::BAD_REQUEST,
        json!({ "error": {
            "code": "bad\u{1b}[2J",
            "description": format!("refused {HOSTILE}\nerror: all is well"),
            "details": { "reason\u{1b}[1A": "x\u{202e}y" },
        } }),
    )
    .await;
    let out = opd_client(&profile, &proxy, &["wallet-address", &format!("{url}/bob")]).await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_inert(&err);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "400 Bad Request bad[U+001B][2J: refused {SHOWN}[U+000A]error: all is well\n  reason[U+001B][1A: x[U+202E]y"
        )),
        "{err}"
    );
}
