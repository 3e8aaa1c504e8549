//! Wallet addresses, their keys, and the password their owner approves
//! grants with on the consent page.

use async_trait::async_trait;
use opd_core::owner_login::LoginBudget;
use opd_core::wallet_address::{PublicKey, WalletAddress, WalletAddressKey, WalletAddressPath};
use opd_core::{TenantId, Timestamp, WalletAddressId};

use crate::platform::db::{params, Stmt};
use crate::platform::rows::{asset, corrupt, id, opt_time, time, Columns};
use crate::{SqlStore, StoreError, StoreResult};

/// Wallet addresses and keys.
#[async_trait]
pub trait WalletStore: Send + Sync {
    /// Fails with `Conflict` when the path is taken.
    async fn create_wallet_address(&self, wallet: &WalletAddress) -> StoreResult<()>;
    async fn get_wallet_address(&self, id: WalletAddressId) -> StoreResult<Option<WalletAddress>>;
    /// The tenant's wallet address at `path`: paths are unique per tenant.
    async fn get_wallet_address_by_path(
        &self,
        tenant: &TenantId,
        path: &WalletAddressPath,
    ) -> StoreResult<Option<WalletAddress>>;
    /// Every wallet address, or the tenant's, ordered by path.
    async fn list_wallet_addresses(
        &self,
        tenant: Option<&TenantId>,
    ) -> StoreResult<Vec<WalletAddress>>;
    /// Sets `deactivated_at` if it is not set; returns the wallet address.
    async fn deactivate_wallet_address(
        &self,
        id: WalletAddressId,
        at: Timestamp,
    ) -> StoreResult<Option<WalletAddress>>;
    /// Fails with `Conflict` when the wallet address has a key with that kid.
    async fn add_key(&self, key: &WalletAddressKey) -> StoreResult<()>;
    /// Marks a key revoked; `false` when there is no such unrevoked key.
    async fn revoke_key(
        &self,
        wallet: WalletAddressId,
        kid: &str,
        at: Timestamp,
    ) -> StoreResult<bool>;
    /// The wallet address's keys, oldest first; revoked ones only on request.
    async fn list_keys(
        &self,
        wallet: WalletAddressId,
        include_revoked: bool,
    ) -> StoreResult<Vec<WalletAddressKey>>;
    /// Sets the password hash the wallet address owner logs in with on the
    /// consent page, and gives its login a fresh budget (no pause).
    async fn set_owner_password(
        &self,
        wallet: WalletAddressId,
        hash: &str,
        at: Timestamp,
    ) -> StoreResult<()>;
    async fn get_owner_password(&self, wallet: WalletAddressId) -> StoreResult<Option<String>>;
    /// The owner login's budget of password checks; `None` without a
    /// password.
    async fn owner_login_budget(&self, wallet: WalletAddressId)
        -> StoreResult<Option<LoginBudget>>;
    /// Replaces the budget with `to` if it is still `from`; `false` when
    /// another attempt changed it first (read it again).
    async fn swap_owner_login_budget(
        &self,
        wallet: WalletAddressId,
        from: &LoginBudget,
        to: &LoginBudget,
    ) -> StoreResult<bool>;
}

const WALLET_COLUMNS: &str = "CAST(id AS TEXT) AS id, tenant_id, path, asset_code, \
    CAST(asset_scale AS BIGINT) AS asset_scale, public_name, created_at, deactivated_at";
const KEY_COLUMNS: &str =
    "CAST(wallet_address_id AS TEXT) AS wallet_address_id, kid, x, created_at, revoked_at";

static INSERT_WALLET: Stmt = Stmt::new(&[
    "INSERT INTO wallet_addresses (id, tenant_id, path, asset_code, asset_scale, public_name, \
     created_at, deactivated_at) VALUES (?::uuid, ?, ?, ?, ?, ?, ?, ?)",
]);
static WALLET_BY_ID: Stmt = Stmt::new(&[
    "SELECT ",
    WALLET_COLUMNS,
    " FROM wallet_addresses WHERE id = ?::uuid",
]);
static WALLET_BY_PATH: Stmt = Stmt::new(&[
    "SELECT ",
    WALLET_COLUMNS,
    " FROM wallet_addresses WHERE tenant_id = ? AND path = ?",
]);
static LIST_WALLETS: Stmt = Stmt::new(&[
    "SELECT ",
    WALLET_COLUMNS,
    " FROM wallet_addresses ORDER BY path, tenant_id",
]);
static LIST_TENANT_WALLETS: Stmt = Stmt::new(&[
    "SELECT ",
    WALLET_COLUMNS,
    " FROM wallet_addresses WHERE tenant_id = ? ORDER BY path",
]);
static DEACTIVATE_WALLET: Stmt = Stmt::new(&[
    "UPDATE wallet_addresses SET deactivated_at = COALESCE(deactivated_at, ?) WHERE id = ?::uuid \
     RETURNING ",
    WALLET_COLUMNS,
]);
static INSERT_KEY: Stmt = Stmt::new(&[
    "INSERT INTO wallet_address_keys (wallet_address_id, kid, x, created_at, revoked_at) \
     VALUES (?::uuid, ?, ?, ?, ?)",
]);
static REVOKE_KEY: Stmt = Stmt::new(&["UPDATE wallet_address_keys SET revoked_at = ? \
     WHERE wallet_address_id = ?::uuid AND kid = ? AND revoked_at IS NULL"]);
static LIST_KEYS: Stmt = Stmt::new(&[
    "SELECT ",
    KEY_COLUMNS,
    " FROM wallet_address_keys WHERE wallet_address_id = ?::uuid \
     AND (?::boolean OR revoked_at IS NULL) ORDER BY created_at, kid",
]);
static SET_OWNER_PASSWORD: Stmt = Stmt::new(&[
    "INSERT INTO wallet_owner_logins (wallet_address_id, password_hash, updated_at) \
     VALUES (?::uuid, ?, ?) ON CONFLICT (wallet_address_id) DO UPDATE \
     SET password_hash = excluded.password_hash, updated_at = excluded.updated_at, \
     attempts = 0, pauses = 0, paused_until = 0",
]);
static GET_OWNER_PASSWORD: Stmt =
    Stmt::new(&["SELECT password_hash FROM wallet_owner_logins WHERE wallet_address_id = ?::uuid"]);

static GET_LOGIN_BUDGET: Stmt = Stmt::new(&[
    "SELECT attempts, pauses, paused_until FROM wallet_owner_logins \
     WHERE wallet_address_id = ?::uuid",
]);
static SWAP_LOGIN_BUDGET: Stmt = Stmt::new(&[
    "UPDATE wallet_owner_logins SET attempts = ?, pauses = ?, paused_until = ? \
     WHERE wallet_address_id = ?::uuid AND attempts = ? AND pauses = ? AND paused_until = ?",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &INSERT_WALLET,
    &WALLET_BY_ID,
    &WALLET_BY_PATH,
    &LIST_WALLETS,
    &LIST_TENANT_WALLETS,
    &DEACTIVATE_WALLET,
    &INSERT_KEY,
    &REVOKE_KEY,
    &LIST_KEYS,
    &SET_OWNER_PASSWORD,
    &GET_OWNER_PASSWORD,
    &GET_LOGIN_BUDGET,
    &SWAP_LOGIN_BUDGET,
];

pub(crate) fn wallet_from_row(row: &impl Columns) -> StoreResult<WalletAddress> {
    Ok(WalletAddress {
        id: WalletAddressId::from_uuid(id(row, "id")?),
        tenant: TenantId::parse(&row.text("tenant_id")?).map_err(|_| corrupt("tenant id"))?,
        path: WalletAddressPath::parse_any(&row.text("path")?)
            .map_err(|_| corrupt("wallet address path"))?,
        asset: asset(&row.text("asset_code")?, row.int("asset_scale")?)?,
        public_name: row.opt_text("public_name")?,
        created_at: time(row, "created_at")?,
        deactivated_at: opt_time(row, "deactivated_at")?,
    })
}

pub(crate) fn key_from_row(row: &impl Columns) -> StoreResult<WalletAddressKey> {
    Ok(WalletAddressKey {
        wallet_address_id: WalletAddressId::from_uuid(id(row, "wallet_address_id")?),
        key: PublicKey {
            kid: row.text("kid")?,
            x: row.text("x")?,
        },
        created_at: time(row, "created_at")?,
        revoked_at: opt_time(row, "revoked_at")?,
    })
}

#[async_trait]
impl WalletStore for SqlStore {
    async fn create_wallet_address(&self, w: &WalletAddress) -> StoreResult<()> {
        let params = params![
            w.id.to_string(),
            w.tenant.as_str(),
            w.path.as_str(),
            w.asset.code.as_str(),
            w.asset.scale,
            &w.public_name,
            w.created_at,
            w.deactivated_at,
        ];
        self.db.write(&INSERT_WALLET, params).await?;
        Ok(())
    }

    async fn get_wallet_address(&self, id: WalletAddressId) -> StoreResult<Option<WalletAddress>> {
        let row = self
            .db
            .read_opt(&WALLET_BY_ID, params![id.to_string()])
            .await?;
        row.as_ref().map(wallet_from_row).transpose()
    }

    async fn get_wallet_address_by_path(
        &self,
        tenant: &TenantId,
        path: &WalletAddressPath,
    ) -> StoreResult<Option<WalletAddress>> {
        let row = self
            .db
            .read_opt(&WALLET_BY_PATH, params![tenant.as_str(), path.as_str()])
            .await?;
        row.as_ref().map(wallet_from_row).transpose()
    }

    async fn list_wallet_addresses(
        &self,
        tenant: Option<&TenantId>,
    ) -> StoreResult<Vec<WalletAddress>> {
        let rows = match tenant {
            None => self.db.read(&LIST_WALLETS, &[]).await?,
            Some(t) => {
                self.db
                    .read(&LIST_TENANT_WALLETS, params![t.as_str()])
                    .await?
            }
        };
        rows.iter().map(wallet_from_row).collect()
    }

    async fn deactivate_wallet_address(
        &self,
        id: WalletAddressId,
        at: Timestamp,
    ) -> StoreResult<Option<WalletAddress>> {
        let row = self
            .db
            .write_returning(&DEACTIVATE_WALLET, params![at, id.to_string()])
            .await?;
        row.as_ref().map(wallet_from_row).transpose()
    }

    async fn add_key(&self, k: &WalletAddressKey) -> StoreResult<()> {
        let params = params![
            k.wallet_address_id.to_string(),
            &k.key.kid,
            &k.key.x,
            k.created_at,
            k.revoked_at,
        ];
        self.db.write(&INSERT_KEY, params).await?;
        Ok(())
    }

    async fn revoke_key(
        &self,
        wallet: WalletAddressId,
        kid: &str,
        at: Timestamp,
    ) -> StoreResult<bool> {
        let n = self
            .db
            .write(&REVOKE_KEY, params![at, wallet.to_string(), kid])
            .await?;
        Ok(n > 0)
    }

    async fn list_keys(
        &self,
        wallet: WalletAddressId,
        include_revoked: bool,
    ) -> StoreResult<Vec<WalletAddressKey>> {
        let rows = self
            .db
            .read(&LIST_KEYS, params![wallet.to_string(), include_revoked])
            .await?;
        rows.iter().map(key_from_row).collect()
    }

    async fn set_owner_password(
        &self,
        wallet: WalletAddressId,
        hash: &str,
        at: Timestamp,
    ) -> StoreResult<()> {
        self.db
            .write(&SET_OWNER_PASSWORD, params![wallet.to_string(), hash, at])
            .await?;
        Ok(())
    }

    async fn get_owner_password(&self, wallet: WalletAddressId) -> StoreResult<Option<String>> {
        let row = self
            .db
            .read_opt(&GET_OWNER_PASSWORD, params![wallet.to_string()])
            .await?;
        row.map(|r| r.text("password_hash")).transpose()
    }

    async fn owner_login_budget(
        &self,
        wallet: WalletAddressId,
    ) -> StoreResult<Option<LoginBudget>> {
        let row = self
            .db
            .read_opt(&GET_LOGIN_BUDGET, params![wallet.to_string()])
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let count = |col: &str| -> StoreResult<u32> {
            u32::try_from(row.int(col)?)
                .map_err(|_| StoreError::Corrupt(format!("{col} out of range")))
        };
        Ok(Some(LoginBudget {
            attempts: count("attempts")?,
            pauses: count("pauses")?,
            paused_until: Timestamp::from_unix_millis(row.int("paused_until")?),
        }))
    }

    async fn swap_owner_login_budget(
        &self,
        wallet: WalletAddressId,
        from: &LoginBudget,
        to: &LoginBudget,
    ) -> StoreResult<bool> {
        let n = self
            .db
            .write(
                &SWAP_LOGIN_BUDGET,
                params![
                    i64::from(to.attempts),
                    i64::from(to.pauses),
                    to.paused_until,
                    wallet.to_string(),
                    i64::from(from.attempts),
                    i64::from(from.pauses),
                    from.paused_until
                ],
            )
            .await?;
        Ok(n > 0)
    }
}
