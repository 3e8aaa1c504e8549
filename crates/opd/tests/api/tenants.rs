//! Tenants: one opd serving several wallet providers. Tenant `a` is on a
//! host of its own (`wallet-a.test`, resolved to the test server), tenant
//! `b` on a path prefix of the server's host (`/b`). Each serves its own
//! wallet addresses under its own URLs, a tenant's resources are not found
//! at another's URLs, and a payment from one tenant to another is local.

use std::net::SocketAddr;

use opd_testkit::app::{Db, TestApp};
use opd_testkit::client::SigningClient;
use opd_testkit::spec::Server;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::amount;

/// The server, with tenants `a` and `b` made through the admin API.
pub(crate) struct Tenants {
    pub(crate) app: TestApp,
    /// `http://wallet-a.test:PORT`
    pub(crate) a: String,
    /// `http://127.0.0.1:PORT/b`
    pub(crate) b: String,
    /// The admin tokens of `a` and `b`.
    pub(crate) tokens: (String, String),
    /// An HTTP client that finds `wallet-a.test` at the test server.
    pub(crate) http: reqwest::Client,
}

pub(crate) async fn tenants(db: Db) -> Tenants {
    tenants_with(db, |_| {}).await
}

/// [`tenants`] on a server whose settings `adjust` changes.
pub(crate) async fn tenants_with(
    db: Db,
    adjust: impl FnOnce(&mut opd::config::Settings),
) -> Tenants {
    let app = TestApp::spawn_with(db, adjust).await;
    let port = app.base.rsplit(':').next().unwrap().to_owned();
    let a = format!("http://wallet-a.test:{port}");
    let b = format!("{}/b", app.base);
    let mut tokens = Vec::new();
    for (id, url) in [("a", &a), ("b", &b)] {
        // Their consent apps share the test identity provider's secret.
        let body = json!({
            "id": id,
            "publicName": format!("Bank {id}"),
            "publicUrl": url,
            "idpSecret": opd_testkit::app::IDP_SECRET,
        });
        let (s, v) = app.admin(Method::POST, "/tenants", Some(&body)).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        let token = v["adminToken"].as_str().unwrap();
        assert!(token.starts_with("opd_tenant_"));
        tokens.push(token.to_owned());
    }
    let tokens = (tokens[0].clone(), tokens[1].clone());
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let http = reqwest::Client::builder()
        .resolve("wallet-a.test", loopback)
        .resolve("auth-a.test", loopback)
        .build()
        .unwrap();
    Tenants {
        app,
        a,
        b,
        tokens,
        http,
    }
}

impl Tenants {
    /// The authorization server the wallet address `reference` names: the
    /// server's, shared (no tenant here has one of its own but in the test
    /// of that).
    pub(crate) fn auth_of(&self, _reference: &str) -> String {
        self.app.auth.clone()
    }

    /// Creates `path` in `tenant` (`None`: the operator's); its URL.
    pub(crate) async fn wallet(&self, tenant: Option<&str>, path: &str, code: &str) -> String {
        let body = json!({ "tenant": tenant, "path": path, "assetCode": code, "assetScale": 2 });
        let body = if tenant.is_none() {
            json!({ "path": path, "assetCode": code, "assetScale": 2 })
        } else {
            body
        };
        let (s, v) = self
            .app
            .admin(Method::POST, "/wallet-addresses", Some(&body))
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        assert_eq!(v["tenant"], tenant.unwrap_or("default"));
        v["url"].as_str().unwrap().to_owned()
    }

    /// A client of the wallet address `reference` (`tenant:path`) at
    /// `url`, with a key registered there, that reaches every tenant.
    pub(crate) async fn client(&self, reference: &str, url: &str, seed: u8) -> SigningClient {
        let mut client = self.app.client_for(url, &format!("key-{seed}"), seed);
        client.http = self.http.clone();
        client.clock = Some(self.app.clock.clone());
        for base in [&self.a, &self.b] {
            client.servers.add(Server::new(base, &self.app.auth));
        }
        let jwk = serde_json::to_value(client.jwk()).unwrap();
        let (s, v) = self
            .app
            .admin(
                Method::POST,
                &format!("/wallet-addresses/{reference}/keys"),
                Some(&json!({ "jwk": jwk })),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        client
    }

    /// `from` (reference, URL, tenant base) pays `to` `value` (USD cents):
    /// a deposit, an incoming payment, a quote, an outgoing payment and
    /// the worker, each through its tenant's URLs.
    pub(crate) async fn pay(
        &self,
        from: (&str, &str, &str),
        to: (&str, &str, &str),
        value: &str,
    ) -> Paid {
        let deposit = json!({ "amount": "10000", "idempotencyKey": format!("d-{}", from.0) });
        let path = format!("/wallet-addresses/{}/deposits", from.0);
        let (s, v) = self.app.admin(Method::POST, &path, Some(&deposit)).await;
        assert_eq!(s, StatusCode::CREATED, "{v}");
        let seed = 70 + u8::try_from(from.0.len() + to.0.len()).unwrap();
        let payee = self.client(to.0, to.1, seed).await;
        let access = json!([{ "type": "incoming-payment", "actions": ["create", "read"], "identifier": to.1 }]);
        let payee_token =
            opd_testkit::app::grant_token_at(&self.auth_of(to.0), &payee, access).await;
        let create = json!({ "walletAddress": to.1, "incomingAmount": amount(value, "USD", 2) });
        let url = format!("{}/incoming-payments", to.2);
        let r = payee
            .send(Method::POST, &url, Some(&payee_token), Some(&create))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        let receiver = r.body["id"].as_str().unwrap().to_owned();

        let payer = self.client(from.0, from.1, seed + 1).await;
        let access =
            json!([{ "type": "quote", "actions": ["create", "read"], "identifier": from.1 }]);
        let quote_token =
            opd_testkit::app::grant_token_at(&self.auth_of(from.0), &payer, access).await;
        let body = json!({ "walletAddress": from.1, "receiver": receiver, "method": "ilp" });
        let url = format!("{}/quotes", from.2);
        let r = payer
            .send(Method::POST, &url, Some(&quote_token), Some(&body))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        let quote = r.body["id"].as_str().unwrap().to_owned();
        assert!(quote.starts_with(from.2), "{quote}");
        let token =
            opd_testkit::app::outgoing_token_at(&self.auth_of(from.0), &payer, from.1, Value::Null)
                .await;
        let body = json!({ "walletAddress": from.1, "quoteId": quote });
        let url = format!("{}/outgoing-payments", from.2);
        let r = payer
            .send(Method::POST, &url, Some(&token), Some(&body))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        let payment = r.body["id"].as_str().unwrap().to_owned();
        self.app.run_workers().await;
        Paid {
            payer,
            token,
            payment,
            quote,
            payee,
            payee_token,
            receiver,
        }
    }

    pub(crate) async fn get(&self, url: &str) -> (StatusCode, Value) {
        let resp = self.http.get(url).send().await.unwrap();
        let status = resp.status();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

/// What [`Tenants::pay`] made.
pub(crate) struct Paid {
    pub(crate) payer: SigningClient,
    /// The payer's outgoing-payment token.
    pub(crate) token: String,
    pub(crate) payment: String,
    pub(crate) quote: String,
    pub(crate) payee: SigningClient,
    pub(crate) payee_token: String,
    pub(crate) receiver: String,
}

#[tokio::test]
async fn each_tenant_serves_its_own_wallet_addresses_under_its_own_url() {
    let t = tenants(Db::Sqlite).await;
    let ours = t.wallet(None, "alice", "USD").await;
    let a = t.wallet(Some("a"), "alice", "EUR").await;
    let b = t.wallet(Some("b"), "alice", "GBP").await;
    assert_eq!(ours, format!("{}/alice", t.app.base));
    assert_eq!(a, format!("{}/alice", t.a));
    assert_eq!(b, format!("{}/alice", t.b));

    for (url, base, code) in [
        (&ours, &t.app.base, "USD"),
        (&a, &t.a, "EUR"),
        (&b, &t.b, "GBP"),
    ] {
        let (s, doc) = t.get(url).await;
        assert_eq!(s, StatusCode::OK, "{url}: {doc}");
        assert_eq!(doc["id"], url.as_str());
        assert_eq!(doc["assetCode"], code);
        assert_eq!(doc["resourceServer"], base.as_str());
        opd_openapi::assert_response(
            opd_openapi::Api::WalletAddressServer,
            "get-wallet-address",
            s.as_u16(),
            &doc,
        );
        let (s, jwks) = t.get(&format!("{url}/jwks.json")).await;
        assert_eq!((s, &jwks["keys"]), (StatusCode::OK, &json!([])));
    }
    // A tenant's prefix belongs to the server's host, not to another host;
    // a wallet address lives in its tenant only.
    assert_eq!(
        t.get(&format!("{}/b/alice", t.a)).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        t.get(&format!("{}/bob", t.b)).await.0,
        StatusCode::NOT_FOUND
    );
    let (s, v) = t.get(&format!("{}/nobody", t.a)).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("unknown_wallet_address"))
    );
    // The operator's wallet addresses cannot take a tenant's prefix.
    let body = json!({ "path": "b/carol", "assetCode": "USD", "assetScale": 2 });
    let (s, v) = t
        .app
        .admin(Method::POST, "/wallet-addresses", Some(&body))
        .await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("wallet_address_exists"))
    );
    // The admin API lists one tenant's, or all.
    let (_, listed) = t
        .app
        .admin(Method::GET, "/wallet-addresses?tenant=a", None)
        .await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["url"], a.as_str());
    let (_, one) = t
        .app
        .admin(Method::GET, "/wallet-addresses/b:alice", None)
        .await;
    assert_eq!(one["url"], b.as_str());
    t.app.stop().await;
}

#[tokio::test]
async fn a_tenant_s_resources_are_not_found_at_another_tenant_s_urls() {
    isolation(Db::Sqlite).await;
}

#[tokio::test]
async fn a_tenant_s_resources_are_not_found_at_another_tenant_s_urls_on_postgres() {
    isolation(Db::Postgres).await;
}

async fn isolation(db: Db) {
    let t = tenants(db).await;
    let alice = t.wallet(Some("a"), "alice", "USD").await;
    t.wallet(Some("b"), "alice", "USD").await;
    let client = t.client("a:alice", &alice, 61).await;
    let access = json!([
        { "type": "incoming-payment", "actions": ["create", "read", "list", "complete"], "identifier": alice },
        { "type": "quote", "actions": ["create", "read"], "identifier": alice },
    ]);
    let token = opd_testkit::app::grant_token_at(&t.auth_of("a:alice"), &client, access).await;
    let send = |method: Method, url: String, body: Option<Value>| {
        let (client, token) = (&client, &token);
        async move { client.send(method, &url, Some(token), body.as_ref()).await }
    };
    let create = json!({ "walletAddress": alice, "incomingAmount": amount("500", "USD", 2) });
    let r = send(
        Method::POST,
        format!("{}/incoming-payments", t.a),
        Some(create.clone()),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();
    assert!(
        id.starts_with(&format!("{}/incoming-payments/", t.a)),
        "{id}"
    );
    let uuid = id.rsplit('/').next().unwrap().to_owned();
    let r = send(Method::GET, id.clone(), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["walletAddress"], alice.as_str());

    // Elsewhere the same token, the same id and the same wallet address
    // find nothing, and say nothing of what exists.
    for other in [&t.app.base, &t.b] {
        let elsewhere = format!("{other}/incoming-payments/{uuid}");
        let r = send(Method::GET, elsewhere.clone(), None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{elsewhere}: {}", r.body);
        assert!(!r.body.to_string().contains(&alice), "{}", r.body);
        let r = send(Method::POST, format!("{elsewhere}/complete"), None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
        let (s, _) = t.get(&elsewhere).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "public view of {elsewhere}");
        let r = send(
            Method::POST,
            format!("{other}/incoming-payments"),
            Some(create.clone()),
        )
        .await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
        let list = format!("{other}/incoming-payments?wallet-address={alice}");
        let r = send(Method::GET, list, None).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
        let quote = json!({ "walletAddress": alice, "receiver": id, "method": "ilp" });
        let r = send(Method::POST, format!("{other}/quotes"), Some(quote)).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    }
    // A token for tenant a's wallet address opens nothing of tenant b's
    // wallet address of the same path.
    let theirs = format!("{}/alice", t.b);
    let other = json!({ "walletAddress": theirs, "incomingAmount": amount("500", "USD", 2) });
    let r = send(
        Method::POST,
        format!("{}/incoming-payments", t.b),
        Some(other),
    )
    .await;
    assert!(
        matches!(r.status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN),
        "{}: {}",
        r.status,
        r.body
    );
    t.app.stop().await;
}

#[tokio::test]
async fn a_payment_from_one_tenant_to_another_is_local_and_exact() {
    let t = tenants(Db::Sqlite).await;
    let alice = t.wallet(Some("a"), "alice", "USD").await;
    let bob = t.wallet(Some("b"), "bob", "USD").await;
    let paid = t
        .pay(("a:alice", &alice, &t.a), ("b:bob", &bob, &t.b), "2500")
        .await;
    let r = paid
        .payer
        .send(Method::GET, &paid.payment, Some(&paid.token), None)
        .await;
    assert_eq!(r.body["sentAmount"], amount("2500", "USD", 2), "{}", r.body);
    let r = paid
        .payee
        .send(Method::GET, &paid.receiver, Some(&paid.payee_token), None)
        .await;
    assert_eq!(
        r.body["receivedAmount"],
        amount("2500", "USD", 2),
        "{}",
        r.body
    );
    // Both tenants' balances, to the cent: alice paid 25.00 (no fee set),
    // bob received it, nothing went through a peer.
    for (reference, want) in [("a:alice", "7500"), ("b:bob", "2500")] {
        let (_, v) = t
            .app
            .admin(
                Method::GET,
                &format!("/wallet-addresses/{reference}/balance"),
                None,
            )
            .await;
        assert_eq!(v["balance"]["value"], want, "{reference}: {v}");
    }
    let (_, v) = t.app.admin(Method::GET, "/ledger/check", None).await;
    assert_eq!(v["balanced"], true, "{v}");
    t.app.stop().await;
}

#[tokio::test]
async fn the_operator_manages_tenants() {
    let t = tenants(Db::Sqlite).await;
    let (s, all) = t.app.admin(Method::GET, "/tenants", None).await;
    assert_eq!(s, StatusCode::OK);
    let ids: Vec<_> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["default", "a", "b"]);
    assert_eq!(all[0]["publicUrl"], t.app.base.as_str());
    assert_eq!(all[0]["operator"], true);
    assert!(
        all.to_string().find("adminToken").is_none(),
        "tokens are shown once"
    );

    // Conflicts and bad input.
    for (body, status, code) in [
        (
            json!({ "id": "a", "publicName": "A", "publicUrl": "http://other.test" }),
            StatusCode::CONFLICT,
            "tenant_exists",
        ),
        (
            json!({ "id": "c", "publicName": "C", "publicUrl": t.a }),
            StatusCode::CONFLICT,
            "public_url_taken",
        ),
        (
            json!({ "id": "c", "publicName": "C", "publicUrl": "ftp://c.test" }),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            json!({ "id": "C!", "publicName": "C", "publicUrl": "http://c.test" }),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            json!({ "id": "c", "publicName": "", "publicUrl": "http://c.test" }),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
    ] {
        let (s, v) = t.app.admin(Method::POST, "/tenants", Some(&body)).await;
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (status, Some(code)),
            "{body}: {v}"
        );
    }
    // Renamed and moved; the wallet addresses follow.
    t.wallet(Some("a"), "alice", "USD").await;
    let patch = json!({ "publicName": "Bank A2", "publicUrl": format!("{}/a", t.app.base) });
    let (s, v) = t.app.admin(Method::PATCH, "/tenants/a", Some(&patch)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["publicName"], "Bank A2");
    let (s, doc) = t.get(&format!("{}/a/alice", t.app.base)).await;
    assert_eq!(s, StatusCode::OK, "{doc}");
    assert_eq!(
        t.get(&format!("{}/alice", t.a)).await.0,
        StatusCode::NOT_FOUND
    );
    // The operator's tenant keeps the server's URLs.
    let (s, _) = t
        .app
        .admin(
            Method::PATCH,
            "/tenants/default",
            Some(&json!({ "publicUrl": "http://x.test" })),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);

    let (s, v) = t.app.admin(Method::POST, "/tenants/a/token", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(v["adminToken"].as_str().unwrap().starts_with("opd_tenant_"));
    // Deleting: never one with wallet addresses, never the operator's.
    let (s, v) = t.app.admin(Method::DELETE, "/tenants/a", None).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::CONFLICT, Some("tenant_not_empty"))
    );
    assert_eq!(
        t.app
            .admin(Method::DELETE, "/tenants/default", None)
            .await
            .0,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        t.app.admin(Method::DELETE, "/tenants/b", None).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        t.app.admin(Method::GET, "/tenants/b", None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        t.get(&format!("{}/anything", t.b)).await.0,
        StatusCode::NOT_FOUND
    );
    t.app.stop().await;
}

/// `opd <args> --json` against the test server's admin API with `token`:
/// its standard output as JSON, or its standard error when it failed.
fn opd(app: &TestApp, token: &str, args: &[&str]) -> Result<Value, String> {
    let out = opd_testkit::output(
        std::process::Command::new(env!("CARGO_BIN_EXE_opd"))
            .args(["--admin-listen", app.admin.trim_start_matches("http://")])
            .args(["--admin-token", token])
            .args(args)
            .arg("--json")
            .env_remove("OPD_CONFIG"),
    );
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

// The helper runs as a child process while the server answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_from_the_terminal() {
    let app = TestApp::spawn().await;
    let op = app.admin_token.clone();
    let url = format!("{}/shop", app.base);
    let made = opd(
        &app,
        &op,
        &[
            "tenant",
            "create",
            "shop",
            "--public-name",
            "Shop",
            "--public-url",
            &url,
        ],
    )
    .unwrap();
    assert_eq!(
        (made["id"].as_str(), made["publicUrl"].as_str()),
        (Some("shop"), Some(url.as_str()))
    );
    let token = made["adminToken"].as_str().unwrap().to_owned();
    let listed = opd(&app, &op, &["tenant", "list"]).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 2, "{listed}");
    let renamed = opd(
        &app,
        &op,
        &["tenant", "update", "shop", "--public-name", "Shop & Co"],
    )
    .unwrap();
    assert_eq!(renamed["publicName"], "Shop & Co");

    // The tenant's own token makes its wallet addresses, and only those.
    let w = opd(
        &app,
        &token,
        &[
            "wallet-address",
            "create",
            "--path",
            "ann",
            "--asset-code",
            "USD",
            "--asset-scale",
            "2",
        ],
    )
    .unwrap();
    assert_eq!(
        (w["tenant"].as_str(), w["url"].as_str()),
        (Some("shop"), Some(format!("{url}/ann").as_str()))
    );
    let err = opd(&app, &token, &["tenant", "list"]).unwrap_err();
    assert!(err.contains("404"), "{err}");
    let err = opd(&app, &op, &["tenant", "delete", "shop"]).unwrap_err();
    assert!(err.contains("tenant_not_empty"), "{err}");
    let rotated = opd(&app, &op, &["tenant", "rotate-token", "shop"]).unwrap();
    let new = rotated["adminToken"].as_str().unwrap();
    assert!(opd(&app, &token, &["wallet-address", "list"])
        .unwrap_err()
        .contains("refused the admin token"));
    let mine = opd(&app, new, &["wallet-address", "list"]).unwrap();
    assert_eq!(mine.as_array().unwrap().len(), 1, "{mine}");
    let all = opd(&app, &op, &["wallet-address", "list", "--tenant", "shop"]).unwrap();
    assert_eq!(all, mine);
    app.stop().await;
}

#[tokio::test]
async fn the_consent_page_names_the_tenant() {
    let t = tenants(Db::Sqlite).await;
    let alice = t.wallet(Some("a"), "alice", "USD").await;
    let client = t.client("a:alice", &alice, 81).await;
    let body = json!({
        "access_token": { "access": [{ "type": "outgoing-payment", "actions": ["create"], "identifier": alice, "limits": { "debitAmount": amount("100", "USD", 2) } }] },
        "client": alice,
        "interact": { "start": ["redirect"], "finish": { "method": "redirect", "uri": "http://127.0.0.1:9/done", "nonce": "n1" } },
    });
    let r = client
        .send(
            Method::POST,
            &format!("{}/", t.auth_of("a:alice")),
            None,
            Some(&body),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let redirect = r.body["interact"]["redirect"].as_str().unwrap();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let start = browser.get(redirect).send().await.unwrap();
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let location = start.headers()["location"].to_str().unwrap();
    let page_url = reqwest::Url::parse(redirect)
        .unwrap()
        .join(location)
        .unwrap();
    let html = browser
        .get(page_url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("<dt>Your wallet provider</dt>\n<dd>Bank a</dd>"),
        "{html}"
    );
    assert!(html.contains(&alice), "{html}");
    t.app.stop().await;
}

#[tokio::test]
async fn each_tenant_s_webhooks_go_to_its_url_signed_with_its_secret() {
    use opd_testkit::webhooks::WebhookReceiver;
    let server = WebhookReceiver::start("whsec-server", 0).await;
    let bank_a = WebhookReceiver::start("whsec-tenant-a", 0).await;
    let url = server.url(0, 0);
    let t = tenants_with(Db::Sqlite, move |s| {
        s.serve.webhook_url = Some(url);
        s.serve.webhook_secret = Some("whsec-server".into());
    })
    .await;
    let own = json!({ "webhookUrl": bank_a.url(0, 0), "webhookSecret": "whsec-tenant-a" });
    let (s, v) = t.app.admin(Method::PATCH, "/tenants/a", Some(&own)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(
        !v.to_string().contains("whsec-tenant-a"),
        "the secret is never shown: {v}"
    );
    let alice = t.wallet(Some("a"), "alice", "USD").await;
    let bob = t.wallet(Some("b"), "bob", "USD").await;
    let paid = t
        .pay(("a:alice", &alice, &t.a), ("b:bob", &bob, &t.b), "300")
        .await;
    t.app.run_jobs().await;

    // a's events to a's URL under a's secret; b has no URL of its own, so
    // its events go to the server's (each receiver checks its secret).
    bank_a.assert_each_once(None);
    server.assert_each_once(None);
    let pair = |kind: &str, id: &str| (kind.to_owned(), id.to_owned());
    assert_eq!(
        bank_a.accepted(),
        [
            pair("outgoing_payment.created", &paid.payment),
            pair("outgoing_payment.completed", &paid.payment),
        ]
        .into()
    );
    assert_eq!(
        server.accepted(),
        [
            pair("incoming_payment.created", &paid.receiver),
            pair("incoming_payment.completed", &paid.receiver),
        ]
        .into()
    );
    t.app.stop().await;
}

#[tokio::test]
async fn each_tenant_charges_its_own_fees_and_falls_back_to_the_operator_s() {
    let t = tenants(Db::Sqlite).await;
    let fee = |fixed: &str, bp: u32| json!({ "fixed": fixed, "basisPoints": bp });
    // The operator's fee, for everyone without one of their own.
    let (s, v) = t
        .app
        .admin(Method::PUT, "/fees/USD/2", Some(&fee("30", 0)))
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{v}");
    // Tenant a sets its own with its token.
    let a_token = t.tokens.0.clone();
    let (s, v) = opd_testkit::app::admin_at(
        &t.app.admin,
        &a_token,
        Method::PUT,
        "/fees/USD/2",
        Some(&fee("5", 0)),
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{v}");
    let (_, listed) =
        opd_testkit::app::admin_at(&t.app.admin, &a_token, Method::GET, "/fees", None).await;
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "only its own: {listed}"
    );
    assert_eq!(listed[0]["tenant"], "a");

    let a_alice = t.wallet(Some("a"), "alice", "USD").await;
    let b_alice = t.wallet(Some("b"), "alice", "USD").await;
    let bob = t.wallet(None, "bob", "USD").await;
    for (reference, wallet, base, want) in [
        ("a:alice", &a_alice, &t.a, "5"),
        ("b:alice", &b_alice, &t.b, "30"),
    ] {
        let seed = 100 + u8::try_from(reference.len()).unwrap() + u8::from(want == "5");
        let client = t.client(reference, wallet, seed).await;
        let access = json!([{ "type": "quote", "actions": ["create"], "identifier": wallet }]);
        let token = opd_testkit::app::grant_token_at(&t.auth_of(reference), &client, access).await;
        let receiver = crate::payments::incoming(&t.app, &bob, "1000", "USD").await;
        let body = json!({ "walletAddress": wallet, "receiver": receiver, "method": "ilp" });
        let url = format!("{base}/quotes");
        let r = client
            .send(Method::POST, &url, Some(&token), Some(&body))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        let debit: u64 = r.body["debitAmount"]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            debit - 1000,
            want.parse::<u64>().unwrap(),
            "{reference}: {}",
            r.body
        );
    }
    t.app.stop().await;
}

/// A dashboard session signed in with `token` (a browser that keeps no
/// cookies by itself): the session cookie.
async fn dashboard_session(t: &Tenants, token: &str) -> (reqwest::Client, String) {
    use reqwest::header::{COOKIE, SET_COOKIE};
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = browser
        .get(format!("{}/dashboard/login", t.app.admin))
        .send()
        .await
        .unwrap();
    let login_cookie = page.headers()[SET_COOKIE].to_str().unwrap();
    let login_cookie = login_cookie.split(';').next().unwrap().to_owned();
    let html = page.text().await.unwrap();
    let csrf = html.split("name=\"csrf\" value=\"").nth(1).unwrap();
    let csrf = csrf.split('"').next().unwrap().to_owned();
    let signed = browser
        .post(format!("{}/dashboard/login", t.app.admin))
        .header(COOKIE, &login_cookie)
        .form(&[("token", token), ("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), StatusCode::SEE_OTHER);
    let set = signed.headers()[SET_COOKIE].to_str().unwrap();
    (browser, set.split(';').next().unwrap().to_owned())
}

#[tokio::test]
async fn a_tenant_signs_in_to_the_dashboard_and_sees_only_its_own() {
    let t = tenants(Db::Sqlite).await;
    let alice = t.wallet(Some("a"), "alice", "USD").await;
    let bob = t.wallet(Some("b"), "bob", "USD").await;
    let carol = t.wallet(None, "carol", "USD").await;
    let paid = t
        .pay(("b:bob", &bob, &t.b), ("b:bob", &bob, &t.b), "100")
        .await;
    let ids = |reference: &str| {
        let app = &t.app;
        let path = format!("/wallet-addresses/{reference}");
        async move {
            app.admin(Method::GET, &path, None).await.1["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let (alice_id, bob_id) = (ids("a:alice").await, ids("b:bob").await);
    let (browser, cookie) = dashboard_session(&t, &t.tokens.0).await;
    let get = |path: String| {
        let (browser, cookie) = (&browser, &cookie);
        let url = format!("{}{path}", t.app.admin);
        async move {
            let r = browser
                .get(url)
                .header(reqwest::header::COOKIE, cookie)
                .send()
                .await
                .unwrap();
            (r.status(), r.text().await.unwrap())
        }
    };
    let (s, home) = get("/dashboard".into()).await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        home.contains(&alice) && !home.contains(&bob) && !home.contains(&carol),
        "{home}"
    );
    for operator_only in [
        "/dashboard/peers\"",
        "/dashboard/pricing\"",
        "/dashboard/search\"",
    ] {
        assert!(
            !home.contains(operator_only),
            "{operator_only} in a tenant's page: {home}"
        );
    }
    assert_eq!(
        get(format!("/dashboard/wallets/{alice_id}")).await.0,
        StatusCode::OK
    );
    let uuid = |url: &str| url.rsplit('/').next().unwrap().to_owned();
    for theirs in [
        format!("/dashboard/wallets/{bob_id}"),
        format!("/dashboard/payments/outgoing/{}", uuid(&paid.payment)),
        format!("/dashboard/payments/incoming/{}", uuid(&paid.receiver)),
        "/dashboard/peers".into(),
        "/dashboard/pricing".into(),
        "/dashboard/grants".into(),
        "/dashboard/webhooks".into(),
        "/dashboard/ledger".into(),
        "/dashboard/settings".into(),
        format!("/dashboard/search?q={}", uuid(&paid.payment)),
    ] {
        let (s, html) = get(theirs.clone()).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{theirs}: {html}");
        assert!(
            !html.contains(&uuid(&paid.payment)) && !html.contains("bob"),
            "{theirs}: {html}"
        );
    }
    for kind in ["outgoing", "incoming"] {
        let (s, list) = get(format!("/dashboard/payments?kind={kind}")).await;
        assert_eq!(s, StatusCode::OK);
        assert!(
            !list.contains(&uuid(&paid.payment)) && !list.contains(&uuid(&paid.receiver)),
            "{list}"
        );
    }
    // The operator's session sees every tenant's, and picks one.
    let (browser, cookie) = dashboard_session(&t, &t.app.admin_token).await;
    let get = |path: String| {
        let (browser, cookie) = (&browser, &cookie);
        let url = format!("{}{path}", t.app.admin);
        async move {
            let r = browser
                .get(url)
                .header(reqwest::header::COOKIE, cookie)
                .send()
                .await
                .unwrap();
            (r.status(), r.text().await.unwrap())
        }
    };
    let (s, _) = get(format!(
        "/dashboard/payments/outgoing/{}",
        uuid(&paid.payment)
    ))
    .await;
    assert_eq!(s, StatusCode::OK);
    let (_, all) = get("/dashboard".into()).await;
    assert!(
        all.contains(&alice) && all.contains(&bob) && all.contains(&carol),
        "{all}"
    );
    assert!(
        all.contains("<option value=\"a\">Bank a (a)</option>"),
        "{all}"
    );
    let (_, only_a) = get("/dashboard?tenant=a".into()).await;
    assert!(
        only_a.contains(&alice) && !only_a.contains(&bob) && !only_a.contains(&carol),
        "{only_a}"
    );
    assert!(
        only_a.contains("<input type=\"hidden\" name=\"tenant\" value=\"a\">"),
        "{only_a}"
    );
    t.app.stop().await;
}

/// Starts an interactive outgoing-payment grant for `wallet` (a client of
/// it, `reference` at the admin API) and follows the interaction's start:
/// where it sends the browser, and the interaction's id and nonce.
async fn interaction(t: &Tenants, reference: &str, wallet: &str, seed: u8) -> (String, String) {
    let client = t.client(reference, wallet, seed).await;
    let body = json!({
        "access_token": { "access": [{ "type": "outgoing-payment", "actions": ["create"], "identifier": wallet, "limits": { "debitAmount": amount("100", "USD", 2) } }] },
        "client": wallet,
        "interact": { "start": ["redirect"], "finish": { "method": "redirect", "uri": "http://127.0.0.1:9/done", "nonce": "n1" } },
    });
    let r = client
        .send(
            Method::POST,
            &format!("{}/", t.auth_of(reference)),
            None,
            Some(&body),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let redirect = r.body["interact"]["redirect"].as_str().unwrap().to_owned();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let start = browser.get(&redirect).send().await.unwrap();
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let location = start.headers()["location"].to_str().unwrap().to_owned();
    let ids = redirect.split("/interact/").nth(1).unwrap().to_owned();
    (location, ids)
}

#[tokio::test]
async fn each_tenant_s_consent_app_decides_its_own_interactions_only() {
    let t = tenants(Db::Sqlite).await;
    let own = json!({ "idpConsentUrl": "http://127.0.0.1:9/consent-a", "idpSecret": "idp-secret-of-tenant-a-0123" });
    let (s, v) = t.app.admin(Method::PATCH, "/tenants/a", Some(&own)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["idpConsentUrl"], "http://127.0.0.1:9/consent-a");
    assert!(!v.to_string().contains("idp-secret-of-tenant-a"), "{v}");
    // b has no consent app, and so no identity-provider API, any more.
    let none = json!({ "idpSecret": null });
    let (s, v) = t.app.admin(Method::PATCH, "/tenants/b", Some(&none)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let alice = t.wallet(Some("a"), "alice", "USD").await;
    let bob = t.wallet(Some("b"), "bob", "USD").await;
    let (to, a_ids) = interaction(&t, "a:alice", &alice, 111).await;
    assert!(
        to.starts_with("http://127.0.0.1:9/consent-a?interactId="),
        "{to}"
    );
    // b has no consent app of its own: the built-in consent page.
    let (to, b_ids) = interaction(&t, "b:bob", &bob, 112).await;
    assert!(to.contains("/consent/"), "{to}");

    let decide = |tenant: &str, ids: &str, secret: &str| {
        let url = format!("{}/idp/interactions/{ids}/accept", t.auth_of(tenant));
        let secret = secret.to_owned();
        async move {
            reqwest::Client::new()
                .post(url)
                .header("x-idp-secret", secret)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    let server = opd_testkit::app::IDP_SECRET;
    assert_eq!(
        decide("a:", &a_ids, server).await,
        StatusCode::UNAUTHORIZED,
        "the operator's app"
    );
    assert_eq!(
        decide("b:", &b_ids, "idp-secret-of-tenant-a-0123").await,
        StatusCode::NOT_FOUND,
        "a's app, b's interaction"
    );
    assert_eq!(
        decide("b:", &b_ids, server).await,
        StatusCode::NOT_FOUND,
        "b has no identity-provider API"
    );
    assert_eq!(
        decide("a:", &a_ids, "idp-secret-of-tenant-a-0123").await,
        StatusCode::ACCEPTED
    );
    t.app.stop().await;
}

#[tokio::test]
async fn each_tenant_has_its_own_authorization_server() {
    let t = tenants(Db::Sqlite).await;
    let port = t.app.auth.rsplit(':').next().unwrap().trim_end_matches('/');
    let a_auth = format!("http://auth-a.test:{port}/");
    let own = json!({ "authServerUrl": a_auth });
    let (s, v) = t.app.admin(Method::PATCH, "/tenants/a", Some(&own)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["authServerUrl"], a_auth.as_str());
    // A path is not a host of its own; b cannot take a's host.
    for (tenant, url) in [("b", format!("{}/b", t.app.auth)), ("b", a_auth.clone())] {
        let (s, v) = t
            .app
            .admin(
                Method::PATCH,
                &format!("/tenants/{tenant}"),
                Some(&json!({ "authServerUrl": url })),
            )
            .await;
        assert!(
            s == StatusCode::BAD_REQUEST || s == StatusCode::CONFLICT,
            "{url}: {s} {v}"
        );
    }
    let alice = t.wallet(Some("a"), "alice", "USD").await;
    let (s, doc) = t.get(&alice).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(doc["authServer"], a_auth.as_str(), "{doc}");
    let client = t.client("a:alice", &alice, 121).await;
    let access =
        json!([{ "type": "incoming-payment", "actions": ["create", "read"], "identifier": alice }]);
    let body = json!({ "access_token": { "access": access }, "client": alice });
    // At a's authorization server: issued, its URLs under it.
    let r = client.send(Method::POST, &a_auth, None, Some(&body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let manage = r.body["access_token"]["manage"]
        .as_str()
        .unwrap()
        .to_owned();
    let cont = r.body["continue"]["uri"].as_str().unwrap().to_owned();
    assert!(manage.starts_with(&format!("{a_auth}token/")), "{manage}");
    assert!(cont.starts_with(&format!("{a_auth}continue/")), "{cont}");
    let token = r.body["access_token"]["value"].as_str().unwrap().to_owned();
    // At the shared one, a's wallet address is not its to grant.
    let shared = format!("{}/", t.app.auth);
    let r = client.send(Method::POST, &shared, None, Some(&body)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    // a's token is unknown at the shared authorization server.
    let id = manage.rsplit('/').next().unwrap();
    let elsewhere = format!("{}/token/{id}", t.app.auth);
    let r = client
        .send(Method::POST, &elsewhere, Some(&token), None)
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{elsewhere}: {}", r.body);
    let r = client.send(Method::POST, &manage, Some(&token), None).await;
    assert_eq!(r.status, StatusCode::OK, "rotated at a's: {}", r.body);
    // A resource server 401 at a's URLs names a's authorization server.
    let r = client
        .send(
            Method::GET,
            &format!("{}/incoming-payments?wallet-address={alice}", t.a),
            None,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert_eq!(
        r.headers["www-authenticate"],
        format!("GNAP as_uri={a_auth}").as_str()
    );
    t.app.stop().await;
}
