//! Password guessing on the consent page, bounded per wallet address
//! whatever the source and whichever node answers
//! (`opd_core::owner_login`), and the commonest passwords refused.

use std::net::Ipv4Addr;

use opd_core::owner_login::FAILURE_BUDGET;
use opd_testkit::app::{Db, TestApp};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::auth::{
    ask, consent_in_browser, open_consent, outgoing_grant, world, ConsentForm, World, FINISH,
    PASSWORD,
};

/// A browser at `203.0.113.n`, as the trusted proxy at 127.0.0.1 names
/// it (every loopback address is one client network).
fn browser_at(n: u8) -> reqwest::Client {
    crate::auth::forwarded_browser(Ipv4Addr::new(203, 0, 113, n))
}

/// Clients are told apart by the address the proxy at 127.0.0.1 names.
fn behind_a_proxy(s: &mut opd::config::Settings) {
    s.serve.trusted_proxies = vec!["127.0.0.1".into()];
}

/// Attackers at `203.0.113.n` for each `n` of `addresses`, each with a grant
/// of its own on alice's wallet address: the consent form of each, with its
/// browser.
async fn attackers(
    w: &World,
    addresses: std::ops::Range<u8>,
) -> Vec<(reqwest::Client, ConsentForm)> {
    let mut out = Vec::new();
    for n in addresses {
        let grant = ask(w, &outgoing_grant(w, Some(FINISH), &format!("a{n}"))).await;
        let redirect = grant["interact"]["redirect"].as_str().unwrap();
        let browser = browser_at(n);
        let form = open_consent(&browser, redirect).await;
        out.push((browser, form));
    }
    out
}

/// Sends `per_source` wrong guesses from each attacker at once (the last
/// form of each through `via`, if given: another node); the statuses.
async fn guess_all(
    forms: &[(reqwest::Client, ConsentForm)],
    per_source: usize,
    via: impl Fn(usize, &ConsentForm) -> ConsentForm,
) -> Vec<StatusCode> {
    let guesses = forms.iter().enumerate().flat_map(|(i, (browser, form))| {
        let form = via(i, form);
        (0..per_source).map(move |g| {
            let (browser, form) = (browser.clone(), form.clone());
            async move {
                let guess = format!("guess {i}-{g}");
                form.post(&browser, &guess, "approve").await.status()
            }
        })
    });
    futures_util::future::join_all(guesses).await
}

fn count(statuses: &[StatusCode], status: StatusCode) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

/// 40 addresses, each guessing 3 times at a grant of its own (120 guesses,
/// which the per-address lockouts all let through): the wallet address
/// allows its budget of checks, then pauses approval by password for
/// everyone, the owner included, with a message that says so; the pause
/// ends, and setting the password again lifts it at once.
#[tokio::test]
async fn guesses_from_forty_addresses_get_the_wallets_budget_of_checks() {
    let w = crate::auth::world_with(Db::Sqlite, behind_a_proxy).await;
    let forms = attackers(&w, 2..42).await;
    let statuses = guess_all(&forms, 3, |_, f| f.clone()).await;
    let budget = usize::try_from(FAILURE_BUDGET).unwrap();
    assert_eq!(
        (
            count(&statuses, StatusCode::UNAUTHORIZED),
            count(&statuses, StatusCode::TOO_MANY_REQUESTS)
        ),
        (budget, 120 - budget),
        "{statuses:?}"
    );

    // The owner, on a grant of their own, is paused too, and told why.
    let owner = ask(&w, &outgoing_grant(&w, Some(FINISH), "owner")).await;
    let redirect = owner["interact"]["redirect"].as_str().unwrap();
    let r = consent_in_browser(&w, redirect, PASSWORD, "approve").await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()[reqwest::header::RETRY_AFTER], "60");
    let html = r.text().await.unwrap();
    assert!(
        html.contains("Approval by password is paused for this wallet address")
            && html.contains("Try again in 1 minute,"),
        "{html}"
    );
    // The pause ends after a minute.
    w.app.clock.advance_millis(60_000);
    let r = consent_in_browser(&w, redirect, PASSWORD, "approve").await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);

    // Spent again by others (the owner's success started a fresh budget),
    // then lifted by the operator setting the password again.
    let more = attackers(&w, 50..62).await;
    let statuses = guess_all(&more, 1, |_, f| f.clone()).await;
    assert_eq!(
        count(&statuses, StatusCode::UNAUTHORIZED),
        budget,
        "{statuses:?}"
    );
    let again = ask(&w, &outgoing_grant(&w, Some(FINISH), "owner-2")).await;
    let redirect = again["interact"]["redirect"].as_str().unwrap();
    let r = consent_in_browser(&w, redirect, PASSWORD, "approve").await;
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    let (s, _) = set_password(&w.app, PASSWORD).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let r = consent_in_browser(&w, redirect, PASSWORD, "approve").await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
}

async fn set_password(app: &TestApp, password: &str) -> (StatusCode, serde_json::Value) {
    app.admin(
        Method::PUT,
        "/wallet-addresses/alice/owner-password",
        Some(&json!({ "password": password })),
    )
    .await
}

/// Two nodes on one PostgreSQL database, guesses from 8 addresses sent to
/// both at once: the budget holds across them.
#[tokio::test]
async fn two_nodes_share_the_wallets_budget() {
    let url = opd_testkit::pg::fresh_schema_url().await;
    let keys = tempfile::tempdir().unwrap();
    let key_file = keys.path().join("secrets-key");
    std::fs::write(&key_file, "22".repeat(32)).unwrap();
    let on_db = |s: &mut opd::config::Settings| {
        s.common.database_url = Some(url.clone().into());
        s.serve.migrate = true;
        s.serve.secrets_key_file = Some(key_file.clone());
        behind_a_proxy(s);
    };
    let w = crate::auth::world_with(Db::Postgres, on_db).await;
    let other = TestApp::spawn_node(Db::Postgres, on_db).await;
    let forms = attackers(&w, 2..10).await;
    // Every other form goes to the second node, at the same path.
    let statuses = guess_all(&forms, 3, |i, f| {
        let mut f = f.clone();
        if i % 2 == 1 {
            f.action = f.action.replace(&w.app.auth, &other.auth);
        }
        f
    })
    .await;
    let budget = usize::try_from(FAILURE_BUDGET).unwrap();
    assert_eq!(
        count(&statuses, StatusCode::UNAUTHORIZED),
        budget,
        "{statuses:?}"
    );
    assert_eq!(count(&statuses, StatusCode::TOO_MANY_REQUESTS), 24 - budget);
}

/// The commonest passwords are refused with the reason; nothing changes.
#[tokio::test]
async fn the_commonest_passwords_are_refused() {
    let w = world(Db::Sqlite).await;
    for weak in ["password12", "Qwerty123!", "12345678", "aaaaaaaa"] {
        let (s, body) = set_password(&w.app, weak).await;
        crate::assert_error(s, &body, 400, "invalid_request");
        let why = body["error"]["description"].as_str().unwrap();
        assert!(why.starts_with("password "), "{weak}: {why}");
    }
    let owner = ask(&w, &outgoing_grant(&w, Some(FINISH), "n")).await;
    let redirect = owner["interact"]["redirect"].as_str().unwrap();
    let r = consent_in_browser(&w, redirect, PASSWORD, "approve").await;
    assert_eq!(
        r.status(),
        StatusCode::SEE_OTHER,
        "the password is unchanged"
    );
}
