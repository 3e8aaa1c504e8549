//! opd as an Open Payments client of other servers, to read their
//! incoming payments: identified by its own wallet address
//! (`/.well-known/pay`) and signing with the server key published there.
//! One grant per (authorization server, resource server) pair, kept sealed
//! in the database so every node shares it, reused, rotated shortly before
//! it expires, and requested anew when the resource server refuses it.
//! What GNAP says (the bodies, reading answers, when to rotate) is in
//! `opd_gnap::client`, shared with `opd client`; this module adds the
//! hardened transport and the shared storage.

use std::time::Duration;

use opd_gnap::client::{self as gnap, GrantAnswer, IssuedToken};
use serde::{Deserialize, Serialize};

use crate::platform::outbound::OutboundError;
use crate::{platform::secrets, ServiceError, Services};

const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest answer read (an incoming payment with 16 KiB of metadata,
/// or a grant, fits many times over).
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The token of a grant at another authorization server, as kept (this
/// shape is stored: changing it loses every node's kept grants).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredGrant {
    value: String,
    manage: String,
    /// Unix milliseconds; `None` when the token does not expire.
    expires_at: Option<i64>,
}

impl StoredGrant {
    fn issued(services: &Services, token: IssuedToken) -> Self {
        Self {
            expires_at: token.expires_at(services.clock.now().unix_millis()),
            value: token.value,
            manage: token.manage,
        }
    }
}

fn invalid(reason: impl Into<String>) -> ServiceError {
    ServiceError::InvalidReceiver(reason.into())
}

/// Where a grant comes from and where its token may go: the
/// authorization server that issued it and the resource server (the
/// origin of the receiver URL) opd asked for it to read. A token is only
/// ever sent to the resource server it was asked for, so a receiver's
/// server that names another server's authorization server never gets the
/// token opd uses at that other server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GrantKey {
    auth_server: String,
    resource_server: String,
}

impl GrantKey {
    fn new(auth_server: String, receiver_url: &str) -> Result<Self, ServiceError> {
        let url = url::Url::parse(receiver_url).map_err(|_| invalid("the receiver is no URL"))?;
        Ok(Self {
            auth_server,
            resource_server: url.origin().ascii_serialization(),
        })
    }

    /// The setting the grant is kept under.
    fn setting(&self) -> String {
        grant_setting(&self.auth_server, &self.resource_server)
    }
}

/// The setting a grant at `auth_server` for reading at `resource_server`
/// is kept under.
pub fn grant_setting(auth_server: &str, resource_server: &str) -> String {
    format!("remote_grant:{auth_server} for {resource_server}")
}

/// Why [`read`] failed.
pub(super) struct ReadFailure {
    /// No token from `auth_server` was taken: none could be had, or the
    /// resource server refused even a new one. The sign that `auth_server`
    /// may not (or no longer) be the one the resource server trusts.
    pub refused: bool,
    pub error: ServiceError,
}

impl ReadFailure {
    fn refused(error: ServiceError) -> Self {
        Self {
            refused: true,
            error,
        }
    }
}

/// Reads `url` with a token of a grant at `auth_server` (the one the
/// public incoming payment names): one new grant and one retry when the
/// resource server refuses the kept one (revoked or expired over there).
pub(super) async fn read(
    services: &Services,
    url: &str,
    auth_server: String,
) -> Result<Vec<u8>, ReadFailure> {
    let key = GrantKey::new(auth_server, url).map_err(ReadFailure::refused)?;
    let mut token = token(services, &key).await.map_err(ReadFailure::refused)?;
    let mut answer = get(services, url, Some(&token.value)).await;
    if let Err(OutboundError::Status(401 | 403)) = answer {
        forget(services, &key).await.map_err(ReadFailure::refused)?;
        token = token_anew(services, &key)
            .await
            .map_err(ReadFailure::refused)?;
        answer = get(services, url, Some(&token.value)).await;
    }
    answer.map_err(|e| ReadFailure {
        refused: matches!(e, OutboundError::Status(401 | 403)),
        error: invalid(format!(
            "the receiver could not be read with our grant: {e}"
        )),
    })
}

/// A usable token for `auth_server`: the stored one, rotated when it is
/// about to expire, or a new grant.
async fn token(services: &Services, key: &GrantKey) -> Result<StoredGrant, ServiceError> {
    let name = key.setting();
    let stored = secrets::get_sealed(services.store.as_ref(), &services.config.secrets_key, &name)
        .await?
        .and_then(|bytes| serde_json::from_slice::<StoredGrant>(&bytes).ok());
    let Some(grant) = stored else {
        return token_anew(services, key).await;
    };
    if !gnap::needs_rotation(grant.expires_at, services.clock.now().unix_millis()) {
        return Ok(grant);
    }
    match rotate(services, &grant).await {
        Ok(rotated) => {
            keep(services, key, &rotated).await?;
            Ok(rotated)
        }
        Err(e) => {
            tracing::info!(auth_server = %key.auth_server, error = %e, "rotating a remote grant's token failed; requesting a new grant");
            token_anew(services, key).await
        }
    }
}

async fn keep(
    services: &Services,
    key: &GrantKey,
    grant: &StoredGrant,
) -> Result<(), ServiceError> {
    let bytes = serde_json::to_vec(grant).map_err(|e| ServiceError::Internal(e.to_string()))?;
    secrets::put_sealed(
        services.store.as_ref(),
        services.random.as_ref(),
        &services.config.secrets_key,
        &key.setting(),
        &bytes,
    )
    .await
}

async fn forget(services: &Services, key: &GrantKey) -> Result<(), ServiceError> {
    Ok(services.store.set_setting(&key.setting(), "").await?)
}

/// Requests a non-interactive `incoming-payment` `read-all` grant and
/// keeps its token.
async fn token_anew(services: &Services, key: &GrantKey) -> Result<StoredGrant, ServiceError> {
    let identity = services.server_identity().await?;
    let access = serde_json::json!([{ "type": "incoming-payment", "actions": ["read-all"] }]);
    let body = gnap::grant_request(&identity.client_url, &access, None);
    let bytes = signed(
        services,
        reqwest::Method::POST,
        &key.auth_server,
        None,
        Some(&body),
    )
    .await
    .map_err(|e| {
        invalid(format!(
            "the receiver's authorization server refused a grant: {e}"
        ))
    })?;
    let grant = match GrantAnswer::parse(&bytes) {
        Ok(GrantAnswer::Granted(token)) => StoredGrant::issued(services, token),
        Ok(GrantAnswer::Pending(_)) => {
            return Err(invalid(
                "the receiver's authorization server asks for an interaction",
            ))
        }
        Err(e) => {
            return Err(invalid(format!(
                "the receiver's authorization server answered no grant: {e}"
            )))
        }
    };
    keep(services, key, &grant).await?;
    Ok(grant)
}

/// Rotates a token through its management URL.
async fn rotate(services: &Services, grant: &StoredGrant) -> Result<StoredGrant, OutboundError> {
    let bytes = signed(
        services,
        reqwest::Method::POST,
        &grant.manage,
        Some(&grant.value),
        None,
    )
    .await?;
    let token = gnap::parse_rotation(&bytes).map_err(|_| OutboundError::Unreachable)?;
    Ok(StoredGrant::issued(services, token))
}

/// A GET, signed when there is a token.
pub(super) async fn get(
    services: &Services,
    url: &str,
    token: Option<&str>,
) -> Result<Vec<u8>, OutboundError> {
    match token {
        Some(_) => signed(services, reqwest::Method::GET, url, token, None).await,
        None => {
            let request = services
                .outbound
                .request(reqwest::Method::GET, url)?
                .header("accept", "application/json");
            let (_, bytes) = services
                .outbound
                .send(request, REQUEST_TIMEOUT, MAX_ANSWER_BYTES)
                .await?;
            Ok(bytes)
        }
    }
}

/// A request signed with the server's key, as the Node client signs.
async fn signed(
    services: &Services,
    method: reqwest::Method,
    url: &str,
    token: Option<&str>,
    body: Option<&serde_json::Value>,
) -> Result<Vec<u8>, OutboundError> {
    let identity = services
        .server_identity()
        .await
        .map_err(|_| OutboundError::Unreachable)?;
    let body = body.map(|b| b.to_string().into_bytes());
    let created = u64::try_from(services.clock.now().unix_seconds()).unwrap_or(0);
    let target = services.outbound.check(url)?.to_string();
    let mut headers = opd_httpsig::signed_request_headers(
        &method,
        &target,
        token,
        body.as_deref(),
        &identity.key,
        crate::wallets::SERVER_KEY_ID,
        created,
    )
    .map_err(|_| OutboundError::Unreachable)?;
    headers.insert(
        reqwest::header::ACCEPT,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    let mut request = services.outbound.request(method, &target)?.headers(headers);
    if let Some(b) = body {
        request = request.body(b);
    }
    let (_, bytes) = services
        .outbound
        .send(request, REQUEST_TIMEOUT, MAX_ANSWER_BYTES)
        .await?;
    Ok(bytes)
}
