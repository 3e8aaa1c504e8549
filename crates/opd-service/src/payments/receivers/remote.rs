//! Receivers on other Open Payments servers. opd resolves them as an Open
//! Payments client, identified by its own wallet address
//! (`/.well-known/pay`) and the server key published there:
//!
//! 1. an unauthenticated `GET <receiver>` (the public incoming payment)
//!    names the receiver's authorization server;
//! 2. a non-interactive grant for `incoming-payment` `read-all` there
//!    gives an access token, kept (sealed, in the database, so every node
//!    shares it), reused, rotated shortly before it expires, and requested
//!    anew when the receiver's server refuses it;
//! 3. a signed `GET <receiver>` with that token gives the incoming
//!    payment: its asset and amounts, whether it is completed or expired,
//!    and its ILP payment details (`ilpAddress`, `sharedSecret`).
//!
//! Every request goes through the hardened outbound client (address
//! checks, `--outbound-allow`, bounded time and size, no redirects to
//! another origin). Any failure makes the receiver invalid; the reason is
//! logged and given as the error's detail, never what the other server
//! answered.

use std::time::Duration;

use base64::Engine;
use opd_core::{Amount, AmountWire, Asset, Timestamp};
use opd_ilp::IlpAddress;
use serde::{Deserialize, Serialize};

use crate::platform::outbound::OutboundError;
use crate::{platform::secrets, ServiceError, Services};

/// How long each request to the other server may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest answer read (an incoming payment with 16 KiB of metadata,
/// or a grant, fits many times over).
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// A token this close to its expiry is rotated before use.
const ROTATE_BEFORE_MS: i64 = 30_000;

/// An incoming payment on another server, as its owner reports it.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteReceiver {
    /// The receiver URL.
    pub url: String,
    /// The receiving wallet address's asset.
    pub asset: Asset,
    /// What the payment is for in total, if it says.
    pub incoming_amount: Option<u64>,
    /// What it received so far.
    pub received_amount: u64,
    pub completed: bool,
    pub expires_at: Option<Timestamp>,
    /// Where to send ILP packets; `None` when it offers no `ilp` method
    /// (a completed or expired incoming payment shows none).
    pub ilp: Option<IlpDestination>,
}

/// An incoming payment's ILP address and STREAM secret.
#[derive(Clone, PartialEq, Eq)]
pub struct IlpDestination {
    pub address: IlpAddress,
    pub shared_secret: [u8; 32],
}

impl std::fmt::Debug for IlpDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IlpDestination")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for RemoteReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteReceiver")
            .field("url", &self.url)
            .field("asset", &self.asset)
            .field("incoming_amount", &self.incoming_amount)
            .field("received_amount", &self.received_amount)
            .field("completed", &self.completed)
            .field("ilp", &self.ilp)
            .finish()
    }
}

impl RemoteReceiver {
    /// Whether it still takes payments at `now`.
    pub fn is_active(&self, now: Timestamp) -> bool {
        !self.completed && self.expires_at.is_none_or(|t| now < t) && self.ilp.is_some()
    }

    /// What it still expects, if it has an `incomingAmount`.
    pub fn remaining(&self) -> Option<u64> {
        self.incoming_amount
            .map(|i| i.saturating_sub(self.received_amount))
    }
}

/// The token of a grant at another authorization server.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredGrant {
    value: String,
    manage: String,
    /// Unix milliseconds; `None` when the token does not expire.
    expires_at: Option<i64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PublicIncomingPayment {
    auth_server: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IncomingPaymentDoc {
    #[serde(default)]
    incoming_amount: Option<AmountWire>,
    received_amount: AmountWire,
    #[serde(default)]
    completed: bool,
    #[serde(default)]
    expires_at: Option<String>,
    #[serde(default)]
    methods: Vec<PaymentMethod>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PaymentMethod {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    ilp_address: Option<String>,
    #[serde(default)]
    shared_secret: Option<String>,
}

#[derive(Deserialize)]
struct GrantAnswer {
    access_token: Option<TokenAnswer>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    value: String,
    manage: String,
    #[serde(default)]
    expires_in: Option<i64>,
}

#[derive(Deserialize)]
struct RotateAnswer {
    access_token: TokenAnswer,
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

/// Resolves `url`, an incoming payment on another server.
pub async fn resolve(services: &Services, url: &str) -> Result<RemoteReceiver, ServiceError> {
    let public: PublicIncomingPayment = serde_json::from_slice(
        &get(services, url, None)
            .await
            .map_err(|e| invalid(format!("the receiver could not be read: {e}")))?,
    )
    .map_err(|_| invalid("the receiver's server answered something that is no incoming payment"))?;
    let key = GrantKey::new(public.auth_server, url)?;
    let mut token = token(services, &key).await?;
    let doc = match get(services, url, Some(&token.value)).await {
        Err(OutboundError::Status(401 | 403)) => {
            // Revoked or expired over there: one new grant, one retry.
            forget(services, &key).await?;
            token = token_anew(services, &key).await?;
            get(services, url, Some(&token.value)).await
        }
        other => other,
    }
    .map_err(|e| {
        invalid(format!(
            "the receiver could not be read with our grant: {e}"
        ))
    })?;
    parse(url, &doc)
}

fn parse(url: &str, bytes: &[u8]) -> Result<RemoteReceiver, ServiceError> {
    let doc: IncomingPaymentDoc = serde_json::from_slice(bytes).map_err(|_| {
        invalid("the receiver's server answered something that is no incoming payment")
    })?;
    let received = Amount::try_from(&doc.received_amount)
        .map_err(|e| invalid(format!("the receiver's receivedAmount: {e}")))?;
    let incoming_amount = match &doc.incoming_amount {
        Some(w) => {
            let a = Amount::try_from(w)
                .map_err(|e| invalid(format!("the receiver's incomingAmount: {e}")))?;
            if a.asset != received.asset {
                return Err(invalid("the receiver's amounts are in different assets"));
            }
            Some(a.value)
        }
        None => None,
    };
    let expires_at = doc
        .expires_at
        .as_deref()
        .map(Timestamp::parse_rfc3339)
        .transpose()
        .map_err(|_| invalid("the receiver's expiresAt is not a date"))?;
    let ilp = match doc.methods.iter().find(|m| m.kind == "ilp") {
        None => None,
        Some(m) => Some(IlpDestination {
            address: m
                .ilp_address
                .as_deref()
                .and_then(|a| IlpAddress::new(a).ok())
                .ok_or_else(|| invalid("the receiver's ilpAddress is missing or invalid"))?,
            shared_secret: m
                .shared_secret
                .as_deref()
                .and_then(decode_secret)
                .ok_or_else(|| invalid("the receiver's sharedSecret is missing or invalid"))?,
        }),
    };
    Ok(RemoteReceiver {
        url: url.to_owned(),
        asset: received.asset,
        incoming_amount,
        received_amount: received.value,
        completed: doc.completed,
        expires_at,
        ilp,
    })
}

/// A 32-byte secret in base64url (with or without padding) or base64.
fn decode_secret(text: &str) -> Option<[u8; 32]> {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
    let bytes = URL_SAFE_NO_PAD
        .decode(text)
        .or_else(|_| URL_SAFE.decode(text))
        .or_else(|_| STANDARD.decode(text))
        .ok()?;
    <[u8; 32]>::try_from(bytes.as_slice()).ok()
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
    let now = services.clock.now().unix_millis();
    if grant.expires_at.is_none_or(|t| t - ROTATE_BEFORE_MS > now) {
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

fn expiry(services: &Services, answer: &TokenAnswer) -> Option<i64> {
    answer
        .expires_in
        .map(|s| services.clock.now().unix_millis() + s.saturating_mul(1000))
}

/// Requests a non-interactive `incoming-payment` `read-all` grant and
/// keeps its token.
async fn token_anew(services: &Services, key: &GrantKey) -> Result<StoredGrant, ServiceError> {
    let identity = services.server_identity().await?;
    let body = serde_json::json!({
        "access_token": { "access": [{ "type": "incoming-payment", "actions": ["read-all"] }] },
        "client": identity.client_url,
    });
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
    let answer: GrantAnswer = serde_json::from_slice(&bytes)
        .map_err(|_| invalid("the receiver's authorization server answered no grant"))?;
    let token = answer
        .access_token
        .ok_or_else(|| invalid("the receiver's authorization server asks for an interaction"))?;
    let grant = StoredGrant {
        expires_at: expiry(services, &token),
        value: token.value,
        manage: token.manage,
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
    let answer: RotateAnswer =
        serde_json::from_slice(&bytes).map_err(|_| OutboundError::Unreachable)?;
    Ok(StoredGrant {
        expires_at: expiry(services, &answer.access_token),
        value: answer.access_token.value,
        manage: answer.access_token.manage,
    })
}

/// A GET, signed when there is a token.
async fn get(
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
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(t) = token {
        let value = reqwest::header::HeaderValue::from_str(&format!("GNAP {t}"))
            .map_err(|_| OutboundError::Unreachable)?;
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    let created = u64::try_from(services.clock.now().unix_seconds()).unwrap_or(0);
    let target = services.outbound.check(url)?.to_string();
    let signature = opd_httpsig::sign_request(
        &method,
        &target,
        &headers,
        body.as_deref(),
        &identity.key,
        crate::wallets::SERVER_KEY_ID,
        created,
    )
    .map_err(|_| OutboundError::Unreachable)?;
    signature
        .apply_to(&mut headers)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_incoming_payment_with_its_ilp_details() {
        let secret = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 32]);
        let doc = serde_json::json!({
            "id": "https://b.example/incoming-payments/x",
            "walletAddress": "https://b.example/bob",
            "incomingAmount": {"value": "1000", "assetCode": "EUR", "assetScale": 2},
            "receivedAmount": {"value": "250", "assetCode": "EUR", "assetScale": 2},
            "completed": false,
            "expiresAt": "2030-01-01T00:00:00Z",
            "methods": [{"type": "ilp", "ilpAddress": "test.b.x", "sharedSecret": secret}]
        });
        let r = parse(
            "https://b.example/incoming-payments/x",
            doc.to_string().as_bytes(),
        )
        .unwrap();
        assert_eq!(
            (r.incoming_amount, r.received_amount, r.remaining()),
            (Some(1000), 250, Some(750))
        );
        let ilp = r.ilp.clone().unwrap();
        assert_eq!(ilp.shared_secret, [7u8; 32]);
        assert_eq!(ilp.address.as_str(), "test.b.x");
        assert!(r.is_active(Timestamp::parse_rfc3339("2029-01-01T00:00:00Z").unwrap()));
        assert!(!r.is_active(Timestamp::parse_rfc3339("2030-01-01T00:00:00Z").unwrap()));
    }

    #[test]
    fn refuses_receivers_with_broken_ilp_details() {
        let doc = serde_json::json!({
            "receivedAmount": {"value": "0", "assetCode": "EUR", "assetScale": 2},
            "completed": true,
            "methods": []
        });
        let done = parse("u", doc.to_string().as_bytes()).unwrap();
        assert!(done.ilp.is_none() && !done.is_active(Timestamp::from_unix_millis(0)));
        for methods in [
            serde_json::json!([{"type": "ilp", "ilpAddress": "test.b.x", "sharedSecret": "short"}]),
            serde_json::json!([{"type": "ilp", "ilpAddress": "not an address", "sharedSecret": "x"}]),
        ] {
            let doc = serde_json::json!({
                "receivedAmount": {"value": "0", "assetCode": "EUR", "assetScale": 2},
                "methods": methods
            });
            assert!(matches!(
                parse("u", doc.to_string().as_bytes()),
                Err(ServiceError::InvalidReceiver(_))
            ));
        }
    }
}
