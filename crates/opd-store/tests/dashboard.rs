//! The dashboard's store queries, in the conformance style: every case runs
//! against both SQLite and PostgreSQL.

#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_core::incoming_payment::IncomingPayment;
use opd_core::wallet_address::{WalletAddress, WalletAddressPath};
use opd_core::webhook::{EventKind, WebhookEvent};
use opd_core::{Asset, GrantId, IncomingPaymentId, SeededRandom, Timestamp, WalletAddressId};
use opd_store::{GrantRecord, PaymentFilter, Store};

opd_testkit::conformance!(
    sessions_are_found_by_digest_until_they_expire,
    incoming_payments_of_every_wallet_filter_and_page,
    grants_filter_by_state_and_page,
    webhook_events_list_with_errors_and_retry_now,
);

const T0: i64 = 1_790_000_000_000;

fn at(ms: i64) -> Timestamp {
    Timestamp::from_unix_millis(T0 + ms)
}

fn wallet(path: &str, n: i64) -> WalletAddress {
    let r = SeededRandom::new(n as u64);
    WalletAddress {
        id: WalletAddressId::new(at(n), &r),
        tenant: opd_core::TenantId::operator(),
        path: WalletAddressPath::parse(path).unwrap(),
        asset: Asset::parse("USD", 2).unwrap(),
        public_name: None,
        created_at: at(n),
        deactivated_at: None,
    }
}

fn incoming(wallet: &WalletAddress, n: i64) -> IncomingPayment {
    let t = at(1000 * n);
    IncomingPayment {
        id: IncomingPaymentId::new(t, &SeededRandom::new(1000 + n as u64)),
        wallet_address_id: wallet.id,
        asset: wallet.asset.clone(),
        incoming_amount: Some(100),
        received_amount: 0,
        completed: false,
        expires_at: t.plus_seconds(3600),
        metadata: None,
        client: None,
        client_network: None,
        created_at: t,
        updated_at: t,
    }
}

async fn sessions_are_found_by_digest_until_they_expire(s: &dyn Store) {
    let tenant = opd_core::TenantId::operator();
    s.create_dashboard_session("d1", at(0), at(1000), None)
        .await
        .unwrap();
    s.create_dashboard_session("d2", at(0), at(5000), Some(&tenant))
        .await
        .unwrap();
    // Whose each is: the operator's token (None), or a tenant's.
    assert_eq!(
        s.dashboard_session("d1", at(999)).await.unwrap(),
        Some(None)
    );
    assert_eq!(
        s.dashboard_session("d2", at(999)).await.unwrap(),
        Some(Some(tenant))
    );
    assert_eq!(s.dashboard_session("d1", at(1000)).await.unwrap(), None);
    assert_eq!(s.dashboard_session("unknown", at(0)).await.unwrap(), None);
    // Logging out of d2 also sweeps the expired d1.
    s.delete_dashboard_session("d2", at(2000)).await.unwrap();
    assert_eq!(s.dashboard_session("d2", at(2001)).await.unwrap(), None);
    assert_eq!(s.dashboard_session("d1", at(0)).await.unwrap(), None);
}

async fn incoming_payments_of_every_wallet_filter_and_page(s: &dyn Store) {
    let alice = wallet("alice", 1);
    let bob = wallet("bob", 2);
    s.create_wallet_address(&alice).await.unwrap();
    s.create_wallet_address(&bob).await.unwrap();
    let mut made = Vec::new();
    for n in 0..5 {
        let p = incoming(if n % 2 == 0 { &alice } else { &bob }, n);
        s.create_incoming_payment(&p, &[], None).await.unwrap();
        made.push(p);
    }
    s.complete_incoming_payment(made[4].id, at(10_000), &[], None)
        .await
        .unwrap();
    let all = PaymentFilter::default();
    let first = s.all_incoming_payments(&all, None, 3).await.unwrap();
    let ids = |v: &[IncomingPayment]| v.iter().map(|p| p.id).collect::<Vec<_>>();
    assert_eq!(ids(&first), [made[4].id, made[3].id, made[2].id]);
    let cursor = first[2].id.to_string();
    let next = s
        .all_incoming_payments(&all, Some(&cursor), 3)
        .await
        .unwrap();
    assert_eq!(ids(&next), [made[1].id, made[0].id]);
    let of_alice = PaymentFilter {
        wallet: Some(alice.id),
        state: None,
    };
    let list = s.all_incoming_payments(&of_alice, None, 10).await.unwrap();
    assert_eq!(ids(&list), [made[4].id, made[2].id, made[0].id]);
    let open = PaymentFilter {
        wallet: Some(alice.id),
        state: Some("open".into()),
    };
    let list = s.all_incoming_payments(&open, None, 10).await.unwrap();
    assert_eq!(ids(&list), [made[2].id, made[0].id]);
    let completed = PaymentFilter {
        wallet: None,
        state: Some("completed".into()),
    };
    let list = s.all_incoming_payments(&completed, None, 10).await.unwrap();
    assert_eq!(ids(&list), [made[4].id]);
    // Outgoing payments: none yet, whatever the filter.
    assert!(s
        .all_outgoing_payments(&open, None, 10)
        .await
        .unwrap()
        .is_empty());
}

fn grant(n: u64, state: &str) -> GrantRecord {
    let t = at(n as i64);
    GrantRecord {
        id: GrantId::new(t, &SeededRandom::new(500 + n)),
        tenant: opd_core::TenantId::operator(),
        state: state.into(),
        finalization: None,
        client_wallet_address: Some("https://client.example/app".into()),
        client_jwk: None,
        access: r#"[{"type":"quote","actions":["create"]}]"#.into(),
        continue_id: format!("continue-{n}"),
        continue_token_digest: format!("digest-{n}"),
        interact_id: None,
        interact_nonce: None,
        interact_ref: None,
        interaction_state: None,
        interaction_expires_at: None,
        finish_uri: None,
        client_nonce: None,
        wallet_address_id: None,
        last_continued_at: t,
        version: 0,
        created_at: t,
        updated_at: t,
    }
}

async fn grants_filter_by_state_and_page(s: &dyn Store) {
    let grants: Vec<GrantRecord> = (0..4)
        .map(|n| grant(n, if n == 1 { "pending" } else { "approved" }))
        .collect();
    for g in &grants {
        s.create_grant(g, None, None).await.unwrap();
    }
    let ids = |v: &[GrantRecord]| v.iter().map(|g| g.id).collect::<Vec<_>>();
    let first = s.all_grants(None, None, 2).await.unwrap();
    assert_eq!(ids(&first), [grants[3].id, grants[2].id]);
    let cursor = first[1].id.to_string();
    let next = s.all_grants(None, Some(&cursor), 2).await.unwrap();
    assert_eq!(ids(&next), [grants[1].id, grants[0].id]);
    let pending = s.all_grants(Some("pending"), None, 10).await.unwrap();
    assert_eq!(ids(&pending), [grants[1].id]);
}

async fn webhook_events_list_with_errors_and_retry_now(s: &dyn Store) {
    let events: Vec<WebhookEvent> = (0..3)
        .map(|n| WebhookEvent {
            id: format!("event-{n:03}"),
            tenant: opd_core::TenantId::operator(),
            kind: EventKind::IncomingPaymentCreated,
            data: "{}".into(),
            attempts: 0,
            next_attempt_at: at(0),
            delivered_at: None,
            created_at: at(n),
        })
        .collect();
    s.insert_webhook_events(&events).await.unwrap();
    s.webhook_attempted("event-000", Some(at(10)), at(10), None)
        .await
        .unwrap();
    s.webhook_attempted("event-001", None, at(60_000), Some("answered 500"))
        .await
        .unwrap();
    let all = s.webhook_events(false, None, 10).await.unwrap();
    let ids: Vec<&str> = all.iter().map(|e| e.event.id.as_str()).collect();
    assert_eq!(ids, ["event-002", "event-001", "event-000"]);
    assert_eq!(all[1].last_error.as_deref(), Some("answered 500"));
    assert_eq!(all[1].event.attempts, 1);
    let undelivered = s.webhook_events(true, Some("event-002"), 10).await.unwrap();
    assert_eq!(undelivered.len(), 1);
    assert_eq!(undelivered[0].event.id, "event-001");
    // Retry now: due at once; a delivered or unknown event is not touched.
    assert!(s.retry_webhook_event("event-001", at(20)).await.unwrap());
    assert!(!s.retry_webhook_event("event-000", at(20)).await.unwrap());
    assert!(!s.retry_webhook_event("nope", at(20)).await.unwrap());
    let due = s.due_webhook_events(at(20), 10).await.unwrap();
    let due: Vec<&str> = due.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(due, ["event-002", "event-001"]);
}
