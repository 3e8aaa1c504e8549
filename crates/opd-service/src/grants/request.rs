//! Grant requests (`POST /`), continuation (`POST /continue/{id}`),
//! cancellation, and the operator's revocation of a grant. Each reads what
//! it decides on, decides by the rules in `rules` (plain values), then
//! stores and answers.

use opd_core::{GrantId, TenantId, Timestamp, WalletAddressId};
use opd_gnap::{
    new_token, token_digest, AccessItem, AccessItemWire, ApprovedGrantResponse, ClientIdent,
    ContinueDecision, ContinueGrantResponse, ContinueResponse, ContinueToken, GnapError,
    GnapErrorCode, GrantResponse, GrantState, InteractResponse, PendingGrantResponse,
    ValidatedGrantRequest,
};
use opd_store::{AccessTokenRecord, GrantRecord};

use super::{
    auth_url, constant_time_eq, continue_response, internal, local_wallet, mint_token,
    new_uuid_string, set_state, store_error, token_response, Grant,
};
use crate::access::replays::RequestClaim;
use crate::{ServiceError, Services};
use rules::{admit, continuation, token_used, Asked};

mod rules;

/// `POST /`: a validated grant request from an authenticated client. Reads
/// what it asks for, decides (`admit`), and stores the grant (with the
/// request's replay `claim`): waiting for a person, or issued at once.
pub async fn request_grant(
    services: &Services,
    tenant: &TenantId,
    request: ValidatedGrantRequest,
    claim: Option<&RequestClaim>,
) -> Result<GrantResponse, GnapError> {
    let now = services.clock.now();
    let asked = read_asked(services, tenant, &request, now).await?;
    let interactive = request.requires_interaction();
    let owner = admit(
        &asked,
        interactive,
        services.config.max_pending_interactions,
    )?;
    let continue_token = new_token(services.random.as_ref());
    let mut record = new_record(services, &request, owner, now)?;
    record.tenant = tenant.clone();
    record.continue_token_digest = token_digest(&continue_token);
    if interactive {
        set_state(&mut record, GrantState::Pending);
        services
            .store
            .create_grant(&record, None, claim)
            .await
            .map_err(store_error)?;
        let interact_id = record.interact_id.clone().unwrap_or_default();
        let nonce = record.interact_nonce.clone().unwrap_or_default();
        return Ok(GrantResponse::Pending(PendingGrantResponse {
            interact: InteractResponse {
                redirect: auth_url(services, tenant, &format!("interact/{interact_id}/{nonce}")),
                finish: nonce,
            },
            continue_: continue_response(services, &record, &continue_token, true),
        }));
    }
    // Non-interactive: approved and issued at once, so polling can never
    // mint a second token.
    set_state(
        &mut record,
        GrantState::Finalized(opd_gnap::FinalizationReason::Issued),
    );
    let (value, token) = mint_token(services, record.id, &request.access);
    services
        .store
        .create_grant(&record, Some(&token), claim)
        .await
        .map_err(store_error)?;
    Ok(GrantResponse::Approved(ApprovedGrantResponse {
        access_token: token_response(services, tenant, value, &token, &request.access),
        continue_: continue_response(services, &record, &continue_token, false),
    }))
}

/// What `request` asks of this server (see [`Asked`]), read now.
async fn read_asked(
    services: &Services,
    tenant: &TenantId,
    request: &ValidatedGrantRequest,
    now: Timestamp,
) -> Result<Asked, GnapError> {
    let mut identifiers = Vec::new();
    let sites = services.sites.table().await.map_err(store_error)?;
    for identifier in request.access.iter().filter_map(|i| i.identifier.as_ref()) {
        let wallet = local_wallet(services, identifier).await?;
        // Only the wallet addresses that name this authorization server
        // (their tenant's own, or the shared one) are its to grant.
        if wallet
            .as_ref()
            .is_some_and(|w| &sites.of(&w.tenant).auth_tenant != tenant)
        {
            return Err(GnapError::new(
                GnapErrorCode::InvalidRequest,
                format!("{identifier} is not a wallet address of this authorization server"),
            ));
        }
        identifiers.push((identifier.clone(), wallet.map(|w| w.id)));
    }
    let waiting = match (&request.client, request.requires_interaction()) {
        (ClientIdent::WalletAddress(client), true) => Some(
            services
                .store
                .pending_interactions(client, now)
                .await
                .map_err(store_error)?,
        ),
        _ => None,
    };
    Ok(Asked {
        identifiers,
        waiting,
    })
}

/// A new grant's record for `request` (its state and continuation token
/// digest set by the caller), with fresh identifiers, and for an
/// interactive request, its interaction and `owner`.
fn new_record(
    services: &Services,
    request: &ValidatedGrantRequest,
    owner: Option<WalletAddressId>,
    now: Timestamp,
) -> Result<GrantRecord, GnapError> {
    let wire: Vec<AccessItemWire> = request.access.iter().map(AccessItem::to_wire).collect();
    let (client_wallet_address, client_jwk) = match &request.client {
        ClientIdent::WalletAddress(w) => (Some(w.clone()), None),
        ClientIdent::Jwk(j) => (
            None,
            Some(serde_json::to_string(j).map_err(|_| internal("client jwk"))?),
        ),
    };
    let interactive = request.requires_interaction();
    let finish = request.finish();
    Ok(GrantRecord {
        id: GrantId::new(now, services.random.as_ref()),
        tenant: TenantId::operator(),
        state: String::new(),
        finalization: None,
        client_wallet_address,
        client_jwk,
        access: serde_json::to_string(&wire).map_err(|_| internal("access"))?,
        continue_id: new_uuid_string(services),
        continue_token_digest: String::new(),
        interact_id: interactive.then(|| new_uuid_string(services)),
        interact_nonce: interactive.then(|| new_token(services.random.as_ref())),
        interact_ref: None,
        interaction_state: interactive.then(|| "pending".to_owned()),
        interaction_expires_at: interactive.then(|| now.plus(services.config.interaction_ttl)),
        finish_uri: finish.map(|f| f.uri.clone()),
        client_nonce: finish.map(|f| f.nonce.clone()),
        wallet_address_id: owner,
        last_continued_at: now,
        version: 0,
        created_at: now,
        updated_at: now,
    })
}

/// The grant a continuation request names, checked against the presented
/// continuation token. Wrong or missing → `invalid_continuation` (401).
pub async fn grant_for_continuation(
    services: &Services,
    tenant: &TenantId,
    continue_id: &str,
    token: &str,
) -> Result<Grant, GnapError> {
    let invalid =
        || GnapError::invalid_continuation("invalid continuation token or grant").with_status(401);
    let record = services
        .store
        .get_grant_by_continue_id(continue_id)
        .await
        .map_err(store_error)?
        .ok_or_else(invalid)?;
    // Another tenant's grant is not this authorization server's.
    if &record.tenant != tenant {
        return Err(invalid());
    }
    let presented = token_digest(token);
    if !constant_time_eq(
        presented.as_bytes(),
        record.continue_token_digest.as_bytes(),
    ) {
        return Err(invalid());
    }
    let grant = Grant::from_record(record)?;
    if grant.state.is_revoked() {
        return Err(invalid());
    }
    Ok(grant)
}

/// `POST /continue/{id}`: with an `interact_ref` after the finish redirect,
/// or without one to poll. Decides (`continuation`), then stores the
/// grant as continued (and its token, when issued) with the request's
/// replay `claim`, and answers.
pub async fn continue_grant(
    services: &Services,
    grant: Grant,
    interact_ref: Option<&str>,
    claim: Option<&RequestClaim>,
) -> Result<ContinueGrantResponse, GnapError> {
    let now = services.clock.now();
    let wait = services.config.continue_wait_secs;
    let decision = continuation(&grant, interact_ref, wait, now)?;
    let record = &grant.record;
    let mut updated = record.clone();
    updated.last_continued_at = now;
    updated.updated_at = now;
    // Every continuation answer carries a fresh continuation token (only
    // digests are stored, so the old value cannot be repeated); the old one
    // stops working.
    let continue_token = new_token(services.random.as_ref());
    updated.continue_token_digest = token_digest(&continue_token);
    let access_token = match decision {
        ContinueDecision::StillPending => {
            if !update_grant(services, &updated, None, claim).await? {
                return Err(GnapError::too_fast(
                    "another continuation request is in progress",
                ));
            }
            None
        }
        ContinueDecision::IssueToken => {
            let issued = grant.state.issue().map_err(|_| token_used())?;
            set_state(&mut updated, issued);
            let (value, token) = mint_token(services, record.id, &grant.access);
            if !update_grant(services, &updated, Some(&token), claim).await? {
                return Err(token_used());
            }
            Some(token_response(
                services,
                &record.tenant,
                value,
                &token,
                &grant.access,
            ))
        }
    };
    let wait = access_token.is_none().then_some(wait);
    Ok(ContinueGrantResponse {
        access_token,
        subject: None,
        continue_: ContinueResponse {
            access_token: ContinueToken {
                value: continue_token,
            },
            uri: auth_url(
                services,
                &record.tenant,
                &format!("continue/{}", record.continue_id),
            ),
            wait,
        },
    })
}

/// Stores a continued grant (with its new token, if issued, and the
/// request's replay `claim`); `false` when another request changed it
/// first.
async fn update_grant(
    services: &Services,
    grant: &GrantRecord,
    token: Option<&AccessTokenRecord>,
    claim: Option<&RequestClaim>,
) -> Result<bool, GnapError> {
    services
        .store
        .update_grant(grant, token, claim)
        .await
        .map_err(store_error)
}

/// `DELETE /continue/{id}`: the grant and all its tokens are revoked; the
/// request's replay `claim` is stored with the revocation.
pub async fn cancel_grant(
    services: &Services,
    grant: &Grant,
    claim: Option<&RequestClaim>,
) -> Result<(), GnapError> {
    services
        .store
        .revoke_grant(grant.record.id, services.clock.now(), claim)
        .await
        .map_err(store_error)?;
    services
        .changed(crate::platform::changes::Change::Tokens)
        .await;
    Ok(())
}

/// Revokes a grant and every token of it at the operator's request (the
/// dashboard); `false` when it is unknown or was revoked already.
pub async fn revoke_by_operator(services: &Services, id: GrantId) -> Result<bool, ServiceError> {
    let revoked = services
        .store
        .revoke_grant(id, services.clock.now(), None)
        .await?;
    if revoked {
        services
            .changed(crate::platform::changes::Change::Tokens)
            .await;
    }
    Ok(revoked)
}
