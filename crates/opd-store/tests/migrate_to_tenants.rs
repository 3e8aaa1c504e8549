//! A PostgreSQL database made by the release before tenants (migrations 1
//! to 14, byte for byte, recorded as that release recorded them) with a
//! wallet address, its key, an incoming payment and a fee migrates into
//! the operator's tenant with nothing lost. (The SQLite twin is a unit
//! test of the SQLite migrations.)

#![expect(clippy::unwrap_used, reason = "tests fail loudly by design")]

use opd_core::wallet_address::WalletAddressPath;
use opd_core::{IncomingPaymentId, TenantId, WalletAddressId};
use opd_store::{
    ConnectOptions, IncomingPaymentStore, SettingsStore, Store, TenantStore, WalletStore,
};
use sha2::{Digest, Sha384};

const RECORD: &str = "CREATE TABLE IF NOT EXISTS _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMPTZ NOT NULL DEFAULT now(),
    success BOOLEAN NOT NULL,
    checksum BYTEA NOT NULL,
    execution_time BIGINT NOT NULL
)";

const ALICE: &str = "0190a000-0000-7000-8000-000000000001";
const PAYMENT: &str = "0190a000-0000-7000-8000-0000000000a1";

/// Applies the migrations before tenants as the earlier release did.
async fn migrate_as_the_release_before(url: &str) {
    let client = opd_testkit::pg::connect(url).await;
    client.batch_execute(RECORD).await.unwrap();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.as_str() < "0015")
        .collect();
    files.sort();
    assert_eq!(files.len(), 14, "{files:?}");
    for (n, file) in files.iter().enumerate() {
        let sql = std::fs::read_to_string(dir.join(file)).unwrap();
        client.batch_execute(&sql).await.unwrap();
        let version = i64::try_from(n + 1).unwrap();
        let checksum = Sha384::digest(sql.as_bytes()).to_vec();
        client
            .execute(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
                 VALUES ($1, $2, TRUE, $3, 0)",
                &[&version, &file.as_str(), &checksum],
            )
            .await
            .unwrap();
    }
    client
        .batch_execute(&format!(
            "INSERT INTO wallet_addresses (id, path, asset_code, asset_scale, public_name, created_at) \
               VALUES ('{ALICE}', 'alice', 'USD', 2, 'Alice', 1);
             INSERT INTO wallet_address_keys (wallet_address_id, kid, x, created_at) \
               VALUES ('{ALICE}', 'k1', '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', 1);
             INSERT INTO incoming_payments (id, wallet_address_id, asset_code, asset_scale, received_amount, expires_at, created_at, updated_at) \
               VALUES ('{PAYMENT}', '{ALICE}', 'USD', 2, 18446744073709551615, 9, 1, 1);
             INSERT INTO fees (asset_code, asset_scale, fixed, basis_points, updated_at) VALUES ('USD', 2, 30, 100, 1);"
        ))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_database_from_before_tenants_moves_into_the_operator_s_tenant() {
    let url = opd_testkit::pg::fresh_schema_url().await;
    migrate_as_the_release_before(&url).await;
    let mut options = ConnectOptions::new(url);
    options.migrate_postgres = true;
    options.max_connections = 2;
    let store = opd_store::postgres::connect(&options).await.unwrap();

    let operator = TenantId::operator();
    let alice = store
        .get_wallet_address_by_path(&operator, &WalletAddressPath::parse("alice").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(alice.id, WalletAddressId::parse(ALICE).unwrap());
    assert_eq!(alice.tenant, operator);
    assert_eq!(alice.public_name.as_deref(), Some("Alice"));
    assert_eq!(store.list_keys(alice.id, true).await.unwrap().len(), 1);
    let payment = store
        .get_incoming_payment(IncomingPaymentId::parse(PAYMENT).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(payment.received_amount().value, u64::MAX);
    let fees = store.list_fees().await.unwrap();
    assert_eq!(fees.len(), 1);
    assert_eq!(
        (fees[0].tenant.clone(), fees[0].fee.fixed),
        (operator.clone(), 30)
    );
    let tenants = store.list_tenants().await.unwrap();
    assert_eq!(tenants.len(), 1);
    assert!(tenants[0].id.is_operator());
    assert_eq!(
        store.readiness().await.unwrap(),
        opd_store::Readiness::Ready,
        "every migration applied"
    );
}
