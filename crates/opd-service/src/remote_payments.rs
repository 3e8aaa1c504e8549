//! Sending an outgoing payment to a receiver on another server, as STREAM
//! packets through the peer that routes to it. One worker step
//! ([`step`]) sends packets until the receiver has the quoted amount, a
//! temporary error asks for a pause, or the payment must fail:
//!
//! - the receiver is read again (through Open Payments) at every step, so
//!   the step knows what it still expects: what was already delivered is
//!   never sent again, and a receiver completed meanwhile ends the payment;
//! - the path is probed again for its rate and largest packet; a rate
//!   below the quote's (`receiveAmount` / `debitAmount` less fees) fails
//!   the payment, since the quote's promise can no longer be kept;
//! - each packet is recorded before it goes and settled once when its
//!   answer comes (`opd_store::PacketStore`): sized by the probed rate so
//!   the last one does not overshoot, within the path's largest packet and
//!   the quote's budget, asking the receiver (STREAM `prepareAmount`) for at
//!   least its amount at the quote's rate;
//! - a temporary reject (T..) pauses the payment, retried with a doubling
//!   delay (0.5 s up to 30 s) until its quote expires; a final one fails
//!   it; either way what was not sent goes back to the sender;
//! - the receiver gets exactly the quoted `receiveAmount` (or what it still
//!   expects, if less); the sender is debited the fee and what was sent,
//!   never more than the quoted `debitAmount`, and gets the rest back.
//!
//! Packets go in rounds of up to four at once. A packet a crash left pending is settled
//! once expired from what the receiver reports it received (see
//! [`settle_leftovers`]): exact when the payment is the receiver's only
//! payer, as for an invoice.

use opd_core::outgoing_payment::OutgoingPayment;
use opd_core::quote::Quote;
use opd_core::webhook::EventKind;
use opd_ilp::stream::sender::{self, Answer, Ratio};
use opd_store::PaymentPacket;

use crate::ilp_sender::{self, PathProbe};
use crate::remote_receivers::{self, IlpDestination, RemoteReceiver};
use crate::webhooks::{event, payment_event_data};
use crate::worker::Step;
use crate::{ServiceError, Services};

/// How long a packet may take.
const PACKET_TTL_MS: i64 = 10_000;
/// Packets of one payment in flight at once.
const PACKETS_IN_FLIGHT: usize = 4;
/// Most packets one step sends before it lets other payments go.
const PACKETS_PER_STEP: usize = 200;
/// Most times a packet the receiver found too large is made smaller.
const MAX_SHRINKS: u32 = 8;

/// The delay before the `attempts`-th retry: 0.5 s doubling to 30 s.
fn backoff_ms(attempts: i64) -> i64 {
    let exp = u32::try_from(attempts.clamp(1, 7) - 1).unwrap_or(0);
    (500i64 << exp).min(30_000)
}

async fn pause(services: &Services, p: &OutgoingPayment) -> Result<Step, ServiceError> {
    let at = services.clock.now().plus_millis(backoff_ms(p.attempts));
    services.store.release_outgoing_payment(p.id, at).await?;
    Ok(Step::Retry(p.id))
}

async fn fail(
    services: &Services,
    p: &OutgoingPayment,
    reason: String,
) -> Result<Step, ServiceError> {
    crate::worker::fail_payment(services, p, reason).await
}

/// Completes the payment: the fee taken, the rest of what was not sent
/// given back, `outgoing_payment.completed` recorded.
async fn complete(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
) -> Result<Step, ServiceError> {
    let Some(now_p) = services.store.get_outgoing_payment(p.id).await? else {
        return Err(ServiceError::NotFound("outgoing payment"));
    };
    let wallet = services.wallet_by_id(p.wallet_address_id).await?;
    let done = now_p.completed(now_p.sent);
    let events = match &wallet {
        Some(w) => vec![event(
            services,
            EventKind::OutgoingPaymentCompleted,
            payment_event_data(services, &done, w),
        )],
        None => Vec::new(),
    };
    let at = services.clock.now();
    if services
        .store
        .complete_sent_payment(p.id, quote.fee, at, &events)
        .await?
    {
        crate::metrics::payment_completed(&p.debit.asset, now_p.sent, p.created_at, at);
        Ok(Step::Completed(p.id))
    } else {
        pause(services, p).await
    }
}

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
    let receiver = match remote_receivers::resolve(services, &p.receiver).await {
        Ok(r) => r,
        Err(ServiceError::InvalidReceiver(reason)) => {
            tracing::info!(payment = %p.id, reason, "the receiver could not be read; retrying");
            if quote.is_expired(services.clock.now())
                && services.store.pending_packets(p.id).await?.is_empty()
            {
                let reason = "the quote expired before the payment was sent";
                return fail(services, p, reason.into()).await;
            }
            return pause(services, p).await;
        }
        Err(e) => return Err(e),
    };
    if !settle_leftovers(services, p, &receiver).await? {
        return pause(services, p).await;
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
        return complete(services, &p, quote).await;
    }
    if quote.is_expired(services.clock.now()) {
        let reason = "the quote expired before the payment was sent";
        return fail(services, &p, reason.into()).await;
    }
    if !receiver.is_active(services.clock.now()) {
        return fail(
            services,
            &p,
            "the receiver no longer accepts payments".into(),
        )
        .await;
    }
    let Some(rate) = quoted_rate(quote) else {
        return fail(services, &p, "the quote has no rate".into()).await;
    };
    let Some(destination) = receiver.ilp.as_ref() else {
        return fail(
            services,
            &p,
            "the receiver offers no ilp payment method".into(),
        )
        .await;
    };
    let probe = match ilp_sender::probe(services, &p.debit.asset, destination).await {
        Ok(probe) => probe,
        Err(ServiceError::InvalidReceiver(reason)) => {
            tracing::info!(payment = %p.id, reason, "probing failed; retrying");
            return pause(services, &p).await;
        }
        Err(e) => return Err(e),
    };
    if probe.rate.low < rate {
        return fail(
            services,
            &p,
            "the exchange rate to the receiver fell below the quoted rate".into(),
        )
        .await;
    }
    send_packets(services, &p, quote, destination, probe, rate, left).await
}

/// What one packet's answer means for the step.
enum Outcome {
    /// `delivered` arrived.
    Delivered(u64),
    /// Try a smaller packet.
    Smaller,
    /// Pause the payment.
    Pause,
    /// Fail it, for this reason.
    Fail(String),
}

/// One packet of a round: its record, its Prepare and its STREAM sequence.
struct Planned {
    packet: PaymentPacket,
    prepare: opd_ilp::packet::Prepare,
    sequence: u64,
}

/// The sending state of one step.
struct Sending<'a> {
    services: &'a Services,
    p: &'a OutgoingPayment,
    receiver: &'a IlpDestination,
    peer: opd_core::peer::Peer,
    probe: PathProbe,
    rate: Ratio,
    /// What the receiver still expects, and what may still be sent.
    left: u64,
    budget: u64,
    /// The largest packet the receiver took lately (after it refused more
    /// than it still expects).
    cap: u64,
    shrinks: u32,
    sequence: u64,
}

impl Sending<'_> {
    /// The packets of the next round: up to [`PACKETS_IN_FLIGHT`], each
    /// within the path's largest packet, together expected (at the probed
    /// rate's low bound) to deliver what is left and no more.
    async fn plan(&mut self) -> Result<Vec<Planned>, ServiceError> {
        let (mut left, mut budget) = (self.left, self.budget);
        let mut round = Vec::new();
        while left > 0 && round.len() < PACKETS_IN_FLIGHT {
            let finishing = self.probe.rate.low.ceil_div(left).unwrap_or(u64::MAX);
            let amount = finishing
                .min(self.probe.max_packet.limit())
                .min(budget)
                .min(self.cap);
            // The packet that finishes goes alone: sized by the rate's low
            // bound, it may deliver a unit more than planned, which the
            // receiver may refuse; full packets beside it cannot overshoot.
            if amount == 0 || (amount == finishing && !round.is_empty()) {
                break;
            }
            let min_delivery = sender::min_delivery(amount, self.rate)
                .unwrap_or(u64::MAX)
                .min(left);
            let Some(peer_amount) =
                ilp_sender::to_peer_units(self.services, &self.p.debit.asset, &self.peer, amount)
                    .await?
            else {
                break;
            };
            self.sequence += 1;
            let request = sender::money_request(self.sequence, min_delivery);
            let prepare = ilp_sender::stream_prepare(
                self.services,
                self.receiver,
                peer_amount,
                &request,
                true,
                PACKET_TTL_MS,
            )?;
            let now = self.services.clock.now();
            let packet = PaymentPacket {
                id: opd_core::ids::new_uuid_v7(now, self.services.random.as_ref()).to_string(),
                payment: self.p.id,
                peer: self.peer.id,
                source_asset: self.p.debit.asset.clone(),
                source_amount: amount,
                peer_asset: self.peer.asset.clone(),
                peer_amount,
                min_delivery,
                expires_at: now.plus_millis(PACKET_TTL_MS),
                created_at: now,
            };
            let expected = self.probe.rate.low.floor_mul(amount).unwrap_or(left);
            left = left.saturating_sub(expected.max(1));
            budget -= amount;
            round.push(Planned {
                packet,
                prepare,
                sequence: self.sequence,
            });
        }
        Ok(round)
    }

    /// What one answer means.
    fn outcome(&mut self, planned: &Planned, answer: Answer) -> Outcome {
        let amount = planned.packet.source_amount;
        match answer {
            Answer::Fulfilled { received, .. } => Outcome::Delivered(received),
            Answer::Refused { received, .. } if received >= planned.packet.min_delivery => {
                // Enough arrived, yet the receiver refused: more than it
                // still takes. Smaller packets, a few times.
                self.cap = self.cap.min(amount.saturating_sub(1));
                self.shrinks += 1;
                if self.shrinks > MAX_SHRINKS {
                    Outcome::Fail("the receiver refuses what is left to deliver".into())
                } else {
                    Outcome::Smaller
                }
            }
            Answer::Refused { .. } => {
                Outcome::Fail("the exchange rate to the receiver fell below the quoted rate".into())
            }
            Answer::TooLarge(data) => {
                self.probe.max_packet = self.probe.max_packet.learn(amount, data.as_ref());
                Outcome::Smaller
            }
            Answer::Temporary(_) => Outcome::Pause,
            Answer::Failed(code) => {
                Outcome::Fail(format!("the packet was rejected with {}", code.as_str()))
            }
        }
    }
}

/// Sends rounds of packets until the receiver has what it expects, or the
/// step must end (see the module documentation).
async fn send_packets(
    services: &Services,
    p: &OutgoingPayment,
    quote: &Quote,
    receiver: &IlpDestination,
    probe: PathProbe,
    rate: Ratio,
    left: u64,
) -> Result<Step, ServiceError> {
    let mut s = Sending {
        services,
        p,
        receiver,
        peer: ilp_sender::next_peer(services, receiver.address.as_str()).await?,
        probe,
        rate,
        left,
        budget: quote.debit_minus_fees.saturating_sub(p.sent),
        cap: u64::MAX,
        shrinks: 0,
        sequence: 100,
    };
    let mut sent = 0;
    while s.left > 0 && sent < PACKETS_PER_STEP {
        let round = s.plan().await?;
        if round.is_empty() {
            let reason = "the quoted amount cannot be delivered within the quoted debit";
            return fail(services, p, reason.into()).await;
        }
        for planned in &round {
            if !services.store.packet_sending(&planned.packet).await? {
                // Ended meanwhile (cancelled by the operator); what was
                // recorded is settled as its answers come.
                return Ok(Step::Idle);
            }
        }
        sent += round.len();
        let wait = std::time::Duration::from_millis(PACKET_TTL_MS as u64);
        let answers = futures_util::future::join_all(
            round
                .iter()
                .map(|planned| ilp_sender::send(services, &s.peer, &planned.prepare, wait)),
        )
        .await;
        // Every packet of the round is settled before the step decides.
        let mut end = None;
        for (planned, answer) in round.iter().zip(answers) {
            let answer = answer?;
            let read = sender::read_answer(
                &receiver.shared_secret,
                planned.sequence,
                planned.packet.min_delivery,
                answer.as_ref(),
            );
            let at = services.clock.now();
            match s.outcome(planned, read) {
                Outcome::Delivered(delivered) => {
                    services
                        .store
                        .packet_fulfilled(&planned.packet, delivered, at)
                        .await?;
                    s.left = s.left.saturating_sub(delivered);
                    s.budget = s.budget.saturating_sub(planned.packet.source_amount);
                }
                Outcome::Smaller => {
                    services
                        .store
                        .packet_rejected(&planned.packet.id, at)
                        .await?;
                }
                Outcome::Pause => {
                    services
                        .store
                        .packet_rejected(&planned.packet.id, at)
                        .await?;
                    end.get_or_insert(Outcome::Pause);
                }
                Outcome::Fail(reason) => {
                    services
                        .store
                        .packet_rejected(&planned.packet.id, at)
                        .await?;
                    end = Some(Outcome::Fail(reason));
                }
            }
        }
        match end {
            Some(Outcome::Fail(reason)) => return fail(services, p, reason).await,
            Some(_) => return pause(services, p).await,
            None => {}
        }
    }
    if s.left == 0 {
        return complete(services, p, quote).await;
    }
    // Other payments get their turn; this one is due again at once.
    services
        .store
        .release_outgoing_payment(p.id, services.clock.now())
        .await?;
    Ok(Step::Retry(p.id))
}
