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
//! The authorization server of step 1 is kept a minute for the
//! receiver's collection (its URL less the last segment), so the next
//! receivers there (a quote's, then its payment's) are read with the one
//! signed `GET` of step 3. When no token from a kept authorization server
//! is taken (none can be had, or the receiver's server refuses even a new
//! one), it is learned again by step 1; any other failure is the
//! receiver's answer.
//!
//! Every request goes through the hardened outbound client (address
//! checks, `--outbound-allow`, bounded time and size, no redirects to
//! another origin). Any failure makes the receiver invalid; the reason is
//! logged and given as the error's detail, never what the other server
//! answered.

use base64::Engine;
use opd_core::{Amount, AmountWire, Asset, Timestamp};
use opd_ilp::IlpAddress;
use serde::Deserialize;

use super::client;
use crate::interledger::paths::IlpDestination;
use crate::{ServiceError, Services};

/// A receiver on another server, as its incoming payment describes it.
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
    /// The wallet address it pays, as its server says, and only when that
    /// is on the receiver's own origin: a server may not name another's.
    pub wallet_address: Option<String>,
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
            .field("wallet_address", &self.wallet_address)
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
    #[serde(default)]
    wallet_address: Option<String>,
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

fn invalid(reason: impl Into<String>) -> ServiceError {
    ServiceError::InvalidReceiver(reason.into())
}

/// How long the authorization server a receiver's server named is kept.
pub const AUTH_SERVER_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// Resolves `url`, an incoming payment on another server.
pub async fn resolve(services: &Services, url: &str) -> Result<RemoteReceiver, ServiceError> {
    let collection = url.rsplit_once('/').map_or(url, |(c, _)| c).to_owned();
    let kept = &services.payments.auth_servers;
    if let Some(auth_server) = kept.get(&collection) {
        match client::read(services, url, auth_server).await {
            Ok(doc) => return parse(url, &doc),
            // Any other failure (unreachable, not found) would be the
            // same after asking again.
            Err(failure) if !failure.refused => return Err(failure.error),
            Err(failure) => {
                tracing::debug!(receiver = %url, error = %failure.error, "no token from the kept authorization server was taken; asking the receiver again");
                kept.remove(&collection);
            }
        }
    }
    let public: PublicIncomingPayment = serde_json::from_slice(
        &client::get(services, url, None)
            .await
            .map_err(|e| invalid(format!("the receiver could not be read: {e}")))?,
    )
    .map_err(|_| invalid("the receiver's server answered something that is no incoming payment"))?;
    let doc = client::read(services, url, public.auth_server.clone())
        .await
        .map_err(|failure| failure.error)?;
    kept.insert(collection, public.auth_server);
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
        wallet_address: doc.wallet_address.and_then(|w| on_origin_of(&w, url)),
    })
}

/// `claimed` as a URL in plain ASCII (how it is shown), when it shares
/// scheme, host and port with `url`.
fn on_origin_of(claimed: &str, url: &str) -> Option<String> {
    let (claimed, url) = (url::Url::parse(claimed).ok()?, url::Url::parse(url).ok()?);
    (claimed.origin() == url.origin() && url.origin().is_tuple()).then(|| claimed.to_string())
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
        assert_eq!(r.wallet_address.as_deref(), Some("https://b.example/bob"));
        // Shown in logs with what it is, never with its STREAM secret.
        let shown = format!("{r:?}");
        assert!(shown.contains("test.b.x"), "{shown}");
        assert!(
            shown.contains("https://b.example/incoming-payments/x"),
            "{shown}"
        );
        assert!(
            !shown.contains("7, 7, 7") && !shown.contains(&secret),
            "{shown}"
        );
        // A server naming a wallet address of another origin is not believed.
        let mut claimed = doc.clone();
        claimed["walletAddress"] = serde_json::json!("https://bank.example/alice");
        let r = parse(
            "https://b.example/incoming-payments/x",
            claimed.to_string().as_bytes(),
        )
        .unwrap();
        assert_eq!(r.wallet_address, None);
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
