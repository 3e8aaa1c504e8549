//! What opd counts for its operators: the names of every metric, their
//! labels, and the few helpers the use cases call when something happens
//! (a payment created, completed or failed, money received, a webhook
//! attempted, an ILP packet answered, a signature refused). `docs/metrics.md` lists them all.
//!
//! Recording goes through the `metrics` facade, which costs an atomic load
//! and nothing else while no recorder is installed (tools and unit tests);
//! `opd serve` installs the Prometheus recorder once per process (see
//! `opd_api::metrics`). Names follow the OpenTelemetry semantic conventions
//! where one exists (`http.server.request.duration` is
//! `http_server_request_duration_seconds`, `db.client.connection.count` is
//! `db_client_connection_count`), and are `opd_*` otherwise.
//!
//! Labels are bounded: asset codes and scales (set by the operator on
//! wallet addresses), event types, ILP codes (a class letter and two
//! digits), signature failure reasons (a fixed list); never an id, a
//! wallet address or a URL. Amounts are counters of minor units of the
//! labelled asset: a value divided by 10^`asset_scale` is in the asset's
//! major unit. Prometheus keeps samples as floats, exact up to 2^53.

use std::time::Duration;

use metrics::{counter, gauge, histogram, Label};
use opd_core::{Amount, Asset, Timestamp};
use opd_httpsig::SigError;

use opd_store::Store;

/// Request duration by listener, method, route template and status.
pub const HTTP_REQUEST_DURATION: &str = "http_server_request_duration_seconds";
/// Requests being served, by listener.
pub const HTTP_ACTIVE_REQUESTS: &str = "http_server_active_requests";
/// Outgoing payments created, by asset.
pub const PAYMENTS_CREATED: &str = "opd_outgoing_payments_created_total";
/// Sum of their `debitAmount`s, in minor units.
pub const PAYMENTS_CREATED_AMOUNT: &str = "opd_outgoing_payments_created_amount_total";
/// Outgoing payments completed, by asset.
pub const PAYMENTS_COMPLETED: &str = "opd_outgoing_payments_completed_total";
/// Sum of their `sentAmount`s (fees excluded), in minor units.
pub const PAYMENTS_SENT_AMOUNT: &str = "opd_outgoing_payments_sent_amount_total";
/// Outgoing payments that failed or were cancelled, by asset and state.
pub const PAYMENTS_FAILED: &str = "opd_outgoing_payments_failed_total";
/// Sum of their `debitAmount`s, in minor units.
pub const PAYMENTS_FAILED_AMOUNT: &str = "opd_outgoing_payments_failed_amount_total";
/// Time from creation to completion of an outgoing payment.
pub const PAYMENT_DURATION: &str = "opd_outgoing_payment_duration_seconds";
/// Money credited to incoming payments, by asset and way in.
pub const INCOMING_RECEIVED_AMOUNT: &str = "opd_incoming_payments_received_amount_total";
/// Incoming payments completed, by asset.
pub const INCOMING_COMPLETED: &str = "opd_incoming_payments_completed_total";
/// Webhook delivery attempts, by event type and result.
pub const WEBHOOK_DELIVERIES: &str = "opd_webhook_deliveries_total";
/// Webhook events not delivered yet (sampled at each scrape).
pub const WEBHOOK_BACKLOG: &str = "opd_webhook_backlog";
/// Outgoing payments in `sending`, by age (sampled at each scrape).
pub const PAYMENTS_SENDING: &str = "opd_outgoing_payments_sending";
/// ILP packets answered (incoming) or sent (outgoing), by outcome and code.
pub const ILP_PACKETS: &str = "opd_ilp_packets_total";
/// How long a peer took to answer a packet this server sent.
pub const ILP_PACKET_DURATION: &str = "opd_ilp_packet_duration_seconds";
/// Request signatures refused, by reason.
pub const SIGNATURE_FAILURES: &str = "opd_http_signature_failures_total";
/// Database connections by pool and state (sampled at each scrape).
pub const DB_CONNECTIONS: &str = "db_client_connection_count";
/// The most connections a pool opens.
pub const DB_CONNECTIONS_MAX: &str = "db_client_connection_max";
/// Callers waiting for a connection (the SQLite writer's queue).
pub const DB_PENDING_REQUESTS: &str = "db_client_connection_pending_requests";
/// Always 1, labelled with the version.
pub const BUILD_INFO: &str = "opd_build_info";

/// Every metric above, for the test that keeps `docs/metrics.md` and the
/// Grafana dashboard in step with the code.
pub const ALL: &[&str] = &[
    HTTP_REQUEST_DURATION,
    HTTP_ACTIVE_REQUESTS,
    PAYMENTS_CREATED,
    PAYMENTS_CREATED_AMOUNT,
    PAYMENTS_COMPLETED,
    PAYMENTS_SENT_AMOUNT,
    PAYMENTS_FAILED,
    PAYMENTS_FAILED_AMOUNT,
    PAYMENT_DURATION,
    INCOMING_RECEIVED_AMOUNT,
    INCOMING_COMPLETED,
    WEBHOOK_DELIVERIES,
    WEBHOOK_BACKLOG,
    PAYMENTS_SENDING,
    ILP_PACKETS,
    ILP_PACKET_DURATION,
    SIGNATURE_FAILURES,
    DB_CONNECTIONS,
    DB_CONNECTIONS_MAX,
    DB_PENDING_REQUESTS,
    BUILD_INFO,
];

/// Buckets of the request duration (OpenTelemetry's advice, in seconds).
pub const HTTP_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// Buckets of payment completion times: a local payment takes
/// milliseconds, one over Interledger up to its quote's life.
pub const PAYMENT_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];
/// Buckets of ILP round trips.
pub const ILP_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The most webhook events the backlog gauge counts (the count walks an
/// index; without a webhook URL events are never delivered and pile up).
const BACKLOG_CAP: i64 = 100_000;

/// How long a scrape waits for the webhook backlog count.
const BACKLOG_TIMEOUT: Duration = Duration::from_secs(2);

/// The age buckets of [`PAYMENTS_SENDING`]: their labels, and the upper
/// bound of each but the last, in milliseconds.
const SENDING_AGES: ([&str; 4], [i64; 3]) = (
    ["under_1m", "1m_to_5m", "5m_to_1h", "over_1h"],
    [60_000, 300_000, 3_600_000],
);

/// Sets the gauges read from the server's state rather than counted as
/// things happen: its database pools, its webhook backlog and the
/// payments in `sending` by age (none should stay past the stall bounds,
/// about a minute).
pub async fn sample(store: &dyn Store, webhooks_on: bool, now: Timestamp) {
    sample_sending(store, now).await;
    for pool in store.pool_stats() {
        let name = pool.name;
        for (state, n) in [("idle", pool.idle), ("used", pool.used)] {
            gauge!(DB_CONNECTIONS, "db_client_connection_pool_name" => name, "db_client_connection_state" => state)
                .set(n as f64);
        }
        if let Some(max) = pool.max {
            gauge!(DB_CONNECTIONS_MAX, "db_client_connection_pool_name" => name).set(max as f64);
        }
        if let Some(pending) = pool.pending {
            gauge!(DB_PENDING_REQUESTS, "db_client_connection_pool_name" => name)
                .set(pending as f64);
        }
    }
    // Without a webhook URL nothing is ever delivered: no backlog to watch.
    if webhooks_on {
        let count = tokio::time::timeout(BACKLOG_TIMEOUT, store.webhook_backlog(BACKLOG_CAP)).await;
        match count {
            Ok(Ok(n)) => gauge!(WEBHOOK_BACKLOG).set(n as f64),
            // The gauge keeps its last value; the database's trouble shows
            // in `/readyz` and in the request metrics.
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot count the webhook backlog"),
            Err(_) => tracing::warn!("counting the webhook backlog timed out"),
        }
    }
}

/// Sets [`PAYMENTS_SENDING`].
async fn sample_sending(store: &dyn Store, now: Timestamp) {
    let (labels, ages) = SENDING_AGES;
    let counts = tokio::time::timeout(BACKLOG_TIMEOUT, store.sending_payments_by_age(now, ages));
    match counts.await {
        Ok(Ok(counts)) => {
            for (age, n) in labels.into_iter().zip(counts) {
                gauge!(PAYMENTS_SENDING, "age" => age).set(n as f64);
            }
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "cannot count the payments sending"),
        Err(_) => tracing::warn!("counting the payments sending timed out"),
    }
}

/// What a metric is, for its description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    /// A histogram of durations in seconds.
    Seconds,
}

/// Every metric's kind and help text (shown as `# HELP` lines).
const HELP: &[(&str, Kind, &str)] = &[
    (HTTP_REQUEST_DURATION, Kind::Seconds, "Duration of HTTP server requests, by listener, method, route template and status."),
    (HTTP_ACTIVE_REQUESTS, Kind::Gauge, "HTTP server requests being served, by listener."),
    (PAYMENTS_CREATED, Kind::Counter, "Outgoing payments created, by debit asset."),
    (PAYMENTS_CREATED_AMOUNT, Kind::Counter, "Sum of created outgoing payments' debitAmount, in minor units of the asset (divide by 10^asset_scale)."),
    (PAYMENTS_COMPLETED, Kind::Counter, "Outgoing payments completed, by debit asset."),
    (PAYMENTS_SENT_AMOUNT, Kind::Counter, "Sum of completed outgoing payments' sentAmount (fees excluded), in minor units of the asset."),
    (PAYMENTS_FAILED, Kind::Counter, "Outgoing payments that failed or were cancelled (state), by debit asset."),
    (PAYMENTS_FAILED_AMOUNT, Kind::Counter, "Sum of failed or cancelled outgoing payments' debitAmount, in minor units of the asset."),
    (PAYMENT_DURATION, Kind::Seconds, "Time from an outgoing payment's creation to its completion, by debit asset."),
    (INCOMING_RECEIVED_AMOUNT, Kind::Counter, "Sum credited to incoming payments, in minor units of the receiving asset, by way in (local: from a wallet address of this server; interledger: ILP packets)."),
    (INCOMING_COMPLETED, Kind::Counter, "Incoming payments completed (fully paid, or completed by their client), by asset."),
    (WEBHOOK_DELIVERIES, Kind::Counter, "Webhook delivery attempts, by event type and result (delivered, failed)."),
    (WEBHOOK_BACKLOG, Kind::Gauge, "Webhook events not delivered yet (sampled at each scrape, at most 100000)."),
    (PAYMENTS_SENDING, Kind::Gauge, "Outgoing payments in sending, by age since creation (under_1m, 1m_to_5m, 5m_to_1h, over_1h; sampled at each scrape)."),
    (ILP_PACKETS, Kind::Counter, "ILP Prepares answered (direction incoming) or sent to peers (outgoing), by outcome (fulfill, reject, unreachable) and reject code."),
    (ILP_PACKET_DURATION, Kind::Seconds, "Time a peer took to answer a Prepare this server sent."),
    (SIGNATURE_FAILURES, Kind::Counter, "HTTP message signatures refused (Open Payments and authorization listeners), by reason."),
    (DB_CONNECTIONS, Kind::Gauge, "Database connections, by pool and state (idle, used)."),
    (DB_CONNECTIONS_MAX, Kind::Gauge, "The most connections a database pool opens."),
    (DB_PENDING_REQUESTS, Kind::Gauge, "Callers waiting for a database connection (SQLite: for the single writer)."),
    (BUILD_INFO, Kind::Gauge, "Always 1; the version is a label."),
];

/// Registers the help text of every metric.
pub fn describe() {
    metrics::with_recorder(|recorder| {
        for (name, kind, help) in HELP {
            let (name, help) = ((*name).into(), (*help).into());
            match kind {
                Kind::Counter => recorder.describe_counter(name, None, help),
                Kind::Gauge => recorder.describe_gauge(name, None, help),
                Kind::Seconds => {
                    recorder.describe_histogram(name, Some(metrics::Unit::Seconds), help)
                }
            }
        }
    });
}

/// The labels of an asset.
fn asset_labels(asset: &Asset) -> [Label; 2] {
    [
        Label::new("asset_code", asset.code.as_str().to_owned()),
        Label::new("asset_scale", asset.scale.to_string()),
    ]
}

/// An outgoing payment was created, debiting `debit`.
pub fn payment_created(debit: &Amount) {
    let labels = asset_labels(&debit.asset);
    counter!(PAYMENTS_CREATED, labels.iter()).increment(1);
    counter!(PAYMENTS_CREATED_AMOUNT, labels.iter()).increment(debit.value);
}

/// An outgoing payment created at `created` completed at `now`, having
/// sent `sent` of `asset` (fees excluded).
pub fn payment_completed(asset: &Asset, sent: u64, created: Timestamp, now: Timestamp) {
    let labels = asset_labels(asset);
    counter!(PAYMENTS_COMPLETED, labels.iter()).increment(1);
    counter!(PAYMENTS_SENT_AMOUNT, labels.iter()).increment(sent);
    let millis = now
        .unix_millis()
        .saturating_sub(created.unix_millis())
        .max(0);
    histogram!(PAYMENT_DURATION, labels.iter()).record(millis as f64 / 1000.0);
}

/// An outgoing payment debiting `debit` ended in `state` (`failed` or
/// `cancelled`).
pub fn payment_failed(debit: &Amount, state: &'static str) {
    let [code, scale] = asset_labels(&debit.asset);
    let labels = [code, scale, Label::from_static_parts("state", state)];
    counter!(PAYMENTS_FAILED, labels.iter()).increment(1);
    counter!(PAYMENTS_FAILED_AMOUNT, labels.iter()).increment(debit.value);
}

/// How money reached an incoming payment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// An outgoing payment of a wallet address of this server.
    Local,
    /// ILP packets from a peer.
    Interledger,
    /// ILP packets from a peer paying a wallet address by its payment
    /// pointer (SPSP, no incoming payment).
    Spsp,
}

/// `amount` of `asset` was credited to an incoming payment, which that
/// completed when `completed`.
pub fn incoming_received(asset: &Asset, amount: u64, via: Via, completed: bool) {
    let [code, scale] = asset_labels(asset);
    let via = match via {
        Via::Local => "local",
        Via::Interledger => "interledger",
        Via::Spsp => "spsp",
    };
    let labels = [code, scale, Label::from_static_parts("via", via)];
    counter!(INCOMING_RECEIVED_AMOUNT, labels.iter()).increment(amount);
    if completed {
        incoming_completed(asset);
    }
}

/// An incoming payment of `asset` completed.
pub fn incoming_completed(asset: &Asset) {
    counter!(INCOMING_COMPLETED, asset_labels(asset).iter()).increment(1);
}

/// A webhook event of `event_type` was attempted.
pub fn webhook_attempted(event_type: &'static str, delivered: bool) {
    let result = if delivered { "delivered" } else { "failed" };
    counter!(WEBHOOK_DELIVERIES, "event_type" => event_type, "result" => result).increment(1);
}

/// Which way an ILP packet went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// A Prepare from a peer, answered here.
    Incoming,
    /// A Prepare this server sent to a peer (its own or forwarded).
    Outgoing,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Self::Incoming => "incoming",
            Self::Outgoing => "outgoing",
        }
    }
}

/// ILP packet type bytes (RFC 27): what a reply is, read without decoding
/// it.
const FULFILL_TYPE: u8 = 13;
const REJECT_TYPE: u8 = 14;

/// The reject code of an encoded Reject, read in place: after the type
/// byte comes the OER length of the contents, then the three code bytes.
fn reject_code(reply: &[u8]) -> Option<opd_ilp::ErrorCode> {
    let len_byte = *reply.get(1)?;
    let start = if len_byte < 0x80 {
        2
    } else {
        2 + usize::from(len_byte & 0x7f)
    };
    let code: [u8; 3] = reply.get(start..start + 3)?.try_into().ok()?;
    opd_ilp::ErrorCode::from_bytes(code).ok()
}

/// The `code` label of a Reject: peers choose reject codes, so only RFC
/// 27's become labels and any other is `other` (the number of series
/// stays bounded).
fn code_label(reply: &[u8]) -> String {
    match reject_code(reply) {
        Some(c) if c.name().is_some() => c.as_str().to_owned(),
        Some(_) => "other".to_owned(),
        None => String::new(),
    }
}

/// An ILP exchange ended with `reply` (the encoded Fulfill or Reject), or
/// with no reply at all (`None`: the peer was unreachable).
pub fn ilp_packet(direction: Direction, reply: Option<&[u8]>) {
    let (outcome, code) = match reply.and_then(|r| r.first()) {
        Some(&FULFILL_TYPE) => ("fulfill", String::new()),
        Some(&REJECT_TYPE) => ("reject", reply.map(code_label).unwrap_or_default()),
        Some(_) => ("invalid", String::new()),
        None => ("unreachable", String::new()),
    };
    counter!(ILP_PACKETS, "direction" => direction.as_str(), "outcome" => outcome, "code" => code)
        .increment(1);
}

/// A peer answered (or failed to) after `seconds`.
pub fn ilp_round_trip(seconds: f64) {
    histogram!(ILP_PACKET_DURATION, "direction" => Direction::Outgoing.as_str()).record(seconds);
}

/// A request signature was refused for `reason` (see
/// [`signature_reason`]).
pub fn signature_failed(reason: &'static str) {
    counter!(SIGNATURE_FAILURES, "reason" => reason).increment(1);
}

/// The bounded reason label of a signature error.
pub fn signature_reason(e: &SigError) -> &'static str {
    match e {
        SigError::MissingHeader(_) => "missing_header",
        SigError::MalformedHeader { .. } | SigError::MissingSignatureLabel(_) => "malformed_header",
        SigError::MissingComponent(_) | SigError::ComponentNotPresent(_) => "missing_component",
        SigError::UnsupportedComponent(_) | SigError::InvalidTargetUri => "unsupported_component",
        SigError::MissingKeyId | SigError::MissingCreated | SigError::InvalidCreated => {
            "malformed_parameters"
        }
        SigError::Stale { .. } | SigError::Future { .. } | SigError::Expired { .. } => "not_fresh",
        SigError::UnsupportedAlg(_) => "unsupported_algorithm",
        SigError::DigestMismatch => "digest_mismatch",
        SigError::BadSignature => "bad_signature",
        SigError::UnknownKey(_) | SigError::InvalidKey(_) => "unknown_key",
        SigError::Replayed => "replayed",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_described_once() {
        let described: Vec<&str> = HELP.iter().map(|(name, _, _)| *name).collect();
        assert_eq!(described, ALL);
        for (name, kind, _) in HELP {
            let seconds = name.ends_with("_seconds");
            assert_eq!(seconds, *kind == Kind::Seconds, "{name}");
        }
    }

    #[test]
    fn only_rfc_27_reject_codes_become_labels() {
        let reject = |code: &str| {
            opd_ilp::packet::Reject {
                code: code.parse().unwrap_or(opd_ilp::ErrorCode::F00_BAD_REQUEST),
                triggered_by: None,
                message: String::new(),
                data: Vec::new(),
            }
            .encode()
        };
        assert_eq!(code_label(&reject("T04")), "T04");
        assert_eq!(code_label(&reject("F99")), "F99");
        for made_up in ["F42", "T77", "R13"] {
            assert_eq!(code_label(&reject(made_up)), "other");
        }
    }

    #[test]
    fn reject_codes_are_read_in_place() {
        let reject = opd_ilp::packet::Reject {
            code: opd_ilp::ErrorCode::T04_INSUFFICIENT_LIQUIDITY,
            triggered_by: None,
            message: "x".repeat(300),
            data: vec![1; 200],
        }
        .encode();
        assert_eq!(
            reject_code(&reject),
            Some(opd_ilp::ErrorCode::T04_INSUFFICIENT_LIQUIDITY)
        );
        let short = opd_ilp::packet::Reject {
            code: opd_ilp::ErrorCode::F99_APPLICATION_ERROR,
            triggered_by: None,
            message: String::new(),
            data: Vec::new(),
        }
        .encode();
        assert_eq!(
            reject_code(&short),
            Some(opd_ilp::ErrorCode::F99_APPLICATION_ERROR)
        );
        assert_eq!(reject_code(&[REJECT_TYPE]), None);
        assert_eq!(reject_code(&[REJECT_TYPE, 0x85, 1]), None);
    }
}
