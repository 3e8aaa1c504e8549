//! Tenants: the wallet providers one opd serves, and the digest of each
//! one's admin token. The operator's tenant (`default`) is made by the
//! migration that brought tenants and is never deleted.

use async_trait::async_trait;
use opd_core::tenant::Tenant;
use opd_core::{TenantId, Timestamp};

use crate::platform::db::{params, Stmt};
use crate::platform::rows::{corrupt, time, Columns};
use crate::{SqlStore, StoreResult};

/// A secret of a tenant's, stored sealed by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenantSecret {
    /// The key of its webhook events' signature.
    Webhook,
    /// What its consent app calls the identity-provider API with.
    Idp,
}

/// What deleting a tenant did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenantDeletion {
    Deleted,
    NotFound,
    /// It still has wallet addresses (and so may hold money): nothing changed.
    HasWalletAddresses,
}

/// Tenants and their admin tokens.
#[async_trait]
pub trait TenantStore: Send + Sync {
    /// Fails with `Conflict` when the id, the public URL or the token
    /// digest is taken.
    async fn create_tenant(&self, tenant: &Tenant, token_digest: &str) -> StoreResult<()>;
    async fn get_tenant(&self, id: &TenantId) -> StoreResult<Option<Tenant>>;
    /// Every tenant, the operator's included, by id.
    async fn list_tenants(&self) -> StoreResult<Vec<Tenant>>;
    /// Replaces the name, URLs and `updated_at`; `false` when there is no
    /// such tenant. Fails with `Conflict` when the public URL is taken.
    async fn update_tenant(&self, tenant: &Tenant) -> StoreResult<bool>;
    /// Replaces the tenant's admin token digest; `false` when there is no
    /// such tenant.
    async fn set_tenant_token(
        &self,
        id: &TenantId,
        token_digest: &str,
        at: Timestamp,
    ) -> StoreResult<bool>;
    /// The tenant whose admin token has this digest.
    async fn tenant_by_token(&self, token_digest: &str) -> StoreResult<Option<Tenant>>;
    /// Deletes a tenant that has no wallet addresses.
    async fn delete_tenant(&self, id: &TenantId) -> StoreResult<TenantDeletion>;
    /// Replaces one of the tenant's secrets (sealed by the caller; `None`
    /// removes it); `false` when there is no such tenant.
    async fn set_tenant_secret(
        &self,
        id: &TenantId,
        which: TenantSecret,
        sealed: Option<&str>,
    ) -> StoreResult<bool>;
    /// One of the tenant's secrets as sealed, if it has it.
    async fn tenant_secret(
        &self,
        id: &TenantId,
        which: TenantSecret,
    ) -> StoreResult<Option<String>>;
}

const COLUMNS: &str =
    "id, public_name, public_url, auth_server_url, webhook_url, idp_consent_url, created_at, \
    updated_at";

static INSERT: Stmt = Stmt::new(&[
    "INSERT INTO tenants (id, public_name, public_url, auth_server_url, webhook_url, \
     idp_consent_url, token_digest, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
]);
static BY_ID: Stmt = Stmt::new(&["SELECT ", COLUMNS, " FROM tenants WHERE id = ?"]);
static LIST: Stmt = Stmt::new(&["SELECT ", COLUMNS, " FROM tenants ORDER BY id"]);
static UPDATE: Stmt = Stmt::new(&[
    "UPDATE tenants SET public_name = ?, public_url = ?, auth_server_url = ?, webhook_url = ?, \
     idp_consent_url = ?, updated_at = ? WHERE id = ?",
]);
static SET_TOKEN: Stmt =
    Stmt::new(&["UPDATE tenants SET token_digest = ?, updated_at = ? WHERE id = ?"]);
static BY_TOKEN: Stmt = Stmt::new(&["SELECT ", COLUMNS, " FROM tenants WHERE token_digest = ?"]);
static DELETE_EMPTY: Stmt = Stmt::new(&["DELETE FROM tenants WHERE id = ? \
     AND NOT EXISTS (SELECT 1 FROM wallet_addresses WHERE tenant_id = ?)"]);

static SET_WEBHOOK_SECRET: Stmt =
    Stmt::new(&["UPDATE tenants SET webhook_secret = ? WHERE id = ?"]);
static WEBHOOK_SECRET: Stmt =
    Stmt::new(&["SELECT webhook_secret AS secret FROM tenants WHERE id = ?"]);
static SET_IDP_SECRET: Stmt = Stmt::new(&["UPDATE tenants SET idp_secret = ? WHERE id = ?"]);
static IDP_SECRET: Stmt = Stmt::new(&["SELECT idp_secret AS secret FROM tenants WHERE id = ?"]);

/// The statements that write and read `which`.
fn secret_statements(which: TenantSecret) -> (&'static Stmt, &'static Stmt) {
    match which {
        TenantSecret::Webhook => (&SET_WEBHOOK_SECRET, &WEBHOOK_SECRET),
        TenantSecret::Idp => (&SET_IDP_SECRET, &IDP_SECRET),
    }
}

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &SET_WEBHOOK_SECRET,
    &WEBHOOK_SECRET,
    &SET_IDP_SECRET,
    &IDP_SECRET,
    &INSERT,
    &BY_ID,
    &LIST,
    &UPDATE,
    &SET_TOKEN,
    &BY_TOKEN,
    &DELETE_EMPTY,
];

fn tenant_from_row(row: &impl Columns) -> StoreResult<Tenant> {
    Ok(Tenant {
        id: TenantId::parse(&row.text("id")?).map_err(|_| corrupt("tenant id"))?,
        public_name: row.text("public_name")?,
        public_url: row.opt_text("public_url")?,
        auth_server_url: row.opt_text("auth_server_url")?,
        webhook_url: row.opt_text("webhook_url")?,
        idp_consent_url: row.opt_text("idp_consent_url")?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
    })
}

#[async_trait]
impl TenantStore for SqlStore {
    async fn create_tenant(&self, t: &Tenant, token_digest: &str) -> StoreResult<()> {
        let params = params![
            t.id.as_str(),
            &t.public_name,
            &t.public_url,
            &t.auth_server_url,
            &t.webhook_url,
            &t.idp_consent_url,
            token_digest,
            t.created_at,
            t.updated_at,
        ];
        self.db.write(&INSERT, params).await?;
        Ok(())
    }

    async fn get_tenant(&self, id: &TenantId) -> StoreResult<Option<Tenant>> {
        let row = self.db.read_opt(&BY_ID, params![id.as_str()]).await?;
        row.as_ref().map(tenant_from_row).transpose()
    }

    async fn list_tenants(&self) -> StoreResult<Vec<Tenant>> {
        let rows = self.db.read(&LIST, &[]).await?;
        rows.iter().map(tenant_from_row).collect()
    }

    async fn update_tenant(&self, t: &Tenant) -> StoreResult<bool> {
        let params = params![
            &t.public_name,
            &t.public_url,
            &t.auth_server_url,
            &t.webhook_url,
            &t.idp_consent_url,
            t.updated_at,
            t.id.as_str(),
        ];
        Ok(self.db.write(&UPDATE, params).await? > 0)
    }

    async fn set_tenant_token(
        &self,
        id: &TenantId,
        token_digest: &str,
        at: Timestamp,
    ) -> StoreResult<bool> {
        let params = params![token_digest, at, id.as_str()];
        Ok(self.db.write(&SET_TOKEN, params).await? > 0)
    }

    async fn tenant_by_token(&self, token_digest: &str) -> StoreResult<Option<Tenant>> {
        let row = self.db.read_opt(&BY_TOKEN, params![token_digest]).await?;
        row.as_ref().map(tenant_from_row).transpose()
    }

    async fn set_tenant_secret(
        &self,
        id: &TenantId,
        which: TenantSecret,
        sealed: Option<&str>,
    ) -> StoreResult<bool> {
        let params = params![sealed, id.as_str()];
        Ok(self.db.write(secret_statements(which).0, params).await? > 0)
    }

    async fn tenant_secret(
        &self,
        id: &TenantId,
        which: TenantSecret,
    ) -> StoreResult<Option<String>> {
        let read = secret_statements(which).1;
        let row = self.db.read_opt(read, params![id.as_str()]).await?;
        Ok(row.map(|r| r.opt_text("secret")).transpose()?.flatten())
    }

    async fn delete_tenant(&self, id: &TenantId) -> StoreResult<TenantDeletion> {
        let params = params![id.as_str(), id.as_str()];
        if self.db.write(&DELETE_EMPTY, params).await? > 0 {
            return Ok(TenantDeletion::Deleted);
        }
        Ok(match self.get_tenant(id).await? {
            Some(_) => TenantDeletion::HasWalletAddresses,
            None => TenantDeletion::NotFound,
        })
    }
}
