//! The store of the wallet owners' pages, in the conformance style (every
//! case on SQLite and PostgreSQL): sessions found by digest until they
//! expire, whose they are, signed out one by one or all at once; the
//! grants an owner gave, newest first, theirs only.

#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_core::wallet_address::{WalletAddress, WalletAddressPath};
use opd_core::{Asset, GrantId, SeededRandom, Timestamp, WalletAddressId};
use opd_store::{GrantRecord, Store};

opd_testkit::conformance!(
    owner_sessions_are_found_by_digest_until_they_expire,
    the_grants_an_owner_gave_are_theirs_newest_first,
);

const T0: i64 = 1_790_000_000_000;

fn at(ms: i64) -> Timestamp {
    Timestamp::from_unix_millis(T0 + ms)
}

fn wallet(path: &str, n: i64) -> WalletAddress {
    WalletAddress {
        id: WalletAddressId::new(at(n), &SeededRandom::new(n as u64)),
        tenant: opd_core::TenantId::operator(),
        path: WalletAddressPath::parse(path).unwrap(),
        asset: Asset::parse("USD", 2).unwrap(),
        public_name: None,
        created_at: at(n),
        deactivated_at: None,
    }
}

fn grant(n: u64, owner: Option<WalletAddressId>) -> GrantRecord {
    let t = at(n as i64);
    GrantRecord {
        id: GrantId::new(t, &SeededRandom::new(700 + n)),
        tenant: opd_core::TenantId::operator(),
        state: "approved".into(),
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
        wallet_address_id: owner,
        last_continued_at: t,
        version: 0,
        created_at: t,
        updated_at: t,
    }
}

async fn owner_sessions_are_found_by_digest_until_they_expire(s: &dyn Store) {
    let (alice, bob) = (wallet("alice", 1), wallet("bob", 2));
    s.create_wallet_address(&alice).await.unwrap();
    s.create_wallet_address(&bob).await.unwrap();
    s.create_owner_session("a1", alice.id, at(0), at(1000))
        .await
        .unwrap();
    s.create_owner_session("a2", alice.id, at(0), at(5000))
        .await
        .unwrap();
    s.create_owner_session("b1", bob.id, at(0), at(5000))
        .await
        .unwrap();
    assert_eq!(
        s.owner_session("a1", at(999)).await.unwrap(),
        Some(alice.id)
    );
    assert_eq!(s.owner_session("b1", at(999)).await.unwrap(), Some(bob.id));
    assert_eq!(s.owner_session("a1", at(1000)).await.unwrap(), None);
    assert_eq!(s.owner_session("unknown", at(0)).await.unwrap(), None);
    // Signing out of b1 also sweeps the expired a1.
    s.delete_owner_session("b1", at(2000)).await.unwrap();
    assert_eq!(s.owner_session("b1", at(2001)).await.unwrap(), None);
    assert_eq!(s.owner_session("a1", at(0)).await.unwrap(), None);
    // A new password signs every session of that owner out.
    s.create_owner_session("b2", bob.id, at(0), at(5000))
        .await
        .unwrap();
    s.delete_owner_sessions(alice.id).await.unwrap();
    assert_eq!(s.owner_session("a2", at(2001)).await.unwrap(), None);
    assert_eq!(s.owner_session("b2", at(2001)).await.unwrap(), Some(bob.id));
}

async fn the_grants_an_owner_gave_are_theirs_newest_first(s: &dyn Store) {
    let (alice, bob) = (wallet("alice", 1), wallet("bob", 2));
    s.create_wallet_address(&alice).await.unwrap();
    s.create_wallet_address(&bob).await.unwrap();
    let grants = [
        grant(0, Some(alice.id)),
        grant(1, Some(bob.id)),
        grant(2, None),
        grant(3, Some(alice.id)),
        grant(4, Some(alice.id)),
    ];
    for g in &grants {
        s.create_grant(g, None, None).await.unwrap();
    }
    let ids = |v: &[GrantRecord]| v.iter().map(|g| g.id).collect::<Vec<_>>();
    let given = s.grants_given(alice.id, 10).await.unwrap();
    assert_eq!(ids(&given), [grants[4].id, grants[3].id, grants[0].id]);
    assert_eq!(
        ids(&s.grants_given(alice.id, 2).await.unwrap()),
        [grants[4].id, grants[3].id]
    );
    assert_eq!(
        ids(&s.grants_given(bob.id, 10).await.unwrap()),
        [grants[1].id]
    );
}
