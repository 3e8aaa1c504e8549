//! Tenants in the store, in the conformance style (both backends): two
//! tenants' wallet addresses never cross, and a tenant with wallet
//! addresses is never deleted.

#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_core::tenant::Tenant;
use opd_core::wallet_address::{WalletAddress, WalletAddressPath};
use opd_core::webhook::{EventKind, WebhookEvent};
use opd_core::{Asset, Fee, SeededRandom, TenantId, Timestamp, WalletAddressId};
use opd_store::{Store, StoreError, TenantDeletion, TenantSecret};

opd_testkit::conformance!(
    tenants_keep_their_wallet_addresses_apart,
    tenants_are_unique_changed_and_deleted_only_when_empty,
    webhook_events_and_secrets_keep_their_tenant,
    fees_are_each_tenant_s_own,
);

const T0: i64 = 1_790_000_000_000;

fn at(n: i64) -> Timestamp {
    Timestamp::from_unix_millis(T0 + n)
}

fn tenant(id: &str, url: &str) -> Tenant {
    Tenant {
        id: TenantId::parse(id).unwrap(),
        public_name: format!("Tenant {id}"),
        public_url: Some(url.into()),
        auth_server_url: None,
        webhook_url: None,
        idp_consent_url: None,
        created_at: at(0),
        updated_at: at(0),
    }
}

fn wallet(tenant: &TenantId, path: &str, n: i64) -> WalletAddress {
    WalletAddress {
        id: WalletAddressId::new(at(n), &SeededRandom::new(n as u64)),
        tenant: tenant.clone(),
        path: WalletAddressPath::parse(path).unwrap(),
        asset: Asset::parse("USD", 2).unwrap(),
        public_name: None,
        created_at: at(n),
        deactivated_at: None,
    }
}

async fn tenants_keep_their_wallet_addresses_apart(s: &dyn Store) {
    let operator = TenantId::operator();
    let a = tenant("a", "https://wallet.a.example");
    s.create_tenant(&a, "digest-a").await.unwrap();
    let theirs = wallet(&a.id, "alice", 1);
    let ours = wallet(&operator, "alice", 2);
    // One path in two tenants is two wallet addresses.
    s.create_wallet_address(&theirs).await.unwrap();
    s.create_wallet_address(&ours).await.unwrap();
    assert!(matches!(
        s.create_wallet_address(&wallet(&a.id, "alice", 3)).await,
        Err(StoreError::Conflict(_))
    ));
    let alice = WalletAddressPath::parse("alice").unwrap();
    let found = s.get_wallet_address_by_path(&a.id, &alice).await.unwrap();
    assert_eq!(found, Some(theirs.clone()));
    let found = s
        .get_wallet_address_by_path(&operator, &alice)
        .await
        .unwrap();
    assert_eq!(found, Some(ours.clone()));
    let nobody = TenantId::parse("b").unwrap();
    assert_eq!(
        s.get_wallet_address_by_path(&nobody, &alice).await.unwrap(),
        None
    );

    let only_a = s.list_wallet_addresses(Some(&a.id)).await.unwrap();
    assert_eq!(only_a, vec![theirs.clone()]);
    let only_ours = s.list_wallet_addresses(Some(&operator)).await.unwrap();
    assert_eq!(only_ours, vec![ours.clone()]);
    assert_eq!(s.list_wallet_addresses(None).await.unwrap().len(), 2);
    // A wallet address of a tenant that does not exist is refused.
    assert!(s
        .create_wallet_address(&wallet(&nobody, "carol", 4))
        .await
        .is_err());
}

async fn tenants_are_unique_changed_and_deleted_only_when_empty(s: &dyn Store) {
    // The operator's tenant is there from the start.
    let all = s.list_tenants().await.unwrap();
    assert_eq!(all.len(), 1);
    assert!(all[0].id.is_operator());
    assert_eq!(all[0].public_url, None);

    let a = tenant("a", "https://wallet.a.example");
    s.create_tenant(&a, "digest-a").await.unwrap();
    for clash in [
        (tenant("a", "https://other.example"), "digest-x"),
        (tenant("b", "https://wallet.a.example"), "digest-y"),
        (tenant("c", "https://c.example"), "digest-a"),
    ] {
        assert!(
            matches!(
                s.create_tenant(&clash.0, clash.1).await,
                Err(StoreError::Conflict(_))
            ),
            "{clash:?}"
        );
    }
    assert_eq!(s.get_tenant(&a.id).await.unwrap(), Some(a.clone()));
    assert_eq!(
        s.tenant_by_token("digest-a").await.unwrap(),
        Some(a.clone())
    );
    assert_eq!(s.tenant_by_token("digest-b").await.unwrap(), None);

    let mut moved = a.clone();
    moved.public_name = "Bank A".into();
    moved.public_url = Some("https://opd.example/a".into());
    moved.webhook_url = Some("https://hooks.a.example/".into());
    moved.idp_consent_url = Some("https://consent.a.example/".into());
    moved.updated_at = at(5);
    assert!(s.update_tenant(&moved).await.unwrap());
    assert_eq!(s.get_tenant(&a.id).await.unwrap(), Some(moved.clone()));
    assert!(s.set_tenant_token(&a.id, "digest-a2", at(6)).await.unwrap());
    assert_eq!(s.tenant_by_token("digest-a").await.unwrap(), None);
    assert_eq!(
        s.tenant_by_token("digest-a2").await.unwrap().map(|t| t.id),
        Some(a.id.clone())
    );
    let ghost = TenantId::parse("ghost").unwrap();
    assert!(!s.set_tenant_token(&ghost, "digest-g", at(7)).await.unwrap());

    s.create_wallet_address(&wallet(&a.id, "alice", 1))
        .await
        .unwrap();
    assert_eq!(
        s.delete_tenant(&a.id).await.unwrap(),
        TenantDeletion::HasWalletAddresses
    );
    assert!(s.get_tenant(&a.id).await.unwrap().is_some());
    let b = tenant("b", "https://wallet.b.example");
    s.create_tenant(&b, "digest-b").await.unwrap();
    assert_eq!(
        s.delete_tenant(&b.id).await.unwrap(),
        TenantDeletion::Deleted
    );
    assert_eq!(
        s.delete_tenant(&b.id).await.unwrap(),
        TenantDeletion::NotFound
    );
    assert_eq!(s.list_tenants().await.unwrap().len(), 2);
}

async fn webhook_events_and_secrets_keep_their_tenant(s: &dyn Store) {
    let a = tenant("a", "https://wallet.a.example");
    s.create_tenant(&a, "digest-a").await.unwrap();
    let (hook, idp) = (TenantSecret::Webhook, TenantSecret::Idp);
    assert_eq!(s.tenant_secret(&a.id, hook).await.unwrap(), None);
    assert!(s
        .set_tenant_secret(&a.id, hook, Some("sealed"))
        .await
        .unwrap());
    assert!(s
        .set_tenant_secret(&a.id, idp, Some("other"))
        .await
        .unwrap());
    assert_eq!(
        s.tenant_secret(&a.id, hook).await.unwrap().as_deref(),
        Some("sealed")
    );
    assert_eq!(
        s.tenant_secret(&a.id, idp).await.unwrap().as_deref(),
        Some("other")
    );
    assert!(s.set_tenant_secret(&a.id, hook, None).await.unwrap());
    assert_eq!(s.tenant_secret(&a.id, hook).await.unwrap(), None);
    let ghost = TenantId::parse("ghost").unwrap();
    assert!(!s.set_tenant_secret(&ghost, idp, Some("x")).await.unwrap());

    let event = |id: &str, tenant: &TenantId| WebhookEvent {
        id: id.into(),
        tenant: tenant.clone(),
        kind: EventKind::IncomingPaymentCreated,
        data: "{}".into(),
        attempts: 0,
        next_attempt_at: at(0),
        delivered_at: None,
        created_at: at(0),
    };
    let events = [event("e1", &a.id), event("e2", &TenantId::operator())];
    s.insert_webhook_events(&events).await.unwrap();
    let mut claimed = s.claim_webhook_events(at(1), 60_000, 10).await.unwrap();
    claimed.sort_by(|x, y| x.id.cmp(&y.id));
    let tenants: Vec<_> = claimed.iter().map(|e| e.tenant.to_string()).collect();
    assert_eq!(tenants, ["a", "default"]);
}

async fn fees_are_each_tenant_s_own(s: &dyn Store) {
    let a = tenant("a", "https://wallet.a.example");
    s.create_tenant(&a, "digest-a").await.unwrap();
    let operator = TenantId::operator();
    let usd = Asset::parse("USD", 2).unwrap();
    s.set_fee(&operator, &usd, Fee::new(30, 100).unwrap(), at(1))
        .await
        .unwrap();
    s.set_fee(&a.id, &usd, Fee::new(5, 0).unwrap(), at(2))
        .await
        .unwrap();
    let fees = |all: Vec<opd_store::FeeRow>| -> Vec<(String, u64, u16)> {
        all.into_iter()
            .map(|f| (f.tenant.to_string(), f.fee.fixed, f.fee.basis_points))
            .collect()
    };
    assert_eq!(
        fees(s.list_fees().await.unwrap()),
        [("a".into(), 5, 0), ("default".into(), 30, 100)]
    );
    assert!(s.delete_fee(&a.id, &usd).await.unwrap());
    assert!(!s.delete_fee(&a.id, &usd).await.unwrap());
    assert_eq!(
        fees(s.list_fees().await.unwrap()),
        [("default".into(), 30, 100)]
    );
    // A deleted tenant's fees go with it.
    s.set_fee(&a.id, &usd, Fee::new(7, 0).unwrap(), at(3))
        .await
        .unwrap();
    assert_eq!(
        s.delete_tenant(&a.id).await.unwrap(),
        TenantDeletion::Deleted
    );
    assert_eq!(
        fees(s.list_fees().await.unwrap()),
        [("default".into(), 30, 100)]
    );
}
