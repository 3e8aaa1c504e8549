//! Access tokens: management (`/token/{id}`: rotation and revocation)
//! and introspection for the resource server. Token values are only ever
//! stored as SHA-256 digests.

use opd_core::GrantId;
use opd_gnap::{
    token_digest, AccessItem, AccessItemWire, AccessTokenResponse, ClientIdent, GnapError,
    GnapErrorCode,
};
use opd_store::AccessTokenRecord;

use super::{constant_time_eq, internal, mint_token, store_error, token_response, Grant};
use crate::access::replays::RequestClaim;
use crate::{ServiceError, Services};

/// An access token found by its management id, with its grant, checked
/// against the token value the client presented.
#[derive(Debug, Clone)]
pub struct ManagedToken {
    pub token: AccessTokenRecord,
    pub grant: Grant,
}

/// Looks up `/token/{management id}` for rotation or revocation. An unknown
/// id is `invalid_rotation` (404); a presented value that is not this
/// token's, or a revoked token, is `invalid_client` (401).
pub async fn managed_token(
    services: &Services,
    tenant: &opd_core::TenantId,
    management_id: &str,
    presented: &str,
) -> Result<ManagedToken, GnapError> {
    let token = services
        .store
        .get_access_token_by_management_id(management_id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| {
            GnapError::new(
                GnapErrorCode::InvalidRotation,
                "unknown token management URL",
            )
            .with_status(404)
        })?;
    if !constant_time_eq(token_digest(presented).as_bytes(), token.digest.as_bytes())
        || token.revoked_at.is_some()
    {
        return Err(GnapError::invalid_client("invalid access token").with_status(401));
    }
    let record = services
        .store
        .get_grant(token.grant_id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| internal("token grant"))?;
    // Another tenant's token is unknown at this authorization server.
    if &record.tenant != tenant {
        return Err(GnapError::new(
            GnapErrorCode::InvalidRotation,
            "unknown token management URL",
        )
        .with_status(404));
    }
    let grant = Grant::from_record(record)?;
    if grant.state.is_revoked() {
        return Err(GnapError::invalid_client("the grant was revoked").with_status(401));
    }
    Ok(ManagedToken { token, grant })
}

/// `POST /token/{id}`: a new token with the same access; the old one stops
/// working. Works after expiry (that is what rotation is for). The
/// request's replay `claim` is stored with the new token.
pub async fn rotate_token(
    services: &Services,
    managed: &ManagedToken,
    claim: Option<&RequestClaim>,
) -> Result<AccessTokenResponse, GnapError> {
    let access: Vec<AccessItemWire> =
        serde_json::from_str(&managed.token.access).map_err(|_| internal("token access"))?;
    let access = AccessItem::parse_list(&access).map_err(|_| internal("token access"))?;
    let (value, new) = mint_token(services, managed.grant.record.id, &access);
    let now = services.clock.now();
    if !services
        .store
        .rotate_access_token(&managed.token.management_id, &new, now, claim)
        .await
        .map_err(store_error)?
    {
        return Err(GnapError::invalid_client("invalid access token").with_status(401));
    }
    services
        .changed(crate::platform::changes::Change::Tokens)
        .await;
    let tenant = &managed.grant.record.tenant;
    Ok(token_response(services, tenant, value, &new, &access))
}

/// `DELETE /token/{id}`; the request's replay `claim` is stored with the
/// revocation.
pub async fn revoke_token(
    services: &Services,
    managed: &ManagedToken,
    claim: Option<&RequestClaim>,
) -> Result<(), GnapError> {
    let now = services.clock.now();
    services
        .store
        .revoke_access_token(&managed.token.management_id, now, claim)
        .await
        .map_err(store_error)?;
    services
        .changed(crate::platform::changes::Change::Tokens)
        .await;
    Ok(())
}

/// A live access token, as the resource server needs it.
#[derive(Debug, Clone)]
pub struct ActiveToken {
    pub grant_id: GrantId,
    pub access: Vec<AccessItem>,
    pub client: ClientIdent,
}

/// Token introspection, in process: `None` for an unknown, expired or
/// revoked token, or one whose grant was revoked.
pub async fn introspect(
    services: &Services,
    token: &str,
) -> Result<Option<ActiveToken>, ServiceError> {
    let digest = token_digest(token);
    if let Some((active, expires_at)) = services.access.tokens.get(&digest) {
        if services.clock.now() < expires_at {
            return Ok(Some(active));
        }
    }
    let Some(record) = services.store.get_access_token(&digest).await? else {
        return Ok(None);
    };
    if record.revoked_at.is_some() || services.clock.now() >= record.expires_at {
        return Ok(None);
    }
    let Some(grant) = services.store.get_grant(record.grant_id).await? else {
        return Ok(None);
    };
    let Ok(grant) = Grant::from_record(grant) else {
        return Ok(None);
    };
    if grant.state.is_revoked() {
        return Ok(None);
    }
    let access: Vec<AccessItemWire> = serde_json::from_str(&record.access).unwrap_or_default();
    let access = AccessItem::parse_list(&access).unwrap_or_default();
    let active = ActiveToken {
        grant_id: grant.record.id,
        access,
        client: grant.client,
    };
    services
        .access
        .tokens
        .insert(digest, (active.clone(), record.expires_at));
    Ok(Some(active))
}

// The interaction (consent).
