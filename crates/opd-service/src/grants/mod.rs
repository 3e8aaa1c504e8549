//! The GNAP authorization server's use cases: grant requests, the
//! interaction (consent) and its finish redirect, continuation, token
//! rotation and revocation, grant cancellation, and introspection.
//!
//! Request signatures are verified by the HTTP layer before these run; the
//! functions here take the already-identified client or grant. Token values
//! are only ever stored as SHA-256 digests.
//!
//! May call `wallets`, the store and `platform`; nothing here calls the
//! resource server's areas.

//!
//! - [`request`]: grant requests, continuation, cancellation;
//! - [`interaction`]: the consent interaction and its finish redirect;
//! - [`owner_password`]: the owners' consent passwords and the budget of
//!   checks each allows;
//! - [`tokens`]: token management (rotation, revocation) and introspection.
//!
//! This file holds what they share: the grant as the use cases see it and
//! the helpers that mint tokens and build responses.

pub mod interaction;
pub mod owner_password;
pub mod owners;
pub mod request;
pub mod tokens;

pub use interaction::*;
pub use owner_password::*;
pub use owners::*;
pub use request::*;
pub use tokens::*;

use opd_core::wallet_address::WalletAddress;
use opd_core::{GrantId, TenantId};
use opd_gnap::{
    new_token, token_digest, AccessItem, AccessItemWire, AccessTokenResponse, ClientIdent,
    ContinueResponse, ContinueToken, GnapError, GrantState,
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

/// The URLs the authorization server hands out for a grant of `tenant`:
/// under that tenant's grant endpoint.
fn auth_url(services: &Services, tenant: &TenantId, path: &str) -> String {
    let base = services.sites.auth_server_now(tenant);
    format!("{}/{}", base.trim_end_matches('/'), path)
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
        expires_at: now.plus(services.config.access_token_ttl),
        revoked_at: None,
        created_at: now,
    };
    (value, record)
}

fn token_response(
    services: &Services,
    tenant: &TenantId,
    value: String,
    record: &AccessTokenRecord,
    access: &[AccessItem],
) -> AccessTokenResponse {
    AccessTokenResponse {
        value,
        manage: auth_url(services, tenant, &format!("token/{}", record.management_id)),
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
        uri: auth_url(
            services,
            &record.tenant,
            &format!("continue/{}", record.continue_id),
        ),
        wait: wait.then_some(services.config.continue_wait_secs),
    }
}

/// The wallet address on this server an access item is about, if any.
async fn local_wallet(
    services: &Services,
    identifier: &str,
) -> Result<Option<WalletAddress>, GnapError> {
    let sites = services.sites.table().await.map_err(store_error)?;
    let Some((tenant, path)) = sites.wallet_path(identifier) else {
        return Ok(None);
    };
    let wallet = services
        .store
        .get_wallet_address_by_path(&tenant, &path)
        .await
        .map_err(store_error)?;
    Ok(wallet.filter(|w| w.is_active(services.clock.now())))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}
