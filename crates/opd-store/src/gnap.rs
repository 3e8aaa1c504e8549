//! Stored forms of the authorization server's grants and access tokens.
//! Access items and client keys are kept as the JSON the domain layer
//! (`opd-gnap`) produces; token values are never stored, only digests.

use opd_core::{GrantId, Timestamp, WalletAddressId};

/// A grant as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRecord {
    pub id: GrantId,
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
