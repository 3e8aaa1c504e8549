//! The connector's decisions, on plain values: whether a Prepare goes on
//! (and as what amount and expiry) or which Reject it gets, and how the
//! next hop's answer settles the amount held. `super` reads the route and
//! the rate, holds, sends and settles.

use opd_core::Asset;
use opd_ilp::packet::Packet;
use opd_ilp::{condition_of, AmountTooLarge, ErrorCode};

use super::HOP_MARGIN_MS;

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
pub(super) struct NextHop<'a> {
    pub(super) asset: &'a Asset,
    pub(super) max_packet: Option<u64>,
    pub(super) rate: Option<&'a opd_core::Rate>,
}

/// The Prepare to send on: its amount in the next hop's units and its
/// expiry (in milliseconds, and on the wire).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Onward {
    pub(super) amount: u64,
    pub(super) expires_ms: i64,
    pub(super) expires_at: opd_ilp::Timestamp,
}

/// A Reject this server answers with, decided before anything is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    pub(super) code: ErrorCode,
    pub(super) message: &'static str,
    pub(super) data: Vec<u8>,
}

impl Refusal {
    pub(super) fn new(code: ErrorCode, message: &'static str) -> Self {
        Self {
            code,
            message,
            data: Vec::new(),
        }
    }
}

/// Whether a Prepare of `prepare_amount` from a peer in `from`, expiring
/// at `expires_in_ms`, goes on to `next` (as routed), and as what: F02
/// without a rate, F08 past what the amount or the next hop takes (with
/// the largest amount in the incoming units), R02 when less than a hop's
/// margin is left before its expiry.
pub(super) fn onward(
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
pub(super) enum Settle {
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
pub(super) fn settle_on(
    answer: Result<&[u8], &str>,
    condition: &[u8; 32],
    expired: bool,
) -> Settle {
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
