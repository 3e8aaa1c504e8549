//! The connector: Prepares not addressed to this server go on to the peer
//! whose route is the longest prefix of their destination (never back to
//! the peer they came from), with
//! - the amount converted from the incoming peer's asset to the outgoing
//!   one's (configured rates, rounded down), and the outgoing peer's max
//!   packet amount checked (F08, with the amounts in the incoming units);
//! - the expiry cut to min(incoming − 1 s, now + the forward timeout)
//!   (R02 when under a second is left), and the next hop's answer awaited
//!   until then and no longer: the forward timeout is below the ILP
//!   listener's request timeout, so the peer always gets an ILP reply;
//! - the amount held from the incoming peer's liquidity first (T04 when it
//!   does not cover it), then posted to the outgoing peer if the answer is
//!   a Fulfill whose fulfillment matches the condition, voided otherwise;
//!   the hold expires with the forwarded Prepare (never at the expiry the
//!   sender chose, which may be years away), so a hold left pending by a
//!   crash is voided by [`void_expired_once`] a second after the forwarded
//!   Prepare expired;
//! - no route → F02; the peer unreachable, timing out or answering
//!   something that is no ILP reply → T01 (R00 once the packet expired).

use std::sync::Arc;
use std::time::Duration;

use opd_core::peer::{Hold, Peer};
use opd_core::Asset;
use opd_ilp::packet::{Packet, Prepare};
use opd_ilp::{condition_of, AmountTooLarge, ErrorCode};
use opd_store::HoldOutcome;

use super::reply::{reject, reject_with};
use crate::{ServiceError, Services};

/// What each hop keeps of the expiry, to pass the answer back.
const HOP_MARGIN_MS: i64 = 1_000;
/// The largest answer read from a peer.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Every peer, cached until peers change (`Change::Peers`).
async fn peers(services: &Services) -> Result<Arc<Vec<Peer>>, ServiceError> {
    if let Some(all) = services.interledger.routes.get(&()) {
        return Ok(all);
    }
    // Through the peers module: it opens the sealed outgoing tokens.
    let all = Arc::new(crate::interledger::peers::list(services).await?);
    services.interledger.routes.insert((), all.clone());
    Ok(all)
}

/// The peer reaching `destination` by the longest matching route, other
/// than `from`, with an outgoing endpoint.
pub async fn route(
    services: &Services,
    destination: &str,
    from: &Peer,
) -> Result<Option<Peer>, ServiceError> {
    route_except(services, destination, Some(from.id)).await
}

/// The peer reaching `destination` by the longest matching route, with an
/// outgoing endpoint, other than `except` (the peer a packet came from;
/// `None` for packets this server sends).
pub async fn route_except(
    services: &Services,
    destination: &str,
    except: Option<opd_core::PeerId>,
) -> Result<Option<Peer>, ServiceError> {
    let all = peers(services).await?;
    let mut best: Option<(&Peer, usize)> = None;
    for peer in all
        .iter()
        .filter(|p| Some(p.id) != except && p.outgoing.is_some())
    {
        for prefix in &peer.routes {
            let matches = destination == prefix
                || destination
                    .strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.starts_with('.'));
            if matches && best.is_none_or(|(_, len)| prefix.len() > len) {
                best = Some((peer, prefix.len()));
            }
        }
    }
    Ok(best.map(|(p, _)| p.clone()))
}

/// The largest amount of `from` that converts to at most `max` of `to`.
fn largest_below(rate: &opd_core::Rate, max: u64, from: &Asset, to: &Asset) -> u64 {
    let (mut lo, mut hi) = (0u64, u64::MAX);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        match rate.convert_floor(mid, from.scale, to.scale) {
            Ok(v) if v <= max => lo = mid,
            _ => hi = mid - 1,
        }
    }
    lo
}

/// Forwards `prepare` from `from`; the bytes of the answer to send back.
pub async fn forward(
    services: &Services,
    from: &Peer,
    prepare: &Prepare,
) -> Result<Vec<u8>, ServiceError> {
    let Some(next) = route(services, prepare.destination.as_str(), from).await? else {
        return Ok(reject(services, ErrorCode::F02_UNREACHABLE, "no route"));
    };
    let rate = match services.pricing.rate(&from.asset, &next.asset).await {
        Ok(r) => r,
        Err(ServiceError::NoExchangeRate { .. }) => {
            return Ok(reject(
                services,
                ErrorCode::F02_UNREACHABLE,
                "no exchange rate",
            ))
        }
        Err(e) => return Err(e),
    };
    let amount_out = match rate.convert_floor(prepare.amount, from.asset.scale, next.asset.scale) {
        Ok(v) => v,
        Err(_) => {
            return Ok(reject(
                services,
                ErrorCode::F08_AMOUNT_TOO_LARGE,
                "amount too large",
            ))
        }
    };
    if let Some(max) = next.max_packet_amount {
        if amount_out > max {
            let data = AmountTooLarge {
                received_amount: prepare.amount,
                maximum_amount: largest_below(&rate, max, &from.asset, &next.asset),
            };
            let message = "packet amount exceeds the next hop's maximum";
            let code = ErrorCode::F08_AMOUNT_TOO_LARGE;
            return Ok(reject_with(services, code, message, data.encode().to_vec()));
        }
    }
    let now = services.clock.now();
    let expires_in = prepare.expires_at.unix_millis();
    let max_hop_ms = opd_core::time::millis(services.config.ilp.forward_timeout);
    let expires_out = expires_in
        .saturating_sub(HOP_MARGIN_MS)
        .min(now.unix_millis().saturating_add(max_hop_ms));
    if expires_out <= now.unix_millis() {
        let code = ErrorCode::R02_INSUFFICIENT_TIMEOUT;
        return Ok(reject(services, code, "too little time left to forward"));
    }
    let hold = Hold {
        id: opd_core::ids::new_uuid_v7(now, services.random.as_ref()).to_string(),
        incoming_peer: from.id,
        incoming_asset: from.asset.clone(),
        outgoing_peer: next.id,
        outgoing_asset: next.asset.clone(),
        amount_in: prepare.amount,
        amount_out,
        expires_at: opd_core::Timestamp::from_unix_millis(expires_out),
        created_at: now,
    };
    match services.store.ilp_hold(&hold).await? {
        HoldOutcome::Held => {}
        HoldOutcome::Insufficient { .. } | HoldOutcome::Overflow => {
            let code = ErrorCode::T04_INSUFFICIENT_LIQUIDITY;
            return Ok(reject(services, code, "insufficient liquidity"));
        }
    }
    let Some(expires_at) = opd_ilp::Timestamp::from_unix_millis(expires_out) else {
        return settle_rejected(services, &hold, ErrorCode::T00_INTERNAL_ERROR, "bad expiry").await;
    };
    let onward = Prepare {
        amount: amount_out,
        expires_at,
        execution_condition: prepare.execution_condition,
        destination: prepare.destination.clone(),
        data: prepare.data.clone(),
    };
    let wait = Duration::from_millis(u64::try_from(expires_out - now.unix_millis()).unwrap_or(0));
    let answer = send(services, &next, onward.encode(), wait).await;
    match answer.as_deref().map(Packet::decode) {
        Ok(Ok(Packet::Fulfill(f)))
            if condition_of(&f.fulfillment) == prepare.execution_condition =>
        {
            let at = services.clock.now();
            if services.store.ilp_settle(&hold.id, true, at).await? {
                return Ok(answer.unwrap_or_default());
            }
            // Swept as expired meanwhile: the money went back.
            let code = ErrorCode::R00_TRANSFER_TIMED_OUT;
            Ok(reject(services, code, "the packet expired"))
        }
        Ok(Ok(Packet::Fulfill(_))) => {
            let code = ErrorCode::F05_WRONG_CONDITION;
            settle_rejected(services, &hold, code, "the next hop's fulfillment is wrong").await
        }
        Ok(Ok(Packet::Reject(_))) => {
            services
                .store
                .ilp_settle(&hold.id, false, services.clock.now())
                .await?;
            Ok(answer.unwrap_or_default())
        }
        Ok(_) => {
            let code = ErrorCode::T01_PEER_UNREACHABLE;
            settle_rejected(services, &hold, code, "the next hop answered no ILP reply").await
        }
        Err(message) => {
            let expired = services.clock.now().unix_millis() >= expires_out;
            let code = if expired {
                ErrorCode::R00_TRANSFER_TIMED_OUT
            } else {
                ErrorCode::T01_PEER_UNREACHABLE
            };
            tracing::warn!(peer = %next.name, error = %message, "could not forward an ILP packet");
            settle_rejected(services, &hold, code, "the next hop is unreachable").await
        }
    }
}

async fn settle_rejected(
    services: &Services,
    hold: &Hold,
    code: ErrorCode,
    message: &str,
) -> Result<Vec<u8>, ServiceError> {
    services
        .store
        .ilp_settle(&hold.id, false, services.clock.now())
        .await?;
    Ok(reject(services, code, message))
}

/// POSTs a Prepare to the peer's ILP-over-HTTP endpoint; the answer's
/// bytes, or why there are none.
pub(crate) async fn send(
    services: &Services,
    peer: &Peer,
    body: Vec<u8>,
    wait: Duration,
) -> Result<Vec<u8>, String> {
    let Some(out) = &peer.outgoing else {
        return Err("no outgoing endpoint".into());
    };
    let request = services
        .outbound
        .request(reqwest::Method::POST, &out.endpoint)
        .map_err(|e| e.to_string())?
        .bearer_auth(&out.auth_token)
        .header("content-type", "application/octet-stream")
        .body(body);
    // An ILP packet is at most ~33 KB; a larger answer is not one, and is
    // not read to its end.
    let started = std::time::Instant::now();
    let answer = services
        .outbound
        .send(request, wait, MAX_ANSWER_BYTES)
        .await
        .map(|(_, bytes)| bytes)
        .map_err(|e| e.to_string());
    crate::platform::metrics::ilp_round_trip(started.elapsed().as_secs_f64());
    crate::platform::metrics::ilp_packet(
        crate::platform::metrics::Direction::Outgoing,
        answer.as_deref().ok(),
    );
    answer
}

/// Voids holds left pending past their expiry (a node died while
/// forwarding); returns how many.
pub async fn void_expired_once(services: &Services) -> Result<usize, ServiceError> {
    // A second past the expiry: an answer arriving in time has settled.
    let before = services.clock.now().plus_millis(-HOP_MARGIN_MS);
    let due = services.store.expired_holds(before, 100).await?;
    let mut voided = 0;
    for id in due {
        if services
            .store
            .ilp_settle(&id, false, services.clock.now())
            .await?
        {
            voided += 1;
        }
    }
    Ok(voided)
}
