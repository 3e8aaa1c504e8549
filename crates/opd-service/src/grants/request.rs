//! Grant requests (`POST /`), continuation (`POST /continue/{id}`),
//! cancellation, and the operator's revocation of a grant.

use opd_core::{GrantId, WalletAddressId};
use opd_gnap::{
    new_token, token_digest, AccessItem, AccessItemWire, ApprovedGrantResponse, ClientIdent,
    ContinueDecision, ContinueGrantResponse, ContinueResponse, ContinueToken, GnapError,
    GrantResponse, GrantState, InteractResponse, PendingGrantResponse, ValidatedGrantRequest,
};
use opd_store::GrantRecord;

use super::{
    auth_url, constant_time_eq, continue_response, internal, local_wallet, mint_token,
    new_uuid_string, set_state, store_error, token_response, Grant,
};
use crate::access::replays::RequestClaim;
use crate::{ServiceError, Services};

/// `POST /`: a validated grant request from an authenticated client; its
/// replay `claim` is stored with the grant.
pub async fn request_grant(
    services: &Services,
    request: ValidatedGrantRequest,
    claim: Option<&RequestClaim>,
) -> Result<GrantResponse, GnapError> {
    // Every identifier must be a wallet address served here: this server
    // grants access to nothing else.
    let mut owner: Option<WalletAddressId> = None;
    for item in &request.access {
        if let Some(identifier) = &item.identifier {
            let wallet = local_wallet(services, identifier).await?.ok_or_else(|| {
                GnapError::invalid_request(format!(
                    "identifier {identifier} is not a wallet address on this server"
                ))
            })?;
            match owner {
                Some(o) if o != wallet.id && request.requires_interaction() => {
                    return Err(GnapError::invalid_request(
                        "an interactive grant can only ask for access to one wallet address",
                    ))
                }
                _ => owner = Some(wallet.id),
            }
        }
    }
    let now = services.clock.now();
    let continue_token = new_token(services.random.as_ref());
    let id = GrantId::new(now, services.random.as_ref());
    let wire: Vec<AccessItemWire> = request.access.iter().map(AccessItem::to_wire).collect();
    let (client_wallet_address, client_jwk) = match &request.client {
        ClientIdent::WalletAddress(w) => (Some(w.clone()), None),
        ClientIdent::Jwk(j) => (
            None,
            Some(serde_json::to_string(j).map_err(|_| internal("client jwk"))?),
        ),
    };
    let interactive = request.requires_interaction();
    if let (true, ClientIdent::WalletAddress(client)) = (interactive, &request.client) {
        // Each waits for a person: a client cannot pile them up.
        let waiting = services
            .store
            .pending_interactions(client, now)
            .await
            .map_err(store_error)?;
        if waiting >= u64::from(services.config.max_pending_interactions) {
            return Err(GnapError::new(
                opd_gnap::GnapErrorCode::TooManyAttempts,
                format!("this client already has {waiting} grants waiting for a decision"),
            ));
        }
    }
    let finish = request.finish().cloned();
    let mut record = GrantRecord {
        id,
        state: String::new(),
        finalization: None,
        client_wallet_address,
        client_jwk,
        access: serde_json::to_string(&wire).map_err(|_| internal("access"))?,
        continue_id: new_uuid_string(services),
        continue_token_digest: token_digest(&continue_token),
        interact_id: interactive.then(|| new_uuid_string(services)),
        interact_nonce: interactive.then(|| new_token(services.random.as_ref())),
        interact_ref: None,
        interaction_state: interactive.then(|| "pending".to_owned()),
        interaction_expires_at: interactive.then(|| now.plus(services.config.interaction_ttl)),
        finish_uri: finish.as_ref().map(|f| f.uri.clone()),
        client_nonce: finish.as_ref().map(|f| f.nonce.clone()),
        wallet_address_id: if interactive { owner } else { None },
        last_continued_at: now,
        version: 0,
        created_at: now,
        updated_at: now,
    };
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
                redirect: auth_url(services, &format!("interact/{interact_id}/{nonce}")),
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
    let (value, token) = mint_token(services, id, &request.access);
    services
        .store
        .create_grant(&record, Some(&token), claim)
        .await
        .map_err(store_error)?;
    Ok(GrantResponse::Approved(ApprovedGrantResponse {
        access_token: token_response(services, value, &token, &request.access),
        continue_: continue_response(services, &record, &continue_token, false),
    }))
}

/// The grant a continuation request names, checked against the presented
/// continuation token. Wrong or missing → `invalid_continuation` (401).
pub async fn grant_for_continuation(
    services: &Services,
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
/// or without one to poll. The request's replay `claim` is stored with the
/// grant's change.
pub async fn continue_grant(
    services: &Services,
    grant: Grant,
    interact_ref: Option<&str>,
    claim: Option<&RequestClaim>,
) -> Result<ContinueGrantResponse, GnapError> {
    let now = services.clock.now();
    let wait = services.config.continue_wait_secs;
    let record = &grant.record;
    let used =
        || GnapError::invalid_continuation("the grant's token was already issued").with_status(401);
    if grant.state == GrantState::Finalized(opd_gnap::FinalizationReason::Issued) {
        return Err(used());
    }
    let decision = match interact_ref {
        Some(r) => {
            let matches = record
                .interact_ref
                .as_deref()
                .is_some_and(|mine| constant_time_eq(mine.as_bytes(), r.as_bytes()));
            if !matches {
                return Err(
                    GnapError::invalid_continuation("unknown interaction reference")
                        .with_status(404),
                );
            }
            opd_gnap::continue_with_ref_decision(grant.state, record.last_continued_at, 0, now)?
        }
        None => opd_gnap::poll_decision(
            grant.state,
            record.last_continued_at,
            wait,
            now,
            record.finish_uri.is_some(),
        )?,
    };
    let mut updated = record.clone();
    updated.last_continued_at = now;
    updated.updated_at = now;
    // Every continuation answer carries a fresh continuation token (only
    // digests are stored, so the old value cannot be repeated); the old one
    // stops working.
    let continue_token_value = new_token(services.random.as_ref());
    updated.continue_token_digest = token_digest(&continue_token_value);
    match decision {
        ContinueDecision::StillPending => {
            if !services
                .store
                .update_grant(&updated, None, claim)
                .await
                .map_err(store_error)?
            {
                return Err(GnapError::too_fast(
                    "another continuation request is in progress",
                ));
            }
            Ok(ContinueGrantResponse {
                access_token: None,
                subject: None,
                continue_: ContinueResponse {
                    access_token: ContinueToken {
                        value: continue_token_value,
                    },
                    uri: auth_url(services, &format!("continue/{}", record.continue_id)),
                    wait: Some(wait),
                },
            })
        }
        ContinueDecision::IssueToken => {
            let issued = grant.state.issue().map_err(|_| used())?;
            set_state(&mut updated, issued);
            let (value, token) = mint_token(services, record.id, &grant.access);
            if !services
                .store
                .update_grant(&updated, Some(&token), claim)
                .await
                .map_err(store_error)?
            {
                return Err(used());
            }
            Ok(ContinueGrantResponse {
                access_token: Some(token_response(services, value, &token, &grant.access)),
                subject: None,
                continue_: ContinueResponse {
                    access_token: ContinueToken {
                        value: continue_token_value,
                    },
                    uri: auth_url(services, &format!("continue/{}", record.continue_id)),
                    wait: None,
                },
            })
        }
    }
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
