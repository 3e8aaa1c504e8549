//! Webhooks: events are written to an outbox in the same transaction as the
//! change they describe, and delivered by `deliver_once` to the configured
//! URL, retried with backoff until a 2xx.
//!
//! Each delivery is `POST <url>` with the JSON body
//! `{"id","type","data","createdAt"}` and the header
//! `Opd-Signature: t=<unix milliseconds>, v1=<hex HMAC-SHA256>` computed with
//! the webhook secret over `<t>.<body bytes>`. Receivers should recompute
//! it, compare in constant time and reject stale `t`.
//!
//! The events of a money transaction's facts (`opd_store::Fact`: an
//! incoming payment completed by a credit, a peer's liquidity crossing a
//! threshold) are rendered here, through the Open Payments views, while
//! the transaction waits to commit them (`opd_store::Uncommitted`).

use hmac::{Hmac, Mac};
use opd_core::incoming_payment::IncomingPayment;
use opd_core::outgoing_payment::OutgoingPayment;
use opd_core::peer::{LiquidityZone, Peer};
use opd_core::wallet_address::WalletAddress;
use opd_core::webhook::{EventKind, WebhookEvent};
use opd_core::{AmountWire, Backoff, Random, TenantId, Timestamp};
use opd_store::Fact;
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

use crate::tenants::{Site, SiteTable};
use crate::views::{IncomingPaymentWire, OutgoingPaymentWire};
use crate::{ServiceError, Services};

/// How long one delivery attempt may take.
const WEBHOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The signature header name.
pub const SIGNATURE_HEADER: &str = "Opd-Signature";

/// A new outbox event about `wallet` (it goes to its tenant's webhook
/// URL), due now.
pub fn event(
    services: &Services,
    wallet: &WalletAddress,
    kind: EventKind,
    data: serde_json::Value,
) -> WebhookEvent {
    let (now, random) = (services.clock.now(), services.random.as_ref());
    event_at(now, random, wallet.tenant.clone(), kind, data)
}

/// A new outbox event of `tenant` made at `now`, due then, its id from
/// `random`.
pub fn event_at(
    now: Timestamp,
    random: &dyn Random,
    tenant: TenantId,
    kind: EventKind,
    data: serde_json::Value,
) -> WebhookEvent {
    let id = opd_core::ids::new_uuid_v7(now, random).to_string();
    let body = serde_json::json!({
        "id": id,
        "type": kind.as_str(),
        "data": data,
        "createdAt": now.to_rfc3339(),
    });
    WebhookEvent {
        id,
        tenant,
        kind,
        data: body.to_string(),
        attempts: 0,
        next_attempt_at: now,
        delivered_at: None,
        created_at: now,
    }
}

/// The webhook body of an incoming payment: its Open Payments view, as
/// `GET /incoming-payments/{id}` shows it (without its payment methods).
pub(crate) fn incoming_event_data(
    site: &Site,
    p: &IncomingPayment,
    wallet: &WalletAddress,
) -> serde_json::Value {
    let view = IncomingPaymentWire::new(p, wallet, &site.public_url, None);
    serde_json::to_value(view).unwrap_or_default()
}

/// Adds to an `incoming_payment.completed` or `.expired` body what the
/// operator still has to withdraw from the incoming payment
/// (`POST /incoming-payments/{id}/withdrawals`): in external mode what it
/// received and was not withdrawn yet when the event was made; 0 in
/// balance mode, where received money is already on the wallet address.
/// (`receivedAmount` is in every body.)
pub(crate) fn add_withdrawal(data: &mut serde_json::Value, p: &IncomingPayment, to_withdraw: u64) {
    let amount = opd_core::Amount::new(to_withdraw, p.asset.clone());
    data["amountToWithdraw"] = serde_json::json!(AmountWire::from(&amount));
}

/// The webhook body of an outgoing payment: its Open Payments view, as
/// `GET /outgoing-payments/{id}` shows it, plus opd's `state` (`funding`,
/// `sending`, `completed`, `failed` or `cancelled`) and, for one that
/// failed or was cancelled, why (`error`; with `sentAmount`, what really
/// left before it ended).
pub(crate) fn payment_event_data(
    site: &Site,
    p: &OutgoingPayment,
    wallet: &WalletAddress,
) -> serde_json::Value {
    let view = OutgoingPaymentWire::new(p, wallet, &site.public_url);
    let mut data = serde_json::to_value(view).unwrap_or_default();
    data["state"] = serde_json::Value::String(p.state.as_str().to_owned());
    if let Some(error) = &p.error {
        data["error"] = serde_json::Value::String(error.clone());
    }
    data
}

/// What rendering an event needs besides its facts: when it is made, a
/// random source for its id, and the sites the views it carries link
/// under.
#[derive(Clone, Copy)]
pub struct Stamp<'a> {
    pub now: Timestamp,
    pub random: &'a dyn Random,
    pub sites: &'a SiteTable,
}

impl<'a> Stamp<'a> {
    /// The stamp of an event made now by `services`, linking under `sites`.
    pub fn of(services: &'a Services, sites: &'a SiteTable) -> Self {
        Self {
            now: services.clock.now(),
            random: services.random.as_ref(),
            sites,
        }
    }
}

/// The events of `facts`. `receiver` is the wallet address of the
/// incoming payment a credit's facts are about (read before its
/// transaction); `None` for movements that credit no incoming payment.
pub(crate) fn of_facts(
    stamp: Stamp<'_>,
    facts: &[Fact],
    receiver: Option<&WalletAddress>,
) -> Result<Vec<WebhookEvent>, ServiceError> {
    facts
        .iter()
        .map(|fact| match fact {
            Fact::IncomingCompleted {
                payment,
                to_withdraw,
            } => {
                let wallet = receiver.filter(|w| w.id == payment.wallet_address_id);
                let wallet = wallet.ok_or_else(|| {
                    ServiceError::Internal("a credit's facts without its wallet address".into())
                })?;
                let site = stamp.sites.of(&wallet.tenant);
                let view = IncomingPaymentWire::new(payment, wallet, &site.public_url, None);
                let mut data = serde_json::to_value(view).unwrap_or_default();
                add_withdrawal(&mut data, payment, *to_withdraw);
                let kind = EventKind::IncomingPaymentCompleted;
                let tenant = wallet.tenant.clone();
                Ok(event_at(stamp.now, stamp.random, tenant, kind, data))
            }
            Fact::LiquidityCrossed {
                peer,
                zone,
                balance,
            } => Ok(liquidity_event(stamp, peer, *zone, *balance)),
        })
        .collect()
}

fn liquidity_event(
    stamp: Stamp<'_>,
    peer: &Peer,
    zone: LiquidityZone,
    balance: u64,
) -> WebhookEvent {
    let (kind, threshold) = match zone {
        LiquidityZone::Low => (EventKind::PeerLiquidityLow, peer.liquidity_low),
        LiquidityZone::High => (EventKind::PeerLiquidityHigh, peer.liquidity_high),
    };
    let data = serde_json::json!({
        "id": peer.id.to_string(),
        "name": peer.name,
        "asset": {"code": peer.asset.code.as_str(), "scale": peer.asset.scale},
        "liquidityThreshold": threshold.map(|t| t.to_string()),
        "balance": balance.to_string(),
    });
    // Peers are the server's: their events are the operator's.
    event_at(stamp.now, stamp.random, TenantId::operator(), kind, data)
}

/// The `Opd-Signature` value of a body at a time.
pub fn signature(secret: &str, timestamp_ms: i64, body: &[u8]) -> String {
    // HMAC takes keys of any length; the error branch cannot happen.
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret.as_bytes()) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(timestamp_ms.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex = opd_core::hex::lower(&digest);
    format!("t={timestamp_ms}, v1={hex}")
}

/// The delay after failed deliveries: 1 s, 2 s, 4 s ... up to 1 h.
const DELIVERY_BACKOFF: Backoff = Backoff {
    base_ms: 1000,
    cap_ms: 3_600_000,
    max_doublings: 12,
};

/// Backoff after `attempts` failed deliveries: 1 s, 2 s, 4 s ... up to 1 h.
pub fn backoff_ms(attempts: i64) -> i64 {
    DELIVERY_BACKOFF.delay_ms(attempts)
}

/// Most deliveries in flight at once from one node (one destination: the
/// webhook URL), and so the most events one step claims.
pub const CONCURRENT_DELIVERIES: i64 = 32;

/// How long a claimed event is this node's: longer than one delivery may
/// take (the HTTP client gives up after 5 s), so no other node takes it
/// while it is in flight; a node that dies lets it come back after this.
pub const DELIVERY_LEASE_MS: i64 = 60_000;

/// Claims the events that are due and delivers them concurrently; returns
/// how many were attempted. Each event is claimed by one node at a time, so
/// several nodes never deliver the same event at once. Without a webhook
/// URL nothing is delivered (events stay in the outbox).
pub async fn deliver_once(services: &Services) -> Result<usize, ServiceError> {
    let sites = services.sites.table().await?;
    if sites.all().iter().all(|s| s.webhook_url.is_none()) {
        return Ok(0);
    }
    let now = services.clock.now();
    let due = services
        .store
        .claim_webhook_events(now, DELIVERY_LEASE_MS, CONCURRENT_DELIVERIES)
        .await?;
    let results =
        futures_util::future::join_all(due.iter().map(|e| deliver(services, &sites, e))).await;
    for r in results {
        r?;
    }
    Ok(due.len())
}

/// Where an event goes: its tenant's webhook URL, signed with its secret,
/// or the server's `--webhook-url` and `--webhook-secret` (the operator's
/// events, and a tenant's without a URL of its own). `None`: nowhere yet.
async fn destination(
    services: &Services,
    sites: &SiteTable,
    e: &WebhookEvent,
) -> Result<Option<(String, Option<SecretString>)>, ServiceError> {
    let own = sites.get(&e.tenant).and_then(|s| s.webhook_url.clone());
    match own {
        Some(url) if !e.tenant.is_operator() => {
            let which = opd_store::TenantSecret::Webhook;
            let secret = crate::tenants::secrets::get(services, &e.tenant, which).await?;
            Ok(Some((url, secret)))
        }
        _ => Ok(services
            .config
            .webhook_url
            .clone()
            .map(|url| (url, services.config.webhook_secret.clone()))),
    }
}

/// One delivery attempt, recorded: delivered, or retried after a backoff.
async fn deliver(
    services: &Services,
    sites: &SiteTable,
    e: &WebhookEvent,
) -> Result<(), ServiceError> {
    let t = services.clock.now().unix_millis();
    let target = destination(services, sites, e).await?;
    let outcome = match target.as_ref().map(|(url, _)| url) {
        None => Err("no webhook URL for this event's tenant".to_owned()),
        Some(url) => {
            post(
                services,
                url,
                target.as_ref().and_then(|t| t.1.as_ref()),
                t,
                e,
            )
            .await
        }
    };
    record(services, e, outcome).await
}

/// POSTs the event, signed at `t` when there is a secret.
async fn post(
    services: &Services,
    url: &str,
    secret: Option<&SecretString>,
    t: i64,
    e: &WebhookEvent,
) -> Result<(), String> {
    match services.outbound.request(reqwest::Method::POST, url) {
        Ok(req) => {
            let mut req = req
                .header("content-type", "application/json")
                .body(e.data.clone());
            if let Some(secret) = secret {
                req = req.header(
                    SIGNATURE_HEADER,
                    signature(secret.expose_secret(), t, e.data.as_bytes()),
                );
            }
            // The receiver's answer is not used: only a little is read.
            services
                .outbound
                .send(req, WEBHOOK_TIMEOUT, 4096)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        Err(err) => Err(err.to_string()),
    }
}

/// Records an attempt: delivered, or due again after a backoff.
async fn record(
    services: &Services,
    e: &WebhookEvent,
    outcome: Result<(), String>,
) -> Result<(), ServiceError> {
    let after = services.clock.now();
    crate::platform::metrics::webhook_attempted(e.kind.as_str(), outcome.is_ok());
    match outcome {
        Ok(()) => {
            services
                .store
                .webhook_attempted(&e.id, Some(after), after, None)
                .await?
        }
        Err(why) => {
            tracing::warn!(webhook.id = %e.id, webhook.kind = %e.kind, error = %why, "webhook delivery failed");
            let next = Timestamp::from_unix_millis(after.unix_millis() + backoff_ms(e.attempts));
            services
                .store
                .webhook_attempted(&e.id, None, next, Some(&why))
                .await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::backoff_ms;

    #[test]
    fn deliveries_back_off_from_one_second_to_an_hour() {
        let pairs = [
            (-1, 1000),
            (0, 1000),
            (1, 2000),
            (11, 2_048_000),
            (12, 3_600_000),
        ];
        for (attempts, ms) in pairs {
            assert_eq!(backoff_ms(attempts), ms, "after {attempts} attempts");
        }
        assert_eq!(backoff_ms(1000), 3_600_000);
    }
}
