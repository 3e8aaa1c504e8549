//! The store conformance suite: every case is written once and runs against
//! both SQLite and PostgreSQL.

#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_core::incoming_payment::IncomingPayment;
use opd_core::ledger::{AccountKind, LedgerOutcome, Receipts, TransferKind};
use opd_core::outgoing_payment::{
    CreateOutgoing, GrantReservation, GrantSpent, LocalDelivery,
    OutgoingPayment as OutgoingPaymentRecord, OutgoingPaymentState, PaymentFailure,
};
use opd_core::pagination::PageRequest;
use opd_core::peer::{Peer, PeerOrigin, PeerOutgoing};
use opd_core::quote::Quote;
use opd_core::wallet_address::{PublicKey, WalletAddress, WalletAddressKey, WalletAddressPath};
use opd_core::webhook::{EventKind, WebhookEvent};
use opd_core::{
    Amount, Asset, AssetCode, Fee, IncomingPaymentId, QuoteId, Rate, SeededRandom, Timestamp,
    WalletAddressId,
};
use opd_core::{GrantId, PeerId};
use opd_store::claim::{Answer, ClaimState, RequestClaim};
use opd_store::{
    AccessTokenRecord, AutoPeerOutcome, AutoPeeringLimits, Backend, CreditRounds, CreditTo,
    Delivered, Fact, GrantRecord, Store, StoreError,
};

opd_testkit::conformance!(
    settings_round_trip_and_first_value_wins,
    wallet_addresses_are_unique_by_path_and_deactivate_once,
    keys_are_listed_and_revoked,
    incoming_payments_round_trip_exact_amounts,
    incoming_payments_paginate_both_ways,
    incoming_payments_complete_once,
    key_only_incoming_payments_are_counted_by_key_network_and_total,
    quotes_round_trip,
    fees_and_rates_are_stored_exactly,
    grants_update_optimistically_and_issue_tokens,
    tokens_rotate_and_revoke_once,
    owner_passwords_are_replaced,
    owner_login_budgets_swap_only_from_what_was_read,
    deposits_are_idempotent_and_withdrawals_never_overdraw,
    outgoing_payments_fund_reserve_deliver_and_refund,
    webhook_events_are_claimed_once_until_their_lease_ends,
    signed_requests_are_claimed_once_and_answered,
    a_request_s_claim_commits_with_its_work_and_refuses_a_replay,
    a_created_payment_s_response_commits_with_it_rendered_from_the_grant_s_spending,
    auto_peers_are_counted_kept_apart_and_funded_within_the_total,
    outgoing_tokens_are_replaced_only_when_unchanged,
    held_receipts_settle_to_the_wallet_once_and_withdraw_once,
    payment_packets_settle_once_and_move_exactly_their_amounts,
    a_payment_funded_from_outside_pays_across_assets_and_gives_back_outside,
    a_grant_s_receive_limit_counts_what_its_payments_received_before,
    ilp_packets_arriving_together_are_credited_in_arrival_order,
    ilp_credits_never_land_after_their_packets_deadline,
    ended_holds_are_pruned_after_the_retention_and_pending_ones_never,
    spsp_credits_move_exactly_their_amounts_and_count_each_once,
    spsp_money_held_in_external_mode_is_withdrawn_once,
    spsp_reports_are_claimed_once_and_announce_what_arrived_since_the_last,
    a_credit_says_what_waits_to_be_withdrawn_and_where_the_peer_stands,
    a_balance_reaches_u64_max_exactly_and_never_passes_it,
);

const T0: i64 = 1_790_000_000_000;

fn usd() -> Asset {
    Asset::parse("USD", 2).unwrap()
}

fn wallet(path: &str, n: i64) -> WalletAddress {
    let r = SeededRandom::new(n as u64);
    WalletAddress {
        id: WalletAddressId::new(Timestamp::from_unix_millis(T0 + n), &r),
        tenant: opd_core::TenantId::operator(),
        path: WalletAddressPath::parse(path).unwrap(),
        asset: usd(),
        public_name: Some(format!("Wallet {path}")),
        created_at: Timestamp::from_unix_millis(T0 + n),
        deactivated_at: None,
    }
}

fn incoming(wallet: &WalletAddress, n: i64, client: Option<&str>) -> IncomingPayment {
    let r = SeededRandom::new(1000 + n as u64);
    let at = Timestamp::from_unix_millis(T0 + 1000 * n);
    IncomingPayment {
        id: IncomingPaymentId::new(at, &r),
        wallet_address_id: wallet.id,
        asset: wallet.asset.clone(),
        incoming_amount: Some(u64::MAX),
        received_amount: 0,
        completed: false,
        expires_at: at.plus_seconds(3600),
        metadata: Some(
            serde_json::json!({"n": n, "nested": {"ok": true}})
                .as_object()
                .unwrap()
                .clone(),
        ),
        client: client.map(str::to_owned),
        client_network: None,
        created_at: at,
        updated_at: at,
    }
}

async fn settings_round_trip_and_first_value_wins(s: &dyn Store) {
    assert_eq!(s.get_setting("k").await.unwrap(), None);
    s.set_setting("k", "v1").await.unwrap();
    s.set_setting("k", "v2").await.unwrap();
    assert_eq!(s.get_setting("k").await.unwrap().as_deref(), Some("v2"));
    assert_eq!(
        s.setting_or_insert("secret", "first").await.unwrap(),
        "first"
    );
    assert_eq!(
        s.setting_or_insert("secret", "second").await.unwrap(),
        "first"
    );
    s.ping().await.unwrap();
}

async fn wallet_addresses_are_unique_by_path_and_deactivate_once(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let mut dup = wallet("alice", 2);
    dup.public_name = None;
    assert!(matches!(
        s.create_wallet_address(&dup).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        s.get_wallet_address(alice.id).await.unwrap(),
        Some(alice.clone())
    );
    let by_path = s
        .get_wallet_address_by_path(
            &opd_core::TenantId::operator(),
            &WalletAddressPath::parse("ALICE").unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(by_path, Some(alice.clone()));
    let bob = wallet("accounts/bob", 3);
    s.create_wallet_address(&bob).await.unwrap();
    let all = s.list_wallet_addresses(None).await.unwrap();
    assert_eq!(
        all.iter().map(|w| w.path.as_str()).collect::<Vec<_>>(),
        ["accounts/bob", "alice"]
    );

    let t1 = Timestamp::from_unix_millis(T0 + 10);
    let t2 = Timestamp::from_unix_millis(T0 + 20);
    let d = s
        .deactivate_wallet_address(alice.id, t1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.deactivated_at, Some(t1));
    let d = s
        .deactivate_wallet_address(alice.id, t2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        d.deactivated_at,
        Some(t1),
        "a second deactivation keeps the first time"
    );
    let unknown = WalletAddressId::new(t1, &SeededRandom::new(99));
    assert_eq!(
        s.deactivate_wallet_address(unknown, t1).await.unwrap(),
        None
    );
}

async fn keys_are_listed_and_revoked(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let key = |kid: &str, n: i64| WalletAddressKey {
        wallet_address_id: alice.id,
        key: PublicKey {
            kid: kid.into(),
            x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo".into(),
        },
        created_at: Timestamp::from_unix_millis(T0 + n),
        revoked_at: None,
    };
    s.add_key(&key("k1", 1)).await.unwrap();
    s.add_key(&key("k2", 2)).await.unwrap();
    assert!(matches!(
        s.add_key(&key("k1", 3)).await,
        Err(StoreError::Conflict(_))
    ));
    let kids = |v: Vec<WalletAddressKey>| v.into_iter().map(|k| k.key.kid).collect::<Vec<_>>();
    assert_eq!(
        kids(s.list_keys(alice.id, false).await.unwrap()),
        ["k1", "k2"]
    );
    assert!(s
        .revoke_key(alice.id, "k1", Timestamp::from_unix_millis(T0 + 5))
        .await
        .unwrap());
    assert!(!s
        .revoke_key(alice.id, "k1", Timestamp::from_unix_millis(T0 + 6))
        .await
        .unwrap());
    assert!(!s
        .revoke_key(alice.id, "nope", Timestamp::from_unix_millis(T0 + 6))
        .await
        .unwrap());
    assert_eq!(kids(s.list_keys(alice.id, false).await.unwrap()), ["k2"]);
    let all = s.list_keys(alice.id, true).await.unwrap();
    assert_eq!(all[0].revoked_at, Some(Timestamp::from_unix_millis(T0 + 5)));
}

async fn incoming_payments_round_trip_exact_amounts(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let mut p = incoming(&alice, 1, Some("https://client.example/app"));
    p.received_amount = u64::MAX - 1;
    s.create_incoming_payment(&p, &[], None).await.unwrap();
    assert_eq!(s.get_incoming_payment(p.id).await.unwrap(), Some(p.clone()));
    let mut q = incoming(&alice, 2, None);
    q.incoming_amount = None;
    q.metadata = None;
    s.create_incoming_payment(&q, &[], None).await.unwrap();
    assert_eq!(s.get_incoming_payment(q.id).await.unwrap(), Some(q));
    assert!(matches!(
        s.create_incoming_payment(&p, &[], None).await,
        Err(StoreError::Conflict(_))
    ));
    let mut orphan = incoming(&alice, 3, None);
    orphan.wallet_address_id =
        WalletAddressId::new(Timestamp::from_unix_millis(T0), &SeededRandom::new(5));
    assert!(
        s.create_incoming_payment(&orphan, &[], None).await.is_err(),
        "foreign keys are enforced"
    );
}

/// The key-only quota's three counts: per key, per client network and in
/// total on one wallet address, since a time; other clients' payments and
/// other wallet addresses' are not counted.
async fn key_only_incoming_payments_are_counted_by_key_network_and_total(s: &dyn Store) {
    let alice = wallet("alice", 1);
    let bob = wallet("bob", 2);
    s.create_wallet_address(&alice).await.unwrap();
    s.create_wallet_address(&bob).await.unwrap();
    let made = [
        (&alice, 1, Some("jwk:a"), Some("203.0.113.7")),
        (&alice, 2, Some("jwk:a"), Some("203.0.113.7")),
        (&alice, 3, Some("jwk:b"), Some("2001:db8:1:2::/64")),
        (&alice, 4, Some("jwk:c"), Some("203.0.113.7")),
        (&alice, 5, Some("https://wallet.example/app"), None),
        (&bob, 6, Some("jwk:a"), Some("203.0.113.7")),
    ];
    for (w, n, client, network) in made {
        let mut p = incoming(w, n, client);
        p.client_network = network.map(str::to_owned);
        s.create_incoming_payment(&p, &[], None).await.unwrap();
        assert_eq!(s.get_incoming_payment(p.id).await.unwrap(), Some(p));
    }
    let since = Timestamp::from_unix_millis(T0);
    let from = |net: &'static str, since| s.key_only_incoming_payments_from(alice.id, net, since);
    assert_eq!(from("203.0.113.7", since).await.unwrap(), 3);
    assert_eq!(from("2001:db8:1:2::/64", since).await.unwrap(), 1);
    assert_eq!(from("loopback", since).await.unwrap(), 0);
    // Only those created since: payment n is created at T0 + n s.
    let later = Timestamp::from_unix_millis(T0 + 2000);
    assert_eq!(from("203.0.113.7", later).await.unwrap(), 2);
    let total = s.key_only_incoming_payments_since(alice.id, since).await;
    assert_eq!(total.unwrap(), 4);
    let by_key = s
        .incoming_payments_created_by(alice.id, "jwk:a", since)
        .await;
    assert_eq!(by_key.unwrap(), 2);
    // The retention pass forgets the networks (of payments 1 to 3 here),
    // not the payments.
    let cutoff = Timestamp::from_unix_millis(T0 + 3500);
    assert_eq!(s.prune_before(cutoff).await.unwrap().client_networks, 3);
    assert_eq!(from("203.0.113.7", since).await.unwrap(), 1);
    assert_eq!(from("2001:db8:1:2::/64", since).await.unwrap(), 0);
    let total = s.key_only_incoming_payments_since(alice.id, since).await;
    assert_eq!(total.unwrap(), 4);
}

async fn incoming_payments_paginate_both_ways(s: &dyn Store) {
    let alice = wallet("alice", 1);
    let bob = wallet("bob", 2);
    s.create_wallet_address(&alice).await.unwrap();
    s.create_wallet_address(&bob).await.unwrap();
    let mut ids = Vec::new();
    for n in 0..7 {
        let client = if n % 2 == 0 {
            Some("https://a.example")
        } else {
            Some("https://b.example")
        };
        let p = incoming(&alice, n, client);
        s.create_incoming_payment(&p, &[], None).await.unwrap();
        ids.push(p.id);
    }
    s.create_incoming_payment(&incoming(&bob, 100, None), &[], None)
        .await
        .unwrap();
    ids.reverse(); // newest first
    let page = |first: Option<&str>, last: Option<&str>, cursor: Option<String>| {
        PageRequest::parse(first, last, cursor.as_deref()).unwrap()
    };
    let got = |p: &opd_core::pagination::Page<IncomingPayment>| {
        p.items.iter().map(|i| i.id).collect::<Vec<_>>()
    };

    let p1 = s
        .list_incoming_payments(alice.id, None, &page(Some("3"), None, None))
        .await
        .unwrap();
    assert_eq!(got(&p1), ids[0..3]);
    assert!(p1.has_next_page && !p1.has_previous_page);
    let p2 = s
        .list_incoming_payments(
            alice.id,
            None,
            &page(Some("3"), None, Some(ids[2].to_string())),
        )
        .await
        .unwrap();
    assert_eq!(got(&p2), ids[3..6]);
    assert!(p2.has_next_page && p2.has_previous_page);
    let p3 = s
        .list_incoming_payments(
            alice.id,
            None,
            &page(Some("3"), None, Some(ids[5].to_string())),
        )
        .await
        .unwrap();
    assert_eq!(got(&p3), ids[6..7]);
    assert!(!p3.has_next_page && p3.has_previous_page);
    let back = s
        .list_incoming_payments(
            alice.id,
            None,
            &page(None, Some("2"), Some(ids[3].to_string())),
        )
        .await
        .unwrap();
    assert_eq!(got(&back), ids[1..3]);
    assert!(back.has_next_page && back.has_previous_page);
    let last = s
        .list_incoming_payments(alice.id, None, &page(None, Some("2"), None))
        .await
        .unwrap();
    assert_eq!(got(&last), ids[5..7]);
    assert!(!last.has_next_page && last.has_previous_page);

    let only_a = s
        .list_incoming_payments(alice.id, Some("https://a.example"), &page(None, None, None))
        .await
        .unwrap();
    assert_eq!(only_a.items.len(), 4);
    assert!(only_a
        .items
        .iter()
        .all(|p| p.client.as_deref() == Some("https://a.example")));
    let bobs = s
        .list_incoming_payments(bob.id, None, &page(None, None, None))
        .await
        .unwrap();
    assert_eq!(bobs.items.len(), 1);
}

async fn incoming_payments_complete_once(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let p = incoming(&alice, 1, None);
    s.create_incoming_payment(&p, &[], None).await.unwrap();
    let t = Timestamp::from_unix_millis(T0 + 99_000);
    let done = s
        .complete_incoming_payment(p.id, t, &[], None)
        .await
        .unwrap()
        .unwrap();
    assert!(done.completed);
    assert_eq!(done.updated_at, t);
    let again = s
        .complete_incoming_payment(p.id, t.plus_seconds(5), &[], None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.updated_at, t, "completing twice changes nothing");
    let missing = IncomingPaymentId::new(t, &SeededRandom::new(3));
    assert_eq!(
        s.complete_incoming_payment(missing, t, &[], None)
            .await
            .unwrap(),
        None
    );
}

async fn quotes_round_trip(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 5);
    let q = Quote {
        id: QuoteId::new(at, &SeededRandom::new(8)),
        wallet_address_id: alice.id,
        receiver: "http://localhost:8080/incoming-payments/0190a1b2-0000-7000-8000-000000000000"
            .into(),
        debit_amount: Amount::new(u64::MAX, usd()),
        receive_amount: Amount::new(12_345, Asset::parse("EUR", 255).unwrap()),
        fee: 170,
        debit_minus_fees: u64::MAX - 170,
        client: Some("https://client.example".into()),
        created_at: at,
        expires_at: at.plus_seconds(300),
    };
    s.create_quote(&q, None).await.unwrap();
    assert_eq!(s.get_quote(q.id).await.unwrap(), Some(q.clone()));
    assert_eq!(
        s.get_quote(QuoteId::new(at, &SeededRandom::new(9)))
            .await
            .unwrap(),
        None
    );
    // The newest unexpired quote to a receiver: a newer one to the same
    // receiver wins, one to another receiver or expired does not count.
    let newer = Quote {
        id: QuoteId::new(at.plus_seconds(1), &SeededRandom::new(10)),
        receive_amount: Amount::new(999, Asset::parse("EUR", 2).unwrap()),
        created_at: at.plus_seconds(1),
        expires_at: at.plus_seconds(60),
        ..q.clone()
    };
    s.create_quote(&newer, None).await.unwrap();
    let elsewhere = Quote {
        id: QuoteId::new(at.plus_seconds(2), &SeededRandom::new(11)),
        receiver: "http://localhost:8080/incoming-payments/other".into(),
        created_at: at.plus_seconds(2),
        ..q.clone()
    };
    s.create_quote(&elsewhere, None).await.unwrap();
    let latest = |now| s.latest_quote_to(alice.id, &q.receiver, now);
    assert_eq!(
        latest(at.plus_seconds(3)).await.unwrap(),
        Some(newer.clone())
    );
    assert_eq!(
        latest(at.plus_seconds(61)).await.unwrap(),
        Some(q.clone()),
        "the newer one expired"
    );
    assert_eq!(
        latest(at.plus_seconds(301)).await.unwrap(),
        None,
        "both expired"
    );
    let bob = wallet("bob", 2);
    s.create_wallet_address(&bob).await.unwrap();
    assert_eq!(
        s.latest_quote_to(bob.id, &q.receiver, at).await.unwrap(),
        None,
        "another wallet address's quotes"
    );
}

async fn fees_and_rates_are_stored_exactly(s: &dyn Store) {
    let at = Timestamp::from_unix_millis(T0);
    s.set_fee(
        &opd_core::TenantId::operator(),
        &usd(),
        Fee::new(u64::MAX, 250).unwrap(),
        at,
    )
    .await
    .unwrap();
    s.set_fee(
        &opd_core::TenantId::operator(),
        &usd(),
        Fee::new(150, 200).unwrap(),
        at.plus_seconds(1),
    )
    .await
    .unwrap();
    let fees = s.list_fees().await.unwrap();
    assert_eq!(fees.len(), 1);
    assert_eq!(fees[0].fee, Fee::new(150, 200).unwrap());
    assert!(s
        .delete_fee(&opd_core::TenantId::operator(), &usd())
        .await
        .unwrap());
    assert!(!s
        .delete_fee(&opd_core::TenantId::operator(), &usd())
        .await
        .unwrap());

    let code = |c: &str| AssetCode::parse(c).unwrap();
    s.set_rates(
        &code("USD"),
        &[(code("EUR"), Rate::parse("0.91").unwrap())],
        at,
    )
    .await
    .unwrap();
    s.set_rates(
        &code("USD"),
        &[
            (code("EUR"), Rate::parse("0.9123456789012345678").unwrap()),
            (code("JPY"), Rate::parse("151.2").unwrap()),
        ],
        at,
    )
    .await
    .unwrap();
    let rates = s.list_rates().await.unwrap();
    assert_eq!(rates.len(), 2);
    assert_eq!(rates[0].rate.to_string(), "0.9123456789012345678");
    assert_eq!(rates[1].counter, code("JPY"));
    // One rate set or removed, the base's others kept.
    let gbp = Some(Rate::parse("0.8").unwrap());
    assert!(s
        .set_rate(&code("USD"), &code("GBP"), gbp, at)
        .await
        .unwrap());
    let eur = Some(Rate::parse("0.95").unwrap());
    assert!(s
        .set_rate(&code("USD"), &code("EUR"), eur, at)
        .await
        .unwrap());
    assert!(s
        .set_rate(&code("USD"), &code("JPY"), None, at)
        .await
        .unwrap());
    assert!(!s
        .set_rate(&code("USD"), &code("JPY"), None, at)
        .await
        .unwrap());
    let rates: Vec<_> = s
        .list_rates()
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.counter.to_string(), r.rate.to_string()))
        .collect();
    assert_eq!(
        rates,
        [("EUR".into(), "0.95".into()), ("GBP".into(), "0.8".into())]
    );
}

fn grant(wallet: Option<&WalletAddress>, n: u64) -> GrantRecord {
    let at = Timestamp::from_unix_millis(T0);
    GrantRecord {
        id: GrantId::new(at, &SeededRandom::new(500 + n)),
        tenant: opd_core::TenantId::operator(),
        state: "pending".into(),
        finalization: None,
        client_wallet_address: Some("https://client.example/app".into()),
        client_jwk: None,
        access: r#"[{"type":"outgoing-payment","actions":["create"]}]"#.into(),
        continue_id: format!("continue-{n}"),
        continue_token_digest: format!("digest-{n}"),
        interact_id: Some(format!("interact-{n}")),
        interact_nonce: Some("nonce".into()),
        interact_ref: None,
        interaction_state: Some("pending".into()),
        interaction_expires_at: Some(at.plus_seconds(600)),
        finish_uri: Some("https://client.example/finish".into()),
        client_nonce: Some("client-nonce".into()),
        wallet_address_id: wallet.map(|w| w.id),
        last_continued_at: at,
        version: 0,
        created_at: at,
        updated_at: at,
    }
}

fn token(grant: &GrantRecord, n: u64) -> AccessTokenRecord {
    let at = Timestamp::from_unix_millis(T0);
    AccessTokenRecord {
        digest: format!("token-digest-{n}"),
        management_id: format!("manage-{n}"),
        grant_id: grant.id,
        access: grant.access.clone(),
        expires_at: at.plus_seconds(600),
        revoked_at: None,
        created_at: at,
    }
}

async fn grants_update_optimistically_and_issue_tokens(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let g = grant(Some(&alice), 1);
    s.create_grant(&g, None, None).await.unwrap();
    assert_eq!(s.get_grant(g.id).await.unwrap(), Some(g.clone()));
    assert_eq!(
        s.get_grant_by_continue_id("continue-1").await.unwrap(),
        Some(g.clone())
    );
    assert_eq!(
        s.get_grant_by_interaction("interact-1").await.unwrap(),
        Some(g.clone())
    );
    assert_eq!(s.get_grant_by_continue_id("nope").await.unwrap(), None);

    let mut approved = g.clone();
    approved.state = "approved".into();
    approved.interaction_state = Some("approved".into());
    approved.interact_ref = Some("ref".into());
    approved.updated_at = g.updated_at.plus_seconds(1);
    assert!(s.update_grant(&approved, None, None).await.unwrap());
    let stored = s.get_grant(g.id).await.unwrap().unwrap();
    assert_eq!(stored.version, 1);
    assert_eq!(stored.interact_ref.as_deref(), Some("ref"));
    // A second writer that read version 0 loses, and its token is not stored.
    let mut stale = g.clone();
    stale.state = "finalized".into();
    assert!(!s
        .update_grant(&stale, Some(&token(&g, 9)), None)
        .await
        .unwrap());
    assert_eq!(s.get_access_token("token-digest-9").await.unwrap(), None);
    let mut issued = stored.clone();
    issued.state = "finalized".into();
    issued.finalization = Some("issued".into());
    assert!(s
        .update_grant(&issued, Some(&token(&g, 1)), None)
        .await
        .unwrap());
    assert_eq!(
        s.get_access_token("token-digest-1")
            .await
            .unwrap()
            .unwrap()
            .grant_id,
        g.id
    );

    let other = grant(None, 2);
    s.create_grant(&other, Some(&token(&other, 2)), None)
        .await
        .unwrap();
    assert_eq!(
        s.get_access_token_by_management_id("manage-2")
            .await
            .unwrap()
            .unwrap()
            .grant_id,
        other.id
    );
    assert!(matches!(
        s.create_grant(&grant(None, 2), None, None).await,
        Err(StoreError::Conflict(_))
    ));
}

async fn tokens_rotate_and_revoke_once(s: &dyn Store) {
    let g = grant(None, 3);
    s.create_grant(&g, Some(&token(&g, 3)), None).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 10);
    assert!(s
        .rotate_access_token("manage-3", &token(&g, 4), at, None)
        .await
        .unwrap());
    assert_eq!(
        s.get_access_token("token-digest-3")
            .await
            .unwrap()
            .unwrap()
            .revoked_at,
        Some(at)
    );
    assert!(
        !s.rotate_access_token("manage-3", &token(&g, 5), at, None)
            .await
            .unwrap(),
        "a rotated-away token cannot rotate"
    );
    assert_eq!(s.get_access_token("token-digest-5").await.unwrap(), None);
    assert!(s.revoke_access_token("manage-4", at, None).await.unwrap());
    assert!(!s.revoke_access_token("manage-4", at, None).await.unwrap());

    let h = grant(None, 6);
    s.create_grant(&h, Some(&token(&h, 6)), None).await.unwrap();
    assert!(s.revoke_grant(h.id, at, None).await.unwrap());
    assert!(!s.revoke_grant(h.id, at, None).await.unwrap());
    let revoked = s.get_grant(h.id).await.unwrap().unwrap();
    assert_eq!(
        (revoked.state.as_str(), revoked.finalization.as_deref()),
        ("finalized", Some("revoked"))
    );
    assert!(s
        .get_access_token("token-digest-6")
        .await
        .unwrap()
        .unwrap()
        .revoked_at
        .is_some());
}

async fn owner_passwords_are_replaced(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    assert_eq!(s.get_owner_password(alice.id).await.unwrap(), None);
    let at = Timestamp::from_unix_millis(T0);
    s.set_owner_password(alice.id, "hash-1", at).await.unwrap();
    s.set_owner_password(alice.id, "hash-2", at).await.unwrap();
    assert_eq!(
        s.get_owner_password(alice.id).await.unwrap().as_deref(),
        Some("hash-2")
    );
}

/// The owner login's budget changes only from what the changer read, so
/// that concurrent attempts (on any node) are each counted once; setting
/// the password gives a fresh budget.
async fn owner_login_budgets_swap_only_from_what_was_read(s: &dyn Store) {
    use opd_core::owner_login::{Attempt, LoginBudget};
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    assert_eq!(s.owner_login_budget(alice.id).await.unwrap(), None);
    let at = Timestamp::from_unix_millis(T0);
    s.set_owner_password(alice.id, "hash-1", at).await.unwrap();
    let read = s.owner_login_budget(alice.id).await.unwrap().unwrap();
    assert_eq!(read, LoginBudget::default());
    let mut counted = 0;
    // Ten attempts that all read the same budget: one is counted.
    for _ in 0..10 {
        let Attempt::Check { next } = read.attempt(at) else {
            panic!("not paused");
        };
        counted += u32::from(
            s.swap_owner_login_budget(alice.id, &read, &next)
                .await
                .unwrap(),
        );
    }
    assert_eq!(counted, 1);
    let paused = LoginBudget {
        attempts: 0,
        pauses: 3,
        paused_until: at.plus_millis(i64::MAX / 4),
    };
    let now = s.owner_login_budget(alice.id).await.unwrap().unwrap();
    assert_eq!(now.attempts, 1);
    assert!(s
        .swap_owner_login_budget(alice.id, &now, &paused)
        .await
        .unwrap());
    assert_eq!(s.owner_login_budget(alice.id).await.unwrap(), Some(paused));
    s.set_owner_password(alice.id, "hash-2", at).await.unwrap();
    assert_eq!(
        s.owner_login_budget(alice.id).await.unwrap(),
        Some(LoginBudget::default())
    );
}

/// Every asset's balances sum to zero, and every balance is what its
/// transfers say.
async fn assert_ledger_balanced(s: &dyn Store) {
    let accounts = s.ledger_accounts().await.unwrap();
    let transfers = s.ledger_all_transfers().await.unwrap();
    let mut per_asset = std::collections::HashMap::<String, i128>::new();
    for a in &accounts {
        *per_asset.entry(a.asset.to_string()).or_default() += a.balance;
        let net: i128 = transfers
            .iter()
            .map(|t| {
                let v = i128::from(t.amount);
                if t.credit_account == a.id {
                    v
                } else if t.debit_account == a.id {
                    -v
                } else {
                    0
                }
            })
            .sum();
        assert_eq!(net, a.balance, "{}", a.id);
        if a.kind != AccountKind::Settlement {
            assert!(a.balance >= 0, "{}", a.id);
        }
    }
    assert!(per_asset.values().all(|v| *v == 0), "{per_asset:?}");
}

async fn deposits_are_idempotent_and_withdrawals_never_overdraw(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let at = Timestamp::from_unix_millis(T0);
    let first = s
        .ledger_move(alice.id, &usd(), 1000, true, "k1", "d1", at)
        .await
        .unwrap();
    let LedgerOutcome::Posted(t) = first else {
        panic!("{first:?}")
    };
    assert_eq!(
        s.ledger_move(alice.id, &usd(), 1000, true, "k1", "d1", at)
            .await
            .unwrap(),
        LedgerOutcome::Repeated(t)
    );
    assert_eq!(
        s.ledger_move(alice.id, &usd(), 5, true, "k1", "d2", at)
            .await
            .unwrap(),
        LedgerOutcome::KeyReused
    );
    assert_eq!(
        s.ledger_move(alice.id, &usd(), 1001, false, "k2", "d3", at)
            .await
            .unwrap(),
        LedgerOutcome::InsufficientBalance { available: 1000 }
    );
    assert!(matches!(
        s.ledger_move(alice.id, &usd(), 400, false, "k3", "d4", at)
            .await
            .unwrap(),
        LedgerOutcome::Posted(_)
    ));
    let wallet_account = AccountKind::Wallet.account_id(&alice.id.to_string(), &usd());
    let balance = s
        .ledger_accounts()
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.id == wallet_account)
        .unwrap()
        .balance;
    assert_eq!(balance, 600);
    assert_eq!(
        s.ledger_transfers_of(&wallet_account, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    assert_ledger_balanced(s).await;
}

/// A quote of wallet address `wallet` made at `at` (its id from seed
/// `n`): `debit` with `fee` included, to receive `receive`, valid for five
/// minutes.
fn quote_of(
    wallet: WalletAddressId,
    n: u64,
    at: Timestamp,
    debit: Amount,
    receive: Amount,
    fee: u64,
) -> Quote {
    Quote {
        id: QuoteId::new(at, &SeededRandom::new(n)),
        wallet_address_id: wallet,
        receiver: "http://localhost/incoming-payments/x".into(),
        debit_minus_fees: debit.value - fee,
        debit_amount: debit,
        receive_amount: receive,
        fee,
        client: None,
        created_at: at,
        expires_at: at.plus_seconds(300),
    }
}

/// The reservation of the grant `grant-1`, debiting at most `limit` over
/// its life.
fn grant_1_up_to(limit: u64) -> GrantReservation {
    GrantReservation {
        grant_id: "grant-1".into(),
        interval_start: Timestamp::from_unix_millis(0),
        interval_end: None,
        debit_limit: Some(limit),
        receive_limit: None,
    }
}

/// A payment sending on quote `q`, under the grant `grant-1`.
fn under_grant_1(q: &Quote) -> OutgoingPaymentRecord {
    OutgoingPaymentRecord {
        id: opd_core::OutgoingPaymentId::from_uuid(*q.id.as_uuid()),
        wallet_address_id: q.wallet_address_id,
        quote_id: q.id,
        receiver: q.receiver.clone(),
        debit: q.debit_amount.clone(),
        receive: q.receive_amount.clone(),
        sent: 0,
        delivered: 0,
        receiver_baseline: None,
        state: OutgoingPaymentState::Sending,
        error: None,
        metadata: None,
        client: Some("c".into()),
        grant_id: Some("grant-1".into()),
        grant_interval_start: Some(Timestamp::from_unix_millis(0)),
        attempts: 0,
        next_attempt_at: q.created_at,
        created_at: q.created_at,
        updated_at: q.created_at,
    }
}

async fn outgoing_payments_fund_reserve_deliver_and_refund(s: &dyn Store) {
    let alice = wallet("alice", 1);
    let bob = wallet("bob", 2);
    s.create_wallet_address(&alice).await.unwrap();
    s.create_wallet_address(&bob).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 10);
    s.ledger_move(alice.id, &usd(), 1000, true, "fund-alice", "d", at)
        .await
        .unwrap();
    let mut receiver = incoming(&bob, 1, None);
    receiver.incoming_amount = Some(500);
    s.create_incoming_payment(&receiver, &[], None)
        .await
        .unwrap();
    let quote = |n: u64| {
        quote_of(
            alice.id,
            900 + n,
            at,
            Amount::new(300, usd()),
            Amount::new(290, usd()),
            10,
        )
    };
    let payment = under_grant_1;
    let grant = grant_1_up_to(700);
    let q1 = quote(1);
    s.create_quote(&q1, None).await.unwrap();
    let created = s
        .create_outgoing_payment(&payment(&q1), Some(&grant), &[], None)
        .await
        .unwrap();
    assert!(
        matches!(created, CreateOutgoing::Created { .. }),
        "{created:?}"
    );
    assert_eq!(
        s.create_outgoing_payment(&payment(&q1), Some(&grant), &[], None)
            .await
            .unwrap(),
        CreateOutgoing::QuoteUsed
    );
    let q2 = quote(2);
    s.create_quote(&q2, None).await.unwrap();
    assert!(matches!(
        s.create_outgoing_payment(&payment(&q2), Some(&grant), &[], None)
            .await
            .unwrap(),
        CreateOutgoing::Created { .. }
    ));
    let q3 = quote(3);
    s.create_quote(&q3, None).await.unwrap();
    // 600 reserved of the 700 limit: a third 300 is over.
    assert!(matches!(
        s.create_outgoing_payment(&payment(&q3), Some(&grant), &[], None)
            .await
            .unwrap(),
        CreateOutgoing::LimitExceeded { .. }
    ));
    // Without the grant, the balance (1000 - 600) is the limit.
    let mut big = payment(&q3);
    big.debit = Amount::new(500, usd());
    big.grant_id = None;
    assert_eq!(
        s.create_outgoing_payment(&big, None, &[], None)
            .await
            .unwrap(),
        CreateOutgoing::InsufficientBalance { available: 400 }
    );
    assert_eq!(
        s.get_outgoing_payment(big.id).await.unwrap(),
        None,
        "nothing stored"
    );

    let claimed = s
        .claim_due_outgoing_payment(at, 30_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.attempts, 1);
    let delivery = LocalDelivery {
        payment: claimed.id,
        incoming: receiver.id,
        receiver: receiver.clone(),
        receipts: Receipts::ToWallet,
        sender_asset: usd(),
        receiver_asset: usd(),
        send: 290,
        fee: 10,
        deliver: 290,
        at,
        events: vec![],
    };
    // Read before each write too: a store that caches reads must drop them.
    let sending = s.get_outgoing_payment(claimed.id).await.unwrap().unwrap();
    assert_eq!((sending.state.as_str(), sending.sent), ("sending", 0));
    assert_eq!(
        deliver_now(s, &delivery).await,
        Delivered::Done { completes: false }
    );
    assert_eq!(
        deliver_now(s, &delivery).await,
        Delivered::Changed,
        "delivered once"
    );
    let done = s.get_outgoing_payment(claimed.id).await.unwrap().unwrap();
    assert_eq!((done.state.as_str(), done.sent), ("completed", 290));
    assert_eq!(
        s.get_incoming_payment(receiver.id)
            .await
            .unwrap()
            .unwrap()
            .received_amount,
        290
    );
    // A delivery planned against the receiver as it was (nothing received;
    // it holds 290 now) changes nothing.
    let other = s
        .claim_due_outgoing_payment(at, 30_000)
        .await
        .unwrap()
        .unwrap();
    let stale = LocalDelivery {
        payment: other.id,
        ..delivery.clone()
    };
    assert_eq!(deliver_now(s, &stale).await, Delivered::Changed);
    assert_eq!(
        s.get_outgoing_payment(other.id)
            .await
            .unwrap()
            .unwrap()
            .state,
        OutgoingPaymentState::Sending
    );
    let failure = PaymentFailure {
        payment: other.id,
        state: OutgoingPaymentState::Failed,
        reason: "test".into(),
        at,
        events: vec![],
    };
    assert!(s.fail_outgoing_payment(&failure).await.unwrap());
    assert!(!s.fail_outgoing_payment(&failure).await.unwrap());
    let failed = s.get_outgoing_payment(other.id).await.unwrap().unwrap();
    assert_eq!(failed.state, OutgoingPaymentState::Failed);
    // A payment no longer sending delivers nothing, even to a receiver
    // that would take it.
    let mut open = incoming(&bob, 9, None);
    open.incoming_amount = None;
    s.create_incoming_payment(&open, &[], None).await.unwrap();
    let late = LocalDelivery {
        incoming: open.id,
        receiver: open.clone(),
        ..stale.clone()
    };
    assert_eq!(deliver_now(s, &late).await, Delivered::Changed);
    let untouched = s.get_incoming_payment(open.id).await.unwrap().unwrap();
    assert_eq!(untouched.received_amount, 0);
    let spent = s
        .grant_spent("grant-1", Timestamp::from_unix_millis(0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        spent.debit.unwrap().value,
        300,
        "the failed payment's reservation was released"
    );
    assert_ledger_balanced(s).await;
    let alice_account = AccountKind::Wallet.account_id(&alice.id.to_string(), &usd());
    let balance = s
        .ledger_accounts()
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.id == alice_account)
        .unwrap()
        .balance;
    assert_eq!(
        balance, 700,
        "1000 - 300 delivered; the failed 300 came back"
    );
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &bob.id.to_string()).await,
        290,
        "bob has what his incoming payment received"
    );
    assert_eq!(
        balance_of(s, AccountKind::Incoming, &receiver.id.to_string()).await,
        0,
        "nothing waits on the incoming payment"
    );
}

async fn balance_of(s: &dyn Store, kind: AccountKind, owner: &str) -> i128 {
    let id = kind.account_id(owner, &usd());
    s.ledger_accounts()
        .await
        .unwrap()
        .into_iter()
        .find(|a| a.id == id)
        .map_or(0, |a| a.balance)
}

/// Delivers `amount` to `receiver` (expected to have received `before`)
/// with a fresh outgoing payment from `payer`.
async fn deliver(
    s: &dyn Store,
    payer: &WalletAddress,
    receiver: &IncomingPayment,
    before: u64,
    amount: u64,
    receipts: Receipts,
    n: u64,
) {
    let at = Timestamp::from_unix_millis(T0 + 10);
    let q = quote_of(
        payer.id,
        5000 + n,
        at,
        Amount::new(amount, usd()),
        Amount::new(amount, usd()),
        0,
    );
    s.create_quote(&q, None).await.unwrap();
    let p = OutgoingPaymentRecord {
        id: opd_core::OutgoingPaymentId::from_uuid(*q.id.as_uuid()),
        wallet_address_id: payer.id,
        quote_id: q.id,
        receiver: q.receiver.clone(),
        debit: q.debit_amount.clone(),
        receive: q.receive_amount.clone(),
        sent: 0,
        delivered: 0,
        receiver_baseline: None,
        state: OutgoingPaymentState::Sending,
        error: None,
        metadata: None,
        client: None,
        grant_id: None,
        grant_interval_start: None,
        attempts: 0,
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
    };
    let created = s
        .create_outgoing_payment(&p, None, &[], None)
        .await
        .unwrap();
    assert!(
        matches!(created, CreateOutgoing::Created { .. }),
        "{created:?}"
    );
    let d = LocalDelivery {
        payment: p.id,
        incoming: receiver.id,
        receiver: IncomingPayment {
            received_amount: before,
            ..receiver.clone()
        },
        receipts,
        sender_asset: usd(),
        receiver_asset: usd(),
        send: amount,
        fee: 0,
        deliver: amount,
        at,
        events: vec![],
    };
    assert!(matches!(deliver_now(s, &d).await, Delivered::Done { .. }));
    let after = s.get_incoming_payment(receiver.id).await.unwrap().unwrap();
    assert_eq!(after.received_amount, before + amount);
}

/// Delivers locally and commits with the events of the facts.
async fn deliver_now(s: &dyn Store, d: &LocalDelivery) -> Delivered {
    let delivered = s.deliver_locally(d).await.unwrap();
    let events = render(delivered.facts());
    delivered.commit(&events).await.unwrap()
}

/// Money held on incoming payments (external mode, or left there by a
/// release before received money went to wallets) moves to the wallet
/// address once, however often the start-up job runs; in external mode
/// the operator's withdrawal takes it once per key.
async fn held_receipts_settle_to_the_wallet_once_and_withdraw_once(s: &dyn Store) {
    let alice = wallet("alice", 1);
    let bob = wallet("bob", 2);
    s.create_wallet_address(&alice).await.unwrap();
    s.create_wallet_address(&bob).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 10);
    s.ledger_move(alice.id, &usd(), 10_000, true, "fund-alice", "d", at)
        .await
        .unwrap();
    let first = incoming(&bob, 1, None);
    let second = incoming(&bob, 2, None);
    s.create_incoming_payment(&first, &[], None).await.unwrap();
    s.create_incoming_payment(&second, &[], None).await.unwrap();
    // The old way: the money stays on the incoming payments' accounts.
    deliver(s, &alice, &first, 0, 120, Receipts::Held, 1).await;
    deliver(s, &alice, &first, 120, 3, Receipts::Held, 2).await;
    deliver(s, &alice, &second, 0, 1000, Receipts::Held, 3).await;
    assert_ledger_balanced(s).await;
    assert_eq!(
        balance_of(s, AccountKind::Incoming, &first.id.to_string()).await,
        123
    );
    assert_eq!(s.unwithdrawn(first.id).await.unwrap(), 123);
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &bob.id.to_string()).await,
        0
    );

    // External mode: the operator withdraws the second payment's money.
    let id = second.id.to_string();
    let out = s
        .withdraw_received(second.id, "w1", &id, at)
        .await
        .unwrap()
        .unwrap();
    let LedgerOutcome::Posted(t) = out else {
        panic!("{out:?}")
    };
    assert_eq!((t.amount, t.kind), (1000, TransferKind::Withdrawal));
    let again = s
        .withdraw_received(second.id, "w1", &id, at)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        again,
        LedgerOutcome::Repeated(t.clone()),
        "the first answer"
    );
    let other = s
        .withdraw_received(first.id, "w1", &first.id.to_string(), at)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other, LedgerOutcome::KeyReused);
    assert_eq!(s.unwithdrawn(second.id).await.unwrap(), 0);
    let LedgerOutcome::Posted(none) = s
        .withdraw_received(second.id, "w2", &id, at)
        .await
        .unwrap()
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(none.amount, 0, "nothing left to withdraw");
    let unknown = IncomingPaymentId::new(at, &SeededRandom::new(77));
    assert_eq!(
        s.withdraw_received(unknown, "w3", "x", at).await.unwrap(),
        None
    );

    // Balance mode's start-up job: the first payment's 123 to bob, once.
    assert_eq!(s.settle_received(at).await.unwrap(), 1);
    assert_eq!(
        s.settle_received(at).await.unwrap(),
        0,
        "nothing moves twice"
    );
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &bob.id.to_string()).await,
        123
    );
    assert_eq!(
        balance_of(s, AccountKind::Incoming, &first.id.to_string()).await,
        0
    );
    assert_eq!(
        s.get_incoming_payment(first.id)
            .await
            .unwrap()
            .unwrap()
            .received_amount,
        123,
        "receivedAmount still counts what it received"
    );
    assert_ledger_balanced(s).await;
}

fn outbox_event(n: i64) -> WebhookEvent {
    WebhookEvent {
        id: format!("event-{n:03}"),
        tenant: opd_core::TenantId::operator(),
        kind: EventKind::IncomingPaymentCreated,
        data: format!("{{\"n\":{n}}}"),
        attempts: 0,
        next_attempt_at: Timestamp::from_unix_millis(T0),
        delivered_at: None,
        created_at: Timestamp::from_unix_millis(T0 + n),
    }
}

async fn webhook_events_are_claimed_once_until_their_lease_ends(s: &dyn Store) {
    let events: Vec<WebhookEvent> = (0..5).map(outbox_event).collect();
    s.insert_webhook_events(&events).await.unwrap();
    let now = Timestamp::from_unix_millis(T0 + 1_000);
    let first = s.claim_webhook_events(now, 60_000, 3).await.unwrap();
    let second = s.claim_webhook_events(now, 60_000, 3).await.unwrap();
    let third = s.claim_webhook_events(now, 60_000, 3).await.unwrap();
    let ids = |v: &[WebhookEvent]| v.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&first), ["event-000", "event-001", "event-002"]);
    assert_eq!(ids(&second), ["event-003", "event-004"]);
    assert!(third.is_empty(), "claimed twice: {third:?}");
    // Delivered ones never come back; the others do when the lease ends.
    s.webhook_attempted("event-000", Some(now), now, None)
        .await
        .unwrap();
    let later = Timestamp::from_unix_millis(T0 + 61_001);
    let again = s.claim_webhook_events(later, 60_000, 10).await.unwrap();
    assert_eq!(
        ids(&again),
        ["event-001", "event-002", "event-003", "event-004"]
    );
}

async fn signed_requests_are_claimed_once_and_answered(s: &dyn Store) {
    let now = 1_790_000_000;
    assert!(s.claim_request("fp-1", now + 300, now).await.unwrap());
    assert!(!s.claim_request("fp-1", now + 300, now).await.unwrap());
    let running = s.get_request("fp-1", now).await.unwrap().unwrap();
    assert!(!running.finished && running.response.is_none());
    assert!(s.claim_request("fp-2", now + 300, now).await.unwrap());
    assert!(s.claim_request("fp-3", now + 300, now).await.unwrap());
    // Requests finishing together are recorded together.
    s.finish_requests(&[("fp-1", Some((201, "[]", "e30="))), ("fp-2", None)])
        .await
        .unwrap();
    let done = s.get_request("fp-1", now).await.unwrap().unwrap();
    assert!(done.finished);
    assert_eq!(done.response, Some((201, "[]".into(), "e30=".into())));
    let not_kept = s.get_request("fp-2", now).await.unwrap().unwrap();
    assert!(not_kept.finished && not_kept.response.is_none());
    let still_running = s.get_request("fp-3", now).await.unwrap().unwrap();
    assert!(!still_running.finished);
    // Past its expiry an entry is gone and may be claimed anew.
    assert!(s.get_request("fp-1", now + 301).await.unwrap().is_none());
    assert!(s.claim_request("fp-1", now + 700, now + 400).await.unwrap());
    assert_eq!(s.prune_requests(now + 701).await.unwrap(), 3);
    assert!(s.get_request("fp-1", now + 400).await.unwrap().is_none());
}

/// The replay claim a store operation is handed (PostgreSQL; SQLite keeps
/// its replay log in memory and carries none): inserted with the
/// operation's work at no round trip of its own, with the response given
/// ahead; an identical request's claim then fails its whole transaction;
/// a claim whose work is not committed is released, and the next operation
/// handed it carries it.
async fn a_request_s_claim_commits_with_its_work_and_refuses_a_replay(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let at = Timestamp::from_unix_millis(T0);
    let now = T0 / 1000;
    let quote = |n: u64| {
        quote_of(
            alice.id,
            n,
            at,
            Amount::new(100, usd()),
            Amount::new(100, usd()),
            0,
        )
    };
    let before = s.round_trips();
    s.create_quote(&quote(1), None).await.unwrap();
    let alone = s.round_trips() - before;
    let claim = RequestClaim::default();
    claim.arm("fp-a".into(), now + 300);
    let answer = Answer {
        status: 201,
        headers: "[]".into(),
        body: "e30=".into(),
    };
    claim.answer_ahead(|| Some(answer.clone()));
    let before = s.round_trips();
    s.create_quote(&quote(2), Some(&claim)).await.unwrap();
    assert_eq!(s.round_trips() - before, alone, "the claim rides along");
    if s.backend() == Backend::Sqlite {
        assert_eq!(claim.state(), ClaimState::Waiting, "not carried");
        return;
    }
    assert_eq!(claim.state(), ClaimState::Answered);
    let stored = s.get_request("fp-a", now).await.unwrap().unwrap();
    assert!(stored.finished);
    assert_eq!(stored.response, Some((201, "[]".into(), "e30=".into())));

    // An identical request: its claim fails its work, and nothing of it
    // is kept.
    let replay = RequestClaim::default();
    replay.arm("fp-a".into(), now + 300);
    let refused = s.create_quote(&quote(3), Some(&replay)).await;
    assert!(matches!(refused, Err(StoreError::Replayed)), "{refused:?}");
    assert_eq!(replay.state(), ClaimState::Replayed);
    assert_eq!(s.get_quote(quote(3).id).await.unwrap(), None);

    // Work that does not commit (no such token to rotate) releases the
    // claim; the next operation handed it carries it.
    let claim = RequestClaim::default();
    claim.arm("fp-b".into(), now + 300);
    let new_token = token(&grant(None, 1), 1);
    let rotated = s.rotate_access_token("unknown", &new_token, at, Some(&claim));
    assert!(!rotated.await.unwrap());
    assert_eq!(claim.state(), ClaimState::Waiting);
    assert!(s.get_request("fp-b", now).await.unwrap().is_none());
    s.create_quote(&quote(4), Some(&claim)).await.unwrap();
    assert_eq!(claim.state(), ClaimState::Committed);
    let running = s.get_request("fp-b", now).await.unwrap().unwrap();
    assert!(
        !running.finished,
        "its response is recorded after the request"
    );
}

/// A created outgoing payment's response says what its grant had spent
/// before it, which only the payment's transaction reads: given as a
/// function of that, it is rendered there and recorded with the `COMMIT`
/// (PostgreSQL), at no round trip of its own. A payment refused keeps
/// nothing, and forgets the response it was given.
async fn a_created_payment_s_response_commits_with_it_rendered_from_the_grant_s_spending(
    s: &dyn Store,
) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 10);
    s.ledger_move(alice.id, &usd(), 1000, true, "fund-alice", "d", at)
        .await
        .unwrap();
    let now = T0 / 1000;
    let quote = |n: u64| {
        quote_of(
            alice.id,
            700 + n,
            at,
            Amount::new(300, usd()),
            Amount::new(300, usd()),
            0,
        )
    };
    let payment = under_grant_1;
    let grant = grant_1_up_to(700);
    let render = || -> opd_store::claim::LateAnswer {
        Box::new(|spent: &opd_core::outgoing_payment::GrantSpent| {
            let debit = spent.debit.as_ref().map_or(0, |a| a.value);
            Some(Answer {
                status: 201,
                headers: "[]".into(),
                body: format!("spent {debit}"),
            })
        })
    };
    let (q1, q2, q3) = (quote(1), quote(2), quote(3));
    for q in [&q1, &q2, &q3] {
        s.create_quote(q, None).await.unwrap();
    }
    let before = s.round_trips();
    let p1 = payment(&q1);
    let first = s.create_outgoing_payment(&p1, Some(&grant), &[], None);
    assert!(matches!(
        first.await.unwrap(),
        CreateOutgoing::Created { .. }
    ));
    let alone = s.round_trips() - before;

    let claim = RequestClaim::default();
    claim.arm("fp-p".into(), now + 300);
    claim.answer_at_commit(render());
    let before = s.round_trips();
    let p2 = payment(&q2);
    let second = s.create_outgoing_payment(&p2, Some(&grant), &[], Some(&claim));
    assert!(matches!(
        second.await.unwrap(),
        CreateOutgoing::Created { .. }
    ));
    assert_eq!(
        s.round_trips() - before,
        alone,
        "the claim and its answer ride along"
    );
    if s.backend() == Backend::Sqlite {
        assert_eq!(claim.state(), ClaimState::Waiting, "not carried");
        return;
    }
    assert_eq!(claim.state(), ClaimState::Answered);
    let stored = s.get_request("fp-p", now).await.unwrap().unwrap();
    assert!(stored.finished);
    assert_eq!(
        stored.response,
        Some((201, "[]".into(), "spent 300".into())),
        "rendered from what the grant spent before it"
    );

    // Over the grant's limit (600 of 700 spent): nothing is kept, and the
    // response given for it is forgotten, so the next write that carries
    // the claim leaves it to be recorded after the request.
    let claim = RequestClaim::default();
    claim.arm("fp-r".into(), now + 300);
    claim.answer_at_commit(render());
    let p3 = payment(&q3);
    let refused = s.create_outgoing_payment(&p3, Some(&grant), &[], Some(&claim));
    assert!(matches!(
        refused.await.unwrap(),
        CreateOutgoing::LimitExceeded { .. }
    ));
    assert_eq!(claim.state(), ClaimState::Waiting);
    assert!(s.get_request("fp-r", now).await.unwrap().is_none());
    let mut unlimited = payment(&q3);
    unlimited.grant_id = None;
    let third = s.create_outgoing_payment(&unlimited, None, &[], Some(&claim));
    assert!(matches!(
        third.await.unwrap(),
        CreateOutgoing::Created { .. }
    ));
    assert_eq!(claim.state(), ClaimState::Committed);
    let running = s.get_request("fp-r", now).await.unwrap().unwrap();
    assert!(!running.finished, "recorded after the request");
}

fn peer(address: &str, n: i64, origin: PeerOrigin) -> Peer {
    let r = SeededRandom::new(5000 + n as u64);
    let at = Timestamp::from_unix_millis(T0 + n);
    Peer {
        id: PeerId::new(at, &r),
        name: address.to_owned(),
        static_ilp_address: address.to_owned(),
        asset: usd(),
        max_packet_amount: None,
        routes: vec![address.to_owned()],
        outgoing: Some(PeerOutgoing {
            endpoint: "http://127.0.0.1:9/ilp".into(),
            auth_token: format!("sealed-{n}"),
        }),
        liquidity_low: None,
        liquidity_high: None,
        incoming_tokens: 1,
        created_by: origin,
        created_at: at,
        updated_at: at,
    }
}

async fn auto_peers_are_counted_kept_apart_and_funded_within_the_total(s: &dyn Store) {
    let limits = AutoPeeringLimits {
        max_peers: 2,
        liquidity_per_peer: 5_000,
        liquidity_total: 8_000,
    };
    let create = |p: Peer, digest: &'static str| async move {
        s.create_auto_peer(&p, &[digest.to_owned()], limits, &format!("key-{}", p.id))
            .await
    };
    // An operator's peer: not counted, but its routes are kept apart.
    let bank = peer("test.bank", 1, PeerOrigin::Operator);
    s.create_peer(&bank, &["d-bank".into()]).await.unwrap();
    for (address, n) in [("test.bank.sub", 2), ("test", 3)] {
        let mut p = peer(address, n, PeerOrigin::AutoPeering);
        p.routes = vec![address.to_owned()];
        assert_eq!(create(p, "d-x").await.unwrap(), AutoPeerOutcome::Overlaps);
    }
    assert_eq!(
        create(peer("test.a", 4, PeerOrigin::AutoPeering), "d-a")
            .await
            .unwrap(),
        AutoPeerOutcome::Created { deposited: 5_000 }
    );
    // A taken token digest: a conflict, nothing granted.
    assert!(matches!(
        create(peer("test.t", 5, PeerOrigin::AutoPeering), "d-bank").await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(s.auto_peering_granted().await.unwrap(), 5_000);
    let b = peer("test.bankers", 6, PeerOrigin::AutoPeering);
    assert_eq!(
        create(b.clone(), "d-b").await.unwrap(),
        AutoPeerOutcome::Created { deposited: 3_000 }
    );
    assert_eq!(
        create(peer("test.c", 7, PeerOrigin::AutoPeering), "d-c")
            .await
            .unwrap(),
        AutoPeerOutcome::QuotaReached
    );
    assert_eq!(s.auto_peering_granted().await.unwrap(), 8_000);
    assert_eq!(s.peer_liquidity(&b).await.unwrap(), 3_000);
    let stored = s.get_peer(b.id).await.unwrap().unwrap();
    assert_eq!(stored.created_by, PeerOrigin::AutoPeering);
    assert_eq!(
        s.get_peer(bank.id).await.unwrap().unwrap().created_by,
        PeerOrigin::Operator
    );
    // Balanced: the deposits came from the settlement account.
    let sum: i128 = s
        .ledger_accounts()
        .await
        .unwrap()
        .iter()
        .map(|a| a.balance)
        .sum();
    assert_eq!(sum, 0);
}

async fn outgoing_tokens_are_replaced_only_when_unchanged(s: &dyn Store) {
    let p = peer("test.p", 1, PeerOrigin::Operator);
    s.create_peer(&p, &[]).await.unwrap();
    assert!(!s
        .replace_peer_outgoing_token(p.id, "not-what-is-stored", "new")
        .await
        .unwrap());
    assert!(s
        .replace_peer_outgoing_token(p.id, "sealed-1", "new")
        .await
        .unwrap());
    let stored = s.get_peer(p.id).await.unwrap().unwrap();
    assert_eq!(stored.outgoing.unwrap().auth_token, "new");
}

/// A payment to another server sent in packets: each packet is settled
/// once (posted or voided, never both, never twice); a posted one moves
/// its amount from the payment to the peer and adds to the payment's
/// totals; completing takes the fee and gives the rest back; nothing is
/// recorded once the payment ended.
async fn payment_packets_settle_once_and_move_exactly_their_amounts(s: &dyn Store) {
    use opd_store::{PacketState, PaymentPacket};
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 10);
    s.ledger_move(alice.id, &usd(), 1000, true, "fund-alice", "d", at)
        .await
        .unwrap();
    let hop = peer("test.hop", 1, PeerOrigin::Operator);
    s.create_peer(&hop, &[]).await.unwrap();
    let quote = quote_of(
        alice.id,
        77,
        at,
        Amount::new(300, usd()),
        Amount::new(270, usd()),
        10,
    );
    s.create_quote(&quote, None).await.unwrap();
    let id = opd_core::OutgoingPaymentId::from_uuid(*quote.id.as_uuid());
    let payment = OutgoingPaymentRecord {
        id,
        wallet_address_id: alice.id,
        quote_id: quote.id,
        receiver: quote.receiver.clone(),
        debit: quote.debit_amount.clone(),
        receive: quote.receive_amount.clone(),
        sent: 0,
        delivered: 0,
        receiver_baseline: None,
        state: OutgoingPaymentState::Sending,
        error: None,
        metadata: None,
        client: None,
        grant_id: None,
        grant_interval_start: None,
        attempts: 0,
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
    };
    let created = s
        .create_outgoing_payment(&payment, None, &[], None)
        .await
        .unwrap();
    assert!(
        matches!(created, CreateOutgoing::Created { .. }),
        "{created:?}"
    );
    let packet = |n: i64, amount: u64| PaymentPacket {
        id: format!("packet-{n}"),
        payment: id,
        peer: hop.id,
        source_asset: usd(),
        source_amount: amount,
        peer_asset: usd(),
        peer_amount: amount,
        min_delivery: amount - 10,
        expires_at: at.plus_seconds(30),
        created_at: Timestamp::from_unix_millis(T0 + 20 + n),
    };
    let (p1, p2) = (packet(1, 200), packet(2, 50));
    assert!(s.packet_sending(&p1).await.unwrap());
    assert!(s.packet_sending(&p2).await.unwrap());
    assert_eq!(
        s.pending_packets(id).await.unwrap(),
        vec![p1.clone(), p2.clone()]
    );
    // Not completed while packets are pending.
    assert!(!s.complete_sent_payment(id, 10, at, &[]).await.unwrap());
    // Sending, by age: created at `at`, so younger than a minute, then
    // older than an hour.
    let ages = [60_000, 300_000, 3_600_000];
    let by_age = s.sending_payments_by_age(at.plus_millis(1), ages);
    assert_eq!(by_age.await.unwrap(), [1, 0, 0, 0]);
    let by_age = s.sending_payments_by_age(at.plus_seconds(120), ages);
    assert_eq!(by_age.await.unwrap(), [0, 1, 0, 0]);
    let by_age = s.sending_payments_by_age(at.plus_seconds(7200), ages);
    assert_eq!(by_age.await.unwrap(), [0, 0, 0, 1]);
    // Two claims without moving money count two attempts; a posted
    // packet starts the count again, and is when the payment last moved.
    for n in 0..2 {
        let claimed = s
            .claim_due_outgoing_payment(at.plus_millis(60_000 + n * 10), 1)
            .await;
        assert_eq!(claimed.unwrap().map(|p| p.id), Some(id));
    }
    assert_eq!(
        s.get_outgoing_payment(id).await.unwrap().unwrap().attempts,
        2
    );
    let moved = at.plus_seconds(61);

    // The first is fulfilled, once.
    assert!(s.packet_fulfilled(&p1, 185, moved).await.unwrap());
    let record = s.get_outgoing_payment(id).await.unwrap().unwrap();
    assert_eq!((record.attempts, record.updated_at), (0, moved));
    assert!(!s.packet_fulfilled(&p1, 185, at).await.unwrap());
    assert!(!s.packet_rejected(&p1.id, at).await.unwrap());
    // The second is voided, once, and cannot be posted after.
    assert!(s.packet_rejected(&p2.id, at).await.unwrap());
    assert!(!s.packet_rejected(&p2.id, at).await.unwrap());
    assert!(!s.packet_fulfilled(&p2, 40, at).await.unwrap());
    assert!(s.pending_packets(id).await.unwrap().is_empty());
    let states: Vec<_> = s
        .packets(id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.packet.id, r.state))
        .collect();
    assert_eq!(
        states,
        vec![
            (p1.id.clone(), PacketState::Posted { delivered: 185 }),
            (p2.id.clone(), PacketState::Voided),
        ]
    );
    let record = s.get_outgoing_payment(id).await.unwrap().unwrap();
    assert_eq!((record.sent, record.delivered), (200, 185));
    assert_eq!(
        balance_of(s, AccountKind::Peer, &hop.id.to_string()).await,
        200
    );
    assert_eq!(
        balance_of(s, AccountKind::Outgoing, &id.to_string()).await,
        100
    );

    // Completing takes the fee and gives back what was not sent.
    assert!(s.complete_sent_payment(id, 10, at, &[]).await.unwrap());
    assert!(!s.complete_sent_payment(id, 10, at, &[]).await.unwrap());
    assert_eq!(
        balance_of(s, AccountKind::Outgoing, &id.to_string()).await,
        0
    );
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &alice.id.to_string()).await,
        790
    );
    let fees: i128 = s
        .ledger_accounts()
        .await
        .unwrap()
        .iter()
        .filter(|a| a.kind == AccountKind::Fees)
        .map(|a| a.balance)
        .sum();
    assert_eq!(fees, 10);
    // An ended payment records no packet.
    assert!(!s.packet_sending(&packet(3, 10)).await.unwrap());
    assert_ledger_balanced(s).await;
}

/// A payment funded from outside (external mode) paying through a peer in
/// another asset, with no fee: the packet passes the settlement account of
/// each asset, completing posts no fee, and what was not sent goes back to
/// the outside world, not to the wallet.
async fn a_payment_funded_from_outside_pays_across_assets_and_gives_back_outside(s: &dyn Store) {
    use opd_store::PaymentPacket;
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let eur = Asset::parse("EUR", 2).unwrap();
    let hop = Peer {
        asset: eur.clone(),
        ..peer("test.hop", 1, PeerOrigin::Operator)
    };
    s.create_peer(&hop, &[]).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 10);
    let quote = quote_of(
        alice.id,
        78,
        at,
        Amount::new(300, usd()),
        Amount::new(250, eur.clone()),
        0,
    );
    s.create_quote(&quote, None).await.unwrap();
    let payment = OutgoingPaymentRecord {
        state: OutgoingPaymentState::Funding,
        grant_id: None,
        grant_interval_start: None,
        ..under_grant_1(&quote)
    };
    let id = payment.id;
    let created = s.create_outgoing_payment(&payment, None, &[], None);
    assert!(matches!(
        created.await.unwrap(),
        CreateOutgoing::Created { .. }
    ));
    assert!(s.fund_outgoing_payment(id, at, &[]).await.unwrap());
    assert!(!s.fund_outgoing_payment(id, at, &[]).await.unwrap(), "once");
    let packet = PaymentPacket {
        id: "packet-x".into(),
        payment: id,
        peer: hop.id,
        source_asset: usd(),
        source_amount: 200,
        peer_asset: eur.clone(),
        peer_amount: 180,
        min_delivery: 170,
        expires_at: at.plus_seconds(30),
        created_at: at,
    };
    assert!(s.packet_sending(&packet).await.unwrap());
    assert!(s.packet_fulfilled(&packet, 175, at).await.unwrap());
    assert!(s.complete_sent_payment(id, 0, at, &[]).await.unwrap());

    let settlement_usd = AccountKind::Settlement.account_id("settlement", &usd());
    let settlement_eur = AccountKind::Settlement.account_id("settlement", &eur);
    let held = AccountKind::Outgoing.account_id(&id.to_string(), &usd());
    let to_peer = AccountKind::Peer.account_id(&hop.id.to_string(), &eur);
    let mut moved: Vec<_> = s
        .ledger_all_transfers()
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.reference.as_deref() == Some(id.to_string().as_str()))
        .map(|t| (t.kind, t.debit_account, t.credit_account, t.amount))
        .collect();
    moved.sort_by_key(|m| m.0.as_str());
    let mut expected = vec![
        (
            TransferKind::Fund,
            settlement_usd.clone(),
            held.clone(),
            300,
        ),
        (
            TransferKind::Send,
            held.clone(),
            settlement_usd.clone(),
            200,
        ),
        (
            TransferKind::Packet,
            settlement_eur.clone(),
            to_peer.clone(),
            180,
        ),
        (
            TransferKind::Refund,
            held.clone(),
            settlement_usd.clone(),
            100,
        ),
    ];
    expected.sort_by_key(|m| m.0.as_str());
    assert_eq!(moved, expected, "no fee, no wallet, each asset apart");
    let balances: std::collections::HashMap<_, _> = s
        .ledger_accounts()
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.id, a.balance))
        .collect();
    let balance = |id: &str| balances.get(id).copied().unwrap_or(0);
    assert_eq!(balance(&to_peer), 180);
    assert_eq!(balance(&settlement_eur), -180);
    assert_eq!(
        balance(&settlement_usd),
        0,
        "funded 300, got 200 and 100 back"
    );
    assert_eq!(balance(&held), 0);
    assert_eq!(
        balance(&AccountKind::Wallet.account_id(&alice.id.to_string(), &usd())),
        0
    );
    let done = s.get_outgoing_payment(id).await.unwrap().unwrap();
    assert_eq!(
        (done.state, done.sent, done.delivered),
        (OutgoingPaymentState::Completed, 200, 175)
    );
    assert_ledger_balanced(s).await;
}

/// A grant limited in what its payments receive (not what they debit):
/// each payment counts what the ones before it received.
async fn a_grant_s_receive_limit_counts_what_its_payments_received_before(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 10);
    s.ledger_move(alice.id, &usd(), 10_000, true, "fund-alice", "d", at)
        .await
        .unwrap();
    let eur = Asset::parse("EUR", 2).unwrap();
    let grant = GrantReservation {
        receive_limit: Some(700),
        debit_limit: None,
        ..grant_1_up_to(0)
    };
    let mut outcomes = Vec::new();
    for n in 0..3 {
        let quote = quote_of(
            alice.id,
            950 + n,
            at,
            Amount::new(400, usd()),
            Amount::new(300, eur.clone()),
            0,
        );
        s.create_quote(&quote, None).await.unwrap();
        let payment = under_grant_1(&quote);
        let created = s.create_outgoing_payment(&payment, Some(&grant), &[], None);
        outcomes.push(created.await.unwrap());
    }
    assert!(
        matches!(outcomes[0], CreateOutgoing::Created { .. }),
        "{outcomes:?}"
    );
    assert!(
        matches!(outcomes[1], CreateOutgoing::Created { .. }),
        "{outcomes:?}"
    );
    let spent = GrantSpent {
        debit: Some(Amount::new(800, usd())),
        receive: Some(Amount::new(600, eur.clone())),
    };
    assert_eq!(
        outcomes[2],
        CreateOutgoing::LimitExceeded {
            spent_before: spent.clone()
        },
        "600 received of 700: 300 more is over"
    );
    let interval = Timestamp::from_unix_millis(0);
    assert_eq!(
        s.grant_spent("grant-1", interval).await.unwrap(),
        Some(spent)
    );
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &alice.id.to_string()).await,
        9_200,
        "the refused payment took nothing"
    );
}

/// The webhook events of a transaction's facts, as the tests record them
/// (the service renders them through the Open Payments views).
fn render(facts: &[Fact]) -> Vec<WebhookEvent> {
    facts
        .iter()
        .map(|fact| match fact {
            Fact::IncomingCompleted { payment, .. } => event_of(
                EventKind::IncomingPaymentCompleted,
                &format!("{}:{}", payment.id, payment.received_amount),
            ),
            Fact::LiquidityCrossed { peer, balance, .. } => event_of(
                EventKind::PeerLiquidityLow,
                &format!("{}:{balance}", peer.id),
            ),
        })
        .collect()
}

/// Credits a group of ILP packets round by round, as the service does.
async fn credit_all(
    s: &dyn Store,
    peer: &Peer,
    receives: &[opd_store::IlpReceive],
    clock: &dyn opd_core::Clock,
) -> Vec<opd_store::IlpCredit> {
    let mut rounds = CreditRounds::new(receives, clock.now());
    // At most one round per packet and one more.
    for _ in 0..=receives.len() {
        let Some(round) = rounds.next() else { break };
        let packets = CreditRounds::packets(receives, &round);
        let credited = s.credit_round(peer, &packets, clock).await.unwrap();
        let events = render(credited.facts());
        rounds.settle(&round, credited.end(packets.len(), &events).await.unwrap());
    }
    assert_eq!(rounds.next(), None, "the rounds ended");
    rounds.answers()
}

/// Moves a peer's liquidity and commits with the events of its facts.
async fn move_liquidity(
    s: &dyn Store,
    peer: &Peer,
    amount: u64,
    deposit: bool,
    key: &str,
    at: Timestamp,
) -> opd_core::ledger::LedgerOutcome {
    let moved = s
        .peer_liquidity_move(peer, amount, deposit, key, "d", at)
        .await
        .unwrap();
    let events = render(moved.facts());
    moved.commit(&events).await.unwrap()
}

fn event_of(kind: EventKind, data: &str) -> WebhookEvent {
    WebhookEvent {
        id: format!("ev-{data}"),
        tenant: opd_core::TenantId::operator(),
        kind,
        data: format!("{{\"d\":\"{data}\"}}"),
        attempts: 0,
        next_attempt_at: Timestamp::from_unix_millis(T0),
        delivered_at: None,
        created_at: Timestamp::from_unix_millis(T0),
    }
}

async fn ilp_packets_arriving_together_are_credited_in_arrival_order(s: &dyn Store) {
    use opd_core::incoming_payment::Receivable;
    use opd_store::{IlpCredit, IlpReceive};
    let bob = wallet("bob", 2);
    s.create_wallet_address(&bob).await.unwrap();
    let mut target = incoming(&bob, 1, None);
    target.incoming_amount = Some(100);
    s.create_incoming_payment(&target, &[], None).await.unwrap();
    let bank = peer("test.bank", 1, PeerOrigin::Operator);
    s.create_peer(&bank, &["d-bank".into()]).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 20);
    move_liquidity(s, &bank, 1_000, true, "fund-bank", at).await;
    let packet = |amount: u64| IlpReceive {
        to: CreditTo::Incoming(target.id),
        amount,
        deliver: amount,
        receipts: Receipts::ToWallet,
        receipt_connection: None,
        at,
        deadline: at.plus_seconds(30),
    };
    // 40 + 50 fit; 30 would pass 100 and is refused; 10 fits after it and
    // completes the payment; 5 arrives after completion.
    let group = [packet(40), packet(50), packet(30), packet(10), packet(5)];
    let credits = credit_all(s, &bank, &group, &clock_at(at)).await;
    let received: Vec<Option<(u64, bool)>> = credits
        .iter()
        .map(|c| match c {
            IlpCredit::Credited(p) => Some((p.received_amount, p.completed)),
            _ => None,
        })
        .collect();
    assert_eq!(
        received,
        [
            Some((40, false)),
            Some((90, false)),
            None,
            Some((100, true)),
            None
        ]
    );
    assert!(matches!(
        credits[2],
        IlpCredit::Refused(Receivable::TooMuch { .. })
    ));
    assert_eq!(credits[4], IlpCredit::Refused(Receivable::Closed));
    let stored = s.get_incoming_payment(target.id).await.unwrap().unwrap();
    assert_eq!((stored.received_amount, stored.completed), (100, true));
    // The money moved once for the three taken, and the payment completed
    // once.
    assert_eq!(s.peer_liquidity(&bank).await.unwrap(), 900);
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &bob.id.to_string()).await,
        100
    );
    let events = s
        .claim_webhook_events(Timestamp::from_unix_millis(T0 + 1_000_000), 60_000, 100)
        .await
        .unwrap();
    let completed: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::IncomingPaymentCompleted)
        .map(|e| e.data.clone())
        .collect();
    assert_eq!(completed, [format!("{{\"d\":\"{}:100\"}}", target.id)]);

    // A group the liquidity cannot cover as a whole is credited one by
    // one: each packet gets the answer it would have got alone.
    let mut open = incoming(&bob, 2, None);
    open.incoming_amount = None;
    s.create_incoming_payment(&open, &[], None).await.unwrap();
    let group = [500, 300, 200].map(|amount| IlpReceive {
        to: CreditTo::Incoming(open.id),
        ..packet(amount)
    });
    let credits = credit_all(s, &bank, &group, &clock_at(at)).await;
    assert!(matches!(credits[0], IlpCredit::Credited(ref p) if p.received_amount == 500));
    assert!(matches!(credits[1], IlpCredit::Credited(ref p) if p.received_amount == 800));
    assert_eq!(
        credits[2],
        IlpCredit::InsufficientLiquidity { available: 100 }
    );
    assert_eq!(s.peer_liquidity(&bank).await.unwrap(), 100);
    let stored = s.get_incoming_payment(open.id).await.unwrap().unwrap();
    assert_eq!(stored.received_amount, 800);
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &bob.id.to_string()).await,
        900
    );
    // Unknown payments are refused as such, whatever the group.
    let unknown = incoming(&bob, 3, None);
    let group = [
        IlpReceive {
            to: CreditTo::Incoming(unknown.id),
            ..packet(1)
        },
        IlpReceive {
            to: CreditTo::Incoming(unknown.id),
            ..packet(2)
        },
    ];
    let credits = credit_all(s, &bank, &group, &clock_at(at)).await;
    assert_eq!(credits, [IlpCredit::Unknown, IlpCredit::Unknown]);
    assert_ledger_balanced(s).await;
}

fn clock_at(at: Timestamp) -> opd_core::ManualClock {
    opd_core::ManualClock::new(at)
}

/// A clock that moves `step_ms` each time it is read: a transaction that
/// reads it once at the start and once with its locks taken sees time
/// pass in between, as behind a lock another transaction held.
struct SteppingClock {
    now: std::sync::atomic::AtomicI64,
    step_ms: i64,
}

impl SteppingClock {
    fn from(at: Timestamp, step_ms: i64) -> Self {
        Self {
            now: std::sync::atomic::AtomicI64::new(at.unix_millis()),
            step_ms,
        }
    }
}

impl opd_core::Clock for SteppingClock {
    fn now(&self) -> Timestamp {
        use std::sync::atomic::Ordering;
        Timestamp::from_unix_millis(self.now.fetch_add(self.step_ms, Ordering::SeqCst))
    }
}

async fn ilp_credits_never_land_after_their_packets_deadline(s: &dyn Store) {
    use opd_store::{IlpCredit, IlpReceive};
    let bob = wallet("bob", 2);
    s.create_wallet_address(&bob).await.unwrap();
    let mut target = incoming(&bob, 1, None);
    target.incoming_amount = None;
    s.create_incoming_payment(&target, &[], None).await.unwrap();
    let bank = peer("test.bank", 1, PeerOrigin::Operator);
    s.create_peer(&bank, &["d-bank".into()]).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 20);
    move_liquidity(s, &bank, 1_000, true, "fund-bank", at).await;
    let packet = |amount: u64, deadline_ms: i64| IlpReceive {
        to: CreditTo::Incoming(target.id),
        amount,
        deliver: amount,
        receipts: Receipts::ToWallet,
        receipt_connection: None,
        at,
        deadline: at.plus_millis(deadline_ms),
    };
    // Past its deadline on arrival: refused, the others credited.
    let group = [packet(10, 1_000), packet(20, 0), packet(30, 1_000)];
    let credits = credit_all(s, &bank, &group, &clock_at(at)).await;
    assert!(matches!(credits[0], IlpCredit::Credited(ref p) if p.received_amount == 10));
    assert_eq!(credits[1], IlpCredit::Expired);
    assert!(matches!(credits[2], IlpCredit::Credited(ref p) if p.received_amount == 40));
    // Time passes while the transaction waits for its locks (200 ms per
    // read of the clock): the packet whose deadline passed meanwhile is
    // refused at the commit, and the rest are credited without it.
    let clock = SteppingClock::from(at, 200);
    let group = [packet(1, 10_000), packet(2, 150), packet(4, 10_000)];
    let credits = credit_all(s, &bank, &group, &clock).await;
    assert!(matches!(credits[0], IlpCredit::Credited(ref p) if p.received_amount == 41));
    assert_eq!(credits[1], IlpCredit::Expired);
    assert!(matches!(credits[2], IlpCredit::Credited(ref p) if p.received_amount == 45));
    // Alone and late: nothing moves.
    let clock = SteppingClock::from(at, 200);
    let credits = credit_all(s, &bank, &[packet(100, 150)], &clock).await;
    assert_eq!(credits, [IlpCredit::Expired]);
    // Exactly what was credited moved, to the unit.
    let stored = s.get_incoming_payment(target.id).await.unwrap().unwrap();
    assert_eq!(stored.received_amount, 45);
    assert_eq!(s.peer_liquidity(&bank).await.unwrap(), 1_000 - 45);
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &bob.id.to_string()).await,
        45
    );
    assert_ledger_balanced(s).await;
}

async fn ended_holds_are_pruned_after_the_retention_and_pending_ones_never(s: &dyn Store) {
    use opd_core::peer::Hold;
    use opd_store::HoldOutcome;
    let from = peer("test.from", 1, PeerOrigin::Operator);
    let to = peer("test.to", 2, PeerOrigin::Operator);
    s.create_peer(&from, &["d-from".into()]).await.unwrap();
    s.create_peer(&to, &["d-to".into()]).await.unwrap();
    let at = |ms: i64| Timestamp::from_unix_millis(T0 + ms);
    move_liquidity(s, &from, 1_000, true, "fund-from", at(0)).await;
    let hold = |n: i64, expires: i64| Hold {
        id: format!("hold-{n}"),
        incoming_peer: from.id,
        incoming_asset: usd(),
        outgoing_peer: to.id,
        outgoing_asset: usd(),
        amount_in: 10,
        amount_out: 10,
        expires_at: at(expires),
        created_at: at(n),
    };
    // 1 posted and 2 voided early, 3 posted late, 4 still pending (and
    // long expired: the sweep's to void, not retention's to delete), 5
    // ended early but expires after the cutoff.
    for (n, expires) in [
        (1, 30_000),
        (2, 30_000),
        (3, 30_000),
        (4, 30_000),
        (5, 90_000),
    ] {
        assert_eq!(
            s.ilp_hold(&hold(n, expires)).await.unwrap(),
            HoldOutcome::Held
        );
    }
    for (id, fulfilled, when) in [
        ("hold-1", true, 1_000),
        ("hold-2", false, 2_000),
        ("hold-3", true, 70_000),
        ("hold-5", true, 3_000),
    ] {
        assert!(s.ilp_settle(id, fulfilled, at(when)).await.unwrap());
    }
    let pruned = s.prune_before(at(60_000)).await.unwrap();
    assert_eq!(pruned.holds, 2, "holds 1 and 2: {pruned:?}");
    assert_eq!(s.prune_before(at(60_000)).await.unwrap().holds, 0);
    // Hold 4 is still pending, so the sweep still finds it.
    let expired = s.expired_holds(at(100_000), 10).await.unwrap();
    assert_eq!(expired, vec!["hold-4".to_owned()]);
    // Hold 3 once it ended before the cutoff; hold 5 once it also expired
    // before it.
    assert_eq!(s.prune_before(at(80_000)).await.unwrap().holds, 1);
    assert_eq!(s.prune_before(at(95_000)).await.unwrap().holds, 1);
    assert_eq!(s.prune_before(at(95_000)).await.unwrap().holds, 0);
    // The money: 10 posted each for holds 1, 3 and 5, 10 voided back for
    // hold 2, 10 still held for hold 4.
    let liquidity = s.peer_liquidity(&from).await.unwrap();
    assert_eq!(liquidity, 1_000 - 30 - 10);
}

/// A wallet address paid over SPSP, with reports due a minute after the
/// first credit since the last one.
fn spsp_wallet(w: &WalletAddress) -> opd_store::SpspWallet {
    opd_store::SpspWallet {
        id: w.id,
        asset: usd(),
        report_after_ms: 60_000,
    }
}

fn spsp_packet(
    w: &WalletAddress,
    amount: u64,
    connection: Option<u8>,
    at: Timestamp,
) -> opd_store::IlpReceive {
    opd_store::IlpReceive {
        to: CreditTo::Wallet(spsp_wallet(w)),
        amount,
        deliver: amount,
        receipts: Receipts::ToWallet,
        receipt_connection: connection.map(|c| [c; 32]),
        at,
        deadline: at.plus_seconds(30),
    }
}

fn to_wallet(receipt_total: Option<u128>) -> opd_store::IlpCredit {
    opd_store::IlpCredit::ToWallet { receipt_total }
}

async fn spsp_credits_move_exactly_their_amounts_and_count_each_once(s: &dyn Store) {
    use opd_store::IlpCredit;
    let bob = wallet("bob", 2);
    s.create_wallet_address(&bob).await.unwrap();
    let bank = peer("test.bank", 1, PeerOrigin::Operator);
    s.create_peer(&bank, &["d-bank".into()]).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 20);
    move_liquidity(s, &bank, 1_000, true, "fund-bank", at).await;
    let p = |amount, connection| spsp_packet(&bob, amount, connection, at);
    // Two receipt connections and a packet without receipts, together.
    let group = [p(10, Some(1)), p(20, None), p(30, Some(1)), p(5, Some(2))];
    let credits = credit_all(s, &bank, &group, &clock_at(at)).await;
    let want = [Some(10), None, Some(40), Some(5)].map(to_wallet);
    assert_eq!(credits, want);
    // A connection's total goes on from where it was, on every node.
    let credits = credit_all(s, &bank, &[p(7, Some(1))], &clock_at(at)).await;
    assert_eq!(credits, [to_wallet(Some(47))]);
    let bob_id = bob.id.to_string();
    assert_eq!(balance_of(s, AccountKind::Wallet, &bob_id).await, 72);
    assert_eq!(s.peer_liquidity(&bank).await.unwrap(), 928);
    let totals = s.spsp_totals(bob.id).await.unwrap();
    assert_eq!((totals.received, totals.reported), (72, 0));
    assert_eq!(totals.report_at, Some(at.plus_millis(60_000)));
    // What the liquidity cannot cover as a whole is credited one by one.
    let credits = credit_all(s, &bank, &[p(900, Some(1)), p(100, Some(1))], &clock_at(at)).await;
    assert_eq!(
        credits,
        [
            to_wallet(Some(947)),
            IlpCredit::InsufficientLiquidity { available: 28 }
        ]
    );
    // A packet late once the locks are held moves nothing and counts
    // nowhere; the others of its group are credited without it.
    let clock = SteppingClock::from(at, 200);
    let late = opd_store::IlpReceive {
        deadline: at.plus_millis(150),
        ..p(3, Some(1))
    };
    let credits = credit_all(s, &bank, &[p(1, Some(1)), late, p(2, None)], &clock).await;
    assert_eq!(
        credits,
        [to_wallet(Some(948)), IlpCredit::Expired, to_wallet(None)]
    );
    assert_eq!(balance_of(s, AccountKind::Wallet, &bob_id).await, 975);
    assert_eq!(s.peer_liquidity(&bank).await.unwrap(), 25);
    assert_eq!(s.spsp_totals(bob.id).await.unwrap().received, 975);
    // The transfers name the wallet address.
    let transfers = s.ledger_all_transfers().await.unwrap();
    let received: u64 = transfers
        .iter()
        .filter(|t| t.kind == TransferKind::Receive && t.reference.as_deref() == Some(&bob_id))
        .map(|t| t.amount)
        .sum();
    assert_eq!(received, 975);
    assert_ledger_balanced(s).await;
}

async fn spsp_money_held_in_external_mode_is_withdrawn_once(s: &dyn Store) {
    let bob = wallet("bob", 2);
    s.create_wallet_address(&bob).await.unwrap();
    let bank = peer("test.bank", 1, PeerOrigin::Operator);
    s.create_peer(&bank, &["d-bank".into()]).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 20);
    move_liquidity(s, &bank, 1_000, true, "fund-bank", at).await;
    let held = |amount| opd_store::IlpReceive {
        receipts: Receipts::Held,
        ..spsp_packet(&bob, amount, None, at)
    };
    let credits = credit_all(s, &bank, &[held(40), held(2)], &clock_at(at)).await;
    assert_eq!(credits, [to_wallet(None), to_wallet(None)]);
    let bob_id = bob.id.to_string();
    assert_eq!(balance_of(s, AccountKind::Wallet, &bob_id).await, 0);
    assert_eq!(balance_of(s, AccountKind::Spsp, &bob_id).await, 42);
    let usd = usd();
    let withdraw = |digest: &'static str| s.withdraw_spsp(bob.id, &usd, "spsp:k1", digest, at);
    let LedgerOutcome::Posted(t) = withdraw("d1").await.unwrap() else {
        panic!("posted")
    };
    assert_eq!(t.amount, 42);
    assert!(
        matches!(withdraw("d1").await.unwrap(), LedgerOutcome::Repeated(ref r) if r.amount == 42)
    );
    assert_eq!(withdraw("d2").await.unwrap(), LedgerOutcome::KeyReused);
    assert_eq!(balance_of(s, AccountKind::Spsp, &bob_id).await, 0);
    // Nothing held: nothing posted, and the key stays unused.
    let nothing = s.withdraw_spsp(bob.id, &usd, "spsp:k2", "d", at).await;
    assert!(matches!(nothing.unwrap(), LedgerOutcome::Posted(ref t) if t.amount == 0));
    credit_all(s, &bank, &[held(5)], &clock_at(at)).await;
    let again = s.withdraw_spsp(bob.id, &usd, "spsp:k2", "d", at).await;
    assert!(matches!(again.unwrap(), LedgerOutcome::Posted(ref t) if t.amount == 5));
    // Started in balance mode later: what is held goes to the wallet
    // address, once.
    credit_all(s, &bank, &[held(9)], &clock_at(at)).await;
    assert_eq!(s.settle_received(at).await.unwrap(), 1);
    assert_eq!(s.settle_received(at).await.unwrap(), 0);
    assert_eq!(balance_of(s, AccountKind::Spsp, &bob_id).await, 0);
    assert_eq!(balance_of(s, AccountKind::Wallet, &bob_id).await, 9);
    assert_ledger_balanced(s).await;
}

async fn spsp_reports_are_claimed_once_and_announce_what_arrived_since_the_last(s: &dyn Store) {
    let (bob, carol) = (wallet("bob", 2), wallet("carol", 3));
    for w in [&bob, &carol] {
        s.create_wallet_address(w).await.unwrap();
    }
    let bank = peer("test.bank", 1, PeerOrigin::Operator);
    s.create_peer(&bank, &["d-bank".into()]).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 20);
    move_liquidity(s, &bank, 1_000, true, "fund-bank", at).await;
    let clock = clock_at(at);
    credit_all(s, &bank, &[spsp_packet(&bob, 65, None, at)], &clock).await;
    let later = at.plus_millis(30_000);
    credit_all(s, &bank, &[spsp_packet(&bob, 5, None, later)], &clock).await;
    // Not due before a minute after the first credit.
    let early = s
        .claim_spsp_reports(at.plus_millis(59_999), 10)
        .await
        .unwrap();
    assert!(early.outcome().is_empty());
    early.commit(&[]).await.unwrap();
    let due = at.plus_millis(60_000);
    let claimed = s.claim_spsp_reports(due, 10).await.unwrap();
    let reports = claimed.outcome().clone();
    if s.backend() == Backend::Postgres {
        // Another node meanwhile skips the row this claim holds.
        let other = s.claim_spsp_reports(due, 10).await.unwrap();
        assert!(other.outcome().is_empty());
        other.commit(&[]).await.unwrap();
    }
    // Dropped without its events: nothing was claimed.
    drop(claimed);
    let claimed = s.claim_spsp_reports(due, 10).await.unwrap();
    assert_eq!(claimed.outcome(), &reports);
    assert_eq!(
        reports,
        [opd_store::SpspReport {
            wallet: bob.id,
            amount: 70,
            to_withdraw: 0
        }]
    );
    let event = event_of(EventKind::WalletAddressWebMonetization, "bob:70");
    claimed.commit(&[event]).await.unwrap();
    let again = s
        .claim_spsp_reports(due.plus_millis(3_600_000), 10)
        .await
        .unwrap();
    assert!(again.outcome().is_empty(), "reported once");
    again.commit(&[]).await.unwrap();
    let totals = s.spsp_totals(bob.id).await.unwrap();
    assert_eq!(
        (totals.received, totals.reported, totals.report_at),
        (70, 70, None)
    );
    // The next credit starts the next interval; each report says what
    // arrived since the one before.
    let next = due.plus_millis(1);
    credit_all(s, &bank, &[spsp_packet(&bob, 8, None, next)], &clock).await;
    credit_all(s, &bank, &[spsp_packet(&carol, 3, None, next)], &clock).await;
    let claimed = s
        .claim_spsp_reports(next.plus_millis(60_000), 10)
        .await
        .unwrap();
    let mut amounts: Vec<_> = claimed
        .outcome()
        .iter()
        .map(|r| (r.wallet, r.amount))
        .collect();
    amounts.sort();
    let mut want = vec![(bob.id, 8), (carol.id, 3)];
    want.sort();
    assert_eq!(amounts, want);
    claimed.commit(&[]).await.unwrap();
    let events = s
        .claim_webhook_events(due.plus_millis(10_000_000), 60_000, 100)
        .await
        .unwrap();
    let reported: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::WalletAddressWebMonetization)
        .collect();
    assert_eq!(reported.len(), 1);
}

/// The facts of a credit read balances inside its transaction: what a
/// payment completed in external mode leaves to withdraw (every credit it
/// took, not the last), and the peer's balance when it crosses a threshold.
async fn a_credit_says_what_waits_to_be_withdrawn_and_where_the_peer_stands(s: &dyn Store) {
    use opd_store::{IlpCredit, IlpReceive};
    let bob = wallet("bob", 2);
    s.create_wallet_address(&bob).await.unwrap();
    let mut target = incoming(&bob, 1, None);
    target.incoming_amount = Some(100);
    s.create_incoming_payment(&target, &[], None).await.unwrap();
    let mut bank = peer("test.bank", 1, PeerOrigin::Operator);
    bank.liquidity_low = Some(950);
    s.create_peer(&bank, &["d-bank".into()]).await.unwrap();
    let at = Timestamp::from_unix_millis(T0 + 20);
    move_liquidity(s, &bank, 1_000, true, "fund-bank", at).await;
    let packet = |amount: u64| IlpReceive {
        to: CreditTo::Incoming(target.id),
        amount,
        deliver: amount,
        receipts: Receipts::Held,
        receipt_connection: None,
        at,
        deadline: at.plus_seconds(30),
    };
    let first = credit_all(s, &bank, &[packet(40)], &clock_at(at)).await;
    assert!(matches!(first[0], IlpCredit::Credited(ref p) if p.received_amount == 40));
    let round = s
        .credit_round(&bank, &[packet(60)], &clock_at(at))
        .await
        .unwrap();
    let facts: Vec<String> = round
        .facts()
        .iter()
        .map(|fact| match fact {
            Fact::IncomingCompleted {
                payment,
                to_withdraw,
            } => format!(
                "completed {} to withdraw {to_withdraw}",
                payment.received_amount
            ),
            Fact::LiquidityCrossed { zone, balance, .. } => {
                format!("peer {zone:?} at {balance}")
            }
        })
        .collect();
    assert_eq!(
        facts,
        ["completed 100 to withdraw 100", "peer Low at 900"],
        "the peer crossed 950 with this credit, not the first"
    );
    let events = render(round.facts());
    round.end(1, &events).await.unwrap();
    assert_eq!(s.peer_liquidity(&bank).await.unwrap(), 900);
    assert_eq!(
        balance_of(s, AccountKind::Incoming, &target.id.to_string()).await,
        100
    );
    assert_ledger_balanced(s).await;
}

/// A deposit may bring a balance to u64::MAX exactly; ten units more are
/// refused and moves nothing (on PostgreSQL the balances come back from
/// the posting's statement and are checked against the limits after it).
async fn a_balance_reaches_u64_max_exactly_and_never_passes_it(s: &dyn Store) {
    let alice = wallet("alice", 1);
    s.create_wallet_address(&alice).await.unwrap();
    let at = Timestamp::from_unix_millis(T0);
    let usd = usd();
    let deposit =
        |amount: u64, key: &'static str| s.ledger_move(alice.id, &usd, amount, true, key, "d", at);
    assert!(matches!(
        deposit(u64::MAX - 10, "k1").await.unwrap(),
        LedgerOutcome::Posted(_)
    ));
    assert!(matches!(
        deposit(10, "k2").await.unwrap(),
        LedgerOutcome::Posted(_)
    ));
    assert_eq!(deposit(10, "k3").await.unwrap(), LedgerOutcome::Overflow);
    let alice_id = alice.id.to_string();
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &alice_id).await,
        i128::from(u64::MAX)
    );
    assert!(matches!(
        s.ledger_move(alice.id, &usd, 10, false, "k4", "w", at)
            .await
            .unwrap(),
        LedgerOutcome::Posted(_)
    ));
    assert_eq!(
        balance_of(s, AccountKind::Wallet, &alice_id).await,
        i128::from(u64::MAX - 10)
    );
    assert_ledger_balanced(s).await;
}
