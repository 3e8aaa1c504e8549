//! The GNAP authorization server's use cases: grant requests, the
//! interaction (consent) and its finish redirect, continuation, token
//! rotation and revocation, grant cancellation, and introspection.
//!
//! Request signatures are verified by the HTTP layer before these run; the
//! functions here take the already-identified client or grant. Token values
//! are only ever stored as SHA-256 digests.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use opd_core::wallet_address::WalletAddress;
use opd_core::{GrantId, Timestamp, WalletAddressId};
use opd_gnap::{
    interaction_hash, new_token, token_digest, AccessItem, AccessItemWire, AccessTokenResponse,
    ApprovedGrantResponse, ClientIdent, ContinueDecision, ContinueGrantResponse, ContinueResponse,
    ContinueToken, GnapError, GnapErrorCode, GrantResponse, GrantState, InteractResponse,
    PendingGrantResponse, ValidatedGrantRequest,
};
use opd_store::{AccessTokenRecord, GrantRecord};

use crate::{ServiceError, Services};

/// A grant as the use cases see it.
#[derive(Debug, Clone)]
pub struct Grant {
    pub record: GrantRecord,
    pub state: GrantState,
    pub access: Vec<AccessItem>,
    pub client: ClientIdent,
}

impl Grant {
    fn from_record(record: GrantRecord) -> Result<Self, GnapError> {
        let state_text = record.finalization.as_deref().unwrap_or(&record.state);
        let state = GrantState::parse(state_text).ok_or_else(|| internal("stored grant state"))?;
        let access_wire: Vec<AccessItemWire> =
            serde_json::from_str(&record.access).map_err(|_| internal("stored grant access"))?;
        let access =
            AccessItem::parse_list(&access_wire).map_err(|_| internal("stored grant access"))?;
        let client = match (&record.client_wallet_address, &record.client_jwk) {
            (Some(w), _) => ClientIdent::WalletAddress(w.clone()),
            (None, Some(j)) => ClientIdent::Jwk(
                serde_json::from_str(j).map_err(|_| internal("stored client key"))?,
            ),
            (None, None) => return Err(internal("stored grant client")),
        };
        Ok(Self {
            record,
            state,
            access,
            client,
        })
    }
}

fn internal(what: &str) -> GnapError {
    tracing::error!(what, "corrupt authorization server data");
    GnapError::request_denied("internal error").with_status(500)
}

fn store_error(e: impl Into<ServiceError>) -> GnapError {
    let e: ServiceError = e.into();
    tracing::error!(error = %e, "authorization server store failure");
    GnapError::request_denied("internal error").with_status(500)
}

fn set_state(record: &mut GrantRecord, state: GrantState) {
    match state {
        GrantState::Pending | GrantState::Approved => {
            record.state = state.as_str().to_owned();
            record.finalization = None;
        }
        GrantState::Finalized(_) => {
            record.state = "finalized".to_owned();
            record.finalization = Some(state.as_str().to_owned());
        }
    }
}

fn new_uuid_string(services: &Services) -> String {
    opd_core::ids::new_uuid_v7(services.clock.now(), services.random.as_ref()).to_string()
}

/// The URLs the authorization server hands out.
fn auth_url(services: &Services, path: &str) -> String {
    format!(
        "{}/{}",
        services.config.auth_server_url.trim_end_matches('/'),
        path
    )
}

fn ttl_millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Mints an access token for a grant: the value (returned once, to the
/// client) and the record (with the digest) to store.
fn mint_token(
    services: &Services,
    grant: GrantId,
    access: &[AccessItem],
) -> (String, AccessTokenRecord) {
    let value = new_token(services.random.as_ref());
    let now = services.clock.now();
    let wire: Vec<AccessItemWire> = access.iter().map(AccessItem::to_wire).collect();
    let record = AccessTokenRecord {
        digest: token_digest(&value),
        management_id: new_uuid_string(services),
        grant_id: grant,
        access: serde_json::to_string(&wire).unwrap_or_else(|_| "[]".into()),
        expires_at: now.plus_millis(ttl_millis(services.config.access_token_ttl)),
        revoked_at: None,
        created_at: now,
    };
    (value, record)
}

fn token_response(
    services: &Services,
    value: String,
    record: &AccessTokenRecord,
    access: &[AccessItem],
) -> AccessTokenResponse {
    AccessTokenResponse {
        value,
        manage: auth_url(services, &format!("token/{}", record.management_id)),
        expires_in: Some(services.config.access_token_ttl.as_secs()),
        access: access.iter().map(AccessItem::to_response_wire).collect(),
    }
}

fn continue_response(
    services: &Services,
    record: &GrantRecord,
    token: &str,
    wait: bool,
) -> ContinueResponse {
    ContinueResponse {
        access_token: ContinueToken {
            value: token.to_owned(),
        },
        uri: auth_url(services, &format!("continue/{}", record.continue_id)),
        wait: wait.then_some(services.config.continue_wait_secs),
    }
}

/// The wallet address on this server an access item is about, if any.
async fn local_wallet(
    services: &Services,
    identifier: &str,
) -> Result<Option<WalletAddress>, GnapError> {
    let Some(path) = services.config.public_url.wallet_address_path(identifier) else {
        return Ok(None);
    };
    let wallet = services
        .store
        .get_wallet_address_by_path(&path)
        .await
        .map_err(store_error)?;
    Ok(wallet.filter(|w| w.is_active(services.clock.now())))
}

/// `POST /`: a validated grant request from an authenticated client.
pub async fn request_grant(
    services: &Services,
    request: ValidatedGrantRequest,
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
        interaction_expires_at: interactive
            .then(|| now.plus_millis(ttl_millis(services.config.interaction_ttl))),
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
            .create_grant(&record, None)
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
        .create_grant(&record, Some(&token))
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// `POST /continue/{id}`: with an `interact_ref` after the finish redirect,
/// or without one to poll.
pub async fn continue_grant(
    services: &Services,
    grant: Grant,
    interact_ref: Option<&str>,
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
                .update_grant(&updated, None)
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
                .update_grant(&updated, Some(&token))
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

/// `DELETE /continue/{id}`: the grant and all its tokens are revoked.
pub async fn cancel_grant(services: &Services, grant: &Grant) -> Result<(), GnapError> {
    services
        .store
        .revoke_grant(grant.record.id, services.clock.now())
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
        .revoke_grant(id, services.clock.now())
        .await?;
    if revoked {
        services
            .changed(crate::platform::changes::Change::Tokens)
            .await;
    }
    Ok(revoked)
}

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
    let grant = Grant::from_record(record)?;
    if grant.state.is_revoked() {
        return Err(GnapError::invalid_client("the grant was revoked").with_status(401));
    }
    Ok(ManagedToken { token, grant })
}

/// `POST /token/{id}`: a new token with the same access; the old one stops
/// working. Works after expiry (that is what rotation is for).
pub async fn rotate_token(
    services: &Services,
    managed: &ManagedToken,
) -> Result<AccessTokenResponse, GnapError> {
    let access: Vec<AccessItemWire> =
        serde_json::from_str(&managed.token.access).map_err(|_| internal("token access"))?;
    let access = AccessItem::parse_list(&access).map_err(|_| internal("token access"))?;
    let (value, new) = mint_token(services, managed.grant.record.id, &access);
    if !services
        .store
        .rotate_access_token(&managed.token.management_id, &new, services.clock.now())
        .await
        .map_err(store_error)?
    {
        return Err(GnapError::invalid_client("invalid access token").with_status(401));
    }
    services
        .changed(crate::platform::changes::Change::Tokens)
        .await;
    Ok(token_response(services, value, &new, &access))
}

/// `DELETE /token/{id}`.
pub async fn revoke_token(services: &Services, managed: &ManagedToken) -> Result<(), GnapError> {
    services
        .store
        .revoke_access_token(&managed.token.management_id, services.clock.now())
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
    if let Some((active, expires_at)) = services.token_cache.get(&digest) {
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
        .token_cache
        .insert(digest, (active.clone(), record.expires_at));
    Ok(Some(active))
}

// The interaction (consent).

/// What a consent page shows and acts on.
#[derive(Debug, Clone)]
pub struct Interaction {
    pub grant: Grant,
    /// The wallet address whose owner decides.
    pub wallet: WalletAddress,
}

/// The interaction at `/interact/{id}/{nonce}`, if it exists, the nonce
/// matches and it is still open.
pub async fn open_interaction(
    services: &Services,
    interact_id: &str,
    nonce: &str,
) -> Result<Interaction, GnapError> {
    let unknown = || {
        GnapError::new(GnapErrorCode::UnknownInteraction, "unknown interaction").with_status(404)
    };
    let record = services
        .store
        .get_grant_by_interaction(interact_id)
        .await
        .map_err(store_error)?
        .ok_or_else(unknown)?;
    if !record
        .interact_nonce
        .as_deref()
        .is_some_and(|n| constant_time_eq(n.as_bytes(), nonce.as_bytes()))
    {
        return Err(unknown());
    }
    let wallet_id = record.wallet_address_id.ok_or_else(unknown)?;
    let wallet = services
        .store
        .get_wallet_address(wallet_id)
        .await
        .map_err(store_error)?
        .ok_or_else(unknown)?;
    let grant = Grant::from_record(record)?;
    Ok(Interaction { grant, wallet })
}

/// Whether the interaction can still be decided.
pub fn interaction_is_open(services: &Services, i: &Interaction) -> Result<(), GnapError> {
    let expired = i
        .grant
        .record
        .interaction_expires_at
        .is_none_or(|t| services.clock.now() >= t);
    if expired {
        return Err(GnapError::new(
            GnapErrorCode::InvalidInteraction,
            "the interaction has expired",
        )
        .with_status(400));
    }
    if i.grant.state != GrantState::Pending
        || i.grant.record.interaction_state.as_deref() != Some("pending")
    {
        return Err(GnapError::new(
            GnapErrorCode::InvalidInteraction,
            "the interaction is no longer pending",
        )
        .with_status(400));
    }
    Ok(())
}

/// Records the owner's decision: approved (an `interact_ref` is minted) or
/// rejected.
pub async fn decide_interaction(
    services: &Services,
    i: &Interaction,
    approve: bool,
) -> Result<Interaction, GnapError> {
    interaction_is_open(services, i)?;
    let now = services.clock.now();
    let mut updated = i.grant.record.clone();
    let next = if approve {
        i.grant.state.approve()
    } else {
        i.grant.state.reject()
    }
    .map_err(|_| {
        GnapError::new(
            GnapErrorCode::InvalidInteraction,
            "the interaction is no longer pending",
        )
    })?;
    set_state(&mut updated, next);
    updated.interaction_state = Some(if approve { "approved" } else { "denied" }.to_owned());
    if approve {
        updated.interact_ref = Some(new_uuid_string(services));
    }
    updated.updated_at = now;
    if !services
        .store
        .update_grant(&updated, None)
        .await
        .map_err(store_error)?
    {
        return Err(GnapError::new(
            GnapErrorCode::InvalidInteraction,
            "the interaction was decided already",
        ));
    }
    updated.version += 1;
    let grant = Grant::from_record(updated)?;
    Ok(Interaction {
        grant,
        wallet: i.wallet.clone(),
    })
}

/// Where the browser goes once the interaction is decided: the client's
/// finish URI with `hash` and `interact_ref`, or with
/// `result=grant_rejected`; `None` when the client gave no finish URI (it
/// polls instead).
pub fn finish_redirect(services: &Services, i: &Interaction) -> Option<String> {
    let record = &i.grant.record;
    let finish_uri = record.finish_uri.as_deref()?;
    let sep = if finish_uri.contains('?') { '&' } else { '?' };
    match (record.interaction_state.as_deref(), &record.interact_ref) {
        (Some("approved"), Some(interact_ref)) => {
            let hash = interaction_hash(
                record.client_nonce.as_deref().unwrap_or_default(),
                record.interact_nonce.as_deref().unwrap_or_default(),
                interact_ref,
                &services.config.auth_server_url,
            );
            let q: String = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("hash", &hash)
                .append_pair("interact_ref", interact_ref)
                .finish();
            Some(format!("{finish_uri}{sep}{q}"))
        }
        (Some("denied"), _) => Some(format!("{finish_uri}{sep}result=grant_rejected")),
        _ => Some(format!("{finish_uri}{sep}result=grant_invalid")),
    }
}

// Wallet owner logins for the built-in consent page.

/// Admin: sets the password the wallet address owner approves grants with.
pub async fn set_owner_password(
    services: &Services,
    wallet: WalletAddressId,
    password: &str,
) -> Result<(), ServiceError> {
    if password.chars().count() < 8 || password.len() > 1024 {
        return Err(ServiceError::InvalidRequest(
            "password must be 8 to 1024 characters".into(),
        ));
    }
    let mut salt = [0u8; 16];
    services.random.fill(&mut salt);
    let salt =
        SaltString::encode_b64(&salt).map_err(|e| ServiceError::InvalidRequest(e.to_string()))?;
    // Argon2 takes tens of milliseconds of CPU on purpose: off the async
    // runtime, so other requests do not wait behind it.
    let password = password.to_owned();
    let hash = tokio::task::spawn_blocking(move || {
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
    })
    .await
    .map_err(|e| ServiceError::Internal(format!("password hashing failed: {e}")))?
    .map_err(|e| ServiceError::InvalidRequest(e.to_string()))?;
    services
        .store
        .set_owner_password(wallet, &hash, services.clock.now())
        .await?;
    Ok(())
}

/// Whether `password` is the wallet address owner's (constant time).
pub async fn check_owner_password(
    services: &Services,
    wallet: WalletAddressId,
    password: &str,
) -> Result<bool, ServiceError> {
    let Some(stored) = services.store.get_owner_password(wallet).await? else {
        return Ok(false);
    };
    let password = password.to_owned();
    // Off the async runtime (see `set_owner_password`).
    tokio::task::spawn_blocking(move || {
        let Ok(parsed) = PasswordHash::new(&stored) else {
            return false;
        };
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
    .await
    .map_err(|e| ServiceError::Internal(format!("password check failed: {e}")))
}

/// The `publicName` a client wallet address gives itself: read from the
/// store for a wallet address of this server, fetched (through the
/// outbound client, bounded) for any other. `None` when it has none or
/// cannot be read: the consent page then shows the host alone.
pub async fn client_public_name(services: &Services, client: &str) -> Option<String> {
    if services.config.public_url.is_ours(client) {
        let path = services.config.public_url.wallet_address_path(client)?;
        let wallet = services
            .store
            .get_wallet_address_by_path(&path)
            .await
            .ok()??;
        return wallet.public_name;
    }
    let request = services
        .outbound
        .request(reqwest::Method::GET, client)
        .ok()?
        .header("accept", "application/json");
    let (_, body) = services
        .outbound
        .send(
            request,
            std::time::Duration::from_secs(5),
            crate::platform::outbound::MAX_DOCUMENT_BYTES,
        )
        .await
        .ok()?;
    let doc: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let name = doc.get("publicName")?.as_str()?.trim();
    // A name is for reading: short, one line.
    (!name.is_empty()).then(|| name.chars().filter(|c| !c.is_control()).take(100).collect())
}

/// When an interaction's timestamp is needed by callers (expiry display).
pub fn interaction_expires_at(i: &Interaction) -> Option<Timestamp> {
    i.grant.record.interaction_expires_at
}
