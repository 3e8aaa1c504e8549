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

/// What the connector knows of the next hop when deciding: its asset, the
/// largest packet it takes, and the rate to its asset (`None`: none is
/// configured).
struct NextHop<'a> {
    asset: &'a Asset,
    max_packet: Option<u64>,
    rate: Option<&'a opd_core::Rate>,
}

/// The Prepare to send on: its amount in the next hop's units and its
/// expiry (in milliseconds, and on the wire).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Onward {
    amount: u64,
    expires_ms: i64,
    expires_at: opd_ilp::Timestamp,
}

/// A Reject this server answers with, decided before anything is held.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    code: ErrorCode,
    message: &'static str,
    data: Vec<u8>,
}

impl Refusal {
    fn new(code: ErrorCode, message: &'static str) -> Self {
        Self {
            code,
            message,
            data: Vec::new(),
        }
    }
}

/// Whether a Prepare of `prepare_amount` from a peer in `from`, expiring
/// at `expires_in_ms`, goes on to `next` (as routed), and as what: F02
/// without a rate, F08 past what the amount or the next hop
/// takes (with the largest amount in the incoming units), R02 when less
/// than a hop's margin is left before its expiry.
fn onward(
    prepare_amount: u64,
    expires_in_ms: i64,
    from: &Asset,
    next: &NextHop<'_>,
    now_ms: i64,
    max_hop_ms: i64,
) -> Result<Onward, Refusal> {
    let rate = next
        .rate
        .ok_or(Refusal::new(ErrorCode::F02_UNREACHABLE, "no exchange rate"))?;
    let amount = rate
        .convert_floor(prepare_amount, from.scale, next.asset.scale)
        .map_err(|_| Refusal::new(ErrorCode::F08_AMOUNT_TOO_LARGE, "amount too large"))?;
    if let Some(max) = next.max_packet.filter(|max| amount > *max) {
        let data = AmountTooLarge {
            received_amount: prepare_amount,
            maximum_amount: largest_below(rate, max, from, next.asset),
        };
        return Err(Refusal {
            code: ErrorCode::F08_AMOUNT_TOO_LARGE,
            message: "packet amount exceeds the next hop's maximum",
            data: data.encode().to_vec(),
        });
    }
    let expires_ms = expires_in_ms
        .saturating_sub(HOP_MARGIN_MS)
        .min(now_ms.saturating_add(max_hop_ms));
    if expires_ms <= now_ms {
        let code = ErrorCode::R02_INSUFFICIENT_TIMEOUT;
        return Err(Refusal::new(code, "too little time left to forward"));
    }
    let expires_at = opd_ilp::Timestamp::from_unix_millis(expires_ms)
        .ok_or(Refusal::new(ErrorCode::T00_INTERNAL_ERROR, "bad expiry"))?;
    Ok(Onward {
        amount,
        expires_ms,
        expires_at,
    })
}

/// What becomes of the hold once the next hop answered (or did not), and
/// what goes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settle {
    /// A Fulfill matching the condition: the hold is posted and the
    /// Fulfill goes back.
    Post,
    /// A Reject: the hold is voided and the Reject goes back.
    VoidAndPass,
    /// The hold is voided and this server rejects.
    VoidAndReject(ErrorCode, &'static str),
}

/// How the next hop's answer settles the hold: only a Fulfill whose
/// fulfillment matches `condition` moves money; no answer is T01, or R00
/// once the forwarded Prepare `expired`.
fn settle_on(answer: Result<&[u8], &str>, condition: &[u8; 32], expired: bool) -> Settle {
    match answer.map(Packet::decode) {
        Ok(Ok(Packet::Fulfill(f))) if condition_of(&f.fulfillment) == *condition => Settle::Post,
        Ok(Ok(Packet::Fulfill(_))) => Settle::VoidAndReject(
            ErrorCode::F05_WRONG_CONDITION,
            "the next hop's fulfillment is wrong",
        ),
        Ok(Ok(Packet::Reject(_))) => Settle::VoidAndPass,
        Ok(_) => Settle::VoidAndReject(
            ErrorCode::T01_PEER_UNREACHABLE,
            "the next hop answered no ILP reply",
        ),
        Err(_) if expired => Settle::VoidAndReject(
            ErrorCode::R00_TRANSFER_TIMED_OUT,
            "the next hop is unreachable",
        ),
        Err(_) => Settle::VoidAndReject(
            ErrorCode::T01_PEER_UNREACHABLE,
            "the next hop is unreachable",
        ),
    }
}

/// Forwards `prepare` from `from`; the bytes of the answer to send back.
/// Reads the route and the rate, decides ([`onward`]), holds the amount,
/// sends, and settles the hold as the answer says ([`settle_on`]).
pub async fn forward(
    services: &Services,
    from: &Peer,
    prepare: &Prepare,
) -> Result<Vec<u8>, ServiceError> {
    let Some(next) = route(services, prepare.destination.as_str(), from).await? else {
        return Ok(reject(services, ErrorCode::F02_UNREACHABLE, "no route"));
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
        Err(no) => return Ok(reject_with(services, no.code, no.message, no.data)),
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
            return Ok(reject(services, code, "insufficient liquidity"));
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
    match services
        .pricing
        .rate(services.store.as_ref(), from, to)
        .await
    {
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
            Ok(reject(services, code, "the packet expired"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use opd_core::Rate;
    use opd_ilp::packet::{Fulfill, Reject};

    const NOW: i64 = 1_700_000_000_000;
    /// A forward timeout of 5 s.
    const HOP: i64 = 5_000;

    fn asset(code: &str) -> Asset {
        Asset::parse(code, 2).unwrap()
    }

    /// A Prepare of `amount` USD expiring in `ms`, to a EUR hop at 0.9
    /// taking packets of up to `max`.
    fn decide(amount: u64, ms: i64, max: Option<u64>) -> Result<Onward, Refusal> {
        let (usd, eur, rate) = (asset("USD"), asset("EUR"), Rate::parse("0.9").unwrap());
        let next = NextHop {
            asset: &eur,
            max_packet: max,
            rate: Some(&rate),
        };
        onward(amount, NOW + ms, &usd, &next, NOW, HOP)
    }

    fn code(decided: Result<Onward, Refusal>) -> (String, &'static str) {
        let refusal = decided.unwrap_err();
        (refusal.code.as_str().to_owned(), refusal.message)
    }

    #[test]
    fn a_prepare_goes_on_converted_rounded_down_with_a_shorter_expiry() {
        let out = decide(1_000, 30_000, None).unwrap();
        assert_eq!(out.amount, 900);
        // The forward timeout bounds a distant expiry...
        assert_eq!(out.expires_ms, NOW + HOP);
        // ...and a near one keeps a hop's margin.
        assert_eq!(decide(1_000, 3_000, None).unwrap().expires_ms, NOW + 2_000);
        // 1 USD cent at 0.9 is 0.9 EUR cents: nothing, rounded down.
        assert_eq!(decide(1, 30_000, None).unwrap().amount, 0);
        let expires = decide(1_000, 1_001, None).unwrap();
        assert_eq!(expires.expires_ms, NOW + 1);
        assert_eq!(expires.expires_at.unix_millis(), NOW + 1);
    }

    #[test]
    fn too_little_time_is_r02() {
        let r02 = ("R02".to_owned(), "too little time left to forward");
        assert_eq!(code(decide(1_000, 1_000, None)), r02);
        assert_eq!(code(decide(1_000, -5, None)), r02);
    }

    #[test]
    fn no_rate_is_f02_and_an_amount_past_u64_is_f08() {
        let (usd, eur) = (asset("USD"), asset("EUR"));
        let next = NextHop {
            asset: &eur,
            max_packet: None,
            rate: None,
        };
        let no_rate = onward(1, NOW + 30_000, &usd, &next, NOW, HOP);
        assert_eq!(code(no_rate), ("F02".to_owned(), "no exchange rate"));
        let double = Rate::parse("2").unwrap();
        let next = NextHop {
            rate: Some(&double),
            ..next
        };
        let past = onward(u64::MAX, NOW + 30_000, &usd, &next, NOW, HOP);
        assert_eq!(code(past), ("F08".to_owned(), "amount too large"));
    }

    #[test]
    fn past_the_next_hops_largest_packet_is_f08_with_the_largest_in_incoming_units() {
        // 112 USD cents are 100.8 → 100 EUR cents: the most that fits.
        assert_eq!(decide(112, 30_000, Some(100)).unwrap().amount, 100);
        let refusal = decide(113, 30_000, Some(100)).unwrap_err();
        assert_eq!(refusal.code, ErrorCode::F08_AMOUNT_TOO_LARGE);
        let data = AmountTooLarge {
            received_amount: 113,
            maximum_amount: 112,
        };
        assert_eq!(refusal.data, data.encode().to_vec());
        // A hop taking nothing: the largest is what converts to zero.
        let refusal = decide(113, 30_000, Some(0)).unwrap_err();
        let data = AmountTooLarge {
            received_amount: 113,
            maximum_amount: 1,
        };
        assert_eq!(refusal.data, data.encode().to_vec());
    }

    #[test]
    fn only_a_matching_fulfillment_posts_the_hold() {
        let condition = condition_of(&[7; 32]);
        let fulfill = |fulfillment| {
            Fulfill {
                fulfillment,
                data: Vec::new(),
            }
            .encode()
        };
        let settle = |answer: &[u8], expired| settle_on(Ok(answer), &condition, expired);
        // Even after the expiry: the store decides whether the hold is
        // still there to post.
        assert_eq!(settle(&fulfill([7; 32]), true), Settle::Post);
        let wrong = settle(&fulfill([8; 32]), false);
        let f05 = "the next hop's fulfillment is wrong";
        assert_eq!(
            wrong,
            Settle::VoidAndReject(ErrorCode::F05_WRONG_CONDITION, f05)
        );
        let reject = Reject {
            code: ErrorCode::F99_APPLICATION_ERROR,
            triggered_by: None,
            message: String::new(),
            data: Vec::new(),
        };
        assert_eq!(settle(&reject.encode(), false), Settle::VoidAndPass);
        let t01 = Settle::VoidAndReject(
            ErrorCode::T01_PEER_UNREACHABLE,
            "the next hop answered no ILP reply",
        );
        assert_eq!(settle(b"<html>", false), t01);
    }

    #[test]
    fn no_answer_is_t01_or_r00_once_expired() {
        let condition = [0; 32];
        let message = "the next hop is unreachable";
        assert_eq!(
            settle_on(Err("refused"), &condition, false),
            Settle::VoidAndReject(ErrorCode::T01_PEER_UNREACHABLE, message)
        );
        assert_eq!(
            settle_on(Err("timed out"), &condition, true),
            Settle::VoidAndReject(ErrorCode::R00_TRANSFER_TIMED_OUT, message)
        );
    }
}
