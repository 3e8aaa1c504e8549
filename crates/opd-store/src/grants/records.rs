//! Grants and access tokens as stored, and how their rows read back.

use opd_core::{GrantId, TenantId, Timestamp, WalletAddressId};

use crate::platform::rows::{corrupt, id, opt_time, time, uuid_from_text, Columns};
use crate::StoreResult;

/// A grant as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRecord {
    pub id: GrantId,
    /// The tenant whose authorization server issued it.
    pub tenant: TenantId,
    /// `pending`, `approved` or `finalized`.
    pub state: String,
    /// With `finalized`: `issued`, `revoked` or `rejected`.
    pub finalization: Option<String>,
    pub client_wallet_address: Option<String>,
    /// The client's JWK as JSON (directed identity).
    pub client_jwk: Option<String>,
    /// The granted access items as JSON.
    pub access: String,
    pub continue_id: String,
    pub continue_token_digest: String,
    pub interact_id: Option<String>,
    pub interact_nonce: Option<String>,
    pub interact_ref: Option<String>,
    /// `pending`, `approved` or `denied`.
    pub interaction_state: Option<String>,
    pub interaction_expires_at: Option<Timestamp>,
    pub finish_uri: Option<String>,
    pub client_nonce: Option<String>,
    /// The wallet address whose owner consents (interactive grants).
    pub wallet_address_id: Option<WalletAddressId>,
    pub last_continued_at: Timestamp,
    /// Bumped by every update; updates name the version they read.
    pub version: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// An access token as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessTokenRecord {
    /// Hex SHA-256 of the token value.
    pub digest: String,
    pub management_id: String,
    pub grant_id: GrantId,
    /// The access items this token carries, as JSON.
    pub access: String,
    pub expires_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

pub(crate) const GRANT_COLUMNS: &str = "CAST(id AS TEXT) AS id, tenant_id, state, finalization, \
    client_wallet_address, client_jwk, access, continue_id, continue_token_digest, interact_id, \
    interact_nonce, interact_ref, interaction_state, interaction_expires_at, finish_uri, \
    client_nonce, CAST(wallet_address_id AS TEXT) AS wallet_address_id, last_continued_at, \
    version, created_at, updated_at";
pub(super) const TOKEN_COLUMNS: &str =
    "digest, management_id, CAST(grant_id AS TEXT) AS grant_id, access, \
    expires_at, revoked_at, created_at";

pub(crate) fn grant_from_row(row: &impl Columns) -> StoreResult<GrantRecord> {
    Ok(GrantRecord {
        id: GrantId::from_uuid(id(row, "id")?),
        tenant: TenantId::parse(&row.text("tenant_id")?).map_err(|_| corrupt("tenant id"))?,
        state: row.text("state")?,
        finalization: row.opt_text("finalization")?,
        client_wallet_address: row.opt_text("client_wallet_address")?,
        client_jwk: row.opt_text("client_jwk")?,
        access: row.text("access")?,
        continue_id: row.text("continue_id")?,
        continue_token_digest: row.text("continue_token_digest")?,
        interact_id: row.opt_text("interact_id")?,
        interact_nonce: row.opt_text("interact_nonce")?,
        interact_ref: row.opt_text("interact_ref")?,
        interaction_state: row.opt_text("interaction_state")?,
        interaction_expires_at: opt_time(row, "interaction_expires_at")?,
        finish_uri: row.opt_text("finish_uri")?,
        client_nonce: row.opt_text("client_nonce")?,
        wallet_address_id: row
            .opt_text("wallet_address_id")?
            .map(|s| uuid_from_text(&s).map(WalletAddressId::from_uuid))
            .transpose()?,
        last_continued_at: time(row, "last_continued_at")?,
        version: row.int("version")?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
    })
}

pub(crate) fn token_from_row(row: &impl Columns) -> StoreResult<AccessTokenRecord> {
    Ok(AccessTokenRecord {
        digest: row.text("digest")?,
        management_id: row.text("management_id")?,
        grant_id: GrantId::from_uuid(id(row, "grant_id")?),
        access: row.text("access")?,
        expires_at: time(row, "expires_at")?,
        revoked_at: opt_time(row, "revoked_at")?,
        created_at: time(row, "created_at")?,
    })
}
