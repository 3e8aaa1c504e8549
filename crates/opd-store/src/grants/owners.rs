//! What a wallet address's owner sees of their own on their page
//! (`/wallet/<path>` on the authorization listener): their sessions, kept
//! by the digest of the cookie value only (a copy of the database signs
//! nobody in) and shared by every node; and the grants they gave, newest
//! first, by the wallet address they consented for.

use async_trait::async_trait;
use opd_core::{Timestamp, WalletAddressId};

use super::{grant_from_row, GrantRecord, GRANT_COLUMNS};
use crate::platform::db::{params, Stmt};
use crate::platform::rows::{uuid_from_text, Columns as _};
use crate::{SqlStore, StoreResult};

/// Owners' sessions and the grants they gave.
#[async_trait]
pub trait OwnerStore: Send + Sync {
    /// Stores a session of `wallet`'s owner by the digest of its cookie.
    async fn create_owner_session(
        &self,
        digest: &str,
        wallet: WalletAddressId,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> StoreResult<()>;
    /// Whose session it is, if it exists and has not expired at `now`.
    async fn owner_session(
        &self,
        digest: &str,
        now: Timestamp,
    ) -> StoreResult<Option<WalletAddressId>>;
    /// Deletes the session (sign-out), and every session expired at `now`.
    async fn delete_owner_session(&self, digest: &str, now: Timestamp) -> StoreResult<()>;
    /// Deletes every session of `wallet`'s owner (a new password).
    async fn delete_owner_sessions(&self, wallet: WalletAddressId) -> StoreResult<()>;
    /// The grants `wallet`'s owner consented to, newest first; at most
    /// `limit`.
    async fn grants_given(
        &self,
        wallet: WalletAddressId,
        limit: i64,
    ) -> StoreResult<Vec<GrantRecord>>;
}

static CREATE: Stmt = Stmt::new(&[
    "INSERT INTO owner_sessions (digest, wallet_address_id, created_at, expires_at) \
     VALUES (?, ?::uuid, ?, ?)",
]);
static VALID: Stmt = Stmt::new(&[
    "SELECT CAST(wallet_address_id AS TEXT) AS wallet_address_id FROM owner_sessions \
     WHERE digest = ? AND expires_at > ?",
]);
static DELETE: Stmt =
    Stmt::new(&["DELETE FROM owner_sessions WHERE digest = ? OR expires_at <= ?"]);
static DELETE_ALL_OF: Stmt =
    Stmt::new(&["DELETE FROM owner_sessions WHERE wallet_address_id = ?::uuid"]);
static GIVEN: Stmt = Stmt::new(&[
    "SELECT ",
    GRANT_COLUMNS,
    " FROM grants WHERE wallet_address_id = ?::uuid ORDER BY id DESC LIMIT ?",
]);

/// Every statement, for the statement tests.
pub(crate) static STATEMENTS: &[&Stmt] = &[&CREATE, &VALID, &DELETE, &DELETE_ALL_OF, &GIVEN];

#[async_trait]
impl OwnerStore for SqlStore {
    async fn create_owner_session(
        &self,
        digest: &str,
        wallet: WalletAddressId,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> StoreResult<()> {
        let params = params![digest, wallet.to_string(), now, expires_at];
        self.db.write(&CREATE, params).await?;
        Ok(())
    }

    async fn owner_session(
        &self,
        digest: &str,
        now: Timestamp,
    ) -> StoreResult<Option<WalletAddressId>> {
        let row = self.db.read_opt(&VALID, params![digest, now]).await?;
        row.map(|r| uuid_from_text(&r.text("wallet_address_id")?).map(WalletAddressId::from_uuid))
            .transpose()
    }

    async fn delete_owner_session(&self, digest: &str, now: Timestamp) -> StoreResult<()> {
        self.db.write(&DELETE, params![digest, now]).await?;
        Ok(())
    }

    async fn delete_owner_sessions(&self, wallet: WalletAddressId) -> StoreResult<()> {
        self.db
            .write(&DELETE_ALL_OF, params![wallet.to_string()])
            .await?;
        Ok(())
    }

    async fn grants_given(
        &self,
        wallet: WalletAddressId,
        limit: i64,
    ) -> StoreResult<Vec<GrantRecord>> {
        let rows = self
            .db
            .read(&GIVEN, params![wallet.to_string(), limit])
            .await?;
        rows.iter().map(grant_from_row).collect()
    }
}
