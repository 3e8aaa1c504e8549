//! The operator dashboard over HTTP (its browser test is in
//! `interop/node/test/dashboard.test.mjs`): signing in, the session kept as a
//! digest, outgoing payments of every wallet address filtered by state and
//! paged with a cursor, and forms refused without their token.

use opd_core::Clock;
use opd_testkit::app::{Db, TestApp};
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::amount;

/// A signed-in dashboard session.
pub(crate) struct Dash {
    pub(crate) app: TestApp,
    pub(crate) browser: reqwest::Client,
    pub(crate) cookie: String,
}

impl Dash {
    pub(crate) async fn get(&self, path: &str) -> (StatusCode, String) {
        let r = self
            .browser
            .get(format!("{}{path}", self.app.admin))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    }

    /// Sends a form of the page at `page` (with that page's form token) to
    /// `action`: the status, and where it sends the browser or the page
    /// it answers.
    async fn post(
        &self,
        page: &str,
        action: &str,
        fields: &[(&str, &str)],
    ) -> (StatusCode, String) {
        let (_, html) = self.get(page).await;
        let csrf = csrf_of(&html);
        let mut form: Vec<(&str, &str)> = vec![("csrf", &csrf)];
        form.extend_from_slice(fields);
        let r = self
            .browser
            .post(format!("{}{action}", self.app.admin))
            .header(COOKIE, &self.cookie)
            .form(&form)
            .send()
            .await
            .unwrap();
        let status = r.status();
        match r.headers().get(LOCATION) {
            Some(to) => (status, to.to_str().unwrap().to_owned()),
            None => (status, r.text().await.unwrap()),
        }
    }
}

pub(crate) async fn signed_in(app: TestApp) -> Dash {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // The sign-in form's token is bound to the cookie its page sets.
    let page = browser
        .get(format!("{}/dashboard/login", app.admin))
        .send()
        .await
        .unwrap();
    let set = page.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let login_cookie = set.split(';').next().unwrap().to_owned();
    let html = page.text().await.unwrap();
    let csrf = html
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let forged = browser
        .post(format!("{}/dashboard/login", app.admin))
        .form(&[("token", app.admin_token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(
        forged.status(),
        StatusCode::FORBIDDEN,
        "a sign-in without its form token"
    );
    let login = |token: String| {
        browser
            .post(format!("{}/dashboard/login", app.admin))
            .header(COOKIE, &login_cookie)
            .form(&[("token", token), ("csrf", csrf.clone())])
            .send()
    };
    let wrong = login("not-the-admin-token".into()).await.unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    assert!(wrong.headers().get(SET_COOKIE).is_none());
    let ok = login(app.admin_token.clone()).await.unwrap();
    assert_eq!(ok.status(), StatusCode::SEE_OTHER);
    assert_eq!(ok.headers()[LOCATION], "/dashboard");
    let set = ok.headers()[SET_COOKIE].to_str().unwrap().to_owned();
    for attribute in [
        "HttpOnly",
        "SameSite=Strict",
        "Path=/dashboard",
        "Max-Age=28800",
    ] {
        assert!(set.contains(attribute), "{set}");
    }
    let cookie = set.split(';').next().unwrap().to_owned();
    Dash {
        app,
        browser,
        cookie,
    }
}

#[tokio::test]
async fn sessions_are_stored_as_digests_and_pages_need_one() {
    let app = TestApp::spawn_with(Db::Sqlite, |_| {}).await;
    let anonymous = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/dashboard/grants", app.admin))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::SEE_OTHER);
    // The sign-in page returns to the page asked for.
    assert_eq!(
        anonymous.headers()[LOCATION],
        "/dashboard/login?next=%2Fdashboard%2Fgrants"
    );
    let d = signed_in(app).await;
    let value = d.cookie.split_once('=').unwrap().1;
    let store = &d.app.services().store;
    let now = d.app.clock.now();
    let digest = opd_core::hex::lower(&Sha256::digest(value.as_bytes()));
    assert!(store.dashboard_session(&digest, now).await.unwrap() == Some(None));
    // The cookie value itself is no session: only its digest is stored.
    assert!(store.dashboard_session(value, now).await.unwrap().is_none());
    // Eight hours later the session is over.
    d.app.clock.advance_millis(8 * 3600 * 1000);
    let (s, _) = d.get("/dashboard").await;
    assert_eq!(s, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn outgoing_payments_filter_by_state_and_page_with_a_cursor() {
    payments_pages(Db::Sqlite).await;
}

#[tokio::test]
async fn payment_pages_on_postgres() {
    payments_pages(Db::Postgres).await;
}

async fn payments_pages(db: Db) {
    let app = TestApp::spawn_with(db, |_| {}).await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let payer = app.signing_client("payer", 41).await;
    app.deposit("alice", 100_000).await;
    let token = app
        .outgoing_token(&payer, &alice, serde_json::Value::Null)
        .await;
    let mut ids = Vec::new();
    for n in 0..22 {
        let (s, ip) = app
            .post(
                &app.url("incoming-payments"),
                &json!({ "walletAddress": bob, "incomingAmount": amount("100", "USD", 2) }),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{ip}");
        let (s, q) = app
            .post(
                &app.url("quotes"),
                &json!({ "walletAddress": alice, "receiver": ip["id"], "method": "ilp" }),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{q}");
        let r = payer
            .send(
                Method::POST,
                &app.url("outgoing-payments"),
                Some(&token),
                Some(&json!({ "walletAddress": alice, "quoteId": q["id"] })),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        ids.push(
            r.body["id"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned(),
        );
        // All but the last are sent.
        if n == 20 {
            app.run_workers().await;
        }
    }
    let d = signed_in(app).await;
    let rows = |html: &str| html.matches("href=\"/dashboard/payments/outgoing/").count();
    let (s, sending) = d
        .get("/dashboard/payments?kind=outgoing&state=sending")
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(rows(&sending), 1);
    assert!(sending.contains(&ids[21]));
    // 21 completed: a page of 20, newest first, then the oldest one.
    let (_, first) = d
        .get("/dashboard/payments?kind=outgoing&state=completed")
        .await;
    assert_eq!(rows(&first), 20);
    assert!(first.contains(&ids[20]) && !first.contains(&ids[0]));
    // The link to the older page keeps the filter and names the last id
    // shown (askama writes `&` as `&#38;`).
    let older = first
        .split("<a href=\"")
        .filter_map(|s| s.split_once("\" rel=\"next\""))
        .map(|(href, _)| href.replace("&#38;", "&"))
        .next()
        .unwrap_or_else(|| panic!("a link to the older page: {first}"));
    let before = older
        .strip_prefix("/dashboard/payments?kind=outgoing&state=completed&before=")
        .unwrap_or_else(|| panic!("{older}"));
    assert_eq!(before, ids[1]);
    let (_, second) = d.get(&older).await;
    assert_eq!(rows(&second), 1);
    assert!(second.contains(&ids[0]));
    // A payment's page lists its transfers.
    let (s, detail) = d
        .get(&format!("/dashboard/payments/outgoing/{}", ids[0]))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        detail.contains("<td data-label=\"Kind\">fund</td>")
            && detail.contains("<td data-label=\"Kind\">deliver</td>"),
        "{detail}"
    );
    // What a local payment delivered, not $0.00.
    assert!(
        detail.contains("<dt>Delivered</dt><dd>$1.00</dd>"),
        "{detail}"
    );
    // bob's history shows each payment he received, and his balance.
    let bob_id = d
        .app
        .admin(Method::GET, "/wallet-addresses/bob", None)
        .await
        .1["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (s, history) = d.get(&format!("/dashboard/wallets/{bob_id}")).await;
    assert_eq!(s, StatusCode::OK, "{history}");
    assert_eq!(
        history.matches("data-what=\"received\"").count(),
        21,
        "{history}"
    );
    assert!(
        history.contains("<dt>Balance</dt><dd id=\"wallet-balance\">$21.00</dd>"),
        "{history}"
    );
    assert!(history.contains(&ids[0]), "each names its payment");
    // alice's payments are hers: bob's page lists none he sent.
    let sent = history
        .split("<h2>Outgoing payments</h2>")
        .nth(1)
        .and_then(|rest| rest.split("<h2>Balance history</h2>").next())
        .unwrap();
    assert!(sent.contains("None yet."), "bob sent nothing: {sent}");
    // The payment not sent yet can be cancelled from its page; a completed
    // one cannot.
    let (_, page) = d
        .get(&format!("/dashboard/payments/outgoing/{}", ids[21]))
        .await;
    let cancel = |id: &str, csrf: &str| {
        d.browser
            .post(format!(
                "{}/dashboard/payments/outgoing/{id}/cancel",
                d.app.admin
            ))
            .header(COOKIE, &d.cookie)
            .form(&[("csrf", csrf)])
            .send()
    };
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    assert!(page.contains("Cancel this payment"), "{page}");
    let r = cancel(&ids[21], &csrf).await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let back = r.headers()[LOCATION].to_str().unwrap().to_owned();
    assert!(back.ends_with("?done=cancelled"), "{back}");
    let (_, after) = d.get(&back).await;
    assert!(after.contains("The payment is cancelled") && !after.contains("Cancel this payment"));
    let r = cancel(&ids[0], &csrf).await.unwrap();
    assert!(r.headers()[LOCATION]
        .to_str()
        .unwrap()
        .ends_with("?done=not_cancellable"));
    // A cursor that is no id is ignored, not sent to the database.
    let (s, page) = d
        .get("/dashboard/payments?kind=incoming&before=nonsense'")
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        page.matches("href=\"/dashboard/payments/incoming/").count(),
        20
    );
    // An incoming payment's page says where what it received went.
    let first_incoming = page
        .split("href=\"/dashboard/payments/incoming/")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let (s, incoming) = d
        .get(&format!("/dashboard/payments/incoming/{first_incoming}"))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        incoming.contains("<dt>Received money</dt><dd>on the wallet address&#39;s balance</dd>")
            || incoming.contains("<dt>Received money</dt><dd>on the wallet address's balance</dd>"),
        "{incoming}"
    );
    assert!(
        incoming.contains("Nothing has paid it yet."),
        "the cancelled one: {incoming}"
    );
    // The one the first payment paid names its wallet address, its payer
    // and the money's transfer, though the money went to bob's balance.
    let paid = d
        .app
        .services()
        .store
        .get_outgoing_payment(opd_core::OutgoingPaymentId::parse(&ids[0]).unwrap())
        .await
        .unwrap()
        .unwrap();
    let (s, incoming) = d
        .get(&format!(
            "/dashboard/payments/incoming/{}",
            paid.receiver.rsplit('/').next().unwrap()
        ))
        .await;
    assert_eq!(s, StatusCode::OK);
    let bob_url = format!("<dt>Wallet address</dt><dd>{bob}</dd>");
    assert!(incoming.contains(&bob_url), "{incoming}");
    let payer = format!(
        "<td data-label=\"What\">local payment</td><td data-label=\"From\" class=\"url small\"><a href=\"/dashboard/payments/outgoing/{0}\">{0}</a></td><td data-label=\"Credits\" class=\"num\">1</td><td data-label=\"Amount\" class=\"num\">$1.00</td>",
        ids[0]
    );
    assert!(incoming.contains(&payer), "{incoming}");
    assert!(
        incoming.contains("<td data-label=\"Kind\">deliver</td>")
            && !incoming.contains("No money has moved"),
        "{incoming}"
    );
    let (s, _) = d.get("/dashboard/grants?before=nonsense&state=bogus").await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = d.get("/dashboard/payments/outgoing/not-an-id").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn forms_without_their_token_change_nothing() {
    let d = signed_in(TestApp::spawn_with(Db::Sqlite, |_| {}).await).await;
    let (_, grants) = d.get("/dashboard/grants").await;
    // The test app's own client grant, revocable.
    let id = grants
        .split("data-grant=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let revoke = |csrf: Option<String>| {
        let mut form = vec![];
        if let Some(t) = csrf {
            form.push(("csrf", t));
        }
        d.browser
            .post(format!("{}/dashboard/grants/{id}/revoke", d.app.admin))
            .header(COOKIE, &d.cookie)
            .form(&form)
            .send()
    };
    let r = revoke(None).await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.text().await.unwrap().contains("Nothing was changed"));
    let r = revoke(Some("A".repeat(43))).await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let token = grants
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let r = revoke(Some(token)).await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/dashboard/grants?done=revoked");
}

#[tokio::test]
async fn the_peers_page_shows_who_created_each_peer() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.auto_peering_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let (s, v) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&json!({ "name": "bank", "staticIlpAddress": "test.bank",
                          "asset": { "code": "USD", "scale": 2 } })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let addr = app.running.as_ref().unwrap().auto_peering_addr.unwrap();
    let resp = app
        .http
        .post(format!("http://{addr}/"))
        .json(
            &json!({ "staticIlpAddress": "test.rafiki", "ilpConnectorUrl": "http://127.0.0.1:9/ilp",
                       "asset": { "code": "USD", "scale": 2 }, "httpToken": "rafiki-token" }),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let dash = signed_in(app).await;
    let (s, html) = dash.get("/dashboard/peers").await;
    assert_eq!(s, StatusCode::OK);
    assert!(html.contains("<th scope=\"col\">Created by</th>"), "{html}");
    let row = |name: &str| {
        html.split("<tr ")
            .find(|r| r.contains(&format!("\">{name}</a></strong>")))
            .unwrap()
            .to_owned()
    };
    let created_by =
        |who: &str| format!("<td data-label=\"Created by\" class=\"nowrap\">{who}</td>");
    assert!(row("bank").contains(&created_by("operator")));
    assert!(row("test.rafiki").contains(&created_by("auto-peering")));
}

/// The value of the form token on a page.
pub(crate) fn csrf_of(html: &str) -> String {
    html.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn two_dashboards_on_one_host_keep_their_sessions_apart() {
    let a = signed_in(TestApp::spawn_with(Db::Sqlite, |_| {}).await).await;
    let b = TestApp::spawn_with(Db::Sqlite, |_| {}).await;
    // The test apps draw the same random values: one more draw here makes
    // b's session differ from a's.
    reqwest::get(format!("{}/dashboard/login", b.admin))
        .await
        .unwrap();
    let b = signed_in(b).await;
    let value = |d: &Dash| d.cookie.split_once('=').unwrap().1.to_owned();
    assert_ne!(value(&a), value(&b));
    let port = |d: &Dash| url::Url::parse(&d.app.admin).unwrap().port().unwrap();
    for d in [&a, &b] {
        assert!(
            d.cookie.starts_with(&format!("opd_dashboard_{}=", port(d))),
            "the cookie's name carries the admin port: {}",
            d.cookie
        );
    }
    // A browser sends a host's cookies to all its ports: each server gets
    // both, and must find its own session among them.
    let both = format!("{}; {}", a.cookie, b.cookie);
    for d in [&a, &b] {
        let r = d
            .browser
            .get(format!("{}/dashboard", d.app.admin))
            .header(COOKIE, &both)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "signed out by the other server");
    }
    // The other server's session opens nothing here.
    let r = a
        .browser
        .get(format!("{}/dashboard", a.app.admin))
        .header(
            COOKIE,
            b.cookie
                .replace(&port(&b).to_string(), &port(&a).to_string()),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn without_a_webhook_url_events_wait_and_cannot_be_retried() {
    let d = signed_in(TestApp::spawn_with(Db::Sqlite, |_| {}).await).await;
    let bob = d.app.create_wallet("bob", "USD", 2).await;
    crate::payments::incoming(&d.app, &bob, "100", "USD").await;
    let (s, page) = d.get("/dashboard/webhooks").await;
    assert_eq!(s, StatusCode::OK);
    assert!(page.contains("incoming_payment.created"), "{page}");
    assert!(page.contains("No webhook URL is configured"), "{page}");
    assert!(!page.contains("Retry now"), "{page}");
    // The payload is on the page, escaped.
    assert!(
        page.contains("&quot;type&quot;") || page.contains("&#34;type&#34;"),
        "{page}"
    );
    let id = page
        .split("data-event=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let r = d
        .browser
        .post(format!("{}/dashboard/webhooks/{id}/retry", d.app.admin))
        .header(COOKIE, &d.cookie)
        .form(&[("csrf", csrf_of(&page))])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers()[LOCATION],
        "/dashboard/webhooks?done=no_webhook_url"
    );
}

#[tokio::test]
async fn search_opens_what_it_finds() {
    let d = signed_in(TestApp::spawn_with(Db::Sqlite, |_| {}).await).await;
    let bob_url = d.app.create_wallet("bob", "USD", 2).await;
    let incoming = crate::payments::incoming(&d.app, &bob_url, "100", "USD").await;
    let id = incoming.rsplit('/').next().unwrap().to_owned();
    let bob = d
        .app
        .admin(Method::GET, "/wallet-addresses/bob", None)
        .await
        .1["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let search = |q: String| {
        let url = format!(
            "{}/dashboard/search?q={}",
            d.app.admin,
            url::form_urlencoded::byte_serialize(q.as_bytes()).collect::<String>()
        );
        d.browser.get(url).header(COOKIE, &d.cookie).send()
    };
    for (q, to) in [
        (
            incoming.clone(),
            format!("/dashboard/payments/incoming/{id}"),
        ),
        (id.clone(), format!("/dashboard/payments/incoming/{id}")),
        (d.app.url("bob"), format!("/dashboard/wallets/{bob}")),
        ("bob".to_owned(), format!("/dashboard/wallets/{bob}")),
        // A payment pointer of this plain-http server.
        (
            format!("${}", bob_url.strip_prefix("http://").unwrap()),
            format!("/dashboard/wallets/{bob}"),
        ),
    ] {
        let r = search(q.clone()).await.unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{q}");
        assert_eq!(r.headers()[LOCATION], to.as_str(), "{q}");
    }
    let r = search("nobody-at-all".into()).await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.text().await.unwrap().contains("Nothing here matches"));
}

#[tokio::test]
async fn fees_and_rates_set_on_the_dashboard_are_what_the_admin_api_reads() {
    let d = signed_in(TestApp::spawn_with(Db::Sqlite, |_| {}).await).await;
    let (_, page) = d.get("/dashboard/pricing").await;
    let post = |path: &'static str, form: Vec<(&'static str, &'static str)>| {
        let mut form: Vec<(&str, String)> =
            form.into_iter().map(|(k, v)| (k, v.to_owned())).collect();
        form.push(("csrf", csrf_of(&page)));
        d.browser
            .post(format!("{}{path}", d.app.admin))
            .header(COOKIE, &d.cookie)
            .form(&form)
            .send()
    };
    let r = post(
        "/dashboard/fees",
        vec![
            ("asset_code", "USD"),
            ("asset_scale", "2"),
            ("fixed", "0.10"),
            ("percent", "0.5"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(r.headers()[LOCATION], "/dashboard/pricing?done=fee_set");
    let (_, fees) = d.app.admin(Method::GET, "/fees", None).await;
    assert_eq!(fees[0]["fixed"], "10", "{fees}");
    assert_eq!(fees[0]["basisPoints"], 50, "{fees}");
    // A share over 100 % changes nothing and says why.
    let r = post(
        "/dashboard/fees",
        vec![
            ("asset_code", "USD"),
            ("asset_scale", "2"),
            ("percent", "100.01"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.text().await.unwrap().contains("role=\"alert\""));
    let (_, fees) = d.app.admin(Method::GET, "/fees", None).await;
    assert_eq!(fees[0]["basisPoints"], 50, "{fees}");
    // Rates: one set, the base's others kept, one removed.
    for (counter, rate) in [("EUR", "0.9"), ("GBP", "0.8")] {
        let r = post(
            "/dashboard/rates",
            vec![("base", "USD"), ("counter", counter), ("rate", rate)],
        )
        .await
        .unwrap();
        assert_eq!(r.headers()[LOCATION], "/dashboard/pricing?done=rate_set");
    }
    let (_, rates) = d.app.admin(Method::GET, "/rates", None).await;
    assert_eq!(rates["rates"]["USD"], json!({"EUR": "0.9", "GBP": "0.8"}));
    post(
        "/dashboard/rates",
        vec![("base", "USD"), ("counter", "GBP"), ("rate", "")],
    )
    .await
    .unwrap();
    let (_, rates) = d.app.admin(Method::GET, "/rates", None).await;
    assert_eq!(rates["rates"]["USD"], json!({"EUR": "0.9"}));
    let (_, page) = d.get("/dashboard/pricing").await;
    assert!(page.contains("0.5 %") && page.contains("$0.10"), "{page}");
}

/// The wallet page says whether its owner can approve grants: a wallet
/// address without an owner password is flagged.
#[tokio::test]
async fn the_wallet_page_flags_a_wallet_without_an_owner_password() {
    let app = TestApp::spawn_with(Db::Sqlite, |_| {}).await;
    app.create_wallet("dora", "USD", 2).await;
    app.create_wallet("erin", "USD", 2).await;
    let body = json!({ "password": "erin's own password" });
    let (s, _) = app
        .admin(
            Method::PUT,
            "/wallet-addresses/erin/owner-password",
            Some(&body),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let id = |path: &str| {
        let app = &app;
        let path = format!("/wallet-addresses/{path}");
        async move {
            app.admin(Method::GET, &path, None).await.1["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let (dora, erin) = (id("dora").await, id("erin").await);
    let dash = signed_in(app).await;
    let (_, page) = dash.get(&format!("/dashboard/wallets/{dora}")).await;
    assert!(
        page.contains("<dt>Owner password</dt><dd>not set yet: its owner cannot approve grants on the consent page</dd>"),
        "{page}"
    );
    let (_, page) = dash.get(&format!("/dashboard/wallets/{erin}")).await;
    assert!(
        page.contains("<dt>Owner password</dt><dd>set</dd>"),
        "{page}"
    );
}

/// The wallet page's own forms: the owner password set (and refused when
/// weak or mistyped), a key pasted as base64 added then revoked (the key
/// set shows it, then not), and deactivation (refused unconfirmed).
#[tokio::test]
async fn the_wallet_page_sets_the_password_adds_and_revokes_keys_and_deactivates() {
    use base64::Engine as _;
    let app = TestApp::spawn_with(Db::Sqlite, |_| {}).await;
    let url = app.create_wallet("dora", "USD", 2).await;
    let id = app
        .admin(Method::GET, "/wallet-addresses/dora", None)
        .await
        .1["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let wallet_id = opd_core::WalletAddressId::parse(&id).unwrap();
    let dash = signed_in(app).await;
    let page = format!("/dashboard/wallets/{id}");
    let action = |what: &str| format!("/dashboard/wallets/{id}/{what}");
    // Where its owner signs in to their own page.
    let (_, html) = dash.get(&page).await;
    let owners = format!("<dd>{}/wallet/dora</dd>", dash.app.auth);
    assert!(html.contains(&owners), "{html}");
    let password = action("password");
    let (s, html) = dash
        .post(
            &page,
            &password,
            &[
                ("password", "a good long one"),
                ("confirm", "a good long 1"),
            ],
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(html.contains("The two passwords differ"), "{html}");
    let (s, html) = dash
        .post(
            &page,
            &password,
            &[("password", "password1"), ("confirm", "password1")],
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(html.contains("most commonly used"), "{html}");
    let services = dash.app.services();
    assert!(
        !opd_service::grants::has_owner_password(services, wallet_id)
            .await
            .unwrap()
    );
    let (s, to) = dash
        .post(
            &page,
            &password,
            &[
                ("password", "dora's garden gate"),
                ("confirm", "dora's garden gate"),
            ],
        )
        .await;
    assert_eq!(
        (s, to.as_str()),
        (
            StatusCode::SEE_OTHER,
            format!("{page}?done=password_set").as_str()
        )
    );
    assert!(opd_service::grants::has_owner_password(services, wallet_id)
        .await
        .unwrap());

    let jwk = r#"{"kid":"wm-key","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    let pasted = base64::engine::general_purpose::STANDARD.encode(jwk);
    let (s, html) = dash
        .post(&page, &action("keys"), &[("jwk", "not a key")])
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(html.contains("That key was not added"), "{html}");
    let (s, to) = dash.post(&page, &action("keys"), &[("jwk", &pasted)]).await;
    assert_eq!(
        (s, to),
        (StatusCode::SEE_OTHER, format!("{page}?done=key_added"))
    );
    let jwks = || async {
        reqwest::get(format!("{url}/jwks.json"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    assert!(jwks().await.contains("wm-key"));
    let (s, to) = dash
        .post(&page, &action("keys/revoke"), &[("kid", "wm-key")])
        .await;
    assert_eq!(
        (s, to),
        (StatusCode::SEE_OTHER, format!("{page}?done=key_revoked"))
    );
    assert!(!jwks().await.contains("wm-key"));

    let (s, html) = dash.post(&page, &action("deactivate"), &[]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(html.contains("Tick the box"), "{html}");
    assert_eq!(reqwest::get(&url).await.unwrap().status(), StatusCode::OK);
    let (s, to) = dash
        .post(&page, &action("deactivate"), &[("confirm", "yes")])
        .await;
    assert_eq!(
        (s, to),
        (StatusCode::SEE_OTHER, format!("{page}?done=deactivated"))
    );
    assert_eq!(
        reqwest::get(&url).await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    let (_, html) = dash.get(&page).await;
    assert!(
        !html.contains("password-form") && !html.contains("key-form"),
        "{html}"
    );
}

/// A peer is changed on its page (a token left empty is kept), and
/// deleted only once it holds no liquidity.
#[tokio::test]
async fn a_peer_is_edited_and_deleted_once_it_holds_nothing() {
    let app = TestApp::spawn_with(Db::Sqlite, |_| {}).await;
    let (s, peer) = app
        .admin(
            Method::POST,
            "/peers",
            Some(&json!({ "name": "p", "staticIlpAddress": "test.p", "asset": { "code": "USD", "scale": 2 },
                "http": { "outgoing": { "endpoint": "http://127.0.0.1:9/ilp", "authToken": "to-p" },
                          "incoming": { "authTokens": ["from-p"] } } })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{peer}");
    let id = peer["id"].as_str().unwrap().to_owned();
    money_at(&app, &id, "deposits", "d1").await;
    let dash = signed_in(app).await;
    let page = format!("/dashboard/peers/{id}");
    let (_, html) = dash.get(&page).await;
    assert!(
        html.contains("value=\"http://127.0.0.1:9/ilp\"") && html.contains("$5.00"),
        "{html}"
    );
    assert!(!html.contains("to-p"), "tokens are never shown: {html}");
    let fields = [
        ("name", "partner"),
        ("address", "test.p"),
        ("endpoint", "http://127.0.0.1:9/ilp"),
        ("routes", "test.p, test.q"),
        ("max_packet", "1.50"),
        ("low", ""),
        ("high", ""),
        ("outgoing_token", ""),
        ("incoming_token", ""),
    ];
    let (s, to) = dash.post(&page, &page, &fields).await;
    assert_eq!(
        (s, to),
        (StatusCode::SEE_OTHER, format!("{page}?done=peer_updated"))
    );
    let (_, saved) = dash
        .app
        .admin(Method::GET, &format!("/peers/{id}"), None)
        .await;
    assert_eq!(saved["name"], "partner");
    assert_eq!(saved["maxPacketAmount"], "150");
    assert_eq!(saved["routes"], json!(["test.p", "test.q"]));
    assert_eq!(
        saved["http"]["outgoing"]["endpoint"],
        "http://127.0.0.1:9/ilp"
    );
    let kept = dash
        .app
        .services()
        .store
        .get_peer(opd_core::PeerId::parse(&id).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.incoming_tokens, 1, "the incoming token is kept");

    let delete = format!("{page}/delete");
    let (s, html) = dash.post(&page, &delete, &[("confirm", "yes")]).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(html.contains("withdraw it first"), "{html}");
    let (s, _) = dash
        .app
        .admin(Method::GET, &format!("/peers/{id}"), None)
        .await;
    assert_eq!(s, StatusCode::OK, "not deleted while it holds liquidity");
    money_at(&dash.app, &id, "withdrawals", "w1").await;
    let (s, to) = dash.post(&page, &delete, &[("confirm", "yes")]).await;
    assert_eq!(
        (s, to.as_str()),
        (StatusCode::SEE_OTHER, "/dashboard/peers?done=peer_deleted")
    );
    let (s, _) = dash
        .app
        .admin(Method::GET, &format!("/peers/{id}"), None)
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

async fn money_at(app: &TestApp, id: &str, path: &str, key: &str) {
    let body = json!({ "amount": "500", "idempotencyKey": key });
    let (s, v) = app
        .admin(Method::POST, &format!("/peers/{id}/{path}"), Some(&body))
        .await;
    assert!(s.is_success(), "{v}");
}

/// A `multipart/form-data` body of text fields, as a browser sends a form
/// with a file input.
fn multipart(fields: &[(&str, &str)]) -> (String, String) {
    let boundary = "----opd-test-boundary-7d1c";
    let mut body = String::new();
    for (name, value) in fields {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{name}.json\"\r\nContent-Type: application/json\r\n\r\n{value}\r\n"
        ));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// A key sent as a file (multipart) is added with the form's token, and
/// refused without it.
#[tokio::test]
async fn a_key_file_is_added_with_the_forms_token_only() {
    let app = TestApp::spawn_with(Db::Sqlite, |_| {}).await;
    let url = app.create_wallet("erin", "USD", 2).await;
    let id = app
        .admin(Method::GET, "/wallet-addresses/erin", None)
        .await
        .1["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let dash = signed_in(app).await;
    let (_, html) = dash.get(&format!("/dashboard/wallets/{id}")).await;
    let csrf = csrf_of(&html);
    let jwk = r#"{"kid":"erin-file","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    let post = |fields: Vec<(&'static str, String)>| {
        let borrowed: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (content_type, body) = multipart(&borrowed);
        dash.browser
            .post(format!("{}/dashboard/wallets/{id}/keys", dash.app.admin))
            .header(COOKIE, &dash.cookie)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body)
            .send()
    };
    let jwks = || async {
        reqwest::get(format!("{url}/jwks.json"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let r = post(vec![("jwk_file", jwk.to_owned())]).await.unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(!jwks().await.contains("erin-file"));
    let r = post(vec![
        ("csrf", csrf),
        ("jwk", String::new()),
        ("jwk_file", jwk.to_owned()),
    ])
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(jwks().await.contains("erin-file"));
}
