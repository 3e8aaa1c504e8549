//! The consent interaction (`/interact/{id}/{nonce}`): what the consent
//! page shows, the owner's decision and the finish redirect.

use opd_core::wallet_address::WalletAddress;
use opd_core::Timestamp;
use opd_gnap::{interaction_hash, GnapError, GnapErrorCode, GrantState};

use super::{constant_time_eq, new_uuid_string, set_state, store_error, Grant};
use crate::Services;

/// What a consent page shows and acts on.
#[derive(Debug, Clone)]
pub struct Interaction {
    pub grant: Grant,
    /// The wallet address whose owner decides.
    pub wallet: WalletAddress,
}

/// The interaction at `/interact/{id}/{nonce}` of `tenant`'s
/// authorization server, if it exists there and the nonce matches (one of
/// another tenant's is unknown here).
pub async fn open_interaction(
    services: &Services,
    tenant: &opd_core::TenantId,
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
    if &record.tenant != tenant
        || !record
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
        .update_grant(&updated, None, None)
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
                &services.sites.auth_server_now(&record.tenant),
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

/// The `publicName` a client wallet address gives itself: read from the
/// store for a wallet address of this server, fetched (through the
/// outbound client, bounded) for any other. `None` when it has none or
/// cannot be read: the consent page then shows the host alone.
pub async fn client_public_name(services: &Services, client: &str) -> Option<String> {
    let sites = services.sites.table().await.ok()?;
    if sites.of_url(client).is_some() {
        let (tenant, path) = sites.wallet_path(client)?;
        let wallet = services
            .store
            .get_wallet_address_by_path(&tenant, &path)
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
