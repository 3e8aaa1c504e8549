//! `opd client pay` asks for grants that do not pile up on the servers:
//! the incoming-payment and quote grants are kept in the profile and
//! reused by the next payments (a kept token the server no longer takes
//! is replaced, once), and a payment that fails leaves none of its grants
//! usable but the kept ones. Counted in the server's own grant store, as
//! the dashboard lists them.

use std::io::{BufRead as _, Read as _};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use opd_client::profile::Profile;
use opd_testkit::app::{decide_interaction, TestApp};
use opd_testkit::proxy::ValidatingProxy;
use serde_json::Value;

use super::{client_command, node, shop_and_alice, stdout};
use crate::remote::balance;

/// How long a client process may take, consent included.
const DEADLINE: Duration = Duration::from_secs(120);

/// Runs `opd client --profile <profile> <args>` and answers the consent
/// page it prints as the owner would (approving when `approve`).
async fn with_owner(
    profile: &std::path::Path,
    proxy: &ValidatingProxy,
    args: &[&str],
    approve: bool,
) -> Output {
    let mut command = client_command(profile, proxy, args);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let (mut out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let (consent_tx, consent_rx) = tokio::sync::oneshot::channel();
    let stderr = std::thread::spawn(move || {
        let mut consent_tx = Some(consent_tx);
        let mut all = String::new();
        for line in std::io::BufReader::new(err).lines() {
            let line = line.unwrap();
            if line.contains("/interact/") {
                if let Some(tx) = consent_tx.take() {
                    let _ = tx.send(line.trim().to_owned());
                }
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let stdout = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        out.read_to_end(&mut bytes).unwrap();
        bytes
    });
    // No consent page when the command stops before it.
    if let Ok(Ok(url)) = tokio::time::timeout(DEADLINE, consent_rx).await {
        decide_interaction(&url, approve).await;
    }
    let status = tokio::task::spawn_blocking(move || {
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if started.elapsed() > DEADLINE {
                let _ = child.kill();
                panic!("opd client did not finish within {DEADLINE:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap();
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap().into_bytes(),
    }
}

/// One grant the server holds for a client.
#[derive(Debug)]
struct Held {
    /// The type of its (first) access item.
    kind: String,
    /// Pending, approved, or issued and not revoked: it or its token
    /// could still be used.
    usable: bool,
    id: opd_core::GrantId,
}

/// The grants `app` holds for the client `client`.
async fn held(app: &TestApp, client: &str) -> Vec<Held> {
    let all = opd_service::operator::grants(app.services(), None, None, 1000)
        .await
        .unwrap();
    all.into_iter()
        .filter(|g| g.client_wallet_address.as_deref() == Some(client))
        .map(|g| {
            let access: Value = serde_json::from_str(&g.access).unwrap();
            Held {
                kind: access[0]["type"].as_str().unwrap().to_owned(),
                usable: matches!(g.state.as_str(), "pending" | "approved")
                    || g.finalization.as_deref() == Some("issued"),
                id: g.id,
            }
        })
        .collect()
}

fn count(held: &[Held], kind: &str) -> usize {
    held.iter().filter(|h| h.kind == kind).count()
}

/// The ids of the grants the profile at `path` keeps.
async fn kept(app: &TestApp, path: &std::path::Path) -> Vec<opd_core::GrantId> {
    let (_, kept) = Profile::load_with_grants(path).unwrap();
    let mut ids = Vec::new();
    for g in kept {
        let uri = g.grant.expect("a kept grant says where to cancel it").uri;
        let continue_id = uri.rsplit('/').next().unwrap();
        let record = opd_store::GrantStore::get_grant_by_continue_id(
            app.services().store.as_ref(),
            continue_id,
        )
        .await
        .unwrap()
        .unwrap();
        ids.push(record.id);
    }
    ids
}

/// A profile file for `client`'s identity in a new directory.
fn profile_of(client: &opd_client::http::Client) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.json");
    client.profile.save_new(&path).unwrap();
    (dir, path)
}

/// Ten payments with one profile: one incoming-payment grant and one
/// quote grant, kept and reused, and one outgoing-payment grant each (its
/// consent and limits are that payment's): twelve grants, not thirty.
/// Then the kept quote grant is revoked on the dashboard: the next
/// payment is refused the kept token, gets a new grant and succeeds.
#[tokio::test]
async fn ten_payments_with_one_profile_reuse_their_grants() {
    let app = node("test.opd").await;
    let proxy = ValidatingProxy::start().await;
    let (client, alice) = shop_and_alice(&app, &proxy).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let (_dir, profile) = profile_of(&client);
    let shop = &client.profile.wallet_address;
    let pay = ["pay", &bob, "--from", &alice, "--amount", "1.00"];
    for _ in 0..10 {
        let paid = stdout(&with_owner(&profile, &proxy, &pay, true).await);
        assert!(paid.starts_with("Paid.\n"), "{paid}");
    }
    assert_eq!(balance(&app, "bob").await, "1000");
    let grants = held(&app, shop).await;
    assert_eq!(count(&grants, "outgoing-payment"), 10, "{grants:?}");
    assert_eq!(count(&grants, "quote"), 1, "{grants:?}");
    assert_eq!(count(&grants, "incoming-payment"), 1, "{grants:?}");
    assert_eq!(grants.len(), 12, "{grants:?}");
    // The profile keeps those two, privately: they hold tokens.
    let kept_ids = kept(&app, &profile).await;
    assert_eq!(kept_ids.len(), 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&profile).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    three_identical_creates_are_three(&profile, &proxy, &bob).await;
    let grants = held(&app, shop).await;
    assert_eq!(count(&grants, "incoming-payment"), 1, "{grants:?}");

    // The operator revokes the kept quote grant.
    let quote = grants.iter().find(|g| g.kind == "quote").unwrap();
    assert!(
        opd_service::grants::revoke_by_operator(app.services(), quote.id)
            .await
            .unwrap()
    );
    let paid = stdout(&with_owner(&profile, &proxy, &pay, true).await);
    assert!(paid.starts_with("Paid.\n"), "{paid}");
    let grants = held(&app, shop).await;
    assert_eq!(
        count(&grants, "quote"),
        2,
        "one new quote grant: {grants:?}"
    );
    assert_eq!(count(&grants, "incoming-payment"), 1, "{grants:?}");
    let kept_ids = kept(&app, &profile).await;
    assert_eq!(kept_ids.len(), 2);
    assert!(!kept_ids.contains(&quote.id));
    proxy.validate(
        &app.servers,
        &[
            "post-request",
            "post-continue",
            "post-token",
            "create-quote",
        ],
    );
}

/// `incoming-payment create` reuses the payments' grant too; the same
/// request three times at once is three incoming payments, not one
/// answered thrice (opd answers identical signed bytes as one request).
async fn three_identical_creates_are_three(
    profile: &std::path::Path,
    proxy: &ValidatingProxy,
    bob: &str,
) {
    let create = [
        "--json",
        "incoming-payment",
        "create",
        "--wallet-address",
        bob,
        "--amount",
        "2.00",
    ];
    let mut ids = Vec::new();
    for _ in 0..3 {
        let out = stdout(&super::opd_client(profile, proxy, &create).await);
        let ip: Value = serde_json::from_str(&out).unwrap();
        ids.push(ip["id"].as_str().unwrap().to_owned());
    }
    ids.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");
}

/// A payment that fails after its grants were asked for leaves none of
/// them usable but the two the profile keeps: not when nobody consents in
/// time (the pending grant), nor when the owner refuses, nor when the
/// sender's server refuses the payment after the consent (the issued
/// outgoing-payment grant).
#[tokio::test]
async fn a_failed_payment_leaves_no_usable_grant_but_the_kept_ones() {
    let app = node("test.opd").await;
    let proxy = ValidatingProxy::start().await;
    let (client, alice) = shop_and_alice(&app, &proxy).await;
    let bob = app.create_wallet("bob", "USD", 2).await;
    let (_dir, profile) = profile_of(&client);
    let failed = |o: &Output| {
        assert!(
            !o.status.success(),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        String::from_utf8_lossy(&o.stderr).into_owned()
    };

    let pay = ["pay", &bob, "--from", &alice, "--amount", "1.00"];
    let timeout = [&pay[..], &["--consent-wait-secs", "1"]].concat();
    let late = failed(&super::opd_client(&profile, &proxy, &timeout).await);
    assert!(
        late.contains("no answer from the consent page within 1 s"),
        "{late}"
    );
    let refused = failed(&with_owner(&profile, &proxy, &pay, false).await);
    assert!(refused.contains("not approved"), "{refused}");
    // alice has 100.00.
    let too_much = ["pay", &bob, "--from", &alice, "--amount", "500.00"];
    let poor = failed(&with_owner(&profile, &proxy, &too_much, true).await);
    assert!(poor.contains("insufficient_balance"), "{poor}");
    // None of the three said its grant could not be cancelled.
    for e in [&late, &refused, &poor] {
        assert!(!e.contains("could not be cancelled"), "{e}");
    }

    assert_eq!(balance(&app, "alice").await, "10000");
    let grants = held(&app, &client.profile.wallet_address).await;
    assert_eq!(count(&grants, "outgoing-payment"), 3, "{grants:?}");
    let kept_ids = kept(&app, &profile).await;
    let usable: Vec<_> = grants.iter().filter(|g| g.usable).collect();
    assert_eq!(usable.len(), 2, "{grants:?}");
    assert!(
        usable.iter().all(|g| kept_ids.contains(&g.id)),
        "{grants:?}"
    );
    proxy.validate(&app.servers, &["post-request", "delete-continue"]);
}
