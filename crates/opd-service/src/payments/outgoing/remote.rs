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
//! [`settle_leftovers`]): exact when the payment is the receiver's only
//! payer, as for an invoice.

use opd_core::outgoing_payment::OutgoingPayment;
use opd_core::quote::Quote;
use opd_ilp::stream::sender::Ratio;

use super::lifecycle::{self, Step};
use super::packets::{self, Plan};
use crate::interledger::paths;
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

/// One step of sending `p` (see the module documentation).
pub async fn step(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
) -> Result<Step, ServiceError> {
    let receiver = match receivers::remote::resolve(services, &p.receiver).await {
        Ok(r) => r,
        Err(ServiceError::InvalidReceiver(reason)) => {
            tracing::info!(payment = %p.id, reason, "the receiver could not be read; retrying");
            if quote.is_expired(services.clock.now())
                && services.store.pending_packets(p.id).await?.is_empty()
            {
                let reason = "the quote expired before the payment was sent";
                return lifecycle::fail_as_sent(services, p, reason.into()).await;
            }
            let why = format!("the receiver could not be read: {reason}");
            return lifecycle::pause(services, p, &why).await;
        }
        Err(e) => return Err(e),
    };
    if !settle_leftovers(services, p, &receiver).await? {
        return lifecycle::wait(services, p).await;
    }
    // Leftovers may have changed the totals.
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
    let target = quote.receive_amount.value;
    let mut left = target.saturating_sub(p.delivered);
    if let Some(remaining) = receiver.remaining() {
        left = left.min(remaining);
    }
    if left == 0 {
        return lifecycle::complete_as_sent(services, &p, quote).await;
    }
    if quote.is_expired(services.clock.now()) {
        let reason = "the quote expired before the payment was sent";
        return lifecycle::fail_as_sent(services, &p, reason.into()).await;
    }
    if !receiver.is_active(services.clock.now()) {
        return lifecycle::fail_as_sent(
            services,
            &p,
            "the receiver no longer accepts payments".into(),
        )
        .await;
    }
    let Some(rate) = quoted_rate(quote) else {
        return lifecycle::fail_as_sent(services, &p, "the quote has no rate".into()).await;
    };
    let limits = &services.config.ilp;
    let minute_ago = services.clock.now().plus_millis(-60_000);
    // The baseline is recorded before a payment's first packet: without
    // one, nothing was ever sent, and there is nothing to count.
    let recent = match p.receiver_baseline {
        None => 0,
        Some(_) => services.store.packets_since(p.id, minute_ago).await?,
    };
    let allowance = u64::from(limits.packets_per_minute)
        .saturating_sub(recent)
        .min(u64::from(limits.packets_per_step));
    if allowance == 0 {
        let why = "its packets per minute are used up";
        return lifecycle::pause(services, &p, why).await;
    }
    let Some(destination) = receiver.ilp.as_ref() else {
        return lifecycle::fail_as_sent(
            services,
            &p,
            "the receiver offers no ilp payment method".into(),
        )
        .await;
    };
    let (source, receiving) = (&p.debit.asset, &p.receive.asset);
    let mut probed = paths::probe(services, source, receiving, destination).await;
    if probed.as_ref().is_ok_and(|probe| probe.rate.low < rate) {
        // What was kept of the path may be older than its rate now.
        probed = paths::probe_again(services, source, receiving, destination).await;
    }
    let probe = match probed {
        Ok(probe) => probe,
        Err(ServiceError::InvalidReceiver(reason)) => {
            let why = format!("probing the path failed: {reason}");
            return lifecycle::pause(services, &p, &why).await;
        }
        Err(e) => return Err(e),
    };
    if probe.rate.low < rate {
        return lifecycle::fail_as_sent(
            services,
            &p,
            "the exchange rate to the receiver fell below the quoted rate".into(),
        )
        .await;
    }
    let plan = Plan {
        probe,
        rate,
        left,
        allowance: usize::try_from(allowance).unwrap_or(usize::MAX),
    };
    packets::send(services, &p, quote, destination, plan).await
}
