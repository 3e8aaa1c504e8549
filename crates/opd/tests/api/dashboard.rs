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

struct Dash {
    app: TestApp,
    browser: reqwest::Client,
    cookie: String,
}

impl Dash {
    async fn get(&self, path: &str) -> (StatusCode, String) {
        let r = self
            .browser
            .get(format!("{}{path}", self.app.admin))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap();
        (r.status(), r.text().await.unwrap())
    }
}

async fn signed_in(app: TestApp) -> Dash {
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
    assert_eq!(anonymous.headers()[LOCATION], "/dashboard/login");
    let d = signed_in(app).await;
    let value = d.cookie.split_once('=').unwrap().1;
    let store = &d.app.services().store;
    let now = d.app.clock.now();
    let digest = opd_core::hex::lower(&Sha256::digest(value.as_bytes()));
    assert!(store.dashboard_session_valid(&digest, now).await.unwrap());
    // The cookie value itself is no session: only its digest is stored.
    assert!(!store.dashboard_session_valid(value, now).await.unwrap());
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
        detail.contains("<td>fund</td>") && detail.contains("<td>deliver</td>"),
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
        html.split("<tr>")
            .find(|r| r.contains(&format!("<strong>{name}</strong>")))
            .unwrap()
            .to_owned()
    };
    assert!(row("bank").contains("<td class=\"nowrap\">operator</td>"));
    assert!(row("test.rafiki").contains("<td class=\"nowrap\">auto-peering</td>"));
}
