//! Resource server access control: every protected request carries
//! `Authorization: GNAP <token>` and an HTTP message signature by the key of
//! the client the token was issued to.
//!
//! Order of checks, and what each failure means to the client:
//! 1. token present and well formed, else 401 (`missing_token`);
//! 2. token live (known, unexpired, unrevoked, grant not revoked), else 401
//!    `Invalid Token` (deployed clients then rotate the token);
//! 3. signature valid with the client's key and fresh, else 401
//!    `Signature validation error: ...` (clients treat the key as revoked);
//!    a state-changing request identical to one already accepted gets that
//!    request's response instead of running again (see `crate::access::replays`);
//! 4. token grants the type, action and wallet address, else 403.
//!
//! Lives here: `authenticate` and `Authenticated::require`, the client keys
//! cache (`client_keys`) and the replay log (`replays/`). May call
//! `grants` (introspection), `wallets` and `platform`.

pub mod client_keys;
pub mod replays;

use opd_gnap::{find_access, AccessType, Action, ClientIdent, OutgoingLimits};
use opd_httpsig::{parse_signature, RequestParts, SigError};
use secrecy::ExposeSecret;

use crate::grants::{introspect, ActiveToken};
use crate::platform::changes::Change;
use crate::{ServiceError, Services};
use replays::ReplaySlot;

/// What the resource server's door keeps between requests.
pub struct AccessState {
    /// Client wallet addresses' public keys, cached.
    pub client_keys: client_keys::ClientKeys,
    /// State-changing requests seen within the signature freshness window
    /// and their responses (replays are answered from it): in memory on
    /// SQLite (one node), in the database on PostgreSQL (every node).
    pub replays: std::sync::Arc<dyn replays::ReplayLog>,
    /// Live access tokens by digest, with their expiry.
    pub tokens: crate::platform::cache::TtlCache<String, (ActiveToken, opd_core::Timestamp)>,
}

impl AccessState {
    /// Drops what `change` made stale.
    pub fn forget(&self, change: Change) {
        match change {
            Change::Tokens => self.tokens.clear(),
            Change::Keys => self.client_keys.invalidate(),
            // A deactivated wallet address's tokens and keys go too.
            Change::Wallets => {
                self.tokens.clear();
                self.client_keys.invalidate();
            }
            Change::Pricing | Change::Peers | Change::Tenants => {}
        }
    }
}

/// What a request needs its token to allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Required<'a> {
    pub kind: AccessType,
    pub action: Action,
    /// The wallet address URL the resource belongs to, when known.
    pub wallet_address: Option<&'a str>,
}

/// Who is calling, once authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The client's identity as resources record it: its wallet address URL,
    /// or `jwk:<x>` for a client identified by a key alone.
    pub client: String,
    /// The action the token grants: `ReadAll`/`ListAll` when the client may
    /// see every resource of the wallet address, `Read`/`List` when only
    /// its own.
    pub action: Action,
    pub grant_id: opd_core::GrantId,
    /// Outgoing payment limits of the grant, if any.
    pub limits: Option<OutgoingLimits>,
}

impl Caller {
    /// Whether the caller may see a resource created by `owner` (a client
    /// identity as in `client`).
    pub fn may_see(&self, owner: Option<&str>) -> bool {
        matches!(self.action, Action::ReadAll | Action::ListAll)
            || owner == Some(self.client.as_str())
    }

    /// The client filter for lists: `None` means every resource.
    pub fn list_filter(&self) -> Option<&str> {
        (self.action != Action::ListAll).then_some(self.client.as_str())
    }
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    #[error("missing access token: send Authorization: GNAP <token>")]
    MissingToken,
    #[error("Invalid Token")]
    InvalidToken,
    #[error("Signature validation error: {0}")]
    Signature(String),
    /// A state-changing request identical to one already accepted, whose
    /// response was not kept (too large, or the first request was lost).
    #[error("Request replayed: this exact signed request was already answered and its response was not kept (larger than 64 KiB, or lost); sign it again to repeat it")]
    Replayed,
    /// A state-changing request identical to one still running, which did
    /// not finish within the wait bound.
    #[error(
        "an identical signed request is still being processed; retry later to get its response"
    )]
    ReplayPending,
    /// A state-changing request identical to one already answered: its
    /// response was left in the request's `ReplaySlot`, for the HTTP layer
    /// to send instead.
    #[error("this exact signed request was already answered")]
    Answered,
    /// The client's key could not be found (unknown key id or client, or
    /// its key set could not be fetched).
    #[error("Signature validation error: {0}")]
    UnknownKey(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("the authorization data is unavailable")]
    Unavailable,
}

/// How long a token introspection may take.
const INTROSPECTION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The client identity string of a grant's client.
pub fn client_identity(client: &ClientIdent) -> String {
    match client {
        ClientIdent::WalletAddress(w) => w.clone(),
        ClientIdent::Jwk(j) => format!("jwk:{}", j.x),
    }
}

/// The token in an `Authorization` header value (`GNAP <token>`).
pub fn gnap_token(header: Option<&str>) -> Result<&str, AccessError> {
    let value = header.ok_or(AccessError::MissingToken)?;
    let token = value
        .strip_prefix("GNAP ")
        .map(str::trim)
        .ok_or(AccessError::InvalidToken)?;
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(AccessError::InvalidToken);
    }
    Ok(token)
}

/// Now, in the seconds since the epoch that signatures' `created` counts.
pub(crate) fn unix_now(services: &Services) -> u64 {
    u64::try_from(services.clock.now().unix_seconds()).unwrap_or(0)
}

/// Verifies the request's signature with the key of `client`, then (for a
/// state-changing request) claims it or answers it from an identical
/// earlier request (see [`replays::admit`]; `slot` receives the claim or
/// the answer).
pub async fn verify_signature(
    services: &Services,
    request: &RequestParts<'_>,
    client: &ClientIdent,
    slot: Option<&ReplaySlot>,
) -> Result<(), AccessError> {
    let sig_err = |e: SigError| {
        crate::platform::metrics::signature_failed(crate::platform::metrics::signature_reason(&e));
        AccessError::Signature(e.to_string())
    };
    let unknown_key = |description: String| {
        crate::platform::metrics::signature_failed("unknown_key");
        AccessError::UnknownKey(description)
    };
    let now = unix_now(services);
    let parsed =
        parse_signature(request, &services.config.signature_policy, now).map_err(sig_err)?;
    if parsed.used_compat_format() {
        tracing::debug!("accepted a signature in the open-payments Rust SDK's non-RFC format");
    }
    match client {
        ClientIdent::WalletAddress(wallet) => {
            let key = services
                .access
                .client_keys
                .key(wallet, parsed.keyid())
                .await
                .map_err(|e| unknown_key(e.to_string()))?;
            parsed.verify(&key).map_err(sig_err)?;
        }
        ClientIdent::Jwk(jwk) => {
            if jwk.kid != parsed.keyid() {
                return Err(unknown_key(format!(
                    "key {:?} is not the client's key",
                    parsed.keyid()
                )));
            }
            parsed.verify(jwk).map_err(sig_err)?;
        }
    }
    // A safe method is exempt inside `admit`: the Node client's signatures
    // carry no nonce, so a client polling a payment sends identical reads,
    // which are answered afresh.
    replays::admit(services, request, &parsed, client, slot).await
}

/// A request whose token is live and whose signature is the token's
/// client's.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub token: ActiveToken,
}

/// Checks the token and the signature of a resource server request (steps
/// 1 to 3); what the token allows is checked by [`Authenticated::require`].
///
/// `kind` and `action` say what the request will need; a remote
/// authorization server is asked about exactly that (it returns the matching
/// access items in full, whose identifiers `require` then checks).
pub async fn authenticate(
    services: &Services,
    request: &RequestParts<'_>,
    authorization: Option<&str>,
    kind: AccessType,
    action: Action,
    slot: Option<&ReplaySlot>,
) -> Result<Authenticated, AccessError> {
    let token = gnap_token(authorization)?;
    let looked_up = match &services.config.introspection_url {
        Some(url) => remote_introspect(services, url, token, kind, action).await,
        None => introspect(services, token).await,
    };
    let active: ActiveToken = match looked_up {
        Ok(Some(t)) => t,
        Ok(None) => return Err(AccessError::InvalidToken),
        Err(e @ (ServiceError::Unavailable(_) | ServiceError::Internal(_))) => {
            tracing::error!(error = %e, "token lookup failed");
            return Err(AccessError::Unavailable);
        }
        Err(_) => return Err(AccessError::InvalidToken),
    };
    verify_signature(services, request, &active.client, slot).await?;
    Ok(Authenticated { token: active })
}

impl Authenticated {
    /// Step 4: the token must grant the type and action on the wallet
    /// address.
    pub fn require(&self, required: Required<'_>) -> Result<Caller, AccessError> {
        let (item, action) = find_access(
            &self.token.access,
            required.kind,
            required.action,
            required.wallet_address,
        )
        .ok_or_else(|| {
            AccessError::Forbidden(format!(
                "the access token does not allow {} {}{}",
                required.kind,
                required.action,
                required
                    .wallet_address
                    .map(|w| format!(" on {w}"))
                    .unwrap_or_default()
            ))
        })?;
        Ok(Caller {
            client: client_identity(&self.token.client),
            action,
            grant_id: self.token.grant_id,
            limits: item.limits.clone(),
        })
    }
}

/// Introspection over HTTP (`token-introspection.yaml`). A failed call is
/// reported as an invalid token, as the reference resource server does.
async fn remote_introspect(
    services: &Services,
    url: &str,
    token: &str,
    kind: AccessType,
    action: Action,
) -> Result<Option<ActiveToken>, ServiceError> {
    let body = opd_gnap::IntrospectionRequest {
        access_token: token.to_owned(),
        access: Some(vec![opd_gnap::AccessItemWire {
            kind: kind.as_str().to_owned(),
            actions: vec![action.as_str().to_owned()],
            identifier: None,
            limits: None,
        }]),
    };
    let sent = match services.outbound.request(reqwest::Method::POST, url) {
        Ok(req) => {
            let mut req = req.json(&body);
            if let Some(t) = &services.config.introspection_token {
                req = req.bearer_auth(t.expose_secret());
            }
            let max = crate::platform::outbound::MAX_DOCUMENT_BYTES;
            services
                .outbound
                .send(req, INTROSPECTION_TIMEOUT, max)
                .await
        }
        Err(e) => Err(e),
    };
    let body = match sent {
        Ok((_, body)) => body,
        Err(e) => {
            tracing::warn!(error = %e, "token introspection failed");
            return Ok(None);
        }
    };
    let Ok(parsed) = serde_json::from_slice::<opd_gnap::IntrospectionResponse>(&body) else {
        tracing::warn!("token introspection answered an invalid body");
        return Ok(None);
    };
    let info = match parsed {
        opd_gnap::IntrospectionResponse::Inactive => return Ok(None),
        opd_gnap::IntrospectionResponse::Active(info) => info,
    };
    let Ok(client) = ClientIdent::parse(&info.client) else {
        return Ok(None);
    };
    let access = info
        .access
        .iter()
        .filter_map(|w| opd_gnap::AccessItem::parse(w).ok())
        .collect();
    let grant_id = uuid::Uuid::try_parse(&info.grant)
        .map(opd_core::GrantId::from_uuid)
        .unwrap_or(opd_core::GrantId::from_uuid(uuid::Uuid::nil()));
    Ok(Some(ActiveToken {
        grant_id,
        access,
        client,
    }))
}
