//! Webhooks: events are written to an outbox in the same transaction as the
//! change they describe, and delivered by `deliver_once` to the configured
//! URL, retried with backoff until a 2xx.
//!
//! Each delivery is `POST <url>` with the JSON body
//! `{"id","type","data","createdAt"}` and the header
//! `Opd-Signature: t=<unix milliseconds>, v1=<hex HMAC-SHA256>` computed with
//! the webhook secret over `<t>.<body bytes>`. Receivers should recompute
//! it, compare in constant time and reject stale `t`.

use hmac::{Hmac, Mac};
use opd_core::Timestamp;
use opd_store::payments::WebhookEventRecord;
use sha2::Sha256;

use crate::{ServiceError, Services};

/// The signature header name.
pub const SIGNATURE_HEADER: &str = "Opd-Signature";

/// A new outbox event, due now.
pub fn event(services: &Services, kind: &str, data: serde_json::Value) -> WebhookEventRecord {
    let now = services.clock.now();
    let id = opd_core::ids::new_uuid_v7(now, services.random.as_ref()).to_string();
    let body =
        serde_json::json!({ "id": id, "type": kind, "data": data, "createdAt": now.to_rfc3339() });
    WebhookEventRecord {
        id,
        kind: kind.to_owned(),
        data: body.to_string(),
        attempts: 0,
        next_attempt_at: now,
        delivered_at: None,
        created_at: now,
    }
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
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("t={timestamp_ms}, v1={hex}")
}

/// Backoff after `attempts` failed deliveries: 1 s, 2 s, 4 s ... up to 1 h.
pub fn backoff_ms(attempts: i64) -> i64 {
    let exp = u32::try_from(attempts.clamp(0, 12)).unwrap_or(12);
    (1000i64 << exp).min(3_600_000)
}

/// Delivers the events that are due; returns how many were attempted.
/// Without a webhook URL nothing is delivered (events stay in the outbox).
pub async fn deliver_once(services: &Services) -> Result<usize, ServiceError> {
    let Some(url) = &services.config.webhook_url else {
        return Ok(0);
    };
    let now = services.clock.now();
    let due = services.store.due_webhook_events(now, 32).await?;
    for e in &due {
        let t = services.clock.now().unix_millis();
        let mut req = services
            .http
            .post(url)
            .header("content-type", "application/json")
            .body(e.data.clone());
        if let Some(secret) = &services.config.webhook_secret {
            req = req.header(SIGNATURE_HEADER, signature(secret, t, e.data.as_bytes()));
        }
        let outcome = match req.send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(format!("answered {}", r.status())),
            Err(err) => Err(err.to_string()),
        };
        let after = services.clock.now();
        match outcome {
            Ok(()) => {
                services
                    .store
                    .webhook_attempted(&e.id, Some(after), after, None)
                    .await?
            }
            Err(why) => {
                tracing::warn!(webhook.id = %e.id, webhook.kind = %e.kind, error = %why, "webhook delivery failed");
                let next =
                    Timestamp::from_unix_millis(after.unix_millis() + backoff_ms(e.attempts));
                services
                    .store
                    .webhook_attempted(&e.id, None, next, Some(&why))
                    .await?;
            }
        }
    }
    Ok(due.len())
}
