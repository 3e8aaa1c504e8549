//! The authorization server's grants and access tokens. Access items and
//! client keys are kept as the JSON the domain layer (`opd-gnap`) produces;
//! token values are never stored, only digests. The records and their rows
//! are [`records`]'s. May use `access` (the replay claim a client's
//! request carries) and `platform`.

use async_trait::async_trait;
use opd_core::{GrantId, Timestamp};

use crate::access::claim::{self, RequestClaim};
use crate::platform::db::{params, Param, Stmt, Tx};
use crate::platform::rows::Columns as _;
use crate::{SqlStore, StoreResult};

pub mod owners;
mod records;

pub(crate) use records::{grant_from_row, GRANT_COLUMNS};
use records::{token_from_row, TOKEN_COLUMNS};
pub use records::{AccessTokenRecord, GrantRecord};

/// Grants and access tokens. The writes a client's signed request makes
/// take its replay claim (`claim`, see [`crate::claim`]), written in the
/// same transaction; the others pass `None`.
#[async_trait]
pub trait GrantStore: Send + Sync {
    /// Stores a new grant, with its first access token when it is issued
    /// at once (non-interactive grants).
    async fn create_grant(
        &self,
        grant: &GrantRecord,
        token: Option<&AccessTokenRecord>,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<()>;
    async fn get_grant(&self, id: GrantId) -> StoreResult<Option<GrantRecord>>;
    async fn get_grant_by_continue_id(&self, continue_id: &str)
        -> StoreResult<Option<GrantRecord>>;
    async fn get_grant_by_interaction(&self, interact_id: &str)
        -> StoreResult<Option<GrantRecord>>;
    /// Writes the grant's changing fields (state, finalization, interaction
    /// state and ref, continuation token, last continued, updated) if it is
    /// still at `grant.version`, bumping the version, and stores `token` in
    /// the same transaction. `false` when another request changed it first.
    async fn update_grant(
        &self,
        grant: &GrantRecord,
        token: Option<&AccessTokenRecord>,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<bool>;
    async fn get_access_token(&self, digest: &str) -> StoreResult<Option<AccessTokenRecord>>;
    async fn get_access_token_by_management_id(
        &self,
        management_id: &str,
    ) -> StoreResult<Option<AccessTokenRecord>>;
    /// Revokes the token at `old_management_id` and stores `new`, in one
    /// transaction; `false` (and nothing stored) when the old one was
    /// already revoked or does not exist.
    async fn rotate_access_token(
        &self,
        old_management_id: &str,
        new: &AccessTokenRecord,
        at: Timestamp,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<bool>;
    /// `false` when there is no such unrevoked token.
    async fn revoke_access_token(
        &self,
        management_id: &str,
        at: Timestamp,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<bool>;
    /// Finalizes the grant as revoked and revokes all its tokens; `false`
    /// when it was already finalized as revoked or does not exist.
    async fn revoke_grant(
        &self,
        id: GrantId,
        at: Timestamp,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<bool>;
    /// How many of the client's interactive grants wait for a decision
    /// (their interaction not expired at `now`).
    async fn pending_interactions(&self, client: &str, now: Timestamp) -> StoreResult<u64>;
}

static INSERT_GRANT: Stmt = Stmt::new(&[
    "INSERT INTO grants (id, tenant_id, state, finalization, client_wallet_address, client_jwk, \
     access, continue_id, continue_token_digest, interact_id, interact_nonce, interact_ref, \
     interaction_state, interaction_expires_at, finish_uri, client_nonce, wallet_address_id, \
     last_continued_at, version, created_at, updated_at) \
     VALUES (?::uuid, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::uuid, ?, ?, ?, ?)",
]);
static GRANT_BY_ID: Stmt =
    Stmt::new(&["SELECT ", GRANT_COLUMNS, " FROM grants WHERE id = ?::uuid"]);
static GRANT_BY_CONTINUE_ID: Stmt = Stmt::new(&[
    "SELECT ",
    GRANT_COLUMNS,
    " FROM grants WHERE continue_id = ?",
]);
static GRANT_BY_INTERACTION: Stmt = Stmt::new(&[
    "SELECT ",
    GRANT_COLUMNS,
    " FROM grants WHERE interact_id = ?",
]);
static UPDATE_GRANT: Stmt = Stmt::new(&[
    "UPDATE grants SET state = ?, finalization = ?, interact_ref = ?, interaction_state = ?, \
     last_continued_at = ?, updated_at = ?, continue_token_digest = ?, version = version + 1 \
     WHERE id = ?::uuid AND version = ?",
]);
static REVOKE_GRANT: Stmt = Stmt::new(&[
    "UPDATE grants SET state = 'finalized', finalization = 'revoked', updated_at = ?, \
     version = version + 1 WHERE id = ?::uuid AND (finalization IS NULL OR finalization <> 'revoked')",
]);
static INSERT_TOKEN: Stmt = Stmt::new(&[
    "INSERT INTO access_tokens (digest, management_id, grant_id, access, expires_at, revoked_at, \
     created_at) VALUES (?, ?, ?::uuid, ?, ?, ?, ?)",
]);
static TOKEN_BY_DIGEST: Stmt = Stmt::new(&[
    "SELECT ",
    TOKEN_COLUMNS,
    " FROM access_tokens WHERE digest = ?",
]);
static TOKEN_BY_MANAGEMENT_ID: Stmt = Stmt::new(&[
    "SELECT ",
    TOKEN_COLUMNS,
    " FROM access_tokens WHERE management_id = ?",
]);
static REVOKE_TOKEN: Stmt = Stmt::new(&[
    "UPDATE access_tokens SET revoked_at = ? WHERE management_id = ? AND revoked_at IS NULL",
]);
static REVOKE_GRANT_TOKENS: Stmt = Stmt::new(&[
    "UPDATE access_tokens SET revoked_at = ? WHERE grant_id = ?::uuid AND revoked_at IS NULL",
]);

static PENDING_INTERACTIONS: Stmt = Stmt::new(&[
    "SELECT COUNT(*) AS n FROM grants WHERE client_wallet_address = ? AND state = 'pending' \
     AND interaction_expires_at > ?",
]);

pub(crate) static STATEMENTS: &[&Stmt] = &[
    &PENDING_INTERACTIONS,
    &INSERT_GRANT,
    &GRANT_BY_ID,
    &GRANT_BY_CONTINUE_ID,
    &GRANT_BY_INTERACTION,
    &UPDATE_GRANT,
    &REVOKE_GRANT,
    &INSERT_TOKEN,
    &TOKEN_BY_DIGEST,
    &TOKEN_BY_MANAGEMENT_ID,
    &REVOKE_TOKEN,
    &REVOKE_GRANT_TOKENS,
];

async fn insert_token(tx: &mut Tx<'_>, t: &AccessTokenRecord) -> StoreResult<()> {
    let params = params![
        &t.digest,
        &t.management_id,
        t.grant_id.to_string(),
        &t.access,
        t.expires_at,
        t.revoked_at,
        t.created_at,
    ];
    tx.execute(&INSERT_TOKEN, params).await?;
    Ok(())
}

impl SqlStore {
    async fn grant_where(
        &self,
        stmt: &'static Stmt,
        key: Param,
    ) -> StoreResult<Option<GrantRecord>> {
        let row = self.db.read_opt(stmt, &[key]).await?;
        row.as_ref().map(grant_from_row).transpose()
    }

    async fn token_where(
        &self,
        stmt: &'static Stmt,
        key: &str,
    ) -> StoreResult<Option<AccessTokenRecord>> {
        let row = self.db.read_opt(stmt, params![key]).await?;
        row.as_ref().map(token_from_row).transpose()
    }
}

#[async_trait]
impl GrantStore for SqlStore {
    async fn create_grant(
        &self,
        g: &GrantRecord,
        token: Option<&AccessTokenRecord>,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<()> {
        let params = params![
            g.id.to_string(),
            g.tenant.as_str(),
            &g.state,
            &g.finalization,
            &g.client_wallet_address,
            &g.client_jwk,
            &g.access,
            &g.continue_id,
            &g.continue_token_digest,
            &g.interact_id,
            &g.interact_nonce,
            &g.interact_ref,
            &g.interaction_state,
            g.interaction_expires_at,
            &g.finish_uri,
            &g.client_nonce,
            g.wallet_address_id.map(|w| w.to_string()),
            g.last_continued_at,
            g.version,
            g.created_at,
            g.updated_at,
        ];
        let mut tx = claim::begin(&self.db, claim).await?;
        tx.execute(&INSERT_GRANT, params).await?;
        if let Some(t) = token {
            insert_token(&mut tx, t).await?;
        }
        tx.commit().await
    }

    async fn get_grant(&self, id: GrantId) -> StoreResult<Option<GrantRecord>> {
        self.grant_where(&GRANT_BY_ID, id.to_string().into()).await
    }

    async fn get_grant_by_continue_id(
        &self,
        continue_id: &str,
    ) -> StoreResult<Option<GrantRecord>> {
        self.grant_where(&GRANT_BY_CONTINUE_ID, continue_id.into())
            .await
    }

    async fn get_grant_by_interaction(
        &self,
        interact_id: &str,
    ) -> StoreResult<Option<GrantRecord>> {
        self.grant_where(&GRANT_BY_INTERACTION, interact_id.into())
            .await
    }

    async fn update_grant(
        &self,
        g: &GrantRecord,
        token: Option<&AccessTokenRecord>,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<bool> {
        let params = params![
            &g.state,
            &g.finalization,
            &g.interact_ref,
            &g.interaction_state,
            g.last_continued_at,
            g.updated_at,
            &g.continue_token_digest,
            g.id.to_string(),
            g.version,
        ];
        let mut tx = claim::begin(&self.db, claim).await?;
        if tx.execute(&UPDATE_GRANT, params).await? == 0 {
            return Ok(false);
        }
        if let Some(t) = token {
            insert_token(&mut tx, t).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    async fn get_access_token(&self, digest: &str) -> StoreResult<Option<AccessTokenRecord>> {
        self.token_where(&TOKEN_BY_DIGEST, digest).await
    }

    async fn get_access_token_by_management_id(
        &self,
        management_id: &str,
    ) -> StoreResult<Option<AccessTokenRecord>> {
        self.token_where(&TOKEN_BY_MANAGEMENT_ID, management_id)
            .await
    }

    async fn rotate_access_token(
        &self,
        old: &str,
        new: &AccessTokenRecord,
        at: Timestamp,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<bool> {
        let mut tx = claim::begin(&self.db, claim).await?;
        if tx.execute(&REVOKE_TOKEN, params![at, old]).await? == 0 {
            return Ok(false);
        }
        insert_token(&mut tx, new).await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn revoke_access_token(
        &self,
        management_id: &str,
        at: Timestamp,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<bool> {
        let revoke = params![at, management_id];
        Ok(claim::write(&self.db, claim, &REVOKE_TOKEN, revoke).await? > 0)
    }

    async fn revoke_grant(
        &self,
        id: GrantId,
        at: Timestamp,
        claim: Option<&RequestClaim>,
    ) -> StoreResult<bool> {
        let id = id.to_string();
        let mut tx = claim::begin(&self.db, claim).await?;
        let revoked = tx.execute(&REVOKE_GRANT, params![at, &id]).await?;
        tx.execute(&REVOKE_GRANT_TOKENS, params![at, &id]).await?;
        tx.commit().await?;
        Ok(revoked > 0)
    }

    async fn pending_interactions(&self, client: &str, now: Timestamp) -> StoreResult<u64> {
        let row = self
            .db
            .read_opt(&PENDING_INTERACTIONS, params![client, now])
            .await?;
        let n = match row {
            Some(r) => r.int("n")?,
            None => 0,
        };
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
