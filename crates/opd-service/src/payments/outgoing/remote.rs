//! Sending an outgoing payment to a receiver on another server, as STREAM
//! packets through the peer that routes to it. One worker step
//! ([`step`]) sends packets until the receiver has the quoted amount, a
//! temporary error asks for a pause, or the payment must fail:
//!
//! - the receiver is read again (through Open Payments) at every step, so
//!   the step knows what it still expects: what was already delivered is
//!   never sent again, and a receiver completed meanwhile ends the payment;
//! - the path's rate and largest packet come from a probe of the last few
//!   seconds (`paths::PATH_TTL`) or a new one; a rate below the
//!   quote's (`receiveAmount` / `debitAmount` less fees), confirmed by a
//!   new probe, fails the payment, since the quote's promise can no longer
//!   be kept;
//! - each packet is recorded before it goes and settled once when its
//!   answer comes (`opd_store::PacketStore`): sized by the probed rate so
//!   the last one does not overshoot, within the path's largest packet and
//!   the quote's budget, asking the receiver (STREAM `prepareAmount`) for at
//!   least its amount at the quote's rate;
//! - a temporary reject (T..), silence or an unreadable receiver pauses
//!   the payment, retried with a doubling delay (0.5 s up to 30 s) within
//!   its stall bounds (`IlpLimits::stall`: attempts in a row without
//!   moving money, and time since it last did), then it fails; a final
//!   reject fails it at once; either way what was not sent goes back to
//!   the sender;
//! - the receiver gets exactly the quoted `receiveAmount` (or what it still
//!   expects, if less); the sender is debited the fee and what was sent,
//!   never more than the quoted `debitAmount`, and gets the rest back.
//!
//! Nothing on the path is trusted (see `docs/security.md`, "Interledger
//! peers and receivers"):
//! - a packet counts only when its fulfillment hashes to its condition; a
//!   forged Fulfill fails the payment, and one that arrives after the
//!   packet's expiry is treated as a reject;
//! - what the receiver's reply claims is clamped to what the packet could
//!   deliver (its amount at the probed rate's high bound) and to what the
//!   payment still expects, so no total can pass the quoted amount; a
//!   reply that does not decrypt proves the request's minimum only;
//! - a receiver that fulfils while claiming less than the minimum (an
//!   honest STREAM receiver refuses such a packet) fails the payment after
//!   that round: `sentAmount` is what really left;
//! - F08 answers shrink packets a bounded number of times per step, then
//!   fail the payment ("the path rejects every packet as too large"), as
//!   a largest packet too small to deliver anything does at once;
//! - packets per step and per minute are bounded (`IlpLimits`), and a step
//!   that delivered nothing backs off like a temporary error.
//!
//! Packets go in rounds of up to four at once. A packet a crash left pending is settled
//! once expired from what the receiver reports it received (see
//! `settle_leftovers`): exact when the payment is the receiver's only
//! payer, as for an invoice.

use opd_core::outgoing_payment::OutgoingPayment;
use opd_core::quote::Quote;
use opd_ilp::stream::sender::Ratio;

use super::lifecycle::{self, Step};
use super::packets::{self, Plan};
use crate::interledger::paths::{self, IlpDestination, PathProbe};
use crate::payments::receivers::{self, remote::RemoteReceiver};
use crate::{ServiceError, Services};

/// Settles the packets a crash left pending, once they expired, from what
/// the receiver reports: what it received beyond its total before the
/// payment's first packet and what the payment recorded was delivered by
/// packets fulfilled just before the crash, which are posted (oldest
/// first, each counted at its minimum delivery) while that evidence lasts;
/// the others are voided. `false` while one may still be answered.
async fn settle_leftovers(
    services: &Services,
    p: &OutgoingPayment,
    receiver: &RemoteReceiver,
) -> Result<bool, ServiceError> {
    let now = services.clock.now();
    let pending = services.store.pending_packets(p.id).await?;
    if pending.iter().any(|packet| packet.expires_at > now) {
        return Ok(false);
    }
    let mut unrecorded = p.receiver_baseline.map_or(0, |base| {
        receiver
            .received_amount
            .saturating_sub(base)
            .saturating_sub(p.delivered)
    });
    for packet in pending {
        // Rare (a process died with the packet in flight) and worth an
        // operator's eye: the receiver's word settled it.
        if packet.min_delivery > 0 && unrecorded >= packet.min_delivery {
            unrecorded -= packet.min_delivery;
            tracing::warn!(payment = %p.id, packet = %packet.id, "a packet left pending by a crash was delivered: posted");
            services
                .store
                .packet_fulfilled(&packet, packet.min_delivery, now)
                .await?;
        } else {
            tracing::warn!(payment = %p.id, packet = %packet.id, "a packet left pending by a crash was not delivered: voided");
            services.store.packet_rejected(&packet.id, now).await?;
        }
    }
    Ok(true)
}

/// The quote's rate: receiver units per sender unit it promised.
fn quoted_rate(quote: &Quote) -> Option<Ratio> {
    Ratio::new(
        u128::from(quote.receive_amount.value),
        u128::from(quote.debit_minus_fees),
    )
}

/// What a step knows before deciding whether to send: the payment's
/// progress, the quote, the receiver as read now, and its packets lately.
#[derive(Debug, Clone)]
struct Facts {
    /// What the quote promised the receiver.
    target: u64,
    delivered: u64,
    /// What the receiver still expects, if it says.
    remaining: Option<u64>,
    quote_expired: bool,
    receiver_active: bool,
    /// The quote's rate (`None`: it has none).
    rate: Option<Ratio>,
    /// Packets sent in the last minute.
    recent_packets: u64,
    packets_per_minute: u32,
    packets_per_step: u32,
}

/// How a step ends without sending.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stop {
    /// The receiver has what the payment owes it.
    Complete,
    Fail(String),
    Pause(String),
}

/// What a step may send: the amount still to deliver, at no less than
/// the quote's rate, in at most `allowance` packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sendable {
    left: u64,
    rate: Ratio,
    allowance: usize,
}

/// Whether a step sends, and what, or how it ends.
fn decide(f: &Facts) -> Result<Sendable, Stop> {
    let mut left = f.target.saturating_sub(f.delivered);
    if let Some(remaining) = f.remaining {
        left = left.min(remaining);
    }
    if left == 0 {
        return Err(Stop::Complete);
    }
    let fail = |reason: &str| Err(Stop::Fail(reason.to_owned()));
    if f.quote_expired {
        return fail("the quote expired before the payment was sent");
    }
    if !f.receiver_active {
        return fail("the receiver no longer accepts payments");
    }
    let Some(rate) = f.rate else {
        return fail("the quote has no rate");
    };
    let allowance = u64::from(f.packets_per_minute)
        .saturating_sub(f.recent_packets)
        .min(u64::from(f.packets_per_step));
    if allowance == 0 {
        return Err(Stop::Pause("its packets per minute are used up".into()));
    }
    Ok(Sendable {
        left,
        rate,
        allowance: usize::try_from(allowance).unwrap_or(usize::MAX),
    })
}

/// How a step ends when the receiver could not be read: a pause, unless
/// the quote expired with no packet pending, which fails the payment.
fn receiver_unread(reason: &str, expired_with_nothing_pending: bool) -> Stop {
    if expired_with_nothing_pending {
        return Stop::Fail("the quote expired before the payment was sent".into());
    }
    Stop::Pause(format!("the receiver could not be read: {reason}"))
}

/// Whether the probed path carries the payment: its rate (as probed, or
/// why probing failed) must be no lower than the quote's.
fn path_holds(probed: Result<PathProbe, String>, rate: Ratio) -> Result<PathProbe, Stop> {
    match probed {
        Err(reason) => Err(Stop::Pause(format!("probing the path failed: {reason}"))),
        Ok(probe) if probe.rate.low < rate => Err(Stop::Fail(
            "the exchange rate to the receiver fell below the quoted rate".into(),
        )),
        Ok(probe) => Ok(probe),
    }
}

/// Ends the step as `stop` says.
async fn end(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
    stop: Stop,
) -> Result<Step, ServiceError> {
    match stop {
        Stop::Complete => lifecycle::complete_as_sent(services, p, quote).await,
        Stop::Fail(reason) => lifecycle::fail_as_sent(services, p, reason).await,
        Stop::Pause(why) => lifecycle::pause(services, p, &why).await,
    }
}

/// One step of sending `p` (see the module documentation): read the
/// receiver, settle what a crash left, decide, probe, send.
pub async fn step(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
) -> Result<Step, ServiceError> {
    let receiver = match receivers::remote::resolve(services, &p.receiver).await {
        Ok(r) => r,
        Err(ServiceError::InvalidReceiver(reason)) => {
            tracing::info!(payment = %p.id, reason, "the receiver could not be read; retrying");
            let expired_with_nothing_pending = quote.is_expired(services.clock.now())
                && services.store.pending_packets(p.id).await?.is_empty();
            let stop = receiver_unread(&reason, expired_with_nothing_pending);
            return end(services, p, quote, stop).await;
        }
        Err(e) => return Err(e),
    };
    if !settle_leftovers(services, p, &receiver).await? {
        return lifecycle::wait(services, p).await;
    }
    let p = reread(services, p, &receiver).await?;
    let facts = facts(services, &p, quote, &receiver).await?;
    let sendable = match decide(&facts) {
        Ok(sendable) => sendable,
        Err(stop) => return end(services, &p, quote, stop).await,
    };
    let Some(destination) = receiver.ilp.as_ref() else {
        let reason = "the receiver offers no ilp payment method";
        return lifecycle::fail_as_sent(services, &p, reason.into()).await;
    };
    let probed = probe(services, &p, destination, sendable.rate).await?;
    let probe = match path_holds(probed, sendable.rate) {
        Ok(probe) => probe,
        Err(stop) => return end(services, &p, quote, stop).await,
    };
    let plan = Plan {
        probe,
        rate: sendable.rate,
        left: sendable.left,
        allowance: sendable.allowance,
    };
    packets::send(services, &p, quote, destination, plan).await
}

/// The payment as stored now (settling leftovers may have changed its
/// totals), with the receiver's total before its first packet recorded.
async fn reread(
    services: &Services,
    p: &OutgoingPayment,
    receiver: &RemoteReceiver,
) -> Result<OutgoingPayment, ServiceError> {
    let p = services
        .store
        .get_outgoing_payment(p.id)
        .await?
        .ok_or(ServiceError::NotFound("outgoing payment"))?;
    if p.receiver_baseline.is_none() {
        services
            .store
            .set_receiver_baseline(p.id, receiver.received_amount)
            .await?;
    }
    Ok(p)
}

/// What a step decides on, read now.
async fn facts(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
    receiver: &RemoteReceiver,
) -> Result<Facts, ServiceError> {
    let now = services.clock.now();
    let limits = &services.config.ilp;
    // The baseline is recorded before a payment's first packet: without
    // one, nothing was ever sent, and there is nothing to count.
    let recent_packets = match p.receiver_baseline {
        None => 0,
        Some(_) => {
            let minute_ago = now.plus_millis(-60_000);
            services.store.packets_since(p.id, minute_ago).await?
        }
    };
    Ok(Facts {
        target: quote.receive_amount.value,
        delivered: p.delivered,
        remaining: receiver.remaining(),
        quote_expired: quote.is_expired(now),
        receiver_active: receiver.is_active(now),
        rate: quoted_rate(quote),
        recent_packets,
        packets_per_minute: limits.packets_per_minute,
        packets_per_step: limits.packets_per_step,
    })
}

/// The path to `destination` as probed (kept or new), or why probing
/// failed. A kept rate below the quote's is probed again: it may be older
/// than the rate now.
async fn probe(
    services: &Services,
    p: &OutgoingPayment,
    destination: &IlpDestination,
    rate: Ratio,
) -> Result<Result<PathProbe, String>, ServiceError> {
    let (source, receiving) = (&p.debit.asset, &p.receive.asset);
    let mut probed = paths::probe(services, source, receiving, destination).await;
    if probed.as_ref().is_ok_and(|probe| probe.rate.low < rate) {
        probed = paths::probe_again(services, source, receiving, destination).await;
    }
    match probed {
        Ok(probe) => Ok(Ok(probe)),
        Err(ServiceError::InvalidReceiver(reason)) => Ok(Err(reason)),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opd_ilp::stream::sender::{MaxPacket, RateBounds};

    fn ratio(num: u128, den: u128) -> Ratio {
        Ratio::new(num, den).unwrap()
    }

    /// A payment of 1000 half-delivered, to a receiver expecting more,
    /// with packets to spare.
    fn facts() -> Facts {
        Facts {
            target: 1_000,
            delivered: 500,
            remaining: None,
            quote_expired: false,
            receiver_active: true,
            rate: Some(ratio(1, 1)),
            recent_packets: 0,
            packets_per_minute: 600,
            packets_per_step: 40,
        }
    }

    fn fail(reason: &str) -> Result<Sendable, Stop> {
        Err(Stop::Fail(reason.to_owned()))
    }

    #[test]
    fn a_step_sends_what_is_left_within_its_packet_allowance() {
        let sendable = Sendable {
            left: 500,
            rate: ratio(1, 1),
            allowance: 40,
        };
        assert_eq!(decide(&facts()), Ok(sendable));
        // The receiver expecting less than the quote's rest bounds it.
        let less = Facts {
            remaining: Some(7),
            ..facts()
        };
        assert_eq!(decide(&less).map(|s| s.left), Ok(7));
        // The minute's allowance, when smaller than a step's.
        let busy = Facts {
            recent_packets: 590,
            ..facts()
        };
        assert_eq!(decide(&busy).map(|s| s.allowance), Ok(10));
        let one_left = Facts {
            delivered: 999,
            ..facts()
        };
        assert_eq!(decide(&one_left).map(|s| s.left), Ok(1));
    }

    #[test]
    fn a_step_completes_when_nothing_is_left_whatever_else_holds() {
        let done = Facts {
            delivered: 1_000,
            quote_expired: true,
            receiver_active: false,
            rate: None,
            ..facts()
        };
        assert_eq!(decide(&done), Err(Stop::Complete));
        // Delivered past the target (never expected): still complete.
        let over = Facts {
            delivered: u64::MAX,
            ..facts()
        };
        assert_eq!(decide(&over), Err(Stop::Complete));
        let receiver_full = Facts {
            remaining: Some(0),
            ..facts()
        };
        assert_eq!(decide(&receiver_full), Err(Stop::Complete));
    }

    #[test]
    fn a_step_fails_or_pauses_in_order() {
        let expired = Facts {
            quote_expired: true,
            receiver_active: false,
            ..facts()
        };
        assert_eq!(
            decide(&expired),
            fail("the quote expired before the payment was sent")
        );
        let inactive = Facts {
            receiver_active: false,
            rate: None,
            ..facts()
        };
        assert_eq!(
            decide(&inactive),
            fail("the receiver no longer accepts payments")
        );
        let no_rate = Facts {
            rate: None,
            recent_packets: 600,
            ..facts()
        };
        assert_eq!(decide(&no_rate), fail("the quote has no rate"));
        let used_up = Facts {
            recent_packets: 601,
            ..facts()
        };
        assert_eq!(
            decide(&used_up),
            Err(Stop::Pause("its packets per minute are used up".into()))
        );
    }

    #[test]
    fn an_unread_receiver_pauses_the_payment_unless_its_quote_ran_out() {
        assert_eq!(
            receiver_unread("timed out", false),
            Stop::Pause("the receiver could not be read: timed out".into())
        );
        assert_eq!(
            receiver_unread("timed out", true),
            Stop::Fail("the quote expired before the payment was sent".into())
        );
    }

    #[test]
    fn the_path_must_carry_the_quoted_rate() {
        let probe = |received| PathProbe {
            rate: RateBounds::from_probe(1_000, received).unwrap(),
            max_packet: MaxPacket::Unknown,
            receiver_asset: None,
        };
        let quoted = ratio(1, 2);
        // Exactly the quoted rate carries it; a unit less does not.
        assert_eq!(path_holds(Ok(probe(500)), quoted), Ok(probe(500)));
        assert_eq!(
            path_holds(Ok(probe(499)), quoted),
            Err(Stop::Fail(
                "the exchange rate to the receiver fell below the quoted rate".into()
            ))
        );
        assert_eq!(
            path_holds(Err("F02".into()), quoted),
            Err(Stop::Pause("probing the path failed: F02".into()))
        );
    }
}
