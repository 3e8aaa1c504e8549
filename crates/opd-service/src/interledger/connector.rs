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
//!
//! What a Prepare becomes and how an answer settles it is decided in
//! `onward`, on plain values; this file reads, holds, sends and settles.

use std::sync::Arc;
use std::time::Duration;

use opd_core::peer::{Hold, Peer};
use opd_core::Asset;
use opd_ilp::packet::Prepare;
use opd_ilp::ErrorCode;
use opd_store::HoldOutcome;

use super::reply::{reject, reject_with};
use crate::{ServiceError, Services};
use onward::{onward, settle_on, NextHop, Onward, Settle};

mod onward;

/// What each hop keeps of the expiry, to pass the answer back.
pub(super) const HOP_MARGIN_MS: i64 = 1_000;
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

/// Forwards `prepare` from `from`; the bytes of the answer to send back.
/// Reads the route and the rate, decides (`onward`), holds the amount,
/// sends, and settles the hold as the answer says (`settle_on`).
pub async fn forward(
    services: &Services,
    from: &Peer,
    prepare: &Prepare,
) -> Result<Vec<u8>, ServiceError> {
    let Some(next) = route(services, prepare.destination.as_str(), from).await? else {
        return Ok(reject(
            &services.config.ilp_address,
            ErrorCode::F02_UNREACHABLE,
            "no route",
        ));
    };
    let rate = rate(services, &from.asset, &next.asset).await?;
    let hop = NextHop {
        asset: &next.asset,
        max_packet: next.max_packet_amount,
        rate: rate.as_ref(),
    };
    let now = services.clock.now();
    let max_hop_ms = opd_core::time::millis(services.config.ilp.forward_timeout);
    let expires_in = prepare.expires_at.unix_millis();
    let out = match onward(
        prepare.amount,
        expires_in,
        &from.asset,
        &hop,
        now.unix_millis(),
        max_hop_ms,
    ) {
        Ok(out) => out,
        Err(no) => {
            return Ok(reject_with(
                &services.config.ilp_address,
                no.code,
                no.message,
                no.data,
            ))
        }
    };
    let hold = Hold {
        id: opd_core::ids::new_uuid_v7(now, services.random.as_ref()).to_string(),
        incoming_peer: from.id,
        incoming_asset: from.asset.clone(),
        outgoing_peer: next.id,
        outgoing_asset: next.asset.clone(),
        amount_in: prepare.amount,
        amount_out: out.amount,
        expires_at: opd_core::Timestamp::from_unix_millis(out.expires_ms),
        created_at: now,
    };
    match services.store.ilp_hold(&hold).await? {
        HoldOutcome::Held => {}
        HoldOutcome::Insufficient { .. } | HoldOutcome::Overflow => {
            let code = ErrorCode::T04_INSUFFICIENT_LIQUIDITY;
            return Ok(reject(
                &services.config.ilp_address,
                code,
                "insufficient liquidity",
            ));
        }
    }
    let answer = send_on(services, &next, prepare, &out, now).await;
    let expired = services.clock.now().unix_millis() >= out.expires_ms;
    let settle = settle_on(
        answer.as_deref().map_err(String::as_str),
        &prepare.execution_condition,
        expired,
    );
    if let Err(message) = &answer {
        tracing::warn!(peer = %next.name, error = %message, "could not forward an ILP packet");
    }
    settle_hold(services, &hold, settle, answer).await
}

/// The rate from `from` to `to`; `None` when none is configured.
async fn rate(
    services: &Services,
    from: &Asset,
    to: &Asset,
) -> Result<Option<opd_core::Rate>, ServiceError> {
    match services.pricing.rate(from, to).await {
        Ok(r) => Ok(Some(r)),
        Err(ServiceError::NoExchangeRate { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Sends the Prepare on to `next` as `out` says, awaiting the answer until
/// the onward expiry.
async fn send_on(
    services: &Services,
    next: &Peer,
    prepare: &Prepare,
    out: &Onward,
    now: opd_core::Timestamp,
) -> Result<Vec<u8>, String> {
    let onward = Prepare {
        amount: out.amount,
        expires_at: out.expires_at,
        execution_condition: prepare.execution_condition,
        destination: prepare.destination.clone(),
        data: prepare.data.clone(),
    };
    let wait_ms = u64::try_from(out.expires_ms - now.unix_millis()).unwrap_or(0);
    send(
        services,
        next,
        onward.encode(),
        Duration::from_millis(wait_ms),
    )
    .await
}

/// Posts or voids the hold as `settle` says; the bytes to send back.
async fn settle_hold(
    services: &Services,
    hold: &Hold,
    settle: Settle,
    answer: Result<Vec<u8>, String>,
) -> Result<Vec<u8>, ServiceError> {
    match settle {
        Settle::Post => {
            let at = services.clock.now();
            if services.store.ilp_settle(&hold.id, true, at).await? {
                return Ok(answer.unwrap_or_default());
            }
            // Swept as expired meanwhile: the money went back.
            let code = ErrorCode::R00_TRANSFER_TIMED_OUT;
            Ok(reject(
                &services.config.ilp_address,
                code,
                "the packet expired",
            ))
        }
        Settle::VoidAndPass => {
            services
                .store
                .ilp_settle(&hold.id, false, services.clock.now())
                .await?;
            Ok(answer.unwrap_or_default())
        }
        Settle::VoidAndReject(code, message) => {
            settle_rejected(services, hold, code, message).await
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
    Ok(reject(&services.config.ilp_address, code, message))
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
