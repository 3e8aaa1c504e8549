//! The GNAP authorization server end to end: non-interactive grants,
//! interactive outgoing-payment grants approved through the built-in consent
//! page (driven as a browser would) and through the identity-provider API,
//! the finish hash, continuation, polling, rotation, revocation and
//! cancellation. Every refusal is asserted exactly: status, `error.code`
//! and `error.description` (and, for the GNAP endpoints, validated against
//! the spec where it documents the status).

use base64::Engine;
use opd_testkit::app::{Db, TestApp};
use opd_testkit::client::{Reply, SigningClient};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::spec_reply;

const IDP_SECRET: &str = "idp-secret-for-tests-0123";
pub(crate) const PASSWORD: &str = "correct horse battery";
pub(crate) const FINISH: &str = "https://shop.example/finish";

pub(crate) struct World {
    pub(crate) app: TestApp,
    pub(crate) shop: SigningClient,
    pub(crate) alice: String,
    /// alice's `authServer`, which grant requests are POSTed to.
    pub(crate) grant_endpoint: String,
    pub(crate) browser: reqwest::Client,
}

pub(crate) async fn world(db: Db) -> World {
    world_at(db, None).await
}

/// [`world`], with the authorization server under `auth_path` if given.
pub(crate) async fn world_at(db: Db, auth_path: Option<&str>) -> World {
    world_on(db, auth_path, |_| {}).await
}

/// [`world`], with settings adjusted (another node on the same database).
pub(crate) async fn world_with(db: Db, adjust: impl FnOnce(&mut opd::config::Settings)) -> World {
    world_on(db, None, adjust).await
}

async fn world_on(
    db: Db,
    auth_path: Option<&str>,
    adjust: impl FnOnce(&mut opd::config::Settings),
) -> World {
    let idp = |s: &mut opd::config::Settings| {
        s.serve.idp_secret = Some(IDP_SECRET.into());
        adjust(s);
    };
    let app = match auth_path {
        Some(path) => TestApp::spawn_with_auth_path(db, path, idp).await,
        None => TestApp::spawn_with(db, idp).await,
    };
    let alice = app.create_wallet("alice", "USD", 2).await;
    let (_, doc) = app.get_public(&alice).await;
    let grant_endpoint = doc["authServer"].as_str().unwrap().to_owned();
    let (s, v) = app
        .admin(
            Method::PUT,
            "/wallet-addresses/alice/owner-password",
            Some(&json!({ "password": PASSWORD })),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{v}");
    let shop = app.signing_client("shop", 21).await;
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    World {
        app,
        shop,
        alice,
        grant_endpoint,
        browser,
    }
}

pub(crate) fn outgoing_grant(w: &World, finish: Option<&str>, nonce: &str) -> Value {
    let mut interact = json!({ "start": ["redirect"] });
    if let Some(uri) = finish {
        interact["finish"] = json!({ "method": "redirect", "uri": uri, "nonce": nonce });
    }
    json!({
        "access_token": { "access": [{
            "type": "outgoing-payment",
            "actions": ["create", "read", "list"],
            "identifier": w.alice,
            "limits": { "debitAmount": { "value": "1000", "assetCode": "USD", "assetScale": 2 }, "interval": "R/2026-01-01T00:00:00Z/P1M" }
        }]},
        "client": w.shop.wallet_address,
        "interact": interact
    })
}

pub(crate) async fn ask(w: &World, body: &Value) -> Value {
    let reply = w
        .shop
        .send(Method::POST, &w.grant_endpoint, None, Some(body))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body
}

/// Asserts an error answer exactly: status, `error.code` and
/// `error.description`.
#[track_caller]
fn assert_error_exactly(status: StatusCode, body: &Value, want: (u16, &str, &str)) {
    assert_eq!(
        (
            status.as_u16(),
            body["error"]["code"].as_str(),
            body["error"]["description"].as_str()
        ),
        (want.0, Some(want.1), Some(want.2)),
        "{body}"
    );
}

/// `assert_error_exactly` for the answer to a signed GNAP request
/// (`method url`), whose body is also validated against the spec where the
/// operation documents the status.
#[track_caller]
fn assert_gnap_error(w: &World, method: Method, url: &str, r: &Reply, want: (u16, &str, &str)) {
    spec_reply(&w.app.base, &w.app.auth, &method, url, r.status, &r.body);
    assert_error_exactly(r.status, &r.body, want);
}

/// The status and JSON body of a browser or IdP-API answer.
async fn json_of(r: reqwest::Response) -> (StatusCode, Value) {
    let status = r.status();
    (status, r.json().await.unwrap())
}

/// Where a browser on `from` goes for a link or redirect to `to`.
pub(crate) fn resolve(from: &str, to: &str) -> String {
    url::Url::parse(from).unwrap().join(to).unwrap().to_string()
}

pub(crate) fn location(resp: &reqwest::Response) -> String {
    resp.headers()[reqwest::header::LOCATION]
        .to_str()
        .unwrap()
        .to_owned()
}

pub(crate) fn query(url: &str) -> std::collections::HashMap<String, String> {
    let q = url.split_once('?').map(|(_, q)| q).unwrap_or_default();
    url::form_urlencoded::parse(q.as_bytes())
        .into_owned()
        .collect()
}

/// The finish hash as a client computes it, independently of opd's code:
/// SHA-256 over the four lines, standard base64 with padding.
fn expected_hash(
    client_nonce: &str,
    as_nonce: &str,
    interact_ref: &str,
    grant_endpoint: &str,
) -> String {
    let digest = Sha256::digest(
        format!("{client_nonce}\n{as_nonce}\n{interact_ref}\n{grant_endpoint}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(digest)
}

/// Drives the built-in consent page like a browser: follow the redirect to
/// the page, read the form, post the password and the decision.
pub(crate) async fn consent_in_browser(
    w: &World,
    redirect: &str,
    password: &str,
    decision: &str,
) -> reqwest::Response {
    open_consent(&w.browser, redirect)
        .await
        .post(&w.browser, password, decision)
        .await
}

/// A browser on 127.0.0.1 whose requests name `client` in
/// `X-Forwarded-For`, as a reverse proxy at 127.0.0.1 (named in
/// `--trusted-proxies`) forwards a client's.
pub(crate) fn forwarded_browser(client: std::net::Ipv4Addr) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-forwarded-for", client.to_string().parse().unwrap());
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))
        .default_headers(headers)
        .build()
        .unwrap()
}

/// The consent form of an interaction, as a browser holds it: where it
/// posts, its token and the cookie the token is bound to.
#[derive(Clone)]
pub(crate) struct ConsentForm {
    pub(crate) action: String,
    token: String,
    cookie: Option<String>,
}

/// Follows an interaction's redirect to its consent page in `browser`.
pub(crate) async fn open_consent(browser: &reqwest::Client, redirect: &str) -> ConsentForm {
    let start = browser.get(redirect).send().await.unwrap();
    assert_eq!(
        start.status(),
        StatusCode::SEE_OTHER,
        "interaction start redirects to the consent page"
    );
    let page_url = resolve(redirect, &location(&start));
    let page = browser.get(&page_url).send().await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    // The form token is bound to this cookie, as a browser keeps it.
    let cookie = page
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned());
    let html = page.text().await.unwrap();
    // The client is shown by its host (it has no public name).
    assert!(
        html.contains("<span class=\"client-name\">127.0.0.1</span> asks")
            && html.contains("Send up to $10.00 every month, from 1 January 2026")
            && html.contains("Read the payments it sends")
            && html.contains("<form"),
        "{html}"
    );
    let attribute = |name: &str| {
        html.split(&format!("{name}=\""))
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_owned()
    };
    let action = resolve(&page_url, &attribute("action"));
    let token = html
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    ConsentForm {
        action,
        token,
        cookie,
    }
}

impl ConsentForm {
    /// Sends the form with `password` and `decision`.
    pub(crate) async fn post(
        &self,
        browser: &reqwest::Client,
        password: &str,
        decision: &str,
    ) -> reqwest::Response {
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("csrf", &self.token)
            .append_pair("password", password)
            .append_pair("decision", decision)
            .finish();
        let mut post = browser
            .post(&self.action)
            .header("content-type", "application/x-www-form-urlencoded");
        if let Some(c) = &self.cookie {
            post = post.header(reqwest::header::COOKIE, c);
        }
        post.body(form).send().await.unwrap()
    }
}

/// The consent page (its HTML) an interaction's `redirect` leads to.
pub(crate) async fn consent_html(w: &World, redirect: &str) -> String {
    let start = w.browser.get(redirect).send().await.unwrap();
    w.browser
        .get(resolve(redirect, &location(&start)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The consent page of a grant asked by a client whose wallet address
/// (`path`, on this server) has the public name `name`.
pub(crate) async fn consent_page_of_named_client(
    w: &World,
    path: &str,
    name: &str,
    seed: u8,
) -> String {
    let (s, v) = w
        .app
        .admin(
            Method::POST,
            "/wallet-addresses",
            Some(&json!({ "path": path, "assetCode": "USD", "assetScale": 2, "publicName": name })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let client = w
        .app
        .client_for(&w.app.url(path), &format!("{path}-key"), seed);
    let (s, v) = w
        .app
        .admin(
            Method::POST,
            &format!("/wallet-addresses/{path}/keys"),
            Some(&json!({ "jwk": serde_json::to_value(client.jwk()).unwrap() })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let mut body = outgoing_grant(w, Some(FINISH), "n");
    body["client"] = json!(client.wallet_address);
    let r = client
        .send(Method::POST, &format!("{}/", w.app.auth), None, Some(&body))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    consent_html(w, r.body["interact"]["redirect"].as_str().unwrap()).await
}

/// Continues an approved interactive grant (`pending`, the grant
/// request's answer) with the finish redirect's `interact_ref`.
pub(crate) async fn continue_grant(w: &World, pending: &Value, interact_ref: &str) -> Reply {
    w.shop
        .send(
            Method::POST,
            pending["continue"]["uri"].as_str().unwrap(),
            pending["continue"]["access_token"]["value"].as_str(),
            Some(&json!({ "interact_ref": interact_ref })),
        )
        .await
}

async fn introspect(app: &TestApp, token: &str) -> Value {
    let (s, v) = app
        .admin(
            Method::POST,
            "/introspect",
            Some(&json!({ "access_token": token })),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    opd_openapi::assert_response(
        opd_openapi::Api::TokenIntrospection,
        "post-introspect",
        200,
        &v,
    );
    v
}

#[tokio::test]
async fn interactive_grant_through_the_built_in_consent_page() {
    interactive_grant_flow(Db::Sqlite, None).await;
}

#[tokio::test]
async fn interactive_grant_on_postgres() {
    interactive_grant_flow(Db::Postgres, None).await;
}

/// The same behind a proxy that serves the authorization server under
/// `/gnap`: grant requests to `authServer` as published (signed as sent),
/// the consent page, continuation, rotation and revocation, all there.
#[tokio::test]
async fn interactive_grant_with_the_authorization_server_under_a_path() {
    interactive_grant_flow(Db::Sqlite, Some("/gnap")).await;
}

async fn interactive_grant_flow(db: Db, auth_path: Option<&str>) {
    let w = world_at(db, auth_path).await;
    let pending = ask(&w, &outgoing_grant(&w, Some(FINISH), "client-nonce-1")).await;
    opd_openapi::assert_response(opd_openapi::Api::AuthServer, "post-request", 200, &pending);
    let redirect = pending["interact"]["redirect"].as_str().unwrap();
    let as_nonce = pending["interact"]["finish"].as_str().unwrap();
    let continue_uri = pending["continue"]["uri"].as_str().unwrap();
    let continue_token = pending["continue"]["access_token"]["value"]
        .as_str()
        .unwrap();
    assert!(pending.get("access_token").is_none());
    let under = format!("{}/", w.app.auth);
    handed_out_under(&w, auth_path, &pending).await;

    // A wrong password keeps the user on the page.
    let wrong = consent_in_browser(&w, redirect, "not the password", "approve").await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let page = wrong.text().await.unwrap();
    assert!(
        page.contains("Wrong password.") && page.contains("<form"),
        "{page}"
    );

    let done = consent_in_browser(&w, redirect, PASSWORD, "approve").await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    let finish = location(&done);
    assert!(finish.starts_with(FINISH), "{finish}");
    let q = query(&finish);
    let interact_ref = &q["interact_ref"];
    let (_, doc) = w.app.get_public(&w.alice).await;
    let grant_endpoint = doc["authServer"].as_str().unwrap();
    assert_eq!(
        q["hash"],
        expected_hash("client-nonce-1", as_nonce, interact_ref, grant_endpoint)
    );

    // Continue with a wrong continuation token: refused.
    let bad = w
        .shop
        .send(
            Method::POST,
            continue_uri,
            Some("WRONG"),
            Some(&json!({ "interact_ref": interact_ref })),
        )
        .await;
    assert_gnap_error(
        &w,
        Method::POST,
        continue_uri,
        &bad,
        (
            401,
            "invalid_continuation",
            "invalid continuation token or grant",
        ),
    );

    let granted = w
        .shop
        .send(
            Method::POST,
            continue_uri,
            Some(continue_token),
            Some(&json!({ "interact_ref": interact_ref })),
        )
        .await;
    assert_eq!(granted.status, StatusCode::OK, "{}", granted.body);
    opd_openapi::assert_response(
        opd_openapi::Api::AuthServer,
        "post-continue",
        200,
        &granted.body,
    );
    let token = granted.body["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let manage = granted.body["access_token"]["manage"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(manage.starts_with(&format!("{under}token/")), "{manage}");
    assert_eq!(
        granted.body["access_token"]["access"][0]["limits"]["debitAmount"]["value"],
        "1000"
    );
    let active = introspect(&w.app, &token).await;
    assert_eq!(active["active"], true);
    assert_eq!(active["client"]["walletAddress"], w.shop.wallet_address);

    // The continuation token was used: a second continue is refused.
    let again = w
        .shop
        .send(
            Method::POST,
            continue_uri,
            Some(continue_token),
            Some(&json!({ "interact_ref": interact_ref })),
        )
        .await;
    assert_gnap_error(
        &w,
        Method::POST,
        continue_uri,
        &again,
        (
            401,
            "invalid_continuation",
            "invalid continuation token or grant",
        ),
    );

    // Rotate: the old token stops working, the new one works.
    let rotated = w.shop.send(Method::POST, &manage, Some(&token), None).await;
    assert_eq!(rotated.status, StatusCode::OK, "{}", rotated.body);
    opd_openapi::assert_response(
        opd_openapi::Api::AuthServer,
        "post-token",
        200,
        &rotated.body,
    );
    let new_token = rotated.body["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    let new_manage = rotated.body["access_token"]["manage"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(introspect(&w.app, &token).await["active"], false);
    assert_eq!(introspect(&w.app, &new_token).await["active"], true);
    let stale = w.shop.send(Method::POST, &manage, Some(&token), None).await;
    // A rotated-away token cannot rotate.
    assert_gnap_error(
        &w,
        Method::POST,
        &manage,
        &stale,
        (401, "invalid_client", "invalid access token"),
    );
    // Another client's token cannot manage this one.
    let (other, other_token) = w.app.client.as_ref().unwrap();
    let foreign = other
        .send(Method::DELETE, &new_manage, Some(other_token), None)
        .await;
    assert_gnap_error(
        &w,
        Method::DELETE,
        &new_manage,
        &foreign,
        (401, "invalid_client", "invalid access token"),
    );

    // Revoke.
    let revoked = w
        .shop
        .send(Method::DELETE, &new_manage, Some(&new_token), None)
        .await;
    assert_eq!(revoked.status, StatusCode::NO_CONTENT, "{}", revoked.body);
    assert_eq!(introspect(&w.app, &new_token).await["active"], false);
    w.app.stop().await;
}

/// The published `authServer` is the grant endpoint (the origin with its
/// slash, or the path without one), and the URLs of a pending grant are
/// under it; under a path, so are the interaction's pages.
async fn handed_out_under(w: &World, auth_path: Option<&str>, pending: &Value) {
    let published = match auth_path {
        Some(path) => {
            assert!(w.app.auth.ends_with(path), "{}", w.app.auth);
            w.app.auth.clone()
        }
        None => format!("{}/", w.app.auth),
    };
    assert_eq!(w.grant_endpoint, published);
    let redirect = pending["interact"]["redirect"].as_str().unwrap();
    let continue_uri = pending["continue"]["uri"].as_str().unwrap();
    let under = format!("{}/", w.app.auth);
    assert!(
        redirect.starts_with(&format!("{under}interact/")),
        "{redirect}"
    );
    assert!(
        continue_uri.starts_with(&format!("{under}continue/")),
        "{continue_uri}"
    );
    if let Some(path) = auth_path {
        the_browser_pages_stay_under(w, path, redirect).await;
    }
}

/// The interaction's pages under the authorization server's `path`: the
/// redirect to the consent page, its stylesheet, form and cookie; and the
/// identity-provider API's `finish`, which leads to the finish redirect.
async fn the_browser_pages_stay_under(w: &World, path: &str, redirect: &str) {
    let start = w.browser.get(redirect).send().await.unwrap();
    let consent = location(&start);
    assert!(
        consent.starts_with(&format!("{path}/consent/")),
        "{consent}"
    );
    let page = w
        .browser
        .get(resolve(redirect, &consent))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let cookie = page.headers()[reqwest::header::SET_COOKIE]
        .to_str()
        .unwrap();
    assert!(
        cookie.contains(&format!("; Path={path}/consent;")),
        "{cookie}"
    );
    let html = page.text().await.unwrap();
    assert!(html.contains(&format!("action=\"{consent}\"")), "{html}");
    let css = format!("{path}/assets/opd.css");
    assert!(html.contains(&format!("href=\"{css}\"")), "{html}");
    let r = w.browser.get(resolve(redirect, &css)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);

    // Another grant, decided through the identity-provider API.
    let pending = ask(w, &outgoing_grant(w, Some(FINISH), "idp")).await;
    let redirect = pending["interact"]["redirect"].as_str().unwrap();
    let parts: Vec<_> = redirect.rsplitn(3, '/').collect();
    let (nonce, id) = (parts[0], parts[1]);
    let decided = w
        .browser
        .post(format!(
            "{}/idp/interactions/{id}/{nonce}/accept",
            w.app.auth
        ))
        .header("x-idp-secret", IDP_SECRET)
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(decided).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let finish = body["finish"].as_str().unwrap();
    assert_eq!(finish, format!("{path}/interact/{id}/{nonce}/finish"));
    let done = w
        .browser
        .get(resolve(redirect, finish))
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
    assert!(location(&done).starts_with(FINISH));
}

#[tokio::test]
async fn identity_provider_api_approves_and_rejection_redirects() {
    let w = world(Db::Sqlite).await;
    let pending = ask(&w, &outgoing_grant(&w, Some(FINISH), "n-2")).await;
    let redirect = pending["interact"]["redirect"].as_str().unwrap();
    let parts: Vec<&str> = redirect.rsplit('/').take(2).collect();
    let (nonce, id) = (parts[0], parts[1]);
    let idp = format!("{}/idp/interactions/{id}/{nonce}", w.app.auth);

    let (s, v) = json_of(w.browser.get(&idp).send().await.unwrap()).await;
    assert_error_exactly(
        s,
        &v,
        (401, "invalid_request", "x-idp-secret is missing or wrong"),
    );
    let details: Value = w
        .browser
        .get(&idp)
        .header("x-idp-secret", IDP_SECRET)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(details["walletAddress"], w.alice);
    assert_eq!(details["client"], w.shop.wallet_address);
    assert_eq!(details["access"][0]["type"], "outgoing-payment");
    let accepted = w
        .browser
        .post(format!("{idp}/accept"))
        .header("x-idp-secret", IDP_SECRET)
        .send()
        .await
        .unwrap();
    assert_eq!(accepted.status(), StatusCode::ACCEPTED);
    let twice = w
        .browser
        .post(format!("{idp}/accept"))
        .header("x-idp-secret", IDP_SECRET)
        .send()
        .await
        .unwrap();
    // An interaction is decided once.
    let (s, v) = json_of(twice).await;
    assert_error_exactly(
        s,
        &v,
        (
            400,
            "invalid_interaction",
            "the interaction is no longer pending",
        ),
    );
    let finish = w
        .browser
        .get(format!("{}/interact/{id}/{nonce}/finish", w.app.auth))
        .send()
        .await
        .unwrap();
    let q = query(&location(&finish));
    let granted = w
        .shop
        .send(
            Method::POST,
            pending["continue"]["uri"].as_str().unwrap(),
            Some(
                pending["continue"]["access_token"]["value"]
                    .as_str()
                    .unwrap(),
            ),
            Some(&json!({ "interact_ref": q["interact_ref"] })),
        )
        .await;
    assert_eq!(granted.status, StatusCode::OK, "{}", granted.body);

    // Rejected on the consent page: the client is told so, and gets nothing.
    let pending = ask(&w, &outgoing_grant(&w, Some(FINISH), "n-3")).await;
    let rejected = consent_in_browser(
        &w,
        pending["interact"]["redirect"].as_str().unwrap(),
        PASSWORD,
        "reject",
    )
    .await;
    assert_eq!(query(&location(&rejected))["result"], "grant_rejected");
    let continue_uri = pending["continue"]["uri"].as_str().unwrap();
    // After the advertised wait, so that the answer is about the rejection
    // and not `too_fast`.
    w.app.clock.advance_millis(6_000);
    let nothing = w
        .shop
        .send(
            Method::POST,
            continue_uri,
            Some(
                pending["continue"]["access_token"]["value"]
                    .as_str()
                    .unwrap(),
            ),
            None,
        )
        .await;
    assert_gnap_error(
        &w,
        Method::POST,
        continue_uri,
        &nothing,
        (
            401,
            "request_denied",
            "grant cannot be polled; continue with the interact_ref",
        ),
    );

    // Cancel a pending grant.
    let pending = ask(&w, &outgoing_grant(&w, Some(FINISH), "n-4")).await;
    let cancelled = w
        .shop
        .send(
            Method::DELETE,
            pending["continue"]["uri"].as_str().unwrap(),
            Some(
                pending["continue"]["access_token"]["value"]
                    .as_str()
                    .unwrap(),
            ),
            None,
        )
        .await;
    assert_eq!(
        cancelled.status,
        StatusCode::NO_CONTENT,
        "{}",
        cancelled.body
    );
}

#[tokio::test]
async fn polling_honours_wait_and_interactions_expire() {
    let w = world(Db::Sqlite).await;
    let pending = ask(&w, &outgoing_grant(&w, None, "")).await;
    let uri = pending["continue"]["uri"].as_str().unwrap().to_owned();
    let mut token = pending["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(pending["continue"]["wait"], 5);
    let early = w.shop.send(Method::POST, &uri, Some(&token), None).await;
    assert_gnap_error(
        &w,
        Method::POST,
        &uri,
        &early,
        (
            400,
            "too_fast",
            "continued too fast; wait 5 seconds between continuation requests",
        ),
    );
    w.app.clock.advance_millis(6_000);
    let still = w.shop.send(Method::POST, &uri, Some(&token), None).await;
    assert_eq!(still.status, StatusCode::OK, "{}", still.body);
    assert!(still.body.get("access_token").is_none());
    token = still.body["continue"]["access_token"]["value"]
        .as_str()
        .unwrap()
        .to_owned();

    let redirect = pending["interact"]["redirect"].as_str().unwrap();
    let parts: Vec<&str> = redirect.rsplit('/').take(2).collect();
    let idp = format!("{}/idp/interactions/{}/{}", w.app.auth, parts[1], parts[0]);
    w.browser
        .post(format!("{idp}/accept"))
        .header("x-idp-secret", IDP_SECRET)
        .send()
        .await
        .unwrap();
    w.app.clock.advance_millis(6_000);
    let granted = w.shop.send(Method::POST, &uri, Some(&token), None).await;
    assert_eq!(granted.status, StatusCode::OK, "{}", granted.body);
    assert!(granted.body["access_token"]["value"].is_string());

    // An interaction not finished in time cannot be approved.
    let late = ask(&w, &outgoing_grant(&w, Some(FINISH), "n-5")).await;
    w.app.clock.advance_millis(601_000);
    let start = w
        .browser
        .get(late["interact"]["redirect"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(query(&location(&start))["result"], "invalid_interaction");
}

#[tokio::test]
async fn grant_requests_are_validated_and_signed() {
    let w = world(Db::Sqlite).await;
    let grant_url = format!("{}/", w.app.auth);
    // Outgoing payments always need interaction.
    let mut body = outgoing_grant(&w, Some(FINISH), "n");
    body.as_object_mut().unwrap().remove("interact");
    let r = w
        .shop
        .send(Method::POST, &grant_url, None, Some(&body))
        .await;
    assert_gnap_error(
        &w,
        Method::POST,
        &grant_url,
        &r,
        (
            400,
            "invalid_request",
            "this grant needs interaction: interact.start must contain \"redirect\"",
        ),
    );
    // A finish URI the browser must not be sent to.
    for uri in [
        "javascript:alert(1)",
        "data:text/html,x",
        "http://shop.example/done",
    ] {
        let mut body = outgoing_grant(&w, Some(FINISH), "n");
        body["interact"]["finish"]["uri"] = json!(uri);
        let r = w
            .shop
            .send(Method::POST, &grant_url, None, Some(&body))
            .await;
        assert_gnap_error(
            &w,
            Method::POST,
            &grant_url,
            &r,
            (
                400,
                "invalid_request",
                "interact.finish.uri must be an https URI (http only on a loopback host), without user-info",
            ),
        );
    }
    // Both amount limits.
    let mut body = outgoing_grant(&w, Some(FINISH), "n");
    body["access_token"]["access"][0]["limits"]["receiveAmount"] =
        json!({ "value": "1", "assetCode": "USD", "assetScale": 2 });
    let r = w
        .shop
        .send(Method::POST, &grant_url, None, Some(&body))
        .await;
    assert_gnap_error(
        &w,
        Method::POST,
        &grant_url,
        &r,
        (
            400,
            "invalid_request",
            "only one of debitAmount and receiveAmount may be given",
        ),
    );
    // Access to a wallet address on another server.
    let mut body = outgoing_grant(&w, Some(FINISH), "n");
    body["access_token"]["access"][0]["identifier"] = json!("https://elsewhere.example/alice");
    let r = w
        .shop
        .send(Method::POST, &grant_url, None, Some(&body))
        .await;
    assert_gnap_error(
        &w,
        Method::POST,
        &grant_url,
        &r,
        (
            400,
            "invalid_request",
            "identifier https://elsewhere.example/alice is not a wallet address on this server",
        ),
    );
    // A key the client's JWKS does not have.
    let impostor = w.app.client_for(&w.shop.wallet_address, "unknown-kid", 99);
    let r = impostor
        .send(
            Method::POST,
            &grant_url,
            None,
            Some(&outgoing_grant(&w, Some(FINISH), "n")),
        )
        .await;
    assert_gnap_error(
        &w,
        Method::POST,
        &grant_url,
        &r,
        (
            400,
            "invalid_client",
            "key \"unknown-kid\" is not in the client's key set",
        ),
    );
    // The client's kid, the wrong key.
    let forger = w.app.client_for(&w.shop.wallet_address, "shop-key", 98);
    let r = forger
        .send(
            Method::POST,
            &grant_url,
            None,
            Some(&outgoing_grant(&w, Some(FINISH), "n")),
        )
        .await;
    assert_gnap_error(
        &w,
        Method::POST,
        &grant_url,
        &r,
        (
            401,
            "invalid_client",
            "Signature validation error: signature does not verify",
        ),
    );
    // Unsigned.
    let r = w
        .browser
        .post(&grant_url)
        .json(&outgoing_grant(&w, Some(FINISH), "n"))
        .send()
        .await
        .unwrap();
    let (s, v) = json_of(r).await;
    spec_reply(&w.app.base, &w.app.auth, &Method::POST, &grant_url, s, &v);
    assert_error_exactly(
        s,
        &v,
        (
            401,
            "invalid_client",
            "Signature validation error: missing Signature-Input header",
        ),
    );
    // A directed-identity (jwk) client may take non-interactive grants.
    let jwk_client = w.app.client_for("", "directed", 77);
    let body = json!({
        "access_token": { "access": [{ "type": "quote", "actions": ["create", "read"] }] },
        "client": { "jwk": serde_json::to_value(jwk_client.jwk()).unwrap() }
    });
    let r = jwk_client
        .send(Method::POST, &grant_url, None, Some(&body))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    opd_openapi::assert_response(opd_openapi::Api::AuthServer, "post-request", 200, &r.body);
}

#[tokio::test]
async fn a_resource_server_can_introspect_at_a_separate_authorization_server() {
    // `a` is the authorization server; `b` serves wallet addresses whose
    // `authServer` is `a`, and introspects tokens there over HTTP. The
    // client's wallet address lives on `b`, so `a` fetches its JWKS over HTTP.
    let a = TestApp::spawn().await;
    let (introspect_url, admin_token, auth_url) = (
        format!("{}/introspect", a.admin),
        a.admin_token.clone(),
        a.auth.clone(),
    );
    let b = TestApp::spawn_with(Db::Sqlite, move |s| {
        s.serve.introspection_url = Some(introspect_url);
        s.serve.introspection_token = Some(admin_token.into());
        s.serve.auth_public_url = Some(auth_url);
    })
    .await;
    assert_eq!(b.auth, a.auth);
    let bob = b.create_wallet("bob", "USD", 2).await;
    let (s, ip) = b
        .post(
            &b.url("incoming-payments"),
            &json!({ "walletAddress": bob }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let (s, _) = b.get(ip["id"].as_str().unwrap()).await;
    assert_eq!(s, StatusCode::OK);
    let (client, _) = b.client.as_ref().unwrap();
    let r = client
        .send(
            Method::GET,
            ip["id"].as_str().unwrap(),
            Some("UNKNOWN-TOKEN"),
            None,
        )
        .await;
    assert_error_exactly(r.status, &r.body, (401, "invalid_token", "Invalid Token"));
}

#[tokio::test]
async fn password_guessing_on_the_consent_page_is_slowed_down() {
    let w = world(Db::Sqlite).await;
    let grant = ask(&w, &outgoing_grant(&w, Some(FINISH), "n")).await;
    let redirect = grant["interact"]["redirect"].as_str().unwrap().to_owned();
    // Three wrong passwords cost nothing more than a 401; then a lockout
    // starts, during which even the right password is refused.
    for _ in 0..3 {
        let r = consent_in_browser(&w, &redirect, "not the password", "approve").await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    }
    let r = consent_in_browser(&w, &redirect, PASSWORD, "approve").await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(r.headers().contains_key(reqwest::header::RETRY_AFTER));
    let html = r.text().await.unwrap();
    assert!(html.contains("Too many wrong passwords"), "{html}");
}

#[tokio::test]
async fn a_consent_form_without_its_token_decides_nothing() {
    let w = world(Db::Sqlite).await;
    let grant = ask(&w, &outgoing_grant(&w, Some(FINISH), "n")).await;
    let redirect = grant["interact"]["redirect"].as_str().unwrap();
    let start = w.browser.get(redirect).send().await.unwrap();
    let action = format!("{}{}", w.app.auth, location(&start));
    let page = w.browser.get(&action).send().await.unwrap();
    let set_cookie = page.headers()[reqwest::header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Lax"),
        "{set_cookie}"
    );
    let cookie = set_cookie.split(';').next().unwrap().to_owned();
    let token = "A".repeat(43);
    // No token, a forged token, a token without its cookie: each refused.
    for (body, cookie) in [
        (
            format!("password={PASSWORD}&decision=approve"),
            Some(&cookie),
        ),
        (
            format!("csrf={token}&password={PASSWORD}&decision=approve"),
            Some(&cookie),
        ),
        (
            format!("csrf={token}&password={PASSWORD}&decision=approve"),
            None,
        ),
    ] {
        let mut post = w
            .browser
            .post(&action)
            .header("content-type", "application/x-www-form-urlencoded");
        if let Some(c) = cookie {
            post = post.header(reqwest::header::COOKIE, c);
        }
        let r = post.body(body).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        let html = r.text().await.unwrap();
        assert!(html.contains("Nothing was decided"), "{html}");
    }
    // The interaction is still open: the real form still works.
    let done = consent_in_browser(&w, redirect, PASSWORD, "approve").await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn grant_floods_are_refused_with_429() {
    let app = TestApp::spawn_with(Db::Sqlite, |s| {
        s.serve.grant_requests_per_minute = 6;
        s.serve.max_pending_interactions = 2;
        s.serve.idp_secret = Some(IDP_SECRET.into());
    })
    .await;
    let alice = app.create_wallet("alice", "USD", 2).await;
    let shop = app.signing_client("shop", 22).await;
    let grant_url = format!("{}/", app.auth);
    // Interactive grants waiting for a decision: two at most per client.
    let interactive = json!({
        "access_token": { "access": [{ "type": "outgoing-payment", "actions": ["create"], "identifier": alice }] },
        "client": shop.wallet_address,
        "interact": { "start": ["redirect"] }
    });
    for _ in 0..2 {
        let r = shop
            .send(Method::POST, &grant_url, None, Some(&interactive))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    let r = shop
        .send(Method::POST, &grant_url, None, Some(&interactive))
        .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "too_many_attempts");
    // Then the rate: the client's allowance (6) runs out.
    let quote = json!({
        "access_token": { "access": [{ "type": "quote", "actions": ["create"] }] },
        "client": shop.wallet_address
    });
    let mut refused = None;
    for n in 0..10 {
        let r = shop
            .send(Method::POST, &grant_url, None, Some(&quote))
            .await;
        if r.status == StatusCode::TOO_MANY_REQUESTS {
            refused = Some((n, r));
            break;
        }
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    let (n, r) = refused.expect("the flood is cut off");
    assert!(n <= 6, "refused after {n}");
    assert_eq!(r.body["error"]["code"], "too_many_attempts");
    assert!(r.headers.contains_key(reqwest::header::RETRY_AFTER));
}

#[tokio::test]
async fn the_consent_page_shows_the_client_host_and_marks_a_name_it_does_not_match() {
    let w = world(Db::Sqlite).await;
    let html = consent_page_of_named_client(&w, "brand", "My <Bank>", 23).await;
    // The name, escaped, with the host it is really at, and a warning:
    // "My Bank" does not appear in "127.0.0.1".
    assert!(
        html.contains("<span class=\"client-name\">My &#60;Bank&#62;</span> asks")
            && html.contains("It runs at <strong class=\"url\">127.0.0.1</strong>"),
        "{html}"
    );
    assert!(
        html.contains("is chosen by the application itself"),
        "{html}"
    );
    assert!(!html.contains("My <Bank>"), "{html}");
}

/// The consent page says who receives and what, and warns when the limit
/// is more than the wallet address holds.
#[tokio::test]
async fn the_consent_page_names_the_receiver_and_warns_about_the_balance() {
    let w = world(Db::Sqlite).await;
    w.app.deposit("alice", 500).await;
    let (s, v) = w
        .app
        .admin(
            Method::POST,
            "/wallet-addresses",
            Some(&json!({ "path": "bakery", "assetCode": "EUR", "assetScale": 2, "publicName": "Bob Bakery" })),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let bakery = w.app.url("bakery");
    let (s, ip) = w
        .app
        .post(
            &w.app.url("incoming-payments"),
            &json!({ "walletAddress": bakery, "incomingAmount": { "value": "1000", "assetCode": "EUR", "assetScale": 2 } }),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{ip}");
    let mut body = outgoing_grant(&w, Some(FINISH), "n");
    body["access_token"]["access"][0]["limits"]["receiver"] = ip["id"].clone();
    let grant = ask(&w, &body).await;
    let html = consent_html(&w, grant["interact"]["redirect"].as_str().unwrap()).await;
    for expected in [
        format!("The receiver is Bob Bakery ({bakery})."),
        "It asks for 10.00 EUR in its own currency.".to_owned(),
        "Your balance is $5.00: payments beyond it will fail until money is added.".to_owned(),
    ] {
        assert!(html.contains(&expected), "{expected}\n{html}");
    }
}

/// A wallet address without an owner password: the consent page says so,
/// instead of answering every password "Wrong password.", and decides
/// nothing.
#[tokio::test]
async fn a_wallet_without_an_owner_password_says_so_on_the_consent_page() {
    let w = world(Db::Sqlite).await;
    let dora = w.app.create_wallet("dora", "USD", 2).await;
    let mut body = outgoing_grant(&w, Some(FINISH), "n-dora");
    body["access_token"]["access"][0]["identifier"] = json!(dora);
    let pending = ask(&w, &body).await;
    let redirect = pending["interact"]["redirect"].as_str().unwrap();
    let form = open_consent(&w.browser, redirect).await;
    let answer = form
        .post(&w.browser, "any password at all", "approve")
        .await;
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    let html = answer.text().await.unwrap();
    assert!(
        html.contains(
            "This wallet address has no owner password yet: ask your wallet provider to set one."
        ) && !html.contains("Wrong password."),
        "{html}"
    );
    // Nothing was decided: the client still waits.
    let again = form.post(&w.browser, "another", "approve").await;
    assert_eq!(again.status(), StatusCode::FORBIDDEN);
}
