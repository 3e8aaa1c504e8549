//! The wallet owner's own page (`/wallet/<path>` on the authorization
//! listener) over HTTP (its browser test is in
//! `interop/node/test/owner-page.test.mjs`): signing in with the owner
//! password (a wrong one refused, the session a new cookie), the balance,
//! the grants the owner gave with revoke (the token stops working), keys
//! added and revoked, forms refused without their token, another owner's
//! grants and page out of reach, signing out, and a new password ending
//! every session.

use opd_testkit::app::{Db, TestApp};
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const PASSWORD: &str = "alice keeps her garden";

/// A browser on the owner's page: its cookies, as the pages set them.
struct Browser {
    http: reqwest::Client,
    page: String,
    cookies: Vec<String>,
}

impl Browser {
    fn at(app: &TestApp, path: &str) -> Self {
        Self {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            page: format!("{}/wallet/{path}", app.auth),
            cookies: Vec::new(),
        }
    }

    fn keep(&mut self, r: &reqwest::Response) {
        for set in r.headers().get_all(SET_COOKIE) {
            let pair = set.to_str().unwrap().split(';').next().unwrap().to_owned();
            let name = pair.split('=').next().unwrap().to_owned();
            self.cookies.retain(|c| !c.starts_with(&format!("{name}=")));
            if !pair.ends_with('=') {
                self.cookies.push(pair);
            }
        }
    }

    async fn get(&mut self) -> (StatusCode, String) {
        let page = self.page.clone();
        self.get_url(&page).await
    }

    /// Where a redirect sent the browser (a path on this listener).
    async fn follow(&mut self, to: &str) -> (StatusCode, String) {
        let origin = url::Url::parse(&self.page).unwrap();
        let url = origin.join(to).unwrap();
        self.get_url(url.as_str()).await
    }

    async fn get_url(&mut self, url: &str) -> (StatusCode, String) {
        let r = self
            .http
            .get(url)
            .header(COOKIE, self.cookies.join("; "))
            .send()
            .await
            .unwrap();
        self.keep(&r);
        (r.status(), r.text().await.unwrap())
    }

    /// Posts a form of the page as last read (with its token): the status,
    /// and where it sends the browser or the page it answers.
    async fn post(&mut self, fields: &[(&str, &str)]) -> (StatusCode, String) {
        let (_, html) = self.get().await;
        let csrf = html
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or_default()
            .to_owned();
        let mut form = vec![("csrf", csrf.as_str())];
        form.extend_from_slice(fields);
        self.send(&form).await
    }

    async fn send(&mut self, form: &[(&str, &str)]) -> (StatusCode, String) {
        let r = self
            .http
            .post(&self.page)
            .header(COOKIE, self.cookies.join("; "))
            .form(form)
            .send()
            .await
            .unwrap();
        self.keep(&r);
        let status = r.status();
        match r.headers().get(LOCATION) {
            Some(to) => (status, to.to_str().unwrap().to_owned()),
            None => (status, r.text().await.unwrap()),
        }
    }
}

async fn set_password(app: &TestApp, path: &str, password: &str) {
    let body = json!({ "password": password });
    let (s, v) = app
        .admin(
            Method::PUT,
            &format!("/wallet-addresses/{path}/owner-password"),
            Some(&body),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{v}");
}

#[tokio::test]
async fn an_owner_signs_in_sees_their_wallet_and_revokes_a_grant() {
    let app = TestApp::spawn_with(Db::Sqlite, |_| {}).await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    set_password(&app, "alice", PASSWORD).await;
    app.deposit("alice", 10_000).await;
    let shop = app.signing_client("shop", 71).await;
    let token = app.outgoing_token(&shop, &alice, Value::Null).await;
    let list = format!("{}?wallet-address={alice}", app.url("outgoing-payments"));
    let read = || shop.send(Method::GET, &list, Some(&token), None);
    assert_eq!(read().await.status, StatusCode::OK);

    let mut owner = Browser::at(&app, "alice");
    let (s, form) = owner.get().await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        form.contains("Sign in to your wallet") && form.contains(&alice),
        "{form}"
    );
    let (s, page) = owner
        .post(&[("action", "sign-in"), ("password", "not hers")])
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(page.contains("Wrong password."), "{page}");
    let login_cookie = owner.cookies.clone();
    let (s, to) = owner
        .post(&[("action", "sign-in"), ("password", PASSWORD)])
        .await;
    let here = url::Url::parse(&owner.page).unwrap().path().to_owned();
    assert_eq!(
        (s, to),
        (StatusCode::SEE_OTHER, here),
        "back to the page, signed in"
    );
    let session: Vec<&String> = owner
        .cookies
        .iter()
        .filter(|c| c.starts_with("opd_owner="))
        .collect();
    assert_eq!(session.len(), 1, "a session cookie: {:?}", owner.cookies);
    assert!(
        !login_cookie.contains(session[0]),
        "a new cookie, not the sign-in form's"
    );

    let (s, page) = owner.get().await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        page.contains("<dd id=\"owner-balance\">$100.00</dd>"),
        "{page}"
    );
    assert!(
        page.contains(&format!("{}/shop", app.base)),
        "the client: {page}"
    );
    assert!(page.contains("deposit"), "the history: {page}");
    let grant = page
        .split("data-grant=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    // Without the form's token nothing happens.
    let (s, _) = owner
        .send(&[("action", "revoke-grant"), ("grant", &grant)])
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(read().await.status, StatusCode::OK);
    let (s, to) = owner
        .post(&[("action", "revoke-grant"), ("grant", &grant)])
        .await;
    assert_eq!(
        (s, to.ends_with("?done=revoked")),
        (StatusCode::SEE_OTHER, true),
        "{to}"
    );
    assert_eq!(
        read().await.status,
        StatusCode::UNAUTHORIZED,
        "the token stops working"
    );
    let (_, page) = owner.follow(&to).await;
    assert!(
        page.contains("The grant is revoked") && page.contains("revoked, since"),
        "{page}"
    );
}

/// Signs `browser` in with `password`.
async fn sign_in(browser: &mut Browser, password: &str) {
    let (s, _) = browser
        .post(&[("action", "sign-in"), ("password", password)])
        .await;
    assert_eq!(s, StatusCode::SEE_OTHER);
}

/// Keys added (as the Web Monetization extension shows one: base64) and
/// revoked; another owner's grant and page out of reach; signing out; a
/// new password ends every session.
#[tokio::test]
async fn an_owner_manages_keys_and_reaches_nothing_of_anyone_elses() {
    use base64::Engine as _;
    let app = TestApp::spawn_with(Db::Sqlite, |_| {}).await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    set_password(&app, "alice", PASSWORD).await;
    set_password(&app, "bob", "bob's own secret words").await;
    let shop = app.signing_client("shop", 72).await;
    let bobs_token = app.outgoing_token(&shop, &bob, Value::Null).await;
    let mut owner = Browser::at(&app, "alice");
    sign_in(&mut owner, PASSWORD).await;

    let jwk = r#"{"kid":"wm-alice","kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    let pasted = base64::engine::general_purpose::STANDARD.encode(jwk);
    let (s, to) = owner.post(&[("action", "add-key"), ("jwk", &pasted)]).await;
    assert_eq!(
        (s, to.ends_with("?done=key_added")),
        (StatusCode::SEE_OTHER, true),
        "{to}"
    );
    let jwks = || async {
        reqwest::get(format!("{alice}/jwks.json"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    assert!(jwks().await.contains("wm-alice"));
    let (s, page) = owner
        .post(&[("action", "add-key"), ("jwk", "not a key")])
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(page.contains("That key was not added"), "{page}");
    let (s, _) = owner
        .post(&[("action", "revoke-key"), ("kid", "wm-alice")])
        .await;
    assert_eq!(s, StatusCode::SEE_OTHER);
    assert!(!jwks().await.contains("wm-alice"));

    // bob's grant, named by a hostile form on alice's page: not hers.
    let bobs_grant = app
        .services()
        .store
        .grants_given(
            opd_core::WalletAddressId::parse(&bob_id(&app).await).unwrap(),
            10,
        )
        .await
        .unwrap()[0]
        .id
        .to_string();
    let (s, page) = owner
        .post(&[("action", "revoke-grant"), ("grant", &bobs_grant)])
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(page.contains("grant not found"), "{page}");
    let list = format!("{}?wallet-address={bob}", app.url("outgoing-payments"));
    let read = shop.send(Method::GET, &list, Some(&bobs_token), None).await;
    assert_eq!(read.status, StatusCode::OK, "bob's grant still works");
    // alice's session opens alice's page only.
    let mut at_bob = Browser::at(&app, "bob");
    at_bob.cookies = owner.cookies.clone();
    let (_, page) = at_bob.get().await;
    assert!(page.contains("Sign in to your wallet"), "{page}");
    let (s, _) = at_bob.send(&[("action", "sign-out")]).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "no session there");

    let (s, to) = owner.post(&[("action", "sign-out")]).await;
    assert_eq!(
        (s, to.ends_with("?done=signed_out")),
        (StatusCode::SEE_OTHER, true)
    );
    let (_, page) = owner.get().await;
    assert!(page.contains("Sign in to your wallet"), "{page}");
    sign_in(&mut owner, PASSWORD).await;
    set_password(&app, "alice", "alice has a new one now").await;
    let (_, page) = owner.get().await;
    assert!(
        page.contains("Sign in to your wallet"),
        "a new password ends the session: {page}"
    );
}

async fn bob_id(app: &TestApp) -> String {
    let (_, v) = app.admin(Method::GET, "/wallet-addresses/bob", None).await;
    v["id"].as_str().unwrap().to_owned()
}

/// Guessing is slowed as on the consent page, and an unknown or inactive
/// wallet address has no page.
#[tokio::test]
async fn guessing_the_password_is_slowed_and_unknown_wallets_have_no_page() {
    let app = TestApp::spawn_with(Db::Sqlite, |_| {}).await;
    app.create_wallet("alice", "USD", 2).await;
    set_password(&app, "alice", PASSWORD).await;
    let mut guesser = Browser::at(&app, "alice");
    let mut statuses = Vec::new();
    for n in 0..5 {
        let (s, _) = guesser
            .post(&[("action", "sign-in"), ("password", &format!("guess {n}"))])
            .await;
        statuses.push(s);
    }
    assert_eq!(&statuses[..3], [StatusCode::UNAUTHORIZED; 3]);
    assert_eq!(statuses[4], StatusCode::TOO_MANY_REQUESTS, "{statuses:?}");
    let (s, _) = Browser::at(&app, "nobody").get().await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = app
        .admin(Method::POST, "/wallet-addresses/alice/deactivate", None)
        .await;
    assert!(s.is_success());
    let (s, _) = Browser::at(&app, "alice").get().await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
